"""Match statistics for bot competitions: Elo from a score, its confidence interval, LOS, normalized
Elo, and the sequential probability ratio test (SPRT) that decides a match between two bots.

Pure arithmetic on counts: no I/O, no clock, no global state.

Results come in two shapes:

- ``Trinomial(wins, draws, losses)``: single games, counted from the first bot's side.
- ``Pentanomial(counts)``: game *pairs* (one opening played twice, the colours swapped), counted by
  the first bot's pair score 0, 0.5, 1, 1.5, 2 in the order fastchess and fishtest use:
  ``[LL, LD+DL, LW+WL+DD, WD+DW, WW]``. Pairs cancel most of an opening's bias, so the pair
  variance is smaller than two independent games' and a pentanomial test needs fewer games.

The SPRT is the generalized SPRT of fishtest's ``LLRcalc`` and fastchess's ``sprt.cpp`` (after
Michel Van den Bergh, "Comments on Normalized Elo"): the log-likelihood ratio of the maximum
likelihood result distributions under the constraint that the expected score (``logistic`` model)
or the normalized score (``normalized`` model) equals each hypothesis' value. It is *not* the
BayesElo model of cutechess and older OpenBench (which gives other numbers, e.g. 2.47 instead of
2.99 for W4307 L4063 D8620 with logistic bounds [0, 3]).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

import attrs

# nElo per unit of t-value ((mu - 0.5) / sigma): 800 / ln 10, the slope of logistic Elo at score 0.5
NELO_PER_T = 800.0 / math.log(10.0)

# Empty buckets get this count before a likelihood is computed, as fishtest and fastchess do: an
# MLE with a zero probability would make the LLR jump to infinity on the first result of a kind.
REGULARIZATION = 1e-3

MODELS = ("logistic", "normalized")
_TRINOMIAL_VALUES = (0.0, 0.5, 1.0)  # loss, draw, win
_PENTANOMIAL_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)  # pair score / 2, LL .. WW


def elo(score: float) -> float:
    """The logistic Elo difference that expects ``score`` (0..1): -400 log10(1/score - 1).

    A score of 0 gives -inf and a score of 1 gives +inf (nothing finite expects them); anything
    outside [0, 1] or NaN raises ValueError."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a score must be between 0 and 1, not {score!r}")
    if score == 0.0:
        return -math.inf
    if score == 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def expected_score(elo_difference: float) -> float:
    """The score (0..1) that logistic Elo expects of a player ``elo_difference`` points stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo_difference / 400.0))


def _count(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a whole number of at least 0, not {value!r}")
    return value


@attrs.frozen
class Trinomial:
    """Single-game results from the first bot's side: wins, draws and losses."""

    wins: int = attrs.field(converter=lambda v: _count(v, "wins"))
    draws: int = attrs.field(converter=lambda v: _count(v, "draws"))
    losses: int = attrs.field(converter=lambda v: _count(v, "losses"))

    @classmethod
    def from_games(cls, scores: Iterable[float]) -> Trinomial:
        """Counts of game scores 1 (win), 0.5 (draw) and 0 (loss); anything else is a ValueError."""
        tally = {1.0: 0, 0.5: 0, 0.0: 0}
        for score in scores:
            if score not in tally:
                raise ValueError(f"a game score must be 0, 0.5 or 1, not {score!r}")
            tally[float(score)] += 1
        return cls(tally[1.0], tally[0.5], tally[0.0])

    @property
    def games(self) -> int:
        """How many games were played."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """The mean score per game (0..1); NaN without games."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else math.nan

    def _distribution(self) -> tuple[tuple[float, ...], tuple[int, ...]]:
        return _TRINOMIAL_VALUES, (self.losses, self.draws, self.wins)


def _pentanomial_counts(value: Sequence[int]) -> tuple[int, ...]:
    counts = tuple(value)
    if len(counts) != 5:
        raise ValueError(f"a pentanomial has 5 counts [LL, LD+DL, LW+WL+DD, WD+DW, WW], not {len(counts)}")
    return tuple(_count(c, "a pentanomial count") for c in counts)


