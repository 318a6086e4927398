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
from gamed.combat import wire
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
    assert "you, seat 0, won" in started().receive(MsgGameover(0))
    assert "draw" in started().receive(MsgGameover(-1))


def test_sync_replaces_the_board_and_the_turn():
    c = started(seat=1)
    units = bytes([0x2B] + [U_EMPTY] * 99)
    text = c.receive(MsgSync(1, 3, units))
    assert "to move: you" in text and "Your move" in text
    assert c.units == list(units) and c.my_turn


def test_the_client_parses_what_the_server_encodes():
    parser = ClientParser()
    data = b"".join(encode(m) for m in (MsgSeat(0, 2), MsgOptions(DEFAULT), ReqSetup(), MsgStart()))
    c = CombatClient(DEFAULT, "default")
    text = "".join(c.receive(m) for m in parser.feed(data))
    assert "START" in text and [type(m) for m in c.take()] == [MsgSetup, ReqSync]


def test_error_meanings_cover_the_spec_codes():
    assert set(cli.ERRORS) == set(range(-14, 0))


def test_units_are_drawn_and_typed_by_classic_rank_with_a_legend():
    units = [U_EMPTY] * 100
    units[0], units[1], units[2], units[3] = 0x12, 0x1B, 0x13, 0x11  # spy, marshal, scout, bomb
    lines = draw_board(DEFAULT, units, 0).splitlines()
    assert lines[2].split()[:5] == ["0", "S", "1", "9", "B"]
    assert lines[-1].startswith("Units: 1 marshal, 2 general") and "9 scout, S spy, B bomb, F flag" in lines[-1]
    assert cli.unit_name(2) == "spy (S)" and cli.unit_name(-11) == "marshal (1)"
    c = CombatClient(SMALL, None)
    c.receive(MsgSeat(0, 2))
    c.receive(MsgOptions(SMALL))
    assert "army 1x3 Sx1 Fx2" in c.receive(ReqSetup()), "the army strongest first, in the same tokens"
    assert "Setup sent" in c.command("1 1 1 S F F")  # ``s`` works as well as ``S``
    read_setup(SMALL, 0, c.take()[0].data)
    c = CombatClient(SMALL, None)
    for m in (MsgSeat(0, 2), MsgOptions(SMALL), ReqSetup()):
        c.receive(m)
    assert c.command("1 1 1 X F F") == "Invalid setup: unknown token 'X' (units: FBS987654321, '.' empty). Type it again.\n"


def test_players_are_shown_by_seat_number_and_name():
    c = CombatClient(DEFAULT)
    c.receive(MsgSeat(1, 3))
    text = c.receive(
        MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.PLAYER, "bob"), PlayerSeat(SeatKind.OPEN)))
    )
    assert text == "Players: seat 0 (alice), seat 1 (bob, you), seat 2 open.\n"


def test_an_own_move_redraws_the_board():
    c = started(seat=0)
    c.receive(MsgSync(0, 3, bytes(c.units)))
    source = next(i for i in range(30, 40) if c.units[i] & 0x0F >= 2)
    c.command(f"{source % 10} 3 {source % 10} 4")
    text = c.receive(MsgMove(source, source + 10))
    assert text.startswith("you moved") and cli.LEGEND in text and text.endswith("Waiting for seat 1 to move.\n")
    assert text.splitlines()[7].split()[1 + source % 10] != "."  # row 4 shows the unit now


def test_a_move_from_a_cell_without_an_own_unit_is_not_sent():
    c = started(seat=0)
    assert c.command("0 4 0 5") == "There is none of your units on 0,4. Your move (x y x2 y2):\n"
    assert c.take() == [] and c.ready


def rejoined(seat: int, turn: int) -> tuple[CombatClient, str]:
    """A client coming back to a game in play: what the server sends a returning seat."""
    c = CombatClient(DEFAULT)
    players = MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.PLAYER, "bob")))
    units = bytes([0x10 | 3] + [U_EMPTY] * 59 + [0x2C] * 40)
    return c, c.receive_all([MsgSeat(seat, 2), players, MsgOptions(DEFAULT), MsgSync(turn, 3, units), MsgStart()])


