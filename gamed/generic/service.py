"""The generic port's service: the games' hosts, the connections, the shutdown."""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

from twisted.internet.interfaces import IReactorTime

from gamed.config import Limits
from gamed.gameservice import GameService
from gamed.generic import wire
from gamed.generic.protocol import GenericFactory
from gamed.generic.seat import IGenericHost
from gamed.textline import ConnectionLimits, WriteBatch


def refusal(why: str) -> bytes:
    """The line a refused connection gets."""
    return (wire.encode(wire.bye(f"connection refused: {why}")) + "\r\n").encode("ascii")


class GenericService(GameService):
    """Serves the generic protocol for the games in ``hosts`` (name -> IGenericHost, in the
    registry's order). Its games are the games' own, so it aborts none itself."""

    name = "generic"

    def __init__(self, hosts: Mapping[str, IGenericHost], players: Any, limits: Limits, clock: IReactorTime,
                 selftest: Any = None):
        super().__init__(limits, clock)
        self.hosts = dict(hosts)
        self.players = players
        self.selftest = selftest
        self.batch = WriteBatch()
        self.errors: collections.Counter[str] = collections.Counter()  # error messages sent, by code
        self.factory = GenericFactory(self)

    def port_factory(self) -> ConnectionLimits:
        return ConnectionLimits(self.factory, self.limits.max_connections, self.limits.max_per_peer, refusal)
