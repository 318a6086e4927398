"""The one Stratego rules core: boards, armies, moves, combat, values and per-seat views.

Shared by the UCC 2012 referee (``gamed.stratego.referee``) and GGZ Combat. Units use Combat's
codes (0 flag, 1 bomb, 2 spy, 3 scout … 11 marshal; a higher code is stronger), so the UCC tokens
``F B s 9 8 … 1`` are a view of the same data. A board is parameterised by its ``Layout`` (size,
lakes, off-map cells, setup zones), an army template and Combat's option flags; the UCC rules are
the Default layout with ``Opt.SUPER_SCOUT`` and nothing else. Pure: no I/O, no clock; randomness
(``Opt.RANDOM_OUTCOME``) comes from an injected ``random.Random``.

The UCC move check (``ucc_check``) comes first; GGZ Combat's part follows it: maps of any size with
up to 15 seats (``Layout.from_types``), the move checker with Combat's codes (``combat_check``),
rush, board and count updates, per-recipient ATTACK values, the game-over test, the options
check, random placement, per-seat views and ``CombatGame``, which plays move requests.

The value classes (``Layout``, ``MoveResult``) are named tuples rather than attrs classes: this
module is on the start-up path of ``gamed-stratego``, which the competition's tournament script
starts once per game, and importing attrs would be a quarter of that start-up (docs/performance.md).
"""

from __future__ import annotations

import collections
import enum
import random


class Unit(enum.IntEnum):
    """Combat's unit codes. Strength grows with the code; a spy defends as the weakest piece."""

    FLAG = 0
    BOMB = 1
    SPY = 2
    SCOUT = 3
    MINER = 4
    SERGEANT = 5
    LIEUTENANT = 6
    CAPTAIN = 7
    MAJOR = 8
    COLONEL = 9
    GENERAL = 10
    MARSHAL = 11

    @property
    def token(self) -> str:
        """The UCC token: ``F B s 9 8 7 6 5 4 3 2 1``."""
        return TOKENS[self]

    @property
    def mobile(self) -> bool:
        return self >= Unit.SPY

    @property
    def value(self) -> int:  # type: ignore[override]
        """The UCC value of the piece (its strength; 0 for bombs and flags)."""
        return self - 1 if self >= Unit.SPY else 0


TOKENS = "FBs987654321"  # indexed by unit code
UNIT_OF_TOKEN = {token: Unit(code) for code, token in enumerate(TOKENS)}
UNITS = tuple(Unit)
MOBILE = tuple(u for u in Unit if u.mobile)


class Opt(enum.IntFlag):
    """GGZ Combat's option bits (spec ggz-combat §3)."""

    NONE = 0
    OPEN_MAP = 0x0001
    ONE_TIME_BOMB = 0x0002
    TERRORIST_SPY = 0x0004
    MOVING_BOMB = 0x0008
    SUPER_SCOUT = 0x0010
    MOVING_FLAG = 0x0020
    RANDOM_OUTCOME = 0x0040
    ALLOW_DIAGONAL = 0x0080
    UNKNOWN_VICTOR = 0x0100
    SILENT_DEFENSE = 0x0200
    SILENT_OFFENSE = 0x0400
    RANDOM_SETUP = 0x0800
    SF_SERGEANT = 0x1000
    RUSH_ATTACK = 0x2000
    HIDE_UNIT_LIST = 0x4000
    SHOW_ENEMY_UNITS = 0x8000


