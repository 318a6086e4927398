"""Accounts (gamed.accounts): tokens and their hashes, and the AccountStore on real SQLite files
and, when GAMED_TEST_POSTGRES_URL is set, on PostgreSQL (as tests/test_records.py)."""

import hmac
import sqlite3
import threading

import attrs
import pytest
import pytest_twisted
from twisted.internet import defer

from gamed import accounts
from gamed.accounts import (
    KINDS,
    REVOKED,
    UNKNOWN_OR_WRONG,
    Account,
    AccountError,
    AccountStore,
    LoginRefused,
    hash_token,
    new_token,
    token_matches,
    valid_token,
)
from gamed.ratings import INITIAL, rate
from gamed.records import SCHEMA_VERSION, MatchRecord, RecordStore, Seat, migrate, parse_url, record_from_json
from tests.test_records import PG_URL, TABLES, _connect, _reactor, _versions, kalaha


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'records.sqlite'}"
    if not PG_URL:
        pytest.skip("PostgreSQL accounts not tested: set GAMED_TEST_POSTGRES_URL=postgresql://... to run them")
    pytest.importorskip("psycopg", reason="GAMED_TEST_POSTGRES_URL is set but psycopg is not installed (pip install '.[postgres]')")
    with _connect(PG_URL) as conn:
        conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES) + " CASCADE")
    return PG_URL


async def opened(url):
    records = RecordStore(url, _reactor())
    await records.start()
    return records, AccountStore(records)


async def refused(d):
    """The reason of the LoginRefused ``d`` fails with."""
    with pytest.raises(LoginRefused) as info:
        await d
    return info.value.reason


# --- tokens and hashes -----------------------------------------------------------------------


def test_new_tokens_are_valid_and_different():
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(valid_token(t) and len(t) == 32 for t in tokens)
    for bad in ("", "x" * 31, "x" * 33, "a" * 31 + "!", "a" * 31 + "\n", "é" * 32, None, 42, b"a" * 32):
        assert not valid_token(bad)


def test_hash_round_trip_and_format():
    token = new_token()
    stored = hash_token(token)
    scheme, n, r, p, salt, key = stored.split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "1")
    assert token not in stored
    assert token_matches(token, stored)
    assert not token_matches(new_token(), stored)
    assert not token_matches(token[:-1] + ("A" if token[-1] != "A" else "B"), stored)
    # A fresh salt each time: the same token never hashes to the same string twice.
    again = hash_token(token)
    assert again != stored and token_matches(token, again)
    # A given salt gives the same string (what token_matches recomputes).
    assert hash_token(token, salt=b"s" * 16) == hash_token(token, salt=b"s" * 16)


def test_a_malformed_stored_hash_never_matches_and_never_raises():
    token = new_token()
    good = hash_token(token, salt=b"0123456789abcdef")
    scheme, n, r, p, salt, key = good.split("$")
    bad = [
        "",
        "plain",
        token,
        good + "$",
        "$".join(["bcrypt", n, r, p, salt, key]),
        "$".join([scheme, "16383", r, p, salt, key]),  # not a power of two
        "$".join([scheme, str(2**40), r, p, salt, key]),  # far too costly
        "$".join([scheme, n, "0", p, salt, key]),
        "$".join([scheme, n, r, "-1", salt, key]),
        "$".join([scheme, n, r, p, "not base64!", key]),
        "$".join([scheme, n, r, p, "", key]),
        "$".join([scheme, n, r, p, salt, key[:8]]),
        "$".join([scheme, "１６３８４", r, p, salt, key]),  # other scripts' digits
        None,
        12,
    ]
    for stored in bad:
        assert token_matches(token, stored) is False, stored
    assert token_matches(token, good)


