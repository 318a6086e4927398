"""The one Stratego rules core: boards, armies, moves, combat, values and per-seat views.

Shared by the UCC 2012 referee (``gamed.stratego.referee``) and GGZ Combat. Units use Combat's
codes (0 flag, 1 bomb, 2 spy, 3 scout … 11 marshal; a higher code is stronger), so the UCC tokens
``F B s 9 8 … 1`` are a view of the same data. A board is parameterised by its ``Layout`` (size,
lakes, off-map cells, setup zones), an army template and Combat's option flags; the UCC rules are
the Default layout with ``Opt.SUPER_SCOUT`` and nothing else. Pure: no I/O, no clock; randomness
(``Opt.RANDOM_OUTCOME``) comes from an injected ``random.Random``.
"""

from __future__ import annotations

import enum
import random

import attrs


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


@attrs.frozen
class Layout:
    """A map: size, lake and off-map cells (indices y*width + x), and each seat's setup zone."""

    width: int
    height: int
    lakes: frozenset[int]
    zones: tuple[frozenset[int], ...]
    offmap: frozenset[int] = frozenset()

    def index(self, x: int, y: int) -> int:
        return y * self.width + x

    def xy(self, cell: int) -> tuple[int, int]:
        return cell % self.width, cell // self.width

    def open(self, cell: int) -> bool:
        """True for a cell a piece may stand on (not a lake, not off the map)."""
        return cell not in self.lakes and cell not in self.offmap


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
        return sum(1 for c in self.cells if c != EMPTY and c >> 4 == owner and c & 0x0F >= Unit.SPY)

    def value(self, owner: int) -> int:
        """The UCC value of ``owner``'s pieces on the board."""
        return sum(unit_of(c).value for c in self.cells if c != EMPTY and c >> 4 == owner)

    def view(self, seat: int | None, own_only: bool = True) -> list[str]:
        """Rows of tokens as ``seat`` sees them: its own pieces by token, other seats' pieces as
        ``#``, lakes ``+``, empty ``.``. ``seat`` None (a spectator after the game) sees all."""
        width = self.layout.width
        lakes, offmap = self.layout.lakes, self.layout.offmap
        rows = []
        for y in range(self.layout.height):
            row = []
            for i in range(y * width, (y + 1) * width):
                c = self.cells[i]
                if c != EMPTY:
                    row.append(TOKENS[c & 0x0F] if seat is None or c >> 4 == seat else "#")
                elif i in lakes or i in offmap:
                    row.append("+")
                else:
                    row.append(".")
            rows.append("".join(row))
        return rows


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
