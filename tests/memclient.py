"""In-memory connections for unit tests: a StringTransport client of any game service's factory."""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure


def next_turns(clock, limit: int = 100_000) -> None:
    """Run the calls that are due now, and those they schedule for the next turns, as the reactor
    would: a connection handles only so many lines per turn, and a flooding one waits for its
    share in the daemon's TurnQueue, whose busy turns come ``TurnQueue.interval`` apart."""
    from gamed.backpressure import TurnQueue

    for _ in range(limit):
        due = [call.getTime() for call in clock.getDelayedCalls()]
        if not due or min(due) > clock.seconds() + TurnQueue.interval + 1e-9:
            return
        clock.advance(max(0.0, min(due) - clock.seconds()))
    raise AssertionError("calls due now keep scheduling more calls due now")


def heard_until(clock, read, heard, limit: int = 200, step: float = 0.5, missing=lambda: "not done") -> None:
    """Pass every item ``read()`` returns to ``heard(item)`` until it returns True; time passes
    (``step`` seconds) only while nothing comes. AssertionError(``missing()``) after ``limit`` reads."""
    for _ in range(limit):
        got = read()
        if not got:
            clock.advance(step)
            continue
        for item in got:
            if heard(item):
                return
    raise AssertionError(missing())


class Client:
    """One connection to the service: send lines, read the lines sent back, drop or finish it."""

    _port = 40000

    def __init__(self, service, host: str = "192.0.2.1", factory=None):
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
        """The game's protocol behind the connection-limit wrapper."""
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
