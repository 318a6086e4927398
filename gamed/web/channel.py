"""The HTTP side of the web site: twisted.web's channel and request with the site's bounds.

The site is read-only but for the bot API (``/api/bot/``, which takes POSTs), so a request with
another method than GET or HEAD is refused (405) as soon as its headers are in, before any of its
body is read; a body over ``[web] max_body`` is refused (413) the same way, and a client that takes more than ``[web] request_time`` seconds to send one
request's headers and body (slowloris) gets a 408. Each refusal is one JSON answer, after which the
connection only reads and discards until the client closes (at most ``LINGER`` seconds), so the
client sees the answer rather than a reset. Twisted's own idle timeout (``[web] idle_timeout``)
covers connections that send nothing; it is off while a response is being written, so event
streams are never cut by it. Every response carries the security headers below and no
``Server`` header.
"""

from __future__ import annotations

import ipaddress
import json

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IDelayedCall, INegotiated, ITCPTransport
from twisted.logger import Logger
from twisted.web import http, server

LINGER = 2.0  # seconds a refused connection is read and discarded before it is closed
ALLOWED_METHODS = (b"GET", b"HEAD")
BOT_API = b"/api/bot/"  # the one place a request may POST (gamed.web.bot)

CONTENT_SECURITY_POLICY = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)

_REASONS = {400: b"Bad Request", 405: b"Method Not Allowed", 408: b"Request Timeout", 413: b"Content Too Large",
            503: b"Service Unavailable"}


