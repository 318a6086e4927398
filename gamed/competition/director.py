"""Running a tournament: its format says which games, the hosted-game runner plays them, the
tournament store keeps them.

``Director.run(definition)`` opens (or resumes) the stored tournament, asks the format for games
(``Format.plan``), stores each game when it is scheduled, plays up to ``concurrency`` games at a
time with ``HostedGames.play``, stores each result as it comes, and repeats until the format says
the tournament is over; it fires with the final ``Report``. ``stop()`` ends it early (the daemon is
stopping): the games in play are abandoned, not recorded (their programs were killed, so their
results say nothing about the bots) and are played again when the tournament is resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from twisted.internet import defer, task
from twisted.logger import Logger

from gamed.competition.formats import Format, Game, MatchLine, Played, Row
from gamed.competition.store import LEASE, Stored, TournamentStore, this_runner


@attrs.frozen
class Definition:
    """A tournament to run: its name, game, format (with its bots) and how many games at once."""

    name: str
    game: str
    format: Format
    spec: dict  # what defines it, as stored (a resumed tournament must have the same)
    concurrency: int = 1


@attrs.frozen
class Report:
    """What a tournament says now: games scheduled, finished and (when known) in all; standings;
    for two bots the match line (W/D/L, pairs, Elo, LOS, the SPRT's LLR and decision)."""

    name: str
    game: str
    kind: str
    description: str
    state: str
    scheduled: int
    finished: int
    total: int | None
    standings: tuple[Row, ...]
    match: MatchLine | None
    crosstable: dict
    curve: tuple[float, ...] = ()  # an SPRT's LLR after each finished pair


def report(stored: Stored, fmt: Format) -> Report:
    """The report of a stored tournament under its format."""
    games, played = list(stored.games), stored.played
    curve: tuple[float, ...] = ()
    decision = getattr(fmt, "decision", None)
    if decision is not None:
        curve = tuple(decision(games, played)[2])
    total = fmt.total()
    return Report(
        stored.name, stored.game, fmt.kind, fmt.describe(), stored.state, len(games), len(played), total,
        tuple(fmt.standings(games, played)), fmt.match_line(games, played), fmt.crosstable(games, played), curve,
    )


def played_of(number: int, result: Any) -> Played:
    """A hosted game's HostedResult as a tournament result."""
    scores = tuple(result.scores) if result.played else (0.0, 0.0)
    faults = tuple(None if t is None else t.text() for t in result.faults)
    return Played(number, scores, result.reason, result.outcome, faults, result.match_id)


class Director:
    """Runs tournaments on a HostedGames, stored in a TournamentStore."""

    _log = Logger()

    def __init__(self, store: TournamentStore, hosted: Any, bots: Mapping[str, Any], reactor: Any):
        self.store = store
        self.hosted = hosted
        self.bots = {name.lower(): spec for name, spec in bots.items()}
        self.reactor = reactor
        self._stopping = False
        self._running: dict[str, _Run] = {}

    def run(self, definition: Definition, progress: Callable[[Report], None] | None = None) -> defer.Deferred:
        """Play ``definition`` to its end (resuming what is stored); fires with the final Report."""
        missing = [b for b in definition.format.bots if b.lower() not in self.bots]
        if missing:
            return defer.fail(ValueError(f"no hosted bot named {missing[0]}"))
        one = _Run(self, definition, progress)
        self._running[definition.name] = one
        d = defer.ensureDeferred(one.go())
        d.addBoth(self._ended, definition.name)
        return d

    def _ended(self, result: Any, name: str) -> Any:
        self._running.pop(name, None)
        return result

    def stop(self) -> None:
        """Stop every tournament now: nothing more is scheduled and the games in play are
        abandoned (played again on resume)."""
        self._stopping = True
        for one in list(self._running.values()):
            one.stop()

    def running(self) -> list[str]:
        return list(self._running)


class _Run:
    """One tournament being played."""

    def __init__(self, director: Director, definition: Definition, progress: Callable[[Report], None] | None):
        self.director = director
        self.definition = definition
        self.progress = progress
        self.stored: Stored | None = None
        self.games: list[Game] = []
        self.played: dict[int, Played] = {}
        self.in_play: dict[int, defer.Deferred] = {}
        self.stopped = False
        self._wake: defer.Deferred | None = None
        self._failure: Any = None

    def stop(self) -> None:
        self.stopped = True
        for d in list(self.in_play.values()):
            d.cancel()
        self._poke()

    def _poke(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None and not wake.called:
            wake.callback(None)

    async def go(self) -> Report:
        d = self.definition
        fmt = d.format
        store = self.director.store
        self.stored = await store.open(d.name, d.game, fmt.kind, d.spec)
        self.games = list(self.stored.games)
        self.played = dict(self.stored.played)
        if self.stored.state != "running" and fmt.finished(self.games, self.played) and self._all_played():
            return self._report()
        # One process plays a tournament at a time: a second run (of the daemon or the command) is refused.
        runner = this_runner()
        await store.claim(self.stored.id, runner)
        renew = task.LoopingCall(self._renew, runner)
        renew.clock = self.director.reactor
        renew.start(LEASE / 3, now=False).addErrback(
            lambda f: self.director._log.failure("renewing the claim on tournament {name} failed", f, name=d.name))
        try:
            return await self._play(runner)
        finally:
            if renew.running:
                renew.stop()
            try:
                await store.release(self.stored.id, runner)
            except Exception:
                self.director._log.failure("releasing tournament {name} failed", name=d.name)

    def _renew(self, runner: str) -> defer.Deferred:
        d = self.director.store.claim(self.stored.id, runner)
        d.addErrback(lambda f: self.director._log.failure(
            "tournament {name}: its claim could not be renewed", f, name=self.definition.name))
        return d

    async def _play(self, runner: str) -> Report:
        d = self.definition
        fmt = d.format
        store = self.director.store
        if self.stored.state != "running":
            await store.set_state(self.stored.id, "running")
        self.director.hosted.warm_up([self.director.bots[name.lower()] for name in fmt.bots])
        self._tell()
        while not self.stopped:
            if self._failure is not None:
                self._failure.raiseException()
            room = max(0, max(1, d.concurrency // 2) - self._open_pairs())
            new = fmt.plan(self.games, self.played, room)
            if new:
                await store.schedule(self.stored.id, new)
                self.games += new
            for game in self.games:
                if len(self.in_play) >= d.concurrency:
                    break
                if game.number not in self.played and game.number not in self.in_play:
                    self._start(game)
            if not self.in_play:
                if fmt.finished(self.games, self.played) and self._all_played():
                    break
                if not new:
                    raise RuntimeError(f"tournament {d.name}: its format planned no game and is not over")
                continue
            self._wake = defer.Deferred()
            await self._wake
        if self.stopped:
            await store.set_state(self.stored.id, "stopped")
            self.stored = attrs.evolve(self.stored, state="stopped")
            return self._report()
        await store.set_state(self.stored.id, "finished")
        self.stored = attrs.evolve(self.stored, state="finished")
        result = self._report()
        if self.progress is not None:
            self.progress(result)
        return result

    def _all_played(self) -> bool:
        return all(g.number in self.played for g in self.games)

    def _open_pairs(self) -> int:
        return len({g.pair for g in self.games if g.number not in self.played})

    def _start(self, game: Game) -> None:
        bots = [self.director.bots[name.lower()] for name in game.seats]
        d = self.director.hosted.play(self.definition.game, bots, opening=game.opening)
        self.in_play[game.number] = d
        d.addCallback(self._finished, game)
        d.addErrback(self._failed, game)

    async def _store(self, game: Game, result: Any) -> None:
        played = played_of(game.number, result)
        await self.director.store.finish_game(self.stored.id, played)
        self.played[game.number] = played

    def _finished(self, result: Any, game: Game) -> defer.Deferred | None:
        if self.stopped:  # its programs were ended by the stop: the game says nothing
            self.in_play.pop(game.number, None)
            self._poke()
            return None
        d = defer.ensureDeferred(self._store(game, result))
        d.addErrback(self._failed, game)
        d.addBoth(self._stored, game)
        return d

    def _stored(self, _: Any, game: Game) -> None:
        self.in_play.pop(game.number, None)
        self._tell()
        self._poke()

    def _failed(self, failure: Any, game: Game) -> None:
        self.in_play.pop(game.number, None)
        if failure.check(defer.CancelledError) and self.stopped:
            pass
        else:
            self.director._log.failure(
                "tournament {name}: game {number} failed", failure, name=self.definition.name, number=game.number
            )
            if self._failure is None:
                self._failure = failure
        self._poke()

    def _tell(self) -> None:
        if self.progress is not None:
            self.progress(self._report())

    def _report(self) -> Report:
        stored = attrs.evolve(self.stored, games=tuple(self.games), played=dict(self.played))
        return report(stored, self.definition.format)
