"""The shared TurnScheduler on a task.Clock: turn ends, deadlines, races and timeout strikes."""

import pytest
from twisted.internet.task import Clock

from gamed.scheduler import StrikePolicy, TurnClosed, TurnScheduler


class Recorder:
    """Collects closed turns; optionally opens the next turn from inside on_close."""

    def __init__(self):
        self.closed = []
        self.reopen = None

    def __call__(self, turn):
        self.closed.append(turn)
        if self.reopen is not None:
            self.reopen(turn)


def make(timeout=5.0, strikes=StrikePolicy(limit=0)):
    clock = Clock()
    rec = Recorder()
    return clock, rec, TurnScheduler(clock, rec, timeout=timeout, strikes=strikes)


def test_single_seat_turn_closes_when_the_seat_submits():
    clock, rec, s = make()
    turn = s.open(["A"])
    clock.advance(1)
    s.submit("A", "A3")
    assert rec.closed == [turn]
    assert turn.closed and turn.actions == {"A": ["A3"]} and not turn.timed_out
    assert not clock.getDelayedCalls(), "the deadline timer must be cancelled"


def test_simultaneous_turn_closes_on_the_last_finished_seat_only():
    clock, rec, s = make()
    turn = s.open([0, 1, 2])
    s.act(0, "move")
    s.act(0, "shoot")
    s.finish(0)
    s.finish(2)
    assert rec.closed == [] and turn.waiting_for == {1}
    s.act(1, "none")
    s.finish(1)
    assert rec.closed == [turn]
    assert turn.actions == {0: ["move", "shoot"], 1: ["none"]}


def test_deadline_closes_the_turn_with_the_unfinished_seats_timed_out():
    clock, rec, s = make(timeout=5)
    turn = s.open([0, 1])
    s.act(0, "x")
    s.finish(0)
    s.act(1, "partial")
    clock.advance(4.999)
    assert rec.closed == []
    clock.advance(0.001)
    assert rec.closed == [turn]
    assert turn.timed_out == {1}
    assert turn.actions[1] == ["partial"], "actions made before the deadline still count"


def test_actions_after_the_deadline_are_refused():
    clock, rec, s = make(timeout=5)
    s.open(["A"])
    clock.advance(5)
    with pytest.raises(TurnClosed):
        s.submit("A", "late")
    assert rec.closed[0].actions == {}


@pytest.mark.parametrize("arrives_first", [True, False], ids=["before-the-timer", "after-the-timer"])
def test_action_exactly_at_the_deadline_is_late_whichever_event_runs_first(arrives_first):
    """Race: the action is handled at t == deadline, before or after the deadline timer fires."""
    clock, rec, s = make(timeout=5)
    outcome = []

    def arrive():
        try:
            s.submit("A", "at-deadline")
            outcome.append("accepted")
        except TurnClosed:
            outcome.append("late")

    # The clock runs calls due at the same time in the order they were scheduled.
    if arrives_first:
        clock.callLater(5, arrive)
    turn = s.open(["A"])
    if not arrives_first:
        clock.callLater(5, arrive)
    clock.advance(5)
    assert outcome == ["late"]
    assert rec.closed == [turn] and turn.timed_out == {"A"}, "closed once, as a timeout"


def test_action_just_before_the_deadline_counts():
    clock, rec, s = make(timeout=5)
    turn = s.open(["A"])
    clock.advance(4.9999)
    s.submit("A", "in time")
    assert rec.closed == [turn] and not turn.timed_out


def test_on_close_may_open_the_next_turn_and_late_actions_belong_to_it():
    clock, rec, s = make(timeout=5)
    rec.reopen = lambda turn: s.open([0, 1]) if turn.number < 3 else None
    s.open([0, 1])
    s.finish(0)
    clock.advance(5)  # seat 1 times out; turn 2 opens from on_close
    assert [t.number for t in rec.closed] == [1]
    assert s.current.number == 2 and not s.current.closed
    s.act(1, "after the end of turn 1")
    assert s.current.actions == {1: ["after the end of turn 1"]}
    assert rec.closed[0].actions == {}


def test_a_seat_not_in_the_turn_cannot_act():
    clock, rec, s = make()
    s.open(["A"])
    with pytest.raises(TurnClosed):
        s.act("B", "not my turn")


def test_a_finished_seat_cannot_act_again_in_the_same_turn():
    clock, rec, s = make()
    s.open([0, 1])
    s.finish(0)
    with pytest.raises(TurnClosed):
        s.act(0, "again")


def test_no_turn_open_refuses_actions():
    clock, rec, s = make()
    with pytest.raises(TurnClosed):
        s.submit("A", "x")


def test_opening_while_a_turn_is_open_is_a_programming_error():
    clock, rec, s = make()
    s.open(["A"])
    with pytest.raises(RuntimeError):
        s.open(["B"])


def test_removed_seat_counts_as_finished_and_is_left_out_later():
    clock, rec, s = make()
    turn = s.open([0, 1])
    s.finish(0)
    s.remove(1)
    assert rec.closed == [turn] and not turn.timed_out
    nxt = s.open([0, 1])
    assert nxt.seats == {0}


