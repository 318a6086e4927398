"""Configuration: the TOML file and the command line both end up in one frozen, validated Config.

Precedence is built-in defaults, then the config file, then command-line options. Every value is
checked here, so a bad setting stops start-up with a message naming the setting and the rule.
``Config`` has a section per registered game (gamed.registry: the game's settings class, checked
by its own ``validate``) and the shared sections (web, limits, records, players).
"""

from __future__ import annotations

import ipaddress
import os

import re
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from gamed import registry
from gamed import timecontrol
from gamed.names import valid_name
from gamed.timecontrol import TimeControl


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the setting and says what is allowed."""


def _clock() -> Any:
    """The ``clock`` setting of a game: a time control (gamed.timecontrol's notation); None = the
    game's per-move setting alone (``move_time``, Virtual Fight's ``turn_time``)."""
    return attrs.field(default=None, metadata={"kind": TimeControl})


def time_control(clock: TimeControl | None, per_move: float | None) -> TimeControl:
    """A game's effective time control: its ``clock`` when set, else its per-move limit (0 = none)."""
    return clock if clock is not None else TimeControl.per_move(per_move)


def flag_policy(section: str, value: str, allowed: tuple[timecontrol.FlagPolicy, ...]) -> timecontrol.FlagPolicy:
    """A game's ``on_flag`` setting as a FlagPolicy (of those the game supports), or ConfigError."""
    try:
        return timecontrol.FlagPolicy.parse(value, allowed)
    except timecontrol.TimeControlError as e:
        raise ConfigError(f"{section}.on_flag {e}") from None


def no_setup(section: str, control: TimeControl | None) -> None:
    """For a game without a setup phase: a ``setup=`` budget is a mistake, not ignored."""
    if control is not None and control.setup is not None:
        raise ConfigError(f"{section}.clock: {control.notation()!r}: {section} has no setup phase (drop setup=)")


@attrs.frozen
class Limits:
    """Connection policies applied to every game port."""

    max_line: int = 512  # bytes in one line, terminator excluded
    idle_timeout: float = 600.0  # seconds without a line from the client or an event for it; 0 = none
    max_connections: int = 10_000  # per port; 0 = unlimited
    max_per_peer: int = 256  # per port and client address; 0 = unlimited
    # Connections on all ports together; 0 = as many as the open-file limit leaves after the
    # descriptors reserved for everything else (gamed.tap.reserved_descriptors).
    max_total_connections: int = 0
    line_rate: float = 1000.0  # lines per second a client may send before it is slowed down; 0 = unlimited
    line_burst: int = 1000  # lines a client may send at once before the rate applies
    close_grace: float = 10.0  # seconds a closing connection may take to read its last lines


@attrs.frozen
class KalahaConfig:
    """Settings of the Kalaha service."""

    listen: tuple[str, ...] = ("tcp:4600",)
    move_time: float = 60.0  # seconds per move; 0 = no limit
    strikes: int = 3  # protocol errors in one game that lose it; 0 = never
    first: str = "arrival"  # who plays A (and moves first): arrival, alternate or random
    pair_delay: float = 0.5  # seconds a new connection may take to ask for a table before pairing
    computer: bool = True  # whether clients may ask for the built-in computer player
    board: bool = True  # whether board drawings are sent by default (clients can switch them)
    strike_people: bool = False  # refused lines of people (drawings on) on their own turn are strikes too
    grace: float | None = None  # seconds a dropped seat is kept for its return; None = [players] grace
    clock: TimeControl | None = _clock()  # the time control; None = move_time per move
    on_flag: str = "lose"  # when a player's time runs out: lose, or default (its lowest pit is sown; a strike)

    @property
    def time_control(self) -> TimeControl:
        return time_control(self.clock, self.move_time)


