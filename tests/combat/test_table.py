"""The GGZ Combat table state machine (gamed.combat.table): the §12.6 example message for message
and byte for byte (§16 V12), every transition of §12, client messages by state (§13), the table's
rows of §15.3, the sequence vectors of §16 (V8, V10, V11, V13's sender check) and a hypothesis
property that no SYNC or ATTACK reveals an enemy unit type the options keep hidden."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.combat.maps import shipped_maps
from gamed.combat.table import CombatTable
from gamed.combat.wire import (
    CombatOptions,
    HostOptions,
    MsgAttack,
    MsgGameover,
    MsgMove,
    MsgMoveError,
    MsgOptions,
    MsgPlayers,
    MsgSeat,
    MsgSetup,
    MsgStart,
    MsgSync,
    Numbering,
    PlayerSeat,
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    State,
    encode,
    encode_all,
    write_setup,
)
from gamed.stratego.rules import Opt

DEFAULT = shipped_maps()["Default"]
V4 = bytes.fromhex(
    "000000030000007d0b0b111111111111111111111111111111111111111111111111111111111111111111111111111111"
    "110101030301010303010101010303010103030101212121212121212121212121212121212121212121212121212121"
    "212121212121212121212121210207020906050505040302020245666762766d75010100"
)
V9_SEAT0 = bytes.fromhex(
    "00000005000000291112121212121213141414141414141415151515151616161617171717181818181919191a1a1b1c00"
)
V9_SEAT1 = bytes.fromhex(
    "00000005000000292c2b2a2a29292928282828272727272626262625252525252424242424242424232222222222222100"
)
ALICE = PlayerSeat(SeatKind.PLAYER, "alice")
BOB = PlayerSeat(SeatKind.PLAYER, "bob")
OPEN = PlayerSeat(SeatKind.OPEN)


def rank_order(options: CombatOptions, seat: int, reverse: bool = False) -> dict[int, int]:
    """The army in rank order over the seat's zone (reverse: strongest first), as in §16 V9."""
    codes = [code for code, count in enumerate(options.army) for _ in range(count)]
    if reverse:
        codes.reverse()
    return dict(zip(options.zone(seat), codes))


def setup_of(options: CombatOptions, seat: int, reverse: bool = False) -> MsgSetup:
    return MsgSetup(write_setup(options, seat, rank_order(options, seat, reverse)))


def to(out, seat):
    """The messages of one seat's connection, in order."""
    return [message for recipient, message in out if recipient == seat]


def make_table(seats=2, **kwargs) -> tuple[CombatTable, list[str]]:
    lines: list[str] = []
    table = CombatTable(seats, rng=kwargs.pop("rng", random.Random(1)), log=lines.append, **kwargs)
    return table, lines


def with_options(options: CombatOptions, mask: int) -> CombatOptions:
    return CombatOptions(options.width, options.height, options.types, options.army, mask, options.name)


def playing_default(mask: int = 0) -> CombatTable:
    """alice (seat 0) and bob (seat 1) on the Default map, set up as in V9, in PLAYING."""
    table, _ = make_table()
    options = with_options(DEFAULT, mask)
    table.join(0, "alice")
    table.receive(0, HostOptions.of(options))
    table.join(1, "bob")
    if not mask & Opt.RANDOM_SETUP:
        table.receive(0, setup_of(options, 0))
        table.receive(1, setup_of(options, 1, reverse=True))
    assert table.state is State.PLAYING
    return table


def line_map(seats: int, army_units: dict[int, int], zone: int = 2) -> CombatOptions:
    """A 1-row map: ``zone`` cells per seat side by side, no terrain."""
    types = bytes(((seat + 1) << 4) for seat in range(seats) for _ in range(zone))
    army = [0] * 12
    for code, count in army_units.items():
        army[code] = count
    return CombatOptions(len(types), 1, types, army)


def start_line(options: CombatOptions, placements: list[dict[int, int]], **kwargs) -> tuple[CombatTable, list[str]]:
    """A table of len(placements) seats on ``options``, everyone joined and set up as given."""
    table, lines = make_table(len(placements), **kwargs)
    for seat in range(len(placements)):
        table.join(seat, f"p{seat}")
    table.receive(0, HostOptions.of(options))
    for seat, placement in enumerate(placements):
        table.receive(seat, MsgSetup(write_setup(options, seat, placement)))
    assert table.state is State.PLAYING
    return table, lines


# --- §12.6 and §16 V12: the example, message for message and byte for byte ---------------------


def test_example_12_6_messages():
    table, _ = make_table()
    alice = table.join(0, "alice")
    assert alice == [
        (0, MsgSeat(0, 2, 10)),
        (0, MsgPlayers((ALICE, OPEN))),
        (0, ReqOptions()),
    ]
    assert table.host == 0 and table.state is State.WAIT
    assert table.receive(0, HostOptions.of(DEFAULT)) == [(0, MsgOptions(DEFAULT))]
    bob = table.join(1, "bob")
    assert to(bob, 0) == [MsgPlayers((ALICE, BOB)), ReqSetup()]
    assert to(bob, 1) == [MsgSeat(1, 2, 10), MsgPlayers((ALICE, BOB)), MsgOptions(DEFAULT), ReqSetup()]
    assert table.state is State.SETUP
    assert table.receive(0, setup_of(DEFAULT, 0)) == []
    start = table.receive(1, setup_of(DEFAULT, 1, reverse=True))
    assert start == [(0, MsgStart()), (1, MsgStart())]
    assert table.state is State.PLAYING and table.turn == 0


