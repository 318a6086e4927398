"""Hosted Stratego bots keep the UCC protocol: two registered UCC programs play a match of the
daemon's own referee, each started in the hosting sandbox (limits, watchdog, bubblewrap where it
works) and bridged to a seat of the referee (gamed.stratego.hosted). The result has the hosted
fault taxonomy: an illegal move is ILLEGAL, a crash CRASH, nonsense PROTOCOL, a memory hog
MEMORY; no process of a bot outlives its match."""

from __future__ import annotations

import os
import sys

import pytest
import pytest_twisted
from twisted.internet import reactor

from gamed.config import Limits, StrategoConfig
from gamed.hosting.faults import Fault
from gamed.hosting.runner import HostedGames
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import parse_bot
from gamed.observers import LiveHub
from gamed.stratego.service import StrategoService
from tests.hosting.test_hosted_games import ISOLATIONS, programs_with
from tests.procs import wait_gone
from tests.stratego.programs import compile_fast_ai

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANDOM_AI = os.path.join(ROOT, "examples", "stratego", "random_ai.py")
MISBEHAVE = os.path.join(ROOT, "tests", "hosting", "ucc_misbehave.py")
PY = sys.executable


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory) -> str:
    return compile_fast_ai(tmp_path_factory.mktemp("ucc-c"))


def bot(name: str, command: str, **limits):
    return parse_bot(name, {"game": "stratego", "command": command, "limits": limits}, ("stratego",))


def runner(tmp_path, isolation="none", timeout=30.0):
    # A generous reply timeout: a loaded machine must not turn a slow reply into a loss.
    hub = LiveHub(reactor)
    config = StrategoConfig(timeout=timeout, max_turns=300, quit_grace=1.0, state_dir=str(tmp_path / "stratego"))
    stratego = StrategoService(config, Limits(), reactor, hub=hub)
    return HostedGames({"stratego": stratego}, hub, reactor, Isolation.detect(isolation), str(tmp_path)), stratego


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_the_c_example_ai_and_a_python_one_play_a_match_to_its_result(tmp_path, isolation, fast_ai):
    games, stratego = runner(tmp_path, isolation)
    result = await games.play("stratego", [bot("fast", f"{fast_ai} {tmp_path}"),
                                           bot("randy", f"{PY} {RANDOM_AI} 7 {tmp_path}")])
    assert result.played and result.bots == ("fast", "randy"), result
    assert result.faults == (None, None), result
    assert result.table.startswith("stratego-")
    assert result.reason in ("Captured the flag", "Destroyed all mobile enemy pieces", "This player has surrendered!",
                             "Game declared a draw after 300 turns",
                             "Game declared a draw because neither player has mobile pieces"), result
    assert sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5]), result
    assert not stratego._reserved and not stratego._running
    assert not os.listdir(tmp_path / "bots" / "games")
    assert wait_gone(programs_with(str(tmp_path))) == []


FAILURES = [
    # (mode, limits, fault, words in the detail)
    ("illegal", {}, Fault.ILLEGAL, "illegal move: Selected piece is not mobile"),
    ("crash", {}, Fault.CRASH, "SIGSEGV"),
    ("garbage", {}, Fault.PROTOCOL, "Unintelligable response"),
    ("memory", {"memory": "64M"}, Fault.MEMORY, ""),
]


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("mode,limits,fault,words", FAILURES, ids=[f[0] for f in FAILURES])
@pytest_twisted.ensureDeferred
async def test_each_failure_ends_with_its_fault_and_leaves_no_process(tmp_path, isolation, mode, limits, fault, words, fast_ai):
    games, _ = runner(tmp_path, isolation)
    bad = bot("wild", f"{PY} {MISBEHAVE} {mode} {tmp_path}", **limits)
    good = bot("fast", f"{fast_ai} {tmp_path}")
    result = await games.play("stratego", [bad, good])  # RED moves first
    assert result.played and result.scores == (0.0, 1.0), result
    assert result.outcome, result
    trouble = result.faults[0]
    assert trouble is not None and trouble.fault is fault, result
    assert words in trouble.text(), trouble
    assert result.faults[1] is None, result
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest.mark.parametrize("mode", ["sleep", "mute"])  # no move; no setup (BAD_SETUP in the result line)
@pytest_twisted.ensureDeferred
async def test_a_reply_that_never_comes_is_a_time_fault(tmp_path, fast_ai, mode):
    games, _ = runner(tmp_path, timeout=5.0)
    sleeper = bot("sleepy", f"{PY} {MISBEHAVE} {mode} {tmp_path}")
    result = await games.play("stratego", [bot("fast", f"{fast_ai} {tmp_path}"), sleeper])
    assert result.played and result.scores == (1.0, 0.0), result
    assert result.faults[1].fault is Fault.TIME and "Response timeout" in result.faults[1].text()
    assert result.faults[0] is None
    assert wait_gone(programs_with(str(tmp_path))) == []


def test_the_services_provide_what_the_runner_needs():
    from zope.interface.verify import verifyObject

    from gamed.combat.service import CombatService
    from gamed.seats import IHostTables

    stratego = StrategoService(StrategoConfig(), Limits(), reactor)
    for service in (stratego, CombatService(Limits(), reactor)):
        assert verifyObject(IHostTables, service) and service.hosts_bots
    stratego.reserve_table("m", ["a", "b"])
    assert stratego.table_waiting("m")
    stratego.release_table("m")
    assert not stratego.table_waiting("m")


def test_the_daemon_hosts_combat_and_stratego_bots_stratego_without_ai_programs(tmp_path, monkeypatch):
    from twisted.internet.testing import MemoryReactorClock

    from gamed import tap

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "gamed.conf"
    path.write_text(
        f'[bots]\nisolation = "none"\n[bots.ucc]\ngame = "stratego"\ncommand = "{PY} {RANDOM_AI}"\n'
        f'[bots.cbt]\ngame = "combat"\ncommand = "{PY} {ROOT}/examples/bots/combat_bot.py"\n'
    )
    opts = tap.Options()
    opts.parseOptions(["--config", str(path), "--combat", "tcp:0", "--combat-text", "tcp:0"])
    root = tap.makeService(opts, reactor=MemoryReactorClock())
    assert {"combat", "stratego", "kalaha", "connect4"} <= set(root.hosted.services)
    assert root.hosted.services["stratego"] is root.getServiceNamed("stratego")


@pytest_twisted.ensureDeferred
async def test_a_pair_swaps_the_colours_and_gives_both_programs_the_pair_number_as_seed(tmp_path):
    """A Stratego opening is the colour swap plus GAMED_SEED: the setups are the programs' own
    (the UCC protocol is unchanged), so each program of both games gets the pair's number."""
    games, _ = runner(tmp_path)
    record = os.path.join(ROOT, "tests", "hosting", "record_env.py")
    seen = tmp_path / "env.txt"
    red = bot("red", f"{PY} {record} {seen} {RANDOM_AI} 1 {tmp_path}")
    blue = bot("blue", f"{PY} {record} {seen} {RANDOM_AI} 2 {tmp_path}")
    first = await games.play("stratego", [red, blue], opening=6)
    second = await games.play("stratego", [blue, red], opening=6)
    for result, names in ((first, ("red", "blue")), (second, ("blue", "red"))):
        assert result.played and result.bots == names and result.faults == (None, None), result
    lines = seen.read_text().splitlines()
    assert sorted(lines[:2]) == ["blue 1 6 6", "red 0 6 6"] and sorted(lines[2:]) == ["blue 0 6 6", "red 1 6 6"]
    assert wait_gone(programs_with(str(tmp_path))) == []
