"""The daemon plays a Stratego tournament between registered AI programs at start-up and keeps
every game's log and result in its state directory; stopping it mid-tournament leaves no AI
process behind."""

from __future__ import annotations

import json
import os
import pathlib

import pytest
import pytest_twisted
from tests.procs import read_pid, wait_gone
from tests.stratego.puppet import write_script
from tests.stratego.programs import compile_fast_ai
from twisted.internet import reactor, task

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


def write_config(tmp_path, fast_ai, rounds=1, games=2, extra=""):
    path = tmp_path / "gamed.conf"
    path.write_text(
        f"""
[stratego]
rounds = {rounds}
games = {games}
state_dir = "{tmp_path / 'state'}"
{extra}
[stratego.ai.alpha]
command = "{fast_ai} 1"
[stratego.ai.beta]
command = "{fast_ai} 2"
"""
    )
    return str(path)


def sleeping_ais(tmp_path) -> str:
    """A config with a Stratego tournament between two programs that never answer."""
    sleeper = tmp_path / "slow.sh"
    sleeper.write_text("#!/bin/sh\nsleep 60\n")  # no exec: the script stays visible by its name
    sleeper.chmod(0o755)
    config = tmp_path / "gamed.conf"
    config.write_text(
        f"""
[stratego]
rounds = 1
games = 2
concurrency = 1
timeout = 0
state_dir = "{tmp_path / 'state'}"
[stratego.ai.slow1]
command = "{sleeper}"
[stratego.ai.slow2]
command = "{sleeper}"
"""
    )
    return str(config)


async def wait_for(condition, seconds, what):
    for _ in range(int(seconds * 10)):
        if condition():
            return
        await task.deferLater(reactor, 0.1, lambda: None)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def results(tmp_path):
    found = list((tmp_path / "state").glob("tournament-*/results.jsonl"))
    if not found:
        return []
    return [json.loads(line) for line in found[0].read_text().splitlines()]


@pytest_twisted.ensureDeferred
async def test_the_daemon_plays_and_records_a_tournament(start_daemon, tmp_path, fast_ai):
    daemon = await start_daemon("--config", write_config(tmp_path, fast_ai))
    await wait_for(lambda: "stratego tournament" in daemon.text and "finished" in daemon.text, 30, "the tournament")
    games = results(tmp_path)
    assert sorted((g["red"], g["blue"]) for g in games) == [("alpha", "beta"), ("beta", "alpha")]  # concurrent: any order
    for g in games:
        log = (tmp_path / "state").glob(f"tournament-*/{g['log']}")
        assert next(log).read_text().splitlines()[-1] == g["result"]
    assert "program" in daemon.text and "points" in daemon.text, "the standings are logged"
    assert await daemon.stop()


@pytest_twisted.ensureDeferred
async def test_stopping_the_daemon_mid_game_kills_the_ais_and_records_the_abort(start_daemon, tmp_path):
    daemon = await start_daemon("--config", sleeping_ais(tmp_path))
    await wait_for(lambda: list((tmp_path / "state").glob("tournament-*")), 10, "the tournament to start")
    await wait_for(lambda: _sleepers(tmp_path), 10, "both programs of the first game to run")
    assert await daemon.stop()
    games = results(tmp_path)
    assert games and all(g["aborted"] for g in games)
    assert not [line for line in daemon.text.splitlines() if "Traceback" in line]
    assert _sleepers(tmp_path) == []


@pytest_twisted.ensureDeferred
async def test_a_sigkilled_daemon_leaves_no_ai_running(start_daemon, tmp_path):
    # No stopService runs: the programs die of their parent death signal.
    config = pathlib.Path(sleeping_ais(tmp_path))
    write_script(tmp_path / "slow.sh", "import time\ntime.sleep(60)\n")  # one process, no fork
    daemon = await start_daemon("--config", str(config))
    await wait_for(lambda: len(_sleepers(tmp_path)) == 2, 20, "both programs of the first game to run")
    programs = _sleepers(tmp_path)
    daemon.signal("KILL")
    await daemon.ended
    assert wait_gone(programs, 10) == [], "a Stratego program outlived the SIGKILLed daemon"