class Layout(collections.namedtuple("Layout", "width height lakes zones offmap", defaults=(frozenset(),))):
    """A map: size, lake and off-map cells (indices y*width + x), and each seat's setup zone.

    Fields: ``width``, ``height`` (int), ``lakes`` (frozenset of cells), ``zones`` (a tuple of
    frozensets, one per seat), ``offmap`` (frozenset, default empty). Immutable; ``_replace``
    makes a changed copy."""

    __slots__ = ()

    def index(self, x: int, y: int) -> int:
        return y * self.width + x

    def xy(self, cell: int) -> tuple[int, int]:
        return cell % self.width, cell // self.width

    def open(self, cell: int) -> bool:
        """True for a cell a piece may stand on (not a lake, not off the map)."""
        return cell not in self.lakes and cell not in self.offmap

    # Combat maps (ggz-combat §4, §6.3, §9). The terrain and zone constants are defined below.

    @classmethod
    def from_types(cls, width: int, height: int, types: bytes) -> Layout:
        """A Combat map from its type bytes (``zone-owner nibble | terrain``, ggz-combat §4, §6.3):
        owner nibble k > 0 puts the cell in seat k-1's zone whatever its terrain; 0 is no zone.
        Raises ValueError for a size outside 1..127, a wrong byte count or a terrain above 2."""
        if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
            raise ValueError(f"map size {width}x{height} is outside 1..{MAX_SIDE}")
        types = bytes(types)
        if len(types) != width * height:
            raise ValueError(f"{len(types)} type bytes for a {width}x{height} map")
        lakes, offmap = set(), set()
        zones: list[set[int]] = []
        for cell, t in enumerate(types):
            terrain, owner = t & 0x0F, t >> 4
            if terrain == T_LAKE:
                lakes.add(cell)
            elif terrain == T_NULL:
                offmap.add(cell)
            elif terrain != T_OPEN:
                raise ValueError(f"cell {cell}: terrain {terrain} is not 0, 1 or 2")
            if owner:
                while len(zones) < owner:
                    zones.append(set())
                zones[owner - 1].add(cell)
        return cls(width, height, frozenset(lakes), tuple(frozenset(z) for z in zones), frozenset(offmap))

    @classmethod
    def from_letters(cls, width: int, height: int, data: str) -> Layout:
        """A Combat map from a map file's ``data`` letters (ggz-combat §9): ``O`` open, ``L`` lake,
        ``N`` off-map, ``1``/``2`` an open cell in seat 0's/1's zone; any other letter loads as
        open, as in the client's loader."""
        if len(data) != width * height:
            raise ValueError(f"{len(data)} letters for a {width}x{height} map")
        zone = {"1": 0x10, "2": 0x20}
        return cls.from_types(width, height, bytes(zone.get(c, _TERRAIN_OF_LETTER.get(c, T_OPEN)) for c in data))

    def terrain(self, cell: int) -> int:
        """Combat's terrain of ``cell``: T_OPEN, T_NULL (off the map) or T_LAKE."""
        if cell in self.offmap:
            return T_NULL
        if cell in self.lakes:
            return T_LAKE
        return T_OPEN

    def zone(self, seat: int) -> frozenset[int]:
        """The cells of ``seat``'s setup zone (empty for a seat the map has no zone for)."""
        return self.zones[seat] if 0 <= seat < len(self.zones) else frozenset()

    def zone_owner(self, cell: int) -> int:
        """The seat whose zone holds ``cell``, or -1."""
        for seat, zone in enumerate(self.zones):
            if cell in zone:
                return seat
        return -1

    def types(self) -> bytes:
        """The map's type bytes (ggz-combat §4): ``OWNER(zone seat) | terrain`` per cell, as the
        options string carries them."""
        return bytes(
            ((owner + 1) << 4 if (owner := self.zone_owner(cell)) >= 0 else 0) | self.terrain(cell)
            for cell in range(self.width * self.height)
        )


def _rows(width: int, first: int, last: int) -> frozenset[int]:
    return frozenset(range(first * width, (last + 1) * width))


# The UCC board = Combat's Default map: 10x10, lakes at x 2,3,6,7 on rows 4 and 5.
DEFAULT_LAYOUT = Layout(
    width=10,
    height=10,
    lakes=frozenset({42, 43, 46, 47, 52, 53, 56, 57}),
    zones=(_rows(10, 0, 3), _rows(10, 6, 9)),
)

# Pieces per side by unit code: F1 B6 s1 9x8 8x5 7x4 6x4 5x4 4x3 3x2 2x1 1x1 (40, worth 148).
DEFAULT_ARMY = (1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1)

UCC_OPTIONS = Opt.SUPER_SCOUT

EMPTY = -1


def cell_value(owner: int, unit: Unit) -> int:
    """A board cell holding ``owner``'s ``unit`` (Combat's OWNER|code layout)."""
    return owner << 4 | unit


def owner_of(cell: int) -> int:
    return cell >> 4


def unit_of(cell: int) -> Unit:
    return UNITS[cell & 0x0F]


class Board:
    """The pieces on a layout. ``cells[i]`` is ``EMPTY`` or ``cell_value(owner, unit)``."""

    def __init__(self, layout: Layout = DEFAULT_LAYOUT, seats: int = 2):
        self.layout = layout
        self.seats = seats
        self.cells = [EMPTY] * (layout.width * layout.height)
        self._blocked = tuple(sorted(layout.lakes | layout.offmap))

    def copy(self) -> Board:
        other = Board(self.layout, self.seats)
        other.cells = list(self.cells)
        return other

    def place(self, cell: int, owner: int, unit: Unit) -> None:
        self.cells[cell] = cell_value(owner, unit)

    def at(self, x: int, y: int) -> int:
        return self.cells[y * self.layout.width + x]

    def pieces(self, owner: int) -> list[Unit]:
        return [unit_of(c) for c in self.cells if c != EMPTY and owner_of(c) == owner]

    def mobile_count(self, owner: int) -> int:
        # One pass in C over the cells (the UCC referee asks twice per half-move).
        return sum(map(_mobile_cells(owner).__contains__, self.cells))

    def value(self, owner: int) -> int:
        """The UCC value of ``owner``'s pieces on the board."""
        return sum(unit_of(c).value for c in self.cells if c != EMPTY and c >> 4 == owner)

    def view(self, seat: int | None, own_only: bool = True) -> list[str]:
        """Rows of tokens as ``seat`` sees them: its own pieces by token, other seats' pieces as
        ``#``, lakes ``+``, empty ``.``. ``seat`` None (a spectator after the game) sees all."""
        cells = self.cells
        chars = list(map(_view_table(seat).__getitem__, cells))  # EMPTY (-1) reads the last entry
        for i in self._blocked:
            if cells[i] == EMPTY:
                chars[i] = "+"
        text = "".join(chars)
        width = self.layout.width
        return [text[i : i + width] for i in range(0, len(text), width)]


_MOBILE_CELLS: dict[int, frozenset[int]] = {}
_VIEW_TABLES: dict[int | None, list[str]] = {}


