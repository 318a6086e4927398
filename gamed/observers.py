"""Fan-out of one game's event lines to any number of observers, never waiting for any of them.

A ``Channel`` belongs to one running game. The game publishes event lines and, after each turn's
resolution, a snapshot; the channel renders the lines gathered over a short interval (or one event, when the
interval is 0) to bytes once and hands the same bytes to every viewer. A viewer that joins late gets the game's introduction (map, teams), the last
snapshot and the events since it, so it can draw the game at once. With a lag of N turns, events
are held back until N more turns have been resolved (observers of a competition cannot help a
player); everything is released when the game ends.

Viewers implement ``IViewer``; ``BoundedOutput`` gives a text-line protocol the bounded buffer
that drops a viewer who does not read instead of letting its backlog grow.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from zope.interface import Interface, implementer

from gamed.textline import WriteBatch


class IViewer(Interface):
    """Someone watching a channel."""

    def deliver(data: bytes) -> None:
        """Event lines, already encoded, CRLF-terminated. Must never block or raise."""


class Channel:
    """One game's event stream: ``publish`` events, ``snapshot`` after every resolution, ``finish``
    at the end. Lines are gathered for ``interval`` seconds on ``clock`` before they are written
    (with no interval: per ``WriteBatch``, one write per event); the end is written at once."""

    def __init__(
        self,
        intro: Iterable[str],
        first_snapshot: Iterable[str],
        batch: WriteBatch,
        lag: int = 0,
        clock: IReactorTime | None = None,
        interval: float = 0.0,
    ):
        self.intro = list(intro)
        self.lag = lag
        self.viewers: set[IViewer] = set()
        self.finished = False
        self._batch = batch
        self._last_snapshot = list(first_snapshot)
        self._segment: list[str] = []  # lines since the last snapshot that viewers may see
        # Lagged turns, oldest first: (events, snapshot); the snapshot is empty while the turn runs.
        self._held: collections.deque[tuple[list[str], list[str]]] = collections.deque()
        self._pending: list[str] = []
        self._clock = clock
        self.interval = interval if clock is not None else 0.0
        self._call: IDelayedCall | None = None

    def add(self, viewer: IViewer) -> None:
        """Start showing the game to ``viewer``: introduction, last snapshot, events since."""
        self.flush()
        self.viewers.add(viewer)
        viewer.deliver(_encode(self.intro + self._last_snapshot + self._segment))

    def remove(self, viewer: IViewer) -> None:
        self.viewers.discard(viewer)

    def publish(self, lines: Iterable[str]) -> None:
        """Live events of the running turn."""
        lines = list(lines)
        if self.lag:
            self._open_segment()[0].extend(lines)
            return
        self._segment.extend(lines)
        self._send(lines)

    def snapshot(self, lines: Iterable[str]) -> None:
        """The state after a turn's resolution; it ends that turn's events."""
        lines = list(lines)
        if self.lag:
            self._open_segment()[1].extend(lines)
            while len(self._held) > self.lag:
                self._release()
            return
        self._last_snapshot, self._segment = lines, []
        self._send(lines)

    def finish(self, lines: Iterable[str]) -> None:
        """The game is over: release anything held back, then the final lines."""
        while self._held:
            self._release()
        self._send(list(lines))
        self.flush()
        self.finished = True

    def flush(self) -> None:
        """Write the lines gathered so far to every viewer."""
        if self._call is not None:
            if self._call.active():
                self._call.cancel()
            self._call = None
        if not self._pending:
            return
        data = _encode(self._pending)
        self._pending = []
        for viewer in list(self.viewers):
            viewer.deliver(data)

    def _open_segment(self) -> tuple[list[str], list[str]]:
        """The held (events, snapshot) of the turn being played; a snapshot closes a segment."""
        if not self._held or self._held[-1][1]:
            self._held.append(([], []))
        return self._held[-1]

    def _release(self) -> None:
        events, snap = self._held.popleft()
        self._send(events + snap)
        if snap:
            self._last_snapshot, self._segment = snap, []
        else:
            self._segment.extend(events)

    def _send(self, lines: list[str]) -> None:
        if not self.viewers or not lines:
            return
        first = not self._pending
        self._pending.extend(lines)
        if self.interval:
            # Gather for a moment: a write per viewer per interval however fast the game plays,
            # so a hundred viewers cost the game little.
            if self._call is None:
                self._call = self._clock.callLater(self.interval, self.flush)
        elif not self._batch.depth:
            self.flush()
        elif first:
            self._batch.dirty.append(self)


def _encode(lines: list[str]) -> bytes:
    return ("\r\n".join(lines) + "\r\n").encode("ascii", "replace") if lines else b""


@implementer(IViewer)
class BoundedOutput:
    """Mixin for a ``TextLineProtocol`` viewer: ``deliver`` writes at once while the client keeps up;
    while the transport's buffer is full (it paused us as its producer) data is held up to
    ``limit`` bytes, and a viewer that would need more is dropped with a logged reason."""

    _log = Logger()
    output_limit = 256 * 1024
    _held_out: list[bytes] | None = None
    _held_bytes = 0
    _output_paused = False
    dropped = False

    def deliver(self, data: bytes) -> None:
        if self.closing or self.transport is None or not data:
            return
        if self._pending:
            self.flush()  # lines sent to this viewer earlier in the same event go first
        if not self._output_paused:
            self.transport.write(data)
            return
        self._held_bytes += len(data)
        if self._held_bytes > self.output_limit:
            self.dropped = True
            self._held_out = None
            self._log.info(
                "observer {peer} dropped: more than {limit} bytes waiting to be read", peer=self.peer, limit=self.output_limit
            )
            self.closing = True
            self.transport.abortConnection()
            return
        if self._held_out is None:
            self._held_out = []
        self._held_out.append(data)

    def _write(self, lines) -> None:
        # The viewer's own replies take the same bounded path as the events.
        self.deliver(_encode(list(lines)))

    def pauseProducing(self) -> None:  # noqa: N802
        self._output_paused = True
        super().pauseProducing()

    def resumeProducing(self) -> None:  # noqa: N802
        self._output_paused = False
        held, self._held_out, self._held_bytes = self._held_out, None, 0
        if held and not self.closing:
            self.transport.write(b"".join(held))
        super().resumeProducing()

