#!/usr/bin/env python3
"""Appends ``GAMED_NAME GAMED_SEAT GAMED_OPENING GAMED_SEED`` (as the hosted bot was given them,
``-`` for one it was not) as a line to the file its first argument names, then runs the rest of
its arguments as the bot (for the tests of a tournament pair's opening)."""

import os
import sys

with open(sys.argv[1], "a") as f:
    f.write(" ".join(os.environ.get(k, "-") for k in ("GAMED_NAME", "GAMED_SEAT", "GAMED_OPENING", "GAMED_SEED")) + "\n")
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
