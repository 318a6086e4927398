"""What only the daemon's ``process.ProgramSeat`` does (ucc-stratego §2.5, §5): resolving and
starting programs through a group-leader helper, a working directory of their own, stderr kept,
full games between the example AIs. The behaviour it shares with gamed-stratego's ``PipeSeat`` is
checked for both in test_program_seats.py.
"""

from __future__ import annotations

import ast
import os
import shlex
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import defer

from gamed import children
from gamed.stratego import process
from gamed.stratego.process import leader_command, resolve_program
from gamed.stratego.referee import MatchOptions, Outcome, StrategoReferee, parse_log, replay_seats
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
    monkeypatch.setattr(process, "leader_command", lambda argv, cwd=None: ("/nonexistent/helper", argv))
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
