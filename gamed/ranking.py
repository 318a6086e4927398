"""Ranking a field of bots by confidence: maximum likelihood Elo ratings with their covariance, and a
scheduler that plays only the matchups whose order is not yet settled.

Pure arithmetic, no I/O. The rating model is Bradley-Terry on the logistic Elo scale: a player
rated d higher than its opponent expects the score 1 / (1 + 10^(-d / 400)) per game, a draw counting
half. Results come as ``Outcome`` units, normally a colour-swapped pair of games (score 0..2).

- ``fit_ratings`` finds the maximum likelihood ratings by Newton's method, the mean of the rated
  field (the largest group of players connected by games) anchored at 0; anyone else has an
  infinite interval. Every matchup that was played gets ``prior_games`` virtual drawn
  games (1 by default, the same idea as BayesElo's prior), so that a player who won every game
  still has a finite rating. The covariance is the inverse Fisher information under the anchor
  (the pseudo-inverse of the weighted Laplacian), times a dispersion factor: the Pearson
  chi-square of the units over its degrees of freedom, shrunk towards 1 by
  ``DISPERSION_PRIOR_UNITS`` units. Draws and colour-swapped pairs make the real score variance
  smaller than the binomial p (1 - p) per game; the factor lets the intervals say so
  (quasi-likelihood) instead of assuming no draws.
- ``ConfidenceRanking`` schedules pairs: first a cycle (player i against player i + 1, the last
  against the first), so that every player plays twice and the field is connected; then, for the
  current order, the questions "is the player at rank r above the one at rank r + 1" (all adjacent
  ranks; with ``top_k``, the ranks 1..k among themselves and every one of the top k against every
  player below), each settled when the probability of the current order reaches ``confidence``.
  Each round the unsettled question with the widest uncertainty (the largest standard deviation of
  the rating difference) is played, directly between its two players.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

import attrs

# ln(10) / 400: the slope of the log-odds per Elo point
_SLOPE = math.log(10.0) / 400.0

# How many units' worth of "dispersion 1" the dispersion estimate starts from: with a handful of
# results the Pearson statistic is noise, and a low value would settle orders on a few lucky pairs.
# Early decisions are where a sequential ranking makes its mistakes; 16 rather than 8 cost about
# 5 % more games and halved the wrong rankings in bench/confidence_ranking.py (and so cut the
# round robin's games for the same correct rate by more).
DISPERSION_PRIOR_UNITS = 16.0

PAIR_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)


@attrs.frozen
class Outcome:
    """One result between ``first`` and ``second``: ``first`` scored ``score`` of ``games`` games
    (a colour-swapped pair by default: score 0, 0.5, 1, 1.5 or 2)."""

    first: str
    second: str
    score: float
    games: int = 2

    def __attrs_post_init__(self) -> None:
        if self.first == self.second:
            raise ValueError(f"a player cannot play itself ({self.first!r})")
        if self.games < 1 or not 0.0 <= self.score <= self.games or (2 * self.score) % 1:
            raise ValueError(f"a score must be a multiple of 0.5 between 0 and {self.games}, not {self.score!r}")


@attrs.frozen
class Standing:
    """A player's place in a ranking: its rating with the interval [``low``, ``high``], its rank
    (1 = best) and the games it has played. A player without games has an infinite interval."""

    player: str
    rating: float
    low: float
    high: float
    rank: int
    games: int


def _expected(difference: float) -> float:
    return 1.0 / (1.0 + math.exp(-_SLOPE * difference))


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    """The inverse of a symmetric positive definite matrix (Gauss-Jordan with partial pivoting)."""
    size = len(matrix)
    work = [row[:] + [1.0 if i == j else 0.0 for j in range(size)] for i, row in enumerate(matrix)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(work[r][col]))
        if abs(work[pivot][col]) < 1e-300:
            raise ValueError("the rating equations are singular")
        work[col], work[pivot] = work[pivot], work[col]
        scale = 1.0 / work[col][col]
        pivot_row = [v * scale for v in work[col]]
        work[col] = pivot_row
        for r in range(size):
            if r != col and work[r][col]:
                factor = work[r][col]
                row = work[r]
                work[r] = [a - factor * b for a, b in zip(row, pivot_row, strict=True)]
    return [row[size:] for row in work]


@attrs.frozen
class Fit:
    """Maximum likelihood ratings of ``players`` (mean 0 over the rated field) with their
    covariance; ``games[i]`` is how many games player i played. A player outside the rated field
    has rating 0 and an infinite variance."""

    players: tuple[str, ...]
    ratings: tuple[float, ...]
    covariance: tuple[tuple[float, ...], ...]
    games: tuple[int, ...]
    dispersion: float

    def _index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise ValueError(f"unknown player {player!r}") from None

    def rating(self, player: str) -> float:
        """The player's rating (Elo, relative to the field's mean)."""
        return self.ratings[self._index(player)]

    def deviation(self, player: str) -> float:
        """The standard deviation of the player's rating (inf without games)."""
        i = self._index(player)
        return math.sqrt(self.covariance[i][i])

    def difference_deviation(self, a: str, b: str) -> float:
        """The standard deviation of rating(a) - rating(b)."""
        i, j = self._index(a), self._index(b)
        c = self.covariance
        if math.isinf(c[i][i]) or math.isinf(c[j][j]):
            return math.inf
        return math.sqrt(max(0.0, c[i][i] + c[j][j] - 2.0 * c[i][j]))

    def better(self, a: str, b: str) -> float:
        """The probability that ``a`` is stronger than ``b`` (normal approximation of the rating
        difference; 0.5 if either has not played)."""
        deviation = self.difference_deviation(a, b)
        difference = self.rating(a) - self.rating(b)
        if math.isinf(deviation):
            return 0.5
        if deviation == 0.0:
            return 0.5 if difference == 0 else float(difference > 0)
        return NormalDist().cdf(difference / deviation)

    def standings(self, confidence: float = 0.95) -> list[Standing]:
        """Every player, best first, with its rating's interval at ``confidence``."""
        z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
        unknown = [math.isinf(self.covariance[i][i]) for i in range(len(self.players))]
        order = sorted(range(len(self.players)), key=lambda i: (unknown[i], -self.ratings[i], i))
        rows = []
        for rank, i in enumerate(order, start=1):
            spread = z * math.sqrt(self.covariance[i][i])
            r = self.ratings[i]
            rows.append(Standing(self.players[i], r, r - spread, r + spread, rank, self.games[i]))
        return rows


