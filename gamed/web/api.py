"""twisted.web resources of the JSON API (``/api/...``) and the server-sent event streams.

Every answer is JSON (errors too: ``{"error": "..."}``). Live data comes from the ``LiveHub``,
finished matches and ratings from the ``RecordStore`` (empty lists and 404s without one). An
event stream is an ``ILiveViewer`` over one request: it writes while the client keeps up, holds
events while the connection's buffer is full, and is dropped (and logged) once more than its
limit is waiting.
"""

from __future__ import annotations

import json
import pathlib
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import resource, server, static
from zope.interface import implementer

from gamed import __version__
from gamed.observers import ILiveViewer, LiveHub, event_frame
from gamed.competition import view
from gamed.competition.store import TournamentError, TournamentStore
from gamed import registry
from gamed.identity import LoginError, Refusal
from gamed.names import valid_name
from gamed.ports import ListeningPorts
from gamed.textwire import REFUSAL_CODES

STATIC = pathlib.Path(__file__).resolve().parent / "static"
MAX_LIMIT = 500  # matches or ratings in one answer
MAX_NAME = 100  # characters of a player's name (the games allow 32; programs' names may be longer)
MAX_DIGITS = 18  # digits of a number in a path or parameter (a match id fits SQLite's 64-bit integers)
_NUMBER = re.compile(r"[0-9]{1,%d}" % MAX_DIGITS)


def parse_number(text: str) -> int | None:
    """The whole number ``text`` spells in ASCII digits (at most ``MAX_DIGITS``), else None.

    The one parser of every number in a path or query: ``str.isdigit`` and ``int`` also take
    other scripts' digits (``"\u0661"`` is 1) and superscripts (``"\u00b2"``, which ``int``
    refuses)."""
    if not _NUMBER.fullmatch(text):
        return None
    return int(text)


