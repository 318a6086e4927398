"""GGZ Combat's rules in the one Stratego core (ggz-combat §4, §7, §8, §10, §11, §16 V4–V14)."""

from __future__ import annotations

import random

import pytest

from gamed.combat.maps import shipped_maps
from gamed.stratego.rules import (
    DEFAULT_ARMY,
    DEFAULT_LAYOUT,
    EMPTY,
    SMALL_ARMY,
    SMALL_LAYOUT,
    T_LAKE,
    T_NULL,
    T_OPEN,
    U_EMPTY,
    Board,
    Check,
    CombatError,
    CombatGame,
    InvalidOptions,
    Layout,
    MoveKind,
    Opt,
    Unit,
    apply_combat_attack,
    attack_values,
    cell_value,
    combat_attack,
    combat_check,
    combat_options_check,
    combat_unit_byte,
    combat_view,
    combat_winner,
    random_placement,
    seat_alive,
)

O = Opt  # short for the tables below


def cell_of_byte(byte: int) -> int:
    """The board cell for a Combat unit byte ``OWNER(seat)|code`` (e.g. 0x15 = seat 0's sergeant)."""
    return cell_value((byte >> 4) - 1, Unit(byte & 0x0F))


def board_of(layout: Layout, units: dict[int, int], seats: int = 2) -> Board:
    """A board holding the given Combat unit bytes."""
    board = Board(layout, seats)
    for cell, byte in units.items():
        board.cells[cell] = cell_of_byte(byte)
    return board


def game_with(layout: Layout, units: dict[int, int], seats=2, options=O.NONE, rng=None):
    """A game in PLAYING with ``units`` on the board and ``remaining`` counted from them. (The
    layout gets whole-board zones so that a small army passes the options check; zones play no
    part once the game runs.)"""
    zoned = layout._replace(zones=(frozenset(range(layout.width * layout.height)),) * seats)
    game = CombatGame(zoned, (1,) + (0,) * 10 + (1,), seats, options, rng)
    game.board = board_of(layout, units, seats)
    game.remaining = [[0] * 12 for _ in range(seats)]
    for byte in units.values():
        game.remaining[(byte >> 4) - 1][byte & 0x0F] += 1
    return game


class StubRandom(random.Random):
    """A Random whose ``randint(1, 100)`` answers the given r values in order."""

    def __init__(self, *rs: int):
        super().__init__(0)
        self.rs = list(rs)

    def randint(self, a, b):
        assert (a, b) == (1, 100)
        return self.rs.pop(0)


# --- maps (§4, §6, §9, §15.4) ---------------------------------------------------------------

DEFAULT_TYPES = bytes([0x10] * 40 + [0, 0, 2, 2, 0, 0, 2, 2, 0, 0] * 2 + [0x20] * 40)


def test_default_types_are_the_v4_vector_and_the_ucc_layout():
    assert DEFAULT_LAYOUT.types() == DEFAULT_TYPES
    assert Layout.from_types(10, 10, DEFAULT_TYPES) == DEFAULT_LAYOUT
    assert Layout.from_letters(10, 10, "1" * 40 + "OOLLOOLLOO" * 2 + "2" * 40) == DEFAULT_LAYOUT


def test_small_map_from_its_letters_gives_the_v5_hash_form_types():
    v5 = "060611110121211101010121010102010121010101112121011111030102010101010101010104"
    hash_form = bytes(b - 1 for b in bytes.fromhex(v5))
    assert hash_form[:2] == bytes([5, 5])
    assert SMALL_LAYOUT.types() == hash_form[2:27]
    assert tuple(hash_form[27:]) == SMALL_ARMY
    assert SMALL_LAYOUT.terrain(12) == T_NULL
    assert SMALL_LAYOUT.zone(0) == frozenset({0, 1, 5, 19, 23, 24})


def test_terrain_zone_owner_and_many_seats():
    # 4x2: a lake inside seat 0's zone, an off-map cell, zones of seats 2 and 14 (owner nibble 0xF).
    types = bytes([0x12, 0x10, 0x01, 0x02, 0x30, 0xF0, 0x00, 0x20])
    layout = Layout.from_types(4, 2, types)
    assert [layout.terrain(c) for c in range(8)] == [T_LAKE, T_OPEN, T_NULL, T_LAKE] + [T_OPEN] * 4
    assert [layout.zone_owner(c) for c in range(8)] == [0, 0, -1, -1, 2, 14, -1, 1]
    assert layout.zone(14) == frozenset({5}) and layout.zone(3) == frozenset() and layout.zone(15) == frozenset()
    assert len(layout.zones) == 15
    assert layout.types() == types
    assert not layout.open(0)  # the zone lake is a lake for the UCC helpers too


def test_any_size_1_to_127():
    assert Layout.from_types(1, 1, b"\x10").zone(0) == frozenset({0})
    big = Layout.from_types(127, 127, bytes(127 * 127))
    assert big.types() == bytes(127 * 127)
    for w, h in ((0, 5), (5, 0), (128, 1), (1, 128)):
        with pytest.raises(ValueError):
            Layout.from_types(w, h, bytes(max(w * h, 1)))
    with pytest.raises(ValueError):
        Layout.from_types(2, 2, bytes(3))
    with pytest.raises(ValueError):
        Layout.from_types(1, 1, b"\x03")


def test_map_loader_letters():
    layout = Layout.from_letters(3, 2, "12LNOx")
    assert layout.types() == bytes([0x10, 0x20, T_LAKE, T_NULL, T_OPEN, T_OPEN])


# --- options check (§10) --------------------------------------------------------------------


