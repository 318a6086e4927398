"""The example sessions of docs/protocols/kalaha.md, replayed line for line against the server.

In memory here (StringTransport, Clock); the same sessions run against the real daemon in
tests/integration/test_kalaha_daemon.py.
"""

import pytest
from twisted.internet.task import Clock

from tests.docsessions import replay_in_memory, sessions
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
    # Only the pair delay passes in the examples.
    replay_in_memory(session, lambda name: Client(service), lambda: clock.advance(0.5))
