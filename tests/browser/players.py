"""Scripted players for the browser tests: blocking line clients that play Kalaha and Virtual Fight
on the daemon, so a test can make one move, then look at the page."""

from __future__ import annotations

import random

from tests.browser.conftest import LineSocket


class KalahaGame:
    """Two Kalaha players at a named table (guests, or accounts with ``tokens``). ``position`` is the last POSITION both were sent:
    ``(pits, stores, to_move)`` with ``pits[seat]`` in sowing order (seat 0 = side A)."""

    def __init__(
        self, connect, names: tuple[str, str], table: str, rng: random.Random | None = None, tokens=None
    ):
        self.rng = rng or random.Random(7)
        clients = [connect("kalaha"), connect("kalaha")]
        for c, name in zip(clients, names):
            # With ``tokens`` (name -> token) the players log in as those accounts (rated);
            # otherwise they are named guests.
            who = f"LOGIN {name} {tokens[name]}" if tokens else f"NAME {name}"
            c.send("BOARD OFF", who, f"TABLE {table}")
            c.expect("OK TABLE")
        self.side: dict[str, LineSocket] = {}
        self.names: dict[str, str] = {}
        for c, name in zip(clients, names):
            side = c.expect("START").split()[2]
            self.side[side] = c
            self.names[side] = name
        self.moves: list[str] = []
        self.position = self._read_position()

    def _read_position(self):
        fields = self.side["A"].expect("POSITION").split()[1:]
        n = list(map(int, fields[:14]))
        to_move = {"A": 0, "B": 1}.get(fields[14])
        return [n[0:6], n[7:13]], [n[6], n[13]], to_move

    @property
    def over(self) -> bool:
        return self.position[2] is None

    def move(self, choose=None) -> str:
        """The side to move plays (a random legal pit unless ``choose(legal)`` picks one);
        returns the pit and waits for the new position."""
        mover = self.side["AB"[self.position[2]]]
        legal = mover.expect("YOURMOVE").split()[2:]
        pit = choose(legal) if choose else self.rng.choice(legal)
        mover.send(pit)
        self.moves.append(pit)
        self.position = self._read_position()
        return pit

    def play_to_end(self, limit: int = 500) -> None:
        while not self.over and limit:
            self.move()
            limit -= 1
        for c in self.side.values():
            c.expect("BYE")


class FightTeam:
    """One Virtual Fight AI: ``turn(commands)`` plays one turn of five warriors' actions."""

    def __init__(self, connect, name: str, table: str):
        self.c = connect("fight")
        assert self.c.line() == "OK"
        self.c.send(f"NAME&{name}", f"TABLE&{table}")
        assert [self.c.line(), self.c.line()] == ["255", "255"]

    def ask(self, line: str) -> str:
        self.c.send(line)
        return self.c.line()

    def act(self, warrior: int, *choices: str) -> str:
        """The first of ``choices`` (``MOVE&RIGHT``, ``SHOOT``...) the server accepts."""
        for choice in choices:
            if self.ask(f"{warrior}&{choice}") == "255":
                return choice
        raise AssertionError(f"warrior {warrior}: none of {choices} was possible")

    def position(self, warrior: int) -> tuple[int, int]:
        """(x, y) = (col, row) of a warrior."""
        row, col = map(int, self.ask(f"{warrior}&POS").split(","))
        return col, row

    def facing(self, warrior: int) -> str:
        return self.ask(f"{warrior}&DIR")

    def wait_ready(self) -> str:
        """Lines up to the next READY (or GAMEOVER); returns that line."""
        return self.c.expect("READY", "GAMEOVER")


def find_table(site, game: str, *names: str) -> str:
    """The id of the running ``game`` table whose players are ``names`` (from /api/games)."""

    def ours(data):
        for t in data["games"]:
            if t["game"] == game and sorted(p["name"] for p in t["players"]) == sorted(names):
                return t["id"]
        return None

    return site.poll_api("/api/games", ours, f"the {game} table of {names}")
