"""Kalaha rules as pure functions: the board, sowing, captures, extra turns and the end of the game.

The board has 14 pits in sowing order: index 0..6 are A1..A7 and 7..13 are B1..B7; A7 and B7 are
the stores. A always moves first; who plays A is decided by the server, not by the rules.
"""

from __future__ import annotations

import enum
import functools

import attrs

PITS_PER_SIDE = 6
STONES_PER_PIT = 6
TOTAL_STONES = 2 * PITS_PER_SIDE * STONES_PER_PIT

A, B = "A", "B"
SIDES = (A, B)
_STORE = {A: 6, B: 13}
_FIRST = {A: 0, B: 7}
_SKIP = {A: 13, B: 6}  # each player skips the opponent's store when sowing


def other(side: str) -> str:
    """The opponent of ``side``."""
    return B if side == A else A


def pit_index(side: str, number: int) -> int:
    """Board index of pit ``number`` (1..7, 7 is the store) on ``side``."""
    return _FIRST[side] + number - 1


def pit_name(index: int) -> str:
    """Name of the pit at board ``index``, e.g. ``A3`` or ``B7``."""
    return f"{A if index < 7 else B}{index % 7 + 1}"


def opposite(index: int) -> int:
    """The pit across the board from a playing pit (A1-B6, A2-B5, ..., A6-B1)."""
    return 12 - index


class Illegal(enum.Enum):
    """Why a move is refused; the protocol layers map these to error codes."""

    GAME_OVER = "the game is over"
    NOT_YOUR_TURN = "it is not your turn"
    NOT_A_PIT = "not a pit"
    STORE = "a store cannot be played"
    OPPONENT_PIT = "that pit belongs to your opponent"
    EMPTY_PIT = "that pit is empty"


class IllegalMove(Exception):
    """A move the rules refuse; ``reason`` says why."""

    def __init__(self, reason: Illegal, detail: str = ""):
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.detail}: {self.reason.value}" if self.detail else self.reason.value


@attrs.frozen
class Position:
    """A Kalaha position: the 14 pits in board order and the side to move."""

    pits: tuple[int, ...]
    to_move: str = A

    @classmethod
    def start(cls) -> Position:
        """The opening position: six stones in every playing pit, empty stores, A to move."""
        row = (STONES_PER_PIT,) * PITS_PER_SIDE + (0,)
        return cls(row + row, A)

    @property
    def over(self) -> bool:
        """True once every stone lies in a store."""
        return self.pits[6] + self.pits[13] == TOTAL_STONES

    def store(self, side: str) -> int:
        """Stones in ``side``'s store."""
        return self.pits[_STORE[side]]

    def side_stones(self, side: str) -> int:
        """Stones in ``side``'s six playing pits."""
        first = _FIRST[side]
        return sum(self.pits[first : first + PITS_PER_SIDE])

    def legal_moves(self) -> tuple[int, ...]:
        """Pit numbers (1..6) the side to move may play; empty when the game is over."""
        if self.over:
            return ()
        first = _FIRST[self.to_move]
        return tuple(n for n in range(1, 7) if self.pits[first + n - 1])

    def winner(self) -> str | None:
        """The side with more stones in its store once the game is over; None for a draw."""
        a, b = self.store(A), self.store(B)
        return None if a == b else (A if a > b else B)


@attrs.frozen
class Move:
    """What one move did, for reports to players and spectators."""

    side: str
    pit: int  # 1..6 on the mover's side
    sown: int
    last: int  # board index where the last stone fell
    extra_turn: bool  # the last stone fell in the mover's store (it moves again unless the game is over)
    captured: int  # stones moved to the store by a capture, the capturing stone included
    swept: int  # stones swept into a store because the next player had no move
    position: Position  # the position after the move


def parse_pit(text: str, side: str) -> int:
    """Turn a player's move text (``A3``, ``b2`` or a bare ``1``..``6``) into a pit number of ``side``.

    Raises IllegalMove for anything that is not one of the mover's six playing pits.
    """
    t = text.strip().upper()
    if len(t) == 1 and t in "123456":
        return int(t)
    if len(t) == 2 and t[0] in SIDES and t[1] in "1234567":
        number = int(t[1])
        if number == 7:
            raise IllegalMove(Illegal.STORE, t)
        if t[0] != side:
            raise IllegalMove(Illegal.OPPONENT_PIT, t)
        return number
    raise IllegalMove(Illegal.NOT_A_PIT, text.strip()[:16])


