"""A finished match's result in words for people, the same for every game and every page.

Pure functions of what the records keep (scores, the reason word, the detail, the game's own
points such as Kalaha's stones): ``outcome_text`` gives ``alice won 40–32``, ``bob won: four in a
row``, ``alice won: flag captured``, ``carol won: blue disqualified``, ``draw: the board is full``
or ``aborted: the server stopped``; never internal words such as ``won (end)``. The web API sends
it with every match and finished table (``outcome``) and the pages show it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gamed import registry

DASH = "\u2013"  # the en dash of "40–32"

# Why a game ended (the records' reason, lower case) -> the words after "<winner> won: " ({loser}:
# who lost). Games name their reasons differently (Kalaha "resign", UCC Stratego "This player has
# surrendered!"): every spelling the games use is here.
_WON = {
    "resign": "{loser} resigned",
    "timeout": "{loser} ran out of time",
    "strikes": "{loser} made too many protocol errors",
    "four": "four in a row",
    "four in a row": "four in a row",
    "forfeit": "{loser} forfeited",
    "flag captured": "flag captured",
    "captured the flag": "flag captured",
    "no movable units left": "{loser} has no movable units left",
    "destroyed all mobile enemy pieces": "{loser} has no movable units left",
    "this player has surrendered!": "{loser} surrendered",
    "last team standing": "last team standing",
    "turn limit": "most warriors alive after the last turn",
    "disconnect": "{loser} left the game",
    "unintelligable response": "{loser} sent a reply the referee could not read",
}
# ... in one game: the game's own words (IGame.reasons), such as Virtual Fight's timeout, which is
# a disqualification (too many timeouts in a row).

_DRAWN = {
    "full": "the board is full",
    "all warriors killed": "all warriors killed",
    "turn limit": "as many warriors alive after the last turn",
    "no seat has a flag and a movable unit": "no seat has a flag and a movable unit",
    "game declared a draw because neither player has mobile pieces": "neither side can move",
}

_ABORTED = {
    "shutdown": "the server stopped",
    "disconnect": "a player left",
    "engine": "an engine failed",
    "internal controller error - unspecified error": "the referee failed",
    "an illegal setup was made by both": "both setups were illegal",
}

# The UCC referee's reasons for an illegal move (gamed.stratego.rules), and its timeout.
_ILLEGAL = re.compile(
    r"coords outside board|move does not select a piece|selected piece belongs to other player"
    r"|selected piece is not mobile.*|selected unit cannot move that way|attempted move into square.*"
)
_UCC_TIMEOUT = re.compile(r"response timeout after .*")
_UCC_SETUP = re.compile(r"an illegal setup was made by .*")
_UCC_DRAW_AFTER = re.compile(r"game declared a draw after (\d+) turns")


def points(game: str, final_state: dict | None) -> list[float] | None:
    """The game's own points per seat at the end, where it has any (``IGame.points``): Kalaha's
    stones in each store (all 72 once a game ends normally). None for the other games."""
    entry = registry.by_name().get(game)
    return entry.points(final_state) if entry is not None else None


def _names(seats: Sequence[int], names: Sequence[str]) -> str:
    shown = [names[s] if s < len(names) else f"seat {s}" for s in seats]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _number(x: float) -> str:
    return f"{x:g}"


def outcome_text(
    game: str,
    names: Sequence[str],
    scores: Sequence[float],
    reason: str,
    *,
    points: Sequence[float] | None = None,
    detail: str | None = None,
    rated: bool = True,
) -> str:
    """The result of a match in words. ``names`` and ``scores`` are per seat (1 a win, ½ a draw,
    0 a loss); ``reason`` is the records' reason; ``points`` the game's own score (Kalaha's
    stones); ``detail`` who did what (a Combat forfeit: ``seat 1 (bob) left the game``);
    ``rated`` False for an aborted match."""
    key = (reason or "").strip().lower()
    base, _, why = key.partition(": ")
    scores = list(scores)
    best = max(scores) if scores else 0.0
    winners = [s for s, v in enumerate(scores) if v == best]
    losers = [s for s, v in enumerate(scores) if v < best]
    if not scores or (not rated and best == 0.0):
        words = _ABORTED.get(key) or _ABORTED.get(base) or (reason.strip() or "no result")
        if base == "engine" and why:
            words += f" ({why})"
        return f"aborted: {words}"
    if not losers:  # everybody has the best score: a draw
        if points is not None and key == "end" and len(set(points)) == 1:
            return "draw " + DASH.join(_number(p) for p in points)
        m = _UCC_DRAW_AFTER.fullmatch(key)
        if m:
            return f"draw after {m[1]} turns"
        words = _DRAWN.get(key) or _DRAWN.get(base) or reason.strip()
        return f"draw: {words}" if words and key != "end" else "draw"
    who = _names(winners, names) + (" won" if len(winners) == 1 else " drew")
    if points is not None and key == "end" and len(winners) == 1 and len(scores) == len(points) == 2:
        winner, loser = winners[0], losers[0]
        if points[winner] > points[loser]:  # (points that disagree with the scores are not shown)
            return f"{who} {_number(points[winner])}{DASH}{_number(points[loser])}"
    if key == "end":
        return who
    if detail and base in ("timeout", "forfeit"):
        return f"{who}: {detail}"  # who ran out of time or left, in the game's own words
    loser = _names(losers, names)
    entry = registry.by_name().get(game)
    own = entry.reasons if entry is not None else {}
    template = own.get(base) or _WON.get(key) or _WON.get(base)
    if template is None:
        if _ILLEGAL.fullmatch(key):
            template = "{loser} made an illegal move (" + key + ")"
        elif _UCC_TIMEOUT.fullmatch(key):
            template = _WON["timeout"]
        elif _UCC_SETUP.fullmatch(key):
            template = "{loser} made an illegal setup"
        else:
            return f"{who}: {reason.strip()}"
    return f"{who}: " + template.format(loser=loser)
