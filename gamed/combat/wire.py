"""GGZ Combat's binary protocol (version 10) as a pure sans-I/O codec (spec ggz-combat §2–§8).

A Combat connection is a raw byte stream of messages: a 4-byte big-endian opcode, then the fields.
Ints are 32-bit signed big-endian; a string is an int size (content + 1), the content and a NUL
(GGZ "easysock", §2). The binary tables (options, setup, sync) travel as strings after adding 1 to
every byte (the "+1 encoding").

This module holds, with no I/O and no Twisted:

- the constants of §3 (opcodes, unit and terrain codes, states, errors, seat-type numbers);
- one attrs class per message of §5 — server→client (``MsgSeat`` … ``MsgSync``) and client→server
  (``ReqOptions``, ``HostOptions``, ``MsgSetup``, ``ReqMove``, ``ReqSync``);
- ``Parser`` (the server side: client→server bytes in, messages out) and ``encode`` (server→client
  messages to bytes); ``ClientParser`` and ``encode_client``, the mirror image for the terminal client
  and test bots;
- ``CombatOptions`` with the options string reader and canonical writer (§6), the options check
  (§10), the setup string (§7) and the sync string with its per-viewer unit views (§8).

Fatal input raises ``ProtocolError`` (the connection is closed, §15.3 rows 11–12); everything else a
client can send parses into a message, and deciding whether to ignore it is the table's job (§13).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping

import attrs

from gamed.stratego import rules
from gamed.stratego.rules import (
    EMPTY,
    MAX_COUNT,
    MAX_SEATS,
    MAX_SIDE,
    T_LAKE,
    T_NULL,
    T_OPEN,
    U_EMPTY,
    Board,
    CombatError,
    Layout,
    Opt,
    Unit,
    combat_options_check,
    combat_view,
)

# --- §2 and §3: encoding limits and constants ------------------------------------------------

PROTOCOL_VERSION = 10

MAX_STRING = 32768
"""The largest string ``size`` (content + NUL) read or written (§2, §15.4)."""

MIN_SEATS = 2
# MAX_SEATS (seat indices 0..14, the most an owner nibble can encode), MAX_SIDE and MAX_COUNT
# (largest width/height and army count, so no raw options byte is ever 0xFF, §15.3 row 13) come
# from the rules core (§15.4).

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

# T_OPEN/T_NULL/T_LAKE, U_UNKNOWN and U_EMPTY are the rules core's (§3), re-exported here.
TERRAINS = (T_OPEN, T_NULL, T_LAKE)
U_UNKNOWN = rules.U_UNKNOWN

O_NAME = 1
O_BIN1 = 2
O_BIN2 = 3


class Op(enum.IntEnum):
    """Opcodes (§3). Which direction each one may travel is in ``SERVER_OPS``/``CLIENT_OPS``."""

    MSG_SEAT = 0
    MSG_PLAYERS = 1
    REQ_OPTIONS = 2
    MSG_OPTIONS = 3
    REQ_SETUP = 4
    MSG_SETUP = 5
    MSG_START = 6
    REQ_MOVE = 7
    MSG_MOVE = 8
    MSG_ATTACK = 9
    MSG_GAMEOVER = 10
    REQ_SYNC = 11
    MSG_SYNC = 12


SERVER_OPS = frozenset(
    {
        Op.MSG_SEAT,
        Op.MSG_PLAYERS,
        Op.REQ_OPTIONS,
        Op.MSG_OPTIONS,
        Op.REQ_SETUP,
        Op.MSG_START,
        Op.MSG_MOVE,
        Op.MSG_ATTACK,
        Op.MSG_GAMEOVER,
        Op.MSG_SYNC,
    }
)
CLIENT_OPS = frozenset({Op.REQ_OPTIONS, Op.MSG_OPTIONS, Op.MSG_SETUP, Op.REQ_MOVE, Op.REQ_SYNC})


class State(enum.IntEnum):
    """Table states (§3). ``NULL`` exists only in clients; the sync string carries 0..4."""

    NULL = -1
    INIT = 0
    WAIT = 1
    SETUP = 2
    PLAYING = 3
    DONE = 4


# The move-check results and error codes (§3) are the rules core's; the wire names are aliases.
Check = rules.Check
CbtError = CombatError


def owner_nibble(seat: int) -> int:
    """``OWNER(s)``: the high nibble marking seat ``s`` in a cell's type or unit byte."""
    return (seat + 1) << 4


def owner_of(byte: int) -> int:
    """``GET_OWNER(b)``: the seat a cell byte belongs to, −1 for nobody (e.g. plain 0x0F)."""
    return (byte >> 4) - 1


def next_turn(turn: int, seats: int) -> int:
    """``NEXT(t, n)``: the seat to play after ``turn`` (every seat in order, §3)."""
    return 0 if turn >= seats - 1 else turn + 1


# --- seat types in CBT_MSG_PLAYERS (§5, §15.2) ----------------------------------------------