@pytest.mark.parametrize(
    "army, seats, code",
    [
        (DEFAULT_ARMY, 2, 0),
        ((0, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1), 2, -12),  # no flag
        ((0, 6) + (0,) * 10, 2, -12),  # no flag and nothing movable: the flag check comes first
        ((1, 6) + (0,) * 10, 2, -13),  # flag and bombs only
        ((1, 50) + (0,) * 10, 2, -13),  # nothing movable and too big: -13 comes first
        ((1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 2), 2, -14),  # 41 units in 40-cell zones
        ((0,) * 11 + (1,), 2, -12),
        ((1,) + (0,) * 10 + (1,), 2, 0),  # a marshal is movable
        ((1, 0, 1) + (0,) * 9, 2, 0),  # a spy is movable
        (DEFAULT_ARMY, 3, -14),  # seat 2 has no zone on the Default map
        (DEFAULT_ARMY, 1, 0),
    ],
)
def test_options_check_codes_and_order(army, seats, code):
    assert combat_options_check(DEFAULT_LAYOUT, army, seats) == code


def test_options_check_ignores_terrain_in_zones_and_passes_shipped_maps():
    # Both zones are lakes only: the size is all that counts.
    layout = Layout.from_types(2, 1, bytes([0x12, 0x22]))
    assert combat_options_check(layout, (1,) + (0,) * 11, 2) == -13
    assert combat_options_check(layout, (1, 0, 0, 0) + (0,) * 8, 2) == -13
    assert combat_options_check(Layout.from_types(2, 1, bytes([0x12, 0x22])), (0, 0, 1) + (0,) * 9, 2) == -12
    assert combat_options_check(SMALL_LAYOUT, SMALL_ARMY, 2) == 0
    assert combat_options_check(SMALL_LAYOUT, (2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4), 2) == -14


def test_a_game_refuses_invalid_options():
    with pytest.raises(InvalidOptions) as e:
        CombatGame(DEFAULT_LAYOUT, (1, 6) + (0,) * 10)
    assert e.value.code == CombatError.OPTIONS_MOVING == -13
    for bad in (0, 16):
        with pytest.raises(ValueError):
            CombatGame(DEFAULT_LAYOUT, DEFAULT_ARMY, seats=bad)
    with pytest.raises(ValueError):
        CombatGame(DEFAULT_LAYOUT, DEFAULT_ARMY[:-1] + (128,))
    with pytest.raises(ValueError):
        CombatGame(DEFAULT_LAYOUT, DEFAULT_ARMY, options=O.RANDOM_OUTCOME)  # no random.Random given


# --- the move checker (§11.1, §16 V13) -------------------------------------------------------

V13_LAYOUT = Layout(5, 5, lakes=frozenset({7, 12}), zones=())
V13_UNITS = {0: 0x15, 2: 0x15, 4: 0x16, 6: 0x14, 16: 0x17, 17: 0x27, 19: 0x11, 20: 0x13, 23: 0x28, 24: 0x20}
V13_BOARD = board_of(V13_LAYOUT, V13_UNITS)

V13 = [
    (0, 25, O.NONE, -2),
    (-1, 0, O.NONE, -2),
    (17, 18, O.NONE, -3),
    (1, 2, O.NONE, -3),
    (2, 2, O.NONE, -4),
    (4, 2, O.NONE, -4),
    (19, 18, O.NONE, -7),
    (19, 18, O.MOVING_BOMB, 1),
    (19, 24, O.MOVING_BOMB, -7),
    (6, 7, O.NONE, -5),
    (6, 10, O.NONE, -9),
    (6, 10, O.ALLOW_DIAGONAL, 1),
    (4, 14, O.NONE, -10),
    (4, 14, O.RUSH_ATTACK, -11),
    (20, 23, O.NONE, -11),
    (20, 23, O.SUPER_SCOUT, 2),
    (20, 23, O.RUSH_ATTACK, 3),
    (20, 23, O.SUPER_SCOUT | O.RUSH_ATTACK, 2),
    (20, 22, O.NONE, 1),
    (2, 17, O.NONE, -10),
    (2, 17, O.SF_SERGEANT, 2),
    (0, 10, O.SF_SERGEANT, -5),
    (0, 10, O.NONE, -10),
    (16, 17, O.NONE, 2),
    (16, 17, O.RUSH_ATTACK, 3),
    (20, 8, O.ALLOW_DIAGONAL, -11),
    (20, 13, O.ALLOW_DIAGONAL, -9),
    (0, 11, O.ALLOW_DIAGONAL | O.RUSH_ATTACK, -9),
]


@pytest.mark.parametrize("source, target, options, code", V13, ids=[f"{s}-{t}-{o!r}" for s, t, o, _ in V13])
def test_v13_move_checker(source, target, options, code):
    assert combat_check(V13_BOARD, 0, source, target, options) == code


def test_check_results_are_the_named_codes():
    assert combat_check(V13_BOARD, 0, 20, 22, O.NONE) is Check.MOVE
    assert combat_check(V13_BOARD, 0, 4, 14, O.NONE) is CombatError.MOVE_BIGMOVE
    assert [e.value for e in CombatError] == list(range(-1, -15, -1))


