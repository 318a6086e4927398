"""Hosted bots in the records database (records migration 8): the bots ``gamed bot add`` registers
besides the config's ``[bots.<name>]`` tables (docs/hosting.md, "Bots in the records database").

A stored bot keeps what was given: its command as argv (the program made absolute when it was
added), its settings, and only the limits that were set (on top of the defaults of the gamed that
runs it). ``BotStore`` works through the RecordStore's connection pool (off the reactor);
``stored_bots_now`` reads them synchronously at start-up, before the reactor runs, and
``registered_bots`` is the one way the daemon and ``gamed tournament run`` join them to the
config's bots.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from twisted.internet import defer

from gamed.hosting.spec import BotLimits, BotSpec, SpecError, parse_bot


class BotStoreError(Exception):
    """A stored bot that cannot be added, found or removed; the message is one line for the user."""


@attrs.frozen
class StoredBot:
    """A bot as the records database keeps it."""

    id: int
    name: str
    game: str
    argv: tuple[str, ...]
    workdir: str
    directory: str
    talk: str
    limits: dict  # only the limits given, as given ({"cpu": 10, "memory": "256M"})
    added: float

    def entry(self) -> dict[str, Any]:
        """Its fields as a ``[bots.<name>]`` table (for ``parse_bot``)."""
        entry: dict[str, Any] = {"game": self.game, "command": shlex.join(self.argv), "workdir": self.workdir,
                                 "talk": self.talk, "limits": dict(self.limits)}
        if self.directory:
            entry["directory"] = self.directory
        return entry

    def spec(self, games: Sequence[str], base_limits: BotLimits | None = None) -> BotSpec:
        """The BotSpec the daemon runs it as, checked now (its program must still be there):
        SpecError of one line naming the bot as one of the records database."""
        try:
            return parse_bot(self.name, self.entry(), tuple(games), base_limits)
        except SpecError as e:
            raise SpecError(f"{e} (bot {self.name} of the records database; 'gamed bot remove {self.name}' forgets it)") from None


class BotStore:
    """The stored bots of one RecordStore."""

    def __init__(self, records: Any, reactor: Any):
        self.records = records
        self.reactor = reactor

    def add(self, spec: BotSpec, limits: Mapping[str, Any]) -> defer.Deferred:
        """Store ``spec`` (already checked by ``parse_bot``) with the ``limits`` given -> StoredBot;
        BotStoreError when a bot of that name (in any case) is stored already."""
        return self.records.run_interaction(_add, self.records.dialect, spec, dict(limits), self.reactor.seconds())

    def list(self) -> defer.Deferred:
        """Every stored bot, by name."""
        return self.records.run_interaction(_list, self.records.dialect)

    def get(self, name: str) -> defer.Deferred:
        """The stored bot ``name`` (any case), or None."""
        return self.records.run_interaction(_get, self.records.dialect, name)

    def remove(self, name: str) -> defer.Deferred:
        """Forget the stored bot ``name`` -> its StoredBot; BotStoreError when there is none."""
        return self.records.run_interaction(_remove, self.records.dialect, name)


def stored_bots_now(records: Any) -> list[StoredBot]:
    """Every stored bot, read synchronously (``RecordStore.run_now``: start-up, after ``prepare()``)."""
    return records.run_now(_list, records.dialect)


def registered_bots(config_bots: Sequence[BotSpec], stored: Sequence[StoredBot], games: Sequence[str],
                    base_limits: BotLimits | None = None) -> tuple[BotSpec, ...]:
    """The config's bots and then the stored ones, each stored one checked as a config bot is; a
    name in both, or a stored bot that cannot run (its program gone), is a SpecError of one line."""
    names = {b.name.lower() for b in config_bots}
    bots = list(config_bots)
    for row in stored:
        if row.name.lower() in names:
            raise SpecError(f"bot {row.name} is in the config and in the records database")
        bots.append(row.spec(games, base_limits))
    return tuple(bots)


# --- interactions (run in one transaction) -------------------------------------------------------


def _begin(cursor: Any, dialect: Any) -> None:
    if dialect.name == "sqlite":
        cursor.execute("BEGIN IMMEDIATE")


_COLUMNS = "id, name, game, command, workdir, directory, talk, limits, added"


def _row(row: tuple) -> StoredBot:
    return StoredBot(int(row[0]), row[1], row[2], tuple(json.loads(row[3])), row[4], row[5], row[6],
                     json.loads(row[7]), float(row[8]))


def _find(cursor: Any, dialect: Any, name: str) -> StoredBot | None:
    cursor.execute(dialect.sql(f"SELECT {_COLUMNS} FROM bots WHERE lower(name) = lower(?)"), (name,))
    row = cursor.fetchone()
    return None if row is None else _row(row)


def _add(cursor: Any, dialect: Any, spec: BotSpec, limits: dict, now: float) -> StoredBot:
    _begin(cursor, dialect)
    found = _find(cursor, dialect, spec.name)
    if found is not None:
        raise BotStoreError(f"there is already a bot named {found.name} in the records database")
    cursor.execute(
        dialect.sql(
            "INSERT INTO bots (name, game, command, workdir, directory, talk, limits, added) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
        ),
        (spec.name, spec.game, json.dumps(list(spec.argv)), spec.workdir, spec.directory, spec.talk,
         json.dumps(limits, sort_keys=True), now),
    )
    new_id = int(cursor.fetchone()[0])
    return StoredBot(new_id, spec.name, spec.game, spec.argv, spec.workdir, spec.directory, spec.talk, limits, now)


def _list(cursor: Any, dialect: Any) -> list[StoredBot]:
    cursor.execute(f"SELECT {_COLUMNS} FROM bots ORDER BY lower(name)")
    return [_row(row) for row in cursor.fetchall()]


def _get(cursor: Any, dialect: Any, name: str) -> StoredBot | None:
    return _find(cursor, dialect, name)


def _remove(cursor: Any, dialect: Any, name: str) -> StoredBot:
    _begin(cursor, dialect)
    found = _find(cursor, dialect, name)
    if found is None:
        raise BotStoreError(f"no bot named {name} in the records database")
    cursor.execute(dialect.sql("DELETE FROM bots WHERE id = ?"), (found.id,))
    return found
