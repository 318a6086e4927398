#!/usr/bin/env python3
"""A simple Virtual Fight AI: copy it, change `SimpleAI.act`, and you have your own.

It needs only Python 3.7 or later and its standard library; it knows nothing about gamed's code, only the
protocol (docs/protocols/virtual-fight.md):

* The server greets every AI with `OK`. The AI may then name itself (`NAME&<name>`) or ask for a
  table (`TABLE&<name>`); each is answered `255`.
* At the start of every turn the server sends `READY`. The AI commands its five warriors, 0 to 4,
  with lines `n&COMMAND[&DIRECTION]`; every line it sends gets exactly one reply line.
    - queries, as many as you like: `n&POS` -> `row,col`; `n&DIR` -> `UP`; `n&SAW` -> the
      squares the warrior sees, `row,col,T&row,col,T...` (T: `E` enemy, `O` teammate, `#` wall,
      `x` dead body), or an empty line;
    - one action per warrior and turn: `n&MOVE&D` (step and face D), `n&SHOOT[&D]` (turn to D,
      shoot 3 squares at the end of the turn), `n&NONE&D` (just turn); or the pass `n&NONE`.
      Replies: `255` done, `100` invalid, `111` square not empty, `112` off the map, `120` this
      warrior already acted.
* The AI's turn is over when every living warrior has acted or passed. When every AI is done, the
  server sends `200`, one `n&HIT&WHAT` line per warrior of ours that shot, one `n&KILLED` line
  per warrior of ours that died, and then `READY` again, or `GAMEOVER&WIN|LOSE|DRAW`, after
  which it closes the connection.

* Before the game the AI may send `SELFTEST` instead: the server then plays a short scripted
  match against it (no opponent, no record) and reports each step as `SELFTEST&OK&<step>` or
  `SELFTEST&FAIL&<step>` with `SELFTEST&EXPECTED&<line>` and `SELFTEST&RECEIVED&<line>`, then
  `SELFTEST&VERDICT&PASS` or `FAIL` (1 s after its GAMEOVER line). `--selftest` does this.

Usage: python3 simple_ai.py [--host localhost] [--port 4500] [--name NAME] [--table TABLE]
                            [--seed N] [--timeout SECONDS] [--verbose] [--selftest]
"""

from __future__ import annotations

import argparse
import collections
import random
import socket
import sys

WARRIORS = range(5)
SHOT_RANGE = 3
STEPS = {"UP": (-1, 0), "DOWN": (1, 0), "LEFT": (0, -1), "RIGHT": (0, 1)}


class GameOver(Exception):
    """The server sent GAMEOVER&<result>: the game is over for us."""

    def __init__(self, line: str):
        super().__init__(line)
        self.result = line.split("&", 1)[1]


class Connection:
    """One TCP connection to the server, read and written line by line."""

    def __init__(self, host: str, port: int, timeout: float, verbose: bool = False):
        # The timeout applies to every read: if the server says nothing for that long we give up
        # instead of hanging forever.
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.reader = self.sock.makefile("rb")
        self.verbose = verbose
        # Lines the server sent on its own (200 block, READY, GAMEOVER) while we were waiting for
        # the reply to a command; the main loop handles them next.
        self.events: collections.deque[str] = collections.deque()

    def send(self, line: str) -> None:
        if self.verbose:
            print(f"> {line}")
        self.sock.sendall(line.encode("ascii") + b"\r\n")

    def receive(self) -> str:
        """The next line from the server, without its "\\r\\n"."""
        raw = self.reader.readline()
        if not raw:
            raise ConnectionError("the server closed the connection")
        line = raw.decode("ascii").rstrip("\r\n")
        if self.verbose:
            print(f"< {line}")
        return line

    def next_event(self) -> str:
        """The next line the server sent on its own."""
        return self.events.popleft() if self.events else self.receive()

    def ask(self, command: str) -> str:
        """Send one command and return its reply line.

        Normally the reply comes at once. If the turn ended before our command arrived (we were
        too slow: the turn time ran out), the server sends the 200 block and READY first and
        answers the command in the next turn; those lines are kept for the main loop.
        """
        self.send(command)
        while True:
            line = self.receive()
            if line.startswith("GAMEOVER&"):
                raise GameOver(line)
            if line in ("200", "READY") or line.endswith("&KILLED") or "&HIT&" in line or line.startswith("SELFTEST&"):
                self.events.append(line)
                continue
            return line

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class Warrior:
    """What we know about one of our warriors this turn."""

    def __init__(self, number: int, square: tuple[int, int], facing: str, seen: list[tuple[int, int, str]]):
        self.number = number
        self.square = square
        self.facing = facing
        self.seen = seen


