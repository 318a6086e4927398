"""Virtual Fight's clocks against the real daemon: AIs that ask for CLOCK lines (CLOCKS&ON), read
their bank and spend it; one that is 50 ms late; a simultaneous turn in which one team's bank runs
out while the other team plays on."""

from __future__ import annotations

import pytest_twisted
from twisted.internet import defer, reactor, task

from tests.integration.support import LOOPBACK, connect, with_timeout

PASS_ALL = [f"{n}&NONE" for n in range(5)]


async def daemon_with(start_daemon, tmp_path, settings: str):
    conf = tmp_path / "gamed.conf"
    conf.write_text(f"[fight]\npair_delay = 0.2\n{settings}\n")
    daemon = await start_daemon("--config", str(conf), "--line-rate", "0", kalaha="none", fight=LOOPBACK)
    return daemon, daemon.ports["fight"]


async def play(client, spend=lambda budget, turn: 0):
    """Pass every turn, ``spend(budget, turn)`` seconds after READY (the budget from the CLOCK
    line); returns (the CLOCK lines, the GAMEOVER line)."""
    clocks, budget, turn = [], None, 0
    while True:
        line = await with_timeout(client.next_line(), 20, "a line from the server")
        if line.startswith("CLOCK&"):
            clocks.append(line)
            budget = float(line.split("&")[1])
        elif line == "READY":
            turn += 1
            wait = spend(budget, turn)
            if wait:
                await task.deferLater(reactor, wait, lambda: None)
            client.send(*PASS_ALL)
        elif line.startswith("GAMEOVER&"):
            return clocks, line


async def pair(port, first=("CLOCKS&ON",), second=("CLOCKS&ON",)):
    a = await connect(port)
    a.send(*first, "TABLE&clock")
    await a.expect_prefix("OK")
    b = await connect(port)
    b.send(*second, "TABLE&clock")
    return a, b


def both(one, two):
    return defer.gatherResults([defer.ensureDeferred(one), defer.ensureDeferred(two)], consumeErrors=True)


@pytest_twisted.ensureDeferred
async def test_an_ai_that_spends_nearly_all_of_its_bank_does_not_lose(start_daemon, tmp_path):
    daemon, port = await daemon_with(start_daemon, tmp_path, 'clock = "2s+50ms,move=5s"\non_flag = "lose"\nmax_turns = 4')
    a, b = await pair(port)
    (clocks, result), (_, other) = await with_timeout(
        both(play(a, lambda budget, turn: budget - 0.3 if turn == 1 else 0), play(b)), 60, "the game"
    )
    assert result == other == "GAMEOVER&DRAW", (result, other)  # the turn limit, five warriors each
    assert clocks[0] == "CLOCK&2.000&2.000&2.000", clocks
    bank = float(clocks[1].split("&")[2])
    assert 0.3 <= bank <= 0.45, clocks[1]  # ~0.3 s left + 50 ms increment
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_an_ai_50_ms_over_its_bank_loses_with_on_flag_lose(start_daemon, tmp_path):
    daemon, port = await daemon_with(start_daemon, tmp_path, 'clock = "1s+0"\non_flag = "lose"')
    a, b = await pair(port)
    (_, result), (_, other) = await with_timeout(
        both(play(a, lambda budget, turn: budget + 0.05), play(b)), 30, "the game"
    )
    assert (result, other) == ("GAMEOVER&LOSE", "GAMEOVER&WIN")
    assert "disqualified: ran out of time (1s+0)" in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_simultaneous_turn_where_one_teams_bank_runs_out(start_daemon, tmp_path):
    daemon, port = await daemon_with(start_daemon, tmp_path, 'clock = "1s+0,move=5s"')
    a, b = await pair(port, second=())  # b is an original AI: no clock lines for it
    assert await a.next_line(timeout=10) == "255"
    assert await a.next_line(timeout=10) == "255"
    assert await a.next_line(timeout=10) == "TIMECONTROL&1s+0,move=5s&0"
    assert await a.next_line(timeout=10) == "CLOCK&1.000&1.000&1.000"
    assert await a.next_line(timeout=10) == "READY"
    assert [await b.next_line(timeout=10) for _ in range(3)] == ["OK", "255", "READY"]
    b.send(*PASS_ALL)  # team 1 finishes at once; team 0 moves one warrior and thinks on
    a.send("0&POS")
    assert [await b.next_line(timeout=10) for _ in range(5)] == ["255"] * 5
    assert await a.next_line(timeout=10) != ""
    # After a's bank ran out: the turn closes for both, b's warriors played, a's passed.
    assert await with_timeout(a.next_line(), 10, "the 200 block") == "200"
    line = await a.next_line(timeout=10)
    _, budget, bank_a, bank_b = line.split("&")
    assert (budget, bank_a) == ("0.000", "0.000") and 0.95 <= float(bank_b) <= 1.0, line
    assert await a.next_line(timeout=10) == "READY"
    assert [await b.next_line(timeout=10) for _ in range(2)] == ["200", "READY"]
    assert "Traceback" not in daemon.text