def test_the_key_is_compared_in_constant_time(monkeypatch):
    calls = []
    real = hmac.compare_digest

    def compare(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(accounts.hmac, "compare_digest", compare)
    token = new_token()
    stored = hash_token(token)
    assert token_matches(token, stored) and not token_matches(new_token(), stored)
    assert len(calls) == 2 and all(isinstance(a, bytes) and len(a) == 32 for a, _ in calls)


def test_account_names():
    for good in ("alice", "Bob_2", "x", "a" * 32, "fast.ai-3", "gues", "my_guest", "player", "team_a", "seat1x"):
        assert accounts.check_name(good) == good
    for bad in ("", "a" * 33, "gamed:2", "with space", "guest", "guest7", "Guest_bob", "GUESTS", "älice", None, "player3", "Team1", "seat0"):
        with pytest.raises(AccountError):
            accounts.check_name(bad)
    assert KINDS == ("person", "bot")
    assert Account(1, "b", "bot", 1.0, None, None).seat_kind == "bot"
    assert Account(1, "p", "person", 1.0, 2.0, None).seat_kind == "player"


# --- the store -------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_add_verify_list(url):
    records, store = await opened(url)
    try:
        alice, token = await store.add("alice")
        assert valid_token(token)
        assert (alice.name, alice.kind, alice.revoked, alice.rotated) == ("alice", "person", None, None)
        bot, bot_token = await store.add("fast_ai", kind="bot")
        assert bot.kind == "bot" and bot_token != token
        assert await store.verify("alice", token) == alice
        assert await store.verify("ALICE", token) == alice  # names are one in any case
        assert await store.verify("fast_ai", bot_token) == bot
        assert [a.name for a in await store.list()] == ["alice", "fast_ai"]
        assert await store.get("alice") == alice and await store.get("nobody") is None
        assert await store.registered("alice") and await store.registered("Alice")
        assert not await store.registered("bob")
        assert await store.account_names() == {"alice", "fast_ai"}
        # Only the hash is kept.
        with _connect(url) as conn:
            cur = conn.cursor()
            cur.execute("SELECT name, token_hash FROM accounts ORDER BY name")
            rows = cur.fetchall()
        assert [r[0] for r in rows] == ["alice", "fast_ai"]
        assert all(token not in r[1] and bot_token not in r[1] and token_matches(t, r[1]) for r, t in zip(rows, (token, bot_token)))
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_wrong_unknown_and_malformed_logins_are_refused_alike(url):
    records, store = await opened(url)
    try:
        _, token = await store.add("alice")
        _, other = await store.add("bob")
        assert await refused(store.verify("alice", other)) == UNKNOWN_OR_WRONG
        assert await refused(store.verify("carol", token)) == UNKNOWN_OR_WRONG
        for bad in ("", "short", token + "x", token[:-1] + "!", None):
            assert await refused(store.verify("alice", bad)) == UNKNOWN_OR_WRONG
        assert await refused(store.verify(None, token)) == UNKNOWN_OR_WRONG
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_bad_adds(url):
    records, store = await opened(url)
    try:
        await store.add("alice")
        for name in ("alice", "Alice"):
            with pytest.raises(AccountError, match="already an account 'alice'"):
                await store.add(name)
        with pytest.raises(AccountError, match="guests"):
            await store.add("guest3")
        with pytest.raises(AccountError, match="letters"):
            await store.add("gamed:2")
        with pytest.raises(AccountError, match="kind"):
            await store.add("carol", kind="robot")
        assert [a.name for a in await store.list()] == ["alice"]
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_revoked_and_rotated_tokens_stop_working_at_once(url):
    records, store = await opened(url)
    try:
        _, token = await store.add("alice")
        assert (await store.verify("alice", token)).name == "alice"
        revoked = await store.revoke("alice")
        assert revoked.revoked is not None and not revoked.active
        assert await refused(store.verify("alice", token)) == REVOKED
        # A wrong token for a revoked account says no more than for any other.
        assert await refused(store.verify("alice", new_token())) == UNKNOWN_OR_WRONG
        assert (await store.revoke("alice")).revoked == revoked.revoked  # revoked once, since then
        assert await store.registered("alice")  # the name stays taken
        # rotate: a new token, the old one dead, and the account active again
        fresh = await store.rotate("alice")
        assert fresh != token and valid_token(fresh)
        assert await refused(store.verify("alice", token)) == UNKNOWN_OR_WRONG
        account = await store.verify("alice", fresh)
        assert account.active and account.rotated is not None
        newer = await store.rotate("alice")
        assert await refused(store.verify("alice", fresh)) == UNKNOWN_OR_WRONG
        assert (await store.verify("alice", newer)).name == "alice"
        for unknown in (store.revoke("nobody"), store.rotate("nobody")):
            with pytest.raises(AccountError, match="no account 'nobody'"):
                await unknown
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_hashes_run_off_the_reactor_thread(url, monkeypatch):
    seen = []
    real = accounts.token_matches

    def spy(token, stored):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(token, stored)

    monkeypatch.setattr(accounts, "token_matches", spy)
    records, store = await opened(url)
    try:
        _, token = await store.add("alice")
        await store.verify("alice", token)
        await refused(store.verify("nobody", token))  # an unknown name costs a hash too
        await refused(store.verify("alice", "not a token"))  # no hash at all
        assert seen == [False, False]
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_add_claims_the_ratings_of_the_typed_name(url):
    records, store = await opened(url)
    try:
        await records.store(kalaha(a="alice", b="bob"))  # alice and bob typed their names
        alice, _ = await store.add("alice")
        with _connect(url) as conn:
            cur = conn.cursor()
            cur.execute("SELECT name, account_id FROM ratings WHERE game = 'kalaha' ORDER BY name")
            assert cur.fetchall() == [("alice", alice.id), ("bob", None)]
        # The account's next match goes on the same row.
        seats = (Seat(0, "alice", True, "player", alice.id), Seat(1, "bob", True))
        match_id = await records.store(attrs.evolve(kalaha(), seats=seats))
        rows = {r["name"]: r for r in await records.leaderboard("kalaha")}
        assert (rows["alice"]["games"], rows["alice"]["wins"], rows["bob"]["games"]) == (2, 2, 2)
        data = await records.match(match_id)
        assert [(s["name"], s["kind"], s["account"], s["account_id"]) for s in data["seats"]] == [
            ("alice", "player", True, alice.id),
            ("bob", "player", False, None),
        ]
        won, _ = rate([INITIAL, INITIAL], [1, 0])  # alice's rating after the first match
        assert (data["seats"][0]["rating_before"], data["seats"][0]["sigma_before"]) == (won.mu, won.sigma)
        assert data["seats"][0]["rating_after"] > won.mu and data["seats"][0]["sigma_after"] < won.sigma
        with _connect(url) as conn:
            cur = conn.cursor()
            cur.execute("SELECT name, account_id FROM ratings WHERE game = 'kalaha' ORDER BY name")
            assert cur.fetchall() == [("alice", alice.id), ("bob", None)]
        # Somebody typing "alice" without logging in is not rated as alice any more.
        await records.store(kalaha(a="alice", b="bob"))
        rows = {r["name"]: r for r in await records.leaderboard("kalaha")}
        assert rows["alice"]["games"] == 2 and rows["bob"]["games"] == 2
        assert [s["rated"] for s in (await records.match(match_id + 1))["seats"]] == [False, True]
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_guest_seats_are_never_rated(url):
    records, _ = await opened(url)
    try:
        record = MatchRecord(
            game="connect4",
            started=1.0,
            ended=2.0,
            seats=(Seat(0, "bob", True, "guest"), Seat(1, "carol", True)),
            options={},
            moves=(),
            scores=(1.0, 0.0),
            reason="four in a row",
        )
        match_id = await records.store(record)
        assert await records.leaderboard("connect4") == []
        data = await records.match(match_id)
        assert [(s["name"], s["kind"], s["rated"], s["rating_after"]) for s in data["seats"]] == [
            ("bob", "guest", False, None),
            ("carol", "player", True, None),
        ]
    finally:
        await records.close()


# --- the migration ---------------------------------------------------------------------------


@pytest.fixture
def version3(url):
    """``url`` with a database made by the gamed before accounts (schema version 3), holding one
    rated match between the typed names ann and ben."""
    dialect, _ = parse_url(url)
    conn = _connect(url)
    try:
        cur = conn.cursor()
        migrate(cur, dialect, upto=3)
        insert = dialect.sql(
            "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra, turns)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
        )
        cur.execute(insert, ("connect4", "connect4-1", 1.0, 2.0, "four in a row", 1, "{}", None, "{}", 7))
        match_id = cur.fetchone()[0]
        seat = dialect.sql("INSERT INTO seats (match_id, seat, name, rated, kind, score, rating_before, rating_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        cur.execute(seat, (match_id, 0, "ann", 1, "player", 1.0, 1500.0, 1516.0))
        cur.execute(seat, (match_id, 1, "ben", 1, "player", 0.0, 1500.0, 1484.0))
        rating = dialect.sql("INSERT INTO ratings (game, name, rating, games, wins, draws, losses) VALUES (?, ?, ?, ?, ?, ?, ?)")
        cur.execute(rating, ("connect4", "ann", 1516.0, 1, 1, 0, 0))
        cur.execute(rating, ("connect4", "ben", 1484.0, 1, 0, 0, 1))
        conn.commit()
    finally:
        conn.close()
    return url, match_id


def _schema(url):
    """The columns of every table, as the database describes them."""
    dialect, target = parse_url(url)
    with _connect(url) as conn:
        cur = conn.cursor()
        if dialect.name == "sqlite":
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            out = {}
            for (table,) in cur.fetchall():
                cur.execute(f"PRAGMA table_info({table})")
                out[table] = [row[1:3] for row in cur.fetchall()]
            cur.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
            out["indexes"] = cur.fetchall()
            return out
        cur.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        )
        rows = cur.fetchall()
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname")
        return {"columns": rows, "indexes": cur.fetchall()}


@pytest_twisted.ensureDeferred
async def test_a_database_from_before_accounts_is_upgraded(version3):
    url, match_id = version3
    records, store = await opened(url)
    try:
        assert _versions(url) == list(range(1, SCHEMA_VERSION + 1)) and SCHEMA_VERSION >= 4
        data = await records.match(match_id)
        assert [(s["name"], s["kind"], s["account"], s["account_id"], s["rating_after"]) for s in data["seats"]] == [
            ("ann", "player", False, None, 1516.0),
            ("ben", "player", False, None, 1484.0),
        ]
        assert await store.list() == []
        ann, token = await store.add("ann")  # ann's old rating is hers now
        assert (await store.verify("ann", token)).id == ann.id
        with _connect(url) as conn:
            cur = conn.cursor()
            cur.execute("SELECT name, rating, account_id FROM ratings ORDER BY name")
            assert cur.fetchall() == [("ann", 1516.0, ann.id), ("ben", 1484.0, None)]
    finally:
        await records.close()
    # Opening a current database again changes nothing.
    before = _schema(url)
    records, store = await opened(url)
    try:
        assert [a.name for a in await store.list()] == ["ann"]
    finally:
        await records.close()
    assert _schema(url) == before
    assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))


