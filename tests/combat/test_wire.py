"""GGZ Combat wire codec (gamed.combat.wire): the spec's test vectors byte for byte in both
directions (ggz-combat §16), the §6.4 worked examples, every reading rule of §2, §6.3, §7 and §8,
fatal input (§13, §15.3), limits (§15.4), and hypothesis properties under arbitrary chunking."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.combat import wire
from gamed.combat.wire import (
    MAX_STRING,
    BadMessage,
    BadStringSize,
    CbtError,
    ClientParser,
    CombatOptions,
    HostOptions,
    InvalidOptions,
    InvalidSetup,
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
    Op,
    Parser,
    PlayerSeat,
    ProtocolError,
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    State,
    UnknownOpcode,
    decode_int,
    decode_string,
    encode,
    encode_all,
    encode_client,
    encode_int,
    encode_string,
    minus_one,
    plus_one,
    read_options,
    read_setup,
    sync_view,
    write_options,
    write_setup,
)
from gamed.stratego.rules import DEFAULT_ARMY, Opt, Unit, attack


def h(text: str) -> bytes:
    """Spec hex, spaces and newlines allowed."""
    return bytes.fromhex("".join(text.split()))


def parse_all(parser, data: bytes) -> list:
    """Feed ``data`` whole and return every message (the parser must not hold anything back)."""
    messages = parser.feed(data)
    assert parser.buffered == 0
    return messages


# Tiny (§6.4): 2x3, rows 11 / OL / 22, flag=1 scout=1, "Tiny", options 0x2890.
TINY = CombatOptions(2, 3, h("10 10 00 02 20 20"), (1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0), 0x2890, "Tiny")
TINY_RAW = h("02 03  10 10 00 02 20 20  01 00 00 01 00 00 00 00 00 00 00 00  01 54 69 6e 79 00 00  02 6f 00  03 d7 00")
TINY_SENT = h("03 04  11 11 01 03 21 21  02 01 01 02 01 01 01 01 01 01 01 01  02 55 6a 6f 7a 01 01  03 70 01  04 d8 01")
V3 = h("0000000300000022030411110103212102010102010101010101010102556a6f7a010103700104d80100")
V3_BIN2_FIRST = h("0000000300000022030411110103212102010102010101010101010102556a6f7a010104d80103700100")
V3_UNKNOWN = h("0000000300000025030411110103212102010102010101010101010108790102556a6f7a010103700104d80100")

DEFAULT_TYPES = bytes([0x10] * 40) + h("00 00 02 02 00 00 02 02 00 00") * 2 + bytes([0x20] * 40)
DEFAULT = CombatOptions(10, 10, DEFAULT_TYPES, DEFAULT_ARMY, 0, "Default")
V4 = h(
    "000000030000007d0b0b111111111111111111111111111111111111111111111111111111111111111111111111111111110101"
    "030301010303010101010303010103030101212121212121212121212121212121212121212121212121212121212121212121"
    "212121212121210207020906050505040302020245666762766d75010100"
)

ALICE = PlayerSeat(SeatKind.PLAYER, "alice")
BOB = PlayerSeat(SeatKind.PLAYER, "bob")
OPEN = PlayerSeat(SeatKind.OPEN)


# --- V1, §2: ints and strings ---------------------------------------------------------------


@pytest.mark.parametrize(
    "value, hexa", [(-1, "ffffffff"), (-5, "fffffffb"), (10, "0000000a"), (0, "00000000"), (2**31 - 1, "7fffffff")]
)
def test_v1_ints(value, hexa):
    assert encode_int(value) == h(hexa)
    assert decode_int(h(hexa)) == value


@pytest.mark.parametrize("text, hexa", [("bob", "00000004626f6200"), ("", "0000000100")])
def test_v1_strings(text, hexa):
    assert encode_string(text) == h(hexa)
    assert encode_string(text.encode()) == h(hexa)
    assert decode_string(h(hexa)) == (text.encode(), len(h(hexa)))


def test_ints_out_of_range_cannot_be_encoded():
    with pytest.raises(OverflowError):
        encode_int(2**31)
    with pytest.raises(ValueError):
        decode_int(b"\x00\x00\x00")


def test_string_reading_size_zero_is_the_empty_string():
    assert decode_string(h("00000000 ff"), 0) == (b"", 4)


def test_string_reading_stops_at_an_embedded_nul():
    # size 6: the content is "ab"; the bytes after the embedded NUL are consumed and ignored.
    assert decode_string(h("00000006 6162 00 6364 00") + b"rest") == (b"ab", 10)


def test_string_reading_tolerates_a_missing_final_nul():
    assert decode_string(h("00000003 616263") + b"rest") == (b"abc", 7)


def test_string_reading_waits_for_the_whole_string():
    assert decode_string(h("00000004 6162")) is None
    assert decode_string(h("000000")) is None


@pytest.mark.parametrize("size", [MAX_STRING + 1, 2**31 - 1, -1, -(2**31)])
def test_string_sizes_outside_the_limit_are_fatal(size):
    with pytest.raises(BadStringSize) as caught:
        decode_string(encode_int(size))
    assert caught.value.size == size


def test_the_largest_string_is_32768_bytes_with_its_nul():
    content = b"x" * (MAX_STRING - 1)
    data = encode_string(content)
    assert decode_int(data[:4]) == MAX_STRING
    assert decode_string(data) == (content, len(data))
    with pytest.raises(ValueError):
        encode_string(content + b"x")


def test_a_string_cannot_be_written_with_a_nul_inside():
    with pytest.raises(ValueError):
        encode_string(b"a\x00b")


def test_plus_one_encoding():
    assert plus_one(h("00 01 7f fe")) == h("01 02 80 ff")
    assert minus_one(h("01 02 80 ff")) == h("00 01 7f fe")
    assert minus_one(h("00")) == h("ff")


def test_a_raw_ff_is_never_produced():
    # §2: 0xFF would encode as a NUL and cut the string short.
    with pytest.raises(ValueError):
        plus_one(h("10 ff"))


# --- §6.4 and V2: the options packets -------------------------------------------------------


def test_v2_option_packets_for_0x2890():
    raw = write_options(CombatOptions(1, 1, b"\x00", (0,) * 12, Opt(0x2890)))
    packets = raw[2 + 1 + 12 :]
    assert packets == h("026f0003d700")
    assert plus_one(packets) == h("03700104d801")
    assert list(plus_one(packets)) == [3, 112, 1, 4, 216, 1]


def test_options_flag_names_of_the_worked_example():
    assert Opt.SUPER_SCOUT | Opt.ALLOW_DIAGONAL | Opt.RANDOM_SETUP | Opt.RUSH_ATTACK == 0x2890


def test_worked_example_tiny_raw_and_sent_bytes():
    assert write_options(TINY) == TINY_RAW
    assert plus_one(TINY_RAW) == TINY_SENT
    assert len(TINY_SENT) == 33
    assert encode_string(TINY_SENT)[:4] == encode_int(0x22)


def test_content_length_formula():
    # 2 + w*h + 12 (+ strlen(name)+3) (+3) (+3)
    assert len(write_options(TINY)) == 2 + 6 + 12 + (4 + 3) + 3 + 3
    assert len(write_options(attr_evolve(TINY, options=0x0010))) == 2 + 6 + 12 + 7 + 3
    assert len(write_options(attr_evolve(TINY, options=0x2000))) == 2 + 6 + 12 + 7 + 3
    assert len(write_options(attr_evolve(TINY, options=0, name=""))) == 2 + 6 + 12


def attr_evolve(base: CombatOptions, /, **changes) -> CombatOptions:
    """``base`` with some fields changed (and validated again)."""
    return attrs.evolve(base, **changes)


def test_hash_form_leaves_out_only_the_name():
    assert write_options(TINY, hash_form=True) == h("0203 101000022020 010000010000000000000000 026f00 03d700")


# --- V3: the Tiny options message -----------------------------------------------------------


def test_v3_server_writes_tiny():
    assert encode(MsgOptions(TINY)) == V3


def test_v3_host_sends_tiny_and_the_server_reads_it():
    assert encode_client(HostOptions.of(TINY)) == V3
    [message] = parse_all(Parser(), V3)
    assert message == HostOptions(TINY_RAW)
    assert not message.declines
    options, unrecognised = message.read()
    assert (options, unrecognised) == (TINY, 0)
    assert options.width == 2 and options.height == 3
    assert options.types == h("10 10 00 02 20 20")
    assert options.army == (1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0)
    assert options.name == "Tiny" and options.options == 0x2890


def test_v3_client_reads_tiny():
    assert parse_all(ClientParser(), V3) == [MsgOptions(TINY)]


def test_v3_bin2_before_bin1_parses_the_same_and_reencodes_canonically():
    [message] = parse_all(Parser(), V3_BIN2_FIRST)
    options, unrecognised = message.read()
    assert options.options == 0x2890
    assert unrecognised == 0
    assert encode(MsgOptions(options)) == V3


def test_v3_an_unknown_packet_before_the_name_is_skipped_and_counted():
    [message] = parse_all(Parser(), V3_UNKNOWN)
    options, unrecognised = message.read()
    assert options == TINY
    assert unrecognised == 1
    assert encode(MsgOptions(options)) == V3


# --- V4: the Default map ---------------------------------------------------------------------


def test_v4_default_options_both_directions():
    assert len(V4) == 133
    assert encode(MsgOptions(DEFAULT)) == V4
    assert encode_client(HostOptions.of(DEFAULT)) == V4
    [message] = parse_all(Parser(), V4)
    assert message.read() == (DEFAULT, 0)
    assert parse_all(ClientParser(), V4) == [MsgOptions(DEFAULT)]


def test_v4_structure():
    content = decode_string(V4, 4)[0]
    assert decode_int(V4[4:8]) == 0x7D
    assert content[:2] == h("0b0b")
    assert content[2:42] == b"\x11" * 40
    assert content[42:62] == h("01010303010103030101") * 2
    assert content[62:102] == b"\x21" * 40
    assert content[102:114] == h("020702090605050504030202")
    assert content[114:] == h("02 45666762766d75 01 01")


# --- §6.3: every reading rule -----------------------------------------------------------------

BASE = h("02 03 10 10 00 02 20 20 01 00 00 01 00 00 00 00 00 00 00 00")  # Tiny without packets


def read(data: bytes) -> CombatOptions:
    return read_options(data)[0]


def test_no_packets_is_no_name_and_no_options():
    assert read(BASE) == attr_evolve(TINY, name="", options=0)


@pytest.mark.parametrize("data", [b"", b"\x02"])
def test_fewer_than_two_bytes_are_invalid(data):
    with pytest.raises(InvalidOptions):
        read_options(data)


@pytest.mark.parametrize("width, height", [(0, 1), (1, 0), (128, 1), (1, 128), (255, 255)])
def test_width_and_height_must_be_1_to_127(width, height):
    data = bytes((width, height)) + bytes(width * height) + bytes((1, 0, 1) + (0,) * 9)
    with pytest.raises(InvalidOptions):
        read_options(data)


def test_127_is_the_largest_side():
    data = bytes((127, 1)) + bytes(127) + bytes((1, 0, 1) + (0,) * 9)
    options = read(data)
    assert (options.width, options.height) == (127, 1)


def test_the_map_and_army_must_be_complete():
    with pytest.raises(InvalidOptions):
        read_options(BASE[:-1])
    with pytest.raises(InvalidOptions):
        read_options(BASE[:8])


def test_terrain_nibble_must_be_0_1_or_2():
    for terrain in (3, 4, 0x0F):
        data = bytearray(BASE)
        data[4] = 0x10 | terrain
        with pytest.raises(InvalidOptions):
            read_options(bytes(data))


def test_owner_nibble_is_free():
    data = bytearray(BASE)
    data[2:8] = h("f0 30 01 02 e2 20")
    options = read(bytes(data))
    assert options.types == h("f0 30 01 02 e2 20")
    assert options.zone(2) == (1,)
    assert options.zone(14) == (0,)


def test_army_counts_must_be_0_to_127():
    for count, valid in ((127, True), (128, False), (0xFE, False)):
        data = bytearray(BASE)
        data[8 + 5] = count
        if valid:
            assert read(bytes(data)).army[5] == count
        else:
            with pytest.raises(InvalidOptions):
                read_options(bytes(data))


def test_name_packet_takes_the_bytes_before_the_nul_then_skips_to_the_terminator():
    options = read(BASE + h("01 6162 00 7879 00"))
    assert options.name == "ab"
    assert read(BASE + h("01 00 00")).name == ""


@pytest.mark.parametrize("packet", ["01", "01 6162", "01 6162 00", "01 6162 00 78"])
def test_a_name_packet_cut_off_is_invalid(packet):
    with pytest.raises(InvalidOptions):
        read_options(BASE + h(packet))


def test_bin1_takes_the_next_byte_whatever_its_value():
    assert read(BASE + h("02 6f 00")).options == 0x0090
    assert read(BASE + h("02 00 00")).options == 0x00FF  # the byte itself may be 0x00
    assert read(BASE + h("02 6f 41 42 00")).options == 0x0090  # junk up to the terminator skipped


def test_bin2_sets_only_the_high_byte():
    assert read(BASE + h("03 d7 00")).options == 0x2800
    assert read(BASE + h("03 00 00")).options == 0xFF00


@pytest.mark.parametrize("packet", ["02", "02 6f", "03", "03 d7", "03 d7 41"])
def test_an_option_packet_cut_off_is_invalid(packet):
    with pytest.raises(InvalidOptions):
        read_options(BASE + h(packet))


def test_packet_order_does_not_matter_and_each_string_starts_from_zero():
    assert read(BASE + h("03 d7 00 02 6f 00")).options == 0x2890
    assert read(BASE + h("02 6f 00 03 d7 00")).options == 0x2890
    # A later string with BIN2 only does not keep the earlier BIN1 (§15.3 row 15).
    assert read(BASE + h("03 d7 00")).options == 0x2800


def test_a_repeated_packet_replaces_the_earlier_one():
    assert read(BASE + h("02 6f 00 02 fe 00")).options == 0x0001
    assert read(BASE + h("01 61 00 00 01 62 00 00")).name == "b"


def test_unknown_packets_are_skipped_and_counted():
    options, unrecognised = read_options(BASE + h("07 78 00 04 00 ff 00 02 6f 00"))
    assert options.options == 0x0090
    assert unrecognised == 3


def test_an_unknown_packet_cut_off_is_invalid():
    with pytest.raises(InvalidOptions):
        read_options(BASE + h("07 78"))


def test_an_id_byte_0x00_ends_the_packet_list():
    options, unrecognised = read_options(BASE + h("00 02 6f 00 07"))
    assert options.options == 0
    assert unrecognised == 0


def test_the_name_comes_back_byte_for_byte():
    # Bytes that are not UTF-8 survive a read and a canonical re-encoding.
    options = read(BASE + h("01 c3 28 fe 00 00"))
    assert write_options(options) == BASE + h("01 c3 28 fe 00 00")


def test_names_with_a_nul_or_a_raw_ff_cannot_be_created():
    for name in ("a\x00b", "\udcff"):
        with pytest.raises(ValueError):
            attr_evolve(TINY, name=name)


# --- §10: the options check -------------------------------------------------------------------


def army(**counts: int) -> tuple[int, ...]:
    return tuple(counts.get(u.name.lower(), 0) for u in Unit)


def test_options_check_passes_tiny_and_default():
    assert TINY.check(2) == 0
    assert DEFAULT.check(2) == 0


def test_options_check_needs_a_flag():
    assert attr_evolve(TINY, army=army(scout=1)).check(2) == CbtError.OPTIONS_FLAGS == -12


def test_options_check_needs_a_movable_unit():
    assert attr_evolve(TINY, army=army(flag=1)).check(2) == CbtError.OPTIONS_MOVING == -13
    assert attr_evolve(TINY, army=army(flag=1, bomb=1)).check(2) == -13
    for unit in Unit:
        if unit.mobile:  # any one of codes 2..11 will do
            assert attr_evolve(TINY, army=army(flag=1, **{unit.name.lower(): 1})).check(2) == 0


def test_options_check_needs_every_zone_as_big_as_the_army():
    assert attr_evolve(TINY, army=army(flag=1, scout=2)).check(2) == CbtError.OPTIONS_SIZE == -14
    lopsided = attr_evolve(TINY, types=h("10 10 10 02 20 20"), army=army(flag=1, scout=2))
    assert lopsided.check(2) == -14  # seat 0 has 3 cells, seat 1 only 2
    assert lopsided.check(1) == 0


def test_options_check_counts_seats_beyond_the_map_zones():
    assert TINY.check(3) == -14  # seat 2 has no zone


def test_options_check_order_decides():
    assert attr_evolve(TINY, army=army()).check(2) == -12
    assert attr_evolve(TINY, army=army(bomb=9)).check(2) == -12
    assert attr_evolve(TINY, army=army(flag=9)).check(2) == -13


def test_options_check_does_not_look_at_terrain_inside_zones():
    lakes = attr_evolve(TINY, types=h("12 11 00 02 22 21"))
    assert lakes.check(2) == 0


def test_layout_for_the_rules_core():
    layout = DEFAULT.layout(2)
    assert layout.lakes == {42, 43, 46, 47, 52, 53, 56, 57}
    assert layout.zones == (frozenset(range(40)), frozenset(range(60, 100)))
    assert layout.offmap == frozenset()
    assert TINY.layout(2).lakes == {3}


# --- V5 is in test_maps.py; V6: CBT_MSG_SEAT --------------------------------------------------


@pytest.mark.parametrize(
    "seat, hexa", [(1, "0000000000000001000000020000000a"), (0, "0000000000000000000000020000000a")]
)
def test_v6_seat(seat, hexa):
    assert encode(MsgSeat(seat, 2)) == h(hexa)
    assert parse_all(ClientParser(), h(hexa)) == [MsgSeat(seat, 2, 10)]


def test_seat_limits():
    for seat, seats in ((2, 2), (-1, 2), (0, 1), (0, 16)):
        with pytest.raises(ValueError):
            MsgSeat(seat, seats)
    MsgSeat(14, 15)


# --- V7: CBT_MSG_PLAYERS ----------------------------------------------------------------------

V7_HEAD_ALONE = h("000000010000000300000006616c6963650000000001")
V7_2000_ALONE = h("00000001fffffffb00000006616c69636500ffffffff")
V7_HEAD_BOTH = h("000000010000000300000006616c696365000000000300000004626f6200")


def test_v7_players_head_alice_alone():
    message = MsgPlayers((ALICE, OPEN))
    assert encode(message) == V7_HEAD_ALONE
    assert parse_all(ClientParser(seats=2), V7_HEAD_ALONE) == [message]


def test_v7_players_2000_alice_alone():
    message = MsgPlayers((ALICE, OPEN), Numbering.Y2000)
    assert encode(message) == V7_2000_ALONE
    assert parse_all(ClientParser(Numbering.Y2000, seats=2), V7_2000_ALONE) == [message]


def test_v7_players_head_alice_and_bob():
    message = MsgPlayers((ALICE, BOB))
    assert encode(message) == V7_HEAD_BOTH
    assert parse_all(ClientParser(seats=2), V7_HEAD_BOTH) == [message]


@pytest.mark.parametrize(
    "kind, head, y2000",
    [
        (SeatKind.NONE, 0, -4),
        (SeatKind.OPEN, 1, -1),
        (SeatKind.BOT, 2, -2),
        (SeatKind.PLAYER, 3, -5),
        (SeatKind.RESERVED, 4, -3),
    ],
)
def test_seat_type_numbers(kind, head, y2000):
    seat = PlayerSeat(kind) if kind is SeatKind.OPEN else PlayerSeat(kind, "x")
    name = b"" if kind is SeatKind.OPEN else encode_string("x")
    assert encode(MsgPlayers((seat, OPEN))) == encode_int(1) + encode_int(head) + name + encode_int(1)
    assert encode(MsgPlayers((seat, OPEN), Numbering.Y2000)) == (
        encode_int(1) + encode_int(y2000) + name + encode_int(-1)
    )


def test_a_seat_without_a_name_is_sent_the_empty_string():
    assert encode(MsgPlayers((PlayerSeat(SeatKind.NONE), PlayerSeat(SeatKind.RESERVED)))) == h(
        "00000001 00000000 0000000100 00000004 0000000100"
    )


def test_abandoned_has_only_a_head_number():
    abandoned = PlayerSeat(SeatKind.ABANDONED, "x")
    assert encode(MsgPlayers((abandoned, OPEN)))[4:8] == encode_int(5)
    with pytest.raises(ValueError):
        encode(MsgPlayers((abandoned, OPEN), Numbering.Y2000))


def test_names_are_cut_to_16_bytes_in_2000_mode():
    long = PlayerSeat(SeatKind.PLAYER, "abcdefghijklmnopqrstuvwxyz")
    data = encode(MsgPlayers((long, OPEN), Numbering.Y2000))
    assert data == encode_int(1) + encode_int(-5) + encode_string("abcdefghijklmnop") + encode_int(-1)
    assert encode(MsgPlayers((long, OPEN)))[8:] == encode_string(long.name) + encode_int(1)


def test_an_open_seat_has_no_name():
    with pytest.raises(ValueError):
        PlayerSeat(SeatKind.OPEN, "ghost")


def test_a_client_expecting_the_other_numbering_fails_cleanly():
    with pytest.raises(BadMessage):
        ClientParser(Numbering.Y2000, seats=2).feed(V7_HEAD_ALONE)


def test_players_before_seat_is_a_client_error():
    with pytest.raises(BadMessage):
        ClientParser().feed(V7_HEAD_ALONE)


def test_the_client_learns_the_seat_count_from_seat():
    three = MsgPlayers((ALICE, OPEN, BOB))
    stream = encode(MsgSeat(0, 3)) + encode(three)
    assert parse_all(ClientParser(), stream) == [MsgSeat(0, 3), three]


# --- V8: CBT_MSG_MOVE and friends -------------------------------------------------------------


@pytest.mark.parametrize(
    "message, hexa",
    [
        (MsgMoveError(-3, 1), "00000008fffffffd00000001"),
        (MsgMove(39, 49), "000000080000002700000031"),
        (MsgGameover(0), "0000000a00000000"),
        (MsgGameover(-1), "0000000affffffff"),
        (ReqSetup(), "00000004"),
        (MsgStart(), "00000006"),
        (ReqOptions(), "00000002"),
    ],
)
def test_v8_server_messages(message, hexa):
    assert encode(message) == h(hexa)
    assert parse_all(ClientParser(), h(hexa)) == [message]


def test_v8_move_error_is_told_apart_by_a_negative_first_field():
    assert MsgMoveError(-3, 1) == MsgMoveError(CbtError.WRONGTURN, 1)
    [message] = parse_all(ClientParser(), h("00000008 fffffff5 00000000"))
    assert message == MsgMoveError(CbtError.MOVE_SCOUT, 0)
    [message] = parse_all(ClientParser(), h("00000008 00000000 00000001"))
    assert message == MsgMove(0, 1)
    with pytest.raises(ValueError):
        MsgMove(-1, 0)
    with pytest.raises(ValueError):
        MsgMoveError(0, 0)


@pytest.mark.parametrize(
    "message, hexa",
    [
        (ReqMove(39, 49), "000000070000002700000031"),
        (HostOptions(b""), "000000030000000100"),
        (ReqSync(), "0000000b"),
        (ReqOptions(), "00000002"),
    ],
)
def test_v8_client_messages(message, hexa):
    assert encode_client(message) == h(hexa)
    assert parse_all(Parser(), h(hexa)) == [message]


def test_v8_empty_options_decline_in_every_spelling():
    for hexa in ("000000030000000100", "0000000300000000", "00000003000000020000", "000000030000000300ffff"):
        [message] = parse_all(Parser(), h(hexa))
        assert message.declines


def test_req_move_carries_any_ints():
    for source, target in ((-1, 0), (0, 25), (-(2**31), 2**31 - 1)):
        data = encode_client(ReqMove(source, target))
        assert parse_all(Parser(), data) == [ReqMove(source, target)]


def test_v13_sender_check_vector():
    assert encode(MsgMoveError(CbtError.WRONGTURN, 1)) == h("00000008fffffffd00000001")


# --- V9 and §7: the setup string ---------------------------------------------------------------

V9_SEAT0 = h("00000005000000291112121212121213141414141414141415151515151616161617171717181818181919191a1a1b1c00")
V9_SEAT1 = h("00000005000000292c2b2a2a29292928282828272727272626262625252525252424242424242424232222222222222100")


def rank_order(seat: int, reverse: bool = False) -> bytes:
    codes = [code for code in Unit for _ in range(DEFAULT_ARMY[code])]
    if reverse:
        codes.reverse()
    return bytes(wire.owner_nibble(seat) | code for code in codes)


def test_v9_setups_both_directions():
    for seat, reverse, vector in ((0, False, V9_SEAT0), (1, True, V9_SEAT1)):
        raw = rank_order(seat, reverse)
        assert encode_client(MsgSetup(raw)) == vector
        [message] = parse_all(Parser(), vector)
        assert message == MsgSetup(raw)
        assert read_setup(DEFAULT, seat, message.data) == raw


def test_v9_write_setup_places_units_on_zone_cells():
    placement = {cell: code for cell, code in enumerate(b & 0x0F for b in rank_order(0))}
    assert write_setup(DEFAULT, 0, placement) == rank_order(0)
    placement = {60 + i: b & 0x0F for i, b in enumerate(rank_order(1, reverse=True))}
    assert write_setup(DEFAULT, 1, placement) == rank_order(1, reverse=True)


def test_setup_example_of_section_7():
    sent = plus_one(rank_order(0))
    runs = [("11", 1), ("12", 6), ("13", 1), ("14", 8), ("15", 5), ("16", 4), ("17", 4), ("18", 4), ("19", 3)]
    runs += [("1a", 2), ("1b", 1), ("1c", 1)]
    assert sent == h("".join(byte * count for byte, count in runs))


def test_setup_length_must_equal_the_zone():
    with pytest.raises(InvalidSetup):
        read_setup(DEFAULT, 0, rank_order(0)[:-1])
    with pytest.raises(InvalidSetup):
        read_setup(DEFAULT, 0, rank_order(0) + b"\x0f")


def test_setup_bytes_must_be_the_senders():
    with pytest.raises(InvalidSetup):
        read_setup(DEFAULT, 1, rank_order(0))
    stray = bytearray(rank_order(0))
    stray[5] = 0x01  # owner nibble 0: nobody's bomb
    with pytest.raises(InvalidSetup):
        read_setup(DEFAULT, 0, bytes(stray))


@pytest.mark.parametrize("code", [12, 13, 14])
def test_setup_codes_12_to_14_are_rejected(code):
    small = CombatOptions(3, 1, h("10 10 20"), army(flag=1, scout=1))
    with pytest.raises(InvalidSetup):
        read_setup(small, 0, bytes((0x10, 0x10 | code)))


def test_setup_empty_cells_are_plain_or_owned_0x0f_and_are_not_counted():
    roomy = CombatOptions(4, 1, h("10 10 10 20"), army(flag=1, scout=1))
    assert read_setup(roomy, 0, h("0f 10 13")) == h("0f 10 13")
    assert read_setup(roomy, 0, h("10 1f 13")) == h("10 0f 13")
    assert write_setup(roomy, 0, {0: 0, 2: 3}) == h("10 0f 13")
    with pytest.raises(InvalidSetup):
        read_setup(roomy, 0, h("2f 10 13"))  # another seat's empty marker


def test_setup_counts_must_equal_the_template():
    wrong = bytearray(rank_order(0))
    wrong[1] = wire.owner_nibble(0) | Unit.MARSHAL  # a bomb became a second marshal
    with pytest.raises(InvalidSetup):
        read_setup(DEFAULT, 0, bytes(wrong))
    roomy = CombatOptions(4, 1, h("10 10 10 20"), army(flag=1, scout=1))
    with pytest.raises(InvalidSetup):
        read_setup(roomy, 0, h("10 0f 0f"))  # a missing scout


def test_write_setup_refuses_cells_outside_the_zone_and_bad_codes():
    with pytest.raises(ValueError):
        write_setup(DEFAULT, 0, {40: 0})
    with pytest.raises(ValueError):
        write_setup(DEFAULT, 0, {0: 12})


# --- V10: CBT_MSG_ATTACK ----------------------------------------------------------------------


def test_v10_marshal_takes_captain():
    fa, fd = attack(Unit.MARSHAL, Unit.CAPTAIN, Opt.NONE)
    message = MsgAttack(49, fa, 59, fd)
    assert message == MsgAttack(49, -11, 59, 7)
    assert encode(message) == h("0000000900000031fffffff50000003b00000007")
    assert parse_all(ClientParser(), encode(message)) == [message]


def test_v10_rush_and_no_rush():
    fa, fd = attack(Unit.MARSHAL, Unit.GENERAL, Opt.NONE)
    rushed = MsgAttack(6, fa, 10, -abs(fd))
    plain = MsgAttack(6, fa, 10, fd)
    assert encode(rushed) == h("0000000900000006fffffff50000000afffffff6")
    assert encode(plain) == h("0000000900000006fffffff50000000a0000000a")
    assert parse_all(ClientParser(), encode(rushed) + encode(plain)) == [rushed, plain]


def test_v14_masked_values_are_plain_ints():
    # A hidden captured flag goes out as +12, a hidden winner as -12.
    assert encode(MsgAttack(0, -3, 1, 12))[12:] == encode_int(1) + encode_int(12)
    assert encode(MsgAttack(0, -12, 1, 7))[4:12] == encode_int(0) + encode_int(-12)


# --- V11 and §8: the sync string --------------------------------------------------------------


def test_v11_sync_before_any_options():
    message = MsgSync(0, State.WAIT)
    assert encode(message) == h("0000000c00000003010200")
    assert parse_all(ClientParser(), h("0000000c00000003010200")) == [message]


V11_SEAT1 = h(
    "0000000c0000006702041d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1010101010"
    "1010101010101010101010101010101d2c2b2a2a29292928281028272727272626262625252525252424242424242424232222222222222100"
)


def test_v11_seat_1_view_of_the_default_game():
    units = bytearray([wire.U_EMPTY] * 100)
    units[0:40] = rank_order(0)
    units[60:100] = rank_order(1, reverse=True)
    turn = 0
    # seat 0 39->49 (MOVE), seat 1 69->59 (MOVE), seat 0 49->59 (ATTACK, marshal takes captain)
    for source, target in ((39, 49), (69, 59)):
        units[target], units[source] = units[source], wire.U_EMPTY
        turn = wire.next_turn(turn, 2)
    fa, fd = attack(Unit(units[49] & 0x0F), Unit(units[59] & 0x0F), Opt.NONE)
    assert fa < 0 <= fd
    units[59], units[49] = units[49], wire.U_EMPTY
    turn = wire.next_turn(turn, 2)

    message = MsgSync(turn, State.PLAYING, sync_view(bytes(units), 1))
    assert encode(message) == V11_SEAT1
    assert parse_all(ClientParser(), V11_SEAT1) == [message]
    content = decode_string(V11_SEAT1, 4)[0]
    assert len(content) == 102
    assert content[:2] == h("0204")
    assert content[2 + 59] == 0x1D and content[2 + 69] == 0x10


def test_sync_views():
    units = h("10 2b 0f 1c 3a 0f")
    assert sync_view(units, None) == units
    assert sync_view(units, 0) == h("10 2c 0f 1c 3c 0f")
    assert sync_view(units, 1) == h("1c 2b 0f 1c 3c 0f")
    assert sync_view(units, 2) == h("1c 2c 0f 1c 3a 0f")


def test_sync_content_is_turn_state_units():
    message = MsgSync(1, State.SETUP, h("0f 10 2c"))
    assert encode(message) == encode_int(12) + encode_string(h("02 03 10 11 2d"))


@pytest.mark.parametrize("content", ["", "01"])
def test_a_sync_without_turn_and_state_is_a_client_error(content):
    data = encode_int(Op.MSG_SYNC) + encode_string(h(content))
    with pytest.raises(BadMessage):
        ClientParser().feed(data)


def test_a_sync_with_an_impossible_state_is_a_client_error():
    with pytest.raises(BadMessage):
        ClientParser().feed(encode_int(Op.MSG_SYNC) + encode_string(h("01 07")))


def test_sync_fields_are_checked_when_written():
    for turn, state in ((15, 3), (-1, 3), (0, -1), (0, 5)):
        with pytest.raises(ValueError):
            MsgSync(turn, state)
    with pytest.raises(ValueError):
        MsgSync(0, 3, b"\xff")


# --- V12: the join streams of §12.6 -------------------------------------------------------------

V12_SEAT0_JOIN = h("0000000000000000000000020000000a000000010000000300000006616c696365000000000100000002")
V12_SEAT0_BOB = h("000000010000000300000006616c696365000000000300000004626f620000000004")
V12_SEAT1_JOIN = (
    h("0000000000000001000000020000000a000000010000000300000006616c696365000000000300000004626f6200")
    + V4
    + h("00000004")
)
V12_START = h("00000006")


def test_v12_join_streams_are_written():
    assert encode_all([MsgSeat(0, 2), MsgPlayers((ALICE, OPEN)), ReqOptions()]) == V12_SEAT0_JOIN
    assert encode(MsgOptions(DEFAULT)) == V4
    assert encode_all([MsgPlayers((ALICE, BOB)), ReqSetup()]) == V12_SEAT0_BOB
    assert encode_all([MsgSeat(1, 2), MsgPlayers((ALICE, BOB)), MsgOptions(DEFAULT), ReqSetup()]) == V12_SEAT1_JOIN
    assert encode(MsgStart()) == V12_START


@given(st.data())
def test_v12_join_streams_are_read_in_any_chunking(data):
    seat0 = V12_SEAT0_JOIN + V4 + V12_SEAT0_BOB + V12_START
    assert run(ClientParser, chunked(data, seat0)) == (
        [
            MsgSeat(0, 2),
            MsgPlayers((ALICE, OPEN)),
            ReqOptions(),
            MsgOptions(DEFAULT),
            MsgPlayers((ALICE, BOB)),
            ReqSetup(),
            MsgStart(),
        ],
        None,
        0,
    )
    seat1 = V12_SEAT1_JOIN + V12_START
    assert run(ClientParser, chunked(data, seat1))[0] == [
        MsgSeat(1, 2),
        MsgPlayers((ALICE, BOB)),
        MsgOptions(DEFAULT),
        ReqSetup(),
        MsgStart(),
    ]


# --- §13 and §15.3: fatal input --------------------------------------------------------------


@pytest.mark.parametrize("opcode", [0, 1, 4, 6, 8, 9, 10, 12, 13, 14, 255, -1, 2**31 - 1, -(2**31)])
def test_opcodes_not_valid_client_to_server_are_fatal(opcode):
    parser = Parser()
    with pytest.raises(UnknownOpcode) as caught:
        parser.feed(encode_int(opcode))
    assert caught.value.opcode == opcode
    assert "unknown opcode" in str(caught.value)


@pytest.mark.parametrize("opcode", [5, 7, 11, 13, -1])
def test_opcodes_not_valid_server_to_client_are_fatal_for_a_client(opcode):
    with pytest.raises(UnknownOpcode):
        ClientParser().feed(encode_int(opcode) + bytes(40))


def test_an_unknown_opcode_is_fatal_as_soon_as_its_four_bytes_arrive():
    parser = Parser()
    assert parser.feed(h("000000")) == []
    with pytest.raises(UnknownOpcode):
        parser.feed(h("0d"))


@pytest.mark.parametrize("opcode", [Op.MSG_OPTIONS, Op.MSG_SETUP])
@pytest.mark.parametrize("size", [MAX_STRING + 1, -1, 0x7FFFFFFF])
def test_a_bad_string_size_is_fatal_before_any_content(opcode, size):
    parser = Parser()
    with pytest.raises(BadStringSize) as caught:
        parser.feed(encode_int(opcode) + encode_int(size))
    assert caught.value.opcode == opcode
    assert caught.value.size == size


def test_messages_before_the_fatal_bytes_come_with_the_error():
    parser = Parser()
    stream = encode_client(ReqSync()) + encode_client(ReqMove(1, 2)) + encode_int(8) + encode_client(ReqSync())
    with pytest.raises(ProtocolError) as caught:
        parser.feed(stream)
    assert caught.value.messages == [ReqSync(), ReqMove(1, 2)]


def test_a_failed_parser_stays_failed():
    parser = Parser()
    with pytest.raises(UnknownOpcode):
        parser.feed(encode_int(99))
    assert isinstance(parser.failed, UnknownOpcode)
    with pytest.raises(UnknownOpcode) as caught:
        parser.feed(encode_client(ReqSync()))
    assert caught.value.messages == []
    assert caught.value.opcode == 99


def test_invalid_options_are_not_fatal_on_the_server():
    # §12.5: a malformed options string is "invalid options", not a protocol error.
    stream = encode_int(Op.MSG_OPTIONS) + encode_string(h("05 05 05")) + encode_client(ReqSync())
    [options, sync] = parse_all(Parser(), stream)
    assert isinstance(options, HostOptions) and sync == ReqSync()
    with pytest.raises(InvalidOptions):
        options.read()


def test_invalid_options_are_fatal_on_a_client():
    with pytest.raises(BadMessage):
        ClientParser().feed(encode_int(Op.MSG_OPTIONS) + encode_string(h("05 05 05")))


def test_a_bad_seat_message_is_fatal_on_a_client():
    with pytest.raises(BadMessage):
        ClientParser().feed(encode_int(0) + encode_int(2) + encode_int(2) + encode_int(10))


# --- §15.4: bounded buffering ---------------------------------------------------------------


def test_the_parser_buffers_at_most_one_message():
    parser = Parser()
    assert parser.max_message == 4 + 4 + MAX_STRING
    biggest = encode_client(MsgSetup(b"\x01" * (MAX_STRING - 1)))
    assert len(biggest) == parser.max_message
    assert parser.feed(biggest[:-1]) == []
    assert parser.buffered == parser.max_message - 1
    assert parser.feed(biggest[-1:] + encode_client(ReqSync())) == [MsgSetup(b"\x01" * (MAX_STRING - 1)), ReqSync()]
    assert parser.buffered == 0


def test_many_messages_in_one_chunk_leave_nothing_buffered():
    parser = Parser()
    stream = encode_client(ReqMove(1, 2)) * 20000 + encode_client(ReqSync())[:2]
    messages = parser.feed(stream)
    assert len(messages) == 20000
    assert parser.buffered == 2


def test_a_size_over_the_limit_is_refused_not_buffered():
    parser = Parser()
    with pytest.raises(BadStringSize):
        parser.feed(encode_int(Op.MSG_SETUP) + encode_int(MAX_STRING + 1) + b"\x01" * 1000)
    assert parser.buffered == 0


# --- encoders refuse what the wire cannot carry ----------------------------------------------


def test_each_encoder_takes_only_its_direction():
    with pytest.raises(TypeError):
        encode(ReqMove(0, 1))
    with pytest.raises(TypeError):
        encode(HostOptions(b""))
    with pytest.raises(TypeError):
        encode_client(MsgStart())
    with pytest.raises(TypeError):
        encode_client(MsgMove(0, 1))


def test_options_too_long_for_a_string_cannot_be_sent():
    huge = CombatOptions(127, 127, bytes(127 * 127), army(flag=1, scout=1), 0, "n" * 20000)
    with pytest.raises(ValueError):
        encode(MsgOptions(huge))


def test_combat_options_limits():
    good = dict(width=1, height=1, types=b"\x00", army=(0,) * 12)
    CombatOptions(**good)
    for change in (
        {"width": 0},
        {"width": 128},
        {"height": 128},
        {"types": b"\x00\x00"},
        {"types": b"\x03"},
        {"army": (0,) * 11},
        {"army": (128,) + (0,) * 11},
        {"army": (-1,) + (0,) * 11},
        {"options": 0x10000},
        {"options": -1},
        {"types": 1},
        {"army": (0.5,) + (0,) * 11},
    ):
        with pytest.raises((ValueError, TypeError)):
            CombatOptions(**{**good, **change})


def test_host_options_and_setups_cannot_hold_a_raw_ff():
    with pytest.raises(ValueError):
        HostOptions(b"\xff")
    with pytest.raises(ValueError):
        MsgSetup(b"\x10\xff")


# --- hypothesis: chunking, round trips ----------------------------------------------------------

int32 = st.integers(-(2**31), 2**31 - 1)
not_ff = st.binary(max_size=60).map(lambda b: b.replace(b"\xff", b"\xfe"))
names = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20)
# At most 4 characters: at most 16 bytes, so 2000-mode names survive the trip uncut.
short_names = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=4)


@st.composite
def combat_options(draw, max_side: int = 6) -> CombatOptions:
    width = draw(st.integers(1, max_side))
    height = draw(st.integers(1, max_side))
    types = draw(
        st.lists(
            st.builds(lambda owner, terrain: owner << 4 | terrain, st.integers(0, 15), st.sampled_from((0, 1, 2))),
            min_size=width * height,
            max_size=width * height,
        )
    )
    counts = draw(st.lists(st.integers(0, 127), min_size=12, max_size=12))
    return CombatOptions(width, height, bytes(types), tuple(counts), draw(st.integers(0, 0xFFFF)), draw(names))


def players_messages(seats: int, numbering: Numbering):
    kinds = [k for k in SeatKind if k in wire.SEAT_TYPES[numbering]]
    name = names if numbering is Numbering.HEAD else short_names
    seat = st.sampled_from(kinds).flatmap(
        lambda kind: st.just(PlayerSeat(kind)) if kind is SeatKind.OPEN else st.builds(PlayerSeat, st.just(kind), name)
    )
    return st.lists(seat, min_size=seats, max_size=seats).map(lambda s: MsgPlayers(tuple(s), numbering))


server_messages = st.one_of(
    st.builds(ReqOptions),
    st.builds(ReqSetup),
    st.builds(MsgStart),
    st.builds(MsgOptions, combat_options()),
    st.builds(MsgMove, st.integers(0, 2**31 - 1), int32),
    st.builds(MsgMoveError, st.integers(-(2**31), -1), int32),
    st.builds(MsgAttack, int32, int32, int32, int32),
    st.builds(MsgGameover, st.integers(-1, 2**31 - 1)),
    st.builds(MsgSync, st.integers(0, 14), st.integers(0, 4), not_ff),
)

client_messages = st.one_of(
    st.builds(ReqOptions),
    st.builds(ReqSync),
    st.builds(ReqMove, int32, int32),
    st.builds(HostOptions, not_ff),
    st.builds(HostOptions.of, combat_options()),
    st.builds(MsgSetup, not_ff),
)


def chunked(data, stream: bytes) -> list[bytes]:
    """``stream`` cut at points hypothesis chooses."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def run(factory, chunks: list[bytes]):
    """Feed chunks to a fresh parser: (messages, (error type, reason, opcode) or None, buffered)."""
    parser = factory()
    messages = []
    for chunk in chunks:
        try:
            messages += parser.feed(chunk)
        except ProtocolError as error:
            messages += error.messages
            return messages, (type(error), error.reason, error.opcode), parser.buffered
        assert parser.buffered <= parser.max_message
    return messages, None, parser.buffered


