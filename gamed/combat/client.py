"""``gamed-combat``: a terminal client for people playing GGZ Combat (spec ggz-combat) on gamed.

It connects to a daemon started with ``--combat DESC``, tells every server message in words,
answers the host's options request with a shipped map (``--map``, optionally another option mask
with ``--options HEX``), places the army (``--random-setup``, the word ``DEFAULT`` on the Default
map, ``RANDOM``, or typed rows of unit tokens), draws the board and sends the moves typed as
``x y x2 y2`` or ``A0 A1`` (column letter, row number). ``sync`` asks for the board again, ``board``
draws it, ``help`` lists the commands and ``quit`` leaves. stdin may be a file or a pipe: lines are
read in order, a move line waits until it is this seat's turn, and the end of stdin leaves.

``CombatClient`` is the sans-I/O part (messages in, words and client messages out); ``main`` wires
it to a TCP connection and stdin with Twisted.
"""

from __future__ import annotations

import argparse
import random
import re
import sys

import attrs

from gamed.combat import wire
from gamed.combat.maps import shipped_maps
from gamed.combat.wire import (
    T_LAKE,
    T_NULL,
    U_EMPTY,
    U_UNKNOWN,
    CombatOptions,
    HostOptions,
    MsgAttack,
    MsgGameover,
    MsgMove,
    MsgMoveError,
    MsgOptions,
    MsgPlayers,
    MsgSeat,
    MsgSetup,
    MsgStart,
    MsgSync,
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    owner_nibble,
    owner_of,
)
from gamed.stratego.console import DEFAULT_SETUPS
from gamed.stratego.rules import TOKENS, UNIT_OF_TOKEN, Opt, Unit

DEFAULT_PORT = 5688

ERRORS = {
    -1: "connection failure",
    -2: "a cell outside the board",
    -3: "it is not your turn",
    -4: "you cannot attack your own unit",
    -5: "the target cell is not open (lake or off the map)",
    -6: "there is none of your units on that cell",
    -7: "that unit cannot move (flag or bomb)",
    -8: "that is no move",
    -9: "diagonal moves are not allowed",
    -10: "that unit moves only one cell",
    -11: "a scout moves in a straight line over empty cells only",
    -12: "options: the army has no flag",
    -13: "options: the army has no movable unit",
    -14: "options: a setup zone is smaller than the army",
}
"""What the error codes of spec §3 mean."""

STATES = {0: "init", 1: "waiting for players", 2: "setup", 3: "playing", 4: "over"}
HELP = (
    "Commands: 'x y x2 y2' or 'A0 A1' (column letter, row) moves a unit; 'sync' asks for the board; "
    "'board' draws it; 'quit' leaves."
)


def unit_name(code: int) -> str:
    """A unit code (sign and owner nibble ignored) in words."""
    code = abs(code) & 0x0F
    if code == U_UNKNOWN:
        return "unknown unit"
    if code == U_EMPTY:
        return "nothing"
    if 0 <= code < len(TOKENS):
        return f"{Unit(code).name.lower()} ({TOKENS[code]})"
    return f"unit {code}"


def option_names(mask: int) -> str:
    names = [name.lower() for name, flag in Opt.__members__.items() if flag and mask & flag]
    return ", ".join(names) if names else "none"


def describe_options(options: CombatOptions) -> str:
    army = ", ".join(f"{count} {Unit(code).name.lower()}" for code, count in enumerate(options.army) if count)
    name = options.name or "(unnamed)"
    return f"map {name} {options.width}x{options.height}; army: {army}; options: {option_names(options.options)}"


def error_text(code: int) -> str:
    return ERRORS.get(code, "unknown error")


def cell_name(options: CombatOptions | None, cell: int) -> str:
    if options is None or not 0 <= cell < options.cells:
        return f"cell {cell}"
    x, y = cell % options.width, cell // options.width
    return f"{x},{y}"


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def draw_board(options: CombatOptions, units: list[int] | bytes, seat: int) -> str:
    """The board as text with x (number and letter) and y coordinates: own units by token
    (F B s 9..1), other seats' units '#', lakes '~', off-map cells blank, empty cells '.'."""
    w = options.width
    lines = ["    " + "".join(f"{x:>2}" for x in range(w)), "    " + "".join(f"{_LETTERS[x] if x < 26 else '?':>2}" for x in range(w))]
    for y in range(options.height):
        row = []
        for x in range(w):
            i = y * w + x
            terrain = options.terrain(i)
            unit = units[i] if i < len(units) else U_EMPTY
            code = unit & 0x0F
            if terrain == T_LAKE:
                ch = "~"
            elif terrain == T_NULL:
                ch = " "
            elif unit == U_EMPTY or owner_of(unit) < 0:
                ch = "."
            elif owner_of(unit) == seat and code < len(TOKENS):
                ch = TOKENS[code]
            else:
                ch = "#"
            row.append(f"{ch:>2}")
        lines.append(f"{y:>3} " + "".join(row))
    return "\n".join(lines) + "\n"


