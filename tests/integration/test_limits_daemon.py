"""The connection limits of every text port against the real daemon (issue 13): a flood of lines
does not hold a connection (or its socket) for long, and one port's refusal line keeps coming."""

from __future__ import annotations

import pytest_twisted
from twisted.internet import reactor, task

from tests.integration.support import LOOPBACK, connect


async def _greeting(port: int, deadline: float) -> str:
    """The first line of a new connection; refused ones are retried until ``deadline`` (the server
    frees a connection's place once it has seen it close)."""
    while True:
        client = await connect(port)
        line = await client.next_line()
        if not line.startswith("ERROR 503") or reactor.seconds() > deadline:
            client.transport.loseConnection()
            return line
        await client.wait_closed()
        await task.deferLater(reactor, 0.05, lambda: None)


@pytest_twisted.ensureDeferred
async def test_100000_bare_newlines_then_a_close_free_the_connection_at_once(start_daemon):
    # Before: the newlines counted against the line rate (1000/s), so the PING behind them waited
    # 100 s and the closed socket stayed in CLOSE-WAIT (and counted) as long.
    daemon = await start_daemon("--max-per-peer", "1", kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    flooder = await connect(port)
    assert (await flooder.next_line()).startswith("HELLO")
    flooder.transport.write(b"\n" * 100_000 + b"PING\r\n")
    assert await flooder.expect("PONG", timeout=10) == "PONG"
    flooder.transport.write(b"\n" * 100_000)
    flooder.transport.loseConnection()
    await flooder.wait_closed()
    assert (await _greeting(port, reactor.seconds() + 10)).startswith("HELLO")
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_flood_of_lines_does_not_delay_another_players_reply(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    flooder, player = await connect(port), await connect(port)
    for client in (flooder, player):
        assert (await client.next_line()).startswith("HELLO")
    flooder.transport.write(b"PING\r\n" * 20_000)  # far more than the burst: held by the rate
    await flooder.expect("PONG")
    player.send("PING")
    assert await player.expect("PONG", timeout=5) == "PONG"
    flooder.transport.abortConnection()
    assert "Traceback" not in daemon.text
