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
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from zope.interface import Interface, implementer

from gamed.outcome import outcome_text, points
from gamed.textline import WriteBatch

if TYPE_CHECKING:
    from gamed.records import Seat


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



# --- live tables for the web (issue 7) ----------------------------------------------------------


class ILiveViewer(Interface):
    """Someone watching a live table or the list of games (a server-sent event stream)."""

    def deliver(data: bytes) -> None:
        """One or more encoded events. Must never block or raise."""

    def end() -> None:
        """The stream is over (the table ended, or the daemon stops): close it."""


# The reason of every match a shutdown ended (kept unrated in the records).
SHUTDOWN = "shutdown"


def event_frame(event: str, data: object) -> bytes:
    """One server-sent event: ``event: <name>`` and the JSON ``data`` on one line."""
    return b"event: " + event.encode("ascii") + b"\ndata: " + _json(data) + b"\n\n"


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _players(seats: Sequence[Seat], away: dict[int, float | None] | None = None) -> list[dict]:
    """The live table's players as the API shows them: seat, name, kind ("guest" for a guest),
    whether an account sat there, and for a seat whose player dropped ``away`` true and
    ``back_by`` (the unix time its grace ends)."""
    out = []
    for s in seats:
        player = {"seat": s.seat, "name": s.name, "kind": s.kind, "account": s.account_id is not None}
        if away and s.seat in away:
            player.update(away=True, back_by=away[s.seat])
        out.append(player)
    return out


def reason_kind(reason: str | None) -> str:
    """An end reason as a metrics label: its first word, lower case (``"timeout"`` of ``"timeout:
    alice did not move"``), letters only; ``"unknown"`` when there is none."""
    word = (reason or "").strip().lower().replace(" ", "_").split(":", 1)[0][:32]
    word = "".join(ch for ch in word if ch.isalnum() or ch == "_")
    return word or "unknown"


