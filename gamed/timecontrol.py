"""Time controls: the one notation every game, config file, command line and protocol uses.

A time control says how much time a seat has. It is written as terms joined by commas::

    60s                      a per-move limit of 60 seconds (a bare number is seconds)
    5m+2s                    a bank of 5 minutes, 2 seconds added after every move (Fischer)
    5m+2s,move=30s           the same, but no single move may take more than 30 seconds
    10m+0,setup=1m,game=1h   a 10-minute bank without increment, one minute for the setup
                             (placement, Virtual Fight's first turn), at most an hour per game
    2m+1s,lag=50ms           round-trip credit capped at 50 ms per move instead of 100 ms
    none                     no limit at all (``0`` means the same)

Durations are a number with an optional unit, or several of them run together: ``1.5`` (seconds),
``500ms``, ``90s``, ``2m``, ``1h30m``. Every duration is at most a day; a bank of zero needs an
increment; ``move``, ``setup`` and ``game`` must be more than zero; ``lag`` may be zero (no credit).

This module is pure: parsing, validation and formatting, no clock. The clocks themselves run in
``gamed.scheduler``.
"""

from __future__ import annotations

import enum
import math
import re
from decimal import Decimal

import attrs

DAY = 86_400.0
DEFAULT_LAG = 0.1  # seconds of measured round trip credited per move, at most
KEYS = ("move", "setup", "game", "lag")


class TimeControlError(ValueError):
    """A time control that cannot be used; the message says what is wrong and what is allowed."""


class FlagPolicy(enum.Enum):
    """What happens when a seat's time runs out (its flag falls)."""

    LOSE = "lose"  # the seat loses (out of the game)
    DEFAULT = "default"  # the game plays a default move for it and counts a strike (Battlesnake)
    PASS = "pass"  # the seat does nothing this turn and gets a strike

    @classmethod
    def parse(cls, text: str, allowed: tuple[FlagPolicy, ...] | None = None) -> FlagPolicy:
        """``lose``, ``default`` or ``pass`` (of those ``allowed``), or TimeControlError."""
        allowed = allowed or tuple(cls)
        for policy in allowed:
            if policy.value == str(text).strip().lower():
                return policy
        raise TimeControlError(f"must be one of {', '.join(p.value for p in allowed)}, not {text!r}")


@attrs.frozen
class TimeControl:
    """How much time a seat has: a per-move limit, a bank with an increment, a setup budget, a
    cap on the whole game, and the most round-trip time credited per move (seconds; None = none)."""

    move: float | None = None  # the most one move may take
    bank: float | None = None  # the seat's bank at the start (None: no bank)
    increment: float = 0.0  # added to the bank after every move
    setup: float | None = None  # a separate budget for the setup turn (None: it is a move like any other)
    game: float | None = None  # the whole game ends when it has lasted this long
    lag: float = DEFAULT_LAG  # the most measured round trip credited per move

    def __attrs_post_init__(self) -> None:
        for name in ("move", "bank", "increment", "setup", "game", "lag"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                raise TimeControlError(f"{name} must be a number of seconds, not {value!r}")
            if value < 0:
                raise TimeControlError(f"{name} must not be negative")
            if value > DAY:
                raise TimeControlError(f"{name} must be at most a day (24h)")
        for name in ("move", "setup", "game"):
            if getattr(self, name) == 0:
                raise TimeControlError(f"{name} must be more than zero (leave it out for no limit)")
        if self.bank == 0 and not self.increment:
            raise TimeControlError("a bank of zero needs an increment (0+2s), or there is no time at all")
        if self.increment and self.bank is None:
            raise TimeControlError("an increment needs a bank (5m+2s)")

    @classmethod
    def per_move(cls, seconds: float | None) -> TimeControl:
        """The control of the old per-move settings: ``seconds`` per move, 0 or None = no limit."""
        return cls(move=seconds or None)

    @property
    def unlimited(self) -> bool:
        """True when no clock ever runs out (only the round-trip cap is set)."""
        return self.move is None and self.bank is None and self.setup is None and self.game is None

    @property
    def plain(self) -> bool:
        """True for a per-move limit (or none) and nothing else: the clock of the original games."""
        return self.bank is None and self.setup is None and self.game is None

    def budget(self, bank: float | None, setup: bool = False) -> float | None:
        """The most one move may take with ``bank`` left (None: no limit): the setup budget for
        the setup turn when there is one, else the least of the move limit and the bank."""
        if setup and self.setup is not None:
            return self.setup
        if bank is None:
            return self.move
        return bank if self.move is None else min(self.move, bank)

    def after(self, bank: float | None, used: float, flagged: bool = False) -> float | None:
        """The bank after a move that took ``used`` seconds of it: what is left, never below
        zero, plus the increment (``flagged``: its time ran out; whether it still gets the
        increment is the game's choice, so both are here)."""
        if bank is None:
            return None
        return max(0.0, bank - used) + (0.0 if flagged else self.increment)

    def notation(self) -> str:
        """The canonical text of this control (``parse(c.notation()) == c``)."""
        terms = []
        if self.bank is not None:
            terms.append(f"{format_duration(self.bank)}+{format_duration(self.increment)}")
        if self.move is not None:
            terms.append(format_duration(self.move) if self.bank is None else f"move={format_duration(self.move)}")
        if self.setup is not None:
            terms.append(f"setup={format_duration(self.setup)}")
        if self.game is not None:
            terms.append(f"game={format_duration(self.game)}")
        if self.lag != DEFAULT_LAG:
            terms.append(f"lag={format_duration(self.lag)}")
        if not terms or (len(terms) == 1 and terms[0].startswith("lag=")):
            terms.insert(0, "none")
        return ",".join(terms)

    def __str__(self) -> str:
        return self.notation()


_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)?", re.ASCII)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, None: 1000}


