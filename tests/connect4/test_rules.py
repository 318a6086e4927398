"""Tests for the Connect Four rules: sizes, wins in every direction, ties, line ends, bad drops."""

import pytest

from gamed.connect4.rules import NOPLAYER, Board, IllegalMove, spectator_state


def play(board, columns):
    """Drop stones in ``columns`` in turn; return the board."""
    for c in columns:
        board.drop(c)
    return board


@pytest.mark.parametrize("size", [(4, 4), (7, 6), (16, 16), (5, 9), (16, 4), (4, 16)])
def test_sizes_fill_bottom_up(size):
    w, h = size
    b = Board(w, h)
    assert (b.width, b.height) == (w, h)
    assert b.drop(w - 1) == 0
    assert b.drop(w - 1) == 1
    assert b.get(w - 1, 0) == 0 and b.get(w - 1, 1) == 1 and b.get(0, 0) == NOPLAYER
    assert b.to_move == 0


@pytest.mark.parametrize("size", [(3, 6), (7, 3), (17, 6), (7, 17), (0, 0)])
def test_unsupported_sizes_refused(size):
    with pytest.raises(ValueError):
        Board(*size)


@pytest.mark.parametrize(
    "size, moves, line",
    [
        ((7, 6), [0, 0, 1, 1, 2, 2, 3], (0, 0, 3, 0)),  # horizontal
        ((7, 6), [4, 5, 4, 5, 4, 5, 4], (4, 0, 4, 3)),  # vertical
        ((7, 6), [0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], (0, 0, 3, 3)),  # rising diagonal
        ((7, 6), [6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3], (3, 3, 6, 0)),  # falling diagonal
        ((4, 4), [0, 1, 0, 1, 0, 1, 0], (0, 0, 0, 3)),
        ((16, 16), [12, 12, 13, 13, 14, 14, 15], (12, 0, 15, 0)),
        ((5, 9), [2, 3, 2, 3, 2, 3, 2], (2, 0, 2, 3)),
    ],
)
def test_wins_in_all_directions(size, moves, line):
    b = play(Board(*size), moves[:-1])
    assert b.winner is None
    b.drop(moves[-1])
    assert b.winner == 0
    x1, y1, x2, y2 = b.win_line
    assert {(x1, y1), (x2, y2)} == {(line[0], line[1]), (line[2], line[3])}
    assert b.is_over() and not b.is_tie()


def test_line_ends_cover_a_run_of_five():
    b = play(Board(7, 6), [0, 0, 1, 1, 3, 3, 4, 4])
    b.drop(2)  # fills the gap: five in a row
    assert b.win_line == (0, 0, 4, 0)


def test_second_player_wins():
    b = play(Board(7, 6), [0, 1, 0, 1, 0, 1, 6, 1])
    assert b.winner == 1 and b.win_line == (1, 0, 1, 3)


def test_full_board_tie_4x4():
    b = Board(4, 4)
    play(b, [0, 2, 1, 2, 0, 0, 2, 3, 0, 2, 3, 3, 1, 3, 1, 1])
    assert b.is_full() and b.winner is None and b.is_tie() and b.is_over()
    with pytest.raises(IllegalMove) as e:
        b.drop(0)
    assert e.value.code == IllegalMove.GAME_OVER


def test_full_board_tie_7x6():
    # Rows repeat 0011001 / 1100110 patterns in pairs so no line of four forms anywhere.
    order = []
    for _ in range(3):
        order += [0, 1, 4, 2, 3, 6, 5, 0, 1, 4, 2, 3, 6, 5]
    b = play(Board(7, 6), order)
    assert b.is_full() and b.is_tie(), b.drawing()


def test_win_on_last_move_of_full_board():
    # 4x4: the 16th stone (player 1) fills the board and completes the rising diagonal.
    order = [1, 1, 1, 0, 2, 3, 0, 0, 1, 0, 2, 2, 3, 3, 2, 3]
    b = play(Board(4, 4), order[:-1])
    assert b.winner is None and not b.is_full()
    b.drop(order[-1])
    assert b.is_full() and b.winner == 1 and not b.is_tie()
    assert b.win_line == (0, 0, 3, 3)


def test_illegal_drops():
    b = Board(4, 4)
    for bad in (-1, 4, "1", None, 1.0, True):
        with pytest.raises(IllegalMove) as e:
            b.drop(bad)
        assert e.value.code == IllegalMove.BAD_COLUMN
    play(b, [0, 0, 0, 0])
    with pytest.raises(IllegalMove) as e:
        b.drop(0)
    assert e.value.code == IllegalMove.COLUMN_FULL
    assert b.legal_columns() == [1, 2, 3] and not b.can_drop(0)
    play(b, [1, 2, 1, 2, 1, 2, 1])
    assert b.winner == 0
    with pytest.raises(IllegalMove) as e:
        b.drop(3)
    assert e.value.code == IllegalMove.GAME_OVER
    assert b.legal_columns() == []


DOUBLE = [1, 1, 0, 0, 0, 0, 2, 3, 4, 3, 0, 1, 4]  # then player 1 in column 2 makes two lines at once


def test_a_stone_that_completes_two_lines_has_both_as_win_lines():
    b = play(Board(7, 6), DOUBLE)
    assert b.win_lines() == []
    b.drop(2)
    assert b.winner == 1
    # The row and the falling diagonal through (2, 1), in the order horizontal, vertical, rising,
    # falling; the first is win_line, the one the engine interface reports.
    assert b.win_lines() == [(0, 1, 3, 1), (0, 3, 3, 0)]
    assert b.win_line == b.win_lines()[0]
    state = spectator_state(b)
    assert state["win_line"] == [[0, 1], [3, 1]]
    assert state["win_lines"] == [[[0, 1], [3, 1]], [[0, 3], [3, 0]]], "spectators see both lines"


def test_win_lines_of_a_single_line_and_after_undo():
    b = play(Board(7, 6), [0, 0, 1, 1, 2, 2, 3])
    assert b.win_lines() == [(0, 0, 3, 0)]
    b.undo()
    assert b.win_lines() == []


def test_undo_and_copy():
    b = play(Board(7, 6), [0, 0, 1, 1, 2, 2])
    before = b.board_string()
    c = b.copy()
    b.drop(3)
    assert b.winner == 0 and c.winner is None and c.board_string() == before
    assert b.undo() == 3
    assert b.winner is None and b.win_line is None and b.board_string() == before
    assert b.to_move == 0


def test_wins_with_does_not_change_board():
    b = play(Board(7, 6), [0, 0, 1, 1, 2, 2])
    before = b.board_string()
    assert b.wins_with(3, 0) and not b.wins_with(3, 1) and not b.wins_with(6, 0)
    assert b.board_string() == before


def test_board_string():
    b = play(Board(4, 4), [0, 1, 0])
    assert b.board_string() == "4x4 01.. 0... .... ...."
    assert b.drawing().splitlines() == [". . . .", ". . . .", "X . . .", "X O . .", "-------", "0 1 2 3"]


def test_a_wide_drawing_gives_every_column_number_its_own_two_places():
    b = play(Board(12, 4), [11, 10])
    assert b.drawing().splitlines()[-3:] == [
        " .  .  .  .  .  .  .  .  .  .  O  X",
        "-----------------------------------",
        " 0  1  2  3  4  5  6  7  8  9 10 11",
    ]
