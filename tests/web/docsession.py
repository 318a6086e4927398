"""The example session of docs/web-api.md, parsed so that a test can replay it against the daemon.

A session is a fenced block marked ``web-session``. Its lines are ``A> text`` (Kalaha client A sends
text; a client connects at its first line), ``A< text`` (A receives this line, after skipping
others), ``$ curl -s URL`` followed by one JSON line (the answer), ``$ curl -sN URL &`` (an event
stream opened in the background) and ``event: NAME`` + ``data: JSON`` (the next event that stream
prints). JSON is compared by shape and value, except the times (``started``, ``ended``, ``t``,
and a move clock's ``used``, ``left``, ``credit``), which only have to be numbers (or ``null``
where the document has ``null``).
"""

from __future__ import annotations

import json
import pathlib
import re

import attrs

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "web-api.md"
_BLOCK = re.compile(r"^```web-session\n(?P<body>.*?)^```", re.M | re.S)
TIMES = frozenset({"started", "ended", "t", "used", "left", "credit"})


@attrs.frozen
class Step:
    kind: str  # "send", "expect", "get", "stream", "event"
    who: str = ""
    text: str = ""
    data: object = None


def session(path: pathlib.Path = DOC) -> list[Step]:
    """The steps of the one ``web-session`` block of ``path``."""
    m = _BLOCK.search(path.read_text())
    if m is None:
        raise ValueError(f"{path} has no web-session block")
    lines = [line for line in m["body"].splitlines() if line.strip()]
    steps: list[Step] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if re.match(r"[A-Z][<>] ", line):
            steps.append(Step("send" if line[1] == ">" else "expect", line[0], line[3:]))
        elif line.startswith("$ curl -sN ") and line.endswith(" &"):
            steps.append(Step("stream", text=line[len("$ curl -sN "):-2]))
        elif line.startswith("$ curl -s "):
            steps.append(Step("get", text=line[len("$ curl -s "):], data=json.loads(lines[i])))
            i += 1
        elif line.startswith("event: "):
            if not lines[i].startswith("data: "):
                raise ValueError(f"web-api.md: no data line after {line!r}")
            steps.append(Step("event", text=line[len("event: "):], data=json.loads(lines[i][len("data: "):])))
            i += 1
        else:
            raise ValueError(f"web-api.md: cannot read session line {line!r}")
    return steps


def alike(actual: object, documented: object, key: str = "") -> bool:
    """True when ``actual`` matches the documented value (times only need to be numbers)."""
    if key in TIMES:
        if documented is None:
            return actual is None
        return isinstance(actual, (int, float)) and isinstance(documented, (int, float))
    if isinstance(documented, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == documented.keys()
            and all(alike(actual[k], documented[k], k) for k in documented)
        )
    if isinstance(documented, list):
        return isinstance(actual, list) and len(actual) == len(documented) and all(
            alike(a, d, key) for a, d in zip(actual, documented)
        )
    return actual == documented and type(actual) is type(documented) or (
        isinstance(actual, (int, float)) and isinstance(documented, (int, float)) and actual == documented
    )
