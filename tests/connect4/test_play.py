"""Connect Four through the common game interface (gamed.connect4.play)."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gamed.connect4.play import RULES
from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, IllegalAction, IRules, checked_options, playout, resolve
from tests.rulesdriver import RulesDriver


DRIVER = RulesDriver(RULES)
start, play = DRIVER.start, DRIVER.play


def test_interface():
    assert verifyObject(IRules, RULES)
    assert RULES.seat_count({}) == 2


def test_first_position():
    state = start()
    assert RULES.to_act(state) == (0,)
    assert RULES.phase(state) == "move"
    assert RULES.legal_actions(state, 0).strings == tuple("0123456")
    assert RULES.legal_actions(state, 1).strings == ()
    assert RULES.result(state) is None


def test_sizes():
    assert RULES.legal_actions(start(width=4, height=5), 0).strings == ("0", "1", "2", "3")
    with pytest.raises(ValueError):
        checked_options(RULES.options, {"width": 3})
    with pytest.raises(ValueError):
        checked_options(RULES.options, {"height": 17})


def test_other_spellings():
    state = start()
    assert RULES.dump(RULES.apply(state, 0, "MOVE 3")) == RULES.dump(RULES.apply(state, 0, "3"))
    assert RULES.dump(RULES.apply(state, 0, " 03 "))["moves"] == [3]
    assert RULES.apply(state, 0, "3") is not state and RULES.dump(state)["moves"] == []


def refused(state, seat, action):
    return DRIVER.refused(state, seat, action)[0]


def test_refusals():
    state = start()
    assert refused(state, 1, "3") == NOT_YOUR_TURN
    assert refused(state, 0, "x") == BAD_ACTION
    assert refused(state, 0, "") == BAD_ACTION
    assert refused(state, 0, "7") == NO_SUCH_ACTION
    with pytest.raises(IllegalAction) as e:
        resolve(RULES, state, 0, 7)
    assert e.value.reason == NO_SUCH_ACTION


def test_full_column():
    state = play(start(), *[0] * 6)
    assert "0" not in RULES.legal_actions(state, 0).strings
    assert refused(state, 0, "0") == NO_SUCH_ACTION
    with pytest.raises(IllegalAction) as e:
        resolve(RULES, state, 0, "0")
    assert e.value.reason == NO_SUCH_ACTION


def test_win_and_game_over():
    state = play(start(), 0, 1, 0, 1, 0, 1, 0)
    assert RULES.phase(state) == "over" and RULES.to_act(state) == ()
    assert RULES.result(state) == [1.0, 0.0]
    assert refused(state, 1, "2") == GAME_OVER
    assert RULES.legal_actions(state, 1).strings == ()
    assert "0 (X) won" in RULES.render(state, None)


def test_render():
    text = RULES.render(play(start(), 3), 1)
    lines = text.split("\n")
    assert lines[0] == "0 1 2 3 4 5 6"
    assert lines[-2] == ". . . X . . ."
    assert lines[-1] == "1 (O) to move"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.integers(4, 8), st.integers(4, 8))
def test_random_playouts(seed, width, height):
    options = checked_options(RULES.options, {"width": width, "height": height})
    played = playout(RULES, options, random.Random(seed))
    state = RULES.initial(options, random.Random(seed))
    for before, seat, action in played:
        assert RULES.dump(before) == RULES.dump(state)
        assert RULES.result(state) is None
        data = json.loads(json.dumps(RULES.dump(state)))
        assert RULES.dump(RULES.load(data)) == data
        json.dumps(RULES.observation(state, None))
        state = RULES.apply(state, seat, action)
    result = RULES.result(state)
    assert result is not None and sum(result) == 1.0
    assert (state.winner is None) == (result == [0.5, 0.5])
    assert RULES.dump(RULES.load(json.loads(json.dumps(RULES.dump(state))))) == RULES.dump(state)