def fit_ratings(
    players: Sequence[str], outcomes: Iterable[Outcome], prior_games: float = 1.0, initial: Sequence[float] | None = None
) -> Fit:
    """Maximum likelihood ratings of ``players`` from ``outcomes`` (see the module docstring).

    Only the largest group of players connected by games is rated (mean 0); everyone else (no
    games, or games only outside that group) gets rating 0 with an infinite variance. ``initial``
    ratings (one per player) start Newton's method, e.g. the last fit's. ValueError for an unknown
    player and when no finite maximum exists (``prior_games`` 0 and a perfect score)."""
    index = {p: i for i, p in enumerate(players)}
    if len(index) != len(players):
        raise ValueError("the players must be distinct")
    size = len(players)
    games = [0] * size
    played: dict[tuple[int, int], list[float]] = {}  # (i < j) -> [games, score of i]
    units: dict[tuple[int, int, int], list[float]] = {}  # (i, j, games per unit) -> [count, sum s, sum s^2]
    for o in outcomes:
        try:
            i, j = index[o.first], index[o.second]
        except KeyError as e:
            raise ValueError(f"unknown player {e.args[0]!r}") from None
        score = o.score
        if i > j:
            i, j, score = j, i, o.games - score
        tally = played.setdefault((i, j), [0.0, 0.0])
        tally[0] += o.games
        tally[1] += score
        unit = units.setdefault((i, j, o.games), [0.0, 0.0, 0.0])
        unit[0] += 1
        unit[1] += score
        unit[2] += score * score
        games[i] += o.games
        games[j] += o.games
    # ratings are only comparable within a set of players connected by games: the largest such set
    # is the field, anyone else is as unknown as a player without games
    active = _main_component([i for i in range(size) if games[i]], played)
    in_field = set(active)
    played = {key: tally for key, tally in played.items() if key[0] in in_field}
    units = {key: tally for key, tally in units.items() if key[0] in in_field}
    ratings = [0.0] * size if initial is None else [float(r) if i in in_field else 0.0 for i, r in enumerate(initial)]
    if active:
        mean = sum(ratings[i] for i in active) / len(active)
        for i in active:
            ratings[i] -= mean
    position = {p: k for k, p in enumerate(active)}
    matchups = [(i, j, n + prior_games, s + prior_games / 2.0) for (i, j), (n, s) in played.items()]
    m = len(active)
    information: list[list[float]] = [[0.0] * m for _ in range(m)]
    for _ in range(100):
        gradient = [0.0] * m
        information = [[0.0] * m for _ in range(m)]
        for i, j, n, s in matchups:
            p = _expected(ratings[i] - ratings[j])
            a, b = position[i], position[j]
            g = _SLOPE * (s - n * p)
            gradient[a] += g
            gradient[b] -= g
            w = _SLOPE * _SLOPE * n * p * (1.0 - p)
            information[a][a] += w
            information[b][b] += w
            information[a][b] -= w
            information[b][a] -= w
        if m < 2:
            break
        # information + J/m is invertible on a connected field and keeps the step's mean at 0
        anchored = [[v + 1.0 / m for v in row] for row in information]
        try:
            inverse = _inverse(anchored)
        except ValueError:  # the information vanished: some expected score reached 0 or 1
            raise ValueError("no finite maximum: a player won or lost every game (use prior_games > 0)") from None
        step = [sum(r * g for r, g in zip(row, gradient, strict=True)) for row in inverse]
        largest = max(abs(d) for d in step)
        if largest > 400.0:  # a long way from the maximum: damp, the log-likelihood is concave
            step = [d * 400.0 / largest for d in step]
        for k, i in enumerate(active):
            ratings[i] += step[k]
        if max(abs(ratings[i]) for i in active) > 20000.0:
            raise ValueError("no finite maximum: a player won or lost every game (use prior_games > 0)")
        if largest < 1e-7:
            break
    else:
        raise ValueError("the ratings did not converge (a perfect score without prior_games?)")
    dispersion = _dispersion(units, ratings, m)
    covariance = [[0.0] * size for _ in range(size)]
    for i in range(size):
        if i not in in_field:
            covariance[i][i] = math.inf
    if m >= 2:
        anchored = [[v + 1.0 / m for v in row] for row in information]
        pseudo = _inverse(anchored)
        for a, i in enumerate(active):
            for b, j in enumerate(active):
                covariance[i][j] = dispersion * (pseudo[a][b] - 1.0 / m)
    return Fit(tuple(players), tuple(ratings), tuple(map(tuple, covariance)), tuple(games), dispersion)