def test_after_a_rejoin_the_seat_to_move_is_the_one_of_the_sync():
    c, text = rejoined(seat=1, turn=1)
    assert "first move" not in text and "START: you are back in the game. To move: you." in text
    assert c.my_turn and c.ready and text.endswith("Your move (x y x2 y2):\n")
    assert c.take() == []
    c, text = rejoined(seat=0, turn=1)
    assert "To move: seat 1 (bob)." in text and not c.my_turn
    assert c.units[60] == 0x2C and c.units[59] == U_EMPTY, "the board is the sync's"


def test_a_start_during_play_keeps_the_turn():
    c = started(seat=0)
    c.receive(MsgMove(30, 40))  # seat 0 moved: seat 1 to move
    text = c.receive(MsgStart())  # seat 1 dropped and came back
    assert text.startswith("A player came back; the game goes on. To move: seat 1.") and c.turn == 1


def named_client(seat: int = 0) -> CombatClient:
    c = started(seat)
    c.receive(MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.PLAYER, "bob"))))
    return c


def test_game_over_says_who_won_and_why():
    c = named_client(0)
    c.units[50], c.units[60] = 0x1B, 0x2C  # alice's marshal next to a hidden unit of bob's
    text = c.receive_all([MsgAttack(50, -11, 60, 0), MsgGameover(0), MsgSync(1, 3, bytes(c.units))])
    assert "Game over: you, seat 0 (alice), won by capturing the flag of seat 1 (bob).\n" in text
    assert "Your move" not in text and "Waiting for" not in text, "no turn after the last move"
    assert c.finished and "every unit shown" in text and "A unit marked * is another seat's." in text
    assert c.receive(MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.OPEN)))) == ""
    c = named_client(1)
    c.turn = 0
    c.units[50], c.units[60] = 0x1B, 0x20
    text = c.receive_all([MsgAttack(50, -11, 60, 0), MsgGameover(0)])
    assert "Game over: seat 0 (alice) won by capturing your flag." in text and not c.finished
    c = named_client(0)
    assert "won: seat 1 (bob) ran out of move time." in c.receive(MsgGameover(0))
    c = named_client(1)
    assert "seat 0 (alice) won: you ran out of move time." in c.receive(MsgGameover(0))
    c = named_client(0)
    c.receive(MsgPlayers((PlayerSeat(SeatKind.PLAYER, "alice"), PlayerSeat(SeatKind.OPEN))))
    assert "won: seat 1 left the game and did not come back in time." in c.receive(MsgGameover(0))
    c = named_client(1)
    c.turn = 0
    assert "seat 0 (alice) won: you have no movable unit left." in c.receive_all([MsgMove(30, 40), MsgGameover(0)])
    assert "nobody won (a draw): no seat has both" in named_client(0).receive(MsgGameover(-1))
    assert c.receive(MsgGameover(0)) == "", "the answer to a move after the end adds nothing"


def test_the_server_stream_follows_the_handshake_then_the_binary_protocol():
    binary = b"".join(encode(m) for m in (MsgSeat(0, 2), ReqOptions()))
    data = (
        b"COMBAT gamed: NAME <name>, TABLE <table> [<seats>], then PLAY; HELP for more\r\n"
        b"OK NAME ann\r\nOK TABLE duel\r\nOK PLAY: binary protocol follows\r\n" + binary
    )
    for cut in range(len(data) + 1):
        stream = cli.ServerStream(["NAME ann", "TABLE duel", "PLAY"])
        events = stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.end()
        assert events == [
            ("say", "NAME ann"),
            ("line", "OK NAME ann"),
            ("say", "TABLE duel"),
            ("line", "OK TABLE duel"),
            ("say", "PLAY"),
            ("message", MsgSeat(0, 2)),
            ("message", ReqOptions()),
        ], cut
    stream = cli.ServerStream(["NAME ann", "TABLE t 3", "PLAY"])
    stream.feed(b"COMBAT gamed\r\nOK NAME ann\r\nOK TABLE t\r\n")
    assert stream.feed(b"ERROR table t has 2 seats\r\n") == [("refused", "table t has 2 seats")]


