"""The example sessions of docs/protocols/kalaha.md, replayed line for line against the server.

In memory here (StringTransport, Clock); the same sessions run against the real daemon in
tests/integration/test_kalaha_daemon.py.
"""

import pytest
from twisted.internet.task import Clock

from tests.docsessions import sessions
from tests.kalaha.harness import Client, make_service

SESSIONS = sessions("kalaha.md")


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two people with telnet",
        "Two programs, a complete game",
        "Playing the computer",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    clock = Clock()
    service = make_service(clock, pair_delay=0.5, board=True)
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
                    clock.advance(0.5)  # only the pair delay passes in the examples
                    waited += 1
            assert pending[step.client], f"step {n}: {step.client} expected {step.text!r}, got nothing"
            got = pending[step.client].pop(0)
            assert got == step.text, f"step {n}"
        else:
            pending[step.client].extend(c.read())
            assert pending[step.client] == [] and c.lost, f"step {n}: {step.client} should be closed"
    for name, c in clients.items():
        pending[name].extend(c.read())
        assert pending[name] == [], f"{name} received lines the session does not show"
