"""Connect Four engines in Python behind the "Open Line up 4" interface, plus the engine registry.

``IEngine`` is the ten C operations (``C4_Desc`` ... ``C4_EnumLevels``) in Python naming, with
the same return conventions, so one conformance suite runs against Python and native engines.

Call-order rules, as the C interface has them: ``new_game`` starts a game; only ``end_game`` may
end it, and only then may ``new_game`` follow. An operation outside a game (before ``new_game`` or
after ``end_game``) is refused the way a C engine would refuse it -- ``False``, ``-1``,
``NOPLAYER`` or ``(-1, -1, -1, -1)`` -- and ``last_error`` names the reason with one of the
``ERROR_*`` codes below. A successful operation clears ``last_error`` to ``None``.

Built-in engines: ONE engine named ``"gamed"`` whose levels are the strengths (so a client picks
a strength the way it picks a level of any native engine):

- level 0 "Random": a uniformly random legal column, from an injected ``random.Random``;
- level 1 "Threat-aware": wins at once if it can, else blocks the opponent's immediate win, else
  avoids columns that let the opponent win on top, else random;
- levels 2, 3, 4 "Alpha-beta N": negamax alpha-beta to depth 2, 4 and 6 plies with a
  window-counting heuristic, centre-first move ordering, and a deterministic node budget
  (iterative deepening keeps the deepest search that finished within the budget).
"""

from __future__ import annotations

import random
from typing import Callable

from zope.interface import Attribute, Interface, implementer

from gamed.connect4.rules import (
    CONNECT,
    NOPLAYER,
    PLAYERS,
    Board,
    IllegalMove,
    other,
    valid_size,
)

NO_COORDS = (-1, -1, -1, -1)

ERROR_NO_GAME = "no-game"  # operation needs a game: call new_game first
ERROR_GAME_IN_PROGRESS = "game-in-progress"  # new_game before end_game
ERROR_BAD_SIZE = "bad-size"  # width or height outside 4..16
ERROR_BAD_PLAYER = "bad-player"  # player is not 0 or 1
ERROR_NOT_YOUR_TURN = "not-your-turn"  # player is not the one to move
ERROR_BAD_COLUMN = IllegalMove.BAD_COLUMN
ERROR_COLUMN_FULL = IllegalMove.COLUMN_FULL
ERROR_GAME_OVER = IllegalMove.GAME_OVER  # somebody won already
ERROR_BOARD_FULL = "board-full"  # auto_move on a full board (returns -1, as C4_AutoMove)
ERROR_BAD_LEVEL = "bad-level"  # level not reported by enum_levels


class IEngine(Interface):
    """A Connect Four engine: the ten "Open Line up 4" operations in Python naming.

    One engine object plays one game at a time (like a loaded native library).
    """

    last_error = Attribute("Code (str) of the last refused operation, or None after a success.")

    def description() -> str:
        """A short description of the engine (``C4_Desc``)."""

    def new_game(width: int, height: int) -> bool:
        """Start a game on a ``width`` x ``height`` board; False if refused (``C4_NewGame``)."""

    def play_move(player: int, column: int) -> bool:
        """Drop ``player``'s stone in ``column``; False if invalid, full or out of turn."""

    def auto_move(player: int, level: int) -> int:
        """Choose AND play a move for ``player`` at ``level``; its column, or -1 (board full)."""

    def get_state(x: int, y: int) -> int:
        """Owner of cell (x, y): 0, 1 or NOPLAYER (-1); row 0 is the bottom (``C4_GetState``)."""

    def is_winner(player: int) -> bool:
        """True if ``player`` has four in a line (``C4_IsWinner``)."""

    def is_tie() -> bool:
        """True if the board is full and nobody won (``C4_IsTie``)."""

    def win_coords(player: int) -> tuple:
        """(x1, y1, x2, y2), the ends of one winning line of ``player``; (-1,)*4 if none."""

    def end_game() -> None:
        """End the game; only ``new_game`` may follow (``C4_EndGame``)."""

    def enum_levels(level: int) -> str | None:
        """The name of ``level`` if supported (levels are 0..n-1), else None (``C4_EnumLevels``)."""


# -- move choosers (pure functions of a board and an injected random.Random) ---------------------


def choose_random(board: Board, rng: random.Random) -> int:
    """Level 0: any legal column, uniformly at random."""
    return rng.choice(board.legal_columns())


def choose_threat_aware(board: Board, rng: random.Random) -> int:
    """Level 1: win now, else block the opponent's immediate win, else avoid giving a win on top."""
    me = board.to_move
    them = other(me)
    legal = board.legal_columns()
    for column in legal:
        if board.wins_with(column, me):
            return column
    for column in legal:
        if board.wins_with(column, them):
            return column
    safe = [c for c in legal if not _gives_win_on_top(board, c, them)]
    return rng.choice(safe or legal)


def _gives_win_on_top(board: Board, column: int, opponent: int) -> bool:
    """True if, after a stone in ``column``, ``opponent`` could win by dropping on top of it."""
    if board.heights[column] + 1 >= board.height:
        return False
    board.drop(column)
    try:
        return board.wins_with(column, opponent)
    finally:
        board.undo()


