"""Match statistics (gamed.stats): published reference numbers, invariants of the estimate and the
LLR, the SPRT's validation, and simulated SPRT matches whose error rates must fit alpha and beta."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.simulation import GameModel
from gamed.stats import Estimate, Pentanomial, Sprt, Trinomial, elo, estimate, expected_score


# -- elo ---------------------------------------------------------------------------------------


def test_elo_of_known_scores():
    assert elo(0.5) == 0.0
    assert elo(0.75) == pytest.approx(190.848501887865, abs=1e-9)  # 400 log10(3)
    assert elo(0.25) == pytest.approx(-190.848501887865, abs=1e-9)
    assert elo(expected_score(123.4)) == pytest.approx(123.4, abs=1e-9)


def test_elo_of_certain_scores_is_infinite_and_nonsense_is_rejected():
    assert elo(1.0) == math.inf
    assert elo(0.0) == -math.inf
    for bad in (-0.01, 1.01, math.nan):
        with pytest.raises(ValueError, match="between 0 and 1"):
            elo(bad)


# -- result counts -----------------------------------------------------------------------------


def test_trinomial_and_pentanomial_games_and_score():
    t = Trinomial(wins=76, draws=0, losses=2)
    assert (t.games, t.score) == (78, pytest.approx(76 / 78))
    p = Pentanomial([0, 0, 2, 0, 37])
    assert (p.pairs, p.games, p.score) == (39, 78, pytest.approx(76 / 78))


def test_pentanomial_from_pair_scores_and_from_game_pairs():
    assert Pentanomial.from_pairs([2, 2, 1, 0.5, 1.5, 0]).counts == (1, 1, 1, 1, 2)
    # WL and DD both score 1: the same bucket
    assert Pentanomial.from_pairs([(1, 0), (0.5, 0.5), (0, 1), (1, 0.5), (0, 0.5)]).counts == (0, 1, 3, 1, 0)
    assert Trinomial.from_games([1, 0.5, 0, 1]) == Trinomial(2, 1, 1)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Trinomial(-1, 0, 0), "wins must be a whole number"),
        (lambda: Trinomial(1, 0.5, 0), "draws must be a whole number"),
        (lambda: Pentanomial([1, 2, 3]), "5 counts"),
        (lambda: Pentanomial.from_pairs([3]), "pair score must be"),
        (lambda: Pentanomial.from_pairs([(1, 2)]), "two game scores"),
        (lambda: Trinomial.from_games([0.25]), "game score must be"),
    ],
)
def test_bad_counts_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- published references ----------------------------------------------------------------------


def test_fastchess_example_elo_nelo_and_llr():
    # fastchess's README example: W76 L2 D0, pentanomial [0, 0, 2, 0, 37]
    pairs = Pentanomial([0, 0, 2, 0, 37])
    e = estimate(pairs)
    assert round(e.elo, 2) == 631.91
    assert round(e.nelo, 2) == 1056.68
    assert round(estimate(Trinomial(76, 0, 2)).elo, 2) == 631.91
    assert round(Sprt(0, 20, 0.05, 0.05, model="normalized").llr(pairs), 2) == 2.96


def test_js_example_normalized_llr_with_empty_buckets():
    # four of five buckets empty: the 1e-3 regularization decides the result
    assert round(Sprt(-1.75, 0.25, model="normalized").llr(Pentanomial([0, 0, 0, 0, 3])), 2) == 0.02


def test_openbench_example_logistic_trinomial_llr():
    # OpenBench's W4307 L4063 D8620, logistic [0, 3]: 2.99 with the logistic GSPRT
    # (BayesElo-based tools print 2.47 for the same numbers; this module has no BayesElo model)
    assert round(Sprt(0, 3).llr(Trinomial(wins=4307, draws=8620, losses=4063)), 2) == 2.99


def _penta(ww, wd, wl, dd, ld, ll):
    return Pentanomial([ll, ld, wl + dd, wd, ww])


@pytest.mark.parametrize(
    "sprt, results, expected",
    [
        (Sprt(0, 2, model="normalized"), Trinomial(36433, 68692, 36027), 0.92),
        (Sprt(-1.75, 0.25, model="normalized"), Trinomial(10871, 20431, 10650), 2.30),
        (Sprt(0, 10, model="normalized"), Trinomial(4250, 0, 0), 120.56),
        (Sprt(0.5, 2.5), Trinomial(21404, 40708, 21184), -1.57),
        (Sprt(0, 2), Trinomial(57433, 106593, 57030), -2.59),
        (Sprt(0, 2, model="normalized"), _penta(390, 16974, 36029, 200, 16618, 365), 2.25),
        (Sprt(-1.75, 0.25, model="normalized"), _penta(104, 5150, 10311, 401, 4883, 127), 3.01),
        (Sprt(0, 5, model="normalized"), _penta(5550, 0, 0, 0, 0, 0), 111.82),
        (Sprt(0.5, 2.5), _penta(246, 10037, 20279, 1000, 9863, 223), -3.07),
        (Sprt(0, 2), _penta(821, 26678, 55003, 980, 26175, 871), -4.98),
    ],
)
def test_fastchess_unit_test_values(sprt, results, expected):
    # the expectations of fastchess's SPRT unit tests (W D L; WW WD WL DD LD LL), which compare
    # with a 1 % tolerance; the two all-wins cases differ in the second decimal (120.55, 111.80)
    # because fastchess stops its iterations earlier
    assert sprt.llr(results) == pytest.approx(expected, rel=0.01)


def test_bounds_are_walds():
    sprt = Sprt(0, 5, alpha=0.05, beta=0.1)
    assert sprt.lower == pytest.approx(math.log(0.1 / 0.95))
    assert sprt.upper == pytest.approx(math.log(0.9 / 0.05))
    assert (Sprt(0, 5).lower, Sprt(0, 5).upper) == (pytest.approx(-2.944438979), pytest.approx(2.944438979))


def test_status_follows_the_bounds():
    sprt = Sprt(0, 20, model="normalized")
    assert sprt.status(Pentanomial([0, 0, 2, 0, 37])) == "H1"  # 2.96 >= 2.94
    assert sprt.status(Pentanomial([37, 0, 2, 0, 0])) == "H0"
    assert sprt.status(Pentanomial([1, 2, 3, 2, 1])) is None
    assert sprt.llr(Pentanomial([0, 0, 0, 0, 0])) == 0.0
    assert sprt.status(Trinomial(0, 0, 0)) is None


# -- estimate ----------------------------------------------------------------------------------


def test_estimate_of_an_even_match():
    e = estimate(Trinomial(10, 20, 10))
    assert (e.elo, e.nelo, e.los, e.score, e.games) == (0.0, 0.0, 0.5, 0.5, 40)
    assert e.low == pytest.approx(-e.high)
    assert e.low < 0 < e.high


def test_trinomial_los_is_the_usual_formula():
    e = estimate(Trinomial(wins=30, draws=10, losses=20))
    assert e.los == pytest.approx(0.5 * (1 + math.erf(10 / math.sqrt(2 * 50))))


def test_estimate_interval_from_the_standard_error():
    # pair scores 2, 1, 1, 0 -> halved 1, .5, .5, 0: mean .5, sd sqrt(1/8), se sqrt(1/8)/2
    e = estimate(Pentanomial([1, 0, 2, 0, 1]), confidence=0.95)
    se = math.sqrt(1 / 8) / 2
    assert e.high == pytest.approx(elo(0.5 + 1.959963984540054 * se))
    assert e.low == pytest.approx(elo(0.5 - 1.959963984540054 * se))


def test_estimate_without_games_or_with_a_bad_confidence_is_rejected():
    with pytest.raises(ValueError, match="at least one game"):
        estimate(Trinomial(0, 0, 0))
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        estimate(Trinomial(1, 0, 0), confidence=1.0)


def test_all_draws_and_all_wins():
    draws = estimate(Pentanomial([0, 0, 5, 0, 0]))
    assert (draws.elo, draws.low, draws.high, draws.nelo, draws.los) == (0.0, 0.0, 0.0, 0.0, 0.5)
    wins = estimate(Trinomial(5, 0, 0))
    assert (wins.elo, wins.high, wins.nelo) == (math.inf, math.inf, math.inf)
    assert wins.los == pytest.approx(0.5 * (1 + math.erf(5 / math.sqrt(10))))


trinomials = st.builds(Trinomial, st.integers(0, 500), st.integers(0, 500), st.integers(0, 500)).filter(
    lambda t: t.games > 0
)
pentanomials = st.builds(Pentanomial, st.lists(st.integers(0, 300), min_size=5, max_size=5)).filter(
    lambda p: p.pairs > 0
)


@given(st.one_of(trinomials, pentanomials), st.floats(0.5, 0.999))
def test_estimate_lies_in_its_interval(results, confidence):
    e = estimate(results, confidence)
    assert isinstance(e, Estimate)
    assert e.low <= e.elo <= e.high
    assert e.nelo_low <= e.nelo <= e.nelo_high
    assert 0.0 <= e.los <= 1.0
    assert (e.los > 0.5) == (e.score > 0.5) or e.los == 0.5


# -- SPRT invariants ---------------------------------------------------------------------------

models = st.sampled_from(["logistic", "normalized"])
bounds = st.tuples(st.floats(-40, 40), st.floats(0.5, 30)).map(lambda b: (b[0], b[0] + b[1]))


def _mirror(results):
    if isinstance(results, Trinomial):
        return Trinomial(results.losses, results.draws, results.wins)
    return Pentanomial(results.counts[::-1])


@given(st.one_of(trinomials, pentanomials), bounds, models)
def test_llr_is_symmetric_when_results_and_bounds_are_mirrored(results, elo_bounds, model):
    elo0, elo1 = elo_bounds
    llr = Sprt(elo0, elo1, model=model).llr(results)
    mirrored = Sprt(-elo1, -elo0, model=model).llr(_mirror(results))
    assert mirrored == pytest.approx(-llr, rel=1e-6, abs=1e-6)


@given(st.one_of(trinomials, pentanomials), bounds)
def test_llr_sign_follows_the_score_in_the_logistic_model(results, elo_bounds):
    elo0, elo1 = elo_bounds
    llr = Sprt(elo0, elo1).llr(results)
    middle = (expected_score(elo0) + expected_score(elo1)) / 2
    # regularization moves the score a little; only clear cases are asserted
    if results.score > middle + 0.02:
        assert llr > 0
    elif results.score < middle - 0.02:
        assert llr < 0


@given(pentanomials, bounds, models, st.integers(2, 4))
def test_llr_grows_with_the_evidence(results, elo_bounds, model, factor):
    # the same distribution observed `factor` times as often: the LLR scales with it (up to the
    # regularization of empty buckets, which is not scaled)
    sprt = Sprt(*elo_bounds, model=model)
    more = Pentanomial([c * factor for c in results.counts])
    assert abs(sprt.llr(more)) >= abs(sprt.llr(results)) - 1e-6 or min(results.counts) == 0


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((5, 5), "elo0 must be less than elo1"),
        ((5, 0), "elo0 must be less than elo1"),
        ((0, 5, 0.0, 0.05), "alpha must be between 0 and 0.5"),
        ((0, 5, 0.05, 0.5), "beta must be between 0 and 0.5"),
        ((0, 5, -0.1, 0.05), "alpha must be between 0 and 0.5"),
        ((math.nan, 5), "elo0 must be a finite number"),
        ((0, math.inf), "elo1 must be a finite number"),
        ((0, 5, 0.05, 0.05, "bayesian"), "model must be 'logistic' or 'normalized'"),
        ((0, 8000), "expects a score of 0 or 1"),
        ((0, 8000, 0.05, 0.05, "normalized"), "between -5000 and 5000"),
        (("0", 5), "elo0 must be a finite number"),
    ],
)
def test_impossible_sprt_is_rejected_with_one_sentence(arguments, message):
    with pytest.raises(ValueError, match=message) as raised:
        Sprt(*arguments)
    assert str(raised.value).count(". ") == 0


# -- simulated SPRT matches --------------------------------------------------------------------

MATCHES = 200
MAX_PAIRS = 2000


def _play_match(sprt, model, strength, rng, pentanomial=True):
    """Pairs until the SPRT decides (or MAX_PAIRS, counted as undecided): (status, games)."""
    counts = [0] * 5
    wins = draws = losses = 0
    for pairs in range(1, MAX_PAIRS + 1):
        first, second = model.pair(strength, rng)
        counts[int(2 * (first + second))] += 1
        for score in (first, second):
            wins, draws, losses = wins + (score == 1), draws + (score == 0.5), losses + (score == 0)
        results = Pentanomial(counts) if pentanomial else Trinomial(wins, draws, losses)
        status = sprt.status(results)
        if status:
            return status, 2 * pairs
    return None, 2 * MAX_PAIRS


def _rates(sprt, model, strength, seed, matches=MATCHES, pentanomial=True):
    rng = random.Random(seed)
    outcomes = [_play_match(sprt, model, strength, rng, pentanomial)[0] for _ in range(matches)]
    return outcomes.count("H0") / matches, outcomes.count("H1") / matches, outcomes.count(None)


BOOK = GameModel.with_book(random.Random(7), draw_rate=0.35, size=30, bias=50.0)


def test_simulated_games_follow_the_model():
    # the sampled pairs match the exact pentanomial distribution the error-rate tests rely on
    rng = random.Random(1)
    strength = 40.0
    counts = Pentanomial.from_pairs(BOOK.pair(strength, rng) for _ in range(20000)).counts
    expected = BOOK.pair_distribution(strength)
    for seen, p in zip(counts, expected, strict=True):
        assert seen / 20000 == pytest.approx(p, abs=0.01)
    assert BOOK.measured_elo(BOOK.strength_for(25.0)) == pytest.approx(25.0, abs=1e-6)
    draw = BOOK.pair_sampler(strength)
    sampled = Pentanomial.from_pairs(draw(rng) for _ in range(20000)).counts
    for seen, p in zip(sampled, expected, strict=True):
        assert seen / 20000 == pytest.approx(p, abs=0.01)


def test_sprt_on_the_bounds_errs_at_most_at_alpha_and_beta():
    # a bot exactly elo0 stronger must rarely pass (H1 at most alpha), one exactly elo1 stronger
    # must rarely fail (H0 at most beta); 200 matches each, margin 4 points (about 2 standard
    # errors of a 5 % rate)
    sprt = Sprt(0, 50, alpha=0.05, beta=0.05)
    h0, h1, undecided = _rates(sprt, BOOK, BOOK.strength_for(0.0), seed=11)
    assert h1 <= 0.05 + 0.04 and undecided == 0
    h0, h1, undecided = _rates(sprt, BOOK, BOOK.strength_for(50.0), seed=12)
    assert h0 <= 0.05 + 0.04 and undecided == 0


def test_sprt_outside_the_bounds_decides_correctly():
    # 30 Elo beyond a bound the wrong decision is much rarer than alpha or beta (about 1 %)
    sprt = Sprt(0, 50)
    h0, h1, _ = _rates(sprt, BOOK, BOOK.strength_for(-30.0), seed=13, matches=50)
    assert h0 >= 0.96
    h0, h1, _ = _rates(sprt, BOOK, BOOK.strength_for(80.0), seed=14, matches=50)
    assert h1 >= 0.96


def test_sprt_with_trinomial_counts_also_keeps_its_error_rates():
    # the trinomial ignores the pairing; it stays valid (pairs only lower the variance) but slower
    sprt = Sprt(0, 60, alpha=0.1, beta=0.1)
    _, h1, _ = _rates(sprt, BOOK, BOOK.strength_for(0.0), seed=15, matches=100, pentanomial=False)
    assert h1 <= 0.1 + 0.06
    h0, _, _ = _rates(sprt, BOOK, BOOK.strength_for(60.0), seed=16, matches=100, pentanomial=False)
    assert h0 <= 0.1 + 0.06


def test_normalized_sprt_on_the_bounds():
    sprt = Sprt(0, 60, alpha=0.1, beta=0.1, model="normalized")
    at = BOOK.strength_for
    _, h1, _ = _rates(sprt, BOOK, at(0.0, BOOK.measured_nelo), seed=17, matches=50)
    assert h1 <= 0.1 + 0.08
    h0, _, _ = _rates(sprt, BOOK, at(60.0, BOOK.measured_nelo), seed=18, matches=50)
    assert h0 <= 0.1 + 0.08


def test_pairs_decide_faster_than_single_games():
    # the point of pentanomial counting: the same decisions with fewer games
    sprt = Sprt(0, 50)
    strength = BOOK.strength_for(50.0)
    rng = random.Random(19)
    penta = sum(_play_match(sprt, BOOK, strength, rng)[1] for _ in range(40))
    rng = random.Random(19)
    tri = sum(_play_match(sprt, BOOK, strength, rng, pentanomial=False)[1] for _ in range(40))
    assert penta < tri


def test_one_pair_or_one_game_has_an_unbounded_interval_not_a_point():
    one_pair = estimate(Pentanomial((0, 0, 1, 0, 0)))
    assert (one_pair.elo, one_pair.low, one_pair.high, one_pair.los) == (0.0, -math.inf, math.inf, 0.5)
    one_game = estimate(Trinomial(0, 1, 0))
    assert (one_game.low, one_game.high) == (-math.inf, math.inf)
    two_pairs = estimate(Pentanomial((0, 0, 2, 0, 0)))
    assert two_pairs.low == two_pairs.high == 0.0, "identical pairs: no spread (as fastchess reports it)"