def test_example_12_6_bytes_v12():
    table, _ = make_table()
    assert encode_all(to(table.join(0, "alice"), 0)) == bytes.fromhex(
        "0000000000000000000000020000000a000000010000000300000006616c696365000000000100000002"
    )
    assert encode_all(to(table.receive(0, HostOptions.of(DEFAULT)), 0)) == V4
    bob = table.join(1, "bob")
    assert encode_all(to(bob, 0)) == bytes.fromhex(
        "000000010000000300000006616c696365000000000300000004626f620000000004"
    )
    assert encode_all(to(bob, 1)) == (
        bytes.fromhex(
            "0000000000000001000000020000000a000000010000000300000006616c696365000000000300000004626f6200"
        )
        + V4
        + bytes.fromhex("00000004")
    )
    # The V9 setups are what a client sends: check the setups used here are exactly those bytes.
    from gamed.combat.wire import Parser

    setup0 = Parser().feed(V9_SEAT0)[0]
    setup1 = Parser().feed(V9_SEAT1)[0]
    assert setup0 == setup_of(DEFAULT, 0) and setup1 == setup_of(DEFAULT, 1, reverse=True)
    assert table.receive(0, setup0) == []
    start = table.receive(1, setup1)
    assert encode_all(to(start, 0)) == encode_all(to(start, 1)) == bytes.fromhex("00000006")


def test_example_12_6_random_setup():
    table, _ = make_table(rng=random.Random(7))
    options = with_options(DEFAULT, Opt.RANDOM_SETUP)
    table.join(0, "alice")
    assert table.receive(0, HostOptions.of(options)) == [(0, MsgOptions(options))]
    out = table.join(1, "bob")
    game = table.game
    seat0, seat1 = to(out, 0), to(out, 1)
    assert seat0 == [MsgPlayers((ALICE, BOB)), MsgSync(0, State.SETUP, game.view(0)), MsgStart()]
    assert seat1 == [
        MsgSeat(1, 2, 10),
        MsgPlayers((ALICE, BOB)),
        MsgOptions(options),
        MsgSync(0, State.SETUP, game.view(1)),
        MsgStart(),
    ]
    assert encode(seat0[1])[8:10] == bytes((0x01, 0x03))  # turn 0, state SETUP (+1)
    assert not any(isinstance(m, ReqSetup) for _, m in out)
    # every seat's army is on the board, in its own zone
    for seat in (0, 1):
        mine = [b for b in game.view(None) if b != 0x0F and b >> 4 == seat + 1]
        assert sorted(b & 0x0F for b in mine) == [c for c, n in enumerate(DEFAULT.army) for _ in range(n)]
        assert all(game.view(None)[cell] >> 4 == seat + 1 for cell in DEFAULT.zone(seat))
    assert table.state is State.PLAYING


def test_random_setup_under_open_map_sends_full_syncs():
    table, _ = make_table(rng=random.Random(3))
    options = with_options(DEFAULT, Opt.RANDOM_SETUP | Opt.OPEN_MAP)
    table.join(0, "alice")
    table.receive(0, HostOptions.of(options))
    out = table.join(1, "bob")
    full = MsgSync(0, State.SETUP, table.game.view(None))
    assert to(out, 0) == [MsgPlayers((ALICE, BOB)), full, full, MsgStart()]
    assert to(out, 1)[3:] == [full, full, MsgStart()]


def test_open_map_without_random_setup_full_sync_before_start():
    table, _ = make_table()
    options = with_options(DEFAULT, Opt.OPEN_MAP)
    table.join(0, "alice")
    table.join(1, "bob")
    table.receive(0, HostOptions.of(options))
    table.receive(0, setup_of(options, 0))
    out = table.receive(1, setup_of(options, 1, reverse=True))
    full = MsgSync(0, State.SETUP, table.game.view(None))
    assert to(out, 0) == to(out, 1) == [full, MsgStart()]
    assert 0x1C not in full.units and 0x2C not in full.units


# --- §16 sequence vectors: V8, V10, V11, V13 sender check --------------------------------------


def test_v11_sequence_moves_attack_and_sync():
    table = playing_default()
    out = table.receive(0, ReqMove(39, 49))
    assert out == [(0, MsgMove(39, 49)), (1, MsgMove(39, 49))]
    assert encode(out[0][1]) == bytes.fromhex("000000080000002700000031")
    assert table.turn == 1
    assert table.receive(1, ReqMove(69, 59)) == [(0, MsgMove(69, 59)), (1, MsgMove(69, 59))]
    out = table.receive(0, ReqMove(49, 59))
    assert [encode(m) for _, m in out] == [bytes.fromhex("0000000900000031fffffff50000003b00000007")] * 2
    assert [r for r, _ in out] == [0, 1]
    assert encode(table.receive(1, ReqSync())[0][1]) == bytes.fromhex(
        "0000000c0000006702041d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d"
        "10101010101010101010101010101010101010101d2c2b2a2a29292928281028272727272626262625252525252424242424"
        "242424232222222222222100"
    )


def test_v13_sender_check_wrong_turn_is_broadcast_and_changes_nothing():
    """§15.3 row 1: seat 1 moves on seat 0's turn, even seat 0's own unit."""
    table = playing_default()
    before = table.game.view(None)
    for move in (ReqMove(69, 59), ReqMove(39, 49)):
        out = table.receive(1, move)
        assert out == [(0, MsgMoveError(-3, 1)), (1, MsgMoveError(-3, 1))]
        assert encode(out[0][1]) == bytes.fromhex("00000008fffffffd00000001")
    assert table.game.view(None) == before and table.turn == 0


def test_move_errors_are_broadcast_and_turn_stays():
    table = playing_default()
    cases = [((39, 100), -2), ((-1, 0), -2), ((50, 51), -3), ((38, 39), -4), ((1, 50), -7), ((32, 42), -5),
             ((39, 48), -9), ((39, 59), -10)]
    for (source, target), code in cases:
        assert table.receive(0, ReqMove(source, target)) == [(0, MsgMoveError(code, 0)), (1, MsgMoveError(code, 0))]
        assert table.turn == 0
    assert table.receive(0, ReqMove(39, 49))[0] == (0, MsgMove(39, 49))
    assert table.turn == 1


def test_v10_rush_attack_both_removed():
    # A 4x1 line: seat 0 flag 0, marshal 1; seat 1 general 2, flag 3 (adjacent attack 1 -> 2).
    options = with_options(line_map(2, {0: 1, 10: 1, 11: 1}, zone=3), Opt.RUSH_ATTACK)
    table, _ = start_line(options, [{0: 0, 1: 10, 2: 11}, {3: 11, 4: 10, 5: 0}])
    out = table.receive(0, ReqMove(2, 3))
    assert to(out, 0) == to(out, 1) == [MsgAttack(2, -11, 3, -11)]
    assert table.game.view(None)[2] == table.game.view(None)[3] == 0x0F


