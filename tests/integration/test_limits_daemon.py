"""The connection limits of every text port against the real daemon (issue 13): a flood of lines
does not hold a connection (or its socket) for long, and one port's refusal line keeps coming."""

from __future__ import annotations

import re
import shutil

import pytest
import pytest_twisted
from twisted.internet import reactor, task

from tests.connect4.native_libs import VARIANTS, compile_engines
from tests.integration.support import LOOPBACK, TWISTD, connect, gamed_args, spawn, with_timeout


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


PRLIMIT = shutil.which("prlimit")
OPEN_FILES = 300  # the daemon's open-file limit here: a budget of 82 connections (218 reserved)


@pytest.mark.skipif(PRLIMIT is None, reason="needs prlimit (util-linux) to start the daemon with few open files")
@pytest_twisted.ensureDeferred
async def test_at_the_open_file_limit_every_port_answers_503_and_engines_still_start(tmp_path):
    # Before: connections took descriptors until accept() failed (EMFILE): new ones on every port
    # got no line at all, and PLAY of a native engine answered ERROR 500 (no pipes left).
    engines = tmp_path / "engines"
    engines.mkdir()
    compile_engines(engines, {"good": VARIANTS["good"]})
    args = gamed_args("--connect4", LOOPBACK, "--connect4-engines", str(engines), kalaha=LOOPBACK)
    daemon = spawn([f"--nofile={OPEN_FILES}:{OPEN_FILES}", TWISTD, *args], executable=PRLIMIT, expect_ports=2)
    clients = []
    try:
        await with_timeout(daemon.listening, 20, "the daemon to listen")
        ports = [daemon.ports["kalaha"], daemon.ports["connect4"]]
        refusal = None
        for n in range(OPEN_FILES + 50):  # bounded: the budget is below the open-file limit
            client = await connect(ports[n % 2])
            line = await client.next_line()
            if not line.startswith("HELLO"):
                refusal = line
                break
            clients.append(client)
        assert refusal == f"ERROR 503 server full ({len(clients)} connections on all ports)", refusal
        match = re.search(r"connections: at most (\d+) on all ports together \(open-file limit (\d+)", daemon.text)
        assert match and (int(match[1]), int(match[2])) == (len(clients), OPEN_FILES)
        for port in ports * 5:  # full: every port keeps answering its refusal
            client = await connect(port)
            assert (await client.next_line()).startswith("ERROR 503 server full")
            await client.wait_closed()
        player = next(c for c in clients[1::2])  # a Connect Four connection
        player.send("BOARD OFF", "PLAY good:1 SECOND 5x4")
        assert (await player.expect("START", timeout=20)).startswith("START ")
        assert (await player.expect("YOURMOVE", timeout=20)).startswith("YOURMOVE ")
        assert "Too many open files" not in daemon.text and "Traceback" not in daemon.text
    finally:
        for client in clients:
            client.transport.abortConnection()
        await daemon.stop()