_WIN_SCORE = 1_000_000
_WINDOW_CACHE: dict[tuple[int, int], list[tuple[int, ...]]] = {}
_WINDOW_WEIGHT = (0, 1, 4, 32, 0)  # by stones of one player in an otherwise empty window


def _windows(width: int, height: int) -> list[tuple[int, ...]]:
    """Every line of four cells on the board, as flat cell indices (cached per size)."""
    key = (width, height)
    found = _WINDOW_CACHE.get(key)
    if found is None:
        found = []
        for x in range(width):
            for y in range(height):
                for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
                    ex, ey = x + (CONNECT - 1) * dx, y + (CONNECT - 1) * dy
                    if 0 <= ex < width and 0 <= ey < height:
                        found.append(
                            tuple((x + i * dx) * height + (y + i * dy) for i in range(CONNECT))
                        )
        _WINDOW_CACHE[key] = found
    return found


def evaluate(board: Board, player: int) -> int:
    """Heuristic value of ``board`` for ``player``: open lines of 1-3 stones, theirs minus ours."""
    cells = board.cells
    score = 0
    for window in _windows(board.width, board.height):
        mine = theirs = 0
        for i in window:
            c = cells[i]
            if c == player:
                mine += 1
            elif c != NOPLAYER:
                theirs += 1
        if theirs == 0:
            score += _WINDOW_WEIGHT[mine]
        elif mine == 0:
            score -= _WINDOW_WEIGHT[theirs]
    return score


class _Budget(Exception):
    """The node budget ran out; the interrupted depth is discarded."""


