"""The running daemon as the admin console sees it: ``DaemonTarget`` provides
``gamed.admin.commands.IAdminTarget`` from what ``gamed.tap`` hands it (the connection registry,
the game services, the live hub, the players, the ban store) and ``Drain`` stops the daemon once
its games in play have finished.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer, task
from twisted.logger import Logger
from zope.interface import implementer

from gamed.admin.commands import (
    AdminError,
    ConnectionRow,
    GameRow,
    IAdminTarget,
    PlayerRow,
    TableRow,
    age,
    state_line,
)
from gamed.connections import DRAINING, BanError, ConnectionRegistry

DRAIN_EVERY = 0.2  # seconds between two looks at the games in play while draining


def _in_game(protocol: Any) -> bool:
    """Whether a game protocol's connection sits at a game in play (protocols without games,
    such as observers, are never idle by this test: they are left to the shutdown)."""
    if not hasattr(protocol, "game"):
        return True
    if getattr(protocol, "match", None) is not None or getattr(protocol, "starting", False):
        return True  # Connect Four: an engine match it watches, or engines being started for it
    game = protocol.game
    return game is not None and not getattr(game, "over", False)


def games_in_play(services: dict[str, Any], hub: Any) -> int:
    """The games in play on every service (and the live hub's running tables, when larger)."""
    total = 0
    for service in services.values():
        if hasattr(service, "games_running"):
            total += service.games_running()
        else:
            total += len(getattr(service, "games", {}))
    if hub is not None:
        total = max(total, len(hub.tables))
    return total


class Drain:
    """No new games, then a stop: new connections are refused (the registry says why), the
    connections that are not at a game are told so and closed, and once no game is in play
    ``stop`` is called (the daemon exits with status 0)."""

    _log = Logger()

    def __init__(self, registry: ConnectionRegistry, services: dict[str, Any], hub: Any, clock: Any,
                 stop: Callable[[], None], ports: Any = None):
        self.registry = registry
        self.services = services
        self.hub = hub
        self.clock = clock
        self.stop = stop
        self.ports = ports
        self._loop: task.LoopingCall | None = None
        self.stopped = False

    @property
    def draining(self) -> bool:
        return self.registry.draining

    def start(self) -> int:
        """Begin draining (again: nothing new); the games in play now."""
        if not self.registry.draining:
            self.registry.draining = True
            if self.ports is not None:
                self.ports.draining = True  # /readyz: not ready
            self._log.info("draining: no new games; {n} in play; the daemon stops once they have finished",
                           n=games_in_play(self.services, self.hub))
            self._loop = task.LoopingCall(self._look)
            self._loop.clock = self.clock
            self._loop.start(DRAIN_EVERY, now=True)
        return games_in_play(self.services, self.hub)

    def _look(self) -> None:
        for conn in self.registry:
            protocol = conn.protocol
            if not _in_game(protocol) and not getattr(protocol, "closing", False):
                close = getattr(protocol, "close", None)
                bye = getattr(protocol, "bye_lines", lambda text: [])
                if close is not None:
                    close("the server is draining", bye(DRAINING))
                else:
                    conn.wrapper.transport.loseConnection()
        if games_in_play(self.services, self.hub) == 0 and not self.stopped:
            self.stopped = True
            self._loop.stop()
            self._log.info("drained: no game is in play; stopping")
            self.stop()


@implementer(IAdminTarget)
class DaemonTarget:
    """The console's view of the daemon and the actions it takes on it."""

    _log = Logger()

    def __init__(self, registry: ConnectionRegistry, services: dict[str, Any], hub: Any, players: Any,
                 ban_store: Any, drain: Drain, clock: Any):
        self.registry = registry
        self.services = services
        self.hub = hub
        self.everyone = players  # the daemon's gamed.players.Players
        self.ban_store = ban_store  # gamed.bans.BanStore, or None without a records database
        self.drain_ = drain
        self.clock = clock
        self.kicks = 0  # connections closed by kick or ban (gamed.metrics)

    # --- what is there ---------------------------------------------------------------------

    def game_names(self) -> list[str]:
        return list(self.services)

    def games(self) -> list[GameRow]:
        counts: dict[str, int] = {}
        for conn in self.registry:
            counts[conn.game] = counts.get(conn.game, 0) + 1
        return [GameRow(name, counts.get(name, 0), games_in_play({name: service}, None))
                for name, service in self.services.items()]

    def _live(self) -> Any:
        if self.hub is None:
            raise AdminError("this daemon keeps no live tables (it has neither a web site nor a records database)")
        return self.hub

    def tables(self, game: str | None) -> list[TableRow]:
        now = self.clock.seconds()
        rows = []
        for table in self._live().tables.values():
            if game is not None and table.game != game:
                continue
            names = tuple(s.name for s in table.seats)
            to_move = names[table.to_move] if isinstance(table.to_move, int) and 0 <= table.to_move < len(names) else "-"
            rows.append(TableRow(table.id, table.game, names, table.turn, to_move, len(table.viewers), now - table.started))
        return rows

    def _row(self, conn: Any) -> ConnectionRow:
        protocol = conn.protocol
        identity = getattr(protocol, "identity", None)
        local = conn.local_port
        return ConnectionRow(
            conn.id, conn.game, f"{conn.port}:{local}" if local is not None else conn.port, conn.peer,
            getattr(identity, "name", None) or "-", self._table_of(protocol), self.clock.seconds() - conn.since,
        )

    @staticmethod
    def _table_of(protocol: Any) -> str:
        game = getattr(protocol, "game", None)
        service = getattr(protocol, "service", None)
        if game is None or service is None or not hasattr(service, "live_table_of"):
            return "-"
        table = service.live_table_of(game)
        return table.id if table is not None else f"#{getattr(game, 'id', '?')}"

    def connections(self, game: str | None) -> list[ConnectionRow]:
        return [self._row(c) for c in self.registry if game is None or c.game == game]

    def players(self) -> list[PlayerRow]:
        found: dict[str, dict[str, Any]] = {}
        for conn in self.registry:
            identity = getattr(conn.protocol, "identity", None)
            if identity is None:
                continue
            entry = found.setdefault(identity.name, {"kind": identity.kind, "ids": [], "tables": []})
            entry["ids"].append(conn.id)
            table = self._table_of(conn.protocol)
            if table != "-" and table not in entry["tables"]:
                entry["tables"].append(table)
        return [PlayerRow(name, e["kind"], tuple(e["ids"]), tuple(e["tables"])) for name, e in sorted(found.items(), key=lambda kv: kv[0].lower())]

    def show(self, table_id: str) -> list[str]:
        table = self._live().table(table_id)
        if table is None:
            raise AdminError(f"no table {table_id}")
        now = self.clock.seconds()
        over = table.result is not None
        lines = [f"table {table.id}: {table.game}, {'over' if over else 'in play'}, began {age(now - table.started)} ago, turn {table.turn}"]
        for seat in table.seats:
            mark = " (to move)" if table.to_move == seat.seat and not over else ""
            lines.append(f"seat {seat.seat}: {seat.name} ({seat.kind}){mark}")
        if table.clocks:
            lines.append("clocks: " + ", ".join(f"seat {s} {'-' if left is None else f'{left:g}s'}" for s, left in table.clocks.items()))
        lines.append(f"options: {state_line(table.options)}")
        lines.append(f"state: {state_line(table.state)}")
        if over:
            lines.append(f"result: {table.outcome or state_line(table.result)}")
        ids = [str(c.id) for c in self.registry if self._table_of(c.protocol) == table.id]
        lines.append(f"spectators: {len(table.viewers)}; connections: {', '.join(ids) or '-'}")
        return lines

    # --- actions ---------------------------------------------------------------------------

    def kick(self, connection_id: int, reason: str) -> ConnectionRow:
        conn = self.registry.get(connection_id)
        if conn is None:
            raise AdminError(f"no connection {connection_id}")
        row = self._row(conn)
        self._close(conn, reason)
        self._log.info("admin: kicked connection {id} ({game} {peer} {name}){why}", id=conn.id, game=conn.game,
                       peer=conn.peer, name=row.name, why=f": {reason}" if reason else "")
        return row

    def _close(self, conn: Any, reason: str) -> None:
        self.kicks += 1
        protocol = conn.protocol
        if hasattr(protocol, "kick"):
            protocol.kick(reason)
        elif conn.wrapper.transport is not None:
            conn.wrapper.transport.loseConnection()

    def ban(self, kind: str, target: str, reason: str) -> defer.Deferred:
        return defer.ensureDeferred(self._ban(kind, target, reason))

    async def _ban(self, kind: str, target: str, reason: str) -> list[str]:
        if self.ban_store is None:
            raise AdminError("bans are kept in the records database, and this daemon has none ([records] database)")
        if kind == "account":
            accounts = getattr(self.everyone, "accounts", None)
            if accounts is None or not await accounts.registered(target):
                raise AdminError(f"no account {target}")
            found = await accounts.get(target) if hasattr(accounts, "get") else None
            target = getattr(found, "name", target)  # as it was registered, not as typed
        try:
            ban = await self.ban_store.add(kind, target, reason)
        except BanError as e:
            raise AdminError(str(e)) from None
        closed = []
        for conn in self.registry:
            identity = getattr(conn.protocol, "identity", None)
            if (kind == "address" and self.registry.bans.address(conn.host) is ban) or (
                kind == "account" and identity is not None and identity.account and identity.name.lower() == ban.target.lower()
            ):
                self._close(conn, f"banned{': ' + reason if reason else ''}")
                closed.append(str(conn.id))
        self._log.info("admin: banned {kind} {target}{why}; closed {n} connections", kind=kind, target=ban.target,
                       why=f" ({reason})" if reason else "", n=len(closed))
        return [f"banned {kind} {ban.target}" + (f" ({reason})" if reason else "")
                + (f"; closed connections {', '.join(closed)}" if closed else "")]

    def unban(self, kind: str, target: str) -> defer.Deferred:
        return defer.ensureDeferred(self._unban(kind, target))

    async def _unban(self, kind: str, target: str) -> list[str]:
        if self.ban_store is None:
            raise AdminError("bans are kept in the records database, and this daemon has none ([records] database)")
        try:
            lifted = await self.ban_store.remove(kind, target)
        except BanError as e:
            raise AdminError(str(e)) from None
        if lifted is None:
            raise AdminError(f"{kind} {target} is not banned")
        self._log.info("admin: lifted the ban of {kind} {target}", kind=kind, target=lifted.target)
        return [f"unbanned {kind} {lifted.target}"]

    def bans(self) -> list[Any]:
        return self.registry.bans.all()

    def broadcast(self, text: str) -> list[str]:
        sent: dict[str, int] = {}
        skipped: dict[str, int] = {}
        for conn in self.registry:
            notice = getattr(conn.protocol, "notice", None)
            if notice is not None and not getattr(conn.protocol, "closing", False) and notice(text):
                sent[conn.game] = sent.get(conn.game, 0) + 1
            else:
                skipped[conn.game] = skipped.get(conn.game, 0) + 1
        self._log.info("admin: broadcast {text!r} to {n} connections", text=text, n=sum(sent.values()))
        line = f"sent to {sum(sent.values())} connections" + "".join(f", {n} {g}" for g, n in sent.items())
        if skipped:
            line += "; skipped " + ", ".join(f"{n} {g}" for g, n in skipped.items()) + " (no message line in their protocol)"
        return [line]

    def drain(self) -> list[str]:
        already = self.drain_.draining
        playing = self.drain_.start()
        return [("already draining" if already else "draining: no new games")
                + f"; {playing} in play; the daemon exits when they have finished"]
