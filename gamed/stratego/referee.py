"""The UCC 2012 Stratego referee: one match between two seats, as the released ``stratego`` manager.

The pure parts come first: reply parsing with C++ stream semantics (ucc-stratego §5.4), setup
validation (§5.2), the log (§8), the result line (§7) and replay parsing (§9). ``StrategoReferee``
then runs a match over two seats (``gamed.stratego.seats.ISeat``: an AI program, a person, a
replayed log, a network connection): it asks for setups and moves, judges them with
``gamed.stratego.rules``, and returns a ``MatchResult``. It knows nothing about processes or
terminals; the seats do.

The referee is a coroutine that awaits what its seats return, so the same referee runs on the
daemon's reactor (seats returning Deferreds, driven by ``defer.ensureDeferred``) and in
``gamed-stratego``'s own small event loop (``gamed.stratego.pipes``). This module imports neither
Twisted, zope.interface nor attrs: it is on the start-up path of ``gamed-stratego``, which the
competition's tournament script starts once per game (docs/performance.md).
"""

from __future__ import annotations

import collections
import enum
import math
import time
from collections.abc import Awaitable, Callable, Iterable

from gamed.stratego import rules
from gamed.stratego.rules import Board, Fight, Unit

RED, BLUE = 0, 1
COLOURS = ("RED", "BLUE")
SHORT = ("RED", "BLU")  # the log's spelling
SIZE_LINE = "10 10"

_WS = " \t\n\v\f\r"
_INT32 = (-(2**31), 2**31 - 1)


class Outcome(str, enum.Enum):
    """The printed outcomes (§7.1)."""

    VICTORY = "VICTORY"
    SURRENDER = "SURRENDER"
    DRAW = "DRAW"
    DRAW_DEFAULT = "DRAW_DEFAULT"
    ILLEGAL = "ILLEGAL"
    BAD_SETUP = "BAD_SETUP"
    INTERNAL_ERROR = "INTERNAL_ERROR"


# Reason strings of the log (§8.4).
CAPTURED = "Captured the flag"
ATTRITION = "Destroyed all mobile enemy pieces"
NO_MOBILE = "Game declared a draw because neither player has mobile pieces"
SURRENDERED = "This player has surrendered!"
UNINTELLIGIBLE = "Unintelligable response"
INTERNAL = "Internal controller error - Unspecified ERROR"


def draw_after(turn: int) -> str:
    return f"Game declared a draw after {turn} turns"


def timeout_reason(seconds: float) -> str:
    return f"Response timeout after {seconds:2f} seconds."


def out_of_time_reason(control) -> str:
    """The reason of a side whose clock ran out (--clock with a bank)."""
    return f"Ran out of time ({control.notation()})."


def time_cap_reason(seconds: float) -> str:
    return f"Game reached its time cap ({seconds:g} seconds)."


def clock_line(budget: float | None, banks) -> str:
    """``CLOCK <seconds for this reply> RED=<bank> BLUE=<bank>`` (--clock-lines; ``-`` for none)."""
    def field(value):
        return "-" if value is None else f"{value:.3f}"

    return f"CLOCK {field(budget)} RED={field(banks[0])} BLUE={field(banks[1])}"


def _time_left(seat, seconds: float | None) -> None:
    """Tell a program seat the most its next reply may take (a seat without a clock ignores it)."""
    set_budget = getattr(seat, "time_left", None)
    if set_budget is not None:
        set_budget(seconds)


def bad_setup_reason(who: str) -> str:
    return f"An illegal setup was made by {who}"


# --- replies (§5.4) -------------------------------------------------------------------------


class Move(collections.namedtuple("Move", "x y direction mult")):
    """An intelligible move reply (it may still be illegal): ``x``, ``y``, ``direction`` (``UP``,
    ``DOWN``, ``LEFT`` or ``RIGHT``) and the multiplier ``mult``."""

    __slots__ = ()


class _Surrender:
    def __repr__(self) -> str:
        return "SURRENDER"


