"""The admin console's commands as text in, text out: parse a command line, ask the daemon
(an ``IAdminTarget``), format the answer as lines with an exit status (0 done, 1 an error such as
an unknown target, 2 a command or its arguments not understood). The console, ``exec`` over SSH
and ``gamed admin`` all run commands through ``AdminCommands.run``; docs/admin.md shows every
command with an example session that the tests replay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import Interface

OK, FAILED, USAGE = 0, 1, 2
MAX_TEXT = 400  # characters of a broadcast or a reason


class AdminError(Exception):
    """A command that cannot be carried out: one line for the operator (``error: <line>``)."""

    def __init__(self, text: str, status: int = FAILED):
        super().__init__(text)
        self.status = status


@attrs.frozen
class Reply:
    """What a command answers: its lines and its exit status."""

    lines: tuple[str, ...]
    status: int = OK

    def text(self, newline: str = "\n") -> str:
        return "".join(line + newline for line in self.lines)


@attrs.frozen
class GameRow:
    game: str
    connections: int
    playing: int  # games in play


@attrs.frozen
class TableRow:
    id: str
    game: str
    players: tuple[str, ...]
    turn: int
    to_move: str  # the name of the seat to move, or "-"
    spectators: int
    age: float  # seconds since it began


@attrs.frozen
class ConnectionRow:
    id: int
    game: str
    port: str  # the port's option ("kalaha", "fight-gui") and number: "kalaha:4600"
    peer: str
    name: str  # the player's name (an account's, a guest's) or "-"
    table: str  # its table's id or "-"
    age: float


@attrs.frozen
class PlayerRow:
    name: str
    kind: str  # person, bot, guest
    connections: tuple[int, ...]
    tables: tuple[str, ...]


class IAdminTarget(Interface):
    """The running daemon as the console sees it (gamed.admin.daemon.DaemonTarget)."""

    def games() -> list[GameRow]:
        """Every game served, with its connections and games in play."""

    def game_names() -> list[str]:
        """The games served (for checking a GAME argument)."""

    def tables(game: str | None) -> list[TableRow]:
        """The tables in play (of ``game``); AdminError when the daemon keeps no live tables."""

    def connections(game: str | None) -> list[ConnectionRow]:
        """The game connections (of ``game``), oldest first."""

    def players() -> list[PlayerRow]:
        """Who is connected, by name."""

    def show(table_id: str) -> list[str]:
        """The lines describing one table; AdminError when there is none."""

    def kick(connection_id: int, reason: str) -> ConnectionRow:
        """Close a connection (it is told why); AdminError when there is none."""

    def ban(kind: str, target: str, reason: str) -> defer.Deferred:
        """Ban an address (or network) or an account, kept across restarts; fires with the lines
        to answer; fails with AdminError (no such account, no records database)."""

    def unban(kind: str, target: str) -> defer.Deferred:
        """Lift a ban; fires with the lines to answer; AdminError when it was not banned."""

    def bans() -> list[Any]:
        """The bans in force (gamed.connections.Ban)."""

    def broadcast(text: str) -> list[str]:
        """Send ``text`` to every player; the lines to answer (sent, skipped)."""

    def drain() -> list[str]:
        """Start draining (no new games; exit 0 once the games in play have finished); the lines to answer."""


# (command, arguments, what it does): ``help`` and docs/admin.md.
COMMANDS = (
    ("games", "", "each game served: its connections and games in play"),
    ("tables", "[GAME]", "the tables in play: id, players, turn, who moves, spectators"),
    ("connections", "[GAME]", "the game connections: id, port, peer address, name, table"),
    ("players", "", "who is connected, by name: kind, connections, tables"),
    ("show", "TABLE | GAME NUMBER", "one table: seats, clocks, state, its connections"),
    ("kick", "CONNECTION-ID [REASON]", "close a connection (a seat in a game is kept for the grace period)"),
    ("ban", "address ADDRESS|CIDR [REASON]", "refuse an address or network (its connections are closed)"),
    ("ban", "account NAME [REASON]", "refuse an account's logins (its connections are closed)"),
    ("unban", "address ADDRESS|CIDR | account NAME", "lift a ban"),
    ("bans", "", "the bans in force"),
    ("broadcast", "TEXT", "send TEXT to every player (the text games' INFO line)"),
    ("drain", "", "no new games; the daemon exits (status 0) once the games in play have finished"),
    ("help", "", "this list"),
)


def help_lines() -> list[str]:
    width = max(len(f"{cmd} {args}") for cmd, args, _ in COMMANDS)
    return [f"{f'{cmd} {args}'.strip():<{width}}  {text}" for cmd, args, text in COMMANDS] + ["quit (the console only): log out"]


def columns(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A table as left-aligned columns, the header first."""
    cells = [list(header)] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]


