"""Kalaha on the generic port (gamed.generic): its host and the seat a generic player takes.

A ``KalahaSeat`` is an ``IKalahaPlayer`` like a telnet connection: it waits in the service's
lobby (the same queue and named tables as the Kalaha port, so the two meet), plays the computer,
and holds its seat in the service's ``SeatBook`` (away for the grace period when its connection
drops; a resume token or a login takes it back). Its refused acts are the game's strikes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zope.interface import implementer

from gamed.generic import wire
from gamed.generic.host import LobbyHost
from gamed.generic.seat import GenericSeat, IGenericHost, PlayError
from gamed.kalaha import ai
from gamed.kalaha.game import IKalahaPlayer, KalahaGame
from gamed.kalaha.play import RULES, illegal
from gamed.kalaha.rules import SIDES, IllegalMove, Move, Outcome
from gamed.outcome import outcome_text
from gamed.ratings import winner_scores
from gamed.seats import ISeatHolder


@implementer(IKalahaPlayer, ISeatHolder)
class KalahaSeat(GenericSeat):
    """A generic player of Kalaha."""

    rules = RULES
    game_name = "kalaha"

    def __init__(self, session: Any, service: Any):
        super().__init__(session)
        self.service = service

    def __repr__(self) -> str:
        return f"<KalahaSeat {self.identity.name} {self.host}>"

    @property
    def name(self) -> str:
        return self.identity.name

    @staticmethod
    def _options(game: KalahaGame) -> dict:
        return {"clock": game.control.notation()} if not game.control.plain else {"move_time": game.move_time}

    def _clock(self, game: KalahaGame, seconds: float | None) -> dict:
        return {"move": seconds, "banks": [game.clock_left(side) for side in SIDES]}

    # --- the session's requests ------------------------------------------------------------------

    def submit(self, action: str) -> None:
        try:
            self.game.move(self, action)
        except IllegalMove as e:
            raise illegal(e) from None

    def resign(self) -> None:
        if self.playing and not self.game.over:
            self.game.resign(self)

    def leave(self) -> None:
        self.service.lobby.leave(self)
        if self.playing and not self.game.over:
            self.game.leave(self)
        self.service.name_released(self)

    def retries_left(self) -> int | None:
        game = self.game
        if game is None or game.over or not game.strike_limit:
            return None
        return game.strike_limit - game.strikes[SIDES[self.number]] - 1

    def strike(self) -> None:
        if self.playing and not self.game.over:
            self.game.strike(self)

    # --- IKalahaPlayer -------------------------------------------------------------------------

    def game_started(self, game: KalahaGame, side: str) -> None:
        self.game = game
        self.seat = game.seats[side]
        self.turn = 0
        self.send_started(game.id, SIDES.index(side), [game.names[s] for s in SIDES], self._options(game))

    def position_changed(self, game: KalahaGame, move: Move | None) -> None:
        if move is not None:
            self.turn += 1
        position = game.position
        if position.over or position.to_move == SIDES[self.number]:
            return  # the end follows, or your_move with the clock
        self.send_state(position, self._clock(game, None))

    def your_move(self, game: KalahaGame, seconds: float | None) -> None:
        self.send_state(game.position, self._clock(game, seconds))

    def game_resumed(self, game: KalahaGame, side: str) -> None:
        self.game = game
        self.seat = game.seats[side]
        self.turn = len(game.moves) + len(game.opening)
        self.send_started(game.id, SIDES.index(side), [game.names[s] for s in SIDES], self._options(game), resumed=True)
        self._asked = None
        if game.position.to_move != side:
            self.send_state(game.position, self._clock(game, None))

    def seat_away(self, game: KalahaGame, side: str, seconds: float | None) -> None:
        self.send_event("away", SIDES.index(side), game.names[side], seconds)

    def seat_back(self, game: KalahaGame, side: str) -> None:
        self.send_event("back", SIDES.index(side), game.names[side])

    def game_ended(self, game: KalahaGame, outcome: Outcome) -> None:
        names = [game.names[s] for s in SIDES]
        if outcome.aborted:
            scores = None
        else:
            scores = list(winner_scores(2, None if outcome.winner is None else SIDES.index(outcome.winner)))
        points = [float(outcome.position.store(s)) for s in SIDES]
        text = outcome_text("kalaha", names, scores or [0.0, 0.0], outcome.reason.value, points=points,
                            rated=not outcome.aborted)
        self.send_ended(outcome.reason.value.lower(), text, scores, outcome.position)
        self.service.name_released(self)
        self.game = None
        self.seat = None


@implementer(IGenericHost)
class KalahaHost(LobbyHost):
    """Kalaha for the generic port, played in ``service`` (a KalahaService)."""

    name = "kalaha"
    rules = RULES
    game_class = KalahaGame
    seat_class = KalahaSeat

    def describe(self) -> dict:
        config = self.service.config
        opponents = ["person"] + (["engine"] if config.computer else [])
        return {
            "title": "Kalaha",
            "seats": [2, 2],
            "options": {name: spec.describe() for name, spec in RULES.options.items()},
            "opponents": opponents,
            "levels": {lv.name: lv.description for lv in ai.LEVELS.values()},
            "grammar": "the pit to sow: A1..A6 for seat 0 (A), B1..B6 for seat 1 (B)",
        }

    def prepare(self, session: Any, request: dict) -> Callable[[], KalahaSeat]:
        service = self.service
        if request.get("options"):
            name = next(iter(request["options"]))
            raise PlayError(wire.BAD_OPTION, f"unknown option {name[:32]}; Kalaha has no options")
        control, opponent = self.common(session, request, "Kalaha")
        if opponent["kind"] == "engine":
            if not service.config.computer:
                raise PlayError(wire.UNAVAILABLE, "the computer player is switched off on this server")
            level = opponent.get("level", ai.DEFAULT_LEVEL)
            if level not in ai.LEVELS:
                raise PlayError(wire.NO_SUCH_OPPONENT, f"no level {level[:32]!r}; levels: {', '.join(ai.LEVELS)}")
            side = SIDES[1] if request.get("seat") == 1 else SIDES[0]
            return lambda: self._computer(session, ai.LEVELS[level], side)
        table = self.meeting(session, opponent, request.get("table"))
        return lambda: self.join(session, table, service.table_key(table, control))

    def _computer(self, session: Any, level: ai.Level, side: str) -> KalahaSeat:
        seat = self.seat(session)
        self.service.play_computer(seat, level, side)
        return seat


def host(service: Any) -> KalahaHost:
    """The registry's ``generic`` builder."""
    return KalahaHost(service)
