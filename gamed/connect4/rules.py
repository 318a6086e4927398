"""Connect Four rules as plain Python: a board of any size from 4x4 to 16x16, four in a line wins.

Pure: no Twisted, no clock, no randomness. Columns and rows count from 0 and row 0 is the bottom,
as in the "Open Line up 4" engine interface (see docs/protocols/connect-four.md). Player 0 moves
first; an empty cell holds ``NOPLAYER`` (-1).

The board is a plain mutable class rather than a frozen attrs value because engines search by
dropping and undoing stones millions of times; ``copy()`` gives an independent board when needed.
"""

from __future__ import annotations

PLAYER0 = 0
PLAYER1 = 1
NOPLAYER = -1
PLAYERS = (PLAYER0, PLAYER1)

MIN_SIZE = 4
MAX_SIZE = 16
CONNECT = 4  # stones in a line needed to win, whatever the board size

# The four line directions: horizontal, vertical, rising diagonal, falling diagonal.
DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1))

_CELL_CHARS = {NOPLAYER: ".", PLAYER0: "0", PLAYER1: "1"}  # the machine-readable board line
_DRAWN = {NOPLAYER: ".", PLAYER0: "X", PLAYER1: "O"}  # the drawing for people (as the web draws them)


class IllegalMove(ValueError):
    """A drop the rules refuse; ``code`` says why and is one of ``BAD_COLUMN``, ``COLUMN_FULL``
    or ``GAME_OVER`` (the strings ``"bad-column"``, ``"column-full"``, ``"game-over"``)."""

    BAD_COLUMN = "bad-column"
    COLUMN_FULL = "column-full"
    GAME_OVER = "game-over"

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def other(player: int) -> int:
    """The opponent of ``player`` (0 <-> 1)."""
    return 1 - player


def valid_size(width: int, height: int) -> bool:
    """True if ``width`` x ``height`` is a board size the rules support (each 4..16)."""
    return (
        isinstance(width, int)
        and isinstance(height, int)
        and MIN_SIZE <= width <= MAX_SIZE
        and MIN_SIZE <= height <= MAX_SIZE
    )


