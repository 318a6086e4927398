"""A tournament as the config describes it: a ``[tournaments.<name>]`` table (docs/tournaments.md).

``parse_tournament`` checks one table and returns a ``TournamentSpec``; ``check_bots`` checks it
against the registered hosted bots; ``TournamentSpec.definition`` builds the Director's
Definition (its format). Every mistake is a ``SpecError`` of one line naming the setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gamed.competition.director import Definition
from gamed.competition.formats import FORMATS, FormatError, make_format
from gamed.names import valid_name


class SpecError(ValueError):
    """A [tournaments.<name>] table that is wrong; the message is one line."""


# The settings of each format besides the common ones (game, format, bots, concurrency, daemon).
_FORMAT_OPTIONS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "round-robin": {"rounds": int, "confidence": (int, float)},
    "gauntlet": {"rounds": int, "confidence": (int, float)},
    "sprt": {
        "elo0": (int, float), "elo1": (int, float), "alpha": (int, float), "beta": (int, float), "model": str,
        "max_games": int, "confidence": (int, float),
    },
    "confidence": {"confidence": (int, float), "top_k": int, "max_games": int},
}
_COMMON = ("game", "format", "bots", "concurrency", "daemon")
MAX_CONCURRENCY = 64


@attrs.frozen
class TournamentSpec:
    """One [tournaments.<name>] table, checked."""

    name: str
    game: str
    kind: str
    bots: tuple[str, ...]
    options: tuple[tuple[str, Any], ...]  # the format's own settings, sorted
    concurrency: int = 1
    daemon: bool = False  # the daemon runs (and after a restart resumes) it

    def stored_spec(self) -> dict:
        """What identifies it in the records: a resumed tournament must have the same."""
        return {"bots": list(self.bots), "options": dict(self.options)}

    def definition(self, concurrency: int | None = None) -> Definition:
        fmt = make_format(self.kind, self.bots, dict(self.options))
        return Definition(self.name, self.game, fmt, self.stored_spec(), concurrency or self.concurrency)


def parse_tournament(name: str, table: Mapping[str, Any], games: Sequence[str]) -> TournamentSpec:
    """The tournament ``name`` of a [tournaments.<name>] table (SpecError for any mistake)."""
    where = f"tournaments.{name}"
    if not valid_name(name):
        raise SpecError(f"{where}: a tournament name is 1-32 letters, digits, _ . -")
    game = table.get("game")
    if game not in games:
        raise SpecError(f"{where}.game must be one of {', '.join(games)}, not {game!r}")
    kind = table.get("format")
    if kind not in FORMATS:
        raise SpecError(f"{where}.format must be one of {', '.join(FORMATS)}, not {kind!r}")
    bots = table.get("bots")
    if not isinstance(bots, list) or not all(isinstance(b, str) for b in bots):
        raise SpecError(f"{where}.bots must be a list of bot names")
    if len(bots) < 2:
        raise SpecError(f"{where}: a tournament needs at least two bots, not {len(bots)}")
    known = _FORMAT_OPTIONS[kind]
    options = {}
    for key, value in table.items():
        if key in _COMMON:
            continue
        if key not in known:
            raise SpecError(
                f"unknown setting {where}.{key}; known for {kind}: {', '.join(sorted((*_COMMON, *known)))}"
            )
        if isinstance(value, bool) or not isinstance(value, known[key]):
            raise SpecError(f"{where}.{key} must be a {_kind_words(known[key])}, not {value!r}")
        options[key] = value
    concurrency = table.get("concurrency", 1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise SpecError(f"{where}.concurrency must be a whole number from 1 to {MAX_CONCURRENCY}, not {concurrency!r}")
    daemon = table.get("daemon", False)
    if not isinstance(daemon, bool):
        raise SpecError(f"{where}.daemon must be true or false, not {daemon!r}")
    spec = TournamentSpec(name, game, kind, tuple(bots), tuple(sorted(options.items())), concurrency, daemon)
    try:
        spec.definition()  # the format checks its bots and settings (an impossible SPRT...)
    except FormatError as e:
        raise SpecError(f"{where}: {e}") from None
    return spec


def _kind_words(kind: type | tuple[type, ...]) -> str:
    if kind is int:
        return "whole number"
    if kind is str:
        return "string"
    return "number"


def check_bots(spec: TournamentSpec, bots: Sequence[Any], unknown_ok: bool = False) -> None:
    """Every bot of ``spec`` is a registered hosted bot (``[bots.<name>]`` or ``gamed bot add``) of
    its game. ``unknown_ok``: check only the bots ``bots`` has (the others may be in the records
    database, checked at start-up)."""
    registered = {b.name.lower(): b for b in bots}
    for name in spec.bots:
        bot = registered.get(name.lower())
        if bot is None:
            if unknown_ok:
                continue
            raise SpecError(f"tournaments.{spec.name}: no hosted bot {name} (register it as [bots.{name}] or with gamed bot add)")
        if bot.game != spec.game:
            raise SpecError(f"tournaments.{spec.name}: bot {bot.name} plays {bot.game}, not {spec.game}")