def parse_square(text: str) -> tuple[int, int]:
    row, col = text.split(",")
    return int(row), int(col)


def parse_saw(text: str) -> list[tuple[int, int, str]]:
    """`2,5,E&1,3,#` -> [(2, 5, 'E'), (1, 3, '#')]; an empty line -> []."""
    seen = []
    for item in text.split("&") if text else []:
        row, col, what = item.split(",")
        seen.append((int(row), int(col), what))
    return seen


def line_of_fire(start, target, blocked) -> str | None:
    """The direction to shoot from `start` to hit `target`, if it is in a straight line within
    3 squares and no known obstacle lies between; otherwise None."""
    (r, c), (tr, tc) = start, target
    if r != tr and c != tc:
        return None
    distance = abs(tr - r) + abs(tc - c)
    if not 1 <= distance <= SHOT_RANGE:
        return None
    step = ((tr > r) - (tr < r), (tc > c) - (tc < c))
    for k in range(1, distance):
        if (r + k * step[0], c + k * step[1]) in blocked:
            return None
    return next(name for name, vector in STEPS.items() if vector == step)


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def directions_toward(start, target) -> list[str]:
    """Directions that bring `start` closer to `target`, the longer way first."""
    (r, c), (tr, tc) = start, target
    vertical = "DOWN" if tr > r else "UP" if tr < r else None
    horizontal = "RIGHT" if tc > c else "LEFT" if tc < c else None
    ways = [vertical, horizontal] if abs(tr - r) >= abs(tc - c) else [horizontal, vertical]
    return [w for w in ways if w]


class SimpleAI:
    """Plays one game: looks around, shoots what is in line, walks toward the enemy."""

    def __init__(self, conn: Connection, rng: random.Random):
        self.conn = conn
        self.rng = rng
        self.dead: set[int] = set()  # our warriors reported n&KILLED: never command them again
        self.walls: set[tuple[int, int]] = set()  # walls and bodies seen so far (they never move)
        self.last_enemy: tuple[int, int] | None = None  # where an enemy was seen last
        self.turns = 0
        self.reports: list[str] = []  # the self-test's SELFTEST&... lines, if we asked for it

    def play(self) -> str:
        """Play until GAMEOVER; returns the result (WIN, LOSE or DRAW)."""
        try:
            while True:
                line = self.conn.next_event()
                if line == "READY":  # a new turn: command every living warrior
                    self.turns += 1
                    self.play_turn()
                elif line.endswith("&KILLED"):  # part of the 200 block: one of ours died
                    self.dead.add(int(line.split("&")[0]))
                elif line.startswith("GAMEOVER&"):
                    raise GameOver(line)
                elif line.startswith("SELFTEST&"):
                    self.reports.append(line)
                # Other lines of the 200 block ("200", "n&HIT&...") need nothing from us.
        except GameOver as over:
            return over.result

    def play_turn(self) -> None:
        # 1. Look: where is each living warrior, which way does it face, what does it see?
        ours = []
        for n in WARRIORS:
            if n in self.dead:
                continue
            square = parse_square(self.conn.ask(f"{n}&POS"))
            facing = self.conn.ask(f"{n}&DIR")
            seen = parse_saw(self.conn.ask(f"{n}&SAW"))
            ours.append(Warrior(n, square, facing, seen))
        enemies = set()
        for w in ours:
            for row, col, what in w.seen:
                if what == "E":
                    enemies.add((row, col))
                elif what in "#x":
                    self.walls.add((row, col))
        if enemies:
            self.last_enemy = min(enemies)
        elif self.last_enemy in self.walls:
            self.last_enemy = None  # it died there: only a body is left

        # 2. Act: one action per warrior.
        for w in ours:
            self.act(w, enemies, ours)

    def act(self, w: Warrior, enemies: set[tuple[int, int]], ours: list[Warrior]) -> None:
        # Everything between us and a target stops a shot: walls, bodies and our own warriors.
        blocked = self.walls | {o.square for o in ours if o is not w}
        for enemy in sorted(enemies):
            direction = line_of_fire(w.square, enemy, blocked)
            if direction:
                # SHOOT&D turns the warrior toward D and fires when the turn ends.
                self.conn.ask(f"{w.number}&SHOOT&{direction}")
                return

        # Nothing to shoot: walk toward the nearest enemy we see, else toward where one was seen
        # last, else straight on. Now and then take a random step instead, so that a warrior
        # stuck behind a wall finds its way around it. A move that is refused (111: something
        # in the way, 112: the edge of the map) does not use up the action: try the next way.
        target = min(enemies, key=lambda e: distance(w.square, e), default=None) or self.last_enemy
        ways = directions_toward(w.square, target) if target else [w.facing]
        if self.rng.random() < 0.25:
            ways = []
        ways += self.rng.sample(sorted(STEPS), len(STEPS))  # then every way, in random order
        for direction in dict.fromkeys(ways):  # each way once, in that order
            if self.conn.ask(f"{w.number}&MOVE&{direction}") == "255":
                # Moves happen at once: keep our picture of the board up to date.
                dr, dc = STEPS[direction]
                w.square = (w.square[0] + dr, w.square[1] + dc)
                w.facing = direction
                if w.square == self.last_enemy:
                    self.last_enemy = None  # nobody here any more: look elsewhere
                return
        # Boxed in on all four sides: just turn round to look somewhere else.
        others = [d for d in sorted(STEPS) if d != w.facing]
        self.conn.ask(f"{w.number}&NONE&{self.rng.choice(others)}")