class SeatKind(enum.Enum):
    """What a seat holds, independent of how a numbering writes it."""

    NONE = "none"
    OPEN = "open"
    BOT = "bot"
    PLAYER = "player"
    RESERVED = "reserved"
    ABANDONED = "abandoned"


class Numbering(enum.Enum):
    """The seat-type numbering of CBT_MSG_PLAYERS: HEAD (the default) or the 2000 era's (§15.2)."""

    HEAD = "head"
    Y2000 = "2000"


SEAT_TYPES: dict[Numbering, dict[SeatKind, int]] = {
    Numbering.HEAD: {
        SeatKind.NONE: 0,
        SeatKind.OPEN: 1,
        SeatKind.BOT: 2,
        SeatKind.PLAYER: 3,
        SeatKind.RESERVED: 4,
        SeatKind.ABANDONED: 5,
    },
    Numbering.Y2000: {
        SeatKind.NONE: -4,
        SeatKind.OPEN: -1,
        SeatKind.BOT: -2,
        SeatKind.PLAYER: -5,
        SeatKind.RESERVED: -3,
    },
}
_SEAT_KINDS = {numbering: {v: k for k, v in table.items()} for numbering, table in SEAT_TYPES.items()}

NAME_LIMIT_2000 = 16
"""Names are cut to this many bytes under the 2000 numbering (§15.2)."""


# --- errors ---------------------------------------------------------------------------------


class ProtocolError(Exception):
    """Fatal input: the peer broke the framing, so the connection must be closed (§15.3).

    ``reason`` is the text to log and ``opcode`` the opcode being read (None if unknown yet).
    ``messages`` holds the complete messages that preceded the fatal bytes in the same ``feed``
    call, in order: handle them before closing, as if they had arrived in an earlier chunk.
    """

    def __init__(self, reason: str, opcode: int | None = None):
        super().__init__(reason, opcode)
        self.reason = reason
        self.opcode = opcode
        self.messages: list[object] = []

    def __str__(self) -> str:
        return self.reason

    def _again(self) -> ProtocolError:
        """The same error, raised again by a parser that has already failed (no messages)."""
        again = type(self).__new__(type(self))
        Exception.__init__(again, *self.args)
        again.__dict__.update(self.__dict__)
        again.messages = []
        return again


class UnknownOpcode(ProtocolError):
    """An opcode that may not travel in this direction (§13 "any other value", §15.3 row 11)."""

    def __init__(self, opcode: int):
        super().__init__(f"unknown opcode {opcode}", opcode)


class BadStringSize(ProtocolError):
    """A string size outside 0..32768 (§2, §15.3 row 12)."""

    def __init__(self, size: int, opcode: int | None = None):
        where = "" if opcode is None else f" in opcode {opcode}"
        super().__init__(f"string size {size} outside 0..{MAX_STRING}{where}", opcode)
        self.size = size


class BadMessage(ProtocolError):
    """A server→client message whose fields make no sense (raised by ``ClientParser`` only: the
    server's parser never judges field values, the table does)."""


class InvalidOptions(ValueError):
    """An options string that fails §6.3 steps 1–5; the table treats it as "invalid options"."""


class InvalidSetup(ValueError):
    """A setup string that fails §7 checks 2–4; the table answers CBT_REQ_SETUP."""


# --- §2: ints, strings, +1 ------------------------------------------------------------------


def encode_int(value: int) -> bytes:
    """A 32-bit signed big-endian int."""
    return value.to_bytes(4, "big", signed=True)


def decode_int(data: bytes) -> int:
    """The int in exactly 4 bytes."""
    if len(data) != 4:
        raise ValueError(f"an int is 4 bytes, not {len(data)}")
    return int.from_bytes(data, "big", signed=True)


def encode_string(content: bytes | str) -> bytes:
    """An easysock string: size (content + NUL), content, NUL. ``str`` is sent as UTF-8.

    Refuses content with a NUL (a reader would cut it there) or longer than 32767 bytes."""
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogateescape")
    if 0 in content:
        raise ValueError("a string cannot contain a NUL byte")
    if len(content) + 1 > MAX_STRING:
        raise ValueError(f"string of {len(content)} bytes is over the {MAX_STRING - 1}-byte limit")
    return encode_int(len(content) + 1) + content + b"\x00"


def decode_string(data: bytes, offset: int = 0) -> tuple[bytes, int] | None:
    """Read a string at ``offset`` with §2's rules: ``(content, offset after it)``, or None if
    ``data`` ends first. Size 0 is the empty string; the content stops at the first NUL; a missing
    final NUL is tolerated. A size over 32768 or below 0 raises ``BadStringSize``."""
    reader = _Reader(data, offset, None)
    try:
        content = reader.string()
    except _Incomplete:
        return None
    return content, reader.pos


_PLUS_ONE = bytes((b + 1) & 0xFF for b in range(256))
_MINUS_ONE = bytes((b - 1) & 0xFF for b in range(256))


