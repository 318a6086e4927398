"""What the hosts of the two-seat lobby games share (gamed.kalaha.generic, gamed.connect4.generic):
seating a session in the game's lobby, meeting a named player, and taking a seat back from the
game's ``SeatBook`` by a resume token or an account's away seat."""

from __future__ import annotations

from typing import Any

from gamed import timecontrol
from gamed.generic import wire
from gamed.generic.seat import GenericSeat, PlayError
from gamed.identity import LoginError, Refusal
from gamed.seats import Seat


class LobbyHost:
    """A base of a game's ``IGenericHost`` whose service has a lobby, named tables and a
    ``SeatBook``: ``name`` (the game), ``game_class`` (its games' class) and ``seat_class`` (the
    ``GenericSeat`` its players get, built as ``seat_class(session, service)``)."""

    name = ""
    game_class: type = object
    seat_class: type[GenericSeat] = GenericSeat

    def __init__(self, service: Any):
        self.service = service

    def common(self, session: Any, request: dict, title: str) -> tuple[timecontrol.TimeControl | None, dict]:
        """What every play request of the game is checked for first: its clock (None: the
        table's own), that the player's name is free here, and an opponent that is not a hosted
        bot; returns the clock and the opponent."""
        control = None
        if "clock" in request:
            try:
                control = timecontrol.parse(request["clock"])
            except ValueError as e:
                raise PlayError(wire.BAD_OPTION, f"clock: {e}") from None
        if self.service.name_in_use(session.identity.name):
            raise PlayError(wire.REFUSED, f"{Refusal.NAME_IN_USE.value}: {session.identity.name}")
        opponent = request.get("opponent", {"kind": "person"})
        if opponent["kind"] == "bot":
            raise PlayError(wire.NO_SUCH_OPPONENT, f"{title} games against a hosted bot are arranged by tournaments (docs/hosting.md)")
        return control, opponent

    @staticmethod
    def meeting(session: Any, opponent: dict, table: str | None) -> str | None:
        """The table of a play request: the one asked for, or the private table of two names."""
        if "name" not in opponent:
            return table
        if opponent["name"] == session.identity.name:
            raise PlayError(wire.NO_SUCH_OPPONENT, "you cannot meet yourself")
        return "meet " + " ".join(sorted((session.identity.name, opponent["name"])))

    def seat(self, session: Any) -> GenericSeat:
        """A new seat of ``session``, named in the service, before it is seated (the game's first
        messages are its)."""
        seat = self.seat_class(session, self.service)
        self.service.name_changed(seat, seat.name)
        session.seat = seat
        return seat

    def join(self, session: Any, table: str | None, key: Any) -> GenericSeat:
        """Seat ``session`` in the lobby under ``key`` (the service's table key of ``table``)."""
        seat = self.seat(session)
        self.service.lobby.join(seat, key)
        if seat.game is None:
            shown = table if table is None or not table.startswith("meet ") else None
            session.send({"type": "waiting", "game": self.name, "for": f"table {shown}" if shown else "an opponent"})
        return seat

    def take_back(self, session: Any, token: str | None) -> GenericSeat | None:
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
        if not isinstance(found.game, self.game_class):
            return None
        session.identity = found.identity
        seat = self.seat_class(session, self.service)
        seat.number = found.number
        seat.seat = found
        session.seat = seat
        session.send(wire.ok("resume", None, game=self.name))
        seats.resume(found, seat, session.host)  # the connection it replaces, if any, is closed
        self.service.name_changed(seat, seat.name)
        return seat
