"""The per-connection output budget of every game port, whatever its framing (lines or binary).

A protocol with ``BackPressure`` is its transport's streaming producer. While the client does not
read our replies (the transport's write buffer is full and it paused us) the client's further
input is held unhandled; one that sends more than ``MAX_HELD`` bytes meanwhile is cut off, and one
that would have more than ``MAX_UNREAD`` bytes written to it (by other players' events) while it
does not read is cut off too, each with a logged reason. Other pauses (a line rate, the end of a
connection's share of one reactor turn) also stop reading from the socket, so that nothing is held
for them. ``TextLineProtocol`` and ``CombatProtocol`` both build on it.
"""

from __future__ import annotations

from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from zope.interface import implementer

# Bytes a paused connection may hold unprocessed (a little more than one 64 KiB read) before it
# counts as a client that floods us without reading our replies, and is cut off.
MAX_HELD = 1 << 17

# Bytes that may be written to a connection after its transport paused us (on top of the
# transport's own 64 KiB buffer) before it counts as a client that does not read at all.
MAX_UNREAD = 1 << 18


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

    # Producer interface: the transport pauses us when the client does not read what we write.
    def pauseProducing(self) -> None:  # noqa: N802
        self._pause("output")

    def resumeProducing(self) -> None:  # noqa: N802
        self._unread = 0
        self._resume("output")

    def stopProducing(self) -> None:  # noqa: N802
        self._drop_held()

    # --- hooks ----------------------------------------------------------------------------------

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
