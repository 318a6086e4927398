"""A stored tournament as data: its report (its format rebuilt from what it stores) and the JSON
that ``gamed tournament export`` writes and the web site's ``/api/tournaments/<name>`` serves."""

from __future__ import annotations

import math
from typing import Any

from gamed.competition.director import Report, report
from gamed.competition.formats import make_format


def summary(stored: Any, scheduled: int, finished: int) -> dict:
    """One line of the list of tournaments."""
    return {
        "name": stored.name, "game": stored.game, "format": stored.format, "state": stored.state,
        "scheduled": scheduled, "played": finished, "created": stored.created, "finished": stored.finished,
    }


def export_data(stored: Any, r: Report) -> dict:
    """Everything a tournament says: its definition, progress, every game with its result and
    match (the replay), the standings with their intervals, the crosstable (``[points, games]``
    of the row's bot against the column's), and for two bots the match line and the LLR curve."""
    return {
        "name": stored.name, "game": stored.game, "format": stored.format, "definition": stored.spec,
        "description": r.description, "state": stored.state, "created": stored.created, "finished": stored.finished,
        "progress": {"scheduled": r.scheduled, "played": r.finished, "total": r.total},
        "crosstable": {a: {b: list(cell) for b, cell in row.items()} for a, row in r.crosstable.items()},
        "games": [
            {
                "number": g.number, "pair": g.pair, "seats": list(g.seats), "opening": g.opening,
                **(
                    {
                        "scores": list(p.scores), "reason": p.reason, "outcome": p.outcome, "faults": list(p.faults),
                        "match_id": p.match_id,
                    }
                    if (p := stored.played.get(g.number)) is not None else {"scores": None}
                ),
            }
            for g in stored.games
        ],
        "standings": [
            {
                "rank": s.rank, "bot": s.bot, "points": s.points, "games": s.games, "wins": s.wins, "draws": s.draws,
                "losses": s.losses, "rating": s.rating if math.isfinite(s.low) else None,
                "low": s.low if math.isfinite(s.low) else None, "high": s.high if math.isfinite(s.high) else None,
                "faults": s.faults,
            }
            for s in r.standings
        ],
        "match": None if r.match is None else {
            "first": r.match.first, "second": r.match.second, "wins": r.match.wins, "draws": r.match.draws,
            "losses": r.match.losses, "pentanomial": list(r.match.pentanomial), "elo": _finite(r.match.elo),
            "low": _finite(r.match.low), "high": _finite(r.match.high), "los": r.match.los, "llr": r.match.llr,
            "lower": r.match.lower, "upper": r.match.upper, "decision": r.match.decision,
        },
        "llr_curve": list(r.curve),
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def stored_report(stored: Any) -> Report:
    """The report of a stored tournament from what it stores (its format rebuilt from its spec)."""
    fmt = make_format(stored.format, stored.spec["bots"], stored.spec["options"])
    return report(stored, fmt)
