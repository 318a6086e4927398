"""The HTTP bot API (``/api/bot/...``): the generic protocol over HTTP, in the style of lichess's.

A bot with an account opens ``GET /api/bot/stream`` with ``Authorization: Bearer <name>:<token>``
and reads one JSON server message per line (NDJSON): ``hello`` first, then the games' messages
(``waiting``, ``started``, ``state``, ``event``, ``ended``), the same as on the generic port. It
asks with ``POST /api/bot/<type>`` (``play``, ``act``, ``resign``, ``leave``, ``token``), whose
body is the generic message's fields as a JSON object; the answer is the reply the generic port
would send (``ok``, ``token`` or ``error``). ``GET /api/bot/games`` lists the games. A person in
the browser (the play page) first asks ``POST /api/bot/guest`` for a guest's name and token.

The stream is the bot's connection: its seat is away while no stream is open (for the game's
grace period, as a dropped connection's), and a new stream takes it back. A second stream of the
same account replaces the first (which is told so in a ``bye``). See ``docs/web-api.md``.
"""

from __future__ import annotations

import hmac
import itertools
import json
import secrets
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import server
from zope.interface import implementer

from gamed.generic import wire
from gamed.generic.session import GenericSession, ISessionTransport
from gamed.identity import Identity, LoginError, Refusal
from gamed.textwire import REFUSAL_CODES
from gamed.web.api import EventStream, StreamRegistry, bearer, write_json

# The requests a bot POSTs: the generic message types whose reply is the answer.
POSTED = ("play", "act", "resign", "leave", "token")
_REPLIES = frozenset({"ok", "error", "token", "pong", "games"})
MAX_GUESTS = 10_000  # guest names with a token at once (the oldest are forgotten first)
_guest_numbers = itertools.count(1)
_AUTH = "send the header Authorization: Bearer <name>:<token> (an account's token)"


class NdjsonStream(EventStream):
    """One ``application/x-ndjson`` response: a JSON message per line, a blank line to keep it
    alive; held, bounded and dropped like the site's event streams."""

    content_type = b"application/x-ndjson"
    keepalive_bytes = b"\n"


@implementer(ISessionTransport)
class StreamTransport:
    """A bot's session as its stream carries it; the POST being answered takes its reply."""

    def __init__(self, host: str):
        self.host = host
        self.stream: NdjsonStream | None = None
        self.reply: list[dict] | None = None  # while a POST is handled: the reply, once sent

    @property
    def connected(self) -> bool:
        return self.stream is not None and not self.stream.closed

    def send(self, message: dict) -> None:
        kind = message.get("type") if type(message) is dict else None
        if self.reply is not None and not self.reply and kind in _REPLIES:
            self.reply.append(message)
            return
        if self.connected:
            self.stream.deliver(wire.encode(message).encode("ascii") + b"\n")

    def close(self, reason: str, message: dict | None = None) -> None:
        if message is not None:
            self.send(message)
        if self.stream is not None:
            self.stream.end()

    def hold(self, d: Deferred) -> None:
        pass  # a bot logs in with each request's header: no login is checked within a session


