"""Finished matches, their moves and results, and ratings (gamed.ratings), kept in a database.

SQLite by default (one file, WAL journal, one connection), PostgreSQL when the URL says so (the
optional ``psycopg`` dependency: ``pip install gamed[postgres]``). All database work runs in the
thread pool of ``twisted.enterprise.adbapi``; every public method returns a Deferred and none blocks
the reactor. A finished match is written in ONE transaction together with the rating updates, so a
crash never leaves a match without its seats, moves or ratings. The accounts players log in with
(gamed.accounts) are kept in the same database; a seat and a rating carry the account they belong to.
So are tournaments (gamed.competition.store) and the hosted bots of ``gamed bot add``
(gamed.hosting.store).

A move's spectator state is not kept when the game's rules rebuild it (gamed.replay: a patch
against the rules' prediction, ``[]`` for nearly every move); ``match`` rebuilds the states, so a
match reads back exactly as the live game showed it, whether it was stored so or, by an older
gamed, with every state. ``prune`` drops old matches' moves ([records] keep_moves) and keeps
their results and ratings.

The schema is versioned: table ``schema_version`` holds one row per applied migration, and
``start()`` applies the missing ones (all in one transaction), so opening a database made by an
older gamed upgrades it and opening a current one changes nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from twisted.application import service
from twisted.enterprise import adbapi
from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure

from gamed import outcome, registry, replay
from gamed import ratings as skill  # "ratings" is the name of many local lists here

log = Logger()


class RecordsError(Exception):
    """A database that cannot be used as a records database; the message says why."""


@attrs.frozen
class Seat:
    """One seat (side, team) of a match and who sat in it."""

    seat: int  # 0-based seat / side / team number
    name: str  # as shown ("alice", "guest3", "gamed:2", "fast_ai")
    rated: bool  # False for unnamed players (guest<N>, player<N>...): never rated
    kind: str = "player"  # one of SEAT_KINDS; a "guest" seat is never rated, whatever ``rated`` says
    account_id: int | None = None  # the gamed.accounts account that sat here (None: guest, program ...)

    @property
    def counts(self) -> bool:
        """True when this seat's result may change a rating: ``rated`` and not a guest."""
        return self.rated and self.kind != "guest"


# What sat in a seat: a person ("player"), a registered program ("bot"), a person without an
# account ("guest"), Kalaha's built-in "computer", a Connect Four "engine", a "program" the daemon
# started (the Stratego referee's AIs, Virtual Fight's).
SEAT_KINDS = ("player", "bot", "guest", "engine", "computer", "program")


def _clock_keys(clock: dict | None) -> dict | None:
    """A move's clock with its seats as strings ({} is "no clock": None; a clock that is not a
    dict is left as it is for ``RecordStore.store`` to refuse)."""
    if isinstance(clock, dict):
        return {str(seat): entry for seat, entry in clock.items()} or None
    return clock


@attrs.frozen
class Move:
    """One move (for Virtual Fight: one resolved turn) of a match."""

    n: int  # 1, 2, 3 ...
    seat: int | None  # who moved (None for a simultaneous turn)
    move: str  # the move in the game's own notation, human readable
    t: float  # seconds since the match started
    state: dict | None = None  # spectator view AFTER this move (JSON-able)
    # The clocks of this move: {seat: {"used": s, "left": s or None, "credit": s}} for each seat
    # that played it (gamed.scheduler.Turn.clock_entry); None when the game kept no clock. The
    # seats are kept as strings ("0"), as JSON and the records database give them back.
    clock: dict | None = attrs.field(default=None, converter=_clock_keys)


@attrs.frozen
class MatchRecord:
    """Everything kept of one finished (or aborted) match."""

    game: str  # one of GAME_TYPES: "kalaha", "fight", "combat", "stratego", "connect4"...
    started: float  # unix time
    ended: float  # unix time
    seats: tuple[Seat, ...]
    options: dict  # map, board size, levels, rules options ... (JSON-able)
    moves: tuple[Move, ...]
    scores: tuple[float, ...]  # per seat: 1 win, 0.5 draw, 0 loss (multi-seat: any ordering values)
    reason: str  # "four in a row", "timeout", "resign", "shutdown" ...
    rated: bool = True  # False for aborted games (then nobody's rating changes)
    initial_state: dict | None = None
    # e.g. {"ucc_log": "<the -o log text>"} for Stratego, {"detail": "seat 1 (bob) left the game"},
    # {"final_state": {...}} (the board at the end), {"moves_not_kept": 310}
    extra: dict = attrs.field(factory=dict)
    table: str = ""  # live table id it came from, e.g. "kalaha-3"

    @property
    def turns(self) -> int:
        """Moves played, kept or not."""
        return len(self.moves) + int(self.extra.get("moves_not_kept", 0) or 0)

    @property
    def detail(self) -> str | None:
        """Who did what at the end, in words (a Combat forfeit), when the game says."""
        detail = self.extra.get("detail")
        return detail if isinstance(detail, str) and detail else None

    @property
    def points(self) -> list[float] | None:
        """Each seat's points in the game's own terms (Kalaha's stones), where it has any."""
        return outcome.points(self.game, self.extra.get("final_state"))


def record_from_json(data: dict) -> MatchRecord:
    """The MatchRecord back from the JSON of ``RecordStore.match`` (what ``gamed export`` prints)."""
    return MatchRecord(
        game=data["game"],
        started=data["started"],
        ended=data["ended"],
        seats=tuple(Seat(s["seat"], s["name"], s["rated"], s["kind"], s.get("account_id")) for s in data["seats"]),
        options=data["options"],
        moves=tuple(Move(m["n"], m["seat"], m["move"], m["t"], m["state"], m.get("clock")) for m in data["moves"]),
        scores=tuple(data["scores"]),
        reason=data["reason"],
        rated=data["rated"],
        initial_state=data["initial_state"],
        extra=data["extra"],
        table=data["table"],
    )


# --- dialects and URLs -------------------------------------------------------------------------


@attrs.frozen
class _Dialect:
    """What differs between the databases: the driver, the id column and the parameter style."""

    name: str
    id_column: str  # the auto-numbered primary key of matches
    param: str  # placeholder the driver uses for "?"

    def sql(self, statement: str) -> str:
        """``statement`` written with ``?`` placeholders, in this driver's parameter style."""
        return statement if self.param == "?" else statement.replace("?", self.param)


SQLITE = _Dialect("sqlite", "INTEGER PRIMARY KEY AUTOINCREMENT", "?")
POSTGRES = _Dialect("postgresql", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "%s")


