"""Example sessions in docs/protocols/*.md, parsed so that tests can replay them against the server.

A session is a fenced block marked ``session``; each line is ``X> text`` (client X sends text),
``X< text`` (client X receives exactly this line) or ``X: closed`` (the server closed X).
"""

from __future__ import annotations

import pathlib
import re

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
            if step["kind"] == ":" and step["text"] != "closed":
                raise ValueError(f"{document}, {m['title']}: unknown event {line!r}")
            steps.append(Step(step["client"], step["kind"], step["text"]))
        found.append(Session(m["title"], tuple(steps)))
    if not found:
        raise ValueError(f"{document} has no example session")
    return found
