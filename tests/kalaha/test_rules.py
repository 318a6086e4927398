"""Kalaha rules (gamed.kalaha.rules): sowing, captures, extra turns, the no-move rule, the end of
the game, move parsing and refusals, checked against the rules in docs/protocols/kalaha.md and by random legal games."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.kalaha.rules import (
    TOTAL_STONES,
    A,
    B,
    Illegal,
    IllegalMove,
    Position,
    opposite,
    other,
    parse_pit,
    pit_index,
    pit_name,
    play,
)


def board(a, a_store, b, b_store, to_move=A):
    """A position from A1..A6, A7, B1..B6, B7; refuses boards that do not hold 72 stones."""
    pits = tuple(a) + (a_store,) + tuple(b) + (b_store,)
    assert len(pits) == 14
    assert sum(pits) == TOTAL_STONES, sum(pits)
    return Position(pits=pits, to_move=to_move)


def named(position):
    return {pit_name(i): n for i, n in enumerate(position.pits)}


# --- the board ---------------------------------------------------------------------------------


def test_start_position_has_six_stones_in_every_playing_pit_and_empty_stores():
    p = Position.start()
    assert p.pits == (6, 6, 6, 6, 6, 6, 0, 6, 6, 6, 6, 6, 6, 0)
    assert p.to_move == A
    assert not p.over
    assert p.legal_moves() == (1, 2, 3, 4, 5, 6)
    assert p.side_stones(A) == p.side_stones(B) == 36
    assert p.store(A) == p.store(B) == 0


@pytest.mark.parametrize(
    "index, name",
    [(0, "A1"), (2, "A3"), (5, "A6"), (6, "A7"), (7, "B1"), (11, "B5"), (12, "B6"), (13, "B7")],
)
def test_pit_name_and_pit_index_are_inverse(index, name):
    assert pit_name(index) == name
    assert pit_index(name[0], int(name[1])) == index


@pytest.mark.parametrize(
    "a_pit, b_pit",
    [("A1", "B6"), ("A2", "B5"), ("A3", "B4"), ("A4", "B3"), ("A5", "B2"), ("A6", "B1")],
)
def test_opposite_pits_follow_the_spec(a_pit, b_pit):
    a = pit_index(A, int(a_pit[1]))
    b = pit_index(B, int(b_pit[1]))
    assert opposite(a) == b
    assert opposite(b) == a


def test_other_side():
    assert other(A) == B
    assert other(B) == A


# --- the worked check --------------------------------------------------------------------------


def test_spec_worked_check_a1_then_a2():
    first = play(Position.start(), 1)
    p = first.position
    assert named(p)["A1"] == 0
    assert [named(p)[f"A{n}"] for n in range(2, 7)] == [7, 7, 7, 7, 7]
    assert p.store(A) == 1
    assert first.extra_turn
    assert first.last == pit_index(A, 7)
    assert p.to_move == A

    second = play(p, 2)
    q = named(second.position)
    assert q["A1"] == 0 and q["A2"] == 0
    assert [q[f"A{n}"] for n in range(3, 7)] == [8, 8, 8, 8]
    assert q["A7"] == 2
    assert q["B1"] == 7 and q["B2"] == 7
    assert [q[f"B{n}"] for n in range(3, 7)] == [6, 6, 6, 6]
    assert q["B7"] == 0
    assert second.last == pit_index(B, 2)
    assert not second.extra_turn
    assert second.captured == 0 and second.swept == 0
    assert second.position.to_move == B
    assert (second.side, second.pit, second.sown) == (A, 2, 7)


# --- sowing ------------------------------------------------------------------------------------


def test_a_sowing_thirteen_stones_skips_b_store_and_captures_in_the_emptied_start_pit():
    p = board([13, 5, 5, 5, 5, 5], 0, [5, 5, 5, 5, 5, 5], 4)
    m = play(p, 1)
    assert m.sown == 13
    assert m.last == pit_index(A, 1)
    assert m.captured == 1 + 6
    after = m.position
    assert after.pits == (0, 6, 6, 6, 6, 6, 1 + 7, 6, 6, 6, 6, 6, 0, 4)
    assert after.store(B) == 4
    assert after.to_move == B
    assert not m.extra_turn


def test_b_sowing_thirteen_stones_skips_a_store_and_captures_in_the_emptied_start_pit():
    p = board([5, 5, 5, 5, 5, 5], 4, [13, 5, 5, 5, 5, 5], 0, to_move=B)
    m = play(p, 1)
    assert m.sown == 13
    assert m.last == pit_index(B, 1)
    assert m.captured == 1 + 6
    after = m.position
    assert after.pits == (6, 6, 6, 6, 6, 0, 4, 0, 6, 6, 6, 6, 6, 1 + 7)
    assert after.store(A) == 4
    assert after.to_move == A


@pytest.mark.parametrize("side", [A, B])
def test_long_sowing_passes_the_opponent_store_twice_without_feeding_it(side):
    mine = [0, 0, 0, 0, 0, 30]
    theirs = [1, 1, 1, 1, 1, 1]
    if side == A:
        p = board(mine, 20, theirs, 16, to_move=A)
    else:
        p = board(theirs, 16, mine, 20, to_move=B)
    m = play(p, 6)
    after = m.position
    assert after.store(other(side)) == 16
    assert after.store(side) == 20 + 3
    assert after.side_stones(other(side)) == 6 + 2 * 6 + 3
    assert after.side_stones(side) == 2 * 6
    assert m.last == pit_index(other(side), 3)
    assert after.to_move == other(side)


# --- captures ----------------------------------------------------------------------------------


def test_capture_with_an_empty_opposite_pit_moves_the_single_stone_to_the_store():
    p = board([1, 0, 3, 3, 3, 3], 20, [3, 3, 3, 3, 0, 3], 24)
    m = play(p, 1)
    assert m.captured == 1
    assert m.last == pit_index(A, 2)
    after = named(m.position)
    assert after["A1"] == 0 and after["A2"] == 0 and after["B5"] == 0
    assert after["A7"] == 21
    assert m.position.to_move == B


def test_capture_takes_the_opposite_pit_and_the_capturing_stone():
    p = board([1, 0, 3, 3, 3, 3], 20, [3, 3, 3, 3, 4, 3], 20)
    m = play(p, 1)
    assert m.captured == 5
    after = named(m.position)
    assert after["A2"] == 0 and after["B5"] == 0
    assert after["A7"] == 25
    assert m.position.to_move == B


def test_b_captures_into_its_own_store():
    p = board([3, 3, 3, 3, 3, 3], 20, [0, 2, 0, 0, 0, 3], 29, to_move=B)
    m = play(p, 2)
    assert m.last == pit_index(B, 4)
    assert m.captured == 1 + 3
    after = named(m.position)
    assert after["B4"] == 0 and after["A3"] == 0
    assert after["B7"] == 29 + 4
    assert after["A7"] == 20
    assert m.position.to_move == A


def test_no_capture_when_the_last_stone_lands_in_a_non_empty_own_pit():
    p = board([1, 3, 3, 3, 3, 3], 20, [3, 3, 3, 3, 4, 3], 17)
    m = play(p, 1)
    assert m.captured == 0
    after = named(m.position)
    assert after["A2"] == 4 and after["B5"] == 4 and after["A7"] == 20
    assert m.position.to_move == B


def test_no_capture_when_the_last_stone_lands_in_an_empty_opponent_pit():
    p = board([3, 3, 3, 3, 3, 2], 20, [0, 3, 3, 3, 3, 3], 20)
    m = play(p, 6)
    assert m.captured == 0
    assert m.last == pit_index(B, 1)
    after = named(m.position)
    assert after["B1"] == 1 and after["A6"] == 0 and after["A7"] == 21
    assert m.position.to_move == B


# --- extra turns -------------------------------------------------------------------------------


def test_a_moves_again_when_the_last_stone_falls_in_a7():
    m = play(Position.start(), 1)
    assert m.extra_turn
    assert m.position.to_move == A


def test_b_moves_again_when_the_last_stone_falls_in_b7():
    p = Position(Position.start().pits, B)
    m = play(p, 1)
    assert m.extra_turn
    assert m.last == pit_index(B, 7)
    assert m.position.to_move == B
    assert m.position.store(B) == 1
    assert m.position.store(A) == 0


def test_landing_in_the_opponent_store_is_impossible_and_gives_no_extra_turn():
    p = board([0, 0, 0, 0, 0, 8], 30, [1, 1, 1, 1, 1, 1], 28)
    m = play(p, 6)
    assert m.last == pit_index(A, 1)
    assert not m.extra_turn
    assert m.position.store(B) == 28


# --- no move possible --------------------------------------------------------------------------


def test_player_to_move_without_stones_makes_the_opponent_sweep_his_own_stones():
    p = board([1, 3, 2, 0, 0, 4], 30, [0, 0, 0, 0, 0, 0], 32)
    m = play(p, 1)
    assert m.captured == 0
    assert m.swept == 4 + 2 + 4
    after = m.position
    assert after.over
    assert after.store(A) == 30 + 10
    assert after.store(B) == 32
    assert after.side_stones(A) == after.side_stones(B) == 0
    assert after.legal_moves() == ()
    assert after.winner() == A


def test_capturing_the_opponent_last_stones_ends_the_game_with_a_sweep():
    p = board([1, 0, 0, 0, 0, 5], 30, [0, 0, 0, 0, 3, 0], 33)
    m = play(p, 1)
    assert m.captured == 4
    assert m.swept == 5
    after = m.position
    assert after.over
    assert after.store(A) == 30 + 4 + 5
    assert after.store(B) == 33
    assert after.winner() == A


def test_mover_who_empties_his_side_with_an_extra_turn_lets_the_opponent_sweep():
    p = board([0, 0, 0, 0, 0, 1], 30, [2, 0, 5, 0, 1, 0], 33)
    m = play(p, 6)
    assert m.extra_turn
    assert m.swept == 8
    after = m.position
    assert after.over
    assert after.to_move == A
    assert after.store(A) == 31
    assert after.store(B) == 41
    assert after.winner() == B


def test_mover_emptying_his_side_plays_on_while_the_next_player_has_stones():
    p = board([0, 0, 0, 0, 0, 0], 40, [0, 0, 0, 0, 0, 2], 30, to_move=B)
    m = play(p, 6)
    assert m.last == pit_index(A, 1)
    assert not m.extra_turn
    assert m.swept == 0
    after = m.position
    assert not after.over
    assert after.to_move == A
    assert after.legal_moves() == (1,)


def test_game_ending_36_36_is_a_draw():
    p = board([0, 0, 0, 0, 0, 1], 35, [2, 0, 0, 4, 0, 0], 30)
    m = play(p, 6)
    assert m.swept == 6
    after = m.position
    assert after.over
    assert after.store(A) == after.store(B) == 36
    assert after.winner() is None


@pytest.mark.parametrize("a_store, winner", [(36, None), (37, A), (35, B), (72, A), (0, B)])
def test_winner_is_the_side_with_the_larger_store(a_store, winner):
    p = board([0] * 6, a_store, [0] * 6, TOTAL_STONES - a_store)
    assert p.over
    assert p.winner() == winner


# --- parsing and refusals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, side, pit",
    [
        ("A3", A, 3),
        ("a3", A, 3),
        ("3", A, 3),
        ("3", B, 3),
        (" b2 ", B, 2),
        ("B6", B, 6),
        ("1\r\n", A, 1),
    ],
)
def test_parse_pit_accepts_pit_names_and_bare_numbers(text, side, pit):
    assert parse_pit(text, side) == pit


@pytest.mark.parametrize(
    "text, side, reason",
    [
        ("A7", A, Illegal.STORE),
        ("b7", A, Illegal.STORE),
        ("B7", B, Illegal.STORE),
        ("B3", A, Illegal.OPPONENT_PIT),
        ("a1", B, Illegal.OPPONENT_PIT),
        ("C1", A, Illegal.NOT_A_PIT),
        ("0", A, Illegal.NOT_A_PIT),
        ("7", A, Illegal.NOT_A_PIT),
        ("", A, Illegal.NOT_A_PIT),
        ("   ", A, Illegal.NOT_A_PIT),
        ("A", A, Illegal.NOT_A_PIT),
        ("A10", A, Illegal.NOT_A_PIT),
        ("A0", A, Illegal.NOT_A_PIT),
        ("A 3", A, Illegal.NOT_A_PIT),
        ("12", A, Illegal.NOT_A_PIT),
    ],
)
def test_parse_pit_refuses_with_the_right_reason(text, side, reason):
    with pytest.raises(IllegalMove) as info:
        parse_pit(text, side)
    assert info.value.reason is reason
    assert reason.value in str(info.value)


def test_parse_pit_error_detail_is_bounded():
    with pytest.raises(IllegalMove) as info:
        parse_pit("x" * 1000, A)
    assert len(info.value.detail) <= 16


def test_play_refuses_an_empty_pit():
    p = play(Position.start(), 1).position
    with pytest.raises(IllegalMove) as info:
        play(p, 1)
    assert info.value.reason is Illegal.EMPTY_PIT
    assert "A1" in str(info.value)


def test_play_refuses_an_empty_pit_of_b():
    p = board([6] * 6, 0, [0, 6, 6, 6, 6, 6], 6, to_move=B)
    with pytest.raises(IllegalMove) as info:
        play(p, 1)
    assert info.value.reason is Illegal.EMPTY_PIT
    assert "B1" in str(info.value)


@pytest.mark.parametrize("pit", [0, 7, -1, 13, 14])
def test_play_refuses_out_of_range_pits(pit):
    with pytest.raises(IllegalMove) as info:
        play(Position.start(), pit)
    assert info.value.reason is Illegal.NOT_A_PIT


def test_play_refuses_a_finished_game():
    p = board([0] * 6, 40, [0] * 6, 32)
    with pytest.raises(IllegalMove) as info:
        play(p, 1)
    assert info.value.reason is Illegal.GAME_OVER


def test_illegal_move_leaves_the_position_unchanged():
    p = play(Position.start(), 1).position
    before = p.pits
    with pytest.raises(IllegalMove):
        play(p, 1)
    assert p.pits == before


# --- random legal games ------------------------------------------------------------------------

MOVE_BOUND = 1000


def random_game(choices):
    """Play from the start, picking legal moves by cycling through ``choices``; yield each step."""
    p = Position.start()
    for n in range(MOVE_BOUND):
        if p.over:
            return
        moves = p.legal_moves()
        assert moves, "a position that is not over must have a legal move"
        m = play(p, moves[choices[n % len(choices)] % len(moves)])
        yield p, m
        p = m.position
    pytest.fail(f"the game did not end within {MOVE_BOUND} moves")


choice_lists = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=200)


@given(choice_lists)
def test_random_games_conserve_stones_and_never_go_negative(choices):
    for _, m in random_game(choices):
        assert sum(m.position.pits) == TOTAL_STONES
        assert min(m.position.pits) >= 0


@given(choice_lists)
def test_random_games_end_with_every_stone_in_a_store_and_the_larger_store_winning(choices):
    steps = list(random_game(choices))
    assert 0 < len(steps) < MOVE_BOUND
    final = steps[-1][1].position
    assert final.over
    assert final.store(A) + final.store(B) == TOTAL_STONES
    assert final.side_stones(A) == final.side_stones(B) == 0
    assert final.legal_moves() == ()
    a, b = final.store(A), final.store(B)
    assert final.winner() == (A if a > b else B if b > a else None)
    assert all(not m.position.over for _, m in steps[:-1])


@given(choice_lists)
def test_random_games_alternate_turns_except_after_an_extra_turn(choices):
    for before, m in random_game(choices):
        assert m.side == before.to_move
        assert m.extra_turn == (m.last == pit_index(m.side, 7))
        if m.extra_turn:
            assert m.position.to_move == m.side
        else:
            assert m.position.to_move == other(m.side)


@given(choice_lists)
def test_random_games_report_each_move_consistently(choices):
    for before, m in random_game(choices):
        after = m.position
        assert m.sown == before.pits[pit_index(m.side, m.pit)] > 0
        assert after.store(A) >= before.store(A)
        assert after.store(B) >= before.store(B)
        if m.captured:
            assert pit_index(m.side, 1) <= m.last <= pit_index(m.side, 6)
            assert after.pits[m.last] == 0
            assert after.pits[opposite(m.last)] == 0
        if m.swept:
            assert after.over
        gained = after.store(m.side) - before.store(m.side)
        assert gained >= m.captured
