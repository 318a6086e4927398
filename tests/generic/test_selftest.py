"""The self-test (``{"type":"selftest","game":...}``): a bot that follows the protocol passes, and
each of a set of deliberately broken bots is caught in the scene its fault shows in, with the line
expected and the line received. In memory, on a Clock; every message is schema-checked."""

from __future__ import annotations

import json

import pytest
from twisted.internet.task import Clock

from gamed.connect4.generic import Connect4Host
from gamed.generic import selftest
from gamed.kalaha.generic import KalahaHost
from tests.connect4.test_protocol import make_service as make_connect4
from tests.generic.harness import JsonClient, generic_service
from tests.kalaha.harness import make_service as make_kalaha
from tests.memclient import heard_until


@pytest.fixture
def generic():
    clock = Clock()
    kalaha = make_kalaha(clock)
    c4 = make_connect4()
    hosts = {"kalaha": KalahaHost(kalaha), "connect4": Connect4Host(c4)}
    service = generic_service(hosts, kalaha.players, clock)
    service.selftest = selftest.SelfTests(hosts, clock)
    service.factory.service = service
    return clock, service


def good(state, error=None):
    """A bot that follows the protocol: the first legal action, with the state's turn; after a
    refusal, the first action of the error's legal list."""
    if error is not None:
        return {"type": "act", "action": error["legal"][-1], "turn": state["turn"]}
    return {"type": "act", "action": 0, "turn": state["turn"]}


def run(generic, game, policy, after_end=None):
    """Play the self-test of ``game`` with ``policy(state, error) -> message | str | None``; the
    messages received, up to the verdict."""
    clock, service = generic
    client = JsonClient(service)
    client.messages()
    client.send({"type": "selftest", "game": game})
    seen = []
    state = None

    def heard(m):
        nonlocal state
        seen.append(m)
        if m.get("verdict"):
            return True
        answer = None
        if m["type"] == "state" and m.get("actions"):
            state = m
            answer = policy(m, None)
        elif m["type"] == "error" and state is not None:
            answer = policy(state, m)
        elif m["type"] == "ended" and after_end is not None:
            answer = after_end
        if answer is not None:
            client.send(answer if isinstance(answer, str) else json.dumps(answer))
        return False

    heard_until(clock, client.messages, heard, limit=500, missing=lambda: f"no verdict: {seen[-5:]}")
    return seen


def reports(seen):
    return [m for m in seen if m["type"] == "selftest" and "step" in m]


def failures(seen):
    return [m for m in reports(seen) if not m["ok"]]


@pytest.mark.parametrize("game", ["kalaha", "connect4"])
def test_a_bot_that_follows_the_protocol_passes(generic, game):
    seen = run(generic, game, good)
    assert seen[0]["type"] == "started" and seen[0]["seats"][1] == "selftest"
    assert failures(seen) == []
    steps = [r["step"] for r in reports(seen)]
    assert steps[0] == "the first move" and steps[-1] == "the end: no act after the game has ended"
    assert any("refused" in s for s in steps) and any("forced" in s for s in steps)
    assert seen[-1] == {"type": "selftest", "game": game, "verdict": "pass"}


def test_the_extra_turn_comes_as_a_second_state_to_the_same_seat(generic):
    seen = run(generic, "kalaha", good)
    scene = [m for m in seen if m["type"] == "state"]
    turns = [(s["turn"], s["to_act"]) for s in scene]
    assert len(turns) == len({t for t, _ in turns}), "every state has a turn of its own"
    extra = next(i for i, r in enumerate(reports(seen)) if "extra turn" in r["step"])
    assert extra == 1


def ignores_a_second_state_in_a_row(memory):
    def policy(state, error):
        if error is None and memory and memory[-1] == state["turn"] - 1:
            memory.append(state["turn"])
            return None  # it waits for the opponent, who does not move after an extra turn
        memory.append(state["turn"])
        if error is not None:
            return good(state, error)
        return {"type": "act", "action": len(state["actions"]) - 1}  # A6 at the start: no extra turn

    return policy


