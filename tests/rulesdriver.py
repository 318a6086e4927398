"""Driving a game's common rules interface (``gamed.play.IRules``) in tests: a fresh state from
options, actions played by whoever acts, and a refused action's reason and text."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gamed.play import IllegalAction, checked_options


class RulesDriver:
    """The helpers every game's ``test_play.py`` uses, bound to one ``IRules``."""

    def __init__(self, rules: Any):
        self.rules = rules

    def start(self, **given: Any) -> Any:
        """The first state of a game with the options ``given`` (checked), seeded."""
        return self.rules.initial(checked_options(self.rules.options, given), random.Random(0))

    def play(self, state: Any, *actions: Any) -> Any:
        """``state`` after each action, each played by the first seat that acts."""
        for action in actions:
            state = self.rules.apply(state, self.rules.to_act(state)[0], str(action))
        return state

    def refused(self, state: Any, seat: int, action: Any) -> tuple[str, str]:
        """The reason and text of the refusal of ``action`` by ``seat`` (it must be refused)."""
        with pytest.raises(IllegalAction) as e:
            self.rules.apply(state, seat, action)
        return e.value.reason, e.value.text
