"""The per-connection output budget of every game port, whatever its framing (lines or binary).

A protocol with ``BackPressure`` is its transport's streaming producer. While the client does not
read our replies (the transport's write buffer is full and it paused us) the client's further
input is held unhandled; one that sends more than ``MAX_HELD`` bytes meanwhile is cut off, and one
that would have more than ``MAX_UNREAD`` bytes written to it (by other players' events) while it
does not read is cut off too (protocols that count their writes with ``_check_written``: Combat),
each with a logged reason. Other pauses (a line rate, the end of a
connection's share of one reactor turn) also stop reading from the socket, so that nothing is held
for them. ``TextLineProtocol`` and ``CombatProtocol`` both build on it.

A connection that has more input waiting than one turn's share (a flood) waits for its next share
in the daemon's one ``TurnQueue``: however many connections flood, together they get
``TurnQueue.per_turn`` shares a reactor turn, served in turn, so they cannot take more of the
reactor than a few well-behaved players, whose lines are handled as they arrive.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable

from twisted.internet.interfaces import IPushProducer, IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

# Bytes a paused connection may hold unprocessed (a little more than one 64 KiB read) before it
# counts as a client that floods us without reading our replies, and is cut off.
MAX_HELD = 1 << 17

# Bytes that may be written to a connection after its transport paused us (on top of the
# transport's own 64 KiB buffer) before it counts as a client that does not read at all.
MAX_UNREAD = 1 << 18

# Seconds a client may leave its replies unread while input of its own waits unhandled: one that
# sends on without reading may not get to MAX_HELD (its own sending can stall once both
# directions are full), so it is also cut off after this long.
UNREAD_SECONDS = 10.0


class _Waiting:
    """A connection's place in the ``TurnQueue`` (an ``IDelayedCall``-like handle)."""

    __slots__ = ("call", "queue")

    def __init__(self, call: Callable[[int], None], queue: TurnQueue):
        self.call: Callable[[int], None] | None = call
        self.queue = queue

    def active(self) -> bool:
        return self.call is not None

    def cancel(self) -> None:
        if self.call is not None:
            self.call = None
            self.queue._live -= 1


