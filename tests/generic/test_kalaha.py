"""Kalaha through the generic port: against a person on the Kalaha port, the computer, itself;
bad input; taking a seat back. In memory, on a Clock; every server message is schema-checked."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock

from gamed.kalaha.generic import KalahaHost
from tests.generic.harness import JsonClient, generic_service
from tests.kalaha.harness import Client, make_service
from tests.memclient import next_turns


@pytest.fixture
def world():
    clock = Clock()
    kalaha = make_service(clock, strikes=3)
    generic = generic_service({"kalaha": KalahaHost(kalaha)}, kalaha.players, clock)
    return clock, kalaha, generic


def bot(generic, name):
    client = JsonClient(generic)
    hello = client.messages()
    assert hello == [{"type": "hello", "protocol": "gamed-generic", "version": 1, "server": "gamed",
                      "games": ["kalaha"], "guests": True}]
    client.send({"type": "guest", "name": name, "id": 1})
    assert client.messages() == [{"type": "ok", "for": "guest", "id": 1, "name": name}]
    return client


def test_the_games_reply_lists_kalaha_with_its_opponents_and_levels(world):
    _, _, generic = world
    client = bot(generic, "ann")
    client.send({"type": "games"})
    (games,) = client.messages()
    (kalaha,) = games["games"]
    assert kalaha["name"] == "kalaha" and kalaha["seats"] == [2, 2]
    assert kalaha["opponents"] == ["person", "engine"]
    assert "beginner" in kalaha["levels"] or kalaha["levels"]


def test_a_generic_bot_and_a_telnet_person_meet_at_one_table(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "table": "t1"})
    msgs = gen.messages()
    assert [m["type"] for m in msgs] == ["ok", "waiting"]
    person = Client(kalaha)
    person.send("NAME tel", "TABLE t1")
    lines = person.read()
    assert any(line.startswith("START") and "gen" in line for line in lines), lines
    msgs = gen.messages()
    started = next(m for m in msgs if m["type"] == "started")
    assert started["seat"] == 0 and started["seats"] == ["gen", "tel"]
    state = msgs[-1]
    assert state["type"] == "state" and state["to_act"] == [0] and state["actions"] == ["A1", "A2", "A3", "A4", "A5", "A6"]
    assert state["observation"]["pits"][:6] == [6, 6, 6, 6, 6, 6] or state["observation"]
    assert "A to move" in state["text"]
    # A1: the last stone in the store, an extra turn; by index this time.
    gen.send({"type": "act", "action": 0})
    msgs = gen.messages()
    assert msgs[-1]["type"] == "state" and msgs[-1]["to_act"] == [0] and msgs[-1]["turn"] == 1
    assert any(line.startswith("MOVED A A1") or "A1" in line for line in person.read())
    gen.send({"type": "act", "action": "A2"})
    msgs = gen.messages()
    assert msgs[-1]["to_act"] == [1] and "actions" not in msgs[-1]
    person.send("MOVE B1")
    person.read()
    msgs = gen.messages()
    assert msgs[-1]["type"] == "state" and msgs[-1]["to_act"] == [0] and msgs[-1]["turn"] == 3
    gen.send({"type": "resign"})
    (ended,) = gen.of("ended")
    assert ended["scores"] == [0.0, 1.0] and ended["reason"] == "resign" and "gen resigned" in ended["text"]
    assert any("RESIGN" in line or "GAMEOVER" in line or "OVER" in line for line in person.read())


def until_asked(clock, client, seat):
    """The messages up to the state that asks ``seat`` to act (the computer moves from the clock)."""
    msgs = []
    for _ in range(100):
        next_turns(clock)
        msgs += client.messages()
        if msgs and msgs[-1]["type"] == "state" and msgs[-1]["to_act"] == [seat]:
            return msgs
    raise AssertionError(f"never asked: {msgs}")


def test_refused_acts_name_the_reason_and_the_legal_actions_within_the_strike_budget(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "opponent": {"kind": "engine", "level": "random"}, "seat": 1})
    msgs = until_asked(clock, gen, 1)
    assert msgs[1]["type"] == "started" and msgs[1]["seats"] == ["computer-random", "gen"]
    legal = msgs[-1]["actions"]
    gen.send({"type": "act", "action": 99})
    (error,) = gen.messages()
    assert error["code"] == "no_such_action" and error["legal"] == legal and error["retries_left"] == 2
    gen.send({"type": "act", "action": "A1"})
    (error,) = gen.messages()
    assert error["code"] == "no_such_action" and error["retries_left"] == 1
    gen.send("{not json")
    msgs = gen.messages()
    assert msgs[0]["code"] == "bad_json" and msgs[0]["retries_left"] == 0
    ended = msgs[-1]
    assert ended["type"] == "ended" and ended["reason"] == "strikes" and ended["scores"] == [1.0, 0.0]


@pytest.mark.parametrize(
    "line, code",
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "not_an_object"),
        ('{"kind": "play"}', "not_an_object"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"type": "ping", "loud": true}', "unknown_field"),
        ('{"type": "play"}', "missing_field"),
        ('{"type": "play", "game": 7}', "bad_field"),
        ('{"type": "play", "game": "chess"}', "no_such_game"),
        ('{"type": "play", "game": "kalaha", "options": {"pits": 4}}', "bad_option"),
        ('{"type": "play", "game": "kalaha", "opponent": {"kind": "engine", "level": "god"}}', "no_such_opponent"),
        ('{"type": "play", "game": "kalaha", "opponent": {"kind": "alien"}}', "bad_field"),
        ('{"type": "act", "action": 1}', "not_now"),
        ('{"type": "act", "action": 1.5}', "bad_field"),
        ('{"type": "resume", "token": "nope"}', "refused"),
        ('{"type": "token"}', "refused"),
        ('NaN', "bad_json"),
    ],
)
def test_bad_input_gets_its_documented_error_and_the_connection_goes_on(world, line, code):
    _, _, generic = world
    client = bot(generic, "ann")
    client.send(line)
    (error,) = client.messages()
    assert error["type"] == "error" and error["code"] == code, error
    client.send({"type": "ping", "id": "p"})
    assert client.messages() == [{"type": "pong", "id": "p"}]


BAD_LINES = [
    "{not json", "[1, 2]", '{"type": "dance"}', '{"type": "ping", "loud": true}', '{"type": "play"}',
    '{"type": "play", "game": "chess"}', '{"type": "play", "game": "kalaha", "options": {"pits": 4}}',
    '{"type": "act", "action": 1}', '{"type": "act", "action": 99, "turn": 0}', '{"type": "resign"}',
    '{"type": "resume", "token": "nope"}', "NaN", "x" * 5000,
]


def test_bad_input_of_one_bot_costs_a_game_of_others_nothing(world):
    """While two bots play at one table, a third sends every kind of bad line, in the lobby and
    in a game of its own: the two see not one message more, their game goes on move for move,
    and the third's game ends by its own strikes only."""
    clock, kalaha, generic = world
    a, b = bot(generic, "a"), bot(generic, "b")
    for c in (a, b):
        c.send({"type": "play", "game": "kalaha", "table": "calm"})
    noisy = bot(generic, "noisy")
    noisy.send({"type": "play", "game": "kalaha", "opponent": {"kind": "engine", "level": "random"}})
    noisy.messages()
    seen = {"a": a.messages(), "b": b.messages()}
    moves = 0
    for _ in range(12):
        for line in BAD_LINES:
            noisy.send(line)
        for name, c in (("a", a), ("b", b)):
            states = [m for m in seen[name] if m["type"] == "state" and "actions" in m]
            if states and seen[name][-1] is states[-1]:
                c.send({"type": "act", "action": 0, "turn": states[-1]["turn"]})
                moves += 1
        clock.advance(0.1)
        for name, c in (("a", a), ("b", b)):
            got = c.messages()
            assert all(m["type"] in ("ok", "waiting", "started", "state") for m in got), got
            seen[name] += got
    assert moves >= 10
    assert [m["turn"] for m in seen["a"] if m["type"] == "state"] == [m["turn"] for m in seen["b"] if m["type"] == "state"]
    noisy_msgs = noisy.messages()
    assert [m["reason"] for m in noisy_msgs if m["type"] == "ended"] == ["strikes"]
    errors = [m for m in noisy_msgs if m["type"] == "error"]
    assert len(errors) == 12 * len(BAD_LINES) and not noisy.lost  # each answered; the connection goes on