# --- §12.3/§12.4: joins and leaves in WAIT, host selection (§15.3 row 10) ----------------------


def test_host_leaves_in_wait_next_host_asked_even_with_options():
    table, _ = make_table(3)
    three = line_map(3, {0: 1, 3: 1})
    table.join(0, "alice")
    table.join(2, "carol")
    table.receive(0, HostOptions.of(three))
    out = table.leave(0)
    assert to(out, 2) == [MsgPlayers((OPEN, OPEN, PlayerSeat(SeatKind.PLAYER, "carol"))), ReqOptions()]
    assert to(out, 0) == []
    assert table.host == 2 and table.options == three
    # the new host may answer with new options (or the same); a non-host is still ignored
    assert table.receive(2, HostOptions.of(three)) == [(2, MsgOptions(three))]


def test_non_host_leave_in_wait_sends_players_only():
    table, _ = make_table(3)
    table.join(0, "alice")
    table.join(1, "bob")
    out = table.leave(1)
    assert out == [(0, MsgPlayers((ALICE, OPEN, OPEN)))]
    assert table.host == 0


def test_host_alone_leaves_next_joiner_becomes_host():
    """§15.3 row 10."""
    table, _ = make_table()
    table.join(0, "alice")
    assert table.leave(0) == []
    assert table.host is None
    out = table.join(1, "bob")
    assert out == [(1, MsgSeat(1, 2, 10)), (1, MsgPlayers((OPEN, BOB))), (1, ReqOptions())]
    assert table.host == 1


def test_host_alone_leaves_with_options_next_joiner_host_without_request():
    table, _ = make_table()
    table.join(0, "alice")
    table.receive(0, HostOptions.of(DEFAULT))
    table.leave(0)
    out = table.join(1, "bob")
    assert out == [(1, MsgSeat(1, 2, 10)), (1, MsgPlayers((OPEN, BOB))), (1, MsgOptions(DEFAULT))]
    assert table.host == 1 and table.state is State.WAIT
    out = table.join(0, "alice")
    assert to(out, 0) == [MsgSeat(0, 2, 10), MsgPlayers((ALICE, BOB)), MsgOptions(DEFAULT), ReqSetup()]
    assert to(out, 1) == [MsgPlayers((ALICE, BOB)), ReqSetup()]


def test_second_joiner_without_options_gets_nothing_more():
    table, _ = make_table()
    table.join(0, "alice")
    out = table.join(1, "bob")
    assert out == [(1, MsgSeat(1, 2, 10)), (0, MsgPlayers((ALICE, BOB))), (1, MsgPlayers((ALICE, BOB)))]
    assert table.state is State.WAIT
    # options arriving once the seats are full go straight to SETUP
    out = table.receive(0, HostOptions.of(DEFAULT))
    assert out == [(0, MsgOptions(DEFAULT)), (1, MsgOptions(DEFAULT)), (0, ReqSetup()), (1, ReqSetup())]
    assert table.state is State.SETUP


# --- §12.5: options from the host: decline, invalid, replace (§15.3 rows 5, 6, 14, 15) ---------


def test_host_declines_next_connected_seat_becomes_host():
    table, _ = make_table(3)
    table.join(1, "bob")
    table.join(2, "carol")
    table.join(0, "alice")
    assert table.host == 1
    assert table.receive(1, HostOptions(b"")) == [(0, ReqOptions())]
    assert table.host == 0
    assert table.receive(0, HostOptions(b"")) == [(1, ReqOptions())]
    assert table.host == 1


def test_host_declines_alone_is_asked_again():
    table, _ = make_table()
    table.join(0, "alice")
    table.receive(0, HostOptions.of(DEFAULT))
    assert table.receive(0, HostOptions(b"")) == [(0, ReqOptions())]
    assert table.host == 0 and table.options is None and table.state is State.WAIT
    assert table.receive(0, ReqOptions()) == []  # options were reset


@pytest.mark.parametrize(
    "data",
    [
        b"\x01",  # no height
        b"\x00\x03" + bytes(20),  # width 0
        b"\x80\x01" + bytes(200),  # width 128
        b"\x02\x03\x10\x10\x00\x02\x20\x20" + bytes(5),  # army cut short
        b"\x02\x03\x10\x10\x00\x03\x20\x20" + bytes((1, 0, 0, 1) + (0,) * 8),  # terrain 3
        b"\x02\x03\x10\x10\x00\x02\x20\x20" + bytes((1, 0, 0, 1) + (0,) * 8) + b"\x01Tiny",  # name cut off
        b"\x02\x03\x10\x10\x00\x02\x20\x20" + bytes((0, 0, 0, 1) + (0,) * 8),  # no flag (-12)
        b"\x02\x03\x10\x10\x00\x02\x20\x20" + bytes((1, 1) + (0,) * 10),  # no movable unit (-13)
        b"\x02\x03\x10\x10\x00\x02\x20\x20" + bytes((1, 0, 0, 2) + (0,) * 8),  # zone too small (-14)
        b"\x02\x03\x10\x10\x00\x02\x00\x00" + bytes((1, 0, 0, 1) + (0,) * 8),  # no zone for seat 1 (-14)
    ],
)
def test_invalid_options_reset_and_ask_the_same_host(data):
    table, lines = make_table()
    table.join(0, "alice")
    table.join(1, "bob")
    assert table.receive(0, HostOptions(data)) == [(0, ReqOptions())]
    assert table.options is None and table.state is State.WAIT and table.host == 0
    assert any("invalid options" in line for line in lines)