# Each row breaks several rules; the first in §11.1's order is reported.
ORDER = [
    # (units, turn, source, target, options, code, why)
    ({0: 0x15}, 0, 0, 99, O.NONE, -2, "out of range before an own unit"),
    ({0: 0x25, 1: 0x15}, 0, 0, 1, O.NONE, -3, "wrong turn before suicidal (the target is the mover's own)"),
    ({}, 0, 3, 4, O.NONE, -3, "an empty source is a wrong turn"),
    ({}, 0, 7, 8, O.NONE, -3, "a lake source is a wrong turn"),
    ({0: 0x11, 1: 0x15}, 0, 0, 1, O.MOVING_BOMB, -4, "suicidal before not-moving"),
    ({0: 0x11}, 0, 0, 12, O.NONE, -7, "not-moving before not-open"),
    ({6: 0x11}, 0, 6, 7, O.MOVING_BOMB, -5, "a moving bomb may go only onto open terrain"),
    ({0: 0x10}, 0, 0, 1, O.MOVING_FLAG, 1, "a moving flag steps"),
    ({0: 0x10, 1: 0x25}, 0, 0, 1, O.MOVING_FLAG, -7, "a moving flag never attacks"),
    ({0: 0x10}, 0, 0, 1, O.MOVING_BOMB, -7, "MOVING_BOMB does not move flags"),
    ({0: 0x11}, 0, 0, 2, O.MOVING_BOMB, -10, "a moving bomb steps one cell"),
    ({0: 0x11}, 0, 0, 2, O.MOVING_BOMB | O.RUSH_ATTACK, -11, "under RUSH_ATTACK a long move must end on a unit"),
    ({6: 0x14}, 0, 6, 12, O.NONE, -5, "not-open before diagonal"),
    ({4: 0x16}, 0, 4, 18, O.NONE, -9, "diagonal before big move"),
    ({4: 0x16}, 0, 4, 18, O.ALLOW_DIAGONAL, -10, "big move before 8a"),
    ({20: 0x13, 16: 0x17}, 0, 20, 13, O.ALLOW_DIAGONAL, -9, "8a before the scout's path"),
    ({20: 0x13, 15: 0x27}, 0, 20, 0, O.NONE, -11, "a scout's path must be empty"),
    ({2: 0x13}, 0, 2, 12, O.NONE, -5, "the target's terrain before the scout's path (over the lake at 7)"),
    ({2: 0x13}, 0, 2, 17, O.NONE, -11, "a scout's path must be open (the lakes at 7, 12)"),
    ({20: 0x13, 10: 0x27}, 0, 20, 10, O.NONE, -11, "no long scout attack without SUPER_SCOUT or RUSH_ATTACK"),
    ({20: 0x13, 15: 0x27}, 0, 20, 15, O.NONE, 2, "a scout attacks an adjacent unit"),
    ({20: 0x13, 15: 0x27}, 0, 20, 15, O.RUSH_ATTACK, 2, "an adjacent scout attack is no rush"),
    ({20: 0x13}, 0, 20, 0, O.RUSH_ATTACK, 1, "a long scout move onto nothing is a move"),
    ({9: 0x13, 21: 0x27}, 0, 9, 21, O.ALLOW_DIAGONAL | O.SUPER_SCOUT, 2, "a long diagonal scout attack"),
    ({9: 0x13, 21: 0x27}, 0, 9, 21, O.ALLOW_DIAGONAL, -11, "no long diagonal attack without SUPER_SCOUT"),
    ({9: 0x13, 13: 0x15, 21: 0x27}, 0, 9, 21, O.ALLOW_DIAGONAL | O.SUPER_SCOUT, -11, "blocked diagonal"),
    ({24: 0x13, 0: 0x27}, 0, 24, 0, O.ALLOW_DIAGONAL | O.SUPER_SCOUT, -11, "a diagonal over the lake at 12"),
    ({2: 0x15, 17: 0x27}, 0, 2, 17, O.SF_SERGEANT | O.RUSH_ATTACK, 2, "a special-forces sergeant never rushes"),
    ({11: 0x15, 12: 0x27}, 0, 11, 12, O.SF_SERGEANT | O.RUSH_ATTACK, -5, "no unit stands in a lake"),
    ({6: 0x15, 11: 0x27}, 0, 6, 11, O.SF_SERGEANT | O.RUSH_ATTACK, 2, "adjacent SF sergeant attack"),
    ({6: 0x15, 11: 0x27}, 0, 6, 11, O.RUSH_ATTACK, 3, "a plain sergeant rushes under RUSH_ATTACK"),
    ({2: 0x15}, 0, 2, 17, O.SF_SERGEANT, 1, "a sergeant jumps over lakes onto an empty cell"),
    ({2: 0x15}, 0, 2, 22, O.SF_SERGEANT, -5, "over lakes only (17 is open)"),
    ({1: 0x15}, 0, 1, 21, O.SF_SERGEANT, -5, "only over lakes"),
    ({2: 0x16, 22: 0x27}, 0, 2, 22, O.RUSH_ATTACK, -5, "a rush path must be open: -5 before the end rule"),
    ({1: 0x16}, 0, 1, 16, O.RUSH_ATTACK, -11, "a rush must end on a unit"),
    ({1: 0x16, 11: 0x25, 16: 0x27}, 0, 1, 16, O.RUSH_ATTACK, -5, "a rush path must be empty"),
    ({1: 0x16, 16: 0x27}, 0, 1, 16, O.RUSH_ATTACK, 3, "a long rush"),
    ({5: 0x16, 23: 0x27}, 0, 5, 23, O.RUSH_ATTACK | O.ALLOW_DIAGONAL, 3, "a diagonal rush"),
    ({0: 0x16, 18: 0x27}, 0, 0, 18, O.RUSH_ATTACK | O.ALLOW_DIAGONAL, -5, "a diagonal rush over the lake at 12"),
    ({16: 0x27, 11: 0x15}, 1, 16, 11, O.NONE, 2, "seat 1's turn"),
    ({16: 0x27, 11: 0x15}, 0, 16, 11, O.NONE, -3, "seat 1's unit on seat 0's turn"),
]


@pytest.mark.parametrize("units, turn, source, target, options, code, why", ORDER, ids=[r[-1] for r in ORDER])
def test_check_order(units, turn, source, target, options, code, why):
    assert combat_check(board_of(V13_LAYOUT, units), turn, source, target, options) == code, why


def test_off_map_cells_and_the_row_edges():
    layout = Layout.from_letters(3, 3, "1N2" "OOO" "OOO")
    board = board_of(layout, {0: 0x13, 3: 0x23})
    assert combat_check(board, 0, 0, 1, O.NONE) == -5  # off-map target
    assert combat_check(board, 0, 0, 2, O.NONE) == -11  # over an off-map cell
    # A step from the right edge to the next row's first cell is a long diagonal, not a step right.
    board = board_of(layout, {5: 0x15, 6: 0x25})
    assert combat_check(board, 0, 5, 6, O.NONE) == -9
    assert combat_check(board, 0, 5, 6, O.ALLOW_DIAGONAL) == -10


