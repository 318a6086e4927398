"""Native engines in a host process (connect-four §2): real C libraries, real subprocesses.

Every engine is compiled into tmp_path from C source written here; every wait is bounded."""

from __future__ import annotations

import os

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from gamed.connect4.native_engine import EngineFailed, NativeEngine
from tests.connect4.native_libs import VARIANTS, compile_engines, escaping_engine
from tests.procs import read_pid, wait_gone

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return compile_engines(tmp_path_factory.mktemp("engines"), VARIANTS)


def bounded(d, seconds=8.0):
    return d.addTimeout(seconds, reactor)


def gone(pid: int) -> bool:
    """No such process (not even a zombie) in /proc."""
    return not os.path.exists(f"/proc/{pid}")


async def expect_failure(d, seconds=8.0) -> EngineFailed:
    try:
        await bounded(d, seconds)
    except EngineFailed as e:
        return e
    raise AssertionError("the call did not fail")


async def finish(engine: NativeEngine) -> None:
    await bounded(engine.close(), 5)
    assert gone(engine.pid), f"host process {engine.pid} still exists"


def make(lib, **kw) -> NativeEngine:
    kw.setdefault("auto_timeout", 1.0)
    return NativeEngine(reactor, lib, **kw)


@pytest_twisted.ensureDeferred
async def test_normal_calls(libs):
    e = make(libs["good"])
    try:
        assert await bounded(e.desc()) == "lowest column first"
        assert await bounded(e.enum_levels(0)) == "Easy"
        assert await bounded(e.enum_levels(1)) == "Hard"
        assert await bounded(e.enum_levels(2)) is None
        assert await bounded(e.new_game(3, 6)) is False  # refused size
        assert await bounded(e.new_game(7, 6)) is True
        assert await bounded(e.play_move(0, 3)) is True
        assert await bounded(e.play_move(1, 7)) is False
        assert await bounded(e.get_state(3, 0)) == 0
        assert await bounded(e.get_state(3, 1)) == -1
        assert await bounded(e.auto_move(1, 0)) == 0  # lowest column
        assert await bounded(e.get_state(0, 0)) == 1
        # Player 0 builds column 3 while the engine fills column 0: 0 wins vertically.
        for _ in range(2):
            assert await bounded(e.play_move(0, 3)) is True
            assert await bounded(e.auto_move(1, 1)) == 0
        assert await bounded(e.is_winner(0)) is False
        assert await bounded(e.win_coords(0)) is None  # no line yet
        assert await bounded(e.play_move(0, 3)) is True
        assert await bounded(e.is_winner(0)) is True
        assert await bounded(e.is_winner(1)) is False
        assert await bounded(e.is_tie()) is False
        assert await bounded(e.win_coords(0)) == (3, 0, 3, 3)
        assert await bounded(e.end_game()) is None
        # pipelined calls are answered in order
        results = await bounded(
            defer.gatherResults([e.new_game(4, 4), e.play_move(0, 1), e.auto_move(1, 0), e.get_state(0, 0)])
        )
        assert results == [True, True, 0, 1]
        # fill a 4x4 board: engine vs engine, lowest column first gives a tie or a win; it must end
        moves = 2
        while moves < 16:
            col = await bounded(e.auto_move(moves % 2, 0))
            assert 0 <= col < 4
            moves += 1
        assert await bounded(e.auto_move(0, 0)) == -1  # full
        assert isinstance(await bounded(e.is_tie()), bool)
    finally:
        await finish(e)
    assert e.failure is not None and e.failure.reason == "engine closed"
    err = await expect_failure(e.desc())
    assert "closed" in err.reason


@pytest_twisted.ensureDeferred
async def test_crash_in_automove(libs):
    e = make(libs["crash"])
    assert await bounded(e.new_game(7, 6)) is True
    thinking = e.auto_move(0, 0)
    later = e.get_state(0, 0)  # queued behind the crashing call
    err = await expect_failure(thinking)
    assert "signal" in err.reason and ("SIGSEGV" in err.reason or "SIGABRT" in err.reason), err.reason
    assert (await expect_failure(later)).reason == err.reason
    assert (await expect_failure(e.desc())).reason == err.reason
    await bounded(e.ended, 5)
    assert gone(e.pid)
    await finish(e)