def _main_component(players_with_games: list[int], played: Iterable[tuple[int, int]]) -> list[int]:
    """The largest set of players connected by games (on a tie, the one with the earliest player)."""
    neighbours: dict[int, set[int]] = {i: set() for i in players_with_games}
    for i, j in played:
        neighbours[i].add(j)
        neighbours[j].add(i)
    best: list[int] = []
    seen: set[int] = set()
    for start in players_with_games:
        if start in seen:
            continue
        component, todo = {start}, [start]
        while todo:
            for k in neighbours[todo.pop()] - component:
                component.add(k)
                todo.append(k)
        seen |= component
        if len(component) > len(best):
            best = sorted(component)
    return best


def _dispersion(units: dict[tuple[int, int, int], list[float]], ratings: list[float], active: int) -> float:
    """Pearson chi-square over degrees of freedom, shrunk towards 1 (see the module docstring)."""
    chi_square = 0.0
    count = 0.0
    for (i, j, g), (k, total, squares) in units.items():
        p = _expected(ratings[i] - ratings[j])
        # sum over the units of (s - g p)^2, from the running sums
        residual = squares - 2.0 * g * p * total + k * (g * p) ** 2
        chi_square += residual / (g * p * (1.0 - p))
        count += k
    freedom = max(0.0, count - (active - 1))
    return (chi_square + DISPERSION_PRIOR_UNITS) / (freedom + DISPERSION_PRIOR_UNITS)


