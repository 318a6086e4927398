"""The Virtual Fight service: the AI lobby, the running games and the GUI observers of one daemon.

Listening ports are added as child services by ``gamed.tap``: ``ai_port_factory`` serves the AI
port (4500), ``gui_port_factory`` the observer port (4550), both behind the connection limits.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Hashable

import attrs
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed.config import FightConfig, Limits, PlayersConfig
from gamed.fight import rules, wire
from gamed.fight.game import SHUTDOWN, FightGame
from gamed.fight.gui import FightGuiFactory, FightGuiProtocol
from gamed.fight.protocol import FightFactory
from gamed.fight.rules import FightMap, Resolution, Result, resolve_map
from gamed.gameservice import GameService
from gamed.identity import Identity
from gamed.lobby import Lobby
from gamed.observers import LiveHub, LiveTable
from gamed.players import Players
from gamed.seats import SeatBook, record_seat
from gamed.textline import ConnectionLimits, WriteBatch
from gamed.timecontrol import FlagPolicy


_SCORES = {Result.WIN: 1.0, Result.DRAW: 0.5, Result.LOSE: 0.0}


def _refusal(why: str) -> bytes:
    return f"FULL&{why}\r\n".encode("ascii", "replace")


def _account_of(player) -> int | None:
    identity = player.identity
    return identity.account_id if identity is not None else None


class FightService(GameService):
    """Groups AIs into games of ``config.teams`` teams, runs them, and shows them to observers."""

    _log = Logger()
    name = "fight"

    def __init__(
        self,
        config: FightConfig,
        limits: Limits,
        clock: IReactorTime,
        fmap: FightMap | None = None,
        hub: LiveHub | None = None,
        players: Players | None = None,
        grace: float | None = None,
    ):
        super().__init__(limits, clock)
        # Who may play (accounts, guests) and the teams' seats: a dropped AI's seat is kept for
        # ``grace`` seconds (None: [fight] grace, else [players] grace).
        self.players = players if players is not None else Players(PlayersConfig(), None, clock)
        if grace is None:
            grace = config.grace if config.grace is not None else self.players.config.grace
        self.seats = SeatBook(clock, grace, on_presence=self.seat_presence)
        self.hub = hub
        self.live: dict[int, LiveTable] = {}  # game id -> its live table (with a hub)
        # Resolved turns held back from web spectators while fewer than gui_lag turns followed them.
        self._held: dict[int, collections.deque[tuple[str, dict]]] = {}
        self.config = config
        self.map = fmap if fmap is not None else resolve_map(config.map)
        if self.map.teams < config.teams:
            raise ValueError(f"map {self.map.name} has start squares for {self.map.teams} teams, not {config.teams}")
        self._walls = self.map.cell_rows()  # the spectator state's walls, the same list every turn
        self.ai_limits = attrs.evolve(limits, max_line=config.max_line)
        # Observers stay silent while they watch: the events sent to them count as activity (see
        # FightGuiProtocol.deliver), so only one that hears of nothing and says nothing idles out.
        self.gui_limits = attrs.evolve(limits, idle_timeout=config.gui_idle_timeout)
        self.lobby = Lobby(
            config.teams,
            self._seat,
            alive=lambda p: getattr(p, "connected", True) and not p.closing,
            key=_account_of,  # one account's two AIs never play each other
        )
        self.games: dict[int, FightGame] = {}  # running games, oldest first
        self.finished = 0
        self.batch = WriteBatch()
        self._ids = itertools.count(1)
        self._watching: dict[FightGuiProtocol, FightGame] = {}
        self._waiting: dict[FightGuiProtocol, None] = {}  # observers waiting for the next game, in order
        self.ai_factory = FightFactory(self)
        self.gui_factory = FightGuiFactory(self)

    def ai_port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.ai_factory, self.limits.max_connections, self.limits.max_per_peer, _refusal)

    def gui_port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.gui_factory, self.limits.max_connections, self.limits.max_per_peer, _refusal)

    # --- games -----------------------------------------------------------------------------

    @property
    def player_factory(self) -> FightFactory:
        return self.ai_factory

    def _seat(self, members: list[Hashable], table: str | None) -> None:
        players = list(members)
        for team, player in enumerate(players):
            if player.name is None:
                player.name = f"team{team}"
        c = self.config
        # A tournament pair's opening: both games start on its start squares (the colours swapped
        # by the seat order, so the two AIs exchange their starting places).
        number = self.take_opening(table)
        fmap = self.map if number is None else rules.opening_map(self.map, number)
        game = FightGame(
            next(self._ids),
            players,
            fmap,
            self.clock,
            self.batch,
            control=c.time_control,
            on_flag=FlagPolicy(c.on_flag),
            max_turns=c.max_turns,
            strikes=c.strikes,
            max_lines=c.max_lines,
            lag=c.gui_lag,
            gui_interval=c.gui_interval,
            on_end=self._ended,
            on_turn=self._turned if self.hub is not None else None,
        )
        for team, player in enumerate(players):
            identity = player.identity if player.identity is not None else Identity(player.name)
            player.identity = identity
            player.seat = self.seats.seat(game, team, identity, player, player.host)
        self.games[game.id] = game
        if self.hub is not None:
            self.live[game.id] = self._open_table(game, table, number)
        waiting, self._waiting = list(self._waiting), {}
        for observer in waiting:
            self.watch(observer, game)
        game.start()

    def _ended(self, game: FightGame) -> None:
        self.games.pop(game.id, None)
        self.seats.finish(game)  # resume tokens die: a late RESUME is told the game is over
        self.finished += 1
        table = self.live.pop(game.id, None)
        if table is not None:
            for move, state, clocks, timing in self._held.pop(game.id, ()):
                table.moved(None, move, state, None, clocks, timing=timing)  # the game is over: nothing is held back any more
            scores = tuple(_SCORES.get(game.results.get(team), 0.0) for team in range(len(game.players)))
            table.finish(scores, game.end_reason, rated=game.end_reason != SHUTDOWN, seat_reasons=game.out_reasons())
        for observer in [o for o, g in self._watching.items() if g is game]:
            del self._watching[observer]
            self.follow(observer)

    # --- spectators ------------------------------------------------------------------------

    def _open_table(self, game: FightGame, key: str | None = None, opening: int | None = None) -> LiveTable:
        # Only identified teams are rated (accounts, and programs the daemon runs); guests never.
        seats = [record_seat(seat) for seat in self.seats.seats_of(game)]
        c = self.config
        options = {
            "map": self.map.name,
            "teams": len(game.players),
            "turn_time": c.time_control.move or 0,
            "max_turns": c.max_turns,
            "lag": c.gui_lag,
        }
        if not c.time_control.plain:
            options["clock"] = c.time_control.notation()
        if opening is not None:  # a tournament pair's: its start squares, team by team
            options["opening"] = opening
            options["starts"] = [[list(square) for square in team] for team in game.battle.map.starts]
        clocks = None if c.time_control.plain else dict(enumerate(game.banks()))
        return self.hub.open("fight", seats, options, rules.spectator_state(game.battle, 0, walls=self._walls), clocks, key=key)

    def _turned(self, game: FightGame, resolution: Resolution) -> None:
        table = self.live.get(game.id)
        if table is None:
            return
        events = [f"{s.team}.{s.number} shoots {s.direction.name.lower()} ({s.hit.value.lower()})" for s in resolution.shots]
        events += [why for _, why in sorted(game.dropped.items())]
        move = f"turn {game.turn}" + (": " + ", ".join(events) if events else "")
        state = rules.spectator_state(game.battle, game.turn, resolution, self._walls)
        lag = self.config.gui_lag
        clocks = None if game.control.plain else dict(enumerate(game.banks()))
        if not lag:
            table.moved(None, move, state, None, clocks, timing=game.timing)
            return
        # Spectators of a competition are kept ``gui_lag`` turns behind, like the GUI observers.
        held = self._held.setdefault(game.id, collections.deque())
        held.append((move, state, clocks, game.timing))
        while len(held) > lag:
            move, state, clocks, timing = held.popleft()
            table.moved(None, move, state, None, clocks, timing=timing)

    def abort_games(self) -> None:
        if self.games:
            self._log.info("aborting {n} running fight games for shutdown", n=len(self.games))
        for game in list(self.games.values()):
            game.abort(SHUTDOWN)

    # --- observers -------------------------------------------------------------------------

    def listing(self) -> list[str]:
        """One ``GAME`` line per running game, oldest first."""
        return [wire.listing(game.id, game.names, game.turn) for game in self.games.values()]

    def follow(self, observer: FightGuiProtocol) -> None:
        """Show ``observer`` the oldest running game, or the next one to start."""
        if observer.closing:
            return
        for game in self.games.values():
            self.watch(observer, game)
            return
        self._waiting[observer] = None

    def watch(self, observer: FightGuiProtocol, game: FightGame) -> None:
        """Switch ``observer`` to ``game`` (it gets the map and a snapshot at once)."""
        self._unwatch(observer)
        self._watching[observer] = game
        game.channel.add(observer)

    def observer_gone(self, observer: FightGuiProtocol) -> None:
        self._unwatch(observer)

    def _unwatch(self, observer: FightGuiProtocol) -> None:
        self._waiting.pop(observer, None)
        game = self._watching.pop(observer, None)
        if game is not None:
            game.channel.remove(observer)
