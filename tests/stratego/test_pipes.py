"""AI programs in gamed-stratego's own loop (``pipes.PipeSeat`` under ``StrategoReferee`` in a
``SelectorLoop``; ucc-stratego §2.5, §5, §11, §14.7), with the puppet test AIs as real processes.

test_process.py checks the same behaviour of the daemon's ``ProgramSeat`` on the reactor. Every
run has a hard time limit, and after every game no process of either AI's process group may
remain (not even a zombie): /proc is scanned for the group id. Nothing waits on a fixed sleep:
where a test needs an AI to be thinking, the AI waits for the test (``--think-until``).
"""

from __future__ import annotations

import ast
import os
import shlex
import signal
import time
from pathlib import Path

import pytest

from gamed.children import minimal_environment
from gamed.stratego.pipes import PipeSeat, SelectorLoop, Waiter
from gamed.stratego.referee import MatchOptions, Outcome, StrategoReferee
from gamed.stratego.wire import OVERLONG
from tests.stratego.puppet import PUPPET, PYTHON, group_members, write_script

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]

UNINTELLIGIBLE = "Unintelligable response"
FLOOD = 32 << 20

_started: list[PipeSeat] = []


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


@pytest.fixture
def puppet(tmp_path):
    """The puppet script's path (quoted for use in a player argument)."""
    return shlex.quote(write_script(tmp_path / "puppet", PUPPET))


def options(**kw) -> MatchOptions:
    kw.setdefault("timeout", None)
    kw.setdefault("quit_grace", 0.3)
    return MatchOptions(**kw)


def seat(argument: str, opts: MatchOptions, loop: SelectorLoop, **kwargs) -> PipeSeat:
    s = PipeSeat(argument, opts, loop, env=kwargs.pop("env", minimal_environment()), **kwargs)
    _started.append(s)
    return s


def wait(loop: SelectorLoop, awaitable, limit: float = 15.0):
    """Run ``loop`` until ``awaitable`` gives its value (at most ``limit`` seconds)."""
    done = Waiter()
    out = []

    async def go():
        out.append(await awaitable)
        done.fire()

    loop.start(go())
    timer = loop.call_later(limit, done.fire)
    loop.run(until=done)
    timer.cancel()
    assert loop.failure is None, loop.failure
    assert out, f"nothing within {limit} s"
    return out[0]


def play(red, blue, opts: MatchOptions, loop: SelectorLoop | None = None, limit: float = 15.0, on_log=None):
    """One match in a SelectorLoop; returns (result, red seat, blue seat, when the result line was
    logged). Both process groups must be gone when the match is over."""
    loop = loop or SelectorLoop()
    r = red if isinstance(red, PipeSeat) else seat(red, opts, loop)
    b = blue if isinstance(blue, PipeSeat) else seat(blue, opts, loop)
    ended = []

    def log(line):
        if on_log is not None:
            on_log(line)
        ended.append(time.monotonic())

    referee = StrategoReferee(r, b, opts, on_log=log, sleep=loop.sleep)
    result = wait(loop, referee.run(), limit)
    for s in (r, b):
        if s.pid is not None:
            assert group_members(s.pid) == [], f"{s.name}: its process group survived the match"
    return result, r, b, ended[-1]


# --- starting a program (§2.5) ---------------------------------------------------------------------

INTROSPECT = (
    "import os,sys;"
    "sys.stderr.write(repr((sys.orig_argv[0], os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid(),"
    " sorted(os.environ), os.getcwd())))"
)


def _stderr_of(start) -> bytes:
    """What the program started by ``start()`` (its seat) writes to the stderr it inherits."""
    read_end, write_end = os.pipe()
    saved = os.dup(2)
    os.dup2(write_end, 2)
    try:
        s = start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write_end)
    return s, read_end


