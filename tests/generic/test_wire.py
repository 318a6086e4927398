"""The generic protocol's codec: what it accepts, what it refuses and how, and that its fast
paths write what the general ones would."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.generic import wire

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**6, 10**6)),
       st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)), max_size=4))
def test_the_clock_is_written_as_json_writes_it(move, banks):
    message = {"move": move, "banks": banks}
    assert wire.clock(message) == wire.dumps(message)
    assert json.loads(wire.clock(message)) == message


@given(st.dictionaries(st.sampled_from(["type", "action", "turn", "id", "game", "x"]), _JSON, max_size=5))
def test_any_object_is_a_checked_message_or_a_documented_error(message):
    line = json.dumps(message)
    try:
        checked = wire.parse(line)
    except wire.WireError as e:
        assert e.code in wire.CODES and e.text
        return
    fields, _ = wire.CLIENT[checked["type"]]
    assert set(checked) <= {"type", "id", *fields}


@pytest.mark.parametrize(
    "line, code, for_",
    [
        ("", "bad_json", None),
        ("Infinity", "bad_json", None),
        ('{"type": "act", "action": NaN}', "bad_json", None),
        ('"act"', "not_an_object", None),
        ('{"type": 3}', "not_an_object", None),
        ('{"type": "act"}', "missing_field", "act"),
        ('{"type": "act", "action": true}', "bad_field", "act"),
        ('{"type": "act", "action": 1, "turn": "1"}', "bad_field", "act"),
        ('{"type": "act", "action": 1, "how": 1}', "unknown_field", "act"),
        ('{"type": "guest", "name": "a b"}', "bad_field", "guest"),
        ('{"type": "play", "game": "kalaha", "opponent": {"kind": "engine", "mood": "x"}}', "unknown_field", "play"),
        ('{"type": "ping", "id": [1]}', "bad_field", "ping"),
        ('[' * 100_000, "bad_json", None),
    ],
)
def test_refused_lines_name_their_code_and_the_message_type_once_known(line, code, for_):
    with pytest.raises(wire.WireError) as e:
        wire.parse(line)
    assert (e.value.code, e.value.for_) == (code, for_)


def test_the_move_path_act_is_the_same_message_as_the_general_one():
    assert wire.parse('{"type":"act","action":3,"turn":7,"id":"x"}') == {"type": "act", "action": 3, "turn": 7, "id": "x"}
    assert wire.parse('{"type":"act","action":"A3"}') == {"type": "act", "action": "A3"}
