"""``twistd gamed`` / ``twist gamed``: command-line options and the service tree they build.

Settings come from built-in defaults, then ``--config FILE`` (TOML), then the options given on the
command line; every one is validated before anything listens, and a bad one stops start-up with a
message (``usage.UsageError``) and a non-zero exit. Each game port is a strports description.
"""

from __future__ import annotations

import contextlib
import gc
import os
import tomllib
import resource
import sys
from typing import Any

from twisted.application import strports
from twisted.application.service import IService, MultiService, Service
from twisted.internet import defer, endpoints
from twisted.internet.error import CannotListenError
from twisted.internet.testing import MemoryReactor
from twisted.logger import Logger
from twisted.python import usage

from gamed import __version__, config, proxy, registry
from gamed.config import Config, ConfigError
from gamed.ports import ListeningPorts
from gamed.textline import ConnectionBudget

_log = Logger()

# Listen backlog for tcp: descriptions that do not set one; Twisted's default of 50 makes a burst
# of thousands of connections wait for SYN retries.
DEFAULT_BACKLOG = 4096

# The daemon's own port besides the games' (the web site is not a game, but shows them all).
WEB_PORT = registry.GamePort(
    "web", "listen", "web site", "gamed-web.socket",
    "Serve the web site (live games, replays, players, ratings, how to play, /api) on this strports description; repeatable; 'none' = off [default: tcp:8080]",
    plays=False,
)

# ... the generic port, every game in one JSON-lines protocol (docs/protocols/generic.md) ...
GENERIC_PORT = registry.GamePort(
    "generic", "listen", "generic protocol", "gamed-generic.socket",
    "Serve every game in the generic JSON-lines protocol (docs/protocols/generic.md) on this strports description; repeatable; 'none' = off [default: tcp:4800]",
    plays=False,
)

# ... and the metrics' own port, when [web] metrics_listen gives it descriptions.
METRICS_PORT = registry.GamePort(
    "metrics", "metrics_listen", "metrics", "gamed-metrics.socket",
    "Serve /metrics, /healthz and /readyz on a port of their own (then not on the web site) on this strports description; repeatable [default: none]",
    plays=False,
)

# Options of the shared sections: (option, section, setting, help with {default}).
_SHARED_OPTIONS = (
    ("records", "records", "database", "Database of finished matches and ratings: a SQLite path (in an existing directory), sqlite:..., postgresql://...; 'none' = keep none [default: gamed.sqlite]"),
    ("max-line", "limits", "max_line", "Longest line a client may send, in bytes [default: {default}]"),
    ("idle-timeout", "limits", "idle_timeout", "Seconds of silence before a connection is closed, 0 = never [default: {default:g}]"),
    ("max-connections", "limits", "max_connections", "Connections per port, 0 = unlimited [default: {default}]"),
    ("max-per-peer", "limits", "max_per_peer", "Connections per port from one address, 0 = unlimited [default: {default}]"),
    ("max-total-connections", "limits", "max_total_connections", "Connections on all ports together; 0 = as many as the open-file limit leaves after the descriptors reserved for logs, records, engines, programs and ports [default: 0]"),
    ("line-rate", "limits", "line_rate", "Lines per second a client may send before it is slowed down, 0 = unlimited [default: {default:g}]"),
    ("line-burst", "limits", "line_burst", "Lines a client may send in a burst before --line-rate applies [default: {default}]"),
    ("close-grace", "limits", "close_grace", "Seconds a closing client may take to read its last lines (or Combat messages) [default: {default:g}]"),
)


def _ports(games: tuple[registry.IGame, ...]) -> list[tuple[str, registry.GamePort]]:
    """Every kind of port of the daemon, in the order they listen: (config section, port)."""
    return [(game.section, port) for game in games for port in game.ports] + [("web", WEB_PORT), ("generic", GENERIC_PORT), ("web", METRICS_PORT)]


def _listen_option(option: str, help: str):
    def opt(self, description: str) -> None:
        self.listen.setdefault(option, []).append(description)

    opt.__doc__ = help
    opt.__name__ = "opt_" + option.replace("-", "_")
    return opt


