"""One Connect Four game between two seats, and the engine seat.

``Connect4Game`` runs the turns on the shared ``TurnScheduler`` (move clock, strikes, resign,
abort) between two seats of the shared seat model (``gamed.seats``: a player who drops is away
for the grace period, then forfeits); players are told everything through a few calls. ``EnginePlayer`` puts an engine in
a seat through the asynchronous facade of ``gamed.connect4.registry``. The service
(``gamed.connect4.service``) pairs players and starts games.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from gamed.connect4 import wire
from gamed.connect4.rules import Board, IllegalMove, other
from gamed.connect4.wire import Code, Reason
from gamed.roundtrip import round_trips
from gamed.scheduler import StrikePolicy, Turn, TurnClosed, TurnScheduler
from gamed.seats import ISeatGame, Seat
from gamed.timecontrol import FlagPolicy, TimeControl


class GameError(Exception):
    """A move refused by the game; ``code`` is the protocol error code."""

    def __init__(self, code: Code, text: str):
        super().__init__(text)
        self.code = code


@implementer(ISeatGame)
class Connect4Game:
    """One game between seat 0 (moves first) and seat 1.

    Each player is a ``gamed.seats.Seat`` (``sit``): a person's seat is held by its connection
    (none while the player is away), an engine's by nobody (the game drives its ``EnginePlayer``).
    Whoever is there is told everything through ``game_started(game, player)``,
    ``position_changed(game, move)`` (move is ``(player, column, row)`` or None at the start),
    ``your_move(game, seconds)``, ``opponent_away(game, player, seconds_left)``,
    ``opponent_back(game, player)``, ``game_resumed(game, player)`` (a player who came back: the
    whole state) and ``game_ended(game)`` (then ``game.reason``, ``game.winner``, ``game.culprit``
    and ``game.board.win_line`` tell how). An away seat is told nothing; its clock runs on.
    """

    _log = Logger()

    def __init__(
        self,
        game_id: int,
        board: Board,
        clock: IReactorTime,
        move_time: float | None = 60.0,
        strikes: int = 3,
        grace: float | None = None,
        on_end: Callable[[Connect4Game], None] = lambda game: None,
        on_move: Callable[[Connect4Game, int, int, int], None] | None = None,
        control: TimeControl | None = None,
        on_flag: FlagPolicy = FlagPolicy.LOSE,
    ):
        self.id = game_id
        self.seats: dict[int, Seat] = {}
        self.engines: dict[int, EnginePlayer] = {}  # the seats an engine plays
        self.names: dict[int, str] = {}
        self.board = board
        self.opening = len(board.moves)  # stones on the board when the game started
        self.clock = clock
        # The time control (gamed.timecontrol): ``move_time`` is the short form of a per-move limit.
        self.control = control if control is not None else TimeControl.per_move(move_time)
        self.move_time = self.control.move
        self.timing: dict[int, dict] = {}  # the last move's clock (used, left, credit), for the records
        self.strike_limit = strikes
        self.grace = grace  # how long an away seat is kept (for the words of a forfeit)
        self.strikes = {0: 0, 1: 0}
        self.reason: Reason | None = None
        self.winner: int | None = None
        self.culprit: int | None = None
        self.detail = ""
        self._on_end = on_end
        self._on_move = on_move
        self._away: set[int] = set()  # the seats it was told are away
        # A player out of time loses (LOSE), or, with DEFAULT, the middle-most open column is
        # played for it and it is struck (the game's strikes: at the limit it loses).
        self.on_flag = on_flag
        self._turns = TurnScheduler(
            clock, self._turn_closed, strikes=StrikePolicy(limit=0 if on_flag is FlagPolicy.DEFAULT else 1),
            control=self.control, on_flag=on_flag if on_flag is FlagPolicy.DEFAULT else None, game="connect4",
        )

    def sit(self, seat: Seat, engine: EnginePlayer | None = None) -> None:
        """Put ``seat`` (its ``number`` is the player, 0 or 1) in the game; ``engine`` plays it
        when it is an engine's seat."""
        self.seats[seat.number] = seat
        self.names[seat.number] = seat.name
        if engine is not None:
            self.engines[seat.number] = engine

    @property
    def over(self) -> bool:
        return self.reason is not None

    @property
    def aborted(self) -> bool:
        return self.reason in wire.ABORTS

    @property
    def played(self) -> bool:
        """True once a stone was dropped in this game (the opening does not count)."""
        return len(self.board.moves) > self.opening

    @property
    def to_move(self) -> int:
        """The player whose move it is."""
        return self.board.to_move

    def player_of(self, who: object) -> int:
        """The player of ``who``: its Seat, the connection holding it, or its engine."""
        for p, seat in self.seats.items():
            if who is not None and (who is seat or who is seat.holder or who is self.engines.get(p)):
                return p
        raise KeyError(who)

    def agent(self, p: int) -> object | None:
        """Who plays ``p`` now: its engine, the connection holding its seat, or None (away)."""
        engine = self.engines.get(p)
        return engine if engine is not None else self.seats[p].holder

    def _present(self, but: int | None = None) -> list[tuple[int, object]]:
        return [(p, a) for p in (0, 1) if p != but and (a := self.agent(p)) is not None]

    def remaining(self) -> float | None:
        return self._turns.remaining()

    def clock_left(self, p: int) -> float | None:
        """What is left on player ``p``'s bank now (None without a bank)."""
        return self._turns.clock_left(p)

    def clock_snapshot(self, p: int):
        """Player ``p``'s time for its move and both banks, at one instant (the CLOCK line)."""
        return self._turns.snapshot(p, (0, 1))

    def start(self) -> None:
        self._log.info("connect4 game {game} started: {a} vs {b}", game=self.id, a=self.names[0], b=self.names[1])
        for p, player in self._present():
            player.game_started(self, p)
        for _, player in self._present():
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
        self.seats[p].strikes = self.strikes[p]
        if self.strike_limit and self.strikes[p] >= self.strike_limit:
            self._end(Reason.STRIKES, winner=other(p), culprit=p)
        else:
            self.ask_again(seat)

    def ask_again(self, seat: object) -> None:
        """After a refused line: prompt ``seat`` again if it is its move (the clock runs on)."""
        p = self.player_of(seat)
        player = self.agent(p)
        if not self.over and p == self.board.to_move and player is not None:
            player.your_move(self, self._turns.remaining(p))

    def resign(self, seat: object) -> None:
        if not self.over:
            p = self.player_of(seat)
            self._end(Reason.RESIGN, winner=other(p), culprit=p)

    def abort(self, reason: Reason = Reason.SHUTDOWN, seat: object | None = None, detail: str = "") -> None:
        """End the game without a result; ``detail`` says why (e.g. what the engine did)."""
        if not self.over:
            self.detail = detail
            self._end(reason, winner=None, culprit=None if seat is None else self.player_of(seat))

    # --- the seat model's calls (ISeatGame) ---------------------------------------------------

    def seat_away(self, seat: Seat) -> None:
        if self.over:
            return
        left = None if seat.grace_ends is None else max(0.0, seat.grace_ends - self.clock.seconds())
        self._away_changed(seat, True)
        self._log.info("connect4 game {game}: {seat} is away", game=self.id, seat=seat.label())
        for _, player in self._present(but=seat.number):
            player.opponent_away(self, seat.number, left)

    def seat_back(self, seat: Seat) -> None:
        if self.over:
            return
        p = seat.number
        self._away_changed(seat, False)
        seat.holder.game_resumed(self, p)
        if p == self.board.to_move and self._turns.is_open_for(p):
            seat.holder.your_move(self, self._turns.remaining(p))
        for _, player in self._present(but=p):
            player.opponent_back(self, p)

    def seat_forfeited(self, seat: Seat) -> None:
        """The grace ran out: a loss for ``seat`` (``FORFEIT``), or, when nothing was played yet,
        the game ends without a result (``ABORT DISCONNECT``)."""
        if self.over:
            return
        self._away_changed(seat, False)
        p = seat.number
        if self.played:
            self._end(Reason.FORFEIT, winner=other(p), culprit=p)
        else:
            self._end(Reason.DISCONNECT, winner=None, culprit=p)

    def _away_changed(self, seat: Seat, away: bool) -> None:
        if away != (seat.number in self._away):
            (self._away.add if away else self._away.discard)(seat.number)

    # --- turns ------------------------------------------------------------------------------

    def _open_turn(self) -> None:
        p = self.board.to_move
        holder = self.seats[p].holder if p not in self.engines else None
        self._turns.open([p], lag=round_trips({p: holder}))
        player = self.agent(p)
        if player is not None:
            player.your_move(self, self._turns.remaining(p))

    def _turn_closed(self, turn: Turn) -> None:
        if self.over:
            return
        p = next(iter(turn.seats))
        if turn.capped:  # the game has lasted as long as its time control allows: a draw
            self._end(Reason.TIMEOUT, winner=None, culprit=None)
            return
        if p in turn.defaults and p not in self.engines:  # on_flag = default: a strike, and the middle column
            self.strikes[p] += 1
            self.seats[p].strikes = self.strikes[p]
            if self.strike_limit and self.strikes[p] >= self.strike_limit:
                self._end(Reason.TIMEOUT, winner=other(p), culprit=p)
                return
            middle = (self.board.width - 1) / 2
            column = min(self.board.legal_columns(), key=lambda c: (abs(c - middle), c))
        elif turn.timed_out:  # (an engine keeps its own board: it loses on time whatever the policy)
            self._end(Reason.TIMEOUT, winner=other(p), culprit=p)
            return
        else:
            column = turn.actions[p][-1]
        if self._on_move is not None:  # the records keep what the move cost the clock
            self.timing = {p: turn.clock_entry(p)}
        try:
            row = self.board.drop(column)
        except IllegalMove:  # pragma: no cover - checked in move()
            self._end(Reason.STRIKES, winner=other(p), culprit=p)
            return
        if self._on_move is not None:
            self._on_move(self, p, column, row)
        for _, player in self._present():
            player.position_changed(self, (p, column, row))
        if self.board.winner is not None:
            self._end(Reason.FOUR, winner=self.board.winner, culprit=None)
        elif self.board.is_full():
            self._end(Reason.FULL, winner=None, culprit=None)
        else:
            self._open_turn()

    def _end(self, reason: Reason, winner: int | None, culprit: int | None) -> None:
        self._turns.stop()
        for seat in self.seats.values():
            self._away_changed(seat, False)
        self.reason, self.winner, self.culprit = reason, winner, culprit
        self._log.info(
            "connect4 game {game} ended: {reason}, winner {winner}, {moves} moves",
            game=self.id,
            reason=reason.value,
            winner="none" if winner is None else self.names[winner],
            moves=len(self.board.moves),
        )
        for _, player in self._present():
            player.game_ended(self)
        self._on_end(self)


