"""The ladder against the real daemon: two accounts (``gamed player add``) run the
example Kalaha bot with GAMED_LADDER, are paired by the daemon game after game over loopback,
every game is stored in the SQLite records as a rated ladder match, and the next LADDER shows the
rating the records now hold."""

import os
import sqlite3
import sys

import pytest_twisted
from twisted.internet import defer

from gamed import ratings as skill
from tests.integration.support import ROOT, add_accounts, connect, run

BOT = str(ROOT / "examples" / "bots" / "kalaha_bot.py")


@pytest_twisted.ensureDeferred
async def test_two_bots_on_the_ladder_play_rated_games_and_the_next_wait_shows_the_new_rating(start_daemon, tmp_path):
    database = tmp_path / "r.sqlite"
    tokens = await add_accounts(database, ("alpha", "beta"))
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 0\npair_delay = 2\n\n[ladder]\ninterval = 0.2\n")
    daemon = await start_daemon("--config", str(conf), "--records", f"sqlite:{database}")
    games = 3

    def bot(name, seed):
        env = {"PATH": os.environ["PATH"], "GAMED_HOST": "127.0.0.1", "GAMED_PORT": str(daemon.port),
               "GAMED_NAME": name, "GAMED_TOKEN": tokens[name], "GAMED_LADDER": str(games), "GAMED_SEED": str(seed)}
        return defer.ensureDeferred(run([sys.executable, BOT], executable=None, env=env, timeout=90))

    (code_a, out_a), (code_b, out_b) = await defer.gatherResults([bot("alpha", 1), bot("beta", 2)])
    assert (code_a, code_b) == (0, 0), (out_a, out_b)

    # Every ladder game is stored (the last one perhaps a moment after the bots have gone).
    async def stored():
        with sqlite3.connect(database) as db:
            return db.execute("SELECT id, reason, rated, extra FROM matches WHERE game = 'kalaha' ORDER BY id").fetchall()

    rows = []
    for _ in range(200):
        rows = await stored()
        if len(rows) == games:
            break
        await _sleep(0.05)
    assert len(rows) == games and all(rated for _, _, rated, _ in rows), rows
    with sqlite3.connect(database) as db:
        seats = db.execute("SELECT match_id, seat, name FROM seats ORDER BY match_id, seat").fetchall()
        rating = db.execute("SELECT rating, sigma, games FROM ratings WHERE game = 'kalaha' AND name = 'alpha'").fetchone()
    by_match: dict = {}
    for match_id, seat, name in seats:
        by_match.setdefault(match_id, []).append(name)
    assert sorted(map(sorted, by_match.values())) == [["alpha", "beta"]] * games
    firsts = [names[0] for _, names in sorted(by_match.items())]
    assert firsts[:2] in (["alpha", "beta"], ["beta", "alpha"]), "the colours alternate between the two"
    assert rating[2] == games

    c = await connect(daemon.port)
    c.send(f"LOGIN alpha {tokens['alpha']}", "LADDER")
    assert await c.expect_prefix("OK LADDER") == "OK LADDER 1"
    low, high = skill.interval(rating[0], rating[1])
    assert await c.expect("WAIT") == f"WAIT waiting for a ladder opponent (rating {rating[0]:.0f} +/- {(high - low) / 2:.0f})"
    assert rating[0] != skill.MU


def _sleep(seconds):
    from twisted.internet import reactor, task

    return task.deferLater(reactor, seconds, lambda: None)
