"""The time-control notation: parsing, bounds, errors and the canonical form."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamed.timecontrol import (
    DEFAULT_LAG,
    FlagPolicy,
    TimeControl,
    TimeControlError,
    format_duration,
    parse,
    parse_duration,
    seconds_field,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("60s", TimeControl(move=60)),
        ("60", TimeControl(move=60)),
        (60, TimeControl(move=60)),
        (0, TimeControl()),
        ("none", TimeControl()),
        ("0", TimeControl()),
        ("5m+2s", TimeControl(bank=300, increment=2)),
        ("5m+0", TimeControl(bank=300)),
        ("0+5s", TimeControl(bank=0, increment=5)),
        ("5m+2s,move=30s", TimeControl(bank=300, increment=2, move=30)),
        ("10m+0, setup=1m, game=1h", TimeControl(bank=600, setup=60, game=3600)),
        ("2m+1s,lag=50ms", TimeControl(bank=120, increment=1, lag=0.05)),
        ("1h30m+0", TimeControl(bank=5400)),
        ("500ms", TimeControl(move=0.5)),
        ("1.5", TimeControl(move=1.5)),
        ("MOVE=2S", TimeControl(move=2)),
        ("setup=30s", TimeControl(setup=30)),
    ],
)
def test_notation(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("abc", "not a duration"),
        ("-5s", "not a duration"),
        ("5m+-2s", "not a duration"),
        ("0+0", "needs an increment"),
        ("move=0", "zero"),
        ("setup=0", "more than zero"),
        ("game=0", "more than zero"),
        ("25h", "longer than a day"),
        ("game=2d", "unknown unit"),
        ("1d+0", "unknown unit"),
        ("5m+2s,5m+1s", "twice"),
        ("30s,move=10s", "twice"),
        ("5m,,move=1s", "empty term"),
        ("none,5m+0", "stands alone"),
        ("speed=5s", "unknown term"),
        ("1m30", "unit"),
        ("1m1m", "own unit"),
        ("x" * 300, "too long"),
    ],
)
def test_bad_notation_is_refused_with_a_reason(text, words):
    with pytest.raises(TimeControlError, match=words):
        parse(text)


def test_bounds_of_the_attrs_class():
    with pytest.raises(TimeControlError):
        TimeControl(move=-1)
    with pytest.raises(TimeControlError):
        TimeControl(increment=2)  # an increment without a bank
    with pytest.raises(TimeControlError):
        TimeControl(bank=86_401)
    with pytest.raises(TimeControlError):
        parse(True)
    with pytest.raises(TimeControlError):
        parse(-3)


def test_canonical_form_and_properties():
    assert parse("5m+2s,move=30s,setup=1m,game=1h,lag=50ms").notation() == "5m+2s,move=30s,setup=1m,game=1h,lag=50ms"
    assert parse("60").notation() == "1m"
    assert parse("none").notation() == "none"
    assert parse("lag=0").notation() == "none,lag=0"
    assert parse("90s").notation() == "1m30s"
    assert parse("60").plain and not parse("1m+0").plain
    assert parse("none").unlimited and not parse("1s").unlimited
    assert TimeControl().lag == DEFAULT_LAG
    assert format_duration(0.25) == "250ms" and format_duration(2.5) == "2.5s" and format_duration(3600) == "1h"
    assert parse_duration("1h1m1s") == 3661
    assert seconds_field(None) == "-" and seconds_field(1.23456) == "1.235" and seconds_field(-1) == "0.000"


def test_flag_policy_parse():
    assert FlagPolicy.parse("Default") is FlagPolicy.DEFAULT
    with pytest.raises(TimeControlError, match="lose, pass"):
        FlagPolicy.parse("default", (FlagPolicy.LOSE, FlagPolicy.PASS))


durations = st.integers(min_value=1, max_value=86_400_000).map(lambda ms: ms / 1000)


@given(
    bank=st.none() | durations,
    increment=st.integers(min_value=0, max_value=60_000).map(lambda ms: ms / 1000),
    move=st.none() | durations,
    setup=st.none() | durations,
    game=st.none() | durations,
)
def test_the_canonical_form_parses_back_to_the_same_control(bank, increment, move, setup, game):
    if bank is None:
        increment = 0.0
    control = TimeControl(move=move, bank=bank, increment=increment, setup=setup, game=game)
    assert parse(control.notation()) == control


def test_budget_and_after_are_the_bank_arithmetic_every_game_uses():
    control = parse("5m+2s,move=30s,setup=1m")
    assert control.budget(300.0) == 30.0 and control.budget(12.5) == 12.5
    assert control.budget(12.5, setup=True) == 60.0
    assert parse("5m+2s").budget(None) is None and parse("10s").budget(None) == 10.0
    assert control.after(12.5, 10.0) == 4.5
    assert control.after(12.5, 20.0) == 2.0, "never below zero, then the increment"
    assert control.after(12.5, 20.0, flagged=True) == 0.0
    assert parse("10s").after(None, 3.0) is None
