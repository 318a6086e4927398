"""A scripted in-memory seat for referee tests: it answers from a list and records every line it
is sent, exactly as an AI program would read them on its stdin."""

from __future__ import annotations

import collections

from twisted.internet import defer
from zope.interface import implementer

from gamed.stratego.referee import TIMEOUT, MatchOptions, StrategoReferee
from gamed.stratego.seats import ISeat

RED_DEFAULT = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]
BLUE_DEFAULT = ["967B669999", "6724898974", "BB31555583", "FB8sB479B8"]


@implementer(ISeat)
class ScriptedSeat:
    """Replies come from ``replies`` (a str, None for EOF, TIMEOUT, or a callable that gets the
    referee and returns one of those); ``read`` is what the seat was sent."""

    human = False

    def __init__(self, argument: str, setup=None, replies=(), valid: bool = True):
        self.argument = argument
        self.name = argument.split(" ")[0]
        self.valid = valid
        self._setup = list(RED_DEFAULT if setup is None else setup)
        self.replies = collections.deque(replies)
        self.read: list[str] = []
        self.paused = False
        self.quit_line = None

    def setup(self, colour, opponent):
        self.read.append(f"{colour} {opponent} 10 10")
        return defer.succeed(self._setup)

    def start(self):
        self.read.append("START")

    def move(self, view, acceptable):
        assert not self.paused, "the mover must not be paused"
        self.read.extend(view)
        reply = self.replies.popleft() if self.replies else None
        if callable(reply):  # a test's hook: it may change the board, then gives the reply
            reply = reply(self.referee)
        return defer.succeed(reply)

    def tell(self, line):
        self.read.append(line)

    def pause(self):
        self.paused = True

    def resume(self):
        self.paused = False

    def quit(self, result_line):
        self.quit_line = result_line
        self.read.append(f"QUIT {result_line}")
        return defer.succeed(None)

    def kill(self):
        self.read.append("KILLED")
        return defer.succeed(None)


def play(red: ScriptedSeat, blue: ScriptedSeat, **options):
    """Run a match to its end (synchronously: scripted seats answer at once)."""
    options.setdefault("timeout", 2.0)
    referee = StrategoReferee(red, blue, MatchOptions(**options))
    red.referee = blue.referee = referee
    results = []
    defer.ensureDeferred(referee.run()).addBoth(results.append)
    assert results, "the match did not finish"
    return results[0]


def pair(red_replies=(), blue_replies=(), red_setup=None, blue_setup=None):
    red = ScriptedSeat("./red.py", red_setup or RED_DEFAULT, red_replies)
    blue = ScriptedSeat("./blue.py", blue_setup or BLUE_DEFAULT, blue_replies)
    return red, blue


__all__ = ["BLUE_DEFAULT", "RED_DEFAULT", "TIMEOUT", "ScriptedSeat", "pair", "play"]
