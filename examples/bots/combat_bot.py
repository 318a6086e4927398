#!/usr/bin/env python3
"""A tiny GGZ Combat bot (docs/protocols/combat.md) for gamed's hosted bots (docs/hosting.md).

The daemon bridges its stdin and stdout to a connection of the Combat handshake port, so it
speaks exactly what a client of that port speaks ([bots.<name>] game = "combat", command =
"python3 examples/bots/combat_bot.py"): the greeting line, ``PLAY`` (its name and table are the
daemon's), ``OK PLAY: binary protocol follows``, then the binary protocol: 4-byte big-endian
ints, strings as an int size (length + 1), the bytes and a 0x00, the OPTIONS, SETUP and SYNC
tables with every byte + 1. As host it sends the Default map; it shuffles its army over its
zone, keeps the board from the MOVE and ATTACK messages and the turn counter (0 at START, the
next seat after every normal MOVE and every ATTACK), and on its turn moves a random movable unit
one step (an attack when it can, half of the time). At GAMEOVER it exits. Standard library only;
its argument (or GAMED_SEED) seeds its choices. With GAMED_HOST and GAMED_PORT set (talk =
"connect") it connects to the handshake port itself and sends ``LOGIN <GAMED_NAME> <GAMED_TOKEN>``
and ``TABLE <GAMED_TABLE>`` before ``PLAY``.
"""

import os
import random
import socket
import struct
import sys

SEAT, PLAYERS, REQ_OPTIONS, OPTIONS, REQ_SETUP, SETUP, START = range(7)
REQ_MOVE, MOVE, ATTACK, GAMEOVER, REQ_SYNC, SYNC = range(7, 13)
EMPTY, OPEN_SEAT = 0x0F, 1
# The Default map (raw, before the +1): 10x10, seat 0's zone rows 0-3, lakes, seat 1's rows 6-9,
# the army (flag, bomb, spy, scout, ... marshal) and the name packet.
DEFAULT = bytes.fromhex(
    "0a0a" + "10" * 40 + "0000020200000202000000000202000002020000" + "20" * 40
    + "010601080504040403020101" + "01" + b"Default".hex() + "0000"
)


class Bot:
    """One Combat player on ``reader``/``writer`` (binary streams)."""

    def __init__(self, reader, writer, rng):
        self.reader, self.writer, self.rng = reader, writer, rng
        self.seat, self.seats, self.turn, self.width = 0, 2, 0, 10
        self.types, self.army, self.units = b"", [], []

    def exact(self, n):
        data = self.reader.read(n)
        if len(data) < n:
            raise EOFError("the server closed the connection")
        return data

    def int(self):
        return struct.unpack(">i", self.exact(4))[0]

    def string(self):
        size = self.int()
        return self.exact(size).split(b"\0", 1)[0] if size > 0 else b""

    def table(self):
        return bytes((b - 1) % 256 for b in self.string())

    def send(self, *ints, table=None):
        data = b"".join(struct.pack(">i", i) for i in ints)
        if table is not None:
            data += struct.pack(">i", len(table) + 1) + bytes((b + 1) % 256 for b in table) + b"\0"
        self.writer.write(data)
        self.writer.flush()

    def owner(self, unit):
        return (unit >> 4) - 1

    def neighbours(self, i):
        x, y, height = i % self.width, i // self.width, len(self.types) // self.width
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if 0 <= nx < self.width and 0 <= ny < height and self.types[ny * self.width + nx] & 0x0F == 0:
                yield ny * self.width + nx

    def setup(self):
        zone = [i for i, t in enumerate(self.types) if self.owner(t) == self.seat]
        pieces = [code for code, count in enumerate(self.army) for _ in range(count)]
        pieces += [EMPTY] * (len(zone) - len(pieces))
        self.rng.shuffle(pieces)
        mine = (self.seat + 1) << 4
        return bytes(EMPTY if p == EMPTY else mine | p for p in pieces)

    def moves(self):
        """One-step moves of own movable units (spy .. marshal) to an open cell not its own."""
        return [(i, j) for i, unit in enumerate(self.units) if self.owner(unit) == self.seat and 2 <= unit & 0x0F <= 11
                for j in self.neighbours(i) if self.owner(self.units[j]) != self.seat]

    def choose(self, moves):
        attacks = [m for m in moves if self.units[m[1]] != EMPTY]
        return self.rng.choice(attacks if attacks and self.rng.random() < 0.5 else moves)

    def play(self):
        if self.turn == self.seat:
            moves = self.moves()
            if moves:  # none: only the server's move clock passes this turn
                self.send(REQ_MOVE, *self.choose(moves))

    def next_turn(self):
        self.turn = 0 if self.turn >= self.seats - 1 else self.turn + 1
        self.play()

    def handshake(self, first=b""):
        self.reader.readline()  # COMBAT gamed: ...
        self.writer.write(first + b"PLAY\r\n")
        self.writer.flush()
        while True:
            line = self.reader.readline()
            if not line or line.startswith(b"ERROR"):
                raise SystemExit(f"combat bot: refused: {line.decode('ascii', 'replace').strip() or 'connection closed'}")
            if line.startswith(b"OK PLAY"):
                return

    def run(self, first=b""):
        self.handshake(first)
        while True:
            op = self.int()
            if op == SEAT:
                self.seat, self.seats, _version = self.int(), self.int(), self.int()
            elif op == PLAYERS:
                for _ in range(self.seats):
                    if self.int() != OPEN_SEAT:
                        self.string()
            elif op == REQ_OPTIONS:
                self.send(OPTIONS, table=DEFAULT)
            elif op == OPTIONS:
                raw = self.table()
                self.width, cells = raw[0], raw[0] * raw[1]
                self.types, self.army = raw[2:2 + cells], list(raw[2 + cells:14 + cells])
                self.units = [EMPTY] * cells
            elif op == REQ_SETUP:
                self.send(SETUP, table=self.setup())
            elif op == START:
                self.turn = 0
                self.send(REQ_SYNC)  # the board as this seat may see it (the others' zones)
            elif op == SYNC:
                sync = self.table()
                if len(sync) == 2 + len(self.units):
                    self.turn, self.units = sync[0], list(sync[2:])
                    self.play()
            elif op == MOVE:
                source, target = self.int(), self.int()
                if source >= 0:  # (the error form is code, seat)
                    self.units[target], self.units[source] = self.units[source], EMPTY
                    self.next_turn()
            elif op == ATTACK:
                source, who_from, target, who_to = self.int(), self.int(), self.int(), self.int()
                if who_from < 0 <= who_to:  # the attacker won
                    self.units[target] = self.units[source]
                if who_to < 0 and who_from < 0:
                    self.units[target] = EMPTY
                self.units[source] = EMPTY
                self.next_turn()
            elif op == GAMEOVER:
                return self.int()
            else:
                raise ValueError(f"unknown opcode {op}")


def main():
    rng = random.Random(int(os.environ.get("GAMED_SEED", sys.argv[1] if len(sys.argv) > 1 else "1")))
    host, port = os.environ.get("GAMED_HOST"), os.environ.get("GAMED_PORT")
    if host and port:
        sock = socket.create_connection((host, int(port)))
        first = f"LOGIN {os.environ['GAMED_NAME']} {os.environ['GAMED_TOKEN']}\r\nTABLE {os.environ['GAMED_TABLE']}\r\n"
        winner = Bot(sock.makefile("rb"), sock.makefile("wb"), rng).run(first.encode("ascii"))
    else:
        winner = Bot(sys.stdin.buffer, sys.stdout.buffer, rng).run()
    print(f"game over: winner seat {winner}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
