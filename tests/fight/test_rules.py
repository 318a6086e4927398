"""Virtual Fight rules (gamed.fight.rules) as pure Python: maps and their validation (spec §4),
initial facing, sight (§6), moves and the one-action rule (§5), the shot batch (§7), the end of
the game (§8) and a team leaving. Property tests check board invariants under random play."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.fight.rules import (
    Battle,
    Command,
    Dir,
    FightMap,
    Hit,
    MapError,
    Result,
    Verb,
    default_map,
    judge,
    parse_map,
    resolve_map,
)
from gamed.fight.wire import parse_command
from tests.fight.harness import arena, open_map, place

# The map of spec §4, copied from the spec (not from the implementation).
SPEC_MAP = """\
....................
....................
.........##.........
.0..............#...
.....#..........#.1.
.....#.....#.##.....
.0...#.....#........
.........#........1.
.........##.........
.0...........###....
....###...........1.
.........##.........
.0........#.........
........#.....#...1.
.....##.#.....#.....
.0.#..........#.....
...#..............1.
.........##.........
....................
....................
""".splitlines()

MOVE, SHOOT, NONE, POS, DIR, SAW = Verb.MOVE, Verb.SHOOT, Verb.NONE, Verb.POS, Verb.DIR, Verb.SAW
UP, DOWN, LEFT, RIGHT = Dir.UP, Dir.DOWN, Dir.LEFT, Dir.RIGHT


def do(battle, team, number, verb, direction=None):
    """Execute one command; return its reply line."""
    code, text = battle.execute(team, Command(number, verb, direction))
    return text


def state(battle):
    """Every warrior's square, facing and life, plus the bodies: what a rejected command must keep."""
    return (
        [(w.team, w.number, w.square, w.facing, w.alive) for team in battle.warriors for w in team],
        frozenset(battle.bodies),
    )


def text_map(rows):
    return "\n".join(rows) + "\n"


def blank(rows, cols):
    return [["."] * cols for _ in range(rows)]


def two_team_rows(rows=6, cols=7, walls=()):
    """A valid 2-team map as text rows: team 0 on row 0, team 1 mirrored on the last row."""
    grid = blank(rows, cols)
    for c in range(5):
        grid[0][c] = "0"
        grid[rows - 1][cols - 1 - c] = "1"
    for r, c in walls:
        grid[r][c] = "#"
        grid[rows - 1 - r][cols - 1 - c] = "#"
    return ["".join(row) for row in grid]


# --- maps (spec §4) ----------------------------------------------------------------------------


def test_default_map_is_the_spec_map_20x20_with_two_teams():
    fmap = default_map()
    assert (fmap.rows, fmap.cols, fmap.teams) == (20, 20, 2)
    spec_walls = {(r, c) for r, line in enumerate(SPEC_MAP) for c, ch in enumerate(line) if ch == "#"}
    assert fmap.walls == spec_walls
    for team in (0, 1):
        spec_starts = [(r, c) for r, line in enumerate(SPEC_MAP) for c, ch in enumerate(line) if ch == str(team)]
        assert list(fmap.starts[team]) == spec_starts  # reading order: row, then column


def test_default_map_facings_team0_right_team1_left():
    fmap = default_map()
    assert fmap.facing(0) is RIGHT
    assert fmap.facing(1) is LEFT
    battle = Battle(fmap, 2)
    assert {w.facing for w in battle.warriors[0]} == {RIGHT}
    assert {w.facing for w in battle.warriors[1]} == {LEFT}


def test_warriors_are_numbered_in_reading_order_of_their_start_squares():
    battle = Battle(default_map(), 2)
    assert [w.square for w in battle.warriors[0]] == [(3, 1), (6, 1), (9, 1), (12, 1), (15, 1)]
    assert [w.square for w in battle.warriors[1]] == [(4, 18), (7, 18), (10, 18), (13, 18), (16, 18)]
    assert [w.number for w in battle.warriors[1]] == [0, 1, 2, 3, 4]


def test_start_squares_are_floor():
    fmap = parse_map(text_map(two_team_rows()))
    assert not fmap.walls & {sq for team in fmap.starts for sq in team}


def test_parse_map_accepts_crlf_and_trailing_blank_lines():
    rows = two_team_rows()
    assert parse_map("\r\n".join(rows) + "\r\n\r\n") == parse_map(text_map(rows))


def test_map_with_unequal_widths_is_rejected():
    rows = two_team_rows()
    rows[2] = rows[2] + "."
    with pytest.raises(MapError, match=r"(?i)row 2.*width"):
        parse_map(text_map(rows))


def test_map_with_a_bad_character_is_rejected_naming_it_and_where():
    rows = two_team_rows()
    rows[2] = "..X" + rows[2][3:]
    with pytest.raises(MapError, match=r"row 2 column 2 holds 'X'"):
        parse_map(text_map(rows))


@pytest.mark.parametrize("count", [4, 6])
def test_map_with_wrong_number_of_start_squares_is_rejected(count):
    grid = blank(8, 8)
    for i in range(count):
        grid[0][i] = "0"
        grid[7][7 - i] = "1"
    with pytest.raises(MapError, match=rf"team 0 has {count} start squares.*exactly 5"):
        parse_map(text_map("".join(r) for r in grid))


