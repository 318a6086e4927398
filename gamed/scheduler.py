"""The shared turn scheduler: the one place that decides when a turn ends.

A game opens a turn for one seat (Kalaha, Combat) or several seats at once (Virtual Fight). Seats
record actions and say when they have finished; the turn closes when every seat has finished or
its deadline passes, whichever comes first, and the game then resolves the whole turn as one batch
in the ``on_close`` callback. A seat that did not finish in time gets a strike; the strike policy
decides when strikes put a seat out of the game.

Time comes from an injected ``IReactorTime`` (a ``task.Clock`` in tests). The deadline is a hard
instant: an action handled at or after it is late, even when the reactor has not yet run the timer
(both arrive in the same reactor iteration), so the outcome never depends on which event the
reactor happens to dispatch first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime

_DEFAULT: Any = object()


def _ignore(turn: Turn) -> None:
    pass


@attrs.frozen
class StrikePolicy:
    """How timeouts count: ``limit`` strikes put a seat out (0 = never); ``consecutive`` strikes
    only count while they come one turn after another (a turn finished in time clears them)."""

    limit: int = 1
    consecutive: bool = True

    def __attrs_post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError("strike limit must be 0 (never) or more")


@attrs.define(eq=False)
class Turn:
    """One turn: who plays it, what they did, and, once closed, who ran out of time."""

    number: int
    seats: frozenset[Hashable]
    opened: float
    deadline: float | None
    actions: dict[Hashable, list[Any]] = attrs.field(factory=dict)
    finished: set[Hashable] = attrs.field(factory=set)
    closed: bool = False
    timed_out: frozenset[Hashable] = frozenset()
    struck_out: frozenset[Hashable] = frozenset()

    @property
    def waiting_for(self) -> frozenset[Hashable]:
        """Seats that have not finished this turn yet."""
        return self.seats - self.finished


class TurnClosed(Exception):
    """An action came for a turn that is not open (none opened yet, or it already closed)."""


class TurnScheduler:
    """Opens turns, collects actions, closes each turn once, and counts timeout strikes.

    ``on_close(turn)`` is called exactly once per turn, synchronously, from whichever call closes
    it (the last ``finish``, a ``remove``, or the deadline timer). It may open the next turn.
    """

    def __init__(
        self,
        clock: IReactorTime,
        on_close: Callable[[Turn], None],
        timeout: float | None = None,
        strikes: StrikePolicy = StrikePolicy(),
    ):
        self._clock = clock
        self._on_close = on_close
        self.timeout = timeout
        self.policy = strikes
        self.strikes: dict[Hashable, int] = {}
        self.current: Turn | None = None
        self.turns = 0
        self._timer: IDelayedCall | None = None
        self._removed: set[Hashable] = set()
        self._excused: set[Hashable] = set()
        self._stopped = False

    def open(self, seats: Iterable[Hashable], timeout: float | None = _DEFAULT) -> Turn:
        """Start the next turn for ``seats`` (seats already removed are left out).

        ``timeout`` overrides the scheduler's default for this turn; None means no deadline.
        A turn with no seat left closes at once.
        """
        if self._stopped:
            raise RuntimeError("the scheduler has been stopped")
        if self.current is not None and not self.current.closed:
            raise RuntimeError(f"turn {self.current.number} is still open")
        limit = self.timeout if timeout is _DEFAULT else timeout
        now = self._clock.seconds()
        self.turns += 1
        turn = Turn(
            number=self.turns,
            seats=frozenset(seats) - self._removed,
            opened=now,
            deadline=None if limit is None else now + limit,
        )
        self.current = turn
        if not turn.seats:
            self._close(turn)
        elif limit is not None:
            self._timer = self._clock.callLater(limit, self._expire, turn)
        return turn

    def remaining(self) -> float | None:
        """Seconds left in the open turn (None when there is no deadline or no open turn)."""
        turn = self.current
        if turn is None or turn.closed or turn.deadline is None:
            return None
        return max(0.0, turn.deadline - self._clock.seconds())

    def live_turn(self) -> Turn | None:
        """The open turn, or None. A turn whose deadline has passed is closed first (its
        ``on_close`` runs now), so an action handled at or after the deadline belongs to the next
        turn, exactly as if the timer had come first."""
        return self._live_turn()

    def is_open_for(self, seat: Hashable) -> bool:
        """True when ``seat`` plays in the open turn and has not finished it."""
        turn = self._live_turn()
        return turn is not None and seat in turn.seats and seat not in turn.finished

    def act(self, seat: Hashable, action: Any) -> Turn:
        """Record ``action`` for ``seat`` in the open turn without finishing the seat.

        Raises TurnClosed when no turn is open for that seat (late, early or not its turn).
        """
        turn = self._turn_for(seat)
        turn.actions.setdefault(seat, []).append(action)
        return turn

    def finish(self, seat: Hashable) -> Turn:
        """Mark ``seat`` as done with the open turn; the turn closes when it was the last one."""
        turn = self._turn_for(seat)
        self._finish(turn, seat)
        return turn

    def submit(self, seat: Hashable, action: Any) -> Turn:
        """Record ``action`` and finish ``seat`` in one step (one action per turn games)."""
        turn = self._turn_for(seat)
        turn.actions.setdefault(seat, []).append(action)
        self._finish(turn, seat)
        return turn

    def remove(self, seat: Hashable) -> None:
        """Take ``seat`` out of this and all later turns (it left or was disqualified).

        In the open turn it counts as finished, so the others are not kept waiting for it.
        """
        self._removed.add(seat)
        turn = self._live_turn()
        if turn is not None and seat in turn.seats and seat not in turn.finished:
            self._finish(turn, seat)

    def excuse(self, seat: Hashable, excused: bool = True) -> None:
        """While ``seat`` is excused (its player is away, within the grace period of the seat
        model) its timeouts are still timeouts but earn no strike and clear none, so the strike
        policy never puts it out before the grace has run out."""
        if excused:
            self._excused.add(seat)
        else:
            self._excused.discard(seat)

    def stop(self) -> None:
        """Cancel the open turn's deadline and refuse further turns (the game is over)."""
        self._stopped = True
        self._cancel_timer()
        if self.current is not None:
            self.current.closed = True
        self._on_close = _ignore  # the game owns us and we it: let go, so no cycle outlives it

    def _live_turn(self) -> Turn | None:
        turn = self.current
        if turn is None or turn.closed:
            return None
        now = self._clock.seconds()
        if turn.deadline is not None and now >= turn.deadline:
            # The deadline has passed but its timer has not run yet: close now, so that the late
            # action is treated exactly as if the timer had come first (it belongs to the next
            # turn, when on_close opened one).
            self._expire(turn)
            turn = self.current
            if turn is None or turn.closed or (turn.deadline is not None and now >= turn.deadline):
                return None
        return turn

    def _turn_for(self, seat: Hashable) -> Turn:
        turn = self._live_turn()
        if turn is None:
            raise TurnClosed("no turn is open")
        if seat not in turn.seats or seat in turn.finished:
            raise TurnClosed(f"no open turn for {seat!r}")
        return turn

    def _finish(self, turn: Turn, seat: Hashable) -> None:
        turn.finished.add(seat)
        if not turn.waiting_for:
            self._close(turn)

    def _expire(self, turn: Turn) -> None:
        if turn.closed or turn is not self.current:
            return
        self._close(turn, timed_out=turn.waiting_for)

    def _close(self, turn: Turn, timed_out: frozenset[Hashable] = frozenset()) -> None:
        self._cancel_timer()
        turn.closed = True
        turn.timed_out = frozenset(timed_out)
        out = set()
        for seat in turn.seats - self._removed:
            if seat in self._excused:
                continue
            if seat in timed_out:
                self.strikes[seat] = self.strikes.get(seat, 0) + 1
                if self.policy.limit and self.strikes[seat] >= self.policy.limit:
                    out.add(seat)
            elif self.policy.consecutive:
                self.strikes.pop(seat, None)
        turn.struck_out = frozenset(out)
        self._removed |= out
        self._on_close(turn)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
