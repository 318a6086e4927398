"""The shared base of every text-line game protocol, with the connection policies it enforces.

``TextLineProtocol`` frames ASCII lines (``\\n``, ``\\r\\n`` or ``\\r`` in, ``\\r\\n`` out) and applies the
per-connection budget: a maximum line length (answered once the over-long line ends, the
lines after it still count), non-text bytes and telnet negotiation, an idle timeout, a line rate
(a flooding client is slowed down, not cut off, by no longer reading from it; blank lines are
free), a share of the reactor (up to ``lines_per_turn`` lines of one connection are handled per
reactor turn; one with more waiting, a flood, waits for its share in the daemon's one
``gamed.backpressure.TurnQueue``, so floods together cannot starve other connections), output
back-pressure (``gamed.backpressure``: while a client does not read its replies its further lines
wait unanswered; one that sends more than 128 KiB meanwhile is cut off) and a bounded close (a client that never reads
its last lines is cut off after a grace period).

``ConnectionLimits`` wraps a factory and refuses connections beyond a total and a per-address
count, and beyond the daemon-wide ``ConnectionBudget`` that every port shares, with a reason line
for the client and a log entry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols.basic import LineOnlyReceiver
from twisted.protocols.policies import TimeoutMixin, WrappingFactory
from twisted.python.failure import Failure

from gamed.backpressure import BackPressure
from gamed.config import Limits
from gamed.textwire import ParseError

_IAC = 0xFF
_TELNET_OPTION_VERBS = {0xFB, 0xFC, 0xFD, 0xFE}  # WILL WONT DO DONT take an option byte
_SB, _SE = 0xFA, 0xF0
_PRINTABLE = frozenset(range(0x20, 0x7F))

# Held in place of a line that was longer than the limit (its bytes are not kept): it is answered
# as one over-long line, in its turn. A received line never contains a newline.
_TOO_LONG = b"\n"


def strip_telnet(raw: bytes) -> bytes:
    """Remove telnet IAC command sequences (negotiation, subnegotiation, escaped 0xFF) from a line."""
    if _IAC not in raw:
        return raw
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b != _IAC:
            out.append(b)
            i += 1
            continue
        verb = raw[i + 1] if i + 1 < n else None
        if verb == _IAC:
            i += 2  # an escaped 0xFF data byte: not text either, drop it
        elif verb in _TELNET_OPTION_VERBS:
            i += 3
        elif verb == _SB:
            end = raw.find(bytes((_IAC, _SE)), i + 2)
            i = n if end < 0 else end + 2
        else:
            i += 2
    return bytes(out)


def decode_line(raw: bytes) -> str | None:
    """The text of one received line (terminator already removed), or None when it is not text.

    Trailing ``\\r`` and NUL bytes (telnet sends a typed bare CR as ``\\r\\0``; some clients end
    lines with ``\\r\\r\\n``) and telnet commands are dropped; tabs count as blanks; any other
    control or non-ASCII byte makes the line garbage.
    """
    if raw.endswith((b"\r", b"\0")):
        raw = raw.rstrip(b"\r\0")
    if raw.isascii():
        text = raw.decode("ascii")
        if text.isprintable():
            return text
    raw = strip_telnet(raw).replace(b"\t", b" ")
    if all(b in _PRINTABLE for b in raw):
        return raw.decode("ascii")
    return None


class WriteBatch:
    """Gathers the lines one event sends to any number of connections, so that each connection
    gets one write per event (a move reaches both players; the mover may also be prompted)."""

    def __init__(self):
        self.depth = 0
        self.dirty: list[TextLineProtocol] = []

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *exc_info) -> None:
        self.depth -= 1
        if not self.depth:
            dirty, self.dirty = self.dirty, []
            for protocol in dirty:
                protocol.flush()


class TextLineProtocol(BackPressure, LineOnlyReceiver, TimeoutMixin):
    """Line framing and the per-connection budget; subclasses implement the ``on_*`` hooks."""

    delimiter = b"\r\n"
    _log = Logger()
    # Lines of one connection handled in one reactor turn, when it has no more than that many
    # waiting: a well-behaved client sends one line, or a few at a time (a Virtual Fight team's
    # orders). A connection with more waiting (a flood) waits in the TurnQueue.
    lines_per_turn = 16
    # Blank lines skipped in one reactor turn (they cost little, but not nothing).
    _blanks_per_turn = 4096
    # The seat the daemon assigned to this connection (gamed.seats.Placement: a hosted bot's),
    # set before the connection is made; None for a client that connected itself.
    placement = None

    def __init__(self, limits: Limits, clock: IReactorTime, batch: WriteBatch | None = None):
        self.limits = limits
        self.clock = clock
        self.batch = batch if batch is not None else WriteBatch()
        self._pending: list[str] = []
        self.MAX_LENGTH = limits.max_line
        self._buffer = b""  # the start of a line that has not ended yet
        self._held: deque[bytes] = deque()  # complete lines not handled yet, oldest first
        self._held_bytes = 0
        self._after_cr = False
        self._discarding = False
        self._paused: set[str] = set()
        self._reading_paused = False
        self._rate_logged = False
        self._tokens = float(limits.line_burst)
        self._refilled = clock.seconds()
        self._rate_call = None
        self._turn_call = None
        self._close_call = None
        self.closing = False
        self.handling = False  # True while one of this client's lines is being handled
        self.peer = "?"

    # --- hooks for subclasses -------------------------------------------------------------

    def on_connect(self) -> None:
        """The connection is up: send the greeting."""

    def on_line(self, text: str) -> None:
        """One non-empty line of text, stripped of surrounding blanks."""
        raise NotImplementedError

    def on_line_too_long(self) -> None:
        """A line longer than the limit ended (its bytes were discarded)."""

    def on_garbage(self) -> None:
        """A line held bytes that are not ASCII text."""

    def on_idle(self) -> None:
        """Nothing happened for the idle timeout; the default closes the connection."""
        self.close("idle timeout", [])

    def on_internal_error(self) -> None:
        """A bug in the game raised while handling a line (already logged); say so to the client."""

    def on_disconnect(self, reason: Failure) -> None:
        """The connection is gone, for whatever reason."""

    # --- Twisted interface ------------------------------------------------------------------

    def connectionMade(self) -> None:  # noqa: N802
        self._start_budget(("setTcpNoDelay", "setTcpKeepAlive"))
        if self.limits.idle_timeout:
            self.setTimeout(self.limits.idle_timeout)
        self.on_connect()

    def connectionLost(self, reason: Failure = None) -> None:  # noqa: N802
        self.connected = 0
        self.setTimeout(None)
        for call in (self._rate_call, self._turn_call, self._close_call):
            if call is not None and call.active():
                call.cancel()
        self._rate_call = self._turn_call = self._close_call = None
        self._stop_unread_timer()
        self._drop_held()
        self.on_disconnect(reason)

    def timeoutConnection(self) -> None:  # noqa: N802
        self.on_idle()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        # LineOnlyReceiver's own dataReceived drops every line that follows an over-long one in
        # the same chunk and cannot pause between lines, so the framing is done here.
        if self.closing:
            return
        if b"\r" in data or self._after_cr:
            data = self._normalize(data)
        self._process(data)
        if not self._paused:
            self._drain()
        self._check_held_lines()

    # Held input for BackPressure: the framed lines in ``_held`` (and the unended one in ``_buffer``).
    def _release_held(self) -> None:
        self._drain()

    def _held_input(self) -> int:
        return self._held_bytes + len(self._buffer)

    def _drop_held(self) -> None:
        self._buffer = b""
        self._held.clear()
        self._held_bytes = 0

    # --- helpers for subclasses -------------------------------------------------------------

    def send_lines(self, lines: Iterable[str]) -> None:
        """Send text lines, each terminated by CRLF. While a line is being handled they are
        gathered and written once at its end, however many events produced them."""
        if self.closing or self.transport is None:
            return
        if self.batch.depth:
            if not self._pending:
                self.batch.dirty.append(self)
            self._pending.extend(lines)
        else:
            self._write(lines)

    def flush(self) -> None:
        """Write the lines gathered so far."""
        lines, self._pending = self._pending, []
        if lines and not self.closing:
            self._write(lines)

    def _write(self, lines: Iterable[str]) -> None:
        lines = list(lines)
        if lines:  # an empty line is a line too (Virtual Fight's SAW that sees nothing)
            self.transport.write(("\r\n".join(lines) + "\r\n").encode("ascii", "replace"))

    def close(self, reason: str, lines: Iterable[str] = (), routine: bool = False) -> None:
        """Send ``lines``, then close; log ``reason`` (at debug level when ``routine``, e.g. the
        end of a game that is logged already). A client that does not read them is cut off after
        the close grace period."""
        if self.closing:
            return
        self.send_lines(lines)
        self.flush()
        self.closing = True
        (self._log.debug if routine else self._log.info)("{peer} closed: {reason}", peer=self.peer, reason=reason)
        self.setTimeout(None)
        self._drop_held()
        self._close_transport(self.limits.close_grace)

    def note_activity(self) -> None:
        """Something happened for this client (a game event): restart the idle timer."""
        self.resetTimeout()

    # --- the operator (gamed.admin, docs/admin.md) ---------------------------------------------

    def bye_lines(self, text: str) -> list[str]:
        """The last line of a connection the operator closes (kick, ban, drain), saying ``text``;
        none by default (a protocol without such a line)."""
        return []

    def notice_lines(self, text: str) -> list[str] | None:
        """The lines of an operator's broadcast ``text``; None: this protocol has no line for it."""
        return None

    def kick(self, reason: str) -> None:
        """The operator closes this connection, with ``bye_lines`` first."""
        text = f"kicked by the operator{': ' + reason if reason else ''}"
        self.close(text, self.bye_lines(text))

    def notice(self, text: str) -> bool:
        """Send the operator's broadcast ``text``; False when this protocol has no line for it."""
        lines = self.notice_lines(text)
        if lines is None:
            return False
        self.send_lines(lines)
        return True

    # --- internals --------------------------------------------------------------------------

    def _normalize(self, data: bytes) -> bytes:
        """Make ``\r\n``, ``\r\0`` (telnet's bare CR) and a lone ``\r`` all end a line as ``\n``.
        A ``\r`` that ends one read ends its line at once (the client may be waiting for the
        reply); the ``\n`` or NUL that may follow it at the start of the next read is dropped."""
        if self._after_cr and data[:1] in (b"\n", b"\0"):
            data = data[1:]
        self._after_cr = data.endswith(b"\r")
        return data.replace(b"\r\n", b"\n").replace(b"\r\0", b"\n").replace(b"\r", b"\n")

    def _process(self, data: bytes) -> None:
        """Frame newly received (normalized) bytes: the lines they end join the held ones, in
        order, and the rest stays as the start of the next line. Each byte is framed once, so
        holding lines back costs the same per line however many are held. Empty lines are
        dropped here: they mean nothing and do not count against the line rate."""
        if self._buffer:
            data = self._buffer + data  # at most max_line + 1 bytes: see the tail's check below
            self._buffer = b""
        if b"\n" not in data:
            tail = data
        else:
            lines = data.split(b"\n")
            tail = lines.pop()
            if self._discarding:
                self._discarding = False
                lines[0] = _TOO_LONG  # the end of a line whose start was too long
            kept = list(filter(None, lines))
            self._held.extend(kept)
            self._held_bytes += sum(map(len, kept)) + len(kept)  # + their newlines
        if len(tail) > self.MAX_LENGTH + 1:  # + 1: the \r of a \r\n that has not ended yet
            self._discarding = True
            tail = b""
        self._buffer = tail

    def _drain(self) -> None:
        """Handle held lines, oldest first, until none is left or a pause stops us: the line
        rate, the client not reading our replies, or this turn's share of the reactor used up
        (then the rest waits for the next reactor turn)."""
        held = self._held
        handled = blanks = 0
        share = self.lines_per_turn if len(held) <= self.lines_per_turn else self._turn_share
        self._turn_share = 1
        while held and not self._paused and not self.closing:
            if handled >= share or blanks >= self._blanks_per_turn:
                self._wait_turn()
                return
            raw = held.popleft()
            self._held_bytes -= len(raw) + 1
            if raw is _TOO_LONG or len(raw) > self.MAX_LENGTH:
                handled += 1
                self._dispatch(self.on_line_too_long)
                continue
            text = decode_line(raw)
            if text is not None:
                text = text.strip()
                if not text:
                    blanks += 1
                    continue
            if self.limits.line_rate and not self._take_token():
                held.appendleft(raw)
                self._held_bytes += len(raw) + 1
                return
            handled += 1
            self.resetTimeout()
            if text is None:
                self._dispatch(self.on_garbage)
            else:
                self._dispatch(self.on_line, text)

    def _check_held_lines(self) -> None:
        """Cut off a client that has sent a lot more while its lines could not be handled."""
        if self._held and not self.closing:
            self._check_held(self._held_bytes + len(self._buffer))

    def _dispatch(self, hook: Callable, *args) -> None:
        self.handling = True
        try:
            with self.batch:
                hook(*args)
        except Exception:
            self._log.failure("error handling a line from {peer}", peer=self.peer)
            try:
                self.on_internal_error()
            except Exception:
                self._log.failure("error reporting an internal error to {peer}", peer=self.peer)
                self.transport.abortConnection()
        finally:
            self.handling = False

    def _take_token(self) -> bool:
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        now = self.clock.seconds()
        rate = self.limits.line_rate
        self._tokens = min(float(self.limits.line_burst), self._tokens + (now - self._refilled) * rate)
        self._refilled = now
        # Compare with a little slack: refilling for exactly (1 - tokens) / rate seconds can land a
        # rounding error short of a whole token, and waiting for that error would spin.
        if self._tokens >= 1 - 1e-9:
            self._tokens = max(0.0, self._tokens - 1)
            return True
        if not self._rate_logged:
            self._rate_logged = True  # once per connection: a flood must not flood the log too
            self._log.info("{peer} sends more than {rate:g} lines/s: slowed down", peer=self.peer, rate=rate)
        self._pause("rate")
        # Wake up once a turn's worth of lines may go (not for every token): a held flood then
        # costs one timer, one read pause and one write per that many lines, not per line.
        wake = min(self.lines_per_turn, self.limits.line_burst)
        self._rate_call = self.clock.callLater((wake - self._tokens) / rate, self._rate_refilled)
        return False

    def _rate_refilled(self) -> None:
        self._rate_call = None
        self._resume("rate")


