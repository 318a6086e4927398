"""Tournament openings in Kalaha: the book of start positions (pure rules), and a reserved table
with an opening whose game starts from that position, told to both players as the moves that
reach it, shown to spectators and kept in the records; an ordinary table is unchanged."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from gamed.kalaha import rules
from gamed.kalaha.rules import A, B, Position
from gamed.identity import Identity
from gamed.observers import LiveHub
from gamed.seats import Placement
from tests.kalaha.harness import Client, make_service
from tests.memstore import MemoryStore


def reach(number: int) -> Position:
    position = Position.start()
    for move in rules.play_moves(rules.opening(number)):
        position = move.position
    return position


def test_opening_zero_is_the_usual_start_and_the_others_are_distinct_open_balanced_positions():
    assert rules.opening(0) == ()
    count = rules.opening_count()
    assert count == 220  # as docs/protocols/kalaha.md says
    positions = [reach(n) for n in range(1, count + 1)]
    assert len(set(positions)) == count and Position.start() not in positions
    for p in positions:
        assert not p.over and abs(p.store(A) - p.store(B)) <= 1 and sum(p.pits) == rules.TOTAL_STONES
    # two sowings deep first, then three; every opening is legal from the start
    assert [len(rules.opening(n)) for n in (1, count)] == [2, 3]
    # the book starts again after its last opening: any pair number has an opening
    assert rules.opening(count + 1) == rules.opening(1) and rules.opening(5 * count + 7) == rules.opening(7)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", None, True])
def test_an_opening_number_is_a_whole_number_from_zero(bad):
    with pytest.raises(ValueError):
        rules.opening(bad)


def test_play_moves_plays_each_pit_for_the_side_to_move():
    a1, a2 = rules.play_moves((1, 2))  # the worked check of the rules: A1 (extra turn), then A2
    assert a1.side == A and a1.extra_turn and a2.side == A
    assert a2.position == Position((0, 0, 8, 8, 8, 8, 2, 7, 7, 6, 6, 6, 6, 0), B)
    with pytest.raises(rules.IllegalMove):
        rules.play_moves((1, 1))  # A1 is empty after A1


class Placing:
    """A factory that places its connections at a reserved table, as the hosted-game runner does
    (gamed.hosting.runner), with their drawings off (the harness's default)."""

    def __init__(self, service, placement: Placement):
        self.service, self.placement = service, placement

    def buildProtocol(self, addr):  # noqa: N802
        protocol = self.service.factory.buildProtocol(addr)
        protocol.placement = self.placement
        return protocol


def seated(service, opening: int | None, key="t1", names=("alice", "bob")):
    """Two hosted bots' connections at the reserved table ``key`` (opening ``opening``)."""
    service.reserve_table(key, list(names), opening)
    return [Client(service, factory=Placing(service, Placement(Identity(name, "bot"), key))) for name in names]


def start_lines(client) -> list[str]:
    lines = client.read()
    return lines[lines.index(next(l for l in lines if l.startswith("START"))):]


def follow(lines: list[str]) -> Position:
    """What a program that tracks the board from the PLAYED lines alone makes of ``lines``."""
    position = Position.start()
    for line in lines:
        words = line.split()
        if words[0] == "PLAYED":
            assert words[1] == position.to_move
            position = rules.play(position, int(words[2][1])).position
    return position


def position_line(p: Position) -> str:
    return "POSITION " + " ".join(map(str, p.pits)) + " " + p.to_move


def test_a_reserved_table_with_an_opening_starts_from_it_and_tells_both_players_its_moves():
    clock = Clock()
    service = make_service(clock)
    alice, bob = seated(service, 1)
    a1, b1 = rules.opening(1)  # A2, then B1
    assert (a1, b1) == (2, 1)
    first = rules.play(Position.start(), a1)
    second = rules.play(first.position, b1)
    expected_a = [
        "START 1 A bob",
        position_line(Position.start()),
        "TURN A alice",
        "PLAYED A A2 SOWN 6",
        position_line(first.position),
        "TURN B bob",
        f"PLAYED B B1 SOWN {second.sown}",
        position_line(second.position),
        "TURN A alice",
        "YOURMOVE 60 " + " ".join(f"A{n}" for n in second.position.legal_moves()),
    ]
    got_a, got_b = start_lines(alice), start_lines(bob)
    assert got_a == expected_a
    assert got_b == ["START 1 B alice", *expected_a[1:-1]]
    # a program with its drawings off that follows the PLAYED lines knows the position
    assert follow(got_a) == follow(got_b) == second.position
    game = service.games[1]
    assert game.position == second.position and game.moves == [] and len(game.opening) == 2
    # the game goes on from there as usual
    alice.send(f"MOVE {second.position.legal_moves()[0]}")
    assert alice.read()[0].startswith("PLAYED A ")
    assert len(game.moves) == 1


def test_both_games_of_a_pair_start_from_the_same_opening_and_distinct_openings_differ():
    service = make_service(Clock())
    starts = {}
    for number, key, names in ((3, "g1", ("ann", "ben")), (3, "g2", ("ben", "ann")), (4, "g3", ("ann", "ben"))):
        clients = seated(service, number, key, names)
        lines = [start_lines(c) for c in clients]
        game = max(service.games.values(), key=lambda g: g.id)
        assert [game.names[A], game.names[B]] == list(names)  # the colours as reserved
        # what both players are told of the opening, but the names of the TURN lines
        told = [[line for line in got[1:-1] if not line.startswith("TURN")] for got in lines]
        assert told[0] == told[1]
        starts[key] = (game.position, told[0])
        for c in clients:
            c.send("QUIT")
    assert starts["g1"] == starts["g2"] and starts["g1"][0] == reach(3)
    assert starts["g3"][0] == reach(4) != starts["g1"][0]


def test_an_ordinary_or_reserved_table_without_an_opening_starts_as_always():
    service = make_service(Clock())
    alice, bob = seated(service, None)
    lines = start_lines(alice)
    assert lines == ["START 1 A bob", position_line(Position.start()), "TURN A alice", "YOURMOVE 60 A1 A2 A3 A4 A5 A6"]
    assert service.games[1].opening == () and service.table_openings == {}
    # opening 0 is the usual start too
    carl, dave = seated(service, 0, "t2", ("carl", "dave"))
    assert start_lines(carl) == ["START 2 A dave", lines[1], "TURN A carl", lines[3]]


def test_the_opening_is_taken_once_and_released_with_its_table():
    service = make_service(Clock())
    service.reserve_table("t1", ["x", "y"], 5)
    service.release_table("t1")
    assert service.table_openings == {}
    alice, bob = seated(service, 5)
    assert service.table_openings == {}  # taken by the game


def test_spectators_and_the_records_see_the_opening_position_and_only_the_games_moves():
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    service = make_service(clock, hub=hub)
    alice, bob = seated(service, 1)
    (table,) = hub.tables.values()
    start = reach(1)
    assert table.options["opening"] == ["A2", "B1"]
    assert table.initial_state == rules.spectator_state(start)
    pit = start.legal_moves()[0]
    alice.send(f"MOVE {pit}")
    assert [m.move for m in table.moves] == [f"A{pit}"]
    alice.send("RESIGN")
    (record,) = store.records
    assert record.options["opening"] == ["A2", "B1"] and record.initial_state == rules.spectator_state(start)
    assert [m.move for m in record.moves] == [f"A{pit}"]


def test_an_ordinary_games_record_has_no_opening():
    clock = Clock()
    store = MemoryStore()
    service = make_service(clock, hub=LiveHub(clock, store))
    alice, bob = seated(service, None)
    alice.send("RESIGN")
    (record,) = store.records
    assert "opening" not in record.options and record.initial_state == rules.spectator_state(Position.start())
