"""The live hub: tables, their viewers (snapshot, moves, end), late joins, slow viewers, stored records."""

import json

from twisted.internet import defer, task
from twisted.logger import capturedLogs
from zope.interface import implementer

from gamed.observers import ILiveViewer, LiveHub
from gamed.records import MatchRecord, Seat

SEATS = [Seat(0, "alice", rated=True), Seat(1, "guest2", rated=False)]


@implementer(ILiveViewer)
class Viewer:
    """Collects the events it is sent, parsed back from the server-sent event frames."""

    def __init__(self):
        self.data = b""
        self.ended = False

    def deliver(self, data):
        assert not self.ended
        self.data += data

    def end(self):
        self.ended = True

    @property
    def events(self):
        out = []
        for frame in self.data.decode().split("\n\n"):
            if frame.startswith("event: "):
                name, data = frame.split("\n")
                out.append((name[len("event: "):], json.loads(data[len("data: "):])))
        return out


class Store:
    """Keeps records in a list, as the RecordStore API does in the database."""

    def __init__(self, fail=False):
        self.records = []
        self.pending = []
        self.fail = fail

    def store(self, record):
        assert isinstance(record, MatchRecord)
        if self.fail:
            return defer.fail(RuntimeError("disk full"))
        self.records.append(record)
        d = defer.Deferred()
        self.pending.append(d)
        return d

    def recent(self, limit=20, game=None, played=False):
        kept = [(i, r) for i, r in enumerate(self.records) if not (played and not r.rated and not r.moves)]
        return defer.succeed([{"id": i + 1, "game": r.game} for i, r in kept][::-1][:limit])


def state(n):
    return {"pits": [[n] * 6, [6] * 6], "stores": [0, n], "to_move": n % 2}


def test_open_gives_ids_per_game_and_a_summary():
    clock = task.Clock()
    clock.advance(1000)
    hub = LiveHub(clock)
    a = hub.open("kalaha", SEATS, {"pits": 6}, state(0), {0: 60.0, 1: None})
    b = hub.open("kalaha", SEATS, {}, state(0))
    c = hub.open("fight", SEATS, {}, {"turn": 0})
    assert (a.id, b.id, c.id) == ("kalaha-1", "kalaha-2", "fight-1")
    assert list(hub.tables) == ["kalaha-1", "kalaha-2", "fight-1"]
    assert a.summary() == {
        "id": "kalaha-1",
        "game": "kalaha",
        "players": [{"seat": 0, "name": "alice", "kind": "player", "account": False}, {"seat": 1, "name": "guest2", "kind": "player", "account": False}],
        "turn": 0,
        "to_move": 0,
        "spectators": 0,
        "started": 1000.0,
    }
    assert a.detail()["clocks"] == {"0": 60.0, "1": None}


def test_viewer_gets_a_snapshot_then_moves_then_the_end():
    clock = task.Clock()
    hub = LiveHub(clock)
    table = hub.open("kalaha", SEATS, {}, state(0))
    viewer = Viewer()
    table.add(viewer)
    assert table.summary()["spectators"] == 1
    clock.advance(2.5)
    table.moved(0, "A3", state(1), 1, {0: None, 1: 60.0}, timing={0: {"used": 2.5, "left": None, "credit": 0.0}})
    table.moved(1, "B1", state(2), 0)
    table.finish((1.0, 0.0), "end", state(3))
    names = [name for name, _ in viewer.events]
    assert names == ["snapshot", "move", "move", "end"]
    snapshot, first = viewer.events[0][1], viewer.events[1][1]
    assert snapshot["id"] == table.id and snapshot["moves"] == [] and snapshot["result"] is None
    assert first == {
        "n": 1, "seat": 0, "move": "A3", "t": 2.5, "state": state(1), "turn": 1, "to_move": 1,
        "clocks": {"0": None, "1": 60.0}, "clock": {"0": {"used": 2.5, "left": None, "credit": 0.0}},
    }
    assert viewer.events[2][1]["clock"] is None, "a move without a clock"
    assert viewer.events[3][1] == {
        "result": {"scores": [1.0, 0.0], "reason": "end"}, "outcome": "alice won", "state": state(3), "match_id": None
    }
    assert viewer.ended and table.viewers == set()


def test_a_late_viewer_sees_the_whole_history():
    clock = task.Clock()
    hub = LiveHub(clock)
    table = hub.open("kalaha", SEATS, {}, state(0))
    for n in range(1, 4):
        table.moved(n % 2, f"A{n}", state(n), (n + 1) % 2)
    late = Viewer()
    table.add(late)
    (name, snap), = late.events
    assert name == "snapshot"
    assert [m["move"] for m in snap["moves"]] == ["A1", "A2", "A3"]
    assert snap["state"] == state(3) and snap["initial_state"] == state(0) and snap["turn"] == 3
    table.moved(0, "A4", state(4), 1)
    assert late.events[-1][1]["n"] == 4