def test_turn_with_every_seat_removed_closes_at_once():
    clock, rec, s = make()
    s.remove("A")
    turn = s.open(["A"])
    assert rec.closed == [turn] and turn.seats == frozenset()


def test_no_deadline_when_timeout_is_none():
    clock, rec, s = make(timeout=None)
    s.open(["A"])
    assert s.remaining() is None and not clock.getDelayedCalls()
    clock.advance(10_000)
    assert rec.closed == []


def test_per_turn_timeout_overrides_the_default():
    clock, rec, s = make(timeout=5)
    turn = s.open(["A"], timeout=1)
    assert s.remaining() == 1
    clock.advance(1)
    assert turn.timed_out == {"A"}


def test_remaining_counts_down():
    clock, rec, s = make(timeout=60)
    s.open(["A"])
    clock.advance(15.5)
    assert s.remaining() == pytest.approx(44.5)


def test_consecutive_strikes_disqualify_at_the_limit_and_reset_on_a_turn_in_time():
    clock, rec, s = make(timeout=1, strikes=StrikePolicy(limit=3, consecutive=True))
    outs = []
    rec.reopen = lambda turn: (outs.append(turn.struck_out), s.open([0, 1]))

    def play(seat_finishes):
        turn = s.current
        for seat in seat_finishes:
            s.finish(seat)
        if not turn.closed:
            clock.advance(1)

    s.open([0, 1])
    play([0])  # 1 strike for seat 1
    play([0])  # 2
    play([0, 1])  # in time: seat 1's strikes reset
    assert s.strikes.get(1, 0) == 0
    play([0])
    play([0])
    assert outs[-1] == frozenset()
    play([0])  # third in a row
    assert outs[-1] == {1}
    assert s.current.seats == {0}, "a struck-out seat plays no more turns"


def test_an_excused_seat_times_out_without_strikes_until_it_is_excused_no_more():
    clock, rec, s = make(timeout=1, strikes=StrikePolicy(limit=2, consecutive=True))
    rec.reopen = lambda turn: s.open([0, 1])
    s.open([0, 1])
    s.finish(0)
    clock.advance(1)  # seat 1: its first strike
    s.excuse(1)  # away: its timeouts neither count nor are forgiven
    for _ in range(5):
        s.finish(0)
        clock.advance(1)
    assert [t.timed_out for t in rec.closed] == [frozenset({1})] * 6
    assert not any(t.struck_out for t in rec.closed) and s.strikes == {1: 1}
    s.excuse(1, False)
    s.finish(0)
    clock.advance(1)
    assert rec.closed[-1].struck_out == {1}, "its second strike in a row, once back"


def test_total_strikes_policy_does_not_forgive():
    clock, rec, s = make(timeout=1, strikes=StrikePolicy(limit=2, consecutive=False))
    rec.reopen = lambda turn: s.open(["A"]) if not turn.struck_out else None
    s.open(["A"])
    clock.advance(1)
    s.submit("A", "ok")
    assert s.strikes["A"] == 1
    clock.advance(1)
    assert rec.closed[-1].struck_out == {"A"}


def test_kalaha_policy_one_strike_is_out():
    clock, rec, s = make(timeout=60, strikes=StrikePolicy(limit=1))
    turn = s.open(["B"])
    clock.advance(60)
    assert turn.struck_out == {"B"}


def test_zero_limit_never_strikes_out():
    clock, rec, s = make(timeout=1, strikes=StrikePolicy(limit=0))
    rec.reopen = lambda turn: s.open(["A"]) if turn.number < 50 else None
    s.open(["A"])
    clock.pump([1] * 50)
    assert all(not t.struck_out for t in rec.closed) and s.strikes["A"] == 50


def test_stop_cancels_the_deadline_and_refuses_new_turns():
    clock, rec, s = make(timeout=5)
    s.open(["A"])
    s.stop()
    clock.advance(10)
    assert rec.closed == [] and not clock.getDelayedCalls()
    with pytest.raises(TurnClosed):
        s.submit("A", "x")
    with pytest.raises(RuntimeError):
        s.open(["A"])


def test_negative_strike_limit_is_rejected():
    with pytest.raises(ValueError):
        StrikePolicy(limit=-1)


def test_live_turn_closes_a_turn_whose_deadline_passed_before_its_timer_ran():
    clock, rec, s = make(timeout=5)
    rec.reopen = lambda turn: s.open([0, 1]) if turn.number == 1 else None
    first = s.open([0, 1])
    clock.rightNow += 5  # the deadline instant, timer not run yet
    live = s.live_turn()
    assert rec.closed == [first] and first.timed_out == {0, 1}
    assert live is s.current and live.number == 2, "a line handled now belongs to the next turn"


def test_live_turn_is_none_between_turns():
    clock, rec, s = make(timeout=5)
    assert s.live_turn() is None
    s.open([0])
    s.finish(0)
    assert s.live_turn() is None
