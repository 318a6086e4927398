"""The Virtual Fight text protocols as pure functions: AI commands and replies, GUI event lines.

AI lines follow spec §1 (``n&Command[&Direction]``, replies ``255``/``100``/``111``/``112``/``120``);
observer lines follow spec §9. Everything is ``&``-separated ASCII; the protocol adapters add the
``\\r\\n``. Documented with example sessions in ``docs/protocols/virtual-fight.md``.
"""

from __future__ import annotations

from collections.abc import Iterable

from gamed.names import valid_name
from gamed.fight.rules import DIRECTIONS, Battle, Command, FightMap, Resolution, Result, Shot, Verb, Warrior
from gamed.textwire import REFUSAL_CODES, seconds
from gamed.timecontrol import TimeControl, seconds_field


# Server-initiated AI lines (spec §1.15, §7).
OK = "OK"
READY = "READY"
REPORT = "200"

_VERBS = {v.value: v for v in Verb} | {"SHOT": Verb.SHOOT}  # SHOT: the 0.1 spelling
_NEEDS_DIRECTION = {Verb.MOVE}
_NO_DIRECTION = {Verb.POS, Verb.DIR, Verb.SAW}


_PARSED: dict[str, Command | None] = {}
_PARSED_MAX = 4096


def parse_command(text: str) -> Command | None:
    """Parse ``n&Command[&Direction]`` (case-insensitive); None for anything malformed (``100``)."""
    # AIs send the same few hundred lines over and over: remember them (a bounded cache).
    try:
        return _PARSED[text]
    except KeyError:
        pass
    command = _parse_command(text)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[text] = command
    return command


def _parse_command(text: str) -> Command | None:
    fields = text.split("&")
    if len(fields) > 3:
        return None
    number = fields[0].strip()
    if len(number) != 1 or number not in "01234":
        return None
    if len(fields) < 2:
        return None
    verb = _VERBS.get(fields[1].strip().upper())
    if verb is None:
        return None
    direction = None
    if len(fields) == 3:
        direction = DIRECTIONS.get(fields[2].strip().upper())
        if direction is None or verb in _NO_DIRECTION:
            return None
    elif verb in _NEEDS_DIRECTION:
        return None
    return Command(int(number), verb, direction)


def parse_extension(text: str) -> tuple[str, str] | None:
    """Parse a before-the-game extension, ``NAME&<name>`` or ``TABLE&<name>``; None otherwise."""
    fields = text.split("&")
    if len(fields) != 2:
        return None
    keyword, value = fields[0].strip().upper(), fields[1].strip()
    if keyword not in ("NAME", "TABLE") or not valid_name(value):
        return None
    return keyword, value


# --- clocks (a gamed addition, opt-in: an AI that never sends CLOCKS sees none of this) -----


def parse_clocks(text: str) -> bool | None:
    """``CLOCKS&ON`` (True) or ``CLOCKS&OFF`` (False), any case; None for every other line
    (a ``CLOCKS`` line with another value too: it is an invalid line, ``100``)."""
    fields = text.split("&")
    if len(fields) != 2 or fields[0].strip().upper() != "CLOCKS":
        return None
    value = fields[1].strip().upper()
    return True if value == "ON" else False if value == "OFF" else None


def time_control(control: TimeControl, team: int) -> str:
    """``TIMECONTROL&<notation>&<your team>``: sent once, before the first READY an AI with clocks
    on gets (docs/clocks.md)."""
    return f"TIMECONTROL&{control.notation()}&{team}"


def clock(budget: float | None, banks: Iterable[float | None]) -> str:
    """``CLOCK&<seconds for this turn>&<team 0's bank>&<team 1's bank>...`` before READY (to the
    millisecond, ``-`` for none)."""
    return "&".join(["CLOCK", seconds_field(budget), *(seconds_field(bank) for bank in banks)])


# --- accounts and seats (gamed additions; an AI that never sends them sees none of this) ----

LOGIN_COMMANDS = ("LOGIN", "RESUME", "TOKEN")


