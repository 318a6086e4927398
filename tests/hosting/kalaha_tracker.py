#!/usr/bin/env python3
"""A Kalaha bot for the opening tests that never reads a POSITION to play: it follows the board
from the PLAYED lines alone, from the usual start (as a bot with BOARD OFF may), checks that
every POSITION the server sends agrees, plays the first pit YOURMOVE offers, and writes the
lines it received to the file its first argument names.

    kalaha_tracker.py OUT_FILE
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from gamed.kalaha import rules  # noqa: E402


def main() -> int:
    out = open(sys.argv[1], "w")
    sys.stdout.write("BOARD OFF\nTABLE\n")
    sys.stdout.flush()
    position = rules.Position.start()
    status = 0
    for raw in sys.stdin:
        line = raw.strip()
        out.write(line + "\n")
        out.flush()
        words = line.split()
        if not words:
            continue
        if words[0] == "START":
            position = rules.Position.start()
        elif words[0] == "PLAYED":
            position = rules.play(position, int(words[2][1])).position
        elif words[0] == "POSITION":
            told = tuple(int(w) for w in words[1:15])
            if told != position.pits:
                out.write(f"MISMATCH tracked {position.pits}\n")
                status = 4
        elif words[0] == "YOURMOVE":
            sys.stdout.write(f"MOVE {words[2]}\n")
            sys.stdout.flush()
        elif words[0] in ("RESULT", "ABORT", "BYE"):
            break
    out.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