def selftest(conn: Connection, rng: random.Random) -> list[str]:
    """Play the server's self-test (send SELFTEST before the game) and return its report lines,
    the verdict last. After GAMEOVER the server still watches us for 1 s: we send nothing."""
    conn.send("SELFTEST")
    ai = SimpleAI(conn, rng)
    ai.play()
    while not (ai.reports and ai.reports[-1].startswith("SELFTEST&VERDICT&")):
        ai.reports.append(conn.next_event())
    return ai.reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A simple Virtual Fight AI.")
    parser.add_argument("--host", default="localhost", help="server host (default: localhost)")
    parser.add_argument("--port", type=int, default=4500, help="server AI port (default: 4500)")
    parser.add_argument("--name", help="our name, shown to observers (1-32 of A-Z a-z 0-9 _ . -)")
    parser.add_argument("--table", help="play at this named table instead of the general queue")
    parser.add_argument("--seed", type=int, help="seed for the random choices (default: random)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=330,
        help="seconds to wait for any line from the server before giving up (default: 330, a "
        "little longer than the server's default 300 s lobby timeout)",
    )
    parser.add_argument("--verbose", action="store_true", help="print every line sent and received")
    parser.add_argument("--selftest", action="store_true", help="play the server's self-test, not a game")
    args = parser.parse_args(argv)
    label = args.name or "simple_ai"

    try:
        conn = Connection(args.host, args.port, args.timeout, args.verbose)
    except OSError as e:
        print(f"{label}: cannot connect to {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    try:
        greeting = conn.receive()
        if greeting != "OK":  # e.g. FULL&<reason>: the server refused the connection
            print(f"{label}: the server refused us: {greeting}", file=sys.stderr)
            return 1
        # NAME and TABLE must come before the game starts: send them at once.
        if args.selftest:
            report = selftest(conn, random.Random(args.seed))
            print("\n".join(report))
            return 0 if report[-1] == "SELFTEST&VERDICT&PASS" else 1
        for keyword, value in (("NAME", args.name), ("TABLE", args.table)):
            if value and conn.ask(f"{keyword}&{value}") != "255":
                print(f"{label}: {keyword}&{value} was refused", file=sys.stderr)
        ai = SimpleAI(conn, random.Random(args.seed))
        result = ai.play()
    except GameOver as over:  # e.g. GAMEOVER&DRAW after waiting too long for opponents
        result, ai = over.result, None
    except (OSError, ConnectionError, ValueError) as e:  # socket.timeout is an OSError
        print(f"{label}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        conn.close()
    turns = ai.turns if ai else 0
    print(f"{label}: GAMEOVER&{result} after {turns} turns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