def plus_one(raw: bytes) -> bytes:
    """The +1 encoding of a binary table. Refuses a raw 0xFF, which would encode as a NUL."""
    if 0xFF in raw:
        raise ValueError("a raw 0xFF byte cannot be +1 encoded (it would become a NUL)")
    return raw.translate(_PLUS_ONE)


def minus_one(content: bytes) -> bytes:
    """Decode +1-encoded string content: subtract 1 from every byte."""
    return content.translate(_MINUS_ONE)


def _name_bytes(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def _name_text(data: bytes) -> str:
    # surrogateescape: any byte string received comes back out unchanged.
    return data.decode("utf-8", "surrogateescape")


# --- §6: the options string -----------------------------------------------------------------


def _to_bytes(value: bytes | bytearray | memoryview | Iterable[int]) -> bytes:
    """Converter for byte fields; refuses an int (``bytes(5)`` would be five zeros)."""
    if isinstance(value, int):
        raise TypeError("expected bytes, not an int")
    return bytes(value)


def _option_mask(value: int) -> Opt:
    """Converter for option masks: a 16-bit int (``Opt(-1)`` would silently be every bit)."""
    if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
        raise ValueError(f"option mask {value!r} is not 0..0xFFFF")
    return Opt(value)


def _check_name(instance: object, attribute: attrs.Attribute, value: str) -> None:
    try:
        data = _name_bytes(value)
    except UnicodeEncodeError as e:
        raise ValueError(f"{attribute.name} cannot be encoded: {e}") from None
    if 0 in data or 0xFF in data:
        raise ValueError(f"{attribute.name} may contain neither a NUL nor a 0xFF byte")


def _check_types(instance: CombatOptions, attribute: attrs.Attribute, value: bytes) -> None:
    if len(value) != instance.width * instance.height:
        raise ValueError(f"types has {len(value)} cells, not {instance.width}x{instance.height}")
    for cell, byte in enumerate(value):
        if byte & 0x0F not in TERRAINS:
            raise ValueError(f"cell {cell}: terrain {byte & 0x0F} is not 0, 1 or 2")


def _check_army(instance: object, attribute: attrs.Attribute, value: tuple[int, ...]) -> None:
    if len(value) != len(Unit):
        raise ValueError(f"army has {len(value)} counts, not {len(Unit)}")
    if any(not isinstance(count, int) or not 0 <= count <= MAX_COUNT for count in value):
        raise ValueError(f"army counts must be 0..{MAX_COUNT}")


_side = [attrs.validators.instance_of(int), attrs.validators.ge(1), attrs.validators.le(MAX_SIDE)]


@attrs.frozen
class CombatOptions:
    """A parsed options string: the map, the army template, the option mask and the map name.

    ``types`` holds one byte per cell (index ``y*width + x``): the zone-owner nibble
    (``owner_nibble(seat)``, or 0) | the terrain (``T_OPEN``, ``T_NULL``, ``T_LAKE``). ``army`` is
    the per-seat count of each unit code 0..11. Every valid instance encodes without a raw 0xFF.
    """

    width: int = attrs.field(validator=_side)
    height: int = attrs.field(validator=_side)
    types: bytes = attrs.field(converter=_to_bytes, validator=_check_types)
    army: tuple[int, ...] = attrs.field(converter=tuple, validator=_check_army)
    options: Opt = attrs.field(default=Opt.NONE, converter=_option_mask)
    name: str = attrs.field(default="", validator=[attrs.validators.instance_of(str), _check_name])

    @property
    def cells(self) -> int:
        return self.width * self.height

    def terrain(self, cell: int) -> int:
        """``T_OPEN``, ``T_NULL`` or ``T_LAKE``."""
        return self.types[cell] & 0x0F

    def zone(self, seat: int) -> tuple[int, ...]:
        """The cells of ``seat``'s setup zone, in increasing index order (terrain not checked)."""
        nibble = owner_nibble(seat)
        return tuple(i for i, t in enumerate(self.types) if t & 0xF0 == nibble)

    @property
    def army_total(self) -> int:
        return sum(self.army)

    def check(self, seats: int) -> int:
        """The options check of §10 for a table of ``seats``: 0 if valid, else the first failing
        code (−12 no flag, −13 no movable unit, −14 a zone smaller than the army)."""
        return combat_options_check(self.layout(seats), self.army, seats)

    def layout(self, seats: int) -> Layout:
        """The map as the shared Stratego core's ``Layout`` for a table of ``seats``."""
        return Layout(
            width=self.width,
            height=self.height,
            lakes=frozenset(i for i in range(self.cells) if self.terrain(i) == T_LAKE),
            offmap=frozenset(i for i in range(self.cells) if self.terrain(i) == T_NULL),
            zones=tuple(frozenset(self.zone(seat)) for seat in range(seats)),
        )


def write_options(options: CombatOptions, hash_form: bool = False) -> bytes:
    """The raw options bytes (before +1, without the final NUL) in canonical form (§6.1–§6.2):
    packets O_NAME, O_BIN1, O_BIN2, each only when needed. ``hash_form`` leaves out O_NAME (§9)."""
    out = bytearray((options.width, options.height))
    out += options.types
    out += bytes(options.army)
    if options.name and not hash_form:
        out += bytes((O_NAME,)) + _name_bytes(options.name) + b"\x00\x00"
    mask = int(options.options)
    if mask & 0x00FF:
        out += bytes((O_BIN1, ~mask & 0xFF, 0))
    if mask & 0xFF00:
        out += bytes((O_BIN2, ~(mask >> 8) & 0xFF, 0))
    return bytes(out)


def _skip_packet(data: bytes, q: int, what: str) -> int:
    """The index after the next 0x00 at or after ``q`` (a packet's terminator)."""
    end = data.find(0, q)
    if end < 0:
        raise InvalidOptions(f"{what} packet cut off by the end of the string")
    return end + 1


def read_options(data: bytes) -> tuple[CombatOptions, int]:
    """Parse raw options bytes (already −1 decoded) with every rule of §6.3 steps 1–5.

    Returns the options and the number of unrecognised packets (to log). Raises
    ``InvalidOptions`` with the reason. The options check (§10) is ``CombatOptions.check``."""
    if len(data) < 2:
        raise InvalidOptions(f"{len(data)} bytes: no width and height")
    width, height = data[0], data[1]
    if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
        raise InvalidOptions(f"size {width}x{height} outside 1..{MAX_SIDE}")
    cells = width * height
    start = 2 + cells + len(Unit)
    if len(data) < start:
        raise InvalidOptions(f"{len(data)} bytes: a {width}x{height} map needs at least {start}")
    types = data[2 : 2 + cells]
    for cell, byte in enumerate(types):
        if byte & 0x0F not in TERRAINS:
            raise InvalidOptions(f"cell {cell}: terrain {byte & 0x0F} is not 0, 1 or 2")
    army = tuple(data[2 + cells : start])
    for code, count in enumerate(army):
        if count > MAX_COUNT:
            raise InvalidOptions(f"army count {count} of unit {code} over {MAX_COUNT}")
    name = b""
    low = high = 0
    unrecognised = 0
    q = start
    while q < len(data) and data[q] != 0:
        packet = data[q]
        q += 1
        if packet == O_NAME:
            end = data.find(0, q)
            if end < 0:
                raise InvalidOptions("name packet cut off by the end of the string")
            name = data[q:end]
            q = _skip_packet(data, end + 1, "name")
        elif packet in (O_BIN1, O_BIN2):
            if q >= len(data):
                raise InvalidOptions("option packet cut off by the end of the string")
            value = ~data[q] & 0xFF
            if packet == O_BIN1:
                low = value
            else:
                high = value
            q = _skip_packet(data, q + 1, "option")
        else:
            unrecognised += 1
            q = _skip_packet(data, q, f"unrecognised ({packet})")
    try:
        options = CombatOptions(width, height, types, army, Opt(high << 8 | low), _name_text(name))
    except ValueError as e:  # a name with 0xFF: impossible in a received string (it ends at a NUL)
        raise InvalidOptions(str(e)) from None
    return options, unrecognised


def options_content(options: CombatOptions) -> bytes:
    """The string content of a canonical options string (+1 encoded, without the NUL)."""
    return plus_one(write_options(options))


# --- §7: the setup string -------------------------------------------------------------------


def write_setup(options: CombatOptions, seat: int, placement: Mapping[int, int]) -> bytes:
    """Raw setup bytes for ``seat``: one per zone cell in index order, ``OWNER(seat)|code`` where
    ``placement`` (cell → unit code) puts a unit, plain ``U_EMPTY`` elsewhere."""
    zone = options.zone(seat)
    stray = set(placement) - set(zone)
    if stray:
        raise ValueError(f"cells {sorted(stray)} are not in seat {seat}'s zone")
    nibble = owner_nibble(seat)
    out = bytearray()
    for cell in zone:
        code = placement.get(cell)
        if code is None:
            out.append(U_EMPTY)
        elif 0 <= code <= Unit.MARSHAL:
            out.append(nibble | code)
        else:
            raise ValueError(f"cell {cell}: {code} is not a unit code 0..11")
    return bytes(out)


def read_setup(options: CombatOptions, seat: int, data: bytes) -> bytes:
    """Validate a seat's raw setup bytes with §7 checks 2–4 (check 1, "already sent", belongs to
    the table) and return the unit bytes to store on ``options.zone(seat)``, in that order, with
    ``OWNER(seat)|0x0F`` normalised to plain ``U_EMPTY``. Raises ``InvalidSetup``."""
    zone = options.zone(seat)
    if len(data) != len(zone):
        raise InvalidSetup(f"{len(data)} bytes for a zone of {len(zone)} cells")
    nibble = owner_nibble(seat)
    counts = [0] * len(Unit)
    out = bytearray()
    for cell, byte in zip(zone, data):
        if byte == U_EMPTY or byte == nibble | U_EMPTY:
            out.append(U_EMPTY)
            continue
        code = byte & 0x0F
        if byte & 0xF0 != nibble:
            raise InvalidSetup(f"cell {cell}: byte {byte:#04x} is not seat {seat}'s")
        if code > Unit.MARSHAL:
            raise InvalidSetup(f"cell {cell}: unit code {code} is not 0..11")
        counts[code] += 1
        out.append(byte)
    if tuple(counts) != options.army:
        raise InvalidSetup(f"unit counts {counts} differ from the army {list(options.army)}")
    return bytes(out)


# --- §8: the sync string --------------------------------------------------------------------


def sync_view(units: bytes, seat: int | None) -> bytes:
    """The unit bytes of a sync for a viewer (§8): ``seat``'s own view (own units exact, other
    seats' units as ``FIRST(unit)|U_UNKNOWN``, anything else ``U_EMPTY``), or for ``seat`` None
    the full view (every byte as it is)."""
    if seat is None:
        return bytes(units)
    # The per-viewer rule lives in the rules core: read the bytes back as a board and view it.
    board = Board(Layout(width=len(units), height=1, lakes=frozenset(), zones=()), seats=0)
    board.cells = [
        EMPTY if byte == U_EMPTY or byte & 0xF0 == 0 else owner_of(byte) << 4 | byte & 0x0F for byte in units
    ]
    return combat_view(board, seat)


# --- the messages of §5 ---------------------------------------------------------------------

_int32 = [attrs.validators.instance_of(int), attrs.validators.ge(INT_MIN), attrs.validators.le(INT_MAX)]


def _seat_count(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not MIN_SEATS <= value <= MAX_SEATS:
        raise ValueError(f"{attribute.name} must be {MIN_SEATS}..{MAX_SEATS}, not {value}")


@attrs.frozen
class MsgSeat:
    """CBT_MSG_SEAT (s→joiner): the joiner's seat, the number of seats and the protocol version."""

    seat: int = attrs.field(validator=_int32)
    seats: int = attrs.field(validator=_seat_count)
    version: int = attrs.field(default=PROTOCOL_VERSION, validator=_int32)

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.seat < self.seats:
            raise ValueError(f"seat {self.seat} is not one of 0..{self.seats - 1}")


@attrs.frozen
class PlayerSeat:
    """One seat in CBT_MSG_PLAYERS: what holds it, and the name (never sent for an open seat)."""

    kind: SeatKind = attrs.field(validator=attrs.validators.instance_of(SeatKind))
    name: str = attrs.field(default="", validator=[attrs.validators.instance_of(str), _check_name])

    def __attrs_post_init__(self) -> None:
        if self.kind is SeatKind.OPEN and self.name:
            raise ValueError("an open seat has no name")


def _players(instance: object, attribute: attrs.Attribute, value: tuple[PlayerSeat, ...]) -> None:
    _seat_count(instance, attribute, len(value))
    for seat in value:
        if not isinstance(seat, PlayerSeat):
            raise TypeError(f"{seat!r} is not a PlayerSeat")


@attrs.frozen
class MsgPlayers:
    """CBT_MSG_PLAYERS (s→all): every seat's type and name, written in ``numbering`` (§5, §15.2).
    Under ``Numbering.Y2000`` names are cut to 16 bytes on the wire."""

    seats: tuple[PlayerSeat, ...] = attrs.field(converter=tuple, validator=_players)
    numbering: Numbering = attrs.field(default=Numbering.HEAD, validator=attrs.validators.instance_of(Numbering))


@attrs.frozen
class ReqOptions:
    """CBT_REQ_OPTIONS, both directions, no payload. s→host: "choose the map and options";
    c→s: "send me the options" (answered with CBT_MSG_OPTIONS)."""


@attrs.frozen
class MsgOptions:
    """CBT_MSG_OPTIONS (s→all / s→joiner): the options, always written canonically (§6.2)."""

    options: CombatOptions = attrs.field(validator=attrs.validators.instance_of(CombatOptions))


@attrs.frozen
class ReqSetup:
    """CBT_REQ_SETUP (s→seat): "send your setup now"; also the answer to a rejected setup."""


@attrs.frozen
class MsgStart:
    """CBT_MSG_START (s→all): the game begins; seat 0 moves first."""


@attrs.frozen
class MsgMove:
    """CBT_MSG_MOVE, normal form (s→all): a plain move from cell ``source`` to cell ``target``."""

    source: int = attrs.field(validator=[*_int32, attrs.validators.ge(0)])
    target: int = attrs.field(validator=_int32)


@attrs.frozen
class MsgMoveError:
    """CBT_MSG_MOVE, error form (s→all): a rejected REQ_MOVE, the negative ``code`` and the
    ``seat`` that sent it. Clients tell it apart by the negative first field."""

    code: int = attrs.field(validator=[*_int32, attrs.validators.lt(0)])
    seat: int = attrs.field(validator=_int32)


@attrs.frozen
class MsgAttack:
    """CBT_MSG_ATTACK (s→each seat, per-recipient values, §11.4): the signed unit codes of the
    attacker (``who_from``) and defender (``who_to``); negative marks the winner, both negative
    both removed."""

    source: int = attrs.field(validator=_int32)
    who_from: int = attrs.field(validator=_int32)
    target: int = attrs.field(validator=_int32)
    who_to: int = attrs.field(validator=_int32)


@attrs.frozen
class MsgGameover:
    """CBT_MSG_GAMEOVER (s→all): the winning seat, −1 when nobody won (§11.5)."""

    winner: int = attrs.field(validator=[*_int32, attrs.validators.ge(-1)])


def _turn(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not 0 <= value < MAX_SEATS:
        raise ValueError(f"turn {value} is not a seat 0..{MAX_SEATS - 1}")


def _no_ff(instance: object, attribute: attrs.Attribute, value: bytes) -> None:
    if 0xFF in value:
        raise ValueError(f"{attribute.name} cannot hold a 0xFF byte (it would be sent as a NUL)")


@attrs.frozen
class MsgSync:
    """CBT_MSG_SYNC (s→seat): the turn, the table state and one unit byte per cell (§8), as
    computed for the recipient (``sync_view``). No cells before any options exist."""

    turn: int = attrs.field(validator=_turn)
    state: State = attrs.field(converter=State, validator=attrs.validators.ge(State.INIT))
    units: bytes = attrs.field(default=b"", converter=_to_bytes, validator=_no_ff)


@attrs.frozen
class HostOptions:
    """CBT_MSG_OPTIONS (c(host)→s): the raw options bytes as received (−1 decoded, not yet
    parsed). Empty means the host declines the role; otherwise ``read()`` parses them (§6.3)."""

    data: bytes = attrs.field(converter=_to_bytes, validator=_no_ff)

    @property
    def declines(self) -> bool:
        return not self.data

    def read(self) -> tuple[CombatOptions, int]:
        """``read_options(self.data)``: the options and the count of unrecognised packets."""
        return read_options(self.data)

    @classmethod
    def of(cls, options: CombatOptions) -> HostOptions:
        """The canonical options string a client sends for ``options``."""
        return cls(write_options(options))


@attrs.frozen
class MsgSetup:
    """CBT_MSG_SETUP (c→s): the raw setup bytes (−1 decoded), one per zone cell (§7); validate
    with ``read_setup``."""

    data: bytes = attrs.field(converter=_to_bytes, validator=_no_ff)


@attrs.frozen
class ReqMove:
    """CBT_REQ_MOVE (c→s): move the unit on cell ``source`` to cell ``target`` (any ints: the
    move checker answers −2 for cells off the board)."""

    source: int = attrs.field(validator=_int32)
    target: int = attrs.field(validator=_int32)


@attrs.frozen
class ReqSync:
    """CBT_REQ_SYNC (c→s): "send me my view" (answered with CBT_MSG_SYNC)."""


ServerMessage = (
    MsgSeat | MsgPlayers | ReqOptions | MsgOptions | ReqSetup | MsgStart | MsgMove | MsgMoveError | MsgAttack
    | MsgGameover | MsgSync
)
"""Any server→client message."""
ClientMessage = ReqOptions | HostOptions | MsgSetup | ReqMove | ReqSync
"""Any client→server message."""


# --- encoders -------------------------------------------------------------------------------


def _op(op: Op) -> bytes:
    return encode_int(op)


def _encode_players(message: MsgPlayers) -> bytes:
    numbers = SEAT_TYPES[message.numbering]
    out = [_op(Op.MSG_PLAYERS)]
    for seat in message.seats:
        number = numbers.get(seat.kind)
        if number is None:
            raise ValueError(f"{seat.kind.value} seats have no number in the {message.numbering.value} numbering")
        out.append(encode_int(number))
        if seat.kind is not SeatKind.OPEN:
            name = _name_bytes(seat.name)
            if message.numbering is Numbering.Y2000:
                name = name[:NAME_LIMIT_2000]
            out.append(encode_string(name))
    return b"".join(out)


def _sync_content(message: MsgSync) -> bytes:
    return plus_one(bytes((message.turn, message.state)) + message.units)


_SERVER_ENCODERS: dict[type, Callable[[object], bytes]] = {
    MsgSeat: lambda m: _op(Op.MSG_SEAT) + encode_int(m.seat) + encode_int(m.seats) + encode_int(m.version),
    MsgPlayers: _encode_players,
    ReqOptions: lambda m: _op(Op.REQ_OPTIONS),
    MsgOptions: lambda m: _op(Op.MSG_OPTIONS) + encode_string(options_content(m.options)),
    ReqSetup: lambda m: _op(Op.REQ_SETUP),
    MsgStart: lambda m: _op(Op.MSG_START),
    MsgMove: lambda m: _op(Op.MSG_MOVE) + encode_int(m.source) + encode_int(m.target),
    MsgMoveError: lambda m: _op(Op.MSG_MOVE) + encode_int(m.code) + encode_int(m.seat),
    MsgAttack: lambda m: (
        _op(Op.MSG_ATTACK) + encode_int(m.source) + encode_int(m.who_from) + encode_int(m.target) + encode_int(m.who_to)
    ),
    MsgGameover: lambda m: _op(Op.MSG_GAMEOVER) + encode_int(m.winner),
    MsgSync: lambda m: _op(Op.MSG_SYNC) + encode_string(_sync_content(m)),
}

_CLIENT_ENCODERS: dict[type, Callable[[object], bytes]] = {
    ReqOptions: lambda m: _op(Op.REQ_OPTIONS),
    HostOptions: lambda m: _op(Op.MSG_OPTIONS) + encode_string(plus_one(m.data)),
    MsgSetup: lambda m: _op(Op.MSG_SETUP) + encode_string(plus_one(m.data)),
    ReqMove: lambda m: _op(Op.REQ_MOVE) + encode_int(m.source) + encode_int(m.target),
    ReqSync: lambda m: _op(Op.REQ_SYNC),
}


def encode(message: ServerMessage) -> bytes:
    """The bytes of a server→client message. ``TypeError`` for a client→server message;
    ``ValueError`` for one the wire cannot carry (e.g. a string over the size limit)."""
    try:
        encoder = _SERVER_ENCODERS[type(message)]
    except KeyError:
        raise TypeError(f"{type(message).__name__} is not a server→client message") from None
    return encoder(message)


def encode_client(message: ClientMessage) -> bytes:
    """The bytes of a client→server message (for the terminal client and bots)."""
    try:
        encoder = _CLIENT_ENCODERS[type(message)]
    except KeyError:
        raise TypeError(f"{type(message).__name__} is not a client→server message") from None
    return encoder(message)


def encode_all(messages: Iterable[ServerMessage]) -> bytes:
    """Several server→client messages as one stream."""
    return b"".join(encode(m) for m in messages)


# --- incremental parsers --------------------------------------------------------------------


class _Incomplete(Exception):
    """The buffer ends inside a message; ``need`` = the buffer length that gets past this field."""

    def __init__(self, need: int):
        self.need = need


class _Reader:
    """Reads the fields of one message from a buffer, from ``pos`` on."""

    __slots__ = ("buf", "pos", "opcode")

    def __init__(self, buf: bytes | bytearray, pos: int, opcode: int | None):
        self.buf = buf
        self.pos = pos
        self.opcode = opcode

    def int(self) -> int:
        end = self.pos + 4
        if end > len(self.buf):
            raise _Incomplete(end)
        value = int.from_bytes(self.buf[self.pos : end], "big", signed=True)
        self.pos = end
        return value

    def string(self) -> bytes:
        size = self.int()
        if not 0 <= size <= MAX_STRING:
            raise BadStringSize(size, self.opcode)
        end = self.pos + size
        if end > len(self.buf):
            raise _Incomplete(end)
        raw = bytes(self.buf[self.pos : end])
        self.pos = end
        nul = raw.find(0)
        return raw if nul < 0 else raw[:nul]


class _StreamParser:
    """Shared machinery: buffer bytes, cut complete messages off the front, fail for good on
    fatal input. Unless a ``limit`` leaves complete messages in it, the buffer never holds more
    than one incomplete message (``max_message``)."""

    max_message: int

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._need = 0  # don't try again before the buffer has this many bytes
        self._failure: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held back: the start of a message not yet complete, and the messages a ``limit``
        left unparsed."""
        return len(self._buffer)

    @property
    def failed(self) -> ProtocolError | None:
        """The fatal error met so far, if any."""
        return self._failure

    def feed(self, data: bytes, limit: int | None = None) -> list:
        """Add bytes from the stream, in any chunking; return the messages they complete, in
        order: all of them, or at most ``limit`` (the rest stay buffered, unparsed, for the next
        call, which may add no bytes). Raises ``ProtocolError`` for fatal input (the messages
        before it are in its ``messages``); after that every call raises the same error again."""
        if self._failure is not None:
            raise self._failure._again()
        buf = self._buffer
        buf += data
        if len(buf) < self._need:
            return []
        messages: list = []
        pos = 0
        try:
            while pos < len(buf):
                if limit is not None and len(messages) >= limit:
                    self._need = 0
                    break
                opcode_end = pos + 4
                if opcode_end > len(buf):
                    self._need = 4
                    break
                opcode = int.from_bytes(buf[pos:opcode_end], "big", signed=True)
                reader = _Reader(buf, opcode_end, opcode)
                try:
                    message = self._parse(opcode, reader)
                except _Incomplete as incomplete:
                    self._need = incomplete.need - pos
                    break
                messages.append(message)
                pos = reader.pos
            else:
                self._need = 0
        except ProtocolError as error:
            self._failure = error
            self._buffer = bytearray()
            error.messages = messages
            raise
        del buf[:pos]  # cheap however often: CPython drops a bytearray's head without copying
        return messages

    def _parse(self, opcode: int, reader: _Reader) -> object:
        raise NotImplementedError


class Parser(_StreamParser):
    """The server's parser: client→server bytes in, ``ClientMessage`` objects out.

    Only opcodes 2, 3, 5, 7 and 11 may arrive; any other value raises ``UnknownOpcode`` as soon as
    its 4 bytes are in, and a string size outside 0..32768 raises ``BadStringSize`` as soon as the
    size is in (§13, §15.3). Field values are never judged here: a malformed options or setup
    string still parses (as ``HostOptions``/``MsgSetup``) and the table rejects it. At most
    ``max_message`` bytes are ever buffered, besides the messages a ``limit`` left unparsed.
    """

    max_message = 4 + 4 + MAX_STRING

    def _parse(self, opcode: int, reader: _Reader) -> ClientMessage:
        if opcode == Op.REQ_MOVE:
            return ReqMove(reader.int(), reader.int())
        if opcode == Op.REQ_SYNC:
            return ReqSync()
        if opcode == Op.REQ_OPTIONS:
            return ReqOptions()
        if opcode == Op.MSG_OPTIONS:
            return HostOptions(minus_one(reader.string()))
        if opcode == Op.MSG_SETUP:
            return MsgSetup(minus_one(reader.string()))
        raise UnknownOpcode(opcode)


class ClientParser(_StreamParser):
    """A client's parser: server→client bytes in, ``ServerMessage`` objects out.

    CBT_MSG_PLAYERS has one entry per seat, so the parser learns the seat count from
    CBT_MSG_SEAT (or from ``seats``) and reads the seat types in ``numbering``. Anything a
    well-behaved gamed cannot send raises ``ProtocolError``: unknown opcodes, bad string sizes,
    PLAYERS before SEAT, unknown seat types, options that fail §6.3, a sync shorter than 2 bytes.
    """

    max_message = 4 + MAX_SEATS * (4 + 4 + MAX_STRING)

    def __init__(self, numbering: Numbering = Numbering.HEAD, seats: int | None = None):
        super().__init__()
        self.numbering = numbering
        self.seats = seats

    def _parse(self, opcode: int, reader: _Reader) -> ServerMessage:
        try:
            return self._message(opcode, reader)
        except (ValueError, TypeError) as e:
            raise BadMessage(f"opcode {opcode}: {e}", opcode) from None

    def _message(self, opcode: int, reader: _Reader) -> ServerMessage:
        if opcode == Op.MSG_MOVE:
            first, second = reader.int(), reader.int()
            return MsgMoveError(first, second) if first < 0 else MsgMove(first, second)
        if opcode == Op.MSG_ATTACK:
            return MsgAttack(reader.int(), reader.int(), reader.int(), reader.int())
        if opcode == Op.MSG_SYNC:
            data = minus_one(reader.string())
            if len(data) < 2:
                raise ValueError(f"a sync string needs turn and state, got {len(data)} bytes")
            return MsgSync(data[0], data[1], data[2:])
        if opcode == Op.MSG_GAMEOVER:
            return MsgGameover(reader.int())
        if opcode == Op.MSG_START:
            return MsgStart()
        if opcode == Op.REQ_SETUP:
            return ReqSetup()
        if opcode == Op.REQ_OPTIONS:
            return ReqOptions()
        if opcode == Op.MSG_OPTIONS:
            options, _ = read_options(minus_one(reader.string()))
            return MsgOptions(options)
        if opcode == Op.MSG_SEAT:
            seat = MsgSeat(reader.int(), reader.int(), reader.int())
            self.seats = seat.seats
            return seat
        if opcode == Op.MSG_PLAYERS:
            return self._players(reader)
        raise UnknownOpcode(opcode)

    def _players(self, reader: _Reader) -> MsgPlayers:
        if self.seats is None:
            raise ValueError("CBT_MSG_PLAYERS before CBT_MSG_SEAT: the number of seats is unknown")
        kinds = _SEAT_KINDS[self.numbering]
        seats = []
        for _ in range(self.seats):
            number = reader.int()
            kind = kinds.get(number)
            if kind is None:
                raise ValueError(f"seat type {number} is unknown in the {self.numbering.value} numbering")
            name = "" if kind is SeatKind.OPEN else _name_text(reader.string())
            seats.append(PlayerSeat(kind, name))
        return MsgPlayers(tuple(seats), self.numbering)
