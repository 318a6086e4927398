"""Clocks against the real daemon: bots that read their time from CLOCK lines and spend it (Kalaha
and Connect Four; Virtual Fight's are in test_fight_clocks_daemon)."""

import pytest_twisted
from twisted.internet import defer, reactor, task

from tests.integration.support import LOOPBACK, connect, take_seats, with_timeout


async def play(client, spend=None, result_prefix="RESULT"):
    """Play first legal pits (or columns) until the game ends. ``spend(budget, n)`` says how long to wait
    before the n-th move (from the CLOCK line's budget); returns (CLOCK lines, the RESULT line)."""
    clocks, budget, n = [], None, 0
    while True:
        line = await with_timeout(client.next_line(), 20, "a line from the server")
        if line.startswith("CLOCK "):
            clocks.append(line)
            budget = float(line.split()[1])
        elif line.startswith("YOURMOVE"):
            n += 1
            wait = spend(budget, n) if spend is not None else 0
            if wait:
                await task.deferLater(reactor, wait, lambda: None)
            client.send(line.split()[2])
        elif line.startswith(result_prefix):
            return clocks, line


async def seated(daemon, table):
    a, b = await connect(daemon.port), await connect(daemon.port)
    await take_seats(table, a, b, before=("BOARD OFF",))
    return a, b


@pytest_twisted.ensureDeferred
async def test_a_bot_that_spends_nearly_all_of_its_bank_does_not_lose(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text('[kalaha]\nclock = "2s+50ms"\n')
    daemon = await start_daemon("--config", str(conf))
    a, b = await seated(daemon, "spend")
    # A spends all but 300 ms of its bank on its first move, then plays at once.
    (clocks, result), (_, other) = await with_timeout(
        _both(play(a, lambda budget, n: budget - 0.3 if n == 1 else 0), play(b)), 60, "the game"
    )
    assert " END " in result and " END " in other, (result, other)
    first = clocks[0].split()
    assert first[0] == "CLOCK" and 1.99 <= float(first[1]) <= 2.11 and first[2:] == ["A=2.000", "B=2.000"], clocks[0]
    bank_after = float(clocks[1].split()[2].split("=")[1])
    assert 0.3 <= bank_after <= 0.45, clocks[1]  # ~0.3 s left + 50 ms increment


@pytest_twisted.ensureDeferred
async def test_a_bot_that_exceeds_its_bank_by_50_ms_loses_on_time(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text('[kalaha]\nclock = "1s+0"\n')
    daemon = await start_daemon("--config", str(conf))
    a, b = await seated(daemon, "late")
    (_, result), (_, other) = await with_timeout(
        _both(play(a, lambda budget, n: budget + 0.05), play(b)), 30, "the game"
    )
    assert result == "RESULT LOSE TIMEOUT you ran out of time (1s+0)"
    assert other.startswith("RESULT WIN TIMEOUT ") and other.endswith(" ran out of time (1s+0)")


@pytest_twisted.ensureDeferred
async def test_connect_four_a_bot_spends_its_bank_against_the_engine_on_the_clock_it_asked_for(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    bot = await connect(daemon.ports["connect4"])
    bot.send("BOARD OFF", "PLAY gamed:1 FIRST 5x4 CLOCK 2s+50ms")
    start = await bot.expect("START")
    assert await bot.next_line(timeout=10) == "TIMECONTROL 2s+50ms", start
    clocks, result = await with_timeout(
        defer.ensureDeferred(play(bot, lambda budget, n: budget - 0.3 if n == 1 else 0)), 60, "the game"
    )
    assert result.split()[2] != "TIMEOUT", result
    first = clocks[0].split()
    assert first[0] == "CLOCK" and 1.99 <= float(first[1]) <= 2.11 and first[2:] == ["0=2.000", "1=2.000"], clocks[0]
    mine = float(clocks[1].split()[2].split("=")[1])
    assert 0.3 <= mine <= 0.45, clocks[1]  # ~0.3 s left + 50 ms increment
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_connect_four_a_bot_that_exceeds_its_bank_by_50_ms_loses_on_time(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    a, b = await connect(port), await connect(port)
    a.send("NAME slow")
    b.send("NAME quick")
    await take_seats("late CLOCK 1s+0", a, b)  # drawings on: the INFO line in words follows RESULT
    (_, result), (_, other) = await with_timeout(
        _both(play(a, lambda budget, n: budget + 0.05), play(b)), 30, "the game"
    )
    assert result == "RESULT LOSE TIMEOUT 1 -1 -1 -1 -1"
    assert other == "RESULT WIN TIMEOUT 1 -1 -1 -1 -1"
    assert await a.next_line(timeout=10) == "INFO you ran out of time (1s+0): quick (player 1) wins"
    assert await b.next_line(timeout=10) == "INFO slow (player 0) ran out of time (1s+0): you win"


def _both(one, two):
    return defer.gatherResults([defer.ensureDeferred(one), defer.ensureDeferred(two)], consumeErrors=True)
