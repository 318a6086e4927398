"""Virtual Fight's time controls, in memory on a task.Clock: the opt-in CLOCK lines, each team's
bank in a simultaneous turn, the setup budget of turn 1, the flag-fall policies and the game cap."""

from __future__ import annotations

from twisted.internet.task import Clock

from gamed.config import FightConfig, Limits
from gamed.fight.service import FightService
from gamed.observers import LiveHub
from gamed.timecontrol import parse
from tests.fight.harness import ai, arena, make_service
from tests.memstore import MemoryStore

PASS_ALL = [f"{n}&NONE" for n in range(5)]


def two(control, **settings):
    clock = Clock()
    service = make_service(clock, fmap=arena(), time_control=parse(control), **settings)
    a = ai(service, "CLOCKS&ON")
    b = ai(service)  # an original AI: it never asks for clocks
    return clock, service, a, b


def test_an_ai_that_asks_gets_its_team_and_clock_lines_an_original_ai_sees_nothing_new():
    clock, service, a, b = two("1m+1s,move=5s")
    assert a.read() == ["OK", "255", "TIMECONTROL&1m+1s,move=5s&0", "CLOCK&5.000&60.000&60.000", "READY"]
    assert b.read() == ["OK", "READY"]
    clock.advance(2)
    a.send(*PASS_ALL)
    clock.advance(2)
    b.send(*PASS_ALL)
    assert a.read() == ["255"] * 5 + ["200", "CLOCK&5.000&59.000&57.000", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "READY"]
    a.send("CLOCKS&OFF")
    assert a.read() == ["255"]
    a.send(*PASS_ALL)
    b.send(*PASS_ALL)
    assert a.read()[-2:] == ["200", "READY"]


def test_a_team_whose_bank_runs_out_in_a_simultaneous_turn_passes_the_rest_and_the_other_plays_on():
    clock = Clock()
    hub = LiveHub(clock, MemoryStore())
    config = FightConfig(pair_delay=0, gui_interval=0, clock=parse("3s+0,move=5s"))
    service = FightService(config, Limits(), clock, arena(), hub=hub)
    a, b = ai(service, "CLOCKS&ON"), ai(service)
    a.read(), b.read()
    a.send(*PASS_ALL)  # team 0 finishes at once
    b.send("0&MOVE&UP")  # team 1 moves one warrior and thinks on
    clock.advance(2.999)
    assert a.read() == ["255"] * 5 and b.read() == ["255"]
    clock.advance(0.001)  # team 1's bank is empty: the rest of its turn is a pass
    assert a.read() == ["200", "CLOCK&3.000&3.000&0.000", "READY"]
    assert b.read() == ["200", "READY"]
    game = service.games[1]
    assert game.battle.warriors[1][0].row == 8, "what it did before its flag fell stands"
    (table,) = hub.tables.values()
    assert table.moves[-1].clock == {"0": {"used": 0.0, "left": 3.0, "credit": 0.0},
                                     "1": {"used": 3.0, "left": 0.0, "credit": 0.0}}
    assert table.clocks == {"0": 3.0, "1": 0.0}


def test_a_team_out_of_time_loses_at_once_with_on_flag_lose():
    clock, service, a, b = two("3s+0", on_flag="lose")
    a.read(), b.read()
    a.send(*PASS_ALL)
    clock.advance(3)
    assert a.read() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    assert b.read() == ["200", "GAMEOVER&LOSE"]
    assert 1 not in service.games


def test_turn_one_runs_on_the_setup_budget_and_does_not_touch_the_bank():
    clock, service, a, b = two("10s+0,setup=30s")
    assert a.read()[-2:] == ["CLOCK&30.000&10.000&10.000", "READY"]
    clock.advance(25)
    a.send(*PASS_ALL)
    b.send(*PASS_ALL)
    assert a.read()[-3:] == ["200", "CLOCK&10.000&10.000&10.000", "READY"]


def test_the_game_cap_ends_the_game_most_living_warriors_wins():
    clock, service, a, b = two("5s,game=12s")
    a.read(), b.read()
    game = service.games[1]
    game.battle.warriors[1][4].alive = False  # team 1 is one warrior short
    for _ in range(3):
        clock.advance(4)
        a.send(*PASS_ALL)
        b.send(*PASS_ALL)
    assert a.read()[-2:] == ["200", "GAMEOVER&WIN"]
    assert b.read()[-2:] == ["200", "GAMEOVER&LOSE"]
    assert game.end_reason == "time cap"


def test_a_bad_clocks_line_is_invalid_and_clocks_work_before_and_during_the_game():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a = ai(service, "CLOCKS&MAYBE", "CLOCKS&on")
    assert a.read() == ["OK", "100", "255"]
    b = ai(service)
    assert a.read() == ["TIMECONTROL&5s&0", "CLOCK&5.000&-&-", "READY"]
    b.send("clocks&On")
    assert b.read() == ["OK", "READY", "255"]
