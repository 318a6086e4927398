"""The base of every game service: its connections, and a shutdown that tells everyone why.

A game service owns its listening ports (child services added by ``gamed.tap``), its running
games and its connections. Stopping it stops listening, lets the subclass abort its games (each
player is told why), asks every remaining connection to ``shutdown()``, and waits until they are
all gone, at most the close grace period plus a second.
"""

from __future__ import annotations

from typing import Any

from twisted.application.service import MultiService
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory

from gamed.config import Limits


class GameService(MultiService):
    """Tracks connections (``connected``/``disconnected``) and drains them on ``stopService``."""

    def __init__(self, limits: Limits, clock: IReactorTime):
        super().__init__()
        self.limits = limits
        self.clock = clock
        self.connections: set[Any] = set()
        self._drained: list[Deferred] = []

    def connected(self, protocol: Any) -> None:
        self.connections.add(protocol)

    def disconnected(self, protocol: Any) -> None:
        self.connections.discard(protocol)
        if not self.connections:
            drained, self._drained = self._drained, []
            for d in drained:
                d.callback(None)

    def abort_games(self) -> None:
        """Subclasses end every running game here, telling each player why."""

    def stopService(self) -> Deferred:  # noqa: N802
        """Stop listening, abort every game, close every connection and wait for them to go."""
        stopped = defer.maybeDeferred(super().stopService)
        self.abort_games()
        for protocol in list(self.connections):
            protocol.shutdown()
        waits = [stopped]
        if self.connections:
            d = Deferred()
            self._drained.append(d)
            # Closing connections are cut off after close_grace; do not wait much longer.
            d.addTimeout(self.limits.close_grace + 1, self.clock)
            d.addErrback(lambda f: None)
            waits.append(d)
        return defer.gatherResults(waits)


class PlayerFactory(Factory):
    """Builds one protocol per connection for a game service, numbering them from 1 (the number
    gives a player without a name a default one). Subclasses name ``protocol`` and ``prefix``."""

    noisy = False
    protocol: type
    prefix = "game"

    def __init__(self, service: Any):
        self.service = service
        self._count = 0

    def logPrefix(self) -> str:  # noqa: N802
        return self.prefix

    def buildProtocol(self, addr) -> Any:  # noqa: N802
        self._count += 1
        protocol = self.protocol(self.service, self._count)
        protocol.factory = self
        return protocol
