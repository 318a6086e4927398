"""The shared text-line base: framing under any chunking, text cleaning, limits on a bare protocol."""

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.address import IPv4Address
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs

from gamed.backpressure import UNREAD_SECONDS, TurnQueue
from gamed.config import Limits
from gamed.textline import ConnectionBudget, ConnectionLimits, TextLineProtocol, decode_line, strip_telnet
from tests.memclient import next_turns
from tests.tlscerts import certificate_pem


class Echo(TextLineProtocol):
    """Answers every line with its text; records the other hooks."""

    def __init__(self, limits, clock):
        super().__init__(limits, clock)
        self.events = []

    def on_line(self, text):
        self.events.append(("line", text))
        self.send_lines([f"ECHO {text}"])

    def on_line_too_long(self):
        self.events.append(("long",))

    def on_garbage(self):
        self.events.append(("garbage",))


def connect(limits=Limits(line_rate=0), clock=None):
    proto = Echo(limits, clock or Clock())
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport


def test_decode_line_accepts_printable_ascii_and_strips_cr():
    assert decode_line(b"MOVE A3\r") == "MOVE A3"
    assert decode_line(b"tab\there") == "tab here"
    assert decode_line(b"") == ""


def test_decode_line_accepts_what_telnet_sends_at_the_end_of_a_line():
    assert decode_line(b"computer easy\r\x00\r") == "computer easy"
    assert decode_line(b"PING\r\r") == "PING"


def test_a_bare_cr_at_the_end_of_a_read_ends_the_line_at_once():
    proto, transport = connect()
    proto.dataReceived(b"0&POS\r")
    assert proto.events == [("line", "0&POS")], "a client ending lines with CR waits for the reply"
    proto.dataReceived(b"\n1&POS\r")
    proto.dataReceived(b"\x002&POS\r\n")
    assert proto.events == [("line", "0&POS"), ("line", "1&POS"), ("line", "2&POS")]


def test_decode_line_refuses_control_and_non_ascii_bytes():
    assert decode_line(b"caf\xc3\xa9") is None
    assert decode_line(b"bell\x07") is None
    assert decode_line(b"nul\x00inside") is None
    assert decode_line(b"esc\x1b[A") is None


def test_strip_telnet_removes_negotiation_and_subnegotiation():
    assert strip_telnet(b"\xff\xfd\x18PING") == b"PING"
    assert strip_telnet(b"\xff\xfa\x18\x01\xff\xf0PING") == b"PING"
    assert strip_telnet(b"PI\xff\xf1NG") == b"PING"  # IAC NOP
    assert strip_telnet(b"\xff\xffx") == b"x"
    assert strip_telnet(b"\xff") == b""
    assert decode_line(b"\xff\xfb\x01\xff\xfb\x03hello") == "hello"


lines = st.lists(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40), max_size=30)


@given(
    lines=lines,
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
    ends=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r", b"\r\0", b"\r\r\n"]), min_size=1),
)
def test_framing_is_the_same_for_any_chunking_and_any_line_end(lines, cuts, ends):
    stream = b"".join(line.encode() + ends[i % len(ends)] for i, line in enumerate(lines))
    proto, transport = connect()
    points = sorted({c % (len(stream) + 1) for c in cuts})
    start = 0
    for point in points + [len(stream)]:
        proto.dataReceived(stream[start:point])
        start = point
    assert proto.events == [("line", line) for line in lines]
    assert transport.value() == b"".join(f"ECHO {line}\r\n".encode() for line in lines)


@given(sizes=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=20), chunk=st.integers(1, 97))
def test_over_long_lines_are_reported_once_each_and_the_rest_survive(sizes, chunk):
    limit = 100
    proto, transport = connect(Limits(max_line=limit, line_rate=0))
    stream = b"".join(b"x" * n + b"\n" for n in sizes)
    for i in range(0, len(stream), chunk):
        proto.dataReceived(stream[i : i + chunk])
    expected = [("long",) if n > limit else ("line", "x" * n) for n in sizes]
    assert proto.events == expected
    assert len(proto._buffer) <= limit + 1


def test_close_sends_the_last_lines_then_stops_reading_and_writing():
    proto, transport = connect()
    proto.close("test", ["BYE"])
    proto.dataReceived(b"PING\n")
    proto.send_lines(["LATE"])
    assert transport.value() == b"BYE\r\n" and transport.disconnecting
    assert proto.events == []


def test_idle_timeout_closes_by_default():
    clock = Clock()
    proto, transport = connect(Limits(idle_timeout=5, line_rate=0), clock)
    clock.advance(4)
    proto.dataReceived(b"hi\n")
    clock.advance(4)
    assert not transport.disconnecting
    clock.advance(1)
    assert transport.disconnecting


