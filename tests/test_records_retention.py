"""[records] keep_moves: the moves of matches older than that are pruned from a real SQLite file,
while the matches, their seats, results and ratings stay; the daemon's records service prunes at
start and once a day, and a pruned match says so."""

from __future__ import annotations

import sqlite3

import pytest_twisted
from twisted.internet import defer
from twisted.logger import capturedLogs

from gamed import config
from gamed.kalaha import rules
from gamed.records import PRUNE_INTERVAL, MatchRecord, Move, RecordsService, RecordStore, Seat

DAY = 86400.0


def _reactor():
    from twisted.internet import reactor

    return reactor


def _match(ended: float, names=("alice", "bob")) -> MatchRecord:
    state = {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}
    moves = []
    for n, move in enumerate(("A3", "B1", "A1"), 1):
        state = rules.next_state(state, None, move) if state["to_move"] == "AB".index(move[0]) else state
        moves.append(Move(n, "AB".index(move[0]), move, n * 1.0, state, {"0": {"used": 1.0, "left": None, "credit": 0.0}}))
    return MatchRecord(
        game="kalaha", started=ended - 60, ended=ended, seats=(Seat(0, names[0], True), Seat(1, names[1], True)),
        options={"pits": 6}, moves=tuple(moves), scores=(1.0, 0.0), reason="resign",
        initial_state={"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0},
        extra={"final_state": moves[-1].state},
    )


@pytest_twisted.ensureDeferred
async def test_pruning_drops_old_matches_moves_and_keeps_results_and_ratings(tmp_path):
    now = _reactor().seconds()
    store = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    await store.start()
    try:
        old = [await store.store(_match(now - 40 * DAY, (f"a{i}", f"b{i}"))) for i in range(5)]
        new = await store.store(_match(now - DAY))
        board = await store.leaderboard("kalaha")
        before = await store.match(old[0])
        assert await store.prune(now - 30 * DAY, batch=2) == (5, 15)  # three transactions
        assert await store.prune(now - 30 * DAY) == (0, 0)  # nothing left to prune
        assert await store.leaderboard("kalaha") == board  # ratings unchanged
        pruned = await store.match(old[0])
        assert pruned["moves"] == [] and pruned["turns"] == 3 and pruned["extra"]["moves_not_kept"] == 3
        assert pruned["extra"]["moves_pruned"] >= now and pruned["extra"]["final_state"] == before["extra"]["final_state"]
        assert [s["rating_after"] for s in pruned["seats"]] == [s["rating_after"] for s in before["seats"]]
        assert {k: pruned[k] for k in ("scores", "reason", "outcome", "points")} == {
            k: before[k] for k in ("scores", "reason", "outcome", "points")
        }
        kept = await store.match(new)
        assert len(kept["moves"]) == 3 and all(m["state"] for m in kept["moves"])
        assert len(await store.recent(10)) == 6
    finally:
        await store.close()
    db = sqlite3.connect(tmp_path / "r.sqlite")
    assert db.execute("SELECT COUNT(*) FROM moves").fetchone() == (3,)
    assert db.execute("SELECT COUNT(*) FROM seats").fetchone() == (12,)
    db.close()


@pytest_twisted.ensureDeferred
async def test_the_records_service_prunes_at_start_and_daily_and_logs_it(tmp_path):
    now = _reactor().seconds()
    store = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    await store.start()
    await store.store(_match(now - 10 * DAY))
    await store.store(_match(now - DAY))
    await store.close()
    store = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    service = RecordsService(store, keep_moves=7)
    with capturedLogs() as events:
        service.startService()
        assert await service.pruning == (1, 3)
    assert service._prune_call.running and service._prune_call.interval == PRUNE_INTERVAL == DAY
    assert any("pruned the 3 moves of 1 matches that ended more than 7 days ago" in str(e.get("log_format", "")).format(**e)
               for e in events if "log_format" in e)
    await service.stopService()
    assert not service._prune_call.running


@pytest_twisted.ensureDeferred
async def test_without_keep_moves_nothing_is_pruned(tmp_path):
    store = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    service = RecordsService(store)
    service.startService()
    await service.started
    assert service.pruning is None and service._prune_call is None
    await store.store(_match(1000.0))
    assert len((await store.match(1))["moves"]) == 3
    await defer.maybeDeferred(service.stopService)


def test_keep_moves_is_a_setting_of_the_records_section():
    assert config.Config().records.keep_moves == 0
    assert config.build({"records": {"keep_moves": 30}}).records.keep_moves == 30
