"""GGZ Combat against the real daemon over loopback (the game is being built: issue 5): two
clients are seated, the host's options reach both, setups start the game, moves are relayed."""

from __future__ import annotations

import socket

import pytest_twisted
from twisted.internet import defer, endpoints, protocol, reactor, task

from gamed.combat import wire
from tests.combat.test_protocol import DEFAULT, placement
from tests.integration.support import LOOPBACK, with_timeout


class CombatClient(protocol.Protocol):
    """A raw Combat client: ``send`` client messages, ``await expect(kind)``."""

    def __init__(self):
        self.parser = wire.ClientParser()
        self.messages: list = []
        self.waiting: tuple[type, defer.Deferred] | None = None

    def dataReceived(self, data):  # noqa: N802
        self.messages.extend(self.parser.feed(data))
        self._check()

    def _check(self):
        if self.waiting is None:
            return
        kind, d = self.waiting
        for i, message in enumerate(self.messages):
            if isinstance(message, kind):
                del self.messages[: i + 1]
                self.waiting = None
                d.callback(message)
                return

    def expect(self, kind, seconds=10):
        d = defer.Deferred()
        self.waiting = (kind, d)
        self._check()
        return with_timeout(d, seconds, f"a {kind.__name__}")

    def send(self, message):
        self.transport.write(wire.encode_client(message))


async def connect(port: int) -> CombatClient:
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port, timeout=10)
    return await endpoints.connectProtocol(endpoint, CombatClient())


@pytest_twisted.ensureDeferred
async def test_two_clients_set_up_and_move(start_daemon):
    daemon = await start_daemon(kalaha="none", combat=LOOPBACK)
    port = daemon.ports["combat"]
    alice = await connect(port)
    assert await alice.expect(wire.MsgSeat) == wire.MsgSeat(0, 2)
    await alice.expect(wire.ReqOptions)
    bob = await connect(port)
    assert await bob.expect(wire.MsgSeat) == wire.MsgSeat(1, 2)
    alice.send(wire.HostOptions.of(DEFAULT))
    for client, seat in ((alice, 0), (bob, 1)):
        assert (await client.expect(wire.MsgOptions)).options == DEFAULT
        await client.expect(wire.ReqSetup)
        client.send(wire.MsgSetup(wire.write_setup(DEFAULT, seat, placement(seat))))
    await alice.expect(wire.MsgStart)
    await bob.expect(wire.MsgStart)
    alice.send(wire.ReqMove(30, 40))
    assert await bob.expect(wire.MsgMove) == wire.MsgMove(30, 40)
    bob.transport.loseConnection()
    assert isinstance(await alice.expect(wire.MsgPlayers), wire.MsgPlayers)
    assert "Traceback" not in daemon.text


async def seat_open(client: CombatClient, seat: int) -> None:
    """Wait for the MSG_PLAYERS that shows ``seat`` open (the server has handled the leave)."""
    while True:
        players = await client.expect(wire.MsgPlayers)
        if players.seats[seat].kind is wire.SeatKind.OPEN:
            return


@pytest_twisted.ensureDeferred
async def test_a_player_leaving_during_setup_is_replaced_and_a_dropped_player_rejoins(start_daemon):
    daemon = await start_daemon(kalaha="none", combat=LOOPBACK)
    port = daemon.ports["combat"]
    alice = await connect(port)
    await alice.expect(wire.ReqOptions)
    bob = await connect(port)
    await bob.expect(wire.MsgSeat)
    alice.send(wire.HostOptions.of(DEFAULT))
    await bob.expect(wire.ReqSetup)
    bob.transport.loseConnection()  # leaves during setup
    await seat_open(alice, 1)
    carol = await connect(port)
    assert await carol.expect(wire.MsgSeat) == wire.MsgSeat(1, 2), "the next connection takes the seat"
    await carol.expect(wire.ReqSetup)
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    carol.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    await alice.expect(wire.MsgStart)
    alice.send(wire.ReqMove(30, 40))
    await carol.expect(wire.MsgMove)
    carol.transport.loseConnection()  # drops during play: the seat is kept (rejoin grace)
    await seat_open(alice, 1)
    dave = await connect(port)
    assert await dave.expect(wire.MsgSeat) == wire.MsgSeat(1, 2)
    sync = await dave.expect(wire.MsgSync)
    assert sync.turn == 1, "brought up to date: it is seat 1's move"
    await dave.expect(wire.MsgStart)
    dave.send(wire.ReqMove(61, 51))
    assert await alice.expect(wire.MsgMove) == wire.MsgMove(61, 51)
    assert "Traceback" not in daemon.text


