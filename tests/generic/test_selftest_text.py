"""``SELFTEST`` on the text ports of Kalaha and Connect Four: the same scripted match in each
game's own lines; a program that answers every YOURMOVE passes, broken ones are caught with the
line expected and the line received."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from tests.connect4.test_protocol import greeted
from tests.connect4.test_protocol import make_service as make_connect4
from tests.kalaha.harness import Client, make_service as make_kalaha
from tests.memclient import heard_until


def connection(game):
    if game == "kalaha":
        clock = Clock()
        service = make_kalaha(clock, pair_delay=0.5)
        client = Client(service)
        client.read()
        return clock, client
    service = make_connect4()
    return service.clock, greeted(service)


def first_legal(line):
    return "MOVE " + line.split()[2]


def run(game, answer, after_end=None):
    """Every line of a self-test played with ``answer(yourmove_line, lines_so_far) -> line | None``."""
    clock, client = connection(game)
    client.send("BOARD OFF", "SELFTEST")
    lines = []

    def heard(line):
        lines.append(line)
        if line.startswith("SELFTEST VERDICT"):
            return True
        if line.startswith("YOURMOVE"):
            reply = answer(line, lines)
            if reply is not None:
                client.send(reply)
        if line.startswith("RESULT") and after_end:
            client.send(after_end)
        return False

    heard_until(clock, client.read, heard, missing=lambda: f"no verdict: {lines[-8:]}")
    return lines


def fails(lines):
    return [(lines[i], lines[i + 1], lines[i + 2]) for i, line in enumerate(lines) if line.startswith("SELFTEST FAIL")]


@pytest.mark.parametrize("game", ["kalaha", "connect4"])
def test_a_program_that_answers_every_yourmove_passes(game):
    lines = run(game, lambda line, seen: first_legal(line))
    assert lines[:2] == ["OK BOARD OFF", "START 0 A selftest" if game == "kalaha" else "START 0 0 7x6 selftest"]
    assert fails(lines) == []
    assert "RESULT DRAW SELFTEST the self-test's match is over" in lines
    assert lines[-1] == "SELFTEST VERDICT PASS"
    assert sum(line.startswith("SELFTEST OK") for line in lines) == 6


@pytest.mark.parametrize("game, move, scene", [
    ("kalaha", "MOVE B1", "the first move (no_such_action: B1: that pit belongs to your opponent)"),
    ("connect4", "MOVE 9", "the first move (no_such_action"),
])
def test_a_move_that_is_not_legal_is_shown_with_the_moves_expected(game, move, scene):
    lines = run(game, lambda line, seen: move)
    (fail, expected, received), *_ = fails(lines)
    assert fail.startswith(f"SELFTEST FAIL {scene}")
    assert expected == "SELFTEST EXPECTED MOVE <one of " + " ".join(lines[3].split()[2:]) + ">"
    assert received == f"SELFTEST RECEIVED {move}"
    assert lines[-1] == "SELFTEST VERDICT FAIL"


def test_a_program_that_waits_after_its_move_misses_the_extra_turn():
    def answer(line, seen):
        previous = [s for s in seen[:-1] if s.startswith(("YOURMOVE", "SELFTEST"))]
        if previous and previous[-1].startswith("YOURMOVE"):
            return None  # "I moved; now the opponent moves": wrong after an extra turn
        return "MOVE " + line.split()[-1]

    lines = run("kalaha", answer)
    (fail, expected, received), *_ = fails(lines)
    assert fail.startswith("SELFTEST FAIL an extra turn") and received == "SELFTEST RECEIVED nothing within 5 s"


def test_a_program_that_plays_on_after_the_result_is_caught():
    lines = run("connect4", lambda line, seen: first_legal(line), after_end="MOVE 3")
    assert fails(lines) == [("SELFTEST FAIL the end: no act after the game has ended",
                             "SELFTEST EXPECTED nothing (the game is over)", "SELFTEST RECEIVED MOVE 3")]


def test_selftest_is_refused_during_a_game_and_pings_are_answered_during_one():
    clock = Clock()
    service = make_kalaha(clock, pair_delay=0.5)
    a, b = Client(service), Client(service)
    a.send("TABLE st"), b.send("TABLE st")
    a.read()
    a.send("SELFTEST")
    assert any(line.startswith("ERROR 404 you are in a game") for line in a.read())
    c = Client(service)
    c.read()
    c.send("SELFTEST kalaha", "PING")
    lines = c.read()
    assert "PONG" in lines and lines[0] == "START 0 A selftest"
    c.send("SELFTEST")
    assert c.read() == ["ERROR 404 a self-test is under way"]


@pytest.mark.parametrize("game", ["kalaha", "connect4"])
def test_selftest_of_another_game_or_with_more_words_is_a_usage_error(game):
    clock, client = connection(game)
    client.send("SELFTEST chess", f"SELFTEST {game} now")
    assert client.read() == [f"ERROR 401 usage: SELFTEST [{game}]"] * 2
    client.send("PING")
    assert client.read() == ["PONG"], "no self-test started; the connection goes on"
