"""The shared turn scheduler: the one place that decides when a turn ends, and every seat's clock.

A game opens a turn for one seat (Kalaha, Combat) or several seats at once (Virtual Fight). Seats
record actions and say when they have finished; the turn closes when every seat has finished or
its time has run out, whichever comes first, and the game then resolves the whole turn as one batch
in the ``on_close`` callback. A seat that did not finish in time gets a strike; the strike policy
decides when strikes put a seat out of the game.

The clocks follow a ``gamed.timecontrol.TimeControl``: a per-move limit, a bank per seat with an
increment, a separate budget for the setup turn and a cap on the whole game. Each seat of a turn
has its own deadline (in a simultaneous turn one team may run out while the others play on): the
least of its move limit and its bank, plus the round trip credited to it (its measured network
round trip, at most the control's ``lag``), and never later than the game cap. What a seat whose
flag falls gets is the scheduler's ``FlagPolicy``: it loses, the game plays a default move for it
(a strike), or it passes (a strike). Every closed turn says, per seat, the time used, the time
left and the credit, for the prompts, the web pages and the records.

Time comes from an injected ``IReactorTime`` (a ``task.Clock`` in tests). The deadline is a hard
instant: an action handled at or after it is late, even when the reactor has not yet run the timer
(both arrive in the same reactor iteration), so the outcome never depends on which event the
reactor happens to dispatch first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from gamed.timecontrol import FlagPolicy, TimeControl

_DEFAULT: Any = object()

# Seats whose time ran out in a turn, per game (the schedulers' ``game``), since the process
# started: gamed.metrics shows it as gamed_timeouts_total.
TIMEOUTS: Counter = Counter()


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
class SeatClock:
    """One seat's clock over a game: its bank and what it has used and been credited."""

    bank: float | None  # seconds left on the bank (None: the control has no bank)
    used: float = 0.0  # seconds charged over the whole game
    credited: float = 0.0  # round-trip seconds credited over the whole game
    flags: int = 0  # turns on which its time ran out
    setup_done: bool = False


@attrs.define(eq=False)
class Turn:
    """One turn: who plays it, what they did, and, once closed, who ran out of time.

    ``deadlines`` holds each seat's hard instant (None: no limit) and ``credit`` the round-trip
    seconds added to it; once the turn is closed ``used``, ``left`` and ``credited`` say what each
    seat's clock did (``left``: its bank afterwards, None without a bank).
    """

    number: int
    seats: frozenset[Hashable]
    opened: float
    deadline: float | None  # the latest seat deadline: the turn is over by then (None: no limit)
    actions: dict[Hashable, list[Any]] = attrs.field(factory=dict)
    finished: set[Hashable] = attrs.field(factory=set)
    closed: bool = False
    timed_out: frozenset[Hashable] = frozenset()  # the seats whose flag fell this turn
    struck_out: frozenset[Hashable] = frozenset()
    setup: bool = False  # the setup turn (placement, a first turn) on its own budget
    deadlines: dict[Hashable, float | None] = attrs.field(factory=dict)
    credit: dict[Hashable, float] = attrs.field(factory=dict)
    shown: dict[Hashable, float | None] = attrs.field(factory=dict)  # the deadline a player is told: no credit
    used: dict[Hashable, float] = attrs.field(factory=dict)
    left: dict[Hashable, float | None] = attrs.field(factory=dict)
    credited: dict[Hashable, float] = attrs.field(factory=dict)
    flagged: set[Hashable] = attrs.field(factory=set)  # while open: flags fallen so far
    capped: bool = False  # the game cap ended this turn (and so the game)
    lost: frozenset[Hashable] = frozenset()  # flag fallen under FlagPolicy.LOSE
    defaults: frozenset[Hashable] = frozenset()  # flag fallen under DEFAULT: play their default move
    passes: frozenset[Hashable] = frozenset()  # flag fallen under PASS: they do nothing this turn

    @property
    def waiting_for(self) -> frozenset[Hashable]:
        """Seats that have not finished this turn yet."""
        return self.seats - self.finished

    def clock_entry(self, seat: Hashable) -> dict:
        """What the records keep of ``seat``'s clock this turn (seconds, to the millisecond)."""
        left = self.left.get(seat)
        return {
            "used": round(self.used.get(seat, 0.0), 3),
            "left": None if left is None else round(left, 3),
            "credit": round(self.credited.get(seat, 0.0), 3),
        }


