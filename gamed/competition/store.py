"""Tournaments in the records database (records migration 7): their definitions, the games they
scheduled and the results, through the RecordStore's connection pool (off the reactor).

A game row is written when the game is scheduled and its result once (``UPDATE ... WHERE scores
IS NULL``): a tournament stopped at any moment (a SIGKILL included) resumes with every finished
game kept once, and plays the unfinished ones again with the same seats and opening.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet import defer

from gamed import children
from gamed.competition.formats import Game, Played


class TournamentError(Exception):
    """A tournament that cannot be found or made; the message is one line for the user."""


@attrs.frozen
class Stored:
    """A tournament as the database keeps it."""

    id: int
    name: str
    game: str
    format: str
    spec: dict
    created: float
    finished: float | None
    state: str  # "running" (scheduled, being or to be played), "finished", "stopped"
    games: tuple[Game, ...] = ()
    played: dict = attrs.field(factory=dict)  # number -> Played


class TournamentStore:
    """The tournaments of one RecordStore."""

    def __init__(self, records: Any, reactor: Any):
        self.records = records
        self.reactor = reactor

    def open(self, name: str, game: str, kind: str, spec: dict) -> defer.Deferred:
        """The tournament ``name`` with everything stored of it, created when new; a stored one
        with another game, format or definition is a TournamentError (a new name, or
        ``gamed tournament remove``)."""
        return self.records.run_interaction(_open, self.records.dialect, name, game, kind, spec, self.reactor.seconds())

    def load(self, name: str) -> defer.Deferred:
        """The stored tournament ``name`` (TournamentError when there is none)."""
        return self.records.run_interaction(_load, self.records.dialect, name)

    def names(self) -> defer.Deferred:
        """Every tournament (without its games), newest first."""
        return self.records.run_interaction(_list, self.records.dialect)

    def schedule(self, tournament_id: int, games: Sequence[Game]) -> defer.Deferred:
        return self.records.run_interaction(_schedule, self.records.dialect, tournament_id, list(games), self.reactor.seconds())

    def finish_game(self, tournament_id: int, played: Played) -> defer.Deferred:
        """Store a result; fires with False when that game already had one (it is kept)."""
        return self.records.run_interaction(_finish_game, self.records.dialect, tournament_id, played, self.reactor.seconds())

    def set_state(self, tournament_id: int, state: str) -> defer.Deferred:
        finished = self.reactor.seconds() if state == "finished" else None
        return self.records.run_interaction(_set_state, self.records.dialect, tournament_id, state, finished)

    def remove(self, name: str) -> defer.Deferred:
        return self.records.run_interaction(_remove, self.records.dialect, name)

    def claim(self, tournament_id: int, runner: str) -> defer.Deferred:
        """Make ``runner`` (``this_runner()``) the one process that plays the tournament, for
        ``LEASE`` seconds (``claim`` again to keep it); TournamentError naming the process that
        plays it already, unless its lease has run out or it is a process of this machine that
        is gone (a SIGKILLed run is taken over at once)."""
        return self.records.run_interaction(_claim, self.records.dialect, tournament_id, runner, time.time())

    def release(self, tournament_id: int, runner: str) -> defer.Deferred:
        """``runner`` plays the tournament no more."""
        return self.records.run_interaction(_release, self.records.dialect, tournament_id, runner)


# Seconds a claim on a tournament holds without being renewed (a runner renews it every third of it).
LEASE = 30.0


def this_runner() -> str:
    """Who plays: ``<host>:<pid>:<start time>`` of this process (the start time tells a reused pid apart)."""
    started = children.start_time(os.getpid())
    return f"{socket.gethostname()}:{os.getpid()}:{started if started is not None else 0}"


def _gone(runner: str) -> bool:
    """True when ``runner`` names a process of this machine that is not running any more."""
    host, _, rest = runner.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    now = children.start_time(int(pid))
    return now is None or str(now) != started


def _begin(cursor: Any, dialect: Any) -> None:
    if dialect.name == "sqlite":
        cursor.execute("BEGIN IMMEDIATE")


_COLUMNS = "id, name, game, format, spec, created, finished, state"


def _row(row: tuple) -> Stored:
    return Stored(int(row[0]), row[1], row[2], row[3], json.loads(row[4]), float(row[5]),
                  None if row[6] is None else float(row[6]), row[7])


def _find(cursor: Any, dialect: Any, name: str) -> Stored | None:
    cursor.execute(dialect.sql(f"SELECT {_COLUMNS} FROM tournaments WHERE lower(name) = lower(?)"), (name,))
    row = cursor.fetchone()
    return None if row is None else _row(row)


def _with_games(cursor: Any, dialect: Any, stored: Stored) -> Stored:
    cursor.execute(
        dialect.sql(
            "SELECT number, pair, seats, opening, scores, reason, outcome, faults, match_id "
            "FROM tournament_games WHERE tournament_id = ? ORDER BY number"
        ),
        (stored.id,),
    )
    games, played = [], {}
    for number, pair, seats, opening, scores, reason, outcome, faults, match_id in cursor.fetchall():
        games.append(Game(int(number), int(pair), tuple(json.loads(seats)), int(opening)))
        if scores is not None:
            played[int(number)] = Played(
                int(number), tuple(json.loads(scores)), reason, outcome or "", tuple(json.loads(faults)),
                None if match_id is None else int(match_id),
            )
    return attrs.evolve(stored, games=tuple(games), played=played)


def _open(cursor: Any, dialect: Any, name: str, game: str, kind: str, spec: dict, now: float) -> Stored:
    _begin(cursor, dialect)
    found = _find(cursor, dialect, name)
    if found is not None:
        if (found.game, found.format, found.spec) != (game, kind, spec):
            raise TournamentError(
                f"tournament {found.name} is stored with another definition ({found.format} of {found.game}); "
                f"give this one another name, or remove the stored one first"
            )
        return _with_games(cursor, dialect, found)
    cursor.execute(
        dialect.sql(
            "INSERT INTO tournaments (name, game, format, spec, created, state) VALUES (?, ?, ?, ?, ?, 'running') RETURNING id"
        ),
        (name, game, kind, json.dumps(spec, sort_keys=True), now),
    )
    new_id = int(cursor.fetchone()[0])
    return Stored(new_id, name, game, kind, spec, now, None, "running")


def _load(cursor: Any, dialect: Any, name: str) -> Stored:
    found = _find(cursor, dialect, name)
    if found is None:
        raise TournamentError(f"no tournament named {name}")
    return _with_games(cursor, dialect, found)


def _list(cursor: Any, dialect: Any) -> list[tuple[Stored, int, int]]:
    cursor.execute(
        f"SELECT {', '.join('t.' + c for c in _COLUMNS.split(', '))}, "
        "(SELECT COUNT(*) FROM tournament_games g WHERE g.tournament_id = t.id), "
        "(SELECT COUNT(*) FROM tournament_games g WHERE g.tournament_id = t.id AND g.scores IS NOT NULL) "
        "FROM tournaments t ORDER BY t.id DESC"
    )
    return [(_row(row[:8]), int(row[8]), int(row[9])) for row in cursor.fetchall()]


def _schedule(cursor: Any, dialect: Any, tournament_id: int, games: list[Game], now: float) -> None:
    _begin(cursor, dialect)
    for game in games:
        cursor.execute(
            dialect.sql(
                "INSERT INTO tournament_games (tournament_id, number, pair, seats, opening, scheduled) VALUES (?, ?, ?, ?, ?, ?)"
            ),
            (tournament_id, game.number, game.pair, json.dumps(list(game.seats)), game.opening, now),
        )


def _finish_game(cursor: Any, dialect: Any, tournament_id: int, played: Played, now: float) -> bool:
    _begin(cursor, dialect)
    cursor.execute(
        dialect.sql(
            "UPDATE tournament_games SET scores = ?, reason = ?, outcome = ?, faults = ?, match_id = ?, ended = ? "
            "WHERE tournament_id = ? AND number = ? AND scores IS NULL"
        ),
        (
            json.dumps(list(played.scores)), played.reason, played.outcome, json.dumps(list(played.faults)),
            played.match_id, now, tournament_id, played.number,
        ),
    )
    return cursor.rowcount == 1


def _set_state(cursor: Any, dialect: Any, tournament_id: int, state: str, finished: float | None) -> None:
    _begin(cursor, dialect)
    cursor.execute(dialect.sql("UPDATE tournaments SET state = ?, finished = ? WHERE id = ?"), (state, finished, tournament_id))


def _claim(cursor: Any, dialect: Any, tournament_id: int, runner: str, now: float) -> None:
    _begin(cursor, dialect)
    cursor.execute(dialect.sql("SELECT name, runner, lease FROM tournaments WHERE id = ?"), (tournament_id,))
    row = cursor.fetchone()
    if row is None:
        raise TournamentError(f"no tournament with id {tournament_id}")
    name, holder, lease = row
    if holder not in (None, runner) and lease is not None and float(lease) > now and not _gone(holder):
        host, _, rest = holder.partition(":")
        raise TournamentError(
            f"tournament {name} is being played by process {rest.partition(':')[0]} on {host}; "
            f"stop that one first (or wait {math.ceil(float(lease) - now)} s if it is gone)"
        )
    cursor.execute(dialect.sql("UPDATE tournaments SET runner = ?, lease = ? WHERE id = ?"), (runner, now + LEASE, tournament_id))


def _release(cursor: Any, dialect: Any, tournament_id: int, runner: str) -> None:
    _begin(cursor, dialect)
    cursor.execute(
        dialect.sql("UPDATE tournaments SET runner = NULL, lease = NULL WHERE id = ? AND runner = ?"), (tournament_id, runner)
    )


def _remove(cursor: Any, dialect: Any, name: str) -> str:
    _begin(cursor, dialect)
    found = _find(cursor, dialect, name)
    if found is None:
        raise TournamentError(f"no tournament named {name}")
    cursor.execute(dialect.sql("DELETE FROM tournament_games WHERE tournament_id = ?"), (found.id,))
    cursor.execute(dialect.sql("DELETE FROM tournaments WHERE id = ?"), (found.id,))
    return found.name
