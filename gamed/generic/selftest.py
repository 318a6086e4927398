"""The self-test: a scripted match that checks a bot's side of the protocol, on the generic port
(``{"type":"selftest","game":...}``) and on the text ports of Kalaha and Connect Four
(``SELFTEST``).

The daemon plays a short match against the bot on its own, without an opponent and without a
record: a ``started``, then scenes, each one state (or a few, while the bot acts again) built with
the game's rules (``gamed.play.IRules``) from positions chosen to hit the protocol's corner cases:
the first move, an extra turn (Kalaha), a forced move, full columns (Connect Four), an answer the
server refuses (the bot must answer again from the error's ``legal``), a short clock, and the end
of the game (after which the bot must not act). Each scene ends with a ``selftest`` report, ``ok``
or the exact line expected and the exact line received (or what did not come), and the match
with a ``verdict``. Nothing the bot sends during the self-test costs it anything.

The match is the same on every port; a ``Voice`` writes it in the port's own words: ``JsonVoice``
the generic protocol's messages, ``TextVoice`` (with each text game's lines: ``KalahaVoice``,
``Connect4Voice``) the lines of a game's text protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from gamed import play, textwire
from gamed.generic import wire

ANSWER_TIME = 5.0  # seconds a bot has for each answer
SHORT_CLOCK = 2.0  # ... in the scene "a short clock"
AFTER_END = 1.0  # seconds the bot is watched after the end (it must not act)
_END = "the end: no act after the game has ended"
REFUSAL = "the self-test refuses your first answer: answer again from legal"
TEXT_REFUSAL = "the self-test refuses your first answer: answer the YOURMOVE again"
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
        Scene("a refused answer: answer again",
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
        Scene("a refused answer: answer again", lambda: board([3, 3]),
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
        Scene("a refused answer: answer again", start, refuse_first=True),
        Scene("a short clock", start, clock=SHORT_CLOCK),
    ]


SCENES: Mapping[str, Callable[[], tuple[play.IRules, list[Scene]]]] = {"kalaha": _kalaha, "connect4": _connect4}


def scenes_of(game: str, rules: play.IRules) -> tuple[play.IRules, list[Scene]]:
    return SCENES[game]() if game in SCENES else (rules, _any(rules))


class SelfTests:
    """The generic service's ``selftest`` hook: a ``SelfTest`` for a session and a game."""

    def __init__(self, hosts: Mapping[str, Any], clock: IReactorTime):
        self.hosts = hosts
        self.clock = clock

    def __call__(self, session: Any, game: str) -> JsonProbe:
        rules, scenes = scenes_of(game, self.hosts[game].rules)
        test = SelfTest(JsonVoice(session, game), rules, scenes, self.clock, lambda: _done(session, probe))
        probe = JsonProbe(test)
        test.begin()
        return probe


def _done(session: Any, probe: Any) -> None:
    if session.probe is probe:
        session.probe = None


class JsonProbe:
    """A self-test as the generic session's ``probe``: the messages it takes, the rest it leaves."""

    def __init__(self, test: SelfTest):
        self.test = test

    def heard(self, line: str) -> None:
        self.test.heard(line)

    def receive(self, message: dict) -> bool:
        kind = message["type"]
        if kind in ("ping", "hello", "games", "quit"):
            return False
        if kind == "act":
            self.test.answer(message["action"], message.get("turn"), message.get("id"))
        else:
            self.test.other(f"a {kind} message")
        return True

    def malformed(self, code: str, text: str) -> bool:
        self.test.other(f"{code}: {text}")
        return True

    def gone(self) -> None:
        self.test.gone()


class JsonVoice:
    """The self-test in the generic protocol's messages."""

    def __init__(self, session: Any, game: str):
        self.session = session
        self.game = game

    def started(self) -> None:
        self.session.send({"type": "started", "game": self.game, "id": 0, "seat": 0,
                           "seats": [self.session.identity.name, "selftest"], "options": {"selftest": True}})

    def state(self, rules: play.IRules, state: Any, turn: int, seconds: float, actions: play.Actions) -> None:
        message: dict[str, Any] = {
            "type": "state", "game": self.game, "id": 0, "turn": turn, "phase": rules.phase(state),
            "to_act": list(rules.to_act(state)), "observation": rules.observation(state, 0),
            "text": rules.render(state, 0), "clock": {"move": seconds, "banks": [None, None]},
            "actions": list(actions.strings),
        }
        if not actions.complete:
            message["complete"] = False
        if actions.grammar:
            message["grammar"] = actions.grammar
        self.session.send(message)

    def expected(self, actions: tuple[str, ...], turn: int) -> str:
        shown = ", ".join(wire.dumps(a) for a in actions[:8]) + (", ..." if len(actions) > 8 else "")
        return f'{{"type":"act","action":<0..{len(actions) - 1} or one of {shown}>,"turn":{turn}}}'

    def refused(self, actions: tuple[str, ...], request_id: Any, state: Any, seconds: float) -> None:
        self.session.send(wire.error(wire.NO_SUCH_ACTION, REFUSAL, "act", request_id, legal=list(actions),
                                     retries_left=2))

    def ended(self) -> None:
        self.session.send({"type": "ended", "game": self.game, "id": 0, "reason": "selftest",
                           "text": "the self-test's match is over", "scores": None})

    def report(self, step: str, ok: bool, expected: str, received: str) -> None:
        report: dict[str, Any] = {"type": "selftest", "game": self.game, "step": step, "ok": ok}
        if not ok:
            report["expected"] = expected
            report["received"] = received
        self.session.send(report)

    def verdict(self, passed: bool) -> None:
        self.session.send({"type": "selftest", "game": self.game, "verdict": "pass" if passed else "fail"})


