"""GGZ Combat through the common game interface (gamed.combat.play)."""

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gamed.combat.maps import shipped_maps
from gamed.combat.play import RESIGN, RULES, setup_text
from gamed.play import (
    BAD_ACTION,
    GAME_OVER,
    NO_SUCH_ACTION,
    NOT_YOUR_TURN,
    IllegalAction,
    IRules,
    checked_options,
    playout,
    resolve,
)
from gamed.stratego.rules import EMPTY, TOKENS, UNIT_NAMES, CombatError, Unit, cell_value, next_state, unit_of
from tests.rulesdriver import RulesDriver

# Default map: seat 0's zone is rows 0..3, seat 1's rows 6..9. Seat 0 in unit order (flag at 0,0,
# the marshal at 9,3); seat 1 in the reverse order (the marshal at 0,6, captains at 7..9,6).
RED = "FBBBBBBs99/9999998888/8777766665/5554443321"
BLUE = RED[::-1]

DRIVER = RulesDriver(RULES)
start, play, refused = DRIVER.start, DRIVER.play, DRIVER.refused


def set_up(red=RED, blue=BLUE, **given):
    return RULES.apply(RULES.apply(start(**given), 0, red), 1, blue)


def test_interface():
    assert verifyObject(IRules, RULES)
    assert RULES.name == "combat" and RULES.hidden is True
    assert RULES.seat_count({}) == 2
    options = checked_options(RULES.options, {})
    assert options == {"map": "Default", "random_outcome": False, "random_setup": False, "max_moves": 2000}
    assert set(RULES.options["map"].choices) == set(shipped_maps())
    with pytest.raises(ValueError):
        checked_options(RULES.options, {"map": "Nowhere"})
    with pytest.raises(ValueError):
        checked_options(RULES.options, {"seats": 3})


def test_setup_phase_every_seat_at_once():
    state = start()
    assert RULES.phase(state) == "setup" and RULES.to_act(state) == (0, 1)
    actions = RULES.legal_actions(state, 0)
    assert not actions.complete and "F flag" in actions.grammar
    assert actions.strings[0] == RED
    assert RULES.legal_actions(state, 1).strings[0] == "FBBBBBBs99/9999998888/8777766665/5554443321"
    blue_first = RULES.apply(state, 1, BLUE)
    assert RULES.to_act(blue_first) == (0,) and RULES.phase(blue_first) == "setup"
    assert RULES.legal_actions(blue_first, 1).strings == ()
    assert refused(blue_first, 1, BLUE)[0] == NOT_YOUR_TURN
    both = RULES.apply(blue_first, 0, RED.replace("/", " "))
    assert RULES.phase(both) == "move" and RULES.to_act(both) == (0,)
    assert RULES.dump(both) == RULES.dump(set_up())
    assert RULES.result(both) is None
    # The tokens go on the zone's cells in increasing order.
    own = RULES.observation(both, 1)["cells"]
    assert own[6][0] == {"owner": 1, "unit": "marshal"} and own[9][9] == {"owner": 1, "unit": "flag"}
    assert own[3][9] == {"owner": 0, "unit": None}
    assert RULES.observation(both, 0)["cells"][0][0] == {"owner": 0, "unit": "flag"}


@pytest.mark.parametrize("name", sorted(shipped_maps()))
def test_every_example_setup_is_accepted(name):
    state = start(map=name)
    for seat in (0, 1):
        examples = RULES.legal_actions(state, seat).strings
        assert len(examples) >= 2
        for example in examples:
            RULES.apply(state, seat, example)


def test_setup_refusals():
    state = start()
    assert refused(state, 0, "")[0] == BAD_ACTION
    assert refused(state, 0, "3,3-3,4")[0] == BAD_ACTION
    assert refused(state, 0, RED.replace("s", "S"))[0] == BAD_ACTION  # S is no token
    reason, text = refused(state, 0, RED[:-1])  # 39 tokens for 40 cells
    assert reason == BAD_ACTION and "39 tokens" in text
    assert refused(state, 0, RED + "1")[0] == BAD_ACTION
    reason, text = refused(state, 0, RED.replace("F", "B"))  # seven bombs, no flag
    assert reason == NO_SUCH_ACTION and "Fx1" in text
    reason, _ = refused(state, 1, RED.replace("1", "2"))  # two generals, no marshal
    assert reason == NO_SUCH_ACTION
    assert refused(state, 0, RED.replace("1", "."))[0] == NO_SUCH_ACTION  # the marshal left out
    with pytest.raises(IllegalAction) as e:
        resolve(RULES, state, 0, "FFFF")
    assert e.value.reason == BAD_ACTION
    assert RULES.dump(state)["set_up"] == [False, False]  # never changed


