"""UCC Stratego through the common game interface (gamed.stratego.play)."""

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

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
from gamed.stratego import rules
from gamed.stratego.play import RULES
from gamed.stratego.referee import DEFAULT_SETUPS
from gamed.stratego.rules import EMPTY, UNIT_NAMES, Unit, cell_value
from tests.rulesdriver import RulesDriver

RED_DEFAULT = "/".join(DEFAULT_SETUPS["RED"])
BLUE_DEFAULT = "/".join(DEFAULT_SETUPS["BLUE"])
DRIVER = RulesDriver(RULES)
start, play, refused = DRIVER.start, DRIVER.play, DRIVER.refused


def set_up(red=RED_DEFAULT, blue=BLUE_DEFAULT, **given):
    return RULES.apply(RULES.apply(start(**given), 0, red), 1, blue)


def test_interface():
    assert verifyObject(IRules, RULES)
    assert RULES.name == "stratego" and RULES.hidden is True
    assert RULES.seat_count({}) == 2
    assert checked_options(RULES.options, {}) == {"max_turns": 1000}
    with pytest.raises(ValueError):
        checked_options(RULES.options, {"max_turns": 0})


def test_setup_phase_both_seats_at_once():
    state = start()
    assert RULES.phase(state) == "setup" and RULES.to_act(state) == (0, 1)
    actions = RULES.legal_actions(state, 1)
    assert not actions.complete and "'/'" in actions.grammar
    assert actions.strings[0] == BLUE_DEFAULT
    assert RULES.legal_actions(state, 0).strings[0] == RED_DEFAULT
    # Every example is a setup the rules accept.
    for seat in (0, 1):
        for example in RULES.legal_actions(state, seat).strings:
            RULES.apply(state, seat, example)
    blue_first = RULES.apply(state, 1, BLUE_DEFAULT)
    assert RULES.to_act(blue_first) == (0,) and RULES.phase(blue_first) == "setup"
    assert RULES.legal_actions(blue_first, 1).strings == ()
    assert refused(blue_first, 1, BLUE_DEFAULT)[0] == NOT_YOUR_TURN
    both = RULES.apply(blue_first, 0, "DEFAULT")
    assert RULES.phase(both) == "move" and RULES.to_act(both) == (0,)
    assert RULES.dump(both) == RULES.dump(set_up())
    assert RULES.result(both) is None


def test_setup_refusals():
    state = start()
    assert refused(state, 0, "")[0] == BAD_ACTION
    assert refused(state, 0, "FB8sB479B8/BB31555583/6724898974")[0] == BAD_ACTION  # three lines
    assert refused(state, 0, "FB8SB479B8/BB31555583/6724898974/967B669999")[0] == BAD_ACTION  # S is no token
    assert refused(state, 0, "FB8sB479B8x/BB31555583/6724898974/967B669999")[0] == BAD_ACTION  # 11 long
    assert refused(state, 0, "0 3 DOWN")[0] == BAD_ACTION
    reason, text = refused(state, 0, "FB.sB479B8/BB31555583/6724898974/967B669999")  # a miner missing
    assert reason == NO_SUCH_ACTION and "4 8 of 5" in text
    reason, text = refused(state, 0, "FB9sB479B8/BB31555583/6724898974/967B669999")  # a scout for a miner
    assert reason == NO_SUCH_ACTION and "9 9 of 8" in text
    reason, _ = refused(state, 1, "FF8sB479B8/BB31555583/6724898974/967B669999")  # two flags
    assert reason == NO_SUCH_ACTION
    # The protocol's spellings: the four lines separated by spaces, and a human's DEFAULT.
    spaced = RULES.apply(state, 0, " ".join(DEFAULT_SETUPS["RED"]))
    assert RULES.dump(spaced) == RULES.dump(RULES.apply(state, 0, "default"))
    assert RULES.dump(state)["set_up"] == [False, False]  # never changed


def test_rows_as_the_protocol_orders_them():
    view = RULES.observation(set_up(), None)
    cells = [[c if c is None or c == "lake" else c["owner"] for c in row] for row in view["cells"]]
    assert all(c == 0 for row in cells[0:4] for c in row)
    assert all(c == 1 for row in cells[6:10] for c in row)
    own = RULES.observation(set_up(), 1)["cells"]
    assert own[9][0] == {"owner": 1, "unit": "flag"}  # BLUE's 4th line is its back row, y 9
    assert own[6][0] == {"owner": 1, "unit": "scout"}
    assert own[0][0] == {"owner": 0, "unit": None}


