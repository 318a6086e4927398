"""/proc helpers for the tests that check no process outlives its game or its daemon."""

from __future__ import annotations

import os
import time


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie or no process at all counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :][:1] not in (b"Z", b"X")


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """Poll /proc until none of ``pids`` runs, at most ``seconds``; those still running."""
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def read_pid(path, seconds: float = 10.0) -> int:
    """The pid a test program wrote to ``path`` (waiting for the file, at most ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        if text.endswith("\n"):
            return int(text.split()[0])
        if time.monotonic() >= deadline:
            raise AssertionError(f"{path} was never written")
        time.sleep(0.01)