@given(st.lists(client_messages, max_size=8), st.data())
def test_client_messages_round_trip_in_any_chunking(messages, data):
    stream = b"".join(encode_client(m) for m in messages)
    assert run(Parser, chunked(data, stream)) == (messages, None, 0)


@given(st.integers(2, 15), st.sampled_from(Numbering), st.data())
def test_server_messages_round_trip_in_any_chunking(seats, numbering, data):
    messages = [MsgSeat(data.draw(st.integers(0, seats - 1)), seats)]
    messages += data.draw(st.lists(st.one_of(server_messages, players_messages(seats, numbering)), max_size=8))
    stream = encode_all(messages)
    assert run(lambda: ClientParser(numbering), chunked(data, stream)) == (messages, None, 0)


@given(combat_options(max_side=12))
def test_options_round_trip_and_never_contain_a_nul(options):
    raw = write_options(options)
    assert read_options(raw) == (options, 0)
    assert 0 not in plus_one(raw)
    assert 0xFF not in raw


@given(combat_options(), st.data())
def test_setups_round_trip(options, data):
    seat = data.draw(st.integers(0, 14))
    zone = options.zone(seat)
    placement = data.draw(st.dictionaries(st.sampled_from(zone), st.integers(0, 11)) if zone else st.just({}))
    raw = write_setup(options, seat, placement)
    template = tuple(sum(1 for c in placement.values() if c == u) for u in range(12))
    fitting = attr_evolve(options, army=template)
    assert read_setup(fitting, seat, raw) == raw