def test_connection_limits_count_per_peer_and_release_on_close():
    factory = ConnectionLimits(Factory.forProtocol(lambda: Echo(Limits(), Clock())), 0, 1, lambda why: f"NO {why}\r\n".encode())
    first = factory.buildProtocol(IPv4Address("TCP", "192.0.2.1", 1))
    first.makeConnection(StringTransport())
    refused = factory.buildProtocol(IPv4Address("TCP", "192.0.2.1", 2))
    t = StringTransport()
    refused.makeConnection(t)
    assert t.value() == b"NO too many connections from 192.0.2.1 (limit 1)\r\n" and t.disconnecting
    assert factory.refused == 1 and factory.per_peer == {"192.0.2.1": 1}
    first.connectionLost(None)
    assert factory.per_peer == {} and factory.protocols == {}


def test_refusals_are_logged_sparsely_so_a_flood_cannot_fill_the_log():
    factory = ConnectionLimits(Factory.forProtocol(lambda: Echo(Limits(), Clock())), 1, 0)
    factory.buildProtocol(IPv4Address("TCP", "192.0.2.1", 1)).makeConnection(StringTransport())
    with capturedLogs() as events:
        for port in range(2, 12):
            factory.buildProtocol(IPv4Address("TCP", "192.0.2.1", port)).makeConnection(StringTransport())
    assert factory.refused == 10
    assert [e["refused"] for e in events] == [1, 2, 4, 8]


class _Closer(Echo):
    """Closes the connection when told ``BYE``."""

    def on_line(self, text):
        if text == "BYE":
            self.close("asked to", ["BYE bye"])
        else:
            super().on_line(text)


def test_a_tls_connection_is_closed_cleanly_at_once_not_after_the_close_grace():
    # TLS does not send its close alert while a producer is registered: a close must unregister
    # it, or every TLS client waits the whole close grace and is then cut off.
    from twisted.internet import ssl
    from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
    from twisted.test import iosim

    key_pem, cert_pem = certificate_pem()
    server_options = ssl.PrivateCertificate.loadPEM(key_pem + cert_pem).options()
    client_options = ssl.optionsForClientTLS("localhost", trustRoot=ssl.Certificate.loadPEM(cert_pem))
    clock = Clock()
    server = _Closer(Limits(line_rate=0), clock)
    received = []

    class Client(Protocol):
        def dataReceived(self, data):  # noqa: N802
            received.append(data)

        def connectionLost(self, reason=None):  # noqa: N802
            received.append(None)

    server_factory = TLSMemoryBIOFactory(server_options, False, Factory.forProtocol(lambda: server))
    client_factory = TLSMemoryBIOFactory(client_options, True, Factory.forProtocol(Client))
    # The plain TLS protocol: the default one gathers writes and flushes them from the global reactor.
    server_factory.protocol = client_factory.protocol = TLSMemoryBIOProtocol
    server_tls = server_factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1))
    client_tls = client_factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 2))
    client_transport = iosim.FakeTransport(client_tls, isServer=False)
    server_transport = iosim.FakeTransport(server_tls, isServer=True)
    pump = iosim.connect(server_tls, server_transport, client_tls, client_transport)
    client_tls.write(b"BYE\r\n")
    pump.flush()
    assert b"".join(d for d in received if d) == b"BYE bye\r\n"
    assert received[-1] is None, "the server closed the TLS connection without waiting for the close grace"
    assert not clock.getDelayedCalls() or all(not c.active() for c in clock.getDelayedCalls())


# --- held lines and the reactor's share (issue 13, item 2) ---------------------------------------


def pump_until_quiet(clock, step=0.05, limit=10_000):
    """Advance the clock until no call is pending (every held line has been released)."""
    for _ in range(limit):
        if not clock.getDelayedCalls():
            return
        clock.advance(step)
    raise AssertionError("lines are still held back")


def test_holding_lines_back_frames_each_received_byte_once():
    # 5,000 lines in one write, released by the line rate: framing them must not re-split the
    # held lines for each one released (which framed 1.5 MB here, and grows with the square).
    clock = Clock()
    proto, transport = connect(Limits(line_rate=1000, line_burst=100, idle_timeout=0), clock)
    framed = []
    process = proto._process
    proto._process = lambda data: (framed.append(len(data)), process(data))
    stream = b"".join(f"L{i}\n".encode() for i in range(5000))
    proto.dataReceived(stream)
    assert transport.producerState == "paused", "the rate holds the lines back"
    pump_until_quiet(clock)
    assert proto.events == [("line", f"L{i}") for i in range(5000)]
    assert sum(framed) == len(stream)
    assert transport.producerState == "producing"


