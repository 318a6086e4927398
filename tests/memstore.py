"""An in-memory stand-in for ``gamed.records.RecordStore`` in unit tests of the live hub's feeders:
it keeps every record the hub stores (the real store is tested against SQLite in
tests/test_records.py and through the daemon)."""

from __future__ import annotations

from twisted.internet import defer


class MemoryStore:
    """Keeps what the hub stores (``store()`` of the RecordStore API), numbering matches from 1."""

    def __init__(self):
        self.records = []

    def store(self, record):
        self.records.append(record)
        return defer.succeed(len(self.records))
