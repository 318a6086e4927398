"""The ladder's matchmaking policy, pure: who plays whom next, given who waits, their ratings, how
long they have waited, the games their accounts play just now and the games already played.

No Twisted, no clock: time comes in as ``now`` (seconds on any clock, the same for every call).

A bot waiting on the ladder is an ``Entry``: its account, its rating (openskill ``mu``, ``sigma``,
gamed.ratings), when it began to wait and how many ladder games its account may play at once.
``pairs`` chooses the games to start now:

- two entries may meet when their accounts differ, the distance ``|mu_a - mu_b|`` is within the
  *reach* of the one that waited longer (``window + widening * seconds waited``: the longer a bot
  waits, the wider the ratings it accepts), each account has a free place (fewer running ladder
  games than its entry's limit, counting the games chosen in the same call), and the pair is
  below its caps (``PairHistory.allowed``);
- among the pairs that may meet, the closest ratings go first, then the pair whose longer waiter
  has waited longest, then the order the entries came in: ``pairs`` is deterministic.

``PairHistory`` remembers the ladder games begun: at most ``pair_cap`` games between the same two
accounts within ``pair_window`` seconds, at most ``in_row`` games in a row of one account against
the same opponent (0: no such limit), and who played first last time (the colours alternate).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping

import attrs


@attrs.frozen
class LadderRules:
    """The ladder's numbers (``[ladder]`` in the configuration, gamed.config.LadderConfig)."""

    window: float = 100.0  # rating points (mu) two bots may be apart at once
    widening: float = 10.0  # rating points the window grows by per second waited
    concurrency: int = 4  # most ladder games one account plays at once (a bot may ask fewer)
    pair_cap: int = 3  # most games between the same two accounts within pair_window
    pair_window: float = 3600.0  # seconds
    in_row: int = 2  # most games in a row of one account against the same opponent; 0 = no limit


@attrs.frozen
class Entry:
    """One bot waiting on the ladder: ``member`` (its connection, any hashable), ``account`` (the
    account's id), its rating, ``since`` (when it began to wait) and ``limit`` (how many ladder
    games its account may play at once while this bot waits, already capped by the rules)."""

    member: Hashable = attrs.field(eq=False)
    account: Hashable
    mu: float
    sigma: float
    since: float
    limit: int = 1


def reach(entry: Entry, now: float, rules: LadderRules) -> float:
    """How far (in mu) ``entry`` accepts an opponent's rating at ``now``."""
    return rules.window + rules.widening * max(0.0, now - entry.since)


def distance(a: Entry, b: Entry) -> float:
    """How far apart two bots' ratings are."""
    return abs(a.mu - b.mu)


def _key(a: Hashable, b: Hashable) -> tuple:
    return tuple(sorted((a, b), key=repr))


class PairHistory:
    """The ladder games begun, per pair of accounts: for the caps and the colours."""

    def __init__(self) -> None:
        self._started: dict[tuple, deque[float]] = {}  # pair -> when its games began, oldest first
        self._first: dict[tuple, Hashable] = {}  # pair -> the account that played first last time
        self._last: dict[Hashable, tuple[Hashable, int]] = {}  # account -> (last opponent, games in a row)

    def copy(self) -> PairHistory:
        """An independent copy (to try games out without recording them)."""
        other = PairHistory()
        other._started = {key: deque(times) for key, times in self._started.items()}
        other._first = dict(self._first)
        other._last = dict(self._last)
        return other

    def forget(self, now: float, window: float) -> None:
        """Drop what no cap needs any more: pairs with no game within ``window`` seconds."""
        for key in [k for k in self._started if not self.games(*k, now, window)]:
            del self._started[key]

    def begun(self, first: Hashable, second: Hashable, now: float) -> None:
        """A ladder game of ``first`` (first seat) against ``second`` began at ``now``."""
        key = _key(first, second)
        self._started.setdefault(key, deque()).append(now)
        self._first[key] = first
        for me, them in ((first, second), (second, first)):
            opponent, run = self._last.get(me, (None, 0))
            self._last[me] = (them, run + 1 if opponent == them else 1)

    def games(self, a: Hashable, b: Hashable, now: float, window: float) -> int:
        """Games between ``a`` and ``b`` begun within the last ``window`` seconds."""
        times = self._started.get(_key(a, b))
        if not times:
            return 0
        while times and times[0] <= now - window:
            times.popleft()
        return len(times)

    def in_row(self, me: Hashable, them: Hashable) -> int:
        """How many of ``me``'s last ladder games in a row were against ``them``."""
        opponent, run = self._last.get(me, (None, 0))
        return run if opponent == them else 0

    def allowed(self, a: Hashable, b: Hashable, now: float, rules: LadderRules) -> bool:
        """True when the caps let ``a`` and ``b`` begin one more game at ``now``."""
        if self.games(a, b, now, rules.pair_window) >= rules.pair_cap:
            return False
        if rules.in_row and max(self.in_row(a, b), self.in_row(b, a)) >= rules.in_row:
            return False
        return True

    def order(self, a: Entry, b: Entry) -> tuple[Entry, Entry]:
        """The seats of a game between ``a`` and ``b``: the account that played second last time
        plays first now; at their first meeting, the one that waited longer (then ``a``)."""
        last = self._first.get(_key(a.account, b.account))
        if last is None:
            return (b, a) if b.since < a.since else (a, b)
        return (b, a) if last == a.account else (a, b)


def pairs(
    entries: Iterable[Entry],
    now: float,
    running: Mapping[Hashable, int],
    history: PairHistory,
    rules: LadderRules,
) -> list[tuple[Entry, Entry]]:
    """The games to begin now among ``entries`` (in the order they came), each as (first seat,
    second seat). ``running`` is the ladder games each account plays just now. Each entry is in
    at most one pair. Nothing is changed: the caller records the games it begins."""
    waiting = list(entries)
    candidates = []
    for i, a in enumerate(waiting):
        for j in range(i + 1, len(waiting)):
            b = waiting[j]
            if a.account == b.account:
                continue
            gap = distance(a, b)
            longer = a if a.since <= b.since else b
            if gap > reach(longer, now, rules):
                continue
            candidates.append((gap, longer.since, i, j))
    candidates.sort()
    busy = dict(running)
    used: set[int] = set()
    chosen: list[tuple[Entry, Entry]] = []
    trial = history.copy()  # the caps also hold among the games chosen in this call
    for _, _, i, j in candidates:
        if i in used or j in used:
            continue
        a, b = waiting[i], waiting[j]
        if busy.get(a.account, 0) >= a.limit or busy.get(b.account, 0) >= b.limit:
            continue
        if not trial.allowed(a.account, b.account, now, rules):
            continue
        used.update((i, j))
        busy[a.account] = busy.get(a.account, 0) + 1
        busy[b.account] = busy.get(b.account, 0) + 1
        first, second = trial.order(a, b)
        trial.begun(first.account, second.account, now)
        chosen.append((first, second))
    return chosen
