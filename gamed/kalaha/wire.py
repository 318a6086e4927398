"""The Kalaha text protocol as pure functions: command parsing, error codes and server lines.

Every server line starts with an upper-case keyword; the grammar is documented, with an example
session that the tests replay, in ``docs/protocols/kalaha.md``.
"""

from __future__ import annotations

import enum
import re

from gamed import __version__, textwire
from gamed.timecontrol import TimeControl, format_duration
from gamed.kalaha.rules import A, B, Illegal, Move, Outcome, Position, Reason, other, pit_index, pit_name

# Shared with the other text command protocols (gamed.textwire).
error = textwire.error
seconds = textwire.seconds
away = textwire.away  # AWAY <seat> <name> <seconds> and BACK <seat> <name>: the same in every text game
back = textwire.back
clock = textwire.clock  # CLOCK and TIMECONTROL (docs/clocks.md): the same in every text game
time_control = textwire.time_control

PROTOCOL = "KALAHA/1"


class Code(enum.IntEnum):
    """Stable error codes sent as ``ERROR <code> <text>``."""

    UNKNOWN_COMMAND = 400
    BAD_ARGUMENTS = 401
    LINE_TOO_LONG = 402
    NOT_TEXT = 403
    NOT_NOW = 404
    UNAVAILABLE = 405
    NOT_YOUR_TURN = 410
    NOT_A_PIT = 411
    STORE = 412
    OPPONENT_PIT = 413
    EMPTY_PIT = 414
    INTERNAL = 500
    SERVER_FULL = 503


ILLEGAL_CODES = {
    Illegal.NOT_YOUR_TURN: Code.NOT_YOUR_TURN,
    Illegal.NOT_A_PIT: Code.NOT_A_PIT,
    Illegal.STORE: Code.STORE,
    Illegal.OPPONENT_PIT: Code.OPPONENT_PIT,
    Illegal.EMPTY_PIT: Code.EMPTY_PIT,
    Illegal.GAME_OVER: Code.NOT_NOW,
}

_PIT_RE = re.compile(r"[A-Za-z]?[0-9]{1,2}\Z")

COMMANDS = (
    ("HELP", "", "this list"),
    ("NAME", "<name>", "choose your name (1-32 letters, digits, _ . -) before your game starts"),
    ("TABLE", "[<table>]", "wait at a named table instead of the general queue; no name: back to the queue"),
    ("MEET", "<name>", "play the player called <name> once they send MEET with your name"),
    ("COMPUTER", "[<level>] [A|B]", "play the computer; you play A (moving first) unless you say B"),
    ("LEVELS", "", "list the computer's levels"),
    ("MOVE", "<pit>", "sow a pit: A1-A6 or B1-B6 (yours), or 1-6; the word MOVE may be left out"),
    ("BOARD", "[ON|OFF]", "draw the board now, or switch the drawing after every move on or off"),
    ("POSITION", "", "send the position line again"),
    ("RESIGN", "", "give up the game"),
    ("PING", "", "answered PONG"),
    ("QUIT", "", "leave (resigns a running game)"),
)


def parse(text: str) -> tuple[str, list[str]]:
    """Split a client line into an upper-case command and its arguments.

    A bare pit (``A3``, ``b2``, ``4``; also a wrong one such as ``C9``) is the MOVE command.
    """
    return textwire.split_command(text, _PIT_RE)




def hello() -> str:
    return f"HELLO {PROTOCOL} gamed/{__version__}"


def refusal(why: str) -> bytes:
    """What a connection the server refuses (too many connections) receives before it is closed."""
    return textwire.refusal(Code.SERVER_FULL, why)


def start(game_id: int, side: str, opponent: str) -> str:
    return f"START {game_id} {side} {opponent}"


def turn(pos: Position, names: dict[str, str]) -> str:
    """``TURN <side> <name>``: who moves next."""
    return f"TURN {pos.to_move} {names[pos.to_move]}"


def your_move(pos: Position, seconds_left: float | None) -> str:
    """The move prompt: whole seconds left and the pits the player may sow."""
    return f"YOURMOVE {seconds(seconds_left)} {legal_pits(pos)}"


def game_over(
    outcome: Outcome,
    me: str,
    names: dict[str, str],
    strike_limit: int,
    control: TimeControl,
    grace: float | None = None,
) -> list[str]:
    """The last lines a player receives: ``SCORE``, then ``RESULT`` or ``ABORT``, then ``BYE``.
    ``grace`` is how long a dropped seat was kept (a forfeit's text says it)."""
    pos = outcome.position
    culprit = None if outcome.culprit is None else names[outcome.culprit]
    who = "you" if outcome.culprit == me else culprit
    reason = outcome.reason
    if outcome.aborted:
        if reason is Reason.DISCONNECT:
            text = f"{culprit} disconnected"
        else:
            text = "the server is shutting down"
        last = f"ABORT {reason.value} {text}"
    else:
        result = "DRAW" if outcome.winner is None else ("WIN" if outcome.winner == me else "LOSE")
        if reason is Reason.RESIGN:
            text = f"{who} resigned"
        elif reason is Reason.STRIKES:
            text = f"{who} made {strike_limit} protocol errors"
        elif reason is Reason.TIMEOUT and outcome.culprit is None:
            text = f"the game reached its time cap ({format_duration(control.game or 0)})"
        elif reason is Reason.TIMEOUT and control.plain:
            text = f"{who} did not move within {seconds(control.move)} s"
        elif reason is Reason.TIMEOUT:
            text = f"{who} ran out of time ({control.notation()})"
        elif reason is Reason.FORFEIT:
            text = f"{who} did not come back within {seconds(grace)} s" if grace else f"{who} left the game"
        else:
            text = f"{pos.store(me)} to {pos.store(other(me))}"
        last = f"RESULT {result} {reason.value} {text}"
    return [f"SCORE {pos.store(A)} {pos.store(B)}", last, "BYE thanks for playing"]


