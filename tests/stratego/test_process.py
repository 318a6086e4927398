"""AI programs as real subprocesses (ucc-stratego §2.5, §5, §11, §14.7): ``ProgramSeat`` under
``StrategoReferee``, with the example AIs and small misbehaving test AIs.

Every game has a hard time limit, and after every game no process of either AI's process group
may remain (not even a zombie): /proc is scanned for the group id.
"""

from __future__ import annotations

import ast
import os
import resource
import shlex
import signal
import time
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import defer, task

from gamed import children
from gamed.stratego import process
from gamed.stratego.process import OVERLONG, ProgramSeat, leader_command, resolve_program
from gamed.stratego.referee import MatchOptions, Outcome, StrategoReferee, parse_log, replay_seats
from tests.stratego.programs import compile_fast_ai
from tests.stratego.puppet import PUPPET, PYTHON, group_members, write_script

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stratego"
RANDOM_AI = EXAMPLES / "random_ai.py"
UNINTELLIGIBLE = "Unintelligable response"

# --- helpers ---------------------------------------------------------------------------------------


@pytest.fixture
def puppet(tmp_path):
    """The puppet script's path (quoted for use in a player argument)."""
    return shlex.quote(write_script(tmp_path / "puppet", PUPPET))


def random_ai(seed: int) -> str:
    """The example Python AI as a player argument (§2.5 step 2: interpreter, script, seed)."""
    return f"{shlex.quote(PYTHON)} {shlex.quote(str(RANDOM_AI))} {seed}"


@pytest.fixture(scope="session")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


def _reactor():
    from twisted.internet import reactor  # pytest-twisted's, installed at session start

    return reactor


_started: list[ProgramSeat] = []


@pytest.fixture(autouse=True)
def _no_stray_groups():
    """A failed test must not leave AI processes behind for the next one."""
    yield
    while _started:
        seat = _started.pop()
        if seat.pid is not None:
            try:
                os.killpg(seat.pid, signal.SIGKILL)
            except OSError:
                pass


def seat(argument: str, options: MatchOptions, **kwargs) -> ProgramSeat:
    s = ProgramSeat(argument, options, _reactor(), **kwargs)
    _started.append(s)
    return s


def options(**kw) -> MatchOptions:
    kw.setdefault("timeout", 2.0)
    kw.setdefault("quit_grace", 0.3)
    return MatchOptions(**kw)


async def play(red, blue, opts: MatchOptions, limit: float = 15.0, on_log=None, **seat_kwargs):
    """Run one match through the referee with a hard time limit; returns (result, red seat, blue
    seat, ended) where ``ended`` is when the result line was logged. Both process groups must be
    gone when the match is over."""
    reactor = _reactor()
    r = red if isinstance(red, ProgramSeat) else seat(red, opts, **seat_kwargs)
    b = blue if isinstance(blue, ProgramSeat) else seat(blue, opts, **seat_kwargs)
    ended = []

    def log(line):
        if on_log is not None:
            on_log(line)
        ended.append(time.monotonic())

    referee = StrategoReferee(r, b, opts, clock=reactor, on_log=log)
    d = defer.ensureDeferred(referee.run())
    d.addTimeout(limit, reactor)
    result = await d
    for s in (r, b):
        if s.pid is not None:
            assert group_members(s.pid) == [], f"{s.name}: its process group survived the match"
    return result, r, b, (ended[-1] if ended else time.monotonic())


def sleep(seconds: float):
    return task.deferLater(_reactor(), seconds, lambda: None)


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
    if children._SETSID is not None:
        assert leader_command(["/x/ai", "1"]) == (children._SETSID, ["setsid", "--", "/x/ai", "1"])
        assert leader_command(["./ai"])[1][-1] == "./ai"
    for argv, cwd, path in ((["ai", "1"], None, "./ai"), (["./ai"], str(tmp_path), os.path.abspath("./ai"))):
        executable, args = leader_command(argv, cwd)
        assert executable == children._PYTHON and args[-len(argv) - 1 :] == [path, *argv]


INTROSPECT = (
    "import os,sys;"
    "sys.stderr.write(repr((sys.orig_argv[0], os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid(),"
    " sorted(os.environ), os.getcwd())))"
)