def test_lines_over_the_limit_and_bytes_that_are_not_text_are_refused(world):
    clock, kalaha, _ = world
    from gamed.kalaha.generic import KalahaHost as Host

    generic = generic_service({"kalaha": Host(kalaha)}, kalaha.players, clock, max_line=200)
    client = JsonClient(generic)
    client.messages()
    client.raw(b'{"type":"ping","pad":"' + b"x" * 300 + b'"}\r\n')
    (error,) = client.messages()
    assert error["code"] == "line_too_long"
    client.raw(b'{"type":"guest","name":"\xc3\xa9"}\r\n')
    (error,) = client.messages()
    assert error["code"] == "not_text"


def test_a_dropped_generic_bot_takes_its_seat_back_with_its_token(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "table": "t2"})
    person = Client(kalaha)
    person.send("NAME tel", "TABLE t2")
    gen.messages()
    gen.send({"type": "token"})
    (token,) = gen.messages()
    gen.drop()
    assert any("AWAY" in line for line in person.read())
    again = JsonClient(generic)
    again.messages()
    again.send({"type": "resume", "token": token["token"]})
    msgs = again.messages()
    assert [m["type"] for m in msgs][:2] == ["ok", "started"] and msgs[1]["resumed"] is True
    assert msgs[-1]["type"] == "state" and msgs[-1]["actions"]
    assert any("BACK" in line for line in person.read())
    again.send({"type": "act", "action": 1})
    assert again.messages()[-1]["to_act"] == [1]


