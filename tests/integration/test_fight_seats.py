"""Virtual Fight seats against the real daemon over loopback: a guest that drops and takes its
seat back with its resume token, a seat not back within the grace that forfeits (recorded), a
name in use refused; with accounts (once ``gamed.accounts`` is there) logging in, coming back
with the account's token, wrong tokens refused, and the forfeit rated.

Every wait is bounded; each test starts its own daemon on ephemeral loopback ports.
"""

from __future__ import annotations

import json
import pathlib

import pytest
import pytest_twisted

from gamed.accounts import TOKEN_RE
from tests.integration.support import LOOPBACK, TWISTD, connect, run
from tests.integration.test_fight_daemon import FAST, lines_until

FIGHT = {"fight": LOOPBACK, "fight_gui": "none", "kalaha": "none"}
PASS = [f"{n}&NONE" for n in range(5)]
GAMED = str(pathlib.Path(TWISTD).with_name("gamed"))


def config_file(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / "gamed.conf"
    path.write_text(text)
    return str(path)


async def pair(port: int, first: str, second: str):
    """Two AIs that sent ``first`` and ``second`` (NAME or LOGIN lines) and got READY."""
    a = await connect(port)
    a.send(first)
    assert await lines_until(a, "255") == ["OK", "255"]
    b = await connect(port)
    b.send(second)
    assert await lines_until(b, "READY") == ["OK", "255", "READY"]
    assert await a.next_line() == "READY"
    return a, b


async def drop(client) -> None:
    client.transport.loseConnection()
    await client.wait_closed()


def state_block(lines: list[str], turn: int, team: int, name: str) -> None:
    """``lines`` are OK, 255, the state block of ``team`` in ``turn`` and READY."""
    assert lines[:2] == ["OK", "255"], lines
    head = lines[2].split("&")
    assert head[:4] == ["STATE", str(turn), str(team), name] and head[5] == "0", lines
    assert [line.split("&")[:2] for line in lines[3:8]] == [["W", str(n)] for n in range(5)], lines
    assert lines[8:] == ["ENDSTATE", "READY"], lines


@pytest_twisted.ensureDeferred
async def test_a_guest_drops_takes_its_seat_back_with_its_resume_token_and_finishes(start_daemon):
    settings = ("--fight-pair-delay", "0.2", "--fight-max-turns", "2", "--fight-turn-time", "20")
    daemon = await start_daemon(*FAST, *settings, **FIGHT)
    port = daemon.ports["fight"]
    a, b = await pair(port, "NAME&dave", "NAME&erin")
    a.send("TOKEN")
    (token_line,) = [await a.next_line()]
    assert token_line.startswith("TOKEN&")
    token = token_line.split("&", 1)[1]
    a.send("0&MOVE&DOWN")
    assert await a.next_line() == "255"
    await drop(a)

    imposter = await connect(port)
    imposter.send("NAME&dave")
    assert await lines_until(imposter, "432") == ["OK", "432&another player here uses that name just now (dave)"]

    c = await connect(port)
    c.send(f"RESUME&{token}")
    lines = await lines_until(c, "READY")
    state_block(lines, 1, 0, "dave")
    assert lines[3].endswith("&DOWN&ALIVE&ACTED"), "the state is the game's, as it was left"
    for _ in range(2):
        c.send(*PASS[1:] if _ == 0 else PASS)
        b.send(*PASS)
        await lines_until(b, "200")
        await lines_until(c, "200")
    assert (await c.next_line()) == "GAMEOVER&DRAW" and (await b.next_line()) == "GAMEOVER&DRAW"
    await c.wait_closed()
    assert "seat 0 (dave) of 1 is away" in daemon.text and "seat 0 (dave) of 1 is back" in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_seat_not_back_within_the_grace_forfeits_and_the_game_is_recorded(start_daemon, tmp_path):
    records = tmp_path / "gamed.sqlite"
    config = config_file(tmp_path, "[fight]\ngrace = 1\n")
    settings = ("--config", config, "--records", str(records), "--fight-pair-delay", "0.2", "--fight-turn-time", "30")
    daemon = await start_daemon(*FAST, *settings, **FIGHT)
    port = daemon.ports["fight"]
    a, b = await pair(port, "NAME&dave", "NAME&erin")
    a.send("TOKEN")
    assert (await a.next_line()).startswith("TOKEN&")
    b.send("TOKEN")
    resume = (await b.next_line()).split("&", 1)[1]
    await drop(b)
    assert await a.next_line() == "AWAY&1&erin&1", "dave used TOKEN: he is told"
    a.send(*PASS)
    # The turn time is 30 s: only erin's forfeit, a second after she left, ends the turn.
    assert await lines_until(a, "GAMEOVER", timeout=10) == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    await a.wait_closed()
    late = await connect(port)
    late.send(f"RESUME&{resume}")
    assert await lines_until(late, "428") == ["OK", "428&the game of that resume token is over"]
    assert "fight game 1 ended after turn 1 (forfeit): dave WIN" in daemon.text
    assert "erin (team 1) forfeited (not back in time)" in daemon.text


# --- with accounts (gamed player add) ---------------------------------------------------------


async def add_player(database: pathlib.Path, name: str) -> str:
    """``gamed player add <name>``: the token it prints once."""
    code, out = await run(["player", "add", name, "--database", str(database)], executable=GAMED)
    assert code == 0, out
    tokens = [word for word in out.split() if TOKEN_RE.match(word)]
    assert tokens, out
    return tokens[-1]


@pytest_twisted.ensureDeferred
async def test_accounts_log_in_come_back_with_their_token_and_a_forfeit_is_rated(start_daemon, tmp_path):
    records = tmp_path / "gamed.sqlite"
    config = config_file(tmp_path, f'[records]\ndatabase = "{records}"\n[fight]\ngrace = 3\n')
    tokens = {name: await add_player(records, name) for name in ("ann", "ben")}
    settings = ("--config", config, "--records", str(records), "--fight-pair-delay", "0.2", "--fight-turn-time", "30")
    daemon = await start_daemon(*FAST, *settings, **FIGHT)
    port = daemon.ports["fight"]

    wrong = await connect(port)
    wrong.send("LOGIN&ann&" + "x" * 24)
    assert await lines_until(wrong, "420") == ["OK", "420&unknown account or wrong token"]
    plain = await connect(port)
    plain.send("NAME&ann")
    assert (await lines_until(plain, "424"))[-1].startswith("424&")
    await drop(wrong)
    await drop(plain)

    a, b = await pair(port, f"LOGIN&ann&{tokens['ann']}", f"LOGIN&ben&{tokens['ben']}")
    await drop(a)
    assert (await b.next_line()).startswith("AWAY&0&ann&")
    c = await connect(port)
    c.send(f"LOGIN&ann&{tokens['ann']}")
    state_block(await lines_until(c, "READY"), 1, 0, "ann")
    assert await b.next_line() == "BACK&0&ann"

    await drop(c)  # away again, and this time for good
    assert (await b.next_line()).startswith("AWAY&0&ann&")
    b.send(*PASS)
    assert await lines_until(b, "GAMEOVER", timeout=15) == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    code, out = await run(["export", "1", "--database", str(records)], executable=GAMED)
    assert code == 0, out
    match = json.loads(out[out.index("{") :])
    assert (match["reason"], match["rated"]) == ("forfeit", True)
    assert [(s["name"], s["rated"]) for s in match["seats"]] == [("ann", True), ("ben", True)]