@attrs.frozen
class FightConfig:
    """Settings of the Virtual Fight service (AI port and GUI observer port)."""

    listen: tuple[str, ...] = ("tcp:4500",)
    gui_listen: tuple[str, ...] = ("tcp:4550",)
    teams: int = 2  # teams per game, 2 to 4 (the map needs start squares for them)
    map: str = "default"  # a shipped map name (default, four) or the path of a map file
    turn_time: float = 5.0  # seconds per turn from READY; 0 = no limit
    max_turns: int = 500  # the game ends when this turn has been resolved
    strikes: int = 10  # turns in a row an AI may time out before it is disqualified; 0 = never
    pair_delay: float = 0.5  # seconds a new AI may take to send NAME/TABLE before it is queued
    lobby_timeout: float = 300.0  # seconds an AI may wait for a game; 0 = forever
    max_line: int = 256  # bytes in one AI line
    max_lines: int = 1000  # lines one AI may send in one turn; later ones are answered 100
    gui_token: str = ""  # when set, observers must send AUTH&<token> first
    gui_lag: int = 0  # turns observers are kept behind the game
    gui_buffer: int = 262_144  # bytes an observer may leave unread before it is dropped
    gui_interval: float = 0.1  # seconds observer events are gathered before they are sent; 0 = at once
    # Seconds an observer may send nothing while no event reaches it (following a running game
    # it is never idle); 0 = never.
    gui_idle_timeout: float = 600.0
    grace: float | None = None  # seconds a dropped seat is kept for its return; None = [players] grace
    clock: TimeControl | None = _clock()  # the time control; None = turn_time per turn
    on_flag: str = "pass"  # when a team's time runs out: pass (the original rule: the rest of its turn is empty, a strike) or lose

    @property
    def time_control(self) -> TimeControl:
        return time_control(self.clock, self.turn_time)


@attrs.frozen
class CombatConfig:
    """Settings of the GGZ Combat service."""

    listen: tuple[str, ...] = ("tcp:5688",)  # the binary port of the original clients
    text_listen: tuple[str, ...] = ("tcp:5689",)  # the same game behind a short text handshake
    seats: int = 2  # seats per table (2..15)
    move_time: float = 600.0  # seconds per move; the seat to move loses when it runs out; 0 = none
    # Seconds a seat that dropped during a game is kept for its return (Combat's own grace);
    # 0 = it loses at once; None = [players] grace.
    rejoin_grace: float | None = None
    # Who may take back a dropped seat on the binary port, whose clients cannot log in: "address"
    # = a connection from the address the seat was held from; "anyone" = the next connection (the
    # original GGZ behaviour: anybody can take over a dropped army, unsafe).
    rejoin: str = "address"
    # Directory of results.jsonl (one line per finished game), an optional export beside the
    # records database, which keeps every game anyway; "" = none (the default).
    records: str = ""
    clock: TimeControl | None = _clock()  # the time control; None = move_time per move
    on_flag: str = "lose"  # when a seat's time runs out: lose

    @property
    def time_control(self) -> TimeControl:
        return time_control(self.clock, self.move_time)

    @property
    def grace(self) -> float | None:
        """The per-game grace (``Config.grace("combat")``): ``rejoin_grace``."""
        return self.rejoin_grace


@attrs.frozen
class Connect4Config:
    """Settings of the Connect Four service (people, engines, engine matches)."""

    listen: tuple[str, ...] = ("tcp:4700",)
    move_time: float = 60.0  # seconds per move; 0 = no limit; running out loses the game
    strikes: int = 3  # protocol errors in one game that lose it; 0 = never
    width: int = 7  # the default board size (clients may ask for 4..16 each way)
    height: int = 6
    board: bool = True  # whether drawings are sent after every move by default
    strike_people: bool = False  # refused lines of people (drawings on) on their own turn are strikes too
    engines: tuple[str, ...] = ()  # engines offered; () = every built-in and installed engine
    engines_dir: str = "engines"  # native engines: <engines_dir>/<name>/engine.so; "" = none
    engine_time: float = 10.0  # seconds an engine may think per move; more aborts the game (ENGINE)
    engine_games: int = 16  # engine games and matches at once (a native engine runs a process each)
    engine_nice: int = 10  # niceness of native engine processes (0-19): searches yield to the daemon
    engine_cpus: str = "auto"  # CPUs for native engines: "auto" = all but the first (on 2+ CPUs), "all", or "1,2,3"
    match_games: int = 100  # the most games one MATCH command may ask for
    grace: float | None = None  # seconds a dropped seat is kept for its return; None = [players] grace
    clock: TimeControl | None = _clock()  # the time control of people's tables; None = move_time per move
    on_flag: str = "lose"  # when a player's time runs out: lose, or default (the middle-most open column; a strike)

    @property
    def time_control(self) -> TimeControl:
        return time_control(self.clock, self.move_time)