def test_invalid_options_replace_earlier_valid_ones_and_resets_repeat():
    """§15.3 row 6: invalid options then a decline then invalid again: resets are idempotent."""
    table, _ = make_table()
    table.join(0, "alice")
    table.receive(0, HostOptions.of(DEFAULT))
    assert table.receive(0, HostOptions(b"\x01")) == [(0, ReqOptions())]
    assert table.options is None
    assert table.receive(0, HostOptions(b"")) == [(0, ReqOptions())]
    assert table.receive(0, HostOptions(b"\x01")) == [(0, ReqOptions())]
    assert table.receive(0, ReqSync()) == [(0, MsgSync(0, State.WAIT, b""))]
    assert table.receive(0, HostOptions.of(DEFAULT)) == [(0, MsgOptions(DEFAULT))]


def test_options_are_reencoded_canonically_and_packets_any_order():
    """§6.2, §15.3 row 15: V3's BIN2-then-BIN1 and unknown-packet variants."""
    tiny = bytes.fromhex("0000000300000022030411110103212102010102010101010101010102556a6f7a010103700104d80100")
    variants = [
        "0000000300000022030411110103212102010102010101010101010102556a6f7a010104d80103700100",
        "0000000300000025030411110103212102010102010101010101010108790102556a6f7a010103700104d80100",
    ]
    from gamed.combat.wire import Parser

    for variant in variants:
        table, lines = make_table()
        table.join(0, "alice")
        out = table.receive(0, Parser().feed(bytes.fromhex(variant))[0])
        assert [encode(m) for _, m in out] == [tiny]
        assert table.options.options == 0x2890


def test_host_may_replace_valid_options_in_wait():
    table, _ = make_table()
    table.join(0, "alice")
    table.receive(0, HostOptions.of(DEFAULT))
    small = shipped_maps()["Small"]
    assert table.receive(0, HostOptions.of(small)) == [(0, MsgOptions(small))]
    assert table.options == small


def test_options_from_non_host_are_ignored():
    table, lines = make_table()
    table.join(0, "alice")
    table.join(1, "bob")
    assert table.receive(1, HostOptions.of(DEFAULT)) == []
    assert table.options is None
    assert any("seat 1" in line and "opcode 3" in line for line in lines)


# --- §7 and §12.3/§12.4 in SETUP (§15.3 rows 4, 7) ----------------------------------------------


def setup_table() -> CombatTable:
    table, _ = make_table()
    table.join(0, "alice")
    table.receive(0, HostOptions.of(DEFAULT))
    table.join(1, "bob")
    assert table.state is State.SETUP
    return table


def bad_setups():
    good = write_setup(DEFAULT, 0, rank_order(DEFAULT, 0))
    yield good[:-1]  # too short
    yield good + b"\x11"  # too long
    yield bytes([0x21]) + good[1:]  # seat 1's owner nibble
    yield good[:-1] + bytes([0x1C])  # unknown code 12 instead of the marshal
    yield good[:-1] + bytes([0x1E])  # code 14
    yield good[:-1] + bytes([0x1A])  # a second general instead of the marshal
    yield good[:-1] + bytes([0x0F])  # an empty cell instead of the marshal
    yield b""


@pytest.mark.parametrize("data", list(bad_setups()))
def test_rejected_setup_is_requested_again(data):
    table = setup_table()
    assert table.receive(0, MsgSetup(data)) == [(0, ReqSetup())]
    assert table.game.view(None) == bytes([0x0F]) * 100
    assert table.receive(0, setup_of(DEFAULT, 0)) == []


def test_second_setup_from_the_same_seat_is_rejected():
    table = setup_table()
    assert table.receive(0, setup_of(DEFAULT, 0)) == []
    before = table.game.view(None)
    assert table.receive(0, setup_of(DEFAULT, 0, reverse=True)) == [(0, ReqSetup())]
    assert table.game.view(None) == before


def test_setup_with_empty_cells_anywhere_is_accepted():
    """§15.3 row 7: 0x0F and OWNER|0x0F are empty cells."""
    options = line_map(2, {0: 1, 11: 1}, zone=4)
    table, _ = make_table()
    table.join(0, "a")
    table.join(1, "b")
    table.receive(0, HostOptions.of(options))
    assert table.receive(0, MsgSetup(bytes([0x0F, 0x10, 0x1F, 0x1B]))) == []
    assert table.receive(1, MsgSetup(bytes([0x2B, 0x2F, 0x0F, 0x20]))) == [(0, MsgStart()), (1, MsgStart())]
    assert table.game.view(None) == bytes([0x0F, 0x10, 0x0F, 0x1B, 0x2B, 0x0F, 0x0F, 0x20])


def test_leave_in_setup_removes_units_and_rejoin_sets_up_again():
    table = setup_table()
    table.receive(1, setup_of(DEFAULT, 1, reverse=True))
    assert table.game.view(None)[60] == 0x2B
    out = table.leave(1)
    assert out == [(0, MsgPlayers((ALICE, OPEN)))]
    assert table.game.view(None) == bytes([0x0F]) * 100
    assert table.receive(0, setup_of(DEFAULT, 0)) == []  # not all seats done: no start
    out = table.join(1, "bob")
    assert to(out, 1) == [MsgSeat(1, 2, 10), MsgPlayers((ALICE, BOB)), MsgOptions(DEFAULT), ReqSetup()]
    assert to(out, 0) == [MsgPlayers((ALICE, BOB))]
    assert table.receive(1, setup_of(DEFAULT, 1)) == [(0, MsgStart()), (1, MsgStart())]


def test_client_messages_in_setup():
    """§13 SETUP column (§15.3 rows 2, 5)."""
    table = setup_table()
    table.receive(0, setup_of(DEFAULT, 0))
    before = table.game.view(None)
    assert table.receive(0, ReqMove(39, 49)) == []
    assert table.receive(0, HostOptions.of(shipped_maps()["Small"])) == []
    assert table.receive(0, HostOptions(b"")) == []
    assert table.receive(1, ReqOptions()) == [(1, MsgOptions(DEFAULT))]
    sync = table.receive(1, ReqSync())
    assert sync == [(1, MsgSync(0, State.SETUP, bytes([0x1C]) * 40 + bytes([0x0F]) * 60))]
    assert table.game.view(None) == before and table.state is State.SETUP and table.options == DEFAULT


# --- §13 in WAIT (§15.3 rows 2, 3, 4) -------------------------------------------------------------