def parse_url(url: str) -> tuple[_Dialect, str]:
    """(dialect, target) for a records URL: the SQLite file path, or the PostgreSQL conninfo URL.

    ``sqlite:///abs/path.sqlite``, ``sqlite:relative/path.sqlite``, a plain path (SQLite) or
    ``postgresql://user:pw@host:port/db`` (also ``postgres://``)."""
    if url.startswith(("postgresql://", "postgres://")):
        return POSTGRES, url
    if url.startswith("sqlite:"):
        rest = url[len("sqlite:") :]
        if rest.startswith("//"):
            rest = rest[2:]  # sqlite:///abs -> /abs; sqlite://rel -> rel
        if not rest:
            raise RecordsError(f"records URL {url!r} names no file")
        return SQLITE, rest
    if "://" in url:
        raise RecordsError(f"records URL {url!r}: only sqlite: and postgresql:// databases are supported")
    if not url:
        raise RecordsError("records URL is empty")
    return SQLITE, url


# --- schema ------------------------------------------------------------------------------------

# Each migration is a list of statements ({id} is the dialect's id column). Never edit one that has
# shipped: add the next. Version 2 exists because ratings came after the first records.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: matches, seats and moves
        """CREATE TABLE matches (
            id {id},
            game TEXT NOT NULL,
            table_id TEXT NOT NULL,
            started DOUBLE PRECISION NOT NULL,
            ended DOUBLE PRECISION NOT NULL,
            reason TEXT NOT NULL,
            rated INTEGER NOT NULL,
            options TEXT NOT NULL,
            initial_state TEXT,
            extra TEXT NOT NULL)""",
        "CREATE INDEX matches_game ON matches (game, id)",
        """CREATE TABLE seats (
            match_id BIGINT NOT NULL REFERENCES matches (id),
            seat INTEGER NOT NULL,
            name TEXT NOT NULL,
            rated INTEGER NOT NULL,
            kind TEXT NOT NULL,
            score DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (match_id, seat))""",
        """CREATE TABLE moves (
            match_id BIGINT NOT NULL REFERENCES matches (id),
            n INTEGER NOT NULL,
            seat INTEGER,
            move TEXT NOT NULL,
            t DOUBLE PRECISION NOT NULL,
            state TEXT,
            PRIMARY KEY (match_id, n))""",
    ),
    (  # 2: Elo ratings per game type, and each seat's rating before and after the match
        """CREATE TABLE ratings (
            game TEXT NOT NULL,
            name TEXT NOT NULL,
            rating DOUBLE PRECISION NOT NULL,
            games INTEGER NOT NULL,
            wins INTEGER NOT NULL,
            draws INTEGER NOT NULL,
            losses INTEGER NOT NULL,
            PRIMARY KEY (game, name))""",
        "CREATE INDEX ratings_board ON ratings (game, rating)",
        "ALTER TABLE seats ADD COLUMN rating_before DOUBLE PRECISION",
        "ALTER TABLE seats ADD COLUMN rating_after DOUBLE PRECISION",
    ),
    (  # 3: what the lists of matches show without reading moves or extra: the moves played, the
        # end's detail (who forfeited...), each seat's points in the game's own terms (Kalaha's
        # stones); and a player's matches found by name
        "ALTER TABLE matches ADD COLUMN turns INTEGER",
        "ALTER TABLE matches ADD COLUMN detail TEXT",
        "ALTER TABLE seats ADD COLUMN points DOUBLE PRECISION",
        "UPDATE matches SET turns = (SELECT COUNT(*) FROM moves WHERE moves.match_id = matches.id)",
        "CREATE INDEX seats_name ON seats (name, match_id)",
        lambda cursor, dialect: _fill_details_and_points(cursor, dialect),
    ),
    (  # 4: accounts (gamed.accounts: registered players and bots, their tokens' salted hashes),
        # and the account each seat and each rating belongs to (NULL: guests, programs, the
        # typed names of before)
        """CREATE TABLE accounts (
            id {id},
            name TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            revoked DOUBLE PRECISION,
            rotated DOUBLE PRECISION)""",
        "CREATE UNIQUE INDEX accounts_name_nocase ON accounts (lower(name))",
        "ALTER TABLE seats ADD COLUMN account_id BIGINT",
        "ALTER TABLE ratings ADD COLUMN account_id BIGINT",
    ),
    (  # 5: each move's clock, as JSON ({seat: {"used", "left", "credit"}}; NULL: no clock kept)
        "ALTER TABLE moves ADD COLUMN clock TEXT",
    ),
    (  # 6: openskill ratings (gamed.ratings): each rating's uncertainty sigma, and each seat's
        # sigma before and after its match (NULL: unrated, or rated by the Elo of before). An Elo
        # rating of before keeps its number as mu and gets a newcomer's sigma (500): the new model
        # cannot tell how sure the old one was, so the next games settle it, and the boards' order
        # (the conservative rating mu - 3 sigma, indexed here) stays what it was.
        "ALTER TABLE ratings ADD COLUMN sigma DOUBLE PRECISION NOT NULL DEFAULT 500.0",
        "ALTER TABLE seats ADD COLUMN sigma_before DOUBLE PRECISION",
        "ALTER TABLE seats ADD COLUMN sigma_after DOUBLE PRECISION",
        "DROP INDEX ratings_board",
        "CREATE INDEX ratings_conservative ON ratings (game, (rating - 3 * sigma))",
    ),
    (  # 7: tournaments (gamed.competition): each one's definition, and every game it scheduled,
        # with its result once played. A game is stored when scheduled and its result written once
        # (UPDATE ... WHERE scores IS NULL), so a tournament stopped at any moment resumes with every
        # finished game kept once and the unfinished ones played again with the same seats.
        """CREATE TABLE tournaments (
            id {id},
            name TEXT NOT NULL,
            game TEXT NOT NULL,
            format TEXT NOT NULL,
            spec TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            finished DOUBLE PRECISION,
            state TEXT NOT NULL)""",
        "CREATE UNIQUE INDEX tournaments_name ON tournaments (lower(name))",
        """CREATE TABLE tournament_games (
            tournament_id BIGINT NOT NULL REFERENCES tournaments (id),
            number INTEGER NOT NULL,
            pair INTEGER NOT NULL,
            seats TEXT NOT NULL,
            opening INTEGER NOT NULL,
            scheduled DOUBLE PRECISION NOT NULL,
            scores TEXT,
            reason TEXT,
            outcome TEXT,
            faults TEXT,
            match_id BIGINT,
            ended DOUBLE PRECISION,
            PRIMARY KEY (tournament_id, number))""",
    ),
    (  # 8: hosted bots registered with ``gamed bot add`` (gamed.hosting.store), besides the
        # config's [bots.<name>] tables: the command as a JSON argv list (its program already made
        # absolute), and only the limits given (JSON), so that a stored bot keeps the defaults of
        # the gamed that runs it for the rest. A name is unique in any case, as the config's are.
        """CREATE TABLE bots (
            id {id},
            name TEXT NOT NULL,
            game TEXT NOT NULL,
            command TEXT NOT NULL,
            workdir TEXT NOT NULL,
            directory TEXT NOT NULL,
            talk TEXT NOT NULL,
            limits TEXT NOT NULL,
            added DOUBLE PRECISION NOT NULL)""",
        "CREATE UNIQUE INDEX bots_name ON bots (lower(name))",
    ),
    (  # 9: who plays a tournament just now (gamed.competition.store.claim): its process as
        # <host>:<pid>:<start time> and until when its claim holds without being renewed.
        "ALTER TABLE tournaments ADD COLUMN runner TEXT",
        "ALTER TABLE tournaments ADD COLUMN lease DOUBLE PRECISION",
    ),
    (  # 10: the operator's bans (gamed.bans, the admin console: docs/admin.md): kind "address"
        # (an address or a CIDR network, canonical) or "account" (a name, unique in any case).
        """CREATE TABLE bans (
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            reason TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL)""",
        "CREATE UNIQUE INDEX bans_target ON bans (kind, lower(target))",
    ),
    (  # 11: states rebuilt by the rules instead of kept (gamed.replay): a move's ``patch`` is what
        # its state differs from the rules' prediction ('[]': nothing; NULL: its ``state`` is kept
        # whole, or it has none), and a match's ``replayer`` names the replayer its patches are for
        # (IGame.replay_version; NULL: every state kept whole, as before).
        "ALTER TABLE moves ADD COLUMN patch TEXT",
        "ALTER TABLE matches ADD COLUMN replayer TEXT",
    ),
)


