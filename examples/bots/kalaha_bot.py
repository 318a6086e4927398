#!/usr/bin/env python3
"""A tiny Kalaha bot (docs/protocols/kalaha.md) for gamed's hosted bots (docs/hosting.md).

It reads the server's lines on stdin and writes its moves on stdout, so the daemon can host it
([bots.<name>] command = "python3 examples/bots/kalaha_bot.py"); with GAMED_HOST and GAMED_PORT
set (talk = "connect") it connects to the daemon itself and logs in with GAMED_NAME and
GAMED_TOKEN, then waits at GAMED_TABLE or, with GAMED_LADDER=<n>, plays <n> ladder games one
after the other (docs/ladder.md), connecting again for each. It plays the pit that lands its last stone in its store if there is one, else a
random pit (seeded by GAMED_SEED or its argument), and ends with the game.
"""

import os
import random
import socket
import sys


def lines_of(stream):
    for raw in stream:
        yield raw.strip()


def main() -> int:
    rng = random.Random(int(os.environ.get("GAMED_SEED", sys.argv[1] if len(sys.argv) > 1 else "1")))
    host, port = os.environ.get("GAMED_HOST"), os.environ.get("GAMED_PORT")
    if not (host and port):
        sys.stdout.write("BOARD OFF\nTABLE\n")  # TABLE: paired at once, without the pair delay
        sys.stdout.flush()
        return play(sys.stdin, sys.stdout, rng)
    ladder = int(os.environ.get("GAMED_LADDER", "0"))
    for _ in range(max(1, ladder)):
        with socket.create_connection((host, int(port))) as sock:
            reader, writer = sock.makefile("r", encoding="ascii", newline="\n"), sock.makefile("w", encoding="ascii", newline="\n")
            writer.write(f"LOGIN {os.environ['GAMED_NAME']} {os.environ['GAMED_TOKEN']}\n")
            writer.write("LADDER\n" if ladder else f"TABLE {os.environ['GAMED_TABLE']}\n")
            writer.flush()
            play(reader, writer, rng)
    return 0


def play(reader, writer, rng) -> int:
    """One game: moves until its end."""
    position, side = None, "A"
    for line in lines_of(reader):
        words = line.split()
        if not words:
            continue
        if words[0] == "START":
            side = words[2]
        elif words[0] == "POSITION":
            position = [int(w) for w in words[1:15]]
        elif words[0] == "YOURMOVE":
            pits = [int(p[1:]) for p in words[2:]] or [1]
            base = 0 if side == "A" else 7
            exact = [p for p in pits if position and position[base + p - 1] == 7 - p]
            writer.write(f"MOVE {(exact or [rng.choice(pits)])[0]}\n")
            writer.flush()
        elif words[0] in ("RESULT", "ABORT", "BYE"):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
