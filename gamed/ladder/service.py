"""The ladder of one game service on the reactor's clock (docs/ladder.md).

A connection that is logged in asks for the ladder (``LADDER [<n>]``, gamed.ladder.commands); its
account's rating in this game is read from the records (openskill ``mu`` and ``sigma``,
gamed.ratings; a newcomer's without records or when they cannot be read), and it waits until
the pure policy (gamed.ladder.policy) pairs it. While two or more wait, a pairing round runs
every ``interval`` seconds (and once at once after each arrival), so that a waiter's reach widens
with time; nobody waiting, no timer runs. A pair's game is started by the service's ``start``
(first seat, second seat), and the service reports its end (``ended``), which frees a place of
each account's concurrency.

The pair history (the caps and the colours) lives in memory: a restart forgets it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from twisted.internet import defer, task
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed import ratings as skill
from gamed.ladder.policy import Entry, LadderRules, PairHistory, pairs


class LadderError(Exception):
    """A ladder request that is refused (already waiting, a limit out of range)."""


class Ladder:
    """Waiting connections of one game and the ladder games they play.

    ``start(first, second)`` begins a game between two waiting members (in seat order) and
    returns a key the service later passes to ``ended`` (its game id); ``rating(name)`` fires
    with the ``gamed.ratings.Rating`` of the account called ``name`` in this game (None: no
    records, everyone is a newcomer); ``alive(member)`` says whether a member is still connected.
    """

    _log = Logger()

    def __init__(
        self,
        game: str,
        rules: LadderRules,
        clock: IReactorTime,
        start: Callable[[Hashable, Hashable], Hashable],
        rating: Callable[[str], Deferred] | None = None,
        alive: Callable[[Hashable], bool] = lambda member: True,
        interval: float = 1.0,
    ):
        self.game = game
        self.rules = rules
        self.clock = clock
        self._start = start
        self._rating = rating
        self._alive = alive
        self.interval = interval
        self.history = PairHistory()
        self._waiting: dict[Hashable, Entry] = {}  # member -> its entry, in arrival order
        self._asking: dict[Hashable, Deferred] = {}  # member -> the rating being read
        self._running: dict[Hashable, int] = {}  # account -> ladder games it plays just now
        self._games: dict[Hashable, tuple[Hashable, Hashable]] = {}  # game key -> its two accounts
        self._loop: task.LoopingCall | None = None
        self._soon = None
        self._starting: tuple | None = None  # the accounts of the game being started
        self._ended_at_start = False
        self.started = 0  # ladder games begun

    # --- members -------------------------------------------------------------------------------

    def join(self, member: Hashable, account: Hashable, name: str, limit: int) -> Deferred:
        """Put ``member`` (of ``account``, called ``name``) on the ladder, allowing its account
        ``limit`` ladder games at once (1 to the rules' concurrency). Fires with its Rating once
        it waits (or with None when it left while its rating was read)."""
        if member in self._waiting or member in self._asking:
            raise LadderError("you are on the ladder already; LADDER OFF first")
        if not 1 <= limit <= self.rules.concurrency:
            raise LadderError(f"ladder games at once must be 1 to {self.rules.concurrency}")
        d = self._read(name)
        self._asking[member] = d

        def rated(rating: skill.Rating) -> skill.Rating | None:
            if self._asking.pop(member, None) is None or not self._alive(member):
                return None  # it left (or asked again) while the rating was read
            self._waiting[member] = Entry(member, account, rating.mu, rating.sigma, self.clock.seconds(), limit)
            self._pair_soon()
            return rating

        return d.addCallback(rated)

    def _read(self, name: str) -> Deferred:
        if self._rating is None:
            return defer.succeed(skill.INITIAL)
        d = defer.maybeDeferred(self._rating, name)

        def unread(failure) -> skill.Rating:
            self._log.failure("reading the {game} rating of {name} for the ladder failed", failure, game=self.game, name=name)
            return skill.INITIAL

        return d.addCallbacks(lambda r: skill.INITIAL if r is None else r, unread)

    def leave(self, member: Hashable) -> bool:
        """Take ``member`` off the ladder; False when it was not on it."""
        asked = self._asking.pop(member, None) is not None
        waited = self._waiting.pop(member, None) is not None
        if len(self._waiting) < 2:
            self._stop_loop()
        return asked or waited

    def is_waiting(self, member: Hashable) -> bool:
        """True while ``member`` is on the ladder (waiting, or its rating being read)."""
        return member in self._waiting or member in self._asking

    def waiting(self) -> list[Entry]:
        """The entries waiting, in arrival order."""
        return list(self._waiting.values())

    def running(self, account: Hashable) -> int:
        """The ladder games ``account`` plays just now."""
        return self._running.get(account, 0)

    # --- games ---------------------------------------------------------------------------------

    def ended(self, key: Hashable) -> None:
        """The ladder game ``key`` (as ``start`` returned it) is over (any other key: nothing)."""
        accounts = self._games.pop(key, None)
        if accounts is None:
            if self._starting is not None:  # the game being started ended at once
                self._ended_at_start = True
            return
        for account in accounts:
            left = self._running.get(account, 0) - 1
            if left > 0:
                self._running[account] = left
            else:
                self._running.pop(account, None)
        self._pair_soon()  # a place is free again

    def stop(self) -> None:
        """No more pairing (the service stops); the waiting members stay as they are."""
        self._stop_loop()
        if self._soon is not None and self._soon.active():
            self._soon.cancel()
        self._soon = None

    # --- pairing -------------------------------------------------------------------------------

    def _pair_soon(self) -> None:
        """A pairing round at once (from the clock: never inside the caller's own work)."""
        if len(self._waiting) >= 2 and (self._soon is None or not self._soon.active()):
            self._soon = self.clock.callLater(0, self.pair)

    def pair(self) -> int:
        """One pairing round now: start every game the policy chooses; returns how many."""
        self._soon = None
        for member in [m for m in self._waiting if not self._alive(m)]:
            del self._waiting[member]
        now = self.clock.seconds()
        self.history.forget(now, self.rules.pair_window)
        chosen = pairs(self._waiting.values(), now, self._running, self.history, self.rules)
        for first, second in chosen:
            del self._waiting[first.member]
            del self._waiting[second.member]
            self.history.begun(first.account, second.account, now)
            for account in (first.account, second.account):
                self._running[account] = self._running.get(account, 0) + 1
            self.started += 1
            accounts = (first.account, second.account)
            self._starting, self._ended_at_start = accounts, False
            try:
                key = self._start(first.member, second.member)
            except Exception:
                self._log.failure("starting a {game} ladder game failed", game=self.game)
                key, self._ended_at_start = object(), True
            finally:
                self._starting = None
            self._games[key] = accounts
            if self._ended_at_start:  # over before it was under way (or never began)
                self.ended(key)
        if len(self._waiting) >= 2:
            self._start_loop()
        else:
            self._stop_loop()
        return len(chosen)

    def _start_loop(self) -> None:
        if self._loop is None:
            self._loop = task.LoopingCall(self.pair)
            self._loop.clock = self.clock
            d = self._loop.start(self.interval, now=False)
            d.addErrback(self._loop_failed)

    def _loop_failed(self, failure) -> None:
        self._log.failure("the {game} ladder's pairing failed", failure, game=self.game)
        self._loop = None  # the next arrival or game end starts it again

    def _stop_loop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and loop.running:
            loop.stop()


def for_service(game: str, config: Any, clock: IReactorTime, start: Callable[[Hashable, Hashable], Hashable],
                hub: Any = None) -> Ladder | None:
    """The ladder of the game service ``game`` as ``[ladder]`` (gamed.config.LadderConfig) says:
    ratings from the hub's records (a newcomer's for everyone without records); None when the
    ladder is switched off."""
    if config is None or not config.enabled:
        return None
    store = getattr(hub, "store", None)
    rating = None if store is None else (lambda name: store.rating(game, name))
    return Ladder(game, config.rules(), clock, start, rating,
                  alive=lambda member: bool(getattr(member, "connected", True)), interval=config.interval)