def test_map_missing_a_team_is_rejected():
    grid = blank(8, 8)
    for i in range(5):
        grid[0][i] = "0"
        grid[7][7 - i] = "2"  # teams 0 and 2: team 1 is missing
    with pytest.raises(MapError, match=r"teams 0 to N-1.*found teams: 0, 2"):
        parse_map(text_map("".join(r) for r in grid))


def test_map_with_a_single_team_is_rejected():
    grid = blank(8, 8)
    for i in range(5):
        grid[0][i] = "0"
    with pytest.raises(MapError, match=r"N >= 2"):
        parse_map(text_map("".join(r) for r in grid))


def test_two_team_map_with_asymmetric_wall_is_rejected():
    rows = two_team_rows()
    rows[2] = "." + "#" + rows[2][2:]  # wall at 2,1 without its mirror at 3,5
    with pytest.raises(MapError, match=r"point-symmetric.*2,1"):
        parse_map(text_map(rows))


def test_two_team_map_with_asymmetric_start_squares_is_rejected():
    grid = blank(6, 7)
    for c in range(5):
        grid[0][c] = "0"
        grid[5][c] = "1"  # not the mirror of team 0's squares
    with pytest.raises(MapError, match=r"point-symmetric"):
        parse_map(text_map("".join(r) for r in grid))


def test_map_with_unreachable_floor_is_rejected_naming_the_square():
    rows = two_team_rows(rows=7, cols=7, walls=[(2, 0), (3, 1), (4, 0)])
    # 3,0 is boxed in by 2,0 / 3,1 / 4,0 (and the mirror 3,6 by 4,6 / 3,5 / 2,6)
    with pytest.raises(MapError, match=r"reachable.*3,0"):
        parse_map(text_map(rows))


def test_map_too_small_is_rejected():
    with pytest.raises(MapError, match=r"2x\d+.*3 to 100"):
        parse_map("0000011111\n..........\n")


def test_map_too_large_is_rejected():
    rows = two_team_rows(rows=6, cols=101)
    with pytest.raises(MapError, match=r"6x101.*3 to 100"):
        parse_map(text_map(rows))


def test_largest_allowed_map_loads():
    assert parse_map(text_map(two_team_rows(rows=100, cols=100))).cols == 100


def test_empty_map_is_rejected():
    with pytest.raises(MapError, match="empty"):
        parse_map("\n\n")


def test_error_message_names_the_map():
    with pytest.raises(MapError, match=r"^mymap: "):
        parse_map("..X\n...\n...\n", "mymap")


def test_three_team_map_need_not_be_point_symmetric():
    grid = blank(8, 8)
    for i in range(5):
        grid[0][i] = "0"
        grid[7][i] = "1"
        grid[2 + i][7] = "2"
    grid[4][3] = "#"
    fmap = parse_map(text_map("".join(r) for r in grid))
    assert fmap.teams == 3


def test_unknown_shipped_map_name_is_a_clear_error():
    with pytest.raises(MapError, match=r"no shipped map called 'nosuch'"):
        resolve_map("nosuch")


# --- initial facing (spec §4) ----------------------------------------------------------------------


def test_facing_points_along_the_larger_axis_toward_the_centre():
    # arena: team 0 on row 0 cols 0-4 (centroid 0,2), centre 4.5,4.5 -> rows differ more -> DOWN
    fmap = arena(10, 10)
    assert fmap.facing(0) is DOWN and fmap.facing(1) is UP
    # start squares in columns 0-1 of a wide map: columns differ more -> RIGHT / LEFT
    wide = open_map(
        6, 12, {0: [(1, 0), (2, 0), (3, 0), (4, 0), (2, 1)], 1: [(4, 11), (3, 11), (2, 11), (1, 11), (3, 10)]}
    )
    assert wide.facing(0) is RIGHT and wide.facing(1) is LEFT


def test_facing_tie_is_vertical():
    # team 0 centroid 1,1 and team 1 centroid 8,8 on a 10x10 map: |dr| = |dc| = 3.5
    fmap = open_map(
        10,
        10,
        {0: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)], 1: [(9, 9), (9, 7), (8, 8), (7, 9), (7, 7)]},
    )
    assert fmap.facing(0) is DOWN
    assert fmap.facing(1) is UP


def test_shipped_map_four_has_four_teams_facing_vertically():
    fmap = resolve_map("four")
    assert (fmap.rows, fmap.cols, fmap.teams) == (20, 20, 4)
    assert [len(s) for s in fmap.starts] == [5, 5, 5, 5]
    # every team's centroid is as far from the centre across as up/down: a tie, so vertical
    assert [fmap.facing(t) for t in range(4)] == [DOWN, UP, DOWN, UP]
    battle = Battle(fmap, 4)
    assert battle.warriors[0][0].square == (1, 1)
    assert [w.square for w in battle.warriors[2]] == [(1, 12), (1, 15), (1, 18), (4, 18), (7, 18)]
    assert Battle(fmap, 3).teams == 3


def test_battle_refuses_more_teams_than_the_map_has():
    with pytest.raises(ValueError):
        Battle(default_map(), 3)


