"""The operator's bans kept in the records database (migration 10, table ``bans``), so that a
ban outlives a restart: ``load_now`` reads them at start-up (before anything listens), ``BanStore``
adds and lifts them while the daemon runs, and keeps the in-memory ``gamed.connections.Bans``
that the ports and the logins ask in step with the table.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from gamed.connections import Ban, Bans


def _all(cursor: Any) -> list[Ban]:
    cursor.execute("SELECT kind, target, reason, created FROM bans ORDER BY created")
    return [Ban(kind, target, reason, float(created)) for kind, target, reason, created in cursor.fetchall()]


def load_now(records: Any) -> Bans:
    """The bans stored in ``records`` (a prepared RecordStore), read synchronously at start-up."""
    return Bans(records.run_now(_all))


class BanStore:
    """Adds and lifts bans in ``records`` (a RecordStore) and in ``bans`` (the Bans in force)."""

    def __init__(self, records: Any, bans: Bans, clock: Any):
        self.records = records
        self.bans = bans
        self.clock = clock

    def add(self, kind: str, target: str, reason: str = "") -> defer.Deferred:
        """Fires with the Ban once stored (a ban of the same target is replaced)."""
        ban = Bans().add(Ban(kind, target, reason, self.clock.seconds()))  # canonical, or BanError now

        def write(cursor: Any) -> None:
            dialect = self.records.dialect
            cursor.execute(dialect.sql("DELETE FROM bans WHERE kind = ? AND lower(target) = lower(?)"), (ban.kind, ban.target))
            cursor.execute(
                dialect.sql("INSERT INTO bans (kind, target, reason, created) VALUES (?, ?, ?, ?)"),
                (ban.kind, ban.target, ban.reason, ban.created),
            )

        d = self.records.run_interaction(write)
        d.addCallback(lambda _: self.bans.add(ban))
        return d

    def remove(self, kind: str, target: str) -> defer.Deferred:
        """Fires with the Ban lifted, or None when ``target`` was not banned."""
        found = next((b for b in self.bans.all() if b.kind == kind and self._same(b, target)), None)
        if found is None:
            return defer.succeed(None)

        def delete(cursor: Any) -> None:
            cursor.execute(self.records.dialect.sql("DELETE FROM bans WHERE kind = ? AND lower(target) = lower(?)"),
                           (found.kind, found.target))

        d = self.records.run_interaction(delete)
        d.addCallback(lambda _: self.bans.remove(found.kind, found.target))
        return d

    @staticmethod
    def _same(ban: Ban, target: str) -> bool:
        if ban.kind == "account":
            return ban.target.lower() == target.lower()
        try:
            return Bans().add(Ban("address", target)).target == ban.target
        except ValueError:
            return False
