"""Elo arithmetic (gamed.ratings): exact numbers for win, draw and loss, multi-seat and unrated seats."""

import pytest

from gamed.ratings import DRAW, INITIAL, K, LOSS, WIN, expected, outcome, rate


def test_constants():
    assert (INITIAL, K) == (1500.0, 32.0)


def test_equal_ratings_win_loss_and_draw():
    assert rate([1500.0, 1500.0], [1, 0]) == [1516.0, 1484.0]
    assert rate([1500.0, 1500.0], [0, 1]) == [1484.0, 1516.0]
    assert rate([1500.0, 1500.0], [0.5, 0.5]) == [1500.0, 1500.0]


def test_unequal_ratings_exact_numbers():
    # E(1600 vs 1400) = 1 / (1 + 10^(-200/400)) = 0.7597469...
    assert expected(1600, 1400) == pytest.approx(0.7597469266479578, abs=1e-15)
    assert rate([1600.0, 1400.0], [1, 0]) == pytest.approx([1607.6880983472654, 1392.3119016527346], abs=1e-9)
    assert rate([1600.0, 1400.0], [0, 1]) == pytest.approx([1575.6880983472654, 1424.3119016527346], abs=1e-9)
    assert rate([1600.0, 1400.0], [0.5, 0.5]) == pytest.approx([1591.6880983472654, 1408.3119016527346], abs=1e-9)


def test_rating_points_are_conserved_between_rated_seats():
    new = rate([1712.0, 1388.0, 1500.0, 1450.0], [3, 0, 2, 2])
    assert sum(new) == pytest.approx(1712.0 + 1388.0 + 1500.0 + 1450.0)


def test_more_seats_pairwise_by_score():
    # Each pair scored like a game; K shared among the opponents, so one match moves at most K.
    assert rate([1500.0, 1500.0, 1500.0], [3, 2, 1]) == [1516.0, 1500.0, 1484.0]
    assert rate([1500.0, 1500.0, 1500.0], [1, 1, 0]) == [1508.0, 1508.0, 1484.0]


def test_unrated_seats_change_nothing_and_are_ignored():
    assert rate([1500.0, None], [1, 0]) == [1500.0, None]
    assert rate([None, None], [1, 0]) == [None, None]
    # The guest in seat 1 won, but only the two rated seats are compared with each other.
    assert rate([1500.0, None, 1500.0], [0.5, 1, 0]) == [1516.0, None, 1484.0]


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        rate([1500.0, 1500.0], [1])


def test_outcome():
    assert [outcome([1, 0], i) for i in (0, 1)] == [WIN, LOSS]
    assert [outcome([0.5, 0.5], i) for i in (0, 1)] == [DRAW, DRAW]
    assert [outcome([2, 2, 1], i) for i in range(3)] == [DRAW, DRAW, LOSS]
