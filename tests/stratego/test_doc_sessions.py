"""The example sessions of docs/protocols/ucc-stratego.md, replayed against the referee: each AI's
written lines (``R>``/``B>``) are its replies, and every line it reads must be exactly the
document's ``R<``/``B<`` lines, in order."""

from __future__ import annotations

import pytest

from tests.docsessions import sessions
from tests.stratego.scripted import ScriptedSeat, play

SESSIONS = sessions("ucc-stratego.md")


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "The manual's example game",
        "An illegal first move",
        "A setup with a missing piece",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    written = {"R": [], "B": []}
    expected = {"R": [], "B": []}
    for step in session.steps:
        (written if step.kind == ">" else expected)[step.client].append(step.text)
    seats = {}
    for client, argument in (("R", "./red.py"), ("B", "./blue.py")):
        lines = written[client]
        seats[client] = ScriptedSeat(argument, lines[:4], lines[4:])
    play(seats["R"], seats["B"])
    for client in "RB":
        assert seats[client].read == expected[client], f"what {client} reads"