# Streams hypothesis builds for the fuzz properties: pieces of valid messages, random ints
# (opcodes and sizes) and random bytes, concatenated.
_client_pieces = st.one_of(
    client_messages.map(encode_client),
    st.tuples(client_messages.map(encode_client), st.integers(0, 40)).map(lambda p: p[0][: p[1]]),
    st.tuples(st.sampled_from((Op.MSG_OPTIONS, Op.MSG_SETUP)), st.sampled_from((-1, 0, 1, 3, MAX_STRING + 1))).map(
        lambda p: encode_int(p[0]) + encode_int(p[1])
    ),
    st.sampled_from(list(Op)).map(encode_int),
    st.integers(-2, MAX_STRING + 2).map(encode_int),
    st.binary(max_size=10),
)
_server_pieces = st.one_of(
    server_messages.map(encode),
    st.tuples(server_messages.map(encode), st.integers(0, 40)).map(lambda p: p[0][: p[1]]),
    st.tuples(st.sampled_from((Op.MSG_OPTIONS, Op.MSG_SYNC)), st.sampled_from((-1, 0, 1, 3, MAX_STRING + 1))).map(
        lambda p: encode_int(p[0]) + encode_int(p[1])
    ),
    players_messages(2, Numbering.HEAD).map(encode),
    st.sampled_from(list(Op)).map(encode_int),
    st.integers(-6, 6).map(encode_int),
    st.binary(max_size=10),
)


