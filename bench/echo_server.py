"""A bare Twisted line echo server: the baseline that bench/kalaha_load.py compares gamed with.

One process, one reactor thread, ``LineOnlyReceiver`` with ``delimiter = b"\\n"``; every line is sent
straight back. It prints ``listening on PORT`` once it listens, then serves until it is killed.

With ``--relay`` it is instead the smallest Twisted server with Kalaha's output pattern (one line in,
the same line out to both players of a game): connections are paired in arrival order (1st with
2nd, 3rd with 4th, ...) and every line received from one member of a pair is written to both
members, the sender first. Each connection is greeted with one line, ``HELLO``, as soon as it has
its place in a pair, so a client that waits for the greeting before its next connect decides who
is paired with whom. A line from a connection without a partner (not yet, or no longer) goes back
to the sender only. Relay connections set ``TCP_NODELAY``, as gamed's do (see ``Relay``). Nothing
else: no parsing, no pairing again after a close.

    python bench/echo_server.py [--port 0] [--backlog 4096] [--relay]
"""

from __future__ import annotations

import argparse
import resource
import sys

from twisted.internet import reactor
from twisted.internet.protocol import Factory
from twisted.protocols.basic import LineOnlyReceiver


class Echo(LineOnlyReceiver):
    delimiter = b"\n"

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        self.sendLine(line)


class EchoFactory(Factory):
    protocol = Echo
    noisy = False


class Relay(LineOnlyReceiver):
    delimiter = b"\n"
    partner: Relay | None = None

    def connectionMade(self) -> None:  # noqa: N802
        # As gamed does (TextLineProtocol.connectionMade). Without it Nagle holds each write to a
        # client that only listened (the partner of the sender) until that client's delayed ACK of
        # the previous one, up to 40 ms: the relay would measure the ACK timer, not the server.
        self.transport.setTcpNoDelay(True)
        factory = self.factory
        waiting = factory.waiting
        if waiting is None:
            factory.waiting = self
        else:
            factory.waiting = None
            waiting.partner = self
            self.partner = waiting
        self.sendLine(b"HELLO")

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        self.sendLine(line)
        partner = self.partner
        if partner is not None:
            partner.sendLine(line)

    def connectionLost(self, reason) -> None:  # noqa: N802
        if self.factory.waiting is self:
            self.factory.waiting = None
        partner, self.partner = self.partner, None
        if partner is not None:
            partner.partner = None


class RelayFactory(Factory):
    protocol = Relay
    noisy = False
    waiting: Relay | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free one)")
    parser.add_argument("--backlog", type=int, default=4096, help="listen backlog")
    parser.add_argument(
        "--relay",
        action="store_true",
        help="pair connections in arrival order and write every line to both members of its pair",
    )
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    factory = RelayFactory() if args.relay else EchoFactory()
    port = reactor.listenTCP(args.port, factory, backlog=args.backlog, interface="127.0.0.1")
    print(f"listening on {port.getHost().port}", flush=True)
    reactor.run()


if __name__ == "__main__":
    sys.exit(main())
