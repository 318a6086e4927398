"""The Kalaha service: owns the lobby, the running games, their seats and the connections of one
daemon.

Who plays is the daemon's ``Players`` (logins, guests' names); each game's players sit in seats of
the service's ``SeatBook``, which keeps a dropped player's seat for the grace period. Listening ports are added as child services by ``gamed.tap``; ``port_factory`` gives the factory
they serve, already wrapped in the connection limits.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed.timecontrol import FlagPolicy, TimeControl
from gamed.config import KalahaConfig, LadderConfig, Limits, PlayersConfig
from gamed.gameservice import GameService
from gamed.kalaha import ai, rules, wire
from gamed.kalaha.game import ComputerPlayer, IKalahaPlayer, KalahaGame, opening_names
from gamed.kalaha.protocol import KalahaFactory
from gamed.kalaha.rules import A, B, Move, Outcome, Reason, other
from gamed.ladder.service import for_service
from gamed.lobby import Lobby, clock_table, table_clock
from gamed.observers import LiveHub, LiveTable
from gamed.players import Players
from gamed.ratings import winner_scores
from gamed.seats import SeatBook, record_seat
from gamed.textline import ConnectionLimits, WriteBatch


def run_inline(work: Callable[[], int]) -> Deferred:
    """Run the computer's search at once (unit tests; the daemon uses a thread pool)."""
    return defer.maybeDeferred(work)