@pytest_twisted.ensureDeferred
async def test_a_sigkilled_daemon_leaves_nothing_an_ai_forked_running(start_daemon, tmp_path):
    # Each program forks a child that leaves its group and session with setsid() (so neither a
    # group kill nor a death signal reaches it: that is not inherited), then both sleep. The
    # daemon is SIGKILLed: no stopService runs, and what each program forked ends all the same.
    config = pathlib.Path(sleeping_ais(tmp_path))
    escaped = tmp_path / "escaped"
    escaped.mkdir()
    write_script(tmp_path / "slow.sh", ESCAPING.format(directory=str(escaped)))
    daemon = await start_daemon("--config", str(config))
    await wait_for(lambda: len(list(escaped.glob("*.pid"))) == 2, 20, "both programs of the first game to fork")
    forked = [read_pid(path) for path in escaped.glob("*.pid")]
    try:
        assert all(os.getsid(pid) == pid for pid in forked), "each left its program's session"
        daemon.signal("KILL")
        await daemon.ended
        assert wait_gone(forked, 10) == [], "what a Stratego program forked outlived the SIGKILLed daemon"
    finally:
        for pid in wait_gone(forked, 0):
            os.kill(pid, 9)


# A program that forks a child in a session of its own (its pid in DIRECTORY/<pid>.pid), then sleeps.
ESCAPING = """import os, time
if os.fork() == 0:
    os.setsid()
    with open("{directory}/%d.tmp" % os.getpid(), "w") as f:
        f.write("%d\\n" % os.getpid())
    os.rename("{directory}/%d.tmp" % os.getpid(), "{directory}/%d.pid" % os.getpid())
time.sleep(60)
"""


def _sleepers(tmp_path) -> list[int]:
    """The live processes of ``tmp_path``'s sleeping program (its script, or the sleep it runs),
    not the reapers the daemon runs them under."""
    script = str(tmp_path / "slow.sh")
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and script in _cmdline(p) and "gamed.reaper" not in _cmdline(p)]


def _cmdline(pid: str) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest_twisted.ensureDeferred
async def test_a_restarted_daemon_continues_its_tournament_and_does_not_replay_a_complete_one(start_daemon, tmp_path, fast_ai):
    hang = tmp_path / "hang"
    hang.write_text("")
    wrapper = tmp_path / "ai.sh"  # the same program every time; it hangs while the file "hang" exists
    wrapper.write_text(f'#!/bin/sh\nif [ -e "{hang}" ]; then exec sleep 60; fi\nexec "{fast_ai}" "$@"\n')
    wrapper.chmod(0o755)
    config = write_config(tmp_path, wrapper)
    daemon = await start_daemon("--config", config)
    await wait_for(lambda: len(list((tmp_path / "state").glob("tournament-*/*.blue.*"))) == 2, 20, "both games to start")
    assert await daemon.stop()
    (directory,) = (tmp_path / "state").glob("tournament-*")
    assert sorted((g["game"], g["aborted"]) for g in results(tmp_path)) == [(1, True), (2, True)]
    assert "the next start continues it" in daemon.text

    hang.unlink()
    daemon = await start_daemon("--config", config)
    await wait_for(lambda: "finished: 2 games" in daemon.text, 30, "the tournament to be played to its end")
    assert await daemon.stop()
    assert list((tmp_path / "state").glob("tournament-*")) == [directory]
    games = results(tmp_path)
    assert sorted((g["game"], g["aborted"]) for g in games) == [(1, False), (1, True), (2, False), (2, True)]
    assert all(g["result"] for g in games if not g["aborted"])

    daemon = await start_daemon("--config", config)
    await wait_for(lambda: "is complete (2 games)" in daemon.text, 20, "the daemon to find the tournament complete")
    assert await daemon.stop()
    assert results(tmp_path) == games and list((tmp_path / "state").glob("tournament-*")) == [directory]
