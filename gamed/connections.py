"""Every game connection of the daemon in one registry, the bans, and the drain's refusal.

``gamed.tap`` gives every game port's ``ConnectionLimits`` the daemon's one ``ConnectionRegistry``:
each accepted connection gets a stable number (``Connection.id``, counted from 1 for the life of
the process) that the admin console (gamed.admin) lists, shows and kicks by. Before a connection
is accepted the registry says whether it must be refused: its address is banned (``Bans``), or the
daemon is draining (no new games: docs/admin.md). The port answers a refusal with its own refusal
line (the text games' ``ERROR 503 <why>``) and logs it.

This module is shared-layer code: no reactor, no files, no database (gamed.bans keeps the bans
in the records database and fills ``Bans``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import attrs

# What a refused connection is told (after the port's own refusal code, ``ERROR 503`` in the text
# games), documented in docs/admin.md.
DRAINING = "the server is draining: no new games are started; try again later"
BANNED = "your address is banned from this server"


@attrs.frozen
class Ban:
    """One ban: ``kind`` "address" (``target`` an address or a network in CIDR notation, in its
    canonical form) or "account" (``target`` the account's name); why and when (unix time)."""

    kind: str
    target: str
    reason: str = ""
    created: float = 0.0


class BanError(ValueError):
    """A ban that cannot be made: the message says why, in one line."""


def network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """An address (``127.0.0.2``, ``::1``) or a network (``10.0.0.0/8``) as a network; BanError
    for anything else."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise BanError(f"not an address or a network (CIDR such as 10.0.0.0/8): {text!r}") from None


class Bans:
    """The bans in force: addresses and networks, and account names (any case)."""

    def __init__(self, bans: tuple[Ban, ...] | list[Ban] = ()):
        self._addresses: dict[str, tuple[Any, Ban]] = {}
        self._accounts: dict[str, Ban] = {}
        for ban in bans:
            self.add(ban)

    def add(self, ban: Ban) -> Ban:
        """Put ``ban`` in force (its target made canonical); returns it."""
        if ban.kind == "address":
            net = network(ban.target)
            ban = attrs.evolve(ban, target=str(net) if net.num_addresses > 1 else str(net.network_address))
            self._addresses[ban.target] = (net, ban)
        elif ban.kind == "account":
            self._accounts[ban.target.lower()] = ban
        else:
            raise BanError(f"a ban is of an address or an account, not {ban.kind!r}")
        return ban

    def remove(self, kind: str, target: str) -> Ban | None:
        """Lift the ban of ``target``; the ban that was lifted, or None when there was none."""
        if kind == "address":
            net = network(target)
            key = str(net) if net.num_addresses > 1 else str(net.network_address)
            found = self._addresses.pop(key, None)
            return found[1] if found else None
        return self._accounts.pop(target.lower(), None)

    def address(self, host: str) -> Ban | None:
        """The ban that covers the address ``host``, or None."""
        if not self._addresses:
            return None
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return None  # a UNIX socket's peer: no address to ban
        for net, ban in self._addresses.values():
            if ip.version == net.version and ip in net:
                return ban
        mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:10.0.0.1 is 10.0.0.1
        return self.address(str(mapped)) if mapped is not None else None

    def account(self, name: str) -> Ban | None:
        """The ban of the account ``name`` (any case), or None."""
        return self._accounts.get(name.lower())

    def all(self) -> list[Ban]:
        """Every ban, addresses first, each kind in the order they were made."""
        return [ban for _, ban in self._addresses.values()] + list(self._accounts.values())


@attrs.define(eq=False)
class Connection:
    """One accepted game connection: its number, the port it came in on, its peer address, and
    the game protocol serving it (``protocol``: the object the port's factory built)."""

    id: int
    game: str  # the game's config section: "kalaha", "fight", "combat", "connect4"
    port: str  # the port's option: "kalaha", "fight-gui", "combat-text" ...
    host: str
    peer_port: int | None
    protocol: Any  # the game's protocol (inside the limits' wrapper)
    wrapper: Any  # what the transport delivers to (the ConnectionLimits' ProtocolWrapper)
    since: float = 0.0

    @property
    def local_port(self) -> int | None:
        """The daemon's port number it came in on (None for a UNIX socket, or once closed)."""
        transport = getattr(self.wrapper, "transport", None)
        host = transport.getHost() if transport is not None else None
        return getattr(host, "port", None)

    @property
    def peer(self) -> str:
        return self.host if self.peer_port is None else f"{self.host}:{self.peer_port}"


class ConnectionRegistry:
    """The daemon's game connections by number, the bans that refuse some, and the drain."""

    def __init__(self, bans: Bans | None = None, clock: Any = None):
        self.bans = bans if bans is not None else Bans()
        self.clock = clock
        self.draining = False
        self.connections: dict[int, Connection] = {}
        self._next = 1

    def refusal(self, host: str) -> str | None:
        """Why a new connection from ``host`` must be refused, or None."""
        if self.draining:
            return DRAINING
        ban = self.bans.address(host)
        if ban is not None:
            return BANNED + (f": {ban.reason}" if ban.reason else "")
        return None

    def added(self, game: str, port: str, addr: Any, protocol: Any, wrapper: Any) -> Connection:
        """A connection was accepted; returns its entry (``id`` is its number)."""
        number, self._next = self._next, self._next + 1
        conn = Connection(
            number, game, port, str(getattr(addr, "host", addr)), getattr(addr, "port", None), protocol, wrapper,
            self.clock.seconds() if self.clock is not None else 0.0,
        )
        self.connections[number] = conn
        return conn

    def removed(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self.connections.values()))

    def get(self, number: int) -> Connection | None:
        return self.connections.get(number)
