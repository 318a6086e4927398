"""The GGZ Combat service: tables of seats, filled in arrival order, each a pure ``CombatTable``.

A new connection takes the lowest free seat of the oldest table that is still waiting for players
(a new table when none is), and is told so by the table's own messages (CBT_MSG_SEAT, ...). A
table whose every seat has left is removed.
"""

from __future__ import annotations

import random

import attrs
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from gamed.combat.protocol import CombatFactory, CombatProtocol
from gamed.combat.table import CombatTable, Outgoing
from gamed.combat.wire import SeatKind, State
from gamed.config import Limits
from gamed.gameservice import GameService
from gamed.textline import ConnectionLimits


@attrs.define(eq=False)
class Seating:
    """Where a connection sits."""

    table: CombatTable
    seat: int
    table_id: int


class CombatService(GameService):
    """Seats Combat connections at tables of ``seats`` seats and relays their messages."""

    _log = Logger()
    name = "combat"

    def __init__(self, limits: Limits, clock: IReactorTime, seats: int = 2, rng: random.Random | None = None):
        super().__init__(limits, clock)
        self.seats = seats
        self.rng = rng or random.Random()
        self.tables: dict[int, CombatTable] = {}
        self._sitting: dict[int, dict[int, CombatProtocol]] = {}
        self._next_id = 1
        self.factory = CombatFactory(self)

    def port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer)

    def seat(self, protocol: CombatProtocol) -> None:
        """Give ``protocol`` the lowest free seat of the oldest waiting table."""
        for table_id, table in self.tables.items():
            if table.state is State.WAIT:
                for seat in range(table.number):
                    if seat not in self._sitting[table_id] and table.seats[seat].kind is SeatKind.OPEN:
                        return self._join(protocol, table_id, table, seat)
        table_id = self._next_id
        self._next_id += 1
        table = CombatTable(self.seats, rng=self.rng, log=lambda line, t=table_id: self._table_log(t, line))
        self.tables[table_id] = table
        self._sitting[table_id] = {}
        self._join(protocol, table_id, table, 0)

    def _join(self, protocol: CombatProtocol, table_id: int, table: CombatTable, seat: int) -> None:
        seating = Seating(table, seat, table_id)
        protocol.seating = seating
        self._sitting[table_id][seat] = protocol
        self._log.info("combat table {table}: {name} takes seat {seat}", table=table_id, name=protocol.name, seat=seat)
        self.deliver(seating, table.join(seat, protocol.name))

    def deliver(self, seating: Seating, out: Outgoing) -> None:
        """Write each (seat, message) the table produced to that seat's connection."""
        sitting = self._sitting.get(seating.table_id, {})
        for seat, message in out:
            protocol = sitting.get(seat)
            if protocol is not None:
                protocol.send(message)

    def vacate(self, seating: Seating, reason: str | None) -> None:
        """The connection of ``seating`` is gone (``reason``: why we closed it, None: it left)."""
        sitting = self._sitting.get(seating.table_id)
        if sitting is None or sitting.get(seating.seat) is None:
            return
        del sitting[seating.seat]
        table = seating.table
        out = table.leave(seating.seat) if reason is None else table.drop(seating.seat, reason)
        self.deliver(seating, out)
        if not sitting:
            del self._sitting[seating.table_id]
            del self.tables[seating.table_id]

    def _table_log(self, table_id: int, line: str) -> None:
        self._log.info("combat table {table}: {line}", table=table_id, line=line)

    def abort_games(self) -> None:
        if self.tables:
            self._log.info("closing {n} combat tables for shutdown", n=len(self.tables))
