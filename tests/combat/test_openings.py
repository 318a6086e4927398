"""Tournament openings in GGZ Combat: opening n is a shipped map, fixed by the server at a
reserved table (every seat receives it as CBT_MSG_OPTIONS on joining, nobody is asked for options,
a host's options are ignored); the setups stay the clients'. A table without an opening asks its
host as always."""

from __future__ import annotations

import random

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from gamed.combat import maps
from gamed.combat.service import CombatService
from gamed.combat.table import CombatTable
from gamed.combat.wire import HostOptions, MsgOptions, MsgSeat, MsgPlayers, ReqOptions, ReqSetup, State
from gamed.config import CombatConfig, Limits
from gamed.identity import Identity
from gamed.observers import LiveHub
from gamed.seats import Placement
from tests.combat.test_table import DEFAULT, setup_of, to
from tests.memstore import MemoryStore


def test_the_openings_maps_are_the_plain_shipped_maps_in_name_order_and_go_round():
    plain = [m for name, m in sorted(maps.shipped_maps().items()) if not m.options]
    assert maps.opening_maps(2) == tuple(plain) and len(plain) == 11
    assert maps.opening_map(0) is None  # the host chooses, as always
    assert [maps.opening_map(n).name for n in (1, 5, 11, 12)] == ["8x8", "Default", "Small", "8x8"]
    assert maps.opening_maps(3) == () and maps.opening_map(2, seats=3) is None  # no 3-seat map ships
    with pytest.raises(ValueError):
        maps.opening_map(-1)


def test_a_table_with_fixed_options_tells_each_joiner_and_asks_nobody():
    table = CombatTable(2, rng=random.Random(1))
    small = maps.opening_map(11)
    table.fix_options(small)
    out = table.join(0, "alice")
    assert [type(m) for m in to(out, 0)] == [MsgSeat, MsgPlayers, MsgOptions]  # no REQ_OPTIONS
    assert to(out, 0)[2] == MsgOptions(small) and table.host == 0
    assert table.receive(0, HostOptions.of(DEFAULT)) == [] and table.options == small  # ignored
    out = table.join(1, "bob")
    assert MsgOptions(small) in to(out, 1) and ReqSetup() in to(out, 0) and ReqSetup() in to(out, 1)
    assert table.state is State.SETUP
    table.receive(0, setup_of(small, 0))
    table.receive(1, setup_of(small, 1, reverse=True))
    assert table.state is State.PLAYING


def test_fixed_options_are_checked_and_only_fixed_before_anyone_joins():
    table = CombatTable(2, rng=random.Random(1))
    table.join(0, "alice")
    with pytest.raises(ValueError):
        table.fix_options(DEFAULT)
    three = CombatTable(3, rng=random.Random(1))
    with pytest.raises(ValueError):
        three.fix_options(DEFAULT)  # a two-seat map at a three-seat table fails the check


def test_the_host_leaving_a_fixed_table_makes_no_new_host_choose():
    table = CombatTable(3, rng=random.Random(1))
    table.join(0, "alice")
    table.join(1, "bob")
    assert table.receive(0, HostOptions.of(DEFAULT)) != []  # an ordinary table: the host chooses
    fixed = CombatTable(2, rng=random.Random(1))
    fixed.fix_options(DEFAULT)
    fixed.join(0, "alice")
    fixed.leave(0)
    out = fixed.join(1, "bob")
    assert ReqOptions() not in to(out, 1) and fixed.options == DEFAULT


def placed(service, name, table):
    protocol = service.player_factory.buildProtocol(None)
    protocol.placement = Placement(Identity(name, "bot"), table)
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(b"PLAY\r\n")
    return protocol


def test_a_reserved_table_with_an_opening_plays_its_map_and_one_without_asks_its_host():
    clock = Clock()
    store = MemoryStore()
    service = CombatService(Limits(), clock, CombatConfig(records=""), hub=LiveHub(clock, store))
    service.reserve_table("g1", ["ann", "bob"], 2)
    service.reserve_table("g2", ["bob", "ann"], 2)
    service.reserve_table("g3", ["ann", "bob"], 3)
    service.reserve_table("g4", ["ann", "bob"], None)
    tables = {}
    for key in ("g1", "g2", "g3", "g4"):
        first, second = service._reserved[key]
        placed(service, second, key)  # the later seat first: each still gets its reserved seat
        placed(service, first, key)
        (entry,) = [e for e in service._tables.values() if e.name == key]
        tables[key] = entry.table
    bridge, checkers = maps.opening_map(2), maps.opening_map(3)
    assert bridge.name == "Bridge" and checkers.name == "Checkers"
    assert tables["g1"].options == tables["g2"].options == bridge and tables["g3"].options == checkers
    for key in ("g1", "g2", "g3"):
        assert tables[key].state is State.SETUP  # the setups are the programs' own
    assert tables["g4"].options is None and tables["g4"].state is State.WAIT  # its host is asked
    assert [s.name for s in tables["g2"].seats] == ["bob", "ann"]  # the seats swapped
    assert not service.table_openings
    # the setups made, the spectators and the records see the opening and its map
    entry = next(e for e in service._tables.values() if e.name == "g1")
    for seat, protocol in sorted(entry.sitting.items()):
        service.deliver(protocol.seating, entry.table.receive(seat, setup_of(bridge, seat, reverse=seat == 1)))
    assert entry.table.state is State.PLAYING and entry.live.options["opening"] == 2
    assert entry.live.options["map"] == "Bridge"


def test_release_forgets_the_opening():
    service = CombatService(Limits(), Clock(), CombatConfig(records=""))
    service.reserve_table("g1", ["ann", "bob"], 4)
    service.release_table("g1")
    assert not service.table_openings and not service.table_waiting("g1")


def test_the_protocol_document_lists_the_openings_maps_in_order():
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocols" / "combat.md"
    text = " ".join(doc.read_text().split())
    listed = re.search(r"in name order \((.+?); opening 12 is `8x8` again\)", text).group(1)
    assert [name.strip("` ") for name in listed.split(",")] == [m.name for m in maps.opening_maps(2)]
    assert maps.opening_map(12).name == "8x8"