class LiveTable:
    """One running game as spectators see it: seats, options, every move with the state after it,
    clocks, and at the end the result. Viewers get a snapshot, then each move, then the end; every
    event is encoded once, whatever the number of viewers. ``finish`` also stores the match."""

    _log = Logger()

    def __init__(
        self,
        hub: LiveHub,
        table_id: str,
        game: str,
        seats: list[Seat],
        options: dict,
        state: dict,
        clocks: dict | None,
        key: str | None = None,
    ):
        self.hub = hub
        self.id = table_id
        self.key = key  # the lobby table it was seated from (a hosted game's reservation), or None
        self.game = game
        self.seats = tuple(seats)
        self.options = dict(options)
        self.initial_state = state
        self.state = state
        self.clocks = _clocks(clocks)
        self.to_move: int | None = state.get("to_move") if isinstance(state, dict) else None
        self.moves: list = []  # gamed.records.Move, in order (the first hub.max_moves of them)
        self.turn = 0  # moves made, kept or not
        self.not_kept = 0  # moves past hub.max_moves: streamed live, not kept for the record
        self.started = hub.clock.seconds()
        self.ended: float | None = None
        self.result: dict | None = None
        self.outcome: str | None = None  # the result in words, once over ("alice won 40–32")
        self.match_id: int | None = None
        self.closed = False  # the end event has been sent; nothing more will follow
        self.viewers: set[ILiveViewer] = set()
        self._away: dict[int, float | None] = {}  # seat -> when its grace ends, while away
        self._players = _players(self.seats)

    # --- what the game reports -------------------------------------------------------------

    def moved(
        self,
        seat: int | None,
        move: str,
        state: dict,
        to_move: int | None,
        clocks: dict | None = None,
        timing: dict | None = None,
    ) -> None:
        """One move (or one resolved simultaneous turn) and the spectator state after it.

        ``clocks`` is {seat: seconds left on its clock} after the move; ``timing`` what the move
        cost each seat that played it ({seat: Turn.clock_entry(...)}: used, left, credit)."""
        if self.result is not None:
            return
        self.hub.moves[self.game] += 1
        self.turn += 1
        record = self.hub.records.Move(
            self.turn, seat, move, round(self.hub.clock.seconds() - self.started, 3), state,
            None if not timing else {str(k): v for k, v in timing.items()},
        )
        if len(self.moves) < self.hub.max_moves:
            self.moves.append(record)
        else:  # an endless game must not grow without bound: keep counting, stop keeping
            self.not_kept += 1
        self.state = state
        self.to_move = to_move
        if clocks is not None:
            self.clocks = _clocks(clocks)
        if self.viewers:
            frame = event_frame(
                "move",
                {
                    "n": record.n,
                    "seat": seat,
                    "move": move,
                    "t": record.t,
                    "state": state,
                    "turn": record.n,
                    "to_move": to_move,
                    "clocks": self.clocks,
                    "clock": record.clock,
                },
            )
            for viewer in list(self.viewers):
                viewer.deliver(frame)
        self.hub.changed()

    def seat_taken(self, seat: Seat) -> None:
        """Another player took over ``seat.seat`` during the game (a dropped seat taken by the
        next one): the table, the viewers (a fresh snapshot) and the stored match show its name."""
        if self.result is not None:
            return
        self.seats = tuple(seat if s.seat == seat.seat else s for s in self.seats)
        self._players_changed()

    def presence(self, seat: int, back_by: float | None, away: bool = True) -> None:
        """``seat``'s player dropped (``away``; its grace ends at unix time ``back_by``) or is
        back (``away`` False): the table and its viewers (a fresh snapshot) show it."""
        if self.result is not None:
            return
        if away:
            self._away[seat] = None if back_by is None else round(back_by, 3)
        else:
            self._away.pop(seat, None)
        self._players_changed()

    def _players_changed(self) -> None:
        """Who sits where changed: the table and its viewers (a fresh snapshot) show it."""
        self._players = _players(self.seats, self._away)
        if self.viewers:
            frame = event_frame("snapshot", self.detail())
            for viewer in list(self.viewers):
                viewer.deliver(frame)
        self.hub.changed()

    def finish(
        self,
        scores: tuple[float, ...],
        reason: str,
        state: dict | None = None,
        rated: bool = True,
        extra: dict | None = None,
        seat_reasons: dict[int, str] | None = None,
    ) -> None:
        """The game is over: tell the viewers once the match is stored (or at once without a store),
        then close their streams. Building and storing the record never raises into the game.
        ``seat_reasons``: why each seat that left before the end left (a game of more than two
        seats, where the end's ``reason`` is about the last ones out); the hosted-game runner
        blames a seat by its own reason."""
        if self.result is not None:
            return
        if state is not None:
            self.state = state
        self.to_move = None
        self.clocks = {seat: None for seat in self.clocks}  # nobody's clock runs any more
        self.ended = self.hub.clock.seconds()
        self.result = {"scores": list(scores), "reason": reason}
        self.hub.finished[(self.game, reason_kind(reason))] += 1
        if seat_reasons:
            self.result["seat_reasons"] = dict(seat_reasons)
        detail = (extra or {}).get("detail")
        self.outcome = outcome_text(
            self.game,
            [s.name for s in self.seats],
            scores,
            reason,
            points=points(self.game, state),
            detail=detail if isinstance(detail, str) else None,
            rated=rated,
        )
        try:
            record = self.hub.records.MatchRecord(
                game=self.game,
                started=self.started,
                ended=self.ended,
                seats=self.seats,
                options=self.options,
                moves=tuple(self.moves),
                scores=tuple(scores),
                reason=reason,
                rated=rated,
                initial_state=self.initial_state,
                # The end may show more than the last move did (hidden units revealed, a game
                # ended by a forfeit or the clock): a replay ends on it.
                extra={
                    **(extra or {}),
                    **({"final_state": state} if state is not None else {}),
                    **({"moves_not_kept": self.not_kept} if self.not_kept else {}),
                },
                table=self.id,
            )
        except Exception:
            self._log.failure("table {table}: cannot build the match record", table=self.id)
            record = None
        self.hub._ended(self)
        if self.hub.store is None or record is None:
            self._close()
            return
        d = defer.maybeDeferred(self.hub.store.store, record)
        d.addCallback(self._stored)
        d.addErrback(self._not_stored)
        d.addBoth(lambda _: self._close())

    def _stored(self, match_id: int) -> None:
        self.match_id = match_id
        self._log.info("table {table} stored as match {match}", table=self.id, match=match_id)
        self.hub._match_stored(self)

    def _not_stored(self, failure) -> None:
        self._log.failure("table {table}: the match could not be stored", failure, table=self.id)

    def _close(self) -> None:
        self.closed = True
        self.hub._watched(self)
        frame = event_frame("end", self.end_data())
        for viewer in list(self.viewers):
            viewer.deliver(frame)
            viewer.end()
        self.viewers.clear()
        self.hub.changed()

    # --- viewers -----------------------------------------------------------------------------

    def add(self, viewer: ILiveViewer) -> None:
        """Show the table to ``viewer``: a snapshot at once, then the moves (or the end, if over)."""
        if self.closed:
            viewer.deliver(event_frame("snapshot", self.detail()))
            viewer.deliver(event_frame("end", self.end_data()))
            viewer.end()
            return
        self.viewers.add(viewer)  # first, so that the snapshot counts this viewer too
        viewer.deliver(event_frame("snapshot", self.detail()))
        self.hub.changed()

    def remove(self, viewer: ILiveViewer) -> None:
        if viewer in self.viewers:
            self.viewers.discard(viewer)
            self.hub.changed()

    # --- JSON views --------------------------------------------------------------------------

    def summary(self) -> dict:
        """The TableSummary of the HTTP API."""
        return {
            "id": self.id,
            "game": self.game,
            "players": self._players,
            "turn": self.turn,
            "to_move": self.to_move,
            "spectators": len(self.viewers),
            "started": self.started,
        }

    def detail(self) -> dict:
        """The Table of the HTTP API: the summary, options, states, moves, clocks and result."""
        out = self.summary()
        out.update(
            options=self.options,
            state=self.state,
            initial_state=self.initial_state,
            moves=[{"n": m.n, "seat": m.seat, "move": m.move, "t": m.t, "clock": m.clock} for m in self.moves],
            clocks=self.clocks,
            result=self.result,
            outcome=self.outcome,
        )
        return out

    def end_data(self) -> dict:
        return {"result": self.result, "outcome": self.outcome, "state": self.state, "match_id": self.match_id}


