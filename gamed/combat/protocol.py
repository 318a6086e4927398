"""The GGZ Combat binary protocol (port 5688) and its text handshake (port 5689).

Thin by design: bytes are parsed and encoded by ``gamed.combat.wire``, everything a message means
is decided by the pure ``CombatTable``; this adapter only moves messages between the two and the
sockets. Original clients speak only after CBT_MSG_SEAT, so on 5688 a connection is seated at
once, in arrival order, under a default name (``player<k>``, a guest). On 5689 a client first
talks a few text lines (``LOGIN <name> <token>`` or ``NAME``, ``TABLE <name> [<seats>]``, ``TOKEN``,
``PLAY``, or ``RESUME <token>``; see docs/protocols/combat.md; logging in is the shared
``gamed.login.LoginCommands``); after ``PLAY`` (or a LOGIN or RESUME that takes an away seat back)
the same connection speaks the binary protocol, starting with CBT_MSG_SEAT. A game against the
computer that cannot start ends such a connection with one closing ``ERROR <why>`` line.

A hosted bot's connection (``placement``, gamed.seats.Placement: the daemon bridges the
program's stdin and stdout to it) speaks the handshake port's protocol under its own name at its
reserved table: ``TABLE`` is answered as usual but changes nothing, and ``NAME``, ``LOGIN``,
``RESUME`` and ``COMPUTER <name>`` are refused with ``ERROR 433``; a move of its that the table
refuses loses its game (``CombatService.illegal_move``).

Both ports keep the per-connection output budget of ``gamed.backpressure``: messages (and
handshake lines) are handled one at a time, none while the client does not read our replies, and
at most ``MESSAGES_PER_TURN`` per reactor turn (then reading stops until the next turn), so one
huge read cannot stall the others; a flooding connection waits for its share in the daemon's one
``TurnQueue`` (gamed.backpressure).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from gamed.backpressure import BackPressure
from gamed.combat import wire
from gamed.identity import Identity, LoginError, Refusal
from gamed.login import LoginCommands
from gamed.names import NAME_RULE, valid_name
from gamed.seats import Seat
from gamed.textwire import refused

if TYPE_CHECKING:
    from gamed.combat.service import CombatService, Seating


class CombatProtocol(LoginCommands, BackPressure, Protocol, TimeoutMixin):
    """A player's connection: a byte stream of Combat messages both ways (on the handshake port
    after a few text lines)."""

    _log = Logger()

    _ABORTED = "{peer} ({name}) did not read its last messages; connection aborted"
    HANDSHAKE_LINE = 256  # longest handshake line, in bytes (line end excluded)
    # Messages (or handshake lines) handled for one connection before the others get their turn,
    # when no more than ``SMALL_INPUT`` bytes are waiting (a client sends a message or a few at a
    # time); a connection with more waiting (a flood) waits for its share in the TurnQueue.
    MESSAGES_PER_TURN = 16
    SMALL_INPUT = 512

    batch = contextlib.nullcontext()  # LoginCommands answers inside a batch; ours are written at once

    def __init__(self, service: CombatService, number: int, handshake: bool = False):
        self.service = service
        self.handshake = handshake
        self.text_port = handshake  # came on the handshake port (handshake turns False at PLAY)
        self.identity: Identity | None = None  # a guest once named or seated, an account once logged in
        self.seat: Seat | None = None  # its seat of the seat model while it sits at a table
        self.want_token = False  # TOKEN before PLAY: the resume token comes just before OK PLAY
        self.notices = False  # NOTICES before PLAY: AWAY and BACK lines between the binary messages
        self._holding: list | None = None  # binary messages held until the PLAY lines are written
        self.table_name: str | None = None
        self.table_seats: int | None = None
        self._text = bytearray()  # handshake bytes not handled yet
        self.clock = service.clock
        self.name = f"player{number}"
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
        if self.placement is not None:  # a hosted bot: its name and table are the daemon's
            self._use_name(self.placement.identity)
            self.table_name = self.placement.table
        if self.handshake:
            self._say("COMBAT gamed: NAME <name>, TABLE <table> [<seats>], then PLAY; HELP for more")
        elif not self.service.players.guests:
            # Original clients cannot log in, and this server admits registered players only.
            self.close("the binary port admits nobody with [players] guests = false (its clients cannot log in)")
        else:
            self.identity = Identity(self.name)
            self.service.name_changed(self, self.name)
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

    _running = False  # inside _run: a pause that ends at once (a login answered now) just goes on

    def _run(self) -> None:
        """Handle the input received so far, one handshake line or message at a time, until none
        is complete, the connection closes, it is paused (the client does not read our replies,
        or a login is being checked), or its share of this reactor turn is used up."""
        if self._running:
            return
        self._running = True
        try:
            self._run_lines()
        finally:
            self._running = False

    def _run_lines(self) -> None:
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
                if self._text:  # sent after a LOGIN or RESUME that took a seat back
                    rest, self._text = bytes(self._text), bytearray()
                    self.parser.feed(rest, limit=0)
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
        if self.placement is not None and (command == "NAME" or (command == "COMPUTER" and args)):
            self.login_refused(LoginError(Refusal.HOSTED))
        elif command == "NAME" and len(args) == 1 and valid_name(args[0]):
            self._name_command(args[0])
        elif command == "LOGIN":
            self.login_command(args)
        elif command == "RESUME":
            self.resume_command(args)
        elif command == "TOKEN" and not args:
            self.want_token = True
            self._say("OK TOKEN: your resume token comes just before OK PLAY")
        elif command == "NOTICES" and not args:
            self.notices = True
            self._say("OK NOTICES: AWAY and BACK lines come between the binary messages")
        elif command == "TABLE" and len(args) in (1, 2) and valid_name(args[0]):
            seats = None
            if len(args) == 2:
                if not args[1].isdigit() or not wire.MIN_SEATS <= int(args[1]) <= wire.MAX_SEATS:
                    return self._say(f"ERROR seats must be {wire.MIN_SEATS} to {wire.MAX_SEATS}")
                seats = int(args[1])
            if self.placement is None:  # a hosted bot stays at its table
                self.table_name, self.table_seats = args[0], seats
            self._say(f"OK TABLE {args[0]}")
        elif command == "PLAY":
            if not self._may_play() or self._back_to_away_seat():
                return
            why = self.service.can_seat(self)
            if why:
                return self._say(f"ERROR {why}")
            self._play("OK PLAY: binary protocol follows", self.service.seat, self)
        elif command == "COMPUTER" and len(args) <= 1:
            if args and self._back_to_away_seat():
                return
            ais = self.service.ais
            if not ais:
                return self._say("ERROR no computer opponent is registered on this server")
            if not args:
                return self._say(*(f"AI {name}" for name in sorted(ais)), "END")
            if args[0] not in ais:
                return self._say(f"ERROR no computer opponent {args[0]}; COMPUTER lists them")
            if self.table_name is not None:
                return self._say(f"ERROR a computer opponent plays at a 2-seat table of its own, not at table {self.table_name}")
            if not self._may_play():
                return
            self._play(f"OK COMPUTER {args[0]}: binary protocol follows", self.service.seat_against, self, args[0])
        elif command == "HELP":
            self._say(
                "LOGIN <name> <token>   play as your registered account (PLAY then takes back its away seat)",
                f"NAME <name>            your name at the table as a guest ({NAME_RULE})",
                "TABLE <table> [<seats>] play at a named table (its first player sets the seat count)",
                "TOKEN                  get your seat's resume token (just before OK PLAY)",
                "NOTICES                AWAY/BACK lines between the binary messages when a seat drops and returns",
                "PLAY                   take a seat: the binary Combat protocol starts (CBT_MSG_SEAT)",
                "RESUME <token>         take back your seat after a drop (binary protocol follows)",
                "COMPUTER [<ai>]        list the computer opponents, or host a table against one",
                "                       (it plays the Default map and army with SUPER_SCOUT alone)",
                "QUIT                   leave",
            )
        elif command == "QUIT":
            self._say("BYE")
            self.close("quit during the handshake")
        else:
            self._say("ERROR unknown command or bad arguments; HELP lists the commands")

    # --- names, logins and seats (the shared LoginCommands) --------------------------------

    def _name_command(self, name: str) -> None:
        """``NAME <name>``: a guest's name, refused when it is registered or in use here."""
        self.check_guest_name(name, self._named_guest)

    def _named_guest(self, identity: Identity) -> None:
        if self.service.name_in_use(identity.name, self):  # taken while it was checked
            return self.login_refused(LoginError(Refusal.NAME_IN_USE, identity.name))
        self._use_name(identity)
        self._say(f"OK NAME {self.name}")

    def _use_name(self, identity: Identity) -> None:
        self.identity = identity
        self.name = identity.name
        self.service.name_changed(self, self.name)

    def _may_play(self) -> bool:
        """Before PLAY or COMPUTER: a guest needs ``[players] guests`` (then it is a guest under
        its NAME or ``player<k>``)."""
        if self.identity is None:
            if not self.service.players.guests:
                self.login_refused(LoginError(Refusal.GUESTS_OFF))
                return False
            self.identity = Identity(self.name)
            self.service.name_changed(self, self.name)
        return True

    def _logged_in(self, identity: Identity) -> None:
        # Not the shared "take the away seat back at once": the binary protocol would start
        # under a client that may have sent its PLAY already. The next PLAY takes it back.
        if self.seated():
            return self.login_refused(LoginError(Refusal.TOO_LATE))
        self.identity = identity
        self.login_ok(identity)

    def _back_to_away_seat(self) -> bool:
        """PLAY or COMPUTER of an account that has a seat away in a running game: that seat,
        whatever was asked (one account, one game at a time)."""
        if self.identity is None or not self.identity.account:
            return False
        seat = self.service.seats.find_account(self.identity, away_only=True)
        if seat is None:
            return False
        self._take_back(seat)
        return True

    def _play(self, line: str, seat, *args) -> None:
        """Write ``line`` (``OK PLAY ...``), preceded by ``TOKEN <t>`` when TOKEN was asked, then
        the binary protocol starts with what seating (``seat(*args)``) sends."""
        self.handshake = False
        if not self.want_token:
            self._say(line)
            return seat(*args)
        self._holding = []
        try:
            seat(*args)
        finally:
            held, self._holding = self._holding, None
        token = self.seat.resume_token if self.seat is not None else None
        self._say(*([f"TOKEN {token}"] if token else []), line)
        for message in held:
            self.send(message)

    def seated(self) -> bool:
        return self.seat is not None or not self.handshake

    def _placed(self, placement) -> None:
        """Logged in with a host token (a hosted bot that connects itself): its table is the
        daemon's from now on, as for a bot whose pipes the daemon bridges."""
        super()._placed(placement)
        self.table_name, self.table_seats = placement.table, None

    def login_ok(self, identity: Identity) -> None:
        self._use_name(identity)
        self._say(f"OK LOGIN {identity.name}")

    def login_refused(self, error: LoginError) -> None:
        self._say(refused(error))

    def login_usage(self, text: str) -> None:
        self._say(f"ERROR {text}")

    def resume_command(self, args: list[str]) -> None:
        """``RESUME <token>``: only an away seat can be taken back (its player's connection is
        gone); then the binary protocol follows."""
        if len(args) == 1 and not self.seated() and self.placement is None:
            try:
                seat = self.service.seats.find_token(args[0])
            except LoginError:
                pass  # the shared command words the refusal
            else:
                if not seat.away:
                    return self.login_refused(LoginError(Refusal.NOT_AWAY))
        super().resume_command(args)

    def take_seat(self, seat: Seat) -> None:
        self.handshake = False
        self.service.name_changed(self, seat.name)  # a guest back at its seat keeps its name
        self.identity = seat.identity
        self.name = seat.name

    def resume_ok(self, seat: Seat) -> None:
        token = [f"TOKEN {seat.resume_token}"] if self.want_token and seat.resume_token else []
        self._say(*token, f"OK RESUME {seat.label()}: binary protocol follows")

    def token_reply(self, seat: Seat) -> None:  # TOKEN is answered before PLAY (see _play)
        self._say(f"TOKEN {seat.resume_token}")

    def notice(self, line: str) -> None:
        """An ``AWAY ...`` or ``BACK ...`` text line between binary messages, for a client that
        asked for them with NOTICES (no original client can read one)."""
        if self.notices and not self.handshake and not self.closing and self.transport is not None:
            if self._holding is None:
                self._say(line)

    def seat_replaced(self, seat: Seat) -> None:
        self.close("its player took the seat back on another connection")

    def _receive(self, message) -> None:
        seating = self.seating
        try:
            out = seating.table.receive(seating.seat, message)
        except Exception:
            self._log.failure("error handling a combat message from {peer}", peer=self.peer)
            self.close("internal error (logged)")
            return
        self.service.deliver(seating, out)
        if self.placement is not None:
            refused = next((m for _, m in out if isinstance(m, wire.MsgMoveError) and m.seat == seating.seat), None)
            if refused is not None:
                self.service.illegal_move(seating, refused.code)

    def timeoutConnection(self) -> None:  # noqa: N802
        self.close("idle timeout")

    def send(self, message) -> None:
        """Write one server message (never after the close began). Game events count as activity:
        a player waiting silently for the others is not idle. A client that leaves too much of
        them unread is cut off (``gamed.backpressure``)."""
        if self._holding is not None:
            self._holding.append(message)
            return
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
        self.service.name_released(self)
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
