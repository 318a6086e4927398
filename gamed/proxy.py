"""The PROXY protocol (HAProxy's, v1 and v2) in front of any port whose description starts with
``haproxy:`` (``haproxy:tcp:4600``; docs/deployment.md, "Behind HAProxy").

Twisted's own wrapper (``twisted.protocols.haproxy``) starts the wrapped protocol at once and only
answers ``getPeer`` with the client's address once the header has come; gamed's connection
limits and bans decide when a connection is built, from its address, and a protocol notes its peer
when it starts. So here the connection waits for its header first (at most ``HEADER_TIME``
seconds, ``MAX_PENDING`` connections at once): then the wrapped factory (the port's
``ConnectionLimits``) builds its protocol for the client's real address, as if the client had
connected directly. A connection without a valid header is closed.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import interfaces
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.protocols import policies
# Twisted's own header parsers (its package exports only the wrapper, which starts the wrapped
# protocol too early for gamed): private modules, so a Twisted upgrade is checked by tests/test_proxy.py.
from twisted.protocols.haproxy._exceptions import InvalidProxyHeader
from twisted.protocols.haproxy._v1parser import V1Parser
from twisted.protocols.haproxy._v2parser import V2Parser
from zope.interface import directlyProvides, providedBy

HEADER_TIME = 5.0  # seconds a connection has to send its PROXY header
MAX_PENDING = 1024  # connections waiting for their header at once; more are closed at once
PREFIX = "haproxy:"


def split(description: str) -> tuple[bool, str]:
    """(whether the port speaks the PROXY protocol, the description of the port under it)."""
    if description.startswith(PREFIX):
        return True, description[len(PREFIX):]
    return False, description


class ProxiedConnection(policies.ProtocolWrapper):
    """One connection through the proxy: its header first, then the port's own protocol."""

    _log = Logger()

    def __init__(self, factory: ProxyHeaderFactory, wrappedProtocol: Any = None):
        super().__init__(factory, wrappedProtocol)
        self._parser: V1Parser | V2Parser | None = None
        self._info = None
        self._buffer = b""
        self._timer = None

    def makeConnection(self, transport) -> None:  # noqa: N802
        directlyProvides(self, providedBy(transport))
        Protocol.makeConnection(self, transport)
        self.factory.registerProtocol(self)
        self._timer = self.factory.clock.callLater(HEADER_TIME, self._too_slow)

    def _too_slow(self) -> None:
        self._timer = None
        self._log.info("{peer}: no PROXY header within {s:g} s; closed", peer=_shown(self.transport.getPeer()), s=HEADER_TIME)
        self.transport.abortConnection()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.wrappedProtocol is not None:
            return self.wrappedProtocol.dataReceived(data)
        if self.transport is None or self.disconnecting:
            return
        self._buffer += data
        if self._parser is None:
            head = self._buffer
            if len(head) >= 16 and head[:12] == V2Parser.PREFIX and head[12] & 0xF0 == 0x20:
                self._parser = V2Parser()
            elif len(head) >= 8 and head[:5] == V1Parser.PROXYSTR:
                self._parser = V1Parser()
            elif len(head) >= 16 or not (V2Parser.PREFIX.startswith(head[:12]) or V1Parser.PROXYSTR.startswith(head[:5])):
                return self._refuse("the connection did not start with a PROXY header")
            else:
                return  # too little yet to tell
            data, self._buffer = self._buffer, b""
        try:
            self._info, remaining = self._parser.feed(data)
        except InvalidProxyHeader:
            return self._refuse("an invalid PROXY header")
        if self._info is None:
            return
        self._start(remaining)

    def _refuse(self, why: str) -> None:
        self._log.info("{peer}: {why}; closed", peer=_shown(self.transport.getPeer()), why=why)
        self._cancel()
        self.transport.abortConnection()

    def _cancel(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _start(self, remaining: bytes) -> None:
        self._cancel()
        self.factory.started(self)
        inner = self.factory.wrappedFactory.buildProtocol(self.getPeer())
        if inner is None:  # refused by the port's limits (which answered already, or close it)
            self.transport.loseConnection()
            return
        self.wrappedProtocol = inner
        inner.makeConnection(self)
        if remaining and not self.disconnecting:
            inner.dataReceived(remaining)

    def getPeer(self) -> interfaces.IAddress:  # noqa: N802
        if self._info is not None and self._info.source is not None:
            return self._info.source
        return self.transport.getPeer()

    def getHost(self) -> interfaces.IAddress:  # noqa: N802
        if self._info is not None and self._info.destination is not None:
            return self._info.destination
        return self.transport.getHost()

    def connectionLost(self, reason) -> None:  # noqa: N802
        self._cancel()
        self.factory.unregisterProtocol(self)
        if self.wrappedProtocol is not None:
            self.wrappedProtocol.connectionLost(reason)
            self.wrappedProtocol = None


def _shown(address: Any) -> str:
    host, port = getattr(address, "host", "?"), getattr(address, "port", "?")
    return f"{host}:{port}"


class ProxyHeaderFactory(policies.WrappingFactory):
    """Wraps a port's factory (its ``ConnectionLimits``) so that each connection is built for the
    address its PROXY header names."""

    protocol = ProxiedConnection
    noisy = False

    def __init__(self, wrappedFactory: Factory, clock: Any):  # noqa: N803
        super().__init__(wrappedFactory)
        self.clock = clock
        self.pending = 0

    def buildProtocol(self, addr) -> ProxiedConnection | None:  # noqa: N802
        if self.pending >= MAX_PENDING:
            return None  # the kernel's connection is closed at once
        self.pending += 1
        return self.protocol(self)

    def started(self, connection: ProxiedConnection) -> None:
        self.pending -= 1
        connection._counted = False

    def unregisterProtocol(self, p) -> None:  # noqa: N802
        if getattr(p, "_counted", True):
            self.pending -= 1
            p._counted = False
        super().unregisterProtocol(p)

    def logPrefix(self) -> str:  # noqa: N802
        inner = self.wrappedFactory
        prefix = inner.logPrefix() if interfaces.ILoggingContext.providedBy(inner) else type(inner).__name__
        return f"{prefix} (PROXY)"
