"""Seats that need no process: a replayed ``-o`` log (``-f``).

Program seats (AI subprocesses) are in ``gamed.stratego.process``; the console seat for a person
in ``gamed.stratego.console``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from zope.interface import implementer

from gamed.stratego.referee import ISeat, ParsedLog


class ReplayQueue:
    """The move lines of a log, consumed in order by both sides (one per half-move)."""

    def __init__(self, replies):
        self.replies = collections.deque(replies)

    def next(self) -> str:
        """The next recorded reply; an empty reply once the log has none left (§9 step 5)."""
        return self.replies.popleft() if self.replies else ""


@implementer(ISeat)
class ReplaySeat:
    """One side of a replayed log: its recorded setup and its share of the recorded replies."""

    human = False

    def __init__(self, log: ParsedLog, side: int, queue: ReplayQueue):
        self.name = log.names[side]
        self.argument = self.name
        self.valid = not log.invalid[side]
        self._setup = log.setups[side]
        self._queue = queue

    def setup(self, colour: str, opponent: str) -> Deferred:
        # A rejected setup (INVALID!) is not in the log: replay it as one that is invalid at once.
        return defer.succeed(list(self._setup) if self._setup is not None else ["INVALID!"])

    def start(self) -> None:
        pass

    def move(self, view: list[str], acceptable: Callable[[str], bool]) -> Deferred:
        return defer.succeed(self._queue.next())

    def tell(self, line: str) -> None:
        pass

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def quit(self, result_line: str | None) -> Deferred:
        return defer.succeed(None)

    def kill(self) -> Deferred:
        return defer.succeed(None)


def replay_seats(log: ParsedLog) -> tuple[ReplaySeat, ReplaySeat]:
    """RED and BLUE seats replaying ``log``."""
    queue = ReplayQueue(log.replies)
    return ReplaySeat(log, 0, queue), ReplaySeat(log, 1, queue)