def _mobile_cells(owner: int) -> frozenset[int]:
    """The cell values of ``owner``'s mobile pieces."""
    cells = _MOBILE_CELLS.get(owner)
    if cells is None:
        cells = _MOBILE_CELLS[owner] = frozenset(cell_value(owner, u) for u in MOBILE)
    return cells


def _view_table(seat: int | None) -> list[str]:
    """The character of each cell value (0..255) in ``seat``'s view; the last entry, 255, is no
    piece (owners stop at 14), so ``table[EMPTY]`` is ``.``."""
    table = _VIEW_TABLES.get(seat)
    if table is None:
        table = ["#"] * 256
        for owner in range(16):
            if seat is None or owner == seat:
                for unit, token in enumerate(TOKENS):
                    table[owner << 4 | unit] = token
        table[EMPTY] = "."
        _VIEW_TABLES[seat] = table
    return table


# --- combat ---------------------------------------------------------------------------------

# Random outcome odds by strength difference d (Combat §11.3): r <= p stronger wins, p < r <= q both.
_ODDS = ((30, 70), (35, 74), (41, 78), (49, 82), (56, 85), (64, 88), (71, 91), (77, 92), (84, 95))


def attack(a: Unit, d: Unit, options: Opt = UCC_OPTIONS, rng: random.Random | None = None) -> tuple[int, int]:
    """Combat's signed result pair (fA, fD) for unit ``a`` attacking unit ``d`` (Combat §11.3):
    a negative value marks that side the winner; both negative = both removed."""
    if d == Unit.FLAG:
        return -a, 0
    if d == Unit.BOMB:
        if a == Unit.MINER:
            return -a, +1
        if options & Opt.ONE_TIME_BOMB:
            return -a, -1
        return +a, -1
    if d == Unit.MARSHAL:
        if options & Opt.RANDOM_OUTCOME and a != Unit.SPY:
            return _random(a, d, 11 - a, marshal_wins=True, rng=rng)
        if a == Unit.SPY:
            return (-2, -11) if options & Opt.TERRORIST_SPY else (-2, +11)
        if a == Unit.MARSHAL:
            return -11, -11
        return +a, -11
    if options & Opt.TERRORIST_SPY and a == Unit.SPY:
        return -2, -d
    if options & Opt.RANDOM_OUTCOME and a != Unit.SPY and d != Unit.SPY:
        return _random(a, d, abs(a - d), marshal_wins=False, rng=rng)
    if a > d:
        return -a, +d
    if a < d:
        return +a, -d
    return -a, -d


def _random(a: Unit, d: Unit, diff: int, marshal_wins: bool, rng: random.Random | None) -> tuple[int, int]:
    if rng is None:
        raise ValueError("RANDOM_OUTCOME needs a random.Random")
    p, q = _ODDS[min(diff, len(_ODDS) - 1)]
    r = rng.randint(1, 100)
    attacker_stronger = not marshal_wins and a >= d
    if r <= p:
        attacker_wins = attacker_stronger
    elif r <= q:
        return -a, -d
    else:
        attacker_wins = not attacker_stronger
    return (-a, +d) if attacker_wins else (+a, -d)


class Fight(enum.Enum):
    """What an attack did to the board."""

    FLAG = "flag"  # the flag was captured: the game is over
    ATTACKER_WINS = "kills"
    DEFENDER_WINS = "dies"
    BOTH_DIE = "bothdie"


def fight_of(pair: tuple[int, int]) -> Fight:
    fa, fd = pair
    if fd == 0 and fa < 0:
        return Fight.FLAG
    if fa < 0 and fd < 0:
        return Fight.BOTH_DIE
    if fa < 0:
        return Fight.ATTACKER_WINS
    return Fight.DEFENDER_WINS


def apply_fight(board: Board, source: int, target: int, fight: Fight, capture_flag: bool = True) -> None:
    """Update the board after an attack from ``source`` on ``target``. A captured flag is replaced
    by the attacker when ``capture_flag`` (Combat); the UCC manager leaves the board unchanged."""
    cells = board.cells
    if fight is Fight.ATTACKER_WINS or (fight is Fight.FLAG and capture_flag):
        cells[target] = cells[source]
        cells[source] = EMPTY
    elif fight is Fight.DEFENDER_WINS:
        cells[source] = EMPTY
    elif fight is Fight.BOTH_DIE:
        cells[source] = cells[target] = EMPTY


# --- the UCC move check (ucc-stratego §4) ---------------------------------------------------

DIRECTIONS = {"UP": (0, -1), "DOWN": (0, 1), "LEFT": (-1, 0), "RIGHT": (1, 0)}

OUTSIDE = "Coords outside board"
NO_PIECE = "Move does not select a piece"
NOT_YOURS = "Selected piece belongs to other player"
NOT_MOBILE = "Selected piece is not mobile (FLAG or BOMB)"
CANNOT_MOVE = "Selected unit cannot move that way"
BLOCKED = "Attempted move into square occupied by neutral or allied piece"


