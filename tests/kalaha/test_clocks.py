"""Kalaha's time controls, in memory on a task.Clock: a clock asked for with TABLE, the CLOCK
lines, refusals of a bad control, the game cap."""

from __future__ import annotations

from gamed.timecontrol import parse
from tests.kalaha.harness import greeted, make_service


def seated(service, table="TABLE t1 CLOCK 1m+1s"):
    a, b = greeted(service), greeted(service)
    a.send("NAME alice", table)
    b.send("NAME bob", table)
    return a, b


def test_a_table_asked_for_with_a_clock_runs_it_for_both_players():
    service = make_service(pair_delay=0.5)
    a, b = seated(service)
    lines = a.read()
    assert lines[:3] == ["OK NAME alice", "OK TABLE t1 CLOCK 1m+1s", "WAIT waiting at table t1"]
    assert "TIMECONTROL 1m+1s" in lines
    assert lines[-2:] == ["CLOCK 60.000 A=60.000 B=60.000", "YOURMOVE 60 A1 A2 A3 A4 A5 A6"]
    service.clock.advance(10)
    a.send("A3")
    assert b.read()[-2:] == ["CLOCK 60.000 A=51.000 B=60.000", "YOURMOVE 60 B1 B2 B3 B4 B5 B6"]


def test_players_asking_for_different_clocks_or_none_do_not_meet():
    service = make_service(pair_delay=0.5)
    a = greeted(service)
    a.send("NAME alice", "TABLE t1 CLOCK 1m+1s")
    b = greeted(service)
    b.send("NAME bob", "TABLE t1")
    c = greeted(service)
    c.send("NAME carol", "TABLE CLOCK 5m")
    assert b.read() == ["OK NAME bob", "OK TABLE t1", "WAIT waiting at table t1"]
    assert c.read() == ["OK NAME carol", "OK TABLE - CLOCK 5m", "WAIT waiting for an opponent"]
    assert not service.games


def test_a_malformed_or_out_of_bounds_clock_is_refused_with_the_reason():
    service = make_service(pair_delay=0.5)
    c = greeted(service)
    c.send("TABLE t1 CLOCK 5x", "TABLE CLOCK 25h", "TABLE CLOCK 0+0", "TABLE t1 CLOCK")
    lines = c.read()
    assert [line.split()[:2] for line in lines] == [["ERROR", "401"]] * 4, lines
    assert "bad time control" in lines[0] and "5x" in lines[0]
    assert "longer than a day" in lines[1]
    assert lines[3] == "ERROR 401 usage: TABLE [<table>] CLOCK <time control>, e.g. CLOCK 5m+2s"


def test_the_game_cap_ends_the_game_as_a_draw():
    service = make_service(pair_delay=0.5, time_control=parse("1m,game=30s"))
    a, b = seated(service, "TABLE t1")
    a.read(), b.read()
    service.clock.advance(20)
    a.send("A1")
    a.read(), b.read()
    service.clock.advance(9.999)
    assert a.read() == [] and b.read() == []
    service.clock.advance(0.001)
    assert "RESULT DRAW TIMEOUT the game reached its time cap (30s)" in a.read()
    assert "RESULT DRAW TIMEOUT the game reached its time cap (30s)" in b.read()


def test_on_flag_default_sows_the_lowest_pit_and_strikes_until_the_limit():
    service = make_service(pair_delay=0.5, time_control=parse("5s"), on_flag="default", strikes=2)
    a, b = seated(service, "TABLE t1")
    a.read(), b.read()
    service.clock.advance(5)  # A's time runs out: A1 is sown for it (its lowest pit), a strike
    assert b.read()[0] == "PLAYED A A1 SOWN 6 EXTRA"  # the last stone in the store: A again
    assert a.read()[-1].startswith("YOURMOVE 5 A2 ")
    assert service.games[1].strikes == {"A": 1, "B": 0}
    service.clock.advance(5)  # the second time: the strike limit, a loss on time
    assert "RESULT LOSE TIMEOUT you did not move within 5 s" in a.read()