_NONE: frozenset = frozenset()


class TurnClosed(Exception):
    """An action came for a turn that is not open (none opened yet, or it already closed)."""


class TurnScheduler:
    """Opens turns, collects actions, closes each turn once, runs the seats' clocks and counts
    timeout strikes.

    ``on_close(turn)`` is called exactly once per turn, synchronously, from whichever call closes
    it (the last ``finish``, a ``remove``, or the deadline timer). It may open the next turn.
    ``timeout`` (a per-move limit) is the short form of ``control=TimeControl(move=timeout)``.
    ``on_flag`` decides what a seat whose time runs out gets: with ``LOSE`` it is struck out at
    once (whatever the strike policy); with ``DEFAULT`` and ``PASS`` it gets a strike.
    """

    def __init__(
        self,
        clock: IReactorTime,
        on_close: Callable[[Turn], None],
        timeout: float | None = None,
        strikes: StrikePolicy = StrikePolicy(),
        control: TimeControl | None = None,
        on_flag: FlagPolicy | None = None,
        game: str = "",
    ):
        self._clock = clock
        self.game = game  # its game type, for TIMEOUTS
        self._on_close = on_close
        self.control = control if control is not None else TimeControl.per_move(timeout)
        self.on_flag = on_flag
        self.policy = strikes
        self.strikes: dict[Hashable, int] = {}
        self.clocks: dict[Hashable, SeatClock] = {}
        self.current: Turn | None = None
        self.turns = 0
        self.started: float | None = None
        self._timer: IDelayedCall | None = None
        self._timer_at: float | None = None
        self._removed: set[Hashable] = set()
        self._excused: set[Hashable] = set()
        self._stopped = False

    @property
    def timeout(self) -> float | None:
        """The per-move limit (None: none)."""
        return self.control.move

    @property
    def cap_at(self) -> float | None:
        """The instant the game cap ends the game (None: no cap, or no turn opened yet)."""
        if self.control.game is None or self.started is None:
            return None
        return self.started + self.control.game

    def seat_clock(self, seat: Hashable) -> SeatClock:
        """``seat``'s clock (made with a full bank when first asked for)."""
        entry = self.clocks.get(seat)
        if entry is None:
            entry = self.clocks[seat] = SeatClock(self.control.bank)
        return entry

    def open(
        self,
        seats: Iterable[Hashable],
        timeout: float | None = _DEFAULT,
        setup: bool = False,
        lag: dict[Hashable, float] | None = None,
    ) -> Turn:
        """Start the next turn for ``seats`` (seats already removed are left out).

        ``timeout`` overrides the per-move limit for this turn (None: no limit). ``setup`` marks
        the setup turn, timed by the control's setup budget when it has one (not the bank).
        ``lag`` gives seats' measured round trips: each is credited up to the control's ``lag``.
        A turn with no seat left closes at once, and so does one opened after the game cap.
        """
        if self._stopped:
            raise RuntimeError("the scheduler has been stopped")
        if self.current is not None and not self.current.closed:
            raise RuntimeError(f"turn {self.current.number} is still open")
        now = self._clock.seconds()
        if self.started is None:
            self.started = now
        self.turns += 1
        removed = self._removed
        seats = frozenset(seats)
        if removed:
            seats = seats - removed
        turn = Turn(number=self.turns, seats=seats, opened=now, deadline=None, setup=setup)
        self.current = turn
        control = self.control
        cap = self.cap_at
        max_credit = control.lag if lag else 0.0
        deadlines, credits, shown = turn.deadlines, turn.credit, turn.shown
        latest: float | None = now
        for seat in seats:
            budget = self._budget(seat, setup, timeout)
            if budget is None:
                deadline = cap
                credits[seat] = 0.0
                shown[seat] = cap
            else:
                credit = 0.0
                if max_credit:
                    credit = max(0.0, min(float(lag.get(seat, 0.0) or 0.0), max_credit))  # type: ignore[union-attr]
                end = now + budget
                deadline = end + credit
                if cap is not None and deadline > cap:
                    deadline = cap
                credits[seat] = credit
                shown[seat] = end if end < deadline else deadline
            deadlines[seat] = deadline
            if latest is not None:
                latest = None if deadline is None else (deadline if deadline > latest else latest)
        turn.deadline = latest if seats else None
        if not seats:
            self._close(turn)
        elif cap is not None and now >= cap:
            self._close(turn, capped=True)
        else:
            self._arm(turn)
        return turn

    def _budget(self, seat: Hashable, setup: bool, timeout: Any) -> float | None:
        control = self.control
        if timeout is not _DEFAULT and not (setup and control.setup is not None):
            control = attrs.evolve(control, move=timeout or None)  # this turn's own move limit
        return control.budget(None if control.bank is None else self.seat_clock(seat).bank, setup)

    def snapshot(self, seat: Hashable, seats: Iterable[Hashable]) -> tuple[float | None, list[tuple[Hashable, float | None]]]:
        """What a ``CLOCK`` line tells ``seat``, all at one instant: its time for the open move
        (``remaining``), and the bank of each of ``seats`` (``clock_left``)."""
        now = self._clock.seconds()
        return self.remaining(seat, now=now), [(s, self.clock_left(s, now=now)) for s in seats]

    def remaining(self, seat: Hashable | None = None, now: float | None = None) -> float | None:
        """Seconds ``seat`` has left for its move in the open turn, as the player is told: without
        the round trip credited to it (None: no deadline, or no open turn for it). Without
        ``seat``: until the turn is over for every seat still playing."""
        turn = self.current
        if turn is None or turn.closed:
            return None
        now = self._clock.seconds() if now is None else now
        if seat is None:
            waiting = [turn.shown.get(s) for s in turn.waiting_for]
            if not waiting or None in waiting:
                return None
            return max(0.0, max(waiting) - now)  # type: ignore[type-var]
        if seat not in turn.seats or seat in turn.finished:
            return None
        deadline = turn.shown.get(seat)
        return None if deadline is None else max(0.0, deadline - now)

    def clock_left(self, seat: Hashable, now: float | None = None) -> float | None:
        """What is left on ``seat``'s bank just now, counting down while its move is open (its
        credit first); None when the control has no bank."""
        entry = self.seat_clock(seat)
        if entry.bank is None:
            return None
        turn = self.current
        if turn is None or turn.closed or seat not in turn.seats or seat in turn.finished:
            return entry.bank
        if turn.setup and self.control.setup is not None:
            return entry.bank
        now = self._clock.seconds() if now is None else now
        spent = max(0.0, now - turn.opened - turn.credit.get(seat, 0.0))
        return max(0.0, entry.bank - spent)

    def running(self) -> frozenset[Hashable]:
        """The seats whose clocks run now (in the open turn, not finished)."""
        turn = self.current
        if turn is None or turn.closed:
            return frozenset()
        return turn.waiting_for

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
        self._charge(turn, seat)
        self._finish(turn, seat)
        return turn

    def submit(self, seat: Hashable, action: Any) -> Turn:
        """Record ``action`` and finish ``seat`` in one step (one action per turn games)."""
        turn = self._turn_for(seat)
        turn.actions.setdefault(seat, []).append(action)
        self._charge(turn, seat)
        self._finish(turn, seat)
        return turn

    def remove(self, seat: Hashable) -> None:
        """Take ``seat`` out of this and all later turns (it left or was disqualified).

        In the open turn it counts as finished, so the others are not kept waiting for it.
        """
        self._removed.add(seat)
        turn = self._live_turn()
        if turn is not None and seat in turn.seats and seat not in turn.finished:
            self._charge(turn, seat)
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
        if self._passed(turn, now):
            # A deadline has passed but its timer has not run yet: act now, so that the late
            # action is treated exactly as if the timer had come first (it belongs to the next
            # turn, when on_close opened one).
            self._expire(turn)
            turn = self.current
            if turn is None or turn.closed or self._passed(turn, now):
                return None
        return turn

    @staticmethod
    def _passed(turn: Turn, now: float) -> bool:
        for seat in turn.seats:
            if seat not in turn.finished:
                deadline = turn.deadlines.get(seat)
                if deadline is not None and now >= deadline:
                    return True
        return False

    def _turn_for(self, seat: Hashable) -> Turn:
        turn = self._live_turn()
        if turn is None:
            raise TurnClosed("no turn is open")
        if seat not in turn.seats or seat in turn.finished:
            raise TurnClosed(f"no open turn for {seat!r}")
        return turn

    def _charge(self, turn: Turn, seat: Hashable, flag: bool = False) -> None:
        """Account ``seat``'s time for this turn (it finished, left, or its flag fell)."""
        if seat in turn.used:
            return
        entry = self.seat_clock(seat)
        now = self._clock.seconds()
        deadline = turn.deadlines.get(seat)
        if flag and deadline is not None:
            now = deadline
        elapsed = max(0.0, now - turn.opened)
        credit = min(turn.credit.get(seat, 0.0), elapsed)
        used = elapsed - credit
        turn.used[seat] = used
        turn.credited[seat] = credit
        entry.used += used
        entry.credited += credit
        if turn.setup and self.control.setup is not None:  # on its own budget, not the bank
            entry.setup_done = True
        elif entry.bank is not None:
            # A flag that fell on the bank leaves it empty (used == bank); then the increment.
            entry.bank = self.control.after(entry.bank, used)
        turn.left[seat] = entry.bank
        if flag:
            entry.flags += 1

    def _finish(self, turn: Turn, seat: Hashable) -> None:
        turn.finished.add(seat)
        if not turn.waiting_for:
            self._close(turn)

    def _arm(self, turn: Turn) -> None:
        """Set the timer for the earliest deadline of a seat still playing."""
        due = None
        finished = turn.finished
        for seat, deadline in turn.deadlines.items():
            if deadline is not None and seat not in finished and (due is None or deadline < due):
                due = deadline
        if due == self._timer_at and self._timer is not None and self._timer.active():
            return
        self._cancel_timer()
        if due is not None:
            self._timer_at = due
            self._timer = self._clock.callLater(max(0.0, due - self._clock.seconds()), self._expire, turn)

    def _expire(self, turn: Turn) -> None:
        if turn.closed or turn is not self.current:
            return
        now = self._clock.seconds()
        cap = self.cap_at
        if cap is not None and now >= cap:
            self._close(turn, capped=True)
            return
        for seat in sorted(turn.waiting_for, key=repr):
            deadline = turn.deadlines.get(seat)
            if deadline is not None and now >= deadline:
                self._charge(turn, seat, flag=True)
                turn.flagged.add(seat)
                turn.finished.add(seat)
        if turn.waiting_for:
            self._arm(turn)
        else:
            self._close(turn)

    def _close(self, turn: Turn, capped: bool = False) -> None:
        self._cancel_timer()
        for seat in turn.waiting_for:
            if seat not in turn.used:
                self._charge(turn, seat)
        turn.closed = True
        turn.capped = capped
        timed_out = frozenset(turn.flagged) if turn.flagged else _NONE
        turn.timed_out = timed_out
        if timed_out:
            TIMEOUTS[self.game] += len(timed_out)
        out = set()
        policy = self.on_flag
        for seat in (turn.seats - self._removed) if self._removed else turn.seats:
            if seat in timed_out and policy is FlagPolicy.LOSE:
                out.add(seat)
                continue
            if seat in self._excused:
                continue
            if seat in timed_out:
                self.strikes[seat] = self.strikes.get(seat, 0) + 1
                if self.policy.limit and self.strikes[seat] >= self.policy.limit:
                    out.add(seat)
            elif self.policy.consecutive:
                self.strikes.pop(seat, None)
        if timed_out:
            if policy is FlagPolicy.LOSE:
                turn.lost = timed_out
            elif policy is FlagPolicy.DEFAULT:
                turn.defaults = timed_out - out
            elif policy is FlagPolicy.PASS:
                turn.passes = timed_out - out
        if out:
            turn.struck_out = frozenset(out)
            self._removed |= out
        self._on_close(turn)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self._timer_at = None
