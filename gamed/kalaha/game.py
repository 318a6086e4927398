"""One running Kalaha game: two seats, the rules, the move clock and the end of the game.

A ``KalahaGame`` drives the rules through the shared ``TurnScheduler`` (one seat per turn, the move
time limit as the deadline) and tells the players what happens through ``IKalahaPlayer``. Each
player sits in a ``gamed.seats.Seat`` of the service's ``SeatBook``: a network player's seat is
held by its connection, which may drop and come back (or be replaced by a new connection of the
same player) while the game runs; the built-in computer player is a program seat the game drives
itself. The game talks to whoever holds a seat now, and sends nothing to an away seat: its player
gets the whole state when it is back.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import Attribute, Interface, implementer

from gamed.identity import Identity
from gamed.kalaha import ai, rules
from gamed.kalaha.rules import A, B, SIDES, Move, Outcome, Position, Reason, other
from gamed.roundtrip import round_trips
from gamed.scheduler import StrikePolicy, Turn, TurnClosed, TurnScheduler
from gamed.seats import ISeatGame, Seat, SeatBook
from gamed.timecontrol import FlagPolicy, TimeControl


class IKalahaPlayer(Interface):
    """Who plays a side of a Kalaha game, told about everything that happens in it."""

    identity = Attribute("The player's Identity (kind program: the daemon drives it, it never drops).")
    host = Attribute("The client's address (None for a program).")

    def game_started(game: KalahaGame, side: str) -> None:
        """The game began; this player plays ``side``."""

    def position_changed(game: KalahaGame, move: Move | None) -> None:
        """``game.position`` is new: after ``move``, or the opening position when None."""

    def your_move(game: KalahaGame, seconds: float | None) -> None:
        """It is this player's move; ``seconds`` are left to make it (None: no limit)."""

    def game_resumed(game: KalahaGame, side: str) -> None:
        """This player took ``side``'s seat back: it gets the whole state (``your_move`` follows
        if it is to move)."""

    def seat_away(game: KalahaGame, side: str, seconds: float | None) -> None:
        """The player of ``side`` dropped; its seat is kept ``seconds`` more."""

    def seat_back(game: KalahaGame, side: str) -> None:
        """The player of ``side`` is back."""

    def game_ended(game: KalahaGame, outcome: Outcome) -> None:
        """The game is over; nothing more will follow."""


def opening_names(moves: tuple[Move, ...]) -> list[str]:
    """The pits an opening sowed, by name (``A3``, ``B1``), for logs and records."""
    return [f"{m.side}{m.pit}" for m in moves]


