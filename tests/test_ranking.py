"""Ranking a field by confidence (gamed.ranking): the maximum likelihood ratings on hand-computable
data, their covariance, validation, and the scheduler on simulated fields of known strength."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.ranking import ConfidenceRanking, Outcome, fit_ratings
from gamed.simulation import GameModel

SLOPE = math.log(10) / 400


# -- the fit -----------------------------------------------------------------------------------


def test_two_players_without_prior_give_400_log10_w_over_l():
    outcomes = [Outcome("a", "b", 1, games=1)] * 30 + [Outcome("a", "b", 0, games=1)] * 10
    fit = fit_ratings(["a", "b"], outcomes, prior_games=0)
    assert fit.rating("a") - fit.rating("b") == pytest.approx(400 * math.log10(30 / 10), abs=1e-6)
    assert fit.rating("a") + fit.rating("b") == pytest.approx(0, abs=1e-9)  # the mean is the anchor


def test_two_players_draws_count_half_and_the_deviation_is_the_fisher_one():
    # 20 pairs: a scores 12 + 6 + 6 + 1 + 0 = 25 of 40 games
    pairs = [Outcome("a", "b", 2)] * 6 + [Outcome("a", "b", 1.5)] * 4 + [Outcome("a", "b", 1)] * 6
    pairs += [Outcome("a", "b", 0.5)] * 2 + [Outcome("b", "a", 2)] * 2
    fit = fit_ratings(["a", "b"], pairs, prior_games=0)
    assert fit.rating("a") - fit.rating("b") == pytest.approx(400 * math.log10(25 / 15), abs=1e-6)
    p = 25 / 40
    fisher = SLOPE**2 * 40 * p * (1 - p)
    assert fit.difference_deviation("a", "b") == pytest.approx(math.sqrt(fit.dispersion / fisher), rel=1e-9)
    assert fit.deviation("a") == pytest.approx(fit.difference_deviation("a", "b") / 2, rel=1e-9)
    # the pairs vary less than binomial games would: the dispersion says so
    assert fit.dispersion < 1


def test_symmetric_results_give_equal_ratings():
    cycle = [Outcome("a", "b", 1.5), Outcome("b", "c", 1.5), Outcome("c", "a", 1.5)] * 3
    fit = fit_ratings(["a", "b", "c"], cycle)
    assert fit.ratings == pytest.approx((0, 0, 0), abs=1e-6)
    assert fit.better("a", "b") == pytest.approx(0.5, abs=1e-6)


def test_a_perfect_score_is_finite_with_the_prior_and_rejected_without():
    sweep = [Outcome("a", "b", 2)] * 5
    fit = fit_ratings(["a", "b"], sweep)
    # 1 virtual draw: a scores 10.5 of 11 games
    assert fit.rating("a") - fit.rating("b") == pytest.approx(400 * math.log10(10.5 / 0.5), abs=1e-6)
    with pytest.raises(ValueError, match="no finite maximum|did not converge"):
        fit_ratings(["a", "b"], sweep, prior_games=0)


def test_a_player_without_games_has_an_infinite_interval():
    fit = fit_ratings(["a", "b", "idle"], [Outcome("a", "b", 1.5)] * 4)
    rows = {s.player: s for s in fit.standings()}
    assert rows["idle"].games == 0 and rows["idle"].low == -math.inf and rows["idle"].high == math.inf
    assert fit.better("a", "idle") == 0.5
    assert [s.player for s in fit.standings()][0] == "a"
    assert [s.rank for s in fit.standings()] == [1, 2, 3]


def test_players_not_connected_to_the_field_are_unknown():
    outcomes = [Outcome("a", "b", 2), Outcome("b", "c", 1.5), Outcome("d", "e", 2)]
    fit = fit_ratings(["a", "b", "c", "d", "e"], outcomes)
    rows = {s.player: s for s in fit.standings()}
    assert all(math.isfinite(rows[p].high) for p in "abc")
    assert all(rows[p].high == math.inf and rows[p].games == 2 for p in "de")
    assert [s.player for s in fit.standings()][3:] == ["d", "e"]
    assert fit.better("d", "e") == 0.5 and fit.better("a", "d") == 0.5
    assert sum(fit.rating(p) for p in "abc") == pytest.approx(0, abs=1e-9)


def test_standings_during_the_opening_cycle():
    ranking = ConfidenceRanking(["a", "b", "c", "d"])
    ranking.next_pairs(4)
    ranking.record("a", "b", 2)
    ranking.record("c", "d", 2)  # two separate groups so far
    assert len(ranking.standings()) == 4
    assert not ranking.settled()


def test_standings_interval_is_the_normal_one():
    fit = fit_ratings(["a", "b", "c"], [Outcome("a", "b", 1.5), Outcome("b", "c", 1), Outcome("a", "c", 2)] * 3)
    for s in fit.standings(confidence=0.95):
        assert s.high - s.rating == pytest.approx(1.959963984540054 * fit.deviation(s.player))
        assert s.low < s.rating < s.high


@pytest.mark.parametrize(
    "players, outcomes, message",
    [
        (["a", "b"], [Outcome("a", "x", 1)], "unknown player 'x'"),
        (["a", "a"], [], "distinct"),
    ],
)
def test_bad_fits_are_rejected(players, outcomes, message):
    with pytest.raises(ValueError, match=message):
        fit_ratings(players, outcomes)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Outcome("a", "a", 1), "cannot play itself"),
        (lambda: Outcome("a", "b", 2.5), "multiple of 0.5 between 0 and 2"),
        (lambda: Outcome("a", "b", 0.3), "multiple of 0.5"),
        (lambda: Outcome("a", "b", 1, games=0), "multiple of 0.5"),
    ],
)
def test_bad_outcomes_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


names = ["p0", "p1", "p2", "p3"]
def _outcomes(draw_list):
    # a chain so the field is connected, plus the drawn results
    return [Outcome("p0", "p1", 1), Outcome("p1", "p2", 1), Outcome("p2", "p3", 1)] + draw_list


outcome_lists = st.lists(
    st.tuples(st.sampled_from(names), st.sampled_from(names), st.sampled_from([0, 0.5, 1, 1.5, 2])).filter(
        lambda t: t[0] != t[1]
    ),
    max_size=30,
).map(lambda ts: _outcomes([Outcome(*t) for t in ts]))


@given(outcome_lists)
def test_fit_invariants(outcomes):
    fit = fit_ratings(names, outcomes)
    assert sum(fit.ratings) == pytest.approx(0, abs=1e-6)
    # who is called first does not matter
    flipped = fit_ratings(names, [Outcome(o.second, o.first, o.games - o.score, o.games) for o in outcomes])
    assert flipped.ratings == pytest.approx(fit.ratings, abs=1e-6)
    # nor the order of the players
    reordered = fit_ratings(names[::-1], outcomes)
    assert reordered.ratings == pytest.approx(fit.ratings[::-1], abs=1e-6)
    # every result reversed: every rating negated
    mirrored = fit_ratings(names, [Outcome(o.first, o.second, o.games - o.score, o.games) for o in outcomes])
    assert mirrored.ratings == pytest.approx([-r for r in fit.ratings], abs=1e-6)
    for a in names:
        for b in names:
            if a != b:
                assert fit.better(a, b) == pytest.approx(1 - fit.better(b, a), abs=1e-9)
                assert (fit.better(a, b) > 0.5) == (fit.rating(a) > fit.rating(b) + 1e-9) or abs(
                    fit.rating(a) - fit.rating(b)
                ) < 1e-6


# -- the scheduler -----------------------------------------------------------------------------


def test_the_scheduler_starts_with_a_cycle_and_counts_pending_pairs():
    ranking = ConfidenceRanking(["a", "b", "c", "d"])
    first = ranking.next_pairs(10)
    assert first == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    assert ranking.next_pairs(10) == []  # all pending: record them first
    assert not ranking.settled() and not ranking.finished
    for a, b in first[:3]:
        ranking.record(a, b, 2)
    assert ranking.next_pairs(10) == []  # ("d", "a") is still pending
    ranking.record("d", "a", 0)
    assert ranking.games == 8
    following = ranking.next_pairs(3)
    assert len(following) == 3
    # only neighbours in the current order are scheduled
    order = [s.player for s in ranking.standings()]
    assert order == ["a", "b", "c", "d"]
    assert all(abs(order.index(x) - order.index(y)) == 1 for x, y in following)


def test_two_players_are_one_matchup():
    ranking = ConfidenceRanking(["a", "b"])
    assert ranking.next_pairs(5) == [("a", "b")]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((["a"],), "at least two distinct players"),
        ((["a", "a"],), "at least two distinct players"),
        ((["a", "b"], 0.5), "confidence must be between 0.5 and 1"),
        ((["a", "b", "c"], 0.95, 3), "top_k must be between 1 and 2"),
        ((["a", "b"], 0.95, None, 1), "max_games must be at least 2"),
        ((["a", "b"], 0.95, None, None, -1.0), "prior_games must be a finite number"),
        ((["a", "b"], 0.95, None, None, math.nan), "prior_games must be a finite number"),
    ],
)
def test_bad_rankings_are_rejected(arguments, message):
    with pytest.raises(ValueError, match=message):
        ConfidenceRanking(*arguments)


def test_bad_records_are_rejected():
    ranking = ConfidenceRanking(["a", "b"])
    with pytest.raises(ValueError, match="unknown player 'z'"):
        ranking.record("a", "z", 1)
    with pytest.raises(ValueError, match="pair score must be"):
        ranking.record("a", "b", 3)


def _run(strengths, seed, top_k=None, max_games=None, batch=4):
    """A confidence ranking of bots with these true strengths (shuffled): (ranking, truth)."""
    rng = random.Random(seed)
    bots = [f"bot{i}" for i in range(len(strengths))]
    rng.shuffle(bots)
    truth = dict(zip(bots, strengths))
    model = GameModel.with_book(random.Random(seed + 100), draw_rate=0.35, size=30, bias=50.0)
    ranking = ConfidenceRanking(bots, top_k=top_k, max_games=max_games)
    while not ranking.finished:
        pairs = ranking.next_pairs(batch)
        assert pairs
        for a, b in pairs:
            ranking.record(a, b, sum(model.pair(truth[a] - truth[b], rng)))
    return ranking, sorted(bots, key=lambda b: -truth[b])


def test_a_simulated_field_is_ranked_correctly_and_the_ranking_stops():
    # 7 bots 100 Elo apart; 10 fixed seeds, each run must settle and get the order right
    strengths = [100.0 * i for i in range(7)]
    for seed in range(10):
        ranking, truth = _run(strengths, seed)
        assert ranking.settled()
        assert [s.player for s in ranking.standings()] == truth, seed
        # a round robin that plays every matchup once already costs 42 games: this is a few of those
        assert ranking.games < 10 * 42


def test_a_field_with_uneven_gaps_is_ranked_correctly():
    strengths = [0.0, 50.0, 180.0, 230.0, 380.0, 430.0]
    correct = 0
    for seed in range(8):
        ranking, truth = _run(strengths, seed)
        correct += [s.player for s in ranking.standings()] == truth
    assert correct >= 7


def test_top_k_finds_the_best_and_plays_less():
    strengths = [70.0 * i for i in range(8)]
    full_games = top_games = 0
    for seed in range(6):
        ranking, truth = _run(strengths, seed, top_k=2)
        assert ranking.settled()
        assert [s.player for s in ranking.standings()][:2] == truth[:2], seed
        top_games += ranking.games
        full_games += _run(strengths, seed)[0].games
    assert top_games < full_games / 1.5


def test_the_budget_stops_the_ranking():
    ranking, _ = _run([0.0, 5.0, 10.0, 15.0], seed=1, max_games=60)
    assert ranking.finished and not ranking.settled()
    assert ranking.games <= 60
    assert ranking.next_pairs(4) == []


def test_settled_rankings_order_neighbours_at_the_confidence():
    ranking, _ = _run([0.0, 120.0, 240.0, 360.0], seed=3)
    fit = ranking.fit()
    order = [s.player for s in ranking.standings()]
    assert all(fit.better(a, b) >= 0.95 for a, b in zip(order, order[1:]))
    assert ranking.next_pairs(2) == []