def test_the_sender_must_be_the_seat_to_play():
    game = game_with(V13_LAYOUT, {**V13_UNITS, 1: 0x10})
    before = list(game.board.cells)
    result = game.request_move(1, 17, 18)
    assert (result.kind, result.code, result.seat) == (MoveKind.ERROR, -3, 1)
    assert game.board.cells == before and game.turn == 0
    # A legal move of the seat to play, sent by another seat, is refused the same way.
    assert game.request_move(1, 20, 22).code == -3 and game.board.cells == before
    result = game.request_move(0, 4, 14)
    assert (result.kind, result.code) == (MoveKind.ERROR, -10) and game.turn == 0 and game.board.cells == before


# --- attack resolution (§11.3, §16 V14) ------------------------------------------------------

NO_RANDOM = [
    # (A, D, options, (fA, fD))
    (11, 7, O.NONE, (-11, 7)),
    (3, 0, O.NONE, (-3, 0)),
    (2, 0, O.TERRORIST_SPY | O.RANDOM_OUTCOME | O.ONE_TIME_BOMB, (-2, 0)),
    (11, 0, O.RANDOM_OUTCOME, (-11, 0)),
    (4, 1, O.NONE, (-4, 1)),
    (4, 1, O.ONE_TIME_BOMB | O.RANDOM_OUTCOME, (-4, 1)),
    (7, 1, O.NONE, (7, -1)),
    (11, 1, O.RANDOM_OUTCOME | O.TERRORIST_SPY, (11, -1)),
    (2, 1, O.TERRORIST_SPY, (2, -1)),
    (7, 1, O.ONE_TIME_BOMB, (-7, -1)),
    (2, 1, O.ONE_TIME_BOMB, (-2, -1)),
    (2, 3, O.TERRORIST_SPY, (-2, -3)),
    (2, 10, O.TERRORIST_SPY | O.RANDOM_OUTCOME, (-2, -10)),  # TERRORIST_SPY comes before RANDOM_OUTCOME
    (2, 2, O.TERRORIST_SPY, (-2, -2)),
    (2, 2, O.NONE, (-2, -2)),
    (2, 5, O.NONE, (2, -5)),
    (3, 2, O.NONE, (-3, 2)),
    (10, 2, O.NONE, (-10, 2)),
    (2, 5, O.RANDOM_OUTCOME, (2, -5)),  # a spy never fights at random
    (5, 2, O.RANDOM_OUTCOME, (-5, 2)),
    (9, 4, O.NONE, (-9, 4)),
    (4, 9, O.NONE, (4, -9)),
    (6, 6, O.NONE, (-6, -6)),
    (10, 10, O.ONE_TIME_BOMB, (-10, -10)),
    (2, 11, O.NONE, (-2, 11)),
    (2, 11, O.TERRORIST_SPY, (-2, -11)),
    (2, 11, O.RANDOM_OUTCOME, (-2, 11)),
    (2, 11, O.RANDOM_OUTCOME | O.TERRORIST_SPY, (-2, -11)),
    (11, 11, O.NONE, (-11, -11)),
    (10, 11, O.NONE, (10, -11)),
    (3, 11, O.TERRORIST_SPY, (3, -11)),
]


@pytest.mark.parametrize("a, d, options, pair", NO_RANDOM, ids=[f"{a}-{d}-{o!r}" for a, d, o, _ in NO_RANDOM])
def test_attack_table(a, d, options, pair):
    # A Random that must not be used: any draw fails.
    assert combat_attack(Unit(a), Unit(d), options, rng=StubRandom()) == pair


# V14's RANDOM_OUTCOME rows: (A, D, r, (fA, fD)).
V14_RANDOM = [
    (7, 5, 41, (-7, 5)),
    (7, 5, 42, (-7, -5)),
    (7, 5, 78, (-7, -5)),
    (7, 5, 79, (7, -5)),
    (5, 7, 41, (5, -7)),
    (5, 7, 78, (-5, -7)),
    (5, 7, 79, (-5, 7)),
    (9, 11, 41, (9, -11)),
    (9, 11, 78, (-9, -11)),
    (9, 11, 79, (-9, 11)),
    (11, 11, 30, (11, -11)),
    (11, 11, 31, (-11, -11)),
    (11, 11, 71, (-11, 11)),
]


@pytest.mark.parametrize("a, d, r, pair", V14_RANDOM)
def test_v14_random_outcome(a, d, r, pair):
    assert combat_attack(Unit(a), Unit(d), O.RANDOM_OUTCOME, rng=StubRandom(r)) == pair


ODDS = dict(enumerate([(30, 70), (35, 74), (41, 78), (49, 82), (56, 85), (64, 88), (71, 91), (77, 92), (84, 95)]))


def random_pairs():
    """Every (A, D) that fights at random, with its difference d and whether the attacker is the
    stronger side."""
    for a in range(3, 12):
        for d in range(3, 12):
            if d == 11:
                yield a, d, 11 - a, False  # the marshal is the stronger, even against a marshal
            elif a != 11:
                yield a, d, abs(a - d), a >= d
    # A marshal attacking a 3..10 is the plain row: the attacker is stronger.


@pytest.mark.parametrize("a, d, diff, attacker_stronger", list(random_pairs()))
def test_random_outcome_at_the_boundaries_and_over_every_r(a, d, diff, attacker_stronger):
    p, q = ODDS[diff]
    stronger_wins = (-a, d) if attacker_stronger else (a, -d)
    weaker_wins = (a, -d) if attacker_stronger else (-a, d)
    both = (-a, -d)

    def fight(r):
        return combat_attack(Unit(a), Unit(d), O.RANDOM_OUTCOME, rng=StubRandom(r))

    expected = [stronger_wins, stronger_wins, both, both, weaker_wins, weaker_wins]
    assert [fight(r) for r in (1, p, p + 1, q, q + 1, 100)] == expected
    outcomes = [fight(r) for r in range(1, 101)]
    counts = outcomes.count(stronger_wins), outcomes.count(both), outcomes.count(weaker_wins)
    assert counts == (p, q - p, 100 - q)