def ucc_check(board: Board, seat: int, x: int, y: int, direction: str, mult: int) -> tuple[int, int] | str:
    """Check a UCC move in the spec's order; ``(source, target)`` cells, or the illegal reason."""
    layout = board.layout
    width, height = layout.width, layout.height
    if not (0 <= x < width and 0 <= y < height):
        return OUTSIDE
    source = y * width + x
    cell = board.cells[source]
    if cell == EMPTY:
        return NOT_YOURS if source in layout.lakes or source in layout.offmap else NO_PIECE
    if cell >> 4 != seat:
        return NOT_YOURS
    unit = cell & 0x0F
    if unit < Unit.SPY:
        return NOT_MOBILE
    if mult < 1 or (mult > 1 and unit != Unit.SCOUT):
        return CANNOT_MOVE
    dx, dy = DIRECTIONS[direction]
    cx, cy = x, y
    cells, lakes, offmap = board.cells, layout.lakes, layout.offmap
    step = 0
    while True:
        cx += dx
        cy += dy
        step += 1
        if not (0 <= cx < width and 0 <= cy < height):
            return CANNOT_MOVE
        here = cy * width + cx
        if step == mult:
            break
        if cells[here] != EMPTY or here in lakes or here in offmap:
            return BLOCKED
    target = cy * width + cx
    occupant = cells[target]
    if target in lakes or target in offmap or (occupant != EMPTY and occupant >> 4 == seat):
        return BLOCKED
    return source, target


# --- GGZ Combat (ggz-combat §3, §4, §7, §8, §10, §11) ----------------------------------------
#
# Combat's rules on the same Board: cells hold ``cell_value(seat, unit)`` or ``EMPTY`` as for UCC;
# the wire's owner nibble ``(seat+1)<<4`` and U_EMPTY 0x0F appear only in the byte views below.

T_OPEN, T_NULL, T_LAKE = 0, 1, 2  # terrain nibble of a cell's type byte (§3)
U_UNKNOWN = 12  # a unit whose type the viewer may not see
U_EMPTY = 0x0F  # an empty cell in Combat's unit bytes
MAX_SEATS = 15  # owner nibbles 1..15: seats 0..14 (§3, §15.4)
MAX_SIDE = 127  # width and height 1..127 (§15.4)
MAX_COUNT = 127  # army count per unit type 0..127 (§15.4)


class Check(enum.IntEnum):
    """Combat's move-check results (§3): the request is legal."""

    MOVE = 1
    ATTACK = 2
    ATTACK_RUSH = 3


class CombatError(enum.IntEnum):
    """Combat's error codes (§3): negative move-check results and options-check results."""

    SOCKET = -1  # gamed never sends it
    OUTRANGE = -2
    WRONGTURN = -3
    SUICIDAL = -4
    NOTOPEN = -5
    CRAZY = -6
    NOTMOVING = -7
    MOVE_NOMOVE = -8  # unreachable (§11.1 step 6)
    MOVE_DIAGONAL = -9
    MOVE_BIGMOVE = -10
    MOVE_SCOUT = -11
    OPTIONS_FLAGS = -12
    OPTIONS_MOVING = -13
    OPTIONS_SIZE = -14


_TERRAIN_OF_LETTER = {"L": T_LAKE, "N": T_NULL}

# The maps whose data strings the spec gives in full (§9).
SMALL_LAYOUT = Layout.from_letters(5, 5, "11O22" "1OOO2" "OONOO" "2OOO1" "22O11")
SMALL_ARMY = (2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3)


def combat_options_check(layout: Layout, army, seats: int) -> int:
    """Combat's options check (§10) for ``seats`` seats: 0 when valid, else the first failure:
    -12 no flag, -13 no movable unit, -14 a seat's zone smaller than the army."""
    if army[Unit.FLAG] <= 0:
        return CombatError.OPTIONS_FLAGS
    if not any(army[u] > 0 for u in MOBILE):
        return CombatError.OPTIONS_MOVING
    total = sum(army)
    for seat in range(seats):
        if len(layout.zone(seat)) < total:
            return CombatError.OPTIONS_SIZE
    return 0


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