def _conservative(alias: str = "") -> str:
    """The conservative rating in SQL (gamed.ratings.conservative, CONSERVATIVE_Z = 3): the boards'
    order and a player's rank. Without an alias it is written exactly as migration 6 indexes it,
    so that the index serves the boards."""
    prefix = f"{alias}." if alias else ""
    return f"{prefix}rating - 3 * {prefix}sigma"


# The game types a match can be of (MatchRecord.game), as the web API and the pages name them:
# the registered games' names (gamed.registry).
GAME_TYPES = tuple(game.name for game in registry.GAMES)

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(cursor: Any, dialect: _Dialect) -> int:
    """The version a database is at (0 for an empty one), read through a DB-API cursor."""
    cursor.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
    )
    cursor.execute("SELECT MAX(version) FROM schema_version")
    row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(cursor: Any, dialect: _Dialect, upto: int = SCHEMA_VERSION) -> int:
    """Apply the migrations a database lacks, up to version ``upto``; returns the version it had.

    Runs inside the caller's transaction, so a failed migration leaves the database as it was."""
    if dialect is SQLITE:
        cursor.execute("BEGIN IMMEDIATE")  # DDL too inside the transaction (sqlite3 would autocommit it)
    elif dialect is POSTGRES:
        cursor.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)")
        cursor.execute("LOCK TABLE schema_version IN EXCLUSIVE MODE")  # two daemons starting at once
    had = schema_version(cursor, dialect)
    if had > SCHEMA_VERSION:
        raise RecordsError(f"the records database is at schema version {had}, newer than this gamed knows ({SCHEMA_VERSION})")
    for version in range(had + 1, upto + 1):
        for statement in MIGRATIONS[version - 1]:
            if callable(statement):  # a step that computes data in Python
                statement(cursor, dialect)
            else:
                cursor.execute(statement.format(id=dialect.id_column))
        cursor.execute(dialect.sql("INSERT INTO schema_version (version, applied) VALUES (?, ?)"), (version, time.time()))
    return had


# --- the store ---------------------------------------------------------------------------------


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} is not JSON-able: {e}") from None


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _check_record(record: MatchRecord) -> None:
    if not isinstance(record, MatchRecord):
        raise TypeError(f"not a MatchRecord: {record!r}")
    if len(record.scores) != len(record.seats):
        raise ValueError(f"{len(record.seats)} seats but {len(record.scores)} scores")
    if sorted(s.seat for s in record.seats) != list(range(len(record.seats))):
        raise ValueError("seats must be numbered 0, 1, 2 ... once each")
    if len({m.n for m in record.moves}) != len(record.moves):
        raise ValueError("two moves with the same number")
    for m in record.moves:
        if m.clock is not None and not isinstance(m.clock, dict):
            raise ValueError(f"move {m.n}: its clock is not a dict of seats: {m.clock!r}")


