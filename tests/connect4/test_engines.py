"""Conformance suite for every registered Connect Four engine and level, plus built-in strength."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gamed.connect4 import engines as E
from gamed.connect4.rules import NOPLAYER, Board


def _cases():
    """(engine name, level) for every registered engine and every level it reports."""
    cases = []
    for name in E.engine_names():
        for level in range(len(E.engine_levels(E.create_engine(name, rng=random.Random(0))))):
            cases.append((name, level))
    return cases


CASES = _cases()
NAMES = E.engine_names()


def make(name, seed=0):
    return E.create_engine(name, rng=random.Random(seed))


def test_registry():
    assert "gamed" in NAMES
    with pytest.raises(KeyError):
        E.create_engine("no-such-engine")
    with pytest.raises(ValueError):
        E.register_engine("gamed", E.GamedEngine)


@pytest.mark.parametrize("name", NAMES)
def test_interface_and_description(name):
    engine = make(name)
    assert verifyObject(E.IEngine, engine)
    assert isinstance(engine.description(), str) and engine.description()
    levels = E.engine_levels(engine)
    assert levels and all(isinstance(n, str) and n for n in levels)
    assert engine.enum_levels(len(levels)) is None and engine.enum_levels(-1) is None


@pytest.mark.parametrize("name", NAMES)
def test_call_order(name):
    engine = make(name)
    # Before new_game: refused as the C interface would.
    assert engine.play_move(0, 0) is False and engine.last_error == E.ERROR_NO_GAME
    assert engine.auto_move(0, 0) == -1 and engine.last_error == E.ERROR_NO_GAME
    assert engine.get_state(0, 0) == NOPLAYER
    assert engine.is_winner(0) is False and engine.is_tie() is False
    assert engine.win_coords(0) == E.NO_COORDS
    assert engine.new_game(7, 6) is True and engine.last_error is None
    assert engine.new_game(7, 6) is False and engine.last_error == E.ERROR_GAME_IN_PROGRESS
    assert engine.play_move(0, 3) is True
    engine.end_game()
    # After end_game only new_game may follow.
    assert engine.play_move(1, 3) is False and engine.last_error == E.ERROR_NO_GAME
    assert engine.get_state(3, 0) == NOPLAYER
    assert engine.new_game(4, 4) is True
    assert engine.get_state(3, 0) == NOPLAYER  # a fresh board


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", [(3, 6), (7, 3), (17, 6), (6, 17)])
def test_unsupported_size_refused(name, size):
    engine = make(name)
    assert engine.new_game(*size) is False and engine.last_error == E.ERROR_BAD_SIZE
    assert engine.new_game(16, 16) is True


@pytest.mark.parametrize("name", NAMES)
def test_illegal_moves_refused(name):
    engine = make(name)
    engine.new_game(4, 4)
    assert engine.play_move(0, -1) is False and engine.last_error == E.ERROR_BAD_COLUMN
    assert engine.play_move(0, 4) is False and engine.last_error == E.ERROR_BAD_COLUMN
    assert engine.play_move(2, 0) is False and engine.last_error == E.ERROR_BAD_PLAYER
    assert engine.play_move(1, 0) is False and engine.last_error == E.ERROR_NOT_YOUR_TURN
    for player in (0, 1, 0, 1):
        assert engine.play_move(player, 0) is True
    assert engine.play_move(0, 0) is False and engine.last_error == E.ERROR_COLUMN_FULL
    assert [engine.get_state(0, y) for y in range(4)] == [0, 1, 0, 1]
    assert engine.auto_move(0, 99) == -1 and engine.last_error == E.ERROR_BAD_LEVEL


@pytest.mark.parametrize("name", NAMES)
def test_win_reported(name):
    engine = make(name)
    engine.new_game(7, 6)
    for i, c in enumerate([0, 0, 1, 1, 2, 2, 3]):
        assert engine.play_move(i % 2, c)
    assert engine.is_winner(0) and not engine.is_winner(1) and not engine.is_tie()
    assert engine.win_coords(0) == (0, 0, 3, 0) and engine.win_coords(1) == E.NO_COORDS
    assert engine.play_move(1, 5) is False and engine.last_error == E.ERROR_GAME_OVER
    assert engine.auto_move(1, 0) == -1


@pytest.mark.parametrize("name", NAMES)
def test_tie_and_auto_move_on_full_board(name):
    engine = make(name)
    engine.new_game(4, 4)
    for i, c in enumerate([0, 2, 1, 2, 0, 0, 2, 3, 0, 2, 3, 3, 1, 3, 1, 1]):
        assert engine.play_move(i % 2, c)
    assert engine.is_tie() and not engine.is_winner(0) and not engine.is_winner(1)
    for level in range(len(E.engine_levels(engine))):
        assert engine.auto_move(0, level) == -1


@pytest.mark.parametrize("name, level", CASES)
def test_auto_move_plays_legal_moves_to_the_end(name, level):
    engine = make(name, seed=level)
    engine.new_game(5, 4)
    board = Board(5, 4)
    while not board.is_over():
        player = board.to_move
        column = engine.auto_move(player, level)
        assert column in board.legal_columns()
        row = board.drop(column)
        assert engine.get_state(column, row) == player
    assert engine.auto_move(board.to_move, level) == -1
    assert engine.is_winner(0) == (board.winner == 0)
    assert engine.is_winner(1) == (board.winner == 1)
    assert engine.is_tie() == board.is_tie()
    if board.winner is not None:
        x1, y1, x2, y2 = engine.win_coords(board.winner)
        assert max(abs(x2 - x1), abs(y2 - y1)) >= 3


def _threat_levels():
    return [(n, lv) for n, lv in CASES if lv >= 1]


@pytest.mark.parametrize("name, level", _threat_levels())
def test_takes_immediate_win(name, level):
    engine = make(name)
    engine.new_game(7, 6)
    for i, c in enumerate([1, 1, 2, 2, 3, 3]):
        engine.play_move(i % 2, c)
    assert engine.auto_move(0, level) in (0, 4)
    assert engine.is_winner(0)


@pytest.mark.parametrize("name, level", _threat_levels())
def test_blocks_immediate_loss(name, level):
    engine = make(name)
    engine.new_game(7, 6)
    for i, c in enumerate([6, 0, 6, 0, 5, 0]):  # player 1 threatens column 0
        engine.play_move(i % 2, c)
    assert engine.auto_move(0, level) == 0
    assert engine.get_state(0, 3) == 0


def test_threat_aware_avoids_giving_a_win_on_top():
    # Player 0 holds row 1 at columns 1-3 and 5-6: a stone of player 1 in column 0 or 4 would
    # let player 0 complete row 1 on top of it. No immediate win exists for either side.
    board = Board(7, 6)
    for c in [3, 1, 3, 5, 1, 2, 5, 6, 2, 1, 6]:
        board.drop(c)
    assert board.to_move == 1
    assert not any(board.wins_with(c, p) for c in board.legal_columns() for p in (0, 1))
    assert not board.wins_with(0, 0) and board.heights[0] == 0 and board.heights[4] == 0
    for seed in range(30):
        column = E.choose_threat_aware(board, random.Random(seed))
        assert column in (1, 2, 3, 5, 6)
    engine = E.GamedEngine(rng=random.Random(0))
    engine.new_game(7, 6)
    for i, c in enumerate([3, 1, 3, 5, 1, 2, 5, 6, 2, 1, 6]):
        engine.play_move(i % 2, c)
    assert engine.auto_move(1, 1) not in (0, 4)


def test_alpha_beta_beats_random():
    wins = 0
    for seed in range(20):
        engine = E.GamedEngine(rng=random.Random(seed))
        engine.new_game(7, 6)
        ab = seed % 2  # alternate colours
        player = 0
        while engine.auto_move(player, 2 if player == ab else 0) != -1:
            player = 1 - player
        wins += engine.is_winner(ab)
    assert wins >= 15


@pytest.mark.parametrize("name", NAMES)
@given(size=st.tuples(st.integers(4, 16), st.integers(4, 16)), data=st.data())
def test_get_state_matches_moves_played(name, size, data):
    w, h = size
    engine = make(name)
    assert engine.new_game(w, h)
    board = Board(w, h)
    for _ in range(data.draw(st.integers(0, w * h))):
        if board.is_over():
            break
        column = data.draw(st.sampled_from(board.legal_columns()))
        assert engine.play_move(board.to_move, column)
        board.drop(column)
    for x in range(w):
        for y in range(h):
            assert engine.get_state(x, y) == board.get(x, y)
    assert engine.is_tie() == board.is_tie()
    engine.end_game()