def test_a_whole_game_against_the_computer_ends_with_scores_that_match_the_stores(world):
    clock, _, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "opponent": {"kind": "engine", "level": "easy"}})
    for _ in range(500):
        next_turns(clock)
        msgs = gen.messages()
        ended = [m for m in msgs if m["type"] == "ended"]
        if ended:
            break
        asked = [m for m in msgs if m["type"] == "state" and "actions" in m]
        if asked:
            gen.send({"type": "act", "action": len(asked[-1]["actions"]) - 1, "turn": asked[-1]["turn"]})
    else:
        raise AssertionError("no end")
    (ended,) = ended
    stores = ended["observation"]["stores"]
    a, b = stores
    assert ended["reason"] == "end"
    assert ended["scores"] == ([1.0, 0.0] if a > b else [0.0, 1.0] if b > a else [0.5, 0.5])


def test_a_shutdown_ends_the_game_as_aborted_then_says_bye(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    waiting = bot(generic, "idle")
    gen.send({"type": "play", "game": "kalaha", "table": "t3"})
    person = Client(kalaha)
    person.send("NAME tel", "TABLE t3")
    gen.messages()
    generic.startService()
    kalaha.startService()
    generic.stopService()
    assert waiting.messages() == [{"type": "bye", "text": "the server is shutting down"}]
    kalaha.stopService()
    msgs = gen.messages()
    assert [m["type"] for m in msgs] == ["ended", "bye"]
    assert msgs[0]["reason"] == "shutdown" and msgs[0]["scores"] is None and msgs[0]["text"].startswith("aborted")


def test_a_clock_is_the_table_s_time_control_and_a_bad_one_is_a_bad_option(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "clock": "forever"})
    (error,) = gen.messages()
    assert error["code"] == "bad_option" and error["text"].startswith("clock: ")
    gen.send({"type": "play", "game": "kalaha", "clock": "5m+2s"})
    assert [m["type"] for m in gen.messages()] == ["ok", "waiting"]
    other = bot(generic, "oth")
    other.send({"type": "play", "game": "kalaha", "clock": "5m+2s"})
    started = other.of("started")[0]
    assert started["options"] == {"clock": "5m+2s"}
    state = gen.of("state")[-1]
    assert state["clock"]["banks"] == [300.0, 300.0]


def test_an_act_for_a_turn_that_has_not_come_or_is_over_is_refused(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "table": "t4"})
    person = Client(kalaha)
    person.send("NAME tel", "TABLE t4")
    gen.messages()
    gen.send({"type": "act", "action": 0, "turn": 5})
    (error,) = gen.messages()
    assert error["code"] == "not_your_turn" and error["text"] == "turn 5 has not come; it is turn 0"
    gen.send({"type": "act", "action": 0, "turn": 0})  # A1: an extra turn
    assert gen.messages()[-1]["turn"] == 1
    gen.send({"type": "act", "action": 0, "turn": 0})
    (error,) = gen.messages()
    assert error["text"] == "turn 0 is over; it is turn 1"


def test_a_resumed_seat_is_told_the_game_s_options(world):
    clock, kalaha, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "kalaha", "table": "t5", "clock": "3m"})
    person = Client(kalaha)
    person.send("NAME tel", "TABLE t5 CLOCK 3m")
    first = gen.of("started")[0]
    gen.send({"type": "token"})
    (token,) = gen.messages()
    gen.drop()
    again = JsonClient(generic)
    again.messages()
    again.send({"type": "resume", "token": token["token"]})
    started = again.of("started")[0]
    assert started["resumed"] is True and started["options"] == first["options"]
