"""The web site against bad requests, in memory (a real twisted.web channel on a StringTransport and
task.Clock): no path or parameter gets a 500 or a traceback, numbers are ASCII digits only; security
headers and the cross-origin setting; other methods and large bodies refused before the body is read;
a request that trickles in gets a 408; the idle timeout is a setting that event streams outlive."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs, formatEvent
from twisted.python.failure import Failure

from gamed.config import Limits, WebConfig
from gamed.observers import LiveHub
from gamed.records import Seat
from gamed.web.api import parse_number
from gamed.web.service import WebService

PEER = IPv4Address("TCP", "127.0.0.1", 40000)
SEATS = [Seat(0, "alice", rated=True), Seat(1, "bob", rated=True)]


def setup(static_dir=None, **config):
    clock = task.Clock()
    hub = LiveHub(clock)
    more = {} if static_dir is None else {"static_dir": static_dir}
    web = WebService(WebConfig(**config), Limits(), hub, clock, **more)
    web.startService()
    return clock, hub, web


class Answer:
    """The response a channel wrote: status code, headers (lower-case names), body so far."""

    def __init__(self, raw: bytes):
        self.raw = raw
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.code = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/") else None
        self.headers: dict[str, list[str]] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers.setdefault(name.strip().lower(), []).append(value.strip())

    def header(self, name: str) -> str | None:
        values = self.headers.get(name)
        return values[0] if values else None

    def json(self):
        return json.loads(self.body)


def connect(web):
    channel = web.port_factory().buildProtocol(PEER)
    transport = StringTransport(peerAddress=PEER)
    channel.makeConnection(transport)
    return channel, transport


def ask(web, target: str, method: str = "GET", headers: str = "", body: bytes = b"") -> Answer:
    """Send one request on a new connection; the answer, then the connection is closed."""
    channel, transport = connect(web)
    channel.dataReceived(f"{method} {target} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n".encode("utf-8") + body)
    answer = Answer(transport.value())
    channel.connectionLost(Failure(ConnectionDone()))
    return answer


def test_numbers_are_ascii_digits_only():
    assert parse_number("0") == 0 and parse_number("0042") == 42
    for text in ("", "\u00b2", "\u0661", "\uff11", "1\u0661", " 1", "1 ", "+1", "-1", "1.0", "1e3", "9" * 19):
        assert parse_number(text) is None, text


def test_nul_bytes_in_static_paths_are_a_404_not_a_500():
    clock, hub, web = setup()
    for path in ("/%00", "/index.html%00.js", "/%ff", "/%00/x"):
        answer = ask(web, path)
        assert answer.code == 404, (path, answer.raw[:300])
        assert answer.json() == {"error": "no such page"}
        assert b"Traceback" not in answer.raw and b"Processing Failed" not in answer.raw


def test_unicode_digits_in_numbers_are_a_400_or_a_404():
    clock, hub, web = setup()
    answer = ask(web, "/api/matches?limit=%C2%B2")
    assert answer.code == 400 and answer.json()["error"].startswith("limit must be a whole number from 1 to 500")
    answer = ask(web, "/api/ratings/kalaha?limit=%D9%A1")
    assert answer.code == 400
    answer = ask(web, "/api/matches?limit=" + "9" * 5000)  # more digits than int() converts
    assert answer.code == 400
    for path in ("/api/matches/%C2%B2", "/api/matches/%D9%A1", "/api/matches/" + "1" * 40):
        answer = ask(web, path)
        assert answer.code == 404 and answer.json()["error"].startswith("no match "), path


_SEGMENTS = st.one_of(
    st.sampled_from(
        ["api", "games", "matches", "players", "ratings", "server", "kalaha", "kalaha-1", "1", "index.html",
         "board.js", "..", ".", "", "%00", "%C2%B2", "%D9%A1", "%ff", "%2F", "%2e%2e", "\u0661"]
    ),
    st.text(max_size=12).map(lambda t: urllib.parse.quote(t, safe="")),
)
_QUERY = st.dictionaries(
    st.sampled_from(["limit", "game", "unplayed", "id", "x"]),
    st.one_of(st.sampled_from(["", "1", "500", "501", "\u00b2", "\u0661", "yes", "kalaha", "\0"]), st.text(max_size=12)),
    max_size=3,
)


@pytest.fixture(scope="module")
def no_pages(tmp_path_factory):
    # Static files are sent by a producer on the global reactor; the real pages are served on
    # loopback elsewhere. The bad paths reach the same StaticFiles resource here.
    return tmp_path_factory.mktemp("static")


@given(segments=st.lists(_SEGMENTS, max_size=5), query=_QUERY, method=st.sampled_from(["GET", "HEAD"]))
def test_no_path_or_parameter_gets_a_500(no_pages, segments, query, method):
    clock, hub, web = setup(no_pages)
    target = "/" + "/".join(segments)
    if "events" in segments:  # streams stay open; they are tested elsewhere
        return
    if query:
        target += "?" + urllib.parse.urlencode(query)
    answer = ask(web, target, method)
    assert answer.code in (200, 302, 400, 404), (target, answer.raw[:300])
    assert b"Traceback" not in answer.raw
    if answer.code == 302:  # a directory without its slash ("/.", "/a/.."): the static pages' way
        assert segments[:1] != ["api"] and answer.header("location").split("?")[0].endswith("/"), target
    elif answer.code != 200 or segments[:1] == ["api"]:
        assert answer.header("content-type") == "application/json; charset=utf-8", target
        if method == "GET":
            assert "error" in answer.json() or answer.code == 200


# ---- item 7: security headers and the cross-origin setting ----

SECURITY = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


def assert_secure(answer: Answer, where: str) -> None:
    for name, value in SECURITY.items():
        assert answer.header(name) == value, (where, name, answer.raw[:400])
    csp = answer.header("content-security-policy")
    assert csp is not None, where
    policy = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";"))
    assert policy["default-src"] == "'none'" and policy["script-src"] == "'self'", csp
    assert policy["style-src"] == "'self'" and policy["frame-ancestors"] == "'none'", csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "server" not in answer.headers, (where, answer.headers.get("server"))


def test_every_answer_has_the_security_headers_and_no_server_version():
    clock, hub, web = setup()
    assert_secure(ask(web, "/api/games"), "json")
    assert_secure(ask(web, "/api/nothing"), "json 404")
    assert_secure(ask(web, "/api/matches?limit=0"), "json 400")
    assert_secure(ask(web, "/no-such-page.html"), "static 404")
    assert_secure(ask(web, "/api/games", method="POST"), "405")
    assert_secure(ask(web, "/api/games", method="GET", headers="Content-Length: 9999999\r\n"), "413")
    assert_secure(ask(web, "/api/games", method="G(T"), "malformed request")
    channel, transport = connect(web)
    channel.dataReceived(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_secure(Answer(transport.value()), "event stream")
    channel.connectionLost(Failure(ConnectionDone()))


def test_the_api_sends_no_cross_origin_header_by_default():
    clock, hub, web = setup()
    answer = ask(web, "/api/games", headers="Origin: https://elsewhere.example\r\n")
    assert answer.code == 200 and "access-control-allow-origin" not in answer.headers


def test_cors_any_origin():
    clock, hub, web = setup(cors="*")
    answer = ask(web, "/api/games", headers="Origin: https://elsewhere.example\r\n")
    assert answer.header("access-control-allow-origin") == "*"
    channel, transport = connect(web)
    channel.dataReceived(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert Answer(transport.value()).header("access-control-allow-origin") == "*"
    channel.connectionLost(Failure(ConnectionDone()))
    assert "access-control-allow-origin" not in ask(web, "/no-such-page.html").headers  # pages are not shared


def test_cors_a_list_of_origins_answers_each_with_its_own():
    clock, hub, web = setup(cors="https://a.example, http://b.example:8000")
    for origin in ("https://a.example", "http://b.example:8000"):
        answer = ask(web, "/api/games", headers=f"Origin: {origin}\r\n")
        assert answer.header("access-control-allow-origin") == origin and answer.header("vary") == "origin"
    answer = ask(web, "/api/games", headers="Origin: https://c.example\r\n")
    assert "access-control-allow-origin" not in answer.headers and answer.header("vary") == "origin"


# ---- item 6: methods, body size and the time to send a request ----

def test_other_methods_are_refused_before_the_body_is_read():
    clock, hub, web = setup()
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH", "FROB"):
        channel, transport = connect(web)
        channel.dataReceived(f"{method} /api/games HTTP/1.1\r\nHost: localhost\r\nContent-Length: 52428800\r\n\r\n".encode())
        answer = Answer(transport.value())
        assert answer.code == 405, (method, answer.raw[:200])
        assert answer.json() == {"error": "only GET and HEAD are allowed here"}
        assert answer.header("allow") == "GET, HEAD" and answer.header("connection") == "close"
        assert transport.disconnecting or not transport.connected  # no more reading: the answer is final
        channel.dataReceived(b"x" * 1_000_000)  # what the client still sends is dropped, not kept
        assert transport.value() == answer.raw
        channel.connectionLost(Failure(ConnectionDone()))


def test_a_body_over_the_bound_is_refused_with_413_and_logged():
    clock, hub, web = setup(max_body=1000)
    with capturedLogs() as events:
        answer = ask(web, "/api/games", headers="Content-Length: 1001\r\n")
    assert answer.code == 413 and answer.json() == {"error": "a request body may have at most 1000 bytes"}
    assert any("refused (413)" in formatEvent(e) for e in events)
    answer = ask(web, "/api/games", headers="Content-Length: 1000\r\n", body=b"x" * 1000)
    assert answer.code == 200, "a body within the bound is read and ignored"


def test_a_chunked_body_over_the_bound_is_refused():
    clock, hub, web = setup(max_body=1000)
    channel, transport = connect(web)
    channel.dataReceived(b"GET /api/games HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(3):
        channel.dataReceived(b"200\r\n" + b"x" * 0x200 + b"\r\n")
    answer = Answer(transport.value())
    assert answer.code == 413 and answer.json() == {"error": "a request body may have at most 1000 bytes"}
    channel.connectionLost(Failure(ConnectionDone()))


def test_a_trickled_request_is_answered_408_after_request_time():
    clock, hub, web = setup(request_time=10.0, idle_timeout=60.0)
    channel, transport = connect(web)
    request = b"GET /api/games HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"a" * 100
    with capturedLogs() as events:
        for byte in request[:4]:  # one byte every 2 s: the idle timeout never fires
            channel.dataReceived(bytes([byte]))
            clock.advance(2.0)
        assert transport.value() == b""
        for byte in request[4:]:
            channel.dataReceived(bytes([byte]))
            clock.advance(2.0)
            if transport.value():
                break
    answer = Answer(transport.value())
    assert answer.code == 408 and answer.json() == {"error": "a request must arrive within 10 seconds"}
    assert clock.seconds() == 10.0
    assert any("refused (408)" in formatEvent(e) for e in events)
    assert transport.disconnecting
    clock.advance(5.0)  # a client that neither reads nor closes is cut off
    channel.connectionLost(Failure(ConnectionDone()))


def test_requests_on_one_connection_each_get_request_time():
    clock, hub, web = setup(request_time=10.0, idle_timeout=60.0)
    channel, transport = connect(web)
    for _ in range(3):
        channel.dataReceived(b"GET /api/games HTTP/1.1\r\nHost: localhost\r\n")
        clock.advance(8.0)
        channel.dataReceived(b"\r\n")
        clock.advance(8.0)
    assert transport.value().count(b"HTTP/1.1 200 OK") == 3 and b"408" not in transport.value()
    channel.connectionLost(Failure(ConnectionDone()))


def test_the_idle_timeout_is_a_setting():
    clock, hub, web = setup(idle_timeout=5.0)
    channel, transport = connect(web)
    clock.advance(4.9)
    assert not transport.disconnecting
    clock.advance(0.2)
    assert transport.disconnecting
    channel.connectionLost(Failure(ConnectionDone()))
    clock, hub, web = setup(idle_timeout=0.0, request_time=0.0)  # 0 = none
    channel, transport = connect(web)
    clock.advance(100_000)
    assert not transport.disconnecting
    channel.connectionLost(Failure(ConnectionDone()))


def test_an_event_stream_outlives_the_idle_timeout_and_request_time():
    clock, hub, web = setup(idle_timeout=5.0, request_time=2.0, keepalive=15.0)
    table = hub.open("kalaha", SEATS, {}, {"to_move": 0})
    channel, transport = connect(web)
    channel.dataReceived(f"GET /api/games/{table.id}/events HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    clock.pump([1.0] * 120)
    assert not transport.disconnecting
    assert transport.value().count(b": keepalive\n\n") == 8
    table.moved(0, "A1", {"to_move": 1}, 1)
    assert b"event: move" in transport.value()
    table.finish((1.0, 0.0), "end")
    channel.connectionLost(Failure(ConnectionDone()))


def test_too_many_header_bytes_are_a_json_400():
    clock, hub, web = setup()
    answer = ask(web, "/api/games", headers="".join(f"X-Pad-{i}: {'a' * 100}\r\n" for i in range(200)))
    assert answer.code == 400 and answer.json() == {"error": "malformed HTTP request"}
    assert answer.header("connection") == "close"


def test_a_full_web_port_answers_a_json_503_with_the_security_headers():
    clock = task.Clock()
    web = WebService(WebConfig(), Limits(max_connections=1), LiveHub(clock), clock)
    factory = web.port_factory()
    first = factory.buildProtocol(PEER)
    first.makeConnection(StringTransport(peerAddress=PEER))
    second = factory.buildProtocol(PEER)
    transport = StringTransport(peerAddress=PEER)
    second.makeConnection(transport)
    answer = Answer(transport.value())
    assert answer.code == 503 and answer.json() == {"error": "server full (1 connections)"}
    assert answer.header("x-content-type-options") == "nosniff" and answer.header("connection") == "close"


def test_odd_request_targets_get_json_answers_with_the_security_headers():
    clock, hub, web = setup()
    answer = ask(web, "*")  # twisted.web's own answer would be an empty 405 naming its version
    assert answer.code == 404 and answer.json() == {"error": "no such page"}
    assert_secure(answer, "GET *")
    answer = ask(web, "/" + "a" * 20_000)  # LineReceiver would just drop the connection
    assert answer.code == 400 and answer.json() == {"error": "a request line or header line may have at most 16384 bytes"}
    for target in ("http://elsewhere.example/api/games", "//api/games", "/%", "/..%2F..%2Fetc/passwd"):
        answer = ask(web, target)
        assert answer.code == 404 and answer.header("content-type") == "application/json; charset=utf-8", target


def test_a_failure_inside_the_site_is_a_json_500_without_traceback_or_version():
    clock, hub, web = setup()

    def broken(*args):
        raise RuntimeError("a bug")

    hub.games = broken
    with capturedLogs() as events:
        answer = ask(web, "/api/games")
    assert answer.code == 500 and answer.json() == {"error": "internal error"}
    assert b"a bug" not in answer.raw and b"Traceback" not in answer.raw and "server" not in answer.headers
    assert_secure(answer, "500")
    assert any(e.get("log_failure") is not None and "/api/games failed" in formatEvent(e) for e in events)


_TARGET_CHARS = st.sampled_from([chr(c) for c in range(33, 127)] + ["%00", "%C2%B2", "%D9%A1", "%ff", "%", "%2F", "\u0661"])


@given(target=st.lists(_TARGET_CHARS, max_size=40).map("".join), method=st.sampled_from(["GET", "HEAD"]))
def test_no_raw_request_target_gets_a_500(no_pages, target, method):
    clock, hub, web = setup(no_pages)
    if "events" in target:
        return
    answer = ask(web, target, method)
    assert answer.code in (200, 302, 400, 404), (target, answer.raw[:300])
    assert b"Traceback" not in answer.raw and "server" not in answer.headers
    if answer.code == 302:
        assert answer.header("location").split("?")[0].endswith("/"), target
    elif answer.code != 200:
        assert answer.header("content-type") == "application/json; charset=utf-8", target