def parse_duration(text: str, what: str = "a duration") -> float:
    """``1.5``, ``500ms``, ``90s``, ``2m``, ``1h30m`` -> seconds; TimeControlError otherwise."""
    text = text.strip().lower()
    if not text:
        raise TimeControlError(f"{what} is missing")
    total = Decimal(0)  # milliseconds, exactly: "9ms" is 0.009 s, not 0.009000000000000001
    at = 0
    units: list[str | None] = []
    while at < len(text):
        match = _PART.match(text, at)
        if match is None:
            raise TimeControlError(f"{what} {text!r} is not a duration like 90s, 2m, 1h30m, 500ms or 1.5")
        unit = match.group(2)
        if unit is None and match.end() != len(text) and text[match.end()].isalpha():
            raise TimeControlError(f"{what} {text!r}: unknown unit (units: ms, s, m, h)")
        if unit is None and match.end() != len(text):
            raise TimeControlError(f"{what} {text!r}: only the last number may go without a unit")
        units.append(unit)
        total += Decimal(match.group(1)) * _UNIT_MS[unit]
        at = match.end()
    if len(units) > 1 and (None in units or len(set(units)) != len(units)):
        raise TimeControlError(f"{what} {text!r}: every part needs its own unit (1h30m, 2m30s)")
    seconds = float(total / 1000)
    if seconds > DAY:
        raise TimeControlError(f"{what} {text!r} is longer than a day")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds -> the shortest notation: ``500ms``, ``2s``, ``1.5s``, ``5m``, ``1m30s``, ``1h``."""
    ms = round(seconds * 1000)
    if ms == 0:
        return "0"
    if ms % 1000:
        if ms < 1000:
            return f"{ms}ms"
        return f"{ms / 1000:.3f}".rstrip("0") + "s"
    whole = ms // 1000
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if secs:
        out += f"{secs}s"
    return out


def parse(text: str | float | int | TimeControl) -> TimeControl:
    """The time control written as ``text`` (see the module's documentation); a number is a
    per-move limit in seconds (0 = none). Raises TimeControlError saying what is wrong."""
    if isinstance(text, TimeControl):
        return text
    if isinstance(text, bool):
        raise TimeControlError(f"{text!r} is not a time control")
    if isinstance(text, (int, float)):
        if text < 0:
            raise TimeControlError("a time control must not be negative")
        return TimeControl.per_move(float(text) if text else None)
    if not isinstance(text, str):
        raise TimeControlError(f"{text!r} is not a time control")
    source = text.strip()
    if not source:
        raise TimeControlError("the time control is empty (write none for no limit)")
    if len(source) > 200:
        raise TimeControlError("the time control is too long")
    fields: dict[str, float | None] = {}
    terms = source.split(",")
    for raw in terms:
        term = raw.strip().lower()
        if not term:
            raise TimeControlError(f"{source!r} has an empty term (two commas?)")
        if term in ("none", "0"):
            if len(terms) > 1:
                raise TimeControlError(f"{source!r}: none stands alone (leave out what has no limit)")
            _put(fields, "move", None, source)
            continue
        if "=" in term:
            key, _, value = term.partition("=")
            key = key.strip()
            if key not in KEYS:
                raise TimeControlError(f"unknown term {key!r} in {source!r}; known: {', '.join(KEYS)}")
            _put(fields, key, parse_duration(value, key), source)
        elif "+" in term:
            bank, _, increment = term.partition("+")
            _put(fields, "bank", parse_duration(bank, "the bank"), source)
            fields["increment"] = parse_duration(increment, "the increment")
        else:
            _put(fields, "move", parse_duration(term, "the move limit"), source)
    if fields.get("move") == 0:
        raise TimeControlError("a move limit of zero: write none for no limit")
    if fields.get("lag") is None:
        fields.pop("lag", None)
    return TimeControl(**fields)


def _put(fields: dict, key: str, value: float | None, source: str) -> None:
    if key in fields:
        raise TimeControlError(f"{source!r} gives the {key} twice")
    fields[key] = value


def seconds_field(seconds: float | None) -> str:
    """A time on a protocol line: seconds with millisecond precision (``12.345``), ``-`` for none."""
    if seconds is None:
        return "-"
    return f"{max(0.0, seconds):.3f}"
