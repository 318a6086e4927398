#!/usr/bin/env python3
"""The example Combat bot (examples/bots/combat_bot.py) misbehaving as its argument says, for
the hosted-bot tests: crash: dies by SIGSEGV at its first turn; illegal: moves a unit onto one of
its own at its first turn; garbage: sends an unknown opcode at its first turn; early: exits with
status 3 before the handshake."""

import os
import random
import signal
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "bots"))
import combat_bot  # noqa: E402

MODE = sys.argv[1]


class Misbehaving(combat_bot.Bot):
    def choose(self, moves):
        if MODE == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if MODE == "illegal":  # one of its own units onto another of its own: SUICIDAL (-4)
            mine = [i for i, unit in enumerate(self.units) if self.owner(unit) == self.seat]
            return mine[0], mine[1]
        if MODE == "garbage":
            self.writer.write(struct.pack(">i", 99))
            self.writer.flush()
            return moves[0]
        return super().choose(moves)


if MODE == "early":
    sys.exit(3)
Misbehaving(sys.stdin.buffer, sys.stdout.buffer, random.Random(1)).run()