@attrs.frozen
class WebConfig:
    """Settings of the web site: live tables, matches and ratings in a browser and as JSON."""

    listen: tuple[str, ...] = ("tcp:8080",)
    keepalive: float = 15.0  # seconds between keep-alive comments on event streams; 0 = none
    max_viewers: int = 10_000  # event streams open at once; 0 = unlimited
    viewer_buffer: int = 262_144  # bytes a viewer may leave unread before its stream is dropped
    linger: float = 60.0  # seconds a finished game stays visible at its live address
    idle_timeout: float = 60.0  # seconds a connection may send nothing (event streams excepted); 0 = none
    request_time: float = 10.0  # seconds a client may take to send one request (headers and body); 0 = no bound
    max_body: int = 65_536  # bytes of a request body (the site is read-only: GET and HEAD only)
    cors: str = ""  # origins whose pages may read the JSON API: "" = none (same origin only), "*" = any, or a list
    metrics: bool = True  # /metrics: the daemon's Prometheus metrics (docs/metrics.md)
    metrics_listen: tuple[str, ...] = ()  # a port of their own for /metrics, /healthz, /readyz (then not on the site)
    access_log: str = ""  # HTTP access lines: "" = none, "-" = standard output, or a file (appended to)
    trusted_proxies: str = ""  # addresses of reverse proxies whose X-Forwarded-For names the client ("" = none)


@attrs.frozen
class GenericConfig:
    """The generic port ([generic], docs/protocols/generic.md): every game in one JSON-lines protocol."""

    listen: tuple[str, ...] = ("tcp:4800",)  # strports descriptions; () = off
    selftest: bool = True  # SELFTEST <game>: a scripted match that checks a bot's protocol


@attrs.frozen
class AiProgram:
    """A Stratego AI program registered with the daemon ([stratego.ai.<name>])."""

    name: str
    command: str  # a path, optionally followed by arguments (POSIX shell quoting, no expansion)
    opponent: str = ""  # what the other side is told (the OPPONENT of the setup query); "" = command
    workdir: str = "fresh"  # "fresh": an empty directory per game, removed after; "persistent": one per AI

    @property
    def shown(self) -> str:
        return self.opponent or self.command


@attrs.frozen
class StrategoConfig:
    """Stratego matches run by the daemon: registered AI programs and tournament settings.

    Match defaults are the 2012 tournament's (-m 1000 -T 2, pausing on, -i off)."""

    ai: tuple[AiProgram, ...] = ()
    rounds: int = 0  # rounds of the daemon's tournament (continued at the next start until complete); 0 = none
    games: int = 2  # games per pair of AIs in a round (each plays both colours games/2 times)
    concurrency: int = 2  # games at once
    max_turns: int = 1000
    timeout: float = 2.0  # seconds per reply; 0 = none
    pause: bool = True
    allow_illegal: bool = False
    quit_grace: float = 1.0
    clock: TimeControl | None = _clock()  # the time control of each AI; None = timeout per reply
    clock_lines: bool = False  # a CLOCK line before each board view (opt-in: the UCC protocol has none)
    state_dir: str = "stratego"  # logs and results (relative to the working directory)

    @property
    def time_control(self) -> TimeControl:
        return time_control(self.clock, self.timeout)


@attrs.frozen
class PlayersConfig:
    """Who may play ([players]): accounts, guests, and how long a dropped seat is kept."""

    guests: bool = True  # players without a token may play (shown as guests, never rated)
    grace: float = 60.0  # seconds a seat that dropped during a game is kept for its return; 0 = it forfeits at once
    login_failures: int = 5  # failed logins from one address within login_window before it must wait; 0 = no limit
    login_window: float = 60.0  # seconds a failed login counts against its address