@attrs.frozen
class Pentanomial:
    """Game pairs (same opening, colours swapped) counted by the first bot's pair score
    0, 0.5, 1, 1.5, 2: ``[LL, LD+DL, LW+WL+DD, WD+DW, WW]``."""

    counts: tuple[int, int, int, int, int] = attrs.field(converter=_pentanomial_counts)

    @classmethod
    def from_pairs(cls, pairs: Iterable[float | tuple[float, float]]) -> Pentanomial:
        """Counts of pair results: each a pair score (0, 0.5, 1, 1.5 or 2) or the two game scores
        (each 0, 0.5 or 1) of the pair, from the first bot's side."""
        counts = [0] * 5
        for pair in pairs:
            if isinstance(pair, tuple):
                if len(pair) != 2 or any(g not in (0, 0.5, 1) for g in pair):
                    raise ValueError(f"a pair is two game scores of 0, 0.5 or 1, not {pair!r}")
                total = pair[0] + pair[1]
            else:
                total = pair
            if total not in (0, 0.5, 1, 1.5, 2):
                raise ValueError(f"a pair score must be 0, 0.5, 1, 1.5 or 2, not {pair!r}")
            counts[int(total * 2)] += 1
        return cls(counts)

    @property
    def pairs(self) -> int:
        """How many game pairs were played."""
        return sum(self.counts)

    @property
    def games(self) -> int:
        """How many games were played (two per pair)."""
        return 2 * self.pairs

    @property
    def score(self) -> float:
        """The mean score per game (0..1); NaN without games."""
        if not self.pairs:
            return math.nan
        return sum(c * v for c, v in zip(self.counts, _PENTANOMIAL_VALUES, strict=True)) / self.pairs

    def _distribution(self) -> tuple[tuple[float, ...], tuple[int, ...]]:
        return _PENTANOMIAL_VALUES, self.counts


Results = Trinomial | Pentanomial


def _mean_and_variance(values: Sequence[float], probabilities: Sequence[float]) -> tuple[float, float]:
    mu = sum(v * p for v, p in zip(values, probabilities, strict=True))
    return mu, sum(p * (v - mu) ** 2 for v, p in zip(values, probabilities, strict=True))


@attrs.frozen
class Estimate:
    """What a set of results says about the first bot's strength relative to the second.

    ``elo`` with its interval [``low``, ``high``] at ``confidence``, from the score's standard
    error (per game for a trinomial, per pair for a pentanomial); ``los`` is the likelihood of
    superiority (the probability that the first bot is the stronger); ``nelo`` is normalized Elo as
    fastchess reports it, with its interval [``nelo_low``, ``nelo_high``]."""

    elo: float
    low: float
    high: float
    los: float
    score: float
    games: int
    nelo: float
    nelo_low: float
    nelo_high: float
    confidence: float


def _clamped_elo(score: float) -> float:
    return elo(min(1.0, max(0.0, score)))


def _ratio(numerator: float, denominator: float) -> float:
    # zero spread: every unit scored the same, so only "no difference" is finite
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator == 0 else math.copysign(math.inf, numerator)