def test_client_messages_in_wait():
    table, lines = make_table()
    table.join(0, "alice")
    assert table.receive(0, ReqOptions()) == []  # row 3
    assert table.receive(0, ReqMove(0, 10)) == []  # row 2
    assert table.receive(0, setup_of(DEFAULT, 0)) == []  # row 4
    out = table.receive(0, ReqSync())
    assert [encode(m) for _, m in out] == [bytes.fromhex("0000000c00000003010200")]  # V11
    assert len(lines) == 3 and all("ignored" in line and "WAIT" in line for line in lines)
    table.receive(0, HostOptions.of(DEFAULT))
    assert table.receive(0, ReqOptions()) == [(0, MsgOptions(DEFAULT))]
    assert table.receive(0, setup_of(DEFAULT, 0)) == []
    assert table.receive(0, ReqSync()) == [(0, MsgSync(0, State.WAIT, bytes([0x0F]) * 100))]


# --- PLAYING: turns, leaves and rejoins (§12.2, §12.3, §15.3 rows 17, 21) -------------------------


def test_client_messages_in_playing():
    table = playing_default()
    before = table.game.view(None)
    assert table.receive(0, setup_of(DEFAULT, 0)) == []
    assert table.receive(0, HostOptions.of(DEFAULT)) == []
    assert table.receive(1, ReqOptions()) == [(1, MsgOptions(DEFAULT))]
    assert table.receive(0, ReqSync()) == [(0, MsgSync(0, State.PLAYING, before[:40] + bytes([0x0F]) * 20
                                                        + bytes([0x2C]) * 40))]
    assert table.game.view(None) == before and table.state is State.PLAYING


def test_leave_in_playing_waits_for_the_player_and_rejoin_restarts():
    table = playing_default()
    table.receive(0, ReqMove(39, 49))
    out = table.leave(1)
    assert out == [(0, MsgPlayers((ALICE, OPEN)))]
    assert table.receive(0, ReqMove(49, 59)) == [(0, MsgMoveError(-3, 0))]  # seat 1's turn: the game waits
    out = table.join(1, "bob")
    assert to(out, 1) == [
        MsgSeat(1, 2, 10),
        MsgPlayers((ALICE, BOB)),
        MsgOptions(DEFAULT),
        MsgSync(1, State.PLAYING, table.game.view(1)),
        MsgStart(),
    ]
    assert to(out, 0) == [MsgPlayers((ALICE, BOB)), MsgStart()]
    assert table.state is State.PLAYING and table.turn == 1
    assert table.receive(1, ReqMove(69, 59))[0] == (0, MsgMove(69, 59))


def test_rejoin_in_playing_under_open_map_resends_full_syncs_to_everyone():
    table = playing_default(Opt.OPEN_MAP)
    table.leave(0)
    out = table.join(0, "alice")
    full = MsgSync(0, State.PLAYING, table.game.view(None))
    assert to(out, 0)[-3:] == [MsgSync(0, State.PLAYING, table.game.view(0)), full, MsgStart()]
    assert to(out, 1) == [MsgPlayers((ALICE, BOB)), full, MsgStart()]


def test_rejoin_under_random_setup_never_places_again():
    """§15.3 row 17."""
    table = playing_default(Opt.RANDOM_SETUP)
    board = table.game.view(None)
    table.leave(1)
    out = table.join(1, "bob")
    assert table.game.view(None) == board
    assert to(out, 1)[-2:] == [MsgSync(0, State.PLAYING, table.game.view(1)), MsgStart()]
    assert to(out, 0) == [MsgPlayers((ALICE, BOB)), MsgStart()]


def test_three_seats_turn_rotates_through_absent_seat():
    """§15.1, §15.3 rows 19, 21: NEXT through every seat, including one that left."""
    options = line_map(3, {0: 1, 3: 2}, zone=3)
    placements = [{0: 0, 1: 3, 2: 3}, {3: 0, 4: 3, 5: 3}, {6: 3, 7: 3, 8: 0}]
    table, _ = start_line(options, placements)
    table.leave(2)
    assert table.receive(0, ReqMove(1, 1)) == [(0, MsgMoveError(-4, 0)), (1, MsgMoveError(-4, 0))]
    out = table.receive(0, ReqMove(2, 3))  # the scout takes seat 1's flag: seat 1 is beaten but keeps its turn
    assert out == [(0, MsgAttack(2, -3, 3, 0)), (1, MsgAttack(2, -3, 3, 0))]
    assert table.turn == 1 and table.state is State.PLAYING
    assert table.receive(1, ReqMove(4, 3)) == [(0, MsgAttack(4, -3, 3, -3)), (1, MsgAttack(4, -3, 3, -3))]
    assert table.turn == 2  # the absent seat 2's turn: the game waits for it
    assert table.receive(0, ReqMove(1, 2)) == [(0, MsgMoveError(-3, 0)), (1, MsgMoveError(-3, 0))]
    out = table.join(2, "p2")
    assert to(out, 2)[-2:] == [MsgSync(2, State.PLAYING, table.game.view(2)), MsgStart()]
    assert table.receive(2, ReqMove(6, 5))[0][1] == MsgAttack(6, -3, 5, -3)
    assert table.turn == 0


# --- game over (§11.5, §15.3 rows 8, 9, 18) --------------------------------------------------------


def test_draw_when_the_last_movable_units_trade_off():
    """§11.5, §15.3 row 8: no seat alive ends the game with winner -1 (logged)."""
    table, lines = start_line(line_map(2, {0: 1, 7: 1}, zone=2), [{0: 0, 1: 7}, {2: 7, 3: 0}])
    out = table.receive(0, ReqMove(1, 2))  # captain vs captain: both removed, nobody alive
    full = MsgSync(1, State.PLAYING, bytes([0x10, 0x0F, 0x0F, 0x20]))
    assert to(out, 0) == to(out, 1) == [MsgAttack(1, -7, 2, -7), MsgGameover(-1), full]
    assert encode(MsgGameover(-1)) == bytes.fromhex("0000000affffffff")
    assert table.state is State.DONE and table.winner == -1
    assert any("winner -1" in line for line in lines)
    assert table.receive(1, ReqMove(3, 2)) == [
        (0, MsgGameover(-1)), (0, MsgSync(1, State.DONE, full.units)),
        (1, MsgGameover(-1)), (1, MsgSync(1, State.DONE, full.units)),
    ]