@given(
    lines=lines,
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
    ends=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r", b"\r\0", b"\r\r\n"]), min_size=1),
    longs=st.lists(st.integers(min_value=0, max_value=29), max_size=4),
)
def test_held_lines_keep_their_order_line_ends_and_over_long_lines(lines, cuts, ends, longs):
    # The same stream as above, with over-long lines in it, under a rate that holds most lines.
    lines = [("x" * 60 if i in longs else line) for i, line in enumerate(lines)]
    stream = b"".join(line.encode() + ends[i % len(ends)] for i, line in enumerate(lines))
    clock = Clock()
    proto, transport = connect(Limits(max_line=50, line_rate=20, line_burst=2, idle_timeout=0), clock)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    start = 0
    for point in points + [len(stream)]:
        proto.dataReceived(stream[start:point])
        start = point
        clock.advance(0.01)
    pump_until_quiet(clock)
    assert proto.events == [("long",) if len(line) > 50 else ("line", line) for line in lines]
    assert transport.value() == b"".join(f"ECHO {line}\r\n".encode() for line in lines if len(line) <= 50)


def test_a_flood_gets_one_line_a_share_and_waits_in_the_turn_queue():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    proto.dataReceived(b"PING\n" * 100)
    assert proto.events == [("line", "PING")], "more waiting than one turn's share: one line now"
    assert transport.producerState == "paused", "and nothing more is read from it meanwhile"
    clock.advance(0)
    assert len(proto.events) == 1 + TurnQueue.per_turn, "alone in the turn queue, it gets the turn's lines"
    next_turns(clock)
    assert proto.events == [("line", "PING")] * 100, "none lost, in order"
    assert transport.value() == b"ECHO PING\r\n" * 100
    assert transport.producerState == "producing", "reading goes on once every line is handled"


def test_floods_together_get_a_few_shares_a_turn_while_a_player_is_answered_at_once():
    clock = Clock()
    floods = [connect(Limits(line_rate=0, idle_timeout=0), clock)[0] for _ in range(50)]
    player, player_transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    for proto in floods:
        proto.dataReceived(b"GARBAGE\n" * 1000)
    handled = lambda: sum(len(p.events) for p in floods)  # noqa: E731
    assert handled() == 50, "one line each as it arrived"
    shares = []
    for _ in range(20):
        clock.advance(TurnQueue.interval)
        shares.append(handled() - 50 - sum(shares))
    assert shares == [TurnQueue.per_turn] * 20, "50 floods share per_turn lines a turn, whatever their number"
    player.dataReceived(b"PING\n")
    assert player.events == [("line", "PING")] and player_transport.value() == b"ECHO PING\r\n", "at once"
    served = {len(p.events) for p in floods}
    assert max(served) - min(served) <= 1, "the floods are served in turn, none more than another"


def test_a_flood_that_goes_away_leaves_the_turn_queue():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    proto.dataReceived(b"PING\n" * 100)
    proto.connectionLost(None)
    next_turns(clock)
    assert proto.events == [("line", "PING")] and not clock.getDelayedCalls()
    assert len(TurnQueue.of(clock)) == 0


def test_a_client_that_leaves_its_replies_unread_while_it_sends_on_is_cut_off_after_a_while():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    quiet, quiet_transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    proto.pauseProducing()  # its replies are not read
    quiet.pauseProducing()  # nor are these, but it sends nothing meanwhile
    with capturedLogs() as events:
        proto.dataReceived(b"PING\n" * 10)  # far below MAX_HELD: its sending stalled
        clock.advance(UNREAD_SECONDS - 0.1)
        assert not transport.disconnected
        clock.advance(0.1)
    assert transport.disconnected and proto.events == []
    assert any("left its replies unread for" in e["log_format"] for e in events)
    assert not quiet_transport.disconnected, "a client that only does not read is bounded by its output budget"
    quiet.resumeProducing()
    proto2, transport2 = connect(Limits(line_rate=0, idle_timeout=0), clock)
    proto2.pauseProducing()
    proto2.dataReceived(b"PING\n")
    clock.advance(UNREAD_SECONDS / 2)
    proto2.resumeProducing()  # it reads again: the deadline is gone
    clock.advance(UNREAD_SECONDS)
    assert not transport2.disconnected and proto2.events == [("line", "PING")]