@implementer(ISeatGame)
class KalahaGame:
    """Runs one game between ``players[A]`` and ``players[B]``; A moves first. Each player gets a
    seat of ``seats`` (a SeatBook without a grace when None: a drop forfeits at once). With an
    ``opening`` (pit numbers, ``rules.opening``) the game starts from the position those sowings
    reach from the usual start."""

    _log = Logger()

    def __init__(
        self,
        game_id: int,
        players: dict[str, IKalahaPlayer],
        clock: IReactorTime,
        move_time: float | None = 60.0,
        strikes: int = 3,
        on_end: Callable[[KalahaGame, Outcome], None] = lambda game, outcome: None,
        on_move: Callable[[KalahaGame, Move], None] | None = None,
        seats: SeatBook | None = None,
        control: TimeControl | None = None,
        on_flag: FlagPolicy = FlagPolicy.LOSE,
        opening: tuple[int, ...] = (),
    ):
        self.id = game_id
        self.book = seats if seats is not None else SeatBook(clock, 0)
        self.seats: dict[str, Seat] = {}
        self._programs: dict[str, IKalahaPlayer] = {}  # the sides the game drives itself
        for number, side in enumerate(SIDES):
            player = players[side]
            identity: Identity = player.identity
            if identity.kind == "program":
                self._programs[side] = player
                self.seats[side] = self.book.seat(self, number, identity)
            else:
                self.seats[side] = self.book.seat(self, number, identity, player, getattr(player, "host", None))
        # Names cannot change once a game starts, so they are taken once, not on every move.
        self.names = {side: seat.identity.name for side, seat in self.seats.items()}
        # A tournament pair's opening (gamed.kalaha.rules.opening): sowings made before the game
        # starts; both players are told of them as moves, but they are nobody's moves.
        self.opening: tuple[Move, ...] = rules.play_moves(opening)
        self.position = self.opening[-1].position if self.opening else Position.start()
        self.moves: list[Move] = []  # the moves played in this game (not the opening's)
        self.strike_limit = strikes
        self.strikes = {A: 0, B: 0}
        self.outcome: Outcome | None = None
        self._on_end = on_end
        self._on_move = on_move
        self.clock = clock
        self.started_at = clock.seconds()
        # The time control (gamed.timecontrol): ``move_time`` is the short form of a per-move limit.
        self.control = control if control is not None else TimeControl.per_move(move_time)
        self.move_time = self.control.move
        self.timing: dict[int, dict] = {}  # the last move's clock (used, left, credit), for the records
        # Kalaha allows no pass: a player out of time loses (LOSE), or, with DEFAULT, its lowest
        # legal pit is sown for it and it is struck (the game's strikes: at the limit it loses).
        self.on_flag = on_flag
        self._turns = TurnScheduler(
            clock, self._turn_closed, strikes=StrikePolicy(limit=0 if on_flag is FlagPolicy.DEFAULT else 1),
            control=self.control, on_flag=on_flag if on_flag is FlagPolicy.DEFAULT else None, game="kalaha",
        )

    def player(self, side: str) -> IKalahaPlayer | None:
        """Who plays ``side`` now: its connection, the program, or None while the seat is away."""
        return self._programs.get(side) or self.seats[side].holder

    def _present(self) -> Iterator[tuple[str, IKalahaPlayer]]:
        for side in SIDES:
            player = self.player(side)
            if player is not None:
                yield side, player

    def side_of(self, player: IKalahaPlayer) -> str:
        """The side ``player`` plays now (KeyError for a connection that no longer holds a seat)."""
        for side in SIDES:
            if self.player(side) is player:
                return side
        raise KeyError(player)

    @property
    def over(self) -> bool:
        return self.outcome is not None

    @property
    def to_move(self) -> str:
        """The side whose move it is (the last mover's once the game is over)."""
        return self.position.to_move

    def start(self) -> None:
        """Tell both players the game began and ask the side to move for the first move. An
        opening's sowings are told as moves (each ``position_changed``), from the usual start."""
        self._log.info(
            "kalaha game {game} started: A={a} B={b}{opening}",
            game=self.id,
            a=self.seats[A].label(),
            b=self.seats[B].label(),
            opening=" from the opening " + " ".join(opening_names(self.opening)) if self.opening else "",
        )
        for side, player in self._present():
            player.game_started(self, side)
        start = self.position
        if self.opening:  # the players follow the opening from the usual start, move by move
            self.position = Position.start()
        for _, player in self._present():
            player.position_changed(self, None)
        for move in self.opening:
            self.position = move.position
            for _, player in self._present():
                player.position_changed(self, move)
        self.position = start
        self._open_turn()

    def move(self, player: IKalahaPlayer, text: str) -> Move:
        """Play ``text`` (``A3``, ``b2`` or ``1``..``6``) for ``player``.

        Raises IllegalMove, telling why; the caller reports it and calls ``strike``.
        """
        side = self.side_of(player)
        if self.over:
            raise rules.IllegalMove(rules.Illegal.GAME_OVER)
        if side != self.position.to_move or not self._turns.is_open_for(side):
            raise rules.IllegalMove(rules.Illegal.NOT_YOUR_TURN)
        pit = rules.parse_pit(text, side)
        result = rules.play(self.position, pit)
        try:
            self._turns.submit(side, result)
        except TurnClosed:
            # The move came at or after the deadline: the scheduler has just ended the turn.
            raise rules.IllegalMove(rules.Illegal.GAME_OVER) from None
        return result

    def strike(self, player: IKalahaPlayer) -> bool:
        """Count a protocol error by ``player``; True when it lost the game by it."""
        if self.over:
            return False
        side = self.side_of(player)
        self.strikes[side] += 1
        self.seats[side].strikes = self.strikes[side]
        if self.strike_limit and self.strikes[side] >= self.strike_limit:
            self._end(Reason.STRIKES, winner=other(side), culprit=side)
            return True
        self.ask_again(player)
        return False

    def ask_again(self, player: IKalahaPlayer) -> None:
        """After a refused line: prompt ``player`` again if it is its move (the clock runs on)."""
        if not self.over and self.side_of(player) == self.position.to_move:
            player.your_move(self, self._turns.remaining(self.position.to_move))

    def resign(self, player: IKalahaPlayer) -> None:
        if not self.over:
            side = self.side_of(player)
            self._end(Reason.RESIGN, winner=other(side), culprit=side)

    def leave(self, player: IKalahaPlayer) -> None:
        """``player``'s connection is gone: its seat is away for the grace period (the opponent
        is told), or forfeits at once without one. A connection that no longer holds a seat (a
        newer connection of its player took it over) changes nothing."""
        if self.over:
            return
        for side in SIDES:
            if self.seats[side].holder is player:
                self.book.drop(self.seats[side], player)

    def abort(self, reason: Reason = Reason.SHUTDOWN) -> None:
        if not self.over:
            self._end(reason, winner=None, culprit=None)

    def remaining(self) -> float | None:
        return self._turns.remaining()

    def clock_left(self, side: str) -> float | None:
        """What is left on ``side``'s bank now (None without a bank)."""
        return self._turns.clock_left(side)

    def clock_snapshot(self, side: str):
        """``side``'s time for its move and both banks, at one instant (the CLOCK line)."""
        return self._turns.snapshot(side, SIDES)

    # --- ISeatGame: seats that come and go -----------------------------------------------------

    def seat_away(self, seat: Seat) -> None:
        side = SIDES[seat.number]
        self._log.info("kalaha game {game}: {seat} is away", game=self.id, seat=seat.label())
        left = self.book.grace_left(seat)
        for _, player in self._present():
            player.seat_away(self, side, left)

    def seat_back(self, seat: Seat) -> None:
        side = SIDES[seat.number]
        holder = seat.holder
        holder.game_resumed(self, side)
        if not self.over and side == self.position.to_move and self._turns.is_open_for(side):
            holder.your_move(self, self._turns.remaining(side))
        for other_side, player in self._present():
            if other_side != side:
                player.seat_back(self, side)

    def seat_forfeited(self, seat: Seat) -> None:
        if self.over:
            return
        side = SIDES[seat.number]
        if self.moves:
            self._end(Reason.FORFEIT, winner=other(side), culprit=side)
        else:  # nothing was played yet: no result
            self._end(Reason.DISCONNECT, winner=None, culprit=side)

    # --- turns -----------------------------------------------------------------------------------

    def _open_turn(self) -> None:
        side = self.position.to_move
        holder = self.seats[side].holder if side not in self._programs else None
        self._turns.open([side], lag=round_trips({side: holder}))
        player = self.player(side)
        if player is not None:  # an away player's clock runs on; it is asked when it is back
            player.your_move(self, self._turns.remaining(side))

    def _turn_closed(self, turn: Turn) -> None:
        if self.over:
            return
        side = next(iter(turn.seats))
        if turn.capped:  # the game has lasted as long as its time control allows: a draw
            self._end(Reason.TIMEOUT, winner=None, culprit=None)
            return
        if side in turn.defaults:  # out of time under on_flag = default: a strike, and its lowest pit
            self.strikes[side] += 1
            self.seats[side].strikes = self.strikes[side]
            if self.strike_limit and self.strikes[side] >= self.strike_limit:
                self._end(Reason.TIMEOUT, winner=other(side), culprit=side)
                return
            move: Move = rules.play(self.position, self.position.legal_moves()[0])
        elif turn.timed_out:  # a loss for the player out of time, as in every game of gamed
            self._end(Reason.TIMEOUT, winner=other(side), culprit=side)
            return
        else:
            move = turn.actions[side][-1]
        if self._on_move is not None:  # the records keep what the move cost the clock
            self.timing = {SIDES.index(side): turn.clock_entry(side)}
        self.position = move.position
        self.moves.append(move)
        for _, player in self._present():
            player.position_changed(self, move)
        if self._on_move is not None:
            self._on_move(self, move)
        if self.position.over:
            self._end(Reason.END, winner=self.position.winner(), culprit=None)
        else:
            self._open_turn()

    def _end(self, reason: Reason, winner: str | None, culprit: str | None) -> None:
        self._turns.stop()
        self.outcome = Outcome(reason, winner, culprit, self.position)
        present = list(self._present())  # before the seats are closed
        self.book.finish(self)
        self._log.info(
            "kalaha game {game} ended: {reason}, winner {winner}, score {a}-{b}, {moves} moves",
            game=self.id,
            reason=reason.value,
            winner="none" if winner is None else self.seats[winner].label(),
            a=self.position.store(A),
            b=self.position.store(B),
            moves=len(self.moves),
        )
        for _, player in present:
            player.game_ended(self, self.outcome)
        self._on_end(self, self.outcome)


