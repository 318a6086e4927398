"""``gamed-stratego``: the command-line referee that replaces the UCC 2012 ``stratego`` manager.

A thin wrapper (ucc-stratego §12.1): parse the command line exactly as §2.3 says, build two seats
(AI programs, people on the console, or a replayed ``-f`` log), run one ``StrategoReferee``, print
the result line once and exit with the status of §7.3. It works under any name; the tournament
runner calls it ``stratego``.

The competition's tournament script starts it once per game, so it is built to start and end
quickly (docs/performance.md): it runs the match in its own small loop (``gamed.stratego.pipes``)
instead of the Twisted reactor, imports neither Twisted, zope.interface nor attrs, and leaves with
``os._exit`` once the result line and the log are written and the AIs are reaped (an interpreter's
teardown would only free memory).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import types
from collections.abc import Callable

from gamed.stratego.console import ConsoleSeat, stream_writer
from gamed.stratego.pipes import PipeConsole, PipeSeat, SelectorLoop, Waiter
from gamed.stratego.referee import BLUE, COLOURS, RED, MatchOptions, Outcome, StrategoReferee, parse_log, replay_seats
from gamed.stratego.rules import TOKENS

DEFAULT_PROG = "gamed-stratego"
HUMANS = ("@human", "human")


_MISSING = {
    "t": "stall time value after -t switch!",
    "T": "timeout value after -T switch!",
    "m": "max_turns value after -m switch!",
    "o": 'filename or "stdout" after -o switch!',
    "f": "filename after -f switch!",
}


class ArgumentError(Exception):
    """A command-line error (§2.4): its message goes to stderr and the exit status is 1."""


class _ShowManual(Exception):
    """``-h`` / ``--help`` was reached."""


class Arguments(types.SimpleNamespace):
    """The parsed command line (equal when every field is)."""

    def __init__(self, **fields):
        super().__init__(
            players=[],
            graphics=False,  # -g
            print_board=False,  # -p (toggles)
            allow_illegal=False,  # -i
            hidden=set(),  # -r hides RED, -b hides BLUE
            log_file=None,  # -o
            input_file=None,  # -f
            stall=0.0,  # -t; math.inf: wait for the operator
            timeout=2.0,  # -T; None: no timeout
            max_turns=5000,  # -m; None: no limit
            pause=True,  # --pause / --no-pause
            quit_grace=1.0,  # --quit-grace
            max_line=65536,  # --max-line
            clock=None,  # --clock: a gamed.timecontrol.TimeControl (its move limit replaces -T)
            clock_lines=False,  # --clock-lines
        )
        self.__dict__.update(fields)

    def match_options(self) -> MatchOptions:
        return MatchOptions(
            max_turns=self.max_turns,
            timeout=self.timeout if self.clock is None else self.clock.move,
            allow_illegal=self.allow_illegal,
            pause=self.pause,
            quit_grace=self.quit_grace,
            stall=self.stall,
            max_line=self.max_line,
            clock=self.clock,
            clock_lines=self.clock_lines,
        )


def _error(text: str) -> ArgumentError:
    return ArgumentError(f"ARGUMENT_ERROR - {text}")


def _invalid(value: str, switch: str) -> ArgumentError:
    return _error(f'Invalid value "{value}" for {switch} switch!')


# The values of §2.3 rule 6, checked by hand rather than with regular expressions: ``re`` would
# add a tenth to gamed-stratego's start-up (docs/performance.md).


def _unsigned(value: str) -> str:
    return value[1:] if value[:1] in ("+", "-") else value


def _digits(text: str) -> bool:
    return text.isascii() and text.isdecimal()


def _is_integer(value: str) -> bool:
    """``[+-]?[0-9]+``"""
    return _digits(_unsigned(value))


def _is_infinity(value: str) -> bool:
    """``[+-]?inf(inity)?`` in any case."""
    return value.isascii() and _unsigned(value).lower() in ("inf", "infinity")


def _is_decimal(value: str) -> bool:
    """``[+-]?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][+-]?[0-9]+)?``"""
    mantissa, e, exponent = _unsigned(value).replace("E", "e").partition("e")
    if e and not _is_integer(exponent):
        return False
    whole, _, fraction = mantissa.partition(".")
    return bool(whole or fraction) and all(_digits(part) for part in (whole, fraction) if part)


def _seconds(value: str, switch: str) -> float:
    """A decimal number or ``inf``/``infinity`` (any case); NaN and junk are errors (§2.3 rule 6)."""
    if _is_decimal(value) or _is_infinity(value):
        return float(value)
    raise _invalid(value, switch)


def _turns(value: str) -> int | None:
    if _is_infinity(value):
        return None  # inf, and -inf (negative): no limit
    if _is_integer(value):
        turns = int(value)
        return None if turns < 0 else turns
    raise _invalid(value, "-m")


def parse_arguments(argv: list[str]) -> Arguments:
    """Read ``argv`` left to right as §2.3 says; raises ArgumentError, or _ShowManual for -h."""
    args = Arguments()
    seen_o = seen_f = False
    i = 0
    only_players = False

    def next_value(missing: str) -> str:
        nonlocal i
        if i >= len(argv):
            raise _error(f"Expected {missing}")
        value = argv[i]
        i += 1
        return value

    def add_player(arg: str) -> None:
        if seen_f or len(args.players) == 2:
            raise _error(f'Unexpected argument "{arg}"...')
        args.players.append(arg)

    while i < len(argv):
        arg = argv[i]
        i += 1
        if only_players or not arg.startswith("-"):
            add_player(arg)
            continue
        if arg == "--":
            only_players = True
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name == "--help" and not eq:
                raise _ShowManual()
            if name in ("--pause", "--no-pause") and not eq:
                args.pause = name == "--pause"
            elif name == "--clock-lines" and not eq:
                args.clock_lines = True
            elif name == "--clock":
                from gamed.timecontrol import TimeControlError, parse

                value = value if eq else next_value("time control after --clock switch!")
                try:
                    args.clock = parse(value)
                except TimeControlError as e:
                    raise _error(f'Invalid time control "{value}" for --clock: {e}') from None
            elif name == "--quit-grace":
                value = value if eq else next_value("value after --quit-grace switch!")
                grace = _seconds(value, name)
                if not (0 <= grace < math.inf):
                    raise _invalid(value, name)
                args.quit_grace = grace
            elif name == "--max-line":
                value = value if eq else next_value("value after --max-line switch!")
                if not _is_integer(value) or int(value) < 1:
                    raise _invalid(value, name)
                args.max_line = int(value)
            else:
                raise _error(f'Unrecognised switch "{arg}"...')
            continue
        if arg == "-":
            raise _error(f'Unrecognised switch "{arg}"...')
        letters = arg[1:]
        j = 0
        while j < len(letters):
            c = letters[j]
            j += 1
            if c == "h":
                raise _ShowManual()
            if c == "g":
                args.graphics = True
            elif c == "p":
                args.print_board = not args.print_board
            elif c == "i":
                args.allow_illegal = True
            elif c == "r":
                args.hidden.add(RED)
            elif c == "b":
                args.hidden.add(BLUE)
            elif c in _MISSING:
                value = letters[j:]
                j = len(letters)
                if value.startswith("="):
                    value = value[1:]
                if not value:
                    value = next_value(_MISSING[c])
                if c == "t":
                    stall = _seconds(value, "-t")
                    args.stall = math.inf if stall < 0 or math.isinf(stall) else stall
                elif c == "T":
                    timeout = _seconds(value, "-T")
                    args.timeout = None if timeout <= 0 or math.isinf(timeout) else timeout
                elif c == "m":
                    args.max_turns = _turns(value)
                elif c == "o":
                    if seen_o:
                        raise _error("Expected at most ONE -o switch!")
                    seen_o = True
                    args.log_file = value
                else:  # f
                    if seen_f:
                        raise _error("Expected at most ONE -f switch!")
                    seen_f = True
                    if args.players:
                        raise _error(f'Unexpected argument "{args.players[0]}"...')
                    args.input_file = value
            elif c in "Iv":
                raise ArgumentError(f"ERROR: -{c} switch supplied, but image output is not supported.")
            else:
                raise _error(f'Unrecognised switch "{arg}"...')
    if not seen_f and len(args.players) < 2:
        raise _error("Did not recieve enough players (did you mean to use the -f switch?)")
    for player in args.players:
        if player.startswith("@") and player != "@human":
            raise _error(f'Unsupported player "{player}"')
    return args


def manual_text() -> str:
    """The built-in manual (package data), printed by ``-h``."""
    from importlib import resources

    return resources.files("gamed.stratego").joinpath("manual.txt").read_text(encoding="utf-8")


def prog_name(argv0: str | None) -> str:
    """The name to show in messages: the invoked name (``stratego`` when installed under that
    name), or ``gamed-stratego`` when run as ``python -m``."""
    base = os.path.basename(argv0 or "")
    if not base or base.endswith(".py") or base in ("-c", "-m", "__main__"):
        return DEFAULT_PROG
    return base


# --- display (-p, -g; §10) ---------------------------------------------------------------------

_CLEAR = "\x1b[H\x1b[2J"
_RESET = "\x1b[0m"
_PIECE = ("\x1b[1;31m", "\x1b[1;34m")  # RED, BLUE tokens
_HIDDEN = ("\x1b[1;37;41m", "\x1b[1;37;44m")  # '#' on its side's colour
_LAKE = "\x1b[30;47m"


def board_header(referee: StrategoReferee, final: bool) -> str:
    names = f"RED: {referee.seats[RED].name}  BLUE: {referee.seats[BLUE].name}"
    if final:
        return f"{referee.turn} Final State    {names}"
    side = referee.to_move
    return f"{referee.turn} {COLOURS[side]} to move ({referee.seats[side].name})    {names}"


def board_cells(referee: StrategoReferee, final: bool, hidden) -> list[list[tuple[str, int | None, bool]]]:
    """Per cell: (character, owner or None, hidden). Hidden sides show ``#`` except cells whose
    piece combat revealed; the final picture shows everything."""
    board = referee.board
    layout = board.layout
    rows = []
    for y in range(layout.height):
        row = []
        for x in range(layout.width):
            i = layout.index(x, y)
            c = board.cells[i]
            if c == -1:
                row.append(("+" if not layout.open(i) else ".", None, False))
                continue
            owner = c >> 4
            if not final and owner in hidden and i not in referee.revealed:
                row.append(("#", owner, True))
            else:
                row.append((TOKENS[c & 0x0F], owner, False))
        rows.append(row)
    return rows


def render_board(referee: StrategoReferee, final: bool, hidden=frozenset()) -> str:
    """The ``-p`` picture: clear the screen, a header, the board with coordinates in ANSI colours."""
    lines = [_CLEAR + board_header(referee, final), "   " + "".join(str(x) for x in range(10))]
    for y, row in enumerate(board_cells(referee, final, hidden)):
        text = []
        for char, owner, is_hidden in row:
            if owner is None:
                text.append(_LAKE + char + _RESET if char == "+" else char)
            elif is_hidden:
                text.append(_HIDDEN[owner] + char + _RESET)
            else:
                text.append(_PIECE[owner] + char + _RESET)
        lines.append(f"{y:2d} " + "".join(text))
    return "\n".join(lines) + "\n"


class TextDisplay:
    """Draws ``render_board`` through ``write`` (stdout for -p, stderr for -g without a display)."""

    def __init__(self, write: Callable[[str], None], hidden):
        self._write = write
        self._hidden = frozenset(hidden)

    def __call__(self, referee: StrategoReferee, final: bool) -> None:
        self._write(render_board(referee, final, self._hidden))

    def close(self) -> None:
        pass


class TkDisplay:
    """A live Tk window with the ``-p`` content (-g), kept responsive by the loop (``root.update``
    every 20 ms)."""

    CELL = 36
    TICK = 0.02

    def __init__(self, tkinter, root, hidden, loop: SelectorLoop):
        self._tk = tkinter
        self._root = root
        self._hidden = frozenset(hidden)
        self._loop = loop
        root.title("gamed-stratego")
        self._header = tkinter.Label(root, text="", anchor="w")
        self._header.pack(fill="x")
        size = self.CELL * 10
        self._canvas = tkinter.Canvas(root, width=size, height=size, background="#e8e0c8")
        self._canvas.pack()
        root.protocol("WM_DELETE_WINDOW", self.close)
        self._alive = True
        self._timer = loop.call_later(self.TICK, self._tick)

    def _tick(self) -> None:
        if not self._alive:
            return
        try:
            self._root.update()
        except self._tk.TclError:
            self.close()
            return
        self._timer = self._loop.call_later(self.TICK, self._tick)

    def __call__(self, referee: StrategoReferee, final: bool) -> None:
        if not self._alive:
            return
        try:
            self._draw(referee, final)
            self._root.update()
        except self._tk.TclError:
            self.close()

    def _draw(self, referee: StrategoReferee, final: bool) -> None:
        canvas, cell = self._canvas, self.CELL
        canvas.delete("all")
        self._header.configure(text=board_header(referee, final))
        fills = ("#c83232", "#3250c8")
        for y, row in enumerate(board_cells(referee, final, self._hidden)):
            for x, (char, owner, is_hidden) in enumerate(row):
                x0, y0 = x * cell, y * cell
                if owner is None:
                    fill = "#ffffff" if char == "+" else "#e8e0c8"
                    canvas.create_rectangle(x0, y0, x0 + cell, y0 + cell, fill=fill, outline="#999999")
                    continue
                canvas.create_rectangle(x0, y0, x0 + cell, y0 + cell, fill=fills[owner], outline="#999999")
                canvas.create_text(x0 + cell // 2, y0 + cell // 2, text=char, fill="#ffffff", font=("Helvetica", 14, "bold"))

    def close(self) -> None:
        if not self._alive:
            return
        self._alive = False
        self._timer.cancel()
        try:
            self._root.destroy()
        except Exception:
            pass


def open_graphics(hidden, warn: Callable[[str], None], fallback: Callable[[str], None], loop: SelectorLoop):
    """The -g view: a Tk window when tkinter and a display are available, else (with a warning)
    the -p rendering on stderr. Never fails and never writes to stdout."""
    reason = None
    if not os.environ.get("DISPLAY"):
        reason = "$DISPLAY is not set"
    else:
        try:
            import tkinter
        except ImportError:
            reason = "tkinter is not available"
        else:
            try:
                return TkDisplay(tkinter, tkinter.Tk(), hidden, loop)
            except Exception as e:  # TclError: no display could be opened
                reason = f"cannot open a window ({e})"
    warn(f"WARNING: -g: {reason}; drawing the board on stderr instead.\n")
    return TextDisplay(fallback, hidden)


# --- running a match ---------------------------------------------------------------------------


class _LogWriter:
    """The ``-o`` log, each line written whole at once (latin-1; an unbuffered file, so nothing
    waits in a buffer). On stdout the result line is held back: the CLI prints it once, as the
    very last line."""

    def __init__(self, stream=None, to_stdout: bool = False, stdout: Callable[[str], None] | None = None):
        self._stream = stream
        self._to_stdout = to_stdout
        self._stdout = stdout
        self._result_next = False
        self.closed = stream is None and not to_stdout

    def __call__(self, line: str) -> None:
        if self.closed:
            return
        if self._to_stdout:
            if self._result_next:
                self._result_next = False
                return
            self._result_next = line.startswith("Game ends ")
            self._stdout(line + "\n")
            return
        try:
            self._stream.write((line + "\n").encode("latin-1", "replace"))
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.closed = True
        if self._stream is not None:
            try:
                self._stream.close()
            except OSError:
                pass


def _make_seat(argument: str, options: MatchOptions, loop: SelectorLoop, console: PipeConsole, err):
    if argument in HUMANS:
        return ConsoleSeat(argument, console, err)
    # §2.5: the AI inherits our working directory, environment and stderr.
    from gamed.children import minimal_environment

    return PipeSeat(argument, options, loop, env=minimal_environment(dict(os.environ)))


def _play(args: Arguments, log: _LogWriter, replay, out, err) -> int:
    """Play one match in a SelectorLoop; returns the exit status."""
    loop = SelectorLoop()
    options = args.match_options()
    console = PipeConsole(loop, max_line=args.max_line)
    displays = []
    seats: tuple = ()
    referee = None
    aborted: list[int] = []
    status = Waiter()  # fires with the exit status

    def on_signal(signum: int) -> None:
        """SIGINT/SIGTERM: end the match without a result, kill both players, then exit
        128 + signum. A second signal exits at once."""
        if status.done:
            return
        if aborted or referee is None:
            status.fire(128 + signum)
            return
        aborted.append(signum)
        referee.abort()
        log.closed = True
        kills = [seat.kill() for seat in seats]

        async def killed() -> None:
            for kill in kills:
                await kill
            status.fire(128 + signum)

        loop.start(killed())

    # First of all: a signal from now on is handled by the loop, between its events.
    loop.watch_signals(_handled_signals(), on_signal)

    if args.print_board:
        displays.append(TextDisplay(out, args.hidden))
    if args.graphics:
        displays.append(open_graphics(args.hidden, err, err, loop))

    def on_board(referee: StrategoReferee, final: bool) -> None:
        if not aborted:
            for display in displays:
                display(referee, final)

    async def wait_for_operator() -> bool:
        err("Waiting for user to press enter... (type QUIT to exit)\n")
        line = await console.read_line()
        if line is not None and line.strip() == "QUIT":
            err("Ordered to quit... exiting...\n")
            return False
        return True  # Enter (or the end of stdin): go on

    def on_error(error: BaseException) -> None:
        import traceback

        err("gamed-stratego: internal error in the referee:\n" + traceback.format_exc())

    from gamed.children import end_children, process_tree

    before = process_tree(os.getpid(), include_root=False)  # not ours to end: they ran before the match
    if replay is not None:
        seats = replay_seats(replay)
    else:
        seats = tuple(_make_seat(player, options, loop, console, err) for player in args.players)
    referee = StrategoReferee(
        *seats,
        options,
        on_log=log,
        on_board=on_board if displays else None,
        wait_for_operator=wait_for_operator,
        on_error=on_error,
        sleep=loop.sleep,
    )

    async def match() -> None:
        result = await referee.run()
        if aborted or status.done:
            return
        if result is None:  # the operator typed QUIT
            status.fire(0)
        else:
            out(result.line + "\n")
            status.fire(1 if result.outcome is Outcome.INTERNAL_ERROR else 0)

    try:
        loop.start(match())
        loop.run(until=status)
        if loop.failure is not None:
            import traceback

            err("".join(traceback.format_exception(loop.failure)) + f"INTERNAL_ERROR - {loop.failure}\n")
            _end_players(loop, seats)
            return 1
        return status.value
    finally:
        console.close()
        for display in displays:
            display.close()
        log.close()
        signal.set_wakeup_fd(-1)
        if any(isinstance(seat, PipeSeat) for seat in seats):
            # The match is over: what the AIs forked and left behind (we are its subreaper, also
            # of what left their groups with setsid) ends with it.
            end_children(spare=before)


def _end_players(loop: SelectorLoop, seats) -> None:
    """After an internal error in the loop: kill and reap the players (within a few seconds)."""
    kills = [seat.kill() for seat in seats]
    done = Waiter()

    async def killed() -> None:
        for kill in kills:
            await kill
        done.fire()

    loop.failure = None
    loop.call_later(5.0, done.fire)
    loop.start(killed())
    try:
        loop.run(until=done)
    except Exception:
        pass


def _read_log(path: str) -> list[str]:
    with open(path, "rb") as f:
        lines = f.read().decode("latin-1").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def run(argv: list[str], prog: str = DEFAULT_PROG) -> int:
    """The whole program for ``argv``; returns the exit status."""
    out = stream_writer(sys.stdout)
    err = stream_writer(sys.stderr)
    if not argv:
        err(f"Usage: {prog} [options] red blue\n       {prog} --help\n")
        return 0
    try:
        args = parse_arguments(argv)
    except _ShowManual:
        out(manual_text())
        return 0
    except ArgumentError as e:
        err(f"{e}\n")
        return 1
    replay = None
    if args.input_file is not None:
        try:
            replay = parse_log(_read_log(args.input_file))
        except OSError:
            err(f'ARGUMENT_ERROR - Could not open input file "{args.input_file}"\n')
            return 1
    if args.log_file is None:
        log = _LogWriter()
    elif args.log_file == "stdout":
        log = _LogWriter(to_stdout=True, stdout=out)
    else:
        try:
            log = _LogWriter(open(args.log_file, "wb", buffering=0))
        except OSError:
            err(f'ARGUMENT_ERROR - Could not open log file "{args.log_file}"\n')
            return 1
    return _play(args, log, replay, out, err)


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    """Console-script entry point (``gamed-stratego``, or ``stratego`` under that name); exits
    with the status of §7.3. Run as the program (``argv`` None), it leaves with ``os._exit`` once
    stdout and stderr are flushed; with an ``argv`` (tests) it raises SystemExit."""
    if prog is None:
        prog = prog_name(sys.argv[0] if sys.argv else None)
    _IGNORED_SIGNALS.update(s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is signal.SIG_IGN)
    previous = _exit_on_signals()
    try:
        code = run(list(sys.argv[1:] if argv is None else argv), prog)
    except SystemExit as e:  # a signal before the match began
        code = e.code
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if argv is None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    raise SystemExit(code)


def _exit_on_signals() -> dict:
    """Until the match watches them itself (nothing runs yet that would need ending), a SIGINT
    or SIGTERM just exits with 128 + the signal number."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    previous = {}
    for signum in _handled_signals():
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread (an embedding test runner): leave them alone
            pass
    return previous


_IGNORED_SIGNALS: set[int] = set()


def _handled_signals() -> list[int]:
    """SIGINT and SIGTERM, except one we were started with ignored (a shell's background job
    ignores SIGINT; ``nohup``-style wrappers): that stays ignored, as in any well-behaved tool."""
    return [s for s in (signal.SIGINT, signal.SIGTERM) if s not in _IGNORED_SIGNALS]


if __name__ == "__main__":
    main()