SURRENDER = _Surrender()


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _read_int(text: str, i: int) -> tuple[int | None, int]:
    """C++ ``>> int`` after whitespace: optional sign and the longest digit run."""
    i = _skip_ws(text, i)
    start = i
    if i < len(text) and text[i] in "+-":
        i += 1
    digits = i
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    if i == digits:
        return None, start
    return int(text[start:i]), i


def _decimal(word: str) -> bool:
    """1 to 9 ASCII digits: a value C++ reads as the same int (within 32 bits)."""
    return 0 < len(word) < 10 and word.isascii() and word.isdecimal()


def parse_reply(text: str) -> Move | _Surrender | None:
    """A reply as the released manager read it: SURRENDER, a Move, or None (unintelligible)."""
    if text == "SURRENDER":
        return SURRENDER
    # The common form first, ``X Y DIR`` or ``X Y DIR MULT`` with single spaces and plain digits:
    # C++ reads it exactly so. Anything else takes the general reading below.
    words = text.split(" ")
    if 2 < len(words) < 5 and words[2] in rules.DIRECTIONS and _decimal(words[0]) and _decimal(words[1]):
        if len(words) == 3:
            return Move(int(words[0]), int(words[1]), words[2], 1)
        if _decimal(words[3]):
            return Move(int(words[0]), int(words[1]), words[2], int(words[3]))
    x, i = _read_int(text, 0)
    if x is None or not _INT32[0] <= x <= _INT32[1]:
        return None
    y, i = _read_int(text, i)
    if y is None or not _INT32[0] <= y <= _INT32[1]:
        return None
    i = _skip_ws(text, i)
    start = i
    n = len(text)
    while i < n and text[i] not in _WS:
        i += 1
    direction = text[start:i]
    if direction not in rules.DIRECTIONS:
        return None
    if _skip_ws(text, i) == n:
        return Move(x, y, direction, 1)
    mult, _ = _read_int(text, i)
    return Move(x, y, direction, 0 if mult is None else mult)


# --- setups (§5.2) --------------------------------------------------------------------------

SETUP_ROWS = ((0, 1, 2, 3), (6, 7, 8, 9))  # y of each setup line, RED then BLUE

# The DEFAULT setups of §5.8, in the order the side sends its rows.
DEFAULT_SETUPS = {
    "RED": ("FB8sB479B8", "BB31555583", "6724898974", "967B669999"),
    "BLUE": ("967B669999", "6724898974", "BB31555583", "FB8sB479B8"),
}


def place_setup(board: Board, seat: int, lines: list[str]) -> bool:
    """Place ``seat``'s setup lines row by row; True when valid. Pieces placed before the first
    failure stay on the board (they count in the values)."""
    counts = [0] * len(rules.DEFAULT_ARMY)
    width = board.layout.width
    for line, y in zip(lines, SETUP_ROWS[seat]):
        if len(line) != width:
            return False
        for x, token in enumerate(line):
            if token == ".":
                continue
            unit = rules.UNIT_OF_TOKEN.get(token)
            if unit is None:
                return False
            counts[unit] += 1
            if counts[unit] > rules.DEFAULT_ARMY[unit]:
                return False
            board.place(y * width + x, seat, unit)
    return len(lines) == 4 and counts[Unit.FLAG] > 0 and tuple(counts) == rules.DEFAULT_ARMY


def setup_block(board: Board, seat: int) -> list[str]:
    """The rows of ``seat``'s setup as the log shows them (rebuilt from the board)."""
    rows = board.view(None)
    return [rows[y] for y in SETUP_ROWS[seat]]


# --- playing a move (§4, §6.2) --------------------------------------------------------------

VICTORY_FLAG = "VICTORY_FLAG"  # the outcome of a flag capture (log only: the game ends)


