"""The Connect Four network service: one game object for two seats, the engine seat, and the
service owning the lobby, the running games and the connections.

Its settings are the ``[connect4]`` section (``gamed.config.Connect4Config``); the daemon serves
it where ``--connect4`` says (off by default while Connect Four is being completed).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed.config import Connect4Config, Limits
from gamed.connect4 import engines as c4engines
from gamed.connect4 import wire
from gamed.connect4.rules import Board, IllegalMove, other
from gamed.connect4.wire import Code, ParseError, Reason
from gamed.gameservice import GameService
from gamed.lobby import Lobby
from gamed.scheduler import StrikePolicy, Turn, TurnClosed, TurnScheduler
from gamed.textline import ConnectionLimits, WriteBatch

Think = Callable[[Callable[[], int]], Deferred]


def run_inline(work: Callable[[], int]) -> Deferred:
    """Run an engine's search at once (unit tests; the daemon passes a thread-pool runner)."""
    return defer.maybeDeferred(work)


# The service's settings are the [connect4] section of the configuration.
Connect4Settings = Connect4Config


class GameError(Exception):
    """A move refused by the game; ``code`` is the protocol error code."""

    def __init__(self, code: Code, text: str):
        super().__init__(text)
        self.code = code


class Connect4Game:
    """One game between ``players[0]`` (moves first) and ``players[1]``.

    Players are told everything through ``game_started(game, player)``,
    ``position_changed(game, move)`` (move is ``(player, column, row)`` or None at the start),
    ``your_move(game, seconds)`` and ``game_ended(game)`` (then ``game.reason``, ``game.winner``,
    ``game.culprit`` and ``game.board.win_line`` tell how).
    """

    _log = Logger()

    def __init__(
        self,
        game_id: int,
        players: dict[int, object],
        board: Board,
        clock: IReactorTime,
        move_time: float | None = 60.0,
        strikes: int = 3,
        on_end: Callable[[Connect4Game], None] = lambda game: None,
    ):
        self.id = game_id
        self.players = dict(players)
        self.names = {p: player.name for p, player in self.players.items()}
        self.board = board
        self.clock = clock
        self.move_time = move_time or None
        self.strike_limit = strikes
        self.strikes = {0: 0, 1: 0}
        self.reason: Reason | None = None
        self.winner: int | None = None
        self.culprit: int | None = None
        self._on_end = on_end
        self._turns = TurnScheduler(clock, self._turn_closed, self.move_time, StrikePolicy(limit=1))

    @property
    def over(self) -> bool:
        return self.reason is not None

    @property
    def aborted(self) -> bool:
        return self.reason in wire.ABORTS

    def player_of(self, seat: object) -> int:
        for p, player in self.players.items():
            if player is seat:
                return p
        raise KeyError(seat)

    def remaining(self) -> float | None:
        return self._turns.remaining()

    def start(self) -> None:
        self._log.info("connect4 game {game} started: {a} vs {b}", game=self.id, a=self.names[0], b=self.names[1])
        for p, player in self.players.items():
            player.game_started(self, p)
        for player in self.players.values():
            player.position_changed(self, None)
        self._open_turn()

    def move(self, seat: object, column: int) -> None:
        """Drop ``seat``'s stone in ``column``; GameError when refused (the caller strikes)."""
        p = self.player_of(seat)
        if self.over:
            raise GameError(Code.NOT_NOW, "the game is over")
        if p != self.board.to_move or not self._turns.is_open_for(p):
            raise GameError(Code.NOT_YOUR_TURN, "it is not your move")
        if not 0 <= column < self.board.width:
            raise GameError(Code.BAD_COLUMN, f"column {column} is not on the board (0..{self.board.width - 1})")
        if not self.board.can_drop(column):
            raise GameError(Code.COLUMN_FULL, f"column {column} is full")
        try:
            self._turns.submit(p, column)
        except TurnClosed:
            raise GameError(Code.NOT_NOW, "too late: the time for your move ran out") from None

    def strike(self, seat: object) -> None:
        """Count a protocol error by ``seat``; enough of them lose the game."""
        if self.over:
            return
        p = self.player_of(seat)
        self.strikes[p] += 1
        if self.strike_limit and self.strikes[p] >= self.strike_limit:
            self._end(Reason.STRIKES, winner=other(p), culprit=p)
        elif p == self.board.to_move:
            seat.your_move(self, self._turns.remaining())

    def resign(self, seat: object) -> None:
        if not self.over:
            p = self.player_of(seat)
            self._end(Reason.RESIGN, winner=other(p), culprit=p)

    def leave(self, seat: object) -> None:
        if not self.over:
            self._end(Reason.DISCONNECT, winner=None, culprit=self.player_of(seat))

    def abort(self, reason: Reason = Reason.SHUTDOWN, seat: object | None = None) -> None:
        if not self.over:
            self._end(reason, winner=None, culprit=None if seat is None else self.player_of(seat))

    def _open_turn(self) -> None:
        p = self.board.to_move
        self._turns.open([p])
        self.players[p].your_move(self, self._turns.remaining())

    def _turn_closed(self, turn: Turn) -> None:
        if self.over:
            return
        p = next(iter(turn.seats))
        if turn.timed_out:
            self._end(Reason.TIMEOUT, winner=other(p), culprit=p)
            return
        column = turn.actions[p][-1]
        try:
            row = self.board.drop(column)
        except IllegalMove:  # pragma: no cover - checked in move()
            self._end(Reason.STRIKES, winner=other(p), culprit=p)
            return
        for player in self.players.values():
            player.position_changed(self, (p, column, row))
        if self.board.winner is not None:
            self._end(Reason.FOUR, winner=self.board.winner, culprit=None)
        elif self.board.is_full():
            self._end(Reason.FULL, winner=None, culprit=None)
        else:
            self._open_turn()

    def _end(self, reason: Reason, winner: int | None, culprit: int | None) -> None:
        self._turns.stop()
        self.reason, self.winner, self.culprit = reason, winner, culprit
        self._log.info(
            "connect4 game {game} ended: {reason}, winner {winner}, {moves} moves",
            game=self.id,
            reason=reason.value,
            winner="none" if winner is None else self.names[winner],
            moves=len(self.board.moves),
        )
        for player in self.players.values():
            player.game_ended(self)
        self._on_end(self)


