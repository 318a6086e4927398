"""Match records of the real daemon are durable: Kalaha matches played over TCP are read back after
a restart (web API and ``gamed export``), and a SIGKILL in the middle of a game loses no finished
match and leaves the SQLite database intact. Guests are recorded as guests and never rated; the
ratings of registered players (accounts, ``gamed player add``) survive a restart too."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from gamed.kalaha import rules as kalaha_rules
from gamed.records import RecordStore
from tests.integration.support import LOOPBACK, add_accounts, connect, gamed_args, run, spawn, with_timeout
from tests.web.client import get_json

_STORED = re.compile(r"table (\S+) stored as match (\d+)")
PLAYERS = [("alice", "bob"), ("carol", "alice"), ("bob", "carol")]


def start(database, web: bool = True):
    """A daemon serving Kalaha (and the web site) that keeps its records in ``database``."""
    extra = ["--records", f"sqlite:{database}"] + (["--web", LOOPBACK] if web else [])
    return spawn(gamed_args(*extra, kalaha=LOOPBACK), expect_ports=2 if web else 1)


def stored(daemon) -> list[int]:
    """The match ids the daemon has logged as stored, in order."""
    return [int(m[2]) for m in _STORED.finditer(daemon.text)]


async def until(condition, seconds: float, what: str) -> None:
    """Poll ``condition()`` every 50 ms until it holds; fail the test after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await task.deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


class Game:
    """Two named clients meet at a table and play random legal moves; after ``resign_after``
    moves the one to move resigns (or, with ``resign_after=None``, they stop and wait). With
    ``tokens`` (name -> token) they log in as those accounts; otherwise they are named guests."""

    def __init__(
        self, port: int, table: str, names: tuple[str, str], resign_after: int | None, seed: int, tokens=None
    ):
        self.port, self.table, self.names, self.resign_after = port, table, names, resign_after
        self.tokens = tokens
        self.rng = random.Random(seed)
        self.moves: list[str] = []  # in the order played: only the side to move ever sends one
        self.sides: dict[str, str] = {}
        self.results: dict[str, str] = {}
        self.waiting = defer.Deferred()  # with resign_after=None: fires at the first unanswered YOURMOVE
        self.clients = []

    async def play(self) -> None:
        for name in self.names:
            client = await connect(self.port)
            who = f"LOGIN {name} {self.tokens[name]}" if self.tokens else f"NAME {name}"
            client.send("BOARD OFF", who, f"TABLE {self.table}")
            self.clients.append(client)
        await defer.gatherResults(
            [defer.ensureDeferred(self._bot(c, n)) for c, n in zip(self.clients, self.names)], consumeErrors=True
        )

    async def _bot(self, client, name: str) -> None:
        while True:
            line = await client.next_line(timeout=30)
            word = line.split(" ", 1)[0]
            if word == "START":
                self.sides[name] = line.split()[2]
            elif word == "YOURMOVE":
                if self.resign_after is None and len(self.moves) >= 4:
                    self.waiting.callback(None)
                    return  # leave the game running, this side to move
                if self.resign_after is not None and len(self.moves) >= self.resign_after:
                    client.send("RESIGN")
                else:
                    move = self.rng.choice(line.split()[2:])
                    self.moves.append(move)
                    client.send(move)
            elif word == "RESULT":
                self.results[name] = line
            elif word == "BYE":
                await client.wait_closed()
                return

    def check(self, match: dict) -> None:
        """``match`` (from the API or ``gamed export``) is this game, complete."""
        by_side = {side: name for name, side in self.sides.items()}
        assert match["game"] == "kalaha" and match["rated"] and match["reason"] == "resign"
        kind, rated = ("player", True) if self.tokens else ("guest", False)
        assert [(s["seat"], s["name"], s["kind"], s["rated"]) for s in match["seats"]] == [
            (0, by_side["A"], kind, rated),
            (1, by_side["B"], kind, rated),
        ]
        assert [m["move"] for m in match["moves"]] == self.moves
        assert [m["n"] for m in match["moves"]] == list(range(1, len(self.moves) + 1))
        assert [m["seat"] for m in match["moves"]] == [0 if m.startswith("A") else 1 for m in self.moves]
        assert all(m["state"] is not None for m in match["moves"])
        # The records rebuild each state from the moves (gamed.replay): it is the board the rules
        # reach with them, as the live game showed it.
        position = kalaha_rules.Position.start()
        for m in match["moves"]:
            position = kalaha_rules.play(position, int(m["move"][1])).position
            assert m["state"] == kalaha_rules.spectator_state(position), m
        # Each move keeps its mover's clock: under the plain per-move limit no bank is left.
        for m in match["moves"]:
            ((seat, clock),) = m["clock"].items()
            assert seat == str(m["seat"]) and clock["left"] is None, m
            assert 0 <= clock["used"] < 30 and 0 <= clock["credit"] < 30, m
        winner = next(name for name, line in self.results.items() if line.startswith("RESULT WIN RESIGN"))
        assert match["scores"] == [1.0 if by_side[side] == winner else 0.0 for side in "AB"]
        assert all((s["rating_before"] is not None) is rated and (s["rating_after"] is not None) is rated for s in match["seats"])


async def play_and_store(daemon, count: int, first: int = 0, tokens=None) -> list[tuple[Game, int]]:
    """Play games ``first`` .. ``first + count - 1`` one after another, each waited for until the
    daemon has stored it; returns each with its match id."""
    games = []
    for i in range(first, first + count):
        players = PLAYERS[i % len(PLAYERS)]
        game = Game(daemon.ports["kalaha"], f"durable{i}", players, resign_after=3 + i, seed=i, tokens=tokens)
        await with_timeout(defer.ensureDeferred(game.play()), 30, f"game {i} to end")
        await until(lambda: len(stored(daemon)) == i - first + 1, 15, f"game {i} to be stored")
        games.append((game, stored(daemon)[-1]))
    return games


