"""``{"type":"selftest","game":...}``: a scripted match that checks a bot's side of the protocol.

The daemon plays a short match against the bot on its own, without an opponent and without a
record: a ``started``, then scenes, each one state (or a few, while the bot acts again) built with
the game's rules (``gamed.play.IRules``) from positions chosen to hit the protocol's corner cases:
the first move, an extra turn (Kalaha), a forced move, full columns (Connect Four), an answer the
server refuses (the bot must answer again from the error's ``legal``), a short clock, and the end
of the game (after which the bot must not act). Each scene ends with a ``selftest`` report, ``ok``
or the exact line expected and the exact line received (or what did not come), and the match
with a ``verdict``. Nothing the bot sends during the self-test costs it anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from gamed import play
from gamed.generic import wire

ANSWER_TIME = 5.0  # seconds a bot has for each answer
SHORT_CLOCK = 2.0  # ... in the scene "a short clock"
AFTER_END = 1.0  # seconds the bot is watched after the end (it must not act)
_END = "the end: no act after the game has ended"
MAX_AGAIN = 12  # states of one scene in a row for the same bot (extra turns, per-unit commands)


@attrs.frozen
class Scene:
    """One scene: the title in the report, the state, and how the bot's answer is met."""

    title: str
    state: Callable[[], Any]  # the rules' state (built when the scene begins)
    refuse_first: bool = False  # the server refuses the first answer (a strike in a real game)
    clock: float | None = None  # the clock of the state (and the time the bot has)


def _kalaha() -> tuple[play.IRules, list[Scene]]:
    from gamed.kalaha.play import RULES

    def position(a: list[int], b: list[int]) -> Any:
        return RULES.load({"pits": [*a, 0, *b, 0], "to_move": "A"})

    return RULES, [
        Scene("the first move", lambda: RULES.load({"pits": [6] * 6 + [0] + [6] * 6 + [0], "to_move": "A"})),
        Scene("an extra turn: the last stone in your store, you move again",
              lambda: position([0, 0, 0, 0, 2, 1], [4, 4, 4, 4, 4, 4])),
        Scene("a forced move: one legal pit", lambda: position([0, 0, 3, 0, 0, 0], [4, 4, 4, 4, 4, 4])),
        Scene("a refused answer: answer again from the error's legal actions",
              lambda: position([1, 2, 3, 4, 5, 6], [4, 4, 4, 4, 4, 4]), refuse_first=True),
        Scene("a short clock", lambda: position([3, 3, 3, 3, 3, 3], [4, 4, 4, 4, 4, 4]), clock=SHORT_CLOCK),
    ]


def _connect4() -> tuple[play.IRules, list[Scene]]:
    from gamed.connect4.play import RULES

    def board(moves: list[int], width: int = 7, height: int = 6) -> Any:
        return RULES.load({"width": width, "height": height, "moves": moves})

    return RULES, [
        Scene("the first move", lambda: board([])),
        Scene("full columns: columns 0 and 3 are full", lambda: board([0] * 6 + [3] * 6)),
        Scene("a forced move: one column left (a 4x4 board)", lambda: board([0] * 4 + [1] * 4 + [2] * 4, 4, 4)),
        Scene("a refused answer: answer again from the error's legal actions", lambda: board([3, 3]),
              refuse_first=True),
        Scene("a short clock", lambda: board([2, 4]), clock=SHORT_CLOCK),
    ]


def _any(rules: play.IRules) -> list[Scene]:
    """The scenes of a game without its own: its start, refused once, and on a short clock."""

    def start() -> Any:
        import random

        return rules.initial(play.checked_options(rules, {}), random.Random(1))

    return [
        Scene("the first move", start),
        Scene("a refused answer: answer again from the error's legal actions", start, refuse_first=True),
        Scene("a short clock", start, clock=SHORT_CLOCK),
    ]


SCENES: Mapping[str, Callable[[], tuple[play.IRules, list[Scene]]]] = {"kalaha": _kalaha, "connect4": _connect4}


class SelfTests:
    """The generic service's ``selftest`` hook: a ``SelfTest`` for a session and a game."""

    def __init__(self, hosts: Mapping[str, Any], clock: IReactorTime):
        self.hosts = hosts
        self.clock = clock

    def __call__(self, session: Any, game: str) -> SelfTest:
        if game in SCENES:
            rules, scenes = SCENES[game]()
        else:
            rules = self.hosts[game].rules
            scenes = _any(rules)
        probe = SelfTest(session, game, rules, scenes, self.clock)
        probe.begin()
        return probe