class EnginePlayer:
    """An engine in a seat. It keeps its own copy of the game (the engine interface is stateful);
    its search runs through ``think`` and its move is played from the clock, never inside a call
    from the game or a line handler."""

    _log = Logger()

    def __init__(self, engine_name: str, engine, level: int, level_name: str, clock: IReactorTime, think: Think):
        self.engine = engine
        self.level = level
        self.name = f"{engine_name}:{level}"
        self.level_name = level_name
        self._clock = clock
        self._think = think
        self._thinking = False
        self._ended = False

    def game_started(self, game: Connect4Game, player: int) -> None:
        self.player = player

    def position_changed(self, game: Connect4Game, move) -> None:
        if move is not None and move[0] != self.player and not game.over:
            if not self.engine.play_move(move[0], move[1]):
                self._log.error("engine refused the opponent's move {m}", m=move)
                self._clock.callLater(0, game.abort, Reason.ENGINE, self)

    def your_move(self, game: Connect4Game, seconds: float | None) -> None:
        if self._thinking:
            return  # a strike re-prompt while the search runs
        self._thinking = True
        engine, player, level = self.engine, self.player, self.level
        d = self._think(lambda: engine.auto_move(player, level))
        d.addCallback(lambda column: self._clock.callLater(0, self._play, game, column))
        d.addErrback(self._failed, game)

    def _failed(self, failure, game: Connect4Game) -> None:
        self._thinking = False
        self._log.failure("engine failed in connect4 game {game}", failure, game=game.id)
        self._clock.callLater(0, game.abort, Reason.ENGINE, self)

    def _play(self, game: Connect4Game, column: int) -> None:
        self._thinking = False
        if game.over:
            self._end_engine()
            return
        if not isinstance(column, int) or column < 0:
            self._log.error("engine gave no move ({c}) in game {game}", c=column, game=game.id)
            game.abort(Reason.ENGINE, self)
            return
        try:
            game.move(self, column)
        except GameError as e:
            self._log.error("engine move {c} refused: {e}", c=column, e=e)
            game.abort(Reason.ENGINE, self)

    def game_ended(self, game: Connect4Game) -> None:
        if not self._thinking:
            self._end_engine()

    def _end_engine(self) -> None:
        if not self._ended:
            self._ended = True
            self.engine.end_game()