class TextVoice:
    """The self-test in a text game's lines (``SELFTEST`` on its port): the game's own ``START``,
    position and ``YOURMOVE`` lines, ``ERROR`` and ``YOURMOVE`` again for the refused answer, ``RESULT DRAW SELFTEST``
    at the end, and the reports as ``SELFTEST OK <step>`` or ``SELFTEST FAIL <step>`` with
    ``SELFTEST EXPECTED <line>`` and ``SELFTEST RECEIVED <line>``, then ``SELFTEST VERDICT
    PASS|FAIL``. Subclasses write the game's lines: ``start``, ``position``, ``prompt``."""

    def __init__(self, protocol: Any):
        self.protocol = protocol

    def send(self, *lines: str) -> None:
        self.protocol.send_lines(list(lines))

    def start(self) -> str:
        raise NotImplementedError

    def position(self, state: Any) -> list[str]:
        raise NotImplementedError

    def prompt(self, state: Any, seconds: float) -> str:
        raise NotImplementedError

    def started(self) -> None:
        self.send(self.start())

    def state(self, rules: play.IRules, state: Any, turn: int, seconds: float, actions: play.Actions) -> None:
        self.send(*self.position(state), self.prompt(state, seconds))

    def expected(self, actions: tuple[str, ...], turn: int) -> str:
        return f"MOVE <one of {' '.join(actions)}>"

    def refused(self, actions: tuple[str, ...], request_id: Any, state: Any, seconds: float) -> None:
        # As in a game: the error, then the move is asked for again.
        self.send(textwire.error(self.protocol.wire.Code.NOT_NOW, TEXT_REFUSAL), self.prompt(state, seconds))

    def ended(self) -> None:
        self.send("RESULT DRAW SELFTEST the self-test's match is over")

    def report(self, step: str, ok: bool, expected: str, received: str) -> None:
        if ok:
            self.send(f"SELFTEST OK {step}")
        else:
            self.send(f"SELFTEST FAIL {step}", f"SELFTEST EXPECTED {expected}", f"SELFTEST RECEIVED {received}")

    def verdict(self, passed: bool) -> None:
        self.send(f"SELFTEST VERDICT {'PASS' if passed else 'FAIL'}")


class SelfTest:
    """One bot's self-test, told what the bot sends (``heard``, ``answer``, ``other``) and
    speaking through ``voice``; ``done()`` is called after the verdict."""

    def __init__(self, voice: Any, rules: play.IRules, scenes: list[Scene], clock: IReactorTime,
                 done: Callable[[], None] = lambda: None):
        self.voice = voice
        self.rules = rules
        self.scenes = list(scenes)
        self.clock = clock
        self.done = done
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
        self.over = False  # the verdict was given

    # --- what the bot sends --------------------------------------------------------------------

    def heard(self, line: str) -> None:
        self.heard_line = line

    def answer(self, action: int | str, turn: int | None, request_id: Any = None) -> None:
        """An answer (an act, a MOVE line)."""
        if self.over:
            return
        if self.ended:
            return self._acted_after_end()
        if self.state is None:
            return
        self._cancel()
        scene = self.scene
        if turn is not None and turn != self.turn:
            return self._deviation(f"the turn is {self.turn}, not {turn}")
        try:
            action = play.resolve(self.rules, self.state, 0, action)
            after = self.rules.apply(self.state, 0, action)
        except play.IllegalAction as e:
            return self._deviation(f"{e.reason}: {e.text}")
        if scene.refuse_first and not self.refused:
            self.refused = True
            self.voice.refused(self.actions, request_id, self.state, ANSWER_TIME)
            self._arm(ANSWER_TIME)
            return
        self.answers += 1
        self.turn += 1
        if 0 in self.rules.to_act(after) and self.answers < MAX_AGAIN:
            return self._ask(after)  # the bot acts again: an extra turn, or its next unit's command
        self.voice.report(scene.title, True, "", "")
        self._next_scene()

    def other(self, what: str) -> None:
        """Anything else the bot sends that the port does not answer itself: a deviation."""
        if self.over:
            return
        if self.ended:
            return self._acted_after_end()
        if self.state is not None:
            self._deviation(what)

    def gone(self) -> None:
        self._cancel()
        self.over = True

    # --- the match -----------------------------------------------------------------------------

    def begin(self) -> None:
        self.voice.started()
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
        seconds = self.scene.clock or ANSWER_TIME
        self.voice.state(self.rules, state, self.turn, seconds, actions)
        self._arm(seconds)

    def _arm(self, seconds: float) -> None:
        self._cancel()
        self.timer = self.clock.callLater(seconds, self._timed_out, seconds)

    def _cancel(self) -> None:
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.timer = None

    def _timed_out(self, seconds: float) -> None:
        self.timer = None
        self.heard_line = f"nothing within {seconds:g} s"
        self._deviation()

    def _deviation(self, why: str = "") -> None:
        self._cancel()
        title = self.scene.title + (f" ({why})" if why else "")
        self.failed += 1
        self.voice.report(title, False, self.voice.expected(self.actions, self.turn), self.heard_line)
        self.turn += 1
        self._next_scene()

    def _acted_after_end(self) -> None:
        if not self.late:
            self.late = True
            self.failed += 1
            self.voice.report(_END, False, "nothing (the game is over)", self.heard_line)

    def _end(self) -> None:
        self.scene = None
        self.state = None
        self.ended = True
        self.voice.ended()
        self.timer = self.clock.callLater(AFTER_END, self._verdict)

    def _verdict(self) -> None:
        self.timer = None
        if not self.late:
            self.voice.report(_END, True, "", "")
        self.over = True
        self.voice.verdict(self.failed == 0)
        self.done()
