"""What the text command protocols (Kalaha, Connect Four) write alike, as pure functions: ``ERROR
<code> <text>`` lines, the refusal of a connection, the ``HELP`` list, whole seconds, and the
``ParseError`` a command's parser raises. Each game's ``wire`` module has its own codes and words."""

from __future__ import annotations

import math
import re

from gamed.identity import Refusal

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
}


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
