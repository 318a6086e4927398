"""What only the daemon's ``process.ProgramSeat`` does (ucc-stratego §2.5, §5): resolving and
starting programs under a reaper of their own (``gamed.reaper``), a working directory of their
own, stderr kept, what a double fork leaves ending with the game, full games between the example AIs. The behaviour it shares with gamed-stratego's ``PipeSeat`` is
checked for both in test_program_seats.py.
"""

from __future__ import annotations

import ast
import os
import shlex
import signal
import time
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import defer
from twisted.logger import capturedLogs, formatEvent

from gamed import children
from gamed.children import leader_command
from gamed.stratego import process
from gamed.stratego.process import resolve_program
from gamed.stratego.referee import MatchOptions, Outcome, StrategoReferee, parse_log, replay_seats
from tests.procs import alive, read_pid, wait_gone
from tests.stratego.programs import compile_fast_ai
from tests.stratego.puppet import PYTHON, group_members, write_script
from tests.stratego.seat_harness import INTROSPECT, options

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stratego"
RANDOM_AI = EXAMPLES / "random_ai.py"

# --- helpers ---------------------------------------------------------------------------------------


def random_ai(seed: int) -> str:
    """The example Python AI as a player argument (§2.5 step 2: interpreter, script, seed)."""
    return f"{shlex.quote(PYTHON)} {shlex.quote(str(RANDOM_AI))} {seed}"


@pytest.fixture(scope="session")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


def replayed(result):
    """The result of replaying the match's log (-f)."""
    red, blue = replay_seats(parse_log(result.log))
    limit = result.turn if result.outcome is Outcome.DRAW_DEFAULT else None
    out = []
    defer.ensureDeferred(StrategoReferee(red, blue, MatchOptions(max_turns=limit)).run()).addBoth(out.append)
    return out[0]


# --- §2.5: resolving and starting programs ----------------------------------------------------


