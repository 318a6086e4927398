"""The daemon's log observers (gamed.logs): flat JSON lines with the event's own fields, and a
text log without debug events or HTTP access lines."""

from __future__ import annotations

import io
import json
import time

from twisted.logger import LogLevel, Logger, LogPublisher
from twisted.python.failure import Failure

from gamed import logs


def observe(make, stream):
    """Events logged through a publisher to the observer ``make`` builds on ``stream``."""
    publisher = LogPublisher()
    real = logs.sys.stdout
    logs.sys.stdout = stream
    try:
        publisher.addObserver(make())
    finally:
        logs.sys.stdout = real
    return Logger(namespace="gamed.kalaha.game.KalahaGame", observer=publisher)


def test_a_json_line_is_one_flat_object_with_the_events_own_fields():
    out = io.StringIO()
    log = observe(logs.json_observer, out)
    before = time.time()
    log.info("kalaha game {game} started at {table}", game=7, table="t1", peer="127.0.0.1:4000", account=None,
             board={"pits": [1, 2]})
    log.debug("a debug event is left out")
    try:
        1 / 0
    except ZeroDivisionError:
        log.failure("game {game} broke", Failure(), game=8)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "info" and first["system"] == "gamed.kalaha.game.KalahaGame"
    assert first["message"] == "kalaha game 7 started at t1"
    assert (first["game"], first["table"], first["peer"], first["account"]) == (7, "t1", "127.0.0.1:4000", None)
    assert "board" not in first, "only plain values become fields"
    assert not any(key.startswith("log_") for key in first)
    assert first["time"].endswith("+00:00") and abs(
        __import__("datetime").datetime.fromisoformat(first["time"]).timestamp() - before) < 60
    assert second["level"] == "critical" and second["error"] == "division by zero"
    assert "ZeroDivisionError" in second["traceback"] and second["game"] == 8


def test_the_text_log_leaves_out_debug_events_and_access_lines():
    out = io.StringIO()
    log = observe(logs.text_observer, out)
    log.debug("{peer} closed: game over", peer="x")
    log.info("kalaha game {game} ended", game=1)
    access = Logger(namespace="twisted.python.log", observer=log.observer)
    access.emit(LogLevel.info, message=('"127.0.0.1" - - [03/Dec/2026:13:54:02 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"',),
                log_system="-", format="%(message)s")
    text = out.getvalue()
    assert "kalaha game 1 ended" in text
    assert "closed: game over" not in text and "GET / HTTP/1.1" not in text