def combat_check(board: Board, turn: int, source: int, target: int, options: Opt = Opt.NONE) -> int:
    """Combat's move checker (§11.1) for the seat ``turn`` moving ``source`` → ``target`` (cell
    indices): ``Check.MOVE``/``ATTACK``/``ATTACK_RUSH`` (1, 2, 3), or the first failing check's
    negative ``CombatError`` in the spec's order, including gamed's step 8a."""
    layout = board.layout
    width = layout.width
    size = width * layout.height
    if not (0 <= source < size and 0 <= target < size):
        return CombatError.OUTRANGE
    cells = board.cells
    f, t = cells[source], cells[target]
    if f == EMPTY or f >> 4 != turn:
        return CombatError.WRONGTURN
    if t != EMPTY and t >> 4 == turn:
        return CombatError.SUICIDAL
    unit = f & 0x0F
    if unit == Unit.FLAG and not (options & Opt.MOVING_FLAG and t == EMPTY):
        return CombatError.NOTMOVING
    if unit == Unit.BOMB and not (options & Opt.MOVING_BOMB and t == EMPTY):
        return CombatError.NOTMOVING
    if layout.terrain(target) != T_OPEN:
        return CombatError.NOTOPEN
    if source == target:
        return CombatError.MOVE_NOMOVE
    dx = target % width - source % width
    dy = target // width - source // width
    if dx and dy and not options & Opt.ALLOW_DIAGONAL:
        return CombatError.MOVE_DIAGONAL
    scout = unit == Unit.SCOUT
    sergeant = unit == Unit.SERGEANT and bool(options & Opt.SF_SERGEANT)
    rush = bool(options & Opt.RUSH_ATTACK)
    long = abs(dx) > 1 or abs(dy) > 1
    if long and not (scout or sergeant or rush):
        return CombatError.MOVE_BIGMOVE
    if (scout or sergeant or rush) and dx and dy and abs(dx) != abs(dy):
        return CombatError.MOVE_DIAGONAL  # 8a: neither straight nor an exact diagonal
    step = _sign(dx) + _sign(dy) * width
    between = range(source + step, target, step)
    rushing = False
    if scout:
        for cell in between:
            if cells[cell] != EMPTY or layout.terrain(cell) != T_OPEN:
                return CombatError.MOVE_SCOUT
        if long and t != EMPTY and not options & (Opt.SUPER_SCOUT | Opt.RUSH_ATTACK):
            return CombatError.MOVE_SCOUT
        rushing = long and rush and not options & Opt.SUPER_SCOUT
    elif sergeant:
        for cell in between:
            if cells[cell] != EMPTY or layout.terrain(cell) != T_LAKE:
                return CombatError.NOTOPEN
    elif rush:
        for cell in between:
            if cells[cell] != EMPTY or layout.terrain(cell) != T_OPEN:
                return CombatError.NOTOPEN
        if long and t == EMPTY:
            return CombatError.MOVE_SCOUT
        rushing = True
    if t == EMPTY:
        return Check.MOVE
    return Check.ATTACK_RUSH if rushing else Check.ATTACK


def combat_attack(
    a: Unit, d: Unit, options: Opt, rush: bool = False, rng: random.Random | None = None
) -> tuple[int, int]:
    """Combat's attack resolution (§11.3): ``attack()``'s pair, then for a rush (check result 3)
    ``fD = -|fD|``: the rusher never survives a fight, but a captured flag (fD 0) stays 0."""
    fa, fd = attack(a, d, options, rng)
    return (fa, -abs(fd)) if rush else (fa, fd)


def apply_combat_attack(board: Board, remaining, source: int, target: int, pair: tuple[int, int]) -> None:
    """Update the board and the per-seat ``remaining[seat][code]`` counts after an attack from
    ``source`` on ``target`` resolved to ``pair`` (§11.3 "Board and counts"). A captured flag is
    taken like any other unit: the attacker stands on its cell."""
    cells = board.cells
    attacker, defender = cells[source], cells[target]
    fa, fd = pair
    if fa < 0 and fd >= 0:
        remaining[defender >> 4][defender & 0x0F] -= 1
    elif fa >= 0 and fd < 0:
        remaining[attacker >> 4][attacker & 0x0F] -= 1
    elif fa < 0 and fd < 0:
        remaining[defender >> 4][defender & 0x0F] -= 1
        remaining[attacker >> 4][attacker & 0x0F] -= 1
    apply_fight(board, source, target, fight_of(pair), capture_flag=True)


def attack_values(
    pair: tuple[int, int], attacker: int, defender: int, recipient: int, options: Opt
) -> tuple[int, int]:
    """``(WHO_from, WHO_to)`` of CBT_MSG_ATTACK for ``recipient`` (§11.4): the pair, with a side
    the recipient is not masked to ±12 under SILENT_OFFENSE/SILENT_DEFENSE, or under
    UNKNOWN_VICTOR when that side won. The sign is kept (a hidden flag, 0, goes out as +12);
    OPEN_MAP unmasks nothing."""
    fa, fd = pair
    who_from, who_to = fa, fd
    if recipient != attacker and (options & Opt.SILENT_OFFENSE or (options & Opt.UNKNOWN_VICTOR and fa < 0)):
        who_from = U_UNKNOWN if fa >= 0 else -U_UNKNOWN
    if recipient != defender and (options & Opt.SILENT_DEFENSE or (options & Opt.UNKNOWN_VICTOR and fd < 0)):
        who_to = U_UNKNOWN if fd >= 0 else -U_UNKNOWN
    return who_from, who_to


def seat_alive(counts) -> bool:
    """A seat is alive while its ``remaining`` counts hold a flag and a movable unit (§11.5)."""
    return counts[Unit.FLAG] > 0 and any(counts[u] > 0 for u in MOBILE)


def combat_winner(remaining) -> int | None:
    """Combat's game-over test (§11.5) on the ``remaining`` rows of every seat: the winner when
    exactly one seat is alive, -1 when none is (gamed's draw), None while the game goes on."""
    living = [seat for seat, counts in enumerate(remaining) if seat_alive(counts)]
    if len(living) == 1:
        return living[0]
    if not living:
        return -1
    return None


def random_placement(board: Board, seat: int, counts, rng: random.Random) -> None:
    """Place ``counts[u]`` units of each code u = 0..11, in that order, each on a uniformly chosen
    empty cell of ``seat``'s zone (§11.7: the k-th empty zone cell in index order). Zone cells
    count whatever their terrain, as in the original. Raises ValueError when the zone is full."""
    free = [cell for cell in sorted(board.layout.zone(seat)) if board.cells[cell] == EMPTY]
    for code, count in enumerate(counts):
        for _ in range(count):
            if not free:
                raise ValueError(f"seat {seat}'s zone has no empty cell left")
            board.cells[free.pop(rng.randrange(len(free)))] = cell_value(seat, Unit(code))


