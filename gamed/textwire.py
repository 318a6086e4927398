"""What the text command protocols (Kalaha, Connect Four) write alike, as pure functions: ``ERROR
<code> <text>`` lines, the refusal of a connection, the ``HELP`` list, whole seconds, the clock
lines (``TIMECONTROL``, ``CLOCK``), and the ``ParseError`` a command's parser raises. Each game's
``wire`` module has its own codes and words."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from gamed.identity import Refusal
from gamed.timecontrol import TimeControl, TimeControlError, parse, seconds_field

# ``ERROR <code>`` of a refused login, name or resume, the same in every text protocol
# (docs/protocols/accounts.md).
REFUSAL_CODES = {
    Refusal.UNKNOWN_OR_WRONG: 420,
    Refusal.REVOKED: 421,
    Refusal.TOO_MANY: 422,
    Refusal.GUESTS_OFF: 423,
    Refusal.NAME_REGISTERED: 424,
    Refusal.TOO_LATE: 425,
    Refusal.ALREADY: 426,
    Refusal.UNKNOWN_RESUME: 427,
    Refusal.FINISHED: 428,
    Refusal.NOT_AWAY: 429,
    Refusal.NO_SEAT: 430,
    Refusal.NO_ACCOUNTS: 431,
    Refusal.NAME_IN_USE: 432,
    Refusal.HOSTED: 433,
    Refusal.BANNED: 436,  # (434 and 435 are the ladder's, below)
}

# ``ERROR <code>`` of a refused ``LADDER`` (gamed.ladder.commands, docs/ladder.md), the same in
# every text protocol: a guest asked, or the game has no ladder on this server.
LADDER_GUESTS = 434
LADDER_OFF = 435
# ``HELP ACCOUNTS``'s line for it.
LADDER_COMMAND = ("LADDER", "[<n>|OFF]", "wait for ladder opponents near your rating (an account; <n> games at once)")


class ParseError(ValueError):
    """A command's arguments are wrong; ``code`` is the error code to send."""

    def __init__(self, code: int, text: str):
        super().__init__(text)
        self.code = code


def split_command(text: str, bare_move: re.Pattern) -> tuple[str, list[str]]:
    """A client line as an upper-case command and its arguments; a line that is one word matching
    ``bare_move`` (a pit, a column) is the MOVE command with that word."""
    words = text.split()
    if len(words) == 1 and bare_move.match(words[0]):
        return "MOVE", words
    return words[0].upper(), words[1:]


def clock(budget: float | None, lefts: Iterable[tuple[object, float | None]]) -> str:
    """``CLOCK <this move> <seat>=<left> ...``: the seconds the prompted player has for this move
    (to the millisecond), then each seat's bank (``-`` without a bank) (docs/clocks.md)."""
    return " ".join(["CLOCK", seconds_field(budget)] + [f"{seat}={seconds_field(left)}" for seat, left in lefts])


def time_control(control: TimeControl) -> str:
    """``TIMECONTROL <notation>``: the game's time control (docs/clocks.md)."""
    return f"TIMECONTROL {control.notation()}"


# ``HELP CLOCKS``: the clock commands, the same in every text protocol.
CLOCK_COMMANDS = (
    ("CLOCKS", "ON|OFF", "CLOCK lines before every YOURMOVE (on by default when the game's time control has a bank)"),
)

# ``HELP SELFTEST``: the self-test of a bot (docs/protocols/generic.md, "The self-test").
SELFTEST_COMMANDS = (
    ("SELFTEST", "[<game>]", "a scripted match against the server that checks each answer of yours, then a verdict"),
)


def parse_clock(text: str, code: int) -> TimeControl:
    """A time control a player asks for (``TABLE ... CLOCK 5m+2s``); ``ParseError(code)`` when it
    is malformed or out of bounds."""
    try:
        return parse(text)
    except TimeControlError as e:
        raise ParseError(code, f"bad time control: {e}") from None


def take_clock(args: list[str], code: int, usage: str) -> tuple[list[str], TimeControl | None]:
    """Split ``CLOCK <time control>`` off a command's arguments (``TABLE blitz CLOCK 3m+2s``):
    the other arguments and the control (None when not asked for)."""
    upper = [a.upper() for a in args]
    if "CLOCK" not in upper:
        return args, None
    i = upper.index("CLOCK")
    if i + 1 >= len(args) or "CLOCK" in upper[i + 1:]:
        raise ParseError(code, usage)
    return args[:i] + args[i + 2:], parse_clock(args[i + 1], code)


def refused(error) -> str:
    """``ERROR <code> <text>`` of a ``gamed.players.LoginError``."""
    return f"ERROR {REFUSAL_CODES[error.refusal]} {error.text}"


def away(seat: object, name: str, seconds_left: float | None) -> str:
    """``AWAY <seat> <name> <seconds>``: that player dropped; its seat is kept this long."""
    return f"AWAY {seat} {name} {seconds(seconds_left)}"


def back(seat: object, name: str) -> str:
    """``BACK <seat> <name>``: the player who was away is back at its seat."""
    return f"BACK {seat} {name}"


def error(code: int, text: str) -> str:
    """``ERROR <code> <text>``."""
    return f"ERROR {int(code)} {text}"


def refusal(code: int, why: str) -> bytes:
    """What a connection the server refuses (too many connections) receives before it is closed."""
    return (error(code, why) + "\r\n").encode("ascii")


def help_lines(commands, width: int) -> list[str]:
    """``HELP <command> <arguments> <text>`` per ``(command, arguments, text)``, the arguments
    padded to ``width``, then ``HELP END``."""
    return [f"HELP {cmd:<8} {args:<{width}} {text}".rstrip() for cmd, args, text in commands] + ["HELP END"]


def seconds(value: float | None) -> str:
    """A time limit as whole seconds rounded up (``-`` for none)."""
    if value is None:
        return "-"
    return str(math.ceil(round(value, 3)))  # round first: 119.99 - 59.99 is 60.000000000000014