def test_draw_after_several_moves_turn_byte_is_advanced():
    options = line_map(2, {0: 1, 7: 1, 11: 1}, zone=3)
    table, lines = start_line(options, [{0: 0, 1: 7, 2: 11}, {3: 11, 4: 7, 5: 0}])
    table.receive(0, ReqMove(2, 3))  # marshal vs marshal: both removed
    assert table.receive(1, ReqMove(4, 3)) == [(0, MsgMove(4, 3)), (1, MsgMove(4, 3))]
    table.receive(0, ReqMove(1, 2))
    out = table.receive(1, ReqMove(3, 2))  # captain vs captain: both removed; only flags are left
    assert to(out, 0)[1:] == [MsgGameover(-1), MsgSync(0, State.PLAYING, bytes([0x10] + [0x0F] * 4 + [0x20]))]


def test_flag_capture_wins_and_done_answers():
    table, _ = start_line(line_map(2, {0: 1, 3: 2}, zone=3), [{0: 0, 1: 3, 2: 3}, {3: 0, 4: 3, 5: 3}])
    out = table.receive(0, ReqMove(2, 3))  # scout takes the flag
    board = bytes([0x10, 0x13, 0x0F, 0x13, 0x23, 0x23])
    assert to(out, 0) == to(out, 1) == [MsgAttack(2, -3, 3, 0), MsgGameover(0), MsgSync(1, State.PLAYING, board)]
    assert encode(MsgGameover(0)) == bytes.fromhex("0000000a00000000")
    assert table.state is State.DONE and table.winner == 0
    # §15.3 row 9: any REQ_MOVE in DONE, legal or not, from anyone: GAMEOVER + full SYNC (state DONE)
    done = [MsgGameover(0), MsgSync(1, State.DONE, board)]
    for seat, move in ((1, ReqMove(4, 3)), (0, ReqMove(1, 2)), (1, ReqMove(-5, 99))):
        out = table.receive(seat, move)
        assert to(out, 0) == to(out, 1) == done and len(out) == 4
        assert table.game.view(None) == board
    # other messages in DONE (§13)
    assert table.receive(0, ReqSync()) == [(0, MsgSync(1, State.DONE, table.game.view(0)))]
    assert table.receive(1, ReqOptions()) == [(1, MsgOptions(table.options))]
    assert table.receive(0, HostOptions(b"")) == [] and table.receive(0, MsgSetup(b"")) == []
    # a join in DONE: full SYNC to the joiner, then GAMEOVER + full SYNC to all
    table.leave(1)
    out = table.join(1, "bob")
    assert to(out, 1)[-3:] == [MsgSync(1, State.DONE, board), *done]
    assert to(out, 0) == [MsgPlayers((PlayerSeat(SeatKind.PLAYER, "p0"), BOB)), *done]


def test_hidden_captured_flag_is_plus_12():
    """§15.3 row 18: SILENT_DEFENSE, a captured flag goes out as +12 to the attacker."""
    options = with_options(line_map(2, {0: 1, 3: 2}, zone=3), Opt.SILENT_DEFENSE)
    table, _ = start_line(options, [{0: 0, 1: 3, 2: 3}, {3: 0, 4: 3, 5: 3}])
    out = table.receive(0, ReqMove(2, 3))
    assert to(out, 0)[0] == MsgAttack(2, -3, 3, 12)
    assert to(out, 1)[0] == MsgAttack(2, -3, 3, 0)


@pytest.mark.parametrize(
    "attacker, defender, mask, seen0, seen1",
    [
        (3, 0, Opt.SILENT_DEFENSE, (-3, 12), (-3, 0)),
        (7, 9, Opt.SILENT_DEFENSE, (7, -12), (7, -9)),
        (11, 7, Opt.SILENT_OFFENSE, (-11, 7), (-12, 7)),
        (11, 7, Opt.UNKNOWN_VICTOR, (-11, 7), (-12, 7)),
        (5, 7, Opt.UNKNOWN_VICTOR, (5, -12), (5, -7)),
        (7, 7, Opt.UNKNOWN_VICTOR, (-7, -12), (-12, -7)),
        (11, 7, Opt.OPEN_MAP, (-11, 7), (-11, 7)),
    ],
)
def test_v14_attack_masking_per_recipient(attacker, defender, mask, seen0, seen1):
    """§11.4 / §16 V14 through the table: each seat gets its own ATTACK values."""
    army = {0: 1}
    army[attacker] = army.get(attacker, 0) + 1
    army[defender] = army.get(defender, 0) + 1
    options = with_options(line_map(2, army, zone=3), mask)
    codes = [c for c, n in enumerate(options.army) for _ in range(n)]
    seat0 = {cell: code for cell, code in zip((0, 1, 2), sorted(codes, key=lambda c: c == attacker))}
    seat1 = {cell: code for cell, code in zip((3, 4, 5), sorted(codes, key=lambda c: c != defender))}
    table, _ = start_line(options, [seat0, seat1])
    out = table.receive(0, ReqMove(2, 3))
    assert to(out, 0)[0] == MsgAttack(2, seen0[0], 3, seen0[1])
    assert to(out, 1)[0] == MsgAttack(2, seen1[0], 3, seen1[1])


def test_masking_for_a_third_seat_hides_both_sides():
    options = with_options(line_map(3, {0: 1, 7: 1, 11: 1}, zone=3), Opt.SILENT_OFFENSE | Opt.SILENT_DEFENSE)
    table, _ = start_line(options, [{0: 0, 1: 7, 2: 11}, {3: 11, 4: 7, 5: 0}, {6: 0, 7: 7, 8: 11}])
    out = table.receive(0, ReqMove(2, 3))
    assert out == [(0, MsgAttack(2, -11, 3, -12)), (1, MsgAttack(2, -12, 3, -11)), (2, MsgAttack(2, -12, 3, -12))]