def _clocks(clocks: dict | None) -> dict:
    if not clocks:
        return {}
    return {str(seat): (None if left is None else round(left, 3)) for seat, left in clocks.items()}


class LiveHub:
    """Every live table of the daemon, and the streams watching the list of games. One per daemon,
    given to every game service; ``store`` (a RecordStore) keeps finished matches when set."""

    _log = Logger()

    def __init__(
        self, clock: IReactorTime, store=None, linger: float = 60.0, coalesce: float = 0.5, max_moves: int = 20_000
    ):
        # Imported here: the text observers above must not depend on the records module.
        from gamed import records

        self.records = records
        self.clock = clock
        self.store = store
        self.linger = linger
        self.coalesce = coalesce
        self.max_moves = max_moves  # moves kept per table (with their states) for late viewers and the record
        self.tables: dict[str, LiveTable] = {}  # running tables by id, oldest first
        # What the metrics count (gamed.metrics): moves per game type, and finished games per
        # game type and end reason (its first word: "timeout", "end", "resign", ...).
        self.moves: collections.Counter[str] = collections.Counter()
        self.finished: collections.Counter[tuple[str, str]] = collections.Counter()
        self.ended: dict[str, LiveTable] = {}  # finished tables, kept for ``linger`` seconds
        self.list_viewers: set[ILiveViewer] = set()
        self._numbers: dict[str, int] = {}
        self._games_call: IDelayedCall | None = None
        self._games_sent = float("-inf")
        self._linger_calls: dict[str, IDelayedCall] = {}
        self._stopping: list[defer.Deferred] = []  # one per game service that is stopping
        self._watchers: dict[str, Callable[[LiveTable], None]] = {}

    def open(
        self, game: str, seats: list[Seat], options: dict, state: dict, clocks: dict | None = None,
        key: str | None = None,
    ) -> LiveTable:
        """A new running table of ``game`` (ids count per game: ``kalaha-1``, ``kalaha-2``...);
        ``key``: the lobby table it was seated from (what ``watch`` waits for)."""
        number = self._numbers.get(game, 0) + 1
        self._numbers[game] = number
        table = LiveTable(self, f"{game}-{number}", game, seats, options, state, clocks, key)
        self.tables[table.id] = table
        self.changed()
        return table

    def table(self, table_id: str) -> LiveTable | None:
        """A running table, or one that ended less than ``linger`` seconds ago."""
        return self.tables.get(table_id) or self.ended.get(table_id)

    def games(self) -> dict:
        return {"games": [t.summary() for t in self.tables.values()]}

    def recent_matches(self, limit: int = 20):
        """Deferred: ``{"matches": [...]}``, newest first, without the matches aborted before their
        first move (empty without a store): the front page's list."""
        if self.store is None:
            return defer.succeed({"matches": []})
        d = defer.maybeDeferred(self.store.recent, limit, played=True)
        d.addCallback(lambda matches: {"matches": matches})
        return d

    # --- the list of games ---------------------------------------------------------------------

    def add_list_viewer(self, viewer: ILiveViewer) -> None:
        """Stream the list of games to ``viewer``: at once, then whenever it changes (coalesced)."""
        self.list_viewers.add(viewer)
        viewer.deliver(event_frame("games", self.games()))

    def remove_list_viewer(self, viewer: ILiveViewer) -> None:
        self.list_viewers.discard(viewer)

    def changed(self) -> None:
        """The list of games (turns, spectators, tables) changed: send it within ``coalesce``."""
        if not self.list_viewers or self._games_call is not None:
            return
        delay = max(0.0, self._games_sent + self.coalesce - self.clock.seconds())
        self._games_call = self.clock.callLater(delay, self._send_games)

    def _send_games(self) -> None:
        self._games_call = None
        self._games_sent = self.clock.seconds()
        if self.list_viewers:
            frame = event_frame("games", self.games())
            for viewer in list(self.list_viewers):
                viewer.deliver(frame)

    def _match_stored(self, table: LiveTable) -> None:
        if not self.list_viewers:
            return
        d = self.recent_matches()
        d.addCallback(self._send_matches)
        d.addErrback(lambda f: self._log.failure("cannot list the recent matches", f))

    def _send_matches(self, matches: dict) -> None:
        frame = event_frame("matches", matches)
        for viewer in list(self.list_viewers):
            viewer.deliver(frame)

    # --- ends ----------------------------------------------------------------------------------

    def watch(self, key: str, ended: Callable[[LiveTable], None]) -> None:
        """Call ``ended(table)`` once the table seated from lobby table ``key`` is over and its
        match stored (or failed to be): how the hosted-game runner learns a result."""
        self._watchers[key] = ended

    def unwatch(self, key: str) -> None:
        self._watchers.pop(key, None)

    def _watched(self, table: LiveTable) -> None:
        ended = self._watchers.pop(table.key, None) if table.key is not None else None
        if ended is not None:
            try:
                ended(table)
            except Exception:
                self._log.failure("table {table}: its watcher failed", table=table.id)

    def _ended(self, table: LiveTable) -> None:
        self.tables.pop(table.id, None)
        self.ended[table.id] = table
        self._linger_calls[table.id] = self.clock.callLater(self.linger, self._forget, table.id)
        self.changed()

    def _forget(self, table_id: str) -> None:
        self._linger_calls.pop(table_id, None)
        self.ended.pop(table_id, None)

    def service_stopping(self, done: defer.Deferred) -> None:
        """A game service is stopping; ``done`` fires once its last games have ended (and have
        been reported here). ``stopped`` waits for it."""
        ended: defer.Deferred = defer.Deferred()
        self._stopping.append(ended)

        def fire(result):
            if not ended.called:
                ended.callback(None)
            return result

        done.addBoth(fire)

    def stopped(self, timeout: float) -> defer.Deferred:
        """The daemon stops: wait until every stopping game service has ended its games (at most
        ``timeout`` seconds), then end each table still running as interrupted by the shutdown
        (reason ``shutdown``, not rated, logged), so that no game vanishes from the records. The
        stores it starts are in flight when this fires (``RecordStore.close`` waits for them)."""
        waiting, self._stopping = self._stopping, []
        d = defer.DeferredList(waiting, consumeErrors=True)
        d.addTimeout(timeout, self.clock)
        d.addErrback(lambda f: self._log.warn("stopping games took over {timeout} s; ending their tables", timeout=timeout))
        d.addCallback(lambda _: self._interrupt_running())
        return d

    def _interrupt_running(self) -> None:
        for table in list(self.tables.values()):
            if table.result is not None:
                continue
            self._log.info(
                "table {table} ({players}) interrupted by the shutdown after {moves} moves",
                table=table.id,
                players=", ".join(f"seat {s.seat} {s.name}" for s in table.seats),
                moves=table.turn,
            )
            table.finish(tuple(0.0 for _ in table.seats), SHUTDOWN, rated=False)

    def close(self) -> None:
        """The daemon stops: end every stream and cancel the timers."""
        for call in [self._games_call, *self._linger_calls.values()]:
            if call is not None and call.active():
                call.cancel()
        self._games_call = None
        self._linger_calls.clear()
        for viewer in list(self.list_viewers):
            viewer.end()
        self.list_viewers.clear()
        for table in [*self.tables.values(), *self.ended.values()]:
            for viewer in list(table.viewers):
                viewer.end()
            table.viewers.clear()