def test_the_server_stream_tells_the_resume_token_and_a_resume_switches_to_binary():
    binary = encode(MsgSeat(1, 2))
    data = (
        b"COMBAT gamed\r\nOK NAME ann\r\nOK TOKEN: your resume token comes just before OK PLAY\r\n"
        b"TOKEN abcdefghijklmnopqrstuvwx\r\nOK PLAY: binary protocol follows\r\n" + binary
    )
    for cut in range(len(data) + 1):
        stream = cli.ServerStream(["NAME ann", "TOKEN", "PLAY"])
        events = stream.feed(data[:cut]) + stream.feed(data[cut:])
        assert events == [
            ("say", "NAME ann"),
            ("line", "OK NAME ann"),
            ("say", "TOKEN"),
            ("say", "PLAY"),
            ("token", "abcdefghijklmnopqrstuvwx"),
            ("message", MsgSeat(1, 2)),
        ], cut
    stream = cli.ServerStream(["RESUME abcdefghijklmnopqrstuvwx"])
    events = stream.feed(b"COMBAT gamed\r\nOK RESUME seat 1 (ann): binary protocol follows\r\n" + binary)
    assert events == [("say", "RESUME abcdefghijklmnopqrstuvwx"), ("message", MsgSeat(1, 2))]


def test_notice_lines_between_binary_messages_are_told_in_any_chunking():
    players = MsgPlayers([PlayerSeat(SeatKind.PLAYER, "ann"), PlayerSeat(SeatKind.OPEN)])
    data = encode(MsgSeat(0, 2)) + encode(players) + b"AWAY 1 bob 60\r\n" + encode(ReqSetup()) + b"BACK 1 bob\r\n" + encode(MsgStart())
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1, 7):
            stream = cli.ServerStream()
            events = stream.feed(data[:cut]) + stream.feed(data[cut:second]) + stream.feed(data[second:])
            assert events == [
                ("message", MsgSeat(0, 2)),
                ("message", players),
                ("notice", "AWAY 1 bob 60"),
                ("message", ReqSetup()),
                ("notice", "BACK 1 bob"),
                ("message", MsgStart()),
            ], (cut, second)
    client = cli.CombatClient(None)
    assert client.notice("AWAY 1 bob 60") == "seat 1 (bob) dropped out: its seat is kept 60 s for its return.\n"
    assert client.notice("BACK 1 bob") == "seat 1 (bob) is back.\n"


def test_a_closing_error_line_after_binary_messages_is_told_in_any_chunking():
    binary = b"".join(encode(m) for m in (MsgSeat(0, 2), ReqOptions(), ReqSetup()))
    data = binary + b"ERROR computer opponent fast left the table: the map is not the Default map\r\n"
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1):
            stream = cli.ServerStream()
            events = stream.feed(data[:cut]) + stream.feed(data[cut:second]) + stream.feed(data[second:]) + stream.end()
            assert events == [
                ("message", MsgSeat(0, 2)),
                ("message", ReqOptions()),
                ("message", ReqSetup()),
                ("closing", "computer opponent fast left the table: the map is not the Default map"),
            ], (cut, second)
    stream = cli.ServerStream()
    assert stream.feed(binary + b"ERROR cut short") == [("message", m) for m in (MsgSeat(0, 2), ReqOptions(), ReqSetup())]
    assert stream.end() == [("closing", "cut short")]
    assert cli.ServerStream().feed(b"\x00\x00\x00\x63")[0][0] == "fatal"