@pytest.mark.parametrize("how", ["absolute", "relative", "bare"])
def test_the_program_leads_its_own_session_with_argv0_and_environment_as_given(how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "py").symlink_to(PYTHON)
    first = {"absolute": PYTHON, "relative": "./py", "bare": "py"}[how]
    loop = SelectorLoop()
    argument = f"{first} -S -c {shlex.quote(INTROSPECT)}"
    s, stderr = _stderr_of(lambda: seat(argument, options(), loop, env=minimal_environment({"EXTRA": "1"})))
    assert s.valid and s.name == first
    assert wait(loop, s.setup("RED", "x")) == []
    wait(loop, s.quit(None))
    with os.fdopen(stderr, "rb") as f:
        argv0, leader, session_leader, env, cwd = ast.literal_eval(f.read().decode())
    assert s.exit_code == 0 and s.exit_signal is None
    assert argv0 == first, "argv[0] is the path as given, and no PATH search"
    assert leader and session_leader, "the AI leads its own session and process group"
    assert env == ["EXTRA", "HOME", "LANG", "LC_ALL", "PATH"], "the environment it was given"
    assert cwd == str(tmp_path), "our working directory"
    assert group_members(s.pid) == []


def test_the_program_gets_sigpipe_and_sigxfsz_back_at_their_defaults():
    # Python ignores them, and an ignored signal stays ignored across exec: a shell shows its own.
    loop = SelectorLoop()
    s, stderr = _stderr_of(lambda: seat("/bin/sh -c 'grep SigIgn /proc/$$/status >&2'", options(), loop))
    wait(loop, s.setup("RED", "x"))
    wait(loop, s.quit(None))
    with os.fdopen(stderr, "rb") as f:
        ignored = int(f.read().split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1)), hex(ignored)


def test_a_program_that_cannot_be_executed_behaves_like_one_that_exits_at_once(tmp_path, puppet):
    broken = tmp_path / "broken"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    warnings = []
    loop = SelectorLoop()
    red = seat(str(broken), options(), loop, warn=warnings.append)
    assert red.valid and red.pid is None
    result, *_ = play(red, puppet, options(), loop)
    assert result.line == f"{broken} RED BAD_SETUP 0 0 148"
    assert warnings and "could not start" in warnings[0]


def test_a_missing_program_is_invalid_and_bad_setup(tmp_path, puppet):
    record = tmp_path / "blue.txt"
    result, red, _, _ = play("/nonexistent/ai", f"{puppet} --record {record}", options())
    assert not red.valid and result.line == "/nonexistent/ai RED BAD_SETUP 0 0 0"
    assert record.read_text() == repr("QUIT /nonexistent/ai RED BAD_SETUP 0 0 0\n") + "\n", "BLUE reads only QUIT"


# --- replies: framing, EOF, timeouts, limits -----------------------------------------------------


def test_every_line_reaches_each_ai_in_the_order_of_5_3(tmp_path, puppet):
    records = tmp_path / "red.txt", tmp_path / "blue.txt"
    red_ai, blue_ai = f"{puppet} --record {records[0]} '0 3 DOWN' '0 4 DOWN'", f"{puppet} --record {records[1]} '9 6 UP'"
    result, *_ = play(red_ai, blue_ai, options())
    assert result.line == f"{puppet} BLUE SURRENDER 2 148 148"
    red, blue = ([ast.literal_eval(line) for line in path.read_text().splitlines()] for path in records)
    assert red[:2] == [f"RED {blue_ai} 10 10\n", "START\n"] and len(red) == 2 + 10 + 2 + 10 + 1 + 1
    assert red[12:14] == ["0 3 DOWN OK\n", "9 6 UP OK\n"]
    assert red[24:] == ["0 4 DOWN OK\n", f"QUIT {result.line}\n"]
    assert blue[:2] == [f"BLUE {red_ai} 10 10\n", "0 3 DOWN OK\n"]
    assert blue[12:15] == ["9 6 UP OK\n", "0 4 DOWN OK\n", "##########\n"]
    assert blue[-1] == f"QUIT {result.line}\n"


def test_replies_are_bytes_as_latin1_framed_on_newline_only(tmp_path, puppet):
    record = tmp_path / "blue.txt"
    result, *_ = play(f"{puppet} '0\\t3 DOWN 1 \\xff\\r'", f"{puppet} --record {record}", options(pause=False))
    confirmation = "0\t3 DOWN 1 \xff\r OK"
    assert result.log[-4] == "1 RED: " + confirmation
    assert ast.literal_eval(record.read_text().splitlines()[1]) == confirmation + "\n", "echoed byte for byte"