@pytest.mark.parametrize("how", ["absolute", "relative", "bare", "cwd"])
@pytest_twisted.ensureDeferred
async def test_the_program_leads_its_own_group_with_argv0_and_environment_as_given(how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "py").symlink_to(PYTHON)
    first = {"absolute": PYTHON, "relative": "./py", "bare": "py", "cwd": "py"}[how]
    workdir = tmp_path / "work"
    workdir.mkdir()
    opts = options()
    s = seat(
        f"{first} -c {shlex.quote(INTROSPECT)}",
        opts,
        stderr="capture",
        env={"EXTRA": "1"},
        cwd=str(workdir) if how == "cwd" else None,
    )
    assert s.valid and s.name == first
    lines = await s.setup("RED", "x").addTimeout(10, _reactor())
    await s.quit(None).addTimeout(10, _reactor())
    argv0, leader, session_leader, env, cwd = ast.literal_eval(s.stderr_text.decode())
    assert lines == [] and s.exit_code == 0 and s.exit_signal is None
    assert argv0 == first, "argv[0] is the path as given"
    assert leader and session_leader, "the AI leads its own process group (and session)"
    assert env == ["EXTRA", "HOME", "LANG", "LC_ALL", "PATH"], "an explicit minimal environment"
    assert cwd == str(workdir if how == "cwd" else tmp_path)
    assert group_members(s.pid) == []


@pytest_twisted.ensureDeferred
async def test_a_missing_or_non_executable_program_is_invalid_and_bad_setup(tmp_path, puppet):
    record = tmp_path / "blue.txt"
    text = tmp_path / "text"
    text.write_text("#!/bin/sh\n")
    opts = options()
    for red in ("/nonexistent/ai", str(text)):
        record.unlink(missing_ok=True)
        r = seat(red, opts)
        assert not r.valid and r.pid is None
        result, *_ = await play(r, f"{puppet} --record {record}", opts)
        assert result.line == f"{red} RED BAD_SETUP 0 0 0"
        assert result.log[1] == f'Check that executable "{red}" exists and has executable permissions set.'
        assert record.read_text() == repr(f"QUIT {red} RED BAD_SETUP 0 0 0\n") + "\n", "BLUE reads only QUIT"
        assert r.exit_code is None and r.stderr_text == b""


@pytest_twisted.ensureDeferred
async def test_a_program_whose_start_fails_behaves_like_one_that_exits_at_once(monkeypatch, puppet):
    monkeypatch.setattr(process, "leader_command", lambda argv, cwd=None: ("/nonexistent/helper", argv))
    r = seat(puppet, options())
    assert r.valid and r.pid is None
    monkeypatch.undo()
    result, *_ = await play(r, puppet, options())
    assert result.line == f"{puppet} RED BAD_SETUP 0 0 148"


@pytest_twisted.ensureDeferred
async def test_a_path_with_spaces_runs_and_its_name_is_cut_at_the_first_space(tmp_path):
    red = write_script(tmp_path / "my ai" / "red", PUPPET)
    record = tmp_path / "blue.txt"
    blue = write_script(tmp_path / "blue", PUPPET)
    result, *_ = await play(red, f"{blue} --record {record}", options())
    assert result.line == f"{tmp_path}/my RED SURRENDER 1 148 148"
    assert ast.literal_eval(record.read_text().splitlines()[0]) == f"BLUE {red} 10 10\n", "OPPONENT is the argument as given"


@pytest_twisted.ensureDeferred
async def test_an_ai_that_dies_before_setup_gives_bad_setup(puppet):
    result, red, _, _ = await play(f"{puppet} --die", puppet, options())
    assert result.outcome is Outcome.BAD_SETUP and result.colour == "RED"
    assert (result.turn, result.red_value, result.blue_value) == (0, 0, 148)
    assert red.exit_code == 3


@pytest_twisted.ensureDeferred
async def test_setup_lines_each_have_their_own_timeout(puppet):
    start = time.monotonic()
    result, *_ = await play(f"{puppet} --setup 2", puppet, options(timeout=0.3))
    assert result.line.split()[1:] == ["RED", "BAD_SETUP", "0", "73", "148"], "the 2 rows that came stay placed"
    assert time.monotonic() - start < 10, "not held up by RED's 30 s sleep after its 2 rows"