BROKEN = {
    "answers an index out of range": (lambda s, e: {"type": "act", "action": 99}, "kalaha", "the first move"),
    "never answers": (lambda s, e: None, "kalaha", "the first move"),
    "gives up after a refusal": (lambda s, e: None if e else good(s), "kalaha", "a refused answer"),
    "sends a stale turn": (lambda s, e: {"type": "act", "action": 0, "turn": s["turn"] - 1}, "kalaha", "the first move"),
    "writes broken JSON": (lambda s, e: '{"type":"act","action":0', "kalaha", "the first move"),
    "plays column 0 whatever the board": (lambda s, e: {"type": "act", "action": "0"}, "connect4", "full columns"),
    "is slow on a short clock": (None, "kalaha", "a short clock"),
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_each_broken_bot_is_caught_in_its_scene_with_the_lines_expected_and_received(generic, fault):
    policy, game, scene = BROKEN[fault]
    clock, service = generic
    if fault == "is slow on a short clock":
        def policy(s, e):  # noqa: F811: answers after 3 s (the clock gives 2)
            if s["clock"]["move"] < selftest.ANSWER_TIME:
                clock.advance(3)
            return good(s, e)
    seen = run(generic, game, policy)
    failed = failures(seen)
    assert failed, f"{fault}: not caught"
    first = failed[0]
    assert first["step"].startswith(scene), (fault, first)
    assert first["expected"].startswith('{"type":"act","action":<0..')
    if fault == "writes broken JSON":
        assert first["received"] == '{"type":"act","action":0'
    if fault in ("never answers", "gives up after a refusal", "is slow on a short clock"):
        assert first["received"].startswith("nothing within")
    assert seen[-1]["verdict"] == "fail"


def test_a_bot_that_ignores_extra_turns_is_caught(generic):
    seen = run(generic, "kalaha", ignores_a_second_state_in_a_row([]))
    failed = failures(seen)
    assert failed and failed[0]["step"].startswith("an extra turn") and failed[0]["received"].startswith("nothing")


def test_a_bot_that_acts_after_the_end_is_caught(generic):
    seen = run(generic, "kalaha", good, after_end={"type": "act", "action": 0})
    (failed,) = failures(seen)
    assert failed["step"] == "the end: no act after the game has ended"
    assert failed["received"] == '{"type": "act", "action": 0}'
    assert seen[-1]["verdict"] == "fail"


def test_the_self_test_costs_nothing_and_the_bot_can_play_afterwards(generic):
    clock, service = generic
    client = JsonClient(service)
    client.messages()
    client.send({"type": "selftest", "game": "chess"})
    assert client.messages()[0]["code"] == "no_such_game"
    client.send({"type": "selftest", "game": "kalaha"})
    client.messages()
    client.send({"type": "ping", "id": 1})
    assert {"type": "pong", "id": 1} in client.messages()
    for _ in range(40):
        clock.advance(1)
    msgs = client.messages()
    assert msgs[-1] == {"type": "selftest", "game": "kalaha", "verdict": "fail"}
    client.send({"type": "play", "game": "kalaha", "table": "after"})
    assert [m["type"] for m in client.messages()] == ["ok", "waiting"]


def test_the_document_shows_a_deviation_as_the_self_test_reports_it(generic):
    import pathlib
    import re

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocols" / "generic.md").read_text()
    shown = json.loads(re.search(r'^(\{"type":"selftest".*"ok":false.*\})$', doc, re.M)[1])
    seen = run(generic, "kalaha", lambda s, e: {"type": "act", "action": 99} if s["turn"] == 0 else good(s, e))
    assert failures(seen)[0] == {**shown, "received": failures(seen)[0]["received"]}
    assert json.loads(failures(seen)[0]["received"]) == json.loads(shown["received"])
