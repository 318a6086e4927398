"""Sandboxes started ahead (gamed.hosting.warm) on the real reactor, with real processes: they end
when unused or when the daemon stops, leaving neither a process nor a directory; one that ends on
its own while it waits is logged, and three in a row switch the pool off; a program that cannot
be run in one is a start fault, as when it is started for its game."""

from __future__ import annotations

import os
import time

import attrs
import pytest
import pytest_twisted
from twisted.internet import reactor, task
from twisted.logger import globalLogPublisher

from gamed.hosting import sandbox
from gamed.hosting.faults import Fault
from gamed.hosting.warm import WarmSandboxes
from tests.hosting.test_hosted_games import BOTS, ISOLATIONS, PY, bot, play_started_ahead, programs_with, runner
from tests.procs import wait_gone

pytestmark = pytest.mark.skipif(not sandbox.warm_possible(), reason="the native reaper is not built (make)")


async def until(check, seconds: float = 10.0) -> None:
    """Wait on the reactor until ``check()`` is true (at most ``seconds``)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await task.deferLater(reactor, 0.02, lambda: None)


def pids(pool: WarmSandboxes) -> list[int]:
    return [w.process.pid for waiting in pool.waiting.values() for w in waiting if w.process.pid]


ARGV = (PY, f"{BOTS}/kalaha_bot.py")


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_unused_sandboxes_end_after_their_idle_time_leaving_nothing(tmp_path, isolation):
    root = tmp_path / "games"
    pool = WarmSandboxes(reactor, sandbox.Isolation.detect(isolation), str(root), size=2, idle=0.3)
    pool.fill(ARGV)
    started = pids(pool)
    assert pool.count() == 2 and len(started) == 2
    await until(lambda: pool.count() == 0)
    assert wait_gone(started) == []
    await until(lambda: not root.exists() or os.listdir(root) == [])
    assert pool.on  # ended by the pool, not failures


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_stop_ends_every_waiting_sandbox_and_starts_no_more(tmp_path, isolation):
    pool = WarmSandboxes(reactor, sandbox.Isolation.detect(isolation), str(tmp_path / "games"), size=3)
    pool.fill(ARGV)
    started = pids(pool)
    assert len(started) == 3
    pool.stop()
    assert wait_gone(started) == []
    assert pool.take(ARGV) is None
    await task.deferLater(reactor, 0.05, lambda: None)
    assert pool.count() == 0 and programs_with(str(tmp_path)) == []


@pytest_twisted.ensureDeferred
async def test_sandboxes_that_end_while_they_wait_are_logged_and_three_switch_the_pool_off(tmp_path):
    said = []

    def observer(event):
        if "sandbox" in event.get("log_format", ""):
            said.append(event)

    globalLogPublisher.addObserver(observer)
    pool = WarmSandboxes(reactor, sandbox.Isolation.detect("none"), str(tmp_path / "games"), size=1)
    try:
        for _ in range(3):
            pool.fill(ARGV)
            (pid,) = pids(pool)
            os.kill(pid, 9)
            await until(lambda: pool.count() == 0)
        assert not pool.on
        assert pool.take(ARGV) is None
        texts = [e["log_format"] for e in said]
        assert sum("ended while it waited" in t for t in texts) == 3
        assert any("start with their games" in t for t in texts)
    finally:
        globalLogPublisher.removeObserver(observer)
        pool.stop()


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_a_program_that_cannot_run_in_its_sandbox_is_a_start_fault(tmp_path, isolation):
    games = runner(tmp_path, f"{isolation}/warm")
    script = tmp_path / "gone.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    gone = bot("gone", "kalaha", str(script))
    script.unlink()  # (registered, then removed)
    steady = bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}")
    result = await play_started_ahead(games, "kalaha", [gone, steady])  # (both in sandboxes started ahead)
    assert not result.played
    assert result.faults[0].fault is Fault.START and "cannot execute" in result.faults[0].text(), result
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_with_a_persistent_directory_is_started_for_its_game(tmp_path):
    games = runner(tmp_path, "none/warm")
    keeper = bot("keeper", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}")
    keeper = attrs.evolve(keeper, workdir="persistent", directory=str(tmp_path / "keeper"))
    steady = bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}")
    games.warm_up([keeper, steady])
    try:
        result = await games.play("kalaha", [keeper, steady])
    finally:
        games.stop()
    assert result.played and result.faults == (None, None), result
    assert games.warm.used == 1  # steady's only