def combat_unit_byte(cell: int) -> int:
    """A board cell as Combat's unit byte (§3): ``OWNER(seat)|code``, or U_EMPTY."""
    return U_EMPTY if cell == EMPTY else ((cell >> 4) + 1) << 4 | (cell & 0x0F)


def combat_view(board: Board, viewer: int | None) -> bytes:
    """The unit bytes of every cell as ``viewer`` may see them (§8): its own units exact, another
    seat's unit as ``OWNER(seat)|U_UNKNOWN``, anything else U_EMPTY (lakes and off-map cells
    included). ``viewer`` None is the full view (every unit exact)."""
    out = bytearray()
    for cell in board.cells:
        if cell == EMPTY:
            out.append(U_EMPTY)
        elif viewer is None or cell >> 4 == viewer:
            out.append(((cell >> 4) + 1) << 4 | (cell & 0x0F))
        else:
            out.append(((cell >> 4) + 1) << 4 | U_UNKNOWN)
    return bytes(out)


class MoveKind(enum.Enum):
    """What a move request did (§11.2, §11.5)."""

    ERROR = "error"  # broadcast MSG_MOVE(code, seat); nothing changed
    MOVE = "move"  # broadcast MSG_MOVE(source, target)
    ATTACK = "attack"  # CBT_MSG_ATTACK per recipient (``MoveResult.attack_for``)
    GAME_OVER = "over"  # the game had already ended: GAMEOVER(winner) + full SYNC, nothing changed


class MoveResult(
    collections.namedtuple(
        "MoveResult",
        "kind seat source target code options pair defender winner",
        defaults=(Opt.NONE, None, -1, None),
    )
):
    """The outcome of one CBT_REQ_MOVE, for the protocol layer to encode. ``winner`` is set when
    the game is over after it (this move ended it, or it had ended before: GAME_OVER).

    Fields: ``kind`` (MoveKind), ``seat`` (the sender), ``source``, ``target``, ``code``
    (combat_check's result, or -3 for a sender out of turn, 0 for GAME_OVER), ``options`` (Opt),
    ``pair`` ((fA, fD) of an attack, or None), ``defender`` (the defending seat of an attack, or
    -1), ``winner`` (int or None)."""

    __slots__ = ()

    def attack_for(self, recipient: int) -> tuple[int, int, int, int]:
        """The CBT_MSG_ATTACK payload ``from, WHO_from, to, WHO_to`` for ``recipient`` (§11.4)."""
        assert self.pair is not None
        who_from, who_to = attack_values(self.pair, self.seat, self.defender, recipient, self.options)
        return self.source, who_from, self.target, who_to


class InvalidOptions(ValueError):
    """Options that fail the options check (§10); ``code`` is -12, -13 or -14."""

    def __init__(self, code: int):
        super().__init__(f"invalid Combat options: {CombatError(code).name} ({code})")
        self.code = code


