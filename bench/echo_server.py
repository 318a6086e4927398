"""A bare Twisted line echo server: the baseline that bench/kalaha_load.py compares gamed with.

One process, one reactor thread, ``LineOnlyReceiver`` with ``delimiter = b"\\n"``; every line is sent
straight back. It prints ``listening on PORT`` once it listens, then serves until it is killed.

    python bench/echo_server.py [--port 0] [--backlog 4096]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = any free one)")
    parser.add_argument("--backlog", type=int, default=4096, help="listen backlog")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port = reactor.listenTCP(args.port, EchoFactory(), backlog=args.backlog, interface="127.0.0.1")
    print(f"listening on {port.getHost().port}", flush=True)
    reactor.run()


if __name__ == "__main__":
    sys.exit(main())