def test_moves_listed_in_full():
    state = set_up()
    actions = RULES.legal_actions(state, 0)
    assert actions.complete
    assert actions.strings[-1] == "SURRENDER"
    # Default setups: the front row's movers step down; the scout at 0,3 may go 1 to 3 squares.
    assert "0 3 DOWN" in actions.strings and "0 3 DOWN 2" in actions.strings and "0 3 DOWN 3" in actions.strings
    assert "0 3 DOWN 4" not in actions.strings and "0 3 DOWN 1" not in actions.strings
    assert "3 3 DOWN" not in actions.strings  # a bomb
    assert "2 3 DOWN" not in actions.strings  # into a lake
    assert RULES.legal_actions(state, 1).strings == ()
    for action in actions.strings:
        RULES.apply(state, 0, action)
    assert resolve(RULES, state, 0, "0 3 DOWN 1") == "0 3 DOWN 1"
    assert RULES.dump(RULES.apply(state, 0, "0 3 DOWN 1")) == RULES.dump(RULES.apply(state, 0, "0 3 DOWN"))


def test_illegal_moves_refused_with_the_rules_reason():
    state = set_up()
    cases = {  # the spec's §14.4 replies
        "10 3 DOWN": rules.OUTSIDE,
        "0 4 DOWN": rules.NO_PIECE,
        "0 6 UP": rules.NOT_YOURS,
        "2 4 UP": rules.NOT_YOURS,
        "0 0 DOWN": rules.NOT_MOBILE,
        "2 0 UP": rules.CANNOT_MOVE,
        "1 3 DOWN 2": rules.CANNOT_MOVE,
        "0 3 DOWN x": rules.CANNOT_MOVE,
        "0 2 DOWN": rules.BLOCKED,
        "2 3 DOWN": rules.BLOCKED,
        "0 3 DOWN 4": rules.BLOCKED,
    }
    for move, why in cases.items():
        reason, text = refused(state, 0, move)
        assert reason == NO_SUCH_ACTION and why in text, move
    for move in ("0 3 down", "NO_MOVE", "", "FB8sB479B8/BB31555583/6724898974/967B669999"):
        assert refused(state, 0, move)[0] == BAD_ACTION, move
    assert refused(state, 1, "0 6 UP")[0] == NOT_YOUR_TURN
    with pytest.raises(IllegalAction) as e:
        resolve(RULES, state, 1, "0 6 UP")
    assert e.value.reason == NOT_YOUR_TURN


def test_the_manuals_example_game():
    state = play(set_up(), "0 3 DOWN", "9 6 UP 3")
    assert RULES.observation(state, 0)["last_move"] == "9 6 UP 3 BOTHDIE 9 9"
    state = play(state, "9 2 DOWN")
    assert RULES.phase(state) == "move" and RULES.to_act(state) == (1,) and state.turn == 2
    state = play(state, "SURRENDER")
    assert RULES.phase(state) == "over" and RULES.to_act(state) == ()
    assert RULES.result(state) == [1.0, 0.0]
    end = RULES.observation(state, None)["end"]
    assert end == {
        "colour": "BLUE", "outcome": "SURRENDER", "reason": "This player has surrendered!", "values": [146, 146]
    }
    assert refused(state, 0, "0 4 DOWN")[0] == GAME_OVER
    assert RULES.legal_actions(state, 0).strings == ()
    assert "game over: BLUE SURRENDER" in RULES.render(state, 0)


def test_flag_capture():
    blue = "F67B669999/6724898974/BB31555583/9B8sB479B8"  # the spec's §14.5 vector
    state = play(set_up(blue=blue), "0 3 DOWN 3")
    assert RULES.result(state) == [1.0, 0.0]
    assert RULES.observation(state, 1)["end"]["reason"] == "Captured the flag"
    assert RULES.observation(state, None)["cells"][6][0] == {"owner": 0, "unit": "scout"}


def test_turn_limit():
    assert RULES.result(set_up(max_turns=1)) == [0.5, 0.5]
    state = set_up(max_turns=2)
    state = play(state, "0 3 DOWN")
    assert RULES.phase(state) == "move"
    state = play(state, "9 6 UP 3")
    assert RULES.result(state) == [0.5, 0.5]
    assert RULES.observation(state, 0)["end"]["outcome"] == "DRAW_DEFAULT"
    assert RULES.observation(state, 0)["end"]["reason"] == "Game declared a draw after 2 turns"


