"""The Virtual Fight self-test: ``SELFTEST`` on the AI port, a scripted solo match that checks an AI.

Before its game an AI may ask for it; the server then plays three turns against it on a small
fixed map, in the port's own lines (``READY``, the replies, the ``200`` block, ``GAMEOVER&...``),
with no opponent and no record. The AI commands its five warriors as in any game; the enemy is a
fixed team that never moves: four of its warriors are walled in, the fifth stands beside the AI's
warrior 0, which is walled in on its other sides, and shoots it in turn 1. Each turn is a scene:

1. the first turn: every living warrior gets an action or a pass, no ``100`` reply, the turn is
   finished within the turn time (5 s);
2. a killed warrior: the ``200`` block of turn 1 said ``0&KILLED``: no command for warrior 0 now;
3. a short turn time: the turn must be finished within 2 s (the ``CLOCK`` line, for an AI that
   asked for them, says so);
4. the end: ``GAMEOVER&...`` after turn 3, then nothing more from the AI for 1 s.

Each scene is reported when it ends, before the ``200`` block (the end: 1 s after the game-over
line), as ``SELFTEST&OK&<step>`` or ``SELFTEST&FAIL&<step>`` with ``SELFTEST&EXPECTED&<line>``
and ``SELFTEST&RECEIVED&<line>``; then ``SELFTEST&VERDICT&PASS|FAIL``. The turn model is the
fight's own (many commands a turn, the turn over once every living warrior acted or passed), so
this is not the one-answer-per-state ``gamed.generic.selftest.SelfTest``, but it reports alike.

The map, the scenes and the texts are pure; ``FightSelfTest`` runs them on the injected clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from gamed.fight import wire
from gamed.fight.rules import DONE, INVALID, QUERIES, Battle, Command, Dir, FightMap, Verb, judge, parse_map
from gamed.timecontrol import TimeControl

TURN_TIME = 5.0  # seconds of a turn of the self-test
SHORT_TURN = 2.0  # ... of the scene "a short turn time"
AFTER_END = 1.0  # seconds the AI is watched after the game-over line
AI, ENEMY = 0, 1  # the teams
SHOOTER = 0  # the enemy warrior beside the AI's warrior 0: it shoots it in turn 1

# The AI's warrior 0 (top left) is boxed in by the edge, two walls and the enemy's shooter (team 1's
# warrior 0, which only it can reach); the other four enemies are walled in at the bottom right.
MAP_TEXT = """\
#01#......
####......
..........
.0.0.0.0..
.......###
.......#11
.......#11
"""

COMMANDS = "a command: n&POS, n&DIR, n&SAW, n&MOVE&D, n&SHOOT[&D] or n&NONE[&D], n 0 to 4"
END = "the end: nothing after GAMEOVER"


@attrs.frozen
class FightScene:
    """One turn of the self-test: its title in the report and its turn time."""

    title: str
    seconds: float = TURN_TIME


SCENES = (
    FightScene("the first turn: every warrior acts or passes"),
    FightScene("a killed warrior: no command for it"),
    FightScene(f"a short turn time: {SHORT_TURN:g} s", SHORT_TURN),
)


def selftest_map() -> FightMap:
    """The self-test's map (not a fair one: the enemy is walled in on purpose)."""
    return parse_map(MAP_TEXT, "selftest", fair=False)


@attrs.frozen
class Deviation:
    """What the AI did wrong in a scene: why, the line expected and the line received."""

    why: str
    expected: str
    received: str

    def lines(self, title: str) -> list[str]:
        return wire.selftest_fail(f"{title} ({self.why})", self.expected, self.received)


def judge_command(
    battle: Battle, command: Command | None, received: str, max_lines: int, lines: int
) -> Deviation | None:
    """The deviation of one line of the AI's (None: a command a good AI may send), judged before
    it is applied; ``lines`` counts the turn's lines so far, this one included."""
    if lines > max_lines:
        return Deviation(f"more than {max_lines} lines in one turn", f"at most {max_lines} lines a turn", received)
    if command is None:
        return Deviation("answered 100", COMMANDS, received)
    if not battle.warriors[AI][command.warrior].alive:
        n = command.warrior
        return Deviation(f"warrior {n} was KILLED", f"no command for warrior {n}", received)
    return None