class CombatGame:
    """One Combat game from SETUP on (§4): the board, whose turn it is, every seat's remaining
    counts, the options and the winner. Pure state: the protocol layer feeds it setups and move
    requests and encodes what they return. ``rng`` is needed for RANDOM_OUTCOME and RANDOM_SETUP.

    Views (§8): ``view(seat)`` is the own view (REQ_SYNC, a joiner in PLAYING), ``view(None)`` the
    full view (after GAMEOVER, a joiner in DONE), ``start_view(seat)`` the one sent at START and
    after a random setup (full under OPEN_MAP, else own). SHOW_ENEMY_UNITS and HIDE_UNIT_LIST are
    client-side only (§11.6) and change no view."""

    def __init__(
        self,
        layout: Layout,
        army=DEFAULT_ARMY,
        seats: int = 2,
        options: Opt = Opt.NONE,
        rng: random.Random | None = None,
    ):
        if not 1 <= seats <= MAX_SEATS:
            raise ValueError(f"{seats} seats: Combat encodes 1..{MAX_SEATS}")
        army = tuple(army)
        if len(army) != len(UNITS) or not all(0 <= n <= MAX_COUNT for n in army):
            raise ValueError(f"an army is 12 counts of 0..{MAX_COUNT}, not {army!r}")
        if options & (Opt.RANDOM_OUTCOME | Opt.RANDOM_SETUP) and rng is None:
            raise ValueError("RANDOM_OUTCOME and RANDOM_SETUP need a random.Random")
        code = combat_options_check(layout, army, seats)
        if code:
            raise InvalidOptions(code)
        self.layout = layout
        self.army = army
        self.seats = seats
        self.options = Opt(options)
        self.rng = rng
        self.board = Board(layout, seats)
        self.remaining = [list(army) for _ in range(seats)]
        self.turn = 0
        self.winner: int | None = None
        self.setup_done: set[int] = set()
        # What spectators may know: cells whose unit's type every seat has been shown in combat
        # (the mask of ``attack_values`` for a non-seat), and the last move's (source, target).
        self.revealed: set[int] = set()
        self.last: tuple[int, int] | None = None
        self.last_result: MoveResult | None = None  # the last move or attack played

    @property
    def over(self) -> bool:
        return self.winner is not None

    @property
    def all_set_up(self) -> bool:
        return len(self.setup_done) == self.seats

    def accept_setup(self, seat: int, units: bytes) -> bool:
        """Validate and place ``seat``'s setup (§7): one unit byte per zone cell in index order,
        each U_EMPTY, ``OWNER(seat)|U_EMPTY`` (stored empty) or ``OWNER(seat)|code`` for code
        0..11, with exactly the template's counts, and no setup accepted before. False (nothing
        placed) on any failure."""
        if seat in self.setup_done or not 0 <= seat < self.seats:
            return False
        zone = sorted(self.layout.zone(seat))
        if len(units) != len(zone):
            return False
        counts = [0] * len(UNITS)
        owner = (seat + 1) << 4
        placed = []
        for cell, byte in zip(zone, units):
            code = byte & 0x0F
            if byte == U_EMPTY or byte == owner | U_EMPTY:
                placed.append((cell, EMPTY))
                continue
            if byte & 0xF0 != owner or code >= U_UNKNOWN:
                return False
            counts[code] += 1
            placed.append((cell, cell_value(seat, Unit(code))))
        if tuple(counts) != self.army:
            return False
        for cell, value in placed:
            self.board.cells[cell] = value
        self.setup_done.add(seat)
        return True

    def remove_setup(self, seat: int) -> None:
        """A seat left during SETUP (§12.4): its units leave the board and it may set up again."""
        cells = self.board.cells
        for i, cell in enumerate(cells):
            if cell != EMPTY and cell >> 4 == seat:
                cells[i] = EMPTY
        self.setup_done.discard(seat)

    def place_randomly(self) -> None:
        """RANDOM_SETUP (§12.2, §11.7): place the remaining army of every seat 0..n-1 not yet set
        up, seat by seat, with the injected random.Random."""
        if self.rng is None:
            raise ValueError("random placement needs a random.Random")
        for seat in range(self.seats):
            if seat not in self.setup_done:
                random_placement(self.board, seat, self.remaining[seat], self.rng)
                self.setup_done.add(seat)

    def check(self, source: int, target: int) -> int:
        """``combat_check`` for the seat to play."""
        return combat_check(self.board, self.turn, source, target, self.options)

    def request_move(self, seat: int, source: int, target: int) -> MoveResult:
        """Handle CBT_REQ_MOVE from ``seat`` in PLAYING or DONE (§11.2, §11.5, §15.3 rows 1 and 9):
        a rejected request changes nothing; a move or attack updates the board and counts,
        advances the turn with NEXT and runs the game-over test."""
        if self.winner is not None:
            return MoveResult(MoveKind.GAME_OVER, seat, source, target, 0, self.options, winner=self.winner)
        if seat != self.turn:
            return MoveResult(MoveKind.ERROR, seat, source, target, CombatError.WRONGTURN, self.options)
        code = self.check(source, target)
        if code < 0:
            return MoveResult(MoveKind.ERROR, seat, source, target, code, self.options)
        cells = self.board.cells
        kind, pair, defender = MoveKind.MOVE, None, -1
        revealed = self.revealed
        if code == Check.MOVE:
            cells[target], cells[source] = cells[source], EMPTY
            revealed.discard(target)
            if source in revealed:
                revealed.discard(source)
                revealed.add(target)
        else:
            if cells[target] & 0x0F >= U_UNKNOWN:  # impossible on a validated board
                return MoveResult(MoveKind.ERROR, seat, source, target, CombatError.CRAZY, self.options)
            kind, defender = MoveKind.ATTACK, cells[target] >> 4
            a, d = unit_of(cells[source]), unit_of(cells[target])
            pair = combat_attack(a, d, self.options, rush=code == Check.ATTACK_RUSH, rng=self.rng)
            shown = attack_values(pair, seat, defender, -1, self.options)
            was_revealed = (source in revealed, target in revealed)
            apply_combat_attack(self.board, self.remaining, source, target, pair)
            revealed.discard(source)
            revealed.discard(target)
            fa, fd = pair
            if cells[target] != EMPTY:  # the survivor stands on the target cell
                if fa < 0:  # the attacker won (or took the flag)
                    if abs(shown[0]) != U_UNKNOWN or was_revealed[0]:
                        revealed.add(target)
                elif abs(shown[1]) != U_UNKNOWN or was_revealed[1]:
                    revealed.add(target)
        self.last = (source, target)
        self.turn = 0 if self.turn >= self.seats - 1 else self.turn + 1
        self.winner = combat_winner(self.remaining)
        self.last_result = MoveResult(kind, seat, source, target, code, self.options, pair, defender, self.winner)
        return self.last_result

    def view(self, viewer: int | None) -> bytes:
        """The unit bytes ``viewer`` may see (§8); None: the full view."""
        return combat_view(self.board, viewer)

    def start_view(self, viewer: int) -> bytes:
        """The view of the syncs at START and after a random setup: full under OPEN_MAP."""
        return combat_view(self.board, None if self.options & Opt.OPEN_MAP else viewer)


# --- spectators (the web's live boards and match records) -----------------------------------

UNIT_NAMES = tuple(u.name.lower() for u in UNITS)  # "flag", "bomb", "spy", ... "marshal"


_CELL_VIEWS: dict[tuple[int, str | None], dict] = {}