@attrs.frozen
class LadderConfig:
    """The ladder for networked bots ([ladder], docs/ladder.md): logged-in connections that send
    LADDER are paired continuously by rating (gamed.ladder)."""

    enabled: bool = True  # the text games (Kalaha, Connect Four) accept LADDER
    window: float = 200.0  # rating points (mu) two waiting bots may be apart at once
    widening: float = 20.0  # rating points the window grows by per second a bot waits
    concurrency: int = 4  # most ladder games one account plays at once (a bot may ask fewer: LADDER <n>)
    pair_cap: int = 10  # most ladder games between the same two accounts within pair_window
    pair_window: float = 3600.0  # seconds
    in_row: int = 0  # most games in a row of one account against the same opponent; 0 = no limit
    interval: float = 1.0  # seconds between pairing rounds while bots wait

    def rules(self):
        """The pure policy's numbers (gamed.ladder.policy.LadderRules)."""
        from gamed.ladder.policy import LadderRules

        return LadderRules(self.window, self.widening, self.concurrency, self.pair_cap, self.pair_window, self.in_row)


@attrs.frozen
class RecordsConfig:
    """Where finished matches and ratings are kept (gamed.records)."""

    # A SQLite path (relative to the working directory), sqlite:///abs/path, sqlite:rel/path or
    # postgresql://user:password@host:port/dbname; "" = keep no records.
    database: str = "gamed.sqlite"
    # Days a finished match keeps its moves (and their states); older matches keep their seats,
    # results, ratings and final state but not their moves (pruned at start and once a day).
    # 0 = keep every match's moves forever.
    keep_moves: float = 0.0


@attrs.frozen
class AdminConfig:
    """The SSH admin console ([admin], docs/admin.md): off unless ``listen`` names a port."""

    listen: tuple[str, ...] = ()  # strports descriptions of the SSH console; () = off
    authorized_keys: str = ""  # an OpenSSH authorized_keys file: the keys that may log in (required with listen)
    host_key: str = "gamed_admin_host_key"  # the server's private key; made (ed25519, mode 0600) when missing
    manhole: bool = True  # the user "manhole" gets a Python prompt in the daemon (same keys)


@attrs.frozen
class BotsConfig:
    """Hosted bots ([bots], and a [bots.<name>] table per bot: docs/hosting.md)."""

    isolation: str = "auto"  # auto: bubblewrap where it works; bwrap: required; none: resource limits only
    start_timeout: float = 30.0  # seconds a hosted bot has to take its seat
    warm: int = 4  # sandboxes started ahead per kind of bot (gamed.hosting.warm); 0 = none
    bots: tuple = ()  # gamed.hosting.spec.BotSpec, one per [bots.<name>] table

    def bot(self, name: str):
        """The bot called ``name`` (any case), or None."""
        return next((b for b in self.bots if b.name.lower() == name.lower()), None)


ISOLATIONS = ("auto", "bwrap", "none")


def _check_bots(section: Mapping[str, Any], base: BotsConfig) -> BotsConfig:
    """The [bots] section: its settings, and each [bots.<name>] table as a BotSpec."""
    from gamed.hosting.spec import SpecError, parse_bot

    settings: dict[str, Any] = {}
    bots = list(base.bots)
    games = tuple(game.name for game in registry.GAMES)
    for key, value in section.items():
        if isinstance(value, Mapping):
            try:
                spec = parse_bot(key, value, games)
            except SpecError as e:
                raise ConfigError(str(e)) from None
            if any(b.name.lower() == key.lower() for b in bots):
                raise ConfigError(f"bots.{key}: two bots with that name")
            bots.append(spec)
        elif key == "isolation":
            if value not in ISOLATIONS:
                raise ConfigError(f"bots.isolation must be one of {', '.join(ISOLATIONS)}, not {value!r}")
            settings[key] = value
        elif key == "start_timeout":
            settings[key] = _check("bots", key, value, float)
            if not 0 < settings[key] <= 3600:
                raise ConfigError(f"bots.start_timeout must be more than 0 and at most 3600 seconds, not {value!r}")
        elif key == "warm":
            settings[key] = _check("bots", key, value, int)
            if not 0 <= settings[key] <= 64:
                raise ConfigError(f"bots.warm must be from 0 to 64 sandboxes, not {value!r}")
        else:
            raise ConfigError(
                f"unknown setting bots.{key}; known: isolation, start_timeout, warm, and a [bots.<name>] table per bot"
            )
    return attrs.evolve(base, bots=tuple(bots), **settings)


