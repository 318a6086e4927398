"""Kalaha games feed the live hub: a table per game, every move with the spectator state, the end
stored as a match (accounts and the computer rated; guests and aborted games not)."""

from __future__ import annotations

from twisted.internet.task import Clock

from gamed.kalaha import rules
from gamed.observers import LiveHub
from tests.memaccounts import MemoryAccounts
from tests.memstore import MemoryStore
from tests.kalaha.harness import Client, logged_in, make_service, pair


def make(clock=None, **settings):
    clock = clock or Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    accounts = MemoryAccounts()
    service = make_service(clock, seed=3, hub=hub, accounts=accounts, **settings)
    service.accounts = accounts  # for the tests below
    return clock, hub, store, service


def accounts_pair(service, names=("alice", "bob")):
    """Two logged-in accounts seated at a game (A, B), their reads emptied."""
    clients = [logged_in(service, name, service.accounts.add(name), f"TABLE t-{names[0]}") for name in names]
    for client in clients:
        client.read()
    return clients


def test_spectator_state_of_the_opening_and_after_a_move():
    start = rules.Position.start()
    assert rules.spectator_state(start) == {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}
    after = rules.play(start, 3).position  # A3: 6 stones reach A4..A6, the store, B1, B2
    assert rules.spectator_state(after) == {
        "pits": [[6, 6, 0, 7, 7, 7], [7, 7, 6, 6, 6, 6]],
        "stores": [1, 0],
        "to_move": 1,
    }
    assert rules.spectator_state(after, over=True)["to_move"] is None


def test_a_game_is_a_live_table_and_a_stored_match():
    clock, hub, store, service = make()
    alice, bob = accounts_pair(service)
    (table,) = hub.tables.values()
    assert table.id == "kalaha-1" and [(s.name, s.rated, s.kind) for s in table.seats] == [
        ("alice", True, "player"),
        ("bob", True, "player"),
    ]
    assert table.to_move == 0 and table.clocks == {"0": 60.0, "1": None}
    alice.send("MOVE 1")  # an extra turn: the last stone falls into A's store
    assert table.to_move == 0
    clock.advance(2)
    alice.send("MOVE 2")
    assert [(m.seat, m.move) for m in table.moves] == [(0, "A1"), (0, "A2")]
    assert table.moves[0].state == rules.spectator_state(rules.play(rules.Position.start(), 1).position)
    assert table.to_move == 1
    bob.send("RESIGN")
    assert not hub.tables and hub.table("kalaha-1") is table
    (record,) = store.records
    assert (record.game, record.scores, record.reason, record.rated) == ("kalaha", (1.0, 0.0), "resign", True)
    assert [m.move for m in record.moves] == ["A1", "A2"] and record.moves[1].t == 2.0
    assert record.initial_state == {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}
    assert table.match_id == 1


def test_guests_named_or_not_are_not_rated_and_a_disconnect_before_any_move_aborts_unrated():
    clock, hub, store, service = make(move_time=0)
    b = Client(service)
    b.send("NAME bob")
    a = Client(service)
    (table,) = hub.tables.values()
    assert [(s.name, s.rated, s.kind) for s in table.seats] == [("bob", False, "guest"), ("guest2", False, "guest")]
    a.drop()
    clock.advance(60)
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("disconnect", False, (0.0, 0.0))


def test_a_timeout_is_stored_as_a_rated_loss_for_the_player_out_of_time():
    clock, hub, store, service = make()
    alice, bob = accounts_pair(service)
    alice.send("A3")
    clock.advance(60)
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("timeout", True, (1.0, 0.0))
    assert [(s.name, s.rated) for s in record.seats] == [("alice", True), ("bob", True)]


def test_a_seat_not_back_in_time_is_stored_as_a_rated_forfeit():
    clock, hub, store, service = make(move_time=300)
    alice, bob = accounts_pair(service)
    alice.send("A3")
    bob.drop()
    clock.advance(60)
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("forfeit", True, (1.0, 0.0))
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("alice", True, "player"), ("bob", True, "player")]
    assert hub.table("kalaha-1").outcome == "alice won: bob forfeited"


def test_the_computer_is_a_rated_program_seat():
    clock, hub, store, service = make()
    person = Client(service)
    person.send("NAME carol", "COMPUTER")
    clock.advance(0)
    (table,) = hub.tables.values()
    assert [(s.name, s.kind, s.rated) for s in table.seats] == [
        ("carol", "guest", False),
        ("computer-medium", "program", True),
    ]
