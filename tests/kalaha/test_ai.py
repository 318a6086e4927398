"""The built-in Kalaha computer player (gamed.kalaha.ai): legal and deterministic choices at every
level, seeded randomness, tactical sense of the alpha-beta levels and a bounded search cost."""

import random

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.kalaha import ai
from gamed.kalaha.rules import TOTAL_STONES, A, B, Position, other, play

SEARCH_LEVELS = [name for name, level in ai.LEVELS.items() if level.depth > 0]
# The real "hard" level spends about 0.3 s a move; this one searches as deep with a small budget.
HARD_SMALL = attrs.evolve(ai.LEVELS["hard"], name="hard-small", nodes=500)


def board(a, a_store, b, b_store, to_move=A):
    pits = tuple(a) + (a_store,) + tuple(b) + (b_store,)
    assert sum(pits) == TOTAL_STONES
    return Position(pits=pits, to_move=to_move)


def mirrored(position):
    """The same position with the sides swapped: B faces what A faced."""
    return Position(position.pits[7:] + position.pits[:7], other(position.to_move))


def after_random_plies(choices, plies):
    p = Position.start()
    for n in range(plies):
        if p.over:
            break
        moves = p.legal_moves()
        p = play(p, moves[choices[n % len(choices)] % len(moves)]).position
    return p


def play_out(levels, seed):
    """Play a whole game from the start with ``levels[side]``; return the final position."""
    rng = random.Random(seed)
    p = Position.start()
    for _ in range(1000):
        if p.over:
            return p
        p = play(p, ai.choose_move(p, levels[p.to_move], rng)).position
    pytest.fail("the game did not end within 1000 moves")


# --- levels ------------------------------------------------------------------------------------


def test_levels_are_named_and_the_default_exists():
    assert list(ai.LEVELS) == ["random", "easy", "medium", "hard"]
    assert ai.DEFAULT_LEVEL in ai.LEVELS
    for name, level in ai.LEVELS.items():
        assert level.name == name
        assert level.description
    assert ai.LEVELS["random"].depth == 0
    assert all(ai.LEVELS[name].nodes > 0 for name in SEARCH_LEVELS)


# --- legality ----------------------------------------------------------------------------------


@given(
    choices=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=60),
    plies=st.integers(min_value=0, max_value=50),
    level=st.sampled_from([ai.LEVELS[n] for n in ("random", "easy", "medium")] + [HARD_SMALL]),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_choose_move_returns_a_legal_pit_in_random_positions(choices, plies, level, seed):
    p = after_random_plies(choices, plies)
    if p.over:
        with pytest.raises(ValueError):
            ai.choose_move(p, level, random.Random(seed))
        return
    pit = ai.choose_move(p, level, random.Random(seed))
    assert pit in p.legal_moves()
    assert play(p, pit).side == p.to_move


@pytest.mark.parametrize("plies", [11, 25])
def test_hard_level_returns_a_legal_move_within_its_node_budget(plies):
    p = after_random_plies([3, 1, 4, 1, 5], plies)
    assert not p.over
    assert ai.choose_move(p, ai.LEVELS["hard"], random.Random(7)) in p.legal_moves()


@pytest.mark.parametrize("level", list(ai.LEVELS.values()), ids=list(ai.LEVELS))
def test_choose_move_refuses_a_finished_game(level):
    finished = board([0] * 6, 40, [0] * 6, 32)
    with pytest.raises(ValueError):
        ai.choose_move(finished, level, random.Random(0))


@pytest.mark.parametrize("level", list(ai.LEVELS.values()), ids=list(ai.LEVELS))
def test_a_single_legal_move_is_played(level):
    p = board([0, 0, 0, 4, 0, 0], 30, [2, 2, 2, 2, 2, 2], 26)
    assert ai.choose_move(p, level, random.Random(0)) == 4


@pytest.mark.parametrize("nodes", [1, 3, 40])
def test_a_budget_too_small_for_a_full_search_still_gives_a_legal_move(nodes):
    level = ai.Level("tiny", 12, nodes, "test")
    p = Position.start()
    assert ai.choose_move(p, level, random.Random(0)) in p.legal_moves()


# --- determinism and randomness ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(ai.LEVELS))
def test_choose_move_is_deterministic_for_a_seeded_rng(name):
    level = ai.LEVELS[name] if name != "hard" else HARD_SMALL
    positions = [after_random_plies([2, 5, 0, 3], n) for n in (0, 7, 19)]
    first = [ai.choose_move(p, level, random.Random(1234)) for p in positions]
    again = [ai.choose_move(p, level, random.Random(1234)) for p in positions]
    assert first == again