@attrs.frozen
class TournamentsConfig:
    """Tournaments between hosted bots: a [tournaments.<name>] table each (docs/tournaments.md)."""

    tournaments: tuple = ()  # gamed.competition.spec.TournamentSpec, one per table

    def tournament(self, name: str):
        """The tournament called ``name`` (any case), or None."""
        return next((t for t in self.tournaments if t.name.lower() == name.lower()), None)


def _check_tournaments(section: Mapping[str, Any], base: TournamentsConfig) -> TournamentsConfig:
    """Each [tournaments.<name>] table as a TournamentSpec (its bots are checked in ``validate``)."""
    from gamed.competition.spec import SpecError, parse_tournament

    found = list(base.tournaments)
    games = tuple(game.name for game in registry.GAMES)
    for key, value in section.items():
        if not isinstance(value, Mapping):
            raise ConfigError(f"unknown setting tournaments.{key}; [tournaments] holds a [tournaments.<name>] table per tournament")
        try:
            spec = parse_tournament(key, value, games)
        except SpecError as e:
            raise ConfigError(str(e)) from None
        if any(t.name.lower() == key.lower() for t in found):
            raise ConfigError(f"tournaments.{key}: two tournaments with that name")
        found.append(spec)
    return attrs.evolve(base, tournaments=tuple(found))


class _ConfigMethods:
    """What every Config can answer besides its sections."""

    def grace(self, game: str) -> float:
        """The grace period of ``game``'s seats: its own setting, else ``[players] grace``."""
        own = getattr(getattr(self, game, None), "grace", None)
        return self.players.grace if own is None else own


# The sections every daemon has besides one per game, after the games' sections.
_SHARED_SECTIONS: dict[str, type] = {
    "web": WebConfig,
    "generic": GenericConfig,
    "limits": Limits,
    "records": RecordsConfig,
    "players": PlayersConfig,
    "bots": BotsConfig,
    "tournaments": TournamentsConfig,
    "ladder": LadderConfig,
    "admin": AdminConfig,
}


def config_class(games: tuple[registry.IGame, ...]) -> type:
    """The frozen attrs class of a whole configuration: one section per game of ``games`` (its
    ``section`` attribute, of its ``settings`` class) and the shared sections. ``games`` is kept
    as the class's ``games``; ``validate`` asks each of them about its own section."""
    sections = {game.section: game.settings for game in games} | _SHARED_SECTIONS
    fields = {name: attrs.field(factory=cls, metadata={"section": cls}) for name, cls in sections.items()}
    cls = attrs.make_class("Config", fields, bases=(_ConfigMethods,), frozen=True)
    cls.__doc__ = "The whole daemon configuration: a section per registered game, and the shared ones."
    cls.__module__ = __name__
    cls.games = games
    return cls


def sections(config_cls: type) -> dict[str, type]:
    """The sections of a Config class: {section name: its settings class}."""
    return {f.name: f.metadata["section"] for f in attrs.fields(config_cls)}


Config = config_class(registry.GAMES)

_SECTIONS: dict[str, type] = sections(Config)
WORKDIRS = ("fresh", "persistent")


def _check(section: str, name: str, value: Any, kind: type) -> Any:
    """Coerce ``value`` to ``kind`` or raise ConfigError naming ``section.name``."""
    where = f"{section}.{name}"
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("yes", "true", "on", "1", "no", "false", "off", "0"):
            return value.lower() in ("yes", "true", "on", "1")
        raise ConfigError(f"{where} must be true or false, not {value!r}")
    if kind in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{where} must be a number, not {value!r}")
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where} must be a {'whole ' if kind is int else ''}number, not {value!r}") from None
        if kind is int and isinstance(value, float) and value != number:
            raise ConfigError(f"{where} must be a whole number, not {value!r}")
        if number < 0:
            raise ConfigError(f"{where} must not be negative, not {value!r}")
        return number
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, not {value!r}")
        return value
    if kind is TimeControl:
        try:
            return timecontrol.parse(value)
        except timecontrol.TimeControlError as e:
            raise ConfigError(f"{where}: {e}") from None
    if kind is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where} must be a listen description or a list of them, not {value!r}")
        return tuple(v.strip() for v in value)
    raise AssertionError(kind)


