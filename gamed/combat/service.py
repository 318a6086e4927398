"""The GGZ Combat service: tables of seats, filled in arrival order, each a pure ``CombatTable``.

Every player at a table has a ``Seat`` of the service's ``SeatBook`` (the seat model all games
share): its identity (a guest ``player<k>`` on the binary port, a guest ``NAME`` or a logged-in
account on the handshake port, a ``program`` for a computer opponent) and the connection that
holds it. A new connection takes the lowest free seat of the oldest table still waiting for
players, else a seat at a new table; it is told so by the table's own messages (CBT_MSG_SEAT, ...).
A seat that dropped during play is *away* for the grace period (``rejoin_grace``, else ``[players]
grace``) and only its own player takes it back: the same account (LOGIN) or the holder of its
resume token (RESUME) on the handshake port, or, on the binary port whose clients cannot log in, a
connection from the address it was held from; ``[combat] rejoin = "anyone"`` restores the original
GGZ behaviour (the next connection takes over the army). Nobody can stall a table: the seat to
move has ``move_time`` seconds (a turn on the shared ``TurnScheduler``, running also while the seat
is away); when it or the grace runs out that seat loses (``CombatTable.forfeit``), and the reason
is logged and recorded. A table nobody sits at and nobody may come back to is removed.

Hosted bots (gamed.hosting, ``IHostTables``): ``reserve_table(key, names)`` keeps the named table
``key`` for the bots ``names`` (seat order); only connections placed there by the daemon
(``protocol.placement``) under those names sit at it, each in its own seat, and the reservation
lasts until its game is played (``table_waiting``). A placed seat that ends loses at once, and
so does one whose move is refused (``illegal``) or whose connection the server closes
(``protocol``): a hosted game never waits for a program that cannot go on.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import random

import attrs
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from gamed.combat import wire
from gamed.combat.maps import opening_map
from gamed.combat.protocol import CombatFactory, CombatProtocol
from gamed.combat.table import CombatTable, Outgoing
from gamed.combat.wire import MsgAttack, MsgMove, SeatKind, State
from gamed.config import AiProgram, CombatConfig, Limits, PlayersConfig
from gamed.gameservice import GameService
from gamed.identity import Identity
from gamed.observers import SHUTDOWN, LiveHub, LiveTable
from gamed.records import Seat
from gamed.players import Players
from gamed.scheduler import StrikePolicy, Turn, TurnScheduler
from gamed.seats import ISeatGame, Presence, SeatBook, record_seat
from gamed.seats import Seat as PlayerSeat
from gamed.stratego import rules
from gamed.ratings import winner_scores
from gamed.textline import ConnectionLimits
from gamed.textwire import seconds
from gamed.roundtrip import round_trips
from gamed.timecontrol import TimeControl, format_duration


RESULTS = "results.jsonl"
TIMEOUT = "timeout"  # the record's reason when a seat ran out of its move time and lost
FORFEIT = "forfeit"  # ... when it left the game (and did not come back in time) or gave up
ILLEGAL = "illegal"  # ... when a hosted bot's move was refused (gamed.hosting: it loses at once)
PROTOCOL = "protocol"  # ... when the server closed a hosted bot's connection (bad input, idle)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


@attrs.define(eq=False)
class Seating:
    """Where a connection sits."""

    table: CombatTable
    seat: int
    table_id: int


@implementer(ISeatGame)
@attrs.define(eq=False)
class _Table:
    """A table with what the service keeps beside it: who sits where (the connections, and the
    seats of the seat model), the move clock. It is the seat model's game (``ISeatGame``)."""

    id: int
    table: CombatTable
    name: str | None = None  # a named table (handshake port), None for the arrival-order ones
    sitting: dict[int, CombatProtocol] = attrs.field(factory=dict)
    clock: TurnScheduler | None = None
    service: CombatService | None = None
    seats: dict[int, PlayerSeat] = attrs.field(factory=dict)  # the seat model's seat of each seat number
    binary: set[int] = attrs.field(factory=set)  # seats taken on the binary port (retaken by address)
    started: str | None = None  # when play began (ISO time), for the record
    players: tuple[str, ...] = ()  # the seats' names when play began
    moves: int = 0
    reason: str | None = None  # why the game ended when no move ended it: timeout, forfeit, ...
    detail: str | None = None  # who and what, in words ("seat 1 (bob) did not come back within 120 s")
    computer: str | None = None  # the AI program of a table against the computer
    recorded: bool = False
    live: LiveTable | None = None  # its live table (with a hub) once play began
    timing: dict | None = None  # the clock of the last move (used, left, credit), for the records
    hosted: bool = False  # reserved for a hosted game (gamed.hosting): only its placed bots sit here
    opening: int | None = None  # a tournament pair's opening, whose map the server fixed

    def seat_away(self, seat: PlayerSeat) -> None:
        self.service._seat_away(self, seat)

    def seat_back(self, seat: PlayerSeat) -> None:
        self.service._seat_back(self, seat)

    def seat_forfeited(self, seat: PlayerSeat) -> None:
        self.service._seat_forfeited(self, seat)

    def away(self) -> list[PlayerSeat]:
        """The seats whose players may still come back."""
        return [seat for seat in self.seats.values() if seat.away]


