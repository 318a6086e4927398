"""Event streams without sockets: a real twisted.web channel on a StringTransport and task.Clock —
keep-alive comments, a slow viewer dropped once too much waits for it, a clean end, the viewer limit."""

from __future__ import annotations

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs

from gamed.config import Limits, WebConfig
from gamed.observers import LiveHub
from gamed.records import Seat
from gamed.web.service import WebService

SEATS = [Seat(0, "alice", rated=True), Seat(1, "bob", rated=True)]


def setup(**config):
    clock = task.Clock()
    hub = LiveHub(clock)
    web = WebService(WebConfig(**config), Limits(), hub, clock)
    web.startService()
    return clock, hub, web


def open_stream(web, path):
    channel = web.site().buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", 40000))
    channel.makeConnection(transport)
    channel.dataReceived(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    return channel, transport


def test_headers_snapshot_and_keepalive_comments():
    clock, hub, web = setup(keepalive=15.0)
    table = hub.open("kalaha", SEATS, {}, {"to_move": 0})
    channel, transport = open_stream(web, f"/api/games/{table.id}/events")
    out = transport.value()
    head = out.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 200") and b"content-type: text/event-stream" in head
    assert b"event: snapshot\ndata: {" in out
    clock.pump([5.0, 5.0, 5.0])
    assert transport.value().count(b": keepalive\n\n") == 1
    clock.pump([15.0])
    assert transport.value().count(b": keepalive\n\n") == 2
    table.finish((1.0, 0.0), "end")
    assert b"event: end\ndata: " in transport.value()
    assert transport.value().endswith(b"0\r\n\r\n")  # the chunked response is complete: a clean close
    assert not web.streams.streams


def test_a_slow_viewer_is_dropped_and_logged_others_go_on():
    clock, hub, web = setup(viewer_buffer=4096)
    table = hub.open("kalaha", SEATS, {}, {"to_move": 0})
    slow_channel, slow = open_stream(web, f"/api/games/{table.id}/events")
    fast_channel, fast = open_stream(web, f"/api/games/{table.id}/events")
    assert table.summary()["spectators"] == 2
    slow.producer.pauseProducing()  # what the transport does when its buffer is full
    big = {"pad": "x" * 1000}
    with capturedLogs() as events:
        for n in range(3):
            table.moved(0, f"A{n}", big, 1)
        assert not slow.disconnecting and table.summary()["spectators"] == 2  # held, within the limit
        slow.producer.resumeProducing()  # it caught up: what was held is written
        assert slow.value().count(b"event: move") == 3
        slow.producer.pauseProducing()
        for n in range(3, 10):
            table.moved(0, f"A{n}", big, 1)
    assert slow.disconnecting  # aborted
    assert any("dropped" in e.get("log_format", "") for e in events)
    assert table.summary()["spectators"] == 1
    assert fast.value().count(b"event: move") == 10


def test_the_viewer_limit_answers_503():
    clock, hub, web = setup(max_viewers=1)
    table = hub.open("kalaha", SEATS, {}, {"to_move": 0})
    open_stream(web, f"/api/games/{table.id}/events")
    channel, transport = open_stream(web, "/api/events")
    assert transport.value().startswith(b"HTTP/1.1 503") and b"too many viewers (limit 1)" in transport.value()


def test_stopping_the_service_ends_every_stream():
    clock, hub, web = setup()
    channel, transport = open_stream(web, "/api/events")
    assert b"event: games" in transport.value()
    web.stopService()
    assert transport.value().endswith(b"0\r\n\r\n") and not hub.list_viewers
