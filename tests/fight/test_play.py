"""Virtual Fight through the common game interface (gamed.play): simultaneous turns."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gamed import play
from gamed.fight.play import RULES


def test_fight_provides_the_common_interface():
    assert verifyObject(play.IRules, RULES)
    options = play.checked_options(RULES.options, {})
    assert options == {"map": "default", "teams": 2, "max_turns": 500}
    assert RULES.seat_count(options) == 2
    assert RULES.seat_count(play.checked_options(RULES.options, {"map": "four", "teams": 4})) == 4
    with pytest.raises(ValueError):
        play.checked_options(RULES.options, {"teams": 5})


def test_the_first_turn_is_open_to_every_team():
    state = RULES.initial(play.checked_options(RULES.options, {}), random.Random(1))
    assert RULES.to_act(state) == (0, 1)
    assert RULES.phase(state) == "turn"
    actions = RULES.legal_actions(state, 0).strings
    assert actions[-1] == "DONE"
    # Warrior 0 of team 0 starts at 3,1 facing RIGHT: it may move every way.
    assert actions[:12] == (
        "0&MOVE&UP", "0&MOVE&DOWN", "0&MOVE&LEFT", "0&MOVE&RIGHT",
        "0&SHOOT&UP", "0&SHOOT&DOWN", "0&SHOOT&LEFT", "0&SHOOT&RIGHT",
        "0&NONE&UP", "0&NONE&DOWN", "0&NONE&LEFT", "0&NONE&RIGHT",
    )
    assert len(actions) == 5 * 12 + 1


def test_a_turn_is_resolved_when_every_seat_has_closed():
    state = RULES.initial({"max_turns": 5}, random.Random(1))
    state = RULES.apply(state, 0, "0&mOvE&dOwN")  # the protocol's spellings are accepted
    assert "0&MOVE&DOWN" not in RULES.legal_actions(state, 0).strings
    assert not any(a.startswith("0&") for a in RULES.legal_actions(state, 0).strings)
    state = RULES.apply(state, 0, "1&SHOT")
    state = RULES.apply(state, 0, "DONE")
    assert RULES.to_act(state) == (1,)
    with pytest.raises(play.IllegalAction) as refused:
        RULES.apply(state, 0, "2&NONE&UP")
    assert refused.value.reason == play.NOT_YOUR_TURN
    assert RULES.observation(state, 1)["warriors"][0]["shot"] is None
    assert RULES.observation(state, 0)["warriors"][1]["shot"] == "RIGHT"
    assert "shot" not in json.dumps(RULES.observation(state, None))
    state = RULES.apply(state, 1, "done")
    assert state.turn == 2 and RULES.to_act(state) == (0, 1) and state.shots == ()
    assert state.warriors[0][0][:3] == (4, 1, "DOWN")


@pytest.mark.parametrize(
    "answer, reason",
    [
        (61, play.NO_SUCH_ACTION),
        ("0&MOVE&LEFT&UP", play.BAD_ACTION),
        ("0&POS", play.BAD_ACTION),
        ("7&MOVE&UP", play.BAD_ACTION),
        ("jump", play.BAD_ACTION),
        (2.5, play.BAD_ACTION),
    ],
)
def test_refused_answers_name_their_reason(answer, reason):
    state = RULES.initial({}, random.Random(1))
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, state, 0, answer)
    assert refused.value.reason == reason
    assert refused.value.text


def test_a_second_action_or_a_blocked_move_is_no_such_action():
    state = RULES.initial({}, random.Random(1))
    state = RULES.apply(state, 0, "0&NONE&UP")
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, state, 0, "0&MOVE&UP")
    assert refused.value.reason == play.NO_SUCH_ACTION
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, state, 0, "1&MOVE&LEFT&")
    assert refused.value.reason == play.BAD_ACTION


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([("default", 2), ("four", 3), ("four", 4)]))
def test_random_games_end_with_consistent_results(seed, setup):
    name, teams = setup
    rng = random.Random(seed)
    options = play.checked_options(RULES.options, {"map": name, "teams": teams, "max_turns": 4})
    played = play.playout(RULES, options, rng)
    state, seat, action = played[-1]
    last = RULES.apply(state, seat, action)
    assert RULES.phase(last) == "over" and RULES.to_act(last) == ()
    assert last.turn <= 4
    scores = RULES.result(last)
    assert len(scores) == teams and all(s in (0.0, 0.5, 1.0) for s in scores)
    assert scores.count(1.0) <= 1 and not (1.0 in scores and 0.5 in scores)
    with pytest.raises(play.IllegalAction) as refused:
        play.resolve(RULES, last, 0, 0)
    assert refused.value.reason == play.GAME_OVER
    for before, _, _ in played[::7] + [played[-1], (last, 0, "")]:
        data = json.loads(json.dumps(RULES.dump(before)))
        assert RULES.load(data) == before
        json.dumps(RULES.observation(before, None))
        json.dumps(RULES.observation(before, 0))


def test_the_turn_limit_ends_the_game_as_the_rules_judge_it():
    state = RULES.initial({"max_turns": 1}, random.Random(1))
    state = RULES.apply(RULES.apply(state, 0, "DONE"), 1, "DONE")
    assert RULES.phase(state) == "over" and RULES.result(state) == [0.5, 0.5]
    assert "game over" in RULES.render(state, None)
