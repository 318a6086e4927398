"""The example sessions of docs/protocols/connect-four.md, replayed line for line against the server.

In memory (StringTransport, Clock), with the service built as tests/connect4/test_protocol.py
builds it and a seeded random.Random for the engines, so the engine plays the recorded moves.
"""

import random

import pytest
from twisted.internet.task import Clock

from gamed.config import Limits
from gamed.connect4.service import Connect4Service, Connect4Settings
from tests.docsessions import replay_in_memory, sessions
from tests.memclient import Client

SESSIONS = sessions("connect-four.md")


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two people",
        "Against the threat-aware engine",
        "An engine match, then an opening",
        "A person practises an ending",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    clock = Clock()
    service = Connect4Service(Connect4Settings(), Limits(), clock, rng=random.Random(1))
    # The engine's move is played from the clock, so the clock moves on (by no time) while a client
    # waits, and once more before the end so that nothing the engine still had to say goes unseen.
    replay_in_memory(
        session, lambda name: Client(service), lambda: clock.advance(0), before_end=lambda: clock.advance(0)
    )