def test_attrition():
    cells = [EMPTY] * 100
    cells[0] = cell_value(0, Unit.FLAG)
    cells[30] = cell_value(0, Unit.SCOUT)
    cells[99] = cell_value(1, Unit.FLAG)
    cells[60] = cell_value(1, Unit.SPY)
    data = RULES.dump(set_up())
    data.update(cells=cells)
    state = RULES.load(data)
    assert RULES.legal_actions(state, 0).strings.count("0 3 DOWN 3") == 1
    state = play(state, "0 3 DOWN 3")  # KILLS 9 s: BLUE has no mobile piece left
    assert RULES.result(state) == [1.0, 0.0]
    assert RULES.observation(state, 1)["end"]["reason"] == "Destroyed all mobile enemy pieces"


def test_revealed_pieces_and_hidden_ones():
    # RED's lieutenant steps forward, BLUE's scout comes to 0,4, the lieutenant takes it.
    state = play(set_up(), "1 3 DOWN", "0 6 UP 2", "1 4 LEFT")
    assert RULES.observation(state, 0)["last_move"] == "1 4 LEFT KILLS 6 9"
    for seat in (1, None):
        cells = RULES.observation(state, seat)["cells"]
        assert cells[4][0] == {"owner": 0, "unit": "lieutenant"}
        assert cells[0][0] == {"owner": 0, "unit": None}
    assert RULES.observation(state, 0)["cells"][6][1] == {"owner": 1, "unit": None}
    text = RULES.render(state, 1).split("\n")
    assert text[5].split()[1] == "R6" and text[1].split()[1] == "R#"
    # The lieutenant stays known when it moves on.
    state = play(state, "1 6 UP", "0 4 DOWN")
    assert RULES.observation(state, 1)["cells"][5][0] == {"owner": 0, "unit": "lieutenant"}


def test_dump_load_round_trip():
    state = play(set_up(), "1 3 DOWN", "0 6 UP 2", "1 4 LEFT")
    data = json.loads(json.dumps(RULES.dump(state)))
    again = RULES.load(data)
    assert again == state
    assert RULES.observation(again, 1) == RULES.observation(state, 1)
    assert RULES.dump(RULES.load(RULES.dump(start()))) == RULES.dump(start())


def test_random_playout_to_the_end():
    played = playout(RULES, checked_options(RULES.options, {}), random.Random(7))
    last, seat, action = played[-1]
    state = RULES.apply(last, seat, action)
    assert RULES.phase(state) == "over"
    result = RULES.result(state)
    assert result is not None and sum(result) == 1.0
    assert [a for _, _, a in played[:2]] and all(RULES.phase(s) == "setup" for s, _, _ in played[:2])


def _random_setup(seat, rng):
    tokens = list("".join(DEFAULT_SETUPS["RED"]))
    rng.shuffle(tokens)
    return "/".join("".join(tokens[i : i + 10]) for i in range(0, 40, 10))


def _assert_nothing_hidden_shows(state):
    """No view shows the rank of a unit its viewer may not know (compared with the true cells)."""
    for seat in (0, 1, None):
        view = RULES.observation(state, seat)
        json.dumps(view)
        text = RULES.render(state, seat).split("\n")[1:11]
        for y in range(10):
            rendered = text[y].split()[1:]
            for x in range(10):
                i = y * 10 + x
                true = state.cells[i]
                cell = view["cells"][y][x]
                if state.captured and i in state.last:
                    continue  # the capture is shown done: the attacker on the flag's square
                if true == EMPTY:
                    assert cell in (None, "lake")
                    continue
                owner, unit = true >> 4, rules.unit_of(true)
                assert cell["owner"] == owner
                known = state.over or owner == seat or i in state.revealed
                assert cell["unit"] == (UNIT_NAMES[unit] if known else None)
                assert rendered[x] == "RB"[owner] + (unit.token if known else "#")


@given(st.integers(0, 2**32), st.integers(1, 150), st.booleans())
def test_no_view_shows_an_unrevealed_rank(seed, max_turns, surrender):
    rng = random.Random(seed)
    state = RULES.initial(checked_options(RULES.options, {"max_turns": max_turns}), rng)
    while RULES.phase(state) != "over":
        _assert_nothing_hidden_shows(state)
        seats = RULES.to_act(state)
        seat = seats[rng.randrange(len(seats))]
        if RULES.phase(state) == "setup":
            state = RULES.apply(state, seat, _random_setup(seat, rng))
            continue
        moves = RULES.legal_actions(state, seat).strings
        if not surrender:
            moves = moves[:-1] or moves  # SURRENDER only when nothing else is left
        state = RULES.apply(state, seat, rng.choice(moves))
    _assert_nothing_hidden_shows(state)
    assert RULES.result(state) is not None
    data = json.loads(json.dumps(RULES.dump(state)))
    assert RULES.load(data) == state
