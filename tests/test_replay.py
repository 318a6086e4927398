"""Records that stay small (gamed.replay): a stored match keeps its initial state and its moves,
and only what the rules cannot rebuild of the states; reading it back gives every move's state
exactly as the live game produced it (the same JSON), for real matches of every game, on real
SQLite files, and a move takes far fewer bytes than when every state was kept whole."""

from __future__ import annotations

import json
import sqlite3

import pytest
import pytest_twisted
from hypothesis import given
from hypothesis import strategies as st

from gamed import records, registry, replay
from gamed.records import MatchRecord, Move, RecordsError, RecordStore, Seat
from tests import records_corpus
from tests.test_records import url  # noqa: F401 - the fixture: SQLite, and PostgreSQL where a server is given

# --- the patches (pure) -------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2, allow_nan=False) | st.sampled_from(["a", "b", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), inner, max_size=4),
    max_leaves=20,
)


@given(json_values, json_values)
def test_a_patch_turns_any_prediction_into_the_state_with_the_same_json(predicted, actual):
    patch = replay.diff(predicted, actual)
    assert replay.dumps(replay.apply(predicted, json.loads(replay.dumps(patch)))) == replay.dumps(actual)
    assert (patch == []) == (replay.dumps(predicted) == replay.dumps(actual))


def test_same_json_means_same_types_and_key_order():
    assert not replay.same(True, 1) and not replay.same(1.0, 1) and not replay.same(0.0, -0.0)
    assert not replay.same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert replay.diff({"a": 1, "b": 2}, {"b": 2, "a": 1}) == [[{"b": 2, "a": 1}]]
    assert replay.diff({"a": [1, 2, 3], "b": "x" * 40}, {"a": [1, 5, 3], "b": "x" * 40}) == [["a", 1, 5]]


def test_a_state_the_rules_cannot_predict_is_kept_whole():
    def fails(state, seat, move):
        raise ValueError(move)

    kept = replay.compact(fails, {"n": 0}, [(0, "m1", {"n": 1}), (1, "m2", None)])
    assert kept == [({"n": 1}, None), (None, None)]
    assert replay.rebuild(fails, {"n": 0}, [(0, "m1", {"n": 1}, None), (1, "m2", None, None)]) == [{"n": 1}, None]
    with pytest.raises(replay.ReplayError):
        replay.rebuild(fails, {"n": 0}, [(0, "m1", None, "[]")])


# --- real matches of every game -----------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return records_corpus.every_game(tmp_path_factory.mktemp("stratego"))


def _reactor():
    from twisted.internet import reactor

    return reactor


async def _stored(path, records_, compact=True):
    store = RecordStore(f"sqlite:{path}", _reactor(), compact=compact)
    await store.start()
    try:
        ids = [await store.store(r) for r in records_]
        return [await store.match(i) for i in ids]
    finally:
        await store.close()


def _size(path) -> int:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("VACUUM")
    db.close()
    return path.stat().st_size


# The file bytes per move after / before, as bench/records_size.py measures them (docs/performance.md,
# "Records: bytes per move"), with a margin: the states rebuilt make a move this much smaller at least.
SMALLER = {"kalaha": 0.75, "connect4": 0.5, "fight": 0.35, "combat": 0.15, "stratego": 0.15}