def test_a_finished_table_lingers_then_is_forgotten():
    clock = task.Clock()
    hub = LiveHub(clock, linger=60)
    table = hub.open("kalaha", SEATS, {}, state(0))
    table.finish((0.5, 0.5), "end")
    assert table.id not in hub.tables and hub.table(table.id) is table
    assert hub.games() == {"games": []}
    viewer = Viewer()
    table.add(viewer)  # a page opened just after the end still sees it
    assert [n for n, _ in viewer.events] == ["snapshot", "end"] and viewer.ended
    clock.advance(60)
    assert hub.table(table.id) is None


def test_finish_stores_the_record_and_tells_the_match_id():
    clock = task.Clock()
    clock.advance(500)
    store = Store()
    hub = LiveHub(clock, store)
    table = hub.open("kalaha", SEATS, {"pits": 6}, state(0))
    viewer, lister = Viewer(), Viewer()
    table.add(viewer)
    hub.add_list_viewer(lister)
    clock.advance(1)
    table.moved(0, "A1", state(1), 1)
    clock.advance(2)
    table.finish((0.0, 1.0), "resign", state(2), rated=True)
    (record,) = store.records
    assert record.game == "kalaha" and record.seats == tuple(SEATS) and record.table == table.id
    assert (record.started, record.ended, record.scores, record.reason, record.rated) == (500, 503, (0.0, 1.0), "resign", True)
    assert record.initial_state == state(0) and record.options == {"pits": 6}
    assert [(m.n, m.seat, m.move, m.t, m.state) for m in record.moves] == [(1, 0, "A1", 1.0, state(1))]
    assert [n for n, _ in viewer.events] == ["snapshot", "move"]  # the end waits for the store
    store.pending[0].callback(42)
    assert viewer.events[-1] == (
        "end",
        {
            "result": {"scores": [0.0, 1.0], "reason": "resign"},
            "outcome": "guest2 won: alice resigned",
            "state": state(2),
            "match_id": 42,
        },
    )
    clock.advance(1)
    assert ("matches", {"matches": [{"id": 1, "game": "kalaha"}]}) in lister.events


def test_a_failed_store_is_logged_and_the_viewers_still_see_the_end():
    clock = task.Clock()
    hub = LiveHub(clock, Store(fail=True))
    table = hub.open("kalaha", SEATS, {}, state(0))
    viewer = Viewer()
    table.add(viewer)
    with capturedLogs() as events:
        table.finish((1.0, 0.0), "end", rated=False)
    assert any("could not be stored" in e.get("log_format", "") for e in events)
    assert viewer.events[-1][1]["match_id"] is None and viewer.ended


def test_the_list_of_games_is_sent_at_once_then_coalesced():
    clock = task.Clock()
    hub = LiveHub(clock, coalesce=0.5)
    lister = Viewer()
    hub.add_list_viewer(lister)
    assert lister.events == [("games", {"games": []})]
    table = hub.open("kalaha", SEATS, {}, state(0))
    for n in range(10):
        table.moved(0, "A1", state(n), 1)
    clock.advance(0)
    assert len(lister.events) == 2 and lister.events[1][1]["games"][0]["turn"] == 10
    table.moved(0, "A1", state(11), 1)
    clock.advance(0.2)
    assert len(lister.events) == 2  # not within 0.5 s of the last one
    clock.advance(0.3)
    assert len(lister.events) == 3 and lister.events[2][1]["games"][0]["turn"] == 11
    hub.remove_list_viewer(lister)
    table.moved(0, "A1", state(12), 1)
    clock.advance(1)
    assert len(lister.events) == 3


def test_removed_viewers_get_nothing_more():
    clock = task.Clock()
    hub = LiveHub(clock)
    table = hub.open("kalaha", SEATS, {}, state(0))
    viewer = Viewer()
    table.add(viewer)
    table.remove(viewer)
    table.moved(0, "A1", state(1), 1)
    assert [n for n, _ in viewer.events] == ["snapshot"] and table.summary()["spectators"] == 0


def test_an_endless_game_keeps_at_most_max_moves():
    clock = task.Clock()
    store = Store()
    hub = LiveHub(clock, store, max_moves=3)
    table = hub.open("combat", SEATS, {}, state(0))
    viewer = Viewer()
    table.add(viewer)
    for n in range(1, 6):
        table.moved(n % 2, f"m{n}", state(n), 1 - n % 2)
    assert [m.n for m in table.moves] == [1, 2, 3] and table.summary()["turn"] == 5
    assert [d["n"] for name, d in viewer.events if name == "move"] == [1, 2, 3, 4, 5]  # live: every move
    table.finish((0.5, 0.5), "draw", state(6))
    (record,) = store.records
    assert [m.move for m in record.moves] == ["m1", "m2", "m3"] and record.extra["moves_not_kept"] == 2
    assert record.extra["final_state"] == state(6)