def _all_moves(state):
    """Every legal move found the slow way: every pair of cells through the move checker."""
    game = state.game()
    size = len(state.cells)
    w = state.layout.width
    return [
        f"{s % w},{s // w}-{t % w},{t // w}" for s in range(size) for t in range(size) if game.check(s, t) > 0
    ]


def test_moves_listed_in_full():
    state = set_up()
    actions = RULES.legal_actions(state, 0)
    assert actions.complete and "x1,y1-x2,y2" in actions.grammar
    assert actions.strings == ("0,3-0,4", "1,3-1,4", "4,3-4,4", "5,3-5,4", "8,3-8,4", "9,3-9,4")
    assert RULES.legal_actions(state, 1).strings == ()
    for action in actions.strings:
        RULES.apply(state, 0, action)
    assert resolve(RULES, state, 0, "0,3 - 0,4") == "0,3 - 0,4"
    assert RULES.dump(RULES.apply(state, 0, "0,3 - 0,4")) == RULES.dump(RULES.apply(state, 0, "0,3-0,4"))


@pytest.mark.parametrize("name", ["Default", "Plenty_of_options", "Checkers+Options", "Island_I", "Pipes"])
def test_the_listed_moves_are_every_move_the_checker_allows(name):
    played = playout(RULES, checked_options(RULES.options, {"map": name, "max_moves": 300}), random.Random(3))
    moves = [(state, seat) for state, seat, _ in played if RULES.phase(state) == "move"]
    for state, seat in moves[::15]:
        listed = RULES.legal_actions(state, seat).strings
        assert sorted(listed) == sorted(_all_moves(state) or [RESIGN])


def test_illegal_moves_refused_with_the_checkers_reason():
    state = set_up()
    cases = {
        "10,3-10,4": "OUTRANGE",
        "0,4-0,5": "WRONGTURN",  # nobody's there
        "0,6-0,5": "WRONGTURN",  # seat 1's marshal
        "0,2-0,3": "SUICIDAL",
        "1,0-1,1": "SUICIDAL",
        "2,3-2,4": "NOTOPEN",  # into a lake
        "0,0-0,1": "SUICIDAL",
        "9,3-8,4": "MOVE_DIAGONAL",
        "9,3-9,5": "MOVE_BIGMOVE",
    }
    for move, why in cases.items():
        reason, text = refused(state, 0, move)
        assert reason == NO_SUCH_ACTION and why in text, move
    for move in ("0 3 DOWN", "03-04", "", "0,3-0,4,5", RED):
        assert refused(state, 0, move)[0] == BAD_ACTION, move
    assert refused(state, 1, "0,6-0,5")[0] == NOT_YOUR_TURN
    reason, text = refused(state, 0, RESIGN)
    assert reason == NO_SUCH_ACTION and "you have one" in text
    with pytest.raises(IllegalAction) as e:
        resolve(RULES, state, 1, "0,6-0,5")
    assert e.value.reason == NOT_YOUR_TURN
    assert CombatError.NOTMOVING.name in refused(_bombs_beside_the_open(), 0, "3,0-3,1")[1]


def _bombs_beside_the_open():
    data = RULES.dump(set_up())
    cells = [EMPTY] * 100
    cells[0], cells[3], cells[9] = cell_value(0, Unit.FLAG), cell_value(0, Unit.BOMB), cell_value(0, Unit.SCOUT)
    cells[99], cells[90] = cell_value(1, Unit.FLAG), cell_value(1, Unit.SCOUT)
    data.update(cells=cells, remaining=[[1, 1, 0, 1] + [0] * 8, [1, 0, 0, 1] + [0] * 8])
    return RULES.load(data)


