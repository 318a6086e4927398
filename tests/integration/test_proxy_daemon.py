"""Game ports behind a real HAProxy (the Debian package, started here) with the PROXY protocol
(``--kalaha haproxy:tcp:...``, v1 and v2): the daemon sees each client's own address, so the
per-peer limit refuses a second connection of one client and admits another client; a
connection without a PROXY header is closed without a word."""

import shutil
import socket

import pytest
import pytest_twisted
from twisted.internet import endpoints, reactor

from tests.integration.support import LineClient, spawn, with_timeout

HAPROXY = shutil.which("haproxy")
pytestmark = pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (.ci/run installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def connect_from(source: str, port: int) -> LineClient:
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port, timeout=10, bindAddress=(source, 0))
    return await endpoints.connectProtocol(endpoint, LineClient())


@pytest_twisted.ensureDeferred
async def test_the_daemon_behind_haproxy_sees_each_clients_own_address(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text("[limits]\nmax_per_peer = 1\n")
    daemon = await start_daemon("--config", str(conf), kalaha="haproxy:tcp:0:interface=127.0.0.1")
    v1, v2 = free_port(), free_port()
    (tmp_path / "haproxy.cfg").write_text(f"""
global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend one
    bind 127.0.0.1:{v1}
    default_backend daemon_v1
frontend two
    bind 127.0.0.1:{v2}
    default_backend daemon_v2
backend daemon_v1
    server gamed 127.0.0.1:{daemon.port} send-proxy
backend daemon_v2
    server gamed 127.0.0.1:{daemon.port} send-proxy-v2
""")
    proxy = spawn(["-db", "-f", str(tmp_path / "haproxy.cfg")], executable=HAPROXY, expect_ports=0)
    proxy.listening.addErrback(lambda f: None)
    try:
        for port in (v1, v2):
            first = None
            for _ in range(100):  # until HAProxy listens
                try:
                    first = await connect_from("127.0.0.2", port)
                    break
                except Exception:
                    from twisted.internet import task

                    await task.deferLater(reactor, 0.05, lambda: None)
            assert first is not None, proxy.text
            assert (await with_timeout(first.next_line(), 10, "HELLO")).startswith("HELLO KALAHA/1")
            # the same client again: over its one connection (the proxy's own address would be
            # one peer for everybody, and the next client would be refused instead)
            again = await connect_from("127.0.0.2", port)
            assert (await with_timeout(again.next_line(), 10, "the refusal")).startswith("ERROR 503 ")
            other = await connect_from("127.0.0.3", port)
            assert (await with_timeout(other.next_line(), 10, "HELLO")).startswith("HELLO KALAHA/1")
            for c in (first, again, other):
                c.transport.loseConnection()
                await c.closed
        # straight to the daemon, without a header: closed, not a word
        bare = await connect_from("127.0.0.4", daemon.port)
        bare.send("HELP")
        await with_timeout(bare.closed, 10, "the bare connection to be closed")
        assert not bare.lines
    finally:
        proxy.signal("TERM")
        await proxy.ended


@pytest_twisted.ensureDeferred
async def test_the_web_site_behind_haproxy_logs_each_clients_own_address(start_daemon, tmp_path):
    from twisted.internet import task
    from twisted.web.client import Agent, readBody

    access = tmp_path / "access.log"
    conf = tmp_path / "gamed.conf"
    conf.write_text(f'[web]\naccess_log = "{access}"\n')
    daemon = await start_daemon("--config", str(conf), web="haproxy:tcp:0:interface=127.0.0.1")
    front = free_port()
    (tmp_path / "haproxy.cfg").write_text(f"""
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend web
    bind 127.0.0.1:{front}
    default_backend daemon
backend daemon
    server gamed 127.0.0.1:{daemon.ports['web']} send-proxy-v2
""")
    proxy = spawn(["-db", "-f", str(tmp_path / "haproxy.cfg")], executable=HAPROXY, expect_ports=0)
    proxy.listening.addErrback(lambda f: None)
    try:
        code = None
        for _ in range(100):  # until HAProxy listens
            try:
                response = await Agent(reactor, bindAddress=("127.0.0.5", 0)).request(
                    b"GET", f"http://127.0.0.1:{front}/healthz".encode())
                await readBody(response)
                code = response.code
                break
            except Exception:
                await task.deferLater(reactor, 0.05, lambda: None)
        assert code == 200, proxy.text
        for _ in range(100):
            if access.exists() and access.read_text():
                break
            await task.deferLater(reactor, 0.05, lambda: None)
        assert access.read_text().split()[0] == '"127.0.0.5"', access.read_text()
    finally:
        proxy.signal("TERM")
        await proxy.ended
