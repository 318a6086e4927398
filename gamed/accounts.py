"""Registered players and bots: their secret tokens, kept as salted hashes in the records database.

An organiser registers an account with ``gamed player add NAME`` and hands the printed token to
its owner; a player logs in with name and token. The pure half (what a token looks like, hashing
and checking it) has no Twisted in it; ``AccountStore`` keeps the accounts in the tables of a
``gamed.records.RecordStore`` (SQLite or PostgreSQL) and does every database lookup in the records'
thread pool and every hash in the reactor's thread pool, never on the reactor itself.

A token is never logged, never stored (only ``hash_token`` of it) and never compared with ``==``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from typing import Any

import attrs
from twisted.internet import defer, threads

from gamed.identity import DEFAULT_NAME, GUEST_PREFIX  # names no account may have (in any case)
from gamed.names import NAME_RULE, valid_name

# --- tokens (pure) -----------------------------------------------------------------------------

TOKEN_BYTES = 24  # secrets.token_urlsafe(24): 32 characters
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{32}\Z")
TOKEN_RULE = "32 letters, digits, _ or -"

# scrypt's cost: 16 MiB of memory and tens of milliseconds of one CPU per hash (docs/performance.md,
# "Accounts: token checks").
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
KEY_BYTES = 32
_SCHEME = "scrypt"
# The most a stored hash may ask for (a later gamed may raise the cost; a damaged row must not
# make one check take a gigabyte): scrypt needs 128 * N * r bytes.
_MAX_MEMORY = 64 * 2**20
_MAX_P = 16


def valid_token(text: object) -> bool:
    """True for a string that looks like a token ``new_token`` makes (``TOKEN_RULE``)."""
    return isinstance(text, str) and bool(TOKEN_RE.match(text))


def new_token() -> str:
    """A fresh secret token: 24 random bytes from ``secrets``, URL-safe base64 (32 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_token(token: str, salt: bytes | None = None) -> str:
    """The stored form of ``token``: ``scrypt$N$r$p$<salt base64>$<key base64>`` with a fresh
    16-byte salt unless one is given. Slow on purpose (see ``SCRYPT_N``): run it in a thread."""
    if salt is None:
        salt = secrets.token_bytes(SALT_BYTES)
    key = _scrypt(token, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, KEY_BYTES)
    return f"{_SCHEME}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(key)}"


def _scrypt(token: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(token.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=length, maxmem=128 * r * (n + p + 2) + 2**20)


def token_matches(token: str, stored: str) -> bool:
    """True when ``token`` is the one ``stored`` (a ``hash_token`` string) was made from: the key
    is recomputed with the stored parameters and compared in constant time (``hmac.compare_digest``).
    A malformed or unusable stored string is False, never an exception."""
    try:
        scheme, n_text, r_text, p_text, salt_text, key_text = stored.split("$")
        if scheme != _SCHEME or not all(t.isascii() and t.isdigit() for t in (n_text, r_text, p_text)):
            return False
        n, r, p = int(n_text), int(r_text), int(p_text)
        if not (n >= 2 and n & (n - 1) == 0 and r >= 1 and 128 * n * r <= _MAX_MEMORY and 1 <= p <= _MAX_P):
            return False
        salt = base64.b64decode(salt_text, validate=True)
        key = base64.b64decode(key_text, validate=True)
        if not salt or not 16 <= len(key) <= 64:
            return False
        computed = _scrypt(token, salt, n, r, p, len(key))
    except (AttributeError, TypeError, ValueError, binascii.Error, MemoryError, UnicodeError):
        return False
    return hmac.compare_digest(computed, key)


# What an unknown name is checked against, so that it costs one hash like a known one (the
# answer must not tell which names exist); no token matches it.
_DUMMY = f"{_SCHEME}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(bytes(SALT_BYTES))}${_b64(bytes(KEY_BYTES))}"


# --- accounts (pure) ---------------------------------------------------------------------------

KINDS = ("person", "bot")


@attrs.frozen
class Account:
    """A registered player (``person``) or program (``bot``). Times are unix seconds; ``revoked``
    is set while its token is dead, ``rotated`` when its token was last replaced."""

    id: int
    name: str
    kind: str
    created: float
    revoked: float | None
    rotated: float | None

    @property
    def active(self) -> bool:
        """True while it can log in (not revoked)."""
        return self.revoked is None

    @property
    def seat_kind(self) -> str:
        """The ``gamed.records.Seat`` kind of its seats: ``bot`` for a bot, else ``player``."""
        return "bot" if self.kind == "bot" else "player"


UNKNOWN_OR_WRONG = "unknown account or wrong token"
REVOKED = "this account's token has been revoked"


class LoginRefused(Exception):
    """A login that failed; ``reason`` is ``UNKNOWN_OR_WRONG`` (the same for both, so that an
    answer never tells which names are registered) or ``REVOKED`` (the right token, revoked)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class AccountError(Exception):
    """The organiser asked for something that cannot be done (name taken, unknown, not allowed);
    the message says why in one line."""


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be an account's name, or None when it can."""
    if not isinstance(name, str) or not valid_name(name):
        return f"an account name is {NAME_RULE}, not {name!r}"
    if name.lower().startswith(GUEST_PREFIX):
        return f"an account name must not start with {GUEST_PREFIX!r} (the guests' names), not {name!r}"
    if DEFAULT_NAME.match(name):
        return f"an account name must not be a default name like player3, team1 or seat0 (the games give those to guests), not {name!r}"
    return None


def check_name(name: object) -> str:
    """``name`` if it may be an account's name, else AccountError with the reason."""
    problem = name_problem(name)
    if problem is not None:
        raise AccountError(problem)
    assert isinstance(name, str)
    return name


# --- the store ---------------------------------------------------------------------------------

_COLUMNS = "id, name, kind, created, revoked, rotated"


def _account(row: Any) -> Account:
    return Account(int(row[0]), row[1], row[2], float(row[3]), None if row[4] is None else float(row[4]), None if row[5] is None else float(row[5]))


def _is_integrity_error(error: BaseException) -> bool:
    """True for the driver's IntegrityError (sqlite3's and psycopg's: a UNIQUE name taken meanwhile)."""
    return any(cls.__name__ == "IntegrityError" for cls in type(error).__mro__)


def _begin(cursor: Any, dialect: Any) -> None:
    """Start a writing transaction: on SQLite take the write lock first, so a read and the write
    after it see the same database (the daemon and ``gamed player`` are different processes)."""
    if dialect.name == "sqlite":
        cursor.execute("BEGIN IMMEDIATE")


def _find(cursor: Any, dialect: Any, name: str, with_hash: bool = False) -> tuple | None:
    columns = _COLUMNS + (", token_hash" if with_hash else "")
    cursor.execute(dialect.sql(f"SELECT {columns} FROM accounts WHERE lower(name) = lower(?)"), (name,))
    return cursor.fetchone()


def _add(cursor: Any, dialect: Any, name: str, kind: str, token_hash: str, now: float) -> Account:
    _begin(cursor, dialect)
    found = _find(cursor, dialect, name)
    if found is not None:
        raise AccountError(f"there is already an account {found[1]!r}" + ("" if found[1] == name else " (names differ only in case)"))
    try:
        cursor.execute(
            dialect.sql("INSERT INTO accounts (name, kind, token_hash, created) VALUES (?, ?, ?, ?) RETURNING id"),
            (name, kind, token_hash, now),
        )
    except Exception as e:
        if _is_integrity_error(e):
            raise AccountError(f"there is already an account {name!r}") from None
        raise
    account_id = int(cursor.fetchone()[0])
    # The ratings a typed name earned before accounts existed become the account's.
    cursor.execute(dialect.sql("UPDATE ratings SET account_id = ? WHERE name = ? AND account_id IS NULL"), (account_id, name))
    return Account(account_id, name, kind, now, None, None)


def _list(cursor: Any, dialect: Any) -> list[Account]:
    cursor.execute(f"SELECT {_COLUMNS} FROM accounts ORDER BY lower(name), name")
    return [_account(row) for row in cursor.fetchall()]


def _get(cursor: Any, dialect: Any, name: str) -> Account | None:
    row = _find(cursor, dialect, name)
    return None if row is None else _account(row)


def _get_with_hash(cursor: Any, dialect: Any, name: str) -> tuple[Account, str] | None:
    row = _find(cursor, dialect, name, with_hash=True)
    return None if row is None else (_account(row), row[6])


def _revoke(cursor: Any, dialect: Any, name: str, now: float) -> Account:
    _begin(cursor, dialect)
    row = _find(cursor, dialect, name)
    if row is None:
        raise AccountError(f"no account {name!r}")
    account = _account(row)
    if account.revoked is not None:
        return account  # already revoked: it stays revoked since then
    cursor.execute(dialect.sql("UPDATE accounts SET revoked = ? WHERE id = ?"), (now, account.id))
    return attrs.evolve(account, revoked=now)


def _rotate(cursor: Any, dialect: Any, name: str, token_hash: str, now: float) -> Account:
    _begin(cursor, dialect)
    row = _find(cursor, dialect, name)
    if row is None:
        raise AccountError(f"no account {name!r}")
    account = _account(row)
    cursor.execute(dialect.sql("UPDATE accounts SET token_hash = ?, rotated = ?, revoked = NULL WHERE id = ?"), (token_hash, now, account.id))
    return attrs.evolve(account, rotated=now, revoked=None)


def _names(cursor: Any, dialect: Any) -> set[str]:
    cursor.execute("SELECT name FROM accounts")
    return {row[0] for row in cursor.fetchall()}


def _check_login(found: tuple[Account, str] | None, token: str) -> Account:
    """The account a right token logs into, else LoginRefused (runs in a thread: one hash)."""
    if found is None:
        token_matches(token, _DUMMY)  # as long as a known name takes
        raise LoginRefused(UNKNOWN_OR_WRONG)
    account, stored = found
    if not token_matches(token, stored):
        raise LoginRefused(UNKNOWN_OR_WRONG)
    if account.revoked is not None:
        raise LoginRefused(REVOKED)
    return account


class AccountStore:
    """The accounts of a records database (``gamed.records.RecordStore``, started by its owner).

    Names are compared without regard to case: ``Alice`` is the account ``alice``, and no second
    account may differ from one only in case. Every method returns a Deferred.

    At most ``hashes_at_once`` hashes run at the same time (the others wait their turn): a burst of
    logins takes one CPU, not all of them, so the reactor and the games keep theirs
    (docs/performance.md, "Accounts: token checks")."""

    def __init__(self, records: Any, reactor: Any = None, hashes_at_once: int = 1):
        """``records``: the started (or starting) RecordStore; ``reactor`` (default: the records')
        gives the time and the thread pool the hashes run in."""
        self.records = records
        self.reactor = reactor if reactor is not None else records.reactor
        self._hashing = defer.DeferredSemaphore(hashes_at_once)

    def _hash_in_thread(self, function: Any, *args: Any) -> defer.Deferred:
        return self._hashing.run(threads.deferToThreadPool, self.reactor, self.reactor.getThreadPool(), function, *args)

    def add(self, name: str, kind: str = "person") -> defer.Deferred:
        """Register ``name`` (``kind`` person or bot) -> (Account, token). The token is shown
        only here; only its hash is kept. In the same transaction the ratings rows of the typed
        name ``name`` that belong to no account yet are claimed by the new account."""
        try:
            check_name(name)
            if kind not in KINDS:
                raise AccountError(f"an account's kind is one of {', '.join(KINDS)}, not {kind!r}")
        except AccountError as e:
            return defer.fail(e)
        token = new_token()
        d = self._hash_in_thread(hash_token, token)
        d.addCallback(lambda stored: self.records.run_interaction(_add, self.records.dialect, name, kind, stored, self.reactor.seconds()))
        d.addCallback(lambda account: (account, token))
        return d

    def list(self) -> defer.Deferred:
        """[Account...] by name, revoked ones too."""
        return self.records.run_interaction(_list, self.records.dialect)

    def get(self, name: str) -> defer.Deferred:
        """The Account called ``name`` (any case), or None."""
        return self.records.run_interaction(_get, self.records.dialect, name)

    def revoke(self, name: str) -> defer.Deferred:
        """Kill ``name``'s token at once -> the Account (revoked since now, or since it was
        revoked before). Its name stays taken; ``rotate`` gives it a new token and un-revokes it."""
        return self.records.run_interaction(_revoke, self.records.dialect, name, self.reactor.seconds())

    def rotate(self, name: str) -> defer.Deferred:
        """Give ``name`` a new token -> the token; the old one is dead at once. A revoked
        account is active again with the new token."""
        token = new_token()
        d = self._hash_in_thread(hash_token, token)
        d.addCallback(lambda stored: self.records.run_interaction(_rotate, self.records.dialect, name, stored, self.reactor.seconds()))
        d.addCallback(lambda _: token)
        return d

    def verify(self, name: str, token: str) -> defer.Deferred:
        """The Account ``name`` logs into with ``token``, or a LoginRefused failure. A string that
        is no token is refused without hashing; an unknown name costs one hash as a known one does
        and gets the same answer as a wrong token."""
        if not isinstance(name, str) or not valid_token(token):
            return defer.fail(LoginRefused(UNKNOWN_OR_WRONG))
        d = self.records.run_interaction(_get_with_hash, self.records.dialect, name)
        d.addCallback(lambda found: self._hash_in_thread(_check_login, found, token))
        return d

    def registered(self, name: str) -> defer.Deferred:
        """True when an account has this name (any case), revoked or not: nobody without its
        token may play under it."""
        d = self.get(name)
        d.addCallback(lambda account: account is not None)
        return d

    def account_names(self) -> defer.Deferred:
        """The set of every account's name."""
        return self.records.run_interaction(_names, self.records.dialect)
