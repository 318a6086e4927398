"""The GGZ Combat binary protocol (port 5688) and its text handshake (port 5689).

Thin by design: bytes are parsed and encoded by ``gamed.combat.wire``, everything a message means
is decided by the pure ``CombatTable``; this adapter only moves messages between the two and the
sockets. Original clients speak only after CBT_MSG_SEAT, so on 5688 a connection is seated at
once, in arrival order, under a default name (``player<k>``). On 5689 a client first talks a few
text lines (``NAME``, ``TABLE <name> [<seats>]``, ``PLAY``; see docs/protocols/combat.md); after
``PLAY`` the same connection speaks the binary protocol, starting with CBT_MSG_SEAT. A game against
the computer that cannot start ends such a connection with one closing ``ERROR <why>`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from gamed.combat import wire
from gamed.names import valid_name

if TYPE_CHECKING:
    from gamed.combat.service import CombatService, Seating


class CombatProtocol(Protocol, TimeoutMixin):
    """A player's connection: a byte stream of Combat messages both ways."""

    _log = Logger()

    HANDSHAKE_LINE = 256  # longest handshake line, in bytes

    def __init__(self, service: CombatService, number: int, handshake: bool = False):
        self.service = service
        self.handshake = handshake
        self.table_name: str | None = None
        self.table_seats: int | None = None
        self._text = b""
        self.clock = service.clock
        self.name = f"player{number}"
        self.named = False  # True once NAME chose a name: only named players are rated
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
        if self.handshake:
            self._say("COMBAT gamed: NAME <name>, TABLE <table> [<seats>], then PLAY; HELP for more")
        else:
            self.service.seat(self)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.closing:
            return
        if self.handshake:
            data = self._handshake_data(data)
            if not data or self.closing:
                return
        if self.seating is None:
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

    # --- the text handshake (port 5689) ------------------------------------------------------

    def _say(self, line: str) -> None:
        self.transport.write(line.encode("ascii", "replace") + b"\r\n")

    def _handshake_data(self, data: bytes) -> bytes:
        """Handle the handshake lines in ``data``; returns the bytes after ``PLAY`` (binary)."""
        self.resetTimeout()
        buffer = self._text + data
        while self.handshake and not self.closing:
            end = buffer.find(b"\n")
            if end < 0:
                if len(buffer) > self.HANDSHAKE_LINE:
                    self._say("ERROR line too long")
                    self.close("handshake line too long")
                    return b""
                self._text = buffer
                return b""
            line, buffer = buffer[:end], buffer[end + 1 :]
            self._handshake_line(line.rstrip(b"\r").decode("ascii", "replace").strip())
        self._text = b""
        return buffer

    def _handshake_line(self, text: str) -> None:
        words = text.split()
        if not words:
            return
        command, args = words[0].upper(), words[1:]
        if command == "NAME" and len(args) == 1 and valid_name(args[0]):
            self.name = args[0]
            self.named = True
            self._say(f"OK NAME {self.name}")
        elif command == "TABLE" and len(args) in (1, 2) and valid_name(args[0]):
            seats = None
            if len(args) == 2:
                if not args[1].isdigit() or not 2 <= int(args[1]) <= 15:
                    return self._say("ERROR seats must be 2 to 15")
                seats = int(args[1])
            self.table_name, self.table_seats = args[0], seats
            self._say(f"OK TABLE {self.table_name}")
        elif command == "PLAY":
            why = self.service.can_seat(self)
            if why:
                return self._say(f"ERROR {why}")
            self._say("OK PLAY: binary protocol follows")
            self.handshake = False
            self.service.seat(self)
        elif command == "COMPUTER" and len(args) <= 1:
            ais = self.service.ais
            if not ais:
                return self._say("ERROR no computer opponent is registered on this server")
            if not args:
                for name in sorted(ais):
                    self._say(f"AI {name}")
                return self._say("END")
            if args[0] not in ais:
                return self._say(f"ERROR no computer opponent {args[0]}; COMPUTER lists them")
            if self.table_name is not None:
                return self._say(f"ERROR a computer opponent plays at a 2-seat table of its own, not at table {self.table_name}")
            self._say(f"OK COMPUTER {args[0]}: binary protocol follows")
            self.handshake = False
            self.service.seat_against(self, args[0])
        elif command == "HELP":
            for line in (
                "NAME <name>            your name at the table (1-32 letters, digits, _ . -)",
                "TABLE <table> [<seats>] play at a named table (its first player sets the seat count)",
                "PLAY                   take a seat: the binary Combat protocol starts (CBT_MSG_SEAT)",
                "COMPUTER [<ai>]        list the computer opponents, or host a table against one",
                "                       (it plays the Default map and army with SUPER_SCOUT alone)",
                "QUIT                   leave",
            ):
                self._say(line)
        elif command == "QUIT":
            self._say("BYE")
            self.close("quit during the handshake")
        else:
            self._say("ERROR unknown command or bad arguments; HELP lists the commands")

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
        """Write one server message (never after the close began). Game events count as activity:
        a player waiting silently for the others is not idle."""
        if not self.closing and self.transport is not None:
            self.resetTimeout()
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

    def refuse(self, reason: str) -> None:
        """End a handshake-port connection whose game cannot start with one text line
        ``ERROR <reason>`` (after the binary messages already sent), then close it."""
        if self.closing or self.transport is None:
            return
        self._say(f"ERROR {reason}")
        self.close(reason)

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
    """Builds a CombatProtocol per connection for one CombatService (``handshake``: port 5689)."""

    noisy = False

    def __init__(self, service: CombatService, handshake: bool = False):
        self.service = service
        self.handshake = handshake

    def logPrefix(self) -> str:  # noqa: N802
        return "combat-text" if self.handshake else "combat"

    def buildProtocol(self, addr) -> CombatProtocol:  # noqa: N802
        protocol = CombatProtocol(self.service, self.service.next_player_number(), self.handshake)
        protocol.factory = self
        return protocol