def test_lines_sent_early_are_kept_for_the_next_ask(puppet):
    result, *_ = play(f"{puppet} --eager '0 3 DOWN' '0 4 DOWN'", f"{puppet} '9 6 UP'", options())
    assert list(result.log[-6:-3]) == ["1 RED: 0 3 DOWN OK", "1 BLU: 9 6 UP OK", "2 RED: 0 4 DOWN OK"]


def test_an_ai_that_exits_mid_game_is_illegal_and_bytes_pending_at_eof_form_its_last_line(puppet):
    result, red, _, _ = play(f"{puppet} '@last:0 3 DOWN'", f"{puppet} '9 6 UP'", options())
    assert result.log[-5] == "1 RED: 0 3 DOWN OK" and result.log[-3] == "2 RED: "
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148" and result.reason == UNINTELLIGIBLE
    assert red.exit_code == 0


def test_eof_ends_the_game_even_with_i(puppet):
    result, *_ = play(f"{puppet} @exit", puppet, options(allow_illegal=True))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148" and result.reason == UNINTELLIGIBLE


def test_the_whole_line_must_arrive_in_time(puppet):
    # "0 3 " at once, "DOWN\n" after the timeout: a timeout, not a move (§11 row 5, §14.4).
    result, red, _, _ = play(f"{puppet} @partial:0.8", puppet, options(timeout=0.4))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert result.reason == "Response timeout after 0.400000 seconds." and result.log[-3] == "1 RED: "


def test_without_a_timeout_the_slow_line_is_the_move(puppet):
    result, *_ = play(f"{puppet} @partial:0.3", puppet, options(timeout=None))
    assert result.log[-4] == "1 RED: 0 3 DOWN OK"


def test_an_ai_that_sleeps_past_the_timeout_is_illegal_and_killed_after_the_grace(puppet):
    result, red, _, ended = play(f"{puppet} @sleep", puppet, options(timeout=0.5))
    assert result.reason == "Response timeout after 0.500000 seconds." and result.log[-3] == "1 RED: "
    assert red.exit_signal == signal.SIGKILL, "it slept through QUIT and was killed"
    assert time.monotonic() - ended < 10, "killed after the grace period, not after its 30 s sleep"


def test_a_line_longer_than_max_line_is_unintelligible_and_skipped(puppet):
    long = "0 3 DOWN" + " " * 20  # would parse, but is longer than --max-line
    result, *_ = play(f"{puppet} '{long}' SURRENDER", f"{puppet} '9 6 UP'", options(max_line=16, allow_illegal=True))
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: SURRENDER OK"]


def _peak_rss_kib() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process, after resetting VmHWM where the kernel allows it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _grown_kib(before_rss: int) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) - before_rss
    raise AssertionError("no VmHWM")


def test_a_flood_without_newline_is_one_overlong_line_and_memory_stays_bounded(puppet):
    before, _ = _peak_rss_kib()
    result, red, _, _ = play(f"{puppet} @flood-exit:{FLOOD}", f"{puppet} '9 6 UP'", options(allow_illegal=True, pause=False))
    grown = _grown_kib(before)
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: "]
    assert result.reason == UNINTELLIGIBLE and red.exit_code == 0
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while reading a 32 MiB line"


def test_a_flood_of_lines_sent_early_keeps_memory_bounded(puppet):
    before, _ = _peak_rss_kib()
    result, _, blue, _ = play(f"{puppet} --think 0.4 '0 3 DOWN'", f"{puppet} --flood-after-setup {FLOOD}", options(pause=False))
    grown = _grown_kib(before)
    assert result.line == f"{puppet} BLUE ILLEGAL 1 148 148" and result.log[-3] == "1 BLU: garbage"
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while 32 MiB of lines came early"
    assert blue.exit_signal == signal.SIGKILL


def test_an_ai_that_stops_reading_counts_as_gone_when_its_input_overflows(puppet):
    loop = SelectorLoop()
    s = seat(f"{puppet} --setup 4", options(timeout=30), loop)  # its setup, then it sleeps
    assert len(wait(loop, s.setup("RED", "x"))) == 4
    s.tell("x" * (2 << 20))  # more than 1 MiB waits for it: gone, and the write did not raise
    s.tell("more")
    start = time.monotonic()
    assert wait(loop, s.move(["." * 10] * 10, lambda r: True)) is None, "judged at its next ask: EOF"
    assert time.monotonic() - start < 10, "at once, not after the 30 s timeout"
    wait(loop, s.quit("x RED ILLEGAL 1 148 148"))
    assert s.exit_signal == signal.SIGKILL and group_members(s.pid) == []


