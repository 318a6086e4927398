"""The daemon's listening ports: what each one serves and where it listens once it does.

``gamed.tap`` registers every port it listens on here (``ListeningPorts.watch``); each one names
what it serves (``kalaha``, ``web site``...) in Twisted's own per-port start-up line, and once
every port listens the daemon logs one ready line with all of them and their real addresses
(the bound port when port 0 was asked):

    gamed ready: kalaha tcp:4600, virtual fight tcp:4500, web site tcp:127.0.0.1:8080

``parse_ready_line`` reads that line back (for tests and benchmarks); the web site shows the same
list to visitors (``/api/server``, the front page's "how to play").
"""

from __future__ import annotations

import re

import attrs
from twisted.internet import defer
from twisted.internet.interfaces import IListeningPort, IStreamServerEndpoint
from zope.interface import implementer

from gamed import registry

# What each listening option serves, as the start-up lines and the web site name it: the
# registered games' ports (gamed.registry), then the web site's.
SERVED = {port.option: port.serves for game in registry.GAMES for port in game.ports} | {
    "web": "web site", "admin": "admin console", "generic": "generic protocol"}

READY = "gamed ready: "
_ADDRESS = re.compile(r"[a-z0-9]+:(?:(?P<host>\[[^\]]*\]|[^:\s]+):)?(?P<port>\d+)")
_ANY_HOST = ("0.0.0.0", "::", "")


@attrs.define
class ServedPort:
    """One listening port: the option it came from, what it serves, its description, and its
    address once it listens (``None`` before)."""

    option: str  # "kalaha", "fight-gui", "web" ... (the --option / config section)
    description: str  # as configured: "tcp:4600", "ssl:port=8443:...", "systemd:domain=INET:name=kalaha"
    host: str | None = None
    port: int | None = None  # the bound port (None for a UNIX socket)
    path: str | None = None  # a UNIX socket's path
    named: str | None = None  # what it serves in words, when the option's port is not in SERVED
    public: bool = True  # shown on the web site (/api/server); the admin console's is not

    @property
    def serves(self) -> str:
        return self.named or SERVED.get(self.option, self.option)

    @property
    def kind(self) -> str:
        """The description's endpoint type: ``tcp``, ``ssl``, ``systemd``, ``unix`` ..."""
        return self.description.split(":", 1)[0] or "tcp"

    @property
    def tls(self) -> bool:
        return self.kind in ("ssl", "tls") or "privateKey=" in self.description

    @property
    def where(self) -> str:
        """``tcp:4600`` on every interface, ``tcp:127.0.0.1:4600`` on one, ``unix:/path``."""
        if self.port is None:
            return f"{self.kind}:{self.path or '?'}"
        if self.host in _ANY_HOST or self.host is None:
            return f"{self.kind}:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.kind}:{host}:{self.port}"

    def listened(self, listening: IListeningPort) -> None:
        address = listening.getHost()
        if hasattr(address, "port"):
            self.host, self.port = str(address.host), int(address.port)
        else:  # a UNIX socket
            name = getattr(address, "name", None)
            self.path = name.decode("utf-8", "replace") if isinstance(name, bytes) else name

    def as_json(self) -> dict:
        """The port for ``/api/server``."""
        return {
            "serves": self.option,
            "name": self.serves,
            "address": self.where,
            "host": self.host,
            "port": self.port,
            "tls": self.tls,
        }


@implementer(IStreamServerEndpoint)
class _WatchedEndpoint:
    """An endpoint that tells its ``ServedPort`` where it listens once it does."""

    def __init__(self, endpoint: IStreamServerEndpoint, served: ServedPort, listening: defer.Deferred):
        self.endpoint = endpoint
        self.served = served
        self._listening = listening

    def listen(self, factory) -> defer.Deferred:
        d = self.endpoint.listen(factory)

        def listened(port: IListeningPort) -> IListeningPort:
            self.served.listened(port)
            if not self._listening.called:
                self._listening.callback(self.served)
            return port

        d.addCallback(listened)
        return d


class ListeningPorts:
    """Every port of the daemon, in the order they were configured."""

    def __init__(self) -> None:
        self.ports: list[ServedPort] = []
        self._listening: list[defer.Deferred] = []
        # True once the operator drains the daemon (gamed.admin): /readyz answers not ready.
        self.draining = False

    def watch(
        self, option: str, description: str, endpoint: IStreamServerEndpoint, serves: str | None = None,
        public: bool = True,
    ) -> IStreamServerEndpoint:
        """Register a port of ``option`` listening on ``endpoint`` (serving ``serves``, in words;
        default ``SERVED[option]``); returns the endpoint to listen on instead (it records the
        address)."""
        served = ServedPort(option, description, named=serves, public=public)
        self.ports.append(served)
        listening: defer.Deferred = defer.Deferred()
        self._listening.append(listening)
        return _WatchedEndpoint(endpoint, served, listening)

    def ready(self) -> defer.Deferred:
        """Fires (with this object) once every registered port listens."""
        d = defer.gatherResults(list(self._listening))
        d.addCallback(lambda _: self)
        return d

    def ready_line(self) -> str:
        """``gamed ready: kalaha tcp:4600, web site tcp:8080`` (every port, configured order)."""
        listed = ", ".join(f"{p.serves} {p.where}" for p in self.ports)
        return READY + (listed or "no listening ports")

    def as_json(self) -> list[dict]:
        return [p.as_json() for p in self.ports if p.public and (p.port is not None or p.path is not None)]


def parse_ready_line(line: str, served: dict[str, str] | None = None) -> dict[str, list[tuple[str, int]]] | None:
    """The ports of a ready line, by option (``{"kalaha": [("127.0.0.1", 4600)], "web": [...]}``),
    or None when ``line`` holds no ready line. A port on every interface has the host ``""``.
    ``served`` maps options to what they serve (default ``SERVED``)."""
    at = line.find(READY)
    if at < 0:
        return None
    listed = line[at + len(READY) :].split('"', 1)[0]  # a JSON log line: the string ends there
    options = {words: option for option, words in (SERVED if served is None else served).items()}
    found: dict[str, list[tuple[str, int]]] = {}
    for entry in listed.strip().split(", "):
        serves, _, address = entry.strip().rpartition(" ")
        m = _ADDRESS.fullmatch(address)
        if m is None or not serves:
            continue  # a UNIX socket, or "no listening ports"
        host = (m["host"] or "").strip("[]")
        found.setdefault(options.get(serves, serves), []).append((host, int(m["port"])))
    return found
