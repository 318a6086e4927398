"""The Connect Four text protocol as pure functions: command parsing, error codes and server lines.

Same conventions as the Kalaha protocol: a ``HELLO`` greeting with the protocol version, every
line starts with an upper-case keyword, ``ERROR <code> <text>`` for refusals. Players are ``0``
(moves first) and ``1``, as in ``gamed.connect4.rules``; columns and rows count from 0, row 0 at
the bottom. The machine-readable board is ``BOARD <WxH> <row0> <row1> ...`` (``Board.board_string``),
the optional drawing is sent as ``PICTURE`` lines.
"""

from __future__ import annotations

import enum
import re

from gamed import __version__, textwire
from gamed.names import valid_name
from gamed.connect4.rules import MAX_SIZE, MIN_SIZE, Board, IllegalMove
from gamed.timecontrol import TimeControl, format_duration

# Shared with the other text command protocols (gamed.textwire).
ParseError = textwire.ParseError
error = textwire.error
seconds = textwire.seconds
away = textwire.away  # AWAY <seat> <name> <seconds> and BACK <seat> <name>: the same in every text game
back = textwire.back
clock = textwire.clock  # CLOCK and TIMECONTROL (docs/clocks.md): the same in every text game
time_control = textwire.time_control

PROTOCOL = "CONNECT4/1"
SIZE_RE = re.compile(r"([0-9]{1,3})[xX]([0-9]{1,3})\Z")
_COLUMN_RE = re.compile(r"[+-]?[0-9]{1,6}\Z")
NO_LINE = (-1, -1, -1, -1)
# A move outside a game: what the player can do instead.
NOT_IN_A_GAME = "you are not in a game; start one with PLAY <engine> (ENGINES lists them) or TABLE (another person)"


class Code(enum.IntEnum):
    """Stable error codes sent as ``ERROR <code> <text>``."""

    UNKNOWN_COMMAND = 400
    BAD_ARGUMENTS = 401
    LINE_TOO_LONG = 402
    NOT_TEXT = 403
    NOT_NOW = 404
    UNKNOWN_ENGINE = 405
    BAD_LEVEL = 406
    BAD_SIZE = 407
    ENGINE_FAILED = 408
    BUSY = 409
    NOT_YOUR_TURN = 410
    BAD_COLUMN = 411
    COLUMN_FULL = 412
    INTERNAL = 500
    SERVER_FULL = 503


class Reason(enum.Enum):
    """Why a game ended, as sent in ``RESULT`` and ``ABORT`` lines."""

    FOUR = "FOUR"  # four in a line
    FULL = "FULL"  # the board is full: a draw
    RESIGN = "RESIGN"
    STRIKES = "STRIKES"  # too many protocol errors
    TIMEOUT = "TIMEOUT"  # no move within the time limit: a loss
    FORFEIT = "FORFEIT"  # a player who dropped did not come back within the grace period: a loss
    DISCONNECT = "DISCONNECT"  # aborted
    ENGINE = "ENGINE"  # the engine failed: aborted
    SHUTDOWN = "SHUTDOWN"  # aborted


ABORTS = (Reason.DISCONNECT, Reason.ENGINE, Reason.SHUTDOWN)

ILLEGAL_CODES = {
    IllegalMove.BAD_COLUMN: Code.BAD_COLUMN,
    IllegalMove.COLUMN_FULL: Code.COLUMN_FULL,
    IllegalMove.GAME_OVER: Code.NOT_NOW,
}

COMMANDS = (
    ("HELP", "", "this list"),
    ("NAME", "<name>", "choose your name (1-32 letters, digits, _ . -) before your game starts"),
    ("ENGINES", "", "list the engines and their levels"),
    ("PLAY", "<engine>[:<level>] [FIRST|SECOND|ME|ENGINE] [WxH] [FROM <c>,<c>...]",
     "play an engine from the empty board or an opening; you are player 0 (FIRST, the default) or 1"
     " (SECOND), or say who moves next: ME or ENGINE"),
    ("TABLE", "[<table>] [WxH]", "wait for a person (the general queue, or a named table)"),
    ("MATCH", "<engine>[:<level>] <engine>[:<level>] [<games>] [WxH]", "watch two engines play a series (2 games unless given)"),
    ("MOVE", "<column>", "drop a stone in a column (0 is the leftmost); the word MOVE may be left out"),
    ("BOARD", "[ON|OFF]", "send the board now, or switch the drawing after every move on or off"),
    ("RESIGN", "", "give up the game (or stop the match you started)"),
    ("PING", "", "answered PONG"),
    ("QUIT", "", "leave (resigns a running game)"),
)