def test_whole_games_are_reproducible_from_the_seed():
    levels = {A: ai.LEVELS["easy"], B: ai.LEVELS["random"]}
    assert play_out(levels, 99).pits == play_out(levels, 99).pits


def test_random_level_draws_its_choice_from_the_rng():
    class LastChoice(random.Random):
        def choice(self, seq):
            return seq[-1]

    class FirstChoice(random.Random):
        def choice(self, seq):
            return seq[0]

    p = Position.start()
    assert ai.choose_move(p, ai.LEVELS["random"], LastChoice(0)) == 6
    assert ai.choose_move(p, ai.LEVELS["random"], FirstChoice(0)) == 1


def test_random_level_varies_with_the_seed_and_covers_every_legal_pit():
    p = Position.start()
    picks = {ai.choose_move(p, ai.LEVELS["random"], random.Random(seed)) for seed in range(60)}
    assert picks == set(p.legal_moves())


def test_random_level_never_picks_an_empty_pit():
    p = board([0, 5, 0, 0, 7, 0], 20, [3] * 6, 22)
    picks = {ai.choose_move(p, ai.LEVELS["random"], random.Random(seed)) for seed in range(40)}
    assert picks == {2, 5}


# --- playing strength --------------------------------------------------------------------------

# A1 -> A2 (empty) captures B5's 20 stones: 41 in A7 wins outright.
WINNING_CAPTURE = board([1, 0, 0, 0, 0, 3], 20, [1, 1, 1, 1, 20, 1], 23)
# A6 (extra turn), A5 (extra turn), A6 (extra turn) empties A's side with 37 in A7: a win.
# Starting with A5 instead ends with A7=36 and B to move, a draw at best.
WINNING_EXTRA_TURN = board([0, 0, 0, 0, 2, 1], 34, [1] * 6, 29)


def test_constructed_positions_are_what_they_claim():
    capture = play(WINNING_CAPTURE, 1)
    assert capture.captured == 21
    assert capture.position.store(A) > TOTAL_STONES // 2
    p = WINNING_EXTRA_TURN
    for pit in (6, 5, 6):
        m = play(p, pit)
        assert m.extra_turn
        p = m.position
    assert p.over and p.winner() == A


@pytest.mark.parametrize("name", SEARCH_LEVELS)
@pytest.mark.parametrize("side", [A, B])
def test_search_levels_take_a_winning_capture(name, side):
    p = WINNING_CAPTURE if side == A else mirrored(WINNING_CAPTURE)
    for seed in range(3):
        assert ai.choose_move(p, ai.LEVELS[name], random.Random(seed)) == 1


@pytest.mark.parametrize("name", ["medium", "hard"])
@pytest.mark.parametrize("side", [A, B])
def test_deeper_levels_take_the_winning_extra_turn(name, side):
    p = WINNING_EXTRA_TURN if side == A else mirrored(WINNING_EXTRA_TURN)
    for seed in range(3):
        assert ai.choose_move(p, ai.LEVELS[name], random.Random(seed)) == 6


@pytest.mark.parametrize(
    "level", [ai.LEVELS["easy"], ai.LEVELS["medium"], HARD_SMALL], ids=lambda lv: lv.name
)
def test_search_levels_beat_random_in_most_seeded_games(level):
    wins = 0
    for seed in range(6):
        searcher = A if seed % 2 == 0 else B
        levels = {searcher: level, other(searcher): ai.LEVELS["random"]}
        final = play_out(levels, seed)
        assert final.over
        wins += final.winner() == searcher
    assert wins >= 5


# --- cost --------------------------------------------------------------------------------------


def count_plays(monkeypatch):
    calls = []

    def counting_play(position, pit):
        calls.append(pit)
        return play(position, pit)

    monkeypatch.setattr(ai, "play", counting_play)
    return calls


@pytest.mark.parametrize("nodes", [50, 500, 5000])
def test_search_work_stays_within_the_node_budget(monkeypatch, nodes):
    calls = count_plays(monkeypatch)
    level = ai.Level("budget", 12, nodes, "test")
    p = Position.start()
    assert ai.choose_move(p, level, random.Random(0)) in p.legal_moves()
    assert len(calls) <= 6 * (nodes + level.depth)
    assert len(calls) >= nodes


def test_hard_level_from_the_opening_stays_within_its_budget(monkeypatch):
    calls = count_plays(monkeypatch)
    hard = ai.LEVELS["hard"]
    p = Position.start()
    assert ai.choose_move(p, hard, random.Random(0)) in p.legal_moves()
    assert len(calls) <= 6 * (hard.nodes + hard.depth)
