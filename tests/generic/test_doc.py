"""docs/protocols/generic.md tells the truth: its schema is the server's, and its example sessions
replay line for line against the generic port (clients A and C) and the Kalaha port (client B)."""

from __future__ import annotations

import itertools
import json
import pathlib
import re

import pytest
from twisted.internet.task import Clock

from gamed import seats
from gamed.generic import wire
from gamed.kalaha.generic import KalahaHost
from tests.docsessions import replay_in_memory, sessions
from tests.generic.harness import JsonClient, check_server_message, client_message_valid, generic_service
from tests.kalaha.harness import Client, make_service
from tests.memclient import next_turns

DOC = pathlib.Path(__file__).resolve().parent.parent.parent / "docs" / "protocols" / "generic.md"
SESSIONS = sessions("generic.md")
RESUME_TOKENS = ("Wq3pZ0sV9kdmR6uX2bYhT4nC", "Jm8cQ1rT5vXz0pLk3wNf7bHd")
TEXT_CLIENTS = {"B"}  # people on the Kalaha port; the other letters are generic clients


def test_the_schema_in_the_document_is_the_server_s():
    block = re.search(r"^```json\n(.*?)^```", DOC.read_text(), re.M | re.S)
    assert block is not None, "the document shows the schema"
    assert json.loads(block[1]) == wire.SCHEMA
    assert block[1] == json.dumps(wire.SCHEMA, indent=2) + "\n"


def test_the_document_names_every_error_code_and_message_type():
    text = DOC.read_text()
    for code in wire.CODES:
        assert f"| `{code}` |" in text, code
    for kind in wire.CLIENT:
        assert f"| `{kind}` |" in text, kind
    for kind in wire.SERVER:
        assert f"`{kind}`" in text, kind


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "A bot looks around and leaves",
        "A generic bot meets a person on the Kalaha port",
        "Refused answers and the retry budget",
        "A dropped bot takes its seat back",
        "Lines the server refuses",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_the_session_s_lines_are_valid_messages(session):
    for step in session.steps:
        if step.client in TEXT_CLIENTS or step.kind == ":":
            continue
        if step.kind == "<":
            check_server_message(json.loads(step.text))
        elif session.title != "Lines the server refuses" and step.text.startswith('{"'):
            assert client_message_valid(json.loads(step.text)), step.text


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session, monkeypatch):
    tokens = itertools.cycle(RESUME_TOKENS)
    monkeypatch.setattr(seats.secrets, "token_urlsafe", lambda n: next(tokens))
    clock = Clock()
    kalaha = make_service(clock, strikes=3)
    generic = generic_service({"kalaha": KalahaHost(kalaha)}, kalaha.players, clock)

    def connect(name: str):
        return Client(kalaha) if name in TEXT_CLIENTS else JsonClient(generic)

    replay_in_memory(session, connect, lambda: next_turns(clock), read=lambda name, c: Client.read(c))