@implementer(IKalahaPlayer)
class ComputerPlayer:
    """The built-in computer opponent. Its search runs through ``think`` (off the reactor thread in
    the daemon) and its move is played from the clock, never from inside the game's own call."""

    _log = Logger()

    host = None

    def __init__(
        self,
        level: ai.Level,
        clock: IReactorTime,
        rng: random.Random,
        think: Callable[[Callable[[], int]], Deferred],
    ):
        self.level = level
        self.name = f"computer-{level.name}"
        self.identity = Identity(self.name, "program")
        self._clock = clock
        self._rng = rng
        self._think = think

    def game_started(self, game: KalahaGame, side: str) -> None:
        pass

    def position_changed(self, game: KalahaGame, move: Move | None) -> None:
        pass

    def your_move(self, game: KalahaGame, seconds: float | None) -> None:
        position = game.position
        d = self._think(lambda: ai.choose_move(position, self.level, self._rng))
        d.addCallback(lambda pit: self._clock.callLater(0, self._play, game, position, pit))
        d.addErrback(lambda f: self._log.failure("computer player failed in game {game}", f, game=game.id))

    def _play(self, game: KalahaGame, position: Position, pit: int) -> None:
        if game.over or game.position is not position:
            return
        try:
            game.move(self, str(pit))
        except rules.IllegalMove as e:
            self._log.error("computer player move {pit} refused: {e}", pit=pit, e=e)
            game.strike(self)

    def game_resumed(self, game: KalahaGame, side: str) -> None:  # pragma: no cover - never drops
        pass

    def seat_away(self, game: KalahaGame, side: str, seconds: float | None) -> None:
        pass

    def seat_back(self, game: KalahaGame, side: str) -> None:
        pass

    def game_ended(self, game: KalahaGame, outcome: Outcome) -> None:
        pass