def estimate(results: Results, confidence: float = 0.95) -> Estimate:
    """Elo, its confidence interval, LOS and normalized Elo of ``results`` (no regularization).

    The interval is elo(score -/+ z * standard error), z the two-sided normal quantile of
    ``confidence``; an end beyond a score of 0 or 1 is -inf/+inf. LOS is 0.5 (1 + erf((W - L) /
    sqrt(2 (W + L)))) for a trinomial, and for a pentanomial the normal probability (from the pair
    scores' standard error) that the score per game is above 0.5; 0.5 when nothing tells the bots
    apart. A single unit (one game, one pair) has an unbounded interval and a LOS of 0.5.
    ValueError without games or for a confidence outside (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"the confidence must be between 0 and 1 (exclusive), not {confidence!r}")
    values, counts = results._distribution()
    units = sum(counts)
    if not units:
        raise ValueError("an estimate needs at least one game")
    mu, variance = _mean_and_variance(values, [c / units for c in counts])
    sigma = math.sqrt(variance)
    # One game (one pair) says nothing of the spread: its interval is unbounded, not a point.
    error = sigma / math.sqrt(units) if units > 1 else math.inf
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    if isinstance(results, Trinomial):
        decisive = results.wins + results.losses
        los = 0.5 * (1.0 + math.erf((results.wins - results.losses) / math.sqrt(2.0 * decisive))) if decisive else 0.5
        nelo_sigma = sigma
    else:
        if error:
            los = NormalDist().cdf((mu - 0.5) / error)
        else:
            los = 0.5 if mu == 0.5 else float(mu > 0.5)
        # a pair is two games: sqrt(2) sigma_pair is the per-game spread fastchess normalizes by
        nelo_sigma = math.sqrt(2.0) * sigma
    return Estimate(
        elo=elo(mu),
        low=_clamped_elo(mu - z * error),
        high=_clamped_elo(mu + z * error),
        los=los,
        score=mu,
        games=results.games,
        nelo=_ratio(mu - 0.5, nelo_sigma) * NELO_PER_T,
        nelo_low=_ratio(mu - z * error - 0.5, nelo_sigma) * NELO_PER_T,
        nelo_high=_ratio(mu + z * error - 0.5, nelo_sigma) * NELO_PER_T,
        confidence=confidence,
    )


def _secular_root(weights: Sequence[float], phi: Sequence[float], tolerance: float = 1e-13) -> float:
    """The x in (-1 / max(phi), -1 / min(phi)) that solves sum w_i phi_i / (1 + x phi_i) = 0.

    The left side falls strictly from +inf to -inf over that interval, so Newton steps converge;
    a step that leaves the bracket of known signs is replaced by bisection."""
    low, high = -1.0 / max(phi), -1.0 / min(phi)
    x = 0.0
    for _ in range(200):
        value = slope = 0.0
        for w, f_i in zip(weights, phi, strict=True):
            term = f_i / (1.0 + x * f_i)
            value += w * term
            slope -= w * term * term
        if value == 0.0:
            return x
        if value > 0.0:
            low = x
        else:
            high = x
        step = x - value / slope
        # checked before the bracket test: at the root the step lands on the bracket's end
        if abs(step - x) <= tolerance * max(1.0, abs(x)):
            return step
        x = step if low < step < high else (low + high) / 2.0
        if high - low <= tolerance * max(1.0, abs(x)):
            return x
    return x


def _secular_solution(weights: Sequence[float], phi: Sequence[float]) -> list[float]:
    """The distribution ``w_i / (1 + x phi_i)`` whose x solves sum w_i phi_i / (1 + x phi_i) = 0:
    the maximum likelihood distribution (empirical weights ``w``) under the linear constraint
    sum p_i phi_i = 0 (Van den Bergh, proposition 1.1). Needs min(phi) < 0 < max(phi)."""
    x = _secular_root(weights, phi)
    return [w / (1.0 + x * f_i) for w, f_i in zip(weights, phi, strict=True)]


def mle_with_score(values: Sequence[float], weights: Sequence[float], score: float) -> list[float]:
    """The maximum likelihood result distribution whose expected score is ``score``, given the
    empirical distribution ``weights`` (all > 0, summing to 1) over ``values``."""
    return _secular_solution(weights, [v - score for v in values])


def mle_with_t_value(
    values: Sequence[float], weights: Sequence[float], t_value: float, reference: float = 0.5
) -> list[float]:
    """The maximum likelihood result distribution whose t-value (mu - reference) / sigma is
    ``t_value``, given the empirical distribution ``weights`` (all > 0, summing to 1) over
    ``values``: Van den Bergh's fixed-point iteration (section 4.1), from the uniform distribution."""
    probabilities = [1.0 / len(values)] * len(values)
    for _ in range(100):
        mu, variance = _mean_and_variance(values, probabilities)
        sigma = math.sqrt(variance)
        phi = [v - reference - 0.5 * t_value * sigma * (1.0 + ((v - mu) / sigma) ** 2) for v in values]
        updated = _secular_solution(weights, phi)
        change = max(abs(a - b) for a, b in zip(updated, probabilities, strict=True))
        probabilities = updated
        if change < 1e-12:
            break
    return probabilities


