"""An in-memory stand-in for ``gamed.records.RecordStore`` in unit tests of the live hub's feeders:
it keeps every record the hub stores (the real store is tested against SQLite in
tests/test_records.py and through the daemon).

Every record it is given is also kept as the real store keeps it (gamed.replay: the states the
rules rebuild dropped) and rebuilt again, and must come back with the same JSON states, so each
game played in the unit tests checks its game's replayer on the states its live game produced."""

from __future__ import annotations

import collections

from twisted.internet import defer

from gamed import records, registry, replay

# Per game: [moves, moves whose state the rules rebuilt exactly, moves kept as a patch] over the
# records every MemoryStore was given (tests/test_replay.py reports them).
SEEN: collections.defaultdict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])


def check_replay(record) -> None:
    """Raise AssertionError unless ``record``'s states come back from what the store keeps."""
    version, kept = records._kept_states(record)
    counts = SEEN[record.game]
    counts[0] += len(record.moves)
    if version is None:
        return
    game = registry.by_name()[record.game]
    rows = [(m.seat, m.move, state, patch) for m, (state, patch) in zip(record.moves, kept)]
    rebuilt = replay.rebuild(game.next_state, record.initial_state, rows)
    for m, state in zip(record.moves, rebuilt):
        assert replay.dumps(state) == replay.dumps(m.state), f"{record.game} move {m.n} {m.move!r}: replay differs"
    counts[1] += sum(patch == replay.EMPTY for _, patch in kept)
    counts[2] += sum(patch not in (None, replay.EMPTY) for _, patch in kept)


class MemoryStore:
    """Keeps what the hub stores (``store()`` of the RecordStore API), numbering matches from 1."""

    def __init__(self):
        self.records = []

    def store(self, record):
        check_replay(record)
        self.records.append(record)
        return defer.succeed(len(self.records))