class GamedOptions(usage.Options):
    """Options of the gamed plugin; each also has a config-file setting of the same meaning.

    ``options_class`` makes the concrete class for a tuple of games: their options, their ports'
    --GAME options and their Config class."""

    games: tuple[registry.IGame, ...] = ()
    config_class: type = Config
    settings: dict[str, tuple[str, str]] = {}  # option name -> (config section, setting)
    listen_settings: dict[str, tuple[str, str]] = {}  # listen option -> (config section, setting)

    synopsis = "[options]"
    longdesc = (
        "gamed hosts turn-based games for AI programs and people over TCP. Each --GAME option is a "
        "strports description (tcp:4600, tcp:port=4600:interface=127.0.0.1, ssl:port=4600:"
        "privateKey=key.pem:certKey=cert.pem, systemd:domain=INET:name=kalaha) and may be given "
        "more than once; 'none' switches the game off. Settings are read from --config (TOML), "
        "then from the command line (--set section.setting=value for any of them). Logs: twistd "
        "--logger=gamed.logs.text_observer (no debug lines) or --logger=gamed.logs.json_observer "
        "(one flat JSON object per line). The SSH admin console (off by default: --set admin.listen=tcp:2222:"
        "interface=127.0.0.1 --set admin.authorized_keys=FILE; docs/admin.md) lists, kicks, bans, "
        "broadcasts and drains; 'gamed admin' runs its commands from the shell."
    )

    def __init__(self):
        super().__init__()
        self.listen: dict[str, list[str]] = {}
        self.config: Config | None = None
        self.prepared: dict[str, Any] = {}  # game name -> what its prepare() returned
        self.sets: list[tuple[str, str, Any]] = []  # --set section.setting=value, in order

    def opt_set(self, assignment: str) -> None:
        """Any setting of the config file by its name: section.setting=value (a TOML value:
        30, true, "text", ["a", "b"]; a bare word is a string); repeatable, after --config."""
        name, eq, text = assignment.partition("=")
        section, dot, setting = name.strip().rpartition(".")
        if not eq or not dot or not section or not setting:
            raise usage.UsageError(f"--set takes section.setting=value (kalaha.move_time=30), not {assignment!r}")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()  # a bare word: a string
        self.sets.append((section, setting, value))

    def opt_version(self) -> None:
        """Print the gamed version and exit."""
        print(f"gamed {__version__}")
        raise SystemExit(0)

    def postOptions(self) -> None:  # noqa: N802
        cfg = self.effective_config()
        for option, (section, setting) in self.listen_settings.items():
            for description in getattr(getattr(cfg, section), setting):
                check_description(option, description)
        for description in cfg.admin.listen:
            check_description("set admin.listen", description)
        on = [game for game in self.games if game.switched_on(getattr(cfg, game.section))]
        if not on:
            raise usage.UsageError("every game is switched off: nothing to serve")
        for game in on:
            try:
                self.prepared[game.name] = game.prepare(getattr(cfg, game.section))
            except ConfigError as e:
                raise usage.UsageError(str(e)) from None
        self.config = cfg

    def effective_config(self):
        """The config file (read again now) with the command line's settings on top; UsageError
        with the one line of what is wrong (also what a reload, gamed.reload, reads)."""
        try:
            base = self.config_class()
            base = config.load(self["config"], base) if self["config"] else base
            values: dict[str, dict[str, Any]] = {}
            for option, (section, setting) in self.settings.items():
                if self[option] is not None:
                    values.setdefault(section, {})[setting] = self[option]
            if self["records"] in ("none", "off"):
                values["records"]["database"] = ""
            for option, descriptions in self.listen.items():
                section, setting = self.listen_settings[option]
                values.setdefault(section, {})[setting] = [] if descriptions == ["none"] else descriptions
            for section, setting, value in self.sets:  # --set: a setting of the file by its name
                *parents, last = section.split(".")
                table = values
                for part in [*parents, last]:
                    table = table.setdefault(part, {})
                    if not isinstance(table, dict):
                        raise ConfigError(f"--set {section}.{setting}: {part} is a setting, not a section")
                table[setting] = value
            return config.build(values, base)
        except ConfigError as e:
            raise usage.UsageError(str(e)) from None


