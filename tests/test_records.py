"""The records database (gamed.records) on real SQLite files, and on PostgreSQL when one is given.

Set GAMED_TEST_POSTGRES_URL=postgresql://user:pw@host/db to run every test on PostgreSQL too; the
tests drop and recreate gamed's tables in that database.
"""

import json
import os
import re
import sqlite3

import attrs
import pytest
import pytest_twisted
from twisted.internet import defer, task

from gamed import records
from gamed.kalaha import rules as kalaha_rules
from gamed.ratings import INITIAL, Rating, conservative, interval, rate
from gamed.observers import LiveHub
from gamed.records import (
    POSTGRES,
    SCHEMA_VERSION,
    SQLITE,
    MatchRecord,
    Move,
    RecordsError,
    RecordsService,
    RecordStore,
    Seat,
    migrate,
    parse_url,
    record_from_json,
)

PG_URL = os.environ.get("GAMED_TEST_POSTGRES_URL", "")
# Every table the migrations create (a PostgreSQL test database is emptied of them between tests).
TABLES = (*sorted({name for step in records.MIGRATIONS for statement in step if isinstance(statement, str)
                   for name in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", statement)}), "schema_version")


def _reactor():
    from twisted.internet import reactor

    return reactor


def _connect(url):
    """A plain synchronous DB-API connection to the database behind ``url`` (for set-up and checks)."""
    dialect, target = parse_url(url)
    if dialect is SQLITE:
        return sqlite3.connect(target)
    import psycopg

    return psycopg.connect(target)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'records.sqlite'}"
    if not PG_URL:
        pytest.skip("PostgreSQL records not tested: set GAMED_TEST_POSTGRES_URL=postgresql://... to run them")
    pytest.importorskip("psycopg", reason="GAMED_TEST_POSTGRES_URL is set but psycopg is not installed (pip install '.[postgres]')")
    with _connect(PG_URL) as conn:
        conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES) + " CASCADE")
    return PG_URL


def kalaha(a="alice", b="bob", scores=(1, 0), rated=True, a_rated=True, b_rated=True, **kw):
    """A short rated Kalaha match between two named players."""
    return MatchRecord(
        game=kw.pop("game", "kalaha"),
        started=1700000000.25,
        ended=1700000042.5,
        seats=(Seat(0, a, a_rated), Seat(1, b, b_rated, "computer")),
        options={"pits": 6, "seeds": 4},
        moves=(
            Move(1, 0, "3", 1.5, {"pits": [[4, 4, 0, 5, 5, 5], [4] * 6], "stores": [1, 0], "to_move": 0}),
            Move(2, 0, "6", 2.75, {"pits": [[4, 4, 0, 5, 5, 0], [5] * 5 + [4]], "stores": [2, 0], "to_move": 1}),
            Move(3, 1, "1", 4.0, None),
        ),
        scores=scores,
        reason="board empty",
        rated=rated,
        initial_state={"pits": [[4] * 6, [4] * 6], "stores": [0, 0], "to_move": 0},
        extra=kw.pop("extra", {}),
        table=kw.pop("table", "kalaha-3"),
        **kw,
    )


async def opened(url):
    store = RecordStore(url, _reactor())
    await store.start()
    return store


def board(rows):
    return [(r["name"], Rating(r["rating"], r["sigma"]), r["games"], r["wins"], r["draws"], r["losses"]) for r in rows]


# Two newcomers after one game between them (gamed.ratings, openskill): the winner's and the loser's.
WON, LOST = rate([INITIAL, INITIAL], [1, 0])


# --- URLs ------------------------------------------------------------------------------------


def test_urls():
    assert parse_url("sqlite:///var/lib/gamed/gamed.sqlite") == (SQLITE, "/var/lib/gamed/gamed.sqlite")
    assert parse_url("sqlite:state/gamed.sqlite") == (SQLITE, "state/gamed.sqlite")
    assert parse_url("gamed.sqlite") == (SQLITE, "gamed.sqlite")
    assert parse_url("/abs/gamed.sqlite") == (SQLITE, "/abs/gamed.sqlite")
    assert parse_url("postgresql://u:p@db:5432/gamed") == (POSTGRES, "postgresql://u:p@db:5432/gamed")
    assert parse_url("postgres://db/gamed")[0] is POSTGRES
    for bad in ("mysql://db/gamed", "", "sqlite:"):
        with pytest.raises(RecordsError):
            parse_url(bad)
    assert POSTGRES.sql("SELECT a FROM t WHERE b = ? AND c = ?") == "SELECT a FROM t WHERE b = %s AND c = %s"