class Connect4Service(GameService):
    """Pairs people (by table and board size), starts engine games and runs them all."""

    _log = Logger()
    name = "connect4"

    def __init__(
        self,
        config: Connect4Settings,
        limits: Limits,
        clock: IReactorTime,
        rng: random.Random | None = None,
        think: Think = run_inline,
    ):
        from gamed.connect4.protocol import Connect4Factory

        super().__init__(limits, clock)
        self.config = config
        self.rng = rng or random.Random()
        self.think = think
        self.lobby = Lobby(2, self._seat, alive=lambda p: getattr(p, "connected", True))
        self.games: dict[int, Connect4Game] = {}
        self.finished = 0
        self._ids = itertools.count(1)
        self.batch = WriteBatch()
        self.factory = Connect4Factory(self)

    @property
    def default_size(self) -> tuple[int, int]:
        return (self.config.width, self.config.height)

    def port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer, wire.refusal)

    # --- engines ---------------------------------------------------------------------------

    def engine_names(self) -> list[str]:
        names = c4engines.engine_names()
        if self.config.engines:
            names = [n for n in names if n in self.config.engines]
        return names

    def engine_list(self) -> list[tuple[str, str, list[str]]]:
        result = []
        for name in self.engine_names():
            engine = c4engines.create_engine(name, rng=self.rng)
            result.append((name, engine.description(), c4engines.engine_levels(engine)))
        return result

    def play_engine(self, person, name: str, level: int | None, player: int, size: tuple[int, int]) -> Connect4Game:
        """Start ``person`` (as ``player``) against engine ``name``; ParseError when refused."""
        if name not in self.engine_names():
            raise ParseError(Code.UNKNOWN_ENGINE, f"no engine {name[:32]}; known: {', '.join(self.engine_names())}")
        engine = c4engines.create_engine(name, rng=self.rng)
        levels = c4engines.engine_levels(engine)
        if level is None:
            level = len(levels) // 2
        if not 0 <= level < len(levels):
            raise ParseError(Code.BAD_LEVEL, f"engine {name} has levels 0..{len(levels) - 1}")
        if not engine.new_game(*size):
            raise ParseError(Code.BAD_SIZE, f"engine {name} refuses a {size[0]}x{size[1]} board")
        seat = EnginePlayer(name, engine, level, levels[level], self.clock, self.think)
        return self._start({player: person, other(player): seat}, size)

    # --- people ----------------------------------------------------------------------------

    @staticmethod
    def table_key(table: str | None, size: tuple[int, int], default: tuple[int, int]) -> str | None:
        """The lobby table: people only meet at the same name and the same board size."""
        if table is None and size == default:
            return None
        return f"{table or ''}/{size[0]}x{size[1]}"

    def _seat(self, members: list[Hashable], table: str | None) -> None:
        size = self.default_size
        if table is not None:
            size = wire.parse_size(table.rsplit("/", 1)[1])
        first, second = members
        self._start({0: first, 1: second}, size)

    def _start(self, players: dict[int, object], size: tuple[int, int]) -> Connect4Game:
        game = Connect4Game(
            next(self._ids),
            players,
            Board(*size),
            self.clock,
            move_time=self.config.move_time,
            strikes=self.config.strikes,
            on_end=self._ended,
        )
        self.games[game.id] = game
        game.start()
        return game

    def _ended(self, game: Connect4Game) -> None:
        self.games.pop(game.id, None)
        self.finished += 1

    def abort_games(self) -> None:
        for game in list(self.games.values()):
            game.abort(Reason.SHUTDOWN)