class SelfTest:
    """One bot's self-test (the session's ``probe`` while it runs)."""

    def __init__(self, session: Any, game: str, rules: play.IRules, scenes: list[Scene], clock: IReactorTime):
        self.session = session
        self.game = game
        self.rules = rules
        self.scenes = list(scenes)
        self.clock = clock
        self.turn = 0
        self.failed = 0
        self.scene: Scene | None = None
        self.state: Any = None
        self.actions: tuple[str, ...] = ()
        self.answers = 0  # answers to the scene's states so far
        self.refused = False  # the scene's first answer was refused already
        self.heard_line = ""  # the last line received, as received
        self.timer: IDelayedCall | None = None
        self.ended = False  # the end was sent: the bot is watched
        self.late = False  # ... and it acted after it

    # --- the session's hooks -------------------------------------------------------------------

    def heard(self, line: str) -> None:
        self.heard_line = line

    def receive(self, message: dict) -> bool:
        kind = message["type"]
        if kind in ("ping", "hello", "games", "quit"):
            return False
        if self.ended:
            if kind == "act":
                self._acted_after_end()
            return True
        if kind != "act" or self.state is None:
            self._deviation(self._expected(), self.heard_line, f"a {kind} message during the self-test")
            return True
        self._answer(message)
        return True

    def malformed(self, code: str, text: str) -> bool:
        """A line that is not a message (``code``): a deviation of the scene under way."""
        if self.ended:
            self._acted_after_end()
        else:
            self._deviation(self._expected(), self.heard_line, f"{code}: {text}")
        return True

    def gone(self) -> None:
        self._cancel()

    def _acted_after_end(self) -> None:
        if not self.late:
            self.late = True
            self._report(_END, False, "nothing (the game is over)", self.heard_line)

    # --- the match -----------------------------------------------------------------------------

    def begin(self) -> None:
        self.session.send({"type": "started", "game": self.game, "id": 0, "seat": 0,
                           "seats": [self.session.identity.name, "selftest"], "options": {"selftest": True}})
        self._next_scene()

    def _next_scene(self) -> None:
        if not self.scenes:
            return self._end()
        if self.scene is not None:
            self.turn += 1  # as if the other seat had moved in between: an extra turn is turn + 1
        self.scene = self.scenes.pop(0)
        self.answers = 0
        self.refused = False
        self._ask(self.scene.state())

    def _ask(self, state: Any) -> None:
        self.state = state
        actions = self.rules.legal_actions(state, 0)
        self.actions = actions.strings
        clock = self.scene.clock if self.scene is not None else None
        message: dict[str, Any] = {
            "type": "state", "game": self.game, "id": 0, "turn": self.turn, "phase": self.rules.phase(state),
            "to_act": list(self.rules.to_act(state)), "observation": self.rules.observation(state, 0),
            "text": self.rules.render(state, 0), "clock": {"move": clock or ANSWER_TIME, "banks": [None, None]},
            "actions": list(actions.strings),
        }
        if not actions.complete:
            message["complete"] = False
        if actions.grammar:
            message["grammar"] = actions.grammar
        self.session.send(message)
        self._arm(clock or ANSWER_TIME)

    def _expected(self) -> str:
        shown = ", ".join(wire.dumps(a) for a in self.actions[:8]) + (", ..." if len(self.actions) > 8 else "")
        return f'{{"type":"act","action":<0..{len(self.actions) - 1} or one of {shown}>,"turn":{self.turn}}}'

    def _answer(self, message: dict) -> None:
        self._cancel()
        scene = self.scene
        turn = message.get("turn")
        if turn is not None and turn != self.turn:
            return self._deviation(self._expected(), self.heard_line, f"the turn is {self.turn}, not {turn}")
        try:
            action = play.resolve(self.rules, self.state, 0, message["action"])
            after = self.rules.apply(self.state, 0, action)
        except play.IllegalAction as e:
            return self._deviation(self._expected(), self.heard_line, f"{e.reason}: {e.text}")
        if scene.refuse_first and not self.refused:
            self.refused = True
            self.session.send(wire.error(
                wire.NO_SUCH_ACTION, "the self-test refuses your first answer: answer again from legal",
                "act", message.get("id"), legal=list(self.actions), retries_left=2))
            self._arm(ANSWER_TIME)
            return
        self.answers += 1
        self.turn += 1
        if 0 in self.rules.to_act(after) and self.answers < MAX_AGAIN:
            return self._ask(after)  # the bot acts again: an extra turn, or its next unit's command
        self._report(scene.title, True)
        self._next_scene()

    def _arm(self, seconds: float) -> None:
        self._cancel()
        self.timer = self.clock.callLater(seconds, self._timed_out, seconds)

    def _cancel(self) -> None:
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.timer = None

    def _timed_out(self, seconds: float) -> None:
        self.timer = None
        self._deviation(self._expected(), f"nothing within {seconds:g} s")

    def _deviation(self, expected: str, received: str, why: str = "") -> None:
        self._cancel()
        title = self.scene.title if self.scene is not None else "the start"
        self._report(title + (f" ({why})" if why else ""), False, expected, received)
        self.turn += 1
        self._next_scene()

    def _report(self, step: str, ok: bool, expected: str | None = None, received: str | None = None) -> None:
        report: dict[str, Any] = {"type": "selftest", "game": self.game, "step": step, "ok": ok}
        if not ok:
            self.failed += 1
            report["expected"] = expected or ""
            report["received"] = received or ""
        self.session.send(report)

    def _end(self) -> None:
        self.scene = None
        self.state = None
        self.ended = True
        self.session.send({"type": "ended", "game": self.game, "id": 0, "reason": "selftest",
                           "text": "the self-test's match is over", "scores": None})
        self.timer = self.clock.callLater(AFTER_END, self._verdict)

    def _verdict(self) -> None:
        self.timer = None
        if not self.late:
            self._report(_END, True)
        self.session.send({"type": "selftest", "game": self.game, "verdict": "fail" if self.failed else "pass"})
        if self.session.probe is self:
            self.session.probe = None