# --- full games ------------------------------------------------------------------------------


@pytest.mark.parametrize("pairing", ["python-python", "c-c", "c-python"])
@pytest_twisted.ensureDeferred
async def test_full_games_between_the_example_ais(pairing, request):
    a, b = pairing.split("-")

    def ai(kind, seed):
        return request.getfixturevalue("fast_ai") + f" {seed}" if kind == "c" else random_ai(seed)

    for seed in (1, 2):
        result, red, blue, _ = await play(ai(a, seed), ai(b, seed + 100), options(max_turns=300), limit=20)
        assert result.outcome in (Outcome.VICTORY, Outcome.DRAW, Outcome.DRAW_DEFAULT, Outcome.SURRENDER), result.line
        assert result.log[0].endswith(" RED SETUP") and "INVALID!" not in result.log
        assert (red.exit_code, blue.exit_code) == (0, 0), "both read QUIT and exited"
        assert replayed(result).line == result.line, "the log replays to the same result"


@pytest_twisted.ensureDeferred
async def test_the_winner_exiting_right_after_quit_gives_the_real_result(puppet):
    # RED moves, BLUE surrenders; RED reads QUIT first and exits at once (§14.7).
    for _ in range(8):
        result, red, blue, _ = await play(f"{puppet} '0 3 DOWN'", puppet, options())
        assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
        assert (red.exit_code, blue.exit_code) == (0, 0)


# --- replies: framing, EOF, timeouts, limits ----------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_replies_are_bytes_as_latin1_framed_on_newline_only(tmp_path, puppet):
    record = tmp_path / "blue.txt"
    result, *_ = await play(f"{puppet} '0\\t3 DOWN 1 \\xff\\r'", f"{puppet} --record {record}", options())
    confirmation = "0\t3 DOWN 1 \xff\r OK"
    assert result.log[-4] == "1 RED: " + confirmation
    assert ast.literal_eval(record.read_text().splitlines()[1]) == confirmation + "\n", "echoed byte for byte"


@pytest_twisted.ensureDeferred
async def test_lines_sent_early_are_kept_for_the_next_ask(puppet):
    result, *_ = await play(f"{puppet} --eager '0 3 DOWN' '0 4 DOWN'", f"{puppet} '9 6 UP'", options())
    assert list(result.log[-6:-3]) == ["1 RED: 0 3 DOWN OK", "1 BLU: 9 6 UP OK", "2 RED: 0 4 DOWN OK"]
    assert result.line == f"{puppet} BLUE SURRENDER 2 148 148"


@pytest_twisted.ensureDeferred
async def test_an_ai_that_exits_mid_game_is_illegal_unintelligible(puppet):
    result, red, _, _ = await play(f"{puppet} '0 3 DOWN' @exit", f"{puppet} '9 6 UP'", options())
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148"
    assert result.reason == UNINTELLIGIBLE and result.log[-3] == "2 RED: "
    assert red.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_bytes_pending_at_eof_form_the_last_line(puppet):
    result, *_ = await play(f"{puppet} '@last:0 3 DOWN'", f"{puppet} '9 6 UP'", options())
    assert result.log[-5] == "1 RED: 0 3 DOWN OK" and result.log[-3] == "2 RED: "
    assert result.reason == UNINTELLIGIBLE


@pytest_twisted.ensureDeferred
async def test_eof_ends_the_game_even_with_i(puppet):
    result, *_ = await play(f"{puppet} @exit", puppet, options(allow_illegal=True))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148" and result.reason == UNINTELLIGIBLE


@pytest_twisted.ensureDeferred
async def test_garbage_is_unintelligible(puppet):
    result, *_ = await play(f"{puppet} 'hello world'", puppet, options())
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert list(result.log[-3:-1]) == ["1 RED: hello world", f"Game ends on RED's turn - REASON: {UNINTELLIGIBLE}"]


@pytest_twisted.ensureDeferred
async def test_an_ai_that_sleeps_past_the_timeout_is_illegal(puppet):
    start = time.monotonic()
    result, red, _, _ = await play(f"{puppet} @sleep", puppet, options(timeout=0.5))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert result.reason == "Response timeout after 0.500000 seconds." and result.log[-3] == "1 RED: "
    assert red.exit_signal == signal.SIGKILL, "it slept through QUIT and was killed"
    assert time.monotonic() - start < 10, "killed after the grace period, not after its 30 s sleep"


