"""Log observers for the daemon (docs/deployment.md, "Logs").

- ``text_observer``: the text log, without debug noise: events below ``info`` and the legacy
  HTTP access lines (they go to the web site's own access log, ``[web] access_log``) are left out.
- ``json_observer``: one flat JSON object per line, ready for journald or a log shipper:
  ``time`` (ISO 8601, UTC), ``level``, ``system`` (the logger's namespace), ``message`` (the
  event formatted) and the event's own fields (``game``, ``table``, ``peer``, ``account`` ...:
  strings, numbers, booleans), and ``error`` with ``traceback`` for a failure. Debug events are
  left out as in the text log.

Use with ``twistd --logger=gamed.logs.text_observer`` (what ``make run`` and the systemd unit do)
or ``--logger=gamed.logs.json_observer``.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LogLevel,
    LogLevelFilterPredicate,
    PredicateResult,
    formatEvent,
    textFileLogObserver,
)
from zope.interface import implementer

_SCALARS = (str, int, float, bool, type(None))
# Keys of an event that are the logging system's, not the event's own fields.
_OWN_KEYS = {"message", "format", "isError", "system", "time", "why", "failure", "printed", "log_trace"}


def _drop_access_lines(event: dict) -> PredicateResult:
    """The legacy access lines of twisted.web (``"127.0.0.1" - - [...] "GET / HTTP/1.1" 200``)
    have an access log of their own."""
    if event.get("log_namespace") == "twisted.python.log" and event.get("log_system") in ("-", None):
        message = event.get("message")
        if isinstance(message, tuple) and len(message) == 1 and isinstance(message[0], str) and '" - - [' in message[0]:
            return PredicateResult.no
    return PredicateResult.maybe


def _predicates() -> list:
    return [LogLevelFilterPredicate(defaultLogLevel=LogLevel.info), _drop_access_lines]


def flat(event: dict) -> dict[str, Any]:
    """The event as one flat JSON-able object (see the module docstring)."""
    when = event.get("log_time")
    level = event.get("log_level")
    out: dict[str, Any] = {
        "time": datetime.datetime.fromtimestamp(when, datetime.timezone.utc).isoformat(timespec="milliseconds")
        if isinstance(when, (int, float)) else None,
        "level": getattr(level, "name", "info"),  # (a LogLevel constant; legacy events have none)
        "system": event.get("log_namespace") or event.get("log_system") or "-",
        "message": formatEvent(event),
    }
    failure = event.get("log_failure")
    if failure is not None:
        out["error"] = failure.getErrorMessage()
        out["traceback"] = failure.getTraceback()
    for key, value in event.items():
        if key.startswith("log_") or key in _OWN_KEYS or key in out:
            continue
        if isinstance(value, _SCALARS):
            out[key] = value
    return out


@implementer(ILogObserver)
class _JsonLines:
    def __init__(self, stream):
        self.stream = stream

    def __call__(self, event: dict) -> None:
        try:
            line = json.dumps(flat(event), separators=(",", ":"), default=str)
        except (TypeError, ValueError):  # a field that JSON cannot carry: its message alone
            line = json.dumps({"level": "error", "system": "gamed.logs", "message": "an event could not be written as JSON"})
        self.stream.write(line + "\n")
        self.stream.flush()


def json_observer() -> ILogObserver:
    """One flat JSON object per line on standard output, without debug events."""
    return FilteringLogObserver(_JsonLines(sys.stdout), _predicates())


def text_observer() -> ILogObserver:
    """The text log on standard output, without debug events and HTTP access lines."""
    return FilteringLogObserver(textFileLogObserver(sys.stdout), _predicates())
