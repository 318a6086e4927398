"""The UCC protocol between the referee and an AI program, sans I/O (ucc-stratego §2.5, §5.1).

What both program seats share, the daemon's ``process.ProgramSeat`` (on the reactor) and
gamed-stratego's ``pipes.PipeSeat`` (in its own loop): ``resolve_program`` turns a player argument
into the argv to start, ``encode`` turns text into the bytes an AI reads, and ``ReplyFramer``
cuts an AI's output into reply lines, whatever chunks it arrives in: on ``\\n`` only, bytes as
latin-1 (``\\r`` and tabs kept), early lines kept for the next ask, a line longer than the limit
read as one unintelligible reply (``OVERLONG``) and its rest dropped, pending bytes at EOF as the
last line. Pure: no Twisted, no clock. The dialog that uses them, the same for both seats, is
``dialog.ProgramDialog``.
"""

from __future__ import annotations

import collections

from gamed.children import executable_file

OUTPUT_LIMIT = 1 << 20  # bytes buffered towards one AI before it counts as gone (§5.1)
EARLY_LIMIT = 1 << 20  # budget for lines read ahead of their ask (bytes + LINE_COST per line)
LINE_COST = 64
OVERLONG = ""  # what the referee gets for a line longer than max_line: parse_reply rejects it
_WHITESPACE = frozenset(" \t\n\r\x0b\x0c")


def resolve_program(argument: str) -> list[str] | None:
    """The argv that §2.5 starts for a player argument, or None when the side is invalid.

    1. The whole argument names an executable file: run it with no arguments (spaces allowed).
    2. Else, if it contains whitespace: split it with POSIX shell quoting (no expansion); the first
       word must be an executable file.
    No PATH search: a bare name is relative to the current directory. ``argv[0]`` is the path as
    given.
    """
    if executable_file(argument):
        return [argument]
    if any(c in _WHITESPACE for c in argument):
        import shlex  # only for arguments with words (a tournament passes plain paths)

        try:
            words = shlex.split(argument)
        except ValueError:  # unbalanced quotes
            return None
        if words and executable_file(words[0]):
            return words
    return None


def encode(text: str) -> bytes:
    """Text for an AI as bytes: latin-1 (the bytes an AI sent come back unchanged)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:  # a player argument outside latin-1: send the file-system bytes
        return text.encode("utf-8", "surrogateescape")


class ReplyFramer:
    """One AI's output as reply lines (§5.1): ``feed(data)`` with each chunk read, ``end()`` at
    EOF, ``pop()`` for the next line (None when none is queued).

    ``cost`` is what the queued lines weigh against EARLY_LIMIT (their bytes plus LINE_COST
    each): past it, the seat stops reading until the lines are used. ``on_overlong()`` is called
    for each line longer than ``max_line``.
    """

    def __init__(self, max_line: int, on_overlong=None):
        self.max_line = max_line
        self.lines: collections.deque[str] = collections.deque()
        self.cost = 0
        self._partial = bytearray()
        self._discarding = False  # inside a line longer than max_line
        self._on_overlong = on_overlong

    def feed(self, data: bytes) -> None:
        """Queue the lines that ``data`` completes."""
        limit = self.max_line
        if data and not self._partial and not self._discarding and data.find(b"\n") == len(data) - 1 < limit + 1:
            self._queue(data[:-1].decode("latin-1"))  # the usual case: one whole reply
            return
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if self._discarding:
                self._discarding = False  # the end of an over-long line, already answered
            else:
                piece = data[start:nl]
                if len(self._partial) + len(piece) > limit:
                    self._partial.clear()
                    self._overlong()
                else:
                    if self._partial:
                        self._partial += piece
                        piece = bytes(self._partial)
                        self._partial.clear()
                    self._queue(piece.decode("latin-1"))
            start = nl + 1
        if start < len(data) and not self._discarding:
            if len(self._partial) + len(data) - start > limit:
                self._partial.clear()
                self._overlong()
                self._discarding = True
            else:
                self._partial += data[start:]

    def end(self) -> None:
        """EOF: pending bytes without ``\\n`` form the last line."""
        if self._partial and not self._discarding:
            self._queue(bytes(self._partial).decode("latin-1"))
        self._partial.clear()

    def pop(self) -> str | None:
        if not self.lines:
            return None
        line = self.lines.popleft()
        self.cost -= len(line) + LINE_COST
        return line

    def drop_partial(self) -> None:
        """A timeout: partial bytes present at the deadline are discarded (§5.7)."""
        self._partial.clear()

    def clear(self) -> None:
        """Forget everything (the match is over)."""
        self.lines.clear()
        self.cost = 0
        self._partial.clear()

    def _queue(self, line: str) -> None:
        self.lines.append(line)
        self.cost += len(line) + LINE_COST

    def _overlong(self) -> None:
        if self._on_overlong is not None:
            self._on_overlong()
        self._queue(OVERLONG)
