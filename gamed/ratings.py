"""Elo ratings per game type: pure functions, no storage (gamed.records keeps the numbers).

Every named player starts at 1500. After a rated match each pair of rated seats is scored like a
two-player game: the seat with the higher score won the pair, equal scores drew it. A seat's change
is K=32 times (actual - expected), summed over its rated opponents and divided by their number, so
one match moves a rating by at most K however many seats it had; for two seats this is plain Elo.
"""

from __future__ import annotations

from collections.abc import Sequence

INITIAL = 1500.0
K = 32.0

WIN, DRAW, LOSS = "win", "draw", "loss"


def winner_scores(seats: int, winner: int | None) -> tuple[float, ...]:
    """The scores of a match that one seat won (1 for it, 0 for the others) or nobody did
    (``winner`` None: a draw, 0.5 each)."""
    if winner is None:
        return (0.5,) * seats
    return tuple(1.0 if seat == winner else 0.0 for seat in range(seats))


def expected(rating: float, opponent: float) -> float:
    """The score (0..1) Elo expects of a player rated ``rating`` against one rated ``opponent``."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / 400.0))


def _pair_score(mine: float, theirs: float) -> float:
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def rate(ratings: Sequence[float | None], scores: Sequence[float], k: float = K) -> list[float | None]:
    """New ratings after one match: ``ratings[i]`` is seat i's rating, None for an unrated seat.

    Unrated seats stay None and play no part: a rated seat only gains or loses against other rated
    seats, so a match with fewer than two rated seats changes nothing."""
    if len(ratings) != len(scores):
        raise ValueError(f"{len(ratings)} ratings but {len(scores)} scores")
    rated = [i for i, r in enumerate(ratings) if r is not None]
    out: list[float | None] = list(ratings)
    if len(rated) < 2:
        return out
    share = k / (len(rated) - 1)
    for i in rated:
        ri = ratings[i]
        assert ri is not None
        delta = 0.0
        for j in rated:
            if j != i:
                rj = ratings[j]
                assert rj is not None
                delta += _pair_score(scores[i], scores[j]) - expected(ri, rj)
        out[i] = ri + share * delta
    return out


def outcome(scores: Sequence[float], seat: int) -> str:
    """"win" for the single best score, "draw" for a best score shared with others, else "loss"."""
    best = max(scores)
    if scores[seat] < best:
        return LOSS
    return WIN if sum(1 for s in scores if s == best) == 1 else DRAW
