"""The daemon's listening ports: their addresses once they listen, the ready line and reading it back."""

from twisted.internet import defer
from twisted.internet.address import IPv4Address, IPv6Address, UNIXAddress
from twisted.internet.interfaces import IStreamServerEndpoint
from zope.interface import implementer
from zope.interface.verify import verifyObject

from gamed.ports import ListeningPorts, parse_ready_line


class FakePort:
    def __init__(self, address):
        self.address = address

    def getHost(self):  # noqa: N802
        return self.address


@implementer(IStreamServerEndpoint)
class FakeEndpoint:
    """Listens when told to (``bind``), as a real endpoint's Deferred fires later."""

    def __init__(self, address):
        self.address = address
        self.d = defer.Deferred()

    def listen(self, factory):
        return self.d

    def bind(self):
        self.d.callback(FakePort(self.address))


def test_the_ready_line_waits_for_every_port_and_shows_the_bound_addresses():
    ports = ListeningPorts()
    endpoints = [
        FakeEndpoint(IPv4Address("TCP", "127.0.0.1", 41234)),
        FakeEndpoint(IPv6Address("TCP", "::1", 41235)),
        FakeEndpoint(IPv4Address("TCP", "0.0.0.0", 8443)),
        FakeEndpoint(UNIXAddress(b"/run/gamed/kalaha.sock")),
    ]
    watched = [
        ports.watch("kalaha", "tcp:0:interface=127.0.0.1", endpoints[0]),
        ports.watch("connect4", "tcp6:0:interface=\\:\\:1", endpoints[1]),
        ports.watch("web", "ssl:8443:privateKey=key.pem", endpoints[2]),
        ports.watch("kalaha", "unix:/run/gamed/kalaha.sock", endpoints[3]),
    ]
    assert all(verifyObject(IStreamServerEndpoint, e) for e in watched)
    ready = []
    ports.ready().addCallback(ready.append)
    for endpoint, e in zip(watched, endpoints):
        assert not ready
        endpoint.listen(None)
        e.bind()
    assert ready == [ports]
    line = ports.ready_line()
    assert line == (
        "gamed ready: kalaha tcp:127.0.0.1:41234, connect four tcp6:[::1]:41235, web site ssl:8443, "
        "kalaha unix:/run/gamed/kalaha.sock"
    )
    assert parse_ready_line("2026-12-01T10:00:00+0000 [gamed.tap#info] " + line) == {
        "kalaha": [("127.0.0.1", 41234)],
        "connect4": [("::1", 41235)],
        "web": [("", 8443)],
    }
    web = ports.as_json()[2]
    assert web == {"serves": "web", "name": "web site", "address": "ssl:8443", "host": "0.0.0.0", "port": 8443, "tls": True}


def test_a_ready_line_in_a_json_log_line_is_read_too():
    line = '{"line": "gamed ready: virtual fight tcp:127.0.0.1:4500, virtual fight GUI tcp:127.0.0.1:4550", "log_level": "info"}'
    assert parse_ready_line(line) == {"fight": [("127.0.0.1", 4500)], "fight-gui": [("127.0.0.1", 4550)]}
    assert parse_ready_line("kalaha starting on 4600") is None


def test_without_ports_the_daemon_is_ready_at_once():
    ports = ListeningPorts()
    ready = []
    ports.ready().addCallback(ready.append)
    assert ready and ports.ready_line() == "gamed ready: no listening ports"