def options_class(games: tuple[registry.IGame, ...], config_class: type | None = None) -> type[GamedOptions]:
    """The Options class of a daemon hosting ``games``: every game's options and --GAME ports
    besides the shared ones, validated into a ``config_class`` (``config.config_class(games)``)."""
    config_class = config_class or config.config_class(games)
    sections = config.sections(config_class)

    def default(section: str, setting: str) -> Any:
        return getattr(sections[section](), setting)

    params: list[list[Any]] = [["config", "c", None, "TOML config file with the settings below (see etc/gamed.conf.example)."]]
    settings: dict[str, tuple[str, str]] = {}
    for game in games:
        for option in game.options:
            params.append([option.option, None, None, option.text(game.settings)])
            settings[option.option] = (game.section, option.setting)
    for option, section, setting, help in _SHARED_OPTIONS:
        params.append([option, None, None, help.format(default=default(section, setting))])
        settings[option] = (section, setting)
    body: dict[str, Any] = {
        "__doc__": GamedOptions.__doc__,
        "games": tuple(games),
        "config_class": config_class,
        "optParameters": params,
        "settings": settings,
        "listen_settings": {port.option: (section, port.setting) for section, port in _ports(games)},
    }
    for _, port in _ports(games):
        handler = _listen_option(port.option, port.help)
        body[handler.__name__] = handler
    return type("Options", (GamedOptions,), body)


Options = options_class(registry.GAMES, Config)
# option name -> (config section, setting); listen option -> (config section, setting)
_SETTINGS = Options.settings
_LISTEN = Options.listen_settings


def listen_description(description: str) -> str:
    """``description`` with gamed's larger default listen backlog added to a plain tcp: port."""
    if description.startswith("tcp:") and "backlog=" not in description:
        return f"{description}:backlog={DEFAULT_BACKLOG}"
    return description


def check_description(game: str, description: str) -> None:
    """Raise UsageError unless ``description`` is a strports description Twisted can listen on."""
    try:
        endpoints.serverFromString(MemoryReactor(), listen_description(description))
    except Exception as e:  # the parsers raise ValueError, KeyError, TypeError, ImportError...
        why = f"{e.__class__.__name__}: {e}" if isinstance(e, (KeyError, IndexError)) else str(e)
        if description.startswith("systemd:"):
            passed = os.environ.get("LISTEN_FDS")
            names = os.environ.get("LISTEN_FDNAMES", "").replace(":", ", ")
            why += (
                f"; systemd passed {passed} socket(s), named {names or '(no names)'}"
                if passed
                else "; no sockets were passed by systemd (start gamed through systemd/gamed.socket)"
            )
        raise usage.UsageError(f"--{game} {description!r} is not a usable listen description: {why}") from None