def parse(text: str) -> tuple[str, list[str]]:
    """Split a client line into an upper-case command and its arguments; a bare number is MOVE."""
    return textwire.split_command(text, _COLUMN_RE)

def parse_size(word: str) -> tuple[int, int] | None:
    """``WxH`` as (width, height) if it looks like a size (not checked against the limits)."""
    m = SIZE_RE.match(word)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_size(size: tuple[int, int]) -> None:
    w, h = size
    if not (MIN_SIZE <= w <= MAX_SIZE and MIN_SIZE <= h <= MAX_SIZE):
        raise ParseError(
            Code.BAD_SIZE, f"board size {w}x{h} not supported: width and height must be {MIN_SIZE}..{MAX_SIZE}"
        )


def parse_column(word: str, width: int) -> int:
    """A column number 0..width-1; ParseError(BAD_COLUMN) otherwise."""
    if not _COLUMN_RE.match(word):
        raise ParseError(Code.BAD_COLUMN, f"not a column number: {word[:20]}")
    column = int(word)
    if not 0 <= column < width:
        raise ParseError(Code.BAD_COLUMN, f"column {column} is not on the board (0..{width - 1})")
    return column


def parse_engine(word: str) -> tuple[str, int | None]:
    """``<engine>[:<level>]`` as (engine, level or None)."""
    engine, _, level_text = word.partition(":")
    level = None
    if level_text:
        if not level_text.isdigit() or len(level_text) > 4:
            raise ParseError(Code.BAD_LEVEL, f"not a level number: {level_text[:20]}")
        level = int(level_text)
    return engine, level


_SIDES = ("FIRST", "SECOND", "ME", "ENGINE")


def parse_play(
    args: list[str], default_size: tuple[int, int]
) -> tuple[str, int | None, int, tuple[int, int], tuple[int, ...], TimeControl | None]:
    """``PLAY <engine>[:<level>] [FIRST|SECOND|ME|ENGINE] [WxH] [FROM <c1,c2,...>] [CLOCK <tc>]``
    as (engine, level or None, your player, size, opening columns, time control or None); the
    opening is played before the game starts. ``FIRST``/``SECOND`` make you player 0/1;
    ``ME``/``ENGINE`` say who moves next in the position after the opening (without one, ``ME``
    is ``FIRST``)."""
    args, control = textwire.take_clock(args, Code.BAD_ARGUMENTS, "usage: PLAY ... CLOCK <time control>, e.g. CLOCK 5m+2s")
    usage = "usage: PLAY <engine>[:<level>] [FIRST|SECOND|ME|ENGINE] [WxH] [FROM <column>,<column>,...]"
    opening: tuple[int, ...] = ()
    upper = [a.upper() for a in args]
    if "FROM" in upper:
        i = upper.index("FROM")
        if i != len(args) - 2:
            raise ParseError(Code.BAD_ARGUMENTS, usage)
        opening = parse_columns(args[i + 1])
        args, upper = args[:i], upper[:i]
    if not 1 <= len(args) <= 3:
        raise ParseError(Code.BAD_ARGUMENTS, usage)
    sides = [word for word in upper[1:] if word in _SIDES]
    if len(sides) > 1:
        raise ParseError(Code.BAD_ARGUMENTS, f"{usage} (one of {', '.join(_SIDES)})")
    engine, level = parse_engine(args[0])
    side, size = (sides[0] if sides else "FIRST"), default_size
    seen_size = False
    for word in args[1:]:
        if word.upper() in _SIDES:
            continue
        if (s := parse_size(word)) is not None and not seen_size:
            check_size(s)
            size, seen_size = s, True
        else:
            raise ParseError(Code.BAD_ARGUMENTS, usage)
    next_player = len(opening) % 2  # player 0 dropped the first stone of the opening
    player = {"FIRST": 0, "SECOND": 1, "ME": next_player, "ENGINE": 1 - next_player}[side]
    return engine, level, player, size, opening, control


def parse_columns(word: str) -> tuple[int, ...]:
    """``3,3,4,2`` (columns from 0) as a tuple; ParseError(BAD_ARGUMENTS) if malformed."""
    parts = word.split(",")
    if len(parts) > MAX_SIZE * MAX_SIZE or not all(p.isdigit() and len(p) <= 2 for p in parts):
        raise ParseError(Code.BAD_ARGUMENTS, f"not a list of columns like 3,3,4: {word[:40]}")
    return tuple(int(p) for p in parts)


