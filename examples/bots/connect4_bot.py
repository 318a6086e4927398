#!/usr/bin/env python3
"""A tiny Connect Four bot (docs/protocols/connect-four.md) for gamed's hosted bots
(docs/hosting.md).

On stdin and stdout (the daemon hosts it: [bots.<name>] command = "python3
examples/bots/connect4_bot.py"), or, with GAMED_HOST and GAMED_PORT set (talk = "connect"),
over TCP, logging in with GAMED_NAME and GAMED_TOKEN. It asks for a table (TABLE, or TABLE
$GAMED_TABLE when it connects itself), then plays a winning column if it has one, else blocks
the opponent's, else a random column near the middle (seeded by GAMED_SEED or its argument).
"""

import os
import random
import socket
import sys


def wins(rows, width, height, column, me):
    """True if dropping ``me`` into ``column`` makes four in a row."""
    row = next((r for r in range(height) if rows[r][column] == "."), None)
    if row is None:
        return False
    for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
        count = 1
        for sign in (1, -1):
            x, y = column + sign * dx, row + sign * dy
            while 0 <= x < width and 0 <= y < height and rows[y][x] == me:
                count += 1
                x, y = x + sign * dx, y + sign * dy
        if count >= 4:
            return True
    return False


def main() -> int:
    rng = random.Random(int(os.environ.get("GAMED_SEED", sys.argv[1] if len(sys.argv) > 1 else "1")))
    host, port = os.environ.get("GAMED_HOST"), os.environ.get("GAMED_PORT")
    if host and port:
        sock = socket.create_connection((host, int(port)))
        reader, writer = sock.makefile("r", encoding="ascii", newline="\n"), sock.makefile("w", encoding="ascii", newline="\n")
        writer.write(f"LOGIN {os.environ['GAMED_NAME']} {os.environ['GAMED_TOKEN']}\n")
        writer.write(f"TABLE {os.environ['GAMED_TABLE']}\n")
    else:
        reader, writer = sys.stdin, sys.stdout
        writer.write("BOARD OFF\nTABLE\n")
    writer.flush()
    rows, width, height, me = [], 7, 6, "0"
    for line in reader:
        words = line.split()
        if not words:
            continue
        if words[0] == "START":
            me = words[2]
        elif words[0] == "BOARD":
            width, height = (int(n) for n in words[1].split("x"))
            rows = words[2:]  # row 0 is the bottom row
        elif words[0] == "YOURMOVE":
            columns = [int(c) for c in words[2:]]
            them = "1" if me == "0" else "0"
            pick = next((c for c in columns if rows and wins(rows, width, height, c, me)), None)
            if pick is None:
                pick = next((c for c in columns if rows and wins(rows, width, height, c, them)), None)
            if pick is None:
                middle = (width - 1) / 2
                pick = min(columns, key=lambda c: abs(c - middle) + rng.random() * 2.5)
            writer.write(f"MOVE {pick}\n")
            writer.flush()
        elif words[0] in ("RESULT", "ABORT", "BYE"):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