def raise_file_limit() -> None:
    """Use the hard limit of open files as the soft one: every connection is a descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as e:  # pragma: no cover - depends on the host
            _log.warn("could not raise the open file limit from {soft}: {e}", soft=soft, e=e)


# Descriptors kept from connections (see reserved_descriptors and docs/deployment.md): the daemon's
# own (stdio, log files, the reactor's epoll and waker, the thread pool, the records database,
# web files being sent) and refused connections that are being answered and closed.
RESERVED_BASE = 32
RESERVED_REFUSALS = 64
# Per process the daemon runs (a Connect Four engine host, a Stratego AI program): its three pipes,
# twice while it is being started.
RESERVED_PER_PROCESS = 6
# Engine hosts that may run besides the engine games: those asked for their description.
DESCRIBING_HOSTS = 4
# AI programs the Combat tables may run at once when AI programs are registered.
COMBAT_PROGRAMS = 8


def reserved_descriptors(cfg: Config) -> dict[str, int]:
    """The open files kept from connections, by what they are for (their sum is the reserve)."""
    listening = sum(len(_descriptions(cfg, section, port)) for section, port in _ports(type(cfg).games))
    reserve = {"daemon": RESERVED_BASE, "refusals": RESERVED_REFUSALS, "listening ports": listening}
    if cfg.admin.listen:  # its listening sockets (its SSH connections count against the budget)
        reserve["admin console"] = len(cfg.admin.listen)
    if cfg.connect4.listen and cfg.connect4.engines_dir:
        hosts = (cfg.connect4.engine_games or 64) + DESCRIBING_HOSTS
        reserve["engine hosts"] = RESERVED_PER_PROCESS * hosts
    if cfg.stratego.ai:
        programs = 2 * cfg.stratego.concurrency + (COMBAT_PROGRAMS if cfg.combat.listen or cfg.combat.text_listen else 0)
        reserve["AI programs"] = RESERVED_PER_PROCESS * programs
    return reserve


def connection_budget(cfg: Config, open_files: int) -> ConnectionBudget:
    """The daemon-wide connection budget: ``limits.max_total_connections``, or when that is 0 all
    the open files (``open_files``, the soft RLIMIT_NOFILE) the reserve leaves. Stops start-up
    (SystemExit with one line) when the setting, or the reserve alone, does not fit."""
    reserve = reserved_descriptors(cfg)
    reserved = sum(reserve.values())
    available = open_files - reserved
    what = ", ".join(f"{n} {name}" for name, n in reserve.items())
    wanted = cfg.limits.max_total_connections
    if available < 1 or wanted > available:
        need = f"limits.max_total_connections is {wanted}, but" if wanted else "but"
        raise SystemExit(
            f"gamed: cannot start: {need} the open-file limit of {open_files} leaves "
            f"{max(available, 0)} descriptors for connections ({reserved} reserved: {what}); raise the "
            f"limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower the setting"
        )
    budget = ConnectionBudget(wanted or available)
    _log.info(
        "connections: at most {budget} on all ports together (open-file limit {limit}, {reserved} reserved: {what})",
        budget=budget.max_total, limit=open_files, reserved=reserved, what=what,
    )
    per_port = cfg.limits.max_connections
    ports = reserve["listening ports"]
    if per_port and per_port * ports > budget.max_total:
        _log.warn(
            "the per-port limits allow {total} connections ({ports} ports x {per_port}), more than the {budget} "
            "the daemon can hold: the ports share those, and each answers its refusal once they are used up",
            total=per_port * ports, ports=ports, per_port=per_port, budget=budget.max_total,
        )
    return budget


def open_file_limit() -> int:
    """The soft limit of open files (after raise_file_limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (1 << 20) if soft == resource.RLIM_INFINITY else soft


class GamedService(MultiService):
    """The root service. A port that cannot be bound stops start-up with one clear line instead
    of a traceback (logged, and printed by twistd/twist as they exit with status 1). ``ports``
    lists every listening port of the daemon."""

    def __init__(self) -> None:
        super().__init__()
        self.ports = ListeningPorts()
        self.bots: tuple = ()  # every hosted bot (gamed.hosting.spec.BotSpec): the config's, then the stored ones
        self.metrics = None  # gamed.metrics.Metrics, with a web site that serves /metrics
        self.admin = None  # gamed.admin.daemon.DaemonTarget, when the admin console listens
        self.generic = None  # gamed.generic.service.GenericService, when the generic port or the bot API serves
        self.web = None  # gamed.web.service.WebService, when the site listens
        self.reloader = None  # gamed.reload.Reloader: SIGHUP re-reads the settings
        self.reactor = None

    def privilegedStartService(self) -> None:  # noqa: N802
        with _listen_errors():
            super().privilegedStartService()

    def startService(self) -> None:  # noqa: N802
        with _listen_errors():
            super().startService()
        if self.reloader is not None and self.reactor is not None:
            self.reactor.callWhenRunning(self.reloader.install, self.reactor)

    def stopService(self):  # noqa: N802
        # The daemon's tournaments stop first (their last writes need the records database).
        first = getattr(self, "tournaments", None)
        if first is None or not first.running:
            return super().stopService()
        d = defer.maybeDeferred(first.stopService)
        d.addBoth(lambda _: MultiService.stopService(self))
        return d


@contextlib.contextmanager
def _listen_errors():
    try:
        yield
    except CannotListenError as e:
        _log.critical("cannot start: {error}", error=e)
        raise SystemExit(f"gamed: cannot start: {e}") from None


@contextlib.contextmanager
def _records_errors():
    from gamed.records import RecordsError

    try:
        yield
    except RecordsError as e:  # before logging has begun: SystemExit prints the one line
        raise SystemExit(f"gamed: cannot start: {e}") from None


def makeService(options: Options, reactor=None) -> IService:  # noqa: N802
    """Build the daemon: one service per game that is switched on, each with its listening ports."""
    if reactor is None:
        from twisted.internet import reactor
    from twisted.internet import threads

    cfg = options.config if options.config is not None else options.config_class()
    raise_file_limit()
    budget = connection_budget(cfg, open_file_limit())
    root = GamedService()
    hub = _live_hub(cfg, root, reactor)
    cfg = with_stored_bots(cfg, getattr(hub, "store", None))
    root.bots = cfg.bots.bots  # the config's and the records database's (gamed tournament run plays them)
    ports = root.ports

    def listen(service, section: str, port: registry.GamePort, factory) -> None:
        _listen(service, port, _descriptions(cfg, section, port), factory, reactor, ports, budget)

    def think(work):
        return threads.deferToThreadPool(reactor, reactor.getThreadPool(), work)

    players = _players(cfg, hub, reactor)
    conns = _connection_registry(hub, reactor)
    players.bans = conns.bans
    services = {}
    for game in options.games:
        if not game.switched_on(getattr(cfg, game.section)):
            continue
        ctx = registry.GameContext(
            cfg=cfg, limits=cfg.limits, reactor=reactor, hub=hub, think=think, options=options,
            players=players,
            prepared=options.prepared.get(game.name),
        )
        service, factories = game.make_service(ctx)
        services[game.name] = service
        for port in game.ports:
            listen(service, game.section, port, _registered(factories[port.option], conns, game.section, port.option))
        service.setServiceParent(root)
    if (cfg.web.listen and cfg.web.metrics) or cfg.web.metrics_listen:
        from gamed.metrics import Metrics

        root.metrics = Metrics(reactor, services, hub, hosted=lambda: root.hosted, admin=lambda: root.admin)
        root.metrics.setServiceParent(root)
    if cfg.web.listen:
        from gamed.web.service import WebService

        web = WebService(cfg.web, cfg.limits, hub, reactor, ports=ports, games=options.games, players=players)
        if cfg.web.metrics and not cfg.web.metrics_listen:
            web.root.putChild(b"metrics", root.metrics.resource())
        listen(web, "web", WEB_PORT, web.port_factory)
        web.setServiceParent(root)
        root.web = web
    if cfg.web.metrics_listen:
        from gamed.web.health import metrics_site

        factory = metrics_site(root.metrics.resource(), ports, getattr(hub, "store", None), reactor, cfg.limits)
        listen(root, "web", METRICS_PORT, factory)
    if cfg.bots.bots and "stratego" not in services and any(b.game == "stratego" for b in cfg.bots.bots):
        # Stratego has no ports: without AI programs of its own it runs for hosted bots alone.
        from gamed.stratego.service import StrategoService

        services["stratego"] = StrategoService(cfg.stratego, cfg.limits, reactor, hub=hub)
        services["stratego"].setServiceParent(root)
    if cfg.generic.listen or root.web is not None:
        _generic_port(cfg, root, services, players, reactor, listen, options.games, conns)
    root.hosted = _hosted_games(cfg, services, hub, reactor, players, ports, options.games)
    root.tournaments = _daemon_tournaments(cfg, root.hosted, hub, reactor, services)
    if root.tournaments is not None:
        root.tournaments.setServiceParent(root)
    if cfg.admin.listen:
        _admin_console(cfg, root, conns, services, hub, players, reactor, budget)
    if isinstance(options, GamedOptions):  # (not a bare Config, as some tests pass)
        from gamed.reload import Reloader

        root.reloader, root.reactor = Reloader(options, cfg, services), reactor
    ReadyLine(ports, reactor).setServiceParent(root)  # the last child: started once every port listens
    tune_garbage_collector()
    tune_thread_switching()
    return root


def _connection_registry(hub, reactor):
    """The daemon's one ConnectionRegistry (gamed.connections), with the bans kept in the records
    database (read now, before anything listens: a banned address is refused from the first
    connection on)."""
    from gamed.connections import Bans, ConnectionRegistry

    store = getattr(hub, "store", None)
    bans = Bans()
    if store is not None:
        from gamed.bans import load_now

        with _records_errors():
            bans = load_now(store)
        if bans.all():
            _log.info("bans in force: {n} ({what})", n=len(bans.all()), what=", ".join(f"{b.kind} {b.target}" for b in bans.all()))
    return ConnectionRegistry(bans, reactor)


def _registered(make_factory, conns, game: str, option: str):
    """``make_factory`` whose ConnectionLimits report to ``conns`` (the ConnectionRegistry) as
    ``game``'s ``option`` port."""

    def make():
        served = make_factory()
        served.registry, served.game, served.option = conns, game, option
        return served

    return make


# SSH connections the admin console accepts at once, in all and from one address.
ADMIN_CONNECTIONS = 16
ADMIN_PER_PEER = 8


def _admin_console(cfg: Config, root: GamedService, conns, services: dict, hub, players, reactor, budget) -> None:
    """The SSH admin console (gamed.admin, docs/admin.md) on ``[admin] listen``. Its keys file
    that cannot be read or holds no key, or a host key that cannot be read or made, stops
    start-up with one line."""
    from gamed.admin import ssh
    from gamed.admin.commands import AdminCommands
    from gamed.admin.daemon import DaemonTarget, Drain

    admin = cfg.admin
    try:
        count = ssh.check_authorized_keys(admin.authorized_keys)
        key = ssh.host_key(admin.host_key)
    except ssh.KeyFileError as e:
        raise SystemExit(f"gamed: cannot start: {e}") from None
    store = getattr(hub, "store", None)
    ban_store = None
    if store is not None:
        from gamed.bans import BanStore

        ban_store = BanStore(store, conns.bans, reactor)

    def stop() -> None:
        if reactor.running:
            reactor.stop()

    drain = Drain(conns, services, hub, reactor, stop, root.ports)
    target = DaemonTarget(conns, services, hub, players, ban_store, drain, reactor)
    commands = AdminCommands(target)
    root.admin = target

    def namespace() -> dict:
        return {"root": root, "services": services, "hub": hub, "players": players, "connections": conns,
                "console": target, "commands": commands, "drain": drain, "reactor": reactor}

    from gamed.textline import ConnectionLimits

    for description in admin.listen:
        served = ConnectionLimits(ssh.console_factory(commands, admin.authorized_keys, key, reactor, namespace if admin.manhole else None,
                                                      idle=cfg.limits.idle_timeout),
                                  ADMIN_CONNECTIONS, ADMIN_PER_PEER)
        served.served = "admin console"
        served.budget = budget
        listening = strports.service(listen_description(description), served, reactor=reactor)
        listening.endpoint = root.ports.watch("admin", description, listening.endpoint, serves="admin console", public=False)
        listening.setServiceParent(root)
    _log.info("admin console: {count} authorized keys in {path}; host key {fingerprint}{manhole}", count=count,
              path=admin.authorized_keys, fingerprint=ssh.fingerprint(key.public()),
              manhole="; manhole on" if admin.manhole else "")


def with_stored_bots(cfg: Config, records) -> Config:
    """``cfg`` with the bots ``gamed bot add`` stored in ``records`` (a prepared RecordStore, or
    None) after its own (gamed.hosting.store.registered_bots: a name in both, or a stored bot
    whose program is gone, stops start-up with one line), and every tournament's bots checked
    against them all (the config defers that check to here when it has a records database)."""
    from gamed.competition import spec as tournament_spec
    from gamed.hosting.spec import SpecError

    bots = cfg.bots.bots
    if records is not None:
        from gamed.hosting.store import registered_bots, stored_bots_now

        with _records_errors():
            stored = stored_bots_now(records)
        try:
            bots = registered_bots(bots, stored, tuple(game.name for game in registry.GAMES))
        except SpecError as e:
            raise SystemExit(f"gamed: cannot start: {e}") from None
    for spec in cfg.tournaments.tournaments:
        try:
            tournament_spec.check_bots(spec, bots)
        except tournament_spec.SpecError as e:
            raise SystemExit(f"gamed: cannot start: {e}") from None
    if bots == cfg.bots.bots:
        return cfg
    import attrs

    return attrs.evolve(cfg, bots=attrs.evolve(cfg.bots, bots=bots))


def _daemon_tournaments(cfg: Config, hosted, hub, reactor, services: dict):
    """The service that plays the config's ``daemon = true`` tournaments (None without any)."""
    specs = [t for t in cfg.tournaments.tournaments if t.daemon and t.game in services]
    if not specs or hosted is None or getattr(hub, "store", None) is None:
        return None
    from gamed.competition.director import Director
    from gamed.competition.service import TournamentService
    from gamed.competition.store import TournamentStore

    director = Director(TournamentStore(hub.store, reactor), hosted, {b.name: b for b in cfg.bots.bots}, reactor)
    return TournamentService(director, [t.definition() for t in specs], hosted)


class BotAddresses:
    """Where a hosted bot that connects itself (``talk = "connect"``) finds its game: ``get(game)``
    is ``(host, port)`` of the game's first TCP port that games are played on and bots log in on
    (``GamePort.bots``: Combat's handshake port, not its binary one), once it listens
    (the bound port, also for port 0; 127.0.0.1 for a port on every interface), else ``default``."""

    def __init__(self, ports: ListeningPorts, games):
        self.ports = ports
        self.options = {game.name: [p.option for p in game.ports if p.plays and p.bots] for game in games}

    def get(self, game: str, default: tuple[str, int] | None = None) -> tuple[str, int] | None:
        for option in self.options.get(game, ())[:1]:
            for served in self.ports.ports:
                if served.option == option and served.kind == "tcp" and served.port is not None:
                    host = served.host
                    return ("127.0.0.1" if host in ("0.0.0.0", "", None) else "::1" if host == "::" else host), served.port
        return default


def _generic_port(cfg: Config, root: GamedService, services: dict, players, reactor, listen, games, conns) -> None:
    """The generic protocol (gamed.generic) for every running game that has a generic host, in
    the registry's order: on its port when it listens, and on the web site's bot API."""
    from gamed.generic.service import GenericService

    hosts = {}
    for game in games:
        service = services.get(game.name)
        host = game.generic_host(service) if service is not None else None
        if host is not None:
            hosts[game.name] = host
    selftest = None
    if cfg.generic.selftest:
        from gamed.generic.selftest import SelfTests

        selftest = SelfTests(hosts, reactor)
    generic = GenericService(hosts, players, cfg.limits, reactor, selftest=selftest)
    root.generic = generic
    if cfg.generic.listen:
        listen(generic, "generic", GENERIC_PORT, _registered(generic.port_factory, conns, "generic", GENERIC_PORT.option))
    generic.setServiceParent(root)
    if root.web is not None:
        root.web.serve_bots(generic)


def _hosted_games(cfg: Config, services: dict, hub, reactor, players=None, ports=None, games=()):
    """The runner of hosted bots' games (gamed.hosting.runner), when bots are registered: the
    sandbox this machine offers is found out now (``[bots] isolation = bwrap`` that does not work
    stops start-up with one line) and logged. Bots that connect themselves log in with the
    one-time host tokens of ``players`` on the game's first TCP port (``BotAddresses``)."""
    if not cfg.bots.bots:
        return None
    from twisted.logger import Logger

    from gamed.hosting.runner import HostedGames
    from gamed.hosting.sandbox import Isolation

    try:
        isolation = Isolation.detect(cfg.bots.isolation)
    except ValueError as e:
        raise SystemExit(f"gamed: cannot start: {e}") from None
    hosting = {name: s for name, s in services.items() if getattr(s, "hosts_bots", False)}
    Logger().info(
        "hosted bots: {count} registered ({names}); sandbox: {sandbox}",
        count=len(cfg.bots.bots), names=", ".join(b.name for b in cfg.bots.bots), sandbox=isolation.shown(),
    )
    address = BotAddresses(ports, games) if ports is not None else None
    return HostedGames(hosting, hub, reactor, isolation, os.path.abspath("."), start_timeout=cfg.bots.start_timeout, warm=cfg.bots.warm,
                       address=address, tokens=players)


def _players(cfg: Config, hub, reactor):
    """The daemon's one ``Players``: the accounts of the records database (none without one),
    ``[players]`` guests and the failed-login limit, shared by every game."""
    from gamed.players import Players

    accounts = None
    store = getattr(hub, "store", None)
    if store is not None:
        from gamed.accounts import AccountStore

        accounts = AccountStore(store, reactor)
    return Players(cfg.players, accounts, reactor)


def _live_hub(cfg: Config, root: MultiService, reactor):
    """The daemon's one LiveHub; with records on, its RecordStore (opened and migrated here, so a
    database that cannot be used stops start-up with one line and exit status 1) run by a
    RecordsService that is started first and stopped last (after the games, once the hub has stored
    every game the shutdown interrupted). None when there is neither a web site nor records: then
    no game builds spectator states at all."""
    from gamed.observers import LiveHub

    if not cfg.web.listen and not cfg.records.database:
        return None
    store = None
    if cfg.records.database:
        from gamed.records import RecordsService, RecordStore

        with _records_errors():
            store = RecordStore(cfg.records.database, reactor)
            store.prepare()  # before the reactor runs, so blocking is fine; a bad database stops start-up
    hub = LiveHub(reactor, store, linger=cfg.web.linger)
    if store is not None:
        RecordsService(store, hub, keep_moves=cfg.records.keep_moves).setServiceParent(root)
    return hub


def _listen(
    service: MultiService,
    port: registry.GamePort,
    descriptions: tuple[str, ...],
    factory,
    reactor,
    ports: ListeningPorts,
    budget: ConnectionBudget,
) -> None:
    """Add a listening port child service per description, each serving a fresh ``factory()``
    (a ConnectionLimits) that names what it serves (``port.serves``), shares the daemon's
    connection ``budget`` and is registered in ``ports``. A description that starts with
    ``haproxy:`` reads the PROXY protocol's header first (gamed.proxy), so that the limits see
    the client's own address."""
    for description in descriptions:
        served = factory()
        served.served = port.serves
        served.budget = budget
        proxied, under = proxy.split(description)  # haproxy:<description>: the PROXY protocol first
        listening = strports.service(
            listen_description(under), proxy.ProxyHeaderFactory(served, reactor) if proxied else served, reactor=reactor
        )
        listening.endpoint = ports.watch(port.option, description, listening.endpoint, serves=port.serves)
        listening.setServiceParent(service)


def _descriptions(cfg: Config, section: str, port: registry.GamePort) -> tuple[str, ...]:
    """The listen descriptions of ``port`` in ``cfg``."""
    return getattr(getattr(cfg, section), port.setting)


class ReadyLine(Service):
    """Logs ``gamed ready: <every port and what it serves>`` once every port listens and the
    reactor runs (twistd starts the services before it runs the reactor, whose signal handlers
    make a SIGTERM a clean shutdown: a script that waits for this line may stop the daemon at
    once). It is the root's last child, so it starts after every port service."""

    def __init__(self, ports: ListeningPorts, reactor):
        self.ports = ports
        self.reactor = reactor

    def startService(self) -> None:  # noqa: N802
        super().startService()
        self.reactor.callWhenRunning(self._running)

    def _running(self) -> None:
        d = self.ports.ready()
        d.addCallback(lambda ports: _log.info("{line}", line=ports.ready_line()) if self.running else None)
        d.addErrback(lambda f: None)  # a port that cannot listen has stopped start-up already


# Seconds after which a thread holding the interpreter lock is asked to let another run (Python's
# default is 5 ms).
SWITCH_INTERVAL = 0.001


def tune_thread_switching() -> None:
    """Let the reactor thread get the interpreter back within about 1 ms while a pool thread (a
    Python engine's search, a records store encoding a long match) is busy: with the default
    5 ms, storing a 500-turn Virtual Fight match made the reactor 8 ms late (docs/performance.md,
    "Web observers and records")."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def tune_garbage_collector() -> None:
    """Keep the cyclic collector off the hot path: what exists at start-up lives as long as the
    daemon, so it is frozen out of every scan, and young objects (a move allocates a few dozen,
    none in cycles) are scanned less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)