class KalahaService(GameService):
    """Pairs players into games and runs them; stops by aborting every game with a reason."""

    _log = Logger()
    name = "kalaha"

    def __init__(
        self,
        config: KalahaConfig,
        limits: Limits,
        clock: IReactorTime,
        rng: random.Random | None = None,
        think: Callable[[Callable[[], int]], Deferred] = run_inline,
        hub: LiveHub | None = None,
        players: Players | None = None,
        grace: float | None = None,
        ladder: LadderConfig | None = None,
    ):
        super().__init__(limits, clock)
        self.hub = hub
        # Without the daemon's Players (unit tests, a daemon without records): guests only.
        self.players = players if players is not None else Players(PlayersConfig(), None, clock)
        if grace is None:
            grace = self.players.config.grace if config.grace is None else config.grace
        self.seats = SeatBook(clock, grace, on_presence=self.seat_presence)
        self.live: dict[int, LiveTable] = {}  # game id -> its live table (with a hub)
        self.config = config
        self.rng = rng or random.Random()
        self.think = think
        self.lobby = Lobby(
            2,
            self._seat,
            alive=lambda p: getattr(p, "connected", True),
            key=lambda p: p.identity.account_id,  # one account's two connections never meet
        )
        self.ladder = for_service("kalaha", ladder, clock, self._ladder_game, hub)
        self.games: dict[int, KalahaGame] = {}
        self.finished = 0
        self._ids = itertools.count(1)
        self._tables = 0
        self.batch = WriteBatch()
        self.factory = KalahaFactory(self)

    def port_factory(self) -> ConnectionLimits:
        """The factory a listening port serves: a KalahaFactory behind the connection limits."""
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer, wire.refusal)

    # --- called by protocols ---------------------------------------------------------------

    def play_computer(self, player: IKalahaPlayer, level: ai.Level, side: str) -> KalahaGame:
        """Start a game between ``player`` (on ``side``) and the computer at ``level``."""
        computer = ComputerPlayer(level, self.clock, self.rng, self.think)
        return self._start({side: player, other(side): computer})

    # --- games -----------------------------------------------------------------------------

    @staticmethod
    def table_key(table: str | None, control: TimeControl | None) -> str | None:
        """The lobby table: players meet at the same name and the same time control they asked for."""
        return clock_table(table, control)

    def _seat(self, members: list[Hashable], table: str | None) -> None:
        _, control = table_clock(table)
        first, second = members
        mode = self.config.first
        self._tables += 1
        if self.lobby.seating_reserved:  # a hosted game: the seats are as reserved
            pass
        elif mode == "alternate" and self._tables % 2 == 0:
            first, second = second, first
        elif mode == "random" and self.rng.random() < 0.5:
            first, second = second, first
        number = self.take_opening(table)  # a tournament's pair: both games start from its opening
        opening = rules.opening(number) if number is not None else ()
        self._start({A: first, B: second}, control, key=table, opening=opening)

    def _ladder_game(self, first: IKalahaPlayer, second: IKalahaPlayer) -> int:
        """A ladder game (gamed.ladder): the seats as the ladder chose them; its id."""
        return self._start({A: first, B: second}, key="ladder").id

    def _start(
        self, players: dict[str, IKalahaPlayer], control: TimeControl | None = None, key: str | None = None,
        opening: tuple[int, ...] = (),
    ) -> KalahaGame:
        game = KalahaGame(
            next(self._ids),
            players,
            self.clock,
            move_time=self.config.move_time,
            control=control if control is not None else self.config.time_control,
            on_flag=FlagPolicy(self.config.on_flag),
            strikes=self.config.strikes,
            on_end=self._ended,
            on_move=self._moved if self.hub is not None else None,
            seats=self.seats,
            opening=opening,
        )
        self.games[game.id] = game
        if self.hub is not None:
            self.live[game.id] = self._open_table(game, key)
        game.start()
        return game

    def _ended(self, game: KalahaGame, outcome: Outcome) -> None:
        self.games.pop(game.id, None)
        self.finished += 1
        if self.ladder is not None:
            self.ladder.ended(game.id)
        table = self.live.pop(game.id, None)
        if table is not None:
            if outcome.aborted:
                scores = (0.0, 0.0)
            else:
                scores = winner_scores(2, None if outcome.winner is None else rules.SIDES.index(outcome.winner))
            state = rules.spectator_state(outcome.position, over=True)
            table.finish(scores, outcome.reason.value.lower(), state, rated=not outcome.aborted)

    # --- spectators ------------------------------------------------------------------------

    def _open_table(self, game: KalahaGame, key: str | None = None) -> LiveTable:
        seats = [record_seat(game.seats[A]), record_seat(game.seats[B])]
        options = {"pits": rules.PITS_PER_SIDE, "stones": rules.STONES_PER_PIT, "move_time": game.move_time}
        if game.opening:  # the sowings before the game, which its initial state shows played
            options["opening"] = opening_names(game.opening)
        if not game.control.plain:
            options["clock"] = game.control.notation()
        return self.hub.open("kalaha", seats, options, rules.spectator_state(game.position), self._clocks(game, A), key=key)

    def _moved(self, game: KalahaGame, move: Move) -> None:
        table = self.live.get(game.id)
        if table is None:
            return
        position = move.position
        to_move = None if position.over else rules.SIDES.index(position.to_move)
        table.moved(
            rules.SIDES.index(move.side),
            f"{move.side}{move.pit}",
            rules.spectator_state(position),
            to_move,
            None if to_move is None else self._clocks(game, position.to_move),
            timing=game.timing,
        )

    @staticmethod
    def _clocks(game: KalahaGame, side: str) -> dict:
        # Each side's bank; without one, the side to move has its whole move time ahead of it
        # (its turn is opened right after this).
        out = {}
        for seat, s in enumerate(rules.SIDES):
            left = game.clock_left(s)
            out[seat] = left if left is not None or not game.control.plain else (game.move_time if s == side else None)
        return out

    # --- service ---------------------------------------------------------------------------

    def abort_games(self) -> None:
        """Shutdown: both players of every game are told ``ABORT SHUTDOWN``."""
        if self.ladder is not None:
            self.ladder.stop()
        if self.games:
            self._log.info("aborting {n} running kalaha games for shutdown", n=len(self.games))
        for game in list(self.games.values()):
            game.abort(Reason.SHUTDOWN)
