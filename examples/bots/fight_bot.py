#!/usr/bin/env python3
"""A tiny Virtual Fight AI (docs/protocols/virtual-fight.md) for gamed's hosted bots
(docs/hosting.md).

On stdin and stdout (the daemon hosts it: [bots.<name>] game = "fight", command = "python3
examples/bots/fight_bot.py"), or, with GAMED_HOST and GAMED_PORT set (talk = "connect"), over
TCP, logging in with LOGIN&$GAMED_NAME&$GAMED_TOKEN and asking for TABLE&$GAMED_TABLE. Every
turn each living warrior looks (POS, DIR, SAW), then each shoots an enemy any of them sees in
line within three squares, or steps toward the nearest one, or else wanders (mostly on, at
random: seeded by GAMED_SEED or its argument); a warrior that cannot move passes. Every line
it sends gets one reply; the lines the server sends on its own (READY, 200, n&HIT&..., n&KILLED,
GAMEOVER&...) may come between, and are noted as they come.
"""

import os
import random
import socket
import sys

STEP = {"UP": (-1, 0), "DOWN": (1, 0), "LEFT": (0, -1), "RIGHT": (0, 1)}


class Server:
    """The connection: ``ask`` sends a line and returns its reply."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.dead = set()  # our warriors that were killed (n&KILLED)
        self.ready = 0  # READY lines not played yet
        self.over = None  # WIN, LOSE or DRAW once the game is over

    def send(self, line):
        self.writer.write(line + "\n")
        self.writer.flush()

    def event(self):
        """The next line; the server's own lines are noted (returned as None)."""
        raw = self.reader.readline()
        if not raw:
            self.over = self.over or "GONE"
            return None
        line = raw.strip()
        head = line.split("&")
        if line == "READY":
            self.ready += 1
        elif head[0] == "GAMEOVER":
            self.over = head[1] if len(head) > 1 else "?"
        elif line in ("OK", "200") or head[0] in ("AWAY", "BACK") or head[1:2] in (["HIT"], ["KILLED"]):
            if head[1:2] == ["KILLED"]:
                self.dead.add(int(head[0]))
        else:
            return line
        return None

    def ask(self, line):
        """Send ``line``; its reply, or None when the game is over first."""
        self.send(line)
        while self.over is None:
            reply = self.event()
            if reply is not None:
                return reply
        return None


def aim(row, col, enemies, blocked):
    """The direction of an enemy in line with (row, col) within three squares, nothing known in
    between (a shot goes three squares and stops at the first thing it meets), or None."""
    for direction, (dr, dc) in STEP.items():
        for k in (1, 2, 3):
            square = (row + k * dr, col + k * dc)
            if square in enemies:
                return direction
            if square in blocked:
                break
    return None


def ways(rng, row, col, facing, enemies):
    """The directions to try moving, best first: toward the nearest enemy seen (along its
    larger distance), else mostly on, at random."""
    others = [d for d in STEP if d != facing]
    rng.shuffle(others)
    if enemies:
        r, c = min(enemies, key=lambda e: abs(e[0] - row) + abs(e[1] - col))
        if abs(r - row) >= abs(c - col):
            best = "DOWN" if r > row else "UP"
        else:
            best = "RIGHT" if c > col else "LEFT"
        return [best] + [d for d in STEP if d != best]
    return [facing] + others if rng.random() < 0.7 else others + [facing]


def play_turn(server, rng):
    """Look with every living warrior first (what one sees, all know), then act with each."""
    mine, seen = {}, {}
    for n in range(5):
        if n in server.dead:
            continue
        pos, facing, sight = server.ask(f"{n}&POS"), server.ask(f"{n}&DIR"), server.ask(f"{n}&SAW")
        if server.over or pos is None or "," not in pos:
            return
        row, col = (int(x) for x in pos.split(","))
        mine[n] = (row, col, facing)
        for square in sight.split("&"):
            if square.count(",") == 2:
                r, c, t = square.split(",")
                seen[(int(r), int(c))] = t
    enemies = {square for square, t in seen.items() if t == "E"}
    blocked = {square for square, t in seen.items() if t != "E"} | {(r, c) for r, c, _ in mine.values()}
    for n, (row, col, facing) in mine.items():
        target = aim(row, col, enemies, blocked)
        if target is not None:
            server.ask(f"{n}&SHOOT&{target}")
            continue
        for direction in ways(rng, row, col, facing, enemies):
            reply = server.ask(f"{n}&MOVE&{direction}")
            if reply not in ("111", "112"):  # 255 (or the game is over)
                break
        else:
            server.ask(f"{n}&NONE")
        if server.over:
            return


def main() -> int:
    rng = random.Random(int(os.environ.get("GAMED_SEED", sys.argv[1] if len(sys.argv) > 1 else "1")))
    host, port = os.environ.get("GAMED_HOST"), os.environ.get("GAMED_PORT")
    if host and port:
        sock = socket.create_connection((host, int(port)))
        server = Server(sock.makefile("r", encoding="ascii", newline="\n"), sock.makefile("w", encoding="ascii", newline="\n"))
        server.ask(f"LOGIN&{os.environ['GAMED_NAME']}&{os.environ['GAMED_TOKEN']}")
        server.ask(f"TABLE&{os.environ['GAMED_TABLE']}")
    else:
        server = Server(sys.stdin, sys.stdout)
    while server.over is None:
        if server.ready:
            server.ready -= 1
            play_turn(server, rng)
        else:
            server.event()
    return 0


if __name__ == "__main__":
    sys.exit(main())