# --- sight (spec §6) ---------------------------------------------------------------------------


def sight_board(walls=()):
    """A 15x15 arena: from 7,7 in any facing, no start square is in view."""
    return Battle(arena(15, 15, walls), 2)


def test_spec_sight_check_example():
    # spec §6: warrior at 4,4 facing UP, enemy 2,5, wall 1,3, enemy 4,5 -> "2,5,E&1,3,#"
    battle = Battle(arena(10, 10, walls=[(1, 3)]), 2)  # the mirrored wall 8,6 is behind the viewer
    for n, col in zip(range(1, 5), range(4)):
        place(battle, 0, n, (6, col))  # teammates out of the way, behind the viewer
    viewer = place(battle, 0, 0, (4, 4), UP)
    place(battle, 1, 0, (2, 5))
    place(battle, 1, 1, (4, 5))
    assert battle.sight(viewer) == [((2, 5), "E"), ((1, 3), "#")]
    assert do(battle, 0, 0, SAW) == "2,5,E&1,3,#"


def test_wedge_is_five_deep():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (2, 7))  # f = 5
    place(battle, 1, 1, (1, 7))  # f = 6: too far
    place(battle, 1, 2, (2, 2))  # f = 5, l = -5: the wedge's far corner
    assert battle.sight(viewer) == [((2, 2), "E"), ((2, 7), "E")]


def test_wedge_is_ninety_degrees_wide():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (6, 8))  # f = 1, l = 1: visible diagonal
    place(battle, 1, 1, (6, 9))  # f = 1, l = 2: outside
    place(battle, 1, 2, (5, 4))  # f = 2, l = -3: outside
    place(battle, 1, 3, (4, 4))  # f = 3, l = -3: visible
    assert battle.sight(viewer) == [((6, 8), "E"), ((4, 4), "E")]


def test_nothing_level_with_or_behind_the_warrior_is_seen():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (7, 8))  # on its right (f = 0)
    place(battle, 1, 1, (7, 6))  # on its left
    place(battle, 1, 2, (8, 7))  # behind
    place(battle, 1, 3, (9, 9))  # behind, diagonal
    assert battle.sight(viewer) == []
    assert do(battle, 0, 0, SAW) == ""  # nothing visible: an empty reply line


@pytest.mark.parametrize(
    "facing, first, second",
    [
        # L is (0,+1) for UP, (+1,0) for RIGHT, (0,-1) for DOWN, (-1,0) for LEFT: left to right
        (UP, (6, 6), (6, 8)),
        (RIGHT, (6, 8), (8, 8)),
        (DOWN, (8, 8), (8, 6)),
        (LEFT, (8, 6), (6, 6)),
    ],
)
def test_same_distance_squares_are_listed_left_to_right(facing, first, second):
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), facing)
    place(battle, 1, 1, second)
    place(battle, 1, 0, first)
    assert battle.sight(viewer) == [(first, "E"), (second, "E")]


def test_nearer_squares_come_first():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), RIGHT)
    place(battle, 1, 0, (3, 12))  # f = 5, l = -4
    place(battle, 1, 1, (9, 10))  # f = 3, l = 2
    place(battle, 1, 2, (7, 8))  # f = 1
    assert [sq for sq, _ in battle.sight(viewer)] == [(7, 8), (9, 10), (3, 12)]


def test_letters_for_teammate_wall_and_body():
    battle = sight_board(walls=[(4, 7)])  # mirror 10,7 is behind
    place(battle, 0, 0, (7, 7), UP)
    place(battle, 0, 1, (6, 7))  # teammate: O
    place(battle, 1, 0, (5, 6))
    place(battle, 1, 1, (5, 8))
    place(battle, 1, 4, (6, 6))
    battle.remove_team(1)  # team 1's warriors become bodies: x
    place(battle, 0, 2, (5, 7))
    assert do(battle, 0, 0, SAW) == "6,6,x&6,7,O&5,6,x&5,7,O&5,8,x&4,7,#"


def test_enemy_letter():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), DOWN)
    place(battle, 1, 0, (9, 7))
    place(battle, 0, 1, (8, 7))
    assert battle.sight(viewer) == [((8, 7), "O"), ((9, 7), "E")]


def test_a_wall_hides_the_squares_behind_it_but_is_itself_visible():
    battle = sight_board(walls=[(5, 7), (4, 7)])
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (3, 7))  # straight behind the wall
    place(battle, 1, 1, (6, 7))  # in front of it
    # the wall at 4,7 is itself behind 5,7: hidden too
    assert battle.sight(viewer) == [((6, 7), "E"), ((5, 7), "#")]


def test_hiding_uses_rounding_half_away_from_zero():
    # Viewer 7,7 facing UP, wall 6,7 (f=1, l=0). Target 5,8 (Δ = -2,+1): the intermediate square
    # is (round(-1), round(0.5)) = (-1, +1) -> 6,8, not the wall; likewise 5,6 -> 6,6.
    battle = sight_board(walls=[(6, 7)])
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (5, 8))
    place(battle, 1, 1, (5, 6))
    place(battle, 1, 2, (5, 7))  # straight behind the wall: hidden
    assert battle.sight(viewer) == [((6, 7), "#"), ((5, 6), "E"), ((5, 8), "E")]


