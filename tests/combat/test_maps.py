"""GGZ Combat map files (gamed.combat.maps): the hash of §9 and vector V5, the file format's
loading rules, and the 13 shipped maps checked against the spec's table (ggz-combat §9)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.combat import maps
from gamed.combat.maps import (
    MAPS_DIR,
    MapFileError,
    hash_bytes,
    hash_form,
    load_map,
    map_file_name,
    map_hash,
    parse_map,
    save_map,
    shipped_maps,
    split_file_name,
    write_map,
)
from gamed.combat.wire import T_LAKE, T_NULL, CombatOptions, MsgOptions, encode, owner_nibble
from gamed.stratego.rules import DEFAULT_ARMY, Opt

# --- V5: the map hash -------------------------------------------------------------------------

DEFAULT_HASH_FORM = bytes.fromhex(
    "0b0b" + "11" * 40 + "0101030301010303010101010303010103030101" + "21" * 40 + "020702090605050504030202"
)
SMALL_HASH_FORM = bytes.fromhex("060611110121211101010121010102010121010101112121011111030102010101010101010104")


def test_v5_default_hash():
    assert len(DEFAULT_HASH_FORM) == 114
    assert hash_bytes(DEFAULT_HASH_FORM) == 127898


def test_v5_small_hash():
    assert hash_bytes(SMALL_HASH_FORM) == 4176275962


def test_v5_hash_forms_of_the_shipped_files():
    assert hash_form(shipped_maps()["Default"]) == DEFAULT_HASH_FORM
    assert hash_form(shipped_maps()["Small"]) == SMALL_HASH_FORM


def test_hash_sign_extends_bytes_from_0x80():
    assert hash_bytes(b"\x80") == 0xFFFFFF80
    assert hash_bytes(b"\x7f") == 0x7F
    assert hash_bytes(b"\x01\x80") == (2 ^ 0xFFFFFF80)
    assert hash_bytes(b"\x01" * 40) < 2**32  # shifted out past 32 bits


def test_the_name_does_not_count_but_the_options_do():
    default = shipped_maps()["Default"]
    assert map_hash(attrs.evolve(default, name="Other")) == 127898
    assert map_hash(attrs.evolve(default, options=Opt.OPEN_MAP)) != 127898


# --- the shipped maps against the spec's table ------------------------------------------------


def cells(*ranges: range | int) -> set[int]:
    out: set[int] = set()
    for r in ranges:
        out |= set(r) if isinstance(r, range) else {r}
    return out


# file, (W, H), lake cells or count, off-map count, zone size, army, options
SPEC_TABLE = [
    ("Default.127898", (10, 10), {42, 43, 46, 47, 52, 53, 56, 57}, 0, 40, (1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1), 0),
    ("8x8.127742", (8, 8), set(), 0, 18, (1, 3, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1), 0),
    ("Bridge.127237", (10, 10), cells(range(40, 44), range(46, 54), range(56, 60)), 0, 40,
     (2, 1, 0, 15, 3, 5, 6, 5, 0, 0, 3, 0), 0),
    ("Checkers.4227780237", (10, 10), set(), 0, 50, (5, 5, 0, 20, 0, 5, 5, 5, 3, 1, 1, 0), 0),
    ("Checkers+Options.5003353", (10, 10), set(), 0, 50, (5, 5, 0, 20, 0, 5, 5, 5, 3, 1, 1, 0), 0x80BA),
    ("Corridors.1483793000", (9, 9), set(), 32, 16, (2, 1, 2, 4, 1, 0, 0, 1, 3, 1, 0, 1), 0),
    ("In_The_Wild.33347979", (15, 15), 35, 0, 50, (1, 11, 0, 8, 5, 4, 4, 4, 4, 5, 4, 0), 0),
    ("Island_I.1321921533", (10, 10), {44, 45, 54, 55}, 32, 16, (2, 3, 0, 2, 3, 1, 1, 1, 1, 1, 1, 0), 0),
    ("Island_II.1321922021", (10, 10), {44, 45, 54, 55}, 32, 20, (2, 3, 0, 4, 3, 1, 1, 1, 1, 3, 1, 0), 0),
    ("Isles.3312569487", (12, 12), set(), 57, 22, (4, 3, 0, 4, 5, 0, 3, 3, 0, 0, 0, 0), 0),
    ("Pipes.1854974081", (20, 20), set(), 181, 106, (1, 0, 3, 68, 0, 5, 5, 5, 4, 6, 9, 0), 0),
    ("Plenty_of_options.8183865", (10, 10), cells(range(41, 49), range(51, 59)), 0, 40, DEFAULT_ARMY, 0x909E),
    ("Small.4176275962", (5, 5), set(), 1, 6, (2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3), 0),
]


def test_exactly_the_13_shipped_maps_are_there():
    assert sorted(p.name for p in MAPS_DIR.glob("*.map")) == sorted(f"{row[0]}.map" for row in SPEC_TABLE)
    assert len(shipped_maps()) == 13


@pytest.mark.parametrize("row", SPEC_TABLE, ids=[row[0] for row in SPEC_TABLE])
def test_shipped_map_matches_the_spec(row):
    file, (width, height), lakes, offmap, zone, army, options = row
    path = MAPS_DIR / f"{file}.map"
    loaded = load_map(path)
    name, expected_hash = split_file_name(path.name)
    assert loaded.name == name == file.split(".")[0]
    assert map_hash(loaded) == expected_hash == int(file.split(".")[1])
    assert map_file_name(loaded) == path.name
    assert loaded.check(2) == 0
    assert (loaded.width, loaded.height) == (width, height)
    lake_cells = {i for i in range(loaded.cells) if loaded.terrain(i) == T_LAKE}
    assert (len(lake_cells) if isinstance(lakes, int) else lake_cells) == lakes
    assert sum(1 for i in range(loaded.cells) if loaded.terrain(i) == T_NULL) == offmap
    assert len(loaded.zone(0)) == len(loaded.zone(1)) == zone == loaded.army_total
    assert loaded.army == army
    assert loaded.options == options
    assert path.read_text() == write_map(loaded)  # the files are the writer's canonical output


def test_full_data_strings_of_default_and_small():
    assert maps.map_letters(shipped_maps()["Default"]) == "1" * 40 + "OOLLOOLLOO" * 2 + "2" * 40
    assert maps.map_letters(shipped_maps()["Small"]) == "11O22" "1OOO2" "OONOO" "2OOO1" "22O11"


def test_zones_of_the_described_maps():
    shipped = shipped_maps()
    for name in ("Default", "Bridge", "Plenty_of_options"):
        assert shipped[name].zone(0) == tuple(range(40))
        assert shipped[name].zone(1) == tuple(range(60, 100))
    checkers = shipped["Checkers"]
    assert checkers.zone(0) == tuple(i for i in range(100) if (i // 10 + i % 10) % 2 == 0)
    assert shipped["Checkers+Options"].types == checkers.types


def test_option_sets_of_the_shipped_maps():
    shipped = shipped_maps()
    assert shipped["Checkers+Options"].options == (
        Opt.ONE_TIME_BOMB | Opt.MOVING_BOMB | Opt.SUPER_SCOUT | Opt.MOVING_FLAG | Opt.ALLOW_DIAGONAL
        | Opt.SHOW_ENEMY_UNITS
    )
    assert shipped["Plenty_of_options"].options == (
        Opt.ONE_TIME_BOMB | Opt.TERRORIST_SPY | Opt.MOVING_BOMB | Opt.SUPER_SCOUT | Opt.ALLOW_DIAGONAL
        | Opt.SF_SERGEANT | Opt.SHOW_ENEMY_UNITS
    )


def test_v4_is_the_default_map_file_sent_as_options():
    v4 = bytes.fromhex(
        "000000030000007d0b0b111111111111111111111111111111111111111111111111111111111111111111111111111111110101"
        "030301010303010101010303010103030101212121212121212121212121212121212121212121212121212121212121212121"
        "212121212121210207020906050505040302020245666762766d75010100"
    )
    assert encode(MsgOptions(shipped_maps()["Default"])) == v4


# --- the file format's reading rules ----------------------------------------------------------


def test_the_spec_default_file_loads():
    text = (
        "[map]\nwidth = 10\nheight = 10\ndata = " + "1" * 40 + "OOLLOOLLOO" * 2 + "2" * 40 + "\n\n[army]\n"
        "flag = 1\nbomb = 6\nspy = 1\nscout = 8\nminer = 5\nsergeant = 4\nlieutenant = 4\ncaptain = 4\n"
        "major = 3\ncolonel = 2\ngeneral = 1\nmarshall = 1\n"
    )
    assert parse_map(text, "Default") == shipped_maps()["Default"]


def test_sections_and_keys_in_any_order():
    text = "[army]\nscout = 1\nflag = 1\n[options]\nbin1 = 2890\n[map]\ndata = 11OL22\nheight = 3\nwidth = 2\n"
    tiny = parse_map(text, "Tiny")
    assert tiny == CombatOptions(2, 3, bytes.fromhex("101000022020"), (1, 0, 0, 1) + (0,) * 8, 0x2890, "Tiny")


def test_missing_width_and_height_are_10_and_missing_counts_are_0():
    options = parse_map("[map]\ndata = 1\n[army]\nflag = 1\n")
    assert (options.width, options.height) == (10, 10)
    assert options.army == (1,) + (0,) * 11
    assert options.types[0] == owner_nibble(0)
    assert options.types[1:] == bytes(99)  # letters missing at the end: open cells
    assert options.options == 0


def test_only_1_and_2_are_zones_and_unknown_letters_are_open():
    options = parse_map("[map]\nwidth = 6\nheight = 1\ndata = 123xoL\n")
    assert options.types == bytes((0x10, 0x20, 0x00, 0x00, 0x00, T_LAKE))


def test_the_option_mask_is_hex():
    assert parse_map("[map]\nwidth = 1\nheight = 1\n[options]\nbin1 = 80ba\n").options == 0x80BA
    assert parse_map("[map]\nwidth = 1\nheight = 1\n[options]\nbin1 = 0\n").options == 0


@pytest.mark.parametrize(
    "text",
    [
        "not an ini file",
        "[map]\nwidth = ten\n",
        "[map]\nwidth = 0\n",
        "[map]\nwidth = 128\nheight = 1\n",
        "[map]\nwidth = 2\nheight = 1\ndata = OOO\n",
        "[map]\nwidth = 1\nheight = 1\n[army]\nflag = 128\n",
        "[map]\nwidth = 1\nheight = 1\n[options]\nbin1 = 10000\n",
        "[map]\nwidth = 1\nheight = 1\n[options]\nbin1 = xyz\n",
    ],
)
def test_bad_map_files(text):
    with pytest.raises(MapFileError):
        parse_map(text, "Bad")


def test_file_names():
    assert split_file_name("Default.127898.map") == ("Default", 127898)
    assert split_file_name("Default.127898") == ("Default", 127898)
    assert split_file_name("Island I.1321921533") == ("Island I", 1321921533)
    assert split_file_name("Loose.map") == ("Loose", None)
    with pytest.raises(ValueError):
        map_file_name(attrs.evolve(shipped_maps()["Small"], name="a.b"))
    with pytest.raises(ValueError):
        map_file_name(attrs.evolve(shipped_maps()["Small"], name=""))


def test_the_writer_uses_1_plus_owner_and_refuses_zones_that_are_not_open():
    options = CombatOptions(4, 1, bytes((0x10, 0x20, 0x30, 0x01)), (1, 0, 1) + (0,) * 9)
    assert maps.map_letters(options) == "123N"
    with pytest.raises(ValueError):
        maps.map_letters(CombatOptions(1, 1, b"\x12", (0,) * 12))


def test_save_and_load(tmp_path):
    small = shipped_maps()["Small"]
    path = save_map(small, tmp_path)
    assert path.name == "Small.4176275962.map"
    assert load_map(path) == small
    with pytest.raises(MapFileError):
        load_map(tmp_path / "Missing.1.map")


@st.composite
def loadable_options(draw) -> CombatOptions:
    """Options a map file can hold: zones of seats 0 and 1 on open cells only."""
    width = draw(st.integers(1, 12))
    height = draw(st.integers(1, 12))
    kinds = st.sampled_from((0x00, 0x01, 0x02, 0x10, 0x20))
    types = draw(st.lists(kinds, min_size=width * height, max_size=width * height))
    counts = draw(st.lists(st.integers(0, 127), min_size=12, max_size=12))
    name = draw(st.text("abcXYZ_+-09", min_size=1, max_size=10))
    return CombatOptions(width, height, bytes(types), tuple(counts), draw(st.integers(0, 0xFFFF)), name)


@given(loadable_options())
def test_write_then_load_round_trips(options):
    assert parse_map(write_map(options), options.name) == options
    name, number = split_file_name(map_file_name(options))
    assert (name, number) == (options.name, map_hash(options))