def play(position: Position, pit: int) -> Move:
    """Play pit ``pit`` (1..6) for the side to move and return what happened.

    Raises IllegalMove when the game is over, the pit number is out of range or the pit is empty.
    """
    if position.over:
        raise IllegalMove(Illegal.GAME_OVER)
    side = position.to_move
    if not 1 <= pit <= PITS_PER_SIDE:
        raise IllegalMove(Illegal.NOT_A_PIT, str(pit))
    start = pit_index(side, pit)
    pits = list(position.pits)
    stones = pits[start]
    if not stones:
        raise IllegalMove(Illegal.EMPTY_PIT, pit_name(start))
    pits[start] = 0
    skip = _SKIP[side]
    i = start
    for _ in range(stones):
        i = (i + 1) % 14
        if i == skip:
            i = (i + 1) % 14
        pits[i] += 1

    store = _STORE[side]
    first = _FIRST[side]
    captured = 0
    extra = i == store
    if not extra and first <= i < first + PITS_PER_SIDE and pits[i] == 1:
        # The capture takes the opposite pit even when it is empty (the exercise says so).
        captured = 1 + pits[opposite(i)]
        pits[store] += captured
        pits[i] = 0
        pits[opposite(i)] = 0
    nxt = side if extra else other(side)

    swept = 0
    nfirst = _FIRST[nxt]
    if not any(pits[nfirst : nfirst + PITS_PER_SIDE]):
        # The player to move has no stones: the opponent's stones go into the opponent's store.
        opp = other(nxt)
        ofirst = _FIRST[opp]
        swept = sum(pits[ofirst : ofirst + PITS_PER_SIDE])
        pits[ofirst : ofirst + PITS_PER_SIDE] = [0] * PITS_PER_SIDE
        pits[_STORE[opp]] += swept

    after = Position(tuple(pits), nxt)
    return Move(side, pit, stones, i, extra, captured, swept, after)


class Reason(enum.Enum):
    """How a game ended. The first five are results (a timeout and a forfeit lose); the others
    abort the game."""

    END = "END"
    RESIGN = "RESIGN"
    STRIKES = "STRIKES"
    TIMEOUT = "TIMEOUT"
    FORFEIT = "FORFEIT"  # a seat that dropped did not come back within the grace period
    DISCONNECT = "DISCONNECT"
    SHUTDOWN = "SHUTDOWN"


ABORTS = frozenset({Reason.DISCONNECT, Reason.SHUTDOWN})


@attrs.frozen
class Outcome:
    """The end of a game: why, who won (None: draw or abort) and who caused it (if anyone)."""

    reason: Reason
    winner: str | None
    culprit: str | None
    position: Position  # the final position

    @property
    def aborted(self) -> bool:
        return self.reason in ABORTS


def spectator_state(position: Position, over: bool = False) -> dict:
    """What a spectator sees of ``position`` (JSON-able): seat 0 is A, seat 1 is B; each seat's
    six pits in its sowing order, both stores, and the seat to move (None once the game is over)."""
    pits = position.pits
    return {
        "pits": [list(pits[0:6]), list(pits[7:13])],
        "stores": [pits[6], pits[13]],
        "to_move": None if over or position.over else SIDES.index(position.to_move),
    }


def play_moves(pits: tuple[int, ...] | list[int], position: Position | None = None) -> tuple[Move, ...]:
    """Play the pit numbers ``pits`` one after the other from ``position`` (the start when None),
    each for the side to move then; the moves, in order. Raises IllegalMove as ``play`` does."""
    moves = []
    position = Position.start() if position is None else position
    for pit in pits:
        move = play(position, pit)
        moves.append(move)
        position = move.position
    return tuple(moves)


@functools.cache
def _opening_book() -> tuple[tuple[int, ...], ...]:
    """Every distinct position two sowings from the start, then every new one three sowings from
    it, that is not over and whose stores differ by at most one stone; as the pit numbers that
    reach it (the first sequence in pit order), two-sowing openings first."""
    book: list[tuple[int, ...]] = []
    seen = {Position.start()}
    for plies in (2, 3):
        frontier: list[tuple[tuple[int, ...], Position]] = [((), Position.start())]
        for _ in range(plies):
            frontier = [(pits + (n,), play(p, n).position) for pits, p in frontier for n in p.legal_moves()]
        for pits, p in frontier:
            if p not in seen and not p.over and abs(p.store(A) - p.store(B)) <= 1:
                seen.add(p)
                book.append(pits)
    return tuple(book)


def opening(number: int) -> tuple[int, ...]:
    """The pit numbers of opening ``number``, each sown by the side to move then (A first): a
    tournament's pairs start from the position they reach, so that a pair's two games (colours
    swapped) are one opening. Opening 0 is the usual start (no sowing); openings 1, 2, ... go
    through the book of balanced positions two or three sowings deep (``opening_count()`` of
    them) and start again from its first after its last."""
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise ValueError(f"an opening number is 0 or more, not {number!r}")
    if number == 0:
        return ()
    book = _opening_book()
    return book[(number - 1) % len(book)]


def opening_count() -> int:
    """How many distinct openings the book has (opening ``opening_count() + 1`` is opening 1 again)."""
    return len(_opening_book())


def next_state(state: dict, seat: int | None, move: str) -> dict:
    """The spectator state after ``move`` (``A3``: the side and pit the records keep) from the
    spectator state before it: the records' replayer (gamed.replay, ``IGame.next_state``)."""
    pits = state["pits"]
    stores = state["stores"]
    to_move = state["to_move"]
    side = move[:1]
    if to_move is None or SIDES[to_move] != side:
        raise IllegalMove(Illegal.NOT_YOUR_TURN, move)
    board = tuple(pits[0]) + (stores[0],) + tuple(pits[1]) + (stores[1],)
    return spectator_state(play(Position(board, side), parse_pit(move[1:], side)).position)