def play_checked(board: Board, revealed: set[int], source: int, target: int) -> str:
    """Play a move ``rules.ucc_check`` accepted on ``board``, keeping ``revealed`` (the cells whose
    piece combat has shown both sides) up to date; returns the confirmation's OUTCOME (``OK``,
    ``KILLS a d``, ``DIES a d``, ``BOTHDIE a d``) or VICTORY_FLAG, the board then unchanged (§4)."""
    cells = board.cells
    defender = cells[target]
    if defender == rules.EMPTY:
        cells[target], cells[source] = cells[source], rules.EMPTY
        if source in revealed:
            revealed.discard(source)
            revealed.add(target)
        return "OK"
    a, d = rules.unit_of(cells[source]), rules.unit_of(defender)
    fight = rules.fight_of(rules.attack(a, d, rules.UCC_OPTIONS))
    if fight is Fight.FLAG:
        return VICTORY_FLAG
    rules.apply_fight(board, source, target, fight, capture_flag=False)
    revealed.discard(source)
    if fight is Fight.ATTACKER_WINS:
        revealed.add(target)
        return f"KILLS {a.token} {d.token}"
    if fight is Fight.DEFENDER_WINS:
        revealed.add(target)
        return f"DIES {a.token} {d.token}"
    revealed.discard(target)
    return f"BOTHDIE {a.token} {d.token}"


def attrition(board: Board, side: int) -> tuple[Outcome, str] | None:
    """The attrition check of ``side``'s half-move (§6.2 steps 2 and 6): the outcome and reason
    naming ``side`` when the other side has no mobile piece left, else None."""
    if board.mobile_count(1 - side) == 0:
        if board.mobile_count(side) == 0:
            return Outcome.DRAW, NO_MOBILE
        return Outcome.VICTORY, ATTRITION
    return None


# --- seats ----------------------------------------------------------------------------------


class Timeout:
    """A reply that did not arrive in time (the whole line counts)."""

    def __repr__(self) -> str:
        return "TIMEOUT"


TIMEOUT = Timeout()


class Ready:
    """An awaitable whose value is already known: what a seat that answers at once (a replayed
    log, a person who has quit) returns. It never suspends, so any driver (``ensureDeferred``,
    ``gamed.stratego.pipes``) accepts it."""

    __slots__ = ("value",)

    def __init__(self, value=None):
        self.value = value

    def __await__(self):
        return self.value
        yield  # a generator that returns at once

    def __repr__(self) -> str:
        return f"Ready({self.value!r})"


# --- the match -------------------------------------------------------------------------------


class MatchOptions(
    collections.namedtuple(
        "MatchOptions",
        "max_turns timeout allow_illegal pause quit_grace stall max_line clock clock_lines",
        defaults=(5000, 2.0, False, True, 1.0, 0.0, 65536, None, False),
    )
):
    """What the command-line switches set for one match (immutable; ``_replace`` changes a copy):

    ``max_turns`` (-m; None: no limit), ``timeout`` (-T, seconds; None: none), ``allow_illegal``
    (-i), ``pause`` (--pause/--no-pause), ``quit_grace`` (--quit-grace, seconds), ``stall`` (-t,
    seconds; math.inf waits for the operator), ``max_line`` (--max-line, bytes), ``clock``
    (--clock: a ``gamed.timecontrol.TimeControl`` with a bank, setup budget or game cap; None: the
    ``timeout`` per reply alone, as the original manager), ``clock_lines`` (--clock-lines: a
    ``CLOCK`` line before each board view)."""

    __slots__ = ()


class MatchResult(
    collections.namedtuple("MatchResult", "name colour outcome turn red_value blue_value reason log")
):
    """The end of a match: the six result fields (``name``, ``colour``, ``outcome``, ``turn``,
    ``red_value``, ``blue_value``), the ``reason`` and the whole ``log`` (a tuple of lines)."""

    __slots__ = ()

    @property
    def line(self) -> str:
        return f"{self.name} {self.colour} {self.outcome.value} {self.turn} {self.red_value} {self.blue_value}"


