"""Connect Four against the real daemon over loopback (being completed: served with --connect4):
two people at a named table play to a win; a person plays the built-in engine to the end."""

from __future__ import annotations

import pytest_twisted

from tests.integration.support import LOOPBACK, connect


@pytest_twisted.ensureDeferred
async def test_two_clients_play_to_a_vertical_win(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    alice, bob = await connect(port), await connect(port)
    for client, name in ((alice, "alice"), (bob, "bob")):
        client.send(f"NAME {name}", "BOARD OFF", "TABLE duel")
    assert (await alice.expect("START")).split()[2] == "0"
    assert (await bob.expect("START")).split()[2] == "1"
    for _ in range(3):
        await alice.expect("YOURMOVE")
        alice.send("0")
        await bob.expect("YOURMOVE")
        bob.send("1")
    await alice.expect("YOURMOVE")
    alice.send("0")
    assert await alice.expect("RESULT") == "RESULT WIN FOUR 0 0 0 0 3"
    assert (await bob.expect("RESULT")).startswith("RESULT LOSE FOUR 0")
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_person_plays_the_engine_to_the_end(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    person = await connect(daemon.ports["connect4"])
    person.send("BOARD OFF", "PLAY gamed:1 FIRST 5x4")
    await person.expect("START")
    while True:
        line = await person.next_line(timeout=20)
        if line.startswith("YOURMOVE"):
            person.send(line.split()[2])  # the first legal column
        elif line.startswith("RESULT"):
            break
    assert line.split()[1] in ("WIN", "LOSE", "DRAW")
    assert "Traceback" not in daemon.text