# --- the end: QUIT, grace, kill, reap (§5.6, §14.7) -------------------------------------------------


def test_an_ai_that_ignores_sigterm_and_sleeps_after_quit_is_killed_after_the_grace(puppet):
    result, red, blue, ended = play(f"{puppet} --linger SURRENDER", puppet, options(quit_grace=0.3))
    took = time.monotonic() - ended
    assert result.line == f"{puppet} RED SURRENDER 1 148 148"
    assert 0.25 <= took < 10, f"the match ended {took:.2f} s after its result (grace 0.3 s; it lingers 30 s)"
    assert red.exit_signal == signal.SIGKILL and blue.exit_code == 0


def test_kill_ends_the_group_at_once_even_during_the_grace(puppet):
    loop = SelectorLoop()
    s = seat(f"{puppet} --fork --setup 4", options(quit_grace=30), loop)
    assert len(wait(loop, s.setup("RED", "x"))) == 4
    members = group_members(s.pid)
    quitting = s.quit("x RED SURRENDER 1 148 148")
    start = time.monotonic()
    wait(loop, s.kill())
    assert quitting.done and time.monotonic() - start < 10, "killed at once, not after the 30 s grace"
    assert len(members) == 2 and group_members(s.pid) == [] and s.exit_signal == signal.SIGKILL


def test_an_ai_that_forks_a_sleeping_child_leaves_nothing_behind(tmp_path, puppet):
    group = tmp_path / "group"
    members = []
    result, red, _, ended = play(
        f"{puppet} --fork --linger --group {group} '0 3 DOWN'",
        f"{puppet} --fork SURRENDER",
        options(quit_grace=0.3),
        on_log=lambda line: members.extend(group_members(int(group.read_text().split()[1])) if not members else []),
    )
    pid, pgid = map(int, group.read_text().split())
    assert pid == pgid == red.pid
    assert len(members) >= 2, "the child ran in the AI's process group"
    assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
    # play() has checked that neither group has any process left, zombies included.


def test_the_winner_exiting_right_after_quit_gives_the_real_result(puppet):
    for _ in range(8):
        result, red, blue, _ = play(f"{puppet} '0 3 DOWN'", puppet, options())
        assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
        assert (red.exit_code, blue.exit_code) == (0, 0)


# --- pausing (§5.9) -------------------------------------------------------------------------------


@pytest.mark.parametrize("pause", [True, False])
def test_the_idle_ai_is_stopped_while_the_other_thinks(tmp_path, puppet, pause):
    # RED thinks until the test lets it answer (--think-until); meanwhile BLUE's group (BLUE and its
    # child) is sampled from a timer of the same loop.
    go = tmp_path / "go"
    opts = options(pause=pause, max_turns=3)
    loop = SelectorLoop()
    red = seat(f"{puppet} --think-until {go} '0 3 DOWN' '0 4 DOWN'", opts, loop)
    blue = seat(f"{puppet} --fork '9 6 UP' '9 5 UP'", opts, loop)
    seen = []
    deadline = []

    def sample() -> None:
        if not (tmp_path / "go.thinking").exists():
            loop.call_later(0.005, sample)
            return
        members = group_members(blue.pid)
        if pause and not all(state == "T" for _, state in members) and time.monotonic() < deadline[-1]:
            loop.call_later(0.005, sample)  # SIGSTOP takes effect when each process next runs
            return
        (tmp_path / "go.thinking").unlink()
        seen.append(members)
        go.touch()

    real_move = red.move

    def move(view, acceptable):
        waiter = real_move(view, acceptable)
        deadline.append(time.monotonic() + 10)
        loop.call_later(0, sample)
        return waiter

    red.move = move
    result, *_ = play(red, blue, opts, loop)
    assert result.line == f"{puppet} BLUE DRAW_DEFAULT 3 148 148"
    assert len(seen) == 2 and all(len(members) == 2 for members in seen), "BLUE and its child"
    for members in seen:
        if pause:
            assert all(state == "T" for _, state in members), members
        else:
            assert not any(state == "T" for _, state in members), members
