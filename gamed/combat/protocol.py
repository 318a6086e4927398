"""The GGZ Combat binary protocol (port 5688): one connection is one seat at a table.

Thin by design: bytes are parsed and encoded by ``gamed.combat.wire``, everything a message means
is decided by the pure ``CombatTable``; this adapter only moves messages between the two and the
sockets. Original clients speak only after CBT_MSG_SEAT, so a connection is seated at once, in
arrival order, under a default name (``player<k>``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from gamed.combat import wire

if TYPE_CHECKING:
    from gamed.combat.service import CombatService, Seating


class CombatProtocol(Protocol, TimeoutMixin):
    """A player's connection: a byte stream of Combat messages both ways."""

    _log = Logger()

    def __init__(self, service: CombatService, number: int):
        self.service = service
        self.clock = service.clock
        self.name = f"player{number}"
        self.parser = wire.Parser()
        self.seating: Seating | None = None
        self.closing = False
        self.peer = "?"

    def callLater(self, period, func):  # noqa: N802 - TimeoutMixin's name
        return self.clock.callLater(period, func)

    def connectionMade(self) -> None:  # noqa: N802
        peer = self.transport.getPeer()
        self.peer = f"{getattr(peer, 'host', peer)}:{getattr(peer, 'port', '')}".rstrip(":")
        setter = getattr(self.transport, "setTcpNoDelay", None)
        if setter is not None:
            try:
                setter(True)
            except OSError:
                pass
        if self.service.limits.idle_timeout:
            self.setTimeout(self.service.limits.idle_timeout)
        self.service.connected(self)
        self.service.seat(self)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.closing or self.seating is None:
            return
        self.resetTimeout()
        try:
            messages = self.parser.feed(data)
        except wire.ProtocolError as e:
            for message in e.messages:
                self._receive(message)
            self.close(f"bad input: {e}")
            return
        for message in messages:
            if self.closing:
                return
            self._receive(message)

    def _receive(self, message) -> None:
        seating = self.seating
        try:
            out = seating.table.receive(seating.seat, message)
        except Exception:
            self._log.failure("error handling a combat message from {peer}", peer=self.peer)
            self.close("internal error (logged)")
            return
        self.service.deliver(seating, out)

    def timeoutConnection(self) -> None:  # noqa: N802
        self.close("idle timeout")

    def send(self, message) -> None:
        """Write one server message (never after the close began)."""
        if not self.closing and self.transport is not None:
            self.transport.write(wire.encode(message))

    def close(self, reason: str) -> None:
        """Close with a logged reason; the table handles the seat as left (``drop``)."""
        if self.closing:
            return
        self.closing = True
        self._log.info("{peer} ({name}) closed: {reason}", peer=self.peer, name=self.name, reason=reason)
        self.setTimeout(None)
        seating, self.seating = self.seating, None
        if seating is not None:
            self.service.vacate(seating, reason)
        self.transport.loseConnection()

    def shutdown(self) -> None:
        self.close("server shutdown")

    def connectionLost(self, reason: Failure = None) -> None:  # noqa: N802
        self.setTimeout(None)
        self.closing = True
        seating, self.seating = self.seating, None
        if seating is not None:
            self.service.vacate(seating, None)
        self.service.disconnected(self)


class CombatFactory(Factory):
    """Builds a CombatProtocol per connection for one CombatService."""

    noisy = False

    def __init__(self, service: CombatService):
        self.service = service
        self._count = 0

    def logPrefix(self) -> str:  # noqa: N802
        return "combat"

    def buildProtocol(self, addr) -> CombatProtocol:  # noqa: N802
        self._count += 1
        protocol = CombatProtocol(self.service, self._count)
        protocol.factory = self
        return protocol