_COORD = re.compile(r"^([A-Za-z])(\d+)$")


def parse_move(text: str, options: CombatOptions) -> tuple[int, int] | None:
    """``x y x2 y2`` or ``A0 A1`` (letter = column x, number = row y) as (source, target) cells;
    None if the text is neither or a coordinate is off the board."""
    words = text.replace(",", " ").split()
    if len(words) == 4 and all(re.fullmatch(r"-?\d+", w) for w in words):
        x, y, x2, y2 = (int(w) for w in words)
    elif len(words) == 2 and all(_COORD.match(w) for w in words):
        (a, b), (c, d) = (_COORD.match(w).groups() for w in words)
        x, y, x2, y2 = _LETTERS.index(a.upper()), int(b), _LETTERS.index(c.upper()), int(d)
    else:
        return None
    w, h = options.width, options.height
    if not (0 <= x < w and 0 <= y < h and 0 <= x2 < w and 0 <= y2 < h):
        return None
    return y * w + x, y2 * w + x2


def random_setup(options: CombatOptions, seat: int, rng: random.Random) -> dict[int, int]:
    """The army shuffled over the seat's zone: cell -> unit code."""
    zone = list(options.zone(seat))
    army = [code for code, count in enumerate(options.army) for _ in range(count)]
    rng.shuffle(zone)
    return dict(zip(zone, army))