@pytest.mark.parametrize("game", [g.name for g in registry.GAMES])
@pytest_twisted.ensureDeferred
async def test_stored_matches_replay_identically_and_take_fewer_bytes_per_move(corpus, tmp_path, game):
    played = corpus[game]
    assert played and sum(len(r.moves) for r in played) >= 100
    matches = await _stored(tmp_path / "after.sqlite", played)
    for record, match in zip(played, matches):
        assert [replay.dumps(m["state"]) for m in match["moves"]] == [replay.dumps(m.state) for m in record.moves]
        assert match["initial_state"] == record.initial_state and match["extra"] == record.extra
        assert [(m["n"], m["seat"], m["move"], m["t"], m["clock"]) for m in match["moves"]] == [
            (m.n, m.seat, m.move, m.t, m.clock) for m in record.moves
        ]
    db = sqlite3.connect(tmp_path / "after.sqlite")
    kept_whole, rows = db.execute("SELECT SUM(state IS NOT NULL), COUNT(*) FROM moves").fetchone()
    replayers = {r for (r,) in db.execute("SELECT replayer FROM matches")}
    db.close()
    assert kept_whole == 0 and rows == sum(len(r.moves) for r in played)
    assert replayers == {registry.by_name()[game].replay_version}
    # The old way (every state whole) on a second file: the same matches, read back the same.
    before = await _stored(tmp_path / "before.sqlite", played, compact=False)
    assert [m["moves"] for m in before] == [m["moves"] for m in matches]
    await _stored(tmp_path / "empty.sqlite", [])
    empty = _size(tmp_path / "empty.sqlite")
    ratio = (_size(tmp_path / "after.sqlite") - empty) / (_size(tmp_path / "before.sqlite") - empty)
    assert ratio < SMALLER[game], f"{game}: a move takes {ratio:.2f} of its bytes of before"


@pytest_twisted.ensureDeferred
async def test_every_games_matches_replay_identically_from_either_database(corpus, url):
    """The same on SQLite and PostgreSQL (``url``: both, PostgreSQL where a server is given):
    a few matches of every game, stored the new way and read back with the live game's states."""
    played = [r for game in sorted(corpus) for r in corpus[game][:2]]
    store = RecordStore(url, _reactor())
    await store.start()
    try:
        ids = [await store.store(r) for r in played]
        matches = [await store.match(i) for i in ids]
        pruned = await store.prune(max(r.ended for r in played) + 1)
    finally:
        await store.close()
    for record, match in zip(played, matches):
        assert [replay.dumps(m["state"]) for m in match["moves"]] == [replay.dumps(m.state) for m in record.moves], record.game
    assert pruned == (len(played), sum(len(r.moves) for r in played))  # the retention's delete, on that database


@pytest_twisted.ensureDeferred
async def test_compact_works_on_either_database(corpus, url):
    played = [r for game in sorted(corpus) for r in corpus[game][:1]]
    old = RecordStore(url, _reactor(), compact=False)  # the states whole, as before gamed 17
    await old.start()
    try:
        ids = [await old.store(r) for r in played]
    finally:
        await old.close()
    store = RecordStore(url, _reactor())
    await store.start()
    try:
        matches, moves, before, after = await store.compact_stored(batch=2)
        again = [await store.match(i) for i in ids]
    finally:
        await store.close()
    assert matches == len(played) and moves == sum(len(r.moves) for r in played) and after < before
    for record, match in zip(played, again):
        assert [replay.dumps(m["state"]) for m in match["moves"]] == [replay.dumps(m.state) for m in record.moves], record.game


# --- old rows, odd rows ------------------------------------------------------------------------


def _kalaha(moves, initial):
    return MatchRecord(
        game="kalaha", started=1.0, ended=2.0, seats=(Seat(0, "a", True), Seat(1, "b", True)), options={},
        moves=tuple(moves), scores=(1.0, 0.0), reason="end", initial_state=initial,
    )


START = {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}