def parse_match(args: list[str], default_size: tuple[int, int]):
    """``MATCH <engine>[:<level>] <engine>[:<level>] [<games>] [WxH]`` as (a, b, games, size);
    ``a`` and ``b`` are (engine, level or None); two games unless given."""
    usage = "usage: MATCH <engine>[:<level>] <engine>[:<level>] [<games>] [WxH]"
    if not 2 <= len(args) <= 4:
        raise ParseError(Code.BAD_ARGUMENTS, usage)
    a, b = parse_engine(args[0]), parse_engine(args[1])
    games, size = 2, default_size
    seen_games = seen_size = False
    for word in args[2:]:
        if word.isdigit() and len(word) <= 6 and not seen_games:
            games, seen_games = int(word), True
        elif (s := parse_size(word)) is not None and not seen_size:
            check_size(s)
            size, seen_size = s, True
        else:
            raise ParseError(Code.BAD_ARGUMENTS, usage)
    return a, b, games, size


def match_game(number: int, first: str, second: str, winner: str | None, moves, reason: str) -> str:
    """``MATCHGAME <n> <player 0> <player 1> <winner|-> <columns,...|-> <reason>``."""
    columns = ",".join(map(str, moves)) or "-"
    return f"MATCHGAME {number} {first} {second} {winner or '-'} {columns} {reason}"


def match_end(name_a: str, score_a: float, name_b: str, score_b: float, games: int, stopped: str | None) -> str:
    """``MATCHEND <a> <score a> <b> <score b> <games played> [stopped: <why>]``."""
    line = f"MATCHEND {name_a} {score_a:g} {name_b} {score_b:g} {games}"
    return f"{line} stopped: {stopped}" if stopped else line


def parse_table(
    args: list[str], default_size: tuple[int, int]
) -> tuple[str | None, tuple[int, int], TimeControl | None]:
    """``TABLE [<table>] [WxH] [CLOCK <tc>]`` as (table name or None, size, time control or None)."""
    args, control = textwire.take_clock(args, Code.BAD_ARGUMENTS, "usage: TABLE ... CLOCK <time control>, e.g. CLOCK 5m+2s")
    usage = "usage: TABLE [<table>] [WxH] (names: 1-32 letters, digits, _ . -)"
    table, size = None, default_size
    if len(args) > 2:
        raise ParseError(Code.BAD_ARGUMENTS, usage)
    for i, word in enumerate(args):
        s = parse_size(word)
        if s is not None and i == len(args) - 1:
            check_size(s)
            size = s
        elif i == 0 and valid_name(word):
            table = word
        else:
            raise ParseError(Code.BAD_ARGUMENTS, usage)
    return table, size, control


def hello() -> str:
    return f"HELLO {PROTOCOL} gamed/{__version__}"


def refusal(why: str) -> bytes:
    return textwire.refusal(Code.SERVER_FULL, why)


# ``HELP ACCOUNTS``: the commands of accounts and seats (docs/players.md). ``HELP`` alone lists
# COMMANDS as it always did, so the bytes a client that uses none of them sees do not change.
ACCOUNT_COMMANDS = (
    ("LOGIN", "<name> <token>", "play as your registered account (before your game starts; takes back its seat in a game)"),
    ("RESUME", "<token>", "take your seat back after your connection dropped"),
    ("TOKEN", "", "in a game: your resume token (a guest needs it to take its seat back after a drop)"),
    textwire.LADDER_COMMAND,
)


# ``HELP CLOCKS``: time controls (docs/clocks.md), apart so that ``HELP`` stays as it was.
CLOCK_COMMANDS = textwire.CLOCK_COMMANDS + (
    ("PLAY", "<engine> ... CLOCK <time control>", "play an engine on this time control (e.g. CLOCK 5m+2s)"),
    ("TABLE", "[<table>] [WxH] CLOCK <time control>", "wait for a person who asks for the same time control"),
)


def help_lines(topic: str | None = None) -> list[str]:
    """``HELP`` (every game command), ``HELP ACCOUNTS`` (logging in and coming back) ``HELP
    CLOCKS`` (time controls) or ``HELP SELFTEST``."""
    if topic is not None and topic.upper() == "ACCOUNTS":
        return textwire.help_lines(ACCOUNT_COMMANDS, 40)
    if topic is not None and topic.upper() == "SELFTEST":
        return textwire.help_lines(textwire.SELFTEST_COMMANDS, 30)
    if topic is not None and topic.upper() == "CLOCKS":
        return textwire.help_lines(CLOCK_COMMANDS, 40)
    return textwire.help_lines(COMMANDS, 40)


