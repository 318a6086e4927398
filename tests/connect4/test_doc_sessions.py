"""The example sessions of docs/protocols/connect-four.md, replayed line for line against the server.

In memory (StringTransport, Clock), with the service built as tests/connect4/test_protocol.py
builds it and a seeded random.Random for the engines, so the engine plays the recorded moves.
"""

import random

import pytest
from twisted.internet.task import Clock

from gamed.config import Limits
from gamed.connect4.service import Connect4Service, Connect4Settings
from tests.docsessions import sessions
from tests.memclient import Client

SESSIONS = sessions("connect-four.md")


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two people",
        "Against the threat-aware engine",
        "An engine match, then an opening",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    clock = Clock()
    service = Connect4Service(Connect4Settings(), Limits(), clock, rng=random.Random(1))
    clients: dict[str, Client] = {}
    pending: dict[str, list[str]] = {}

    def client(name):
        if name not in clients:
            clients[name] = Client(service)
            pending[name] = []
        return clients[name]

    for n, step in enumerate(session.steps, 1):
        c = client(step.client)
        if step.kind == ">":
            c.send(step.text)
        elif step.kind == "<":
            waited = 0
            while not pending[step.client] and waited < 20:
                pending[step.client].extend(c.read())
                if not pending[step.client]:
                    clock.advance(0)  # the engine's move is played from the clock
                    waited += 1
            assert pending[step.client], f"step {n}: {step.client} expected {step.text!r}, got nothing"
            got = pending[step.client].pop(0)
            assert got == step.text, f"step {n}"
        else:
            pending[step.client].extend(c.read())
            assert pending[step.client] == [] and c.lost, f"step {n}: {step.client} should be closed"
    clock.advance(0)
    for name, c in clients.items():
        pending[name].extend(c.read())
        assert pending[name] == [], f"{name} received lines the session does not show"
