"""Records: bytes per move before and after the replayers (gamed.replay), for every game.

Real matches of each game (tests/records_corpus.py: each game's service driven in memory by
random legal players, the Stratego referee replaying the UCC 2012 logs) are stored by the real
RecordStore into SQLite files, one per game and way: "before" keeps every move's state whole
(``RecordStore(compact=False)``, what gamed did until now), "after" keeps only what the rules
cannot rebuild. Each file is checkpointed and vacuumed; bytes per move = (file size - the size of
a file with the schema alone) / moves (the matches' and seats' rows included), and
the moves' JSON text (state + patch columns) per move. Every match is read back from the "after"
file and its states compared with the live game's (identical JSON); the time a match's store
takes (the compaction included, in the records' thread) and its read (the replay included; the
best of three reads of every match) are shown.

    .venv/bin/python bench/records_size.py [--scale N] [--json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sqlite3
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twisted.internet import defer, task  # noqa: E402

from gamed import replay  # noqa: E402
from gamed.records import RecordStore  # noqa: E402
from tests import records_corpus  # noqa: E402


async def _store(reactor, path: pathlib.Path, records: list, compact: bool, took: list | None = None) -> list[int]:
    store = RecordStore(f"sqlite:{path}", reactor, compact=compact)
    await store.start()
    began = time.perf_counter()
    ids = [await store.store(record) for record in records]
    if took is not None:
        took.append(time.perf_counter() - began)
    await store.close()
    return ids


async def _read(reactor, path: pathlib.Path, ids: list[int]) -> tuple[list[dict], float]:
    store = RecordStore(f"sqlite:{path}", reactor, create=False)
    await store.start()
    took = float("inf")
    for _ in range(3):  # the best of three: the machine is shared
        began = time.perf_counter()
        matches = [await store.match(i) for i in ids]
        took = min(took, time.perf_counter() - began)
    await store.close()
    return matches, took


def _measure(path: pathlib.Path) -> tuple[int, int]:
    """(file bytes after checkpoint and VACUUM, JSON bytes of the moves' state and patch columns)."""
    db = sqlite3.connect(path, isolation_level=None)
    (text,) = db.execute("SELECT COALESCE(SUM(LENGTH(state)), 0) + COALESCE(SUM(LENGTH(patch)), 0) FROM moves").fetchone()
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("VACUUM")
    db.close()
    return path.stat().st_size, int(text)


async def main(reactor, args) -> None:
    folder = pathlib.Path(tempfile.mkdtemp(prefix="records-size-"))
    began = time.perf_counter()
    corpus = records_corpus.every_game(folder / "stratego", args.scale)
    await _store(reactor, folder / "empty.sqlite", [], compact=True)
    empty, _ = _measure(folder / "empty.sqlite")  # the schema alone, taken off every file's size
    rows = []
    for game, records in corpus.items():
        moves = sum(len(r.moves) for r in records)
        before, after = folder / f"{game}-before.sqlite", folder / f"{game}-after.sqlite"
        writes: list[float] = []
        old_ids = await _store(reactor, before, records, compact=False, took=writes)
        ids = await _store(reactor, after, records, compact=True, took=writes)
        _, took_before = await _read(reactor, before, old_ids)
        matches, took = await _read(reactor, after, ids)
        for record, match in zip(records, matches):
            got = [m["state"] for m in match["moves"]]
            want = [m.state for m in record.moves]
            assert [replay.dumps(s) for s in got] == [replay.dumps(s) for s in want], f"{game}: replay differs"
        db = sqlite3.connect(after)
        exact, patched, whole = db.execute(
            "SELECT SUM(patch = '[]'), SUM(patch IS NOT NULL AND patch != '[]'), SUM(state IS NOT NULL) FROM moves"
        ).fetchone()
        db.close()
        (fb, tb), (fa, ta) = _measure(before), _measure(after)
        rows.append({
            "game": game, "matches": len(records), "moves": moves,
            "file_before": (fb - empty) / moves, "file_after": (fa - empty) / moves, "json_before": tb / moves, "json_after": ta / moves,
            "rebuilt": exact or 0, "patched": patched or 0, "whole": whole or 0,
            "read_ms_before": 1000 * took_before / len(records), "read_ms_per_match": 1000 * took / len(records),
            "store_ms_before": 1000 * writes[0] / len(records), "store_ms_after": 1000 * writes[1] / len(records),
        })
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{len(rows)} games, {sum(r['matches'] for r in rows)} matches, {time.perf_counter() - began:.1f} s; files in {folder}")
    print("| game | matches | moves | file bytes/move before | after | ratio | state JSON bytes/move before | after |"
          " moves rebuilt exactly / patched / kept whole | store ms/match before | after | read ms/match before | after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['game']} | {r['matches']} | {r['moves']} | {r['file_before']:.0f} | {r['file_after']:.0f} |"
            f" {r['file_before'] / r['file_after']:.1f}x | {r['json_before']:.0f} | {r['json_after']:.1f} |"
            f" {r['rebuilt']} / {r['patched']} / {r['whole']} | {r['store_ms_before']:.1f} | {r['store_ms_after']:.1f} |"
            f" {r['read_ms_before']:.1f} | {r['read_ms_per_match']:.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="how many times the small set of matches per game [1]")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args()
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, options)))
