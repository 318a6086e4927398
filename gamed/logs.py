"""Log observers for the daemon: JSON lines, one event per line, for log shippers.

Use with ``twistd --logger=gamed.logs.json_observer`` (``twist`` has ``--log-format=json``).
"""

from __future__ import annotations

import sys

from twisted.logger import ILogObserver, jsonFileLogObserver


def json_observer() -> ILogObserver:
    """An observer writing every event as one JSON object per line to standard output."""
    return jsonFileLogObserver(sys.stdout, recordSeparator="")