def test_the_accounts_table_refuses_names_that_differ_only_in_case(tmp_path):
    path = tmp_path / "r.sqlite"
    conn = sqlite3.connect(path)
    try:
        cur = conn.cursor()
        migrate(cur, parse_url(str(path))[0])
        conn.commit()
        cur.execute("INSERT INTO accounts (name, kind, token_hash, created) VALUES ('alice', 'person', 'x', 1)")
        with pytest.raises(sqlite3.IntegrityError):
            cur.execute("INSERT INTO accounts (name, kind, token_hash, created) VALUES ('ALICE', 'person', 'x', 1)")
    finally:
        conn.close()


@pytest_twisted.ensureDeferred
async def test_a_seats_account_is_stored_and_exported(url):
    records, store = await opened(url)
    try:
        alice, _ = await store.add("alice")
        bot, _ = await store.add("fast_ai", kind="bot")
        record = attrs.evolve(
            kalaha(), seats=(Seat(0, "alice", True, alice.seat_kind, alice.id), Seat(1, "fast_ai", True, bot.seat_kind, bot.id))
        )
        data = await records.match(await records.store(record))
        assert [(s["kind"], s["account"], s["account_id"]) for s in data["seats"]] == [("player", True, alice.id), ("bot", True, bot.id)]
        assert record_from_json(data) == record  # what `gamed export` prints reads back whole
        # An export made before accounts (no account_id in its seats) still reads back.
        for s in data["seats"]:
            del s["account_id"]
        assert [s.account_id for s in record_from_json(data).seats] == [None, None]
        summary = (await records.recent())[0]
        assert summary["seats"] == [
            {"seat": 0, "name": "alice", "kind": "player", "account": True},
            {"seat": 1, "name": "fast_ai", "kind": "bot", "account": True},
        ]
    finally:
        await records.close()