def _check_ais(value: Any) -> tuple[AiProgram, ...]:
    """[stratego.ai.<name>] tables (or name = "command" shorthands) -> AiProgram entries."""
    if not isinstance(value, Mapping):
        raise ConfigError("stratego.ai must be a table of AI programs: [stratego.ai.<name>] command = ...")
    out = []
    known = {f.name for f in attrs.fields(AiProgram)} - {"name"}
    for name, entry in value.items():
        where = f"stratego.ai.{name}"
        if not valid_name(name):
            raise ConfigError(f"{where}: an AI name is 1-32 letters, digits, _ . -")
        if isinstance(entry, str):
            entry = {"command": entry}
        if not isinstance(entry, Mapping) or "command" not in entry:
            raise ConfigError(f"{where} needs a command")
        for key in entry:
            if key not in known:
                raise ConfigError(f"unknown setting {where}.{key}; known: {', '.join(sorted(known))}")
        fields = {key: _check(where, key, v, str) for key, v in entry.items()}
        if not fields["command"].strip():
            raise ConfigError(f"{where}.command must not be empty")
        if fields.get("workdir", "fresh") not in WORKDIRS:
            raise ConfigError(f"{where}.workdir must be fresh or persistent, not {fields['workdir']!r}")
        out.append(AiProgram(name=name, **fields))
    return tuple(out)


def _kind(cls: type, name: str) -> type:
    kind = attrs.fields_dict(cls)[name].metadata.get("kind")
    if kind is not None:
        return kind
    default = getattr(cls(), name)
    if default is None:  # "None = the shared setting" (a game's grace): a number when given
        return float
    return bool if isinstance(default, bool) else type(default)


def build(values: Mapping[str, Mapping[str, Any]], base: Config | None = None) -> Config:
    """Apply ``values`` ({section: {setting: value}}) on top of ``base`` and validate the result."""
    base = base or Config()
    known_sections = sections(type(base))
    changed: dict[str, Any] = {}
    for section, settings in values.items():
        cls = known_sections.get(section)
        if cls is None:
            raise ConfigError(f"unknown section [{section}]; known: {', '.join(sorted(known_sections))}")
        if not isinstance(settings, Mapping):
            raise ConfigError(f"[{section}] must be a table of settings")
        if cls is BotsConfig:
            changed[section] = _check_bots(settings, getattr(base, section))
            continue
        if cls is TournamentsConfig:
            changed[section] = _check_tournaments(settings, getattr(base, section))
            continue
        known = {f.name for f in attrs.fields(cls)}
        changes = {}
        for name, value in settings.items():
            if name not in known:
                raise ConfigError(f"unknown setting {section}.{name}; known: {', '.join(sorted(known))}")
            if cls is StrategoConfig and name == "ai":
                changes[name] = _check_ais(value)
            else:
                changes[name] = _check(section, name, value, _kind(cls, name))
        changed[section] = attrs.evolve(getattr(base, section), **changes)
    config = attrs.evolve(base, **changed)
    validate(config)
    return config


_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?")


def cors_origins(setting: str) -> tuple[str, ...]:
    """``[web] cors`` as origins: ``()`` (none), ``("*",)`` (any) or ``scheme://host[:port]``
    entries (separated by commas or blanks); ConfigError for anything else."""
    origins = tuple(o for o in re.split(r"[,\s]+", setting) if o)
    if origins == ("*",):
        return origins
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise ConfigError(
                "web.cors must be \"\" (none), \"*\" (any) or origins like https://example.org "
                f"(scheme://host[:port], no path), not {origin!r}"
            )
    return origins


def trusted_proxies(setting: str) -> frozenset[str]:
    """``[web] trusted_proxies`` as a set of IP addresses (separated by commas or blanks, in
    their canonical form); ConfigError for anything that is not an address."""
    found = set()
    for word in (w for w in re.split(r"[,\s]+", setting) if w):
        try:
            found.add(str(ipaddress.ip_address(word)))
        except ValueError:
            raise ConfigError(f"web.trusted_proxies must be IP addresses such as 127.0.0.1 or ::1, not {word!r}") from None
    return frozenset(found)


