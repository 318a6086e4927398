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
def play_game(number, engine_a, engine_b, width, height, levels, a_first, watch=None):
    """One game; Deferred of a :class:`GameResult`. Engines are ended (errors ignored) after.
    ``watch(number, (name of player 0, name of player 1), board)``, if given, returns an object
    told ``moved(board, player, column)`` after every move and ``ended(board, winner player or
    None, reason, counted)`` at the end (a game of a stopped series is not counted, and its reason
    is the series' ``stop_reason``, e.g. ``shutdown``)."""
    sides = (A, B) if a_first else (B, A)  # sides[player] = "a"/"b"
    engine = {A: engine_a, B: engine_b}
    level = {A: levels[0], B: levels[1]}
    label = {A: f"{engine_a.name}:{levels[0]}", B: f"{engine_b.name}:{levels[1]}"}
    other = {A: B, B: A}
    board = Board(width, height)
    started = []
    watcher = None if watch is None else watch(number, (label[sides[0]], label[sides[1]]), board)

    def result(winner, reason):
        if watcher is not None:
            if getattr(engine_a, "stopped", False):
                # Interrupted, not decided: whatever the engines' calls failed with on the way.
                watcher.ended(board, None, engine_a.stop_reason, False)
            else:
                watcher.ended(board, None if winner is None else sides.index(winner), reason, True)
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
            if watcher is not None:
                watcher.moved(board, player, column)
            listener = other[side]
            ok, value = yield _call(lambda: engine[listener].play_move(player, column))
            if not ok:
                return result(side, f"{label[listener]} failed: {value}")
            if value is not True:
                return result(side, f"{label[listener]} refused the legal move {column}")
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


class MoveTimeout(TimeoutError):
    """An engine of a series did not move within its time; ``reason`` says so."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Guarded:
    """An AsyncEngine inside a :class:`Series`: its calls fail once the series is stopped, and
    ``auto_move`` fails after ``seconds`` on ``clock`` when a budget is set (a search past its
    budget loses the game; a native engine's host has its own limit as well)."""

    def __init__(self, engine, series: Series, clock=None, seconds: float | None = None):
        self._engine, self._series, self._clock, self._seconds = engine, series, clock, seconds
        self.name = engine.name

    @property
    def stopped(self) -> bool:
        return bool(self._series.stopped)

    @property
    def stop_reason(self) -> str | None:
        return self._series.stop_reason

    def __getattr__(self, name):
        call = getattr(self._engine, name)

        def guarded(*args):
            if self._series.stopped:
                return defer.fail(RuntimeError(f"match stopped: {self._series.stopped}"))
            return call(*args)

        return guarded

    def auto_move(self, player: int, level: int):
        if self._series.stopped:
            return defer.fail(RuntimeError(f"match stopped: {self._series.stopped}"))
        d = self._engine.auto_move(player, level)
        if self._clock is None or not self._seconds:
            return d
        d.addTimeout(self._seconds, self._clock)

        def late(failure):
            failure.trap(defer.TimeoutError)
            why = f"no move within {self._seconds:g} s"
            self._engine.abort(why)  # the search is cut short, and the engine's next calls say why
            raise MoveTimeout(why)

        return d.addErrback(late)


class Series:
    """An engine-vs-engine series run by the daemon: ``run(on_game)`` plays it and fires with the
    :class:`MatchSummary`; ``stop(why, reason)`` ends it early (the game in progress is not counted,
    ``stopped`` says why and its record's reason is ``reason``). ``move_time`` bounds each engine move on ``clock``."""

    def __init__(self, engine_a, engine_b, games: int, size: tuple[int, int], levels: Sequence[int],
                 clock=None, move_time: float | None = None, watch=None):
        self._raw = (engine_a, engine_b)
        self.watch = watch
        self.engine_a = _Guarded(engine_a, self, clock, move_time)
        self.engine_b = _Guarded(engine_b, self, clock, move_time)
        self.games, self.size, self.levels = games, size, tuple(levels)
        self.names = (f"{engine_a.name}:{levels[0]}", f"{engine_b.name}:{levels[1]}")
        self.results: list[GameResult] = []
        self.stopped: str | None = None
        self.stop_reason: str | None = None

    @defer.inlineCallbacks
    def run(self, on_game=None):
        width, height = self.size
        for i in range(self.games):
            if self.stopped:
                break
            r = yield play_game(i + 1, self.engine_a, self.engine_b, width, height, self.levels,
                                a_first=(i % 2 == 0), watch=self.watch)
            if self.stopped:
                break
            self.results.append(r)
            if on_game is not None:
                on_game(r)
        return MatchSummary(self.names[0], self.names[1], tuple(self.results))

    def stop(self, why: str, reason: str = "stopped") -> None:
        """End the series early (``why`` for people; ``reason``, e.g. ``shutdown``, is the reason
        the game in progress is recorded with); a native engine's running search is cancelled."""
        if self.stopped is None:
            self.stopped = why
            self.stop_reason = reason
            for engine in self._raw:
                engine.abort()