def default_setup(options: CombatOptions, seat: int) -> dict[int, int] | None:
    """The UCC DEFAULT army (RED for the top zone, BLUE for the bottom one) on a 10x10 map whose
    zone is 4 full rows and whose army is the UCC one; None elsewhere."""
    zone = options.zone(seat)
    if options.width != 10 or len(zone) != 40 or sorted(options.army) != sorted((1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1)):
        return None
    rows = DEFAULT_SETUPS["RED" if zone[0] < options.cells // 2 else "BLUE"]
    placement = {cell: int(UNIT_OF_TOKEN[token]) for cell, token in zip(zone, "".join(rows))}
    counts = [0] * len(Unit)
    for code in placement.values():
        counts[code] += 1
    return placement if tuple(counts) == tuple(options.army) else None


def typed_setup(text: str, options: CombatOptions, seat: int) -> dict[int, int] | str:
    """Tokens (F B s 9..1, '.' for empty) for the zone cells in index order: the placement, or
    the reason it is refused."""
    tokens = [c for c in text if not c.isspace()]
    zone = options.zone(seat)
    if len(tokens) != len(zone):
        return f"{len(tokens)} tokens for a zone of {len(zone)} cells"
    placement = {}
    counts = [0] * len(Unit)
    for cell, token in zip(zone, tokens):
        if token == ".":
            continue
        if token not in UNIT_OF_TOKEN:
            return f"unknown token {token!r}"
        placement[cell] = int(UNIT_OF_TOKEN[token])
        counts[placement[cell]] += 1
    if tuple(counts) != tuple(options.army):
        return f"the army is {list(options.army)} (F B s 9 .. 1), not {counts}"
    return placement


class CombatClient:
    """The client's state, without I/O. ``receive(message)`` and ``command(line)`` return the text
    for the person; client→server messages pile up in ``outbox`` (take them with ``take()``)."""

    def __init__(
        self,
        map_options: CombatOptions | None = None,
        auto_setup: str | None = None,
        rng: random.Random | None = None,
    ):
        self.map_options = map_options  # what this client sends when it is the host
        self.auto_setup = auto_setup  # "random", "default" or None (typed)
        self.rng = rng or random.Random()
        self.seat = -1
        self.seats = 2
        self.names: list[str] = []
        self.options: CombatOptions | None = None
        self.units: list[int] = []
        self.turn = 0
        self.playing = False
        self.over = False
        self.winner: int | None = None
        self.setup_wanted = False
        self.setup_text = ""
        self.pending_move = False
        self.outbox: list[object] = []

    # --- helpers ---------------------------------------------------------------------------
    def send(self, message: object) -> None:
        self.outbox.append(message)

    def take(self) -> list[object]:
        out, self.outbox = self.outbox, []
        return out

    def who(self, seat: int) -> str:
        if seat == self.seat:
            return "you"
        name = self.names[seat] if 0 <= seat < len(self.names) and self.names[seat] else ""
        return f"seat {seat}" + (f" ({name})" if name else "")

    @property
    def my_turn(self) -> bool:
        return self.playing and not self.over and self.turn == self.seat

    @property
    def ready(self) -> bool:
        """Whether a typed line can be used now (setup wanted, or this seat's move)."""
        return self.over or self.setup_wanted or (self.my_turn and not self.pending_move)

    def board(self) -> str:
        if self.options is None:
            return "No map yet.\n"
        return draw_board(self.options, self.units, self.seat)

    def _next_turn(self) -> None:
        self.turn = wire.next_turn(self.turn, self.seats)
        self.pending_move = False

    def _place(self, placement: dict[int, int]) -> str:
        assert self.options is not None
        self.setup_wanted = False
        self.setup_text = ""
        nibble = owner_nibble(self.seat)
        for cell in self.options.zone(self.seat):
            self.units[cell] = U_EMPTY
        for cell, code in placement.items():
            self.units[cell] = nibble | code
        self.send(MsgSetup(wire.write_setup(self.options, self.seat, placement)))
        return "Setup sent:\n" + self.board()

    def _turn_text(self) -> str:
        if self.over or not self.playing:
            return ""
        if self.my_turn:
            return self.board() + "Your move (x y x2 y2):\n"
        return f"Waiting for {self.who(self.turn)} to move.\n"

    # --- server messages -------------------------------------------------------------------
    def receive(self, message: object) -> str:
        if isinstance(message, MsgSeat):
            self.seat, self.seats = message.seat, message.seats
            self.names = [""] * message.seats
            return f"You are seat {message.seat} of {message.seats} (protocol {message.version}).\n"
        if isinstance(message, MsgPlayers):
            self.names = [p.name for p in message.seats]
            words = []
            for i, p in enumerate(message.seats):
                what = "open" if p.kind is SeatKind.OPEN else f"{p.name or '?'} ({p.kind.value})"
                words.append(f"seat {i}{' (you)' if i == self.seat else ''}: {what}")
            return "Players: " + "; ".join(words) + ".\n"
        if isinstance(message, ReqOptions):
            if self.map_options is None:
                self.send(HostOptions(b""))
                return "You are the host but have no map: declining.\n"
            self.send(HostOptions.of(self.map_options))
            return f"You are the host: sending {describe_options(self.map_options)}.\n"
        if isinstance(message, MsgOptions):
            self.options = message.options
            self.units = [U_EMPTY] * message.options.cells
            return f"Options: {describe_options(message.options)}.\n"
        if isinstance(message, ReqSetup):
            return self._setup_request()
        if isinstance(message, MsgStart):
            return self._start()
        if isinstance(message, MsgSync):
            return self._sync(message)
        if isinstance(message, MsgMoveError):
            text = f"{self.who(message.seat)}: move refused, {error_text(message.code)} ({message.code}).\n"
            if message.seat == self.seat:
                self.pending_move = False
                text += "Try another move.\n"
            return text
        if isinstance(message, MsgMove):
            mover = owner_of(self.units[message.source]) if self._on(message.source) else self.turn
            if self._on(message.source) and self._on(message.target):
                self.units[message.target], self.units[message.source] = self.units[message.source], U_EMPTY
            text = f"{self.who(mover)} moved {self._cell(message.source)} -> {self._cell(message.target)}.\n"
            self._next_turn()
            return text + self._turn_text()
        if isinstance(message, MsgAttack):
            return self._attack(message) + self._turn_text()
        if isinstance(message, MsgGameover):
            self.over = True
            self.playing = False
            self.winner = message.winner
            if message.winner < 0:
                result = "nobody won (draw)"
            elif message.winner == self.seat:
                result = "you won!"
            else:
                result = f"{self.who(message.winner)} won"
            return f"Game over: {result} (winner {message.winner}).\n"
        return f"Message {message!r}.\n"

    def _on(self, cell: int) -> bool:
        return 0 <= cell < len(self.units)

    def _cell(self, cell: int) -> str:
        return cell_name(self.options, cell)

    def _setup_request(self) -> str:
        if self.options is None:
            return "Setup requested before any options.\n"
        self.setup_wanted = True
        self.setup_text = ""
        zone = self.options.zone(self.seat)
        text = f"Setup requested: place your army on your zone ({len(zone)} cells).\n"
        if self.auto_setup == "random":
            return text + self._place(random_setup(self.options, self.seat, self.rng))
        if self.auto_setup == "default":
            placement = default_setup(self.options, self.seat)
            if placement is not None:
                return text + self._place(placement)
        army = " ".join(f"{TOKENS[c]}x{n}" for c, n in enumerate(self.options.army) if n)
        text += (
            f"Type {len(zone)} tokens for your zone cells in order (row by row; '.' empty), army {army};"
            " or RANDOM" + (" or DEFAULT" if default_setup(self.options, self.seat) else "") + ".\n"
        )
        return text + self.board()

    def _start(self) -> str:
        self.playing = True
        self.turn = 0
        self.pending_move = False
        if self.options is not None:
            for i, t in enumerate(self.options.types):
                owner = owner_of(t)
                if 0 <= owner < self.seats and owner != self.seat and self.units[i] == U_EMPTY:
                    self.units[i] = owner_nibble(owner) | U_UNKNOWN
        self.send(ReqSync())
        return f"START: the game begins; first move: {self.who(0)}.\n"

    def _sync(self, message: MsgSync) -> str:
        state = STATES.get(int(message.state), str(int(message.state)))
        if self.options is not None and len(message.units) == self.options.cells:
            self.units = list(message.units)
            self.turn = message.turn
            self.pending_move = False
        text = f"Sync: {state}, turn of {self.who(message.turn)}.\n"
        return text + (self._turn_text() if self.playing else self.board() if message.units else "")

    def _attack(self, m: MsgAttack) -> str:
        attacker = owner_of(self.units[m.source]) if self._on(m.source) else self.turn
        defender = owner_of(self.units[m.target]) if self._on(m.target) else -1
        a, d = unit_name(m.who_from), unit_name(m.who_to)
        text = (
            f"{self.who(attacker)} attacked with {a} from {self._cell(m.source)} "
            f"{'your' if defender == self.seat else self.who(defender) + chr(39) + 's' if defender >= 0 else 'a'} {d} on {self._cell(m.target)}: "
        )
        if m.who_from < 0 and m.who_to >= 0:
            text += "the attacker wins.\n"
            if self._on(m.source) and self._on(m.target):
                mover = self.units[m.source]
                if owner_of(mover) != self.seat:
                    mover = (mover & 0xF0) | (abs(m.who_from) & 0x0F)  # now known
                self.units[m.target], self.units[m.source] = mover, U_EMPTY
        elif m.who_from >= 0 and m.who_to < 0:
            text += "the defender wins.\n"
            if self._on(m.source) and self._on(m.target):
                if owner_of(self.units[m.target]) != self.seat:
                    self.units[m.target] = (self.units[m.target] & 0xF0) | (abs(m.who_to) & 0x0F)
                self.units[m.source] = U_EMPTY
        else:
            text += "both units are removed.\n"
            if self._on(m.source) and self._on(m.target):
                self.units[m.source] = self.units[m.target] = U_EMPTY
        self._next_turn()
        return text

    # --- typed lines -----------------------------------------------------------------------
    def command(self, line: str) -> str:
        """One typed line. Returns the text to show; 'quit' is handled by the caller."""
        text = line.strip()
        word = text.lower()
        if not text:
            return ""
        if word == "help":
            return HELP + "\n"
        if word == "sync":
            self.send(ReqSync())
            return ""
        if word == "board":
            return self.board()
        if self.setup_wanted and self.options is not None:
            if word == "random":
                return self._place(random_setup(self.options, self.seat, self.rng))
            if word == "default":
                placement = default_setup(self.options, self.seat)
                if placement is None:
                    return "DEFAULT is only for the Default army on a 10-wide map.\n"
                return self._place(placement)
            self.setup_text += text
            need = len(self.options.zone(self.seat))
            have = len([c for c in self.setup_text if not c.isspace()])
            if have < need:
                return f"{have}/{need} tokens.\n"
            result = typed_setup(self.setup_text, self.options, self.seat)
            if isinstance(result, str):
                self.setup_text = ""
                return f"Invalid setup: {result}. Type it again.\n"
            return self._place(result)
        if self.over:
            return "The game is over.\n"
        if not self.playing or self.options is None:
            return "The game has not started.\n"
        move = parse_move(text, self.options)
        if move is None:
            return f"Not a move: {text!r}. {HELP}\n"
        if not self.my_turn:
            return f"It is {self.who(self.turn)}'s turn.\n"
        self.send(ReqMove(*move))
        self.pending_move = True
        return f"Sending move {self._cell(move[0])} -> {self._cell(move[1])}.\n"


# --- Twisted wiring ------------------------------------------------------------------------------


def _protocol_class():
    from twisted.internet import defer, protocol

    class CombatProtocol(protocol.Protocol):
        def __init__(self, client: CombatClient, write):
            self.client = client
            self.write = write
            self.parser = wire.ClientParser()
            self.changed: list = []
            self.done = defer.Deferred()

        def flush(self) -> None:
            for message in self.client.take():
                self.transport.write(wire.encode_client(message))

        def dataReceived(self, data: bytes) -> None:  # noqa: N802
            try:
                messages = self.parser.feed(data)
            except wire.ProtocolError as e:
                messages = e.messages
                for m in messages:
                    self.write(self.client.receive(m))
                self.write(f"Protocol error from the server: {e}\n")
                self.transport.loseConnection()
                return
            for m in messages:
                self.write(self.client.receive(m))
            self.flush()
            self.wake()

        def wake(self) -> None:
            waiting, self.changed = self.changed, []
            for d in waiting:
                d.callback(None)

        def connectionLost(self, reason=protocol.connectionDone) -> None:  # noqa: N802
            self.wake()
            if not self.done.called:
                self.done.callback(None)

        def wait_change(self):
            d = defer.Deferred()
            self.changed.append(d)
            return d

    return CombatProtocol


async def run(reactor, args) -> int:
    from twisted.internet import defer, endpoints

    from gamed.stratego.console import ConsoleInput, stream_writer

    write = stream_writer(sys.stdout)
    maps = shipped_maps()
    if args.map not in maps:
        write(f"gamed-combat: unknown map {args.map!r}; maps: {', '.join(sorted(maps))}\n")
        return 2
    map_options = maps[args.map]
    if args.options is not None:
        try:
            map_options = attrs.evolve(map_options, options=int(args.options, 16))
        except ValueError as e:
            write(f"gamed-combat: bad --options {args.options!r}: {e}\n")
            return 2
    auto = "random" if args.random_setup else None
    client = CombatClient(map_options, auto, random.Random(args.seed))
    proto = _protocol_class()(client, write)
    endpoint = endpoints.TCP4ClientEndpoint(reactor, args.host, args.port, timeout=args.timeout)
    try:
        await endpoints.connectProtocol(endpoint, proto)
    except Exception as e:
        write(f"gamed-combat: cannot connect to {args.host}:{args.port}: {e}\n")
        return 1
    write(f"Connected to {args.host}:{args.port}. {HELP}\n")
    console = ConsoleInput(reactor)
    try:
        while not proto.done.called:
            line_d = console.read_line()
            line = await defer.DeferredList([line_d, proto.done], fireOnOneCallback=True).addCallback(
                lambda r: r[0] if isinstance(r, tuple) else None
            )
            if proto.done.called:
                break
            if line is None or line.strip().lower() == "quit":
                write("Leaving.\n")
                break
            if not console.interactive:
                write(f"> {line}\n")
            word = line.strip().lower()
            if word not in ("sync", "board", "help", "") and not client.ready:
                while not client.ready and not proto.done.called:
                    await proto.wait_change()
                if proto.done.called:
                    break
            write(client.command(line))
            proto.flush()
            if client.over:
                break
        if client.over and not proto.done.called:
            # Let the final sync arrive and be shown, briefly.
            d = defer.Deferred()
            reactor.callLater(0.3, d.callback, None)
            await d
    finally:
        console.close()
        if proto.transport is not None:
            proto.transport.loseConnection()
    if not client.over and proto.done.called:
        write("The server closed the connection.\n")
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gamed-combat", description="A terminal client for GGZ Combat on gamed.")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--map", default="Default", help="the map sent when this client is the host")
    parser.add_argument("--options", metavar="HEX", default=None, help="option mask (hex) replacing the map's")
    parser.add_argument("--random-setup", action="store_true", help="place the army at random")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random setup")
    parser.add_argument("--timeout", type=float, default=10, help="seconds to wait for the connection")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    from twisted.internet import task

    args = parse_args(argv)
    from twisted.internet import defer

    async def go(reactor) -> None:
        code = await run(reactor, args)
        if code:
            raise SystemExit(code)

    task.react(lambda reactor: defer.ensureDeferred(go(reactor)))


if __name__ == "__main__":
    main()