def test_random_outcome_uses_the_injected_rng():
    options = with_options(line_map(2, {0: 1, 5: 1, 7: 1}, zone=3), Opt.RANDOM_OUTCOME)
    results = set()
    for seed in range(40):
        table, _ = start_line(options, [{0: 0, 1: 5, 2: 7}, {3: 5, 4: 7, 5: 0}], rng=random.Random(seed))
        first = table.receive(0, ReqMove(2, 3))
        again, _ = start_line(options, [{0: 0, 1: 5, 2: 7}, {3: 5, 4: 7, 5: 0}], rng=random.Random(seed))
        assert again.receive(0, ReqMove(2, 3)) == first  # reproducible
        results.add(first[0][1])
    # captain (7) attacks sergeant (5): attacker wins, both removed or defender wins, by the draw
    assert results == {MsgAttack(2, -7, 3, 5), MsgAttack(2, -7, 3, -5), MsgAttack(2, 7, 3, -5)}


def test_observer_view_hides_units_until_the_end():
    table = playing_default()
    assert set(table.view(None)) == {0x1C, 0x2C, 0x0F}
    assert table.sync(None) == MsgSync(0, State.PLAYING, table.view(None))
    assert table.view(0)[:40] == table.game.view(None)[:40] and table.view(0)[60:] == bytes([0x2C]) * 40
    open_table = playing_default(Opt.OPEN_MAP)
    assert open_table.view(None) == open_table.game.view(None)
    fresh, _ = make_table()
    assert fresh.view(None) == fresh.view(0) == b""
    with pytest.raises(ValueError):
        table.view(2)


def test_observer_view_after_the_game_is_full():
    table, _ = start_line(line_map(2, {0: 1, 3: 2}, zone=3), [{0: 0, 1: 3, 2: 3}, {3: 0, 4: 3, 5: 3}])
    assert set(table.view(None)) == {0x1C, 0x2C}
    table.receive(0, ReqMove(2, 3))
    assert table.view(None) == bytes([0x10, 0x13, 0x0F, 0x13, 0x23, 0x23])


def test_leave_in_done_sends_players_only():
    table, _ = start_line(line_map(2, {0: 1, 3: 2}, zone=3), [{0: 0, 1: 3, 2: 3}, {3: 0, 4: 3, 5: 3}])
    table.receive(0, ReqMove(2, 3))
    assert table.leave(0) == [(1, MsgPlayers((OPEN, PlayerSeat(SeatKind.PLAYER, "p1"))))]
    assert table.state is State.DONE and table.winner == 0


# --- PLAYERS, seat kinds and numbering (§5, §14, §15.2, §15.3 row 20) -------------------------------


def test_players_2000_numbering_v7():
    table, _ = make_table(numbering=Numbering.Y2000)
    assert make_table(numbering="2000")[0].numbering is Numbering.Y2000
    out = table.join(0, "alice")
    assert encode(out[1][1]) == bytes.fromhex("00000001fffffffb00000006616c69636500ffffffff")
    out = table.join(1, "a-very-long-name-of-twenty")
    assert encode(out[1][1]).endswith(b"\xff\xff\xff\xfb\x00\x00\x00\x11a-very-long-name\x00")


def test_launch_kinds_and_seats_full():
    seats = [PlayerSeat(SeatKind.RESERVED, "carol"), PlayerSeat(SeatKind.BOT, "bot"), PlayerSeat(SeatKind.NONE)]
    table, _ = make_table(seats)
    out = table.join(1, "bot", SeatKind.BOT)
    assert encode(out[1][1]) == bytes.fromhex(
        "00000001" "00000004" "00000006" + b"carol\0".hex() + "00000002" "00000004" + b"bot\0".hex() + "00000000"
        "00000001" "00"
    )
    table.receive(1, HostOptions.of(line_map(3, {0: 1, 3: 1})))
    assert table.state is State.WAIT and not table.seats_full  # carol's seat is reserved
    with pytest.raises(ValueError):
        table.join(2, "nobody")
    out = table.join(0, "carol")
    assert table.state is State.SETUP and to(out, 0)[-1] == ReqSetup()


def test_names_never_hold_nul_or_ff():
    table, _ = make_table()
    table.join(0, "al\x00ice\udcff")
    assert table.seats[0].name == "alice"
    table.join(1, "b\ud800" + "x" * 40000)
    assert table.seats[1].name.startswith("b?x") and len(table.seats[1].name) == 32767
    assert encode(table.players())  # encodable


def test_seats_without_a_name_send_the_empty_string():
    """§15.3 row 20."""
    table, _ = make_table([PlayerSeat(SeatKind.RESERVED), PlayerSeat(SeatKind.OPEN)])
    out = table.join(1)
    assert encode(out[1][1]) == bytes.fromhex("00000001" "00000004" "0000000100" "00000003" "0000000100")


def test_bot_seat_counts_only_once_its_bot_is_connected():
    table, _ = make_table([PlayerSeat(SeatKind.OPEN), PlayerSeat(SeatKind.BOT, "robot")])
    out = table.join(0, "alice")
    assert out[1][1] == MsgPlayers((ALICE, PlayerSeat(SeatKind.BOT, "robot")))
    assert table.receive(0, HostOptions.of(DEFAULT)) == [(0, MsgOptions(DEFAULT))]
    assert table.state is State.WAIT and not table.seats_full
    out = table.join(1, "robot", SeatKind.BOT)
    assert to(out, 1) == [
        MsgSeat(1, 2, 10),
        MsgPlayers((ALICE, PlayerSeat(SeatKind.BOT, "robot"))),
        MsgOptions(DEFAULT),
        ReqSetup(),
    ]
    assert table.state is State.SETUP
    assert table.leave(1) == [(0, MsgPlayers((ALICE, OPEN)))]  # a bot that leaves is OPEN too


def test_join_and_leave_errors():
    table, _ = make_table()
    table.join(0, "alice")
    with pytest.raises(ValueError):
        table.join(0, "again")
    with pytest.raises(ValueError):
        table.join(2, "nowhere")
    with pytest.raises(ValueError):
        make_table(16)
    with pytest.raises(ValueError):
        make_table(1)
    assert table.leave(1) == []  # not connected: nothing happens
    assert table.receive(1, ReqSync()) == []  # from a seat nobody holds: ignored
    with pytest.raises(TypeError):
        table.receive(0, MsgStart())