def _cell_view(owner: int, unit: str | None) -> dict:
    """The one ``{"owner", "unit"}`` dict for that pair, shared by every state (read-only): a game's
    states are kept for its whole length (live tables, records), and sharing the few distinct
    cells makes each state about ten times smaller."""
    view = _CELL_VIEWS.get((owner, unit))
    if view is None:
        view = _CELL_VIEWS[(owner, unit)] = {"owner": owner, "unit": unit}
    return view


def board_spectator_state(
    board: Board, revealed, last: tuple[int, int] | None = None, show_all: bool = False
) -> dict:
    """The JSON-able spectator view of ``board``: ``{"width", "height", "cells", "last"}`` with
    rows top to bottom, a cell ``None`` (empty), ``"lake"`` (lake or off the map) or ``{"owner":
    seat, "unit": name | None}``: a unit's name only for a cell in ``revealed`` (its type was shown
    to every seat in combat) or when ``show_all``. ``last`` is the last move's (source, target)."""
    layout = board.layout
    width = layout.width
    blocked = layout.lakes | layout.offmap
    cells = board.cells
    rows = []
    for y in range(layout.height):
        row = []
        for i in range(y * width, (y + 1) * width):
            c = cells[i]
            if c != EMPTY:
                row.append(_cell_view(c >> 4, UNIT_NAMES[c & 0x0F] if show_all or i in revealed else None))
            elif i in blocked:
                row.append("lake")
            else:
                row.append(None)
        rows.append(row)
    moved = None if last is None else [list(layout.xy(last[0])), list(layout.xy(last[1]))]
    return {"width": width, "height": layout.height, "cells": rows, "last": moved}


def spectator_state(game: CombatGame, over: bool = False) -> dict:
    """What spectators of a Combat game may see now: units whose type combat showed every seat;
    everything under OPEN_MAP, once the game has a winner, or when ``over`` (it ended otherwise)."""
    show_all = over or game.winner is not None or bool(game.options & Opt.OPEN_MAP)
    return board_spectator_state(game.board, game.revealed, game.last, show_all)


def spectator_move(game: CombatGame, result: MoveResult) -> str:
    """A move or attack in spectators' words, ``x,y-x,y`` (cells as x,y from the top left), an
    attack with the units as every seat was shown them (``?`` when hidden) and who survived:
    ``2,3x2,4 scout>bomb: dies``."""
    fx, fy = game.layout.xy(result.source)
    tx, ty = game.layout.xy(result.target)
    if result.kind is not MoveKind.ATTACK or result.pair is None:
        return f"{fx},{fy}-{tx},{ty}"
    shown = attack_values(result.pair, result.seat, result.defender, -1, result.options)
    a, d = (UNIT_NAMES[abs(v)] if abs(v) < U_UNKNOWN else "?" for v in shown)
    return f"{fx},{fy}x{tx},{ty} {a}>{d}: {fight_of(result.pair).value}"


# --- replaying spectator states (the records' replayers, gamed.replay) -----------------------


def next_board_state(
    state: dict,
    source: tuple[int, int],
    target: tuple[int, int],
    fight: Fight | None,
    shown: tuple[str | None, str | None] = (None, None),
) -> dict:
    """The spectator state (``board_spectator_state``) after a move from cell ``source`` to
    ``target`` (x, y) that was a plain move (``fight`` None) or an attack that ended in ``fight``;
    ``shown`` names the attacker's and the defender's units as combat showed them to every seat
    (None: hidden). The survivor's type shows where combat showed it or it showed already."""
    (sx, sy), (tx, ty) = source, target
    rows = [list(row) for row in state["cells"]]
    mover, occupant = rows[sy][sx], rows[ty][tx]
    if fight is None:
        rows[ty][tx] = mover
    elif fight is Fight.ATTACKER_WINS or fight is Fight.FLAG:
        rows[ty][tx] = _cell_view(mover["owner"], shown[0] if shown[0] is not None else mover["unit"])
    elif fight is Fight.DEFENDER_WINS:
        rows[ty][tx] = _cell_view(occupant["owner"], shown[1] if shown[1] is not None else occupant["unit"])
    else:
        rows[ty][tx] = None
    rows[sy][sx] = None
    return {**state, "cells": rows, "last": [[sx, sy], [tx, ty]]}


_FIGHTS = {fight.value: fight for fight in Fight}


def next_state(state: dict, seat: int | None, move: str) -> dict:
    """GGZ Combat's replayer (``IGame.next_state``): the spectator state after ``move`` as
    ``spectator_move`` wrote it (``2,3-2,4``; ``2,3x2,4 scout>bomb: dies``) from the state before.
    What it cannot tell (a seat that forfeits, the whole board shown at the end) the records keep
    beside it (gamed.replay)."""
    where, _, fought = move.partition(" ")
    attack = "x" in where
    source, _, target = where.partition("x" if attack else "-")
    sx, sy = (int(v) for v in source.split(","))
    tx, ty = (int(v) for v in target.split(","))
    if not attack:
        return next_board_state(state, (sx, sy), (tx, ty), None)
    units, _, fight = fought.partition(": ")
    a, _, d = units.partition(">")
    shown = tuple(None if name == "?" else name for name in (a, d))
    return next_board_state(state, (sx, sy), (tx, ty), _FIGHTS[fight], shown)
