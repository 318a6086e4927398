"""Stopping the real daemon while games run: every running game, of every game type, is stored in
the records as interrupted (reason ``shutdown``, not rated) and the log names it, so nothing that
was being played vanishes."""

from __future__ import annotations

import sqlite3

import pytest_twisted
from twisted.internet import reactor, task

from tests.integration.support import LOOPBACK, connect, gamed_args, spawn, with_timeout
from tests.integration.test_stratego_daemon import sleeping_ais, wait_for
from tests.web.client import get_json


@pytest_twisted.ensureDeferred
async def test_a_shutdown_stores_every_running_game_as_interrupted(tmp_path):
    database = tmp_path / "records.sqlite"
    args = gamed_args(
        "--config", sleeping_ais(tmp_path), "--web", LOOPBACK, "--connect4", LOOPBACK, "--records", str(database),
        kalaha=LOOPBACK, fight=LOOPBACK,
    )
    daemon = spawn(args, expect_ports=4)
    try:
        await with_timeout(daemon.listening, 30, "the daemon to listen")
        clients = []
        for game, names in (("kalaha", ("alice", "bob")), ("connect4", ("carol", "dave"))):
            for name in names:
                client = await connect(daemon.ports[game])
                client.send(f"NAME {name}", "TABLE shutdown")
                clients.append(client)
        for name in ("erin", "frank"):
            client = await connect(daemon.ports["fight"])
            client.send(f"NAME&{name}", "TABLE&shutdown")
            clients.append(client)
        url = f"http://127.0.0.1:{daemon.ports['web']}/api/games"
        for _ in range(300):
            running = (await get_json(url))[1]["games"]
            if len(running) == 3:
                break
            await task.deferLater(reactor, 0.1, lambda: None)
        assert sorted(t["game"] for t in running) == ["connect4", "fight", "kalaha"], running
        # The Stratego programs are started (and never answer their setup).
        await wait_for(lambda: list((tmp_path / "state").glob("tournament-*/*.red.*")), 20, "the Stratego game")
        assert await daemon.stop()
    finally:
        await daemon.stop()
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT game, table_id, reason, rated FROM matches ORDER BY game").fetchall()
    assert rows == [
        ("connect4", "connect4-1", "shutdown", 0),
        ("fight", "fight-1", "shutdown", 0),
        ("kalaha", "kalaha-1", "shutdown", 0),
        ("stratego", "stratego-1", "shutdown", 0),
    ], daemon.text[-3000:]
    for table in ("connect4-1", "fight-1", "kalaha-1", "stratego-1"):
        assert f"table {table} stored as match" in daemon.text
    assert "Traceback" not in daemon.text