class RecordStore:
    """The records database: store finished matches, read them back, keep the ratings."""

    def __init__(self, url: str, reactor: Any, create: bool = True, compact: bool = True):
        """``url``: see ``parse_url``. ``create=False``: a SQLite file must already exist (for readers
        such as ``gamed export``, which must not leave an empty database behind a typo).
        ``compact=False`` keeps every move's state whole, as gamed did before the replayers
        (gamed.replay; what bench/records_size.py compares with)."""
        self.url = url
        self.compact = compact
        self.dialect, self._target = parse_url(url)
        self.reactor = reactor
        self._create = create
        self._pool: adbapi.ConnectionPool | None = None
        self._ready: _Outcome | None = None  # known when start() has migrated (or failed to)
        self._in_flight: set[defer.Deferred] = set()
        self.write_observers: list[Callable[[float], None]] = []  # each told the seconds a match's write took (gamed.metrics)
        self._closing: _Outcome | None = None

    def _make_pool(self) -> adbapi.ConnectionPool:
        if self.dialect is SQLITE:
            self._check_sqlite_path()
            return adbapi.ConnectionPool(
                "sqlite3",
                self._target,
                check_same_thread=False,
                cp_min=1,
                cp_max=1,  # SQLite writes one at a time anyway; one connection keeps them in order
                cp_openfun=_sqlite_opened,
                cp_reactor=self.reactor,
            )
        try:
            import psycopg
        except ImportError:
            raise RecordsError("a PostgreSQL records database needs psycopg: pip install 'gamed[postgres]'") from None
        del psycopg  # adbapi imports it by name
        return adbapi.ConnectionPool("psycopg", self._target, cp_min=1, cp_max=4, cp_reconnect=True, cp_reactor=self.reactor)

    def _cannot_open(self, e: Exception) -> RecordsError:
        """The one line of a database that cannot be opened: the driver's own first line."""
        text = str(e).strip()
        return RecordsError(f"cannot open the records database {self.url}: {text.splitlines()[0] if text else type(e).__name__}")

    @property
    def pending(self) -> int:
        """Work in flight on the database (writes and reads; gamed.metrics)."""
        return len(self._in_flight)

    def _check_sqlite_path(self) -> None:
        """Refuse a SQLite file that is missing (``create=False``) or whose directory is missing: a
        mistyped path must stop start-up, not leave new directories and an empty database behind."""
        if not self._create and not os.path.isfile(self._target):
            raise RecordsError(f"no records database at {self._target}")
        directory = os.path.dirname(self._target)
        if directory and not os.path.isdir(directory):
            raise RecordsError(f"cannot open the records database {self.url}: the directory {directory} does not exist")

    def prepare(self) -> int:
        """Open the database, bring its schema up to date and close it again, synchronously; returns
        the version it had. For start-up, before the reactor runs: a database that cannot be used
        raises RecordsError with the reason, so the daemon never starts without its records.
        ``start()`` later finds the schema current."""
        try:
            if self.dialect is SQLITE:
                return self._prepare_sqlite()
            try:
                import psycopg
            except ImportError:
                raise RecordsError("a PostgreSQL records database needs psycopg: pip install 'gamed[postgres]'") from None
            with psycopg.connect(self._target, connect_timeout=10) as conn:
                with conn.cursor() as cursor:
                    had = migrate(cursor, self.dialect)
                conn.commit()
            self._migrated(had)
            return had
        except RecordsError:
            raise
        except Exception as e:  # the driver's and the file system's own errors
            raise self._cannot_open(e) from None

    def _prepare_sqlite(self) -> int:
        import sqlite3

        self._check_sqlite_path()
        conn = sqlite3.connect(self._target)
        try:
            _sqlite_opened(conn)
            had = migrate(conn.cursor(), self.dialect)
            conn.commit()
        finally:
            conn.close()
        self._migrated(had)
        return had

    def run_now(self, interaction: Callable[..., Any], *args: Any) -> Any:
        """Run ``interaction(cursor, *args)`` in one transaction on a connection of its own and
        close it again, synchronously, after ``prepare()``: for start-up, before the reactor runs
        (the daemon reading the bots ``gamed bot add`` stored). A database that cannot be read
        raises RecordsError with the reason; the interaction's own errors pass through."""
        try:
            if self.dialect is SQLITE:
                import sqlite3

                self._check_sqlite_path()
                conn = sqlite3.connect(self._target)
                _sqlite_opened(conn)
            else:
                import psycopg

                conn = psycopg.connect(self._target, connect_timeout=10)
        except RecordsError:
            raise
        except Exception as e:  # the driver's and the file system's own errors
            raise self._cannot_open(e) from None
        try:
            result = interaction(conn.cursor(), *args)
            conn.commit()
            return result
        except Exception:
            conn.rollback()
            raise
        finally:
            conn.close()

    def start(self) -> defer.Deferred:
        """Open the database and bring its schema up to date; fires with the version it had."""
        if self._ready is None:
            self._ready = _Outcome()
            try:
                self._pool = self._make_pool()
            except Exception:
                self._ready.fire(Failure())
            else:
                d = self._pool.runInteraction(migrate, self.dialect)
                d.addCallback(self._migrated)
                d.addBoth(self._ready.fire)
        return self._ready.wait()

    def _migrated(self, had: int) -> int:
        if had < SCHEMA_VERSION:
            log.info("records database {url}: schema version {had} -> {now}", url=self.url, had=had, now=SCHEMA_VERSION)
        return had

    def _run(self, interaction: Callable[..., Any], *args: Any) -> defer.Deferred:
        """Run ``interaction(cursor, *args)`` in one transaction once start() has finished."""
        if self._ready is None:
            return defer.fail(RecordsError("the records store has not been started"))
        if self._closing is not None:
            return defer.fail(RecordsError("the records store is closed"))
        pool = self._pool

        def go(_: Any) -> defer.Deferred:
            assert pool is not None
            return pool.runInteraction(interaction, *args)

        d = self._ready.wait()
        d.addCallback(go)
        # close() waits on this one, never on d itself: waiting must not take d's result from its caller.
        done: defer.Deferred = defer.Deferred()
        self._in_flight.add(done)

        def finished(result: Any) -> Any:
            self._in_flight.discard(done)
            done.callback(None)
            return result

        d.addBoth(finished)
        return d

    def run_interaction(self, interaction: Callable[..., Any], *args: Any) -> defer.Deferred:
        """Run ``interaction(cursor, *args)`` in one transaction of the records' thread pool, once
        the schema is ready (for the stores built on this one, such as gamed.accounts)."""
        return self._run(interaction, *args)

    def store(self, record: MatchRecord) -> defer.Deferred:
        """Write a finished match (match, seats, moves, rating updates: one transaction) -> its id."""
        try:
            _check_record(record)
        except (TypeError, ValueError) as e:
            return defer.fail(e)
        d = self._run(_store, self.dialect, record, self.compact)
        if self.write_observers:
            began = time.monotonic()

            def took(result: Any) -> Any:
                for observe in self.write_observers:
                    observe(time.monotonic() - began)
                return result

            d.addCallback(took)
        return d

    def match(self, match_id: int) -> defer.Deferred:
        """The match as JSON-able dict (MatchSummary + options, initial_state, moves (each with its
        state and clock), extra, table; seats also carry rated, kind, the ratings and sigmas
        before/after and the account), or None if unknown."""
        if not isinstance(match_id, int) or isinstance(match_id, bool):
            return defer.fail(TypeError(f"a match id is a whole number, not {match_id!r}"))
        if not 1 <= match_id < 2**63:
            return defer.succeed(None)  # no such id can exist (and the drivers refuse such numbers)
        return self._run(_match, self.dialect, match_id)

    def recent(self, limit: int = 20, game: str | None = None, played: bool = False) -> defer.Deferred:
        """MatchSummary dicts of the last ``limit`` stored matches (of ``game`` if given), newest
        first; ``played``: without the matches aborted before their first move."""
        if not isinstance(limit, int) or limit < 0:
            return defer.fail(ValueError(f"limit must be a whole number >= 0, not {limit!r}"))
        return self._run(_recent, self.dialect, limit, game, played)

    def player(self, name: str, limit: int = 20, played: bool = False) -> defer.Deferred:
        """``{"name", "ratings": [{"game", "rating", "sigma", "low", "high", "conservative", "provisional",
        "games", "wins", "draws", "losses", "rank"}...],
        "matches": [MatchSummary...]}`` of the player (the last ``limit`` matches it sat in, newest
        first; ``played`` as for ``recent``), or None for a name that never played."""
        if not isinstance(limit, int) or limit < 0:
            return defer.fail(ValueError(f"limit must be a whole number >= 0, not {limit!r}"))
        return self._run(_player, self.dialect, name, limit, played)

    def leaderboard(self, game: str, limit: int = 100) -> defer.Deferred:
        """[{"name", "rating", "sigma", "low", "high", "conservative", "provisional", "games", "wins",
        "draws", "losses"}...] of ``game``, best first by the conservative rating (mu - 3 sigma)."""
        if not isinstance(limit, int) or limit < 0:
            return defer.fail(ValueError(f"limit must be a whole number >= 0, not {limit!r}"))
        return self._run(_leaderboard, self.dialect, game, limit)

    def rating(self, game: str, name: str) -> defer.Deferred:
        """The ``gamed.ratings.Rating`` of ``name`` in ``game`` (a newcomer's when it has none):
        what the ladder pairs by (gamed.ladder)."""
        return self._run(_rating, self.dialect, game, name)

    def prune(self, before: float, batch: int = 200) -> defer.Deferred:
        """Drop the moves (and their states) of the matches that ended before unix time ``before``,
        keeping the matches, their seats, results, ratings and extra (whose ``moves_not_kept``
        counts the pruned moves and ``moves_pruned`` says when): ``keep_moves``. Works in
        transactions of ``batch`` matches (stores wait for one batch at most); fires with
        (matches pruned, moves pruned)."""
        totals = [0, 0]

        def more(done: tuple[int, int]) -> Any:
            totals[0] += done[0]
            totals[1] += done[1]
            if done[0] < batch or self._closing is not None:
                return tuple(totals)
            return self._run(_prune, self.dialect, before, batch, time.time()).addCallback(more)

        return self._run(_prune, self.dialect, before, batch, time.time()).addCallback(more)

    def compact_stored(self, batch: int = 50) -> defer.Deferred:
        """Drop from the matches stored with every state whole (before gamed 17, or with
        ``compact=False``) the states the rules rebuild, keeping patches where they differ
        (``gamed records compact``). A match is changed only when its states, rebuilt from what
        is left, are exactly the ones it had. Works in transactions of ``batch`` matches; fires
        with (matches compacted, moves whose state was dropped, state bytes before, after)."""
        totals = [0, 0, 0, 0]

        def more(done: tuple[int, int, int, int, int, int]) -> Any:
            last, seen, *counts = done
            for i, n in enumerate(counts):
                totals[i] += n
            if seen < batch or self._closing is not None:
                return tuple(totals)
            return self._run(_compact_stored, self.dialect, last, batch).addCallback(more)

        return self._run(_compact_stored, self.dialect, 0, batch).addCallback(more)

    def close(self) -> defer.Deferred:
        """Refuse new work, wait for what is in flight (stores above all), then close the database."""
        if self._closing is None:
            self._closing = _Outcome()
            waiting = list(self._in_flight)
            if self._ready is not None:
                waiting.append(self._ready.wait())  # a waiter of its own: consuming its error is fine
            d = defer.DeferredList(waiting, consumeErrors=True)
            d.addCallback(self._shut)
            d.addBoth(self._closing.fire)
        return self._closing.wait()

    def _shut(self, _: Any) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class _Outcome:
    """A result many callers may wait for, before or after it is known (each gets its own Deferred)."""

    def __init__(self) -> None:
        self._waiters: list[defer.Deferred] | None = []
        self._result: Any = None

    def fire(self, result: Any) -> None:
        waiters, self._waiters, self._result = self._waiters or [], None, result
        for d in waiters:
            d.callback(result)  # a Failure fires the waiter's errback chain

    def wait(self) -> defer.Deferred:
        if self._waiters is None:
            return defer.succeed(self._result) if not isinstance(self._result, Failure) else defer.fail(self._result)
        d: defer.Deferred = defer.Deferred()
        self._waiters.append(d)
        return d


