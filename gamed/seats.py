"""The seat model every game uses: who sits in a seat, whether they are connected, and how a
player who dropped gets the seat back.

A game takes a ``Seat`` from its service's ``SeatBook`` for each player it seats. The seat knows
its player's ``Identity`` (an account, a guest, a program the daemon started), the connection that
holds it (``holder``, None while away) and, for a guest, the resume token that alone can take the
seat back. When a holder's connection drops during a game the seat is *away*: the game is told
(``ISeatGame.seat_away``: it tells the others), the player's clock keeps running, and the seat
is kept for the grace period. The same account logging in again, the holder of the resume token,
or (Combat's original clients, which cannot log in) a connection from the same address takes it
back (``resume``: ``ISeatGame.seat_back`` gives the new holder the whole state and its prompt).
When the grace runs out ``ISeatGame.seat_forfeited`` makes the seat lose, as the game's rules say.
Nobody else can ever take a seat.

Resume tokens of finished games are remembered (a bounded number), so a late resume is told its
game is over rather than that the token is unknown.
"""

from __future__ import annotations

import enum
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from zope.interface import Attribute, Interface

from gamed import records
from gamed.identity import Identity, LoginError, Refusal

RESUME_TOKEN_BYTES = 18  # 24 URL-safe characters


class Presence(enum.Enum):
    """Where a seat's player is: connected, away (dropped, within the grace) or gone (the seat
    forfeited, or the game is over)."""

    CONNECTED = "connected"
    AWAY = "away"
    GONE = "gone"


class ISeatGame(Interface):
    """What a game provides to the seat model: it is told when its seats come and go."""

    def seat_away(seat: Seat) -> None:
        """``seat``'s player dropped during the game; the seat is kept for the grace period.
        Tell the other players (their clocks and its clock run on)."""

    def seat_back(seat: Seat) -> None:
        """``seat``'s player is back at ``seat.holder``: send it the whole current state and, if
        it is to move, its prompt; tell the others it is back."""

    def seat_forfeited(seat: Seat) -> None:
        """``seat``'s grace ran out: it loses, and the game ends or passes on as its rules say."""


class ISeatHolder(Interface):
    """A connection that holds a seat."""

    seat = Attribute("The Seat it holds, or None.")

    def seat_replaced(seat: Seat) -> None:
        """A new connection of the same player took ``seat`` over: this one is closed."""


@attrs.define(eq=False, repr=False)
class Seat:
    """One seat of one game and who is in it (``number`` is the game's own, 0-based)."""

    game: Any  # the ISeatGame
    number: int
    identity: Identity
    holder: Any = None  # the connection, None while away
    presence: Presence = Presence.CONNECTED
    away_since: float | None = None
    resume_token: str | None = None  # what takes the seat back (a guest's only way back)
    host: str | None = None  # the address the seat was taken (or last taken back) from
    strikes: int = 0
    returns: int = 0  # how often it came back
    _grace: IDelayedCall | None = None
    grace_ends: float | None = None

    def __repr__(self) -> str:
        return f"<Seat {self.number} {self.identity.name} {self.presence.value}>"

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def connected(self) -> bool:
        return self.presence is Presence.CONNECTED

    @property
    def away(self) -> bool:
        return self.presence is Presence.AWAY

    def label(self) -> str:
        """``seat 1 (bob)`` — how seats are named for people in every game, log and record."""
        return f"seat {self.number} ({self.identity.name})"


class NameBook:
    """The names the players of one game service go by just now, without regard to case: each
    connection's, and each away seat's (its player may come back). A guest may not take one of
    them, so two guests called bob (or Bob) are never both at one game service."""

    def __init__(self) -> None:
        self._by_name: dict[str, set[Any]] = {}  # casefolded name -> who goes by it
        self._name_of: dict[Any, str] = {}

    def changed(self, user: Any, name: str | None) -> None:
        """``user`` (a connection, an away seat) goes by ``name`` now (None: by none); its old
        name is free again."""
        self.released(user)
        if name is not None:
            key = name.casefold()
            self._name_of[user] = key
            self._by_name.setdefault(key, set()).add(user)

    def released(self, user: Any) -> None:
        """``user`` is gone (or back at its seat): its name is free."""
        key = self._name_of.pop(user, None)
        if key is not None:
            users = self._by_name[key]
            users.discard(user)
            if not users:
                del self._by_name[key]

    def in_use(self, name: str, asker: Any = None) -> bool:
        """True when someone other than ``asker`` goes by ``name`` (in any case) just now."""
        return any(user is not asker for user in self._by_name.get(name.casefold(), ()))

    def __len__(self) -> int:
        return len(self._name_of)