async def export(database, match_id: int) -> dict:
    code, out = await run([sys.executable, "-m", "gamed.cli", "export", str(match_id), "--database", f"sqlite:{database}"], executable=None)
    assert code == 0, out
    return json.loads(out)


@pytest_twisted.ensureDeferred
async def test_matches_survive_a_restart_and_guests_are_never_rated(tmp_path):
    database = tmp_path / "r.sqlite"
    daemon = start(database)
    try:
        await with_timeout(daemon.listening, 30, "the daemon to listen")
        url = f"http://127.0.0.1:{daemon.ports['web']}"
        games = await play_and_store(daemon, 2)
        before = {}
        for game, match_id in games:
            code, before[match_id] = await get_json(f"{url}/api/matches/{match_id}")
            assert code == 200
            game.check(before[match_id])
        code, ratings = await get_json(f"{url}/api/ratings/kalaha")
        assert code == 200 and ratings["ratings"] == []
    finally:
        assert await daemon.stop()
    assert "Traceback" not in daemon.text

    again = start(database)
    try:
        await with_timeout(again.listening, 30, "the restarted daemon to listen")
        url = f"http://127.0.0.1:{again.ports['web']}"
        for game, match_id in games:
            code, match = await get_json(f"{url}/api/matches/{match_id}")
            assert code == 200 and match == before[match_id]
            game.check(match)
        code, recent = await get_json(f"{url}/api/matches")
        assert [m["id"] for m in recent["matches"]] == [match_id for _, match_id in reversed(games)]
        # the restarted daemon goes on numbering after the stored matches
        (extra,) = await play_and_store(again, 1, first=len(games))
        assert extra[1] == games[-1][1] + 1
    finally:
        assert await again.stop()
    assert "Traceback" not in again.text
    for game, match_id in games:
        exported = await export(database, match_id)
        assert exported == before[match_id]


@pytest_twisted.ensureDeferred
async def test_matches_and_ratings_of_accounts_survive_a_restart(tmp_path):
    database = tmp_path / "r.sqlite"
    tokens = await add_accounts(database, ("alice", "bob", "carol"))
    daemon = start(database)
    try:
        await with_timeout(daemon.listening, 30, "the daemon to listen")
        url = f"http://127.0.0.1:{daemon.ports['web']}"
        games = await play_and_store(daemon, 2, tokens=tokens)
        before = {}
        for game, match_id in games:
            code, before[match_id] = await get_json(f"{url}/api/matches/{match_id}")
            assert code == 200
            game.check(before[match_id])
        code, ratings_before = await get_json(f"{url}/api/ratings/kalaha")
        assert {r["name"] for r in ratings_before["ratings"]} == {"alice", "bob", "carol"}
    finally:
        assert await daemon.stop()
    assert "Traceback" not in daemon.text

    again = start(database)
    try:
        await with_timeout(again.listening, 30, "the restarted daemon to listen")
        url = f"http://127.0.0.1:{again.ports['web']}"
        for game, match_id in games:
            code, match = await get_json(f"{url}/api/matches/{match_id}")
            assert code == 200 and match == before[match_id]
            game.check(match)
        code, ratings = await get_json(f"{url}/api/ratings/kalaha")
        assert code == 200 and ratings == ratings_before
        assert [r["games"] for r in ratings["ratings"] if r["name"] == "alice"] == [2]
        code, recent = await get_json(f"{url}/api/matches")
        assert [m["id"] for m in recent["matches"]] == [match_id for _, match_id in reversed(games)]
        # the restarted daemon goes on numbering after the stored matches
        (extra,) = await play_and_store(again, 1, first=len(games), tokens=tokens)
        assert extra[1] == games[-1][1] + 1
    finally:
        assert await again.stop()
    assert "Traceback" not in again.text
    for game, match_id in games:
        exported = await export(database, match_id)
        assert exported == before[match_id]


@pytest_twisted.ensureDeferred
async def test_sigkill_during_a_game_loses_no_finished_match(tmp_path):
    database = tmp_path / "r.sqlite"
    daemon = start(database, web=False)
    try:
        await with_timeout(daemon.listening, 30, "the daemon to listen")
        games = await play_and_store(daemon, 3)
        running = Game(daemon.ports["kalaha"], "unfinished", ("dave", "erin"), resign_after=None, seed=99)
        playing = defer.ensureDeferred(running.play())
        playing.addErrback(lambda f: None)  # its connections die with the daemon
        await with_timeout(running.waiting, 30, "the last game to be under way")
        daemon.signal("KILL")
        await with_timeout(daemon.ended, 15, "the daemon to die")
        assert daemon.exit_signal == 9
    finally:
        await daemon.stop()
    assert len(running.moves) >= 4

    conn = sqlite3.connect(database)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT COUNT(*) FROM matches").fetchone() == (3,)
        assert conn.execute("SELECT COUNT(*) FROM seats WHERE name IN ('dave', 'erin')").fetchone() == (0,)
    finally:
        conn.close()
    store = RecordStore(f"sqlite:{database}", reactor, create=False)
    try:
        await store.start()
        for game, match_id in games:
            game.check(await store.match(match_id))
        assert await store.leaderboard("kalaha") == []  # guests are never rated
    finally:
        await store.close()
