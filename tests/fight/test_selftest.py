"""``SELFTEST`` on the Virtual Fight AI port: a scripted solo match in the fight's own lines; a good
AI (examples/fight/simple_ai.py's, or one that passes every living warrior) passes, broken ones are
caught with the line expected and the line received."""

from __future__ import annotations

import collections
import importlib.util
import pathlib
import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.task import Clock

from gamed.fight.rules import QUERIES, MapError, parse_map
from gamed.fight.selftest import COMMANDS, MAP_TEXT, selftest_map
from gamed.fight.wire import AI_HELP, is_help, parse_command
from tests.fight.harness import ai, gui, make_service
from tests.memclient import heard_until

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fight" / "simple_ai.py"
FIRST = "the first turn: every warrior acts or passes"
KILLED = "a killed warrior: no command for it"
SHORT = "a short turn time: 2 s"
END = "the end: nothing after GAMEOVER"
PASSING = [f"{n}&NONE" for n in range(1, 5)]  # warrior 0 is killed at the end of turn 1


def connected(**settings):
    clock = Clock()
    service = make_service(clock, pair_delay=0.5, **settings)
    client = ai(service)
    assert client.read() == ["OK"]
    return clock, service, client


def run(answer, first=("SELFTEST",), after_end=None, limit=50):
    """Every line of a self-test, played with ``answer(turn, lines_so_far) -> lines to send`` at each
    READY; ``after_end`` is sent after the game-over line. Time passes only while nothing comes."""
    clock, service, client = connected()
    client.send(*first)
    lines, turn = [], 0

    def heard(line):
        nonlocal turn
        lines.append(line)
        if line.startswith("SELFTEST&VERDICT&"):
            return True
        if line == "READY":
            turn += 1
            client.send(*answer(turn, lines))
        if line.startswith("GAMEOVER&") and after_end:
            client.send(after_end)
        return False

    heard_until(clock, client.read, heard, limit=limit, missing=lambda: f"no verdict: {lines[-8:]}")
    return lines


def reports(lines):
    """The report of each step: ("OK", step) or ("FAIL", step, expected, received)."""
    out = []
    for i, line in enumerate(lines):
        if line.startswith("SELFTEST&OK&"):
            out.append(("OK", line.removeprefix("SELFTEST&OK&")))
        elif line.startswith("SELFTEST&FAIL&"):
            expected, received = lines[i + 1], lines[i + 2]
            assert expected.startswith("SELFTEST&EXPECTED&") and received.startswith("SELFTEST&RECEIVED&")
            out.append(("FAIL", line.removeprefix("SELFTEST&FAIL&"), expected.removeprefix("SELFTEST&EXPECTED&"),
                        received.removeprefix("SELFTEST&RECEIVED&")))
    return out


def good(turn, lines):
    return (["0&SHOOT"] if turn == 1 else []) + PASSING


def test_an_ai_that_passes_its_living_warriors_passes_in_the_ports_own_lines():
    lines = run(good)
    assert lines == [
        "READY", "255", "255", "255", "255", "255",
        f"SELFTEST&OK&{FIRST}", "200", "0&HIT&ENEMY", "0&KILLED", "READY",
        "255", "255", "255", "255",
        f"SELFTEST&OK&{KILLED}", "200", "READY",
        "255", "255", "255", "255",
        f"SELFTEST&OK&{SHORT}", "200", "GAMEOVER&DRAW",
        f"SELFTEST&OK&{END}", "SELFTEST&VERDICT&PASS",
    ]


def test_the_enemy_shoots_warrior_0_whatever_it_does_and_stays_where_it_is():
    lines = run(lambda turn, seen: ["0&SAW", "0&MOVE&RIGHT", "0&MOVE&DOWN", "0&NONE"] + PASSING if turn == 1
                else ["1&NONE&UP", "2&NONE", "3&NONE", "4&NONE"])
    assert lines[1:5] == ["0,2,E&1,2,#&0,3,#", "111", "111", "255"]
    assert lines[lines.index("200"):][:3] == ["200", "0&KILLED", "READY"]
    assert "GAMEOVER&LOSE" in lines  # four warriors against the enemy's five after the last turn
    assert lines[-1] == "SELFTEST&VERDICT&PASS"


