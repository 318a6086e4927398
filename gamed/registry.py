"""The game registry: every game the daemon hosts, registered once.

As twisted.words builds every protocol's port from its ``IProtocolPlugin``s, gamed builds from
one tuple of games: each game folder has a ``game_entry.py`` exporting ``GAME``, an object
providing ``IGame`` (its name and title, its config section and settings class, its seats, its
listening ports, its command-line options and ``make_service``), and ``GAMES`` lists them. The
command line and the config file (``gamed.tap``, ``gamed.config``), the records' game types,
the ports' names in the ready line and the web site all read ``GAMES``, so a sixth game is its
folder plus one line in ``_ENTRIES`` below.

This module and the entry files are the core layer: importing them imports neither Twisted's
reactor nor any game's service (``make_service`` imports its service when it is called).
``GAMES`` is built on first use, so ``gamed.config`` can read it while the entries' settings
classes (which live in ``gamed.config`` for the first five games) are being defined.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from zope.interface import Attribute, Interface, implementer

# The game folders' entries, in the order the games are listed everywhere (ports, help, web).
_ENTRIES = (
    "gamed.kalaha.game_entry",
    "gamed.fight.game_entry",
    "gamed.combat.game_entry",
    "gamed.stratego.game_entry",
    "gamed.connect4.game_entry",
)


class IGame(Interface):
    """What a game gives the daemon so that it can be configured, listened for and shown."""

    name = Attribute("The game type, as records, the web API and URLs name it: 'kalaha'.")
    title = Attribute("The game's name for people: 'Kalaha', 'Virtual Fight'.")
    section = Attribute("Its config-file section: '[kalaha]' is 'kalaha'; also the Config attribute.")
    settings = Attribute("Its frozen attrs settings class; every field has a default.")
    seats = Attribute("(fewest, most) seats at one table: (2, 2) for Kalaha, (2, 15) for Combat.")
    board = Attribute("How the web site draws its states: 'kalaha', 'fight', 'stratego', 'connect4'; '' = as JSON.")
    ports = Attribute("Its listening ports, a tuple of GamePort (empty for a game without ports).")
    options = Attribute("Its command-line options besides the ports, a tuple of GameOption.")
    reasons = Attribute(
        "Why a game ended (the records' reason) -> the words after '<winner> won: ' where the game's "
        "differ from every game's (gamed.outcome); '{loser}' stands for who lost."
    )

    replay_version = Attribute(
        "Names the replayer that ``next_state`` is (\"kalaha/1\"); '' for a game without one, whose "
        "records keep every move's state whole. A replayer that predicts differently is a new version."
    )

    def points(final_state: Any) -> list[float] | None:
        """The game's own points per seat in a final state (Kalaha's stones), or None."""

    def next_state(state: Any, seat: int | None, move: str) -> Any:
        """The spectator state after ``move`` (as the records keep it: the seat that made it and
        its text) from the state before it, as the rules predict it (gamed.replay); raises when
        it cannot. Pure and deterministic: the records rebuild stored matches' states with it."""

    def generic_host(service: Any) -> Any:
        """The game's gamed.generic.seat.IGenericHost playing in ``service`` (its running
        service), or None when the game is not offered on the generic port."""

    def switched_on(settings: Any) -> bool:
        """Whether the daemon runs the game with these settings (a port to play on, programs...)."""

    def validate(settings: Any) -> None:
        """Raise gamed.config.ConfigError for settings no single value check catches."""

    def prepare(settings: Any) -> Any:
        """Work done before anything listens (reading a map file); raise ConfigError when it
        cannot be used. The result is handed to make_service as ``ctx.prepared``."""

    def make_service(ctx: GameContext) -> tuple[Any, Mapping[str, Callable[[], Any]]]:
        """The game's service (an IService, not started) and, per port option, the factory
        builder of that port (``service.port_factory``)."""


@attrs.frozen
class GamePort:
    """One kind of listening port of a game (a --GAME option and its config setting)."""

    option: str  # the command-line option without "--" ("fight-gui"), also the port's name in logs and /api/server
    setting: str  # the setting of the game's section with its descriptions ("gui_listen")
    serves: str  # what it serves in words, in the ready line and on the web ("virtual fight GUI")
    unit: str  # the systemd socket unit that passes it ("gamed-fight-gui.socket"), named like the option
    help: str  # the option's help text
    plays: bool = True  # games are played on it (an observer port alone does not switch the game on)
    bots: bool = True  # a hosted bot that connects itself is sent to the first such port (docs/hosting.md)


