"""The gamed-combat terminal client (gamed.combat.client): messages in words, board drawing, move
parsing and setups in memory; then the real program, driven by piped stdin with --random-setup,
hosting a Default game against examples/combat/random_bot.py on a real daemon over loopback."""

from __future__ import annotations

import random
import re
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor

from gamed.combat import client as cli
from gamed.combat.client import CombatClient, draw_board, parse_move
from gamed.combat.maps import shipped_maps
from gamed.combat.wire import (
    U_EMPTY,
    ClientParser,
    HostOptions,
    MsgAttack,
    MsgGameover,
    MsgMove,
    MsgMoveError,
    MsgOptions,
    MsgPlayers,
    MsgSeat,
    MsgSetup,
    MsgStart,
    MsgSync,
    PlayerSeat,
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    encode,
    read_setup,
)

DEFAULT = shipped_maps()["Default"]
SMALL = shipped_maps()["Small"]


def started(seat: int = 0, auto: str | None = "random") -> CombatClient:
    c = CombatClient(DEFAULT, auto, random.Random(3))
    for m in (MsgSeat(seat, 2), MsgOptions(DEFAULT), ReqSetup(), MsgStart()):
        c.receive(m)
    c.take()
    return c


def test_seat_players_and_host_options_in_words():
    c = CombatClient(DEFAULT)
    assert "seat 0 of 2" in c.receive(MsgSeat(0, 2))
    text = c.receive(MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.OPEN))))
    assert "alice" in text and "open" in text
    text = c.receive(ReqOptions())
    assert "host" in text and "Default" in text
    assert c.take() == [HostOptions.of(DEFAULT)]
    text = c.receive(MsgOptions(shipped_maps()["Plenty_of_options"]))
    assert "Plenty_of_options" in text and "super_scout" in text and "1 marshal" in text


def test_setup_random_default_and_typed_are_valid_setups():
    for auto in ("random", "default"):
        c = CombatClient(DEFAULT, auto, random.Random(1))
        c.receive(MsgSeat(1, 2))
        c.receive(MsgOptions(DEFAULT))
        assert "Setup sent" in c.receive(ReqSetup())
        (setup,) = c.take()
        assert isinstance(setup, MsgSetup)
        read_setup(DEFAULT, 1, setup.data)  # raises if invalid
    c = CombatClient(SMALL, None)
    c.receive(MsgSeat(0, 2))
    c.receive(MsgOptions(SMALL))
    assert "Type 6 tokens" in c.receive(ReqSetup())
    assert c.ready
    assert "3/6" in c.command("F F s")
    assert "Invalid setup" in c.command("1 1 9")
    assert c.take() == []
    c.command("F s 1")
    assert "Setup sent" in c.command("1 1 F")
    (setup,) = c.take()
    read_setup(SMALL, 0, setup.data)
    assert not c.setup_wanted


def test_move_parsing():
    assert parse_move("0 3 0 4", DEFAULT) == (30, 40)
    assert parse_move("A3 A4", DEFAULT) == (30, 40)
    assert parse_move("j9 j8", DEFAULT) == (99, 89)
    assert parse_move("10 3 0 4", DEFAULT) is None
    assert parse_move("0 3 0", DEFAULT) is None
    assert parse_move("hello", DEFAULT) is None


def test_board_drawing():
    units = [U_EMPTY] * 100
    units[0] = 0x10  # own flag
    units[1] = 0x1B  # own marshal
    units[2] = 0x13  # own scout
    units[99] = 0x2C  # unknown enemy
    units[98] = 0x27  # enemy captain: still drawn as an enemy
    text = draw_board(DEFAULT, units, 0)
    lines = text.splitlines()
    assert lines[0].split() == [str(x) for x in range(10)]
    assert lines[1].split() == list("ABCDEFGHIJ")
    assert lines[2].split() == ["0", "F", "1", "9"] + ["."] * 7
    assert lines[6].split() == ["4", ".", ".", "~", "~", ".", ".", "~", "~", ".", "."]
    assert lines[11].split()[-2:] == ["#", "#"]
    small = draw_board(SMALL, [U_EMPTY] * 25, 0).splitlines()
    assert small[4] == "  2  . .   . ."  # the off-map centre is blank