def test_random_outcome_with_a_seeded_random_follows_the_odds_and_repeats():
    def run(seed, n=20000):
        rng = random.Random(seed)
        return [combat_attack(Unit.CAPTAIN, Unit.SERGEANT, O.RANDOM_OUTCOME, rng=rng) for _ in range(n)]

    first = run(7)
    assert first == run(7)  # the injected Random makes the outcomes reproducible
    p, q = ODDS[2]
    for pair, share in (((-7, 5), p), ((-7, -5), q - p), ((7, -5), 100 - q)):
        assert abs(first.count(pair) / len(first) - share / 100) < 0.015


def test_random_outcome_needs_a_random():
    with pytest.raises(ValueError):
        combat_attack(Unit.CAPTAIN, Unit.SERGEANT, O.RANDOM_OUTCOME)


# --- rush (§11.3) ----------------------------------------------------------------------------

RUSH = [
    (11, 10, O.NONE, (-11, -10)),  # a win becomes both removed
    (3, 0, O.NONE, (-3, 0)),  # a rusher that captures a flag survives
    (4, 1, O.NONE, (-4, -1)),
    (7, 8, O.NONE, (7, -8)),  # a loss stays a loss
    (7, 1, O.NONE, (7, -1)),
    (7, 1, O.ONE_TIME_BOMB, (-7, -1)),
    (6, 6, O.NONE, (-6, -6)),
    (2, 11, O.NONE, (-2, -11)),  # even the spy's kill costs the rushing spy
    (7, 5, O.RANDOM_OUTCOME, (-7, -5)),  # r = 41: the attacker "wins"
]


@pytest.mark.parametrize("a, d, options, pair", RUSH)
def test_rush_makes_fd_negative(a, d, options, pair):
    assert combat_attack(Unit(a), Unit(d), options, rush=True, rng=StubRandom(41)) == pair


def test_v10_adjacent_marshal_attacks_a_general_with_and_without_rush():
    layout = Layout(4, 4, frozenset(), ())
    for options, expected in ((O.RUSH_ATTACK, (6, -11, 10, -10)), (O.NONE, (6, -11, 10, 10))):
        game = game_with(layout, {6: 0x1B, 10: 0x2A, 0: 0x10, 1: 0x13, 15: 0x20, 14: 0x23}, options=options)
        result = game.request_move(0, 6, 10)
        assert result.code == (3 if options else 2)
        assert result.attack_for(0) == result.attack_for(1) == expected
        assert game.board.cells[6] == EMPTY
        assert game.board.cells[10] == (EMPTY if options else cell_value(0, Unit.MARSHAL))
        assert game.remaining[1][Unit.GENERAL] == 0
        assert game.remaining[0][Unit.MARSHAL] == (0 if options else 1)


def test_a_rushing_unit_captures_a_flag_and_ends_the_game():
    game = game_with(V13_LAYOUT, {1: 0x16, 16: 0x20, 0: 0x10, 24: 0x23}, options=O.RUSH_ATTACK)
    result = game.request_move(0, 1, 16)
    assert (result.kind, result.code, result.pair, result.defender) == (MoveKind.ATTACK, 3, (-6, 0), 1)
    assert game.board.cells[16] == cell_value(0, Unit.LIEUTENANT) and game.board.cells[1] == EMPTY
    assert game.remaining[1][Unit.FLAG] == 0
    assert result.winner == game.winner == 0 and game.over


# --- board and counts (§11.3), the game (§11.2) ---------------------------------------------


@pytest.mark.parametrize(
    "pair, source_after, target_after, lost",
    [
        ((-9, 4), EMPTY, cell_value(0, Unit.COLONEL), [(1, Unit.MINER)]),
        ((9, -11), EMPTY, cell_value(1, Unit.MINER), [(0, Unit.COLONEL)]),
        ((-9, -4), EMPTY, EMPTY, [(0, Unit.COLONEL), (1, Unit.MINER)]),
    ],
)
def test_board_and_counts_after_an_attack(pair, source_after, target_after, lost):
    board = board_of(DEFAULT_LAYOUT, {35: 0x19, 45: 0x24})
    remaining = [list(DEFAULT_ARMY), list(DEFAULT_ARMY)]
    apply_combat_attack(board, remaining, 35, 45, pair)
    assert (board.cells[35], board.cells[45]) == (source_after, target_after)
    expected = [list(DEFAULT_ARMY), list(DEFAULT_ARMY)]
    for seat, unit in lost:
        expected[seat][unit] -= 1
    assert remaining == expected


def test_a_move_a_turn_and_the_error_form_in_a_game():
    game = game_with(V13_LAYOUT, {**V13_UNITS, 1: 0x10}, options=O.SUPER_SCOUT)
    result = game.request_move(0, 20, 22)
    assert (result.kind, result.code, result.source, result.target) == (MoveKind.MOVE, 1, 20, 22)
    assert result.winner is None
    assert game.board.cells[22] == cell_value(0, Unit.SCOUT) and game.board.cells[20] == EMPTY and game.turn == 1
    result = game.request_move(1, 23, 22)  # seat 1's major takes the scout
    assert result.kind is MoveKind.ATTACK and result.pair == (-8, 3) and result.defender == 0
    assert game.remaining[0][Unit.SCOUT] == 0 and game.turn == 0
    assert game.request_move(0, 19, 18).code == -7 and game.turn == 0


def test_turns_rotate_through_every_seat_with_next():
    layout = Layout.from_types(3, 3, bytes([0x10, 0x20, 0x30, 0, 0, 0, 0, 0, 0]))
    game = game_with(layout, {0: 0x10, 3: 0x13, 1: 0x20, 4: 0x23, 2: 0x30, 5: 0x33}, seats=3)
    for seat, (source, target) in enumerate(((3, 6), (4, 7), (5, 8))):
        assert game.turn == seat
        assert game.request_move(seat, source, target).kind is MoveKind.MOVE
    assert game.turn == 0