def test_hiding_rounds_halves_away_from_zero_on_both_sides():
    # walls at 6,8 and 6,6 hide 5,8 and 5,6 (their intermediate squares) but not 5,7
    battle = sight_board(walls=[(6, 8), (6, 6)])
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (5, 8))
    place(battle, 1, 1, (5, 6))
    place(battle, 1, 2, (5, 7))
    assert battle.sight(viewer) == [((6, 6), "#"), ((6, 8), "#"), ((5, 7), "E")]


def test_long_diagonal_line_of_sight_rounding():
    # target 3,12 from 7,7 facing RIGHT: Δ = (-4,+5), n = 5; intermediate squares
    # k=1..4: (round(-0.8), 1), (round(-1.6), 2), (round(-2.4), 3), (round(-3.2), 4)
    #       = 6,8  5,9  5,10  4,11
    for wall, hidden in [((5, 9), True), ((4, 11), True), ((4, 9), False), ((6, 9), False)]:
        battle = sight_board(walls=[wall])
        viewer = place(battle, 0, 0, (7, 7), RIGHT)
        place(battle, 1, 0, (3, 12))
        assert (((3, 12), "E") not in battle.sight(viewer)) is hidden, wall


def test_warriors_and_bodies_do_not_block_sight():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), LEFT)
    place(battle, 1, 0, (7, 6))  # will be a body
    place(battle, 0, 1, (7, 5))  # teammate
    battle.remove_team(1)
    battle2 = sight_board()
    viewer2 = place(battle2, 0, 0, (7, 7), LEFT)
    place(battle2, 0, 1, (7, 6))
    place(battle2, 1, 0, (7, 5))
    assert battle.sight(viewer) == [((7, 6), "x"), ((7, 5), "O")]
    assert battle2.sight(viewer2) == [((7, 6), "O"), ((7, 5), "E")]


def test_squares_outside_the_grid_are_never_listed():
    battle = Battle(arena(10, 10), 2)
    corner = place(battle, 0, 0, (1, 9), UP)  # the wedge is mostly off the grid
    place(battle, 1, 0, (0, 8))
    assert battle.sight(corner) == [((0, 8), "E")]
    edge = battle.warriors[0][1]  # on row 0 facing UP: sees nothing at all
    edge.facing = UP
    assert battle.sight(edge) == []


def test_sight_depends_on_facing():
    battle = sight_board()
    viewer = place(battle, 0, 0, (7, 7), UP)
    place(battle, 1, 0, (7, 9))  # on its right
    assert battle.sight(viewer) == []
    assert do(battle, 0, 0, NONE, RIGHT) == "255"
    assert battle.sight(viewer) == [((7, 9), "E")]


def _round_half_away(x: Fraction) -> int:
    n = int(abs(x) + Fraction(1, 2))  # floor(|x| + 1/2)
    return n if x >= 0 else -n


def oracle_sight(battle, viewer):
    """Spec §6 written out independently: every in-grid square, its f and l, the wedge, hiding."""
    fr, fc = viewer.facing.value
    lr, lc = {UP: (0, 1), RIGHT: (1, 0), DOWN: (0, -1), LEFT: (-1, 0)}[viewer.facing]
    fmap = battle.map
    found = []
    for r in range(fmap.rows):
        for c in range(fmap.cols):
            dr, dc = r - viewer.row, c - viewer.col
            f, lat = dr * fr + dc * fc, dr * lr + dc * lc
            if not (1 <= f <= 5 and abs(lat) <= f):
                continue
            if (r, c) in fmap.walls:
                letter = "#"
            elif (r, c) in battle.bodies:
                letter = "x"
            elif (r, c) in battle.occupied:
                letter = "O" if battle.occupied[(r, c)].team == viewer.team else "E"
            else:
                continue
            n = max(abs(dr), abs(dc))
            line = [
                (viewer.row + _round_half_away(Fraction(k * dr, n)), viewer.col + _round_half_away(Fraction(k * dc, n)))
                for k in range(1, n)
            ]
            if any(sq in fmap.walls for sq in line):
                continue
            found.append(((f, lat), ((r, c), letter)))
    return [item for _, item in sorted(found)]


@given(
    walls=st.sets(st.tuples(st.integers(2, 10), st.integers(0, 12)), max_size=30),
    spot=st.tuples(st.integers(1, 11), st.integers(0, 12)),
    facing=st.sampled_from(list(Dir)),
    enemies=st.lists(st.tuples(st.integers(1, 11), st.integers(0, 12)), max_size=5),
    dead=st.booleans(),
)
def test_sight_matches_the_spec_formula_on_random_boards(walls, spot, facing, enemies, dead):
    # FightMap built directly: random walls need not make a loadable map for sight to be defined.
    starts = (tuple((0, c) for c in range(5)), tuple((12, 12 - c) for c in range(5)))
    fmap = FightMap("random", 13, 13, frozenset(walls - {spot}), starts)
    battle = Battle(fmap, 2)
    viewer = place(battle, 0, 0, spot, facing)
    for n, square in enumerate(enemies):
        if not battle.blocked(square):
            place(battle, 1, n, square)
    if dead:
        battle.remove_team(1)
    assert battle.sight(viewer) == oracle_sight(battle, viewer)


