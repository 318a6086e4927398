"""Connect Four's time controls, in memory: a clock asked for with TABLE/PLAY, the CLOCK lines, a
flag fall and the game cap, on a task.Clock."""

from __future__ import annotations

from gamed.timecontrol import parse
from tests.connect4.test_protocol import greeted, make_service


def seated(service, table="TABLE t1 CLOCK 1m+1s"):
    a, b = greeted(service), greeted(service)
    a.send("NAME alice", table)
    b.send("NAME bob", table)
    return a, b


def test_a_table_asked_for_with_a_clock_runs_it_and_tells_both_players():
    service = make_service()
    a, b = seated(service)
    lines = a.read()
    assert lines[:5] == ["OK NAME alice", "OK TABLE t1 7x6 CLOCK 1m+1s", "WAIT waiting for an opponent at table t1",
                         "START 1 0 7x6 bob", "TIMECONTROL 1m+1s"]
    assert lines[-2:] == ["CLOCK 60.000 0=60.000 1=60.000", "YOURMOVE 60 0 1 2 3 4 5 6"]
    service.clock.advance(12.5)
    a.send("3")
    assert b.read()[-2:] == ["CLOCK 60.000 0=48.500 1=60.000", "YOURMOVE 60 0 1 2 3 4 5 6"]


def test_people_asking_for_different_clocks_do_not_meet():
    service = make_service()
    a, b = seated(service, "TABLE t1 CLOCK 1m+1s")
    c = greeted(service)
    c.send("NAME carol", "TABLE t1 CLOCK 5m")
    assert c.read() == ["OK NAME carol", "OK TABLE t1 7x6 CLOCK 5m", "WAIT waiting for an opponent at table t1"]
    assert any(line.startswith("START") for line in b.read())


def test_a_malformed_or_out_of_bounds_clock_is_refused_with_the_reason():
    service = make_service()
    c = greeted(service)
    c.send("TABLE t1 CLOCK 5x", "TABLE CLOCK 25h", "TABLE CLOCK 0+0", "TABLE t1 CLOCK", "PLAY gamed CLOCK -1s")
    lines = c.read()
    assert [line.split()[:2] for line in lines] == [["ERROR", "401"]] * 5, lines
    assert "bad time control" in lines[0] and "5x" in lines[0]
    assert "a day" in lines[1]
    assert lines[3] == "ERROR 401 usage: TABLE ... CLOCK <time control>, e.g. CLOCK 5m+2s"


def test_a_flag_fall_on_a_bank_loses_in_words_and_clocks_off_keeps_the_old_lines():
    service = make_service(board=True)
    a, b = seated(service, "TABLE t1 CLOCK 10s+0")
    b.send("CLOCKS OFF")
    a.read()
    assert b.read()[-1] == "OK CLOCKS OFF"
    a.send("3")
    lines = b.read()
    assert lines[-1].startswith("YOURMOVE 10 ") and not any(line.startswith("CLOCK ") for line in lines)
    service.clock.advance(10.0)
    assert b.read()[-3:] == [
        "RESULT LOSE TIMEOUT 0 -1 -1 -1 -1",
        "INFO you ran out of time (10s+0): alice (player 0) wins",
        "BYE thanks for playing",
    ]


def test_the_game_cap_ends_the_game_as_a_draw():
    service = make_service(board=True)
    a, b = seated(service, "TABLE t1 CLOCK 1m,game=30s")
    for n in range(3):
        service.clock.advance(9)
        (a if n % 2 == 0 else b).send(str(n))
    a.read(), b.read()
    service.clock.advance(3)
    assert a.read()[-3:] == [
        "RESULT DRAW TIMEOUT - -1 -1 -1 -1",
        "INFO a draw: the game reached its time cap (30s)",
        "BYE thanks for playing",
    ]


def test_clocks_on_gives_a_plain_move_limit_its_clock_lines_too():
    service = make_service(clock=parse("30s"))
    a, b = greeted(service), greeted(service)
    a.send("CLOCKS ON", "NAME alice", "TABLE t1")
    b.send("NAME bob", "TABLE t1")
    lines = a.read()
    assert lines[0] == "OK CLOCKS ON" and "TIMECONTROL 30s" in lines
    assert lines[-2:] == ["CLOCK 30.000 0=- 1=-", "YOURMOVE 30 0 1 2 3 4 5 6"]
    assert not any(line.startswith(("CLOCK", "TIMECONTROL")) for line in b.read())


def test_play_an_engine_on_a_clock():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:1 CLOCK 3m+2s")
    service.clock.advance(0)
    lines = c.read()
    assert lines[0] == "START 1 0 7x6 gamed:1" and lines[1] == "TIMECONTROL 3m+2s", lines
    assert lines[-2:] == ["CLOCK 180.000 0=180.000 1=180.000", "YOURMOVE 180 0 1 2 3 4 5 6"]


def test_on_flag_default_plays_the_middle_most_open_column_and_strikes():
    service = make_service(clock=parse("5s"), on_flag="default", strikes=2)
    a, b = seated(service, "TABLE t1")
    a.read(), b.read()
    service.clock.advance(5)
    assert "PLAYED 0 3 0" in b.read()
    assert service.games[1].strikes == {0: 1, 1: 0}
    b.send("3")
    a.read()
    service.clock.advance(5)
    assert a.read()[-2] == "RESULT LOSE TIMEOUT 1 -1 -1 -1 -1"