# --- ATTACK values per recipient (§11.4, §16 V10, V14) ----------------------------------------

MASKS = [
    # (A, D, options, seat 0 sees, seat 1 sees)
    (3, 0, O.SILENT_DEFENSE, (-3, 12), (-3, 0)),
    (7, 9, O.SILENT_DEFENSE, (7, -12), (7, -9)),
    (11, 7, O.SILENT_OFFENSE, (-11, 7), (-12, 7)),
    (11, 7, O.UNKNOWN_VICTOR, (-11, 7), (-12, 7)),
    (5, 7, O.UNKNOWN_VICTOR, (5, -12), (5, -7)),
    (7, 7, O.UNKNOWN_VICTOR, (-7, -12), (-12, -7)),
    (3, 0, O.UNKNOWN_VICTOR, (-3, 0), (-12, 0)),  # the captured flag is no winner: not masked
    (5, 7, O.SILENT_OFFENSE, (5, -7), (12, -7)),
    (7, 7, O.SILENT_OFFENSE | O.SILENT_DEFENSE, (-7, -12), (-12, -7)),
    (11, 7, O.OPEN_MAP | O.SHOW_ENEMY_UNITS, (-11, 7), (-11, 7)),
    (11, 7, O.OPEN_MAP | O.SILENT_OFFENSE, (-11, 7), (-12, 7)),  # OPEN_MAP unmasks nothing
]


@pytest.mark.parametrize("a, d, options, seen0, seen1", MASKS)
def test_attack_values_per_recipient(a, d, options, seen0, seen1):
    pair = combat_attack(Unit(a), Unit(d), options)
    assert attack_values(pair, 0, 1, 0, options) == seen0
    assert attack_values(pair, 0, 1, 1, options) == seen1


def test_a_third_seat_sees_both_sides_masked():
    options = O.SILENT_OFFENSE | O.SILENT_DEFENSE
    assert attack_values((-11, 7), 2, 0, 1, options) == (-12, 12)
    assert attack_values((-11, 7), 2, 0, 2, options) == (-11, 12)
    assert attack_values((-11, 7), 2, 0, 0, options) == (-12, 7)
    assert attack_values((-7, -7), 2, 0, 1, O.UNKNOWN_VICTOR) == (-12, -12)
    assert attack_values((7, -9), 2, 0, 1, O.UNKNOWN_VICTOR) == (7, -12)


V9_SEAT0 = "00000005000000291112121212121213141414141414141415151515151616161617171717181818181919191a1a1b1c00"
V9_SEAT1 = "00000005000000292c2b2a2a29292928282828272727272626262625252525252424242424242424232222222222222100"
V11_SEAT1 = (
    "0000000c0000006702041d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d10101010"
    "101010101010101010101010101010101d2c2b2a2a29292928281028272727272626262625252525252424242424"
    "242424232222222222222100"
)


def string_content(message_hex: str) -> bytes:
    """The decoded (-1) content of a message made of an opcode and one +1-encoded string."""
    raw = bytes.fromhex(message_hex)
    size = int.from_bytes(raw[4:8], "big")
    assert len(raw) == 8 + size and raw[-1] == 0
    return bytes(b - 1 for b in raw[8:-1])


def test_v9_v10_v11_default_game_attack_and_seat_1s_sync():
    game = CombatGame(DEFAULT_LAYOUT, DEFAULT_ARMY)
    assert game.accept_setup(0, string_content(V9_SEAT0)) and not game.all_set_up
    assert game.accept_setup(1, string_content(V9_SEAT1)) and game.all_set_up
    assert game.board.cells[0] == cell_value(0, Unit.FLAG) and game.board.cells[60] == cell_value(1, Unit.MARSHAL)
    assert game.request_move(0, 39, 49).kind is MoveKind.MOVE
    assert game.request_move(1, 69, 59).kind is MoveKind.MOVE
    result = game.request_move(0, 49, 59)
    assert result.attack_for(0) == result.attack_for(1) == (0x31, -11, 0x3B, 7)
    sync = string_content(V11_SEAT1)
    assert sync[:2] == bytes([game.turn, 3])  # turn 1, PLAYING
    assert game.view(1) == sync[2:]


# --- game over (§11.5) -----------------------------------------------------------------------


def test_alive_uses_the_counts():
    assert seat_alive(DEFAULT_ARMY)
    assert not seat_alive((0,) + DEFAULT_ARMY[1:])
    assert not seat_alive((1, 6) + (0,) * 10)  # bombs do not count, even if they may move
    assert seat_alive((1, 0, 1) + (0,) * 9)
    assert combat_winner([DEFAULT_ARMY, DEFAULT_ARMY]) is None
    assert combat_winner([DEFAULT_ARMY, (0,) * 12]) == 0
    assert combat_winner([(0,) * 12, (1, 1) + (0,) * 10]) == -1
    assert combat_winner([(0,) * 12, DEFAULT_ARMY, (0,) * 12]) == 1
    assert combat_winner([DEFAULT_ARMY, (0,) * 12, DEFAULT_ARMY]) is None


def test_flag_capture_wins_and_the_game_then_refuses_moves():
    game = game_with(V13_LAYOUT, {0: 0x13, 5: 0x10, 19: 0x25, 24: 0x20}, options=O.SUPER_SCOUT)
    assert game.request_move(0, 0, 4).kind is MoveKind.MOVE
    assert game.request_move(1, 19, 18).kind is MoveKind.MOVE
    result = game.request_move(0, 4, 24)  # a long scout attack on the flag
    assert (result.kind, result.code, result.pair, result.defender) == (MoveKind.ATTACK, 2, (-3, 0), 1)
    assert result.winner == 0
    assert game.board.cells[24] == cell_value(0, Unit.SCOUT) and game.board.cells[4] == EMPTY
    assert game.remaining[1][Unit.FLAG] == 0 and game.remaining[0] == [1, 0, 0, 1] + [0] * 8
    assert game.winner == 0 and game.turn == 1  # the turn is advanced before the test
    before = list(game.board.cells)
    again = game.request_move(1, 18, 13)
    assert (again.kind, again.winner) == (MoveKind.GAME_OVER, 0)
    assert game.board.cells == before and game.turn == 1
    assert game.request_move(0, 24, 23).kind is MoveKind.GAME_OVER


