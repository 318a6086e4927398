#!/usr/bin/env python3
"""A Stratego AI for the UCC protocol that ends every game on RED's first move: as RED it sends
its scout from A3 (x 0, y 3) three squares down onto BLUE's flag, which as BLUE it sets up in
the front row at A6. Web tests use it to get a real stored match that ends in a flag capture."""

import sys

RED = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]  # a scout (9) at x 0, y 3
BLUE = ["F67B669999", "6724898974", "BB31555583", "9B8sB479B8"]  # the flag at x 0, y 6


def main() -> None:
    colour = sys.stdin.readline().split()[0]
    sys.stdout.write("\n".join(RED if colour == "RED" else BLUE) + "\n")
    sys.stdout.flush()
    board = 0
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("QUIT"):
            return
        # The board comes as 10 lines of 10 squares before each of RED's moves.
        board = board + 1 if len(line) == 10 and " " not in line else 0
        if board == 10 and colour == "RED":
            sys.stdout.write("0 3 DOWN 3\n")
            sys.stdout.flush()
            board = 0


if __name__ == "__main__":
    main()
