"""Connect Four feeds the live hub: a table per game (people, engines, every game of an engine
match), every move with the spectator state, the end stored as a match (accounts and engines
rated; guests, named or not, and aborted games not)."""

from __future__ import annotations

import random

from twisted.internet.task import Clock

from gamed.config import Limits, PlayersConfig
from gamed.connect4 import rules
from gamed.connect4.service import Connect4Service, Connect4Settings
from gamed.observers import LiveHub
from gamed.players import Players
from tests.memaccounts import MemoryAccounts
from tests.memstore import MemoryStore
from tests.memclient import Client


def make(accounts=None, grace=None):
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    players = Players(PlayersConfig(), accounts, clock)
    service = Connect4Service(Connect4Settings(board=False), Limits(), clock, rng=random.Random(3), hub=hub,
                              players=players, grace=grace)
    return clock, hub, store, service


def greeted(service, *lines):
    c = Client(service)
    c.send(*lines)
    c.read()
    return c


def test_spectator_state():
    board = rules.Board(4, 4)
    assert rules.spectator_state(board) == {
        "width": 4, "height": 4, "cells": [[None] * 4] * 4, "to_move": 0, "win_line": None,
        "win_lines": [],
    }
    for column in (1, 2, 1, 2, 1, 2, 1):
        board.drop(column)
    state = rules.spectator_state(board)
    assert state["cells"][1] == [0, 0, 0, 0] and state["cells"][2] == [1, 1, 1, None]
    assert state["to_move"] is None and state["win_line"] == [[1, 0], [1, 3]]
    assert state["win_lines"] == [[[1, 0], [1, 3]]]


def test_a_game_between_people_is_watched_and_recorded():
    accounts = MemoryAccounts()
    token = accounts.add("alice")
    clock, hub, store, service = make(accounts)
    alice = greeted(service, f"LOGIN alice {token}", "TABLE t")
    bob = greeted(service, "TABLE t")
    (table,) = hub.tables.values()
    assert table.id == "connect4-1" and [s.name for s in table.seats] == ["alice", "guest2"]
    for column in (3, 4, 3, 4, 3, 4):
        (alice if table.to_move == 0 else bob).send(str(column))
        assert table.state["cells"][column][-1] is None
    assert [m.move for m in table.moves] == ["3", "4", "3", "4", "3", "4"]
    alice.send("3")
    (record,) = store.records
    assert record.game == "connect4" and record.scores == (1.0, 0.0) and record.reason == "four"
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("alice", True, "player"), ("guest2", False, "guest")]
    assert record.moves[-1].state["win_line"] == [[3, 0], [3, 3]]
    assert record.options == {"width": 7, "height": 6, "move_time": 60.0, "opening": []} and record.rated
    assert not hub.tables


def test_a_timeout_is_stored_as_a_rated_loss_for_the_player_out_of_time():
    clock, hub, store, service = make()
    alice = greeted(service, "NAME alice", "TABLE t")
    greeted(service, "NAME bob", "TABLE t")
    alice.send("3")
    clock.advance(60)
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("timeout", True, (1.0, 0.0))


def test_an_engine_game_from_an_opening_and_an_abort():
    clock, hub, store, service = make(grace=30)
    carol = greeted(service, "NAME carol", "PLAY gamed:1 FIRST 5x4 FROM 0,0")
    (table,) = hub.tables.values()
    assert table.options["opening"] == [0, 0] and table.initial_state["cells"][0] == [0, 1, None, None]
    carol.drop()  # before her first move: away, then nothing was played when the grace ends
    assert not store.records
    clock.advance(30)
    (record,) = store.records
    assert record.reason == "disconnect" and not record.rated and record.scores == (0.0, 0.0)
    assert [(s.name, s.kind, s.rated) for s in record.seats] == [("carol", "guest", False), ("gamed:1", "engine", True)]


def test_every_game_of_an_engine_match_is_recorded():
    clock, hub, store, service = make()
    greeted(service, "MATCH gamed:0 gamed:4 3 4x4")
    assert len(store.records) == 3
    first = [r.seats[0].name for r in store.records]
    assert first == ["gamed:0", "gamed:4", "gamed:0"]
    for record in store.records:
        assert record.options["match_game"] in (1, 2, 3) and record.rated
        board = rules.Board(4, 4)
        for move in record.moves:
            board.drop(int(move.move))
        assert board.is_over() and sum(record.scores) == 1.0


def test_a_match_game_cut_short_by_a_shutdown_is_recorded_as_shutdown():
    from twisted.internet.defer import Deferred

    clock, store = Clock(), MemoryStore()
    searches: list[tuple[Deferred, object]] = []

    def think(work):  # a search still running in its thread when the daemon stops
        d = Deferred()
        searches.append((d, work))
        return d

    service = Connect4Service(Connect4Settings(board=False), Limits(), clock, rng=random.Random(3), think=think,
                              hub=LiveHub(clock, store))
    watcher = greeted(service, "MATCH gamed:0 gamed:4 2 4x4")
    assert len(searches) == 1 and not store.records
    service.abort_games()
    d, work = searches.pop()
    d.callback(work())  # the search ends after the stop
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("shutdown", False, (0.0, 0.0))
    assert any(line.startswith("MATCHEND gamed:0 0 gamed:4 0 0 stopped: the server is shutting down")
               for line in watcher.read()), "the watcher is told why"
