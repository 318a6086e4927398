"""Connect Four on the generic port (gamed.generic): its host and the seat a generic player takes.

A ``Connect4Seat`` is, to a ``Connect4Game``, a player like a telnet connection: it waits in the
service's lobby (the same tables, keyed by name, board size and time control, so the two meet),
plays the service's engines, and holds its seat in the service's ``SeatBook`` (away for the
grace period when its connection drops; a resume token or a login takes it back). Its refused
acts are the game's strikes. The game keeps one ``Board`` that it changes in place; the seats
are sent a copy per position (``_position``), the state ``gamed.connect4.play.RULES`` reads.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from zope.interface import implementer

from gamed import play
from gamed.connect4.game import Connect4Game, GameError
from gamed.connect4.play import RULES
from gamed.connect4.rules import Board
from gamed.connect4.wire import Code, ParseError, check_size
from gamed.generic import wire
from gamed.generic.host import LobbyHost
from gamed.generic.seat import GenericSeat, IGenericHost, PlayError
from gamed.identity import Identity
from gamed.outcome import outcome_text
from gamed.ratings import winner_scores
from gamed.seats import ISeatHolder
from gamed.timecontrol import TimeControl

PLAYERS = (0, 1)
DEFAULT_ENGINE = "gamed"  # the built-in engine, always offered

# The game's refusals as the rules' reasons.
_REASONS = {
    Code.NOT_YOUR_TURN: play.NOT_YOUR_TURN,
    Code.BAD_COLUMN: play.NO_SUCH_ACTION,
    Code.COLUMN_FULL: play.NO_SUCH_ACTION,
}
# An engine game the service refuses to start, as the wire's codes.
_ENGINE_REFUSALS = {Code.BAD_SIZE: wire.BAD_OPTION, Code.UNKNOWN_ENGINE: wire.NO_SUCH_OPPONENT,
                    Code.BAD_LEVEL: wire.NO_SUCH_OPPONENT}

# Each running game's position as the rules' state: one copy of its board per position, shared
# by its seats (their encoded views are then shared too), replaced when a stone is dropped.
_POSITIONS: weakref.WeakKeyDictionary[Connect4Game, Board] = weakref.WeakKeyDictionary()


def _position(game: Connect4Game) -> Board:
    board = _POSITIONS.get(game)
    if board is None or board.moves != game.board.moves:
        board = _POSITIONS[game] = game.board.copy()
    return board


@implementer(ISeatHolder)
class Connect4Seat(GenericSeat):
    """A generic player of Connect Four (the game's player calls and ISeatHolder)."""

    rules = RULES
    game_name = "connect4"

    def __init__(self, session: Any, service: Any):
        super().__init__(session)
        self.service = service

    def __repr__(self) -> str:
        return f"<Connect4Seat {self.identity.name} {self.host}>"

    @property
    def name(self) -> str:
        return self.identity.name

    def seat_identity(self) -> Identity:
        """Who sits in the game's seat (the service asks every player it seats)."""
        return self.identity

    @staticmethod
    def _options(game: Connect4Game) -> dict:
        board = game.board
        options: dict[str, Any] = {"width": board.width, "height": board.height, "clock": game.control.notation()}
        if game.control.plain:
            options["move_time"] = game.move_time
        return options

    @staticmethod
    def _clock(game: Connect4Game, seconds: float | None) -> dict:
        return {"move": seconds, "banks": [game.clock_left(p) for p in PLAYERS]}

    def _send(self, game: Connect4Game, seconds: float | None = None) -> None:
        self.turn = len(game.board.moves)
        self.send_state(_position(game), self._clock(game, seconds))

    # --- the session's requests ------------------------------------------------------------------

    def submit(self, action: str) -> None:
        try:
            self.game.move(self, int(action))
        except GameError as e:
            if self.game.over:
                raise play.IllegalAction(play.GAME_OVER, str(e)) from None
            raise play.IllegalAction(_REASONS.get(e.code, play.NOT_YOUR_TURN), str(e)) from None

    def resign(self) -> None:
        if self.playing and not self.game.over:
            self.game.resign(self)

    def leave(self) -> None:
        self.service.lobby.leave(self)
        if self.playing and not self.game.over:
            self.service.seats.drop(self.seat, self)  # away for the grace period, then it forfeits
        elif self.game is None:
            self.done = True  # an engine game still starting is not started for it
        self.service.name_released(self)

    def retries_left(self) -> int | None:
        game = self.game
        if game is None or game.over or not game.strike_limit:
            return None
        return game.strike_limit - game.strikes[self.number] - 1

    def strike(self) -> None:
        if self.playing and not self.game.over:
            self.game.strike(self)

    # --- the game's calls ----------------------------------------------------------------------

    def game_started(self, game: Connect4Game, player: int) -> None:
        self.game = game
        self.seat = game.seats[player]
        self.turn = len(game.board.moves)
        self.send_started(game.id, player, [game.names[p] for p in PLAYERS], self._options(game))

    def position_changed(self, game: Connect4Game, move: tuple[int, int, int] | None) -> None:
        board = game.board
        if board.is_over() or board.to_move == self.number:
            return  # the end follows, or your_move with the clock
        self._send(game)

    def your_move(self, game: Connect4Game, seconds: float | None) -> None:
        self._send(game, seconds)  # a strike's prompt again: not sent (the error has the actions)

    def game_resumed(self, game: Connect4Game, player: int) -> None:
        self.game = game
        self.seat = game.seats[player]
        self.turn = len(game.board.moves)
        self.send_started(game.id, player, [game.names[p] for p in PLAYERS], self._options(game), resumed=True)
        self._asked = None
        if game.board.to_move != player:
            self._send(game)

    def opponent_away(self, game: Connect4Game, player: int, seconds_left: float | None) -> None:
        self.send_event("away", player, game.names[player], seconds_left)

    def opponent_back(self, game: Connect4Game, player: int) -> None:
        self.send_event("back", player, game.names[player])

    def game_ended(self, game: Connect4Game) -> None:
        names = [game.names[p] for p in PLAYERS]
        scores = None if game.aborted else list(winner_scores(2, game.winner))
        reason = game.reason.value.lower()
        detailed = reason + (f": {game.detail}" if game.detail else "")
        text = outcome_text("connect4", names, scores or [0.0, 0.0], detailed, rated=not game.aborted)
        self.turn = len(game.board.moves)
        self.send_ended(reason, text, scores, _position(game))
        self.service.name_released(self)
        self.game = None
        self.seat = None


@implementer(IGenericHost)
class Connect4Host(LobbyHost):
    """Connect Four for the generic port, played in ``service`` (a Connect4Service)."""

    name = "connect4"
    rules = RULES
    game_class = Connect4Game
    seat_class = Connect4Seat

    def describe(self) -> dict:
        options = {name: spec.describe() for name, spec in RULES.options.items()}
        width, height = self.service.default_size  # the service's own board, when configured so
        options["width"]["default"], options["height"]["default"] = width, height
        engines = self.service.engine_infos()
        return {
            "title": "Connect Four",
            "seats": [2, 2],
            "options": options,
            "opponents": ["person", "engine"],
            "engines": {name: {"description": info.description, "levels": list(info.levels)}
                        for name, info in engines.items()},
            "levels": {f"{name}:{n}": level for name, info in engines.items() for n, level in enumerate(info.levels)},
            "grammar": "the column to drop a stone in: 0..width-1 (0 is the leftmost)",
        }

    # --- seating -------------------------------------------------------------------------------

    def _size(self, options: dict) -> tuple[int, int]:
        unknown = sorted(set(options) - set(RULES.options))
        if unknown:
            raise PlayError(wire.BAD_OPTION, f"unknown option {unknown[0][:32]}; options: {', '.join(RULES.options)}")
        width, height = self.service.default_size
        try:
            width = RULES.options["width"].check("width", options.get("width", width))
            height = RULES.options["height"].check("height", options.get("height", height))
            check_size((width, height))
        except (ValueError, ParseError) as e:
            raise PlayError(wire.BAD_OPTION, str(e)) from None
        return width, height

    def _engine(self, opponent: dict) -> tuple[str, int | None]:
        """The engine and level (None: its middle one) an engine opponent names: ``name`` the
        engine (the built-in one without), ``level`` its number or name, or ``<engine>:<level>``."""
        engines = self.service.engine_infos()
        name = opponent.get("name")
        level_text = opponent.get("level")
        if name is None and level_text is not None and ":" in level_text:
            name, _, level_text = level_text.partition(":")
        name = name or DEFAULT_ENGINE
        info = engines.get(name)
        if info is None:
            raise PlayError(wire.NO_SUCH_OPPONENT, f"no engine {name[:32]}; engines: {', '.join(engines)}")
        if level_text is None or level_text == "":
            return name, None
        if level_text.isdigit() and int(level_text) < len(info.levels):
            return name, int(level_text)
        for n, level in enumerate(info.levels):
            if level.lower() == level_text.lower() or level.split(" (")[0].lower() == level_text.lower():
                return name, n
        levels = ", ".join(f"{n} {level}" for n, level in enumerate(info.levels))
        raise PlayError(wire.NO_SUCH_OPPONENT, f"engine {name} has no level {level_text[:32]!r}; levels: {levels}")

    def prepare(self, session: Any, request: dict) -> Callable[[], Connect4Seat]:
        service = self.service
        size = self._size(request.get("options") or {})
        control, opponent = self.common(session, request, "Connect Four")
        if opponent["kind"] == "engine":
            engine, level = self._engine(opponent)
            player = 1 if request.get("seat") == 1 else 0
            return lambda: self._computer(session, engine, level, player, size, control)
        table = self.meeting(session, opponent, request.get("table"))
        return lambda: self.join(session, table, service.table_key(table, size, service.default_size, control))

    def _computer(self, session: Any, engine: str, level: int | None, player: int, size: tuple[int, int],
                  control: TimeControl | None) -> Connect4Seat:
        seat = self.seat(session)

        def refused(failure):
            known = failure.check(ParseError)
            if not known:
                seat._log.failure("starting a connect4 engine game for {name} failed", failure, name=seat.name)
            if session.seat is seat:
                session.seat = None
            seat.done = True
            self.service.name_released(seat)
            if session.connected:
                if known:
                    code, text = _ENGINE_REFUSALS.get(failure.value.code, wire.UNAVAILABLE), str(failure.value)
                else:
                    code, text = wire.INTERNAL, "the engine game could not be started"
                session.send(wire.error(code, text, "play"))

        d = self.service.play_engine(seat, engine, level, player, size, control=control)
        d.addErrback(refused)
        if seat.game is None and not seat.done:
            shown = engine if level is None else f"{engine}:{level}"
            session.send({"type": "waiting", "game": "connect4", "for": f"engine {shown}"})
        return seat


def host(service: Any) -> Connect4Host:
    """The registry's ``generic`` builder."""
    return Connect4Host(service)