@attrs.frozen
class GameOption:
    """A command-line option of one setting of a game's section."""

    option: str  # "kalaha-move-time"
    setting: str  # "move_time"
    help: str  # may hold {default} (or {default:g}): the setting's default

    def text(self, settings: type) -> str:
        """The help text with the default filled in."""
        return self.help.format(default=getattr(settings(), self.setting))


@attrs.frozen
class GameContext:
    """What a game's make_service gets from the daemon."""

    cfg: Any  # the whole gamed.config.Config (a game may read the shared sections)
    limits: Any  # cfg.limits
    reactor: Any
    hub: Any  # the daemon's LiveHub, or None (neither web site nor records)
    think: Callable[[Callable[[], Any]], Any]  # runs work in the reactor's thread pool, returns a Deferred
    options: Any  # the parsed gamed.tap.Options
    players: Any = None  # the daemon's gamed.players.Players (accounts and seats), or None
    prepared: Any = None  # what the game's prepare() returned


def _resolve(ref: type | str) -> type:
    """A settings class, or ``"module:Name"`` naming one (imported when first asked for)."""
    if isinstance(ref, str):
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(module), name)
    return ref


@implementer(IGame)
@attrs.frozen
class Game:
    """An IGame made of its parts; a game folder's ``GAME`` is one of these."""

    name: str
    title: str
    section: str
    # The settings class, or "module:Name" for the classes that live in gamed.config (which reads
    # this registry to build its Config, so an entry cannot import it).
    settings_class: type | str = attrs.field(alias="settings")
    seats: tuple[int, int]
    service: Callable[[GameContext], tuple[Any, Mapping[str, Callable[[], Any]]]]
    ports: tuple[GamePort, ...] = ()
    options: tuple[GameOption, ...] = ()
    board: str = ""
    reasons: Mapping[str, str] = attrs.field(factory=dict)
    scored: Callable[[Any], list[float] | None] | None = None  # points(); default: none
    on: Callable[[Any], bool] | None = None  # default: a playing port has descriptions
    check: Callable[[Any], None] | None = None
    before: Callable[[Any], Any] | None = None
    # The replayer (gamed.replay): "module:function" of the rules' next_state, imported when
    # first used, and its version; none: the records keep every state whole.
    replayer: Callable[[Any, int | None, str], Any] | str | None = None
    replay_version: str = ""
    # The generic port's host (gamed.generic): "module:function" building its IGenericHost from
    # the game's service, imported when the port is wired; none: not on the generic port.
    generic: str | None = None

    def generic_host(self, service: Any) -> Any:
        """The game's IGenericHost for ``service`` (None: the game is not on the generic port)."""
        if self.generic is None:
            return None
        module, _, name = self.generic.partition(":")
        return getattr(importlib.import_module(module), name)(service)

    @property
    def settings(self) -> type:
        return _resolve(self.settings_class)

    def points(self, final_state: Any) -> list[float] | None:
        return self.scored(final_state) if self.scored is not None else None

    def next_state(self, state: Any, seat: int | None, move: str) -> Any:
        if self.replayer is None:
            raise NotImplementedError(f"{self.name} has no replayer")
        replayer = self.replayer
        if isinstance(replayer, str):
            module, _, name = replayer.partition(":")
            replayer = getattr(importlib.import_module(module), name)
        return replayer(state, seat, move)

    def switched_on(self, settings: Any) -> bool:
        if self.on is not None:
            return bool(self.on(settings))
        return any(getattr(settings, port.setting) for port in self.ports if port.plays)

    def validate(self, settings: Any) -> None:
        if self.check is not None:
            self.check(settings)

    def prepare(self, settings: Any) -> Any:
        return self.before(settings) if self.before is not None else None

    def make_service(self, ctx: GameContext) -> tuple[Any, Mapping[str, Callable[[], Any]]]:
        return self.service(ctx)


def load(entries: tuple[str, ...] = _ENTRIES) -> tuple[IGame, ...]:
    """The ``GAME`` of every entry module, in order."""
    return tuple(importlib.import_module(entry).GAME for entry in entries)


def by_name(games: tuple[IGame, ...] | None = None) -> dict[str, IGame]:
    """The games by their name (``GAMES`` unless ``games`` is given); do not change it."""
    if games is not None:
        return {game.name: game for game in games}
    named = globals().get("_BY_NAME")
    if named is None:
        named = globals()["_BY_NAME"] = {game.name: game for game in _games()}
    return named


GAMES: tuple[IGame, ...]  # the registered games (built on first use)


def _games() -> tuple[IGame, ...]:
    games = globals().get("GAMES")
    if games is None:
        games = globals()["GAMES"] = load()
    return games


def __getattr__(name: str) -> Any:
    # GAMES is built on first use (PEP 562), once this module is whole: the entries import it.
    if name == "GAMES":
        return _games()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
