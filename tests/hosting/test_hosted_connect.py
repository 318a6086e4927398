"""Hosted bots that connect themselves (talk = "connect"): the program gets GAMED_HOST,
GAMED_PORT, GAMED_NAME, GAMED_TOKEN and GAMED_TABLE, connects to the game's real TCP port on
127.0.0.1, logs in with its one-time host token and asks for its table; it plays a stdio bot to
the end, and its token logs nobody in after the game."""

from __future__ import annotations

import os
import sys

import pytest_twisted
from twisted.internet import defer, protocol, reactor
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.protocols.basic import LineOnlyReceiver

from gamed.config import Connect4Config, KalahaConfig, Limits, PlayersConfig
from gamed.connect4.service import Connect4Service
from gamed.hosting.faults import Fault
from gamed.hosting.runner import HostedGames
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import parse_bot
from gamed.kalaha.service import KalahaService
from gamed.observers import LiveHub
from gamed.players import Players
from tests.hosting.test_hosted_games import programs_with
from tests.memaccounts import MemoryAccounts
from tests.procs import wait_gone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOTS = os.path.join(ROOT, "examples", "bots")
RECORD = os.path.join(ROOT, "tests", "hosting", "record_token.py")
MISBEHAVE = os.path.join(ROOT, "tests", "hosting", "misbehave.py")
PY = sys.executable


def bot(name: str, game: str, command: str, talk: str = "stdio"):
    return parse_bot(name, {"game": game, "command": command, "talk": talk}, ("kalaha", "connect4"))


class _Lines(LineOnlyReceiver):
    """A TCP client that collects the server's lines."""

    delimiter = b"\r\n"

    def __init__(self):
        self.lines: list[str] = []
        self.waiting: list[tuple[str, defer.Deferred]] = []

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        self.lines.append(line.decode())
        for prefix, d in list(self.waiting):
            if line.decode().startswith(prefix):
                self.waiting.remove((prefix, d))
                d.callback(line.decode())

    def line_starting(self, prefix: str) -> defer.Deferred:
        for line in self.lines:
            if line.startswith(prefix):
                return defer.succeed(line)
        d = defer.Deferred()
        self.waiting.append((prefix, d))
        return d.addTimeout(20, reactor)


class _Daemon:
    """Kalaha and Connect Four on real TCP ports of 127.0.0.1, with the daemon's one Players."""

    def __init__(self, tmp_path):
        self.accounts = MemoryAccounts()
        self.players = Players(PlayersConfig(), self.accounts, reactor)
        hub = LiveHub(reactor)
        self.kalaha = KalahaService(KalahaConfig(board=False, move_time=10.0), Limits(), reactor, hub=hub,
                                    players=self.players)
        self.connect4 = Connect4Service(Connect4Config(board=False), Limits(), reactor, hub=hub, players=self.players)
        self.ports = {
            "kalaha": reactor.listenTCP(0, self.kalaha.port_factory(), interface="127.0.0.1"),
            "connect4": reactor.listenTCP(0, self.connect4.port_factory(), interface="127.0.0.1"),
        }
        address = {game: ("127.0.0.1", port.getHost().port) for game, port in self.ports.items()}
        self.games = HostedGames({"kalaha": self.kalaha, "connect4": self.connect4}, hub, reactor,
                                 Isolation.detect("none"), str(tmp_path), start_timeout=15.0,
                                 address=address, tokens=self.players)

    async def client(self, game: str) -> _Lines:
        port = self.ports[game].getHost().port
        return await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port), _Lines())

    async def close(self):
        await defer.gatherResults([defer.maybeDeferred(p.stopListening) for p in self.ports.values()])


@pytest_twisted.ensureDeferred
async def test_a_connect_bot_plays_kalaha_against_a_stdio_bot_and_its_token_dies_with_the_game(tmp_path):
    daemon = _Daemon(tmp_path)
    tokens = tmp_path / "token"
    try:
        connecting = bot("netbot", "kalaha", f"{PY} {RECORD} {tokens} {BOTS}/kalaha_bot.py 3", talk="connect")
        piped = bot("pipebot", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 4 {tmp_path}")
        for seats in ((connecting, piped), (piped, connecting)):
            result = await daemon.games.play("kalaha", list(seats))
            assert result.played and result.faults == (None, None), result
            assert result.bots == tuple(b.name for b in seats)
            assert result.reason == "end" and sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5])
            # After the game its token is refused like any wrong token, on the game's own port.
            token = tokens.read_text().strip()
            assert len(token) == 32
            client = await daemon.client("kalaha")
            client.sendLine(f"LOGIN netbot {token}".encode())
            assert await client.line_starting("ERROR") == "ERROR 420 unknown account or wrong token"
            client.transport.loseConnection()
        assert wait_gone(programs_with(str(tmp_path))) == []
    finally:
        await daemon.close()


@pytest_twisted.ensureDeferred
async def test_a_connect_bot_plays_connect_four(tmp_path):
    daemon = _Daemon(tmp_path)
    try:
        connecting = bot("netfour", "connect4", f"{PY} {BOTS}/connect4_bot.py 5", talk="connect")
        piped = bot("pipefour", "connect4", f"{PY} {BOTS}/connect4_bot.py 6")
        result = await daemon.games.play("connect4", [piped, connecting])
        assert result.played and result.faults == (None, None), result
        assert result.reason in ("four", "full")
        assert wait_gone(programs_with(str(tmp_path))) == []
    finally:
        await daemon.close()


@pytest_twisted.ensureDeferred
async def test_a_connect_bot_that_crashes_in_its_game_forfeits_at_once(tmp_path):
    daemon = _Daemon(tmp_path)
    try:
        # It dies by SIGSEGV at its first move: its connection drops before the kernel tells of
        # its exit, and it is a crash all the same.
        wild = bot("netwild", "kalaha", f"{PY} {ROOT}/tests/hosting/connect_misbehave.py crash {tmp_path}", talk="connect")
        steady = bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}")
        # Seat B: the steady bot makes the first move (a game left before any move is aborted).
        result = await daemon.games.play("kalaha", [steady, wild])
        assert result.played and result.scores == (1.0, 0.0), result
        assert result.faults[1] is not None and result.faults[1].fault is Fault.CRASH, result
        assert "SIGSEGV" in result.faults[1].text() and result.faults[0] is None
        assert wait_gone(programs_with(str(tmp_path))) == []
    finally:
        await daemon.close()


@pytest_twisted.ensureDeferred
async def test_a_bot_cannot_connect_where_the_game_has_no_port(tmp_path):
    hub = LiveHub(reactor)
    kalaha = KalahaService(KalahaConfig(board=False), Limits(), reactor, hub=hub)
    games = HostedGames({"kalaha": kalaha}, hub, reactor, Isolation.detect("none"), str(tmp_path))
    connecting = bot("netbot", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 3", talk="connect")
    try:
        await games.play("kalaha", [connecting, connecting])
    except ValueError as e:
        assert "needs a TCP port of kalaha" in str(e)
    else:
        raise AssertionError("a connect bot was started without a port to connect to")
    assert not kalaha.table_waiting(kalaha.hosted_table("x"))
