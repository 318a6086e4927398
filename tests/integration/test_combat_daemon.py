"""GGZ Combat against the real daemon over loopback (the game is being built: issue 5): two
clients are seated, the host's options reach both, setups start the game, moves are relayed."""

from __future__ import annotations

import pytest_twisted
from twisted.internet import defer, endpoints, protocol, reactor

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