# --- moves, facing and the one action per turn (spec §5) --------------------------------------------


def open_battle():
    return Battle(arena(10, 10, walls=[(4, 4)]), 2)  # walls 4,4 and 5,5


@pytest.mark.parametrize("direction, square", [(UP, (2, 3)), (DOWN, (4, 3)), (LEFT, (3, 2)), (RIGHT, (3, 4))])
def test_move_goes_one_square_and_turns_the_warrior(direction, square):
    battle = open_battle()
    w = place(battle, 0, 0, (3, 3), LEFT if direction is not LEFT else RIGHT)
    assert do(battle, 0, 0, MOVE, direction) == "255"
    assert (w.square, w.facing) == (square, direction)
    assert battle.occupied[square] is w and (3, 3) not in battle.occupied


def test_move_off_the_grid_is_112_and_changes_nothing():
    battle = open_battle()
    before = state(battle)
    assert do(battle, 0, 0, MOVE, UP) == "112"
    assert do(battle, 0, 0, MOVE, LEFT) == "112"
    assert do(battle, 1, 4, MOVE, RIGHT) == "112"  # team 1 warrior 4 is at 9,9
    assert state(battle) == before


def test_move_onto_a_wall_teammate_enemy_or_body_is_111_and_changes_nothing():
    battle = open_battle()
    place(battle, 0, 0, (3, 4), LEFT)  # wall below at 4,4
    place(battle, 0, 1, (2, 4))  # teammate above
    place(battle, 1, 0, (3, 5))  # enemy to the right
    before = state(battle)
    for direction in (DOWN, UP, RIGHT):
        assert do(battle, 0, 0, MOVE, direction) == "111"
    assert state(battle) == before  # not even turned
    battle.remove_team(1)  # 3,5 is now a body
    assert do(battle, 0, 0, MOVE, RIGHT) == "111"
    place(battle, 0, 2, (3, 6))
    assert do(battle, 0, 2, MOVE, LEFT) == "111"  # onto the body from the other side
    assert battle.warriors[0][0].facing is LEFT


def test_a_rejected_action_does_not_use_the_warriors_action():
    battle = open_battle()
    assert do(battle, 0, 0, MOVE, UP) == "112"
    assert do(battle, 0, 0, MOVE, RIGHT) == "111"  # 0,1 holds warrior 1
    assert do(battle, 0, 0, MOVE, DOWN) == "255"
    assert do(battle, 0, 0, MOVE, DOWN) == "120"


@pytest.mark.parametrize(
    "first, second",
    [
        ((MOVE, DOWN), (MOVE, DOWN)),
        ((MOVE, DOWN), (SHOOT, None)),
        ((SHOOT, None), (MOVE, DOWN)),
        ((SHOOT, LEFT), (NONE, UP)),
        ((NONE, RIGHT), (SHOOT, RIGHT)),
        ((NONE, RIGHT), (NONE, LEFT)),
    ],
)
def test_a_second_action_gets_120_and_changes_nothing(first, second):
    battle = open_battle()
    assert do(battle, 0, 2, *first) == "255"
    before = state(battle)
    assert do(battle, 0, 2, *second) == "120"
    assert state(battle) == before


def test_second_action_beats_off_grid_in_the_order_of_checks():
    battle = open_battle()
    assert do(battle, 0, 0, NONE, UP) == "255"
    assert do(battle, 0, 0, MOVE, UP) == "120"  # would be 112, but the action is used


def test_bare_none_is_a_pass_not_an_action():
    battle = open_battle()
    assert do(battle, 0, 0, NONE) == "255"
    assert do(battle, 0, 0, NONE) == "255"
    assert battle.finished(0) is False  # only warrior 0 passed
    assert do(battle, 0, 0, MOVE, DOWN) == "255"  # a pass does not use the action
    assert do(battle, 0, 0, NONE) == "255"  # after acting: still 255, changes nothing
    assert do(battle, 0, 0, NONE, UP) == "120"  # turning is an action


def test_none_with_a_direction_turns_without_moving():
    battle = open_battle()
    w = battle.warriors[0][3]
    assert do(battle, 0, 3, NONE, RIGHT) == "255"
    assert (w.square, w.facing) == ((0, 3), RIGHT)


def test_shoot_with_a_direction_turns_at_once():
    battle = open_battle()
    w = battle.warriors[0][3]
    assert do(battle, 0, 3, SHOOT, LEFT) == "255"
    assert w.facing is LEFT
    assert do(battle, 0, 3, DIR) == "LEFT"


def test_queries_use_no_action_and_are_unlimited():
    battle = open_battle()
    for _ in range(20):
        assert do(battle, 0, 4, POS) == "0,4"
        assert do(battle, 0, 4, DIR) == "DOWN"
        do(battle, 0, 4, SAW)
    assert do(battle, 0, 4, MOVE, DOWN) == "255"
    assert do(battle, 0, 4, POS) == "1,4"


