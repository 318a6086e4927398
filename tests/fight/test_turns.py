"""The Virtual Fight turn loop on the shared TurnScheduler, driven through FightGame on a task.Clock:
one turn for every team at once, closed by the last finished team or the deadline, resolved as one
batch; late actions belong to the next turn; timeouts strike and disqualify after 10 in a row."""

from __future__ import annotations

from twisted.internet.task import Clock
from zope.interface import implementer

from gamed.fight.game import FightGame, IFightTeam
from gamed.fight.rules import default_map
from gamed.textline import WriteBatch

PASS_ALL = [f"{n}&NONE" for n in range(5)]


@implementer(IFightTeam)
class Team:
    """Records everything the game tells one AI."""

    def __init__(self, name):
        self.name = name
        self.lines: list[str] = []
        self.result = None

    def game_started(self, game, team):
        self.team = team

    def send_lines(self, lines):
        self.lines.extend(lines)

    def ready(self, game, team):
        self.lines.append("READY")

    def game_ended(self, game, result):
        self.result = result
        self.lines.append(f"GAMEOVER&{result.value}")

    def take(self):
        lines, self.lines = self.lines, []
        return lines


def make_game(teams=2, **settings):
    clock = Clock()
    players = [Team(f"t{i}") for i in range(teams)]
    fmap = default_map()
    if teams > 2:
        from gamed.fight.rules import resolve_map

        fmap = resolve_map("four")
    game = FightGame(1, players, fmap, clock, WriteBatch(), **settings)
    game.start()
    for p in players:
        assert p.take() == ["READY"]
    return clock, game, players


def say(game, player, *lines):
    for line in lines:
        game.command(player, line)


def test_turn_ends_on_the_last_finished_team_and_not_before():
    clock, game, (a, b) = make_game()
    say(game, a, *PASS_ALL)
    assert a.take() == ["255"] * 5 and game.turn == 1, "one team finished: the turn goes on"
    say(game, b, *PASS_ALL[:4])
    assert game.turn == 1 and b.take() == ["255"] * 4
    say(game, b, "4&NONE")
    assert b.take() == ["255", "200", "READY"] and a.take() == ["200", "READY"]
    assert game.turn == 2 and clock.seconds() == 0


def test_turn_ends_at_the_deadline_with_whatever_was_done():
    clock, game, (a, b) = make_game(turn_time=5)
    say(game, a, "0&SHOOT&UP")
    clock.advance(4.9)
    assert game.turn == 1 and a.take() == ["255"]
    clock.advance(0.1)
    assert a.take() == ["200", "0&HIT&NOTHING", "READY"] and b.take() == ["200", "READY"]
    assert game.turn == 2


def test_actions_arriving_after_the_end_belong_to_the_next_turn():
    clock, game, (a, b) = make_game(turn_time=5)
    clock.rightNow = 5.0  # the deadline has come; its timer has not run yet
    say(game, a, "0&MOVE&DOWN")
    # Turn 1 closes first (report, READY), then the move is turn 2's and answered after READY.
    assert a.take() == ["200", "READY", "255"]
    assert game.turn == 2 and game.battle.warriors[0][0].square == (4, 1)
    say(game, a, "0&MOVE&DOWN")
    assert a.take() == ["120"], "the warrior already acted in turn 2"


def test_a_team_that_finished_may_still_query_and_use_a_passed_warrior():
    clock, game, (a, b) = make_game()
    say(game, a, *PASS_ALL)
    a.take()
    say(game, a, "0&POS", "0&MOVE&DOWN", "0&MOVE&DOWN")
    assert a.take() == ["3,1", "255", "120"] and game.turn == 1


def test_timeouts_strike_and_ten_in_a_row_disqualify():
    clock, game, (a, b) = make_game(turn_time=5, strikes=10)
    for turn in range(1, 10):
        say(game, a, *PASS_ALL)
        clock.advance(5)  # b never finishes
        assert b.take() == ["200", "READY"], f"turn {turn}"
        a.take()
    assert game._turns.strikes == {1: 9}
    say(game, a, *PASS_ALL)
    clock.advance(5)
    assert b.take() == ["200", "GAMEOVER&LOSE"]
    assert a.take()[-2:] == ["200", "GAMEOVER&WIN"], "the other team is left alone and wins"
    assert game.over and game.results == {0: a.result, 1: b.result}


def test_a_turn_in_time_clears_the_strikes():
    clock, game, (a, b) = make_game(turn_time=5, strikes=10)
    for _ in range(9):
        say(game, a, *PASS_ALL)
        clock.advance(5)
    say(game, a, *PASS_ALL)
    say(game, b, *PASS_ALL)  # in time: the count starts again
    for _ in range(9):
        say(game, a, *PASS_ALL)
        clock.advance(5)
    assert not game.over and game._turns.strikes == {1: 9}


def test_a_team_that_leaves_counts_as_finished_and_the_turn_resolves_for_the_others():
    clock, game, (a, b) = make_game(turn_time=5)
    say(game, a, *PASS_ALL)
    game.leave(b)
    assert a.take() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    assert not clock.getDelayedCalls(), "the game is over: no deadline left"


def test_no_deadline_when_turn_time_is_zero():
    clock, game, (a, b) = make_game(turn_time=0)
    assert not clock.getDelayedCalls()
    clock.advance(3600)
    assert game.turn == 1 and a.take() == []