class NotReadingClient(protocol.Protocol):
    """A client that sends and never reads (a small receive buffer, reading stopped), until
    ``read_again``; ``lost`` fires when the connection is gone."""

    def __init__(self, payload: bytes):
        self.payload = payload
        self.lost = defer.Deferred()

    def connectionMade(self):  # noqa: N802
        self.transport.getHandle().setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.transport.pauseProducing()
        self.transport.write(self.payload)

    def read_again(self):
        self.transport.resumeProducing()

    def dataReceived(self, data):  # noqa: N802
        pass

    def connectionLost(self, reason):  # noqa: N802
        self.lost.callback(None)


async def logged(daemon, text: str, times: int = 1, seconds: float = 30) -> None:
    """Wait (bounded) until the daemon's output contains ``text`` ``times`` times."""
    for _ in range(int(seconds / 0.05)):
        if daemon.text.count(text) >= times:
            return
        await task.deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"the daemon did not log {text!r} within {seconds} s:\n{daemon.text[-3000:]}")


@pytest_twisted.ensureDeferred
async def test_clients_that_flood_without_reading_are_cut_off_and_the_others_still_play(start_daemon):
    daemon = await start_daemon("--combat-text", LOOPBACK, kalaha="none", combat=LOOPBACK)
    flood = wire.encode_client(wire.HostOptions.of(DEFAULT)) + wire.encode_client(wire.ReqSync()) * 500_000
    floods = [NotReadingClient(flood), NotReadingClient(b"HELP\r\n" * 400_000)]
    for client, option in zip(floods, ("combat", "combat-text")):
        endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", daemon.ports[option], timeout=10)
        await endpoints.connectProtocol(endpoint, client)
    # each is cut off by one of the two bounds: 128 KiB sent meanwhile, or 10 s of replies unread
    # while it sends on (its own sending can stall first, once both directions are full)
    await logged(daemon, "cut off: it ", times=2)
    alice = await connect(daemon.ports["combat"])  # the flooder's table is gone: a new one
    assert await alice.expect(wire.MsgSeat) == wire.MsgSeat(0, 2)
    bob = await connect(daemon.ports["combat"])
    assert await bob.expect(wire.MsgSeat) == wire.MsgSeat(1, 2)
    for client in floods:
        client.read_again()  # it then finds its connection reset
        await with_timeout(client.lost, 30, "the flooding connection to be dropped")
    assert daemon.text.count("cut off: it ") == 2, "each flooder is cut off once, with the reason logged"
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_map_name_with_markup_is_refused_and_never_shown_by_the_web_site(start_daemon):
    import json

    import attrs

    from tests.integration.test_web_daemon import poll_json

    daemon = await start_daemon(kalaha="none", combat=LOOPBACK, web=LOOPBACK)
    alice = await connect(daemon.ports["combat"])
    await alice.expect(wire.ReqOptions)
    bob = await connect(daemon.ports["combat"])
    await bob.expect(wire.MsgSeat)
    alice.send(wire.HostOptions.of(attrs.evolve(DEFAULT, name="<img src=x onerror=alert(1)>")))
    await alice.expect(wire.ReqOptions)  # refused: asked again
    alice.send(wire.HostOptions.of(DEFAULT))
    for client, seat in ((alice, 0), (bob, 1)):
        assert (await client.expect(wire.MsgOptions)).options == DEFAULT, "only the plain name was taken"
        await client.expect(wire.ReqSetup)
        client.send(wire.MsgSetup(wire.write_setup(DEFAULT, seat, placement(seat))))
    await alice.expect(wire.MsgStart)
    url = f"http://127.0.0.1:{daemon.ports['web']}/api/games"
    (game,) = await poll_json(url, lambda body: body["games"] or None, "the Combat game in /api/games")
    detail = json.dumps(await poll_json(f"{url}/{game['id']}", lambda body: body, "the game's detail"))
    assert "onerror" not in detail and '"map": "Default"' in detail
    assert "invalid options: map name '<img src=x onerror=alert(1)>'" in daemon.text
