"""gamed.proxy in memory: a connection is built for the address its PROXY header names, only once
the header has come; no header in time, a bad one or none at all closes it; at most MAX_PENDING
wait for theirs."""

from twisted.internet.address import IPv4Address
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from gamed import proxy


class Echo(Protocol):
    def connectionMade(self):  # noqa: N802
        self.factory.built.append(self.transport.getPeer())
        self.transport.write(b"HELLO\r\n")

    def dataReceived(self, data):  # noqa: N802
        self.transport.write(data)


def wrapped():
    inner = Factory.forProtocol(Echo)
    inner.built = []
    clock = Clock()
    return proxy.ProxyHeaderFactory(inner, clock), inner, clock


def connection(factory):
    conn = factory.buildProtocol(IPv4Address("TCP", "10.0.0.1", 9999))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.1", 9999))
    conn.makeConnection(transport)
    return conn, transport


def test_the_connection_is_built_for_the_headers_address_after_the_header():
    factory, inner, clock = wrapped()
    conn, transport = connection(factory)
    conn.dataReceived(b"PROXY TCP4 192.0.2.7 10.0.0.2 40000 4600")
    assert inner.built == [] and transport.value() == b"", "nothing before the whole header"
    conn.dataReceived(b"\r\nPING\r\n")
    assert [(a.host, a.port) for a in inner.built] == [("192.0.2.7", 40000)]
    assert transport.value() == b"HELLO\r\nPING\r\n", "the bytes after the header reach the protocol"
    assert factory.pending == 0
    clock.advance(proxy.HEADER_TIME + 1)
    assert not transport.disconnecting, "the header timer is gone once it came"


def test_no_header_in_time_a_bad_header_or_plain_bytes_close_the_connection():
    factory, inner, clock = wrapped()
    slow, slow_t = connection(factory)
    clock.advance(proxy.HEADER_TIME)
    assert slow_t.disconnecting
    for data in (b"HELP\r\n", b"PROXY TCP4 not-an-address\r\n", b"PROXY " + b"x" * 200):
        conn, transport = connection(factory)
        conn.dataReceived(data)
        assert transport.disconnecting and transport.value() == b"", data
    assert inner.built == []
    for conn in list(factory.protocols):
        conn.connectionLost(None)
    assert factory.pending == 0


def test_at_most_max_pending_connections_wait_for_their_header(monkeypatch):
    monkeypatch.setattr(proxy, "MAX_PENDING", 2)
    factory, inner, clock = wrapped()
    a, _ = connection(factory)
    b, _ = connection(factory)
    assert factory.buildProtocol(IPv4Address("TCP", "10.0.0.1", 1)) is None
    a.dataReceived(b"PROXY TCP4 192.0.2.1 10.0.0.2 1 2\r\n")
    assert factory.buildProtocol(IPv4Address("TCP", "10.0.0.1", 1)) is not None, "a place is free again"
