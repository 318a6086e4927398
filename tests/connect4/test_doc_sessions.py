"""The example sessions of docs/protocols/connect-four.md, replayed line for line against the server.

In memory (StringTransport, Clock), with the service built as tests/connect4/test_protocol.py
builds it and a seeded random.Random for the engines, so the engine plays the recorded moves. The
sessions of the original protocol run on a server without accounts; those about logging in and
coming back get the accounts, the grace and the guest setting their text names, the tokens the
document shows, and a clock that moves on by ``tick`` seconds whenever a client waits.
"""

import itertools
import random
import types

import pytest
from twisted.internet.task import Clock

from gamed import seats
from gamed.config import Limits, PlayersConfig
from gamed.connect4.service import Connect4Service, Connect4Settings
from gamed.players import Players
from tests.docsessions import replay_in_memory, sessions
from tests.memaccounts import MemoryAccounts
from tests.memclient import Client

SESSIONS = sessions("connect-four.md")

# The resume tokens the sessions show, handed out in seating order (player 0's first).
RESUME_TOKENS = ("q2V9xL7mKp4TzR8wNc3hYb6J", "fH5sD1aG9kW3eQ7uZx2pM8vC")
SETUPS = {
    "Logging in, dropping and coming back": {"accounts": {"alice": "7rTq2xKbW9mZ4pLc8vNs3dYe"}},
    "A seat not taken back in time": {"grace": 10.0, "tick": 1.0},
    "A server for registered players only": {"accounts": {"frank": "Xk3vQ9pLm2Rz7TbW4yNc8dHe"}, "guests": False},
    "Two programs on a clock": {"tick": 0.5},  # bob's bank runs out while he waits
    "A program checks itself": {"tick": 0.5},  # the self-test ends after a quiet second
}


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two people",
        "Against the threat-aware engine",
        "An engine match, then an opening",
        "A person practises an ending",
        "Logging in, dropping and coming back",
        "A guest takes its seat back with its resume token",
        "A seat not taken back in time",
        "A server for registered players only",
        "Two programs on a clock",
        "A program checks itself",
    ]


def _accounts(tokens: dict[str, str]) -> MemoryAccounts | None:
    if not tokens:
        return None
    accounts = MemoryAccounts()
    for name, token in tokens.items():
        accounts.add(name, token=token)  # the token the document shows
    return accounts


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session, monkeypatch):
    setup = SETUPS.get(session.title, {})
    tokens = itertools.cycle(RESUME_TOKENS)
    monkeypatch.setattr(seats, "secrets", types.SimpleNamespace(token_urlsafe=lambda n: next(tokens)))
    clock = Clock()
    players = Players(PlayersConfig(guests=setup.get("guests", True)), _accounts(setup.get("accounts", {})), clock)
    service = Connect4Service(Connect4Settings(), Limits(), clock, rng=random.Random(1), players=players,
                              grace=setup.get("grace"))
    tick = setup.get("tick", 0.0)
    # The engine's move is played from the clock, so the clock moves on (by no time) while a client
    # waits, and once more before the end so that nothing the engine still had to say goes unseen.
    replay_in_memory(
        session, lambda name: Client(service), lambda: clock.advance(tick), before_end=lambda: clock.advance(0)
    )
