"""``gamed player add|list|revoke|rotate`` run as real subprocesses against real records databases
(SQLite, and PostgreSQL when GAMED_TEST_POSTGRES_URL is set)."""

import os
import re
import sqlite3
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, task, utils

from gamed.accounts import REVOKED, UNKNOWN_OR_WRONG, AccountStore, LoginRefused
from gamed.records import RecordStore
from tests.test_accounts import url  # noqa: F401  (the SQLite / PostgreSQL fixture)
from tests.test_export import ROOT, gamed
from tests.test_records import _reactor, kalaha

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

TOKEN_LINE = re.compile(r"token for (?P<name>[A-Za-z0-9_.-]+): (?P<token>[A-Za-z0-9_-]{32})\Z")


def token_of(out, name):
    """The token ``gamed player add/rotate`` printed for ``name`` (its first stdout line)."""
    assert out.returncode == 0, out.stderr
    match = TOKEN_LINE.match(out.stdout.splitlines()[0])
    assert match and match["name"] == name, out.stdout
    assert out.stdout.count(match["token"]) == 1  # shown once
    return match["token"]


def one_error(out, message):
    assert (out.returncode, out.stdout, out.stderr.splitlines()) == (1, "", [f"gamed: {message}"])


async def verify(url, name, token):
    """What the daemon's login would say: the Account, or the LoginRefused reason."""
    records = RecordStore(url, _reactor())
    await records.start()
    try:
        return await AccountStore(records).verify(name, token)
    except LoginRefused as e:
        return e.reason
    finally:
        await records.close()


def listed(out):
    """``gamed player list`` as {name: (kind, state, rotated?)}."""
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "CREATED", "STATE", "ROTATED"]
    rows = {}
    for line in lines[1:]:
        name, kind, day, clock, state, *rotated = line.split()
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", day) and re.fullmatch(r"\d\d:\d\d:\d\dZ", clock)
        rows[name] = (kind, state, rotated != ["-"])
    return rows


@pytest_twisted.ensureDeferred
async def test_add_list_revoke_rotate(url):  # noqa: F811
    db = ("--records", url)
    alice = token_of(gamed("player", "add", "alice", *db), "alice")
    assert (await verify(url, "alice", alice)).name == "alice"
    one_error(gamed("player", "add", "alice", *db), "there is already an account 'alice'")
    one_error(gamed("player", "add", "Alice", *db), "there is already an account 'alice' (names differ only in case)")
    one_error(gamed("player", "add", "guest9", *db), "an account name must not start with 'guest' (the guests' names), not 'guest9'")
    one_error(gamed("player", "add", "a:b", *db), "an account name is 1-32 letters, digits, _ . -, not 'a:b'")
    bot = token_of(gamed("player", "add", "fast_ai", "--kind", "bot", *db), "fast_ai")
    assert (await verify(url, "fast_ai", bot)).kind == "bot"
    assert listed(gamed("player", "list", *db)) == {"alice": ("person", "active", False), "fast_ai": ("bot", "active", False)}

    out = gamed("player", "revoke", "alice", *db)
    assert out.returncode == 0 and out.stdout.startswith("revoked alice (since "), out.stderr
    assert await verify(url, "alice", alice) == REVOKED  # at once
    assert listed(gamed("player", "list", *db))["alice"] == ("person", "revoked", False)
    one_error(gamed("player", "revoke", "nobody", *db), "no account 'nobody'")

    fresh = token_of(gamed("player", "rotate", "alice", *db), "alice")
    assert fresh != alice
    assert await verify(url, "alice", alice) == UNKNOWN_OR_WRONG  # the old token is dead at once
    assert (await verify(url, "alice", fresh)).name == "alice"  # and the account active again
    assert listed(gamed("player", "list", *db))["alice"] == ("person", "active", True)
    newer = token_of(gamed("player", "rotate", "alice", *db), "alice")
    assert await verify(url, "alice", fresh) == UNKNOWN_OR_WRONG
    assert (await verify(url, "alice", newer)).name == "alice"
    one_error(gamed("player", "rotate", "nobody", *db), "no account 'nobody'")
    assert (await verify(url, "fast_ai", bot)).name == "fast_ai"  # the others' tokens are untouched


def test_errors_are_one_line_and_leave_no_database_behind(tmp_path):
    missing = tmp_path / "missing.sqlite"
    for action in (("list",), ("revoke", "alice"), ("rotate", "alice")):
        one_error(gamed("player", *action, "--records", str(missing)), f"no records database at {missing}")
    assert not missing.exists()
    one_error(
        gamed("player", "add", "alice", "--records", str(tmp_path / "no" / "dir.sqlite")),
        f"cannot open the records database {tmp_path / 'no' / 'dir.sqlite'}: the directory {tmp_path / 'no'} does not exist",
    )
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all\n" * 200)
    one_error(gamed("player", "list", "--records", str(junk)), f"cannot use the records database {junk}: file is not a database")
    out = gamed("player", "add", "alice", "--kind", "robot", "--records", str(tmp_path / "x.sqlite"))
    assert out.returncode == 2 and "invalid choice: 'robot'" in out.stderr


def test_the_database_of_the_config_file_and_the_default(tmp_path):
    db = tmp_path / "elsewhere.sqlite"
    conf = tmp_path / "gamed.conf"
    conf.write_text(f'[records]\ndatabase = "sqlite:{db}"\n')
    token_of(gamed("player", "add", "alice", "--config", str(conf)), "alice")
    assert db.exists()
    assert list(listed(gamed("player", "list", "--records", str(db)))) == ["alice"]
    # Without either: gamed.sqlite in the working directory, as the daemon's default.
    token_of(gamed("player", "add", "bob", cwd=tmp_path), "bob")
    assert list(listed(gamed("player", "list", "--records", str(tmp_path / "gamed.sqlite")))) == ["bob"]
    # The installed console script, when the package is installed beside this interpreter.
    script = os.path.join(os.path.dirname(sys.executable), "gamed")
    if os.path.exists(script):
        out = gamed("player", "list", "--records", str(db))
        assert out.returncode == 0


@pytest_twisted.ensureDeferred
async def test_works_while_the_daemon_writes_the_same_sqlite_file(tmp_path):
    """The daemon keeps its records connection open and stores matches while an organiser runs
    ``gamed player add``: both finish (WAL, busy timeout), nothing is lost."""
    db = tmp_path / "gamed.sqlite"
    records = RecordStore(str(db), _reactor())
    await records.start()
    stored = []
    try:
        storing = True

        async def daemon():
            while storing or len(stored) < 5:
                stored.append(await records.store(kalaha()))
                await task.deferLater(_reactor(), 0.01, lambda: None)

        writer = defer.ensureDeferred(daemon())
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        results = await defer.gatherResults(
            [
                utils.getProcessOutputAndValue(
                    sys.executable, ["-m", "gamed.cli", "player", "add", name, "--records", str(db)], env=env, path=str(ROOT)
                )
                for name in ("alice", "bob", "carol")
            ]
        )
        storing = False
        await writer
        tokens = {}
        for name, (out, err, code) in zip(("alice", "bob", "carol"), results):
            assert code == 0, err
            match = TOKEN_LINE.match(out.decode().splitlines()[0])
            tokens[match["name"]] = match["token"]
        assert sorted(tokens) == ["alice", "bob", "carol"]
        # The daemon's own store sees the new accounts at once.
        accounts = AccountStore(records)
        for name, token in tokens.items():
            assert (await accounts.verify(name, token)).name == name
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*), MAX(id) FROM matches").fetchone() == (len(stored), stored[-1])
    finally:
        await records.close()