def test_team_is_finished_when_every_living_warrior_acted_or_passed():
    battle = open_battle()
    for n in range(4):
        do(battle, 0, n, NONE if n % 2 else MOVE, None if n % 2 else DOWN)
    assert not battle.finished(0)
    do(battle, 0, 4, NONE)
    assert battle.finished(0)
    assert not battle.finished(1)


def test_dead_warriors_need_not_act_and_are_refused_100():
    battle = open_battle()
    place(battle, 1, 0, (1, 0))
    do(battle, 0, 0, SHOOT, DOWN)  # kills enemy 0 at 1,0
    battle.resolve()
    assert not battle.warriors[1][0].alive
    for verb, d in [(POS, None), (DIR, None), (SAW, None), (NONE, None), (NONE, UP), (MOVE, UP), (SHOOT, None)]:
        assert do(battle, 1, 0, verb, d) == "100"
    for n in range(1, 5):
        do(battle, 1, n, NONE)
    assert battle.finished(1)


def test_a_new_turn_gives_every_warrior_its_action_back():
    battle = open_battle()
    assert do(battle, 0, 0, MOVE, DOWN) == "255"
    battle.resolve()
    assert do(battle, 0, 0, MOVE, DOWN) == "255"
    assert do(battle, 0, 0, POS) == "2,0"


def test_moves_apply_at_once_in_order_received():
    battle = open_battle()
    place(battle, 0, 0, (3, 1))
    place(battle, 1, 0, (3, 3))
    assert do(battle, 0, 0, MOVE, RIGHT) == "255"  # to 3,2
    assert do(battle, 1, 0, MOVE, LEFT) == "111"  # 3,2 is taken now
    assert do(battle, 0, 1, MOVE, DOWN) == "255"  # 0,1 -> 1,1
    assert do(battle, 0, 2, MOVE, LEFT) == "255"  # into the square warrior 1 just left


# --- shots and the batch (spec §7) -----------------------------------------------------------------


def shot_battle():
    """10x10 arena with walls at 2,7 and (mirrored) 7,2; teammates parked on row 0."""
    return Battle(arena(10, 10, walls=[(2, 7)]), 2)


def shots_by(resolution):
    return {(s.team, s.number): s.hit for s in resolution.shots}


def test_shot_off_the_grid_hits_nothing_and_ends_on_the_shooter():
    battle = shot_battle()
    do(battle, 0, 0, SHOOT, UP)  # 0,0 facing up: the first step leaves the grid
    res = battle.resolve()
    (s,) = res.shots
    assert (s.hit, s.end, s.direction) == (Hit.NOTHING, (0, 0), UP)
    assert res.killed == ()


def test_shot_leaving_the_grid_after_two_squares_ends_on_the_last_square_inside():
    battle = shot_battle()
    place(battle, 0, 0, (2, 5), LEFT)
    do(battle, 0, 0, SHOOT, UP)  # 1,5 then 0,5, then off the grid
    (s,) = battle.resolve().shots
    assert (s.hit, s.end) == (Hit.NOTHING, (0, 5))


def test_shot_travels_three_squares_then_hits_nothing():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 4))  # four squares away: safe
    do(battle, 0, 0, SHOOT)
    res = battle.resolve()
    (s,) = res.shots
    assert (s.hit, s.end) == (Hit.NOTHING, (4, 3))
    assert battle.warriors[1][0].alive


def test_shot_hits_an_enemy_three_squares_away_which_dies_and_becomes_a_body():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    enemy = place(battle, 1, 0, (4, 3))
    do(battle, 0, 0, SHOOT)
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.ENEMY}
    assert res.shots[0].end == (4, 3)
    assert res.killed == (enemy,)
    assert not enemy.alive and (4, 3) in battle.bodies and battle.blocked((4, 3))
    assert (4, 3) not in battle.occupied


def test_shot_stops_at_a_wall_and_spares_what_is_behind():
    battle = shot_battle()
    place(battle, 0, 0, (2, 5), RIGHT)
    enemy = place(battle, 1, 0, (2, 8))  # behind the wall at 2,7
    do(battle, 0, 0, SHOOT)
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.WALL}
    assert res.shots[0].end == (2, 7)
    assert enemy.alive


def test_shot_stops_at_a_dead_body_reported_as_wall():
    battle = shot_battle()
    place(battle, 0, 0, (5, 0), RIGHT)
    first = place(battle, 1, 0, (5, 1))
    second = place(battle, 1, 1, (5, 3))
    do(battle, 0, 0, SHOOT)
    battle.resolve()
    assert not first.alive
    do(battle, 0, 0, SHOOT)
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.WALL}
    assert res.shots[0].end == (5, 1)
    assert second.alive


def test_shot_hitting_a_teammate_reports_own_and_kills_it():
    battle = shot_battle()
    mate = place(battle, 0, 1, (3, 0))
    do(battle, 0, 0, SHOOT, DOWN)  # 0,0 -> 1,0 -> 2,0 -> 3,0
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.OWN}
    assert res.killed == (mate,) and not mate.alive