@pytest_twisted.ensureDeferred
async def test_hang_in_automove(libs):
    e = make(libs["hang"], auto_timeout=0.5)
    assert await bounded(e.new_game(7, 6)) is True
    start = reactor.seconds()
    err = await expect_failure(e.auto_move(0, 0))
    assert reactor.seconds() - start < 2.0
    assert err.reason == "C4_AutoMove did not answer within 0.5 s"
    await bounded(e.ended, 5)
    assert gone(e.pid)
    assert (await expect_failure(e.is_tie())).reason == err.reason


@pytest_twisted.ensureDeferred
async def test_garbage_column(libs):
    e = make(libs["garbage"])
    assert await bounded(e.new_game(7, 6)) is True
    err = await expect_failure(e.auto_move(0, 0))
    assert "C4_AutoMove" in err.reason and "malformed" in err.reason and "99" in err.reason, err.reason
    await bounded(e.ended, 5)
    assert gone(e.pid)


@pytest_twisted.ensureDeferred
async def test_missing_symbol(libs):
    e = make(libs["missing"])
    err = await expect_failure(e.desc())
    assert "failed to load" in err.reason and "missing symbol C4_IsTie" in err.reason, err.reason
    await bounded(e.ended, 5)
    assert gone(e.pid)


@pytest_twisted.ensureDeferred
async def test_unloadable_library(tmp_path):
    bad = tmp_path / "engine.so"
    bad.write_text("not a library")
    e = make(str(bad))
    err = await expect_failure(e.new_game(7, 6))
    assert "failed to load" in err.reason and "cannot load" in err.reason, err.reason
    await bounded(e.ended, 5)
    assert gone(e.pid)


@pytest_twisted.ensureDeferred
async def test_two_engines_are_independent(libs):
    good, bad = make(libs["good"]), make(libs["crash"])
    try:
        assert await bounded(defer.gatherResults([good.new_game(7, 6), bad.new_game(7, 6)])) == [True, True]
        assert await bounded(good.play_move(0, 2)) is True
        await expect_failure(bad.auto_move(0, 0))
        await bounded(bad.ended, 5)
        assert gone(bad.pid)
        assert await bounded(good.auto_move(1, 0)) == 0
        assert await bounded(good.get_state(2, 0)) == 0
        assert good.failure is None
    finally:
        await finish(good)
        await finish(bad)


@pytest_twisted.ensureDeferred
async def test_close_kills_a_thinking_host(libs):
    e = make(libs["hang"], auto_timeout=30, close_grace=0.2)
    assert await bounded(e.new_game(7, 6)) is True
    thinking = e.auto_move(0, 0)
    await task.deferLater(reactor, 0.2, lambda: None)
    await finish(e)
    assert "closed" in (await expect_failure(thinking)).reason


@pytest.mark.parametrize("how", ["close", "kill", "kill while thinking"])
@pytest_twisted.ensureDeferred
async def test_what_the_engine_forked_ends_with_its_host(tmp_path, how):
    pidfile = tmp_path / "escaped"
    lib = compile_engines(tmp_path, {"escape": escaping_engine(str(pidfile), think_forever="thinking" in how)})["escape"]
    e = make(lib, auto_timeout=30, close_grace=0.5)
    assert await bounded(e.new_game(7, 6)) is True
    pid = read_pid(pidfile)
    assert os.getsid(pid) == pid and os.getpgid(pid) != e.pid, "it left the host's session and group"
    if how == "close":
        await finish(e)
    else:
        if "thinking" in how:
            thinking = e.auto_move(0, 0)
        await bounded(e.kill("the game is over"), 5)
        if "thinking" in how:
            assert (await expect_failure(thinking)).reason == "the game is over"
    assert wait_gone([e.pid, pid], 5) == [], "the engine's setsid() child outlived its host"
