"""Starting the daemon for real: help, bad options, busy ports, TLS and systemd socket activation."""

import json
import os
import socket
import ssl as stdlib_ssl
import urllib.error
import urllib.request

import pytest_twisted
from twisted.internet import endpoints, reactor, ssl, threads

from gamed import tap
from tests.tlscerts import self_signed
from tests.integration.support import TWIST, TWISTD, LineClient, child_env, run, spawn, with_timeout


def every_option() -> list[str]:
    names = [p[0] for p in tap.Options.optParameters]
    names += [name[4:].replace("_", "-") for name in dir(tap.Options) if name.startswith("opt_") and name != "opt_help"]
    return sorted(set(names) - {"help", "version"}) + ["version"]


@pytest_twisted.ensureDeferred
async def test_twistd_and_twist_help_list_every_option():
    for executable, args in ((TWISTD, ["gamed", "--help"]), (TWIST, ["gamed", "--help"])):
        code, out = await run(args, executable=executable)
        assert code == 0, out
        for option in every_option():
            assert f"--{option}" in out, f"{executable} gamed --help does not list --{option}"


@pytest_twisted.ensureDeferred
async def test_bad_option_stops_start_up_with_a_clear_message():
    code, out = await run(["--nodaemon", "--pidfile=", "gamed", "--kalaha-strikes", "many"])
    assert code == 1
    assert "kalaha.strikes must be a whole number, not 'many'" in out
    assert "Traceback" not in out


@pytest_twisted.ensureDeferred
async def test_an_invalid_fight_map_stops_start_up_with_the_reason(tmp_path):
    path = tmp_path / "walled-in.map"
    path.write_text("00000.\n######\n.11111\n")
    code, out = await run(["--nodaemon", "--pidfile=", "gamed", "--fight-map", str(path)])
    assert code == 1
    assert f"fight.map: {path}: every floor square must be reachable; 6 are cut off, the first at 2,0" in out
    assert "Traceback" not in out


def busy_port() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


@pytest_twisted.ensureDeferred
async def test_busy_port_stops_twistd_and_twist_with_a_clear_message():
    s = busy_port()
    port = s.getsockname()[1]
    try:
        for executable, args in (
            (TWISTD, ["--nodaemon", "--pidfile=", "gamed", "--fight", "none", "--combat", "none", "--combat-text", "none", "--connect4", "none", "--web", "none", "--generic", "none", "--records", "none"]),
            (TWIST, ["gamed", "--fight", "none", "--combat", "none", "--combat-text", "none", "--connect4", "none", "--web", "none", "--generic", "none", "--records", "none"]),
        ):
            code, out = await run([*args, "--kalaha", f"tcp:{port}:interface=127.0.0.1"], executable=executable)
            assert code == 1, out
            assert f"gamed: cannot start: Couldn't listen on 127.0.0.1:{port}: [Errno 98] Address already in use." in out
            assert "Traceback" not in out
    finally:
        s.close()


