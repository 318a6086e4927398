"""The GGZ Combat binary protocol (port 5688) and its text handshake (port 5689).

Thin by design: bytes are parsed and encoded by ``gamed.combat.wire``, everything a message means
is decided by the pure ``CombatTable``; this adapter only moves messages between the two and the
sockets. Original clients speak only after CBT_MSG_SEAT, so on 5688 a connection is seated at
once, in arrival order, under a default name (``player<k>``). On 5689 a client first talks a few
text lines (``NAME``, ``TABLE <name> [<seats>]``, ``PLAY``; see docs/protocols/combat.md); after
``PLAY`` the same connection speaks the binary protocol, starting with CBT_MSG_SEAT. A game against
the computer that cannot start ends such a connection with one closing ``ERROR <why>`` line.

Both ports keep the per-connection output budget of ``gamed.backpressure``: messages (and
handshake lines) are handled one at a time, none while the client does not read our replies, and
at most ``MESSAGES_PER_TURN`` per reactor turn (then reading stops until the next turn), so one
huge read cannot stall the others; a flooding connection waits for its share in the daemon's one
``TurnQueue`` (gamed.backpressure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from gamed.backpressure import BackPressure
from gamed.combat import wire
from gamed.names import NAME_RULE, valid_name

if TYPE_CHECKING:
    from gamed.combat.service import CombatService, Seating


class CombatProtocol(BackPressure, Protocol, TimeoutMixin):
    """A player's connection: a byte stream of Combat messages both ways."""

    _log = Logger()

    _ABORTED = "{peer} ({name}) did not read its last messages; connection aborted"
    HANDSHAKE_LINE = 256  # longest handshake line, in bytes (line end excluded)
    # Messages (or handshake lines) handled for one connection before the others get their turn,
    # when no more than ``SMALL_INPUT`` bytes are waiting (a client sends a message or a few at a
    # time); a connection with more waiting (a flood) waits for its share in the TurnQueue.
    MESSAGES_PER_TURN = 16
    SMALL_INPUT = 512

    def __init__(self, service: CombatService, number: int, handshake: bool = False):
        self.service = service
        self.handshake = handshake
        self.table_name: str | None = None
        self.table_seats: int | None = None
        self._text = bytearray()  # handshake bytes not handled yet
        self.clock = service.clock
        self.name = f"player{number}"
        self.named = False  # True once NAME chose a name: only named players are rated
        self.parser = wire.Parser()
        self.seating: Seating | None = None
        self.closing = False
        self.peer = "?"
        self._paused: set[str] = set()
        self._reading_paused = False
        self._turn_call = None
        self._close_call = None
        self._cut_off: str | None = None  # why the budget ended the connection

    def connectionMade(self) -> None:  # noqa: N802
        self._start_budget()
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
        self.resetTimeout()
        if self.handshake:
            self._text += data
        elif self.seating is not None:
            self.parser.feed(data, limit=0)  # only held here: _run parses one message at a time
        if self._paused:
            self._check_held(self._held())
            return
        self._run()

    def _held(self) -> int:
        """Bytes received and not handled yet."""
        return len(self._text) + self.parser.buffered

    _held_input = _held

    def _run(self) -> None:
        """Handle the input received so far, one handshake line or message at a time, until none
        is complete, the connection closes, it is paused (the client does not read our replies),
        or its share of this reactor turn is used up."""
        handled = 0
        share = self.MESSAGES_PER_TURN if self._held() <= self.SMALL_INPUT else self._turn_share
        self._turn_share = 1
        while not self.closing and not self._paused:
            if handled == share:
                self._wait_turn()  # stops reading too: nothing more arrives meanwhile
                return
            if self.handshake:
                line = self._take_line()
                if line is None:
                    return
                self._handshake_line(line)
                if not self.handshake:  # PLAY or COMPUTER: the bytes after it are binary
                    rest, self._text = bytes(self._text), bytearray()
                    if self.seating is not None and not self.closing:
                        self.parser.feed(rest, limit=0)
            else:
                if self.seating is None:
                    return
                message = self._take_message()
                if message is None:
                    return
                self._receive(message)
            handled += 1
        if self._paused and not self.closing:
            self._check_held(self._held())

    def _take_message(self):
        """The next complete message, or None (also when the input is fatal: then it closes)."""
        try:
            messages = self.parser.feed(b"", limit=1)
        except wire.ProtocolError as e:
            for message in e.messages:
                self._receive(message)
            self.close(f"bad input: {e}")
            return None
        return messages[0] if messages else None

    # Held input for BackPressure: the handshake bytes and the parser's buffer.
    def _release_held(self) -> None:
        self._run()

    def _drop_held(self) -> None:
        self._text = bytearray()
        self.parser = wire.Parser()

    def _end_cut_off(self, why: str) -> None:
        # Not a close() from inside a delivery to several seats: the seat is vacated (with this
        # reason) when the aborted connection is lost, after the delivery in progress.
        self._drop_held()
        self._cut_off = why
        self.closing = True
        self.setTimeout(None)
        self.transport.abortConnection()

    # --- the text handshake (port 5689) ------------------------------------------------------

    def _say(self, *lines: str) -> None:
        """Write handshake text lines, in one write; counted like binary messages."""
        data = b"".join(line.encode("ascii", "replace") + b"\r\n" for line in lines)
        self.transport.write(data)
        self._check_written(len(data))

    def _take_line(self) -> str | None:
        """The next complete handshake line, or None (also when it is too long: then it closes)."""
        text = self._text
        end = text.find(b"\n", 0, self.HANDSHAKE_LINE + 2)  # + 2: the line end, \r\n
        if end < 0:
            if len(text) > self.HANDSHAKE_LINE + 1:
                self._say("ERROR line too long")
                self.close("handshake line too long")
            return None
        line = bytes(text[:end])
        del text[: end + 1]
        return line.rstrip(b"\r").decode("ascii", "replace").strip()

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
                if not args[1].isdigit() or not wire.MIN_SEATS <= int(args[1]) <= wire.MAX_SEATS:
                    return self._say(f"ERROR seats must be {wire.MIN_SEATS} to {wire.MAX_SEATS}")
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
                return self._say(*(f"AI {name}" for name in sorted(ais)), "END")
            if args[0] not in ais:
                return self._say(f"ERROR no computer opponent {args[0]}; COMPUTER lists them")
            if self.table_name is not None:
                return self._say(f"ERROR a computer opponent plays at a 2-seat table of its own, not at table {self.table_name}")
            self._say(f"OK COMPUTER {args[0]}: binary protocol follows")
            self.handshake = False
            self.service.seat_against(self, args[0])
        elif command == "HELP":
            self._say(
                f"NAME <name>            your name at the table ({NAME_RULE})",
                "TABLE <table> [<seats>] play at a named table (its first player sets the seat count)",
                "PLAY                   take a seat: the binary Combat protocol starts (CBT_MSG_SEAT)",
                "COMPUTER [<ai>]        list the computer opponents, or host a table against one",
                "                       (it plays the Default map and army with SUPER_SCOUT alone)",
                "QUIT                   leave",
            )
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
        a player waiting silently for the others is not idle. A client that leaves too much of
        them unread is cut off (``gamed.backpressure``)."""
        if not self.closing and self.transport is not None:
            self.resetTimeout()
            data = wire.encode(message)
            self.transport.write(data)
            self._check_written(len(data))

    def close(self, reason: str) -> None:
        """Close with a logged reason; the table handles the seat as left (``drop``). A client
        that does not read what is still buffered for it is cut off after the close grace."""
        if self.closing:
            return
        self.closing = True
        self._log.info("{peer} ({name}) closed: {reason}", peer=self.peer, name=self.name, reason=reason)
        self.setTimeout(None)
        self._drop_held()
        seating, self.seating = self.seating, None
        if seating is not None:
            self.service.vacate(seating, reason)
        self._close_transport(self.service.limits.close_grace)

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
        for call in (self._turn_call, self._close_call):
            if call is not None and call.active():
                call.cancel()
        self._turn_call = self._close_call = None
        self._stop_unread_timer()
        self._drop_held()
        seating, self.seating = self.seating, None
        if seating is not None:
            self.service.vacate(seating, self._cut_off)
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