@pytest_twisted.ensureDeferred
async def test_tokens_are_never_logged(url):
    from twisted.logger import capturedLogs, formatEvent

    with capturedLogs() as events:
        records, store = await opened(url)
        try:
            _, token = await store.add("alice")
            await store.verify("alice", token)
            fresh = await store.rotate("alice")
            await refused(store.verify("alice", token))
            await refused(store.verify("nobody", fresh))
            await store.revoke("alice")
            await refused(store.verify("alice", fresh))
        finally:
            await records.close()
    text = "\n".join(formatEvent(e) + repr(e) for e in events)
    assert token not in text and fresh not in text


@pytest_twisted.ensureDeferred
async def test_one_hash_at_a_time(url, monkeypatch):
    """A burst of logins hashes one after another (one CPU), not all at once."""
    running, most = [0], [0]
    lock = threading.Lock()
    real = accounts.token_matches

    def counting(token, stored):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return real(token, stored)
        finally:
            with lock:
                running[0] -= 1

    records, store = await opened(url)
    try:
        _, token = await store.add("alice")
        monkeypatch.setattr(accounts, "token_matches", counting)
        results = await defer.DeferredList([store.verify("alice", token if i % 2 else new_token()) for i in range(6)], consumeErrors=True)
        assert [ok for ok, _ in results] == [False, True] * 3
        assert most[0] == 1
    finally:
        await records.close()