class ConfidenceRanking:
    """A scheduler that ranks ``players`` by playing colour-swapped pairs until every adjacent pair
    of the ranking (or, with ``top_k``, the top k and their order) is ordered at ``confidence``, or
    ``max_games`` games have been played or handed out.

    Ask ``next_pairs(n)`` for up to n pairs to play (each pair is two games, the same opening with
    the colours swapped), ``record`` each pair's score, and repeat until ``finished``. Pairs handed
    out but not yet recorded count as pending: they are part of the budget and of the allocation,
    so several pairs can be in play at once."""

    def __init__(
        self,
        players: Sequence[str],
        confidence: float = 0.95,
        top_k: int | None = None,
        max_games: int | None = None,
        prior_games: float = 1.0,
    ) -> None:
        if len(set(players)) != len(players) or len(players) < 2:
            raise ValueError("a ranking needs at least two distinct players")
        if not 0.5 < confidence < 1.0:
            raise ValueError(f"the confidence must be between 0.5 and 1 (exclusive), not {confidence!r}")
        if top_k is not None and not 1 <= top_k < len(players):
            raise ValueError(f"top_k must be between 1 and {len(players) - 1}, not {top_k!r}")
        if not (math.isfinite(prior_games) and prior_games >= 0):
            raise ValueError(f"prior_games must be a finite number of at least 0, not {prior_games!r}")
        if max_games is not None and max_games < 2:
            raise ValueError(f"max_games must be at least 2 (one pair), not {max_games!r}")
        self.players = tuple(players)
        self.confidence = confidence
        self.top_k = top_k
        self.max_games = max_games
        self.prior_games = prior_games
        self.games = 0
        self._outcomes: list[Outcome] = []
        self._pairs: dict[frozenset[str], int] = {}
        self._pending: dict[frozenset[str], int] = {}
        self._fit: Fit | None = None
        self._last: Fit | None = None
        count = len(players)
        cycle = [(players[i], players[(i + 1) % count]) for i in range(count if count > 2 else 1)]
        self._opening = cycle

    def record(self, a: str, b: str, score: float) -> None:
        """``a`` scored ``score`` (0, 0.5, 1, 1.5 or 2) in a colour-swapped pair against ``b``."""
        if a not in self.players or b not in self.players:
            raise ValueError(f"unknown player {a if a not in self.players else b!r}")
        if score not in PAIR_SCORES:
            raise ValueError(f"a pair score must be 0, 0.5, 1, 1.5 or 2, not {score!r}")
        outcome = Outcome(a, b, float(score))
        key = frozenset((a, b))
        self._outcomes.append(outcome)
        self._pairs[key] = self._pairs.get(key, 0) + 1
        if self._pending.get(key):
            self._pending[key] -= 1
        self.games += 2
        self._fit = None

    def pending(self, a: str, b: str) -> None:
        """A pair of ``a`` against ``b`` is in play (handed out before, e.g. by a tournament that
        was stopped and resumed): it counts against the budget and the allocation until recorded."""
        if a not in self.players or b not in self.players:
            raise ValueError(f"unknown player {a if a not in self.players else b!r}")
        self._hand_out([(a, b)])

    def fit(self) -> Fit:
        """The ratings from everything recorded so far."""
        if self._fit is None:
            # the last fit is close to the new maximum: Newton needs one or two steps from there
            initial = self._last.ratings if self._last is not None else None
            self._fit = self._last = fit_ratings(self.players, self._outcomes, self.prior_games, initial)
        return self._fit

    def standings(self) -> list[Standing]:
        """Every player, best first: rating, interval at the ranking's confidence, rank, games."""
        return self.fit().standings(self.confidence)

    def _questions(self, fit: Fit) -> list[tuple[str, str]]:
        """The (higher, lower) pairs whose order must be settled, for the current order."""
        order = [s.player for s in fit.standings(self.confidence)]
        if self.top_k is None:
            return list(zip(order, order[1:]))
        k = self.top_k
        questions = list(zip(order[: k - 1], order[1:k]))
        questions += [(high, low) for high in order[:k] for low in order[k:]]
        return questions

    def _unsettled(self, fit: Fit) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self._questions(fit) if fit.better(a, b) < self.confidence]

    def settled(self) -> bool:
        """Whether every question of the ranking is answered at the confidence."""
        if any(self._pairs.get(frozenset(pair), 0) == 0 for pair in self._opening):
            return False
        return not self._unsettled(self.fit())

    @property
    def finished(self) -> bool:
        """Settled, or the game budget is used up."""
        return self.settled() or (self.max_games is not None and self.games >= self.max_games)

    def _budget(self, wanted: int) -> int:
        if self.max_games is None:
            return wanted
        pending = sum(self._pending.values())
        return max(0, min(wanted, (self.max_games - self.games) // 2 - pending))

    def next_pairs(self, n: int = 1) -> list[tuple[str, str]]:
        """Up to ``n`` pairs to play next (a matchup may repeat). Empty when finished, and while
        every pair of the opening cycle still to play is pending (record those first)."""
        n = self._budget(n)
        chosen: list[tuple[str, str]] = []
        for pair in self._opening:
            key = frozenset(pair)
            if len(chosen) < n and not self._pairs.get(key) and not self._pending.get(key):
                chosen.append(pair)
        if chosen or any(not self._pairs.get(frozenset(pair)) for pair in self._opening):
            return self._hand_out(chosen)
        fit = self.fit()
        unsettled = self._unsettled(fit)
        if not unsettled:
            return []
        deviation = {pair: fit.difference_deviation(*pair) for pair in unsettled}
        extra: dict[frozenset[str], int] = {}
        for _ in range(n):

            def uncertainty(pair: tuple[str, str]) -> float:
                # playing a matchup k more times shrinks its deviation about like sqrt(n / (n + k))
                key = frozenset(pair)
                played = self._pairs.get(key, 0) + 1
                more = self._pending.get(key, 0) + extra.get(key, 0)
                return deviation[pair] * math.sqrt(played / (played + more))

            best = max(unsettled, key=uncertainty)
            chosen.append(best)
            key = frozenset(best)
            extra[key] = extra.get(key, 0) + 1
        return self._hand_out(chosen)

    def _hand_out(self, chosen: list[tuple[str, str]]) -> list[tuple[str, str]]:
        for pair in chosen:
            key = frozenset(pair)
            self._pending[key] = self._pending.get(key, 0) + 1
        return chosen
