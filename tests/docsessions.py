"""Example sessions in docs/protocols/*.md, parsed so that tests can replay them against the server.

A session is a fenced block marked ``session``; each line is ``X> text`` (client X sends text),
``X< text`` (client X receives exactly this line), ``X: closed`` (the server closed X) or
``X: drops`` (client X's connection goes away).
"""

from __future__ import annotations

import pathlib
import re
from typing import Any, Callable

import attrs

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "protocols"
_BLOCK = re.compile(r"^### (?P<title>.+?)$(?:(?!^### ).)*?^```session\n(?P<body>.*?)^```", re.M | re.S)
_STEP = re.compile(r"(?P<client>[A-Z])(?P<kind>[<>:]) ?(?P<text>.*)\Z")


@attrs.frozen
class Step:
    client: str
    kind: str  # ">" send, "<" expect, ":" event
    text: str


@attrs.frozen
class Session:
    title: str
    steps: tuple[Step, ...]

    @property
    def clients(self) -> list[str]:
        return sorted({s.client for s in self.steps})


def sessions(document: str) -> list[Session]:
    """The example sessions of ``docs/protocols/<document>``, each named by its section title."""
    text = (DOCS / document).read_text()
    found = []
    for m in _BLOCK.finditer(text):
        steps = []
        for line in m["body"].splitlines():
            step = _STEP.match(line)
            if step is None:
                raise ValueError(f"{document}, {m['title']}: cannot read session line {line!r}")
            if step["kind"] == ":" and step["text"] not in ("closed", "drops"):
                raise ValueError(f"{document}, {m['title']}: unknown event {line!r}")
            steps.append(Step(step["client"], step["kind"], step["text"]))
        found.append(Session(m["title"], tuple(steps)))
    if not found:
        raise ValueError(f"{document} has no example session")
    return found


def replay_in_memory(
    session: Session,
    connect: Callable[[str], Any],
    wait: Callable[[], None] | None = None,
    *,
    max_waits: int = 20,
    read: Callable[[str, Any], list] | None = None,
    before_end: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Replay ``session`` against an in-memory service and assert every line, in order.

    ``connect(name)`` opens client ``name`` (just before its first step); a client has ``send(text)``,
    ``read()`` (the lines received since the last read) and ``lost``. While a client waits for a line
    that has not come, ``wait()`` lets time pass, at most ``max_waits`` times; then the line is
    missing. ``read(name, client)``, if given, replaces ``client.read()``. ``before_end()``, if given,
    runs before the check that no client received a line the session does not show. Returns the
    clients by name.
    """
    clients: dict[str, Any] = {}
    pending: dict[str, list] = {}

    def take(name: str) -> None:
        c = clients[name]
        pending[name].extend(read(name, c) if read else c.read())

    for n, step in enumerate(session.steps, 1):
        if step.client not in clients:
            clients[step.client] = connect(step.client)
            pending[step.client] = []
        c = clients[step.client]
        where = f"step {n} ({step.client}{step.kind} {step.text[:60]})"
        if step.kind == ">":
            assert not c.lost, f"{where}: {step.client} is closed"
            c.send(step.text)
        elif step.kind == "<":
            waits = 0
            while True:
                take(step.client)
                if pending[step.client] or waits == max_waits:
                    break
                wait()
                waits += 1
            assert pending[step.client], f"{where}: {step.client} expected {step.text!r}, got nothing"
            got = pending[step.client].pop(0)
            assert got == step.text, where
        elif step.text == "drops":
            take(step.client)
            assert pending[step.client] == [], f"{where}: {step.client} received {pending[step.client]}"
            c.drop()
        else:
            take(step.client)
            assert pending[step.client] == [] and c.lost, f"{where}: {step.client} should be closed"
    if before_end:
        before_end()
    for name in clients:
        take(name)
        assert pending[name] == [], f"{name} received lines the session does not show: {pending[name]}"
    return clients
