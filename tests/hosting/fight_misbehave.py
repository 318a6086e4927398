#!/usr/bin/env python3
"""A Virtual Fight AI that misbehaves as its argument says, for the hosted-bot tests.

crash: dies by SIGSEGV at its first READY; quit: exits with status 0 at its first READY; early:
exits with status 3 at once; hog: at its first READY, spins on the CPU until stopped; sleep:
never answers a READY (its turns time out).
"""

import os
import signal
import sys

mode = sys.argv[1]
if mode == "early":
    sys.exit(3)
for line in sys.stdin:
    if line.strip() != "READY":
        continue
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "quit":
        sys.exit(0)
    elif mode == "hog":
        while True:
            pass
    elif mode == "sleep":
        continue
