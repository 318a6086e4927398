"""A person at the console as one side of a UCC Stratego match (ucc-stratego §5.8).

Everything the person is told (prompts, ``START``, confirmations, ``QUIT``, their own board view)
goes to stderr, so stdout keeps only the result line. Answers are lines read from stdin through
one console reader shared by every console user of the process: two humans and the ``-t``
operator prompt take turns on the same reader and never steal each other's lines.

``ConsoleLines`` is that reader's logic (lines, limits, who is waiting), whatever reads stdin:
``ConsoleInput`` reads it on the Twisted reactor (the Combat terminal client), and
``gamed.stratego.pipes.PipeConsole`` in gamed-stratego's own loop. ``ConsoleSeat`` awaits whichever
it is given. This module imports Twisted only when a ``ConsoleInput`` is used: it is on the
start-up path of gamed-stratego (docs/performance.md).
"""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Callable

from gamed.stratego.referee import DEFAULT_SETUPS, SETUP_ROWS, Ready, place_setup
from gamed.stratego.rules import Board

_PIECES = "1 Marshal, 2 General, 3 Colonel x2, 4 Major x3, 5 Captain x4, 6 Lieutenant x4, 7 Sergeant x4, 8 Miner x5, 9 Scout x8, s Spy, B Bomb x6, F Flag"


def stream_writer(stream) -> Callable[[str], None]:
    """A function writing text to ``stream`` as latin-1 bytes, flushed at once; a closed or broken
    stream is ignored (what a person is told is best effort and never stops a match)."""
    target = getattr(stream, "buffer", None)

    def write(text: str) -> None:
        try:
            if target is not None:
                target.write(text.encode("latin-1", "replace"))
                target.flush()
            else:
                stream.write(text)
                stream.flush()
        except (OSError, ValueError):
            pass

    return write


