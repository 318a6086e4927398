#!/usr/bin/env python3
"""A Kalaha bot that misbehaves as its argument says, for the hosted-bot tests.

crash: dies by SIGSEGV at its first move; quit: exits with status 0 at its first move; early:
exits with status 3 at once; memory: grows its memory until stopped; cpu: spins on the CPU;
output: floods stdout with blank lines; disk: fills a file in its working directory; garbage:
answers every move with nonsense; illegal: plays an empty or foreign pit; sleep: never moves;
fork: leaves a child that sleeps and has left its process group, then plays normally.
"""

import os
import signal
import sys
import time

mode = sys.argv[1]
if mode == "early":
    sys.exit(3)
if mode == "fork":
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
sys.stdout.write("BOARD OFF\nTABLE\n")
sys.stdout.flush()
for line in sys.stdin:
    words = line.split()
    if not words or words[0] != "YOURMOVE":
        if words and words[0] == "RESULT":
            break
        continue
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "quit":
        sys.exit(0)
    elif mode == "memory":
        hoard = []
        while True:
            hoard.append(b"x" * (4 << 20))
            time.sleep(0.01)
    elif mode == "cpu":
        while True:
            pass
    elif mode == "output":
        while True:
            sys.stdout.write("\n" * 65536)
    elif mode == "disk":
        with open("fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
                time.sleep(0.005)
    elif mode == "garbage":
        sys.stdout.write("FLY ME TO THE MOON\n")
    elif mode == "illegal":
        sys.stdout.write("MOVE 9\n")
    elif mode == "sleep":
        time.sleep(600)
    else:
        sys.stdout.write(f"MOVE {words[2][1:]}\n")
    sys.stdout.flush()