# --- storing and reading ---------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_store_and_read_back(url):
    store = await opened(url)
    try:
        record = kalaha(extra={"note": "ünïcode <b>"})
        match_id = await store.store(record)
        assert isinstance(match_id, int)
        data = await store.match(match_id)
        assert data["id"] == match_id and data["game"] == "kalaha" and data["table"] == "kalaha-3"
        assert (data["started"], data["ended"], data["reason"], data["rated"]) == (1700000000.25, 1700000042.5, "board empty", True)
        assert data["seats"][1] == {
            "seat": 1,
            "name": "bob",
            "kind": "computer",
            "account": False,
            "rated": True,
            "rating_before": 1500.0,
            "rating_after": LOST.mu,
            "sigma_before": 500.0,
            "sigma_after": LOST.sigma,
            "account_id": None,
        }
        assert data["scores"] == [1.0, 0.0]
        assert data["moves"][0] == {"n": 1, "seat": 0, "move": "3", "t": 1.5, "state": record.moves[0].state, "clock": None}
        assert data["moves"][2]["state"] is None
        assert data["options"] == {"pits": 6, "seeds": 4} and data["initial_state"] == record.initial_state
        assert record_from_json(data) == record
        assert await store.match(match_id + 1000) is None
        assert await store.match(2**70) is None and await store.match(-1) is None
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_recent_is_newest_first_and_filters_by_game(url):
    store = await opened(url)
    try:
        ids = [await store.store(kalaha(game=game)) for game in ("kalaha", "connect4", "kalaha", "fight")]
        recent = await store.recent()
        assert [m["id"] for m in recent] == ids[::-1]
        assert recent[0] == {
            "id": ids[3],
            "game": "fight",
            "started": 1700000000.25,
            "ended": 1700000042.5,
            "seats": [{"seat": 0, "name": "alice", "kind": "player", "account": False}, {"seat": 1, "name": "bob", "kind": "computer", "account": False}],
            "scores": [1.0, 0.0],
            "reason": "board empty",
            "detail": None,
            "points": None,
            "turns": 3,
            "rated": True,
            "outcome": "alice won: board empty",
        }
        assert [m["id"] for m in await store.recent(game="kalaha")] == [ids[2], ids[0]]
        assert [m["id"] for m in await store.recent(limit=2)] == [ids[3], ids[2]]
        assert await store.recent(game="stratego") == []
        with pytest.raises(ValueError):
            await store.recent(limit=-1)
    finally:
        await store.close()


def ended_kalaha(a="alice", b="bob", stores=(40, 32), **kw):
    """A Kalaha match that ended normally: every stone in the stores."""
    scores = (1, 0) if stores[0] > stores[1] else (0, 1) if stores[0] < stores[1] else (0.5, 0.5)
    final = {"pits": [[0] * 6, [0] * 6], "stores": list(stores), "to_move": None}
    return attrs.evolve(kalaha(a, b, scores=scores, **kw), reason="end", extra={"final_state": final})


@pytest_twisted.ensureDeferred
async def test_summaries_say_the_result_in_the_games_own_terms(url):
    store = await opened(url)
    try:
        won = await store.store(ended_kalaha(stores=(40, 32)))
        resigned = await store.store(attrs.evolve(kalaha(scores=(0, 1)), reason="resign"))
        forfeit = await store.store(
            attrs.evolve(kalaha(game="combat"), reason="forfeit", extra={"detail": "seat 1 (bob) left the game"})
        )
        endless = await store.store(attrs.evolve(kalaha(game="combat"), extra={"moves_not_kept": 20}))
        summaries = {m["id"]: m for m in await store.recent()}
        assert summaries[won]["outcome"] == "alice won 40\u201332" and summaries[won]["points"] == [40.0, 32.0]
        assert summaries[resigned]["outcome"] == "bob won: alice resigned" and summaries[resigned]["points"] is None
        assert summaries[forfeit]["detail"] == "seat 1 (bob) left the game"
        assert summaries[forfeit]["outcome"] == "alice won: seat 1 (bob) left the game"
        assert summaries[endless]["turns"] == 3 + 20
        assert (await store.match(won))["outcome"] == "alice won 40\u201332"
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_matches_aborted_before_the_first_move_can_be_left_out(url):
    store = await opened(url)
    try:
        played = await store.store(kalaha())
        aborted = await store.store(attrs.evolve(kalaha(scores=(0, 0), rated=False), reason="shutdown"))
        unplayed = await store.store(attrs.evolve(kalaha(scores=(0, 0), rated=False), reason="disconnect", moves=()))
        lost_at_once = await store.store(attrs.evolve(kalaha(scores=(0, 1)), reason="timeout", moves=()))
        everything = await store.recent()
        assert [m["id"] for m in everything] == [lost_at_once, unplayed, aborted, played]
        assert {m["id"]: m["outcome"] for m in everything}[unplayed] == "aborted: a player left"
        assert [m["id"] for m in await store.recent(played=True)] == [lost_at_once, aborted, played]
        assert [m["id"] for m in await store.recent(game="kalaha", played=True, limit=1)] == [lost_at_once]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_players_ratings_and_matches(url):
    store = await opened(url)
    try:
        first = await store.store(kalaha(a="alice", b="bob"))
        await store.store(kalaha(a="carol", b="dave"))
        second = await store.store(kalaha(a="carol", b="alice", scores=(1, 0)))
        c4 = await store.store(kalaha(a="bob", b="alice", game="connect4", scores=(0, 1)))
        unplayed = await store.store(attrs.evolve(kalaha(a="alice", b="erin", scores=(0, 0), rated=False), moves=()))
        alice = await store.player("alice")
        assert alice["name"] == "alice"
        assert [m["id"] for m in alice["matches"]] == [unplayed, c4, second, first]
        assert [m["id"] for m in (await store.player("alice", played=True))["matches"]] == [c4, second, first]
        assert [m["id"] for m in (await store.player("alice", limit=1))["matches"]] == [unplayed]
        ratings = {r["game"]: r for r in alice["ratings"]}
        assert sorted(ratings) == ["connect4", "kalaha"]
        assert (ratings["connect4"]["rating"], ratings["connect4"]["rank"], ratings["connect4"]["wins"]) == (WON.mu, 1, 1)
        assert (ratings["connect4"]["sigma"], ratings["connect4"]["provisional"]) == (WON.sigma, True)
        kalaha_board = [r["name"] for r in await store.leaderboard("kalaha")]
        assert ratings["kalaha"]["rank"] == kalaha_board.index("alice") + 1
        assert (ratings["kalaha"]["games"], ratings["kalaha"]["wins"], ratings["kalaha"]["losses"]) == (2, 1, 1)
        erin = await store.player("erin")
        assert erin["ratings"] == [] and [m["id"] for m in erin["matches"]] == [unplayed]
        assert await store.player("nobody") is None
    finally:
        await store.close()


