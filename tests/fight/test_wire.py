"""Virtual Fight wire codecs (gamed.fight.wire): parsing AI commands (spec §1.4, §5) and the
before-the-game extensions (§3), and the order of the 200 turn report (§7)."""

import itertools

import pytest

from gamed.fight.rules import Battle, Command, Dir, Hit, Resolution, Result, Shot, Verb, Warrior
from gamed.fight.wire import game_over, parse_command, parse_extension, report
from tests.fight.harness import arena, place

# --- parse_command --------------------------------------------------------------------------


def test_spec_case_insensitivity_example():
    # spec §1.4: 1&mOvE&DOWn = 1&MOVE&DOWN
    assert parse_command("1&mOvE&DOWn") == parse_command("1&MOVE&DOWN") == Command(1, Verb.MOVE, Dir.DOWN)


@pytest.mark.parametrize("verb", ["MOVE", "SHOOT", "NONE"])
@pytest.mark.parametrize("direction", ["UP", "DOWN", "LEFT", "RIGHT"])
def test_every_action_with_every_direction_in_any_case(verb, direction):
    expected = Command(3, Verb[verb], Dir[direction])
    for v, d in [(verb, direction), (verb.lower(), direction.lower()), (verb.capitalize(), direction.swapcase())]:
        assert parse_command(f"3&{v}&{d}") == expected


@pytest.mark.parametrize("verb", ["SHOOT", "NONE", "POS", "DIR", "SAW"])
def test_commands_that_need_no_direction(verb):
    for number in range(5):
        assert parse_command(f"{number}&{verb.lower()}") == Command(number, Verb[verb], None)


def test_shot_is_an_alias_of_shoot():
    assert parse_command("2&SHOT") == Command(2, Verb.SHOOT, None)
    assert parse_command("2&shot&left") == Command(2, Verb.SHOOT, Dir.LEFT)


def test_a_bare_none_is_a_pass_and_none_with_a_direction_is_an_action():
    assert not parse_command("0&NONE").is_action
    assert parse_command("0&NONE&UP").is_action
    assert parse_command("0&SHOOT").is_action
    assert not parse_command("0&SAW").is_action


@pytest.mark.parametrize(
    "line",
    [
        # warrior not 0-4
        "5&MOVE&UP",
        "9&POS",
        "-1&POS",
        "a&POS",
        "&POS",
        "12&POS",
        # unknown command
        "1&JUMP",
        "1&MOVEUP",
        "1&",
        "1",
        "",
        "POS",
        # MOVE without a direction
        "1&MOVE",
        # unknown direction, on any command
        "1&MOVE&NORTH",
        "1&SHOOT&FORWARD",
        "1&NONE&U",
        "1&SHOOT&",
        # a direction on POS/DIR/SAW
        "1&POS&UP",
        "1&DIR&LEFT",
        "1&SAW&RIGHT",
        # a fourth field
        "1&MOVE&UP&UP",
        "1&NONE&UP&",
        "1&SHOOT&LEFT&x",
        "1&POS&&",
    ],
)
def test_malformed_commands_are_refused(line):
    assert parse_command(line) is None


# --- parse_extension ------------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["NAME", "TABLE"])
@pytest.mark.parametrize("name", ["a", "Bot_1.0-final", "x" * 32, "A.b-C_9"])
def test_extension_accepts_names_of_1_to_32_allowed_characters(keyword, name):
    assert parse_extension(f"{keyword}&{name}") == (keyword, name)


@pytest.mark.parametrize("keyword", ["NAME", "TABLE"])
@pytest.mark.parametrize("name", ["", "x" * 33, "a b", "a/b", "a&b", "caf\u00e9", "a:b", "a,b", "<x>"])
def test_extension_refuses_other_names(keyword, name):
    assert parse_extension(f"{keyword}&{name}") is None


@pytest.mark.parametrize("line", ["NAME", "TABLE", "COLOR&red", "0&POS", "NAME&a&b", ""])
def test_extension_refuses_other_lines(line):
    assert parse_extension(line) is None


def test_commands_are_not_extensions_and_extensions_are_not_commands():
    assert parse_command("NAME&bot") is None
    assert parse_extension("1&NONE") is None


# --- the 200 report -------------------------------------------------------------------------


def _warrior(team, number):
    return Warrior(team, number, 0, number, Dir.UP, alive=False)


def test_report_orders_by_warrior_number_with_hit_before_killed():
    w = {(t, n): _warrior(t, n) for t in (0, 1) for n in range(5)}
    shots = (
        Shot(0, 1, Dir.UP, (0, 0), Hit.ENEMY, w[1, 2]),
        Shot(0, 3, Dir.UP, (0, 0), Hit.OWN, w[0, 0]),
        Shot(0, 4, Dir.UP, (0, 0), Hit.NOTHING),
        Shot(1, 2, Dir.DOWN, (0, 0), Hit.ENEMY, w[0, 3]),
        Shot(1, 4, Dir.DOWN, (0, 0), Hit.WALL),
    )
    killed = (w[0, 0], w[0, 3], w[1, 2])
    resolution = Resolution(shots, killed)
    assert report(resolution, 0) == ["200", "0&KILLED", "1&HIT&ENEMY", "3&HIT&OWN", "3&KILLED", "4&HIT&NOTHING"]
    assert report(resolution, 1) == ["200", "2&HIT&ENEMY", "2&KILLED", "4&HIT&WALL"]


def test_report_order_does_not_depend_on_the_order_of_events():
    w = {n: _warrior(0, n) for n in range(5)}
    shots = [Shot(0, n, Dir.UP, (0, 0), Hit.OWN, w[(n + 1) % 5]) for n in range(5)]
    expected = ["200"] + [line for n in range(5) for line in (f"{n}&HIT&OWN", f"{n}&KILLED")]
    for order in itertools.islice(itertools.permutations(shots), 0, 120, 7):
        for dead in itertools.islice(itertools.permutations(w.values()), 0, 120, 11):
            assert report(Resolution(tuple(order), tuple(dead)), 0) == expected


def test_report_without_shots_or_deaths_is_just_200():
    assert report(Resolution((), ()), 0) == ["200"]
    assert report(Resolution((), ()), 1) == ["200"]


def test_report_from_a_resolved_battle():
    battle = Battle(arena(10, 10), 2)
    place(battle, 0, 0, (4, 1), Dir.RIGHT)
    place(battle, 1, 0, (4, 3), Dir.LEFT)  # team 0's 0 and team 1's 0 shoot each other
    place(battle, 0, 2, (6, 6), Dir.UP)  # shoots into empty space
    for team, number in [(1, 0), (0, 2), (0, 0)]:
        battle.execute(team, Command(number, Verb.SHOOT))
    resolution = battle.resolve()
    assert report(resolution, 0) == ["200", "0&HIT&ENEMY", "0&KILLED", "2&HIT&NOTHING"]
    assert report(resolution, 1) == ["200", "0&HIT&ENEMY", "0&KILLED"]


@pytest.mark.parametrize("result", list(Result))
def test_game_over_lines(result):
    assert game_over(result) == f"GAMEOVER&{result.value}"
    assert {game_over(r) for r in Result} == {"GAMEOVER&WIN", "GAMEOVER&LOSE", "GAMEOVER&DRAW"}
