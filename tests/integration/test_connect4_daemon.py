"""Connect Four against the real daemon over loopback (served with --connect4): two people at a
named table play to a win; a person plays the built-in engine to the end; the documented session
of a person (drawings on) replays byte for byte; a timeout loses."""

from __future__ import annotations

import pytest_twisted

from tests.docsessions import sessions
from tests.integration.support import LOOPBACK, connect, take_seats, with_timeout


@pytest_twisted.ensureDeferred
async def test_two_clients_play_to_a_vertical_win(start_daemon):
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    alice, bob = await connect(port), await connect(port)
    alice.send("NAME alice")
    bob.send("NAME bob")
    await take_seats("duel", alice, bob, before=("BOARD OFF",))
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


@pytest_twisted.ensureDeferred
async def test_the_documented_session_of_a_person_replays_byte_for_byte(start_daemon):
    # The other documented sessions depend on the engines' random choices (seeded in memory only).
    (session,) = [s for s in sessions("connect-four.md") if s.title == "A person practises an ending"]
    daemon = await start_daemon(kalaha="none", connect4=LOOPBACK)
    client = await connect(daemon.ports["connect4"])
    for n, step in enumerate(session.steps, 1):
        if step.kind == ">":
            client.send(step.text)
        elif step.kind == "<":
            assert await with_timeout(client.next_line(), 10, f"step {n}: {step.text}") == step.text, f"step {n}"
        else:
            await client.wait_closed()
    expected = "".join(f"{s.text}\r\n" for s in session.steps if s.kind == "<")
    assert bytes(client.raw) == expected.encode("ascii")


@pytest_twisted.ensureDeferred
async def test_a_player_out_of_time_loses(start_daemon):
    daemon = await start_daemon("--connect4-move-time", "1", kalaha="none", connect4=LOOPBACK)
    port = daemon.ports["connect4"]
    alice, bob = await connect(port), await connect(port)
    alice.send("NAME alice")
    bob.send("NAME bob")
    await take_seats("slow", alice, bob)
    assert (await alice.expect("YOURMOVE")).startswith("YOURMOVE 1 ")
    assert await alice.expect("RESULT") == "RESULT LOSE TIMEOUT 1 -1 -1 -1 -1"
    assert await alice.next_line() == "INFO you did not move within 1 s: bob (player 1) wins"
    assert await bob.expect("RESULT") == "RESULT WIN TIMEOUT 1 -1 -1 -1 -1"
