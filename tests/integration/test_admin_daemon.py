"""The SSH admin console of a real daemon (docs/admin.md), over real SSH on loopback with keys
made here: the document's example sessions replayed line for line, bans refused on reconnect and
after a restart, a wrong key refused and logged, the console's prompt and the manhole in a
terminal, ``gamed admin`` end to end, and start-up refusing a console without usable keys."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest
import pytest_twisted
from twisted.conch.ssh.keys import FingerprintFormats, Key
from twisted.internet import endpoints, reactor

from gamed.admin.client import ClientError
from tests.integration.adminsupport import Console, Terminal, make_key, poll
from tests.web.client import get_json
from tests.integration.support import LineClient, add_accounts, connect, gamed_args, run, take_seats

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "admin.md"
_BLOCK = re.compile(r"^### (?P<title>.+?)$(?:(?!^### ).)*?^```console-session\n(?P<body>.*?)^```", re.M | re.S)
_CLIENT = re.compile(r"(?P<client>[A-Z])(?P<kind>[<>:]) ?(?P<text>.*)\Z")


def sessions() -> dict[str, list[str]]:
    return {m["title"]: m["body"].splitlines() for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def pattern(expected: str) -> re.Pattern:
    """An expected line: ``<word>`` placeholders stand for anything, runs of blanks for any."""
    parts = re.split(r"(<[a-z]+>)", expected.strip())
    body = "".join(".+?" if re.fullmatch(r"<[a-z]+>", p) else re.escape(p) for p in parts)
    return re.compile(re.sub(r"(\\ )+", r"\\s+", body) + r"\Z")


async def next_matching(client: LineClient, expected: str) -> str:
    want = pattern(expected)
    while True:
        line = await client.next_line(timeout=15)
        if want.match(line):
            return line


async def replay(console: Console, daemon, lines: list[str], tokens: dict[str, str] | None = None,
                 clients: dict[str, LineClient] | None = None) -> dict[str, LineClient]:
    """Run (part of) a document session: commands over SSH, Kalaha clients on the daemon's
    port (``clients``: those of an earlier part); returns the clients."""
    clients = {} if clients is None else clients

    async def client(name: str) -> LineClient:
        if name not in clients:
            clients[name] = await connect(daemon.port)
        return clients[name]

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("gamed> "):
            command = line[len("gamed> "):]
            expected = []
            while i < len(lines) and not lines[i].startswith("gamed") and not _CLIENT.match(lines[i]):
                expected.append(lines[i])
                i += 1
            status, text = await console.run(daemon, command)
            got = text.splitlines()
            assert len(got) == len(expected), (command, got, expected)
            for have, want in zip(got, expected):
                assert pattern(want).match(have), (command, have, want)
            assert (status != 0) == bool(expected and expected[0].startswith("error:")), (command, status, text)
            continue
        if line == "gamed: exits 0":
            await poll(lambda: daemon.exited, "the daemon to exit")
            assert daemon.exit_code == 0, daemon.text
            continue
        step = _CLIENT.match(line)
        assert step, f"cannot read session line {line!r}"
        c = await client(step["client"])
        if step["kind"] == ">":
            text = step["text"]
            for name, token in (tokens or {}).items():
                text = text.replace("<token>", token) if name in text else text
            c.send(text)
        elif step["kind"] == "<":
            await next_matching(c, step["text"])
        elif step["text"] == "closed":
            await c.wait_closed(15)
        else:
            assert step["text"] == "connects", line
    return clients


def test_the_document_has_its_sessions():
    assert list(sessions()) == ["A look around, a message and a kick", "Bans", "Draining"]


@pytest_twisted.ensureDeferred
async def test_session_a_look_around_a_message_and_a_kick(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args())
    await replay(console, daemon, sessions()["A look around, a message and a kick"])
    assert "admin: kicked connection 2 (kalaha 127.0.0.1:" in daemon.text


@pytest_twisted.ensureDeferred
async def test_session_bans(start_daemon, tmp_path):
    console = Console(tmp_path)
    tokens = await add_accounts(console.database, ["mallory"])
    daemon = await start_daemon(*console.args())
    await replay(console, daemon, sessions()["Bans"], tokens)


@pytest_twisted.ensureDeferred
async def test_session_draining_lets_the_game_finish_refuses_newcomers_and_exits_0(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args(), web="tcp:0:interface=127.0.0.1")
    lines = sessions()["Draining"]
    cut = lines.index("A> RESIGN")
    clients = await replay(console, daemon, lines[:cut])
    # Not ready while draining (a load balancer stops sending players) ...
    code, body = await get_json(f"http://127.0.0.1:{daemon.ports['web']}/readyz")
    assert code == 503 and body["checks"]["ports"].startswith("draining"), body
    # ... while the game in play goes on to its end; then the daemon exits with status 0.
    assert not daemon.exited
    await replay(console, daemon, lines[cut:], clients=clients)
    assert "drained: no game is in play; stopping" in daemon.text


async def connect_from(source: str, port: int) -> LineClient:
    """A Kalaha client whose socket is bound to the address ``source`` (127.0.0.2: another client)."""
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port, timeout=10, bindAddress=(source, 0))
    return await endpoints.connectProtocol(endpoint, LineClient())


@pytest_twisted.ensureDeferred
async def test_a_banned_address_is_refused_on_reconnect_and_after_a_restart(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args())
    other = await connect_from("127.0.0.2", daemon.port)
    await other.expect("HELLO")
    mine = await connect(daemon.port)
    await mine.expect("HELLO")
    lines = await console.ok(daemon, "connections")
    assert any(" 127.0.0.2:" in line for line in lines), lines

    lines = await console.ok(daemon, "ban address 127.0.0.2 flooding")
    assert lines[0].startswith("banned address 127.0.0.2 (flooding); closed connections "), lines
    await next_matching(other, "BYE kicked by the operator: banned: flooding")
    await other.wait_closed()
    again = await connect_from("127.0.0.2", daemon.port)
    assert await again.next_line() == "ERROR 503 your address is banned from this server: flooding"
    await again.wait_closed()
    assert "refused connection from 127.0.0.2: your address is banned from this server: flooding" in daemon.text
    mine.send("PING")
    await mine.expect("PONG")  # 127.0.0.1 plays on

    assert await daemon.stop()
    daemon = await start_daemon(*console.args())
    assert "bans in force: 1 (address 127.0.0.2)" in daemon.text
    after = await connect_from("127.0.0.2", daemon.port)
    assert await after.next_line() == "ERROR 503 your address is banned from this server: flooding"
    await after.wait_closed()
    assert await console.ok(daemon, "unban address 127.0.0.2") == ["unbanned address 127.0.0.2"]
    back = await connect_from("127.0.0.2", daemon.port)
    assert (await back.next_line()).startswith("HELLO ")


@pytest_twisted.ensureDeferred
async def test_a_banned_account_is_refused_at_login_and_its_connection_closed(start_daemon, tmp_path):
    console = Console(tmp_path)
    tokens = await add_accounts(console.database, ["bob"])
    daemon = await start_daemon(*console.args())
    bob = await connect(daemon.port)
    bob.send(f"LOGIN bob {tokens['bob']}")
    await bob.expect_prefix("OK LOGIN bob")
    assert any(re.match(r"bob\s+person\s+1\s+-", line) for line in await console.ok(daemon, "players"))
    lines = await console.ok(daemon, "ban account BOB")
    assert lines[0].startswith("banned account bob; closed connections "), lines
    await bob.wait_closed()
    again = await connect(daemon.port)
    again.send(f"LOGIN bob {tokens['bob']}")
    assert await again.expect("ERROR") == "ERROR 436 this account is banned from this server"
    assert "login as bob refused: the account is banned" in daemon.text


@pytest_twisted.ensureDeferred
async def test_without_records_there_are_no_bans_and_the_console_says_so(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args(records=False))
    status, text = await console.run(daemon, "ban address 10.0.0.0/8")
    assert (status, text) == (1, "error: bans are kept in the records database, and this daemon has none ([records] database)\n")
    status, text = await console.run(daemon, "tables")
    assert status == 1 and text.startswith("error: this daemon keeps no live tables")


@pytest_twisted.ensureDeferred
async def test_a_wrong_key_is_refused_and_logged_with_its_fingerprint(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args())
    with pytest.raises(ClientError, match="the key was refused"):
        await console.run(daemon, "games", key=console.stranger)
    shown = console.stranger.public().fingerprint(FingerprintFormats.SHA256_BASE64)
    await poll(lambda: f"admin console: refused key SHA256:{shown} for user admin from 127.0.0.1:" in daemon.text,
               "the refusal in the log")
    with pytest.raises(ClientError, match="the key was refused"):
        await console.run(daemon, "games", user="root")  # the right key, a user that is none of the console's
    assert (await console.run(daemon, "games"))[0] == 0


@pytest_twisted.ensureDeferred
async def test_the_console_prompt_and_the_manhole_in_a_terminal(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args())
    host = Key.fromFile(str(console.host_key)).public()
    term = await Terminal("admin", console.key, host).open(daemon.ports["admin"])
    await term.shows(b"gamed> ")
    term.type("games\r")
    await term.shows(b"kalaha  0            0")
    term.type("kick 5\r")
    await term.shows(b"error: no connection 5")
    term.type("quit\r")
    await term.closed

    manhole = await Terminal("manhole", console.key, host).open(daemon.ports["admin"])
    await manhole.shows(b">>> ")
    manhole.type("1+1\r")
    await manhole.shows(b"\r\n2\r\n")
    manhole.type("len(services)\r")
    await manhole.shows(b"\r\n1\r\n")


@pytest_twisted.ensureDeferred
async def test_gamed_admin_runs_a_command_and_exits_with_its_status(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args())
    client = await connect(daemon.port)
    await client.expect("HELLO")
    port = daemon.ports["admin"]
    known = tmp_path / "known_hosts"
    known.write_bytes(f"[127.0.0.1]:{port} ".encode() + Key.fromFile(str(console.host_key)).public().toString("openssh") + b"\n")
    cli = [sys.executable, "-m", "gamed.cli", "admin", "--port", str(port), "--key", str(console.key_file)]

    code, out = await run([*cli, "--known-hosts", str(known), "connections"], executable=None)
    assert code == 0 and re.search(r"^1\s+kalaha\s+kalaha:\d+\s+127\.0\.0\.1:\d+\s+guest1\s+-", out, re.M), out
    code, out = await run([*cli, "--known-hosts", str(known), "kick", "99"], executable=None)
    assert (code, out) == (1, "error: no connection 99\n")
    code, out = await run([*cli, "--known-hosts", str(known), "frob"], executable=None)
    assert (code, out) == (2, "error: unknown command frob; type help\n")

    conf = tmp_path / "gamed.conf"  # --config: the host key is the daemon's own file's public half
    conf.write_text(f'[admin]\nlisten = ["tcp:0:interface=127.0.0.1"]\nauthorized_keys = "{console.authorized_keys}"\n'
                    f'host_key = "{console.host_key}"\n')
    code, out = await run([*cli, "--config", str(conf), "broadcast", "hello", "there"], executable=None)
    assert (code, out) == (0, "sent to 1 connections, 1 kalaha\n")
    assert await client.expect_prefix("INFO operator") == "INFO operator: hello there"

    stranger = tmp_path / "stranger_host"  # another host key: refused, never trusted on first use
    known.write_bytes(f"[127.0.0.1]:{port} ".encode() + make_key(stranger).public().toString("openssh") + b"\n")
    code, out = await run([*cli, "--known-hosts", str(known), "games"], executable=None)
    assert code == 255 and "host key" in out and "is not the one in" in out and "Traceback" not in out, out


@pytest_twisted.ensureDeferred
async def test_start_up_refuses_a_console_without_usable_keys(tmp_path):
    missing = tmp_path / "no_such_keys"
    code, out = await run(gamed_args("--set", "admin.listen=tcp:0:interface=127.0.0.1", "--set",
                                     f"admin.authorized_keys={missing}", "--set", f"admin.host_key={tmp_path / 'hk'}"))
    assert code == 1 and f"gamed: cannot start: admin.authorized_keys {missing}: cannot be read: No such file or directory" in out, out
    assert "Traceback" not in out
    code, out = await run(gamed_args("--set", "admin.listen=tcp:0:interface=127.0.0.1"))
    assert code != 0 and "admin.listen needs admin.authorized_keys" in out and "Traceback" not in out, out
    empty = tmp_path / "empty_keys"
    empty.write_text("# nobody yet\n")
    code, out = await run(gamed_args("--set", "admin.listen=tcp:0:interface=127.0.0.1", "--set",
                                     f"admin.authorized_keys={empty}", "--set", f"admin.host_key={tmp_path / 'hk'}"))
    assert code == 1 and "holds no public key" in out and "Traceback" not in out, out


@pytest_twisted.ensureDeferred
async def test_an_idle_console_connection_is_closed(start_daemon, tmp_path):
    console = Console(tmp_path)
    daemon = await start_daemon(*console.args(), "--idle-timeout", "1")
    term = await Terminal("admin", console.key, Key.fromFile(str(console.host_key)).public()).open(daemon.ports["admin"])
    await term.shows(b"gamed> ")
    term.closed.addTimeout(15, reactor)
    await term.closed
    await poll(lambda: "s idle" in daemon.text and "admin console: 127.0.0.1:" in daemon.text, "the idle line")


@pytest_twisted.ensureDeferred
async def test_one_registry_for_every_game_and_a_broadcast_says_what_it_skipped(start_daemon, tmp_path):
    console = Console(tmp_path)
    loop = "tcp:0:interface=127.0.0.1"
    daemon = await start_daemon(*console.args(), connect4=loop, fight=loop)
    kalaha = await connect(daemon.port)
    await kalaha.expect("HELLO")
    four = await connect(daemon.ports["connect4"])
    await four.expect("HELLO")
    fight = await connect(daemon.ports["fight"])
    await fight.next_line()  # its greeting
    lines = await console.ok(daemon, "connections")
    assert [line.split()[:2] for line in lines[1:]] == [["1", "kalaha"], ["2", "connect4"], ["3", "fight"]], lines
    assert [line.split()[0] for line in await console.ok(daemon, "connections connect4")] == ["ID", "2"]
    assert await console.ok(daemon, "broadcast maintenance at noon") == [
        "sent to 2 connections, 1 kalaha, 1 connect4; skipped 1 fight (no message line in their protocol)"]
    assert await kalaha.expect_prefix("INFO operator") == "INFO operator: maintenance at noon"
    assert await four.expect_prefix("INFO operator") == "INFO operator: maintenance at noon"
    assert (await console.ok(daemon, "kick 2"))[0].startswith("kicked 2: connect4 127.0.0.1:")
    assert await four.expect("BYE") == "BYE kicked by the operator"
    await four.wait_closed()
    assert (await console.ok(daemon, "kick 3"))[0].startswith("kicked 3: fight 127.0.0.1:")
    await fight.wait_closed()
