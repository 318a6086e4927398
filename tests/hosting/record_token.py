#!/usr/bin/env python3
"""Writes the host token a hosted bot was given (GAMED_TOKEN) to the file its first argument
names, then runs the rest of its arguments as the bot (for the tests of talk = "connect")."""

import os
import sys

with open(sys.argv[1], "w") as f:
    f.write(os.environ.get("GAMED_TOKEN", "") + "\n")
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