class _End(Exception):
    """Raised inside the game loop to end the match."""

    def __init__(self, side: int | None, outcome: Outcome, reason: str):
        self.side = side  # None: both (neither BOTH)
        self.outcome = outcome
        self.reason = reason


class StrategoReferee:
    """Runs one match between ``red`` and ``blue``: ``run()`` is a coroutine returning the
    MatchResult. It awaits what the seats return, so it is driven like them: by
    ``defer.ensureDeferred(referee.run())`` on the reactor, or by ``gamed.stratego.pipes``.

    Hooks: ``on_log(line)`` for each log line as it is written (``-o``), ``on_board(referee,
    final)`` before each half-move and at the end (``-p``/``-g``), ``wait_for_operator()`` for
    ``-t inf`` (an awaitable giving True to go on, False to quit), ``on_start(referee)`` once both
    setups are placed and play begins, ``on_move(referee, side, confirmation)`` after each
    half-move that was played (the board already updated; a flag capture too, before the end),
    ``on_end(referee, result)`` once the result is known and both sides have been sent ``QUIT``
    (before their programs are awaited: what ends now ended after its game), ``on_error(exception)``
    for an internal error (called inside the ``except`` block; by default it is logged with
    twisted.logger).

    The ``-t`` stall awaits ``sleep(seconds)``; without it, ``task.deferLater(clock, ...)`` when a
    reactor ``clock`` is given (no stall otherwise).
    """

    def __init__(
        self,
        red,
        blue,
        options: MatchOptions = MatchOptions(),
        clock=None,
        on_log: Callable[[str], None] = lambda line: None,
        on_board: Callable[[StrategoReferee, bool], None] | None = None,
        wait_for_operator: Callable[[], Awaitable[bool]] | None = None,
        on_start: Callable[[StrategoReferee], None] | None = None,
        on_move: Callable[[StrategoReferee, int, str], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        on_end: Callable[[StrategoReferee, MatchResult | None], None] | None = None,
    ):
        self.seats = (red, blue)
        self.options = options
        self.clock = clock
        self._on_error = on_error if on_error is not None else _log_failure
        self._sleep = sleep
        self.board = Board()
        self.turn = 0
        self.to_move = RED
        self.half_moves = 0
        self.log: list[str] = []
        self.revealed: set[int] = set()  # cells whose piece combat has shown
        self.last: tuple[int, int] | None = None  # the last legal move's (source, target) cells
        # The move that took the flag: the UCC manager leaves its board as it was (the log and the
        # programs see that board), but spectators see the capture, the attacker on the flag's square.
        self.captured: tuple[int, int] | None = None
        self._on_start = on_start
        self._on_move = on_move
        self._on_end = on_end
        self._on_log = on_log
        self._on_board = on_board
        self._wait_for_operator = wait_for_operator
        self._acceptables = (self._acceptable(RED), self._acceptable(BLUE))
        self.aborted = False
        # The clocks (--clock): each side's bank, charged by the seconds its replies took.
        control = options.clock
        self.control = control
        self.banks: list[float | None] = [None if control is None else control.bank] * 2
        self.timing: dict[int, dict] = {}  # the last half-move's clock (used, left), for the records
        self._started_at: float | None = None

    def spectator_state(self, over: bool = False) -> dict:
        """The board as spectators may see it (``rules.board_spectator_state``): pieces whose type
        combat showed, everything when ``over``; after a flag capture the attacker stands on the
        flag's square and the flag is gone."""
        if self.captured is None:
            return rules.board_spectator_state(self.board, self.revealed, self.last, over)
        source, target = self.captured
        board = self.board.copy()
        rules.apply_fight(board, source, target, Fight.FLAG)
        return rules.board_spectator_state(board, self.revealed | {target}, self.last, over)

    def write(self, line: str) -> None:
        self.log.append(line)
        self._on_log(line)

    def abort(self) -> None:
        """The match is to end without a result (a signal, a shutdown): no further half-move is
        played; the seats are ended by whoever aborts (``kill``)."""
        self.aborted = True

    async def run(self) -> MatchResult | None:
        """Play the match to its end, deliver QUIT to both sides, and return the result (None
        when the operator quit at the ``-t`` prompt: the players are ended without a result)."""
        try:
            await self._play()
        except _End as e:
            end = e
        except _Quit:
            end = None
        except Exception as e:
            self._on_error(e)
            end = _End(self.to_move, Outcome.INTERNAL_ERROR, INTERNAL)
        result = None if end is None else self._result(end)
        line = None if result is None else result.line
        # Both are told at once (each grace period runs while the other side ends), then awaited.
        quits = []
        for seat in self.seats:
            try:
                quits.append(seat.quit(line))
            except Exception as e:
                self._on_error(e)
        if self._on_end is not None:
            try:
                self._on_end(self, result)
            except Exception as e:
                self._on_error(e)
        for quitting in quits:
            try:
                await quitting
            except Exception as e:
                self._on_error(e)
        return result

    def _result(self, end: _End) -> MatchResult:
        if self.turn == 0:
            self.write(f"Game ends in the SETUP phase - REASON: {end.reason}")
        else:
            self.write(f"Game ends on {COLOURS[end.side]}'s turn - REASON: {end.reason}")
        if end.side is None:
            name, colour = "neither", "BOTH"
        else:
            name, colour = self.seats[end.side].name, COLOURS[end.side]
        values = (self.board.value(RED), self.board.value(BLUE))
        line = f"{name} {colour} {end.outcome.value} {self.turn} {values[0]} {values[1]}"
        self.write(line)
        if self._on_board is not None:
            self._on_board(self, True)
        return MatchResult(name, colour, end.outcome, self.turn, *values, end.reason, tuple(self.log))

    async def _play(self) -> None:
        red, blue = self.seats
        if not (red.valid and blue.valid):
            for seat, colour in ((red, "RED"), (blue, "BLUE")):
                if not seat.valid:
                    self.write(f"Controller for Player {colour} is invalid!")
                    if not seat.human:
                        self.write(f'Check that executable "{seat.argument}" exists and has executable permissions set.')
            side = None if not (red.valid or blue.valid) else (RED if not red.valid else BLUE)
            raise _End(side, Outcome.BAD_SETUP, bad_setup_reason("BOTH players" if side is None else COLOURS[side]))
        ok = []
        control = self.control
        self._started_at = self._now()
        for seat, opponent, side in ((red, blue, RED), (blue, red, BLUE)):
            if control is not None and control.setup is not None:
                _time_left(seat, control.setup)  # the four setup lines, on their own budget
            lines = await seat.setup(COLOURS[side], opponent.argument)
            ok.append(place_setup(self.board, side, list(lines)[:4]))
        if not any(ok):
            self.write("BOTH players give invalid setup!")
        for seat, side in ((red, RED), (blue, BLUE)):
            self.write(f"{seat.name} {COLOURS[side]} SETUP")
            for row in setup_block(self.board, side) if ok[side] else ["INVALID!"]:
                self.write(row)
        if not all(ok):
            side = None if not any(ok) else (RED if not ok[RED] else BLUE)
            raise _End(side, Outcome.BAD_SETUP, bad_setup_reason("BOTH players" if side is None else COLOURS[side]))
        red.start()
        self.turn = 1
        if self._on_start is not None:
            self._on_start(self)
        limit = self.options.max_turns
        while True:
            if limit is not None and self.turn >= limit:
                side = BLUE if self.half_moves else RED
                raise _End(side, Outcome.DRAW_DEFAULT, draw_after(self.turn))
            for side in (RED, BLUE):
                await self._half_move(side)
            self.turn += 1

    def _attrition(self, side: int) -> None:
        ended = attrition(self.board, side)
        if ended is not None:
            raise _End(side, *ended)

    async def _half_move(self, side: int) -> None:
        if self.aborted:
            raise _Quit()
        self.to_move = side
        seat, other = self.seats[side], self.seats[1 - side]
        if self.options.pause:
            other.pause()
            seat.resume()
        self._attrition(side)
        if self._on_board is not None:
            self._on_board(self, False)
        budget = self._budget(side)
        if self.control is not None and not self.control.plain:
            _time_left(seat, budget)
        if self.options.clock_lines and not getattr(seat, "human", False):
            seat.tell(clock_line(budget if budget is not None else self.options.timeout, self.banks))
        asked = self._now()
        reply = await seat.move(self.board.view(side), self._acceptables[side])
        if self.aborted:
            raise _Quit()
        self._charge(side, self._now() - asked, reply is TIMEOUT)
        self.half_moves += 1
        prefix = f"{self.turn} {SHORT[side]}: "
        if reply is TIMEOUT or reply is None:
            self.write(prefix)
            if reply is TIMEOUT and self._capped():
                raise _End(side, Outcome.DRAW_DEFAULT, time_cap_reason(self.control.game))
            if reply is TIMEOUT and self.control is not None and not self.control.plain:
                raise _End(side, Outcome.ILLEGAL, out_of_time_reason(self.control))
            if reply is TIMEOUT:
                raise _End(side, Outcome.ILLEGAL, timeout_reason(self.options.timeout or 0.0))
            raise _End(side, Outcome.ILLEGAL, UNINTELLIGIBLE)
        confirmation = self._judge(side, reply, prefix)
        if self._on_move is not None:
            self._on_move(self, side, confirmation)
        self._attrition(side)
        for s in self.seats:
            s.tell(confirmation)
        if self.options.stall:
            await self._stall()

    # --- the clocks (--clock) ------------------------------------------------------------------

    def _now(self) -> float:
        return self.clock.seconds() if self.clock is not None else time.monotonic()

    def _budget(self, side: int) -> float | None:
        """The most ``side``'s next reply may take under the clock (None: no clock but -T)."""
        control = self.control
        if control is None or control.plain:
            return None
        budget = control.budget(self.banks[side])
        if control.game is not None and self._started_at is not None:
            left = max(0.0, self._started_at + control.game - self._now())
            budget = left if budget is None else min(budget, left)
        return budget

    def _charge(self, side: int, used: float, flagged: bool) -> None:
        control = self.control
        if control is None:
            return
        bank = self.banks[side] = control.after(self.banks[side], used, flagged)
        self.timing = {side: {"used": round(used, 3), "left": None if bank is None else round(bank, 3), "credit": 0.0}}

    def _capped(self) -> bool:
        control = self.control
        return (control is not None and control.game is not None and self._started_at is not None
                and self._now() >= self._started_at + control.game)

    def _judge(self, side: int, reply: str, prefix: str) -> str:
        """Apply ``reply``; returns the confirmation, or raises _End (logging the move line)."""
        parsed = parse_reply(reply)
        if parsed is SURRENDER:
            self.write(prefix + "SURRENDER OK")
            raise _End(side, Outcome.SURRENDER, SURRENDERED)
        if parsed is None:
            self.write(prefix + reply)
            if not self.options.allow_illegal:
                raise _End(side, Outcome.ILLEGAL, UNINTELLIGIBLE)
            return reply
        checked = rules.ucc_check(self.board, side, parsed.x, parsed.y, parsed.direction, parsed.mult)
        if isinstance(checked, str):
            self.write(f"{prefix}{reply} ILLEGAL")
            if not self.options.allow_illegal:
                raise _End(side, Outcome.ILLEGAL, checked)
            return f"{reply} ILLEGAL"
        source, target = checked
        self.last = (source, target)
        outcome = play_checked(self.board, self.revealed, source, target)
        if outcome == VICTORY_FLAG:
            self.captured = (source, target)
            self.write(f"{prefix}{reply} VICTORY_FLAG")
            if self._on_move is not None:
                self._on_move(self, side, f"{reply} VICTORY_FLAG")
            raise _End(side, Outcome.VICTORY, CAPTURED)
        confirmation = f"{reply} {outcome}"
        self.write(prefix + confirmation)
        return confirmation

    def _acceptable(self, side: int) -> Callable[[str], bool]:
        """For a person: may this reply be played (else the seat asks again)?"""
        if self.options.allow_illegal:
            return lambda reply: True

        def acceptable(reply: str) -> bool:
            parsed = parse_reply(reply)
            if parsed is SURRENDER:
                return True
            if parsed is None:
                return False
            return not isinstance(
                rules.ucc_check(self.board, side, parsed.x, parsed.y, parsed.direction, parsed.mult), str
            )

        return acceptable

    async def _stall(self) -> None:
        stall = self.options.stall
        if not stall:
            return
        if (stall < 0 or math.isinf(stall)) and self._wait_for_operator is not None:
            go_on = await self._wait_for_operator()
            if not go_on:
                raise _Quit()
        elif stall > 0 and not math.isinf(stall):
            if self._sleep is not None:
                await self._sleep(stall)
            elif self.clock is not None:
                from twisted.internet import task

                await task.deferLater(self.clock, stall, lambda: None)


def _log_failure(error: BaseException) -> None:
    """The default ``on_error``: the traceback goes to twisted.logger (the daemon's log)."""
    from twisted.logger import Logger

    Logger(namespace="gamed.stratego.referee").failure("internal error in the referee")


class _Quit(Exception):
    """The match ends without a result: the operator typed QUIT at the -t prompt, or abort()."""


# --- replays (§9) ---------------------------------------------------------------------------

_PATTERNS: dict = {}


def _pattern(name: str):
    """The replay's regular expressions, compiled on first use (``re`` is not needed to play)."""
    pattern = _PATTERNS.get(name)
    if pattern is None:
        import re

        pattern = _PATTERNS[name] = re.compile(
            {
                "move": r"\d+ (RED|BLU): ",
                "suffix": r" (?:OK|ILLEGAL|VICTORY_FLAG|VICTORY_ATTRITION|(?:KILLS|DIES|BOTHDIE) [FBs1-9] [FBs1-9])\Z",
                "invalid": r"Controller for Player (RED|BLUE) is invalid!\Z",
                "check": r'Check that executable "(.*)" exists',
            }[name]
        )
    return pattern


def reply_from_log(text: str) -> str:
    """Recover the reply R from a move line's text T (§9 step 4)."""
    m = _pattern("suffix").search(text)
    if m is not None:
        rest = text[: m.start()]
        parsed = parse_reply(rest)
        if isinstance(parsed, Move) or (parsed is SURRENDER and m.group(0) == " OK"):
            return rest
    return text


class ParsedLog(collections.namedtuple("ParsedLog", "names invalid setups replies")):
    """What a replay needs from a ``-o`` log: ``names`` (RED's, BLUE's), ``invalid`` (for each
    side: its program could not be started), ``setups`` (each side's 4 rows, or None for
    ``INVALID!``) and ``replies`` (one per half-move, in order)."""

    __slots__ = ()


def parse_log(lines: Iterable[str]) -> ParsedLog:
    """Read a log written with ``-o`` (lines already split on ``\\n``)."""
    lines = list(lines)
    names = ["", ""]
    invalid = [False, False]
    setups: list[tuple[str, ...] | None] = [None, None]
    i = 0
    invalid_side = None
    while i < len(lines) and not lines[i].endswith(" RED SETUP"):
        line = lines[i]
        m = _pattern("invalid").match(line)
        if m:
            invalid_side = 0 if m.group(1) == "RED" else 1
            invalid[invalid_side] = True
            names[invalid_side] = "human"
        m = _pattern("check").match(line)
        if m and invalid_side is not None:
            names[invalid_side] = m.group(1).split(" ")[0]
        i += 1
    if any(invalid):
        return ParsedLog(tuple(names), tuple(invalid), (None, None), ())
    for side, colour in ((0, "RED"), (1, "BLUE")):
        if i < len(lines) and lines[i].endswith(f" {colour} SETUP"):
            names[side] = lines[i].split(" ", 1)[0]
            i += 1
            if i < len(lines) and lines[i] == "INVALID!":
                i += 1
            else:
                setups[side] = tuple(lines[i : i + 4])
                i += 4
    replies = []
    move_line = _pattern("move")
    for line in lines[i:]:
        m = move_line.match(line)
        if m:
            replies.append(reply_from_log(line[m.end() :]))
        elif line.startswith("Game ends "):
            break
    return ParsedLog(tuple(names), tuple(invalid), tuple(setups), tuple(replies))


class ReplayQueue:
    """The move lines of a log, consumed in order by both sides (one per half-move)."""

    def __init__(self, replies):
        self.replies = collections.deque(replies)

    def next(self) -> str:
        """The next recorded reply; an empty reply once the log has none left (§9 step 5)."""
        return self.replies.popleft() if self.replies else ""


class ReplaySeat:
    """One side of a replayed log (``-f``): its recorded setup and its share of the recorded
    replies. Everything it returns is ``Ready``: a replay runs on any driver, without I/O."""

    human = False

    def __init__(self, log: ParsedLog, side: int, queue: ReplayQueue):
        self.name = log.names[side]
        self.argument = self.name
        self.valid = not log.invalid[side]
        self._setup = log.setups[side]
        self._queue = queue

    def setup(self, colour: str, opponent: str) -> Ready:
        # A rejected setup (INVALID!) is not in the log: replay it as one that is invalid at once.
        return Ready(list(self._setup) if self._setup is not None else ["INVALID!"])

    def start(self) -> None:
        pass

    def move(self, view: list[str], acceptable: Callable[[str], bool]) -> Ready:
        return Ready(self._queue.next())

    def tell(self, line: str) -> None:
        pass

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def quit(self, result_line: str | None) -> Ready:
        return Ready(None)

    def kill(self) -> Ready:
        return Ready(None)


def replay_seats(log: ParsedLog) -> tuple[ReplaySeat, ReplaySeat]:
    """RED and BLUE seats replaying ``log``."""
    queue = ReplayQueue(log.replies)
    return ReplaySeat(log, 0, queue), ReplaySeat(log, 1, queue)


# --- the records' replayer (gamed.replay) ---------------------------------------------------

_OUTCOMES = {"KILLS": Fight.ATTACKER_WINS, "DIES": Fight.DEFENDER_WINS, "BOTHDIE": Fight.BOTH_DIE}


def next_state(state: dict, seat: int | None, move: str) -> dict:
    """The Stratego referee's replayer (``IGame.next_state``): the spectator state after a
    confirmation (``3 6 UP 1 KILLS 5 7``, ``... OK``, ``... ILLEGAL`` or a reply passed as it came
    with -i) from the state before. The move that ends the game shows every piece, which the
    records keep beside this prediction (gamed.replay)."""
    words = move.split(" ")
    if words[-1] == "OK":
        reply, fight, shown = " ".join(words[:-1]), None, (None, None)
    elif len(words) > 3 and words[-3] in _OUTCOMES:
        reply, fight = " ".join(words[:-3]), _OUTCOMES[words[-3]]
        shown = tuple(rules.UNIT_NAMES[rules.UNIT_OF_TOKEN[token]] for token in words[-2:])
    elif words[-1] == "VICTORY_FLAG":
        reply, fight, shown = " ".join(words[:-1]), Fight.FLAG, (None, None)
    else:  # refused (ILLEGAL) or unintelligible, and played on with -i: nothing moved
        return state
    parsed = parse_reply(reply)
    if not isinstance(parsed, Move):
        raise ValueError(f"not a move: {reply!r}")
    dx, dy = rules.DIRECTIONS[parsed.direction]
    target = (parsed.x + dx * parsed.mult, parsed.y + dy * parsed.mult)
    return rules.next_board_state(state, (parsed.x, parsed.y), target, fight, shown)
