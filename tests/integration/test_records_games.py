"""The real daemon stores its Stratego tournament games and a GGZ Combat game between two bots in a
SQLite records database: ``gamed export ID --format ucc`` prints a Stratego game's -o log, and the
JSON export of the Combat game has its moves with spectator states."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest
import pytest_twisted
from twisted.internet import utils

from tests.integration.support import LOOPBACK, ROOT, child_env, with_timeout
from tests.integration.test_combat_bots import _sleep, spawn_bot
from tests.integration.test_stratego_daemon import wait_for, write_config
from tests.stratego.programs import compile_fast_ai


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


async def export(database, match_id, *extra):
    args = ["-m", "gamed.cli", "export", str(match_id), "--database", f"sqlite:{database}", *extra]
    out, err, code = await utils.getProcessOutputAndValue(sys.executable, args, env=child_env(), path=str(ROOT))
    assert code == 0, err.decode()
    return out.decode()


@pytest_twisted.ensureDeferred
async def test_tournament_and_combat_games_are_stored_and_exported(start_daemon, tmp_path, fast_ai):
    database = tmp_path / "records.sqlite"
    daemon = await start_daemon(
        "--config", write_config(tmp_path, fast_ai), "--records", f"sqlite:{database}", combat=LOOPBACK
    )
    host = spawn_bot(daemon.ports["combat"], "--seed", "1", "--map", "small")
    for _ in range(100):
        if b"seat 0:" in host.err or host.ended.called:
            break
        await _sleep(0.1)
    guest = spawn_bot(daemon.ports["combat"], "--seed", "2")
    try:
        for bot in (host, guest):
            assert await with_timeout(bot.ended, 120, "a bot to finish") == 0, bot.err.decode()[-2000:]
    finally:
        host.kill()
        guest.kill()
    await wait_for(lambda: "stratego tournament" in daemon.text and "finished" in daemon.text, 60, "the tournament")
    await wait_for(lambda: daemon.text.count("stored as match") >= 3, 20, "three stored matches")
    assert await daemon.stop()
    assert "Traceback" not in daemon.text

    with sqlite3.connect(database) as db:
        games = db.execute("SELECT id, game FROM matches ORDER BY id").fetchall()
        # The records keep no state the rules rebuild (gamed.replay): every move has a patch,
        # nearly all of them empty, and every match names its replayer.
        whole, patched, rows = db.execute(
            "SELECT SUM(state IS NOT NULL), SUM(patch != '[]'), COUNT(*) FROM moves"
        ).fetchone()
        replayers = sorted(r for (r,) in db.execute("SELECT replayer FROM matches"))
    assert rows > 20 and whole == 0 and patched <= rows // 10, (whole, patched, rows)
    assert replayers == ["combat/1", "stratego/1", "stratego/1"]
    assert sorted(game for _, game in games) == ["combat", "stratego", "stratego"]

    logs = sorted((tmp_path / "state").glob("tournament-*/logs/*.log"))
    assert len(logs) == 2
    stratego_ids = [match_id for match_id, game in games if game == "stratego"]
    exported = [await export(database, match_id, "--format", "ucc") for match_id in stratego_ids]
    assert sorted(exported) == sorted(log.read_text(encoding="latin-1") for log in logs)
    assert all(text.splitlines()[0].endswith(" RED SETUP") for text in exported)
    match = json.loads(await export(database, stratego_ids[0]))
    assert [s["kind"] for s in match["seats"]] == ["program", "program"] and match["rated"]
    assert match["moves"] and all(m["state"]["width"] == 10 for m in match["moves"])

    (combat_id,) = [match_id for match_id, game in games if game == "combat"]
    combat = json.loads(await export(database, combat_id))
    assert combat["moves"], "the bots played"
    for move in combat["moves"]:
        state = move["state"]
        assert state["width"] == state["height"] == 5 and len(state["cells"]) == 5 and state["last"]
    assert [s["name"] for s in combat["seats"]] and combat["options"]["map"] == "Small"
