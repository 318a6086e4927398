"""The stored bots (gamed.hosting.store) on a real SQLite records database, joined to the config's
bots (``registered_bots``), and the daemon's start-up taking them (gamed.tap.with_stored_bots)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys

import pytest
import pytest_twisted
from twisted.internet.testing import MemoryReactorClock

from gamed import config, tap
from gamed.config import ConfigError
from gamed.hosting.cli import limit_values
from gamed.hosting.spec import BotLimits, SpecError, parse_bot
from gamed.hosting.store import BotStore, BotStoreError, StoredBot, registered_bots, stored_bots_now
from gamed.records import RecordStore
from tests.test_records import _reactor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOT = os.path.join(ROOT, "examples", "bots", "kalaha_bot.py")
GAMES = ("kalaha", "connect4")


def spec(name: str, command: str = f"{sys.executable} {BOT}", **more):
    return parse_bot(name, {"game": "kalaha", "command": command, **more}, GAMES)


@pytest_twisted.ensureDeferred
async def test_add_list_get_remove_on_sqlite(tmp_path):
    records = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    await records.start()
    store = BotStore(records, _reactor())
    try:
        added = await store.add(spec("zeta", limits={"cpu": 10}), {"cpu": 10})
        assert (added.name, added.game, added.limits) == ("zeta", "kalaha", {"cpu": 10})
        await store.add(spec("Alpha", workdir="persistent", talk="connect"), {})
        with pytest.raises(BotStoreError, match="there is already a bot named zeta in the records database"):
            await store.add(spec("ZETA"), {})
        assert [b.name for b in await store.list()] == ["Alpha", "zeta"]
        found = await store.get("alpha")
        assert (found.workdir, found.talk, found.argv) == ("persistent", "connect", (sys.executable, BOT))
        assert await store.get("nobody") is None
        assert (await store.remove("ZETA")).name == "zeta"
        with pytest.raises(BotStoreError, match="no bot named zeta in the records database"):
            await store.remove("zeta")
    finally:
        await records.close()
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:  # the argv and the limits given, as JSON
        (command, limits), = conn.execute("SELECT command, limits FROM bots").fetchall()
    assert json.loads(command) == [sys.executable, BOT] and json.loads(limits) == {}
    sync = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", None)
    sync.prepare()
    assert [b.name for b in stored_bots_now(sync)] == ["Alpha"]


def _stored(name: str, argv=(sys.executable, BOT), limits=None) -> StoredBot:
    return StoredBot(1, name, "kalaha", tuple(argv), "fresh", "", "stdio", limits or {}, 0.0)


def test_registered_bots_are_the_config_s_then_the_stored_ones_checked_as_config_bots():
    bots = registered_bots((spec("alpha"),), [_stored("beta", limits={"cpu": 5, "memory": "128M"})], GAMES)
    assert [b.name for b in bots] == ["alpha", "beta"]
    assert bots[1].limits == BotLimits(cpu=5.0, memory=128 * 1024**2)
    with pytest.raises(SpecError, match=r"\Abot ALPHA is in the config and in the records database\Z"):
        registered_bots((spec("alpha"),), [_stored("ALPHA")], GAMES)
    with pytest.raises(SpecError, match=r"\Abots.gone.command: /no/such/bot does not exist \(bot gone of the records database"):
        registered_bots((), [_stored("gone", argv=("/no/such/bot",))], GAMES)


def test_limit_values_are_numbers_where_they_are_numbers():
    assert limit_values(["cpu=10", "memory=256M", "cpu=2.5", " files = 9 "]) == {"cpu": 2.5, "memory": "256M", "files": 9}
    with pytest.raises(ValueError, match="--limit takes NAME=VALUE"):
        limit_values(["cpu"])


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _conf(tmp_path, tournament: str = "", records: str | None = None) -> str:
    db = records if records is not None else f"{tmp_path}/r.sqlite"
    text = (
        f'[records]\ndatabase = "{db}"\n[bots]\nisolation = "none"\n'
        f'[bots.alpha]\ngame = "kalaha"\ncommand = "{sys.executable} {BOT} 1"\n' + tournament
    )
    path = tmp_path / "gamed.conf"
    path.write_text(text)
    return str(path)


def _options(path: str) -> tap.Options:
    opts = tap.Options()
    opts.parseOptions(["--config", path, "--web", "none"])
    return opts


def _store_bot(tmp_path, name: str) -> None:
    records = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", None)
    records.prepare()
    bot = spec(name)
    records.run_now(lambda cursor: cursor.execute(
        "INSERT INTO bots (name, game, command, workdir, directory, talk, limits, added) VALUES (?, ?, ?, 'fresh', '', 'stdio', '{}', 0)",
        (bot.name, bot.game, json.dumps(list(bot.argv))),
    ))


def test_the_daemon_hosts_stored_bots_and_checks_tournaments_against_them_at_start_up(scratch):
    duel = '[tournaments.duel]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "stored"]\n'
    path = _conf(scratch, duel)
    opts = _options(path)  # the config alone does not know "stored": checked at start-up
    with pytest.raises(SystemExit) as e:
        tap.makeService(opts, reactor=MemoryReactorClock())
    assert str(e.value) == "gamed: cannot start: tournaments.duel: no hosted bot stored (register it as [bots.stored] or with gamed bot add)"
    _store_bot(scratch, "stored")
    root = tap.makeService(_options(path), reactor=MemoryReactorClock())
    assert [b.name for b in root.bots] == ["alpha", "stored"]
    assert root.hosted is not None
    # without a records database a tournament's unknown bot is a config mistake, as before
    with pytest.raises(ConfigError, match="tournaments.duel: no hosted bot stored"):
        config.load(_conf(scratch, duel, records=""))


def test_a_stored_bot_alone_makes_the_daemon_host_bots(scratch):
    path = scratch / "gamed.conf"
    path.write_text(f'[records]\ndatabase = "{scratch}/r.sqlite"\n[bots]\nisolation = "none"\n')
    assert tap.makeService(_options(str(path)), reactor=MemoryReactorClock()).hosted is None
    _store_bot(scratch, "solo")
    root = tap.makeService(_options(str(path)), reactor=MemoryReactorClock())
    assert [b.name for b in root.bots] == ["solo"] and root.hosted is not None