def test_losing_the_last_movable_unit_loses():
    game = game_with(V13_LAYOUT, {0: 0x10, 5: 0x15, 24: 0x20, 23: 0x21, 10: 0x27})
    result = game.request_move(0, 5, 10)
    assert result.pair == (5, -7) and result.winner == 1 and game.winner == 1


def test_trading_off_the_last_movable_units_is_a_draw_minus_1():
    game = game_with(V13_LAYOUT, {0: 0x10, 5: 0x17, 24: 0x20, 10: 0x27})
    result = game.request_move(0, 5, 10)
    assert result.pair == (-7, -7) and result.winner == -1 and game.winner == -1 and game.over
    assert game.request_move(1, 24, 19).kind is MoveKind.GAME_OVER


def test_a_walled_in_unit_still_counts():
    # Seat 0's scout on 0 cannot move (own bombs around it): seat 0 is alive all the same.
    game = game_with(V13_LAYOUT, {0: 0x13, 1: 0x11, 5: 0x11, 6: 0x10, 24: 0x20, 23: 0x25})
    assert game.request_move(0, 0, 1).code == -4 and game.request_move(0, 0, 5).code == -4
    game.turn = 1
    assert game.request_move(1, 23, 22).winner is None and not game.over


def test_with_three_seats_two_beaten_at_once_leave_the_third_the_winner():
    layout = Layout.from_types(3, 3, bytes([0x10, 0x20, 0x30, 0, 0, 0, 0, 0, 0]))
    #   0:F0  1:F1  2:F2
    #   3:S0  4:S1  5:S2      (S = scout)
    game = game_with(layout, {0: 0x10, 3: 0x13, 1: 0x20, 4: 0x23, 2: 0x30, 5: 0x33}, seats=3)
    assert game.request_move(0, 3, 6).kind is MoveKind.MOVE
    assert game.request_move(1, 4, 7).kind is MoveKind.MOVE
    assert game.request_move(2, 5, 8).kind is MoveKind.MOVE
    result = game.request_move(0, 6, 3)
    result = game.request_move(1, 7, 4)
    result = game.request_move(2, 8, 5)
    result = game.request_move(0, 3, 4)  # seat 0's scout takes seat 1's scout: both removed
    assert result.pair == (-3, -3)
    assert game.remaining[1] == [1] + [0] * 11 and game.remaining[0] == [1] + [0] * 11
    # Seats 0 and 1 are beaten (no movable unit left), seat 2 is alive: it has won.
    assert result.winner == game.winner == 2


def test_with_three_seats_the_game_goes_on_while_two_live():
    layout = Layout.from_types(3, 3, bytes([0x10, 0x20, 0x30, 0, 0, 0, 0, 0, 0]))
    game = game_with(layout, {0: 0x10, 3: 0x13, 1: 0x20, 4: 0x23, 2: 0x30, 5: 0x33}, seats=3)
    #   0:F0  1:F1  2:F2
    #   3:S0  4:S1  5:S2
    #   6     7     8
    moves = [(0, 3, 6), (1, 4, 3), (2, 5, 4), (0, 6, 7)]
    for seat, source, target in moves:
        assert game.request_move(seat, source, target).kind is MoveKind.MOVE
    result = game.request_move(1, 3, 0)  # seat 1's scout takes seat 0's flag
    assert result.pair == (-3, 0) and result.winner is None  # seats 1 and 2 live on
    assert not seat_alive(game.remaining[0]) and game.remaining[0][Unit.SCOUT] == 1
    # Seat 0 is beaten but keeps its turn slot and its scout, which can still fight.
    for seat, source, target in [(2, 4, 5), (0, 7, 4), (1, 0, 3), (2, 5, 8)]:
        assert game.turn == seat
        assert game.request_move(seat, source, target).kind is MoveKind.MOVE
    result = game.request_move(0, 4, 1)  # seat 0's scout takes seat 1's flag
    assert result.pair == (-3, 0) and result.winner == 2 == game.winner


# --- random placement (§11.7) ----------------------------------------------------------------


# 15 seats (owner nibbles 1..15): column s of the two top rows is seat s's zone.
FIFTEEN_SEATS = Layout.from_types(15, 3, bytes([(s + 1) << 4 for s in range(15)] * 2 + [0, 2] * 7 + [1]))


def zone_units(board: Board, seat: int) -> list[int]:
    counts = [0] * 12
    for cell in board.layout.zone(seat):
        value = board.cells[cell]
        assert value != EMPTY and value >> 4 == seat
        counts[value & 0x0F] += 1
    return counts


@pytest.mark.parametrize(
    "layout, army, seats",
    [
        (DEFAULT_LAYOUT, DEFAULT_ARMY, 2),
        (SMALL_LAYOUT, SMALL_ARMY, 2),
        (FIFTEEN_SEATS, (1,) + (0,) * 10 + (1,), 15),
    ],
)
def test_random_setup_fills_each_zone_with_the_template(layout, army, seats):
    game = CombatGame(layout, army, seats, O.RANDOM_SETUP, rng=random.Random(11))
    game.place_randomly()
    assert game.all_set_up
    for seat in range(seats):
        if layout.zone(seat):
            assert zone_units(game.board, seat) == list(army)
    zones = set().union(*layout.zones)
    assert all(game.board.cells[c] == EMPTY for c in range(len(game.board.cells)) if c not in zones)
    again = CombatGame(layout, army, seats, O.RANDOM_SETUP, rng=random.Random(11))
    again.place_randomly()
    assert again.board.cells == game.board.cells


