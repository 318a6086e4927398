"""The waiting room: groups waiting players into tables, by arrival order or by a table name.

Players in the general queue are seated in arrival order: the first ``seats`` of them form a table,
the next ones the next table. A player may instead name a table; everyone who names the same table
sits together once it is full. The first player at a named table may choose its seat count.
The lobby knows nothing about connections: members are any hashable objects, ``alive(member)``
says whether one is still there (members that left without ``leave`` are dropped before seating),
and ``key(member)`` who it is: two members with the same key that is not None (two connections of
one account) never sit at one table; the later one waits for the next.

A table can be *reserved* (``reserve``) for players named in seat order, as the daemon does for a
game between hosted bots (gamed.hosting): only those names (``who(member)``: by default the name
of the member's placement, so a guest who calls itself like a bot is not one) may join it, and once
it is full they are seated in the reserved order (``seating_reserved`` is True while ``on_table``
runs for it, so a game does not swap the seats as it may for others). A reservation serves one game.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from gamed import timecontrol
from gamed.timecontrol import TimeControl


# A table whose players asked for a time control: its key and the control's canonical notation,
# so that only players who asked for the same control meet (neither a table name nor a notation
# has this character).
_CLOCK = "|"


def clock_table(key: str | None, control: TimeControl | None) -> str | None:
    """The lobby key of table ``key`` (None: the general queue) for players who asked for
    ``control`` (None: the game's own)."""
    return key if control is None else f"{key or ''}{_CLOCK}{control.notation()}"


def table_clock(key: str | None) -> tuple[str | None, TimeControl | None]:
    """``clock_table`` undone: the table's key (None for the general queue) and the control."""
    if key is None or _CLOCK not in key:
        return key, None
    base, notation = key.rsplit(_CLOCK, 1)
    return base or None, timecontrol.parse(notation)


def _placed_name(member: Hashable) -> str | None:
    """The name of the hosted bot ``member`` is placed as (``gamed.seats.Placement``), else None:
    only the daemon's own connections sit at a reserved table, never a guest of the same name."""
    placement = getattr(member, "placement", None)
    return placement.identity.name if placement is not None else None


class LobbyError(Exception):
    """A join the lobby refuses (bad seat count, already waiting, table full or mismatched)."""


@attrs.define(eq=False)
class _Table:
    name: str | None
    seats: int
    members: list[Hashable] = attrs.field(factory=list)


class Lobby:
    """Seats waiting members at tables of ``seats`` and calls ``on_table(members, name)`` for each."""

    def __init__(
        self,
        seats: int,
        on_table: Callable[[list[Hashable], str | None], None],
        alive: Callable[[Hashable], bool] = lambda member: True,
        min_seats: int = 2,
        max_seats: int | None = None,
        key: Callable[[Hashable], Hashable | None] = lambda member: None,
        who: Callable[[Hashable], str | None] = lambda member: _placed_name(member),
    ):
        if seats < 1:
            raise ValueError("a table needs at least one seat")
        self.seats = seats
        self.min_seats = min_seats
        self.max_seats = seats if max_seats is None else max_seats
        self._on_table = on_table
        self._alive = alive
        self._key = key
        self._who = who
        self._reserved: dict[str, tuple[str, ...]] = {}
        self.seating_reserved = False
        self._queue = _Table(None, seats)
        self._named: dict[str, _Table] = {}
        self._where: dict[Hashable, _Table] = {}

    def join(self, member: Hashable, table: str | None = None, seats: int | None = None) -> int:
        """Put ``member`` in the general queue (``table`` None) or at the named table.

        ``seats`` chooses the seat count of a named table that this member opens; joining an
        existing table with a different count is refused. Returns how many seats are still free
        at the member's table after it joined (0 means the table was just seated).
        """
        if member in self._where:
            raise LobbyError("already waiting; leave first")
        names = self._reserved.get(table) if table is not None else None
        if names is not None:
            name = self._who(member)
            here = [self._who(m) for m in self._named[table].members] if table in self._named else []
            if name not in names or here.count(name) >= names.count(name):
                raise LobbyError(f"table {table} is reserved for {', '.join(names)}")
            seats = len(names)
        if table is None:
            if seats is not None and seats != self.seats:
                raise LobbyError("the general queue has a fixed seat count; name a table")
            target = self._queue
        else:
            target = self._named.get(table)
            if target is not None:
                self._prune(target)
            if target is None or not target.members:
                count = self.seats if seats is None else seats
                if not self.min_seats <= count <= self.max_seats:
                    raise LobbyError(f"seat count must be {self.min_seats} to {self.max_seats}")
                target = self._named[table] = _Table(table, count)
            elif seats is not None and seats != target.seats:
                raise LobbyError(f"table {table} has {target.seats} seats")
        target.members.append(member)
        self._where[member] = target
        self._seat(target)
        return self.free_seats(member) if member in self._where else 0

    def reserve(self, table: str, names: list[str] | tuple[str, ...]) -> None:
        """Keep ``table`` for the players ``names`` (in seat order) and for nobody else."""
        if table in self._named and self._named[table].members:
            raise LobbyError(f"table {table} has players already")
        if not self.min_seats <= len(names) <= self.max_seats:
            raise LobbyError(f"seat count must be {self.min_seats} to {self.max_seats}")
        self._reserved[table] = tuple(names)

    def release(self, table: str) -> None:
        """Drop ``table``'s reservation (its game has started, or will not)."""
        self._reserved.pop(table, None)

    def reserved(self, table: str | None) -> bool:
        """True while ``table`` waits for the players it is reserved for."""
        return table in self._reserved

    def leave(self, member: Hashable) -> bool:
        """Take ``member`` out of the waiting room; False when it was not waiting."""
        table = self._where.pop(member, None)
        if table is None:
            return False
        table.members.remove(member)
        if table.name is not None and not table.members:
            del self._named[table.name]
        return True

    def table_of(self, member: Hashable) -> str | None:
        """The named table ``member`` waits at (None for the general queue)."""
        return self._where[member].name

    def is_waiting(self, member: Hashable) -> bool:
        """True while ``member`` waits for a table."""
        return member in self._where

    def waiting(self) -> list[Hashable]:
        """Every waiting member, general queue first, each table in arrival order."""
        out = list(self._queue.members)
        for table in self._named.values():
            out.extend(table.members)
        return out

    def free_seats(self, member: Hashable) -> int:
        """How many more players ``member``'s table needs."""
        table = self._where[member]
        keys: set[Hashable] = set()
        apart = 0  # members who could sit together (one account counts once)
        for other in table.members:
            key = self._key(other)
            if key is None or key not in keys:
                apart += 1
                if key is not None:
                    keys.add(key)
        return max(1, table.seats - apart)

    def _prune(self, table: _Table) -> None:
        for member in [m for m in table.members if not self._alive(m)]:
            self.leave(member)

    def _seat(self, table: _Table) -> None:
        if len(table.members) < table.seats:
            return
        self._prune(table)
        while len(table.members) >= table.seats:
            members = self._apart(table)
            if members is None:
                return
            for member in members:
                self.leave(member)
            names = self._reserved.pop(table.name, None) if table.name is not None else None
            if names is None:
                self._on_table(members, table.name)
                continue
            order = list(names)
            members.sort(key=lambda m: order.index(self._who(m)) if self._who(m) in order else len(order))
            self.seating_reserved = True
            try:
                self._on_table(members, table.name)
            finally:
                self.seating_reserved = False

    def _apart(self, table: _Table) -> list[Hashable] | None:
        """The first ``seats`` members in arrival order of whom no two share a key, or None."""
        members: list[Hashable] = []
        keys: set[Hashable] = set()
        for member in table.members:
            key = self._key(member)
            if key is not None and key in keys:
                continue
            members.append(member)
            if key is not None:
                keys.add(key)
            if len(members) == table.seats:
                return members
        return None