def engine_lines(engines: list[tuple[str, str, list[str]]]) -> list[str]:
    """``ENGINE <name> <levels> <description>`` then ``LEVEL <engine> <n> <name>`` lines, ``ENGINE END``."""
    lines = []
    for name, description, levels in engines:
        lines.append(f"ENGINE {name} {len(levels)} {description}".rstrip())
        lines.extend(f"LEVEL {name} {n} {level}" for n, level in enumerate(levels))
    lines.append("ENGINE END")
    return lines


def start(game_id: int, player: int, board: Board, opponent: str) -> str:
    """``START <game> <your player 0|1> <WxH> <opponent>``."""
    return f"START {game_id} {player} {board.width}x{board.height} {opponent}"


def board_line(board: Board) -> str:
    return "BOARD " + board.board_string()


def picture(board: Board, names: dict[int, str]) -> list[str]:
    """The drawing for people as ``PICTURE`` lines, ending with the legend of the stones."""
    legend = f"X player 0 {names[0]}, O player 1 {names[1]}"
    return ["PICTURE " + line for line in board.drawing().split("\n")] + ["PICTURE " + legend]


def played(player: int, column: int, row: int) -> str:
    return f"PLAYED {player} {column} {row}"


def turn(player: int, name: str) -> str:
    return f"TURN {player} {name}"


def your_move(board: Board, seconds_left: float | None) -> str:
    """``YOURMOVE <seconds|-> <legal columns>``."""
    return f"YOURMOVE {seconds(seconds_left)} " + " ".join(map(str, board.legal_columns()))


def result(me: int, winner: int | None, reason: Reason, lines: list[tuple[int, int, int, int]] = ()) -> str:
    """``RESULT <WIN|LOSE|DRAW> <reason> <winner 0|1|-> <x1> <y1> <x2> <y2>`` (-1s without a line);
    when the last stone completed several lines, the ends of each further one follow."""
    outcome = "DRAW" if winner is None else ("WIN" if winner == me else "LOSE")
    ends = " ".join(" ".join(map(str, line)) for line in (lines or [NO_LINE]))
    return f"RESULT {outcome} {reason.value} {'-' if winner is None else winner} {ends}"


def _cell(x: int, y: int) -> str:
    return f"column {x} row {y}"


def result_info(
    me: int, winner: int | None, reason: Reason, lines: list[tuple[int, int, int, int]], names: dict[int, str],
    culprit: int | None, strike_limit: int, control: TimeControl, grace: float | None = None,
) -> str:
    """``INFO <sentence>``: the result in words, sent to people (drawings on) after ``RESULT``."""
    if winner is None and reason is Reason.TIMEOUT:
        return f"INFO a draw: the game reached its time cap ({format_duration(control.game or 0)})"
    if winner is None:
        return "INFO a draw: the board is full"
    if reason is Reason.FOUR:
        ends = " and ".join(f"from {_cell(x1, y1)} to {_cell(x2, y2)}" for x1, y1, x2, y2 in lines)
        who = "you won" if winner == me else f"{names[winner]} (player {winner}) won"
        return f"INFO {who}: four in a line {ends}"
    deed = {
        Reason.RESIGN: "resigned",
        Reason.STRIKES: f"made {strike_limit} protocol errors",
        Reason.TIMEOUT: (f"did not move within {seconds(control.move)} s" if control.plain
                         else f"ran out of time ({control.notation()})"),
        Reason.FORFEIT: f"did not come back within {seconds(grace)} s",
    }[reason]
    loser = "you" if culprit == me else f"{names[culprit]} (player {culprit})"
    gainer = "you win" if winner == me else f"{names[winner]} (player {winner}) wins"
    return f"INFO {loser} {deed}: {gainer}"


def resumed(game_id: int, player: int) -> str:
    """``OK RESUME <game> <your player>``: the seat is yours again; the whole state follows."""
    return f"OK RESUME {game_id} {player}"


def strikes(counts: dict[int, int], limit: int) -> str:
    """``STRIKES <player 0's> <player 1's> <limit>`` (sent to a player who came back)."""
    return f"STRIKES {counts[0]} {counts[1]} {limit}"


def abort(reason: Reason, text: str) -> str:
    return f"ABORT {reason.value} {text}"
