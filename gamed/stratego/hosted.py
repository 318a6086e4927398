"""A hosted bot as a seat of the UCC referee: the UCC dialog over a transport the daemon gives.

The hosted-game runner (gamed.hosting.runner) builds a connection with the game's player factory
and hands it the program's stdin and stdout (``gamed.hosting.process.ProgramTransport``), as it
does for every game; for Stratego that connection is ``HostedUccSeat``, which is at the same time
the referee's seat (``ISeat``): the dialog of ``dialog.ProgramDialog`` (setup, board views and
replies with their whole-line timeout, confirmations, ``QUIT`` and its grace period), so the
program sees exactly what it would see under ``gamed-stratego``. It starts and kills nothing
itself: the sandbox's program does that (its ``loseConnection`` closes the program's stdin, its
``abortConnection`` kills its whole tree, ``signal_tree`` pauses it while the other side thinks),
and the program's end is this connection's ``connectionLost`` (the end of its output).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from zope.interface import implementer

from gamed.stratego.dialog import ProgramDialog
from gamed.stratego.referee import MatchOptions
from gamed.stratego.seats import ISeat

_log = Logger(namespace="gamed.stratego.hosted")


@implementer(ISeat)
class HostedUccSeat(ProgramDialog, Protocol):
    """One hosted program as a seat (see the module docstring); ``placement`` (set by the runner
    before the connection is made) says its name and its match."""

    placement = None
    timed_out = False  # a reply (or a setup line) did not come within its time
    follow_tree = False  # the sandbox's watchdog follows the program's tree
    _waiter = Deferred
    _ready = staticmethod(defer.succeed)
    _fire = staticmethod(Deferred.callback)
    _run = staticmethod(defer.ensureDeferred)

    def __init__(self, matches: Any, options: MatchOptions, reactor):
        super().__init__("bot", options, reactor.callLater, reactor.seconds)
        self.matches = matches  # the StrategoService: told when the seat is connected
        self.valid = True  # (a program the sandbox could not start ends at once: EOF)
        self.argv = None
        self._reading = True

    def connectionMade(self) -> None:  # noqa: N802
        if self.placement is not None:
            self.name = self.argument = self.placement.identity.name
        self.matches.hosted_seat_connected(self)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        self._received(data)

    def connectionLost(self, reason=None) -> None:  # noqa: N802
        self._exited = self._reaped = True
        self._cancel_kill_timer()
        self._output_ended()
        if self._quitting and not self._finished:
            self._release_waiters()

    def _on_timeout(self) -> None:
        if self._pending is not None:
            self.timed_out = True
        super()._on_timeout()

    # --- the transport (ProgramDialog's hooks) ---------------------------------------------

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self._exited:
            self.transport.write(data)

    def _close_stdin(self) -> None:
        if self.transport is not None and not self._exited:
            self.transport.loseConnection()

    def _start_reading(self) -> None:
        if not self._reading and self.transport is not None and not self._exited:
            self._reading = True
            self.transport.resumeProducing()

    def _stop_reading(self) -> None:
        if self.transport is not None and not self._exited:
            self._reading = False
            self.transport.pauseProducing()

    def _signal_group(self, signum: int) -> None:
        if self.transport is not None and not self._exited:
            self.transport.signal_tree(signum)

    def _look(self) -> None:
        pass  # the sandbox's watchdog looks at the tree

    def _kill(self) -> None:
        self._cancel_kill_timer()
        if self.transport is not None and not self._exited:
            self.transport.abortConnection()  # connectionLost follows once the tree is gone
        elif not self._finished:
            self._release_waiters()

    def _report(self, level: str, text: str, **fields) -> None:
        getattr(_log, level)(text, name=self.name, **fields)


class HostedSeatFactory(Factory):
    """Builds the seats of hosted Stratego bots for one StrategoService."""

    noisy = False

    def __init__(self, matches: Any, options: MatchOptions, reactor):
        self.matches = matches
        self.options = options
        self.reactor = reactor

    def buildProtocol(self, addr) -> HostedUccSeat:  # noqa: N802
        seat = HostedUccSeat(self.matches, self.options, self.reactor)
        seat.factory = self
        return seat