class Board:
    """A Connect Four position plus its move history, so that moves can be undone.

    ``cells`` is a flat list indexed ``x * height + y``; ``heights[x]`` is the number of stones in
    column ``x``. After every drop the rules look only at the lines through the new stone, so a
    win is found in O(1) for any board size.
    """

    __slots__ = ("width", "height", "cells", "heights", "moves", "winner", "win_line")

    def __init__(self, width: int = 7, height: int = 6):
        if not valid_size(width, height):
            raise ValueError(
                f"board size {width!r}x{height!r} not supported: width and height must be "
                f"{MIN_SIZE}..{MAX_SIZE}"
            )
        self.width = width
        self.height = height
        self.cells = [NOPLAYER] * (width * height)
        self.heights = [0] * width
        self.moves: list[int] = []
        self.winner: int | None = None
        self.win_line: tuple[int, int, int, int] | None = None

    # -- queries -------------------------------------------------------------------------------

    @property
    def to_move(self) -> int:
        """The player whose turn it is (player 0 moves first)."""
        return len(self.moves) & 1

    def get(self, x: int, y: int) -> int:
        """The owner of cell (x, y): 0, 1 or ``NOPLAYER``; also ``NOPLAYER`` off the board."""
        if 0 <= x < self.width and 0 <= y < self.height:
            return self.cells[x * self.height + y]
        return NOPLAYER

    def is_full(self) -> bool:
        """True if every cell holds a stone."""
        return len(self.moves) == self.width * self.height

    def is_tie(self) -> bool:
        """True if the board is full and nobody has four in a line."""
        return self.winner is None and self.is_full()

    def is_over(self) -> bool:
        """True if someone has won or the board is full."""
        return self.winner is not None or self.is_full()

    def can_drop(self, column: int) -> bool:
        """True if a stone may be dropped in ``column`` now."""
        return (
            self.winner is None
            and isinstance(column, int)
            and 0 <= column < self.width
            and self.heights[column] < self.height
        )

    def legal_columns(self) -> list[int]:
        """Columns a stone may be dropped into now, left to right (empty once the game is over)."""
        if self.winner is not None:
            return []
        h = self.height
        return [x for x, n in enumerate(self.heights) if n < h]

    def wins_with(self, column: int, player: int) -> bool:
        """True if ``player`` dropping into ``column`` now would make four in a line.

        Does not change the board; ``column`` must not be full.
        """
        return self._run_length_max(column, self.heights[column], player) >= CONNECT

    # -- changes -------------------------------------------------------------------------------

    def drop(self, column: int) -> int:
        """Drop the mover's stone into ``column`` and return the row it lands in.

        Raises ``IllegalMove`` for a column off the board (``bad-column``), a full column
        (``column-full``) or a game already won or drawn (``game-over``).
        """
        if self.winner is not None or self.is_full():
            raise IllegalMove(IllegalMove.GAME_OVER, "the game is over")
        if not isinstance(column, int) or isinstance(column, bool) or not 0 <= column < self.width:
            raise IllegalMove(
                IllegalMove.BAD_COLUMN, f"column {column!r} is not on the board (0..{self.width - 1})"
            )
        row = self.heights[column]
        if row >= self.height:
            raise IllegalMove(IllegalMove.COLUMN_FULL, f"column {column} is full")
        player = len(self.moves) & 1
        self.cells[column * self.height + row] = player
        self.heights[column] = row + 1
        self.moves.append(column)
        line = self._winning_line(column, row, player)
        if line is not None:
            self.winner = player
            self.win_line = line
        return row

    def undo(self) -> int:
        """Take back the last drop and return its column; ``IndexError`` if nothing was played."""
        column = self.moves.pop()
        row = self.heights[column] - 1
        self.heights[column] = row
        self.cells[column * self.height + row] = NOPLAYER
        # A won game ends at the winning stone, so undoing any stone leaves no winner.
        self.winner = None
        self.win_line = None
        return column

    def win_lines(self) -> list[tuple[int, int, int, int]]:
        """Every line of four or more through the last stone once it has won, as the ends
        (x1, y1, x2, y2) of each whole run, in the order horizontal, vertical, rising diagonal,
        falling diagonal; ``win_line`` is the first. Empty while nobody has won."""
        if self.winner is None:
            return []
        x = self.moves[-1]
        y = self.heights[x] - 1
        lines = []
        for dx, dy in DIRECTIONS:
            forward = self._run(x, y, dx, dy, self.winner)
            back = self._run(x, y, -dx, -dy, self.winner)
            if 1 + forward + back >= CONNECT:
                lines.append((x - back * dx, y - back * dy, x + forward * dx, y + forward * dy))
        return lines

    def copy(self) -> Board:
        """An independent copy of this board, history included."""
        new = Board.__new__(Board)
        new.width = self.width
        new.height = self.height
        new.cells = self.cells[:]
        new.heights = self.heights[:]
        new.moves = self.moves[:]
        new.winner = self.winner
        new.win_line = self.win_line
        return new

    # -- text ----------------------------------------------------------------------------------

    def board_string(self) -> str:
        """A machine-readable board: ``WxH`` then one word per row, bottom row (row 0) first.

        Each row has ``width`` characters, column 0 first: ``0`` and ``1`` for stones, ``.`` for
        empty, e.g. ``"4x4 01.. 0... .... ...."``.
        """
        rows = [
            "".join(_CELL_CHARS[self.get(x, y)] for x in range(self.width)) for y in range(self.height)
        ]
        return f"{self.width}x{self.height} " + " ".join(rows)

    def drawing(self) -> str:
        """A human-readable picture, top row first: ``X`` for player 0's stones, ``O`` for player
        1's, ``.`` for empty; under it a rule and the column numbers (two places each on boards
        wider than 10, so that every number is whole)."""
        places = 1 if self.width <= 10 else 2
        lines = [
            " ".join(f"{_DRAWN[self.get(x, y)]:>{places}}" for x in range(self.width))
            for y in reversed(range(self.height))
        ]
        lines.append("-" * len(lines[0]))
        lines.append(" ".join(f"{x:>{places}}" for x in range(self.width)))
        return "\n".join(lines)

    # -- internals -----------------------------------------------------------------------------

    def _run(self, x: int, y: int, dx: int, dy: int, player: int) -> int:
        """How many of ``player``'s stones follow (x, y) in direction (dx, dy), (x, y) excluded."""
        w, h, cells = self.width, self.height, self.cells
        n = 0
        x += dx
        y += dy
        while 0 <= x < w and 0 <= y < h and cells[x * h + y] == player:
            n += 1
            x += dx
            y += dy
        return n

    def _run_length_max(self, x: int, y: int, player: int) -> int:
        """The longest line of ``player``'s stones through (x, y), counting (x, y) as theirs."""
        best = 0
        for dx, dy in DIRECTIONS:
            n = 1 + self._run(x, y, dx, dy, player) + self._run(x, y, -dx, -dy, player)
            if n > best:
                best = n
        return best

    def _winning_line(self, x: int, y: int, player: int) -> tuple[int, int, int, int] | None:
        """The ends (x1, y1, x2, y2) of the whole run of four or more through (x, y), if any."""
        for dx, dy in DIRECTIONS:
            forward = self._run(x, y, dx, dy, player)
            back = self._run(x, y, -dx, -dy, player)
            if 1 + forward + back >= CONNECT:
                return (x - back * dx, y - back * dy, x + forward * dx, y + forward * dy)
        return None