def test_shot_stops_at_the_first_warrior():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    near = place(battle, 1, 0, (4, 1))
    far = place(battle, 1, 1, (4, 2))
    do(battle, 0, 0, SHOOT)
    res = battle.resolve()
    assert res.killed == (near,) and far.alive


def test_shots_resolve_on_one_snapshot_so_a_killed_warrior_still_fires():
    battle = shot_battle()
    a = place(battle, 0, 0, (4, 0), RIGHT)
    b = place(battle, 1, 0, (4, 2), DOWN)
    c = place(battle, 0, 1, (6, 2))
    do(battle, 0, 0, SHOOT)  # a kills b
    do(battle, 1, 0, SHOOT)  # b, dying this turn, still kills c
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.ENEMY, (1, 0): Hit.ENEMY}
    assert set(res.killed) == {b, c}
    assert a.alive


def test_a_victim_of_this_turn_still_stops_the_other_shots_of_the_batch():
    # b dies this turn, but on the snapshot it is alive: the second shot hits b too and stops,
    # so d behind it survives
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 0, 1, (3, 1), DOWN)
    b = place(battle, 1, 0, (4, 1))
    d = place(battle, 1, 1, (5, 1))
    do(battle, 0, 0, SHOOT)
    do(battle, 0, 1, SHOOT)
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.ENEMY, (0, 1): Hit.ENEMY}
    assert d.alive and not b.alive


def test_two_warriors_shooting_each_other_both_die():
    battle = shot_battle()
    a = place(battle, 0, 0, (4, 1), RIGHT)
    b = place(battle, 1, 0, (4, 3), LEFT)
    do(battle, 0, 0, SHOOT)
    do(battle, 1, 0, SHOOT)
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.ENEMY, (1, 0): Hit.ENEMY}
    assert set(res.killed) == {a, b}
    assert battle.bodies >= {(4, 1), (4, 3)}


def test_two_shots_may_report_the_same_victim_which_dies_once():
    battle = shot_battle()
    place(battle, 0, 0, (4, 1), RIGHT)
    place(battle, 0, 1, (3, 2), DOWN)
    victim = place(battle, 1, 0, (4, 2))
    do(battle, 0, 0, SHOOT)
    do(battle, 0, 1, SHOOT)
    res = battle.resolve()
    assert [s.victim for s in res.shots] == [victim, victim]
    assert shots_by(res) == {(0, 0): Hit.ENEMY, (0, 1): Hit.ENEMY}
    assert res.killed == (victim,)


def test_an_enemy_that_moved_away_survives():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    enemy = place(battle, 1, 0, (4, 2))
    do(battle, 0, 0, SHOOT)  # queued while the enemy is in the line
    assert do(battle, 1, 0, MOVE, DOWN) == "255"
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.NOTHING}
    assert enemy.alive


def test_an_enemy_that_moved_into_the_line_after_the_shot_was_queued_is_hit():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    enemy = place(battle, 1, 0, (5, 2))
    do(battle, 0, 0, SHOOT)
    do(battle, 1, 0, MOVE, UP)  # into 4,2
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.ENEMY} and not enemy.alive


def test_shot_goes_the_way_the_warrior_faces_when_it_fires():
    battle = shot_battle()
    place(battle, 0, 0, (4, 4), UP)
    left = place(battle, 1, 0, (4, 3))
    up = place(battle, 1, 1, (3, 4))
    do(battle, 0, 0, SHOOT, LEFT)
    res = battle.resolve()
    assert res.shots[0].direction is LEFT
    assert not left.alive and up.alive


def test_resolve_starts_a_fresh_turn_without_old_shots():
    battle = shot_battle()
    do(battle, 0, 0, SHOOT, UP)
    battle.resolve()
    assert battle.resolve().shots == ()


# --- the end of the game (spec §8) ---------------------------------------------------------------


def test_judge_one_team_left_wins():
    assert judge({0, 1}, {0: 3, 1: 0}, 7, 500) == (True, {0: Result.WIN, 1: Result.LOSE})


def test_judge_all_dying_in_the_same_resolution_is_a_draw():
    assert judge({0, 1}, {0: 0, 1: 0}, 7, 500) == (True, {0: Result.DRAW, 1: Result.DRAW})


def test_judge_draw_goes_only_to_teams_with_living_warriors_before():
    over, results = judge({0, 2}, {0: 0, 1: 0, 2: 0}, 7, 500)
    assert over and results == {0: Result.DRAW, 1: Result.LOSE, 2: Result.DRAW}


def test_judge_game_goes_on_with_two_teams_alive():
    assert judge({0, 1}, {0: 1, 1: 5}, 7, 500) == (False, {})


def test_judge_eliminated_team_loses_while_others_play_on():
    assert judge({0, 1, 2}, {0: 2, 1: 0, 2: 3}, 7, 500) == (False, {1: Result.LOSE})


def test_judge_turn_limit_most_warriors_wins():
    assert judge({0, 1}, {0: 2, 1: 3}, 500, 500) == (True, {0: Result.LOSE, 1: Result.WIN})


def test_judge_turn_limit_not_reached_yet():
    assert judge({0, 1}, {0: 2, 1: 3}, 499, 500) == (False, {})