class CommandProtocol(TextLineProtocol):
    """A text protocol of command lines (Kalaha, Connect Four): the first word names a command,
    handled by ``_COMMANDS[word](self, args)``; every refusal is ``ERROR <code> <text>``.

    Strikes are for programs that misbehave. While the connection's game runs, a refused line is a
    strike (the text says which one of how many) for a connection that behaves as a program, i.e.
    has its drawings off (``board_on`` False: ``BOARD OFF``, the mode documented for programs). A
    person (drawings on) only gets the error, unless ``strike_people`` is set, and then only for a
    line sent on its own turn: a line sent while it is not your turn never costs a person anything.
    Whoever is not struck is asked for its move again when it is its turn, as a struck player is.

    Subclasses set ``wire`` (the game's codec: ``parse``, ``error``, ``seconds``, ``Code`` with
    ``UNKNOWN_COMMAND``, ``LINE_TOO_LONG``, ``NOT_TEXT``, ``INTERNAL``), ``_COMMANDS``, ``board_on``,
    ``strike_people``, ``game`` (the running game or None: ``over``, ``to_move``, ``strike_limit``,
    ``strikes``, ``strike(player)``, ``ask_again(player)``) and ``seat_in(game)`` (the key of this
    player in ``game.strikes``, as ``game.to_move``)."""

    wire: Any
    _COMMANDS: dict[str, Callable[[Any, list[str]], None]] = {}
    game: Any = None
    board_on: bool = False  # drawings after every move: on for people, off for programs
    strike_people: bool = False  # the game's setting: people are struck too (on their own turn)

    def seat_in(self, game: Any) -> Any:
        raise NotImplementedError

    def on_idle(self) -> None:
        self.close("idle timeout", [f"BYE nothing happened for {self.wire.seconds(self.limits.idle_timeout)} s"])

    def bye_lines(self, text: str) -> list[str]:
        return [f"BYE {text}"]

    def notice_lines(self, text: str) -> list[str] | None:
        return [f"INFO operator: {text}"]

    def on_line_too_long(self) -> None:
        if self.probe is not None:
            self.probe.heard(f"(a line over {self.limits.max_line} bytes)")
            return self.probe.other("a line too long")
        self._error(self.wire.Code.LINE_TOO_LONG, f"line too long (the limit is {self.limits.max_line} bytes)")

    def on_garbage(self) -> None:
        if self.probe is not None:
            self.probe.heard("(bytes that are not ASCII text)")
            return self.probe.other("not ASCII text")
        self._error(self.wire.Code.NOT_TEXT, "not ASCII text")

    def on_internal_error(self) -> None:
        errors = getattr(getattr(self, "service", None), "errors", None)
        if errors is not None:
            errors[int(self.wire.Code.INTERNAL)] += 1
        self.send_lines([self.wire.error(self.wire.Code.INTERNAL, "internal error; it has been logged")])

    # --- the self-test (gamed.generic.selftest): ``SELFTEST [<game>]`` ---------------------------------

    probe: Any = None  # the self-test being played
    selftest_game = ""  # the game's registry name; "" = no self-test on this port
    _PROBE_PASSES = frozenset({"PING", "HELP", "QUIT", "SELFTEST"})  # answered as ever in a self-test

    def selftest_voice(self) -> Any:
        """The self-test's ``TextVoice`` in this game's lines."""
        raise NotImplementedError

    def selftest_refused(self) -> str | None:
        """Why a self-test cannot begin now (a game, a match); None: it can (the connection has
        left its lobby)."""
        return None

    def _selftest(self, args: list[str]) -> None:
        from gamed.generic.selftest import SelfTest, scenes_of

        if len(args) > 1 or (args and args[0].lower() != self.selftest_game):
            raise ParseError(self.wire.Code.BAD_ARGUMENTS, f"usage: SELFTEST [{self.selftest_game}]")
        why = "a self-test is under way" if self.probe is not None else self.selftest_refused()
        if why:
            raise ParseError(self.wire.Code.NOT_NOW, why)
        rules, scenes = scenes_of(self.selftest_game, None)

        def done() -> None:
            self.probe = None

        self.probe = SelfTest(self.selftest_voice(), rules, scenes, self.clock, done)
        self.probe.begin()

    def _probe_line(self, text: str) -> bool:
        """A line during a self-test: its answer (``MOVE <x>`` or ``<x>``) or a deviation; False
        for the commands answered as ever."""
        probe = self.probe
        probe.heard(text)
        command, args = self.wire.parse(text)
        if command in self._PROBE_PASSES:
            return False
        if command == "MOVE" and len(args) == 1:
            probe.answer(args[0], None)
        else:
            probe.other(f"the line {text[:40]!r}")
        return True

    def connectionLost(self, reason: Failure = None) -> None:  # noqa: N802
        if self.probe is not None:
            self.probe.gone()
            self.probe = None
        super().connectionLost(reason)

    def on_line(self, text: str) -> None:
        if self.probe is not None and self._probe_line(text):
            return
        command, args = self.wire.parse(text)
        handler = self._COMMANDS.get(command)
        if handler is None:
            self._error(self.wire.Code.UNKNOWN_COMMAND, f"unknown command {command[:20]}; type HELP")
            return
        try:
            handler(self, args)
        except ParseError as e:
            self._error(e.code, str(e))

    def _help(self, args: list[str]) -> None:
        self.send_lines(self.wire.help_lines(args[0] if args else None))

    # The clock lines (docs/clocks.md): ``CLOCKS ON|OFF`` switches them; by default a connection
    # gets them when its game's time control is more than a per-move limit.
    clocks_on: bool | None = None

    def _clocks(self, args: list[str]) -> None:
        switch = args[0].upper() if len(args) == 1 else ""
        if switch not in ("ON", "OFF"):
            raise ParseError(self.wire.Code.BAD_ARGUMENTS, "usage: CLOCKS ON|OFF")
        self.clocks_on = switch == "ON"
        self.send_lines([f"OK CLOCKS {switch}"])

    def clock_lines(self, control: Any) -> bool:
        """Whether this connection gets ``TIMECONTROL`` and ``CLOCK`` lines in a game of ``control``."""
        return self.clocks_on if self.clocks_on is not None else not control.plain

    def _ping(self, args: list[str]) -> None:
        self.send_lines(["PONG"])

    def _error(self, code: int, text: str) -> None:
        """Reply ERROR; while a game runs it may be a strike (see the class), and enough of them
        lose the game."""
        errors = getattr(getattr(self, "service", None), "errors", None)  # counted by code for the metrics
        if errors is not None:
            errors[int(code)] += 1
        game = self.game
        if game is None or game.over:
            self.send_lines([self.wire.error(code, text)])
            return
        seat = self.seat_in(game)
        my_turn = game.to_move == seat
        if self.board_on and not (self.strike_people and my_turn):
            self.send_lines([self.wire.error(code, text)])
            game.ask_again(self)
            return
        limit = game.strike_limit
        if limit:
            text = f"{text}; strike {game.strikes[seat] + 1} of {limit}"
        self.send_lines([self.wire.error(code, text)])
        game.strike(self)


