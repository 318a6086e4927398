"""The clocks of the shared TurnScheduler on a task.Clock: banks, increments, setup budgets, game
caps, flag-fall policies and the round-trip credit."""

import pytest
from twisted.internet.task import Clock

from gamed.scheduler import StrikePolicy, TurnClosed, TurnScheduler
from gamed.timecontrol import FlagPolicy, parse


def make(control, on_flag=FlagPolicy.LOSE, strikes=StrikePolicy(limit=0), reopen=None):
    clock = Clock()
    closed = []

    def on_close(turn):
        closed.append(turn)
        if reopen is not None:
            reopen(turn)

    return clock, closed, TurnScheduler(clock, on_close, strikes=strikes, control=parse(control), on_flag=on_flag)


def test_a_bank_is_charged_what_each_move_took_and_gets_the_increment_after_it():
    clock, closed, s = make("10s+2s")
    s.open(["A"])
    clock.advance(3)
    assert s.clock_left("A") == pytest.approx(7)  # the bank counts down while the move is open
    s.submit("A", "m1")
    assert closed[-1].clock_entry("A") == {"used": 3.0, "left": 9.0, "credit": 0.0}
    assert s.clock_left("A") == 9.0  # 10 - 3 + 2, and it stands still off the move
    clock.advance(100)  # the opponent's move does not cost A anything
    s.open(["B"])
    clock.advance(1)
    s.submit("B", "m2")
    assert s.clock_left("A") == 9.0 and s.clock_left("B") == 11.0


def test_the_bank_is_the_deadline_and_the_flag_falls_exactly_when_it_is_spent():
    clock, closed, s = make("5s+1s")
    s.open(["A"])
    clock.advance(3)
    s.submit("A", "m")  # 5 - 3 + 1 = 3 left
    s.open(["A"])
    assert s.remaining("A") == pytest.approx(3)
    clock.advance(2.999)
    assert not closed[1:]
    clock.advance(0.001)
    turn = closed[1]
    assert turn.timed_out == {"A"} and turn.lost == {"A"} and turn.struck_out == {"A"}
    assert turn.clock_entry("A")["used"] == 3.0


def test_a_move_at_the_instant_the_bank_runs_out_is_late_even_before_the_timer_runs():
    clock, closed, s = make("2s+0.5s")
    s.open(["A"])
    clock.rightNow += 2.0  # time passed, the reactor has not run the timer yet
    with pytest.raises(TurnClosed):
        s.submit("A", "late")
    assert closed[0].timed_out == {"A"}


def test_spending_the_whole_bank_but_a_millisecond_does_not_lose():
    clock, closed, s = make("1s+0")
    s.open(["A"])
    clock.advance(0.999)
    s.submit("A", "just in time")
    assert not closed[0].timed_out
    assert closed[0].left["A"] == pytest.approx(0.001)


def test_the_move_limit_caps_a_move_even_with_bank_left():
    clock, closed, s = make("5m+0,move=10s")
    s.open(["A"])
    assert s.remaining("A") == 10
    clock.advance(10)
    assert closed[0].timed_out == {"A"}
    assert s.clocks["A"].bank == pytest.approx(290)  # the 10 s are gone from the bank


def test_the_setup_turn_runs_on_its_own_budget_and_costs_the_bank_nothing():
    clock, closed, s = make("1m+0,setup=20s")
    s.open([0, 1], setup=True)
    assert s.remaining(0) == 20
    clock.advance(15)
    s.submit(0, "placement")
    clock.advance(5)
    turn = closed[0]
    assert turn.timed_out == {1}
    assert s.clocks[0].bank == 60 and s.clocks[1].bank == 60
    assert turn.clock_entry(0) == {"used": 15.0, "left": 60.0, "credit": 0.0}
    # Without a setup budget the setup turn is a move like any other.
    clock, closed, s = make("1m+0")
    s.open([0], setup=True)
    clock.advance(15)
    s.submit(0, "placement")
    assert s.clocks[0].bank == 45


def test_the_game_cap_ends_the_turn_open_when_it_is_reached_without_a_flag():
    clock, closed, s = make("2m+0,game=100s")
    seats = ["A", "B"]
    for n in range(3):
        s.open([seats[n % 2]])
        clock.advance(30)
        s.submit(seats[n % 2], n)
    s.open(["B"])  # 90 s have gone: 10 s left for the game, though B has 90 s on its bank
    assert s.remaining("B") == pytest.approx(10)
    clock.advance(10)
    turn = closed[-1]
    assert turn.capped and not turn.timed_out and not turn.struck_out
    # A turn opened after the cap closes at once, capped.
    turn = s.open(["A"])
    assert turn.closed and turn.capped


