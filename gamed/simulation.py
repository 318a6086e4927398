"""Simulated bots of known strength, for the statistics tests and benchmarks (``gamed.stats``,
``gamed.ranking``): games with draws and white's advantage, played in colour-swapped pairs.

A game between a bot and an opponent ``d`` logistic Elo weaker is scored from the bot's side. An
opening gives white an advantage of ``bias`` Elo, so the bot plays at d + bias as white and d - bias
as black; its expected score is then s = 1 / (1 + 10^(-elo / 400)) and a draw has probability
``draw_rate * 4 s (1 - s)`` (``draw_rate`` at equal strength, fewer when one side is much
stronger), the rest of s being wins. A pair plays one opening twice with the colours swapped, which
is what makes a pair's two games negatively correlated and the pentanomial variance small.

Because of the openings the bot's expected score is not exactly logistic in d; ``strength_for``
finds the d whose *measured* logistic Elo (or nElo) is a given value, from the exact pair
distribution, so a test can put a bot exactly on an SPRT bound. Randomness is an injected
``random.Random``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable

import attrs

from gamed.stats import NELO_PER_T, elo, expected_score


def _game_probabilities(elo_difference: float, draw_rate: float) -> tuple[float, float, float]:
    s = expected_score(elo_difference)
    draw = min(draw_rate * 4.0 * s * (1.0 - s), 2.0 * min(s, 1.0 - s))
    return s - draw / 2.0, draw, 1.0 - s - draw / 2.0


@attrs.frozen
class GameModel:
    """How simulated games turn out: ``draw_rate`` (draw probability between equals, 0..1) and the
    opening book, white's advantage in Elo for each opening (drawn uniformly for each pair)."""

    draw_rate: float = 0.3
    openings: tuple[float, ...] = (0.0,)

    @classmethod
    def with_book(cls, rng: random.Random, draw_rate: float = 0.3, size: int = 40, bias: float = 60.0) -> GameModel:
        """A model with ``size`` openings whose white advantage is uniform in [0, 2 * bias] Elo."""
        return cls(draw_rate, tuple(rng.uniform(0.0, 2.0 * bias) for _ in range(size)))

    def game(self, elo_difference: float, rng: random.Random) -> float:
        """One game's score (1, 0.5 or 0) for a bot ``elo_difference`` stronger, colour bias included."""
        win, draw, _ = _game_probabilities(elo_difference, self.draw_rate)
        u = rng.random()
        return 1.0 if u < win else 0.5 if u < win + draw else 0.0

    def pair(self, elo_difference: float, rng: random.Random) -> tuple[float, float]:
        """The bot's two game scores on one opening: first as white, then as black."""
        bias = rng.choice(self.openings)
        return self.game(elo_difference + bias, rng), self.game(elo_difference - bias, rng)

    def pair_distribution(self, elo_difference: float) -> list[float]:
        """The exact probabilities of the pair scores 0, 0.5, 1, 1.5, 2 (LL .. WW)."""
        buckets = [0.0] * 5
        for bias in self.openings:
            as_white = _game_probabilities(elo_difference + bias, self.draw_rate)
            as_black = _game_probabilities(elo_difference - bias, self.draw_rate)
            for i, p in enumerate(reversed(as_white)):  # index 0 loss, 1 draw, 2 win
                for j, q in enumerate(reversed(as_black)):
                    buckets[i + j] += p * q / len(self.openings)
        return buckets

    def pair_sampler(self, elo_difference: float) -> Callable[[random.Random], float]:
        """A function that draws a pair score (0, 0.5, 1, 1.5, 2) from ``pair_distribution``: the
        same results as ``pair`` in distribution, with one random number instead of three (for
        simulations that play many thousands of pairs)."""
        cumulative = list(itertools.accumulate(self.pair_distribution(elo_difference)))
        last = len(cumulative) - 1

        def draw(rng: random.Random) -> float:
            return min(bisect.bisect_right(cumulative, rng.random()), last) / 2.0

        return draw

    def measured_elo(self, elo_difference: float) -> float:
        """The logistic Elo of the bot's exact expected score per game."""
        return elo(sum(p * k / 4.0 for k, p in enumerate(self.pair_distribution(elo_difference))))

    def measured_nelo(self, elo_difference: float) -> float:
        """The normalized Elo (pentanomial, as fastchess computes it) of the exact pair distribution."""
        distribution = self.pair_distribution(elo_difference)
        mu = sum(p * k / 4.0 for k, p in enumerate(distribution))
        variance = sum(p * (k / 4.0 - mu) ** 2 for k, p in enumerate(distribution))
        return (mu - 0.5) / (math.sqrt(2.0) * math.sqrt(variance)) * NELO_PER_T

    def strength_for(self, target: float, measure: Callable[[float], float] | None = None) -> float:
        """The Elo difference d at which ``measure(d)`` (default ``measured_elo``) equals ``target``."""
        measure = measure or self.measured_elo
        low, high = -2000.0, 2000.0
        for _ in range(100):
            middle = (low + high) / 2.0
            if measure(middle) < target:
                low = middle
            else:
                high = middle
        return (low + high) / 2.0
