"""Clocks against the real daemon: bots that read their time from CLOCK lines and spend it."""

import pytest_twisted
from twisted.internet import defer, reactor, task

from tests.integration.support import connect, take_seats, with_timeout


async def play(client, spend=None, result_prefix="RESULT"):
    """Play first legal pits until the game ends. ``spend(budget, n)`` says how long to wait
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


def _both(one, two):
    return defer.gatherResults([defer.ensureDeferred(one), defer.ensureDeferred(two)], consumeErrors=True)
