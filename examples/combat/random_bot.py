#!/usr/bin/env python3
"""A random GGZ Combat (Stratego) bot: standard library only, copy it and make it smarter.

It speaks the Combat protocol version 10 (docs: the GGZ Combat specification):

* every int is 4 bytes big-endian; a string is an int size (length + 1), the bytes and a 0x00;
* the OPTIONS, SETUP and SYNC strings are binary, each byte sent as (byte + 1) mod 256.

What it does:

* MSG_SEAT tells it its seat and the number of seats;
* REQ_OPTIONS means it is the host: it sends the options of a hard-coded map (Default or Small),
  or the raw options bytes given with --options-hex (e.g. a map for more than two seats);
* MSG_OPTIONS gives the map (width, height, cell types) and the army; REQ_SETUP is answered with
  the army shuffled over the bot's zone;
* from START on it keeps the board (own units known, other seats' units "unknown") and the turn
  counter (0 at START, next seat after every normal MOVE and every ATTACK, through all n seats of
  MSG_SEAT); every SYNC resets board and turn (the server sends one when a seat loses by time);
* a beaten seat keeps its turn slot (spec §11.2, §11.5): the bot keeps counting its turns, and when
  it is itself beaten it still moves whatever movable units it has left (or waits when it has none:
  only the server's move clock can then pass its turn);
* on its turn it moves one of its movable units (spy .. marshal) one step to an open cell that
  does not hold one of its own units; when the server answers with an error for its seat it tries
  another move;
* at GAMEOVER it prints the winner and exits 0.
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import sys

# Opcodes (server -> client and client -> server share one numbering).
MSG_SEAT, MSG_PLAYERS, REQ_OPTIONS, MSG_OPTIONS, REQ_SETUP, MSG_SETUP, MSG_START = range(7)
REQ_MOVE, MSG_MOVE, MSG_ATTACK, MSG_GAMEOVER, REQ_SYNC, MSG_SYNC = range(7, 13)

EMPTY = 0x0F  # a cell without a unit
UNKNOWN = 0x0C  # another seat's unit whose type this bot does not know
T_OPEN = 0  # terrain (low nibble of a cell type): 0 open, 1 off-map, 2 lake
PLAYER_OPEN = 1  # seat type "open" in MSG_PLAYERS: no name follows it

# The options strings (raw bytes, before the +1 encoding) of two shipped maps, laid out as
# width, height, one type byte per cell (zone owner << 4 | terrain), 12 army counts in unit-code
# order (flag, bomb, spy, scout, miner, sergeant, lieutenant, captain, major, colonel, general,
# marshal), then the name packet 0x01 "name" 0x00 0x00. No option bits, so no other packet.
MAPS = {
    # 10x10: seat 0's zone is rows 0-3 (0x10), seat 1's rows 6-9 (0x20), lakes (0x02) at
    # 42,43,46,47,52,53,56,57; army 1,6,1,8,5,4,4,4,3,2,1,1; name "Default".
    "default": bytes.fromhex(
        "0a0a" + "10" * 40 + "0000020200000202000000000202000002020000" + "20" * 40
        + "010601080504040403020101" + "01" + b"Default".hex() + "0000"
    ),
    # 5x5: rows 11O22 / 1OOO2 / OONOO / 2OOO1 / 22O11 (N = off-map); army 2 flags, 1 spy,
    # 3 marshals; name "Small".
    "small": bytes.fromhex(
        "0505" + "1010002020" + "1000000020" + "0000010000" + "2000000010" + "2020001010"
        + "020001000000000000000003" + "01" + b"Small".hex() + "0000"
    ),
}


class Bot:
    def __init__(
        self,
        sock: socket.socket,
        rng: random.Random,
        map_name: str,
        verbose: bool,
        options: bytes | None = None,
    ):
        self.sock = sock
        self.rng = rng
        self.map_name = map_name
        self.options = options  # raw options bytes sent as host instead of MAPS[map_name]
        self.verbose = verbose
        self.buffer = b""
        self.seat = -1
        self.seats = 2
        self.width = self.height = 0
        self.types: bytes = b""
        self.army: list[int] = []
        self.units: list[int] = []  # one unit byte per cell: owner nibble (seat + 1) | code
        self.turn = 0
        self.playing = False
        self.tried: set[tuple[int, int]] = set()  # moves refused during the current turn
        self.moves = 0
        self.sent = 0  # moves this bot sent (refused ones included)

    # --- wire ------------------------------------------------------------------------------
    def read_exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def read_int(self) -> int:
        return struct.unpack(">i", self.read_exact(4))[0]

    def read_string(self) -> bytes:
        size = self.read_int()
        data = self.read_exact(size) if size > 0 else b""
        return data.split(b"\0", 1)[0]

    def read_binary(self) -> bytes:
        """A +1-encoded string, decoded."""
        return bytes((b - 1) % 256 for b in self.read_string())

    def send(self, *ints: int, binary: bytes | None = None) -> None:
        data = b"".join(struct.pack(">i", i) for i in ints)
        if binary is not None:
            encoded = bytes((b + 1) % 256 for b in binary)
            data += struct.pack(">i", len(encoded) + 1) + encoded + b"\0"
        self.sock.sendall(data)

    def log(self, text: str) -> None:
        if self.verbose:
            print(f"seat {self.seat}: {text}", file=sys.stderr)

    # --- game ------------------------------------------------------------------------------
    def owner(self, unit: int) -> int:
        return (unit >> 4) - 1

    def read_options(self, raw: bytes) -> None:
        self.width, self.height = raw[0], raw[1]
        cells = self.width * self.height
        self.types = raw[2 : 2 + cells]
        self.army = list(raw[2 + cells : 2 + cells + 12])
        self.units = [EMPTY] * cells
        self.log(f"map {self.width}x{self.height}, army {self.army}")

    def neighbours(self, i: int) -> list[int]:
        """The open cells next to cell i (no diagonals)."""
        x, y = i % self.width, i // self.width
        cells = []
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < self.width and 0 <= ny < self.height:
                j = ny * self.width + nx
                if self.types[j] & 0x0F == T_OPEN:
                    cells.append(j)
        return cells

    def walled_in(self, zone: list[int], pieces: list[int]) -> bool:
        """Whether some movable unit cannot get out of the zone past its own flags and bombs:
        such a unit could never move, and a seat left with only it could never play."""
        fixed = {cell for cell, code in zip(zone, pieces) if code in (0, 1)}
        inside = set(zone)
        for start, code in zip(zone, pieces):
            if not 2 <= code <= 11:
                continue
            seen, todo = {start}, [start]
            while todo and all(cell in inside for cell in todo):
                cell = todo.pop()
                for j in self.neighbours(cell):
                    if j not in seen and j not in fixed:
                        seen.add(j)
                        todo.append(j)
            if not seen - inside:
                return True
        return False

    def setup(self) -> bytes:
        """The army shuffled over this seat's zone, one byte per zone cell in index order (shuffled
        again while some movable unit is walled in by its own flags and bombs)."""
        zone = [i for i, t in enumerate(self.types) if (t >> 4) - 1 == self.seat]
        army = [code for code, count in enumerate(self.army) for _ in range(count)]
        pieces = army + [EMPTY] * (len(zone) - len(army))
        for _ in range(1000):
            self.rng.shuffle(pieces)
            if not self.walled_in(zone, pieces):
                break
        mine = (self.seat + 1) << 4
        return bytes(EMPTY if p == EMPTY else mine | p for p in pieces)

    def start(self) -> None:
        """Before START every seat's zone is full when zone size = army (every shipped map): mark
        the other zones as unknown units, then ask for a sync to get the exact picture (which a
        larger zone needs anyway)."""
        zone_size = sum(1 for t in self.types if (t >> 4) - 1 == self.seat)
        if zone_size == sum(self.army):
            for i, t in enumerate(self.types):
                owner = (t >> 4) - 1
                if owner not in (-1, self.seat) and owner < self.seats and self.units[i] == EMPTY:
                    self.units[i] = ((owner + 1) << 4) | UNKNOWN
        self.turn = 0
        self.playing = True
        self.send(REQ_SYNC)

    def candidates(self) -> list[tuple[int, int]]:
        """One-step moves of own movable units to an open cell without an own unit."""
        moves = []
        for i, unit in enumerate(self.units):
            if self.owner(unit) != self.seat or not 2 <= unit & 0x0F <= 11:
                continue
            moves += [(i, j) for j in self.neighbours(i) if self.owner(self.units[j]) != self.seat]
        return moves

    def play(self) -> None:
        if not self.playing or self.turn != self.seat:
            return
        moves = [m for m in self.candidates() if m not in self.tried]
        if not moves:
            self.log("no move left to try; waiting")
            return
        # A little aggression shortens the games: attack when an attack is possible, half the time.
        attacks = [m for m in moves if self.units[m[1]] != EMPTY]
        source, target = self.rng.choice(attacks if attacks and self.rng.random() < 0.5 else moves)
        self.tried.add((source, target))
        self.sent += 1
        self.log(f"turn {self.turn}: move {source} -> {target}")
        self.send(REQ_MOVE, source, target)

    def next_turn(self) -> None:
        self.turn = 0 if self.turn >= self.seats - 1 else self.turn + 1
        self.tried.clear()
        self.moves += 1

    def run(self) -> int:
        while True:
            op = self.read_int()
            if op == MSG_SEAT:
                self.seat, self.seats, version = self.read_int(), self.read_int(), self.read_int()
                self.log(f"{self.seats} seats, protocol {version}")
            elif op == MSG_PLAYERS:
                for _ in range(self.seats):
                    if self.read_int() != PLAYER_OPEN:
                        self.read_string()
            elif op == REQ_OPTIONS:
                if self.options is not None:
                    self.log(f"host: sending the options given ({len(self.options)} bytes)")
                    self.send(MSG_OPTIONS, binary=self.options)
                else:
                    self.log(f"host: sending the {self.map_name} map")
                    self.send(MSG_OPTIONS, binary=MAPS[self.map_name])
            elif op == MSG_OPTIONS:
                self.read_options(self.read_binary())
            elif op == REQ_SETUP:
                self.send(MSG_SETUP, binary=self.setup())
            elif op == MSG_START:
                self.start()
            elif op == MSG_SYNC:
                sync = self.read_binary()
                if len(sync) == 2 + len(self.units):
                    self.turn, self.units = sync[0], list(sync[2:])
                    self.tried.clear()
                    self.play()
            elif op == MSG_MOVE:
                source, target = self.read_int(), self.read_int()
                if source < 0:  # error form: code, seat of the sender
                    if target == self.seat:
                        self.log(f"move refused ({source}); trying another")
                        self.play()
                    continue
                self.units[target], self.units[source] = self.units[source], EMPTY
                self.next_turn()
                self.play()
            elif op == MSG_ATTACK:
                source, who_from, target, who_to = (self.read_int() for _ in range(4))
                if who_from < 0 and who_to >= 0:  # the attacker won and stands on the target
                    self.units[target] = self.units[source]
                    self.units[source] = EMPTY
                elif who_from >= 0 and who_to < 0:  # the defender won
                    self.units[source] = EMPTY
                else:  # both removed
                    self.units[source] = self.units[target] = EMPTY
                self.next_turn()
                self.play()
            elif op == MSG_GAMEOVER:
                winner = self.read_int()
                print(f"seat {self.seat}: GAMEOVER winner {winner} after {self.moves} moves ({self.sent} sent)")
                return 0
            else:
                raise ValueError(f"unknown opcode {op}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=5688)
    parser.add_argument("--map", choices=sorted(MAPS), default="default", help="map sent when host")
    parser.add_argument(
        "--options-hex",
        default=None,
        help="raw options bytes (spec §6.1, before the +1 encoding) sent when host; overrides --map",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the random choices")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for the server")
    parser.add_argument("--verbose", action="store_true", help="log to stderr")
    args = parser.parse_args()
    options = None
    if args.options_hex is not None:
        try:
            options = bytes.fromhex(args.options_hex)
        except ValueError as e:
            parser.error(f"--options-hex: {e}")
        if len(options) < 2 + 12 or 0xFF in options:
            parser.error("--options-hex: too short for width, height and army, or holds a 0xFF byte")
    try:
        with socket.create_connection((args.host, args.port), timeout=args.timeout) as sock:
            sock.settimeout(args.timeout)
            return Bot(sock, random.Random(args.seed), args.map, args.verbose, options).run()
    except (OSError, ConnectionError) as e:  # socket.timeout is an OSError
        print(f"random_bot: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