def parse_login(text: str) -> tuple[str, list[str]] | None:
    """``LOGIN&<name>&<token>``, ``RESUME&<token>`` or ``TOKEN`` (any case) as the upper-case
    keyword and its fields; None for every other line (a command, NAME, TABLE...)."""
    fields = [field.strip() for field in text.split("&")]
    keyword = fields[0].upper()
    if keyword not in LOGIN_COMMANDS:
        return None
    return keyword, fields[1:]


def refused(error) -> str:
    """``<code>&<text>`` of a refused login, name or resume (a ``gamed.identity.LoginError``): the
    AI port's replies are numbers, and these are the numbers every text protocol uses (420-432)."""
    return f"{REFUSAL_CODES[error.refusal]}&{error.text}"


def reserved_table(table: str) -> str:
    """``100&table <t> is reserved for a hosted game``: a ``TABLE`` that only the daemon's hosted
    bots may take (gamed.hosting)."""
    return f"100&table {table} is reserved for a hosted game"


def token(value: str) -> str:
    """The reply to ``TOKEN``: the resume token of the AI's seat."""
    return f"TOKEN&{value}"


def away(team: int, name: str, left: float | None) -> str:
    """Team ``team``'s AI dropped; its seat is kept ``left`` more seconds (whole, rounded up)."""
    return f"AWAY&{team}&{name}&{seconds(left)}"


def back(team: int, name: str) -> str:
    """Team ``team``'s AI is back."""
    return f"BACK&{team}&{name}"


def state(battle: Battle, team: int, name: str, turn: int, left: float | None, timeouts: int) -> list[str]:
    """What an AI that took its seat back is told: ``STATE&<turn>&<team>&<name>&<seconds left in
    the turn>&<timeouts in a row>``, one ``W&<n>&<row>&<col>&<DIR>&<ALIVE|DEAD>&<ACTED|FREE>`` per
    warrior of its own team (ACTED: it has acted this turn), then ``ENDSTATE``. Only its own team's
    warriors: an AI learns no more of the enemy by coming back."""
    lines = [f"STATE&{turn}&{team}&{name}&{seconds(left)}&{timeouts}"]
    for w in battle.warriors[team]:
        acted = "ACTED" if battle.has_acted(team, w.number) else "FREE"
        lines.append(f"W&{w.number}&{w.row}&{w.col}&{w.facing.name}&{'ALIVE' if w.alive else 'DEAD'}&{acted}")
    lines.append("ENDSTATE")
    return lines


# HELP (a gamed addition for people testing by hand; an original AI never sends it): the commands,
# one ``HELP&`` line each, then ``HELP&END``.
AI_HELP = (
    "HELP&n&POS          the position of warrior n (0-4): row,col",
    "HELP&n&DIR          its facing: UP, DOWN, LEFT or RIGHT",
    "HELP&n&SAW          what it sees: row,col,T joined by & (E enemy, O teammate, # wall, x body)",
    "HELP&n&MOVE&D       move one square toward D (UP, DOWN, LEFT, RIGHT) and face D",
    "HELP&n&SHOOT[&D]    turn toward D, shoot three squares when the turn ends",
    "HELP&n&NONE[&D]     turn toward D without moving; a bare NONE passes",
    "HELP&NAME&<name>    before the game: your team's name",
    "HELP&TABLE&<table>  before the game: play at a named table",
    "HELP&CLOCKS&ON      a CLOCK line before each READY: this turn's seconds, each team's bank",
    "HELP&SELFTEST       before the game: a scripted match that checks your AI, then a verdict",
    "HELP&one action (MOVE, SHOOT, NONE&D) per warrior per turn; the turn ends when all AIs are done",
    "HELP&replies: 255 done, 100 invalid, 111 square not empty, 112 off the map, 120 already acted",
    "HELP&END",
)


def is_help(text: str) -> bool:
    """True for the ``HELP`` command (any case)."""
    return text.strip().upper() == "HELP"


def is_selftest(text: str) -> bool:
    """True for the ``SELFTEST`` command (any case): before the game, a scripted match that checks
    the AI (gamed.fight.selftest)."""
    return text.strip().upper() == "SELFTEST"


def selftest_ok(step: str) -> str:
    """A step of the self-test the AI passed."""
    return f"SELFTEST&OK&{step}"