def validate(config: Config) -> None:
    """Raise ConfigError for combinations no single value check catches: the shared sections'
    here, each game's by its registry entry (``IGame.validate``), in the order of the games."""
    for game in type(config).games:
        game.validate(getattr(config, game.section))
    lim = config.limits
    web = config.web
    if web.keepalive > 3600:
        raise ConfigError(f"web.keepalive must be at most 3600 seconds, not {web.keepalive:g}")
    if web.viewer_buffer < 4096:
        raise ConfigError(f"web.viewer_buffer must be at least 4096 bytes, not {web.viewer_buffer}")
    if web.max_body > 16_777_216:
        raise ConfigError(f"web.max_body must be at most 16777216 bytes, not {web.max_body}")
    cors_origins(web.cors)
    trusted_proxies(web.trusted_proxies)
    if web.access_log not in ("", "-"):
        folder = os.path.dirname(os.path.abspath(web.access_log))
        if not os.path.isdir(folder):
            raise ConfigError(f"web.access_log: the folder {folder} does not exist")
    if not 16 <= lim.max_line <= 1_048_576:
        raise ConfigError(f"limits.max_line must be 16 to 1048576 bytes, not {lim.max_line}")
    if lim.line_rate and lim.line_burst < 1:
        raise ConfigError("limits.line_burst must be at least 1 when limits.line_rate is set")
    _validate_records(config.records)
    _validate_admin(config.admin)
    _validate_tournaments(config)
    _validate_ladder(config.ladder)
    if not config.players.guests and not config.records.database:
        raise ConfigError("players.guests = false needs accounts, and accounts live in the records database: set records.database")


def _validate_admin(admin: AdminConfig) -> None:
    """The console needs its keys file; the key files are checked (read) at start-up."""
    if admin.listen and not admin.authorized_keys.strip():
        raise ConfigError("admin.listen needs admin.authorized_keys: the OpenSSH authorized_keys file of the keys that may log in")
    if admin.listen and not admin.host_key.strip():
        raise ConfigError("admin.host_key must name a file for the console's host key")


def _validate_ladder(ladder: LadderConfig) -> None:
    """The ladder's numbers must leave it able to pair anyone."""
    if not 1 <= ladder.concurrency <= 64:
        raise ConfigError(f"ladder.concurrency must be 1 to 64 games, not {ladder.concurrency}")
    if ladder.pair_cap < 1:
        raise ConfigError(f"ladder.pair_cap must be at least 1 game, not {ladder.pair_cap}")
    if not 0 < ladder.pair_window <= 30 * 86400:
        raise ConfigError(f"ladder.pair_window must be more than 0 and at most 30 days (2592000 s), not {ladder.pair_window:g}")
    if not 0.05 <= ladder.interval <= 60:
        raise ConfigError(f"ladder.interval must be 0.05 to 60 seconds, not {ladder.interval:g}")


def _validate_tournaments(config: Config) -> None:
    """Every tournament's bots are registered hosted bots of its game; tournaments need records.
    With a records database a bot the config does not name may be one ``gamed bot add`` stored:
    start-up checks those (gamed.tap.with_stored_bots), with the same words."""
    if not config.tournaments.tournaments:
        return
    from gamed.competition.spec import SpecError, check_bots

    for spec in config.tournaments.tournaments:
        try:
            check_bots(spec, config.bots.bots, unknown_ok=bool(config.records.database))
        except SpecError as e:
            raise ConfigError(str(e)) from None
    if not config.records.database:
        raise ConfigError("tournaments are kept in the records database: set records.database")


def _validate_records(records: RecordsConfig) -> None:
    """The records database must be a URL gamed.records can open (checked without opening it)."""
    db = records.database
    if db != db.strip() or "\n" in db or "\0" in db:
        raise ConfigError(f"records.database must not have blanks around it or line breaks, not {db!r}")
    if not db:
        return
    if "://" in db and not db.startswith(("sqlite://", "postgresql://", "postgres://")):
        raise ConfigError(f"records.database must be a SQLite path, sqlite:... or postgresql://... URL, not {db!r}")
    if db in ("sqlite:", "sqlite://", "sqlite:///"):
        raise ConfigError(f"records.database {db!r} names no file")


def load(path: str, base: Config | None = None) -> Config:
    """Read the TOML file at ``path`` and return the validated Config it describes."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
    try:
        return build(data, base)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