def test_options_choose_the_port_and_the_handshake_lines():
    args = cli.parse_args([])
    assert cli.handshake_lines(args) is None and args.port is None
    assert cli.handshake_lines(cli.parse_args(["--name", "ann", "--table", "duel", "--seats", "3"])) == [
        "NAME ann",
        "TOKEN",
        "NOTICES",
        "TABLE duel 3",
        "PLAY",
    ]
    assert cli.handshake_lines(cli.parse_args(["--computer", "fast"])) == ["TOKEN", "NOTICES", "COMPUTER fast"]
    assert cli.handshake_lines(cli.parse_args(["--list-computers"])) == ["COMPUTER", "QUIT"]
    token = "t" * 24
    assert cli.handshake_lines(cli.parse_args(["--name", "ann", "--token", token])) == [f"LOGIN ann {token}", "NOTICES", "PLAY"]
    assert cli.handshake_lines(cli.parse_args(["--resume", token])) == ["NOTICES", f"RESUME {token}"]
    against = cli.map_options_of(cli.parse_args(["--computer", "fast"]), print)
    assert against.name == "Default" and int(against.options) == 0x10, "the UCC rules by default"
    assert int(cli.map_options_of(cli.parse_args([]), print).options) == 0
    for bad in (
        ["--seats", "3"],
        ["--table", "a b"],
        ["--computer", "fast", "--table", "t"],
        ["--name", "x" * 40],
        ["--token", "t" * 24],
        ["--name", "ann", "--token", "short"],
        ["--resume", "t" * 24, "--name", "ann"],
        ["--resume", "not a token"],
    ):
        with pytest.raises(SystemExit):
            cli.parse_args(bad)


