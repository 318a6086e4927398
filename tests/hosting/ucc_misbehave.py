#!/usr/bin/env python3
"""A UCC Stratego AI (examples/stratego/random_ai.py) misbehaving at its first move as its
argument says, for the hosted-bot tests: crash: dies by SIGSEGV; illegal: moves a bomb or the
flag; garbage: answers nonsense; memory: grows its memory until stopped; sleep: never answers;
mute: never sends its setup."""

import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "stratego"))
import random_ai  # noqa: E402

MODE = sys.argv[1]


def choose_move(board, rng):
    if MODE == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "illegal":
        x, y = next((x, y) for y, row in enumerate(board) for x, piece in enumerate(row) if piece in "BF")
        return f"{x} {y} {'DOWN' if y < 5 else 'UP'}"
    if MODE == "garbage":
        return "FLY ME TO THE MOON"
    if MODE == "sleep":
        time.sleep(600)
    if MODE == "memory":
        hoard = []
        while True:
            hoard.append(b"x" * (4 << 20))
            time.sleep(0.01)
    return random_ai.choose_move(board, rng)


if MODE == "mute":
    time.sleep(600)
random_ai.choose_move = choose_move
random_ai.main()
