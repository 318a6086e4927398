#!/usr/bin/env python3
"""A random Stratego AI for the UCC 2012 protocol (gamed-stratego, ucc-stratego §5).

It needs only Python 3 and its standard library. Copy it, replace ``choose_move``, and you have
your own AI. What it does:

* Setup. It reads ``RED <opponent> 10 10`` (or ``BLUE …``) and answers 4 rows of 10 characters
  holding the whole 40-piece army in a random order, the flag somewhere in its back row. The rows
  are sent in the order of its zone: RED sends y=0 (its back row) first … y=3; BLUE sends y=6
  (its front row) first … y=9.
* Play. Before each of its moves the manager sends the board as 10 lines of 10 characters, row
  y=0 first: its own pieces by token (``1``-``9``, ``s``, ``B``, ``F``), ``#`` for an enemy piece,
  ``+`` for a lake, ``.`` for an empty square. It answers ``X Y DIRECTION [MULTIPLIER]`` (x from
  the left, y from the top; ``UP`` is y-1) or ``SURRENDER``. It skips ``START`` and the
  confirmations ``<move> <OUTCOME>`` that follow every move, reading them in the order of §5.3.
* End. ``QUIT <result line>`` (or the end of its input) ends it.

Usage: random_ai.py [SEED]      (as a player argument: "./random_ai.py 42")
"""

from __future__ import annotations

import random
import sys

ARMY = "1" + "2" + "3" * 2 + "4" * 3 + "5" * 4 + "6" * 4 + "7" * 4 + "8" * 5 + "9" * 8 + "s" + "B" * 6 + "F"
IMMOBILE = "BF"
OWN = set("123456789sBF")
SIZE = 10
STEPS = {"UP": (0, -1), "DOWN": (0, 1), "LEFT": (-1, 0), "RIGHT": (1, 0)}


def read_line() -> str:
    """The next line from the manager, without its newline; exits on QUIT or end of input."""
    line = sys.stdin.readline()
    if not line or line.startswith("QUIT"):
        sys.exit(0)
    return line.rstrip("\n")


def send(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the manager is gone
        sys.exit(0)


def make_setup(colour: str, rng: random.Random) -> list[str]:
    """Four rows of 10 with all 40 pieces in a random order, the flag in the back row: the first
    row sent for RED (y=0), the last one for BLUE (y=9)."""
    pieces = list(ARMY)
    rng.shuffle(pieces)
    back = 0 if colour == "RED" else 3 * SIZE
    flag, swap = pieces.index("F"), back + rng.randrange(SIZE)
    pieces[flag], pieces[swap] = pieces[swap], pieces[flag]
    return ["".join(pieces[i : i + SIZE]) for i in range(0, 4 * SIZE, SIZE)]


def legal_moves(board: list[str]) -> list[str]:
    """Every move this side's view allows: a step (or a scout's run) onto an empty square or an
    enemy piece."""
    moves = []
    for y, row in enumerate(board):
        for x, piece in enumerate(row):
            if piece not in OWN or piece in IMMOBILE:
                continue
            for name, (dx, dy) in STEPS.items():
                reach = SIZE if piece == "9" else 1  # scouts run any distance in a line
                for n in range(1, reach + 1):
                    tx, ty = x + dx * n, y + dy * n
                    if not (0 <= tx < SIZE and 0 <= ty < SIZE):
                        break
                    target = board[ty][tx]
                    if target in OWN or target == "+":
                        break
                    moves.append(f"{x} {y} {name}" + (f" {n}" if n > 1 else ""))
                    if target == "#":  # an attack ends the run
                        break
    return moves


def choose_move(board: list[str], rng: random.Random) -> str:
    moves = legal_moves(board)
    return rng.choice(moves) if moves else "SURRENDER"


def read_board() -> list[str]:
    return [read_line().ljust(SIZE, "+")[:SIZE] for _ in range(SIZE)]


def main() -> None:
    # Lines end at "\n" only: a confirmation may echo an opponent's "\r" or any byte.
    sys.stdin.reconfigure(encoding="latin-1", newline="\n")
    sys.stdout.reconfigure(encoding="latin-1")
    rng = random.Random(sys.argv[1] if len(sys.argv) > 1 else None)
    query = read_line().split()  # RED|BLUE <opponent…> 10 10
    if not query or query[0] not in ("RED", "BLUE"):
        sys.exit(1)
    colour = query[0]
    for row in make_setup(colour, rng):
        send(row)
    # §5.3: RED reads START, then per turn: board, (its move), its confirmation, BLUE's.
    # BLUE reads per turn: RED's confirmation, board, (its move), its own confirmation.
    if colour == "RED":
        read_line()  # START
    while True:
        if colour == "BLUE":
            read_line()  # RED's confirmation
        send(choose_move(read_board(), rng))
        read_line()  # our confirmation
        if colour == "RED":
            read_line()  # BLUE's confirmation


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(1)