def refusal(code: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    """A complete HTTP/1.1 answer ``{"error": message}`` that closes the connection, with the
    security headers; for answers given before (or instead of) a twisted.web request."""
    body = json.dumps({"error": message}, separators=(",", ":")).encode("ascii")
    lines = [
        b"HTTP/1.1 %d %s" % (code, _REASONS.get(code, b"Error")),
        b"content-type: application/json; charset=utf-8",
        b"cache-control: no-store",
        *(name + b": " + value for name, value in SECURITY_HEADERS + headers),
        b"connection: close",
        b"content-length: %d" % len(body),
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class WebRequest(server.Request):
    """A request of the site: security headers on every answer, no ``Server`` header, a JSON 500
    without a traceback, and a bound on a chunked body (whose size is not known in advance)."""

    _log = Logger()
    _body_size = 0

    def process(self) -> None:
        for name, value in SECURITY_HEADERS:
            self.setHeader(name, value)
        if self.path == b"*":
            # twisted.web answers "GET *" itself (an empty 405 with its Server header); only
            # OPTIONS * means something, and the channel refuses OPTIONS.
            self.site = self.channel.site
            body = b'{"error":"no such page"}'
            self.setResponseCode(http.NOT_FOUND)
            self.setHeader(b"content-type", b"application/json; charset=utf-8")
            self.setHeader(b"content-length", b"%d" % len(body))
            self.write(body if self.method != b"HEAD" else b"")
            self.finish()
            return
        super().process()

    def render(self, resrc) -> None:
        self.responseHeaders.removeHeader(b"server")  # twisted.web's version is nobody's business
        super().render(resrc)

    def getClientAddress(self):  # noqa: N802
        """The client: the peer, or behind one of the site's trusted proxies the last address of
        ``X-Forwarded-For`` that is not a trusted proxy itself (a malformed header: the peer)."""
        peer = super().getClientAddress()
        site = getattr(self.channel, "site", None)
        trusted = getattr(site, "trusted", frozenset())
        if not trusted or getattr(peer, "host", None) not in trusted:
            return peer
        chain = b",".join(self.requestHeaders.getRawHeaders(b"x-forwarded-for", [])).decode("latin-1")
        for word in reversed([w.strip() for w in chain.split(",") if w.strip()]):
            try:
                client = ipaddress.ip_address(word)
            except ValueError:
                return peer
            if str(client) not in trusted:
                kind = IPv6Address if client.version == 6 else IPv4Address
                return kind("TCP", str(client), 0)
        return peer

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802
        channel = self.channel
        if channel is None or channel.refused:
            return
        self._body_size += len(data)
        if self._body_size > channel.max_body:
            channel.refuse(413, f"a request body may have at most {channel.max_body} bytes", log="body too large")
            return
        super().handleContentChunk(data)

    def processingFailed(self, reason):  # noqa: N802
        self._log.failure("{path} failed", reason, path=self.path.decode("ascii", "replace"))
        self.responseHeaders.removeHeader(b"server")
        body = b'{"error":"internal error"}'
        self.setResponseCode(http.INTERNAL_SERVER_ERROR)
        self.setHeader(b"content-type", b"application/json; charset=utf-8")
        self.setHeader(b"content-length", b"%d" % len(body))
        self.write(body)
        self.finish()
        return reason


class WebChannel(http.HTTPChannel):
    """One HTTP connection of the site, with the bounds described in the module's docstring.
    ``max_body`` and ``request_time`` (0 = no bound) are set by the site."""

    _log = Logger()
    max_body = 65_536
    request_time = 10.0
    refused = False
    _in_request = False  # a request's headers and body are in and it is being answered
    _deadline: IDelayedCall | None = None
    _linger: IDelayedCall | None = None

    @property
    def peer(self) -> str:
        addr = self.transport.getPeer() if self.transport else None
        return f"{getattr(addr, 'host', addr)}:{getattr(addr, 'port', '')}"

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.refused:
            return
        if self._deadline is None and self.request_time and not self._in_request:
            # The first bytes of a request: all of it (headers and body) must arrive in time.
            self._deadline = self.callLater(self.request_time, self._too_slow)
        super().dataReceived(data)

    def allHeadersReceived(self) -> None:  # noqa: N802
        # _command is the request line's method; twisted.web offers it under no other name here,
        # before the body, and the Request only learns it once the body is in.
        if self._command not in ALLOWED_METHODS and not (self._command == b"POST" and self._path.startswith(BOT_API)):
            self.refuse(405, "only GET and HEAD are allowed here", headers=((b"allow", b"GET, HEAD"),))
            return
        if self.length is not None and self.length > self.max_body:
            self.refuse(413, f"a request body may have at most {self.max_body} bytes", log="body too large")
            return
        super().allHeadersReceived()

    def allContentReceived(self) -> None:  # noqa: N802
        if self.refused:
            return
        self._cancel_deadline()
        self._in_request = True
        super().allContentReceived()

    def requestDone(self, request) -> None:  # noqa: N802
        self._in_request = False
        super().requestDone(request)

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        if not self.refused:
            super().lineReceived(line)

    def rawDataReceived(self, data: bytes) -> None:  # noqa: N802
        if not self.refused:
            super().rawDataReceived(data)

    def lineLengthExceeded(self, line: bytes) -> None:  # noqa: N802
        # LineReceiver's default just drops the connection.
        self.refuse(400, f"a request line or header line may have at most {self.MAX_LENGTH} bytes")

    def _respondToBadRequestAndDisconnect(self) -> None:  # noqa: N802
        # twisted.web's own answer to a malformed request is a bare status line.
        self.refuse(400, "malformed HTTP request")

    def _too_slow(self) -> None:
        self._deadline = None
        self.refuse(408, f"a request must arrive within {self.request_time:g} seconds", log="request too slow")

    def refuse(self, code: int, message: str, headers=(), log: str | None = None) -> None:
        """Answer ``{"error": message}`` with ``code``, then read nothing more and close."""
        if self.refused or self.transport is None:
            return
        self.refused = True
        self._cancel_deadline()
        self.setTimeout(None)
        if log:
            self._log.info("web client {peer} refused ({code}): {why}", peer=self.peer, code=code, why=log)
        self.transport.write(refusal(code, message, headers))
        if ITCPTransport.providedBy(self.transport) and not INegotiated.providedBy(self.transport):
            # Half-close, so what the client is still sending does not turn our answer into a reset
            # (plain TCP only: twisted's TLS layer has no half-close, so TLS closes through it).
            self.transport.loseWriteConnection()
            self._linger = self.callLater(LINGER, self._abort)
        else:
            self.transport.loseConnection()

    def _abort(self) -> None:
        self._linger = None
        self.transport.abortConnection()

    def _cancel_deadline(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def connectionLost(self, reason) -> None:  # noqa: N802
        self._cancel_deadline()
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        self._linger = None
        super().connectionLost(reason)
