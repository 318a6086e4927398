"""``gamed export MATCH_ID`` run as a real subprocess against a real records database."""

import json
import os
import pathlib
import subprocess
import sys

import attrs
import pytest
import pytest_twisted

from gamed.records import MatchRecord, Move, RecordStore, Seat, record_from_json

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parent.parent


def gamed(*args, cwd=None):
    """Run ``python -m gamed.cli ARGS`` (what the ``gamed`` console script runs) and return the result."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gamed.cli", *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd or ROOT
    )


UCC_LOG = "RED: random_ai\nBLUE: fast_ai\n1 RED: 0 3 DOWN 1 OK\n2 BLUE: 5 6 UP 1 OK\n"

STRATEGO = MatchRecord(
    game="stratego",
    started=1712345678.125,
    ended=1712345699.0,
    seats=(Seat(0, "random_ai", True, "program"), Seat(1, "fast_ai", True, "program")),
    options={"max_turns": 1000, "timeout": 2.0},
    moves=(Move(1, 0, "0 3 DOWN 1", 0.01, {"width": 10, "height": 10, "cells": [[None] * 10] * 10}), Move(2, 1, "5 6 UP 1", 0.02)),
    scores=(0, 1),
    reason="VICTORY_FLAG",
    extra={"ucc_log": UCC_LOG},
    table="stratego-1",
)
KALAHA = MatchRecord(
    game="kalaha",
    started=1.5,
    ended=9.25,
    seats=(Seat(0, "alice", True), Seat(1, "guest2", False)),
    options={},
    moves=(),
    scores=(0.5, 0.5),
    reason="draw",
)


async def _database(path):
    from twisted.internet import reactor

    store = RecordStore(str(path), reactor)
    await store.start()
    try:
        ids = [await store.store(STRATEGO), await store.store(KALAHA)]
        stored = [await store.match(i) for i in ids]
    finally:
        await store.close()
    return ids, stored


@pytest_twisted.ensureDeferred
async def test_export_prints_json_that_round_trips(tmp_path):
    db = tmp_path / "gamed.sqlite"
    (sid, kid), (stratego, kalaha) = await _database(db)
    out = gamed("export", str(sid), "--database", f"sqlite://{db}")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == stratego
    assert record_from_json(data) == STRATEGO
    # The default database is gamed.sqlite in the working directory, as the daemon's default.
    out = gamed("export", str(kid), "--format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert record_from_json(json.loads(out.stdout)) == KALAHA
    # The installed console script, when the package is installed beside this interpreter.
    script = pathlib.Path(sys.executable).parent / "gamed"
    if script.exists():
        out = subprocess.run([str(script), "export", str(sid), "--database", str(db)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == stratego


@pytest_twisted.ensureDeferred
async def test_export_ucc_log_of_a_stratego_match(tmp_path):
    db = tmp_path / "gamed.sqlite"
    (sid, kid), _ = await _database(db)
    out = gamed("export", str(sid), "--database", str(db), "--format", "ucc")
    assert (out.returncode, out.stdout, out.stderr) == (0, UCC_LOG, "")
    out = gamed("export", str(kid), "--database", str(db), "--format", "ucc")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"gamed: match {kid} is a kalaha match without a UCC log; only Stratego matches export as ucc"]


@pytest_twisted.ensureDeferred
async def test_export_reads_the_database_named_in_the_config_file(tmp_path):
    db = tmp_path / "elsewhere.sqlite"
    (sid, _), (stratego, _) = await _database(db)
    conf = tmp_path / "gamed.conf"
    conf.write_text(f'[records]\ndatabase = "sqlite:{db}"\n')
    out = gamed("export", str(sid), "--config", str(conf))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == stratego


@pytest_twisted.ensureDeferred
async def test_export_errors_are_one_clear_line(tmp_path):
    db = tmp_path / "gamed.sqlite"
    await _database(db)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all\n" * 200)
    cases = [
        (("export", "99", "--database", str(db)), f"gamed: no match 99 in {db}"),
        (("export", "x1", "--database", str(db)), "gamed: a match id is a number, not 'x1'"),
        (("export", "1", "--database", str(tmp_path / "missing.sqlite")), f"gamed: no records database at {tmp_path / 'missing.sqlite'}"),
        (("export", "1", "--database", "mysql://db/x"), "gamed: records URL 'mysql://db/x': only sqlite: and postgresql:// databases are supported"),
        (("export", "1", "--database", str(junk)), f"gamed: cannot read the records database {junk}: file is not a database"),
    ]
    for args, message in cases:
        out = gamed(*args)
        assert (out.returncode, out.stdout, out.stderr.splitlines()) == (1, "", [message]), args
    assert not (tmp_path / "missing.sqlite").exists()


@pytest_twisted.ensureDeferred
async def test_export_from_postgresql():
    url = os.environ.get("GAMED_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip("PostgreSQL export not tested: set GAMED_TEST_POSTGRES_URL=postgresql://... to run it")
    psycopg = pytest.importorskip("psycopg", reason="GAMED_TEST_POSTGRES_URL is set but psycopg is not installed")
    with psycopg.connect(url) as conn:  # another test's accounts would own the programs' names
        from tests.test_records import TABLES

        conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES) + " CASCADE")
    (sid, _), (stratego, _) = await _database(url)
    out = gamed("export", str(sid), "--database", url)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == stratego and record_from_json(stratego) == STRATEGO


@pytest_twisted.ensureDeferred
async def test_records_compact_and_prune_say_what_they_did(tmp_path):
    from twisted.internet import reactor

    from gamed.kalaha import rules

    database = tmp_path / "records.sqlite"
    start = {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}
    record = attrs.evolve(KALAHA, initial_state=start, moves=(Move(1, 0, "A3", 0.5, rules.next_state(start, 0, "A3")),))
    store = RecordStore(f"sqlite:{database}", reactor, compact=False)  # every state whole, as before gamed 17
    await store.start()
    await store.store(record)
    await store.close()
    done = gamed("records", "compact", "--database", f"sqlite:{database}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"sqlite:{database}: 1 matches compacted: 1 states (")
    exported = json.loads(gamed("export", "1", "--database", f"sqlite:{database}").stdout)
    assert exported["moves"][0]["state"] == record.moves[0].state
    done = gamed("records", "prune", "1", "--database", f"sqlite:{database}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"sqlite:{database}: the 1 moves of 1 matches that ended more than 1 days ago pruned"
    exported = json.loads(gamed("export", "1", "--database", f"sqlite:{database}").stdout)
    assert exported["moves"] == [] and exported["extra"]["moves_not_kept"] == 1 and exported["scores"] == [0.5, 0.5]
    bad = gamed("records", "prune", "0", "--database", f"sqlite:{database}")
    assert bad.returncode == 1 and "DAYS must be more than 0" in bad.stderr