# --- ratings ---------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_win_draw_loss_and_leaderboard(url):
    store = await opened(url)
    try:
        await store.store(kalaha(scores=(1, 0)))  # alice beats bob: up and down, both surer
        assert board(await store.leaderboard("kalaha")) == [("alice", WON, 1, 1, 0, 0), ("bob", LOST, 1, 0, 0, 1)]
        assert WON.mu > 1500 > LOST.mu and WON.sigma < 500
        await store.store(kalaha(scores=(0.5, 0.5)))  # a draw: the two come closer, sigma shrinks again
        rows = await store.leaderboard("kalaha")
        alice, bob = rate([WON, LOST], [0.5, 0.5])
        assert board(rows) == [("alice", alice, 2, 1, 1, 0), ("bob", bob, 2, 0, 1, 1)]
        assert LOST.mu < bob.mu < alice.mu < WON.mu and alice.sigma < WON.sigma
        await store.store(kalaha(a="carol", b="bob", scores=(0, 1)))  # bob beats newcomer carol
        rows = await store.leaderboard("kalaha")
        carol, bob = rate([INITIAL, bob], [0, 1])
        expected = {"alice": alice, "bob": bob, "carol": carol}
        assert {name: r for name, r, *_ in board(rows)} == expected
        # best first by the conservative rating mu - 3 sigma
        assert [r["name"] for r in rows] == sorted(expected, key=lambda n: -conservative(expected[n].mu, expected[n].sigma))
        assert board(rows)[[r["name"] for r in rows].index("bob")][2:] == (3, 1, 1, 1)
        assert [r["name"] for r in await store.leaderboard("kalaha", limit=1)] == [rows[0]["name"]]
        # What the web shows beside each rating: the 95 % interval and the provisional mark.
        low, high = interval(bob.mu, bob.sigma)
        shown = rows[[r["name"] for r in rows].index("bob")]
        assert (shown["low"], shown["high"], shown["conservative"]) == pytest.approx((low, high, bob.mu - 3 * bob.sigma))
        assert shown["provisional"] is True and low < bob.mu < high
        # Ratings are per game type.
        assert await store.leaderboard("connect4") == []
        await store.store(kalaha(game="connect4", scores=(0, 1)))
        assert board(await store.leaderboard("connect4")) == [("bob", WON, 1, 1, 0, 0), ("alice", LOST, 1, 0, 0, 1)]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_leaderboard_order(url):
    store = await opened(url)
    try:
        # dave beats everybody, erin loses to everybody: dave > ... > erin, ties broken by games then name.
        for a, b in [("dave", "erin"), ("dave", "fred"), ("fred", "erin"), ("gina", "hank")]:
            await store.store(kalaha(a=a, b=b))
        rows = await store.leaderboard("kalaha")
        order = [r["conservative"] for r in rows]
        assert order == sorted(order, reverse=True)
        assert rows[0]["name"] == "dave" and rows[-1]["name"] == "erin"
        assert [r["name"] for r in rows if Rating(r["rating"], r["sigma"]) == WON] == ["gina"]
        # The player pages' rank is the place on this board.
        for place, row in enumerate(rows, 1):
            (mine,) = (await store.player(row["name"]))["ratings"]
            assert mine["rank"] == place
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_proven_player_stays_above_a_lucky_newcomer(url):
    store = await opened(url)
    try:
        for _ in range(12):  # ivan beats jack twelve times: a high rating and a small sigma
            await store.store(kalaha(a="ivan", b="jack"))
        await store.store(kalaha(a="kim", b="lou"))  # kim won one game
        rows = {r["name"]: r for r in await store.leaderboard("kalaha")}
        assert rows["ivan"]["sigma"] < rows["kim"]["sigma"]
        assert [r["name"] for r in await store.leaderboard("kalaha")][0] == "ivan"
        assert rows["ivan"]["high"] - rows["ivan"]["low"] < rows["kim"]["high"] - rows["kim"]["low"]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_unnamed_players_are_not_rated(url):
    store = await opened(url)
    try:
        match_id = await store.store(kalaha(a="alice", b="guest3", b_rated=False))
        assert await store.leaderboard("kalaha") == []
        data = await store.match(match_id)
        assert [(s["rated"], s["rating_before"], s["rating_after"], s["sigma_after"]) for s in data["seats"]] == [
            (True, None, None, None),
            (False, None, None, None),
        ]
        # Against a named player later, alice starts from 1500 as if the guest game never happened.
        await store.store(kalaha(a="alice", b="bob"))
        assert board(await store.leaderboard("kalaha")) == [("alice", WON, 1, 1, 0, 0), ("bob", LOST, 1, 0, 0, 1)]
        # One name in both seats cannot rate itself.
        await store.store(kalaha(a="bob", b="bob"))
        assert board(await store.leaderboard("kalaha"))[1] == ("bob", LOST, 1, 0, 0, 1)
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_many_seats_rate_everyone_and_leave_the_guests_out(url):
    store = await opened(url)
    try:
        names = ["ann", "ben", "guest1", "cat", "dan"]
        seats = tuple(Seat(i, n, True, "guest" if n.startswith("guest") else "player") for i, n in enumerate(names))
        record = attrs.evolve(kalaha(), game="combat", seats=seats, scores=(3, 2, 4, 1, 0), moves=(), initial_state=None)
        match_id = await store.store(record)
        rows = {r["name"]: r for r in await store.leaderboard("combat")}
        assert sorted(rows) == ["ann", "ben", "cat", "dan"]
        new = rate([INITIAL, INITIAL, None, INITIAL, INITIAL], [3, 2, 4, 1, 0])
        assert {n: Rating(rows[n]["rating"], rows[n]["sigma"]) for n in rows} == {n: r for n, r in zip(names, new) if r}
        assert rows["ann"]["rating"] > rows["ben"]["rating"] > 1500 > rows["cat"]["rating"] > rows["dan"]["rating"]
        assert [(rows[n]["wins"], rows[n]["losses"]) for n in ("ann", "ben")] == [(1, 0), (0, 1)]
        seats = (await store.match(match_id))["seats"]
        assert [s["sigma_after"] is None for s in seats] == [False, False, True, False, False]
        assert all(s["sigma_after"] < s["sigma_before"] == 500.0 for s in seats if s["rated"])
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_unrated_match_changes_nothing(url):
    store = await opened(url)
    try:
        await store.store(kalaha())
        before = await store.leaderboard("kalaha")
        match_id = await store.store(kalaha(scores=(0, 1), rated=False))
        assert await store.leaderboard("kalaha") == before
        data = await store.match(match_id)
        assert data["rated"] is False and [s["rating_after"] for s in data["seats"]] == [None, None]
    finally:
        await store.close()