SHIPPED = shipped_maps()


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_map_passes_the_check_and_is_filled_by_random_setup(name):
    options = SHIPPED[name]
    layout = Layout.from_types(options.width, options.height, options.types)
    assert layout.types() == bytes(options.types)
    assert layout.zones == options.layout(2).zones
    assert combat_options_check(layout, options.army, 2) == 0
    game = CombatGame(layout, options.army, 2, options.options | O.RANDOM_SETUP, rng=random.Random(name))
    game.place_randomly()
    for seat in (0, 1):
        assert zone_units(game.board, seat) == list(options.army)  # zone size = army total on every map


def test_random_setup_takes_the_kth_empty_zone_cell_in_index_order():
    class First(random.Random):
        calls: list[int] = []

        def randrange(self, n):
            self.calls.append(n)
            return 0

    rng = First()
    board = Board(SMALL_LAYOUT, 2)
    random_placement(board, 1, SMALL_ARMY, rng)
    # zone 1 in index order: 3, 4, 9, 15, 20, 21; units in code order: F F s 1 1 1
    assert [board.cells[c] for c in (3, 4, 9, 15, 20, 21)] == [
        cell_value(1, u) for u in (Unit.FLAG, Unit.FLAG, Unit.SPY, Unit.MARSHAL, Unit.MARSHAL, Unit.MARSHAL)
    ]
    assert rng.calls == [6, 5, 4, 3, 2, 1]


def test_random_setup_uses_lake_zone_cells_and_skips_occupied_ones():
    layout = Layout.from_types(3, 1, bytes([0x12, 0x10, 0x10]))
    board = Board(layout, 1)
    board.place(1, 0, Unit.SCOUT)
    random_placement(board, 0, (1, 0, 0, 1) + (0,) * 8, random.Random(3))
    assert sorted(board.cells) == sorted([cell_value(0, Unit.SCOUT)] * 2 + [cell_value(0, Unit.FLAG)])
    with pytest.raises(ValueError):
        random_placement(board, 0, (1,) + (0,) * 11, random.Random(3))


def test_random_placement_is_uniform_over_the_zone():
    seen = {cell: 0 for cell in SMALL_LAYOUT.zone(0)}
    rng = random.Random(5)
    for _ in range(3000):
        board = Board(SMALL_LAYOUT, 2)
        random_placement(board, 0, (1,) + (0,) * 11, rng)
        seen[board.cells.index(cell_value(0, Unit.FLAG))] += 1
    assert all(abs(n / 3000 - 1 / 6) < 0.03 for n in seen.values())


# --- setups (§7) and views (§8) --------------------------------------------------------------


def test_setup_validation():
    game = CombatGame(SMALL_LAYOUT, SMALL_ARMY)
    good = bytes([0x10, 0x10, 0x12, 0x1B, 0x1B, 0x1B])
    assert not game.accept_setup(0, good[:-1])  # length
    assert not game.accept_setup(0, bytes([0x20]) + good[1:])  # another seat's owner
    assert not game.accept_setup(0, good[:-1] + bytes([0x1C]))  # code 12
    assert not game.accept_setup(0, good[:-1] + bytes([0x1A]))  # counts
    assert not game.accept_setup(0, bytes([0x00]) + good[1:])  # no owner nibble
    assert game.board.cells == Board(SMALL_LAYOUT, 2).cells
    assert game.accept_setup(0, good)
    assert [game.board.cells[c] for c in (0, 1, 5, 19, 23, 24)] == [cell_of_byte(b) for b in good]
    assert not game.accept_setup(0, good)  # already sent
    game.remove_setup(0)
    assert game.board.cells == Board(SMALL_LAYOUT, 2).cells and not game.setup_done
    assert game.accept_setup(0, good)


def test_setup_with_empty_cells_when_the_zone_is_bigger():
    game = CombatGame(SMALL_LAYOUT, (1, 0, 0, 1) + (0,) * 8)
    assert game.accept_setup(1, bytes([0x0F, 0x2F, 0x20, 0x0F, 0x23, 0x0F]))
    assert [game.board.cells[c] for c in (3, 4, 9, 15, 20, 21)] == [
        EMPTY, EMPTY, cell_value(1, Unit.FLAG), EMPTY, cell_value(1, Unit.SCOUT), EMPTY
    ]


def test_views_own_full_and_at_start():
    board = board_of(SMALL_LAYOUT, {0: 0x10, 1: 0x1B, 3: 0x20, 4: 0x22})
    own0 = combat_view(board, 0)
    assert own0[:5] == bytes([0x10, 0x1B, U_EMPTY, 0x2C, 0x2C])
    assert combat_view(board, 1)[:5] == bytes([0x1C, 0x1C, U_EMPTY, 0x20, 0x22])
    assert combat_view(board, None)[:5] == bytes([0x10, 0x1B, U_EMPTY, 0x20, 0x22])
    assert own0[12] == U_EMPTY and len(own0) == 25  # the off-map cell is a plain empty byte
    assert combat_view(board, 2)[:5] == bytes([0x1C, 0x1C, U_EMPTY, 0x2C, 0x2C])  # a seat with no units
    assert [combat_unit_byte(c) for c in board.cells[:5]] == [0x10, 0x1B, U_EMPTY, 0x20, 0x22]
    for options, full in ((O.NONE, False), (O.SHOW_ENEMY_UNITS | O.HIDE_UNIT_LIST, False), (O.OPEN_MAP, True)):
        game = CombatGame(SMALL_LAYOUT, SMALL_ARMY, options=options)
        game.board = board
        assert game.start_view(0) == (combat_view(board, None) if full else own0)
        assert game.view(0) == own0  # REQ_SYNC is the own view, even under OPEN_MAP
        assert game.view(None) == combat_view(board, None)