class TurnQueue:
    """The connections of one reactor that wait for their next share of it, oldest first. Each
    reactor turn (``callLater(0)``) serves at most ``per_turn`` of them, one share each; a
    connection that still has input waiting after its share queues again, at the end."""

    per_turn = 8
    interval = 0.001  # seconds between two turns of a queue that stays busy
    _queues: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __init__(self, clock: IReactorTime):
        self.clock = clock
        self._waiting: deque[_Waiting] = deque()
        self._call = None
        self._serving = False
        self._live = 0  # entries not cancelled nor served (counted, not looked for, at each turn)

    @classmethod
    def of(cls, clock: IReactorTime) -> TurnQueue:
        """The queue of ``clock`` (the reactor, or a test's ``task.Clock``)."""
        queue = cls._queues.get(clock)
        if queue is None:
            queue = cls._queues[clock] = cls(clock)
        return queue

    def wait(self, call: Callable[[int], None]) -> _Waiting:
        """Call ``call(lines)`` at this connection's next share, of ``lines`` lines (messages);
        the handle cancels it."""
        waiting = _Waiting(call, self)
        self._waiting.append(waiting)
        self._live += 1
        if self._call is None and not self._serving:
            self._call = self.clock.callLater(0, self._serve)
        return waiting

    def __len__(self) -> int:
        return self._live

    def _serve(self) -> None:
        self._call = None
        served, waiting = 0, self._waiting
        # per_turn shares of one line: one each for the first per_turn waiting, or, with fewer
        # waiting, the turn's lines divided among them
        share = max(1, self.per_turn // max(1, len(self)))
        self._serving = True
        try:
            for _ in range(len(waiting)):  # those queued again meanwhile wait for the next turn
                if served >= self.per_turn:
                    break
                entry = waiting.popleft()
                call, entry.call = entry.call, None
                if call is None:  # cancelled: the connection is gone
                    continue
                self._live -= 1
                served += share
                call(share)
        finally:
            self._serving = False
        while waiting and waiting[0].call is None:
            waiting.popleft()
        if waiting and self._call is None:
            # Still busy: the next shares come after a pause, so that floods together get at
            # most per_turn / interval shares a second, however idle the reactor is otherwise.
            self._call = self.clock.callLater(self.interval, self._serve)


@implementer(IPushProducer)
class BackPressure:
    """Mixin for a ``Protocol`` that registers itself as its transport's streaming producer.

    The protocol sets ``self._paused = set()``, ``self._reading_paused = False``, ``closing`` and
    ``peer`` in its ``__init__``, checks ``self._paused`` between the messages it handles (and
    holds the rest), and implements ``_release_held`` (handle what was held: nothing is paused any
    more) and ``_drop_held``. ``_end_cut_off`` ends a connection that exceeded its budget."""

    _log = Logger()
    STOP_READING = frozenset({"rate", "turn"})  # pauses that also stop reading from the socket
    _unread = 0  # bytes written since the transport paused us for output
    _unread_call = None  # ends a client that leaves its replies unread for UNREAD_SECONDS

    def callLater(self, period, func):  # noqa: N802 - TimeoutMixin's name
        return self.clock.callLater(period, func)

    def _start_budget(self, socket_options: tuple[str, ...] = ("setTcpNoDelay",)) -> None:
        """The connection is up: note the client's ``peer`` (host:port) for the log, switch the
        socket ``options`` on (no delay: a reply must not wait for the client's delayed ACK of the
        previous one, Nagle's up to 40 ms a move; keep-alive: half-open connections end), and
        become the transport's streaming producer."""
        peer = self.transport.getPeer()
        self.peer = f"{getattr(peer, 'host', peer)}:{getattr(peer, 'port', '')}".rstrip(":")
        for option in socket_options:
            setter = getattr(self.transport, option, None)
            if setter is not None:
                try:
                    setter(True)
                except (AttributeError, OSError):
                    pass
        self.transport.registerProducer(self, True)

    # Logged when a closing client did not read its last output within the close grace.
    _ABORTED = "{peer} did not read its last lines; connection aborted"

    def _close_transport(self, grace: float) -> None:
        """Close after the output still buffered; a client that does not read it within ``grace``
        seconds (0 = no bound) is cut off, logged as ``_ABORTED``."""
        # TLS sends its close alert only once no producer is registered: without this, every TLS
        # client would wait out the close grace and then be cut off.
        self.transport.unregisterProducer()
        self.transport.loseConnection()
        if grace:
            self._close_call = self.clock.callLater(grace, self._abort)

    def _abort(self) -> None:
        self._close_call = None
        self._log.info(self._ABORTED, peer=self.peer, name=getattr(self, "name", None))
        self.transport.abortConnection()

    # Producer interface: the transport pauses us when the client does not read what we write.
    def pauseProducing(self) -> None:  # noqa: N802
        self._pause("output")
        if self._unread_call is None and not self.closing:
            self._unread_call = self.clock.callLater(UNREAD_SECONDS, self._unread_too_long)

    def resumeProducing(self) -> None:  # noqa: N802
        self._unread = 0
        self._stop_unread_timer()
        self._resume("output")

    def stopProducing(self) -> None:  # noqa: N802
        self._drop_held()

    def _stop_unread_timer(self) -> None:
        """Forget the unread-replies deadline (the client reads again, or the connection ended)."""
        call, self._unread_call = self._unread_call, None
        if call is not None and call.active():
            call.cancel()

    def _unread_too_long(self) -> None:
        self._unread_call = None
        held = self._held_input()
        if self.closing or "output" not in self._paused or not held:
            return  # a client that only does not read is bounded by MAX_UNREAD
        self._log.warn(
            "{peer} cut off: it left its replies unread for {s:g} s with {n} bytes more sent",
            peer=self.peer,
            s=UNREAD_SECONDS,
            n=held,
        )
        self._end_cut_off(f"left its replies unread for {UNREAD_SECONDS:g} s")

    # --- hooks ----------------------------------------------------------------------------------

    def _held_input(self) -> int:
        """Bytes of this client's input received and not handled yet."""
        raise NotImplementedError

    def _release_held(self) -> None:
        """Nothing is paused any more: handle the input held meanwhile."""
        raise NotImplementedError

    def _drop_held(self) -> None:
        """Forget the input held (the connection is going away)."""
        raise NotImplementedError

    def _end_cut_off(self, why: str) -> None:
        """End a connection that exceeded its budget (``why``, already logged): at once, without
        waiting for it to read what is buffered for it."""
        self._drop_held()
        self.closing = True
        self.transport.abortConnection()

    # --- for the protocol -----------------------------------------------------------------------

    def _pause(self, why: str) -> None:
        """Stop handling input for ``why``. Only the pauses in ``STOP_READING`` also stop reading
        from the socket: a pause for output can come from TLS during its handshake, which needs
        reading to go on."""
        self._paused.add(why)
        if why in self.STOP_READING and not self._reading_paused and not self.closing:
            self._reading_paused = True
            self.transport.pauseProducing()

    def _resume(self, why: str) -> None:
        if why not in self._paused:
            return
        self._paused.discard(why)
        if not self._paused and not self.closing:
            self._release_held()
        if self._reading_paused and not self._paused & self.STOP_READING and not self.closing:
            self._reading_paused = False
            self.transport.resumeProducing()

    def _wait_turn(self) -> None:
        """This connection's share of the turn is used up and input is waiting: stop (reading
        too) until its next share in the daemon's ``TurnQueue``, which calls ``_next_turn``."""
        self._pause("turn")
        self._turn_call = TurnQueue.of(self.clock).wait(self._next_turn)

    _turn_share = 1  # lines (messages) this connection may handle in its share of the turn queue

    def _next_turn(self, share: int = 1) -> None:
        self._turn_call = None
        self._turn_share = share
        self._resume("turn")

    def _check_held(self, held: int) -> bool:
        """True when ``held`` bytes of unhandled input are within the budget; else the client is
        cut off (logged) and False."""
        if held <= MAX_HELD:
            return True
        self._log.warn("{peer} cut off: it sent {n} bytes more while not reading its replies", peer=self.peer, n=held)
        self._end_cut_off(f"sent {held} bytes more while not reading its replies")
        return False

    def _check_written(self, n: int) -> bool:
        """Count ``n`` bytes just written; True while the client is within its budget of unread
        output, else it is cut off (logged) and False."""
        if "output" not in self._paused:
            return True
        self._unread += n
        if self._unread <= MAX_UNREAD:
            return True
        self._log.warn(
            "{peer} cut off: more than {limit} bytes of its replies unread", peer=self.peer, limit=MAX_UNREAD
        )
        self._end_cut_off(f"more than {MAX_UNREAD} bytes of its replies unread")
        return False
