"""Engine-vs-engine Connect Four matches (connect-four: a series with colours alternating).

Each game is driven through the asynchronous facade (:mod:`gamed.connect4.registry`): both
engines get ``new_game``; the side to move is asked ``auto_move``; the referee's own
:class:`~gamed.connect4.rules.Board` validates the column; the other engine is told it with
``play_move``. An illegal answer, a refused legal move or a failed engine loses that game, with a
reason saying which and why. Engine A plays first (player 0) in games 1, 3, 5...; B in 2, 4, 6...
"""

from __future__ import annotations

from collections.abc import Sequence

import attr
from twisted.internet import defer

from gamed.connect4.rules import Board, IllegalMove

A, B = "a", "b"


@attr.s(frozen=True, auto_attribs=True)
class GameResult:
    """One game: ``first`` ("a"/"b") played player 0; ``winner`` is "a", "b" or None (draw)."""

    number: int
    first: str
    winner: str | None
    reason: str
    moves: tuple[int, ...]


@attr.s(frozen=True, auto_attribs=True)
class MatchSummary:
    """The series: per-game results and the score (win 1, draw 1/2) of A and B."""

    name_a: str
    name_b: str
    results: tuple[GameResult, ...]

    @property
    def score_a(self) -> float:
        return sum(1.0 if r.winner == A else 0.5 if r.winner is None else 0.0 for r in self.results)

    @property
    def score_b(self) -> float:
        return len(self.results) - self.score_a


@defer.inlineCallbacks
def _call(d_factory):
    """(ok, value or reason) of one engine call, never raising."""
    try:
        value = yield defer.maybeDeferred(d_factory)
    except Exception as e:  # EngineFailed, or a Python engine that raised
        return False, getattr(e, "reason", None) or f"{type(e).__name__}: {e}"
    return True, value


@defer.inlineCallbacks
def play_game(number, engine_a, engine_b, width, height, levels, a_first):
    """One game; Deferred of a :class:`GameResult`. Engines are ended (errors ignored) after."""
    sides = (A, B) if a_first else (B, A)  # sides[player] = "a"/"b"
    engine = {A: engine_a, B: engine_b}
    level = {A: levels[0], B: levels[1]}
    label = {A: f"{engine_a.name}:{levels[0]}", B: f"{engine_b.name}:{levels[1]}"}
    other = {A: B, B: A}
    board = Board(width, height)
    started = []

    def result(winner, reason):
        return GameResult(number, sides[0], winner, reason, tuple(board.moves))

    try:
        for side in sides:
            ok, value = yield _call(lambda: engine[side].new_game(width, height))
            if not ok or value is not True:
                why = value if not ok else "refused the new game"
                return result(other[side], f"{label[side]} failed to start: {why}")
            started.append(side)
        while not board.is_over():
            player = board.to_move
            side = sides[player]
            ok, column = yield _call(lambda: engine[side].auto_move(player, level[side]))
            if not ok:
                return result(other[side], f"{label[side]} failed: {column}")
            try:
                board.drop(column)
            except IllegalMove as e:
                return result(other[side], f"{label[side]} played an illegal move {column!r}: {e}")
            watcher = other[side]
            ok, value = yield _call(lambda: engine[watcher].play_move(player, column))
            if not ok:
                return result(side, f"{label[watcher]} failed: {value}")
            if value is not True:
                return result(side, f"{label[watcher]} refused the legal move {column}")
        if board.winner is not None:
            side = sides[board.winner]
            return result(side, f"{label[side]} connected four")
        return result(None, "board full")
    finally:
        for side in started:
            yield _call(engine[side].end_game)


@defer.inlineCallbacks
def play_match(engine_a, engine_b, games: int, width: int, height: int, levels: Sequence[int],
               on_game=None):
    """Play ``games`` games, colours alternating (A first in game 1); Deferred of a summary.

    ``levels`` is (level of A, level of B); ``on_game(result)`` is called after each game.
    """
    results = []
    for i in range(games):
        r = yield play_game(i + 1, engine_a, engine_b, width, height, levels, a_first=(i % 2 == 0))
        results.append(r)
        if on_game is not None:
            on_game(r)
    return MatchSummary(f"{engine_a.name}:{levels[0]}", f"{engine_b.name}:{levels[1]}", tuple(results))


def format_score(value: float) -> str:
    """1, 0.5, 3.5: a score as printed."""
    return f"{value:g}"