class CombatService(GameService):
    """Seats Combat connections at tables and relays their messages; runs the move clocks."""

    @property
    def _move_time(self) -> float:
        """Seconds per move of the time control; 0 = none."""
        return self.config.time_control.move or 0

    @property
    def _control(self) -> TimeControl:
        return self.config.time_control

    _log = Logger()
    name = "combat"

    def __init__(
        self,
        limits: Limits,
        clock: IReactorTime,
        config: CombatConfig = CombatConfig(),
        rng: random.Random | None = None,
        records_dir: pathlib.Path | None = None,
        ais: dict[str, AiProgram] | None = None,
        hub: LiveHub | None = None,
        players: Players | None = None,
        grace: float | None = None,
    ):
        super().__init__(limits, clock)
        self.hub = hub
        self.config = config
        self.players = players if players is not None else Players(PlayersConfig(), None, clock)
        if grace is None:
            grace = config.rejoin_grace if config.rejoin_grace is not None else self.players.config.grace
        self.seats = SeatBook(clock, grace, on_presence=self.seat_presence)
        self.ais: dict[str, AiProgram] = dict(ais or {})  # computer opponents (COMPUTER <name>)
        self.rng = rng or random.Random()
        self.records_dir = None if records_dir is None else pathlib.Path(records_dir)
        self.tables: dict[int, CombatTable] = {}
        self._tables: dict[int, _Table] = {}
        self._next_id = 1
        self._players = 0
        self._reserved: dict[str, tuple[str, ...]] = {}  # hosted tables waiting for their bots
        self.factory = CombatFactory(self)
        self.text_factory = CombatFactory(self, handshake=True)

    def games_running(self) -> int:
        """Tables whose game is being played (gamed.metrics)."""
        return sum(1 for t in self._tables.values() if t.started is not None)

    def port_factory(self) -> ConnectionLimits:
        """The binary port (5688): seated at once, in arrival order."""
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer)

    def text_port_factory(self) -> ConnectionLimits:
        """The handshake port (5689): name and table first, then the binary protocol."""
        return ConnectionLimits(self.text_factory, self.limits.max_connections, self.limits.max_per_peer)

    def live_table_of(self, game: _Table) -> LiveTable | None:
        return game.live

    def next_player_number(self) -> int:
        self._players += 1
        return self._players

    # --- hosted games (IHostTables) ----------------------------------------------------------

    hosts_bots = True  # (no lobby: its own reserved tables)

    @property
    def player_factory(self) -> CombatFactory:
        """A hosted bot speaks the handshake port's protocol: its text lines, then binary."""
        return self.text_factory

    def reserve_table(self, key: str, names: list[str], opening: int | None = None) -> None:
        # A pair's opening is its map (gamed.combat.maps.opening_map), fixed by the server; the
        # setups are the programs' own, as the protocol has them.
        if not wire.MIN_SEATS <= len(names) <= wire.MAX_SEATS:
            raise ValueError(f"a combat table has {wire.MIN_SEATS} to {wire.MAX_SEATS} seats, not {len(names)}")
        if key in self._reserved or self._named(key) is not None:
            raise ValueError(f"table {key} exists already")
        self._reserved[key] = tuple(names)
        if opening is not None:
            self.table_openings[key] = opening

    def release_table(self, key: str) -> None:
        self._reserved.pop(key, None)
        self.table_openings.pop(key, None)

    def table_waiting(self, key: str) -> bool:
        return key in self._reserved

    def _placed_seat(self, protocol: CombatProtocol, entry: _Table | None) -> int | None:
        """The seat of the reserved table ``protocol.table_name`` kept for this placed bot (its
        name's first place in the reservation not taken yet), else None."""
        names = self._reserved.get(protocol.table_name or "")
        placement = protocol.placement
        if names is None or placement is None or placement.table != protocol.table_name:
            return None
        taken = set(entry.sitting) if entry is not None else set()
        for number, name in enumerate(names):
            if name == placement.identity.name and number not in taken:
                return number
        return None

    def illegal_move(self, seating: Seating, code: int) -> None:
        """A hosted bot's REQ_MOVE was refused (``code``): it loses its game at once."""
        entry = self._tables.get(seating.table_id)
        if entry is not None and entry.table.state is State.PLAYING:
            self._forfeit(entry, seating.seat, ILLEGAL, f"made an illegal move (error {code})")

    def can_seat(self, protocol: CombatProtocol) -> str | None:
        """Why ``protocol``'s PLAY cannot be served (None: it can): its named table exists but has
        no seat to give (every seat taken, or a game on or over: an away seat goes back only to its
        own player, through LOGIN or RESUME, unless ``rejoin = "anyone"``), its seat count is not
        the one asked for, or this account sits at it already."""
        name = protocol.table_name
        if name is None:
            return None
        entry = self._named(name)
        if name in self._reserved or (entry is not None and entry.hosted):
            if self._placed_seat(protocol, entry) is None:
                return f"table {name} is reserved for a hosted game"
            return None
        if entry is None:
            return None
        table = entry.table
        if protocol.table_seats is not None and protocol.table_seats != table.number:
            return f"table {name} has {table.number} seats"
        if self._sits_at(entry, protocol):
            return f"table {name}: you sit at it already (another connection of yours)"
        if (self.config.rejoin == "anyone" and entry.away()) or self._free_seat(entry) is not None:
            return None
        if table.state is State.PLAYING:
            return f"table {name} is playing"
        if table.state is State.DONE:
            return f"table {name} has finished its game"
        return f"table {name} is full"

    @staticmethod
    def _free_seat(entry: _Table) -> int | None:
        """The lowest open seat of a table still waiting for players or in setup (a seat left
        during setup is open again), else None."""
        table = entry.table
        if table.state in (State.WAIT, State.SETUP):
            for seat in range(table.number):
                if seat not in entry.sitting and table.seats[seat].kind is SeatKind.OPEN:
                    return seat
        return None

    @staticmethod
    def _sits_at(entry: _Table, protocol: CombatProtocol) -> bool:
        """True when ``protocol``'s account already has a seat at ``entry`` (one account never
        plays itself)."""
        identity = protocol.identity
        if identity is None or identity.account_id is None:
            return False
        return any(s.identity.account_id == identity.account_id for s in entry.seats.values() if s.presence is not Presence.GONE)

    # --- names -------------------------------------------------------------------------------

    def _named(self, name: str) -> _Table | None:
        for entry in self._tables.values():
            if entry.name == name:
                return entry
        return None

    # --- seating ---------------------------------------------------------------------------

    def seat(self, protocol: CombatProtocol) -> None:
        """Give ``protocol`` a seat at its named table, or (anonymous: the binary port, or no
        TABLE) at the arrival-order tables: on the binary port an away seat last held from its
        address first (any away seat with ``rejoin = "anyone"``), else a free seat of the oldest
        table not yet playing, else the first seat of a new table. Named tables are only ever
        joined by name; one account never gets two seats at one table."""
        name = protocol.table_name
        if name in self._reserved:
            return self._seat_placed(protocol)
        candidates = [e for e in self._tables.values() if e.name == name and not e.hosted]
        if self.config.rejoin == "anyone":
            for entry in candidates:
                away = entry.away()
                if away:
                    return self._take_over(protocol, entry, away[0])
        elif not protocol.text_port:
            seat = self._away_from(protocol.host)
            if seat is not None:
                self._log.info("combat: {peer} takes back {seat} (same address)", peer=protocol.host, seat=seat.label())
                return self.take_back(protocol, seat)
        for entry in candidates:
            if self._sits_at(entry, protocol):
                continue
            seat = self._free_seat(entry)
            if seat is not None:
                return self._join(protocol, entry, seat)
        seats = protocol.table_seats or self.config.seats
        entry = _Table(self._next_id, None, name, service=self)
        self._next_id += 1
        entry.table = CombatTable(seats, rng=self.rng, log=lambda line, t=entry.id: self._table_log(t, line))
        self._tables[entry.id] = entry
        self.tables[entry.id] = entry.table
        self._join(protocol, entry, 0)

    def _seat_placed(self, protocol: CombatProtocol) -> None:
        """A hosted bot at its reserved table, in its own seat (the table is made for the first)."""
        name = protocol.table_name
        entry = self._named(name)
        if entry is None:
            entry = _Table(self._next_id, None, name, service=self, hosted=True)
            self._next_id += 1
            seats = len(self._reserved[name])
            entry.table = CombatTable(seats, rng=self.rng, log=lambda line, t=entry.id: self._table_log(t, line))
            number = self.take_opening(name)
            fixed = None if number is None else opening_map(number, seats)
            if fixed is not None:  # a tournament pair's map: every seat is told it, nobody asked
                entry.table.fix_options(fixed)
                entry.opening = number
            self._tables[entry.id] = entry
            self.tables[entry.id] = entry.table
        seat = self._placed_seat(protocol, entry)
        if seat is None:  # can_seat said it may: nothing to do but refuse it
            return protocol.close(f"no seat is kept for {protocol.name} at table {name}")
        self._join(protocol, entry, seat)

    def _away_from(self, host: str) -> PlayerSeat | None:
        """The oldest away seat taken on the binary port from ``host`` (an original client
        coming back from the same address)."""
        for entry in self._tables.values():
            for number in sorted(entry.binary):
                seat = entry.seats.get(number)
                if seat is not None and seat.away and seat.host == host:
                    return seat
        return None

    def take_back(self, protocol: CombatProtocol, seat: PlayerSeat) -> None:
        """``protocol`` is ``seat``'s own player come back (same account, its resume token, or
        its address): it plays on as that seat's identity, and gets the whole state."""
        self.name_changed(protocol, seat.name)
        protocol.identity = seat.identity
        protocol.name = seat.name
        protocol.seat = seat
        self.seats.resume(seat, protocol, protocol.host)  # -> _seat_back

    def _take_over(self, protocol: CombatProtocol, entry: _Table, seat: PlayerSeat) -> None:
        """``rejoin = "anyone"``: ``protocol`` takes over an away seat under its own identity
        (the original GGZ behaviour)."""
        self._log.info("combat table {table}: {name} takes over {seat}", table=entry.id, name=protocol.name, seat=seat.label())
        seat.identity = protocol.identity or Identity(protocol.name)
        protocol.seat = seat
        if protocol.text_port:
            entry.binary.discard(seat.number)
        else:
            entry.binary.add(seat.number)
        self.seats.resume(seat, protocol, protocol.host)
        self._taken_over(entry, seat.number)

    def seat_against(self, protocol: CombatProtocol, ai_name: str) -> None:
        """``COMPUTER <ai_name>``: ``protocol`` hosts (seat 0) a fresh 2-seat table nobody else can
        join, and the registered UCC AI ``ai_name`` takes seat 1 through an ``AiOpponent``. A
        person who left such a game comes back to it with LOGIN or RESUME."""
        from gamed.combat.ucc_seat import AiOpponent

        entry = _Table(self._next_id, None, f" computer {self._next_id}", computer=ai_name, service=self)  # no wire name: private
        self._next_id += 1
        entry.table = CombatTable(2, rng=self.rng, log=lambda line, t=entry.id: self._table_log(t, line))
        self._tables[entry.id] = entry
        self.tables[entry.id] = entry.table
        self._join(protocol, entry, 0)
        self._join(AiOpponent(self, self.ais[ai_name], self.clock), entry, 1)

    def receive_from(self, seating: Seating, message) -> None:
        """A client message from a seat that is not a connection (an ``AiOpponent``)."""
        entry = self._tables.get(seating.table_id)
        if entry is None or seating.seat not in entry.sitting:
            return
        self.deliver(seating, entry.table.receive(seating.seat, message))

    def resign(self, seating: Seating, reason: str | None, why: str = FORFEIT) -> None:
        """A seat that is not a connection gives up: during play it loses at once (no rejoin
        grace; ``why`` is the record's reason, ``reason`` the detail), then it leaves."""
        entry = self._tables.get(seating.table_id)
        if entry is None or seating.seat not in entry.sitting:
            return
        if reason is not None and entry.table.state is State.PLAYING:
            self._forfeit(entry, seating.seat, why, reason)
        elif reason is not None and entry.computer is not None and entry.table.state in (State.WAIT, State.SETUP):
            # Nobody else can ever join a table against the computer: tell the person why it ends.
            for sitter in list(entry.sitting.values()):
                if isinstance(sitter, CombatProtocol):
                    sitter.refuse(f"computer opponent {entry.computer} left the table: {reason}")
        self.vacate(seating, None)

    def _join(self, protocol: CombatProtocol, entry: _Table, seat: int, back: PlayerSeat | None = None) -> None:
        """Seat ``protocol`` (a connection or a computer opponent) at ``seat`` of ``entry``: a new
        seat of the seat model, or ``back``, the seat its player took back."""
        seating = Seating(entry.table, seat, entry.id)
        protocol.seating = seating
        entry.sitting[seat] = protocol
        if back is None:
            connection = isinstance(protocol, CombatProtocol)
            identity = protocol.identity or Identity(protocol.name)
            host = protocol.host if connection else None
            protocol.seat = entry.seats[seat] = self.seats.seat(entry, seat, identity, protocol if connection else None, host)
            if connection and not protocol.text_port:
                entry.binary.add(seat)
            else:
                entry.binary.discard(seat)
            self._log.info("combat table {table}: {name} takes seat {seat}", table=entry.id, name=protocol.name, seat=seat)
        self.deliver(seating, entry.table.join(seat, protocol.name))

    def _taken_over(self, entry: _Table, seat: int) -> None:
        """``rejoin = "anyone"``: the player now in ``seat`` plays the rest of the game: the record
        and the spectators name it (and rate it, when it is identified) instead of the one who
        dropped."""
        if entry.started is None or entry.recorded:
            return
        players = list(entry.players)
        players[seat] = entry.table.seats[seat].name
        entry.players = tuple(players)
        if entry.live is not None:
            entry.live.seat_taken(self._record_seat(entry, seat))

    def _record_seat(self, entry: _Table, seat: int) -> Seat:
        """``seat`` as the live table and the stored match show it: its player's name, and
        whether it is rated (accounts and registered programs are, guests never)."""
        held = entry.seats.get(seat)
        if held is not None:
            return record_seat(held)
        return record_seat(PlayerSeat(None, seat, Identity(entry.table.seats[seat].name or f"seat{seat}")))

    def deliver(self, seating: Seating, out: Outgoing) -> None:
        """Write each (seat, message) the table produced to that seat's connection, then keep the
        move clock and the record in step with the table."""
        entry = self._tables.get(seating.table_id)
        if entry is None:
            return
        moved = False
        for seat, message in out:
            moved = moved or isinstance(message, (MsgMove, MsgAttack))
            protocol = entry.sitting.get(seat)
            if protocol is not None:
                protocol.send(message)
        table = entry.table
        if table.state is State.PLAYING and entry.started is None:
            entry.started = _now()
            entry.players = tuple(seat.name for seat in table.seats)
            if entry.hosted:
                self._reserved.pop(entry.name, None)  # its game has begun
            if self.hub is not None:
                entry.live = self._open_table(entry)
        entry.moves += moved
        self._tick(entry)  # first: the move's time is charged and kept for its record
        if self._tables.get(entry.id) is not entry:
            return
        if moved and entry.live is not None:
            self._moved(entry)
        if table.state is State.DONE and not entry.recorded:
            self._record(entry, aborted=False)

    def vacate(self, seating: Seating, reason: str | None) -> None:
        """The connection of ``seating`` is gone (``reason``: why we closed it, None: it left).
        During a game its seat is away for the grace period (the seat model's ``drop``); before
        the game its seat is free again."""
        entry = self._tables.get(seating.table_id)
        if entry is None or entry.sitting.get(seating.seat) is None:
            return
        sitter = entry.sitting.pop(seating.seat)
        table = entry.table
        playing = table.state is State.PLAYING
        out = table.leave(seating.seat) if reason is None else table.drop(seating.seat, reason)
        self.deliver(seating, out)
        seat = entry.seats.get(seating.seat)
        if seat is not None:
            sitter.seat = None
            if not playing:
                if table.state is not State.DONE:  # waiting or in setup: the seat is free again
                    self.seats.unseat(seat)
                    del entry.seats[seating.seat]
                    entry.binary.discard(seating.seat)
            elif reason is not None and getattr(sitter, "placement", None) is not None:
                self.seats.forfeit(seat)  # a hosted bot the server closed: it broke the protocol
                self._forfeit(entry, seating.seat, PROTOCOL, f"was closed by the server: {reason}")
            elif seat.holder is not None:
                self.seats.drop(seat, sitter)  # away for the grace (none: it forfeits at once)
            else:  # a computer opponent's program left the running game: that is losing it
                self.seats.forfeit(seat)
                self._forfeit(entry, seating.seat, FORFEIT, "left the game")
        self._maybe_remove(entry)

    def _seat_away(self, entry: _Table, seat: PlayerSeat) -> None:
        """The seat model kept ``seat`` for its player's return: the others have seen it open in
        MSG_PLAYERS (the original protocol's only word for it), and those that asked for NOTICES
        get ``AWAY <seat> <name> <seconds left>``; its move clock runs on."""
        self._log.info(
            "combat table {table}: {seat} is away; kept {grace:g} s", table=entry.id, seat=seat.label(), grace=self.seats.grace
        )
        line = f"AWAY {seat.number} {seat.name} {seconds(self.seats.grace_left(seat))}"
        for sitter in list(entry.sitting.values()):
            if isinstance(sitter, CombatProtocol):
                sitter.notice(line)

    def _seat_back(self, entry: _Table, seat: PlayerSeat) -> None:
        """``seat``'s player is back at ``seat.holder``: the table's own rejoin (MSG_SEAT,
        MSG_PLAYERS, MSG_OPTIONS, own-view MSG_SYNC, MSG_START to all) gives it the whole state."""
        if self._tables.get(entry.id) is not entry or entry.table.state is not State.PLAYING:
            return
        self._log.info("combat table {table}: {seat} is back", table=entry.id, seat=seat.label())
        if seat.holder.text_port:
            entry.binary.discard(seat.number)
        else:
            entry.binary.add(seat.number)
        self._join(seat.holder, entry, seat.number, back=seat)
        for number, sitter in list(entry.sitting.items()):
            if number != seat.number and isinstance(sitter, CombatProtocol):
                sitter.notice(f"BACK {seat.number} {seat.name}")

    def _seat_forfeited(self, entry: _Table, seat: PlayerSeat) -> None:
        """``seat``'s grace ran out (or there is none): it loses as the rules say."""
        grace = self.seats.grace
        detail = f"left the game and did not come back within {grace:g} s" if grace else "left the game"
        self._forfeit(entry, seat.number, FORFEIT, detail)
        self._maybe_remove(entry)

    def _maybe_remove(self, entry: _Table) -> None:
        """Remove a table nobody sits at and nobody may come back to."""
        if self._tables.get(entry.id) is entry and not entry.sitting and not entry.away():
            self._remove(entry)

    def _remove(self, entry: _Table) -> None:
        if entry.table.state is State.PLAYING and not entry.recorded:
            entry.reason = "every player left"
            self._record(entry, aborted=True)
        self.seats.finish(entry)
        if entry.clock is not None:
            entry.clock.stop()
        self._tables.pop(entry.id, None)
        self.tables.pop(entry.id, None)

    # --- the move clock --------------------------------------------------------------------

    def _tick(self, entry: _Table) -> None:
        """Keep the table's clock in step with it: the setup turn of every seat while the armies
        are placed (with a setup budget), then one open turn for the seat to move while it plays."""
        table = entry.table
        control = self._control
        if control.unlimited:
            return
        setup = table.state is State.SETUP and control.setup is not None
        if table.state is not State.PLAYING and not setup:
            if entry.clock is not None and table.state is not State.SETUP:
                self._charge(entry, entry.clock.current)  # the last move's time, for its record
                entry.clock.stop()
                entry.clock = None
            return
        if entry.clock is None:
            entry.clock = TurnScheduler(
                self.clock, lambda turn, e=entry: self._turn_closed(e, turn), strikes=StrikePolicy(limit=0), control=control,
                game="combat",
            )
        clock = entry.clock
        turn = clock.live_turn()  # a passed deadline acts first (and may end the game)
        if entry.clock is not clock or table.state not in (State.SETUP, State.PLAYING):
            return
        if setup:
            if turn is None and clock.current is None:
                clock.open(range(table.number), setup=True, lag=self._lags(entry))
            elif turn is not None:
                for seat in sorted(table.game.setup_done & turn.waiting_for):
                    clock.finish(seat)
            return
        if turn is not None and table.turn in turn.seats and not turn.setup:
            return
        self._charge(entry, turn)
        if clock.current is None or clock.current.closed:
            clock.open([table.turn], lag=self._lags(entry, table.turn))

    @staticmethod
    def _charge(entry: _Table, turn: Turn | None) -> None:
        """The seat of the open move turn has moved: finish the turn, keep what its clock did."""
        if turn is None or turn.closed or turn.setup:
            return
        for seat in sorted(turn.waiting_for):
            entry.clock.finish(seat)
        entry.timing = {seat: turn.clock_entry(seat) for seat in sorted(turn.seats)}

    @staticmethod
    def _lags(entry: _Table, *seats: int) -> dict[int, float]:
        """The measured round trip of the connections sitting at ``seats`` (every seat: none given)."""
        return round_trips({seat: entry.sitting.get(seat) for seat in seats or range(entry.table.number)})

    def _turn_closed(self, entry: _Table, turn: Turn) -> None:
        if self._tables.get(entry.id) is not entry:
            return
        if turn.capped:
            entry.reason, entry.detail = TIMEOUT, f"the game reached its time cap ({format_duration(self._control.game or 0)})"
            self.deliver(Seating(entry.table, 0, entry.id), entry.table.time_cap())
            return
        if turn.setup:
            if turn.timed_out:  # the late seats get a random placement; the game starts
                self.deliver(Seating(entry.table, 0, entry.id), entry.table.setup_expired())
            return
        control = self._control
        if control.plain:
            detail = f"ran out of its move time of {self._move_time:g} s"
        else:
            detail = f"ran out of time ({control.notation()})"
        for seat in turn.timed_out:
            self._forfeit(entry, seat, TIMEOUT, detail)

    def _forfeit(self, entry: _Table, seat: int, why: str, detail: str) -> None:
        """``seat`` loses (``why``: TIMEOUT or FORFEIT; ``detail``: what it did, in words). With two
        seats the other one wins and that is the record's reason; with more the game goes on.
        When nobody is at the table (every seat away), the game is abandoned: nobody wins."""
        if self._tables.get(entry.id) is not entry:
            return
        if not entry.sitting and entry.table.state is State.PLAYING:
            return self._remove(entry)  # every player left (all away): abandoned, nobody wins
        name = entry.table.seats[seat].name or (entry.players[seat] if seat < len(entry.players) else "")
        out = entry.table.forfeit(seat, f"{detail} ({why})")  # the table logs it
        detail = f"seat {seat} ({name}) {detail}" if name else f"seat {seat} {detail}"
        if entry.table.state is State.DONE:
            entry.reason, entry.detail = why, detail
        if entry.live is not None and entry.table.state is State.PLAYING:
            # More than two seats: the game goes on without the seat, whose units left the board.
            entry.live.moved(seat, "forfeits", rules.spectator_state(entry.table.game), entry.table.turn, self._clocks(entry))
        self.deliver(Seating(entry.table, seat, entry.id), out)

    # --- records ---------------------------------------------------------------------------

    def _record(self, entry: _Table, aborted: bool) -> None:
        """Append the finished (or aborted) game to ``records_dir/results.jsonl``, flushed at once."""
        entry.recorded = True
        self.seats.finish(entry)  # its resume tokens die: a late RESUME is told the game is over
        table = entry.table
        winner = table.winner
        if entry.reason is None:
            entry.reason = self._end_reason(entry)
        record = {
            "table": entry.id,
            "name": entry.name,
            "players": list(entry.players),
            "map": table.options.name if table.options is not None else None,
            "options": int(table.options.options) if table.options is not None else None,
            "started": entry.started,
            "ended": _now(),
            "moves": entry.moves,
            "winner": winner,
            "reason": entry.reason,
            "detail": entry.detail,
            "aborted": aborted,
        }
        if entry.live is not None:
            self._finish_live(entry, aborted)
        self._log.info(
            "combat table {table} ended ({reason}): winner {winner}, {moves} moves",
            table=entry.id,
            reason=entry.reason,
            winner="none" if winner is None else winner,
            moves=entry.moves,
        )
        if self.records_dir is None:
            return
        try:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            with open(self.records_dir / RESULTS, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
        except OSError as e:
            self._log.error("could not record combat table {table}: {e}", table=entry.id, e=e)

    # --- spectators (the live hub) --------------------------------------------------------

    def _open_table(self, entry: _Table) -> LiveTable:
        table = entry.table
        seats = [self._record_seat(entry, seat) for seat in range(table.number)]
        options = table.options
        info = {
            "map": options.name,
            "width": options.width,
            "height": options.height,
            "seats": table.number,
            "options": int(options.options),
            "flags": [flag.name for flag in rules.Opt if flag and flag in options.options],
            "army": list(options.army),
            "move_time": self._move_time,
        }
        if not self._control.plain:
            info["clock"] = self._control.notation()
        if entry.name is not None and not entry.name.startswith(" "):
            info["table"] = entry.name
        if entry.opening is not None:
            info["opening"] = entry.opening
        key = entry.name if entry.hosted else None  # what the hosted-game runner watches
        return self.hub.open("combat", seats, info, rules.spectator_state(table.game), self._clocks(entry), key=key)

    def _moved(self, entry: _Table) -> None:
        game = entry.table.game
        result = game.last_result
        if result is None:
            return
        playing = entry.table.state is State.PLAYING
        entry.live.moved(
            result.seat,
            rules.spectator_move(game, result),
            rules.spectator_state(game),
            game.turn if playing else None,
            self._clocks(entry) if playing else None,
            timing=entry.timing,
        )
        entry.timing = None

    def _clocks(self, entry: _Table) -> dict | None:
        control = self._control
        if control.unlimited:
            return None
        if control.bank is not None:
            clock = entry.clock
            if clock is None:
                return {seat: control.bank for seat in range(entry.table.number)}
            return {seat: clock.clock_left(seat) for seat in range(entry.table.number)}
        turn = entry.table.turn
        return {seat: (self._move_time if seat == turn else None) for seat in range(entry.table.number)}

    def _finish_live(self, entry: _Table, aborted: bool) -> None:
        """The end for the hub: 1 for the winner, 0 for the others (a seat that ran out of time or
        left loses); a game nobody won alive is a draw; an aborted or abandoned game is stored
        unrated. The reason is the record's (``entry.reason``), who and what in ``extra.detail``."""
        live, entry.live = entry.live, None
        table = entry.table
        game = table.game
        n = table.number
        winner = table.winner
        if aborted or winner is None:
            scores = (0.0,) * n
        else:
            scores = winner_scores(n, winner if winner >= 0 else None)
        state = rules.spectator_state(game, over=True) if game is not None else None
        extra = {"detail": entry.detail} if entry.detail else None
        live.finish(scores, entry.reason, state, rated=not aborted, extra=extra)

    @staticmethod
    def _end_reason(entry: _Table) -> str:
        """Why a game that a move ended is over, in the game's own words."""
        game = entry.table.game
        if entry.table.winner is not None and entry.table.winner < 0:
            return "no seat has a flag and a movable unit"
        result = game.last_result if game is not None else None
        if result is not None and result.pair is not None and result.pair[1] == 0:
            return "flag captured"
        return "no movable units left"

    # --- service ---------------------------------------------------------------------------

    def _table_log(self, table_id: int, line: str) -> None:
        self._log.info("combat table {table}: {line}", table=table_id, line=line)

    def abort_games(self) -> None:
        if self._tables:
            self._log.info("closing {n} combat tables for shutdown", n=len(self._tables))
        for entry in list(self._tables.values()):
            if entry.table.state is State.PLAYING and not entry.recorded:
                entry.reason = SHUTDOWN
                self._record(entry, aborted=True)
            for sitter in list(entry.sitting.values()):
                if not isinstance(sitter, CombatProtocol):
                    sitter.shutdown()  # a computer opponent: end its program
            self.seats.finish(entry)
            if entry.clock is not None:
                entry.clock.stop()
                entry.clock = None