def example_ai():
    """examples/fight/simple_ai.py as a module, and its Connection over an in-memory client (a line
    that has not come yet is waited for on the clock)."""
    spec = importlib.util.spec_from_file_location("simple_ai", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    class MemoryConnection(example.Connection):
        def __init__(self, clock, client):
            self.clock, self.client, self.verbose = clock, client, False
            self.events = collections.deque()
            self.pending = collections.deque()

        def send(self, line):
            self.client.send(line)

        def receive(self):
            for _ in range(20):
                self.pending.extend(self.client.read())
                if self.pending:
                    return self.pending.popleft()
                self.clock.advance(0.5)
            raise ConnectionError("nothing from the server")

    return example, MemoryConnection


def test_the_example_ai_passes():
    example, memory = example_ai()
    for seed in range(5):
        clock, service, client = connected()
        report = example.selftest(memory(clock, client), random.Random(seed))
        assert report == [f"SELFTEST&OK&{step}" for step in (FIRST, KILLED, SHORT, END)] + ["SELFTEST&VERDICT&PASS"]
        assert service.finished == 0 and service.listing() == []  # no game, no record


def test_a_command_for_the_killed_warrior_is_caught():
    lines = run(lambda turn, seen: ["0&SHOOT", *PASSING] if turn < 3 else ["0&POS", *PASSING])
    assert reports(lines) == [
        ("OK", FIRST),
        ("FAIL", f"{KILLED} (warrior 0 was KILLED)", "no command for warrior 0", "0&SHOOT"),
        ("FAIL", f"{SHORT} (warrior 0 was KILLED)", "no command for warrior 0", "0&POS"),
        ("OK", END),
    ]
    assert lines[lines.index("0&KILLED") + 1:][:2] == ["READY", "100"]  # answered as in a game
    assert lines[-1] == "SELFTEST&VERDICT&FAIL"


def test_an_ai_that_never_finishes_its_turn_is_caught_at_the_turn_time():
    lines = run(lambda turn, seen: ["1&NONE", "2&NONE"])
    assert reports(lines) == [
        ("FAIL", f"{FIRST} (not finished within 5 s)", "an action or a pass for warrior 0", "nothing within 5 s"),
        ("FAIL", f"{KILLED} (not finished within 5 s)", "an action or a pass for warrior 3", "nothing within 5 s"),
        ("FAIL", f"{SHORT} (not finished within 2 s)", "an action or a pass for warrior 3", "nothing within 2 s"),
        ("OK", END),
    ]
    assert lines[-1] == "SELFTEST&VERDICT&FAIL"


def test_a_turn_finished_too_late_for_the_short_turn_time():
    clock, service, client = connected()
    client.send("SELFTEST", "0&NONE", *PASSING)
    client.send(*PASSING)
    assert client.read()[-1] == "READY"
    clock.advance(1.9)
    client.send(*PASSING[:3])
    clock.advance(0.1)
    client.send(PASSING[3])  # after the 2 s: it belongs to the next turn, which is none
    lines = client.read()
    assert lines[3:8] == [
        f"SELFTEST&FAIL&{SHORT} (not finished within 2 s)", "SELFTEST&EXPECTED&an action or a pass for warrior 4",
        "SELFTEST&RECEIVED&nothing within 2 s", "200", "GAMEOVER&LOSE",
    ]
    assert lines[8:] == [f"SELFTEST&FAIL&{END}", "SELFTEST&EXPECTED&nothing (the game is over)",
                         "SELFTEST&RECEIVED&4&NONE"]


def test_a_line_after_gameover_is_caught():
    lines = run(good, after_end="1&POS")
    assert reports(lines)[-1] == ("FAIL", END, "nothing (the game is over)", "1&POS")
    assert lines[-5:] == ["GAMEOVER&DRAW", f"SELFTEST&FAIL&{END}", "SELFTEST&EXPECTED&nothing (the game is over)",
                          "SELFTEST&RECEIVED&1&POS", "SELFTEST&VERDICT&FAIL"]


def test_a_malformed_line_is_caught_with_the_commands_expected():
    lines = run(lambda turn, seen: (["0&JUMP", "0&SHOOT"] if turn == 1 else []) + PASSING)
    assert lines[1] == "100"
    assert reports(lines)[0] == ("FAIL", f"{FIRST} (answered 100)", COMMANDS, "0&JUMP")
    assert [r[0] for r in reports(lines)] == ["FAIL", "OK", "OK", "OK"]


def test_a_line_too_long_or_not_text_is_shown_as_what_came():
    clock, service, client = connected()
    client.send("SELFTEST")
    client.raw(b"0&" + b"x" * 300 + b"\r\n")
    client.raw(b"0&\xff\r\n")
    client.send("0&NONE", *PASSING)
    lines = client.read()
    assert lines[1:3] == ["100", "100"]
    assert lines[8:11] == [f"SELFTEST&FAIL&{FIRST} (answered 100)", f"SELFTEST&EXPECTED&{COMMANDS}",
                           "SELFTEST&RECEIVED&(a line over 256 bytes)"]


def test_help_clocks_and_token_keep_working_during_it():
    clock, service, client = connected()
    client.send("CLOCKS&ON", "SELFTEST", "help", "TOKEN", "LOGIN&ann&ann-token-0123456789")
    lines = client.read()
    assert lines[:3] == ["255", "TIMECONTROL&5s&0", "CLOCK&5.000&-&-"]
    assert lines[3] == "READY" and lines[4].startswith("HELP&") and "HELP&END" in lines
    assert lines[-2:] == ["430&you have no seat in a game",
                          "425&log in or resume before you are seated, not during a game"]
    client.send("0&NONE", *PASSING)
    client.send(*PASSING)
    assert client.read()[-2:] == ["CLOCK&2.000&-&-", "READY"]  # the short turn's clock
    client.send(*PASSING)
    clock.advance(1)
    assert client.read()[-2:] == [f"SELFTEST&OK&{END}", "SELFTEST&VERDICT&PASS"]


def test_selftest_in_a_game_is_refused_as_any_line_that_is_not_a_command():
    clock = Clock()
    service = make_service(clock)
    a, b = ai(service), ai(service)
    assert a.read()[-1] == "READY"
    a.send("SELFTEST")
    assert a.read() == ["100"]


def test_it_takes_the_ai_out_of_the_queue_until_it_asks_for_a_table():
    clock, service, client = connected()
    client.send("CLOCKS&ON", "SELFTEST")
    other = ai(service)
    clock.advance(1)
    assert other.read() == ["OK"]  # nobody to play with: the AI is in its self-test
    client.send("0&NONE", *PASSING)
    client.send(*PASSING)
    client.send(*PASSING)
    clock.advance(1)
    assert client.read()[-1] == "SELFTEST&VERDICT&PASS"
    clock.advance(10)
    assert other.read() == [] and client.read() == []  # still out of the queue after the verdict
    client.send("TABLE&duel")
    other.send("TABLE&duel")
    assert client.read() == ["255", "TIMECONTROL&5s&0", "CLOCK&5.000&-&-", "READY"]  # a real game tells its own
    assert other.read() == ["255", "READY"]


def test_no_observer_sees_it_and_leaving_in_the_middle_stops_it():
    clock, service, client = connected()
    watcher = gui(service)
    client.send("SELFTEST", "0&NONE")
    watcher.send("LIST")
    assert watcher.read() == ["HELLO&VF-OBSERVER&1", "END"]
    assert client.read() == ["READY", "255"]
    player = client.player
    probe = player.probe
    client.drop()
    assert player.probe is None and probe.timer is None
    clock.advance(10)
    assert client.transport.value() == b""


def test_an_ai_waiting_in_the_queue_leaves_it_for_the_self_test():
    clock, service, client = connected()
    clock.advance(1)  # the pair delay is over: it waits in the general queue
    client.send("SELFTEST")
    assert client.read() == ["READY"]
    other = ai(service)
    clock.advance(1)
    assert other.read() == ["OK"]


def test_the_self_tests_map_is_not_one_a_game_could_be_played_on():
    with pytest.raises(MapError):
        parse_map(MAP_TEXT)
    fmap = selftest_map()
    assert fmap.starts[0][0] == (0, 1) and fmap.starts[1][0] == (0, 2)


_PRINTABLE = string.ascii_letters + string.digits + "&,#. "


@given(st.lists(st.text(alphabet=_PRINTABLE, max_size=20), max_size=15))
def test_every_line_gets_its_reply_and_the_test_ends_with_a_verdict(lines):
    # lines that could finish the turn are left out, so only replies come back
    lines = [line for line in lines if not ((cmd := parse_command(line.strip())) and cmd.verb not in QUERIES)]
    clock, service, client = connected()
    client.send("SELFTEST")
    assert client.read() == ["READY"]
    client.send(*lines)
    replies = client.read()
    assert len(replies) == sum(len(AI_HELP) if is_help(line) else 1 for line in lines if line.strip())
    clock.advance(5)
    clock.advance(5)
    clock.advance(2)
    clock.advance(1)
    assert client.read()[-1] in ("SELFTEST&VERDICT&PASS", "SELFTEST&VERDICT&FAIL")