def strikes(count: int, limit: int) -> str:
    """``STRIKES <n> <limit>``: your strikes in this game so far and the limit (0: none)."""
    return f"STRIKES {count} {limit}"


# ``HELP ACCOUNTS``: the commands of accounts and seats (docs/players.md). ``HELP`` alone lists
# COMMANDS as it always did, so the bytes a client that uses none of them sees do not change.
ACCOUNT_COMMANDS = (
    ("LOGIN", "<name> <token>", "play as your registered account (before your game starts, or to come back to it)"),
    ("RESUME", "<token>", "take your seat back after your connection dropped (the token from TOKEN)"),
    ("TOKEN", "", "in a game: the resume token that takes your seat back if your connection drops"),
    textwire.LADDER_COMMAND,
)


# ``HELP CLOCKS``: time controls (docs/clocks.md), apart so that ``HELP`` stays as it was.
CLOCK_COMMANDS = textwire.CLOCK_COMMANDS + (
    ("TABLE", "[<table>] CLOCK <time control>", "wait for a player who asks for the same time control (e.g. CLOCK 5m+2s)"),
)


def help_lines(topic: str | None = None) -> list[str]:
    """``HELP`` (every game command), ``HELP ACCOUNTS`` (logging in and coming back) ``HELP
    CLOCKS`` or ``HELP SELFTEST``."""
    if topic is not None and topic.upper() == "ACCOUNTS":
        return textwire.help_lines(ACCOUNT_COMMANDS, 16)
    if topic is not None and topic.upper() == "SELFTEST":
        return textwire.help_lines(textwire.SELFTEST_COMMANDS, 30)
    if topic is not None and topic.upper() == "CLOCKS":
        return textwire.help_lines(CLOCK_COMMANDS, 30)
    return textwire.help_lines(COMMANDS, 16)


def position(pos: Position) -> str:
    """``POSITION`` with A1..A7, B1..B7 and the side to move (``-`` once the game is over)."""
    return "POSITION " + " ".join(map(str, pos.pits)) + " " + ("-" if pos.over else pos.to_move)


def played(move: Move) -> str:
    """``PLAYED <side> <pit> SOWN <n>`` followed by what else the move did, in a fixed order:
    ``CAPTURE <k>``, ``EXTRA`` (the mover moves again), ``SWEEP <m>``, and ``END`` on the move that
    ends the game (which then has no ``EXTRA``: nobody moves again)."""
    over = move.position.over
    parts = [f"PLAYED {move.side} {move.side}{move.pit} SOWN {move.sown}"]
    if move.captured:
        parts.append(f"CAPTURE {move.captured}")
    if move.extra_turn and not over:
        parts.append("EXTRA")
    if move.swept:
        parts.append(f"SWEEP {move.swept}")
    if over:
        parts.append("END")
    return " ".join(parts)


def legal_pits(pos: Position) -> str:
    return " ".join(pit_name(pit_index(pos.to_move, n)) for n in pos.legal_moves())


def board(pos: Position, reader: str = A) -> list[str]:
    """A drawing of the board for people, as ``BOARD`` lines, seen from the ``reader``'s side: its
    own row at the bottom, sown left to right towards its store on the right; the opponent's row
    on top, right to left, and the opponent's store on the left."""
    p = pos.pits
    own, opp = pit_index(reader, 1), pit_index(other(reader), 1)
    top = "".join(f"{p[i]:>4}" for i in range(opp + 5, opp - 1, -1))
    bottom = "".join(f"{p[i]:>4}" for i in range(own, own + 6))
    mine, theirs = reader, other(reader)
    rule = "-" * 32
    return [
        "BOARD" + " " * 12 + "  ".join(f"{theirs}{n}" for n in range(6, 0, -1)),
        f"BOARD     +{rule}+",
        f"BOARD     |    {top}    |",
        f"BOARD  {theirs}7 | {p[opp + 6]:>2} {' ' * 24} {p[own + 6]:>2} | {mine}7",
        f"BOARD     |    {bottom}    |",
        f"BOARD     +{rule}+",
        "BOARD" + " " * 12 + "  ".join(f"{mine}{n}" for n in range(1, 7)),
    ]
