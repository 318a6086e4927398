"""The common game interface of the rules layer: every game's rules seen one way.

Each game folder has a ``play.py`` with one object providing ``IRules``: its seats, who acts now
(one seat, or several at once: Virtual Fight's simultaneous turns, the setups of Stratego and
Combat), the legal actions of a seat as canonical strings, applying an action, what a seat (or a
spectator) may see of a state, structured and as text, the result, and the state as JSON. The
generic port (``gamed.generic``), the HTTP bot API, the self-test and the web site's play mode are
written once against it; the games' own protocols keep their own code and bytes.

Pure like every rules module: no Twisted, no clock, no global random (randomness comes in as a
``random.Random``). One error idiom: the rules raise ``IllegalAction`` with a short reason word;
adapters map the reason to their wire's codes.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from zope.interface import Attribute, Interface

# The reasons an action is refused, as every adapter names them (the generic port's error codes).
NOT_YOUR_TURN = "not_your_turn"  # the seat does not act now
NO_SUCH_ACTION = "no_such_action"  # not one of the legal actions (or an index out of range)
BAD_ACTION = "bad_action"  # not an action of this game at all (cannot be parsed)
GAME_OVER = "game_over"
REASONS = (NOT_YOUR_TURN, NO_SUCH_ACTION, BAD_ACTION, GAME_OVER)


class IllegalAction(ValueError):
    """An action the rules refuse: ``reason`` is one of ``REASONS``, ``text`` says why to people."""

    def __init__(self, reason: str, text: str):
        super().__init__(reason, text)
        self.reason = reason
        self.text = text

    def __str__(self) -> str:
        return self.text


@attrs.frozen
class Actions:
    """The legal actions of one seat now.

    ``strings`` are canonical (what the seat sends back, or its index in this tuple), in a fixed
    order. When ``complete`` is False the list is a choice of examples from a set too large to
    list (a Stratego setup): any string of the form ``grammar`` describes is judged by ``apply``.
    """

    strings: tuple[str, ...] = ()
    complete: bool = True
    grammar: str = ""  # how an action is written, for people ("A1..A6: the pit to sow")

    def __len__(self) -> int:
        return len(self.strings)

    def pick(self, answer: int | str) -> str:
        """The action an answer names: an index into ``strings`` or an action's text (canonical
        or, when the list is not complete, any text ``apply`` will judge). Raises IllegalAction."""
        if isinstance(answer, bool) or not isinstance(answer, (int, str)):
            raise IllegalAction(BAD_ACTION, "an action is an index into the legal actions or an action's text")
        if isinstance(answer, int):
            if 0 <= answer < len(self.strings):
                return self.strings[answer]
            raise IllegalAction(NO_SUCH_ACTION, f"{answer} is not an index of the {len(self.strings)} legal actions")
        # Not canonical, or from a list that is not complete: the rules judge it (``resolve``).
        return answer.strip()


@attrs.frozen
class OptionSpec:
    """One option a game can be asked for: its JSON type, default, choices and help."""

    type: str  # "integer", "string", "boolean"
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    def check(self, name: str, value: Any) -> Any:
        """``value`` when it is valid for this option, else ValueError saying why."""
        python = {"integer": int, "string": str, "boolean": bool}[self.type]
        if isinstance(value, bool) and python is not bool or not isinstance(value, python):
            raise ValueError(f"option {name} must be a {self.type}")
        if self.choices and value not in self.choices:
            raise ValueError(f"option {name} must be one of {', '.join(map(str, self.choices))}")
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            raise ValueError(f"option {name} must be from {self.minimum} to {self.maximum}")
        return value

    def describe(self) -> dict:
        """The option as the generic port's ``games`` reply lists it."""
        out: dict[str, Any] = {"type": self.type, "default": self.default, "help": self.help}
        if self.choices:
            out["choices"] = list(self.choices)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


def checked_options(specs: Mapping[str, OptionSpec], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every option with its given value or its default; ValueError for an unknown or invalid one."""
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]}; options: {', '.join(specs) or 'none'}")
    return {name: spec.check(name, given[name]) if name in given else spec.default for name, spec in specs.items()}


class IRules(Interface):
    """A game's rules, seen the way every game is: seats, turns, actions and observations."""

    name = Attribute("The game type, as the registry names it: 'kalaha'.")
    options = Attribute("The options a game can be asked for: name -> OptionSpec (may be empty).")
    hidden = Attribute(
        "True when seats may know different things (hidden information: Stratego's ranks); False "
        "when every seat and spectator sees the same, so a state's view is made once for all."
    )

    def seat_count(options: Mapping[str, Any]) -> int:
        """How many seats a game with these (checked) options has."""

    def initial(options: Mapping[str, Any], rng: random.Random) -> Any:
        """The state a game with these options starts in."""

    def to_act(state: Any) -> tuple[int, ...]:
        """The seats that act now, in seat order: one for an alternating game, several while they
        act at once (simultaneous turns, setups); () once the game is over."""

    def phase(state: Any) -> str:
        """What is being done now: 'setup', 'move' (one seat at a time), 'turn' (seats at once)
        or 'over'."""

    def legal_actions(state: Any, seat: int) -> Actions:
        """``seat``'s legal actions now (empty when it does not act)."""

    def apply(state: Any, seat: int, action: str) -> Any:
        """The state after ``seat`` does ``action`` (canonical, or another spelling the game's own
        protocol accepts); raises IllegalAction. Never changes ``state``."""

    def observation(state: Any, seat: int | None) -> dict:
        """What ``seat`` may know of ``state`` (None: a spectator), JSON-able. Never more: hidden
        information stays hidden (an unrevealed enemy unit is only 'a unit')."""

    def render(state: Any, seat: int | None) -> str:
        """The same view as text for people (lines separated by newlines)."""

    def result(state: Any) -> Sequence[float] | None:
        """Each seat's score once the game is over (1 win, 0.5 draw, 0 loss); None before."""

    def dump(state: Any) -> dict:
        """The whole state as JSON (hidden information included: for records, never for players)."""

    def load(data: Mapping[str, Any]) -> Any:
        """The state ``dump`` wrote."""


def resolve(rules: IRules, state: Any, seat: int, answer: int | str) -> str:
    """The canonical action ``seat`` answered with (an index or a text), checked against its
    legal actions now; raises IllegalAction (the rules' reason) for an answer they refuse."""
    if seat not in rules.to_act(state):
        if rules.phase(state) == "over":
            raise IllegalAction(GAME_OVER, "the game is over")
        raise IllegalAction(NOT_YOUR_TURN, "it is not your turn")
    actions = rules.legal_actions(state, seat)
    action = actions.pick(answer)
    if action not in actions.strings:
        rules.apply(state, seat, action)  # raises when the rules refuse it, for the rules' reason
    return action


def playout(rules: IRules, options: Mapping[str, Any], rng: random.Random, limit: int = 10_000) -> list[tuple[Any, int, str]]:
    """A whole game of random legal actions: every (state before, seat, action), in order. For
    tests and the self-test; raises RuntimeError when the game has not ended after ``limit``."""
    state = rules.initial(options, rng)
    played = []
    for _ in range(limit):
        seats = rules.to_act(state)
        if not seats:
            return played
        seat = seats[rng.randrange(len(seats))]
        actions = rules.legal_actions(state, seat)
        action = actions.strings[rng.randrange(len(actions))]
        played.append((state, seat, action))
        state = rules.apply(state, seat, action)
    raise RuntimeError(f"{rules.name}: no end after {limit} actions")