class ConsoleLines:
    """Lines from stdin, handed out in order to whoever asks (``read_line``).

    stdin is left alone until the first ``read_line``, so a match without a person never reads
    (or waits for) the terminal. Lines are split on ``\\n`` and decoded as latin-1; a trailing
    ``\\r`` is dropped. A line longer than ``max_line`` bytes is read as an empty line. Lines
    typed ahead are kept; past ``max_queued`` of them the reader pauses until some are used.

    A subclass reads stdin: ``_start()`` begins reading and hands the bytes to ``_received`` and
    the end to ``_ended``; ``_waiter()``, ``_ready(value)`` and ``_fire(waiter, value)`` make its
    kind of awaitable; ``_pause_source()``/``_resume_source()`` stop and restart reading.
    """

    def __init__(self, stdin_fd: int = 0, max_line: int = 65536, max_queued: int = 1000):
        self._fd = stdin_fd
        self._max_line = max_line
        self._max_queued = max_queued
        self._lines: collections.deque[str] = collections.deque()
        self._waiting: collections.deque = collections.deque()
        self._buffer = b""
        self._discarding = False
        self._eof = False
        self._paused = False
        self.last_told: tuple[object, str] | None = None  # see ConsoleSeat.tell

    def read_line(self):
        """The next line (without its ``\\n``), or None once stdin has ended."""
        self._start()
        if self._lines:
            line = self._lines.popleft()
            self._maybe_resume()
            return self._ready(line)
        if self._eof:
            return self._ready(None)
        waiter = self._waiter()
        self._waiting.append(waiter)
        return waiter

    @property
    def interactive(self) -> bool:
        """True when stdin is a terminal (the person's typing is echoed by the terminal)."""
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

    # --- what a subclass provides -----------------------------------------------------------------

    def _start(self) -> None:
        raise NotImplementedError

    def _waiter(self):
        raise NotImplementedError

    def _ready(self, value):
        raise NotImplementedError

    def _fire(self, waiter, value) -> None:
        raise NotImplementedError

    def _pause_source(self) -> None:
        pass

    def _resume_source(self) -> None:
        pass

    # --- the lines ----------------------------------------------------------------------------------

    def _received(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            raw, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
            if self._discarding:
                self._discarding = False
                continue
            self._line(raw)
        if len(self._buffer) > self._max_line:
            # Too long: it reads as an empty line, and the rest of it is dropped.
            self._buffer = b""
            self._discarding = True
            self._line(b"")

    def _line(self, raw: bytes) -> None:
        if len(raw) > self._max_line:
            raw = b""
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        line = raw.decode("latin-1")
        if self._waiting:
            self._fire(self._waiting.popleft(), line)
            return
        self._lines.append(line)
        if len(self._lines) >= self._max_queued and not self._paused:
            self._paused = True
            self._pause_source()

    def _maybe_resume(self) -> None:
        if self._paused and len(self._lines) < self._max_queued // 2:
            self._paused = False
            self._resume_source()

    def _ended(self) -> None:
        if self._eof:
            return
        if self._buffer and not self._discarding:
            self._line(self._buffer)
        self._buffer = b""
        self._eof = True
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter in waiting:
            self._fire(waiter, None)


class ConsoleInput(ConsoleLines):
    """The console read on the Twisted reactor: ``read_line`` gives Deferreds."""

    def __init__(self, reactor, stdin_fd: int = 0, max_line: int = 65536, max_queued: int = 1000):
        super().__init__(stdin_fd, max_line, max_queued)
        self._reactor = reactor
        self._transport = None
        self._devnull: int | None = None

    def close(self) -> None:
        """Stop reading and give stdin back in blocking mode (it may be the shell's terminal)."""
        transport, self._transport = self._transport, None
        if transport is not None:
            try:
                transport.pauseProducing()
            except Exception:
                pass
            reader = getattr(transport, "_reader", None)
            if reader is not None:
                try:
                    reader.stopReading()
                except Exception:
                    pass
            try:
                from twisted.internet import fdesc

                fdesc.setBlocking(self._fd)
            except OSError:
                pass
        if self._devnull is not None:
            try:
                os.close(self._devnull)
            except OSError:
                pass
            self._devnull = None
        if not self._eof:
            self._ended()

    def _start(self) -> None:
        if self._transport is not None or self._eof:
            return
        from twisted.internet import stdio

        try:
            # StandardIO also wants an output descriptor and makes it non-blocking: give it
            # /dev/null so stdout (the result line) stays an ordinary blocking file.
            self._devnull = os.open(os.devnull, os.O_WRONLY)
            self._transport = stdio.StandardIO(
                _stdin_protocol(self), stdin=self._fd, stdout=self._devnull, reactor=self._reactor
            )
        except OSError:
            self._ended()

    def _waiter(self):
        from twisted.internet import defer

        return defer.Deferred()

    def _ready(self, value):
        from twisted.internet import defer

        return defer.succeed(value)

    def _fire(self, waiter, value) -> None:
        waiter.callback(value)

    def _pause_source(self) -> None:
        if self._transport is not None:
            self._transport.pauseProducing()

    def _resume_source(self) -> None:
        if self._transport is not None:
            self._transport.resumeProducing()


def _stdin_protocol(owner: ConsoleInput):
    """A Protocol handing the bytes read from stdin to ``owner``."""
    from twisted.internet import protocol

    class _StdinLines(protocol.Protocol):
        def dataReceived(self, data: bytes) -> None:
            owner._received(data)

        def connectionLost(self, reason=protocol.connectionDone) -> None:
            owner._ended()

    return _StdinLines()


def format_view(rows: list[str]) -> str:
    """A board view with x and y coordinates, as a person reads it."""
    lines = ["   " + "".join(str(x) for x in range(len(rows[0]) if rows else 0))]
    lines += [f"{y:2d} {row}" for y, row in enumerate(rows)]
    return "\n".join(lines) + "\n"


def _setup_valid(colour: str, lines: list[str]) -> bool:
    side = 0 if colour == "RED" else 1
    return place_setup(Board(), side, lines)


class ConsoleSeat:
    """A person on the console: asked on stderr, answering on stdin, never timed out or paused.

    ``console`` is the process's one console reader (a ``ConsoleLines``); ``write`` takes the text
    shown to the person (stderr by default). ``setup`` and ``move`` return coroutines that await
    the console, so the seat runs on whatever drives its console.
    """

    human = True
    valid = True
    name = "human"

    def __init__(self, argument: str, console: ConsoleLines, write: Callable[[str], None] | None = None):
        self.argument = argument
        self._console = console
        write = write if write is not None else stream_writer(sys.stderr)

        def say(text: str) -> None:
            console.last_told = None
            write(text)

        self._raw_write = write
        self._write = say
        self.colour = "RED"
        self._move_help_shown = False
        self._gone = False

    def setup(self, colour: str, opponent: str):
        self.colour = colour
        return self._setup(colour, opponent)

    async def _setup(self, colour: str, opponent: str) -> list[str]:
        ys = SETUP_ROWS[0 if colour == "RED" else 1]
        default = DEFAULT_SETUPS[colour]
        where = "top" if colour == "RED" else "bottom"
        self._write(
            f"{colour} {opponent} 10 10\n"
            f"You are {colour} and occupy the {where} 4 rows of the board (y = {ys[0]}..{ys[-1]}); "
            f"your opponent is {opponent}.\n"
            f"Enter your setup: 4 rows of 10 characters separated by spaces or newlines, the row y={ys[0]} first.\n"
            f"Place all 40 pieces: {_PIECES}.\n"
            f'Or enter "DEFAULT" for: {" ".join(default)}\n'
        )
        while True:
            words: list[str] = []
            while len(words) < 4:
                line = await self._console.read_line()
                if line is None:
                    return words  # stdin ended: an invalid setup
                new = line.split()
                if not words and new[:1] == ["DEFAULT"]:
                    words = list(default)
                    break
                words.extend(new)
            words = words[:4]
            if _setup_valid(colour, words):
                return words
            self._write(f"Invalid setup: {' '.join(words)} <- Please try again!\n")

    def start(self) -> None:
        self._write("START\n")

    def move(self, view: list[str], acceptable: Callable[[str], bool]):
        return self._move(view, acceptable)

    async def _move(self, view: list[str], acceptable: Callable[[str], bool]) -> str | None:
        self._write(f"{self.colour} ({self.argument}) to move:\n" + format_view(view))
        if not self._move_help_shown:
            self._move_help_shown = True
            self._write(
                "Enter your move as X Y DIRECTION [MULTIPLIER]: X, Y the coordinates of the piece to move, "
                "DIRECTION one of UP, DOWN, LEFT, RIGHT, MULTIPLIER (scouts only) the number of squares; "
                "or SURRENDER.\n"
            )
        while True:
            self._write("Your move: ")
            line = await self._console.read_line()
            if line is None:
                self._write("\n")
                return None
            reply = line.strip()
            if not self._console.interactive:
                self._write(line + "\n")  # a transcript from piped input reads like a session
            if acceptable(reply):
                return reply
            self._write(f"Bad move: '{reply}' <- Please try again!\n")

    def tell(self, line: str) -> None:
        self._once(line)

    def _once(self, line: str) -> None:
        # Two people share one console: a line just shown for the other seat is not repeated.
        told = self._console.last_told
        if told is not None and told[0] is not self and told[1] == line:
            self._console.last_told = None
            return
        self._raw_write(line + "\n")
        self._console.last_told = (self, line)

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def quit(self, result_line: str | None) -> Ready:
        if result_line is not None and not self._gone:
            self._once(f"QUIT {result_line}")
        self._gone = True
        return Ready(None)

    def kill(self) -> Ready:
        """A person is not killed: they are simply no longer asked."""
        self._gone = True
        return Ready(None)


__all__ = ["DEFAULT_SETUPS", "ConsoleInput", "ConsoleLines", "ConsoleSeat", "format_view", "stream_writer"]