def test_an_attack_shows_the_survivor_to_everyone():
    state = play(set_up(), "9,3-9,4", "9,6-9,5", "9,4-9,5")
    assert RULES.observation(state, 1)["last_move"] == "9,4x9,5 marshal>captain: kills"
    for seat in (1, None):
        cells = RULES.observation(state, seat)["cells"]
        assert cells[5][9] == {"owner": 0, "unit": "marshal"}
        assert cells[3][8] == {"owner": 0, "unit": None}
    assert RULES.observation(state, 0)["cells"][6][8] == {"owner": 1, "unit": None}
    assert RULES.observation(state, 1)["remaining"]["captain"] == 3
    text = RULES.render(state, 1).split("\n")
    assert text[6].split()[10] == "01" and text[4].split()[9] == "0#"
    assert RULES.render(state, 0).split("\n")[7].split()[9] == "1#"
    # The marshal stays known when it moves on; a step back into its row hides nothing new.
    state = play(state, "8,6-8,5", "9,5-9,4")
    assert RULES.observation(state, None)["cells"][4][9] == {"owner": 0, "unit": "marshal"}
    assert RULES.observation(state, None)["cells"][5][8] == {"owner": 1, "unit": None}


def test_flag_capture_ends_the_game():
    data = RULES.dump(set_up())
    cells = [EMPTY] * 100
    cells[0], cells[30] = cell_value(0, Unit.FLAG), cell_value(0, Unit.SCOUT)
    cells[40], cells[99] = cell_value(1, Unit.FLAG), cell_value(1, Unit.MINER)
    data.update(cells=cells, remaining=[[1, 0, 0, 1] + [0] * 8, [1, 0, 0, 0, 1] + [0] * 7])
    state = play(RULES.load(data), "0,3-0,4")
    assert RULES.phase(state) == "over" and RULES.to_act(state) == ()
    assert RULES.result(state) == [1.0, 0.0]
    assert RULES.observation(state, 1)["end"] == {
        "winner": 0, "reason": "seat 0 is the last with a flag and a movable unit"
    }
    assert RULES.observation(state, 1)["cells"][4][0] == {"owner": 0, "unit": "scout"}
    assert RULES.observation(state, 0)["cells"][9][9] == {"owner": 1, "unit": "miner"}  # all shown at the end
    assert refused(state, 1, "9,9-9,8")[0] == GAME_OVER
    assert RULES.legal_actions(state, 1).strings == ()
    assert "game over: seat 0 wins" in RULES.render(state, None)


def test_a_boxed_in_seat_can_only_resign():
    data = RULES.dump(set_up())
    cells = [EMPTY] * 100
    cells[0], cells[1], cells[10] = cell_value(0, Unit.SCOUT), cell_value(0, Unit.BOMB), cell_value(0, Unit.FLAG)
    cells[99], cells[90] = cell_value(1, Unit.FLAG), cell_value(1, Unit.SCOUT)
    data.update(cells=cells, remaining=[[1, 1, 0, 1] + [0] * 8, [1, 0, 0, 1] + [0] * 8])
    state = RULES.load(data)
    actions = RULES.legal_actions(state, 0)
    assert actions.strings == (RESIGN,) and actions.complete
    assert refused(state, 0, "0,0-0,1")[0] == NO_SUCH_ACTION
    state = RULES.apply(state, 0, RESIGN)
    assert RULES.result(state) == [0.0, 1.0]
    assert RULES.observation(state, None)["end"]["reason"] == "seat 0 has no move and resigns"


def test_the_move_limit_ends_in_a_draw():
    state = play(set_up(max_moves=2), "9,3-9,4")
    assert RULES.phase(state) == "move"
    state = play(state, "9,6-9,5")
    assert RULES.result(state) == [0.5, 0.5]
    assert "nobody wins" in RULES.observation(state, 0)["end"]["reason"]
    assert "game over: nobody wins" in RULES.render(state, 0)


def test_random_setup_skips_the_setup_phase():
    state = RULES.initial(checked_options(RULES.options, {"random_setup": True}), random.Random(5))
    assert RULES.phase(state) == "move" and RULES.to_act(state) == (0,)
    assert sorted(c for c in state.cells if c != EMPTY and c >> 4 == 0) == sorted(
        cell_value(0, Unit(code)) for code, n in enumerate(shipped_maps()["Default"].army) for _ in range(n)
    )
    again = RULES.initial(checked_options(RULES.options, {"random_setup": True}), random.Random(5))
    assert again == state
    assert all(state.cells[i] == EMPTY or state.cells[i] >> 4 == 0 for i in range(40))


