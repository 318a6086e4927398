"""The web service: one site (static pages + JSON API + event streams) on the ``[web]`` ports."""

from __future__ import annotations

import sys

from twisted.application.service import MultiService
from twisted.internet import task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.web import server

from gamed.config import Limits, WebConfig, cors_origins, trusted_proxies
from gamed.observers import LiveHub
from gamed.ports import ListeningPorts
from gamed.registry import IGame
from gamed.textline import ConnectionLimits
from gamed.web.api import STATIC, CrossOrigin, StreamRegistry, build_root
from gamed.web.channel import WebChannel, WebRequest, refusal


class WebSite(server.Site):
    """The twisted.web site with the bounds of ``config`` (see gamed.web.channel); its ports log
    as ``web``; its timeouts run on ``clock``."""

    noisy = False
    protocol = WebChannel  # HTTP/1.1 only: gamed installs no HTTP/2 implementation
    requestFactory = WebRequest

    def __init__(self, root, config: WebConfig, clock: IReactorTime):
        # The access log is its own ([web] access_log): off, standard output ("-") or a file.
        path = config.access_log if config.access_log not in ("", "-") else None
        super().__init__(root, logPath=path, timeout=config.idle_timeout or None, reactor=clock)
        self.config = config
        self.trusted = trusted_proxies(config.trusted_proxies)  # whose X-Forwarded-For names the client

    def startFactory(self) -> None:  # noqa: N802
        super().startFactory()
        if self.config.access_log == "-":
            self._logFile = sys.stdout

    def stopFactory(self) -> None:  # noqa: N802
        if self._logFile is sys.stdout:
            self._logFile = None
        super().stopFactory()

    def log(self, request) -> None:
        if self.config.access_log:
            super().log(request)

    def buildProtocol(self, addr) -> WebChannel:  # noqa: N802
        channel = super().buildProtocol(addr)
        channel.max_body = self.config.max_body
        channel.request_time = self.config.request_time
        return channel

    def logPrefix(self) -> str:  # noqa: N802
        return "web"


def _refusal(why: str) -> bytes:
    return refusal(503, why)


class WebService(MultiService):
    """Serves the site of ``hub``; sends keep-alive comments on every event stream and ends the
    streams cleanly when the daemon stops. ``ports`` are the daemon's listening ports and
    ``games`` its registered games (default ``gamed.registry.GAMES``), which the site shows
    visitors (``/api/server``)."""

    _log = Logger()
    name = "web"

    def __init__(
        self,
        config: WebConfig,
        limits: Limits,
        hub: LiveHub,
        clock: IReactorTime,
        static_dir=STATIC,
        ports: ListeningPorts | None = None,
        games: tuple[IGame, ...] | None = None,
        players=None,
    ):
        super().__init__()
        self.config = config
        self.limits = limits
        self.hub = hub
        self.clock = clock
        self.streams = StreamRegistry(config.max_viewers, config.viewer_buffer)
        self.ports = ports if ports is not None else ListeningPorts()
        cors = CrossOrigin(cors_origins(config.cors))
        self.root = build_root(hub, self.streams, static_dir, self.ports, cors, games, players)
        self._keepalive = task.LoopingCall(self.streams.keepalive)
        self._keepalive.clock = clock

    def serve_bots(self, generic) -> None:
        """Serve the bot API (``/api/bot/``) of ``generic``'s games (a GenericService)."""
        from gamed.web.bot import BotApi

        self.root.children[b"api"].bot = BotApi(generic, self.streams)

    def site(self) -> WebSite:
        return WebSite(self.root, self.config, self.clock)

    def port_factory(self) -> ConnectionLimits:
        """The factory a listening port serves: the site behind the connection limits."""
        site = self.site()
        limits = ConnectionLimits(site, self.limits.max_connections, self.limits.max_per_peer, _refusal)
        limits.exempt = site.trusted  # a trusted proxy carries many clients: no per-address limit for it
        return limits

    def startService(self) -> None:  # noqa: N802
        super().startService()
        if self.config.keepalive:
            self._keepalive.start(self.config.keepalive, now=False)

    def stopService(self):  # noqa: N802
        if self._keepalive.running:
            self._keepalive.stop()
        self.streams.end_all()
        return super().stopService()
