"""The built-in Kalaha computer player: a random level and alpha-beta search levels.

Pure: no clock and no global randomness. The search is bounded by a node budget, so its cost is
known in advance whatever the position; the service runs it off the reactor thread.
"""

from __future__ import annotations

import random

import attrs

from gamed.kalaha.rules import TOTAL_STONES, Position, play


@attrs.frozen
class Level:
    """One playing strength: ``depth`` 0 plays at random, otherwise alpha-beta to that depth."""

    name: str
    depth: int
    nodes: int  # node budget for one move; the deepest search finished within it is used
    description: str


LEVELS: dict[str, Level] = {
    lv.name: lv
    for lv in (
        Level("random", 0, 0, "picks any legal pit at random"),
        Level("easy", 2, 5_000, "alpha-beta search, 2 moves deep"),
        Level("medium", 4, 20_000, "alpha-beta search, 4 moves deep"),
        Level("hard", 12, 60_000, "alpha-beta search, as deep as 60,000 positions allow"),
    )
}
DEFAULT_LEVEL = "medium"

_WIN = 1000


class _OutOfNodes(Exception):
    pass


def _value(position: Position) -> int:
    """Static value for the side to move: store difference, plus a decisive bonus at the end."""
    me = position.to_move
    them = "B" if me == "A" else "A"
    diff = position.store(me) - position.store(them)
    if position.over:
        return diff + (_WIN if diff > 0 else -_WIN if diff < 0 else 0)
    if position.store(me) * 2 > TOTAL_STONES:
        return diff + _WIN
    if position.store(them) * 2 > TOTAL_STONES:
        return diff - _WIN
    return diff


class _Search:
    """Negamax alpha-beta where a move that keeps the turn does not flip the sign."""

    def __init__(self, nodes: int):
        self.left = nodes

    def best(self, position: Position, depth: int) -> tuple[int, int]:
        best_move, best = 0, -10 * _WIN
        alpha, beta = -10 * _WIN, 10 * _WIN
        for pit, child in self._children(position):
            v = self._search(child, depth - 1, alpha, beta, position.to_move)
            if v > best:
                best, best_move = v, pit
            alpha = max(alpha, v)
        return best_move, best

    def _search(self, position: Position, depth: int, alpha: int, beta: int, me: str) -> int:
        """Value of ``position`` for ``me`` (the side that moved into it)."""
        self.left -= 1
        if self.left < 0:
            raise _OutOfNodes
        if depth <= 0 or position.over:
            v = _value(position)
            return v if position.to_move == me else -v
        if position.to_move != me:
            return -self._search_own(position, depth, -beta, -alpha)
        return self._search_own(position, depth, alpha, beta)

    def _search_own(self, position: Position, depth: int, alpha: int, beta: int) -> int:
        best = -10 * _WIN
        for _, child in self._children(position):
            v = self._search(child, depth - 1, alpha, beta, position.to_move)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        return best

    @staticmethod
    def _children(position: Position):
        # Extra turns and captures first: they are usually best and make the cut-offs early.
        moves = [(pit, play(position, pit)) for pit in position.legal_moves()]
        moves.sort(key=lambda m: (not m[1].extra_turn, -m[1].captured))
        return [(pit, m.position) for pit, m in moves]


def choose_move(position: Position, level: Level, rng: random.Random) -> int:
    """The pit number (1..6) the computer plays in ``position`` at ``level``."""
    moves = position.legal_moves()
    if not moves:
        raise ValueError("no legal move: the game is over")
    if level.depth == 0 or len(moves) == 1:
        return rng.choice(moves)
    search = _Search(level.nodes)
    choice = rng.choice(moves)
    for depth in range(1, level.depth + 1):
        try:
            choice, _ = search.best(position, depth)
        except _OutOfNodes:
            break
    return choice
