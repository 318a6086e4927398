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
from gamed.generic.seat import GenericSeat, IGenericHost, PlayError
from gamed.identity import LoginError, Refusal
from gamed.kalaha import ai
from gamed.kalaha.game import IKalahaPlayer, KalahaGame
from gamed.kalaha.play import RULES, illegal
from gamed.kalaha.rules import SIDES, IllegalMove, Move, Outcome
from gamed.outcome import outcome_text
from gamed.ratings import winner_scores
from gamed.seats import ISeatHolder, Seat
from gamed import timecontrol
from gamed.timecontrol import TimeControl


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
class KalahaHost:
    """Kalaha for the generic port, played in ``service`` (a KalahaService)."""

    name = "kalaha"
    rules = RULES

    def __init__(self, service: Any):
        self.service = service

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
        control = None
        if "clock" in request:
            try:
                control = timecontrol.parse(request["clock"])
            except ValueError as e:
                raise PlayError(wire.BAD_OPTION, f"clock: {e}") from None
        if service.name_in_use(session.identity.name):
            raise PlayError(wire.REFUSED, f"{Refusal.NAME_IN_USE.value}: {session.identity.name}")
        opponent = request.get("opponent", {"kind": "person"})
        kind = opponent["kind"]
        if kind == "bot":
            raise PlayError(wire.NO_SUCH_OPPONENT, "Kalaha games against a hosted bot are arranged by tournaments (docs/hosting.md)")
        if kind == "engine":
            if not service.config.computer:
                raise PlayError(wire.UNAVAILABLE, "the computer player is switched off on this server")
            level = opponent.get("level", ai.DEFAULT_LEVEL)
            if level not in ai.LEVELS:
                raise PlayError(wire.NO_SUCH_OPPONENT, f"no level {level[:32]!r}; levels: {', '.join(ai.LEVELS)}")
            side = SIDES[1] if request.get("seat") == 1 else SIDES[0]
            return lambda: self._computer(session, ai.LEVELS[level], side)
        table = request.get("table")
        if "name" in opponent:
            if opponent["name"] == session.identity.name:
                raise PlayError(wire.NO_SUCH_OPPONENT, "you cannot meet yourself")
            table = "meet " + " ".join(sorted((session.identity.name, opponent["name"])))
        return lambda: self._lobby(session, table, control)

    def _seat(self, session: Any) -> KalahaSeat:
        seat = KalahaSeat(session, self.service)
        self.service.name_changed(seat, seat.name)
        session.seat = seat  # before it is seated: the game's first messages are its
        return seat

    def _computer(self, session: Any, level: ai.Level, side: str) -> KalahaSeat:
        seat = self._seat(session)
        self.service.play_computer(seat, level, side)
        return seat

    def _lobby(self, session: Any, table: str | None, control: TimeControl | None) -> KalahaSeat:
        service = self.service
        seat = self._seat(session)
        service.lobby.join(seat, service.table_key(table, control))
        if seat.game is None:
            shown = table if table is None or not table.startswith("meet ") else None
            session.send({"type": "waiting", "game": "kalaha", "for": f"table {shown}" if shown else "an opponent"})
        return seat

    def take_back(self, session: Any, token: str | None) -> KalahaSeat | None:
        seats = self.service.seats
        if token is None:
            found: Seat | None = seats.find_account(session.identity, away_only=True)
            if found is None:
                return None
        else:
            try:
                found = seats.find_token(token)
            except LoginError as e:
                if e.refusal is Refusal.UNKNOWN_RESUME:
                    return None  # perhaps another game's
                raise
            if found.identity.account and self.service.players.banned(found.identity.name):
                raise LoginError(Refusal.BANNED)
            if session.identity.account and found.identity.account_id != session.identity.account_id:
                raise LoginError(Refusal.UNKNOWN_RESUME)
        if not isinstance(found.game, KalahaGame):
            return None
        session.identity = found.identity
        seat = KalahaSeat(session, self.service)
        seat.number = found.number
        seat.seat = found
        session.seat = seat
        session.send(wire.ok("resume", None, game="kalaha"))
        seats.resume(found, seat, session.host)  # the connection it replaces, if any, is closed
        self.service.name_changed(seat, seat.name)
        return seat


def host(service: Any) -> KalahaHost:
    """The registry's ``generic`` builder."""
    return KalahaHost(service)
