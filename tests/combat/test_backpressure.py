"""The per-connection output budget on both Combat ports: a client that does not read its replies
gets no more of them, holds a bounded amount of input and is cut off with a logged reason; one huge
read is handled a bounded number of messages per reactor turn; a client that reads loses nothing."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import capturedLogs

from gamed.backpressure import MAX_HELD, MAX_UNREAD, TurnQueue
from gamed.combat import wire
from gamed.combat.protocol import CombatProtocol
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits
from tests.memclient import next_turns
from tests.combat.test_protocol import DEFAULT, Player, TextPlayer, placement, started
from tests.memclient import Client

READ = 1 << 16  # what one read from a TCP socket hands the protocol at most
TCP_BUFFER = 1 << 16  # Twisted's TCP transport pauses its producer with more than this unsent
BOUND = TCP_BUFFER + MAX_HELD  # what one client that never reads may cost, at most


class NotReading(StringTransport):
    """The transport of a client that reads nothing: as Twisted's TCP transport does, it pauses
    its producer once more than 64 KiB wait to be sent (nothing is ever sent here)."""

    full = False

    def write(self, data: bytes) -> None:
        super().write(data)
        if not self.full and self.producer is not None and len(self.io.getvalue()) > TCP_BUFFER:
            self.full = True
            self.producer.pauseProducing()


def not_reading(service, factory) -> Client:
    client = Client.__new__(Client)
    Client._port += 1
    addr = IPv4Address("TCP", "192.0.2.9", Client._port)
    client.service, client.factory, client.lost = service, factory, False
    client.transport = NotReading(peerAddress=addr)
    client.protocol = factory.buildProtocol(addr)
    client.protocol.makeConnection(client.transport)
    return client


def make_service(clock: Clock | None = None) -> CombatService:
    return CombatService(Limits(idle_timeout=0), clock or Clock(), CombatConfig(move_time=0), rng=random.Random(1))


def flood(client: Client, clock: Clock, message: bytes, count: int) -> int:
    """Send ``message`` ``count`` times in reads of 64 KiB whenever the server reads (one read per
    reactor turn), until it has all or the connection is dropped; returns the most unsent output
    and unhandled input seen for the connection (it stops early once that is over the bound)."""
    stream = message * count
    worst = sent = 0
    protocol: CombatProtocol = client.player
    for _ in range(4 * len(stream) // READ + 1000):
        if client.transport.disconnected or sent >= len(stream) or worst > BOUND:
            break
        if client.transport.producerState == "producing":
            client.protocol.dataReceived(stream[sent : sent + READ])
            sent += READ
        worst = max(worst, len(client.transport.value()), protocol._held())
        clock.advance(TurnQueue.interval)  # the next reactor turn (and the next of the turn queue)
    return worst


def test_a_binary_client_that_floods_req_sync_without_reading_is_cut_off_with_bounded_memory():
    clock = Clock()
    service = make_service(clock)
    factory = service.port_factory()
    host = Player(service)
    host.send(wire.HostOptions.of(DEFAULT))  # the syncs then carry the board
    with capturedLogs() as events:
        mute = not_reading(service, factory)
        worst = flood(mute, clock, wire.encode_client(wire.ReqSync()), 500_000)
    assert mute.transport.disconnected, "the client that never reads is dropped"
    assert worst <= BOUND, f"{worst} bytes held for one client"
    assert any("not reading its replies" in e["log_format"] for e in events)
    mute.drop()
    assert host.read()[-1].seats[1].kind is wire.SeatKind.OPEN, "its seat is free again"


def test_a_handshake_client_that_floods_help_without_reading_is_cut_off_with_bounded_memory():
    clock = Clock()
    service = make_service(clock)
    with capturedLogs() as events:
        mute = not_reading(service, service.text_port_factory())
        worst = flood(mute, clock, b"HELP\r\n", 400_000)
    assert mute.transport.disconnected
    assert worst <= BOUND, f"{worst} bytes held for one client"
    assert any("not reading its replies" in e["log_format"] for e in events)


def test_messages_wait_while_the_client_does_not_read_and_none_is_lost():
    clock = Clock()
    service = make_service(clock)
    alice = Player(service)
    alice.read()
    alice.client.player.pauseProducing()  # its transport's buffer is full
    alice.send(wire.ReqSync())
    alice.send(wire.ReqSync())
    assert alice.read() == [], "no reply while it does not read"
    alice.client.player.resumeProducing()
    assert [type(m) for m in alice.read()] == [wire.MsgSync, wire.MsgSync]


def test_handshake_lines_wait_while_the_client_does_not_read():
    service = make_service()
    p = TextPlayer(service)
    p.client.player.pauseProducing()
    p.say("NAME ann", "TABLE t", "PLAY")
    assert p.lines() == []
    p.client.player.resumeProducing()
    assert p.lines() == ["OK NAME ann", "OK TABLE t", "OK PLAY: binary protocol follows"]
    assert p.binary[0] == wire.MsgSeat(0, 2)


def test_one_huge_read_is_handled_a_bounded_number_of_messages_per_reactor_turn():
    clock = Clock()
    service = make_service(clock)
    alice = Player(service)
    alice.read()
    per_turn = CombatProtocol.MESSAGES_PER_TURN
    sync = wire.encode_client(wire.ReqSync())
    alice.client.raw(sync * (per_turn + 10))  # a few messages at once: a turn's share of them
    assert len(alice.read()) == per_turn, "one share of the turn"
    assert alice.client.transport.producerState == "paused", "no reading meanwhile"
    clock.advance(0)
    assert len(alice.read()) == 10, "the rest in the next turn, none lost"
    assert alice.client.transport.producerState == "producing"
    flood = CombatProtocol.SMALL_INPUT // len(sync) + 100  # more waiting: a flood
    alice.client.raw(sync * flood)
    assert len(alice.read()) == 1, "a flood gets one message, then waits in the turn queue"
    clock.advance(0)
    assert len(alice.read()) == TurnQueue.per_turn, "alone in the queue: the queue's turn of messages"
    next_turns(clock)
    assert len(alice.read()) == flood - 1 - TurnQueue.per_turn, "the rest in the next turns, none lost"
    assert alice.client.transport.producerState == "producing"


def test_a_client_that_never_reads_what_the_others_cause_is_cut_off():
    clock = Clock()
    service = make_service(clock)
    alice, bob = started(service)
    alice.client.player.pauseProducing()  # alice reads nothing any more
    move = wire.encode_client(wire.ReqMove(60, 50))  # out of turn: the error goes to both seats
    error_size = len(wire.encode(wire.MsgMoveError(-3, 1)))
    with capturedLogs() as events:
        for _ in range(MAX_UNREAD // error_size // 1000 + 1):
            bob.client.raw(move * 1000)
            next_turns(clock)
            bob.read()
    assert alice.client.transport.disconnected
    assert any("of its replies unread" in e["log_format"] for e in events)
    alice.client.drop()
    assert not bob.client.transport.disconnected


def test_a_closing_client_that_never_reads_is_aborted_after_the_close_grace():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0, close_grace=10), clock, rng=random.Random(1))
    p = Player(service)
    p.client.transport.loseConnection = lambda: None  # the close waits for unread output forever
    p.client.protocol.dataReceived(wire.encode_int(99))  # fatal: the server closes
    assert not p.client.transport.disconnected
    clock.advance(10)
    assert p.client.transport.disconnected


def play_with_pauses(pauses: list[bool]) -> tuple[bytes, bytes]:
    """The bytes both players of a short game receive when, before each of their messages, the
    client stops reading (``pauses[i]``) and reads again only after sending it."""
    service = make_service()
    alice, bob = Player(service), Player(service)
    script = [
        (alice, wire.HostOptions.of(DEFAULT)),
        (alice, wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0)))),
        (bob, wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1)))),
        (alice, wire.ReqMove(30, 40)),
        (bob, wire.ReqMove(61, 51)),
        (bob, wire.ReqMove(62, 52)),  # out of turn: an error to both
        (alice, wire.ReqMove(40, 50)),
        (bob, wire.ReqMove(51, 50)),  # an attack
        (bob, wire.ReqSync()),
    ]
    for (player, message), pause in zip(script, pauses):
        if pause:
            player.client.player.pauseProducing()
        player.send(message)
        if pause:
            player.client.player.resumeProducing()
    return alice.client.transport.value(), bob.client.transport.value()


@given(st.lists(st.booleans(), min_size=9, max_size=9))
def test_a_client_that_reads_late_gets_exactly_the_same_bytes(pauses):
    alice, bob = play_with_pauses([False] * 9)
    got = wire.ClientParser().feed(bob)
    assert wire.MsgAttack(51, -6, 50, 3) in got and isinstance(got[-1], wire.MsgSync), "the whole game was played"
    assert play_with_pauses(pauses) == (alice, bob)


def test_every_game_protocol_is_a_push_producer_for_its_transport():
    from twisted.internet.interfaces import IPushProducer
    from zope.interface.verify import verifyObject

    service = make_service()
    for client in (Player(service).client, TextPlayer(service).client):
        assert verifyObject(IPushProducer, client.player)
        assert client.transport.producer is client.player and client.transport.streaming