class SeatBook:
    """The seats of one game service: seats players, keeps dropped seats for ``grace`` seconds
    (0: a seat that drops forfeits at once) and hands them back to their own players only."""

    _log = Logger()

    def __init__(
        self,
        clock: IReactorTime,
        grace: float,
        finished_memory: int = 4096,
        on_presence: Callable[[Seat], None] | None = None,
    ):
        self.clock = clock
        self.grace = grace
        # Told when a seat goes away or comes back (the service shows it to spectators).
        self.on_presence = on_presence
        # The names in use: the service's connections register theirs; an away seat's is kept
        # here until it is back or gone.
        self.names = NameBook()
        self._seats: dict[Any, list[Seat]] = {}  # game -> its seats
        self._tokens: dict[str, Seat] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._finished_memory = finished_memory

    # --- seating -------------------------------------------------------------------------------

    def away_count(self) -> int:
        """How many seats of running games are away just now (their players dropped)."""
        return sum(1 for seats in self._seats.values() for seat in seats if seat.away)

    def seat(self, game: Any, number: int, identity: Identity, holder: Any = None, host: str | None = None) -> Seat:
        """Give ``identity`` seat ``number`` of ``game``, held by ``holder`` (None: a program the
        game drives itself). A seat held by a connection gets a resume token: a guest's only way
        back, and an account's way to replace a connection of its own that is not dead yet."""
        seat = Seat(game, number, identity, holder, host=host)
        if holder is not None:
            seat.resume_token = secrets.token_urlsafe(RESUME_TOKEN_BYTES)
            self._tokens[seat.resume_token] = seat
        self._seats.setdefault(game, []).append(seat)
        return seat

    def seats_of(self, game: Any) -> list[Seat]:
        return list(self._seats.get(game, ()))

    def games(self) -> list[Any]:
        return list(self._seats)

    # --- away and back ---------------------------------------------------------------------------

    def drop(self, seat: Seat, holder: Any) -> None:
        """``holder``'s connection is gone. While the game runs its seat is away for the grace
        period (the game is told), or forfeits at once without one. A holder that no longer holds
        the seat (it was taken over) changes nothing."""
        if seat.holder is not holder or seat.presence is not Presence.CONNECTED:
            return
        seat.holder = None
        if seat.game not in self._seats:  # the game is over
            seat.presence = Presence.GONE
            return
        seat.presence = Presence.AWAY
        seat.away_since = self.clock.seconds()
        self.names.changed(seat, seat.name)
        self._log.info("{seat} of {game} is away", seat=seat.label(), game=_game_id(seat.game))
        placement = getattr(holder, "placement", None)
        if placement is not None and placement.left is not None:
            placement.left()
        if not self.grace or placement is not None:
            self._forfeit(seat)  # a hosted program that ended cannot come back
            return
        seat.grace_ends = seat.away_since + self.grace
        seat._grace = self.clock.callLater(self.grace, self._grace_over, seat)
        seat.game.seat_away(seat)
        self._presence(seat)

    def grace_left(self, seat: Seat) -> float | None:
        """Seconds left until an away seat forfeits (None when it is not away)."""
        if seat.grace_ends is None or not seat.away:
            return None
        return max(0.0, seat.grace_ends - self.clock.seconds())

    def resume(self, seat: Seat, holder: Any, host: str | None = None) -> Any:
        """``holder`` takes ``seat`` back (the caller has checked it may: ``find_*``). Returns
        the connection that held it until now (a connection the player replaced: the caller
        closes it), or None. The game is told and gives the new holder the whole state."""
        if seat.presence is Presence.GONE:
            raise LoginError(Refusal.FINISHED)
        previous = seat.holder
        self._cancel_grace(seat)
        self.names.released(seat)
        seat.holder = holder
        seat.presence = Presence.CONNECTED
        seat.away_since = None
        seat.returns += 1
        if host is not None:
            seat.host = host
        self._log.info("{seat} of {game} is back", seat=seat.label(), game=_game_id(seat.game))
        if previous is not None and previous is not holder:
            replaced = getattr(previous, "seat_replaced", None)
            if replaced is not None:
                replaced(seat)
        seat.game.seat_back(seat)
        self._presence(seat)
        return previous

    def find_account(self, identity: Identity, away_only: bool = False) -> Seat | None:
        """A seat of a running game that ``identity``'s account holds (only an away one with
        ``away_only``), the oldest first; None when it has none."""
        if identity.account_id is None:
            return None
        for seats in self._seats.values():
            for seat in seats:
                if seat.identity.account_id != identity.account_id or seat.presence is Presence.GONE:
                    continue
                if seat.away or not away_only:
                    return seat
        return None

    def find_token(self, token: str) -> Seat:
        """The seat of a resume token; LoginError when it is unknown or its game is over."""
        seat = self._tokens.get(token)
        if seat is None:
            if token in self._finished:
                raise LoginError(Refusal.FINISHED)
            raise LoginError(Refusal.UNKNOWN_RESUME)
        if seat.presence is Presence.GONE:
            raise LoginError(Refusal.FINISHED)
        return seat

    def find_host(self, host: str) -> Seat | None:
        """An away seat last held from ``host`` (the oldest first), for clients that cannot log in."""
        for seats in self._seats.values():
            for seat in seats:
                if seat.away and seat.host == host:
                    return seat
        return None

    # --- the end ---------------------------------------------------------------------------------

    def forfeit(self, seat: Seat) -> None:
        """``seat`` gives up its place now (it left for good): no grace, it is gone."""
        self._cancel_grace(seat)
        self.names.released(seat)
        if seat.presence is not Presence.GONE:
            seat.presence = Presence.GONE
            seat.holder = None

    def unseat(self, seat: Seat) -> None:
        """``seat`` is given up before its game began (a player left a table still waiting for
        players): it is forgotten with its resume token, so that players coming and going at a
        waiting table keep nothing."""
        self.forfeit(seat)
        seats = self._seats.get(seat.game)
        if seats is not None and seat in seats:
            seats.remove(seat)
        if seat.resume_token is not None:
            self._tokens.pop(seat.resume_token, None)

    def finish(self, game: Any) -> None:
        """``game`` is over: its seats are gone and their resume tokens dead (a late one is told
        its game is over)."""
        for seat in self._seats.pop(game, ()):
            self._cancel_grace(seat)
            self.names.released(seat)
            seat.presence = Presence.GONE
            if seat.resume_token is not None:
                self._tokens.pop(seat.resume_token, None)
                self._finished[seat.resume_token] = None
                while len(self._finished) > self._finished_memory:
                    self._finished.popitem(last=False)

    def _presence(self, seat: Seat) -> None:
        if self.on_presence is not None:
            try:
                self.on_presence(seat)
            except Exception:  # spectators must never cost a player its seat
                self._log.failure("showing {seat} away or back failed", seat=seat.label())

    def _grace_over(self, seat: Seat) -> None:
        seat._grace = None
        if seat.away and seat.game in self._seats:
            self._log.info(
                "{seat} of {game} did not come back within {grace:g} s",
                seat=seat.label(),
                game=_game_id(seat.game),
                grace=self.grace,
            )
            self._forfeit(seat)

    def _forfeit(self, seat: Seat) -> None:
        self.names.released(seat)
        seat.presence = Presence.GONE
        seat.grace_ends = None
        seat.game.seat_forfeited(seat)

    @staticmethod
    def _cancel_grace(seat: Seat) -> None:
        call, seat._grace = seat._grace, None
        seat.grace_ends = None
        if call is not None and call.active():
            call.cancel()