class BotApi:
    """The bot API of the games in ``generic`` (a GenericService: its hosts and players)."""

    _log = Logger()

    def __init__(self, generic: Any, streams: StreamRegistry):
        self.generic = generic
        self.streams = streams
        self.sessions: dict[str, GenericSession] = {}  # by player name, while its stream is open
        self.guests: dict[str, tuple[str, Identity]] = {}  # guest name -> (its token, its identity)

    # --- guests (the pages' players) ---------------------------------------------------------------

    def _guest(self, request: server.Request):
        """``POST /api/bot/guest`` ``{"name": ...}`` (optional): a guest's name and token, which
        it sends as any account's (``Bearer <name>:<token>``) while this daemon runs."""
        try:
            body = json.loads(request.content.read() or b"{}")
        except ValueError as e:
            return write_json(request, wire.error(wire.BAD_JSON, f"the body is not JSON: {str(e)[:80]}", "guest"), 400)
        if not isinstance(body, dict) or "type" in body:
            return write_json(request, wire.error(wire.NOT_AN_OBJECT, "the body is a JSON object: {\"name\": ...}", "guest"), 400)
        try:
            message = wire.parse(json.dumps({"type": "guest", "name": f"guest-{next(_guest_numbers)}", **body}))
        except wire.WireError as e:
            return write_json(request, wire.error(e.code, e.text, "guest"), 400)
        name = message["name"]
        if name in self.guests or name in self.sessions:
            return write_json(request, wire.error(wire.REFUSED, f"{Refusal.NAME_IN_USE.value}: {name}", "guest",
                                                  refusal="name_in_use"), 400)
        d = self.generic.players.guest(name)
        gone: list = []
        request.notifyFinish().addErrback(gone.append)

        def named(identity: Identity) -> None:
            if gone:
                return
            while len(self.guests) >= MAX_GUESTS:  # the oldest go first
                del self.guests[next(iter(self.guests))]
            token = secrets.token_urlsafe(18)
            self.guests[name] = (token, identity)
            _reply(request, wire.ok("guest", message.get("id"), name=name, token=token))

        def refused(failure: Failure) -> None:
            error = failure.trap(LoginError) and failure.value
            if not gone:
                _reply(request, wire.error(wire.REFUSED, error.text, "guest", refusal=error.refusal.name.lower()))

        d.addCallbacks(named, refused)
        d.addErrback(self._failed, request)
        return server.NOT_DONE_YET

    def render(self, request: server.Request, parts: list[str]):
        request.setHeader(b"cache-control", b"no-store")
        match (request.method, parts):
            case (b"GET" | b"HEAD", ["games"]):
                games = [{"name": name, **host.describe()} for name, host in self.generic.hosts.items()]
                return write_json(request, {"type": "games", "games": games})
            case (b"GET" | b"HEAD", ["stream"]):
                return self._authorized(request, lambda identity: self._open(request, identity))
            case (b"POST", ["guest"]):
                return self._guest(request)
            case (b"POST", [kind]) if kind in POSTED:
                return self._authorized(request, lambda identity: self._post(request, kind, identity))
            case (b"POST", _) | (b"GET" | b"HEAD", _):
                known = ("GET /api/bot/stream, GET /api/bot/games, POST /api/bot/guest, "
                         + ", ".join(f"POST /api/bot/{k}" for k in POSTED))
                return write_json(request, {"error": f"no such resource; the bot API has {known}"}, 404)
        request.setHeader(b"allow", b"GET, HEAD, POST")
        return write_json(request, {"error": "only GET, HEAD and POST are allowed here"}, 405)

    # --- who asks ------------------------------------------------------------------------------

    def _authorized(self, request: server.Request, then):
        credentials = bearer(request)
        if credentials is None:
            return write_json(request, {"error": _AUTH}, 401)
        name, token = credentials
        host = str(getattr(request.getClientAddress(), "host", "?"))
        guest = self.guests.get(name)
        if guest is not None and hmac.compare_digest(guest[0], token):
            d = defer.succeed(guest[1])
        else:
            d = self.generic.players.login(name, token, host)
        gone: list = []
        request.notifyFinish().addErrback(gone.append)

        def refused(failure: Failure) -> None:
            error = failure.trap(LoginError) and failure.value
            if gone:
                return
            status = {Refusal.TOO_MANY: 429, Refusal.NO_ACCOUNTS: 503}.get(error.refusal, 401)
            if status == 401:
                request.setHeader(b"www-authenticate", b'Bearer realm="gamed", error="invalid_token"')
            body = {"type": "error", "code": wire.REFUSED, "text": error.text, "refusal": error.refusal.name.lower(),
                    "status": REFUSAL_CODES[error.refusal]}
            _finish(request, write_json(request, body, status))

        def answer(identity) -> None:
            if not gone:
                then(identity)

        d.addCallbacks(answer, refused)
        d.addErrback(self._failed, request)
        return server.NOT_DONE_YET

    def _failed(self, failure: Failure, request: server.Request) -> None:
        self._log.failure("the bot API failed on {path}", failure, path=request.path.decode("ascii", "replace"))
        if not request.finished and not getattr(request, "_disconnected", False):
            try:
                _finish(request, write_json(request, {"type": "error", "code": wire.INTERNAL, "text": "internal error"}, 500))
            except Exception:  # the response had started: the stream is cut instead
                request.channel and request.channel.transport and request.channel.transport.abortConnection()

    # --- the stream ----------------------------------------------------------------------------

    def _open(self, request: server.Request, identity) -> None:
        if not self.streams.has_room():
            _finish(request, write_json(request, {"error": f"too many streams (limit {self.streams.max_viewers})"}, 503))
            return
        old = self.sessions.pop(identity.name, None)
        if old is not None:
            old.transport.close("a new stream took its place", wire.bye("another stream of this account took over"))
        transport = StreamTransport(str(getattr(request.getClientAddress(), "host", "?")))
        session = GenericSession(self.generic.hosts, self.generic.players, transport)
        session.identity = identity
        session.named = True
        self.sessions[identity.name] = session

        def gone(stream: EventStream) -> None:
            self.streams.discard(stream)
            if self.sessions.get(identity.name) is session:
                del self.sessions[identity.name]
            session.gone()  # a seat it plays is away, a waiting one leaves the lobby

        stream = NdjsonStream(request, self.streams.buffer, gone, preamble=wire.encode(session.hello()).encode() + b"\n")
        transport.stream = stream
        self.streams.add(stream)
        if request.method == b"HEAD":
            stream.end()
            return
        for host in self.generic.hosts.values():  # the account's away seat comes back with its stream
            seat = host.take_back(session, None)
            if seat is not None:
                session.seat = seat
                break

    # --- requests ------------------------------------------------------------------------------

    def _post(self, request: server.Request, kind: str, identity) -> None:
        session = self.sessions.get(identity.name)
        try:
            body = json.loads(request.content.read() or b"{}")
        except ValueError as e:
            return _reply(request, wire.error(wire.BAD_JSON, f"the body is not JSON: {str(e)[:80]}", kind))
        if not isinstance(body, dict) or "type" in body:
            return _reply(request, wire.error(wire.NOT_AN_OBJECT, f"the body is a JSON object of {kind}'s fields", kind))
        try:
            message = wire.parse(json.dumps({"type": kind, **body}))
        except wire.WireError as e:
            return _reply(request, wire.error(e.code, e.text, kind))
        if session is None:
            return _reply(request, wire.error(wire.NOT_NOW, "open GET /api/bot/stream first: the games' messages come on it", kind), 409)
        transport = session.transport
        transport.reply = []
        try:
            session.receive(message)
        finally:
            reply, transport.reply = transport.reply, None
        _reply(request, reply[0] if reply else wire.ok(kind, message.get("id")))


def _status(message: dict) -> int:
    if message["type"] != "error":
        return 200
    return {wire.NOT_NOW: 409, wire.NO_SUCH_GAME: 404, wire.INTERNAL: 500, wire.UNAVAILABLE: 503}.get(message["code"], 400)


def _reply(request: server.Request, message: dict, status: int | None = None) -> None:
    _finish(request, write_json(request, message, status or _status(message)))


def _finish(request: server.Request, body: bytes) -> None:
    if request.method != b"HEAD":
        request.write(body)
    request.finish()
