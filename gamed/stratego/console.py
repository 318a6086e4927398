"""A person at the console as one side of a UCC Stratego match (ucc-stratego §5.8).

Everything the person is told (prompts, ``START``, confirmations, ``QUIT``, their own board view)
goes to stderr, so stdout keeps only the result line. Answers are lines read from stdin through
one ``ConsoleInput`` shared by every console user of the process: two humans and the ``-t``
operator prompt take turns on the same reader and never steal each other's lines.
"""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Callable

from twisted.internet import defer, protocol
from twisted.internet.defer import Deferred
from zope.interface import implementer

from gamed.stratego.referee import SETUP_ROWS, ISeat, place_setup
from gamed.stratego.rules import Board

# The DEFAULT setups of §5.8, in the order the side sends its rows.
DEFAULT_SETUPS = {
    "RED": ("FB8sB479B8", "BB31555583", "6724898974", "967B669999"),
    "BLUE": ("967B669999", "6724898974", "BB31555583", "FB8sB479B8"),
}

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


class _StdinLines(protocol.Protocol):
    """Hands the bytes read from stdin to its ``ConsoleInput``."""

    def __init__(self, owner: ConsoleInput):
        self._owner = owner

    def dataReceived(self, data: bytes) -> None:
        self._owner._received(data)

    def connectionLost(self, reason=protocol.connectionDone) -> None:
        self._owner._ended()


class ConsoleInput:
    """Lines from stdin, handed out in order to whoever asks (``read_line``).

    stdin is left alone until the first ``read_line``, so a match without a person never reads
    (or waits for) the terminal. Lines are split on ``\\n`` and decoded as latin-1; a trailing
    ``\\r`` is dropped. A line longer than ``max_line`` bytes is read as an empty line. Lines
    typed ahead are kept; past ``max_queued`` of them the reader pauses until some are used.
    """

    def __init__(self, reactor, stdin_fd: int = 0, max_line: int = 65536, max_queued: int = 1000):
        self._reactor = reactor
        self._fd = stdin_fd
        self._max_line = max_line
        self._max_queued = max_queued
        self._lines: collections.deque[str] = collections.deque()
        self._waiting: collections.deque[Deferred] = collections.deque()
        self._buffer = b""
        self._discarding = False
        self._eof = False
        self._transport = None
        self._devnull: int | None = None
        self._paused = False
        self.last_told: tuple[object, str] | None = None  # see ConsoleSeat.tell

    def read_line(self) -> Deferred:
        """The next line (without its ``\\n``), or None once stdin has ended."""
        self._start()
        if self._lines:
            line = self._lines.popleft()
            self._maybe_resume()
            return defer.succeed(line)
        if self._eof:
            return defer.succeed(None)
        d: Deferred = Deferred()
        self._waiting.append(d)
        return d

    @property
    def interactive(self) -> bool:
        """True when stdin is a terminal (the person's typing is echoed by the terminal)."""
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

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
                _StdinLines(self), stdin=self._fd, stdout=self._devnull, reactor=self._reactor
            )
        except OSError:
            self._ended()

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
            self._waiting.popleft().callback(line)
            return
        self._lines.append(line)
        if len(self._lines) >= self._max_queued and self._transport is not None and not self._paused:
            self._paused = True
            self._transport.pauseProducing()

    def _maybe_resume(self) -> None:
        if self._paused and len(self._lines) < self._max_queued // 2 and self._transport is not None:
            self._paused = False
            self._transport.resumeProducing()

    def _ended(self) -> None:
        if self._eof:
            return
        if self._buffer and not self._discarding:
            self._line(self._buffer)
        self._buffer = b""
        self._eof = True
        waiting, self._waiting = self._waiting, collections.deque()
        for d in waiting:
            d.callback(None)


def format_view(rows: list[str]) -> str:
    """A board view with x and y coordinates, as a person reads it."""
    lines = ["   " + "".join(str(x) for x in range(len(rows[0]) if rows else 0))]
    lines += [f"{y:2d} {row}" for y, row in enumerate(rows)]
    return "\n".join(lines) + "\n"


def _setup_valid(colour: str, lines: list[str]) -> bool:
    side = 0 if colour == "RED" else 1
    return place_setup(Board(), side, lines)


@implementer(ISeat)
class ConsoleSeat:
    """A person on the console: asked on stderr, answering on stdin, never timed out or paused.

    ``console`` is the process's one ``ConsoleInput``; ``write`` takes the text shown to the
    person (stderr by default).
    """

    human = True
    valid = True
    name = "human"

    def __init__(self, argument: str, console: ConsoleInput, write: Callable[[str], None] | None = None):
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

    def setup(self, colour: str, opponent: str) -> Deferred:
        self.colour = colour
        return defer.ensureDeferred(self._setup(colour, opponent))

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

    def move(self, view: list[str], acceptable: Callable[[str], bool]) -> Deferred:
        return defer.ensureDeferred(self._move(view, acceptable))

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

    def quit(self, result_line: str | None) -> Deferred:
        if result_line is not None and not self._gone:
            self._once(f"QUIT {result_line}")
        self._gone = True
        return defer.succeed(None)

    def kill(self) -> Deferred:
        """A person is not killed: they are simply no longer asked."""
        self._gone = True
        return defer.succeed(None)


__all__ = ["DEFAULT_SETUPS", "ConsoleInput", "ConsoleSeat", "format_view", "stream_writer"]
