"""Ratings per game type: a thin, pure adapter around openskill (gamed.records keeps the numbers).

Every player has a rating ``mu`` and an uncertainty ``sigma`` (a Bayesian Weng-Lin rating,
openskill's Plackett-Luce model, which handles any number of seats and ties). The numbers are on an
Elo-like scale: a newcomer is 1500 ± 980 (mu 1500, sigma 500, beta 250: openskill's defaults 25,
25/3 and 25/6 times 60). They look like Elo numbers but are the model's own: a gap between two
ratings is not an Elo gap (it is about twice as wide for the same odds). After a rated match every rated seat is ranked by its
score (higher is better, equal scores tie); winners gain mu, losers lose it, and everyone's sigma
shrinks: the more surprising a result, the more mu moves, and the less sure we are of a player, the
more too. Unrated seats (None) play no part, so a match with fewer than two rated seats changes
nothing.

Boards order players by the conservative rating ``mu - 3 sigma`` (openskill's ordinal): a newcomer
is not placed above players who proved themselves. ``interval`` gives the 95 % interval shown as
``1620 ± 85``; ``provisional`` says when a rating is still a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import attrs
from openskill.models import PlackettLuce

# The scale (see the module docstring). Changing MU/SIGMA changes only what a newcomer starts at;
# BETA is how much one game's performance varies around a player's skill, in rating points.
MU = 1500.0
SIGMA = 500.0
BETA = 250.0
# Added to sigma (in quadrature) before each game so that sigma never collapses to zero and a rating
# keeps following a player who improves; with LIMIT_SIGMA a game still never makes sigma grow.
TAU = 5.0
LIMIT_SIGMA = True

# "Provisional": not yet enough evidence to take the number seriously. A two-seat player's sigma
# falls to 350 after about 14 games (see tests/test_ratings.py); fewer than 5 games is always too few.
PROVISIONAL_SIGMA = 350.0
PROVISIONAL_GAMES = 5

# How many sigmas the conservative rating (the boards' order) lies below mu: openskill's ordinal.
CONSERVATIVE_Z = 3.0

WIN, DRAW, LOSS = "win", "draw", "loss"

_MODEL = PlackettLuce(mu=MU, sigma=SIGMA, beta=BETA, tau=TAU, limit_sigma=LIMIT_SIGMA)


@attrs.frozen
class Rating:
    """One player's rating in one game type: its mean ``mu`` and uncertainty ``sigma``."""

    mu: float
    sigma: float


INITIAL = Rating(MU, SIGMA)


def winner_scores(seats: int, winner: int | None) -> tuple[float, ...]:
    """The scores of a match that one seat won (1 for it, 0 for the others) or nobody did
    (``winner`` None: a draw, 0.5 each)."""
    if winner is None:
        return (0.5,) * seats
    return tuple(1.0 if seat == winner else 0.0 for seat in range(seats))


def rate(ratings: Sequence[Rating | None], scores: Sequence[float]) -> list[Rating | None]:
    """New ratings after one match: ``ratings[i]`` is seat i's rating, None for an unrated seat;
    ``scores[i]`` its score (higher is better, equal scores tie).

    Unrated seats stay None and play no part: the rated seats are ranked among themselves only, so
    a match with fewer than two rated seats changes nothing."""
    if len(ratings) != len(scores):
        raise ValueError(f"{len(ratings)} ratings but {len(scores)} scores")
    rated = [i for i, r in enumerate(ratings) if r is not None]
    out: list[Rating | None] = list(ratings)
    if len(rated) < 2:
        return out
    teams = []
    for i in rated:
        r = ratings[i]
        assert r is not None
        teams.append([_MODEL.rating(mu=float(r.mu), sigma=float(r.sigma))])
    # Every seat is a team of one: Combat's and Virtual Fight's many seats are many teams.
    new = _MODEL.rate(teams, scores=[float(scores[i]) for i in rated])
    for i, (player,) in zip(rated, new):
        out[i] = Rating(float(player.mu), float(player.sigma))
    return out


def conservative(mu: float, sigma: float) -> float:
    """The rating the boards are ordered by: ``mu - 3 sigma`` (openskill's ordinal), a level the
    player is almost surely above."""
    return mu - CONSERVATIVE_Z * sigma


def interval(mu: float, sigma: float, confidence: float = 0.95) -> tuple[float, float]:
    """``(low, high)``: where the player's true rating lies with probability ``confidence``
    (0.95: mu ± 1.96 sigma, what the pages show as ``1620 ± 85``)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    half = NormalDist().inv_cdf(0.5 + confidence / 2.0) * sigma
    return mu - half, mu + half


def provisional(sigma: float, games: int) -> bool:
    """True while a rating is still a guess: sigma above ``PROVISIONAL_SIGMA`` or fewer than
    ``PROVISIONAL_GAMES`` games played."""
    return sigma > PROVISIONAL_SIGMA or games < PROVISIONAL_GAMES


def describe(mu: float, sigma: float, games: int) -> dict:
    """The numbers the web API and the pages show beside a rating: ``sigma``, the 95 % interval's
    ``low`` and ``high``, the ``conservative`` rating the boards are ordered by, ``provisional``."""
    low, high = interval(mu, sigma)
    return {
        "sigma": sigma,
        "low": low,
        "high": high,
        "conservative": conservative(mu, sigma),
        "provisional": provisional(sigma, games),
    }


def outcome(scores: Sequence[float], seat: int) -> str:
    """"win" for the single best score, "draw" for a best score shared with others, else "loss"."""
    best = max(scores)
    if scores[seat] < best:
        return LOSS
    return WIN if sum(1 for s in scores if s == best) == 1 else DRAW
