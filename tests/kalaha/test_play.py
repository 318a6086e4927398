"""Kalaha through the common game interface (gamed.play): what the generic port is built on."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gamed import play
from gamed.kalaha import rules
from gamed.kalaha.play import RULES


def test_kalaha_provides_the_common_interface():
    assert verifyObject(play.IRules, RULES)
    assert RULES.seat_count({}) == 2
    assert play.checked_options(RULES.options, {}) == {}
    with pytest.raises(ValueError, match="unknown option size"):
        play.checked_options(RULES.options, {"size": 4})


def test_the_first_position_offers_the_six_pits_of_a():
    state = RULES.initial({}, random.Random(1))
    assert RULES.to_act(state) == (0,)
    assert RULES.phase(state) == "move"
    assert RULES.legal_actions(state, 0).strings == ("A1", "A2", "A3", "A4", "A5", "A6")
    assert RULES.legal_actions(state, 1).strings == ()
    assert "A to move" in RULES.render(state, 0)


def test_an_answer_is_an_index_or_a_spelling_the_kalaha_protocol_accepts():
    state = RULES.initial({}, random.Random(1))
    assert play.resolve(RULES, state, 0, 2) == "A3"
    assert play.resolve(RULES, state, 0, "A3") == "A3"
    assert play.resolve(RULES, state, 0, "3") == "3"  # the rules judge it: sowing pit 3
    after = RULES.apply(state, 0, "A1")  # the extra turn: the sixth stone lands in the store
    assert RULES.to_act(after) == (0,)
    assert RULES.to_act(RULES.apply(state, 0, "A2")) == (1,)


@pytest.mark.parametrize(
    "seat, answer, reason",
    [
        (1, "B1", play.NOT_YOUR_TURN),
        (0, 6, play.NO_SUCH_ACTION),
        (0, -1, play.NO_SUCH_ACTION),
        (0, "A7", play.NO_SUCH_ACTION),
        (0, "B1", play.NO_SUCH_ACTION),
        (0, "sow", play.BAD_ACTION),
        (0, 1.5, play.BAD_ACTION),
        (0, True, play.BAD_ACTION),
    ],
)
def test_refused_answers_name_their_reason(seat, answer, reason):
    state = RULES.initial({}, random.Random(1))
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, state, seat, answer)
    assert refused.value.reason == reason
    assert refused.value.text


@given(st.integers(0, 2**32 - 1))
def test_random_games_end_with_scores_that_match_the_stones(seed):
    rng = random.Random(seed)
    played = play.playout(RULES, {}, rng)
    state = played[-1][0]
    last = RULES.apply(state, played[-1][1], played[-1][2])
    assert RULES.phase(last) == "over" and RULES.to_act(last) == ()
    scores = RULES.result(last)
    a, b = last.pits[6], last.pits[13]
    assert scores == ([1.0, 0.0] if a > b else [0.0, 1.0] if b > a else [0.5, 0.5])
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, last, 0, 0)
    assert refused.value.reason == play.GAME_OVER
    for before, _, _ in played:
        assert RULES.load(RULES.dump(before)) == before
        assert RULES.observation(before, 0) == RULES.observation(before, None)
        assert RULES.result(before) is None


def test_the_observation_is_the_spectator_state():
    state = RULES.initial({}, random.Random(1))
    view = RULES.observation(state, 1)
    assert view == {**rules.spectator_state(state), "over": False}