@given(st.lists(_client_pieces, max_size=10).map(b"".join), st.data())
def test_any_bytes_in_any_chunking_parse_like_the_whole(stream, data):
    whole = run(Parser, [stream])
    assert run(Parser, chunked(data, stream)) == whole
    assert run(Parser, [stream[i : i + 1] for i in range(len(stream))]) == whole


@given(st.lists(_server_pieces, max_size=10).map(b"".join), st.data())
def test_any_bytes_in_any_chunking_parse_like_the_whole_on_a_client(stream, data):
    factory = lambda: ClientParser(seats=2)  # noqa: E731
    whole = run(factory, [stream])
    assert run(factory, chunked(data, stream)) == whole


@given(st.binary(max_size=200), st.data())
def test_random_bytes_never_crash_a_parser(stream, data):
    for factory in (Parser, lambda: ClientParser(seats=2)):
        whole = run(factory, [stream])
        assert run(factory, chunked(data, stream)) == whole


@given(st.binary(max_size=300))
def test_read_options_never_crashes(data):
    try:
        options, unrecognised = read_options(data)
    except InvalidOptions:
        return
    assert unrecognised >= 0
    assert read_options(write_options(options)) == (options, 0)


def run_limited(chunks: list[bytes], limit: int):
    """Like ``run(Parser, chunks)``, but taking at most ``limit`` messages per call, as the server
    does to pause between messages: after each chunk, calls without new bytes until none is left."""
    parser = Parser()
    messages = []
    for chunk in chunks:
        try:
            got = parser.feed(chunk, limit)
            while got:
                assert len(got) <= limit
                messages += got
                got = parser.feed(b"", limit)
        except ProtocolError as error:
            messages += error.messages
            return messages, (type(error), error.reason, error.opcode), parser.buffered
    return messages, None, parser.buffered


@given(st.lists(_client_pieces, max_size=10).map(b"".join), st.integers(1, 3), st.data())
def test_a_limit_per_call_parses_like_the_whole(stream, limit, data):
    assert run_limited(chunked(data, stream), limit) == run(Parser, [stream])


def test_a_limit_leaves_the_other_messages_buffered_unparsed():
    parser = Parser()
    stream = encode_client(ReqSync()) * 3 + encode_int(99)  # the bad opcode is not reached yet
    assert parser.feed(stream, limit=2) == [ReqSync(), ReqSync()]
    assert parser.buffered == 8
    assert parser.feed(b"", limit=0) == [] and parser.buffered == 8
    assert parser.feed(b"", limit=1) == [ReqSync()]
    with pytest.raises(UnknownOpcode):
        parser.feed(b"", limit=1)