@pytest_twisted.ensureDeferred
async def test_the_whole_line_must_arrive_in_time(puppet):
    # "0 3 " at once, "DOWN\n" after the timeout: a timeout, not a move (§11 row 5, §14.4).
    result, *_ = await play(f"{puppet} @partial:0.8", puppet, options(timeout=0.4))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert result.reason == "Response timeout after 0.400000 seconds." and result.log[-3] == "1 RED: "


@pytest_twisted.ensureDeferred
async def test_no_timeout_waits_for_the_slow_line(puppet):
    result, *_ = await play(f"{puppet} @partial:0.3", puppet, options(timeout=None))
    assert result.log[-4] == "1 RED: 0 3 DOWN OK", "with -T 0 the late line is the move"


@pytest_twisted.ensureDeferred
async def test_a_line_longer_than_max_line_is_unintelligible_and_skipped(puppet):
    long = "0 3 DOWN" + " " * 20  # would parse, but is longer than --max-line
    result, *_ = await play(
        f"{puppet} '{long}' SURRENDER", f"{puppet} '9 6 UP'", options(max_line=16, allow_illegal=True)
    )
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: SURRENDER OK"]


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


FLOOD = 32 << 20


@pytest_twisted.ensureDeferred
async def test_a_flood_without_newline_is_one_overlong_line_and_memory_stays_bounded(puppet):
    # RED floods 32 MiB without a newline at its first move, then exits; with -i the game goes on
    # (BLUE moves; no pausing) while the rest of that line is read and dropped, and RED's next ask
    # reads the end of its output (EOF). No timeout: nothing here races a clock.
    _reset_peak_rss()
    before = _rss_kib("VmRSS")
    result, red, _, _ = await play(
        f"{puppet} @flood-exit:{FLOOD}",
        f"{puppet} '9 6 UP'",
        options(allow_illegal=True, pause=False, timeout=None),
    )
    grown = _rss_kib("VmHWM") - before
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: "]
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148" and result.reason == UNINTELLIGIBLE
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while reading a 32 MiB line"
    assert red.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_a_flood_of_lines_sent_early_keeps_memory_bounded(puppet):
    # BLUE sends 32 MiB of "garbage" lines right after its setup, while RED thinks; the first is its
    # reply. Early lines are kept, but only up to a budget: then the pipe pushes back.
    _reset_peak_rss()
    before = _rss_kib("VmRSS")
    result, _, blue, _ = await play(
        f"{puppet} --think 0.4 '0 3 DOWN'", f"{puppet} --flood-after-setup {FLOOD}", options(pause=False, timeout=None)
    )
    grown = _rss_kib("VmHWM") - before
    assert result.line == f"{puppet} BLUE ILLEGAL 1 148 148" and result.reason == UNINTELLIGIBLE
    assert result.log[-3] == "1 BLU: garbage"
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while 32 MiB of lines came early"
    assert blue.exit_signal == signal.SIGKILL


@pytest_twisted.ensureDeferred
async def test_an_ai_that_stops_reading_counts_as_gone_when_output_overflows(puppet):
    opts = options(timeout=30)
    s = seat(f"{puppet} --setup 4", opts)  # sends its setup, then sleeps without reading
    lines = await s.setup("RED", "x").addTimeout(10, _reactor())
    assert len(lines) == 4
    s.tell("x" * (2 << 20))  # more than 1 MiB waits for it: gone, and the write did not raise
    s.tell("more")
    start = time.monotonic()
    reply = await s.move(["." * 10] * 10, lambda r: True).addTimeout(10, _reactor())
    assert reply is None and time.monotonic() - start < 10, "judged at its next ask: EOF, not after the 30 s timeout"
    await s.quit("x RED ILLEGAL 1 148 148").addTimeout(10, _reactor())
    assert s.exit_signal == signal.SIGKILL and group_members(s.pid) == []