class AlphaBeta:
    """Depth-limited negamax alpha-beta with a node budget, for one move decision."""

    def __init__(self, board: Board, max_nodes: int):
        self.board = board
        self.max_nodes = max_nodes
        self.nodes = 0
        middle = (board.width - 1) / 2
        self.order = sorted(range(board.width), key=lambda x: abs(x - middle))

    def choose(self, depth: int, rng: random.Random) -> int:
        """The best column found by iterative deepening up to ``depth`` plies."""
        board = self.board
        legal = board.legal_columns()
        me = board.to_move
        for column in legal:  # a win at once needs no search
            if board.wins_with(column, me):
                return column
        best = [c for c in self.order if c in legal][0]
        for d in range(1, depth + 1):
            try:
                best = self._root(d)
            except _Budget:
                break
        return best

    def _root(self, depth: int) -> int:
        board = self.board
        best_score, best_column = -_WIN_SCORE * 2, -1
        alpha, beta = -_WIN_SCORE * 2, _WIN_SCORE * 2
        for column in self.order:
            if not board.can_drop(column):
                continue
            board.drop(column)
            try:
                score = -self._negamax(depth - 1, -beta, -alpha, 1)
            finally:
                board.undo()
            if score > best_score:
                best_score, best_column = score, column
            alpha = max(alpha, score)
        return best_column

    def _negamax(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        """Value of the position for the player to move (the last mover is ``other``)."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise _Budget()
        board = self.board
        if board.winner is not None:
            return -(_WIN_SCORE - ply)  # the previous mover just won
        if board.is_full():
            return 0
        if depth == 0:
            return evaluate(board, board.to_move)
        for column in self.order:
            if board.heights[column] >= board.height:
                continue
            board.drop(column)
            try:
                score = -self._negamax(depth - 1, -beta, -alpha, ply + 1)
            finally:
                board.undo()
            if score >= beta:
                return score
            if score > alpha:
                alpha = score
        return alpha


def _alpha_beta(depth: int, max_nodes: int) -> Callable[[Board, random.Random], int]:
    def choose(board: Board, rng: random.Random) -> int:
        # The budget is in 7x6-board units: bigger boards cost more per leaf evaluation.
        scaled = max(200, max_nodes * _WINDOWS_7X6 // len(_windows(board.width, board.height)))
        return AlphaBeta(board.copy(), scaled).choose(depth, rng)

    choose.__doc__ = f"Alpha-beta to depth {depth} within about {max_nodes} 7x6-sized nodes."
    return choose


_WINDOWS_7X6 = 69  # lines of four on the standard board


def _alpha_beta_level(depth: int, max_nodes: int) -> tuple[str, Callable[[Board, random.Random], int]]:
    """An alpha-beta level whose name states its budget (as ENGINES shows it)."""
    name = f"Alpha-beta {depth} (heuristic: {depth} plies, at most {max_nodes:,} positions a move)"
    return name, _alpha_beta(depth, max_nodes)


# (name, chooser) per level of the built-in "gamed" engine, weakest first; each name says in
# brackets what the level's budget is and that none of them is exact.
GAMED_LEVELS: tuple[tuple[str, Callable[[Board, random.Random], int]], ...] = (
    ("Random (a random legal column; instant)", choose_random),
    ("Threat-aware (heuristic: win, block, avoid a win on top, else random; instant)", choose_threat_aware),
    _alpha_beta_level(2, 5_000),
    _alpha_beta_level(4, 15_000),
    _alpha_beta_level(6, 30_000),
)


@implementer(IEngine)
class GamedEngine:
    """The built-in Python engine: one game at a time, levels from random to alpha-beta.

    ``rng`` is the only source of randomness (levels 0 and 1 pick among equal moves with it).
    """

    def __init__(self, rng: random.Random | None = None):
        self.rng = rng if rng is not None else random.Random()
        self.board: Board | None = None
        self.last_error: str | None = None

    def _refuse(self, code: str, value):
        self.last_error = code
        return value

    def _ok(self, value):
        self.last_error = None
        return value

    def description(self) -> str:
        """What this engine is."""
        return "gamed built-in engine: random, threat-aware, alpha-beta"

    def new_game(self, width: int, height: int) -> bool:
        """Start a game; refused while a game is in progress or for a size outside 4..16."""
        if self.board is not None:
            return self._refuse(ERROR_GAME_IN_PROGRESS, False)
        if not valid_size(width, height):
            return self._refuse(ERROR_BAD_SIZE, False)
        self.board = Board(width, height)
        return self._ok(True)

    def _check_player_turn(self, player: int) -> str | None:
        board = self.board
        if board is None:
            return ERROR_NO_GAME
        if player not in PLAYERS or isinstance(player, bool):
            return ERROR_BAD_PLAYER
        if board.winner is not None:
            return ERROR_GAME_OVER
        if board.is_full():
            return ERROR_BOARD_FULL
        if player != board.to_move:
            return ERROR_NOT_YOUR_TURN
        return None

    def play_move(self, player: int, column: int) -> bool:
        """Drop ``player``'s stone in ``column``; False (with ``last_error``) if refused."""
        problem = self._check_player_turn(player)
        if problem is not None:
            return self._refuse(ERROR_GAME_OVER if problem == ERROR_BOARD_FULL else problem, False)
        try:
            self.board.drop(column)
        except IllegalMove as e:
            return self._refuse(e.code, False)
        return self._ok(True)

    def auto_move(self, player: int, level: int) -> int:
        """Choose and play ``player``'s move at ``level``; the column, or -1 if refused/full."""
        problem = self._check_player_turn(player)
        if problem is not None:
            return self._refuse(problem, -1)
        if not isinstance(level, int) or not 0 <= level < len(GAMED_LEVELS):
            return self._refuse(ERROR_BAD_LEVEL, -1)
        column = GAMED_LEVELS[level][1](self.board, self.rng)
        self.board.drop(column)
        return self._ok(column)

    def get_state(self, x: int, y: int) -> int:
        """Owner of (x, y); NOPLAYER off the board or outside a game."""
        if self.board is None:
            return self._refuse(ERROR_NO_GAME, NOPLAYER)
        return self._ok(self.board.get(x, y))

    def is_winner(self, player: int) -> bool:
        """True if ``player`` has won the current game."""
        if self.board is None:
            return self._refuse(ERROR_NO_GAME, False)
        return self._ok(self.board.winner is not None and self.board.winner == player)

    def is_tie(self) -> bool:
        """True if the board is full and nobody won."""
        if self.board is None:
            return self._refuse(ERROR_NO_GAME, False)
        return self._ok(self.board.is_tie())

    def win_coords(self, player: int) -> tuple[int, int, int, int]:
        """Ends of ``player``'s winning line (the whole run through the winning stone)."""
        if self.board is None:
            return self._refuse(ERROR_NO_GAME, NO_COORDS)
        if self.board.winner is None or self.board.winner != player:
            return self._ok(NO_COORDS)
        return self._ok(self.board.win_line)

    def end_game(self) -> None:
        """End the game (harmless outside a game, as ``C4_EndGame`` returns nothing)."""
        if self.board is None:
            self._refuse(ERROR_NO_GAME, None)
            return
        self.board = None
        self._ok(None)

    def enum_levels(self, level: int) -> str | None:
        """The name of ``level`` (0..4), or None if this engine has no such level."""
        if isinstance(level, int) and 0 <= level < len(GAMED_LEVELS):
            return GAMED_LEVELS[level][0]
        return None


# -- registry ------------------------------------------------------------------------------------

EngineFactory = Callable[..., IEngine]

_REGISTRY: dict[str, EngineFactory] = {}


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make ``factory(rng=...)`` available as engine ``name``; ValueError if the name is taken."""
    if name in _REGISTRY:
        raise ValueError(f"engine {name!r} is already registered")
    _REGISTRY[name] = factory


def engine_names() -> list[str]:
    """Names of the registered engines, sorted."""
    return sorted(_REGISTRY)


def create_engine(name: str, rng: random.Random | None = None) -> IEngine:
    """A fresh engine registered as ``name``; KeyError if there is none by that name."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no engine named {name!r}; known: {', '.join(engine_names())}") from None
    return factory(rng=rng)


def engine_levels(engine: IEngine) -> list[str]:
    """Names of ``engine``'s levels, in order, as ``enum_levels`` reports them (0..n-1)."""
    names = []
    while (name := engine.enum_levels(len(names))) is not None and len(names) < 1000:
        names.append(name)
    return names


register_engine("gamed", GamedEngine)