def _finite(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, not {value!r}")
    return float(value)


@attrs.frozen
class Sprt:
    """A sequential probability ratio test between H0 "the first bot is ``elo0`` stronger" and H1
    "it is ``elo1`` stronger", with false-positive rate ``alpha`` and false-negative rate ``beta``.

    ``model`` says what the bounds are: ``logistic`` Elo (the expected score) or ``normalized`` Elo
    (nElo, the t-value of the score; fastchess's default). Feed the results so far to ``status``
    after every game or pair: "H1" (accept H1, the bot is better), "H0" (accept H0) or None (play
    on)."""

    elo0: float = attrs.field(converter=lambda v: _finite(v, "elo0"))
    elo1: float = attrs.field(converter=lambda v: _finite(v, "elo1"))
    alpha: float = attrs.field(default=0.05, converter=lambda v: _finite(v, "alpha"))
    beta: float = attrs.field(default=0.05, converter=lambda v: _finite(v, "beta"))
    model: str = "logistic"

    def __attrs_post_init__(self) -> None:
        if self.elo0 >= self.elo1:
            raise ValueError(f"elo0 must be less than elo1, not {self.elo0:g} >= {self.elo1:g}")
        for name in ("alpha", "beta"):
            if not 0.0 < getattr(self, name) < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5 (exclusive), not {getattr(self, name)!r}")
        if self.model not in MODELS:
            raise ValueError(f"the model must be 'logistic' or 'normalized', not {self.model!r}")
        if self.model == "logistic":
            for bound in (self.elo0, self.elo1):
                if not 0.0 < expected_score(bound) < 1.0:
                    raise ValueError(f"an Elo bound of {bound:g} expects a score of 0 or 1; no result can test it")
        else:
            # any t-value is reachable with a small enough spread, but far beyond what a real match
            # shows the constrained MLE's fixed-point iteration loses its precision
            for bound in (self.elo0, self.elo1):
                if abs(bound) > 5000.0:
                    raise ValueError(f"a normalized Elo bound must be between -5000 and 5000, not {bound:g}")

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted: ln(beta / (1 - alpha))."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted: ln((1 - beta) / alpha)."""
        return math.log((1.0 - self.beta) / self.alpha)

    def llr(self, results: Results) -> float:
        """The log-likelihood ratio of H1 against H0 given ``results`` (0.0 without games).

        Empty buckets count as 1e-3 (``REGULARIZATION``), as in fishtest and fastchess, and the
        total is the regularized one: N * sum_i p_i ln(p1_i / p0_i), with p the regularized
        empirical distribution and p0, p1 its maximum likelihood versions under H0 and H1."""
        values, counts = results._distribution()
        if not sum(counts):
            return 0.0
        regularized = [float(c) if c else REGULARIZATION for c in counts]
        total = sum(regularized)
        weights = [c / total for c in regularized]
        if self.model == "logistic":
            p0 = mle_with_score(values, weights, expected_score(self.elo0))
            p1 = mle_with_score(values, weights, expected_score(self.elo1))
        else:
            # nElo is per game: a pair's t-value is sqrt(2) times a game's
            scale = math.sqrt(2.0) if isinstance(results, Pentanomial) else 1.0
            p0 = mle_with_t_value(values, weights, scale * self.elo0 / NELO_PER_T)
            p1 = mle_with_t_value(values, weights, scale * self.elo1 / NELO_PER_T)
        return total * sum(w * math.log(b / a) for w, a, b in zip(weights, p0, p1, strict=True))

    def status(self, results: Results) -> str | None:
        """The decision so far: "H1" once the LLR reaches ``upper``, "H0" once it reaches ``lower``,
        None (play on) in between."""
        ratio = self.llr(results)
        if ratio >= self.upper:
            return "H1"
        if ratio <= self.lower:
            return "H0"
        return None