def test_dump_load_round_trip_carries_the_random_outcomes():
    rng = random.Random(11)
    state = RULES.initial(checked_options(RULES.options, {"random_outcome": True, "map": "Small"}), rng)
    for seat in (0, 1):
        state = RULES.apply(state, seat, RULES.legal_actions(state, seat).strings[2])
    attacks = 0
    while RULES.phase(state) != "over" and attacks < 3:
        data = json.loads(json.dumps(RULES.dump(state)))
        again = RULES.load(data)
        assert again == state and RULES.observation(again, 1) == RULES.observation(state, 1)
        move = rng.choice(RULES.legal_actions(state, state.turn).strings)
        state, after = RULES.apply(state, state.turn, move), RULES.apply(again, again.turn, move)
        assert after == state
        attacks += "x" in state.last_move
    assert state.draws == attacks and attacks
    assert RULES.dump(RULES.load(RULES.dump(start()))) == RULES.dump(start())


def test_random_playout_to_the_end():
    played = playout(RULES, checked_options(RULES.options, {}), random.Random(7))
    last, seat, action = played[-1]
    state = RULES.apply(last, seat, action)
    assert RULES.phase(state) == "over"
    result = RULES.result(state)
    assert result is not None and sum(result) == 1.0
    assert all(RULES.phase(s) == "setup" for s, _, _ in played[:2]) and RULES.phase(played[2][0]) == "move"


# --- hidden information ---------------------------------------------------------------------

SMALL_MAPS = ("Small", "8x8", "Corridors", "Island_I", "Plenty_of_options", "Default")


def _random_setup(state, seat, rng):
    army = shipped_maps()[state.map].army
    tokens = list("".join(TOKENS[code] * n for code, n in enumerate(army)))
    tokens += "." * (len(state.layout.zone(seat)) - len(tokens))
    rng.shuffle(tokens)
    return setup_text(state.layout, seat, "".join(tokens))


def _assert_nothing_hidden_shows(state, public):
    """No view shows the unit of another seat's unit that combat has not shown every seat: the
    units ``public`` (the spectator state replayed from the moves, gamed.replay's way) names."""
    layout = state.layout
    for seat in (0, 1, None):
        view = RULES.observation(state, seat)
        json.dumps(view)
        text = RULES.render(state, seat).split("\n")[1 : 1 + layout.height]
        for y in range(layout.height):
            rendered = [text[y][3 + 3 * x : 5 + 3 * x] for x in range(layout.width)]
            for x in range(layout.width):
                i = y * layout.width + x
                true, cell = state.cells[i], view["cells"][y][x]
                if true == EMPTY:
                    assert cell in (None, "lake")
                    continue
                owner, unit = true >> 4, unit_of(true)
                assert cell["owner"] == owner
                shown = public is not None and public["cells"][y][x]["unit"] is not None
                known = state.over or owner == seat or shown
                assert cell["unit"] == (UNIT_NAMES[unit] if known else None)
                assert rendered[x] == f"{owner}{TOKENS[unit] if known else '#'}"


@given(
    st.integers(0, 2**32),
    st.sampled_from(SMALL_MAPS),
    st.integers(1, 150),
    st.booleans(),
    st.booleans(),
)
def test_no_view_shows_an_unrevealed_unit(seed, name, max_moves, random_outcome, random_setup):
    rng = random.Random(seed)
    given = {"map": name, "max_moves": max_moves, "random_outcome": random_outcome, "random_setup": random_setup}
    state = RULES.initial(checked_options(RULES.options, given), rng)
    public = None
    while RULES.phase(state) != "over":
        _assert_nothing_hidden_shows(state, public)
        seats = RULES.to_act(state)
        seat = seats[rng.randrange(len(seats))]
        if RULES.phase(state) == "setup":
            state = RULES.apply(state, seat, _random_setup(state, seat, rng))
            continue
        if public is None:  # the game starts: every unit is hidden from spectators
            public = RULES.observation(state, None)
            assert all(c is None or c == "lake" or c["unit"] is None for row in public["cells"] for c in row)
        state = RULES.apply(state, seat, rng.choice(RULES.legal_actions(state, seat).strings))
        if state.last_move != RESIGN:
            public = next_state(public, None, state.last_move)
    _assert_nothing_hidden_shows(state, public)
    assert RULES.result(state) is not None and sum(RULES.result(state)) == pytest.approx(1.0)
    data = json.loads(json.dumps(RULES.dump(state)))
    assert RULES.load(data) == state
