"""examples/generic/random_bot.py against the real daemon's generic port: the bot that knows no
rules passes the server's self-test and plays every game the hello lists to the end; the
daemon logs no traceback."""

from __future__ import annotations

import re
import sys

import pytest_twisted
from twisted.internet import defer

from tests.integration.support import LOOPBACK, ROOT, child_env, run, with_timeout

BOT = str(ROOT / "examples" / "generic" / "random_bot.py")
GAME_LINE = re.compile(r"^game (\d+): (\S+) #(\d+) seat ([01]) (\S+) scores \[([\d., ]+)\]: .+$", re.M)


async def bot(port: int, *args: str) -> tuple[int, str]:
    return await run([BOT, "--host", "127.0.0.1", "--port", str(port), "--timeout", "30", *args],
                     executable=sys.executable, timeout=60)


async def hello_games(port: int) -> list[str]:
    code, out = await run(
        ["-c", "import sys, gamedclient; print(' '.join(gamedclient.connect('127.0.0.1', int(sys.argv[1])).hello['games']))",
         str(port)],
        executable=sys.executable, env=child_env(PYTHONPATH=str(ROOT / "examples" / "generic")),
    )
    assert code == 0, out
    return out.split()


@pytest_twisted.ensureDeferred
async def test_the_random_bot_passes_the_selftest_and_plays_every_game(start_daemon):
    daemon = await start_daemon("--generic", LOOPBACK, connect4=LOOPBACK)
    port = daemon.ports["generic"]
    games = await hello_games(port)
    assert games == ["kalaha", "connect4"]
    for game in games:
        code, out = await bot(port, "--game", game, "--selftest", "--seed", "3")
        assert code == 0, out
        assert out.strip().splitlines()[-1] == f"selftest {game}: pass"
        assert "FAIL" not in out
    results = await defer.gatherResults(
        [defer.ensureDeferred(bot(port, "--game", game, "--games", "2", "--seed", str(n), "--name", f"bot{n}"))
         for n, game in enumerate(games)]
    )
    for game, (code, out) in zip(games, results):
        assert code == 0, out
        lines = GAME_LINE.findall(out)
        assert [(number, name) for number, name, *_ in lines] == [("1", game), ("2", game)], out
        for *_, scores in lines:
            assert sorted(float(s) for s in scores.split(",")) in ([0.0, 1.0], [0.5, 0.5]), out
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_the_bot_reports_a_game_the_server_does_not_offer(start_daemon):
    daemon = await start_daemon("--generic", LOOPBACK)
    code, out = await with_timeout(
        defer.ensureDeferred(bot(daemon.ports["generic"], "--game", "chess")), 60, "the bot to exit")
    assert code == 1
    assert "no_such_game" in out and "kalaha" in out
