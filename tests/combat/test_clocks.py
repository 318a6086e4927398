"""GGZ Combat's time controls, in memory on a task.Clock: banks with an increment, the setup
budget of the placement, the game cap. The binary protocol stays as it was: the clocks show on the
web (the live table) and in the records only."""

from __future__ import annotations

from gamed.combat import wire
from gamed.timecontrol import parse
from tests.combat.test_live import make, named, start
from tests.combat.test_protocol import DEFAULT, placement


def test_each_seat_has_its_bank_the_mover_pays_and_gets_the_increment():
    clock, hub, store, service = make(clock=parse("2m+5s"))
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    (table,) = hub.tables.values()
    assert table.options["clock"] == "2m+5s"
    clock.advance(30)
    alice.send(wire.ReqMove(30, 40))
    assert table.clocks == {"0": 95.0, "1": 120.0}
    assert table.moves[-1].clock == {"0": {"used": 30.0, "left": 95.0, "credit": 0.0}}
    clock.advance(120)  # bob's whole bank
    (record,) = store.records
    assert (record.scores, record.reason) == ((1.0, 0.0), "timeout")
    assert record.extra["detail"] == "seat 1 (bob) ran out of time (2m+5s)"


def test_a_seat_that_has_not_placed_its_army_within_the_setup_budget_gets_a_random_placement():
    clock, hub, store, service = make(clock=parse("10m,setup=1m"))
    alice, bob = named(service, "alice"), named(service, "bob")
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    alice.read(), bob.read()
    clock.advance(59.9)
    assert bob.read() == [] and not hub.tables, "still placing"
    clock.advance(0.1)
    got = bob.read()
    assert isinstance(got[0], wire.MsgSync) and got[-1] == wire.MsgStart(), got
    assert alice.read()[-1] == wire.MsgStart()
    (table,) = hub.tables.values()
    assert table.options["clock"] == "10m,setup=1m"
    alice.send(wire.ReqMove(30, 40))
    assert [type(m) for m in bob.read()] == [wire.MsgMove], "the game is played as usual"


def test_the_game_cap_ends_the_game_as_a_draw():
    clock, hub, store, service = make(clock=parse("1m,game=90s"))
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    clock.advance(50)
    alice.send(wire.ReqMove(30, 40))
    clock.advance(40)
    (record,) = store.records
    assert record.scores == (0.5, 0.5) and record.reason == "timeout", "a draw"
    assert record.extra["detail"] == "the game reached its time cap (1m30s)"
    assert any(isinstance(m, wire.MsgGameover) for m in bob.read())