def _json_bytes(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")


def write_json(request: server.Request, data: object, code: int = 200) -> bytes:
    """Set the status and headers of a JSON answer; returns the body."""
    request.setResponseCode(code)
    request.setHeader(b"content-type", b"application/json; charset=utf-8")
    request.setHeader(b"cache-control", b"no-store")
    return _json_bytes(data)


class CrossOrigin:
    """The API's cross-origin policy (``[web] cors``): which other sites' pages may read it.

    ``()`` = none (no ``Access-Control-Allow-Origin``: same origin only), ``("*",)`` = any, or
    the origins allowed (``https://example.org``), each answered with its own origin."""

    def __init__(self, origins: tuple[str, ...] = ()):
        self.any = origins == ("*",)
        self.origins = frozenset(o.encode("ascii") for o in origins if o != "*")

    def apply(self, request: server.Request) -> None:
        if self.any:
            request.setHeader(b"access-control-allow-origin", b"*")
        elif self.origins:
            request.setHeader(b"vary", b"origin")
            origin = request.getHeader(b"origin")
            if origin in self.origins:
                request.setHeader(b"access-control-allow-origin", origin)


def bearer(request: server.Request) -> tuple[str, str] | None:
    """The ``(name, token)`` of the request's ``Authorization: Bearer <name>:<token>``; None (and
    the ``WWW-Authenticate`` of a 401) without one in that form."""
    header = (request.getHeader(b"authorization") or b"").decode("ascii", "replace").strip()
    scheme, _, credentials = header.partition(" ")
    name, colon, token = credentials.strip().partition(":")
    if scheme.lower() != "bearer" or not colon or not valid_name(name):
        request.setHeader(b"www-authenticate", b'Bearer realm="gamed"')
        return None
    return name, token


class JsonError(resource.Resource):
    """An error answer as JSON, for any method."""

    isLeaf = True

    def __init__(self, code: int, message: str):
        super().__init__()
        self.code = code
        self.message = message

    def render(self, request: server.Request) -> bytes:
        return write_json(request, {"error": self.message}, self.code)

    def getChild(self, path, request):  # noqa: N802
        return self


@implementer(ILiveViewer, IPushProducer)
class EventStream:
    """One ``text/event-stream`` response that a table or the list of games writes to."""

    _log = Logger()
    content_type = b"text/event-stream; charset=utf-8"
    keepalive_bytes = b": keepalive\n\n"

    def __init__(self, request: server.Request, limit: int, gone: Callable[[EventStream], None],
                 preamble: bytes = b"retry: 3000\n\n"):
        self.request = request
        self.limit = limit
        self.closed = False
        self.dropped = False
        self._gone = gone
        self._paused = False
        self._held: list[bytes] = []
        self._held_bytes = 0
        request.setHeader(b"content-type", self.content_type)
        request.setHeader(b"cache-control", b"no-cache")
        request.setHeader(b"x-accel-buffering", b"no")  # reverse proxies must not buffer the stream
        request.registerProducer(self, True)
        request.notifyFinish().addBoth(self._finished)
        request.write(preamble)  # sends the headers now; an event stream's browser reconnects after 3 s

    @property
    def peer(self) -> str:
        addr = self.request.getClientAddress()
        return f"{getattr(addr, 'host', addr)}:{getattr(addr, 'port', '')}"

    def deliver(self, data: bytes) -> None:
        if self.closed or not data:
            return
        if not self._paused:
            self.request.write(data)
            return
        self._held_bytes += len(data)
        if self._held_bytes > self.limit:
            self._drop()
            return
        self._held.append(data)

    def keepalive(self) -> None:
        self.deliver(self.keepalive_bytes)

    def end(self) -> None:
        """Close the stream cleanly (anything held is written first)."""
        if self.closed:
            return
        self.closed = True
        held, self._held = self._held, []
        if held:
            self.request.write(b"".join(held))
        self.request.unregisterProducer()
        self.request.finish()

    def _drop(self) -> None:
        self.dropped = True
        self.closed = True
        self._held = []
        self._log.info(
            "event stream {path} of {peer} dropped: more than {limit} bytes waiting to be read",
            path=self.request.path.decode("ascii", "replace"),
            peer=self.peer,
            limit=self.limit,
        )
        self.request.unregisterProducer()
        transport = self.request.channel.transport if self.request.channel else None
        if transport is not None:
            transport.abortConnection()
        self._gone(self)

    def _finished(self, result) -> None:
        # The response is complete, or the client went away (the Deferred failed): forget it.
        self.closed = True
        self._held = []
        self._gone(self)

    # IPushProducer: the connection's buffer is full (pause) or has drained (resume).
    def pauseProducing(self) -> None:  # noqa: N802
        self._paused = True

    def resumeProducing(self) -> None:  # noqa: N802
        self._paused = False
        held, self._held, self._held_bytes = self._held, [], 0
        if held and not self.closed:
            self.request.write(b"".join(held))

    def stopProducing(self) -> None:  # noqa: N802
        self.closed = True
        self._held = []


class ApiResource(resource.Resource):
    """``/api/...``: the server's ports, games, their event streams, matches, players and ratings."""

    isLeaf = True
    _log = Logger()

    def __init__(
        self,
        hub: LiveHub,
        streams: StreamRegistry,
        ports: ListeningPorts | None = None,
        cors: CrossOrigin | None = None,
        games: tuple[registry.IGame, ...] | None = None,
        players: Any = None,
    ):
        super().__init__()
        self.bot: Any = None  # the bot API (gamed.web.bot.BotApi), when the daemon has one
        self.players = players  # the daemon's gamed.players.Players: /api/me logs in with a token
        self.hub = hub
        self.streams = streams
        self.ports = ports if ports is not None else ListeningPorts()
        self.cors = cors or CrossOrigin()
        self.games = registry.by_name(games)
        self._known = ", ".join(self.games)

    @property
    def store(self):
        return self.hub.store

    def render(self, request: server.Request):
        self.cors.apply(request)
        parts = [p.decode("utf-8", "replace") for p in request.postpath]
        if parts and parts[-1] == "":
            parts.pop()
        if parts[:1] == ["bot"] and self.bot is not None:
            return self.bot.render(request, parts[1:])
        if request.method not in (b"GET", b"HEAD"):  # the web channel refuses them before this
            request.setHeader(b"allow", b"GET, HEAD")
            return write_json(request, {"error": "only GET and HEAD are allowed here"}, 405)
        try:
            return self._route(request, parts)
        except _BadRequest as e:
            return write_json(request, {"error": str(e)}, 400)

    def _route(self, request: server.Request, parts: list[str]):
        match parts:
            case ["server"]:
                return write_json(
                    request,
                    {
                        "version": __version__,
                        "ports": self.ports.as_json(),
                        "records": self.store is not None,
                        "games": [_game_json(g) for g in self.games.values()],
                    },
                )
            case ["me"]:
                return self._me(request)
            case ["games"]:
                return write_json(request, self.hub.games())
            case ["games", table_id]:
                table = self.hub.table(table_id)
                if table is None:
                    return _not_found(request, f"no game {table_id}")
                return write_json(request, table.detail())
            case ["games", table_id, "events"]:
                table = self.hub.table(table_id)
                if table is None:
                    return _not_found(request, f"no game {table_id}")
                return self._stream(request, table.add, table.remove)
            case ["events"]:
                return self._stream(request, self._watch_list, self.hub.remove_list_viewer)
            case ["matches"]:
                limit = _int_arg(request, "limit", 20, 1, MAX_LIMIT)
                game = _str_arg(request, "game")
                played = not _yes_no_arg(request, "unplayed", True)
                if game and game not in self.games:
                    raise _BadRequest(f"no game type {game[:40]}; known: {self._known}")
                if self.store is None:
                    return write_json(request, {"matches": []})
                d = self.store.recent(limit, game, played=played)
                return self._later(request, d, lambda m: {"matches": m})
            case ["players", quoted]:
                name = urllib.parse.unquote(quoted)
                limit = _int_arg(request, "limit", 20, 1, MAX_LIMIT)
                played = not _yes_no_arg(request, "unplayed", True)
                missing = f"no player {name[:MAX_NAME]}"
                if self.store is None or not name or len(name) > MAX_NAME or not name.isprintable():
                    return _not_found(request, missing + (" (no records are kept)" if self.store is None else ""))
                return self._later(request, self.store.player(name, limit, played), lambda p: p, missing)
            case ["tournaments"]:
                if self.store is None:
                    return write_json(request, {"tournaments": []})
                d = TournamentStore(self.store, None).names()
                return self._later(request, d, lambda rows: {"tournaments": [view.summary(*row) for row in rows]})
            case ["tournaments", name]:
                missing = f"no tournament named {name[:MAX_NAME]}"
                if self.store is None or not name or len(name) > MAX_NAME or not name.isprintable():
                    return _not_found(request, missing + (" (no records are kept)" if self.store is None else ""))
                d = TournamentStore(self.store, None).load(name)
                d.addCallbacks(lambda stored: view.export_data(stored, view.stored_report(stored)), _no_tournament)
                return self._later(request, d, lambda t: t, missing)
            case ["matches", match_id]:
                number = parse_number(match_id)
                shown = match_id[:40]
                if number is None:
                    return _not_found(request, f"no match {shown}")
                if self.store is None:
                    return _not_found(request, f"no match {shown} (no records are kept)")
                return self._later(request, self.store.match(number), lambda m: m, f"no match {shown}")
            case ["ratings", game]:
                if game not in self.games:
                    return _not_found(request, f"no game type {game[:40]}; known: {self._known}")
                limit = _int_arg(request, "limit", 100, 1, MAX_LIMIT)
                if self.store is None:
                    return write_json(request, {"game": game, "ratings": []})
                d = self.store.leaderboard(game, limit)
                return self._later(request, d, lambda r: {"game": game, "ratings": r})
        return _not_found(request, f"no such resource: /api/{'/'.join(parts)}")

    def _me(self, request: server.Request):
        """``/api/me``: who the ``Authorization: Bearer <name>:<token>`` header logs in as (the
        same accounts, tokens and failed-login limit as every game's LOGIN line)."""
        request.setHeader(b"cache-control", b"no-store")
        credentials = bearer(request)
        if credentials is None:
            return write_json(request, {"error": "send the header Authorization: Bearer <name>:<token>"}, 401)
        name, token = credentials
        if self.players is None:
            error = LoginError(Refusal.NO_ACCOUNTS)
            return write_json(request, {"error": error.text, "code": REFUSAL_CODES[error.refusal]}, 503)
        host = str(getattr(request.getClientAddress(), "host", "?"))
        d = self.players.login(name, token, host)
        gone: list = []
        request.notifyFinish().addErrback(gone.append)

        def answer(who) -> None:
            if not gone:
                body = write_json(request, {"name": who.name, "kind": who.kind, "account": True})
                if request.method != b"HEAD":
                    request.write(body)
                request.finish()

        def refused(failure: Failure) -> None:
            error = failure.trap(LoginError) and failure.value
            if gone:
                return
            status = {Refusal.TOO_MANY: 429, Refusal.NO_ACCOUNTS: 503}.get(error.refusal, 401)
            if status == 401:
                request.setHeader(b"www-authenticate", b'Bearer realm="gamed", error="invalid_token"')
            body = write_json(request, {"error": error.text, "code": REFUSAL_CODES[error.refusal]}, status)
            if request.method != b"HEAD":
                request.write(body)
            request.finish()

        d.addCallbacks(answer, refused)
        d.addErrback(lambda f: self._log.failure("/api/me failed", f))
        return server.NOT_DONE_YET

    def _watch_list(self, stream: EventStream) -> None:
        self.hub.add_list_viewer(stream)
        d = self.hub.recent_matches()
        d.addCallback(lambda matches: stream.deliver(event_frame("matches", matches)))
        d.addErrback(lambda f: self._log.failure("cannot list the recent matches", f))

    def _stream(self, request: server.Request, add, remove):
        if not self.streams.has_room():
            return write_json(request, {"error": f"too many viewers (limit {self.streams.max_viewers})"}, 503)

        def gone(stream: EventStream) -> None:
            self.streams.discard(stream)
            remove(stream)

        stream = EventStream(request, self.streams.buffer, gone)
        self.streams.add(stream)
        if request.method == b"HEAD":
            stream.end()
            return server.NOT_DONE_YET
        add(stream)
        return server.NOT_DONE_YET

    def _later(self, request: server.Request, d: defer.Deferred, shape, missing: str | None = None):
        """Answer when ``d`` fires (``None`` -> 404 ``missing``), unless the client has gone."""
        gone = []
        request.notifyFinish().addErrback(lambda f: gone.append(f))

        def answer(value) -> None:
            if gone:
                return
            if value is None and missing is not None:
                body = write_json(request, {"error": missing}, 404)
            else:
                body = write_json(request, shape(value))
            if request.method != b"HEAD":
                request.write(body)
            request.finish()

        def failed(failure: Failure) -> None:
            self._log.failure("{path} failed", failure, path=request.path.decode("ascii", "replace"))
            if not gone:
                request.write(write_json(request, {"error": "internal error"}, 500))
                request.finish()

        d.addCallback(answer)
        d.addErrback(failed)
        return server.NOT_DONE_YET


class _BadRequest(ValueError):
    pass


def _game_json(game: registry.IGame) -> dict:
    """A registered game for ``/api/server``: what the pages list and how they draw it."""
    fewest, most = game.seats
    return {"name": game.name, "title": game.title, "seats": [fewest, most], "board": game.board or None}


def _no_tournament(failure: Failure) -> None:
    failure.trap(TournamentError)
    return None


def _not_found(request: server.Request, message: str) -> bytes:
    return write_json(request, {"error": message}, 404)


def _str_arg(request: server.Request, name: str) -> str | None:
    values = request.args.get(name.encode())
    if not values or not values[0]:
        return None
    return values[0].decode("utf-8", "replace")


def _yes_no_arg(request: server.Request, name: str, default: bool) -> bool:
    text = _str_arg(request, name)
    if text is None:
        return default
    if text.lower() in ("yes", "1", "true"):
        return True
    if text.lower() in ("no", "0", "false"):
        return False
    raise _BadRequest(f"{name} must be yes or no, not {text[:40]!r}")


def _int_arg(request: server.Request, name: str, default: int, low: int, high: int) -> int:
    text = _str_arg(request, name)
    if text is None:
        return default
    number = parse_number(text)
    if number is None or not low <= number <= high:
        raise _BadRequest(f"{name} must be a whole number from {low} to {high}, not {text[:40]!r}")
    return number


class StreamRegistry:
    """The open event streams of one site, for the viewer limit and the keep-alive comments."""

    def __init__(self, max_viewers: int, buffer: int):
        self.max_viewers = max_viewers
        self.buffer = buffer
        self.streams: set[EventStream] = set()

    def has_room(self) -> bool:
        return not self.max_viewers or len(self.streams) < self.max_viewers

    def add(self, stream: EventStream) -> None:
        self.streams.add(stream)

    def discard(self, stream: EventStream) -> None:
        self.streams.discard(stream)

    def keepalive(self) -> None:
        for stream in list(self.streams):
            stream.keepalive()

    def end_all(self) -> None:
        for stream in list(self.streams):
            stream.end()


class StaticFiles(static.File):
    """The pages from package data: no directory listings, JSON 404s, UTF-8 text types."""

    contentTypes = {
        **static.File.contentTypes,
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".json": "application/json",
        ".svg": "image/svg+xml",
        ".ico": "image/x-icon",
    }

    def __init__(self, path, *args, **kwargs):
        super().__init__(path, *args, **kwargs)
        self.childNotFound = JsonError(404, "no such page")

    def directoryListing(self):  # noqa: N802
        return JsonError(404, "no such page")

    def getChild(self, path: bytes, request):  # noqa: N802
        # A NUL makes the file system calls raise (a 500), and twisted.web logs an error for every
        # segment that is not UTF-8: neither names one of our files, so both are a quiet 404.
        try:
            name = path.decode("utf-8")
        except UnicodeDecodeError:
            return self.childNotFound
        if not name.isprintable():
            return self.childNotFound
        return super().getChild(path, request)

    def createSimilarFile(self, path):  # noqa: N802
        f = super().createSimilarFile(path)
        f.childNotFound = self.childNotFound
        return f


def build_root(
    hub: LiveHub,
    streams: StreamRegistry,
    static_dir: pathlib.Path = STATIC,
    ports: ListeningPorts | None = None,
    cors: CrossOrigin | None = None,
    games: tuple[registry.IGame, ...] | None = None,
    players: Any = None,
) -> resource.Resource:
    """The site's root: the static pages, with ``/api`` (under the ``cors`` policy, knowing
    ``games``, default ``gamed.registry.GAMES``), ``/healthz`` and ``/readyz`` (gamed.web.health)
    beside them."""
    root: resource.Resource
    if static_dir.is_dir():
        root = StaticFiles(str(static_dir))
    else:
        root = resource.Resource()
        root.childNotFound = JsonError(404, "no such page")
    root.putChild(b"api", ApiResource(hub, streams, ports, cors, games, players))
    from gamed.web.health import Health, Ready

    root.putChild(b"healthz", Health())
    root.putChild(b"readyz", Ready(ports, getattr(hub, "store", None), hub.clock))
    return root