@pytest_twisted.ensureDeferred
async def test_rows_with_whole_states_of_before_and_states_the_rules_do_not_reach_read_as_they_were(tmp_path):
    from gamed.kalaha import rules

    after_a3 = rules.next_state(START, 0, "A3")
    odd = {"pits": "not a board"}
    record = _kalaha(
        [Move(1, 0, "A3", 0.5, after_a3), Move(2, 1, "B1", 1.0, odd), Move(3, 1, "B2", 1.5), Move(4, 1, "??", 2.0, START)],
        START,
    )
    (whole,) = await _stored(tmp_path / "old.sqlite", [record], compact=False)  # as gamed stored before
    (small,) = await _stored(tmp_path / "new.sqlite", [record])
    assert [m["state"] for m in whole["moves"]] == [m["state"] for m in small["moves"]] == [after_a3, odd, None, START]
    db = sqlite3.connect(tmp_path / "new.sqlite")
    rows = db.execute("SELECT state IS NULL, patch FROM moves ORDER BY n").fetchall()
    db.close()
    assert rows == [(1, "[]"), (0, None), (1, None), (0, None)]  # only the first one is rebuilt


@pytest_twisted.ensureDeferred
async def test_a_match_stored_for_another_replayer_is_refused_with_a_reason(tmp_path):
    from gamed.kalaha import rules

    path = tmp_path / "r.sqlite"
    (match,) = await _stored(path, [_kalaha([Move(1, 0, "A3", 0.5, rules.next_state(START, 0, "A3"))], START)])
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE matches SET replayer = 'kalaha/0'")
    db.close()
    store = RecordStore(f"sqlite:{path}", _reactor())
    await store.start()
    try:
        with pytest.raises(RecordsError, match=r"match 1: its states need the replayer kalaha/0, this gamed has kalaha/1"):
            await store.match(match["id"])
    finally:
        await store.close()


def test_every_game_has_a_replayer():
    for game in registry.GAMES:
        assert game.replay_version.startswith(f"{game.name}/")
        assert records._kept_states(_kalaha([], None)) == (None, [])


@pytest_twisted.ensureDeferred
async def test_compact_drops_the_rebuilt_states_of_matches_stored_whole_and_they_read_the_same(corpus, tmp_path):
    played = [r for game in ("kalaha", "combat", "fight") for r in corpus[game]]
    path = tmp_path / "old.sqlite"
    whole = await _stored(path, played, compact=False)  # a database of before gamed 17
    store = RecordStore(f"sqlite:{path}", _reactor())
    await store.start()
    try:
        matches, moves, before, after = await store.compact_stored(batch=4)
        assert matches == len(played) and moves == sum(len(r.moves) for r in played) and after < before / 5
        assert await store.compact_stored() == (0, 0, 0, 0)  # nothing left to compact
        again = [await store.match(m["id"]) for m in whole]
    finally:
        await store.close()
    assert [[replay.dumps(m["state"]) for m in match["moves"]] for match in again] == [
        [replay.dumps(m["state"]) for m in match["moves"]] for match in whole
    ]
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM moves WHERE state IS NOT NULL").fetchone() == (0,)
    db.close()


# --- the replayers against the rules (hypothesis, the CI profile) ------------------------------


@given(st.lists(st.integers(0, 5), max_size=80))
def test_kalaha_replays_any_game_as_the_live_table_shows_it(choices):
    from gamed.kalaha import rules

    position = rules.Position.start()
    state = rules.spectator_state(position)
    for choice in choices:
        legal = position.legal_moves()
        if not legal:
            break
        move = rules.play(position, legal[choice % len(legal)])
        position = move.position
        text = f"{move.side}{move.pit}"  # as gamed.kalaha.service records it
        assert rules.next_state(state, rules.SIDES.index(move.side), text) == rules.spectator_state(position)
        state = rules.spectator_state(position)


@given(st.integers(4, 9), st.integers(4, 9), st.lists(st.integers(0, 8), max_size=90))
def test_connect4_replays_any_game_as_the_live_table_shows_it(width, height, choices):
    from gamed.connect4 import rules

    board = rules.Board(width, height)
    state = rules.spectator_state(board)
    for choice in choices:
        columns = board.legal_columns()
        if not columns or board.is_over():
            break
        column = columns[choice % len(columns)]
        board.drop(column)
        after = rules.spectator_state(board)
        assert replay.same(rules.next_state(state, None, str(column)), after)
        state = after