@attrs.frozen
class Placement:
    """A seat the daemon assigns to a connection it makes itself (a hosted bot, gamed.hosting):
    who plays (``identity``) and the lobby table reserved for its game (``table``). A game
    protocol with a placement plays as that identity, joins that table at once, keeps to it
    whatever table commands the program sends, and forfeits at once when the program ends.
    ``left`` (if any) is called when its connection drops during its game (a bot that connects
    itself: the runner learns it left before the game was over)."""

    identity: Identity
    table: str
    left: Callable[[], None] | None = attrs.field(default=None, eq=False, repr=False)


class IHostTables(Interface):
    """What a game service offers the hosted-game runner (gamed.hosting.runner): a table kept for
    named players, and the protocols a hosted program's stdin and stdout are bridged to."""

    player_factory = Attribute("The factory of the game's player connections (not its observers').")

    def hosted_table(name: str) -> str:
        """The lobby key of a table called ``name`` on the game's default options (a program that
        connects itself names the table ``name``)."""

    def reserve_table(key: str, names: list[str], opening: int | None = None) -> None:
        """Keep lobby table ``key`` for the players ``names``, seated in that order; its game
        starts from opening number ``opening`` (a tournament pair's) where the game has openings
        (``game_openings``), else as usual."""

    def release_table(key: str) -> None:
        """Drop the reservation of ``key`` (its game will not start)."""

    def table_waiting(key: str) -> bool:
        """True while the reserved table ``key`` still waits for its players (no game began)."""


def record_seat(seat: Seat) -> records.Seat:
    """What the records keep of ``seat``: its number, its player's name and kind, whether it is
    rated (identified players only) and the account it belongs to."""
    who = seat.identity
    return records.Seat(seat.number, who.name, rated=who.rated, kind=who.record_kind, account_id=who.account_id)


def _game_id(game: Any) -> Any:
    return getattr(game, "id", game)