def test_judge_turn_limit_tie_is_a_draw_for_the_leaders():
    over, results = judge({0, 1, 2}, {0: 3, 1: 1, 2: 3}, 3, 3)
    assert over and results == {0: Result.DRAW, 1: Result.LOSE, 2: Result.DRAW}


def test_judge_turn_limit_with_a_team_eliminated_on_the_last_turn():
    over, results = judge({0, 1, 2}, {0: 4, 1: 0, 2: 2}, 3, 3)
    assert over and results == {0: Result.WIN, 1: Result.LOSE, 2: Result.LOSE}


def test_judge_last_turn_wipe_out_is_still_a_draw():
    assert judge({0, 1}, {0: 0, 1: 0}, 3, 3) == (True, {0: Result.DRAW, 1: Result.DRAW})


# --- a team leaving (spec §8) --------------------------------------------------------------------


def test_remove_team_turns_its_warriors_into_bodies_and_cancels_its_shots():
    battle = shot_battle()
    place(battle, 0, 0, (4, 0), RIGHT)
    target = place(battle, 1, 0, (4, 2), LEFT)
    do(battle, 1, 0, SHOOT)  # would kill 0,0
    do(battle, 0, 0, SHOOT)
    fallen = battle.remove_team(1)
    assert fallen == battle.warriors[1] and not any(w.alive for w in fallen)
    assert {w.square for w in fallen} <= battle.bodies
    assert 1 not in battle.playing
    res = battle.resolve()
    assert shots_by(res) == {(0, 0): Hit.WALL}  # team 1's shot is gone; its body stops ours
    assert res.killed == ()
    assert battle.warriors[0][0].alive
    assert target.square == (4, 2)


def test_remove_team_keeps_already_dead_warriors_dead():
    battle = shot_battle()
    place(battle, 1, 0, (1, 0))
    do(battle, 0, 0, SHOOT, DOWN)
    battle.resolve()
    fallen = battle.remove_team(1)
    assert [w.number for w in fallen] == [1, 2, 3, 4]
    assert battle.living_teams() == {0}
    assert battle.counts() == {0: 5}


# --- properties --------------------------------------------------------------------------------


@given(st.text(max_size=60))
def test_parse_command_never_raises_on_arbitrary_text(text):
    result = parse_command(text)
    assert result is None or isinstance(result, Command)


_FRAGMENTS = ["0", "4", "5", "MOVE", "move", "SHOOT", "SHOT", "NONE", "POS", "DIR", "SAW", "UP", "left", "x", "", " "]


@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=5))
def test_parse_command_never_raises_on_near_miss_commands(fields):
    result = parse_command("&".join(fields))
    assert result is None or 0 <= result.warrior <= 4


# Every well-formed (verb, direction) pair; malformed ones never reach the rules (wire refuses them).
_WELL_FORMED = (
    [(MOVE, d) for d in Dir]
    + [(verb, d) for verb in (SHOOT, NONE) for d in [None, *Dir]]
    + [(verb, None) for verb in (POS, DIR, SAW)]
)


def _command_strategy():
    return st.tuples(st.integers(0, 1), st.integers(0, 4), st.sampled_from(_WELL_FORMED))


def _check_board(battle):
    living = [w for team in battle.warriors for w in team if w.alive]
    squares = [w.square for w in living]
    assert len(set(squares)) == len(squares), "two warriors share a square"
    for w in living:
        assert battle.map.inside(w.square)
        assert w.square not in battle.map.walls
        assert w.square not in battle.bodies
        assert battle.occupied[w.square] is w
    assert len(battle.occupied) == len(living)
    dead = {w.square for team in battle.warriors for w in team if not w.alive}
    assert battle.bodies == dead


@given(st.lists(st.lists(_command_strategy(), max_size=25), min_size=1, max_size=6))
def test_random_play_keeps_the_board_consistent(turns):
    battle = Battle(arena(6, 6, walls=[(2, 2)]), 2)  # small and crowded: many collisions
    for commands in turns:
        acted = set()
        for team, number, (verb, direction) in commands:
            warrior = battle.warriors[team][number]
            was = (warrior.square, warrior.facing, warrior.alive)
            before = state(battle)
            command = Command(number, verb, direction)
            code, text = battle.execute(team, command)
            if not was[2]:
                assert code == "100"
            elif command.is_action and (team, number) in acted:
                assert code == "120"
            if code != "255":
                assert state(battle) == before, "a rejected command changed the board"
            elif command.is_action:
                assert (team, number) not in acted, "a warrior acted twice in one turn"
                acted.add((team, number))
                if verb is MOVE:
                    dr, dc = direction.value
                    assert warrior.square == (was[0][0] + dr, was[0][1] + dc)
                    assert warrior.facing is direction
                else:
                    assert warrior.square == was[0]
            else:
                assert state(battle) == before, "a pass or query changed the board"
            _check_board(battle)
        alive_before = {(w.team, w.number) for team in battle.warriors for w in team if w.alive}
        res = battle.resolve()
        _check_board(battle)
        alive_after = {(w.team, w.number) for team in battle.warriors for w in team if w.alive}
        assert alive_after == alive_before - {(w.team, w.number) for w in res.killed}
        assert len(res.shots) <= len(acted)