def test_drop_is_a_logged_leave():
    """§15.3 rows 11, 12, 22: a connection gamed closes is a leave."""
    table, lines = make_table()
    table.join(0, "alice")
    table.join(1, "bob")
    assert table.drop(1, "unknown opcode 99") == [(0, MsgPlayers((ALICE, OPEN)))]
    assert any("unknown opcode 99" in line for line in lines)


# --- hypothesis: hidden information stays hidden ----------------------------------------------------

SECRECY_OPTS = (
    Opt.ONE_TIME_BOMB | Opt.TERRORIST_SPY | Opt.MOVING_BOMB | Opt.SUPER_SCOUT | Opt.MOVING_FLAG | Opt.RANDOM_OUTCOME
    | Opt.ALLOW_DIAGONAL | Opt.UNKNOWN_VICTOR | Opt.SILENT_DEFENSE | Opt.SILENT_OFFENSE | Opt.RANDOM_SETUP
    | Opt.SF_SERGEANT | Opt.RUSH_ATTACK | Opt.HIDE_UNIT_LIST | Opt.SHOW_ENEMY_UNITS
)


def legal_moves(table: CombatTable) -> list[tuple[int, int]]:
    """Every (source, target) the seat to play may request: targets on the 8 rays only, since any
    other target fails the move check (§11.1 steps 7, 8, 8a)."""
    game = table.game
    width, height = game.layout.width, game.layout.height
    moves = []
    for source, cell in enumerate(game.board.cells):
        if cell == -1 or cell >> 4 != game.turn:
            continue
        x, y = source % width, source // width
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)):
            tx, ty = x + dx, y + dy
            while 0 <= tx < width and 0 <= ty < height:
                target = ty * width + tx
                if game.check(source, target) > 0:
                    moves.append((source, target))
                tx, ty = tx + dx, ty + dy
    return moves


def check_secrecy(out, options: Opt, over: bool) -> None:
    for recipient, message in out:
        assert not (isinstance(message, MsgMoveError) and message.code == -1)  # §15.3 row 22
        if isinstance(message, MsgSync) and not over and not options & Opt.OPEN_MAP:
            for byte in message.units:
                if byte != 0x0F and byte >> 4 != recipient + 1:
                    assert byte & 0x0F == 0x0C, (recipient, message)


@given(
    seed=st.integers(0, 2**32 - 1),
    mask=st.integers(0, 0xFFFF).map(lambda m: Opt(m) & SECRECY_OPTS),
    map_name=st.sampled_from(["Small", "8x8", "Island_I", "Corridors"]),
)
def test_sync_and_attack_never_reveal_hidden_types(seed, mask, map_name):
    rng = random.Random(seed)
    options = with_options(shipped_maps()[map_name], mask)
    table = CombatTable(2, rng=random.Random(seed ^ 0x5A5A))
    out = table.join(0, "a") + table.receive(0, HostOptions.of(options)) + table.join(1, "b")
    if not mask & Opt.RANDOM_SETUP:
        for seat in (0, 1):
            codes = [c for c, n in enumerate(options.army) for _ in range(n)]
            rng.shuffle(codes)
            out += table.receive(seat, MsgSetup(write_setup(options, seat, dict(zip(options.zone(seat), codes)))))
    assert table.state is State.PLAYING
    check_secrecy(out, mask, over=False)
    for _ in range(80):
        if table.state is not State.PLAYING:
            break
        moves = legal_moves(table)
        if not moves:
            break
        seat = table.turn
        source, target = rng.choice(moves)
        defender = table.game.board.cells[target]
        out = table.receive(seat, ReqMove(source, target))
        over = table.state is State.DONE
        check_secrecy(out, mask, over)
        for recipient, message in out:
            if isinstance(message, MsgAttack):
                assert defender != -1
                fa, fd = message.who_from, message.who_to
                if recipient != seat and (mask & Opt.SILENT_OFFENSE or (mask & Opt.UNKNOWN_VICTOR and fa < 0)):
                    assert abs(fa) == 12
                if recipient != defender >> 4 and (
                    mask & Opt.SILENT_DEFENSE or (mask & Opt.UNKNOWN_VICTOR and fd < 0)
                ):
                    assert abs(fd) == 12
        asker = rng.randrange(2)
        sync = table.receive(asker, ReqSync())
        check_secrecy(sync, mask, over=False)
        if rng.random() < 0.2:  # a wrong-turn request reveals nothing either
            out = table.receive(1 - table.turn, ReqMove(0, 1))
            assert all(isinstance(m, (MsgMoveError, MsgGameover, MsgSync)) for _, m in out)


def test_a_seat_repeating_an_ignored_message_does_not_flood_the_log():
    table, lines = make_table()
    table.join(0, "alice")
    for _ in range(1000):
        assert table.receive(0, ReqOptions()) == []
    assert len(lines) == 8 + 6, "the first 8, then the 16th, 32nd ... 512th"
    assert lines[-1].endswith("no options yet (512 ignored from this seat so far)")


def test_a_map_name_that_is_not_plain_text_is_refused_like_other_invalid_options():
    table, lines = make_table()
    table.join(0, "alice")
    script = attrs.evolve(DEFAULT, name="<img src=x onerror=alert(1)>")
    assert table.receive(0, HostOptions.of(script)) == [(0, ReqOptions())], "asked again, as for any invalid options"
    assert table.options is None
    assert lines[-1] == (
        "seat 0: invalid options: map name '<img src=x onerror=alert(1)>' is not "
        "1-32 letters, digits, _ . - + and single spaces between words"
    )
    for name in ("My map 2", "Checkers+Options", ""):  # like the shipped maps', or none
        out = table.receive(0, HostOptions.of(attrs.evolve(DEFAULT, name=name)))
        assert out == [(0, MsgOptions(attrs.evolve(DEFAULT, name=name)))]