def test_simultaneous_turn_where_one_team_runs_out_of_bank_and_the_others_play_on():
    clock, closed, s = make("3s+0", on_flag=FlagPolicy.PASS, strikes=StrikePolicy(limit=2))
    s.open([0, 1, 2])
    clock.advance(1)
    s.finish(0)
    clock.advance(1)
    s.finish(1)
    s.finish(2)  # banks: team 0 has 2 s left, teams 1 and 2 have 1 s
    s.open([0, 1, 2])
    clock.advance(0.5)
    s.act(2, "move")
    s.finish(2)
    clock.advance(0.499)
    assert not closed[1:], "team 1 still has a millisecond"
    clock.advance(0.001)  # team 1 has run out: the turn goes on for team 0
    turn = s.current
    assert not turn.closed and turn.flagged == {1}
    with pytest.raises(TurnClosed):
        s.act(1, "too late")
    assert s.remaining(0) == pytest.approx(1.0)
    s.finish(0)
    turn = closed[1]
    assert turn.timed_out == {1} and turn.passes == {1} and not turn.struck_out
    assert s.strikes == {1: 1}
    assert turn.clock_entry(1)["left"] == 0.0


def test_flag_policies_default_and_pass_count_strikes_and_put_a_seat_out_at_the_limit():
    for policy, field in ((FlagPolicy.DEFAULT, "defaults"), (FlagPolicy.PASS, "passes")):
        clock, closed, s = make("0+1s", on_flag=policy, strikes=StrikePolicy(limit=2))
        s.open(["A"])
        clock.advance(1)
        assert getattr(closed[0], field) == {"A"} and not closed[0].struck_out
        assert s.clock_left("A") == 1.0  # an empty bank gets the increment: it plays on
        s.open(["A"])
        clock.advance(1)
        assert closed[1].struck_out == {"A"} and getattr(closed[1], field) == frozenset()


def test_lose_policy_puts_out_even_an_excused_seat():
    clock, closed, s = make("5s", on_flag=FlagPolicy.LOSE)
    s.excuse("A")
    s.open(["A"])
    clock.advance(5)
    assert closed[0].lost == {"A"} and closed[0].struck_out == {"A"}


def test_the_round_trip_is_credited_and_not_charged():
    clock, closed, s = make("10s+0,lag=100ms")
    turn = s.open(["A"], lag={"A": 0.04})
    # the player is told its own 10 s; the hard instant is 40 ms later
    assert s.remaining("A") == pytest.approx(10.0)
    assert turn.deadlines["A"] == pytest.approx(10.04)
    clock.advance(2)
    s.submit("A", "m")
    entry = closed[0].clock_entry("A")
    assert entry == {"used": 1.96, "left": 8.04, "credit": 0.04}
    assert s.clocks["A"].credited == pytest.approx(0.04)


def test_a_round_trip_larger_than_the_cap_is_credited_only_up_to_the_cap():
    clock, closed, s = make("5s,lag=100ms")
    s.open(["A"], lag={"A": 0.8})
    assert s.remaining("A") == pytest.approx(5.0)
    clock.advance(5.09)
    assert closed == []
    clock.advance(0.01)
    turn = closed[0]
    assert turn.timed_out == {"A"}
    assert turn.clock_entry("A") == {"used": 5.0, "left": None, "credit": 0.1}


def test_a_quick_move_is_credited_no_more_than_it_took():
    clock, closed, s = make("5s")
    s.open(["A"], lag={"A": 0.05})
    clock.advance(0.01)
    s.submit("A", "m")
    assert closed[0].clock_entry("A") == {"used": 0.0, "left": None, "credit": 0.01}


def test_no_credit_without_a_deadline_and_lag_zero_credits_nothing():
    clock, closed, s = make("none")
    s.open(["A"], lag={"A": 0.05})
    assert s.remaining("A") is None and closed == []
    clock, closed, s = make("5s,lag=0")
    s.open(["A"], lag={"A": 0.05})
    assert s.remaining("A") == 5


def test_a_per_move_timeout_argument_still_works_as_before():
    clock = Clock()
    closed = []
    s = TurnScheduler(clock, closed.append, timeout=2.0, strikes=StrikePolicy(limit=1))
    s.open(["A"])
    clock.advance(2)
    assert closed[0].timed_out == {"A"} and closed[0].struck_out == {"A"}
    assert s.control == parse("2s")
