"""In-memory Kalaha clients for unit tests: StringTransport connections to a KalahaService on a Clock."""

from __future__ import annotations

import random

import attrs

from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from gamed.config import KalahaConfig, Limits
from gamed.kalaha.service import KalahaService


def make_service(clock: Clock | None = None, seed: int = 7, **settings) -> KalahaService:
    """A KalahaService on a Clock; keyword arguments set KalahaConfig or Limits fields."""
    limit_names = {a.name for a in attrs.fields(Limits)}
    kalaha = {k: v for k, v in settings.items() if k not in limit_names}
    limits = {k: v for k, v in settings.items() if k in limit_names}
    kalaha.setdefault("pair_delay", 0)
    kalaha.setdefault("board", False)
    return KalahaService(KalahaConfig(**kalaha), Limits(**limits), clock or Clock(), rng=random.Random(seed))


class Client:
    """One connection to the service: send lines, read the lines sent back, drop or finish it."""

    _port = 40000

    def __init__(self, service: KalahaService, host: str = "192.0.2.1", factory=None):
        Client._port += 1
        self.service = service
        self.factory = factory or service.port_factory()
        addr = IPv4Address("TCP", host, Client._port)
        self.transport = StringTransport(peerAddress=addr)
        self.protocol = self.factory.buildProtocol(addr)
        self.protocol.makeConnection(self.transport)
        self.lost = False

    @property
    def player(self):
        """The KalahaProtocol behind the connection-limit wrapper."""
        return getattr(self.protocol, "wrappedProtocol", self.protocol)

    def send(self, *lines: str, eol: bytes = b"\r\n") -> None:
        self.raw(b"".join(line.encode("latin-1") + eol for line in lines))

    def raw(self, data: bytes) -> None:
        self.protocol.dataReceived(data)
        self.finish()

    def read(self) -> list[str]:
        """Lines received since the last read."""
        data = self.transport.value()
        self.transport.clear()
        self.finish()
        assert data == b"" or data.endswith(b"\r\n"), data
        return data.decode("ascii").split("\r\n")[:-1] if data else []

    def keywords(self) -> list[str]:
        return [line.split()[0] for line in self.read()]

    @property
    def closing(self) -> bool:
        return self.transport.disconnecting

    def finish(self) -> None:
        """Complete a close the server asked for, as the reactor would."""
        if self.transport.disconnecting and not self.lost:
            self.drop()

    def drop(self) -> None:
        """The client goes away."""
        if not self.lost:
            self.lost = True
            self.protocol.connectionLost(Failure(ConnectionDone()))


def greeted(service: KalahaService, **kwargs) -> Client:
    """A new client whose greeting has been read."""
    client = Client(service, **kwargs)
    client.read()
    return client


def pair(service: KalahaService, names=("alice", "bob")) -> tuple[Client, Client]:
    """Two named clients seated at a game (A, B) through a named table, their reads emptied."""
    clients = []
    for name in names:
        client = Client(service)
        client.send(f"NAME {name}", f"TABLE t-{names[0]}")
        clients.append(client)
    for client in clients:
        client.read()
    return clients[0], clients[1]


def finish_all(*clients: Client) -> None:
    for c in clients:
        c.finish()