def test_start_moves_attacks_errors_and_gameover():
    c = started(seat=0)
    assert c.my_turn and c.ready
    assert c.units[99] == 0x2C  # the enemy zone is unknown until a sync
    source = next(i for i in range(30, 40) if c.units[i] & 0x0F >= 2)
    x = source % 10
    assert "Sending move" in c.command(f"{x} 3 {x} 4")
    assert c.take() == [ReqMove(source, source + 10)]
    assert not c.ready  # waiting for the answer
    assert "not open" in c.receive(MsgMoveError(-5, 0)) and c.ready
    c.command(f"{x} 3 {x} 4")
    c.take()
    text = c.receive(MsgMove(source, source + 10))
    assert "you moved" in text and "Waiting for seat 1" in text
    assert c.units[source] == U_EMPTY and not c.my_turn
    assert "It is seat 1's turn" in c.command("0 3 0 4")
    c.receive(MsgMove(60, 50))
    assert c.my_turn
    mine = c.units[source + 10]
    text = c.receive(MsgAttack(source + 10, -(mine & 0x0F), 50, 7))
    assert "attacked" in text and "captain" in text and "the attacker wins" in text
    assert c.units[50] == mine and c.units[source + 10] == U_EMPTY
    text = c.receive(MsgAttack(61, 3, 51, -4))
    assert "the defender wins" in text and c.units[61] == U_EMPTY
    text = c.receive(MsgAttack(62, -3, 52, -3))
    assert "both units are removed" in text
    assert "wrong" not in c.receive(MsgMoveError(-3, 1)) and "not your turn" in c.receive(MsgMoveError(-3, 1))
    assert "sync" not in c.command("sync") and c.take() == [ReqSync()]
    text = c.receive(MsgGameover(1))
    assert "Game over" in text and "seat 1 won" in text and c.over and c.ready
    assert "you won" in started().receive(MsgGameover(0))
    assert "draw" in started().receive(MsgGameover(-1))


def test_sync_replaces_the_board_and_the_turn():
    c = started(seat=1)
    units = bytes([0x2B] + [U_EMPTY] * 99)
    text = c.receive(MsgSync(1, 3, units))
    assert "turn of you" in text and "Your move" in text
    assert c.units == list(units) and c.my_turn


def test_the_client_parses_what_the_server_encodes():
    parser = ClientParser()
    data = b"".join(encode(m) for m in (MsgSeat(0, 2), MsgOptions(DEFAULT), ReqSetup(), MsgStart()))
    c = CombatClient(DEFAULT, "default")
    text = "".join(c.receive(m) for m in parser.feed(data))
    assert "START" in text and [type(m) for m in c.take()] == [MsgSetup, ReqSync]


def test_error_meanings_cover_the_spec_codes():
    assert set(cli.ERRORS) == set(range(-14, 0))


# --- the real program against the real daemon and random_bot.py -----------------------------


class Child(protocol.ProcessProtocol):
    def __init__(self, stdin: bytes | None = None):
        self.stdin = stdin
        self.out = b""
        self.err = b""
        self.ended: defer.Deferred = defer.Deferred()

    def connectionMade(self):  # noqa: N802
        if self.stdin is not None:
            self.transport.write(self.stdin)
            self.transport.closeStdin()

    def outReceived(self, data):  # noqa: N802
        self.out += data

    def errReceived(self, data):  # noqa: N802
        self.err += data

    def processEnded(self, reason):  # noqa: N802
        self.ended.callback(reason.value.exitCode)

    def kill(self):
        try:
            self.transport.signalProcess("KILL")
        except Exception:
            pass


def _sleep(seconds: float) -> defer.Deferred:
    d = defer.Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d


@pytest.mark.integration
@pytest_twisted.ensureDeferred
async def test_client_hosts_and_plays_against_random_bot():
    from tests.integration.support import LOOPBACK, ROOT, Daemon, child_env, gamed_args, spawn, with_timeout

    daemon: Daemon = spawn(gamed_args("--combat", LOOPBACK, kalaha="none"), expect_ports=1)
    children: list[Child] = []
    try:
        await with_timeout(daemon.listening, 20, "the daemon to listen")
        port = daemon.ports["combat"]
        # Moves from row 3 to the open cells of row 4 (lakes at x = 2, 3, 6, 7): tried in turn.
        moves = "".join(f"{x} 3 {x} 4\n{x} 4 {x} 5\n" for x in (0, 1, 4, 5, 8, 9))
        stdin = ("help\nsync\n" + moves + "quit\n").encode()
        client = Child(stdin)
        children.append(client)
        args = [sys.executable, "-m", "gamed.combat.client", "--host", "127.0.0.1", "--port", str(port)]
        args += ["--random-setup", "--seed", "5"]
        reactor.spawnProcess(client, sys.executable, args, env=child_env(), path=str(ROOT))
        for _ in range(100):
            if b"seat 0" in client.out or client.ended.called:
                break
            await _sleep(0.1)
        assert b"You are seat 0" in client.out, (client.out, client.err)
        bot = Child()
        children.append(bot)
        bot_args = [sys.executable, str(ROOT / "examples/combat/random_bot.py"), "--host", "127.0.0.1"]
        bot_args += ["--port", str(port), "--seed", "2", "--timeout", "20"]
        reactor.spawnProcess(bot, sys.executable, bot_args, env=None)
        code = await with_timeout(client.ended, 60, "the client to finish")
        out = client.out.decode()
        details = f"client out:\n{out}\nclient err:\n{client.err.decode()[-2000:]}"
        assert code == 0, details
        assert "You are the host: sending map Default" in out, details
        assert "Options: map Default 10x10" in out, details
        assert "Setup sent" in out and "START" in out, details
        assert "you moved" in out or "you attacked" in out, details
        assert re.search(r"seat 1 \(\w+\) (moved|attacked)", out) or "Game over" in out, details
        assert " ~ ~ " in out and " # " in out, details  # the board was drawn
        assert "Traceback" not in out + client.err.decode() + daemon.text, details
    finally:
        for child in children:
            child.kill()
        await daemon.stop()
