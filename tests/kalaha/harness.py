"""In-memory Kalaha clients for unit tests: StringTransport connections to a KalahaService on a Clock."""

from __future__ import annotations

import random

import attrs

from twisted.internet.task import Clock

from gamed.config import KalahaConfig, Limits, PlayersConfig
from gamed.kalaha.service import KalahaService
from gamed.players import Players
from tests.memclient import Client

__all__ = ["Client", "finish_all", "greeted", "logged_in", "make_service", "pair"]


def make_service(
    clock: Clock | None = None, seed: int = 7, accounts=None, hub=None, guests: bool = True, time_control=None,
    ladder=None, **settings
) -> KalahaService:
    """A KalahaService on a Clock; keyword arguments set KalahaConfig or Limits fields (``grace``
    is the game's own grace; ``time_control`` its ``clock`` setting). ``accounts`` (a MemoryAccounts) are the daemon's accounts;
    ``guests`` its ``[players] guests``; ``ladder`` its ``[ladder]`` (a LadderConfig; None: no ladder)."""
    clock = clock or Clock()
    limit_names = {a.name for a in attrs.fields(Limits)}
    kalaha = {k: v for k, v in settings.items() if k not in limit_names}
    limits = {k: v for k, v in settings.items() if k in limit_names}
    if time_control is not None:  # [kalaha] clock (``clock`` is the reactor clock here)
        kalaha["clock"] = time_control
    kalaha.setdefault("pair_delay", 0)
    kalaha.setdefault("board", False)
    players = Players(PlayersConfig(guests=guests), accounts, clock)
    return KalahaService(
        KalahaConfig(**kalaha), Limits(**limits), clock, rng=random.Random(seed), hub=hub, players=players, ladder=ladder
    )


def logged_in(service: KalahaService, name: str, token: str, *lines: str, **kwargs) -> Client:
    """A client that has logged in as ``name`` (and sent ``lines``), its reads emptied."""
    client = Client(service, **kwargs)
    client.send(f"LOGIN {name} {token}", *lines)
    client.read()
    return client


def greeted(service: KalahaService, **kwargs) -> Client:
    """A new client whose greeting has been read."""
    client = Client(service, **kwargs)
    client.read()
    return client


def pair(service: KalahaService, names=("alice", "bob")) -> tuple[Client, Client]:
    """Two named clients seated at a game (A, B) through a named table, their reads emptied."""
    clients = []
    for name in names:
        client = Client(service)
        client.send(f"NAME {name}", f"TABLE t-{names[0]}")
        clients.append(client)
    for client in clients:
        client.read()
    return clients[0], clients[1]


def finish_all(*clients: Client) -> None:
    for c in clients:
        c.finish()
