"""Round-robin Stratego tournaments as pure functions: the pairings, the schedule and what is left
of it, the 2012 scoring table, standings.

A round plays every ordered pair (red, blue) with red != blue ``games/2`` times, so each program
plays both colours equally often (ucc-stratego §12.2). Results score with the tournament runner's
table (§7.2): the result line names one side; the other side gets the "other" points. A ``BOTH``
result, or anything that is not six tokens, scores as INTERNAL_ERROR for both.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

# OUTCOME -> (points of the named side, points of the other side, what the other side is recorded as)
SCORES = {
    "VICTORY": (0.3, 0.1, "DEFEAT"),
    "SURRENDER": (0.0, 0.3, "VICTORY"),
    "DRAW": (0.2, 0.2, "DRAW"),
    "DRAW_DEFAULT": (0.1, 0.1, "DRAW_DEFAULT"),
    "ILLEGAL": (-0.1, 0.2, "DEFAULT"),
    "BAD_SETUP": (0.0, 0.0, "BAD_SETUP"),
    "INTERNAL_ERROR": (0.0, 0.0, "INTERNAL_ERROR"),
}


def pairings(names: Iterable[str], games: int) -> list[tuple[str, str]]:
    """One round: every ordered pair ``games // 2`` times, spread so that no pair repeats at once."""
    names = list(names)
    ordered = [(red, blue) for red in names for blue in names if red != blue]
    return [pair for _ in range(games // 2) for pair in ordered]


@attrs.frozen
class Planned:
    """One game of a tournament: its number (from 1, in playing order), its round and its sides."""

    game: int
    round: int
    red: str
    blue: str


def schedule(names: Iterable[str], rounds: int, games: int) -> list[Planned]:
    """Every game of a tournament of ``rounds`` rounds, numbered in playing order; the same names,
    rounds and games always give the same schedule (so a stopped tournament can be continued)."""
    names = list(names)
    out = []
    for round_no in range(1, rounds + 1):
        for red, blue in pairings(names, games):
            out.append(Planned(len(out) + 1, round_no, red, blue))
    return out


def remaining(planned: Iterable[Planned], recorded: Iterable[dict]) -> list[Planned]:
    """The planned games without a recorded result: never played, cut off by a crash, or aborted
    by a shutdown (``recorded``: the results lines, ``{"game": n, "aborted": bool, ...}``)."""
    done = {r.get("game") for r in recorded if not r.get("aborted")}
    return [p for p in planned if p.game not in done]


@attrs.frozen
class Scored:
    """One game's points: (red points, blue points) and what each side is recorded as."""

    red: float
    blue: float
    red_label: str
    blue_label: str


def score(result_line: str) -> Scored:
    """Points for RED and BLUE from a result line, as the 2012 tournament runner scored it."""
    tokens = result_line.rstrip("\n").split(" ")
    if len(tokens) != 6 or tokens[1] not in ("RED", "BLUE") or tokens[2] not in SCORES:
        return Scored(0.0, 0.0, "INTERNAL_ERROR", "INTERNAL_ERROR")
    named, other, label = SCORES[tokens[2]]
    if tokens[1] == "RED":
        return Scored(named, other, tokens[2], label)
    return Scored(other, named, label, tokens[2])


@attrs.define
class Standing:
    """One program's line in the standings."""

    name: str
    points: float = 0.0
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    illegal: int = 0


def standings(results: Iterable[tuple[str, str, str]]) -> list[Standing]:
    """Standings from (red name, blue name, result line) triples, best first (points, then wins)."""
    table: dict[str, Standing] = {}
    for red, blue, line in results:
        scored = score(line)
        for name, points, label in ((red, scored.red, scored.red_label), (blue, scored.blue, scored.blue_label)):
            row = table.setdefault(name, Standing(name))
            row.points = round(row.points + points, 6)
            row.games += 1
            if label in ("VICTORY", "DEFAULT"):  # DEFAULT: the other side played an illegal move
                row.wins += 1
            elif label in ("DRAW", "DRAW_DEFAULT"):
                row.draws += 1
            elif label in ("DEFEAT", "SURRENDER"):
                row.losses += 1
            elif label == "ILLEGAL":
                row.illegal += 1
                row.losses += 1
    return sorted(table.values(), key=lambda s: (-s.points, -s.wins, s.name))


def render(rows: list[Standing]) -> list[str]:
    """The standings as a plain text table."""
    out = [f"{'#':>3}  {'program':<24} {'points':>7} {'games':>6} {'won':>5} {'drawn':>6} {'lost':>5} {'illegal':>8}"]
    for rank, row in enumerate(rows, 1):
        out.append(
            f"{rank:>3}  {row.name:<24} {row.points:>7.1f} {row.games:>6} {row.wins:>5} {row.draws:>6} "
            f"{row.losses:>5} {row.illegal:>8}"
        )
    return out