# --- durability, schema, failures ------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_records_survive_a_restart(url):
    store = await opened(url)
    first = await store.store(kalaha())
    await store.close()
    again = await opened(url)
    try:
        assert record_from_json(await again.match(first)) == kalaha()
        assert [m["id"] for m in await again.recent()] == [first]
        second = await again.store(kalaha(scores=(0, 1)))
        assert second > first
        # The ratings went on from the stored ones (mu and sigma): bob won the second game.
        rows = {name: r for name, r, *_ in board(await again.leaderboard("kalaha"))}
        alice, bob = rate([WON, LOST], [0, 1])
        assert rows == {"alice": alice, "bob": bob}
    finally:
        await again.close()


@pytest_twisted.ensureDeferred
async def test_each_moves_clock_is_kept_and_read_back_after_a_restart(url):
    # A Kalaha game played by its rules and reported as gamed.kalaha.service reports it to the
    # live hub (timing=game.timing: {side index: Turn.clock_entry}), stored into the real database.
    store = await opened(url)
    clock = task.Clock()
    clock.advance(1700000000)
    hub = LiveHub(clock, store)
    position = kalaha_rules.Position.start()
    seats = [Seat(0, "alice", True), Seat(1, "bob", True)]
    table = hub.open("kalaha", seats, {"clock": "60s+1s"}, kalaha_rules.spectator_state(position))
    left = {0: 60.0, 1: 60.0}
    for n in range(12):
        side = kalaha_rules.SIDES.index(position.to_move)
        used = round(0.25 + 0.5 * n, 3)
        left[side] = round(left[side] - used + 1.0, 3)
        move = kalaha_rules.play(position, position.legal_moves()[n % len(position.legal_moves())])
        position = move.position
        clock.advance(used)
        timing = None if n == 5 else {side: {"used": used, "left": left[side], "credit": round(0.001 * n, 3)}}
        to_move = None if position.over else kalaha_rules.SIDES.index(position.to_move)
        table.moved(side, f"{move.side}{move.pit}", kalaha_rules.spectator_state(position), to_move, dict(left), timing=timing)
        if position.over:
            break
    table.finish((1.0, 0.0), "resign", kalaha_rules.spectator_state(position, over=True))
    in_memory = [m.clock for m in table.moves]
    assert in_memory[0] == {"0": {"used": 0.25, "left": 60.75, "credit": 0.0}}
    assert in_memory[5] is None  # a move the game kept no clock for
    assert all(c is not None for k, c in enumerate(in_memory) if k != 5) and len(in_memory) >= 6
    await store.close()  # waits for the store in flight
    again = await opened(url)
    try:
        (summary,) = await again.recent()
        assert summary["turns"] == len(in_memory)
        data = await again.match(summary["id"])
        assert [m["clock"] for m in data["moves"]] == in_memory
        back = record_from_json(data)
        assert back.moves == tuple(table.moves)
        assert [m.clock for m in back.moves] == in_memory
    finally:
        await again.close()