class FightSelfTest:
    """One AI's self-test, told each line the AI sends (``line``) and speaking through ``ai``: an
    object with ``send_lines(lines)`` and ``ready_lines(control, team, left, banks)`` (the AI's
    ``READY``, after its clock lines if it asked for them). ``done()`` runs after the verdict."""

    def __init__(self, ai: Any, clock: IReactorTime, done: Callable[[], None] = lambda: None, max_lines: int = 1000):
        self.ai = ai
        self.clock = clock
        self.done = done
        self.max_lines = max_lines
        self.control = TimeControl.per_move(TURN_TIME)
        self.battle = Battle(selftest_map(), 2)
        self.turn = 0
        self.failed = 0
        self.scene: FightScene | None = None
        self.deviation: Deviation | None = None
        self.lines = 0  # lines of the open turn
        self.deadline = 0.0
        self.timer: IDelayedCall | None = None
        self.ended = False  # the game-over line was sent: the AI is watched
        self.late = False  # ... and it sent a line after it
        self.over = False  # the verdict was given (or the AI left)

    # --- what the AI sends ---------------------------------------------------------------------

    def line(self, text: str | None, received: str | None = None) -> None:
        """A line from the AI (None: one too long or not text, shown as ``received``)."""
        received = text if received is None else received
        if self.over:
            return
        if self.ended:
            return self._after_end(received)
        self.catch_up()
        if self.ended:
            return self._after_end(received)
        self.lines += 1
        if text is not None and self.lines <= self.max_lines and wire.is_help(text):
            self.ai.send_lines(list(wire.AI_HELP))
            return
        command = wire.parse_command(text) if text is not None and self.lines <= self.max_lines else None
        deviation = judge_command(self.battle, command, received, self.max_lines, self.lines)
        if deviation is not None:
            self.deviation = self.deviation or deviation
            self.ai.send_lines([INVALID])
            return
        code, reply = self.battle.execute(AI, command)
        self.ai.send_lines([reply])
        if code == DONE and command.verb not in QUERIES and self.battle.finished(AI):
            self._close_turn()

    def catch_up(self) -> None:
        """A turn whose time is up ends before the next line is answered (it belongs to the next turn)."""
        if self.scene is not None and not self.ended and self.clock.seconds() >= self.deadline:
            self._close_turn()

    def gone(self) -> None:
        """The AI left (or the server stops): nothing more is said."""
        self._cancel()
        self.over = True

    # --- the match -----------------------------------------------------------------------------

    def begin(self) -> None:
        self._open_turn()

    def _open_turn(self) -> None:
        self.turn += 1
        self.scene = SCENES[self.turn - 1]
        self.deviation = None
        self.lines = 0
        seconds = self.scene.seconds
        self.deadline = self.clock.seconds() + seconds
        self.timer = self.clock.callLater(seconds, self._timed_out)
        if self.turn == 1:  # the enemy's shooter fires at the boxed-in warrior 0
            self.battle.execute(ENEMY, Command(SHOOTER, Verb.SHOOT, Dir.LEFT))
        self.ai.send_lines(self.ai.ready_lines(self.control, AI, seconds, [None, None]))

    def _timed_out(self) -> None:
        self.timer = None
        self._close_turn()

    def _close_turn(self) -> None:
        self._cancel()
        scene = self.scene
        waiting = self._unfinished()
        if self.deviation is None and waiting is not None:
            self.deviation = Deviation(
                f"not finished within {scene.seconds:g} s",
                f"an action or a pass for warrior {waiting}",
                f"nothing within {scene.seconds:g} s",
            )
        lines = self._report(scene.title, self.deviation)
        before = self.battle.living_teams()
        resolution = self.battle.resolve()
        lines += wire.report(resolution, AI)
        over, results = judge(before, self.battle.counts(), self.turn, len(SCENES))
        if not over:
            self.ai.send_lines(lines)
            self._open_turn()
            return
        for left in SCENES[self.turn:]:  # the AI's own shots killed its last warriors
            lines += self._report(left.title, Deviation("not played", "a living warrior of yours", "none is left"))
        self.scene = None
        self.ended = True
        self.ai.send_lines([*lines, wire.game_over(results[AI])])
        self.timer = self.clock.callLater(AFTER_END, self._verdict)

    def _unfinished(self) -> int | None:
        """The first living warrior of the AI's that neither acted nor passed (None: its turn is done)."""
        _, passed, _ = self.battle.open_turn()
        for w in self.battle.living(AI):
            if not self.battle.has_acted(AI, w.number) and (AI, w.number) not in passed:
                return w.number
        return None

    def _report(self, title: str, deviation: Deviation | None) -> list[str]:
        if deviation is None:
            return [wire.selftest_ok(title)]
        self.failed += 1
        return deviation.lines(title)

    def _after_end(self, received: str) -> None:
        if not self.late:
            self.late = True
            self.failed += 1
            self.ai.send_lines(wire.selftest_fail(END, "nothing (the game is over)", received))

    def _verdict(self) -> None:
        self.timer = None
        self.over = True
        lines = [] if self.late else [wire.selftest_ok(END)]
        self.ai.send_lines([*lines, wire.selftest_verdict(self.failed == 0)])
        self.done()

    def _cancel(self) -> None:
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.timer = None