def test_every_option_has_a_help_text(capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--help"])
    out = capsys.readouterr().out
    for option in ("--host", "--port", "--timeout", "--name", "--token", "--resume", "--table", "--seats", "--computer", "--map", "--options", "--seed"):
        line = next(line for line in out.splitlines() if line.strip().startswith(option))
        assert len(line.split()) > 2, f"{option} has no help text"


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


@pytest.mark.integration
@pytest_twisted.ensureDeferred
async def test_client_plays_the_computer_on_the_handshake_port_and_exits_at_game_over(tmp_path):
    import json

    from tests.integration.support import LOOPBACK, ROOT, Daemon, child_env, gamed_args, spawn, with_timeout
    from tests.stratego.programs import compile_fast_ai

    fast = compile_fast_ai(tmp_path)
    conf = tmp_path / "gamed.conf"
    conf.write_text(f'[stratego.ai.fast]\ncommand = "{fast}"\n')
    records = tmp_path / "combat"
    args = gamed_args(
        "--config", str(conf), "--combat-text", LOOPBACK, "--combat-move-time", "3", "--combat-records", str(records),
        kalaha="none",
    )
    daemon: Daemon = spawn(args, expect_ports=1)
    children: list[Child] = []
    try:
        await with_timeout(daemon.listening, 20, "the daemon to listen")
        port = str(daemon.ports["combat-text"])
        client_args = [sys.executable, "-m", "gamed.combat.client", "--host", "127.0.0.1", "--port", port]
        # The UCC rules are the default against the computer; nothing is typed: ann runs out of time.
        client = Child()  # stdin stays open
        children.append(client)
        reactor.spawnProcess(client, sys.executable, client_args + ["--name", "ann", "--computer", "fast", "--random-setup"], env=child_env(), path=str(ROOT))
        code = await with_timeout(client.ended, 60, "the client to finish")
        out = client.out.decode()
        details = f"client out:\n{out}\nclient err:\n{client.err.decode()[-2000:]}"
        assert code == 0, details
        assert "Server: OK NAME ann" in out and "Players: seat 0 (ann, you), seat 1 (fast)." in out, details
        assert "options: super_scout" in out and "START: the game begins; first move: you." in out, details
        assert "Game over: seat 1 (fast) won: you ran out of move time.\n" in out, details
        assert "every unit shown" in out and out.rstrip().endswith("A unit marked * is another seat's."), details
        (result,) = [json.loads(line) for line in (records / "results.jsonl").read_text().splitlines()]
        assert (result["players"], result["winner"], result["reason"]) == (["ann", "fast"], 1, "timeout")

        refused = Child()
        children.append(refused)
        reactor.spawnProcess(refused, sys.executable, client_args + ["--computer", "fast", "--map", "Small", "--random-setup"], env=child_env(), path=str(ROOT))
        code = await with_timeout(refused.ended, 60, "the refused client to finish")
        out = refused.out.decode()
        assert code == 1, out
        assert "The server ended the game: computer opponent fast left the table: the map is not the Default map;" in out, out
        assert "Traceback" not in out + client.err.decode() + refused.err.decode() + daemon.text
    finally:
        for child in children:
            child.kill()
        await daemon.stop()


@pytest.mark.integration
@pytest_twisted.ensureDeferred
async def test_client_shows_its_resume_token_and_resume_takes_the_seat_back():
    from tests.integration.support import LOOPBACK, ROOT, Daemon, child_env, gamed_args, spawn, with_timeout
    from tests.integration.test_combat_seats import HandshakeClient, connect

    daemon: Daemon = spawn(
        gamed_args("--combat-text", LOOPBACK, "--combat-move-time", "0", "--combat-rejoin-grace", "60", kalaha="none"),
        expect_ports=1,
    )
    children: list[Child] = []
    try:
        await with_timeout(daemon.listening, 20, "the daemon to listen")
        port = daemon.ports["combat-text"]
        client_args = [sys.executable, "-m", "gamed.combat.client", "--host", "127.0.0.1", "--port", str(port)]
        ann = Child()  # stdin stays open: ann waits
        children.append(ann)
        reactor.spawnProcess(ann, sys.executable, client_args + ["--name", "ann", "--table", "duel", "--random-setup"], env=child_env(), path=str(ROOT))
        for _ in range(400):  # 20 s at most
            if b"Your resume token: " in ann.out and b"You are seat 0" in ann.out or ann.ended.called:
                break
            await _sleep(0.05)
        token = re.search(rb"Your resume token: (\S+)", ann.out)
        assert token, (ann.out, ann.err)
        token = token[1].decode()
        assert f"gamed-combat --resume {token}" in ann.out.decode()
        bob = await connect(port, HandshakeClient())
        await bob.line()
        for line in ("NAME bob", "TABLE duel", "PLAY"):
            bob.say(line)
        while not (await bob.line()).startswith("OK PLAY"):
            pass
        await bob.expect(wire.ReqSetup)
        bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, cli.random_setup(DEFAULT, 1, random.Random(1)))))
        await bob.expect(wire.MsgStart)
        ann.kill()  # ann's connection drops during play
        while (await bob.expect(wire.MsgPlayers)).seats[0].kind is not SeatKind.OPEN:
            pass  # the server has seen the drop: the seat is away
        back = Child()
        children.append(back)
        reactor.spawnProcess(back, sys.executable, client_args + ["--resume", token], env=child_env(), path=str(ROOT))
        players = await bob.expect(wire.MsgPlayers, seconds=30)
        assert players.seats[0].name == "ann", "back"
        await bob.expect(wire.MsgStart)
        bob.send(wire.ReqMove(60, 50))  # not bob's turn: refused to everyone, so ann's client hears it
        for _ in range(400):  # 20 s at most
            if b"seat 1 (bob)" in back.out:
                break
            await _sleep(0.05)
        out = back.out.decode()
        assert "You are seat 0 of 2" in out and "seat 1 (bob)" in out, (out, back.err)
        assert "Traceback" not in out + back.err.decode() + daemon.text
    finally:
        for child in children:
            child.kill()
        await daemon.stop()