def test_a_moves_clock_names_its_seats_as_strings_and_an_empty_one_is_none():
    assert Move(1, 0, "A1", 1.0, None, {0: {"used": 1.0, "left": None, "credit": 0.0}}).clock == {"0": {"used": 1.0, "left": None, "credit": 0.0}}
    assert Move(1, 0, "A1", 1.0, None, {}).clock is None
    assert Move(1, 0, "A1", 1.0).clock is None


@pytest_twisted.ensureDeferred
async def test_a_move_clock_that_is_not_json_or_not_a_dict_is_refused_and_nothing_is_stored(url):
    store = await opened(url)
    try:
        bad = attrs.evolve(kalaha(), moves=(Move(1, 0, "A1", 1.0, None, {"0": {"used": float("nan")}}),))
        with pytest.raises(ValueError, match="move 1 clock is not JSON-able"):
            await store.store(bad)
        with pytest.raises(ValueError, match="move 1: its clock is not a dict"):
            await store.store(attrs.evolve(kalaha(), moves=(Move(1, 0, "A1", 1.0, None, [1.0]),)))
        assert await store.recent() == []
    finally:
        await store.close()


def _versions(url):
    conn = _connect(url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT version FROM schema_version ORDER BY version")
        return [row[0] for row in cur.fetchall()]
    finally:
        conn.close()


@pytest_twisted.ensureDeferred
async def test_migrations_are_idempotent(url):
    store = RecordStore(url, _reactor())
    assert await store.start() == 0  # an empty database
    assert await store.start() == 0  # start() twice is one start
    await store.close()
    assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))
    store = RecordStore(url, _reactor())
    assert await store.start() == SCHEMA_VERSION  # nothing to do
    await store.close()
    assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))