class _Refusal(Protocol):
    """Says why a connection is refused, then closes it."""

    def __init__(self, message: bytes):
        self.message = message

    def connectionMade(self) -> None:  # noqa: N802
        if self.message:
            self.transport.write(self.message)
        self.transport.loseConnection()


class ConnectionBudget:
    """The connections of every port together against one daemon-wide maximum, so that the open
    files a process may have are never used up by connections: when the budget is full each port
    still accepts and answers its own refusal, instead of failing to accept (EMFILE), and engines,
    programs and records still find the descriptors reserved for them. 0 = unlimited."""

    def __init__(self, max_total: int):
        self.max_total = max_total
        self.open = 0

    @property
    def full(self) -> bool:
        return bool(self.max_total) and self.open >= self.max_total


class ConnectionLimits(WrappingFactory):
    """Wraps a server factory; refuses connections beyond ``max_total`` in all and ``max_per_peer``
    from one address (0 = unlimited), and once the daemon's ``budget`` (shared by every port, set
    by gamed.tap) is full, and those its ``registry`` refuses (a banned address, a draining daemon:
    gamed.connections), answering ``refusal(why)`` bytes and logging the reason."""

    _log = Logger()
    noisy = False
    # What the port serves ("kalaha", "web site"; set by gamed.tap): the name its start-up line
    # ("kalaha starting on 4600") and its log lines show, instead of Twisted's class names.
    served: str | None = None
    budget: ConnectionBudget | None = None
    exempt: frozenset[str] = frozenset()  # addresses without a per-address limit (the web site's trusted proxies)
    # The daemon's gamed.connections.ConnectionRegistry (set by gamed.tap on game ports): it numbers
    # the connections, and refuses banned addresses and every new connection while draining.
    registry: Any = None
    game: str = ""  # the game's config section ("kalaha"), for the registry
    option: str = ""  # the port's option ("fight-gui"), for the registry

    def __init__(
        self,
        wrapped: Factory,
        max_total: int,
        max_per_peer: int,
        refusal: Callable[[str], bytes] = lambda why: b"",
    ):
        super().__init__(wrapped)
        self.max_total = max_total
        self.max_per_peer = max_per_peer
        self.refusal = refusal
        self.per_peer: dict[str, int] = {}
        self._peer_of: dict[object, str] = {}
        self._entry_of: dict[object, Any] = {}  # wrapper -> its gamed.connections.Connection
        self.refused = 0

    def logPrefix(self) -> str:  # noqa: N802
        if self.served:
            return self.served
        wrapped = self.wrappedFactory
        return wrapped.logPrefix() if hasattr(wrapped, "logPrefix") else type(wrapped).__name__

    def buildProtocol(self, addr: IAddress):  # noqa: N802
        host = str(getattr(addr, "host", addr))
        why = None
        if self.max_total and len(self.protocols) >= self.max_total:
            why = f"server full ({self.max_total} connections)"
        elif self.budget is not None and self.budget.full:
            why = f"server full ({self.budget.max_total} connections on all ports)"
        elif self.max_per_peer and host not in self.exempt and self.per_peer.get(host, 0) >= self.max_per_peer:
            why = f"too many connections from {host} (limit {self.max_per_peer})"
        if why is None and self.registry is not None:  # a banned address, or the daemon draining
            why = self.registry.refusal(host)
        if why is not None:
            self.refused += 1
            if self.refused & (self.refused - 1) == 0:
                # 1st, 2nd, 4th, 8th... refusal: a connection flood must not become a log flood.
                self._log.warn(
                    "refused connection from {host}: {why} ({refused} refused so far)",
                    host=host,
                    why=why,
                    refused=self.refused,
                )
            refusal = _Refusal(self.refusal(why))
            refusal.factory = self
            return refusal
        protocol = super().buildProtocol(addr)
        self.per_peer[host] = self.per_peer.get(host, 0) + 1
        self._peer_of[protocol] = host
        if self.budget is not None:
            self.budget.open += 1
        if self.registry is not None:
            self._entry_of[protocol] = self.registry.added(self.game, self.option, addr, protocol.wrappedProtocol, protocol)
        return protocol

    def unregisterProtocol(self, p) -> None:  # noqa: N802
        super().unregisterProtocol(p)
        entry = self._entry_of.pop(p, None)
        if entry is not None:
            self.registry.removed(entry)
        host = self._peer_of.pop(p, None)
        if host is not None:
            if self.budget is not None:
                self.budget.open -= 1
            left = self.per_peer[host] - 1
            if left:
                self.per_peer[host] = left
            else:
                del self.per_peer[host]