class EnginePlayer:
    """An engine in a seat, driven through the asynchronous facade (``registry.AsyncEngine``).

    The engine keeps its own copy of the game (the interface is stateful): it is told the
    opponent's moves, asked for its own with a time budget of ``engine_time`` seconds, and its
    move is played from the clock, never inside a call from the game. A failure, a refusal, an
    illegal answer or a search past the budget aborts the game (``ENGINE``) with the reason. When
    the game ends the engine is ended and closed; a search still running is cancelled (a native
    engine's host process is killed)."""

    _log = Logger()

    def __init__(self, info, engine, level: int, clock: IReactorTime, engine_time: float,
                 on_closed: Callable[[], None] = lambda: None):
        self.info = info
        self.engine = engine
        self.level = level
        self.name = f"{info.name}:{level}"
        self.level_name = info.levels[level]
        self._clock = clock
        self._engine_time = engine_time
        self._thinking: Deferred | None = None
        self._closed = False
        self._on_closed = on_closed

    def game_started(self, game: Connect4Game, player: int) -> None:
        self.player = player

    def position_changed(self, game: Connect4Game, move) -> None:
        if move is None or move[0] == self.player or game.over:
            return
        d = self.engine.play_move(move[0], move[1])

        def told(ok):
            if ok is not True and not game.over:
                self._fail(game, f"the engine refused the legal move {move[1]}")

        d.addCallbacks(told, lambda f: self._fail(game, _why(f)))

    def your_move(self, game: Connect4Game, seconds: float | None) -> None:
        if self._thinking is not None or game.over:
            return  # a strike re-prompt while the search runs
        d = self._thinking = self.engine.auto_move(self.player, self.level)
        d.addTimeout(self._engine_time, self._clock)

        def chosen(column):
            self._thinking = None
            self._clock.callLater(0, self._play, game, column)

        def failed(f):
            self._thinking = None
            if f.check(defer.TimeoutError):
                why = f"the engine did not move within {self._engine_time:g} s"
                self.engine.abort(why)  # its search is cut short now, with the reason we give
            else:
                why = _why(f)
            self._fail(game, why)

        d.addCallbacks(chosen, failed)

    def _fail(self, game: Connect4Game, why: str) -> None:
        if game.over:
            return
        self._log.warn("engine {engine} failed in connect4 game {game}: {why}", engine=self.name, game=game.id, why=why)
        self._clock.callLater(0, game.abort, Reason.ENGINE, self, why)

    def _play(self, game: Connect4Game, column) -> None:
        if game.over:
            return
        if not isinstance(column, int) or column < 0:
            self._fail(game, f"the engine gave no move ({column!r})")
            return
        try:
            game.move(self, column)
        except GameError as e:
            self._fail(game, f"the engine played {column}: {e}")

    def opponent_away(self, game: Connect4Game, player: int, seconds_left: float | None) -> None:
        """An engine waits for a person who is away (its clock runs)."""

    def opponent_back(self, game: Connect4Game, player: int) -> None:
        """Nothing to do: the engine's copy of the game is still right."""

    def game_ended(self, game: Connect4Game) -> None:
        self.close()

    def close(self) -> Deferred:
        """End the engine's game and release it (then ``on_closed()``); a search still running is
        cancelled."""
        if self._closed:
            return defer.succeed(None)
        self._closed = True
        if self._thinking is not None:
            self._thinking.cancel()
            d = self.engine.abort()
        else:
            d = self.engine.end_game()
            d.addErrback(lambda f: None)
            d.addBoth(lambda _: self.engine.close())
        d.addBoth(lambda result: (self._on_closed(), result)[1])
        return d


def _why(failure) -> str:
    """The reason in an engine failure: EngineFailed's, else the exception's text."""
    value = failure.value
    return getattr(value, "reason", None) or f"{type(value).__name__}: {value}"
