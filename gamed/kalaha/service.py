"""The Kalaha service: owns the lobby, the running games and the connections of one daemon.

Listening ports are added as child services by ``gamed.tap``; ``port_factory`` gives the factory
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

from gamed.config import KalahaConfig, Limits
from gamed.gameservice import GameService
from gamed.kalaha import ai, wire
from gamed.kalaha.game import ComputerPlayer, IKalahaPlayer, KalahaGame
from gamed.kalaha.protocol import KalahaFactory
from gamed.kalaha.rules import A, B, Outcome, Reason, other
from gamed.lobby import Lobby
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
    ):
        super().__init__(limits, clock)
        self.config = config
        self.rng = rng or random.Random()
        self.think = think
        self.lobby = Lobby(2, self._seat, alive=lambda p: getattr(p, "connected", True))
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

    def _seat(self, members: list[Hashable], table: str | None) -> None:
        first, second = members
        mode = self.config.first
        self._tables += 1
        if mode == "alternate" and self._tables % 2 == 0:
            first, second = second, first
        elif mode == "random" and self.rng.random() < 0.5:
            first, second = second, first
        self._start({A: first, B: second})

    def _start(self, players: dict[str, IKalahaPlayer]) -> KalahaGame:
        game = KalahaGame(
            next(self._ids),
            players,
            self.clock,
            move_time=self.config.move_time,
            strikes=self.config.strikes,
            on_end=self._ended,
        )
        self.games[game.id] = game
        game.start()
        return game

    def _ended(self, game: KalahaGame, outcome: Outcome) -> None:
        self.games.pop(game.id, None)
        self.finished += 1

    # --- service ---------------------------------------------------------------------------

    def abort_games(self) -> None:
        """Shutdown: both players of every game are told ``ABORT SHUTDOWN``."""
        if self.games:
            self._log.info("aborting {n} running kalaha games for shutdown", n=len(self.games))
        for game in list(self.games.values()):
            game.abort(Reason.SHUTDOWN)