def test_resolve_program_follows_2_5(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ai = write_script(tmp_path / "ai", "")
    spaced = write_script(tmp_path / "my ai" / "red", "")
    (tmp_path / "plain").write_text("not executable")
    (tmp_path / "dir").mkdir()
    assert resolve_program(ai) == [ai]
    assert resolve_program("ai") == ["ai"], "a bare name is relative to the current directory"
    assert resolve_program(spaced) == [spaced], "step 1: the whole argument, spaces and all"
    assert resolve_program(f"{ai} 42 'a b'") == [ai, "42", "a b"], "step 2: shell words"
    assert resolve_program(f"'{spaced}' x") == [spaced, "x"]
    assert resolve_program("./ai\tseven") == ["./ai", "seven"]
    assert resolve_program("python3") is None and resolve_program("sh -c true") is None, "no PATH search"
    assert resolve_program("/nonexistent/ai") is None
    assert resolve_program("plain") is None and resolve_program("dir") is None and resolve_program("") is None
    assert resolve_program(f"{ai} 'unbalanced") is None


def test_leader_command_keeps_argv0_and_never_searches_path(tmp_path):
    if children._SETSID is not None and children._SETPRIV is not None:
        assert leader_command(["/x/ai", "1"]) == (
            children._SETPRIV, ["setpriv", "--pdeathsig", "KILL", "--", children._SETSID, "--", "/x/ai", "1"]
        )
        assert leader_command(["./ai"])[1][-1] == "./ai"
    for argv, cwd, path in ((["ai", "1"], None, "./ai"), (["./ai"], str(tmp_path), os.path.abspath("./ai"))):
        executable, args = leader_command(argv, cwd)
        assert executable == children._PYTHON and args[-len(argv) - 2 :] == [str(os.getpid()), path, *argv]


@pytest_twisted.ensureDeferred
async def test_the_program_runs_in_the_working_directory_it_is_given(reactor_seats, tmp_path, monkeypatch):
    # A bare name with cwd: the helper resolves it against our directory, not the program's.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "py").symlink_to(PYTHON)
    workdir = tmp_path / "work"
    workdir.mkdir()
    s = reactor_seats.seat(f"py -S -c {shlex.quote(INTROSPECT)}", options(), stderr="capture", cwd=str(workdir))
    assert await reactor_seats.wait(s.setup("RED", "x")) == []
    await reactor_seats.wait(s.quit(None))
    argv0, leader, session_leader, _, cwd = ast.literal_eval(s.stderr_text.decode())
    assert (argv0, leader, session_leader, cwd) == ("py", True, True, str(workdir))
    assert s.exit_code == 0 and group_members(s.pid) == []


@pytest_twisted.ensureDeferred
async def test_a_program_whose_start_fails_behaves_like_one_that_exits_at_once(reactor_seats, monkeypatch, puppet):
    monkeypatch.setattr(process, "reaper_command", lambda argv, cwd=None: ("/nonexistent/helper", argv))
    r = reactor_seats.seat(puppet, options())
    assert r.valid and r.pid is None
    monkeypatch.undo()
    result, *_ = await reactor_seats.play(r, puppet, options())
    assert result.line == f"{puppet} RED BAD_SETUP 0 0 148"


@pytest_twisted.ensureDeferred
async def test_stderr_is_captured_up_to_its_limit(reactor_seats, tmp_path):
    ai = write_script(tmp_path / "noisy", "import sys\nsys.stderr.write('e' * 200000)\n")
    s = reactor_seats.seat(ai, options(), stderr="capture", stderr_limit=1000)
    await reactor_seats.wait(s.setup("RED", "x"))
    await reactor_seats.wait(s.quit(None))
    assert s.stderr_text == b"e" * 1000 and s.exit_code == 0


# --- the reaper --------------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["exit 5", "signal SIGUSR1"])
@pytest_twisted.ensureDeferred
async def test_the_program_runs_under_its_reaper_and_its_end_reads_as_its_own(reactor_seats, tmp_path, end):
    how = "sys.exit(5)" if end == "exit 5" else "os.kill(os.getpid(), signal.SIGUSR1)"
    ai = write_script(
        tmp_path / "ai",
        "import os, signal, sys\nsys.stderr.write(repr((os.getppid(), os.getpgid(0))))\nsys.stderr.flush()\n" + how + "\n",
    )
    s = reactor_seats.seat(ai, options(), stderr="capture")
    assert await reactor_seats.wait(s.setup("RED", "x")) == []
    await reactor_seats.wait(s.quit(None))
    parent, group = ast.literal_eval(s.stderr_text.decode())
    assert parent == s.reaper_pid != s.pid and group == s.pid, "the reaper is the parent of the program, a group leader"
    if end == "exit 5":
        assert (s.exit_code, s.exit_signal) == (5, None)
    else:
        assert (s.exit_code, s.exit_signal) == (None, signal.SIGUSR1)
    assert wait_gone([s.reaper_pid]) == [] and group_members(s.pid) == []


@pytest_twisted.ensureDeferred
async def test_a_grandchild_orphaned_by_a_double_fork_ends_with_the_game(reactor_seats, tmp_path, puppet):
    # The AI's child forks a grandchild that leaves the group with setsid(), and exits at once:
    # the grandchild is an orphan before the game starts, and no look at the AI's tree finds it.
    escaped = tmp_path / "escaped"
    s = reactor_seats.seat(f"{puppet} --escape-orphan {escaped}", options())
    pid = None
    try:
        assert len(await reactor_seats.wait(s.setup("RED", "x"))) == 4
        pid = read_pid(escaped)
        assert alive(pid) and os.getsid(pid) == pid
        await reactor_seats.wait(s.quit("x RED SURRENDER 1 148 148"))
        assert s.exit_code == 0, "the AI read QUIT and exited"
        assert wait_gone([pid]) == [], "the grandchild orphaned by a double fork outlived the game"
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_gone([pid])
            children.reap([pid])


@pytest_twisted.ensureDeferred
async def test_a_reaper_that_does_not_end_is_killed_with_its_tree(reactor_seats, puppet):
    s = reactor_seats.seat(f"{puppet} --fork --setup 4", options(quit_grace=30))
    assert len(await reactor_seats.wait(s.setup("RED", "x"))) == 4
    reaper, members = s.reaper_pid, group_members(s.pid)
    os.kill(reaper, signal.SIGSTOP)  # it can take no signal but SIGKILL now
    start = time.monotonic()
    with capturedLogs() as events:
        await reactor_seats.wait(s.kill())
    assert time.monotonic() - start < 10
    assert any("its reaper did not end within 1.0 s: killed" in formatEvent(e) for e in events)
    assert len(members) == 2 and group_members(s.pid) == [], "the AI and its child are gone, zombies included"
    assert wait_gone([reaper]) == [] and s.exit_signal == signal.SIGKILL


# --- full games ------------------------------------------------------------------------------


@pytest.mark.parametrize("pairing", ["python-python", "c-c", "c-python"])
@pytest_twisted.ensureDeferred
async def test_full_games_between_the_example_ais(reactor_seats, pairing, request):
    a, b = pairing.split("-")

    def ai(kind, seed):
        return request.getfixturevalue("fast_ai") + f" {seed}" if kind == "c" else random_ai(seed)

    for seed in (1, 2):
        result, red, blue, _ = await reactor_seats.play(ai(a, seed), ai(b, seed + 100), options(max_turns=300), limit=20)
        assert result.outcome in (Outcome.VICTORY, Outcome.DRAW, Outcome.DRAW_DEFAULT, Outcome.SURRENDER), result.line
        assert result.log[0].endswith(" RED SETUP") and "INVALID!" not in result.log
        assert (red.exit_code, blue.exit_code) == (0, 0), "both read QUIT and exited"
        assert replayed(result).line == result.line, "the log replays to the same result"