def selftest_fail(step: str, expected: str, received: str) -> list[str]:
    """A step the AI failed: the step, the line expected and the line received (each the rest of
    its line, ``&`` and all)."""
    return [f"SELFTEST&FAIL&{step}", f"SELFTEST&EXPECTED&{expected}", f"SELFTEST&RECEIVED&{received}"]


def selftest_verdict(passed: bool) -> str:
    """The self-test's last line."""
    return f"SELFTEST&VERDICT&{'PASS' if passed else 'FAIL'}"


def report(resolution: Resolution, team: int) -> list[str]:
    """The ``200`` block for ``team`` (without the READY or game-over line that follows it)."""
    lines = [REPORT]
    for number, hit in resolution.report(team):
        lines.append(f"{number}&KILLED" if hit is None else f"{number}&HIT&{hit.value}")
    return lines


def game_over(result: Result) -> str:
    return f"GAMEOVER&{result.value}"


# --- observers (spec §9) ------------------------------------------------------------------

HELLO = "HELLO&VF-OBSERVER&1"

GUI_HELP = (
    "HELP&LIST        the running games: GAME&<id>&<team names>&<turn> lines, then END",
    "HELP&WATCH&<id>  follow game <id>",
    "HELP&QUIT        close the connection",
    "HELP&END",
)

# The reply to a wrong first line when the GUI port requires a token (then the server closes).
DENIED_NO_AUTH = "DENIED&this server requires AUTH&<token> as the first line"
DENIED_TOKEN = "DENIED&wrong token"


def parse_gui(text: str) -> tuple[str, str | None]:
    """An observer command as (upper-case keyword, argument or None)."""
    keyword, _, argument = text.partition("&")
    return keyword.strip().upper(), (argument.strip() if _ else None)


def map_lines(fmap: FightMap, names: Iterable[str]) -> list[str]:
    """``MAP``, one ``ROW`` per row and one ``TEAM`` per team."""
    lines = [f"MAP&{fmap.rows}&{fmap.cols}"]
    lines += [f"ROW&{r}&{cells}" for r, cells in enumerate(fmap.cell_rows())]
    lines += [f"TEAM&{t}&{name}" for t, name in enumerate(names)]
    return lines


def snapshot(battle: Battle, turn: int) -> list[str]:
    lines = [f"SNAPSHOT&{turn}"]
    for team in battle.warriors:
        for w in team:
            lines.append(f"W&{w.team}&{w.number}&{w.row}&{w.col}&{w.facing.name}&{'ALIVE' if w.alive else 'DEAD'}")
    lines.append("ENDSNAPSHOT")
    return lines


def turn(number: int) -> str:
    return f"TURN&{number}"


def action(warrior: Warrior, verb: Verb) -> str | None:
    """The event line for an action just applied (None for a pass, which shows nothing)."""
    t, n = warrior.team, warrior.number
    if verb is Verb.MOVE:
        return f"MOVE&{t}&{n}&{warrior.row}&{warrior.col}&{warrior.facing.name}"
    if verb is Verb.SHOOT:
        return f"AIM&{t}&{n}&{warrior.facing.name}"
    if verb is Verb.NONE:
        return f"FACE&{t}&{n}&{warrior.facing.name}"
    return None


def end_turn(team: int, how: str) -> str:
    """``how``: DONE, TIMEOUT or GONE."""
    return f"ENDTURN&{team}&{how}"


def shot(s: Shot) -> str:
    return f"SHOT&{s.team}&{s.number}&{s.direction.name}&{s.end[0]}&{s.end[1]}&{s.hit.value}"


def shots_and_deaths(resolution: Resolution) -> list[str]:
    lines = [shot(s) for s in resolution.shots]
    lines += [f"KILLED&{w.team}&{w.number}&{w.row}&{w.col}" for w in resolution.killed]
    return lines


def gui_game_over(winner: int | None, number: int) -> str:
    return f"GAMEOVER&WIN&{winner}&{number}" if winner is not None else f"GAMEOVER&DRAW&{number}"


def listing(game_id: int, names: Iterable[str], number: int) -> str:
    return f"GAME&{game_id}&{','.join(names)}&{number}"

