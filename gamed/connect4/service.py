"""The Connect Four network service: the lobby, the engines (built-in and the engines folder),
engine games and matches, the running games (``gamed.connect4.game``) and the connections.

Its settings are the ``[connect4]`` section (``gamed.config.Connect4Config``); the daemon serves
it where ``--connect4`` says (``tcp:4700`` by default).
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Hashable

import attrs
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed.config import Connect4Config, LadderConfig, Limits, PlayersConfig
from gamed.connect4 import engines as c4engines
from gamed.connect4 import registry, rules, wire
from gamed.connect4.game import Connect4Game, EnginePlayer
from gamed.connect4.rules import Board, IllegalMove, other
from gamed.connect4.wire import Code, ParseError, Reason
from gamed.gameservice import GameService
from gamed.identity import Identity
from gamed.ladder.service import for_service
from gamed.lobby import Lobby, clock_table, table_clock
from gamed.observers import LiveHub, LiveTable
from gamed.players import Players
from gamed.records import Seat
from gamed.seats import SeatBook, record_seat
from gamed.ratings import winner_scores
from gamed.textline import ConnectionLimits, WriteBatch
from gamed.timecontrol import FlagPolicy, TimeControl

# The service's settings are the [connect4] section of the configuration.
Connect4Settings = Connect4Config

ENGINES_WAIT = 1.0  # seconds ENGINES waits for libraries still being asked before listing them so


def _when_fired(d: Deferred) -> Deferred:
    """A Deferred of None that fires when ``d`` does, leaving ``d``'s own result alone (and that
    can be cancelled without touching ``d``)."""
    out = Deferred()
    d.addBoth(lambda result: (out.called or out.callback(None), result)[1])
    return out


def _account_key(member) -> int | None:
    """The lobby keeps two connections of one account apart (never paired with each other)."""
    identity = getattr(member, "identity", None)
    return identity.account_id if identity is not None else None


class _MatchTable:
    """Reports one game of an engine match to its live table (``match.Series``' watcher)."""

    def __init__(self, table: LiveTable):
        self.table = table

    def moved(self, board: Board, player: int, column: int) -> None:
        to_move = None if board.is_over() else board.to_move
        self.table.moved(player, str(column), rules.spectator_state(board), to_move)

    def ended(self, board: Board, winner: int | None, reason: str, counted: bool) -> None:
        scores = winner_scores(2, winner)
        self.table.finish(scores if counted else (0.0, 0.0), reason, rules.spectator_state(board), rated=counted)


class Connect4Service(GameService):
    """Pairs people (by table and board size), starts engine games and matches and runs them all.

    Engines are the built-in ones plus every ``<engines_dir>/<name>/engine.so``; the folder is
    looked at on start-up and by every ENGINES, PLAY and MATCH, and each new or changed library
    (path, mtime, size) is asked for its description and levels in the background, once: an engine
    dropped in appears without a restart, and one that hangs is listed as unavailable with the
    reason without delaying anybody else (a PLAY of it waits for its answer). Native engines need ``reactor`` (for processes);
    without one only the built-in engines are offered.

    Who plays is the shared seat model's business: ``players`` logs accounts in (None: guests
    only), ``seats`` (a ``SeatBook``) keeps a dropped player's seat for ``grace`` seconds (None:
    ``[connect4] grace``, else ``[players] grace``).
    """

    _log = Logger()
    name = "connect4"

    def __init__(
        self,
        config: Connect4Settings,
        limits: Limits,
        clock: IReactorTime,
        rng: random.Random | None = None,
        think: registry.Think = registry.run_inline,
        reactor=None,
        hub: LiveHub | None = None,
        players: Players | None = None,
        grace: float | None = None,
        ladder: LadderConfig | None = None,
    ):
        from gamed.connect4.protocol import Connect4Factory

        super().__init__(limits, clock)
        self.config = config
        self.rng = rng or random.Random()
        self.think = think
        self.reactor = reactor
        self.hub = hub
        self.players = players if players is not None else Players(PlayersConfig(), None, clock)
        if grace is None:
            grace = config.grace if config.grace is not None else self.players.config.grace
        self.seats = SeatBook(clock, grace, on_presence=self.seat_presence)
        self.live: dict[int, LiveTable] = {}  # game id -> its live table (with a hub)
        self.lobby = Lobby(2, self._seat, alive=lambda p: getattr(p, "connected", True), key=_account_key)
        self.ladder = for_service("connect4", ladder, clock, self._ladder_game, hub)
        self.games: dict[int, Connect4Game] = {}
        self.matches: set[object] = set()
        self.finished = 0
        self._ids = itertools.count(1)
        self.batch = WriteBatch()
        self.factory = Connect4Factory(self)
        self._builtin = {name: registry.python_info(name) for name in c4engines.engine_names()}
        self._native: dict[str, registry.EngineInfo] = {}  # what each library said, usable or not
        self._stamps: dict[str, tuple] = {}  # {name: (path, mtime, size)} each info describes
        self._probes: dict[str, tuple[tuple, Deferred]] = {}  # libraries being asked: (stamp, done)
        self._live: set[object] = set()  # engines opened and not yet released
        self.stopping = False

    @property
    def default_size(self) -> tuple[int, int]:
        return (self.config.width, self.config.height)

    def port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer, wire.refusal)

    def startService(self) -> None:  # noqa: N802
        super().startService()
        self._refresh()  # the first look at the engines folder, in the background

    # --- engines ---------------------------------------------------------------------------

    @property
    def engines_dir(self) -> str | None:
        return self.config.engines_dir if self.reactor is not None and self.config.engines_dir else None

    @property
    def host_policy(self) -> dict:
        """How native engine hosts run: their niceness and CPUs (``engine_nice``, ``engine_cpus``:
        "auto" keeps them off the first CPU when there are several, so searches leave the
        daemon a CPU; measured in docs/performance.md)."""
        spec = self.config.engine_cpus
        if spec == "all":
            cpus = None
        elif spec == "auto":
            available = sorted(os.sched_getaffinity(0))
            cpus = frozenset(available[1:]) if len(available) > 1 else None
        else:
            cpus = frozenset(int(c) for c in spec.split(","))
        return {"nice": self.config.engine_nice, "cpus": cpus}

    def _folder(self) -> dict[str, tuple]:
        found = {}
        for name, path in registry.native_libraries(self.engines_dir).items():
            try:
                st = os.stat(path)
            except OSError:
                continue
            found[name] = (path, st.st_mtime_ns, st.st_size)
        return found

    def _refresh(self) -> None:
        """Forget the libraries gone from the engines folder and start asking every new or changed
        one (by path, mtime and size) for its description and levels, in the background."""
        folder = self._folder()
        for name in [n for n in {*self._native, *self._probes} if n not in folder]:
            self._native.pop(name, None)
            self._stamps.pop(name, None)
            self._probes.pop(name, None)  # its answer, when it comes, is dropped
        for name, stamp in folder.items():
            probing = self._probes.get(name)
            if self._stamps.get(name) == stamp or (probing is not None and probing[0] == stamp):
                continue
            self._probe(name, stamp)

    def _probe(self, name: str, stamp: tuple) -> None:
        """Ask one library (in its own host, each call within ``engine_time``); ``_probes[name]``
        holds a Deferred of None that fires once its EngineInfo (usable or not, with the reason)
        is known."""
        done = Deferred()
        self._probes[name] = (stamp, done)

        def asked(info):
            try:
                self._asked(name, stamp, info)
            finally:
                done.callback(None)

        registry.native_info(
            self.reactor, name, stamp[0], call_timeout=self.config.engine_time, start_timeout=self.config.engine_time
        ).addBoth(asked)

    def _asked(self, name: str, stamp: tuple, info) -> None:
        """Keep what library ``name`` said, unless it changed (or went) meanwhile."""
        if not isinstance(info, registry.EngineInfo):  # pragma: no cover - native_info reports failures in info.error
            info = registry.EngineInfo(name, "", (), "native", stamp[0], error=info.getErrorMessage())
        if self._probes.get(name, (None,))[0] != stamp:
            return  # the library changed again or went meanwhile: a newer probe describes it
        del self._probes[name]
        if info.usable:
            self._log.info("connect4 engine {name}: {desc} ({n} levels)", name=name, desc=info.description, n=len(info.levels))
        else:
            self._log.warn("connect4 engine {name} ({path}) is unavailable: {why}", name=name, path=stamp[0], why=info.error or "no levels")
        self._native[name] = info
        self._stamps[name] = stamp
        self._native = dict(sorted(self._native.items()))

    def engines(self, wanted=None) -> Deferred:
        """Deferred ``{name: EngineInfo}`` of the engines offered (usable ones only), after
        looking at the engines folder again. Libraries still being asked are waited for: those
        named in ``wanted`` for as long as asking them takes; with ``wanted`` None, all of them
        for at most ENGINES_WAIT seconds (a library that hangs delays nobody else)."""
        self._refresh()
        if wanted is None:
            pending, bound = [d for _, d in self._probes.values()], ENGINES_WAIT
        else:
            pending, bound = [self._probes[n][1] for n in wanted if n in self._probes], None
        if not pending:
            return defer.succeed(self._offered())
        waiting = defer.DeferredList([_when_fired(d) for d in pending], consumeErrors=True)
        if bound is not None:
            waiting.addTimeout(bound, self.clock)
            waiting.addErrback(lambda f: f.trap(defer.TimeoutError, defer.CancelledError) and None)
        return waiting.addCallback(lambda _: self._offered())

    def _wanted(self, name: str) -> bool:
        return not self.config.engines or name in self.config.engines

    def _offered(self) -> dict[str, registry.EngineInfo]:
        infos = {**self._builtin, **{n: i for n, i in self._native.items() if i.usable}}
        return {n: i for n, i in infos.items() if self._wanted(n)}

    def engine_infos(self) -> dict[str, registry.EngineInfo]:
        """``{name: EngineInfo}`` of the engines offered as far as known now (the generic port's
        ``games`` reply and its checks of an engine opponent)."""
        return self._offered()

    def engine_names(self) -> list[str]:
        """The engines offered as far as known now (without looking at the folder again)."""
        return list(self._offered())

    def engine_list(self) -> Deferred:
        """Deferred ``[(name, description, [level names])]`` for the ENGINES reply: the engines
        offered, and each library that cannot be played as ``unavailable: <why>`` without levels."""

        def listing(offered):
            rows = [(i.name, i.description, list(i.levels)) for i in self._builtin.values() if i.name in offered]
            for name in sorted(set(self._native) | set(self._probes)):
                if not self._wanted(name):
                    continue
                if name in self._probes:
                    rows.append((name, "unavailable: still being asked for its description and levels", []))
                elif name in offered:
                    info = offered[name]
                    rows.append((name, info.description, list(info.levels)))
                else:
                    rows.append((name, f"unavailable: {self._native[name].error or 'it names no levels'}", []))
            return rows

        return self.engines().addCallback(listing)

    @property
    def engine_seats(self) -> int:
        """Engines in use now (in games, in matches, being started)."""
        return len(self._live)

    def _open(self, info, level: int | None) -> tuple[object, int]:
        """A fresh AsyncEngine for ``info`` and the level to play (ParseError when refused)."""
        if level is None:
            level = len(info.levels) // 2
        if not 0 <= level < len(info.levels):
            raise ParseError(Code.BAD_LEVEL, f"engine {info.name} has levels 0..{len(info.levels) - 1}")
        if self.config.engine_games and len(self._live) >= self.config.engine_games:
            raise ParseError(Code.BUSY, f"all {self.config.engine_games} engine seats are busy; try again later")
        try:
            engine = registry.open_engine(
                self.reactor, info.name, self.engines_dir, think=self.think, rng=self.rng,
                # The move time is enforced on our clock (EnginePlayer, match._Guarded), which then
                # kills the host with that reason; the host's own limit is only a backstop.
                call_timeout=self.config.engine_time, auto_timeout=self.config.engine_time + 1,
                start_timeout=self.config.engine_time, **self.host_policy,
            )
        except registry.UnknownEngine:  # removed from the folder since it was listed
            raise ParseError(Code.UNKNOWN_ENGINE, f"engine {info.name} is no longer installed") from None
        except OSError as e:  # the host process could not be started
            self._log.error("cannot start connect4 engine {name}: {e}", name=info.name, e=e)
            raise ParseError(Code.ENGINE_FAILED, f"engine {info.name} failed to start: {e.strerror or e}") from None
        self._live.add(engine)
        return engine, level

    def _release(self, result, engine):
        """``engine`` is closed (a Deferred's callback): its seat is free again."""
        self._live.discard(engine)
        return result

    def _lookup(self, infos, name: str):
        if name not in infos:
            known = self._native.get(name)
            if known is not None and self._wanted(name):
                why = known.error or "it names no levels"
                raise ParseError(Code.ENGINE_FAILED, f"engine {name[:32]} is unavailable: {why}")
            raise ParseError(Code.UNKNOWN_ENGINE, f"no engine {name[:32]}; known: {', '.join(infos)}")
        return infos[name]

    def play_engine(self, person, name: str, level: int | None, player: int, size: tuple[int, int],
                    opening: tuple[int, ...] = (), control: TimeControl | None = None) -> Deferred:
        """Start ``person`` (as ``player``) against engine ``name``, from the position after the
        ``opening`` columns, on ``control`` (None: the configured time control); Deferred of the game, failing with ParseError when refused (unknown
        engine or level, size refused, illegal or finished opening, engine broken)."""
        board = Board(*size)
        for n, column in enumerate(opening):
            try:
                board.drop(column)
            except IllegalMove as e:
                return defer.fail(ParseError(Code.BAD_COLUMN, f"opening move {n + 1} ({column}) is illegal: {e}"))
            if board.is_over():
                how = "four in a line" if board.winner is not None else "the board is full"
                return defer.fail(ParseError(
                    Code.BAD_COLUMN, f"the opening ends the game at move {n + 1} ({column}): {how}; nothing is left to play"
                ))
        return self.engines((name,)).addCallback(self._play_engine, person, name, level, player, board, control)

    @defer.inlineCallbacks
    def _play_engine(self, infos, person, name, level, player, board, control):
        size = (board.width, board.height)
        info = self._lookup(infos, name)
        engine, level = self._open(info, level)
        seat = EnginePlayer(info, engine, level, self.clock, self.config.engine_time,
                            on_closed=lambda: self._live.discard(engine))
        try:
            ok = yield engine.new_game(*size).addTimeout(self.config.engine_time, self.clock)
            if ok is not True:
                engine.close().addBoth(self._release, engine)
                raise ParseError(Code.BAD_SIZE, f"engine {name} refuses a {size[0]}x{size[1]} board")
            for n, column in enumerate(board.moves):
                ok = yield engine.play_move(n % 2, column).addTimeout(self.config.engine_time, self.clock)
                if ok is not True:
                    raise ValueError(f"it refused the opening move {n + 1} ({column})")
        except ParseError:
            raise
        except Exception as e:
            engine.abort().addBoth(self._release, engine)
            why = getattr(e, "reason", None) or str(e) or f"no answer within {self.config.engine_time:g} s"
            self._log.warn("connect4 engine {name} failed to start: {why}", name=name, why=why)
            raise ParseError(Code.ENGINE_FAILED, f"engine {name} failed to start: {why}") from None
        if not getattr(person, "connected", True) or self.stopping or person.game is not None:
            seat.close()
            return None
        return self._start({player: person, other(player): seat}, board, control)

    # --- engine-vs-engine matches ------------------------------------------------------------

    def play_match(self, watcher, a: tuple[str, int | None], b: tuple[str, int | None], games: int,
                   size: tuple[int, int]) -> Deferred:
        """Run an engine-vs-engine series (colours alternating), telling ``watcher`` through
        ``match_started(names)``, ``match_game(result)`` and ``match_ended(summary or None, why)``;
        every game is recorded. Deferred firing when the match is set up (ParseError if refused)."""
        if not 1 <= games <= self.config.match_games:
            raise ParseError(Code.BAD_ARGUMENTS, f"a match has 1 to {self.config.match_games} games")
        return self.engines((a[0], b[0])).addCallback(self._play_match, watcher, a, b, games, size)

    def _play_match(self, infos, watcher, a, b, games, size):
        from gamed.connect4 import match

        info_a, info_b = self._lookup(infos, a[0]), self._lookup(infos, b[0])
        engine_a, level_a = self._open(info_a, a[1])
        try:
            engine_b, level_b = self._open(info_b, b[1])
        except ParseError:
            engine_a.close().addBoth(self._release, engine_a)
            raise
        running = match.Series(engine_a, engine_b, games, size, (level_a, level_b), self.clock, self.config.engine_time,
                               watch=self._watch_match_game)
        self.matches.add(running)
        watcher.match_started(running)

        def game_done(result):
            watcher.match_game(running, result)

        def ended(summary):
            self.matches.discard(running)
            for engine in (engine_a, engine_b):
                engine.close().addBoth(self._release, engine)
            watcher.match_ended(running, summary, running.stopped)

        running.run(game_done).addCallback(ended)
        return running

    # --- people ----------------------------------------------------------------------------

    @staticmethod
    def table_key(table: str | None, size: tuple[int, int], default: tuple[int, int],
                  control: TimeControl | None = None) -> str | None:
        """The lobby table: people only meet at the same name, the same board size and the same
        time control they asked for (``<name>/<WxH>``, with the control: ``gamed.lobby.clock_table``)."""
        key = None if table is None and size == default else f"{table or ''}/{size[0]}x{size[1]}"
        return clock_table(key, control)

    def hosted_table(self, name: str) -> str:
        return self.table_key(name, self.default_size, self.default_size)

    def _seat(self, members: list[Hashable], table: str | None) -> None:
        key, control = table_clock(table)
        size = self.default_size if key is None else wire.parse_size(key.rsplit("/", 1)[1])
        first, second = members
        board = Board(*size)
        number = self.take_opening(table)
        if number is not None:  # a tournament's pair: both games start from its opening
            for column in rules.opening(board.width, number):
                if board.heights[column] >= board.height:
                    break  # a long opening on a low board: it stops where a column is full
                board.drop(column)
        self._start({0: first, 1: second}, board, control, key=table)

    def _ladder_game(self, first: object, second: object) -> int:
        """A ladder game (gamed.ladder) on the default board, the seats as the ladder chose them; its id."""
        return self._start({0: first, 1: second}, Board(*self.default_size), key="ladder").id

    def _start(
        self, players: dict[int, object], board: Board, control: TimeControl | None = None, key: str | None = None
    ) -> Connect4Game:
        game = Connect4Game(
            next(self._ids),
            board,
            self.clock,
            control=control if control is not None else self.config.time_control,
            on_flag=FlagPolicy(self.config.on_flag),
            strikes=self.config.strikes,
            grace=self.seats.grace,
            on_end=self._ended,
            on_move=self._moved if self.hub is not None else None,
        )
        for p, player in sorted(players.items()):
            if isinstance(player, EnginePlayer):  # a program the daemon runs: nobody holds its seat
                game.sit(self.seats.seat(game, p, Identity(player.name, "program")), engine=player)
            else:
                game.sit(self.seats.seat(game, p, player.seat_identity(), holder=player, host=player.host))
        self.games[game.id] = game
        if self.hub is not None:
            self.live[game.id] = self._open_table(game, key)
        game.start()
        return game

    def _ended(self, game: Connect4Game) -> None:
        self.seats.finish(game)  # its resume tokens are dead now
        self.games.pop(game.id, None)
        self.finished += 1
        if self.ladder is not None:
            self.ladder.ended(game.id)
        table = self.live.pop(game.id, None)
        if table is not None:
            if game.aborted:
                scores = (0.0, 0.0)
            else:
                scores = winner_scores(2, game.winner)
            reason = game.reason.value.lower() + (f": {game.detail}" if game.detail else "")
            table.finish(scores, reason, rules.spectator_state(game.board), rated=not game.aborted)

    # --- spectators and records ------------------------------------------------------------

    def _open_table(self, game: Connect4Game, key: str | None = None) -> LiveTable:
        seats = []
        for p in (0, 1):
            seat = record_seat(game.seats[p])
            seats.append(attrs.evolve(seat, kind="engine") if p in game.engines else seat)
        board = game.board
        options = {"width": board.width, "height": board.height, "move_time": game.move_time,
                   "opening": list(board.moves)}
        if not game.control.plain:
            options["clock"] = game.control.notation()
        return self.hub.open("connect4", seats, options, rules.spectator_state(board), self._clocks(game), key=key)

    def _moved(self, game: Connect4Game, player: int, column: int, row: int) -> None:
        table = self.live.get(game.id)
        if table is not None:
            board = game.board
            to_move = None if board.is_over() else board.to_move
            table.moved(player, str(column), rules.spectator_state(board), to_move,
                        None if to_move is None else self._clocks(game), timing=game.timing)

    @staticmethod
    def _clocks(game: Connect4Game) -> dict:
        # Each player's bank; without one, the player to move has its whole move time ahead of it
        # (its turn is opened right after this).
        out = {}
        for p in (0, 1):
            left = game.clock_left(p)
            to_move = p == game.board.to_move and not game.board.is_over()
            out[p] = left if left is not None or not game.control.plain else (game.move_time if to_move else None)
        return out

    def _watch_match_game(self, number: int, names: tuple[str, str], board: Board):
        """A live table for one game of an engine match (both seats are engines, rated)."""
        if self.hub is None:
            return None
        seats = [Seat(p, names[p], rated=True, kind="engine") for p in (0, 1)]
        options = {"width": board.width, "height": board.height, "match_game": number}
        return _MatchTable(self.hub.open("connect4", seats, options, rules.spectator_state(board), None))

    def stopService(self) -> Deferred:  # noqa: N802
        """Stop as every game service does, then wait until every engine has been closed (no
        engine host process outlives the daemon)."""
        self.stopping = True
        stopped = super().stopService()
        closes = [engine.close() for engine in list(self._live)]
        if not closes:
            return stopped
        engines = defer.DeferredList(closes, consumeErrors=True)
        engines.addTimeout(self.config.engine_time + 2, self.clock)
        engines.addErrback(lambda f: None)
        return defer.gatherResults([stopped, engines])

    def abort_games(self) -> None:
        self.stopping = True
        if self.ladder is not None:
            self.ladder.stop()
        for game in list(self.games.values()):
            game.abort(Reason.SHUTDOWN)
        for running in list(self.matches):
            running.stop("the server is shutting down", "shutdown")