def test_a_few_lines_at_once_are_all_handled_in_the_same_turn():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=0, idle_timeout=0), clock)
    proto.dataReceived(b"A\nB\nC\n")
    assert proto.events == [("line", "A"), ("line", "B"), ("line", "C")]
    assert transport.producerState == "producing" and not clock.getDelayedCalls()


def test_bare_newlines_are_free_and_do_not_stop_reading():
    # 100,000 bare newlines then a close used to hold the socket (in CLOSE-WAIT) for 100 s, at
    # the line rate, while burning CPU; they mean nothing and cost no part of the rate.
    clock = Clock()
    proto, transport = connect(Limits(line_rate=1000, line_burst=1000), clock)
    for _ in range(2):
        proto.dataReceived(b"\n" * 50_000)
    assert transport.producerState == "producing", "the server keeps reading (and so sees a close)"
    proto.dataReceived(b"PING\n")
    assert proto.events == [("line", "PING")] and transport.value() == b"ECHO PING\r\n"


def test_a_client_that_sends_on_while_its_replies_wait_is_cut_off_with_lines_held():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=0), clock)
    proto.pauseProducing()  # the client does not read its replies
    with capturedLogs() as events:
        for _ in range(30):
            proto.dataReceived(b"PING\n" * 1000)
            if transport.disconnected:
                break
    assert transport.disconnected and proto.events == []
    assert any("not reading its replies" in e["log_format"] for e in events)


# --- the daemon-wide connection budget (issue 13, item 3) ----------------------------------------


def test_every_port_shares_the_connection_budget_and_refuses_with_its_own_line():
    budget = ConnectionBudget(2)
    ports = []
    for name in ("KALAHA", "FOUR"):
        port = ConnectionLimits(Factory.forProtocol(lambda: Echo(Limits(), Clock())), 10, 0, lambda why, n=name: f"{n} {why}\r\n".encode())
        port.budget = budget
        ports.append(port)
    kalaha, four = ports
    first = kalaha.buildProtocol(IPv4Address("TCP", "192.0.2.1", 1))
    first.makeConnection(StringTransport())
    four.buildProtocol(IPv4Address("TCP", "192.0.2.2", 1)).makeConnection(StringTransport())
    assert budget.open == 2 and budget.full
    for port, name in ((kalaha, "KALAHA"), (four, "FOUR")):
        t = StringTransport()
        with capturedLogs() as events:
            port.buildProtocol(IPv4Address("TCP", "192.0.2.3", 1)).makeConnection(t)
        assert t.value() == f"{name} server full (2 connections on all ports)\r\n".encode() and t.disconnecting
        assert [e["why"] for e in events] == ["server full (2 connections on all ports)"]
    first.connectionLost(None)
    assert budget.open == 1 and not budget.full
    t = StringTransport()
    four.buildProtocol(IPv4Address("TCP", "192.0.2.3", 2)).makeConnection(t)
    assert not t.disconnecting and budget.open == 2, "a place freed on one port is taken on another"


def test_blank_and_over_long_lines_do_not_count_as_held_bytes_later():
    # Bytes the framing dropped (blank lines, the rest of an over-long line) are not held: a
    # client that sent many of them is not cut off later for lines it really has waiting.
    clock = Clock()
    proto, transport = connect(Limits(max_line=100, line_rate=0, idle_timeout=0), clock)
    for _ in range(5):
        proto.dataReceived(b"\n" * 50_000)
    for _ in range(1500):
        proto.dataReceived(b"x" * 150)
        proto.dataReceived(b"x" * 99 + b"\n")
    next_turns(clock)
    assert proto.events == [("long",)] * 1500
    proto.pauseProducing()  # now the client does not read its replies
    proto.dataReceived(b"PING\n" * 10)
    proto.resumeProducing()
    assert not transport.disconnected and proto.events[1500:] == [("line", "PING")] * 10


def test_a_held_flood_is_released_a_turn_of_lines_per_wake_up_not_one_line_per_timer():
    clock = Clock()
    proto, transport = connect(Limits(line_rate=1000, line_burst=1000, idle_timeout=0), clock)
    timers = []
    call_later = clock.callLater
    rate_wakes = lambda delay, f: timers.append(delay) if f == proto._rate_refilled else None  # noqa: E731
    clock.callLater = lambda delay, f, *a: (rate_wakes(delay, f), call_later(delay, f, *a))[1]
    proto.dataReceived(b"PING\n" * 5000)
    for _ in range(5000):
        if len(proto.events) == 5000:
            break
        clock.advance(0.001)
    assert len(proto.events) == 5000 and clock.seconds() <= 4.1, "still 1000 lines a second"
    assert len(timers) <= 4000 / proto.lines_per_turn + 1, "one wake-up per 16 lines held back"
