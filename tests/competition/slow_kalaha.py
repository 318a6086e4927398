"""A Kalaha bot for the tournament tests: the example bot's play (last stone in the store, else
seeded random) with a pause before each move, so that a test can stop a tournament mid-way.

    slow_kalaha.py SEED PAUSE_SECONDS
"""

import random
import sys
import time


def main() -> int:
    import os

    rng = random.Random(int(os.environ.get("GAMED_SEED", "0")) * 1000 + int(sys.argv[1]))
    pause = float(sys.argv[2])
    sys.stdout.write("BOARD OFF\nTABLE\n")
    sys.stdout.flush()
    position, side = None, "A"
    for raw in sys.stdin:
        words = raw.split()
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
            time.sleep(pause)
            sys.stdout.write(f"MOVE {(exact or [rng.choice(pits)])[0]}\n")
            sys.stdout.flush()
        elif words[0] in ("RESULT", "ABORT", "BYE"):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