@pytest_twisted.ensureDeferred
async def test_kalaha_over_tls(start_daemon, tmp_path):
    key, cert, cert_pem = self_signed(tmp_path)
    daemon = await start_daemon(kalaha=f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={cert}")
    options = ssl.optionsForClientTLS("localhost", trustRoot=ssl.Certificate.loadPEM(cert_pem))
    endpoint = endpoints.wrapClientTLS(options, endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", daemon.port))
    client = await endpoints.connectProtocol(endpoint, LineClient())
    assert (await client.next_line()).startswith("HELLO KALAHA/1 ")
    client.send("PING")
    assert await client.expect("PONG") == "PONG"


@pytest_twisted.ensureDeferred
async def test_systemd_socket_activation_by_name(tmp_path):
    s = busy_port()  # the socket systemd would have bound
    port = s.getsockname()[1]
    env = child_env(LISTEN_FDS="1", LISTEN_FDNAMES="kalaha")
    args = ["--nodaemon", "--pidfile=", "gamed", "--fight", "none", "--combat", "none", "--combat-text", "none", "--connect4", "none"]
    args += ["--web", "none", "--generic", "none", "--records", "none", "--kalaha", "systemd:domain=INET:name=kalaha"]
    # LISTEN_PID must be the daemon's own pid: let the shell set it and exec twistd in its place.
    daemon = spawn(
        ["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', TWISTD, *args],
        executable=None,
        env=env,
        child_fds={0: "w", 1: "r", 2: "r", 3: s.fileno()},
        expect_ports=0,
    )
    s.close()  # the daemon holds its own copy
    try:
        endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port)
        client = await with_timeout(endpoints.connectProtocol(endpoint, LineClient()), 10, "connect")
        assert (await client.next_line(timeout=20)).startswith("HELLO KALAHA/1 ")
    finally:
        assert await daemon.stop()
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_systemd_description_without_systemd_says_so():
    env = child_env()
    code, out = await run(["--nodaemon", "--pidfile=", "gamed", "--kalaha", "systemd:domain=INET:name=kalaha"], env=env)
    assert code == 1
    assert "no sockets were passed by systemd" in out


def test_every_option_has_a_config_setting_or_is_a_port():
    listen_options = set(tap._LISTEN)
    for option in every_option():
        if option in ("config", "set", "version") or option in listen_options:  # (--set: every setting by its name)
            continue
        assert option in tap._SETTINGS, f"--{option} has no config-file setting"
    assert os.path.exists("etc/gamed.conf.example")


@pytest_twisted.ensureDeferred
async def test_a_records_database_that_cannot_be_opened_stops_start_up(tmp_path):
    not_a_database = tmp_path / "text.sqlite"
    not_a_database.write_text("these are not the records you are looking for\n")
    under_a_file = tmp_path / "text.sqlite" / "x" / "y.sqlite"  # a directory that cannot be made, even by root
    missing = tmp_path / "nonexistent" / "dir"
    ports = ["--fight", "none", "--fight-gui", "none", "--combat", "none", "--combat-text", "none", "--connect4", "none", "--web", "none", "--generic", "none"]
    ports += ["--kalaha", "tcp:0:interface=127.0.0.1"]
    for executable, args in ((TWISTD, ["--nodaemon", "--pidfile=", "gamed", *ports]), (TWIST, ["gamed", *ports])):
        for database, why in (
            (not_a_database, "file is not a database"),
            (under_a_file, f"the directory {tmp_path / 'text.sqlite' / 'x'} does not exist"),
            (missing / "x.sqlite", f"the directory {missing} does not exist"),
        ):
            code, out = await run([*args, "--records", f"sqlite:{database}"], executable=executable)
            assert code == 1, out
            lines = [line for line in out.splitlines() if line.strip()]
            assert lines == [f"gamed: cannot start: cannot open the records database sqlite:{database}: {why}"], out
    assert not_a_database.read_text() == "these are not the records you are looking for\n"
    assert not (tmp_path / "nonexistent").exists(), "no directory is made for a database"


@pytest_twisted.ensureDeferred
async def test_the_web_site_over_tls(start_daemon, tmp_path):
    key, cert, cert_pem = self_signed(tmp_path)
    daemon = await start_daemon(web=f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={cert}")
    context = stdlib_ssl.create_default_context(cadata=cert_pem.decode())

    def fetch():
        with urllib.request.urlopen(f"https://localhost:{daemon.ports['web']}/api/games", context=context, timeout=10) as r:
            return r.status, json.loads(r.read())

    status, body = await threads.deferToThread(fetch)
    assert (status, body) == (200, {"games": []})

    def post():
        request = urllib.request.Request(f"https://localhost:{daemon.ports['web']}/api/games", data=b"x" * 1000, method="POST")
        try:
            urllib.request.urlopen(request, context=context, timeout=10)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
        raise AssertionError("a POST was accepted")

    # The refusal before the body reaches the client over TLS too (closed through TLS, not under it).
    assert await threads.deferToThread(post) == (405, {"error": "only GET and HEAD are allowed here"})
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_one_ready_line_names_every_port_with_its_bound_number(start_daemon):
    daemon = await start_daemon(kalaha="tcp:0:interface=127.0.0.1", connect4="tcp:0:interface=127.0.0.1", web="tcp:0:interface=127.0.0.1")
    ports = daemon.ports
    assert set(ports) == {"kalaha", "connect4", "web"} and all(p > 0 for p in ports.values())
    (ready,) = [line for line in daemon.text.splitlines() if "gamed ready: " in line]
    assert ready.endswith(
        f"gamed ready: kalaha tcp:127.0.0.1:{ports['kalaha']}, connect four tcp:127.0.0.1:{ports['connect4']}, "
        f"web site tcp:127.0.0.1:{ports['web']}"
    )
    for served, option in (("kalaha", "kalaha"), ("connect four", "connect4"), ("web site", "web")):
        assert f"] {served} starting on {ports[option]}\n" in daemon.text
    assert "ConnectionLimits" not in daemon.text, "no Twisted class names in the start-up lines"
    client = await endpoints.connectProtocol(endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", ports["kalaha"]), LineClient())
    assert (await client.next_line()).startswith("HELLO KALAHA/1 ")
    client.transport.loseConnection()


@pytest_twisted.ensureDeferred
async def test_a_malformed_time_control_stops_start_up_with_one_line_naming_the_setting(tmp_path):
    for text, message in (
        ('[kalaha]\nclock = "5m+"\n', "kalaha.clock: the increment is missing"),
        ('[fight]\nclock = "0+0"\n', "fight.clock: a bank of zero needs an increment"),
        ('[combat]\nclock = "25h"\n', "combat.clock: the move limit '25h' is longer than a day"),
        ('[connect4]\nclock = "-1s"\n', "connect4.clock: the move limit '-1s' is not a duration"),
    ):
        path = tmp_path / "bad.conf"
        path.write_text(text)
        code, out = await run(["--nodaemon", "--pidfile=", "gamed", "--config", str(path)])
        assert code == 1, out
        lines = [line for line in out.splitlines() if message in line]
        assert len(lines) == 1, out
        assert "Traceback" not in out
