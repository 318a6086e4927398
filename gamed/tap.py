"""``twistd gamed`` / ``twist gamed``: command-line options and the service tree they build.

Settings come from built-in defaults, then ``--config FILE`` (TOML), then the options given on the
command line; every one is validated before anything listens, and a bad one stops start-up with a
message (``usage.UsageError``) and a non-zero exit. Each game port is a strports description.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pathlib
import resource
import sys
from typing import Any

from twisted.application import strports
from twisted.application.service import IService, MultiService, Service
from twisted.internet import endpoints
from twisted.internet.error import CannotListenError
from twisted.internet.testing import MemoryReactor
from twisted.logger import Logger
from twisted.python import usage

from gamed import __version__, config
from gamed.config import Config, ConfigError
from gamed.fight.rules import FightMap, MapError, resolve_map
from gamed.ports import SERVED, ListeningPorts
from gamed.textline import ConnectionBudget

_log = Logger()

# Listen backlog for tcp: descriptions that do not set one; Twisted's default of 50 makes a burst
# of thousands of connections wait for SYN retries.
DEFAULT_BACKLOG = 4096

# option name -> (config section, setting)
_SETTINGS = {
    "kalaha-move-time": ("kalaha", "move_time"),
    "kalaha-strikes": ("kalaha", "strikes"),
    "kalaha-first": ("kalaha", "first"),
    "kalaha-pair-delay": ("kalaha", "pair_delay"),
    "kalaha-computer": ("kalaha", "computer"),
    "kalaha-board": ("kalaha", "board"),
    "fight-teams": ("fight", "teams"),
    "fight-map": ("fight", "map"),
    "fight-turn-time": ("fight", "turn_time"),
    "fight-max-turns": ("fight", "max_turns"),
    "fight-strikes": ("fight", "strikes"),
    "fight-pair-delay": ("fight", "pair_delay"),
    "fight-lobby-timeout": ("fight", "lobby_timeout"),
    "fight-max-lines": ("fight", "max_lines"),
    "fight-gui-token": ("fight", "gui_token"),
    "fight-gui-lag": ("fight", "gui_lag"),
    "fight-gui-buffer": ("fight", "gui_buffer"),
    "fight-gui-interval": ("fight", "gui_interval"),
    "fight-gui-idle-timeout": ("fight", "gui_idle_timeout"),
    "combat-seats": ("combat", "seats"),
    "combat-move-time": ("combat", "move_time"),
    "combat-rejoin-grace": ("combat", "rejoin_grace"),
    "combat-records": ("combat", "records"),
    "connect4-move-time": ("connect4", "move_time"),
    "connect4-engines": ("connect4", "engines_dir"),
    "connect4-engine-time": ("connect4", "engine_time"),
    "records": ("records", "database"),
    "max-line": ("limits", "max_line"),
    "idle-timeout": ("limits", "idle_timeout"),
    "max-connections": ("limits", "max_connections"),
    "max-per-peer": ("limits", "max_per_peer"),
    "max-total-connections": ("limits", "max_total_connections"),
    "line-rate": ("limits", "line_rate"),
    "line-burst": ("limits", "line_burst"),
    "close-grace": ("limits", "close_grace"),
}


# listen option -> (config section, setting)
_LISTEN = {
    "kalaha": ("kalaha", "listen"),
    "fight": ("fight", "listen"),
    "fight-gui": ("fight", "gui_listen"),
    "combat": ("combat", "listen"),
    "combat-text": ("combat", "text_listen"),
    "connect4": ("connect4", "listen"),
    "web": ("web", "listen"),
}


def _default(section: str, setting: str) -> Any:
    return getattr(getattr(Config(), section), setting)


class Options(usage.Options):
    """Options of the gamed plugin; each also has a config-file setting of the same meaning."""

    synopsis = "[options]"
    longdesc = (
        "gamed hosts turn-based games for AI programs and people over TCP. Each --GAME option is a "
        "strports description (tcp:4600, tcp:port=4600:interface=127.0.0.1, ssl:port=4600:"
        "privateKey=key.pem:certKey=cert.pem, systemd:domain=INET:name=kalaha) and may be given "
        "more than once; 'none' switches the game off. Settings are read from --config (TOML), "
        "then from the command line. JSON log lines: twistd --logger=gamed.logs.json_observer or "
        "twist --log-format=json."
    )
    optParameters = [
        ["config", "c", None, "TOML config file with the settings below (see etc/gamed.conf.example)."],
        ["kalaha-move-time", None, None, f"Seconds per Kalaha move (running out loses), 0 = no limit [default: {_default('kalaha', 'move_time'):g}]"],
        ["kalaha-strikes", None, None, f"Protocol errors that lose a Kalaha game (connections with drawings off; people too with strike_people in the config), 0 = never [default: {_default('kalaha', 'strikes')}]"],
        ["kalaha-first", None, None, "Who plays A and moves first: arrival, alternate or random [default: arrival]"],
        ["kalaha-pair-delay", None, None, f"Seconds a new Kalaha connection has to choose a table before it is paired [default: {_default('kalaha', 'pair_delay'):g}]"],
        ["kalaha-computer", None, None, "Allow the built-in computer player: yes or no [default: yes]"],
        ["kalaha-board", None, None, "Send board drawings unless a client switches them off: yes or no [default: yes]"],
        ["fight-teams", None, None, f"Teams per Virtual Fight game, 2 to 4 [default: {_default('fight', 'teams')}]"],
        ["fight-map", None, None, "Virtual Fight map: a shipped map (default, four) or a map file [default: default]"],
        ["fight-turn-time", None, None, f"Seconds per Virtual Fight turn, 0 = no limit [default: {_default('fight', 'turn_time'):g}]"],
        ["fight-max-turns", None, None, f"Turns after which a Virtual Fight game ends [default: {_default('fight', 'max_turns')}]"],
        ["fight-strikes", None, None, f"Timeouts in a row that disqualify an AI, 0 = never [default: {_default('fight', 'strikes')}]"],
        ["fight-pair-delay", None, None, f"Seconds a new AI has to send NAME/TABLE before it is queued [default: {_default('fight', 'pair_delay'):g}]"],
        ["fight-lobby-timeout", None, None, f"Seconds an AI may wait for a game, 0 = forever [default: {_default('fight', 'lobby_timeout'):g}]"],
        ["fight-max-lines", None, None, f"Lines an AI may send in one turn [default: {_default('fight', 'max_lines')}]"],
        ["fight-gui-token", None, None, "Observers must send AUTH&<token> first [default: none]"],
        ["fight-gui-lag", None, None, f"Turns observers are kept behind the game [default: {_default('fight', 'gui_lag')}]"],
        ["fight-gui-buffer", None, None, f"Bytes an observer may leave unread before it is dropped [default: {_default('fight', 'gui_buffer')}]"],
        ["fight-gui-interval", None, None, f"Seconds observer events are gathered before they are sent, 0 = at once [default: {_default('fight', 'gui_interval'):g}]"],
        ["fight-gui-idle-timeout", None, None, f"Seconds an observer may send nothing while no event reaches it (one following a game is not idle), 0 = never [default: {_default('fight', 'gui_idle_timeout'):g}]"],
        ["combat-seats", None, None, f"Seats per GGZ Combat table, 2 to 15 [default: {_default('combat', 'seats')}]"],
        ["combat-move-time", None, None, f"Seconds per Combat move, 0 = no limit [default: {_default('combat', 'move_time'):g}]"],
        ["combat-records", None, None, "Directory where finished Combat games are recorded (results.jsonl); '' = none [default: combat]"],
        ["combat-rejoin-grace", None, None, f"Seconds a seat that dropped during a Combat game is kept for its return, then it loses; 0 = it loses at once [default: the [players] grace]"],
        ["connect4-move-time", None, None, f"Seconds per Connect Four move of a player, 0 = no limit [default: {_default('connect4', 'move_time'):g}]"],
        ["connect4-engines", None, None, "Folder of Connect Four engines (<name>/engine.so); '' = built-in engines only [default: engines]"],
        ["connect4-engine-time", None, None, f"Seconds a Connect Four engine may think per move [default: {_default('connect4', 'engine_time'):g}]"],
        ["records", None, None, "Database of finished matches and ratings: a SQLite path (in an existing directory), sqlite:..., postgresql://...; 'none' = keep none [default: gamed.sqlite]"],
        ["max-line", None, None, f"Longest line a client may send, in bytes [default: {_default('limits', 'max_line')}]"],
        ["idle-timeout", None, None, f"Seconds of silence before a connection is closed, 0 = never [default: {_default('limits', 'idle_timeout'):g}]"],
        ["max-connections", None, None, f"Connections per port, 0 = unlimited [default: {_default('limits', 'max_connections')}]"],
        ["max-per-peer", None, None, f"Connections per port from one address, 0 = unlimited [default: {_default('limits', 'max_per_peer')}]"],
        ["max-total-connections", None, None, "Connections on all ports together; 0 = as many as the open-file limit leaves after the descriptors reserved for logs, records, engines, programs and ports [default: 0]"],
        ["line-rate", None, None, f"Lines per second a client may send before it is slowed down, 0 = unlimited [default: {_default('limits', 'line_rate'):g}]"],
        ["line-burst", None, None, f"Lines a client may send in a burst before --line-rate applies [default: {_default('limits', 'line_burst')}]"],
        ["close-grace", None, None, f"Seconds a closing client may take to read its last lines (or Combat messages) [default: {_default('limits', 'close_grace'):g}]"],
    ]

    def __init__(self):
        super().__init__()
        self.listen: dict[str, list[str]] = {}
        self.config: Config | None = None
        self.fight_map: FightMap | None = None

    def opt_version(self) -> None:
        """Print the gamed version and exit."""
        print(f"gamed {__version__}")
        raise SystemExit(0)

    def opt_kalaha(self, description: str) -> None:
        """Listen for Kalaha on this strports description; repeatable; 'none' = off [default: tcp:4600]"""
        self.listen.setdefault("kalaha", []).append(description)

    def opt_fight(self, description: str) -> None:
        """Listen for Virtual Fight AIs on this strports description; repeatable; 'none' = off [default: tcp:4500]"""
        self.listen.setdefault("fight", []).append(description)

    def opt_combat(self, description: str) -> None:
        """Listen for GGZ Combat clients (binary protocol 10); repeatable; 'none' = off [default: tcp:5688]"""
        self.listen.setdefault("combat", []).append(description)

    def opt_combat_text(self, description: str) -> None:
        """Listen for GGZ Combat clients that start with the text handshake; repeatable; 'none' = off [default: tcp:5689]"""
        self.listen.setdefault("combat-text", []).append(description)

    def opt_connect4(self, description: str) -> None:
        """Listen for Connect Four players and programs; repeatable; 'none' = off [default: tcp:4700]"""
        self.listen.setdefault("connect4", []).append(description)

    def opt_web(self, description: str) -> None:
        """Serve the web site (live games, replays, players, ratings, how to play, /api) on this strports description; repeatable; 'none' = off [default: tcp:8080]"""
        self.listen.setdefault("web", []).append(description)

    def opt_fight_gui(self, description: str) -> None:
        """Listen for Virtual Fight observers (GUIs); repeatable; 'none' = off [default: tcp:4550]"""
        self.listen.setdefault("fight-gui", []).append(description)

    def postOptions(self) -> None:  # noqa: N802
        try:
            base = config.load(self["config"]) if self["config"] else Config()
            values: dict[str, dict[str, Any]] = {}
            for option, (section, setting) in _SETTINGS.items():
                if self[option] is not None:
                    values.setdefault(section, {})[setting] = self[option]
            if self["records"] in ("none", "off"):
                values["records"]["database"] = ""
            for option, descriptions in self.listen.items():
                section, setting = _LISTEN[option]
                values.setdefault(section, {})[setting] = [] if descriptions == ["none"] else descriptions
            cfg = config.build(values, base)
        except ConfigError as e:
            raise usage.UsageError(str(e)) from None
        listen = {option: getattr(getattr(cfg, section), setting) for option, (section, setting) in _LISTEN.items()}
        for option, descriptions in listen.items():
            for description in descriptions:
                check_description(option, description)
        games = ("kalaha", "fight", "combat", "combat-text", "connect4")  # the GUI port alone serves no game
        if not (any(listen[g] for g in games) or cfg.stratego.ai):
            raise usage.UsageError("every game is switched off: nothing to serve")
        if cfg.fight.listen:
            try:
                fight_map = resolve_map(cfg.fight.map)
            except MapError as e:
                raise usage.UsageError(f"fight.map: {e}") from None
            if fight_map.teams < cfg.fight.teams:
                raise usage.UsageError(
                    f"fight.map: {fight_map.name} has start squares for {fight_map.teams} teams, "
                    f"but fight.teams is {cfg.fight.teams}"
                )
            self.fight_map = fight_map
        self.config = cfg


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
    listening = sum(len(_LISTEN_OF[option](cfg)) for option in _LISTEN)
    reserve = {"daemon": RESERVED_BASE, "refusals": RESERVED_REFUSALS, "listening ports": listening}
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

    def privilegedStartService(self) -> None:  # noqa: N802
        with _listen_errors():
            super().privilegedStartService()

    def startService(self) -> None:  # noqa: N802
        with _listen_errors():
            super().startService()


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

    from gamed.fight.service import FightService
    from gamed.kalaha.service import KalahaService

    cfg = options.config if options.config is not None else Config()
    raise_file_limit()
    budget = connection_budget(cfg, open_file_limit())
    root = GamedService()
    hub = _live_hub(cfg, root, reactor)
    ports = root.ports

    def listen(service, option, factory):
        _listen(service, option, _LISTEN_OF[option](cfg), factory, reactor, ports, budget)

    def think(work):
        return threads.deferToThreadPool(reactor, reactor.getThreadPool(), work)

    if cfg.kalaha.listen:
        kalaha = KalahaService(cfg.kalaha, cfg.limits, reactor, think=think, hub=hub)
        listen(kalaha, "kalaha", kalaha.port_factory)
        kalaha.setServiceParent(root)
    if cfg.fight.listen:
        fight = FightService(cfg.fight, cfg.limits, reactor, options.fight_map, hub=hub)
        listen(fight, "fight", fight.ai_port_factory)
        listen(fight, "fight-gui", fight.gui_port_factory)
        fight.setServiceParent(root)
    if cfg.combat.listen or cfg.combat.text_listen:
        from gamed.combat.service import CombatService

        records = pathlib.Path(cfg.combat.records) if cfg.combat.records else None
        ais = {ai.name: ai for ai in cfg.stratego.ai}
        combat = CombatService(cfg.limits, reactor, cfg.combat, ais=ais, records_dir=records, hub=hub)
        listen(combat, "combat", combat.port_factory)
        listen(combat, "combat-text", combat.text_port_factory)
        combat.setServiceParent(root)
    if cfg.connect4.listen:
        from gamed.connect4.service import Connect4Service

        connect4 = Connect4Service(cfg.connect4, cfg.limits, reactor, think=think, reactor=reactor, hub=hub)
        listen(connect4, "connect4", connect4.port_factory)
        connect4.setServiceParent(root)
    if cfg.stratego.ai:
        from gamed.stratego.service import StrategoService

        StrategoService(cfg.stratego, cfg.limits, reactor, hub=hub).setServiceParent(root)
    if cfg.web.listen:
        from gamed.web.service import WebService

        web = WebService(cfg.web, cfg.limits, hub, reactor, ports=ports)
        listen(web, "web", web.port_factory)
        web.setServiceParent(root)
    ReadyLine(ports, reactor).setServiceParent(root)  # the last child: started once every port listens
    tune_garbage_collector()
    tune_thread_switching()
    return root


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
        RecordsService(store, hub).setServiceParent(root)
    return hub


def _listen(
    service: MultiService, option: str, descriptions: tuple[str, ...], factory, reactor, ports: ListeningPorts, budget: ConnectionBudget
) -> None:
    """Add a listening port child service per description, each serving a fresh ``factory()``
    (a ConnectionLimits) that names what it serves (``SERVED[option]``), shares the daemon's
    connection ``budget`` and is registered in ``ports``."""
    for description in descriptions:
        served = factory()
        served.served = SERVED[option]
        served.budget = budget
        port = strports.service(listen_description(description), served, reactor=reactor)
        port.endpoint = ports.watch(option, description, port.endpoint)
        port.setServiceParent(service)


def _listen_of(section: str, setting: str):
    return lambda cfg: getattr(getattr(cfg, section), setting)


# listen option -> its descriptions in a Config
_LISTEN_OF = {option: _listen_of(section, setting) for option, (section, setting) in _LISTEN.items()}


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
