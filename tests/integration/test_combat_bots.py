"""Two copies of examples/combat/random_bot.py play GGZ Combat to the end against the real daemon:
both exit 0 and report the same winner, and the daemon logs no traceback."""

from __future__ import annotations

import re
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor

from tests.integration.support import LOOPBACK, ROOT, with_timeout

BOT = str(ROOT / "examples" / "combat" / "random_bot.py")
WINNER = re.compile(r"GAMEOVER winner (-?\d+)")


class Bot(protocol.ProcessProtocol):
    """A random_bot.py child: ``await ended`` gives the exit code; ``out``/``err`` its output."""

    def __init__(self):
        self.out = b""
        self.err = b""
        self.ended: defer.Deferred = defer.Deferred()

    def outReceived(self, data):  # noqa: N802
        self.out += data

    def errReceived(self, data):  # noqa: N802
        self.err += data

    def processEnded(self, reason):  # noqa: N802
        self.ended.callback(reason.value.exitCode)

    def kill(self):
        try:
            self.transport.signalProcess("KILL")
        except Exception:  # already gone
            pass


def spawn_bot(port: int, *extra: str) -> Bot:
    bot = Bot()
    args = [sys.executable, BOT, "--host", "127.0.0.1", "--port", str(port), "--timeout", "20", *extra]
    reactor.spawnProcess(bot, sys.executable, args, env=None)
    return bot


@pytest.mark.parametrize("map_name", ["default", "small"])
@pytest_twisted.ensureDeferred
async def test_two_random_bots_play_to_gameover(start_daemon, map_name):
    daemon = await start_daemon(kalaha="none", combat=LOOPBACK)
    port = daemon.ports["combat"]
    host = spawn_bot(port, "--seed", "1", "--map", map_name, "--verbose")
    # The second bot must not take seat 0: wait until the first one is seated (it logs its seat).
    for _ in range(100):
        if b"seat 0:" in host.err or host.ended.called:
            break
        await _sleep(0.1)
    assert b"seat 0:" in host.err, host.err
    guest = spawn_bot(port, "--seed", "2")
    try:
        codes = [await with_timeout(bot.ended, 120, "a bot to finish") for bot in (host, guest)]
    finally:
        host.kill()
        guest.kill()
    outputs = [bot.out.decode() for bot in (host, guest)]
    details = f"outputs {outputs}, errors {[bot.err.decode()[-2000:] for bot in (host, guest)]}"
    assert codes == [0, 0], details
    winners = [WINNER.search(out) for out in outputs]
    assert all(winners), details
    assert winners[0].group(1) == winners[1].group(1), details
    assert winners[0].group(1) in ("0", "1", "-1")
    assert "seat 0:" in outputs[0] and "seat 1:" in outputs[1]
    assert "Traceback" not in daemon.text


def _sleep(seconds: float) -> defer.Deferred:
    d = defer.Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d