def age(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def plain_text(text: str, what: str) -> str:
    """``text`` when it is printable ASCII of at most MAX_TEXT characters; AdminError otherwise."""
    text = text.strip()
    if not text.isascii() or not text.isprintable():
        raise AdminError(f"{what} must be printable ASCII text", USAGE)
    if len(text) > MAX_TEXT:
        raise AdminError(f"{what} is {len(text)} characters, more than {MAX_TEXT}", USAGE)
    return text


class AdminCommands:
    """Runs console command lines against ``target`` (an IAdminTarget)."""

    _log = Logger()

    def __init__(self, target: Any):
        self.target = target

    def run(self, line: str) -> defer.Deferred:
        """Fires with the Reply to ``line``; never fails (an unexpected error is logged and
        answered ``error: internal error``)."""
        d = defer.maybeDeferred(self._run, line)

        def failed(failure) -> Reply:
            if failure.check(AdminError):  # (it may quote what was typed: shown as printable ASCII)
                text = "".join(c if c.isascii() and c.isprintable() else "?" for c in str(failure.value))
                return Reply((f"error: {text}",), failure.value.status)
            self._log.failure("admin command {line!r} failed", failure, line=line)
            return Reply(("error: internal error; it has been logged",), FAILED)

        d.addCallback(lambda lines: lines if isinstance(lines, Reply) else Reply(tuple(lines)))
        d.addErrback(failed)
        return d

    def _run(self, line: str) -> Any:
        words = line.split()
        if not words:
            return []
        command = words[0].lower()
        handler = getattr(self, f"_{command}", None) if command.isalpha() else None
        if handler is None:
            raise AdminError(f"unknown command {command[:20]}; type help", USAGE)
        rest = line.strip()[len(words[0]):].strip()
        return handler(words[1:], rest)

    # --- commands ------------------------------------------------------------------------

    def _help(self, args: list[str], rest: str) -> list[str]:
        return help_lines()

    def _game(self, args: list[str], usage: str) -> str | None:
        if len(args) > 1:
            raise AdminError(f"usage: {usage}", USAGE)
        if not args:
            return None
        names = self.target.game_names()
        game = args[0].lower()
        if game not in names:
            raise AdminError(f"no game {args[0]}; served: {', '.join(names) or 'none'}")
        return game

    def _games(self, args: list[str], rest: str) -> list[str]:
        if args:
            raise AdminError("usage: games", USAGE)
        return columns(("GAME", "CONNECTIONS", "PLAYING"), [(g.game, g.connections, g.playing) for g in self.target.games()])

    def _tables(self, args: list[str], rest: str) -> list[str]:
        rows = self.target.tables(self._game(args, "tables [GAME]"))
        return columns(
            ("TABLE", "PLAYERS", "TURN", "TO-MOVE", "SPECTATORS", "AGE"),
            [(t.id, ",".join(t.players), t.turn, t.to_move, t.spectators, age(t.age)) for t in rows],
        )

    def _connections(self, args: list[str], rest: str) -> list[str]:
        rows = self.target.connections(self._game(args, "connections [GAME]"))
        return columns(
            ("ID", "GAME", "PORT", "PEER", "NAME", "TABLE", "AGE"),
            [(c.id, c.game, c.port, c.peer, c.name, c.table, age(c.age)) for c in rows],
        )

    def _players(self, args: list[str], rest: str) -> list[str]:
        if args:
            raise AdminError("usage: players", USAGE)
        return columns(
            ("NAME", "KIND", "CONNECTIONS", "TABLES"),
            [(p.name, p.kind, ",".join(map(str, p.connections)), ",".join(p.tables) or "-") for p in self.target.players()],
        )

    def _show(self, args: list[str], rest: str) -> list[str]:
        if len(args) == 2 and args[1].isdigit():
            table = f"{self._game(args[:1], 'show TABLE')}-{int(args[1])}"
        elif len(args) == 1:
            table = args[0].lower()
        else:
            raise AdminError("usage: show TABLE (kalaha-1) or show GAME NUMBER (kalaha 1)", USAGE)
        return self.target.show(table)

    def _kick(self, args: list[str], rest: str) -> list[str]:
        if not args:
            raise AdminError("usage: kick CONNECTION-ID [REASON]", USAGE)
        number = _number(args[0], "a connection id")
        reason = plain_text(rest[len(args[0]):], "the reason") if len(args) > 1 else ""
        conn = self.target.kick(number, reason)
        return [f"kicked {conn.id}: {conn.game} {conn.peer} {conn.name}" + (f" ({reason})" if reason else "")]

    def _kind_target(self, args: list[str], usage: str) -> tuple[str, str]:
        if len(args) < 2 or args[0].lower() not in ("address", "account"):
            raise AdminError(f"usage: {usage}", USAGE)
        return args[0].lower(), args[1]

    def _ban(self, args: list[str], rest: str) -> Any:
        kind, target = self._kind_target(args, "ban address ADDRESS|CIDR [REASON] | ban account NAME [REASON]")
        reason = rest.split(None, 2)[2] if len(args) > 2 else ""
        return self.target.ban(kind, target, plain_text(reason, "the reason") if reason else "")

    def _unban(self, args: list[str], rest: str) -> Any:
        kind, target = self._kind_target(args, "unban address ADDRESS|CIDR | unban account NAME")
        if len(args) > 2:
            raise AdminError("usage: unban address ADDRESS|CIDR | unban account NAME", USAGE)
        return self.target.unban(kind, target)

    def _bans(self, args: list[str], rest: str) -> list[str]:
        if args:
            raise AdminError("usage: bans", USAGE)
        return columns(("KIND", "TARGET", "REASON"), [(b.kind, b.target, b.reason or "-") for b in self.target.bans()])

    def _broadcast(self, args: list[str], rest: str) -> list[str]:
        if not rest:
            raise AdminError("usage: broadcast TEXT", USAGE)
        return self.target.broadcast(plain_text(rest, "the text"))

    def _drain(self, args: list[str], rest: str) -> list[str]:
        if args:
            raise AdminError("usage: drain", USAGE)
        return self.target.drain()


def _number(text: str, what: str) -> int:
    if not text.isdigit() or len(text) > 12:
        raise AdminError(f"{what} is a number, not {text[:20]!r}", USAGE)
    return int(text)


def state_line(state: Any) -> str:
    """A table's spectator state in one line (compact JSON)."""
    return json.dumps(state, separators=(",", ":"), sort_keys=True)