def spectator_state(board: Board) -> dict:
    """What a spectator sees of ``board`` (JSON-able, nothing is hidden in Connect Four): the
    size, ``cells[x][y]`` (column-major, row 0 at the bottom; the player or None), the player to
    move (None once the game is over), the winning line's ends ``[[x1, y1], [x2, y2]]`` and, as a
    last stone may complete several lines, every winning line in ``win_lines`` (the first is
    ``win_line``)."""
    h = board.height
    cells = [[None if c == NOPLAYER else c for c in board.cells[x * h:(x + 1) * h]] for x in range(board.width)]
    line = board.win_line
    lines = [[[x1, y1], [x2, y2]] for x1, y1, x2, y2 in (board.win_lines() if line is not None else ())]
    return {
        "width": board.width,
        "height": h,
        "cells": cells,
        "to_move": None if board.is_over() else board.to_move,
        "win_line": None if line is None else [[line[0], line[1]], [line[2], line[3]]],
        "win_lines": lines,
    }


def opening(width: int, number: int) -> tuple[int, ...]:
    """The columns of opening ``number`` (1, 2, ...) on a board ``width`` wide: a tournament's
    pairs start from these so that a pair's two games (colours swapped) are one opening. Openings
    1..width² are the two-stone starts (first stone's column, then the second's), the next width³
    the three-stone ones, and so on; on boards at least 4 high no stone can end the game within
    the first six, so every opening up to six stones leaves the game open."""
    if not isinstance(number, int) or number < 1:
        raise ValueError(f"an opening number is 1 or more, not {number!r}")
    index, plies = number - 1, 2
    while index >= width**plies:
        index -= width**plies
        plies += 1
    columns = []
    for _ in range(plies):
        index, column = divmod(index, width)
        columns.append(column)
    return tuple(reversed(columns))


def next_state(state: dict, seat: int | None, move: str) -> dict:
    """The spectator state after ``move`` (the column, as the records keep it) from the spectator
    state before it: the records' replayer (gamed.replay, ``IGame.next_state``)."""
    board = Board(state["width"], state["height"])
    h = board.height
    for x, column in enumerate(state["cells"]):
        for y, cell in enumerate(column):
            if cell is not None:
                board.cells[x * h + y] = cell
                board.heights[x] = y + 1
    # Who moved next depends only on how many stones lie: the history's columns do not matter.
    board.moves = [0] * sum(board.heights)
    if state["to_move"] != board.to_move:
        raise IllegalMove(IllegalMove.GAME_OVER, "the state is not one the rules reach")
    board.drop(int(move))
    return spectator_state(board)
