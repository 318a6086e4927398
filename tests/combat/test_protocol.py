"""The Combat adapter and service in memory: connections are seated in arrival order, the table's
messages reach the right sockets as bytes, fatal input closes only that connection."""

from __future__ import annotations

import random

from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.maps import shipped_maps
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits
from gamed.stratego.rules import Unit
from tests.memclient import Client

DEFAULT = shipped_maps()["Default"]
# The UCC default army, by row, as Combat unit codes (front row last for seat 0).
ROWS = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]
CODES = {"F": Unit.FLAG, "B": Unit.BOMB, "s": Unit.SPY} | {str(9 - i): Unit.SCOUT + i for i in range(9)}


def placement(seat: int) -> dict[int, int]:
    rows = ROWS if seat == 0 else list(reversed(ROWS))
    first = 0 if seat == 0 else 60
    return {first + 10 * r + c: CODES[t] for r, row in enumerate(rows) for c, t in enumerate(row)}


class Player:
    """A Combat client: sends client messages, reads server messages."""

    def __init__(self, service):
        self.client = Client(service)
        self.parser = wire.ClientParser()

    def send(self, message) -> None:
        self.client.raw(wire.encode_client(message))

    def read(self) -> list:
        data = self.client.transport.value()
        self.client.transport.clear()
        return self.parser.feed(data)


def make_service(**kwargs) -> CombatService:
    return CombatService(Limits(), Clock(), rng=random.Random(1), **kwargs)


def test_two_players_are_seated_and_play_a_first_move():
    service = make_service()
    alice = Player(service)
    first = alice.read()
    assert first[0] == wire.MsgSeat(0, 2) and isinstance(first[1], wire.MsgPlayers)
    assert first[2] == wire.ReqOptions(), "the first joiner is the host"
    bob = Player(service)
    assert bob.read()[0] == wire.MsgSeat(1, 2)
    alice.read()
    alice.send(wire.HostOptions.of(DEFAULT))
    for p in (alice, bob):
        got = p.read()
        assert wire.MsgOptions(DEFAULT) in got and wire.ReqSetup() in got
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    assert any(isinstance(m, wire.MsgStart) for m in alice.read())
    bob.read()
    alice.send(wire.ReqMove(30, 40))  # seat 0's scout steps forward
    assert alice.read() == bob.read() == [wire.MsgMove(30, 40)]
    bob.send(wire.ReqMove(61, 51))  # seat 1's lieutenant at (1,6) steps up
    assert alice.read() == bob.read() == [wire.MsgMove(61, 51)]
    bob.send(wire.ReqMove(62, 52))  # out of turn: seat 0 plays now
    assert alice.read() == bob.read() == [wire.MsgMoveError(-3, 1)]


def test_a_third_connection_starts_a_second_table():
    service = make_service()
    players = [Player(service) for _ in range(3)]
    assert players[2].read()[0] == wire.MsgSeat(0, 2)
    assert len(service.tables) == 2


def test_fatal_input_closes_only_that_connection_and_frees_the_seat():
    service = make_service()
    alice, bob = Player(service), Player(service)
    alice.read()
    bob.read()
    bob.client.raw(wire.encode_int(99))  # an unknown opcode
    assert bob.client.lost
    got = alice.read()
    assert isinstance(got[0], wire.MsgPlayers) and not alice.client.lost
    carol = Player(service)
    assert carol.read()[0] == wire.MsgSeat(1, 2), "the freed seat is taken by the next joiner"


def test_a_table_everyone_left_is_removed():
    service = make_service()
    alice = Player(service)
    alice.client.drop()
    assert service.tables == {}


def started(service):
    """Two players at a started game on the Default map (their reads emptied)."""
    alice, bob = Player(service), Player(service)
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    alice.read()
    bob.read()
    return alice, bob


def test_the_seat_to_move_loses_when_its_move_time_runs_out():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0), clock, CombatConfig(move_time=60), rng=random.Random(1))
    alice, bob = started(service)
    clock.advance(50)
    alice.send(wire.ReqMove(30, 40))  # in time: bob's clock starts now
    alice.read()
    bob.read()
    clock.advance(59)
    assert bob.read() == []
    clock.advance(1)
    got = bob.read()
    assert got[0] == wire.MsgGameover(0) and isinstance(got[1], wire.MsgSync), "seat 0 wins on time"
    assert alice.read()[0] == wire.MsgGameover(0)


def test_a_dropped_player_may_come_back_within_the_grace_period():
    clock = Clock()
    config = CombatConfig(move_time=0, rejoin_grace=120)
    service = CombatService(Limits(idle_timeout=0), clock, config, rng=random.Random(1))
    alice, bob = started(service)
    bob.client.drop()
    alice.read()
    clock.advance(100)
    back = Player(service)
    got = back.read()
    assert got[0] == wire.MsgSeat(1, 2), "the next joiner takes the kept seat"
    assert any(isinstance(m, wire.MsgSync) for m in got) and isinstance(got[-1], wire.MsgStart)
    clock.advance(100)
    alice.send(wire.ReqMove(30, 40))
    assert back.read() == [wire.MsgMove(30, 40)], "the game goes on with the returned player"


def test_a_seat_not_back_in_time_loses():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0), clock, CombatConfig(move_time=0, rejoin_grace=120), rng=random.Random(1))
    alice, bob = started(service)
    bob.client.drop()
    alice.read()
    clock.advance(120)
    assert alice.read()[0] == wire.MsgGameover(0)