@pytest_twisted.ensureDeferred
async def test_an_older_schema_is_upgraded(url):
    dialect, _ = parse_url(url)
    conn = _connect(url)
    try:
        cur = conn.cursor()
        migrate(cur, dialect, upto=1)  # what the first gamed with records made
        cur.execute(
            dialect.sql(
                "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
            ),
            ("connect4", "", 1.0, 2.0, "four in a row", 1, "{}", None, "{}"),
        )
        old = cur.fetchone()[0]
        cur.execute(dialect.sql("INSERT INTO seats (match_id, seat, name, rated, kind, score) VALUES (?, ?, ?, ?, ?, ?)"), (old, 0, "ann", 1, "player", 1.0))
        cur.execute(dialect.sql("INSERT INTO seats (match_id, seat, name, rated, kind, score) VALUES (?, ?, ?, ?, ?, ?)"), (old, 1, "ben", 1, "player", 0.0))
        conn.commit()
    finally:
        conn.close()
    assert _versions(url) == [1]
    store = RecordStore(url, _reactor())
    try:
        assert await store.start() == 1
        assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))
        data = await store.match(old)
        assert [(s["name"], s["rating_before"]) for s in data["seats"]] == [("ann", None), ("ben", None)]
        await store.store(kalaha(a="ann", b="ben", game="connect4"))
        assert board(await store.leaderboard("connect4")) == [("ann", WON, 1, 1, 0, 0), ("ben", LOST, 1, 0, 0, 1)]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_matches_stored_before_version_3_get_their_moves_detail_and_points(url):
    dialect, _ = parse_url(url)
    conn = _connect(url)
    try:
        cur = conn.cursor()
        migrate(cur, dialect, upto=2)
        insert = dialect.sql(
            "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
        )
        final = {"pits": [[0] * 6, [0] * 6], "stores": [31, 41], "to_move": None}
        cur.execute(insert, ("kalaha", "kalaha-1", 1.0, 2.0, "end", 1, "{}", None, json.dumps({"final_state": final})))
        kalaha_id = cur.fetchone()[0]
        cur.execute(insert, ("combat", "combat-1", 1.0, 2.0, "timeout", 1, "{}", None, json.dumps({"detail": "seat 0 (ann) ran out of time"})))
        combat_id = cur.fetchone()[0]
        cur.execute(insert, ("kalaha", "kalaha-2", 1.0, 2.0, "disconnect", 0, "{}", None, "{}"))
        unplayed_id = cur.fetchone()[0]
        seat = dialect.sql("INSERT INTO seats (match_id, seat, name, rated, kind, score) VALUES (?, ?, ?, ?, ?, ?)")
        for match_id, scores in ((kalaha_id, (0.0, 1.0)), (combat_id, (0.0, 1.0)), (unplayed_id, (0.0, 0.0))):
            cur.execute(seat, (match_id, 0, "ann", 1, "player", scores[0]))
            cur.execute(seat, (match_id, 1, "ben", 1, "player", scores[1]))
        move = dialect.sql("INSERT INTO moves (match_id, n, seat, move, t, state) VALUES (?, ?, ?, ?, ?, ?)")
        cur.execute(move, (kalaha_id, 1, 0, "A3", 1.0, None))
        cur.execute(move, (kalaha_id, 2, 1, "B1", 2.0, None))
        conn.commit()
    finally:
        conn.close()
    store = RecordStore(url, _reactor())
    try:
        assert await store.start() == 2
        summaries = {m["id"]: m for m in await store.recent()}
        assert (summaries[kalaha_id]["turns"], summaries[kalaha_id]["points"]) == (2, [31.0, 41.0])
        assert summaries[kalaha_id]["outcome"] == "ben won 41\u201331"
        assert summaries[combat_id]["outcome"] == "ben won: seat 0 (ann) ran out of time"
        assert [m["id"] for m in await store.recent(played=True)] == [combat_id, kalaha_id]
        assert [m["id"] for m in (await store.player("ann"))["matches"]] == [unplayed_id, combat_id, kalaha_id]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_database_from_before_move_clocks_is_upgraded(url):
    dialect, _ = parse_url(url)
    conn = _connect(url)
    try:
        cur = conn.cursor()
        migrate(cur, dialect, upto=4)  # the last gamed without move clocks
        cur.execute(
            dialect.sql(
                "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra, turns)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
            ),
            ("kalaha", "kalaha-1", 1.0, 2.0, "resign", 1, "{}", None, "{}", 2),
        )
        old = cur.fetchone()[0]
        seat = dialect.sql("INSERT INTO seats (match_id, seat, name, rated, kind, score) VALUES (?, ?, ?, ?, ?, ?)")
        cur.execute(seat, (old, 0, "ann", 1, "player", 1.0))
        cur.execute(seat, (old, 1, "ben", 1, "player", 0.0))
        move = dialect.sql("INSERT INTO moves (match_id, n, seat, move, t, state) VALUES (?, ?, ?, ?, ?, ?)")
        cur.execute(move, (old, 1, 0, "A3", 1.0, None))
        cur.execute(move, (old, 2, 1, "B1", 2.0, None))
        conn.commit()
    finally:
        conn.close()
    store = RecordStore(url, _reactor())
    try:
        assert await store.start() == 4
        assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))
        data = await store.match(old)  # the old moves read back, without clocks
        assert [(m["move"], m["clock"]) for m in data["moves"]] == [("A3", None), ("B1", None)]
        clocked = attrs.evolve(kalaha(), moves=(Move(1, 0, "A3", 1.0, None, {0: {"used": 1.0, "left": 59.0, "credit": 0.0}}),))
        new = await store.store(clocked)
        assert (await store.match(new))["moves"][0]["clock"] == {"0": {"used": 1.0, "left": 59.0, "credit": 0.0}}
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_elo_ratings_of_before_are_kept_as_mu_with_a_newcomers_sigma(url):
    dialect, _ = parse_url(url)
    conn = _connect(url)
    try:
        cur = conn.cursor()
        migrate(cur, dialect, upto=5)  # the last gamed with Elo ratings
        cur.execute(
            dialect.sql(
                "INSERT INTO matches (game, table_id, started, ended, reason, rated, options, initial_state, extra, turns)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
            ),
            ("kalaha", "kalaha-1", 1.0, 2.0, "resign", 1, "{}", None, "{}", 2),
        )
        old = cur.fetchone()[0]
        seat = dialect.sql(
            "INSERT INTO seats (match_id, seat, name, rated, kind, score, rating_before, rating_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        cur.execute(seat, (old, 0, "ann", 1, "player", 1.0, 1600.0, 1611.5))
        cur.execute(seat, (old, 1, "ben", 1, "player", 0.0, 1400.0, 1388.5))
        rating = dialect.sql("INSERT INTO ratings (game, name, rating, games, wins, draws, losses) VALUES (?, ?, ?, ?, ?, ?, ?)")
        cur.execute(rating, ("kalaha", "ann", 1611.5, 40, 30, 2, 8))
        cur.execute(rating, ("kalaha", "ben", 1388.5, 25, 5, 0, 20))
        cur.execute(rating, ("kalaha", "cid", 1502.0, 3, 1, 1, 1))
        conn.commit()
    finally:
        conn.close()
    store = RecordStore(url, _reactor())
    try:
        assert await store.start() == 5
        assert _versions(url) == list(range(1, SCHEMA_VERSION + 1))
        rows = await store.leaderboard("kalaha")
        # Same numbers, same order, same counts; each as uncertain as a newcomer, so provisional.
        assert board(rows) == [
            ("ann", Rating(1611.5, 500.0), 40, 30, 2, 8),
            ("cid", Rating(1502.0, 500.0), 3, 1, 1, 1),
            ("ben", Rating(1388.5, 500.0), 25, 5, 0, 20),
        ]
        assert all(r["provisional"] for r in rows)
        assert [r["rank"] for r in (await store.player("ben"))["ratings"]] == [3]
        # The old match still shows its Elo numbers before and after; it had no sigma.
        assert [(s["rating_before"], s["rating_after"], s["sigma_before"], s["sigma_after"]) for s in (await store.match(old))["seats"]] == [
            (1600.0, 1611.5, None, None),
            (1400.0, 1388.5, None, None),
        ]
        # The next game goes on from the kept mu.
        new = await store.store(kalaha(a="ben", b="ann"))  # an upset: ben wins
        ben, ann = rate([Rating(1388.5, 500.0), Rating(1611.5, 500.0)], [1, 0])
        assert {name: r for name, r, *_ in board(await store.leaderboard("kalaha"))} == {"ann": ann, "ben": ben, "cid": Rating(1502.0, 500.0)}
        seats = (await store.match(new))["seats"]
        assert [(s["rating_before"], s["sigma_before"]) for s in seats] == [(1388.5, 500.0), (1611.5, 500.0)]
        assert [(s["rating_after"], s["sigma_after"]) for s in seats] == [(ben.mu, ben.sigma), (ann.mu, ann.sigma)]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_a_newer_schema_is_refused(url):
    store = await opened(url)
    await store.close()
    conn = _connect(url)
    try:
        conn.cursor().execute(parse_url(url)[0].sql("INSERT INTO schema_version (version, applied) VALUES (?, ?)"), (SCHEMA_VERSION + 7, 0.0))
        conn.commit()
    finally:
        conn.close()
    store = RecordStore(url, _reactor())
    with pytest.raises(RecordsError, match="newer than this gamed knows"):
        await store.start()
    with pytest.raises(RecordsError, match="newer"):
        await store.store(kalaha())
    await store.close()


@pytest_twisted.ensureDeferred
async def test_a_failed_store_leaves_nothing_and_later_stores_work(url):
    store = await opened(url)
    try:
        # Refused before the database: scores do not match the seats.
        with pytest.raises(ValueError, match="2 seats but 1 scores"):
            await store.store(kalaha(scores=(1,)))
        # Fails half-way through the transaction (after the match row and the ratings were written):
        # a move's state cannot be stored. Nothing of it may remain.
        bad = attrs.evolve(kalaha(), moves=(*kalaha().moves, Move(4, 0, "2", 5.0, {"x": {1, 2}})))
        with pytest.raises(ValueError, match="move 4 state is not JSON-able"):
            await store.store(bad)
        assert await store.recent() == [] and await store.leaderboard("kalaha") == []
        good = await store.store(kalaha())
        assert record_from_json(await store.match(good)) == kalaha()
        assert board(await store.leaderboard("kalaha")) == [("alice", WON, 1, 1, 0, 0), ("bob", LOST, 1, 0, 0, 1)]
    finally:
        await store.close()


@pytest_twisted.ensureDeferred
async def test_close_waits_for_stores_in_flight(url):
    store = await opened(url)
    pending = [store.store(kalaha(table=f"kalaha-{i}")) for i in range(20)]
    failing = store.store(attrs.evolve(kalaha(), options={"bad": object()}))
    closed = store.close()
    ids = await defer.gatherResults(pending)
    assert all(isinstance(i, int) for i in ids)
    with pytest.raises(ValueError, match="options is not JSON-able"):
        await failing  # waiting for it in close() did not take its error away
    await closed
    with pytest.raises(RecordsError, match="closed"):
        await store.store(kalaha())
    again = await opened(url)
    try:
        assert sorted(m["id"] for m in await again.recent(limit=100)) == sorted(ids)
        # Concurrent stores did not lose rating updates: alice won all 20 games.
        assert board(await again.leaderboard("kalaha"))[0][::2] == ("alice", 20, 0)
    finally:
        await again.close()


@pytest_twisted.ensureDeferred
async def test_unusable_databases_errback(tmp_path):
    missing = RecordStore(str(tmp_path / "nope.sqlite"), _reactor(), create=False)
    with pytest.raises(RecordsError, match="no records database at"):
        await missing.start()
    await missing.close()
    assert not (tmp_path / "nope.sqlite").exists()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    store = RecordStore(str(junk), _reactor())
    with pytest.raises(sqlite3.DatabaseError):
        await store.start()
    await store.close()
    with pytest.raises(RecordsError, match="not been started"):
        await RecordStore(str(tmp_path / "x.sqlite"), _reactor()).store(kalaha())


@pytest_twisted.ensureDeferred
async def test_sqlite_uses_wal(tmp_path):
    (tmp_path / "state").mkdir()
    store = await opened(str(tmp_path / "state" / "w.sqlite"))
    await store.store(kalaha())
    await store.close()
    conn = sqlite3.connect(tmp_path / "state" / "w.sqlite")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


@pytest_twisted.ensureDeferred
async def test_records_service_starts_and_closes_the_store(tmp_path):
    store = RecordStore(f"sqlite:{tmp_path / 's.sqlite'}", _reactor())
    svc = RecordsService(store)
    svc.startService()
    assert await svc.started == 0
    match_id = await store.store(kalaha())
    await svc.stopService()
    again = await opened(str(tmp_path / "s.sqlite"))
    try:
        assert (await again.match(match_id))["id"] == match_id
    finally:
        await again.close()


# --- the [records] config section ------------------------------------------------------------


def test_records_config_section(tmp_path):
    from gamed.config import Config, ConfigError, build, load

    assert Config().records.database == "gamed.sqlite"
    assert build({"records": {"database": ""}}).records.database == ""
    assert build({"records": {"database": "postgresql://u@db/gamed"}}).records.database == "postgresql://u@db/gamed"
    conf = tmp_path / "gamed.conf"
    conf.write_text('[records]\ndatabase = "sqlite:///var/lib/gamed/records.sqlite"\n')
    assert load(str(conf)).records.database == "sqlite:///var/lib/gamed/records.sqlite"
    for bad, message in [
        ({"database": 3}, "records.database must be a string"),
        ({"database": "mysql://db/x"}, "records.database must be a SQLite path"),
        ({"database": " gamed.sqlite"}, "records.database must not have blanks"),
        ({"database": "sqlite:"}, "names no file"),
        ({"path": "x"}, "unknown setting records.path"),
    ]:
        with pytest.raises(ConfigError, match=message):
            build({"records": bad})


def test_records_service_stops_the_daemon_when_the_database_cannot_be_opened(tmp_path):
    from twisted.logger import capturedLogs

    class Reactor:
        running = True
        stopped = 0

        def stop(self):
            self.stopped += 1

    reactor = Reactor()
    svc = RecordsService(RecordStore(str(tmp_path / "missing.sqlite"), reactor, create=False))
    with capturedLogs() as events:
        svc.startService()
    assert reactor.stopped == 1
    assert any("cannot open the records database" in e.get("log_format", "") for e in events)


@pytest_twisted.ensureDeferred
async def test_prepare_migrates_synchronously_and_start_then_finds_it_current(tmp_path):
    store = RecordStore(f"sqlite:{tmp_path / 'r.sqlite'}", _reactor())
    assert store.prepare() == 0
    assert store.prepare() == SCHEMA_VERSION
    try:
        assert await store.start() == SCHEMA_VERSION
    finally:
        await store.close()


def test_prepare_refuses_what_is_not_a_records_database(tmp_path):
    (tmp_path / "text.sqlite").write_text("not a database\n")
    with pytest.raises(RecordsError, match=r"cannot open the records database sqlite:.*text.sqlite: file is not a database"):
        RecordStore(f"sqlite:{tmp_path / 'text.sqlite'}", _reactor()).prepare()
    with pytest.raises(RecordsError, match="no records database at"):
        RecordStore(str(tmp_path / "missing.sqlite"), _reactor(), create=False).prepare()
    assert not (tmp_path / "missing.sqlite").exists()


@pytest_twisted.ensureDeferred
async def test_a_database_in_a_directory_that_does_not_exist_is_refused_and_nothing_is_made(tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    for url in (str(missing / "x.sqlite"), f"sqlite:{missing / 'x.sqlite'}"):
        why = f"cannot open the records database {url}: the directory {missing} does not exist"
        with pytest.raises(RecordsError) as caught:
            RecordStore(url, _reactor()).prepare()
        assert str(caught.value) == why
        store = RecordStore(url, _reactor())
        with pytest.raises(RecordsError) as caught:
            await store.start()
        assert str(caught.value) == why
        await store.close()
    assert list(tmp_path.iterdir()) == [], "no directory and no database were made"