def _sqlite_opened(conn: Any) -> None:
    """Per-connection set-up: WAL (readers never wait for the writer) and a busy timeout."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # with WAL still safe against a crash of the process
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=5000")


# --- interactions (run in the pool's thread, inside one transaction) ---------------------------


def _kept_states(record: MatchRecord, compact: bool = True) -> tuple[str | None, list[tuple[Any, str | None]]]:
    """(the replayer named in ``matches.replayer`` or None, each move's (state kept, patch)): with
    ``compact`` and a game that has a replayer, only what the rules cannot rebuild is kept (the
    moves must be in order, numbered 1, 2, ... as the hub numbers them)."""
    whole = [(m.state, None) for m in record.moves]
    game = registry.by_name().get(record.game)
    version = getattr(game, "replay_version", "") if game is not None else ""
    if not compact or not version or [m.n for m in record.moves] != list(range(1, len(record.moves) + 1)):
        return None, whole
    try:
        kept = replay.compact(game.next_state, record.initial_state, [(m.seat, m.move, m.state) for m in record.moves])
    except (TypeError, ValueError):  # a state that is not JSON: stored whole, _store says why it cannot be
        return None, whole
    if all(patch is None for _, patch in kept):
        return None, whole
    return version, kept


def _store(cursor: Any, dialect: _Dialect, record: MatchRecord, compact: bool = True) -> int:
    sql = dialect.sql
    replayer, kept = _kept_states(record, compact)  # before the lock: it is the rules' work
    # Stores run one at a time, so a rating read here is still current when it is written back.
    if dialect is SQLITE:
        cursor.execute("BEGIN IMMEDIATE")
    else:
        cursor.execute("LOCK TABLE ratings IN SHARE ROW EXCLUSIVE MODE")  # readers still read
    cursor.execute(
        sql(
            "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra, turns, detail,"
            " replayer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
        ),
        (
            record.game,
            record.table,
            float(record.started),
            float(record.ended),
            record.reason,
            int(bool(record.rated)),
            _dumps(record.options, "options"),
            None if record.initial_state is None else _dumps(record.initial_state, "initial_state"),
            _dumps(record.extra, "extra"),
            record.turns,
            record.detail,
            replayer,
        ),
    )
    match_id = int(cursor.fetchone()[0])
    seats = sorted(record.seats, key=lambda s: s.seat)
    # A guest is never rated; nor is a seat under a registered name that did not log into that
    # account: the name's rating is the account's.
    counts = [s.counts and _own_name(cursor, dialect, s) for s in seats]
    before, after = _update_ratings(cursor, dialect, record, seats, counts)
    points = record.points
    if points is not None and len(points) != len(seats):
        points = None
    cursor.executemany(
        sql(
            "INSERT INTO seats (match_id, seat, name, rated, kind, score, rating_before, rating_after, sigma_before,"
            " sigma_after, points, account_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ),
        [
            (
                match_id,
                s.seat,
                s.name,
                int(counts[s.seat]),
                s.kind,
                float(record.scores[s.seat]),
                *_mu_sigma(before[s.seat], after[s.seat]),
                None if points is None else points[s.seat],
                s.account_id,
            )
            for s in seats
        ],
    )
    if record.moves:
        cursor.executemany(
            sql("INSERT INTO moves (match_id, n, seat, move, t, state, clock, patch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
            [
                (
                    match_id,
                    m.n,
                    m.seat,
                    m.move,
                    float(m.t),
                    None if state is None else _dumps(state, f"move {m.n} state"),
                    None if m.clock is None else _dumps(m.clock, f"move {m.n} clock"),
                    patch,
                )
                for m, (state, patch) in zip(record.moves, kept)
            ],
        )
    return match_id


def _compact_stored(cursor: Any, dialect: _Dialect, after_id: int, batch: int) -> tuple[int, int, int, int, int, int]:
    """One batch of ``RecordStore.compact``: (last match id looked at, matches looked at,
    matches compacted, moves whose state was dropped, state bytes before, after)."""
    sql = dialect.sql
    games = {g.name: g for g in registry.GAMES if g.replay_version}
    if not games:
        return after_id, 0, 0, 0, 0, 0
    if dialect is SQLITE:
        cursor.execute("BEGIN IMMEDIATE")
    marks = ", ".join("?" * len(games))
    cursor.execute(
        sql(f"SELECT id, game, initial_state FROM matches WHERE id > ? AND replayer IS NULL AND game IN ({marks}) ORDER BY id LIMIT ?"),
        (after_id, *games, batch),
    )
    matches = cursor.fetchall()
    compacted = dropped = before = after = 0
    for match_id, game_name, initial_text in matches:
        game = games[game_name]
        cursor.execute(sql("SELECT n, seat, move, state FROM moves WHERE match_id = ? ORDER BY n"), (match_id,))
        rows = cursor.fetchall()
        if not rows or [r[0] for r in rows] != list(range(1, len(rows) + 1)) or all(r[3] is None for r in rows):
            continue
        initial = _loads(initial_text)
        states = [_loads(r[3]) for r in rows]
        kept = replay.compact(game.next_state, initial, [(r[1], r[2], state) for r, state in zip(rows, states)])
        if all(patch is None for _, patch in kept):
            continue
        rebuilt = replay.rebuild(game.next_state, initial, [(r[1], r[2], st, patch) for r, (st, patch) in zip(rows, kept)])
        if [replay.dumps(s) for s in rebuilt] != [replay.dumps(s) for s in states]:
            continue  # never: compact checks every patch; but a state is dropped only if it comes back
        for row, (_, patch) in zip(rows, kept):
            if patch is not None:
                cursor.execute(sql("UPDATE moves SET state = NULL, patch = ? WHERE match_id = ? AND n = ?"), (patch, match_id, row[0]))
                dropped += 1
                before += len(row[3])
                after += len(patch)
        cursor.execute(sql("UPDATE matches SET replayer = ? WHERE id = ?"), (game.replay_version, match_id))
        compacted += 1
    last = matches[-1][0] if matches else after_id
    return last, len(matches), compacted, dropped, before, after


def _prune(cursor: Any, dialect: _Dialect, before: float, batch: int, now: float) -> tuple[int, int]:
    """One batch of ``RecordStore.prune``: (matches pruned, moves pruned)."""
    sql = dialect.sql
    if dialect is SQLITE:
        cursor.execute("BEGIN IMMEDIATE")
    cursor.execute(
        sql(
            "SELECT id, extra FROM matches WHERE ended < ?"
            " AND EXISTS (SELECT 1 FROM moves WHERE moves.match_id = matches.id) ORDER BY id LIMIT ?"
        ),
        (float(before), batch),
    )
    pruned = 0
    matches = cursor.fetchall()
    for match_id, extra_text in matches:
        cursor.execute(sql("SELECT COUNT(*) FROM moves WHERE match_id = ?"), (match_id,))
        (count,) = cursor.fetchone()
        cursor.execute(sql("DELETE FROM moves WHERE match_id = ?"), (match_id,))
        extra = _loads(extra_text) or {}
        extra["moves_not_kept"] = int(extra.get("moves_not_kept", 0) or 0) + int(count)
        extra["moves_pruned"] = round(now, 3)
        cursor.execute(sql("UPDATE matches SET extra = ?, replayer = NULL WHERE id = ?"), (_dumps(extra, "extra"), match_id))
        pruned += int(count)
    return len(matches), pruned


def _update_ratings(
    cursor: Any, dialect: _Dialect, record: MatchRecord, seats: Sequence[Seat], counts: Sequence[bool]
) -> tuple[list[skill.Rating | None], list[skill.Rating | None]]:
    """Apply the rating update of a stored match to the seats that ``counts``; returns each seat's
    rating before and after (None: unrated)."""
    n = len(seats)
    none: list[skill.Rating | None] = [None] * n
    if not record.rated:
        return none, none
    sql = dialect.sql
    names = [s.name for s in seats]
    # A name in two seats would play itself: such seats are left unrated.
    rated = [c and names.count(s.name) == 1 for s, c in zip(seats, counts)]
    if sum(rated) < 2:
        return none, none
    current: dict[str, tuple] = {}
    for s, r in zip(seats, rated):
        if r:
            cursor.execute(
                sql("SELECT rating, sigma, games, wins, draws, losses FROM ratings WHERE game = ? AND name = ?"), (record.game, s.name)
            )
            current[s.name] = cursor.fetchone() or (skill.INITIAL.mu, skill.INITIAL.sigma, 0, 0, 0, 0)
    before: list[skill.Rating | None] = [
        skill.Rating(float(current[s.name][0]), float(current[s.name][1])) if r else None for s, r in zip(seats, rated)
    ]
    after = skill.rate(before, [float(record.scores[s.seat]) for s in seats])
    rated_scores = [float(record.scores[s.seat]) for s, r in zip(seats, rated) if r]
    index = 0
    for s, r, new in zip(seats, rated, after):
        if not r:
            continue
        assert new is not None
        result = skill.outcome(rated_scores, index)
        index += 1
        _, _, games, wins, draws, losses = current[s.name]
        row = (
            new.mu,
            new.sigma,
            games + 1,
            wins + (result == skill.WIN),
            draws + (result == skill.DRAW),
            losses + (result == skill.LOSS),
            s.account_id,
            record.game,
            s.name,
        )
        if games:
            cursor.execute(
                sql(
                    "UPDATE ratings SET rating = ?, sigma = ?, games = ?, wins = ?, draws = ?, losses = ?,"
                    " account_id = COALESCE(?, account_id) WHERE game = ? AND name = ?"
                ),
                row,
            )
        else:
            cursor.execute(
                sql(
                    "INSERT INTO ratings (rating, sigma, games, wins, draws, losses, account_id, game, name)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                row,
            )
    return before, after


def _mu_sigma(before: skill.Rating | None, after: skill.Rating | None) -> tuple:
    """A seat's rating_before, rating_after, sigma_before, sigma_after columns."""
    return (
        None if before is None else before.mu,
        None if after is None else after.mu,
        None if before is None else before.sigma,
        None if after is None else after.sigma,
    )


def _own_name(cursor: Any, dialect: _Dialect, seat: Seat) -> bool:
    """True unless ``seat`` sits under the name of an account it is not (a name's rating belongs
    to its account once there is one)."""
    cursor.execute(dialect.sql("SELECT id FROM accounts WHERE lower(name) = lower(?)"), (seat.name,))
    row = cursor.fetchone()
    return row is None or (seat.account_id is not None and int(row[0]) == seat.account_id)


# The columns of ``matches`` a MatchSummary is made of, in the order ``_summaries`` reads them.
_SUMMARY = "id, game, started, ended, reason, rated, turns, detail"


def _summaries(cursor: Any, dialect: _Dialect, rows: list[tuple], detail: bool = False) -> list[dict]:
    """MatchSummary dicts for ``matches`` rows (the ``_SUMMARY`` columns first)."""
    if not rows:
        return []
    ids = [row[0] for row in rows]
    marks = ", ".join("?" * len(ids))
    cursor.execute(
        dialect.sql(
            "SELECT match_id, seat, name, score, rated, kind, rating_before, rating_after, points, account_id,"
            f" sigma_before, sigma_after FROM seats WHERE match_id IN ({marks}) ORDER BY match_id, seat"
        ),
        ids,
    )
    seats: dict[int, list[tuple]] = {i: [] for i in ids}
    for seat_row in cursor.fetchall():
        seats[seat_row[0]].append(seat_row)
    out = []
    for match_id, game, started, ended, reason, rated, turns, about in (row[:8] for row in rows):
        own = seats[match_id]
        names = [s[2] for s in own]
        scores = [s[3] for s in own]
        points = [s[8] for s in own] if own and all(s[8] is not None for s in own) else None
        summary: dict[str, Any] = {
            "id": match_id,
            "game": game,
            "started": started,
            "ended": ended,
            "seats": [{"seat": s[1], "name": s[2], "kind": s[5], "account": s[9] is not None} for s in own],
            "scores": scores,
            "reason": reason,
            "detail": about,
            "points": points,
            "turns": turns,
            "rated": bool(rated),
            "outcome": outcome.outcome_text(game, names, scores, reason, points=points, detail=about, rated=bool(rated)),
        }
        if detail:
            for entry, s in zip(summary["seats"], own):
                entry.update(
                    rated=bool(s[4]), rating_before=s[6], rating_after=s[7], sigma_before=s[10], sigma_after=s[11], account_id=s[9]
                )
        out.append(summary)
    return out


def _match(cursor: Any, dialect: _Dialect, match_id: int) -> dict | None:
    cursor.execute(
        dialect.sql(f"SELECT {_SUMMARY}, options, initial_state, extra, table_id, replayer FROM matches WHERE id = ?"),
        (match_id,),
    )
    row = cursor.fetchone()
    if row is None:
        return None
    (summary,) = _summaries(cursor, dialect, [row], detail=True)
    cursor.execute(dialect.sql("SELECT n, seat, move, t, state, clock, patch FROM moves WHERE match_id = ? ORDER BY n"), (match_id,))
    rows = cursor.fetchall()
    initial_state = _loads(row[9])
    states = [_loads(r[4]) for r in rows]
    if any(r[6] is not None for r in rows):
        states = _rebuilt(summary["game"], row[12], match_id, initial_state, rows, states)
    summary.update(
        options=_loads(row[8]),
        initial_state=initial_state,
        moves=[
            {"n": n, "seat": seat, "move": move, "t": t, "state": state, "clock": _loads(clock)}
            for (n, seat, move, t, _, clock, _), state in zip(rows, states)
        ],
        extra=_loads(row[10]),
        table=row[11],
    )
    return summary


def _rebuilt(game_name: str, replayer: str | None, match_id: int, initial_state: Any, rows: list, states: list) -> list:
    """The states of a match's moves with the ones the rules rebuild filled in (gamed.replay)."""
    game = registry.by_name().get(game_name)
    if game is None or not replayer or game.replay_version != replayer:
        have = getattr(game, "replay_version", "") or "none"
        raise RecordsError(f"match {match_id}: its states need the replayer {replayer}, this gamed has {have}")
    try:
        return replay.rebuild(
            game.next_state, initial_state, [(r[1], r[2], state, r[6]) for r, state in zip(rows, states)]
        )
    except replay.ReplayError as e:
        raise RecordsError(f"match {match_id}: {e}") from None


# A match that was aborted before anybody moved (a player who left at once, a shutdown): the
# front page's list leaves these out.
_PLAYED = "NOT (rated = 0 AND turns = 0)"


def _recent(cursor: Any, dialect: _Dialect, limit: int, game: str | None, played: bool = False) -> list[dict]:
    conditions, args = [], []
    if game is not None:
        conditions.append("game = ?")
        args.append(game)
    if played:
        conditions.append(_PLAYED)
    where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
    cursor.execute(dialect.sql(f"SELECT {_SUMMARY} FROM matches {where}ORDER BY id DESC LIMIT ?"), [*args, limit])
    return _summaries(cursor, dialect, cursor.fetchall())


def _player(cursor: Any, dialect: _Dialect, name: str, limit: int, played: bool) -> dict | None:
    cursor.execute(
        dialect.sql(
            "SELECT game, rating, sigma, games, wins, draws, losses,"
            " (SELECT COUNT(*) FROM ratings better WHERE better.game = r.game"
            f" AND {_conservative('better')} > {_conservative('r')}) + 1"
            " FROM ratings r WHERE name = ? ORDER BY game"
        ),
        (name,),
    )
    keys = ("game", "rating", "sigma", "games", "wins", "draws", "losses", "rank")
    ratings = [_rating_row(dict(zip(keys, row))) for row in cursor.fetchall()]
    where = f" AND {_PLAYED}" if played else ""
    cursor.execute(
        dialect.sql(
            f"SELECT {_SUMMARY} FROM matches WHERE id IN (SELECT match_id FROM seats WHERE name = ?){where}"
            " ORDER BY id DESC LIMIT ?"
        ),
        (name, limit),
    )
    matches = _summaries(cursor, dialect, cursor.fetchall())
    if not ratings and not matches:
        cursor.execute(dialect.sql("SELECT 1 FROM seats WHERE name = ? LIMIT 1"), (name,))
        if cursor.fetchone() is None:
            return None
    return {"name": name, "ratings": ratings, "matches": matches}


def _leaderboard(cursor: Any, dialect: _Dialect, game: str, limit: int) -> list[dict]:
    cursor.execute(
        dialect.sql(
            "SELECT name, rating, sigma, games, wins, draws, losses FROM ratings WHERE game = ?"
            f" ORDER BY {_conservative()} DESC, games DESC, name LIMIT ?"
        ),
        (game, limit),
    )
    keys = ("name", "rating", "sigma", "games", "wins", "draws", "losses")
    return [_rating_row(dict(zip(keys, row))) for row in cursor.fetchall()]


def _rating(cursor: Any, dialect: _Dialect, game: str, name: str) -> skill.Rating:
    cursor.execute(dialect.sql("SELECT rating, sigma FROM ratings WHERE game = ? AND name = ?"), (game, name))
    row = cursor.fetchone()
    return skill.INITIAL if row is None else skill.Rating(float(row[0]), float(row[1]))


def _rating_row(row: dict) -> dict:
    """A ratings row as the API shows it: ``rating`` (mu) and ``sigma``, the 95 % interval's ``low``
    and ``high``, the ``conservative`` rating the board is ordered by, ``provisional``."""
    row.update(skill.describe(row["rating"], row["sigma"], row["games"]))
    return row


def _fill_details_and_points(cursor: Any, dialect: _Dialect) -> None:
    """Migration 3's data: each stored match's detail and its seats' points, from its extra (read
    only for the matches that can have either: a Stratego match's extra holds its whole log)."""
    cursor.execute("SELECT id, game FROM matches WHERE game = 'kalaha' OR extra LIKE '%\"detail\"%' ORDER BY id")
    for match_id, game in cursor.fetchall():
        cursor.execute(dialect.sql("SELECT extra FROM matches WHERE id = ?"), (match_id,))
        try:
            extra = json.loads(cursor.fetchone()[0] or "{}")
        except ValueError:
            continue
        if not isinstance(extra, dict):
            continue
        detail = extra.get("detail")
        if isinstance(detail, str) and detail:
            cursor.execute(dialect.sql("UPDATE matches SET detail = ? WHERE id = ?"), (detail, match_id))
        points = outcome.points(game, extra.get("final_state"))
        for seat, value in enumerate(points or ()):
            cursor.execute(dialect.sql("UPDATE seats SET points = ? WHERE match_id = ? AND seat = ?"), (value, match_id, seat))


PRUNE_INTERVAL = 86400.0  # seconds between two prunings of old matches' moves ([records] keep_moves)


class RecordsService(service.Service):
    """Opens the records store when the daemon starts and closes it (after pending stores) when it stops.

    The daemon opens and migrates the database in ``makeService`` (``RecordStore.prepare``), so a bad
    one stops start-up there; one that fails here anyway (it vanished in between) is logged and stops
    the reactor: the daemon does not run on without the records it was told to keep.

    With the daemon's live ``hub``, stopping first waits (at most ``stop_timeout`` seconds) until every
    game service has ended its games and the hub has ended the tables left (``LiveHub.stopped``), so
    the games a shutdown interrupts are stored before the database closes. It must be stopped after
    the game services: ``gamed.tap`` adds it to the root first (a MultiService stops its children in
    reverse order)."""

    name = "records"

    def __init__(self, store: RecordStore, hub: Any = None, stop_timeout: float = 30.0, keep_moves: float = 0.0):
        self.store = store
        self.hub = hub
        self.stop_timeout = stop_timeout
        self.keep_moves = keep_moves  # days ([records] keep_moves); 0 = keep every match's moves
        self.started: defer.Deferred | None = None  # fires when the schema is ready
        self.pruning: defer.Deferred | None = None  # the last pruning's (matches, moves), once started
        self._prune_call: Any = None

    def startService(self) -> None:
        super().startService()
        self.started = self.store.start()
        self.started.addErrback(self._failed)
        if self.keep_moves:
            from twisted.internet import task

            self._prune_call = task.LoopingCall(self.prune)
            self._prune_call.clock = self.store.reactor
            self._prune_call.start(PRUNE_INTERVAL, now=True)

    def prune(self) -> defer.Deferred:
        """Drop the moves of the matches that ended more than ``keep_moves`` days ago (in the
        records' thread pool), and log how many; never fails (a failure is logged)."""
        days = self.keep_moves
        d = self.store.prune(self.store.reactor.seconds() - days * 86400)

        def pruned(counts: tuple[int, int]) -> tuple[int, int]:
            if counts[0]:
                log.info(
                    "records: pruned the {moves} moves of {matches} matches that ended more than {days:g} days ago",
                    moves=counts[1], matches=counts[0], days=days,
                )
            return counts

        d.addCallback(pruned)
        d.addErrback(lambda f: log.failure("records: pruning old matches' moves", f))
        # The LoopingCall takes d's result: a waiter of its own gets the counts (None on failure).
        self.pruning = defer.Deferred()
        d.addBoth(lambda result, waiter=self.pruning: (waiter.callback(result), result)[1])
        return d

    def _failed(self, failure: Any) -> None:
        log.failure("cannot open the records database {url}", failure, url=self.store.url)
        reactor = self.store.reactor
        if getattr(reactor, "running", False):
            reactor.stop()

    def stopService(self) -> defer.Deferred:
        super().stopService()
        if self._prune_call is not None and self._prune_call.running:
            self._prune_call.stop()
        games = self.hub.stopped(self.stop_timeout) if self.hub is not None else defer.succeed(None)
        games.addErrback(lambda f: log.failure("ending the interrupted games", f))
        games.addCallback(lambda _: self.store.close())
        return games