@pytest_twisted.ensureDeferred
async def test_stderr_is_captured_up_to_its_limit(tmp_path):
    ai = write_script(tmp_path / "noisy", "import sys\nsys.stderr.write('e' * 200000)\n")
    s = seat(ai, options(), stderr="capture", stderr_limit=1000)
    await s.setup("RED", "x").addTimeout(10, _reactor())
    await s.quit(None).addTimeout(10, _reactor())
    assert s.stderr_text == b"e" * 1000 and s.exit_code == 0


# --- the end of a game: QUIT, grace, kill, reap (§5.6, §14.7) --------------------------------------


@pytest_twisted.ensureDeferred
async def test_an_ai_that_ignores_sigterm_and_sleeps_after_quit_is_killed_after_the_grace(puppet):
    result, red, blue, ended = await play(f"{puppet} --linger SURRENDER", puppet, options(quit_grace=0.3))
    took = time.monotonic() - ended
    assert result.line == f"{puppet} RED SURRENDER 1 148 148"
    assert 0.25 <= took < 10, f"the match ended {took:.2f} s after its result (grace 0.3 s; it lingers 30 s)"
    assert red.exit_signal == signal.SIGKILL and blue.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_kill_ends_the_group_at_once(puppet):
    # What an interrupted manager does (§11 row 17): no grace, even during a quit's grace period.
    s = seat(f"{puppet} --fork --setup 4", options(quit_grace=30))
    assert len(await s.setup("RED", "x").addTimeout(10, _reactor())) == 4
    members = group_members(s.pid)
    quitting = s.quit("x RED SURRENDER 1 148 148")
    start = time.monotonic()
    await s.kill().addTimeout(10, _reactor())
    assert quitting.called and time.monotonic() - start < 10, "killed at once, not after the 30 s grace"
    assert len(members) == 2 and group_members(s.pid) == [] and s.exit_signal == signal.SIGKILL


@pytest_twisted.ensureDeferred
async def test_an_ai_that_forks_a_sleeping_child_leaves_nothing_behind(tmp_path, puppet):
    group = tmp_path / "group"
    members = []
    result, red, _, ended = await play(
        f"{puppet} --fork --linger --group {group} '0 3 DOWN'",
        f"{puppet} --fork SURRENDER",
        options(quit_grace=0.3),
        on_log=lambda line: members.extend(group_members(int(group.read_text().split()[1])) if not members else []),
    )
    pid, pgid = map(int, group.read_text().split())
    assert pid == pgid == red.pid
    assert len(members) >= 2, "the child ran in the AI's process group"
    assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
    assert time.monotonic() - ended < 10, "killed after the grace period (0.3 s), not after its 30 s sleep"
    # play() has checked that neither group has any process left, zombies included.


@pytest.mark.parametrize("pause", [True, False])
@pytest_twisted.ensureDeferred
async def test_the_idle_ai_is_stopped_while_the_other_thinks(tmp_path, puppet, pause):
    # RED thinks until the test lets it answer (--think-until): while it does, BLUE's group (BLUE
    # and its child) is sampled. Nothing here depends on how fast anything runs.
    go = tmp_path / "go"
    opts = options(pause=pause, max_turns=3, timeout=None)
    red = seat(f"{puppet} --think-until {go} '0 3 DOWN' '0 4 DOWN'", opts)
    blue = seat(f"{puppet} --fork '9 6 UP' '9 5 UP'", opts)
    seen = []

    async def sample_then_answer():
        while not (tmp_path / "go.thinking").exists():
            await sleep(0.005)
        (tmp_path / "go.thinking").unlink()
        members = group_members(blue.pid)
        deadline = time.monotonic() + 10
        while pause and not all(state == "T" for _, state in members) and time.monotonic() < deadline:
            await sleep(0.005)  # SIGSTOP takes effect when each process next runs
            members = group_members(blue.pid)
        seen.append(members)
        go.touch()

    real_move = red.move

    def move(view, acceptable):
        d = real_move(view, acceptable)
        defer.ensureDeferred(sample_then_answer())
        return d

    red.move = move
    result, *_ = await play(red, blue, opts)
    assert result.line == f"{puppet} BLUE DRAW_DEFAULT 3 148 148"
    assert len(seen) == 2 and all(len(members) == 2 for members in seen), "BLUE and its child"
    for members in seen:
        if pause:
            assert all(state == "T" for _, state in members), members
        else:
            assert not any(state == "T" for _, state in members), members
