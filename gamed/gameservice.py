"""The base of every game service: its connections, and a shutdown that tells everyone why.

A game service owns its listening ports (child services added by ``gamed.tap``), its running
games and its connections. Stopping it stops listening, lets the subclass abort its games (each
player is told why, and each game is reported to the live hub as ended by the shutdown), asks
every remaining connection to ``shutdown()``, and waits until they are all gone, at most the
close grace period plus a second, and until what ``games_ending`` names has happened. The live
hub is told when all that is over, so the records are closed only after the last aborted game
has been stored.
"""

from __future__ import annotations

import collections

import time
from typing import TYPE_CHECKING, Any

from twisted.application.service import MultiService
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory
from zope.interface import implementer

from gamed.config import Limits
from gamed.seats import IHostTables

if TYPE_CHECKING:
    from gamed.observers import LiveHub


@implementer(IHostTables)
class GameService(MultiService):
    """Tracks connections (``connected``/``disconnected``) and drains them on ``stopService``.
    A service with a ``lobby`` and a ``factory`` hosts bots' games (IHostTables) as it is."""

    hub: LiveHub | None = None  # the daemon's live hub, when the service reports its games to one

    @property
    def hosts_bots(self) -> bool:
        """Whether hosted bots' games can be played here (a service with a lobby can)."""
        return getattr(self, "lobby", None) is not None

    @property
    def player_factory(self) -> Factory:
        return self.factory

    def hosted_table(self, name: str) -> str:
        return name

    def reserve_table(self, key: str, names: list[str], opening: int | None = None) -> None:
        self.lobby.reserve(key, names)
        if opening is not None:
            self.table_openings[key] = opening

    def release_table(self, key: str) -> None:
        self.lobby.release(key)
        self.table_openings.pop(key, None)

    def take_opening(self, key: str | None) -> int | None:
        """The opening a reserved table's game starts from (once), None for an ordinary table."""
        return self.table_openings.pop(key, None) if key is not None else None

    def table_waiting(self, key: str) -> bool:
        return self.lobby.reserved(key)

    def __init__(self, limits: Limits, clock: IReactorTime):
        super().__init__()
        self.limits = limits
        self.clock = clock
        self.connections: set[Any] = set()
        self.table_openings: dict[str, int] = {}  # reserved table key -> opening number
        self.errors: collections.Counter[int] = collections.Counter()  # ERROR <code> lines sent (gamed.metrics)
        self._drained: list[Deferred] = []

    def connected(self, protocol: Any) -> None:
        self.connections.add(protocol)

    def disconnected(self, protocol: Any) -> None:
        self.connections.discard(protocol)
        if not self.connections:
            drained, self._drained = self._drained, []
            for d in drained:
                d.callback(None)

    # The names in use (``gamed.seats.NameBook`` of the service's ``seats``), for its protocols.
    def name_changed(self, user: Any, name: str | None) -> None:
        """``user`` (a connection) goes by ``name`` now; its old name is free."""
        self.seats.names.changed(user, name)

    def name_released(self, user: Any) -> None:
        """``user`` is gone: its name is free (an away seat keeps its own until it is back)."""
        self.seats.names.released(user)

    def name_in_use(self, name: str, asker: Any = None) -> bool:
        """True when another connection here, or an away seat, goes by ``name`` (any case)."""
        return self.seats.names.in_use(name, asker)

    def live_table_of(self, game: Any) -> Any:
        """The live table of ``game`` (None without a hub): ``self.live`` maps game ids to them."""
        return getattr(self, "live", {}).get(getattr(game, "id", None))

    def seat_presence(self, seat: Any) -> None:
        """A seat went away or came back (``gamed.seats.SeatBook``'s ``on_presence``): its game's
        live table shows spectators."""
        table = self.live_table_of(seat.game)
        if table is not None:
            back_by = None
            if seat.away and seat.grace_ends is not None:  # the clock's time -> unix time
                back_by = time.time() + (seat.grace_ends - self.clock.seconds())
            table.presence(seat.number, back_by, away=seat.away)

    def abort_games(self) -> None:
        """Subclasses end every running game here, telling each player why."""

    def games_ending(self) -> list[Deferred]:
        """What must still happen after ``abort_games`` before every game has ended and been
        reported (e.g. AI programs still being killed); subclasses return Deferreds."""
        return []

    def stopService(self) -> Deferred:  # noqa: N802
        """Stop listening, abort every game, close every connection and wait for them to go."""
        stopped = defer.maybeDeferred(super().stopService)
        self.abort_games()
        for protocol in list(self.connections):
            protocol.shutdown()
        waits = [stopped, *self.games_ending()]
        if self.connections:
            d = Deferred()
            self._drained.append(d)
            # Closing connections are cut off after close_grace; do not wait much longer.
            d.addTimeout(self.limits.close_grace + 1, self.clock)
            d.addErrback(lambda f: None)
            waits.append(d)
        done = defer.gatherResults(waits)
        if self.hub is not None:
            self.hub.service_stopping(done)
        return done


class PlayerFactory(Factory):
    """Builds one protocol per connection for a game service, numbering them from 1 (the number
    gives a player without a name a default one). Subclasses name ``protocol`` and ``prefix``."""

    noisy = False
    protocol: type
    prefix = "game"

    def __init__(self, service: Any):
        self.service = service
        self._count = 0

    def logPrefix(self) -> str:  # noqa: N802
        return self.prefix

    def buildProtocol(self, addr) -> Any:  # noqa: N802
        self._count += 1
        protocol = self.protocol(self.service, self._count)
        protocol.factory = self
        return protocol
