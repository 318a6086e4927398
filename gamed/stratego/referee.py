"""The UCC 2012 Stratego referee: one match between two seats, as the released ``stratego`` manager.

The pure parts come first: reply parsing with C++ stream semantics (ucc-stratego §5.4), setup
validation (§5.2), the log (§8), the result line (§7) and replay parsing (§9). ``StrategoReferee``
then runs a match over two ``ISeat`` objects (an AI program, a person, a replayed log, a network
connection): it asks for setups and moves, judges them with ``gamed.stratego.rules``, and fires
with a ``MatchResult``. It knows nothing about processes or terminals; the seats do.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Iterable

import attrs
from twisted.internet import defer, task
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import Attribute, Interface

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


def bad_setup_reason(who: str) -> str:
    return f"An illegal setup was made by {who}"


# --- replies (§5.4) -------------------------------------------------------------------------


@attrs.frozen
class Move:
    """An intelligible move reply (it may still be illegal)."""

    x: int
    y: int
    direction: str
    mult: int


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


def parse_reply(text: str) -> Move | _Surrender | None:
    """A reply as the released manager read it: SURRENDER, a Move, or None (unintelligible)."""
    if text == "SURRENDER":
        return SURRENDER
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


# --- seats ----------------------------------------------------------------------------------


class Timeout:
    """A reply that did not arrive in time (the whole line counts)."""

    def __repr__(self) -> str:
        return "TIMEOUT"


TIMEOUT = Timeout()


class ISeat(Interface):
    """One side of a match: an AI program, a person, a replayed log or a connection."""

    name = Attribute("The NAME in the result line and the log (§2.5).")
    argument = Attribute("The player argument as given: the OPPONENT shown to the other side.")
    valid = Attribute("False when the player cannot be started: BAD_SETUP before anything is asked.")
    human = Attribute("True for a person (the log then gives no executable hint).")

    def setup(colour: str, opponent: str) -> Deferred:
        """Ask for the setup; fires with the (up to 4) lines that arrived in time, in order."""

    def start() -> None:
        """RED only: the game begins (``START``)."""

    def move(view: list[str], acceptable: Callable[[str], bool]) -> Deferred:
        """Show the board view and ask for a reply; fires with the reply text, None at EOF, or
        TIMEOUT. A person may be asked again until ``acceptable(reply)`` holds."""

    def tell(line: str) -> None:
        """A confirmation line (best effort)."""

    def pause() -> None:
        """The other side is thinking (SIGSTOP the program's process group)."""

    def resume() -> None:
        """This side's turn (SIGCONT)."""

    def quit(result_line: str | None) -> Deferred:
        """``QUIT <result line>`` (nothing when None: the operator quit), then end the player;
        fires once it is gone."""

    def kill() -> Deferred:
        """End the player now (shutdown, Ctrl-C): no grace period; fires once it is gone."""


# --- the match -------------------------------------------------------------------------------


@attrs.frozen
class MatchOptions:
    """What the command-line switches set for one match."""

    max_turns: int | None = 5000  # None: no limit (-m inf or negative)
    timeout: float | None = 2.0  # None: no timeout (-T 0, negative or inf)
    allow_illegal: bool = False  # -i
    pause: bool = True  # --pause / --no-pause
    quit_grace: float = 1.0  # --quit-grace
    stall: float = 0.0  # -t: seconds; math.inf waits for the operator
    max_line: int = 65536  # --max-line


@attrs.frozen
class MatchResult:
    """The end of a match: the six result fields, the reason and the whole log."""

    name: str
    colour: str
    outcome: Outcome
    turn: int
    red_value: int
    blue_value: int
    reason: str
    log: tuple[str, ...]

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
    """Runs one match between ``red`` and ``blue``; ``run()`` fires with the MatchResult.

    Hooks: ``on_log(line)`` for each log line as it is written (``-o``), ``on_board(referee,
    final)`` before each half-move and at the end (``-p``/``-g``), ``wait_for_operator()`` for
    ``-t inf`` (a Deferred firing True to go on, False to quit), ``on_start(referee)`` once both
    setups are placed and play begins, ``on_move(referee, side, confirmation)`` after each
    half-move that was played (the board already updated; a flag capture too, before the end).
    """

    _log = Logger()

    def __init__(
        self,
        red,
        blue,
        options: MatchOptions = MatchOptions(),
        clock: IReactorTime | None = None,
        on_log: Callable[[str], None] = lambda line: None,
        on_board: Callable[[StrategoReferee, bool], None] | None = None,
        wait_for_operator: Callable[[], Deferred] | None = None,
        on_start: Callable[[StrategoReferee], None] | None = None,
        on_move: Callable[[StrategoReferee, int, str], None] | None = None,
    ):
        self.seats = (red, blue)
        self.options = options
        self.clock = clock
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
        self._on_log = on_log
        self._on_board = on_board
        self._wait_for_operator = wait_for_operator
        self.aborted = False

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
        except Exception:
            self._log.failure("internal error in the referee")
            end = _End(self.to_move, Outcome.INTERNAL_ERROR, INTERNAL)
        result = None if end is None else self._result(end)
        red, blue = self.seats
        line = None if result is None else result.line
        quits = [defer.maybeDeferred(red.quit, line), defer.maybeDeferred(blue.quit, line)]
        await defer.gatherResults(quits, consumeErrors=True)
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
        for seat, opponent, side in ((red, blue, RED), (blue, red, BLUE)):
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
        other = 1 - side
        if self.board.mobile_count(other) == 0:
            if self.board.mobile_count(side) == 0:
                raise _End(side, Outcome.DRAW, NO_MOBILE)
            raise _End(side, Outcome.VICTORY, ATTRITION)

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
        reply = await seat.move(self.board.view(side), self._acceptable(side))
        if self.aborted:
            raise _Quit()
        self.half_moves += 1
        prefix = f"{self.turn} {SHORT[side]}: "
        if reply is TIMEOUT or reply is None:
            self.write(prefix)
            if reply is TIMEOUT:
                raise _End(side, Outcome.ILLEGAL, timeout_reason(self.options.timeout or 0.0))
            raise _End(side, Outcome.ILLEGAL, UNINTELLIGIBLE)
        confirmation = self._judge(side, reply, prefix)
        if self._on_move is not None:
            self._on_move(self, side, confirmation)
        self._attrition(side)
        for s in self.seats:
            s.tell(confirmation)
        await self._stall()

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
        cells = self.board.cells
        defender = cells[target]
        if defender == rules.EMPTY:
            cells[target], cells[source] = cells[source], rules.EMPTY
            if source in self.revealed:
                self.revealed.discard(source)
                self.revealed.add(target)
            outcome = "OK"
        else:
            a, d = rules.unit_of(cells[source]), rules.unit_of(defender)
            fight = rules.fight_of(rules.attack(a, d, rules.UCC_OPTIONS))
            if fight is Fight.FLAG:
                self.captured = (source, target)
                self.write(f"{prefix}{reply} VICTORY_FLAG")
                if self._on_move is not None:
                    self._on_move(self, side, f"{reply} VICTORY_FLAG")
                raise _End(side, Outcome.VICTORY, CAPTURED)
            rules.apply_fight(self.board, source, target, fight, capture_flag=False)
            self.revealed.discard(source)
            if fight is Fight.ATTACKER_WINS:
                self.revealed.add(target)
                outcome = f"KILLS {a.token} {d.token}"
            elif fight is Fight.DEFENDER_WINS:
                self.revealed.add(target)
                outcome = f"DIES {a.token} {d.token}"
            else:
                self.revealed.discard(target)
                outcome = f"BOTHDIE {a.token} {d.token}"
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
        elif stall > 0 and not math.isinf(stall) and self.clock is not None:
            await task.deferLater(self.clock, stall, lambda: None)


class _Quit(Exception):
    """The match ends without a result: the operator typed QUIT at the -t prompt, or abort()."""


# --- replays (§9) ---------------------------------------------------------------------------

_MOVE_LINE = re.compile(r"\d+ (RED|BLU): ")
_SUFFIX = re.compile(r" (?:OK|ILLEGAL|VICTORY_FLAG|VICTORY_ATTRITION|(?:KILLS|DIES|BOTHDIE) [FBs1-9] [FBs1-9])\Z")


def reply_from_log(text: str) -> str:
    """Recover the reply R from a move line's text T (§9 step 4)."""
    m = _SUFFIX.search(text)
    if m is not None:
        rest = text[: m.start()]
        parsed = parse_reply(rest)
        if isinstance(parsed, Move) or (parsed is SURRENDER and m.group(0) == " OK"):
            return rest
    return text


@attrs.frozen
class ParsedLog:
    """What a replay needs from a ``-o`` log."""

    names: tuple[str, str]
    invalid: tuple[bool, bool]  # sides whose program could not be started
    setups: tuple[tuple[str, ...] | None, tuple[str, ...] | None]  # None: INVALID!
    replies: tuple[str, ...]  # one per half-move, in order


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
        m = re.fullmatch(r"Controller for Player (RED|BLUE) is invalid!", line)
        if m:
            invalid_side = 0 if m.group(1) == "RED" else 1
            invalid[invalid_side] = True
            names[invalid_side] = "human"
        m = re.match(r'Check that executable "(.*)" exists', line)
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
    for line in lines[i:]:
        m = _MOVE_LINE.match(line)
        if m:
            replies.append(reply_from_log(line[m.end() :]))
        elif line.startswith("Game ends "):
            break
    return ParsedLog(tuple(names), tuple(invalid), tuple(setups), tuple(replies))
