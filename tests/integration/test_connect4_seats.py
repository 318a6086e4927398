"""Connect Four seats against the real daemon over loopback: a guest whose connection breaks is
away, takes its seat back with its resume token and gets the whole state; a seat not back within
the grace forfeits, and the match is stored as a rated loss; an account logs in, drops and comes
back by logging in again, and its name cannot be used without its token (these need the accounts
of ``gamed.accounts``: skipped until they are there)."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

import pytest
import pytest_twisted

from gamed.accounts import valid_token
from gamed.seats import RESUME_TOKEN_BYTES
from tests.integration.support import LOOPBACK, ROOT, child_env, connect, take_seats, with_timeout


def _config(tmp_path, grace: float) -> str:
    path = tmp_path / "gamed.conf"
    path.write_text(f"[connect4]\ngrace = {grace}\n")
    return str(path)


async def _drop(client) -> None:
    client.transport.abortConnection()  # the connection breaks: no QUIT, no BYE
    await client.wait_closed()


async def _lines_until(client, keyword: str, timeout: float = 10) -> list[str]:
    """Every line up to and including the first that starts with ``keyword``."""
    lines = []
    while True:
        line = await with_timeout(client.next_line(timeout), timeout, f"a {keyword} line")
        lines.append(line)
        if line.split(" ", 1)[0] == keyword:
            return lines


@pytest_twisted.ensureDeferred
async def test_a_guest_drops_and_takes_its_seat_back_with_its_resume_token(start_daemon, tmp_path):
    daemon = await start_daemon("--config", _config(tmp_path, 30), kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    alice, bob = await connect(port), await connect(port)
    alice.send("NAME alice")
    bob.send("NAME bob")
    await take_seats("back", alice, bob, before=("BOARD OFF",))
    await alice.expect("YOURMOVE")
    alice.send("TOKEN")
    token = (await alice.expect("TOKEN")).split()[1]
    assert re.fullmatch(r"[A-Za-z0-9_-]+", token) and len(token) == RESUME_TOKEN_BYTES * 4 // 3
    alice.send("3")
    await alice.expect("PLAYED")
    await bob.expect("YOURMOVE")
    await _drop(alice)
    assert await bob.expect("AWAY") in ("AWAY 0 alice 30", "AWAY 0 alice 29")
    bob.send("4")
    await bob.expect("PLAYED")
    again = await connect(port)
    again.send("NAME alice")
    assert await again.expect("ERROR") == "ERROR 432 another player here uses that name just now (alice)"
    again.send("BOARD OFF", f"RESUME {token}")
    state = await _lines_until(again, "YOURMOVE")
    assert state[state.index("OK RESUME 1 0"):-1] == [
        "OK RESUME 1 0",
        "START 1 0 7x6 bob",
        "BOARD 7x6 ...01.. ....... ....... ....... ....... .......",
        "STRIKES 0 0 3",
        "TURN 0 alice",
    ]
    assert await bob.expect("BACK") == "BACK 0 alice"
    again.send("RESIGN")
    assert await again.expect("RESULT") == "RESULT LOSE RESIGN 1 -1 -1 -1 -1"
    assert await bob.expect("RESULT") == "RESULT WIN RESIGN 1 -1 -1 -1 -1"
    late = await connect(port)
    late.send(f"RESUME {token}")
    assert await late.expect("ERROR") == "ERROR 428 the game of that resume token is over"
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_seat_not_back_within_the_grace_forfeits_a_stored_loss(start_daemon, tmp_path):
    database = tmp_path / "records.sqlite"
    daemon = await start_daemon("--config", _config(tmp_path, 1), "--records", f"sqlite:{database}",
                                kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    carol = await connect(port)
    carol.send("NAME carol", "BOARD OFF", "PLAY gamed:1 FIRST 5x4")
    await carol.expect("YOURMOVE")
    carol.send("0")
    await carol.expect("PLAYED")
    await _drop(carol)
    dave, erin = await connect(port), await connect(port)
    await take_seats("late", dave, erin, before=("BOARD OFF",))
    await dave.expect("YOURMOVE")
    dave.send("2")
    await erin.expect("YOURMOVE")
    await _drop(erin)
    assert (await dave.expect("AWAY")).startswith("AWAY 1 guest")
    assert await dave.expect("RESULT", timeout=15) == "RESULT WIN FORFEIT 0 -1 -1 -1 -1"
    await dave.wait_closed()
    await daemon.stop()
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT reason, rated FROM matches WHERE game = 'connect4' ORDER BY id").fetchall()
    # carol's game against the engine: a forfeit after her move; dave's: a forfeit of erin
    assert rows == [("forfeit", 1), ("forfeit", 1)]


def _add_account(database, name: str) -> str:
    """``gamed player add NAME`` on the daemon's records database; the token it prints."""
    out = subprocess.run(
        [sys.executable, "-m", "gamed.cli", "player", "add", name, "--records", f"sqlite:{database}"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=child_env(), check=True,
    ).stdout
    (line,) = [line for line in out.splitlines() if line.startswith(f"token for {name}: ")]
    token = line.split()[-1]
    assert valid_token(token)
    return token


@pytest_twisted.ensureDeferred
async def test_an_account_logs_in_drops_and_comes_back(start_daemon, tmp_path):
    database = tmp_path / "records.sqlite"
    token = _add_account(database, "alice")
    daemon = await start_daemon("--config", _config(tmp_path, 30), "--records", f"sqlite:{database}",
                                kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    alice, bob = await connect(port), await connect(port)
    alice.send(f"LOGIN alice {token}")
    assert await alice.expect("OK") == "OK LOGIN alice"
    bob.send("NAME bob")
    await take_seats("acct", alice, bob, before=("BOARD OFF",))
    await alice.expect("YOURMOVE")
    await _drop(alice)
    await bob.expect("AWAY")
    impostor = await connect(port)
    impostor.send("NAME alice", "LOGIN alice " + "x" * 32)
    assert (await impostor.expect("ERROR")).startswith("ERROR 424 ")
    assert (await impostor.expect("ERROR")).startswith("ERROR 420 ")
    again = await connect(port)
    again.send("BOARD OFF", f"LOGIN alice {token}")
    state = await _lines_until(again, "YOURMOVE")
    assert "OK LOGIN alice" in state and "OK RESUME 1 0" in state and "START 1 0 7x6 bob" in state
    assert await bob.expect("BACK") == "BACK 0 alice"
    again.send("3")
    await bob.expect("YOURMOVE")
    bob.send("RESIGN")
    assert await again.expect("RESULT") == "RESULT WIN RESIGN 0 -1 -1 -1 -1"
    assert "Traceback" not in daemon.text and token not in daemon.text
