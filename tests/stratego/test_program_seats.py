"""AI programs as real subprocesses under ``StrategoReferee`` (ucc-stratego §2.5, §5, §11, §14.7):
every test runs with each program seat in turn (the ``seats`` fixture), gamed-stratego's
``pipes.PipeSeat`` in a SelectorLoop and the daemon's ``process.ProgramSeat`` on the reactor,
which share their dialog (``dialog.ProgramDialog``). What only one of them does is in
test_pipes.py and test_process.py.

Every match has a hard time limit, and after every match no process of either AI's process group
may remain (not even a zombie): /proc is scanned for the group id. Nothing waits on a fixed sleep:
where a test needs an AI to be thinking, the AI waits for the test (``--think-until``).
"""

from __future__ import annotations

import ast
import shlex
import signal
import time
from pathlib import Path

import pytest
import pytest_twisted

from gamed.stratego.referee import Outcome
from gamed.stratego.wire import OVERLONG
from tests.procs import read_pid, wait_gone
from tests.stratego.puppet import PUPPET, PYTHON, group_members, write_script
from tests.stratego.seat_harness import FLOOD, INTROSPECT, UNINTELLIGIBLE, options, peak_growth, reset_peak_rss

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


# --- starting a program (§2.5) ---------------------------------------------------------------------


@pytest.mark.parametrize("how", ["absolute", "relative", "bare"])
@pytest_twisted.ensureDeferred
async def test_the_program_leads_its_own_session_with_argv0_and_environment_as_given(seats, how, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "py").symlink_to(PYTHON)
    first = {"absolute": PYTHON, "relative": "./py", "bare": "py"}[how]
    s, lines, stderr = await seats.stderr_of(f"{first} -S -c {shlex.quote(INTROSPECT)}", options(), {"EXTRA": "1"})
    argv0, leader, session_leader, env, cwd = ast.literal_eval(stderr.decode())
    assert s.valid and s.name == first
    assert lines == [] and s.exit_code == 0 and s.exit_signal is None
    assert argv0 == first, "argv[0] is the path as given, and no PATH search"
    assert leader and session_leader, "the AI leads its own session and process group"
    assert env == ["EXTRA", "HOME", "LANG", "LC_ALL", "PATH"], "the minimal environment and what was added"
    assert cwd == str(tmp_path), "our working directory"
    assert group_members(s.pid) == []


@pytest_twisted.ensureDeferred
async def test_the_program_gets_sigpipe_and_sigxfsz_back_at_their_defaults(seats):
    # Python ignores them, and an ignored signal stays ignored across exec: a shell shows its own.
    _, _, stderr = await seats.stderr_of("/bin/sh -c 'grep SigIgn /proc/$$/status >&2'", options())
    ignored = int(stderr.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1)), hex(ignored)


@pytest_twisted.ensureDeferred
async def test_a_missing_or_non_executable_program_is_invalid_and_bad_setup(seats, tmp_path, puppet):
    record = tmp_path / "blue.txt"
    text = tmp_path / "text"
    text.write_text("#!/bin/sh\n")
    for red in ("/nonexistent/ai", str(text)):
        record.unlink(missing_ok=True)
        r = seats.seat(red, options())
        assert not r.valid and r.pid is None
        result, *_ = await seats.play(r, f"{puppet} --record {record}", options())
        assert result.line == f"{red} RED BAD_SETUP 0 0 0"
        assert result.log[1] == f'Check that executable "{red}" exists and has executable permissions set.'
        assert record.read_text() == repr(f"QUIT {red} RED BAD_SETUP 0 0 0\n") + "\n", "BLUE reads only QUIT"
        assert r.exit_code is None


@pytest_twisted.ensureDeferred
async def test_a_path_with_spaces_runs_and_its_name_is_cut_at_the_first_space(seats, tmp_path):
    red = write_script(tmp_path / "my ai" / "red", PUPPET)
    record = tmp_path / "blue.txt"
    blue = write_script(tmp_path / "blue", PUPPET)
    result, *_ = await seats.play(red, f"{blue} --record {record}", options())
    assert result.line == f"{tmp_path}/my RED SURRENDER 1 148 148"
    assert ast.literal_eval(record.read_text().splitlines()[0]) == f"BLUE {red} 10 10\n", "OPPONENT is the argument as given"


@pytest_twisted.ensureDeferred
async def test_an_ai_that_dies_before_setup_gives_bad_setup(seats, puppet):
    result, red, _, _ = await seats.play(f"{puppet} --die", puppet, options())
    assert result.outcome is Outcome.BAD_SETUP and result.colour == "RED"
    assert (result.turn, result.red_value, result.blue_value) == (0, 0, 148)
    assert red.exit_code == 3


@pytest_twisted.ensureDeferred
async def test_setup_lines_each_have_their_own_timeout(seats, puppet):
    start = time.monotonic()
    result, *_ = await seats.play(f"{puppet} --setup 2", puppet, options(timeout=0.3))
    assert result.line.split()[1:] == ["RED", "BAD_SETUP", "0", "73", "148"], "the 2 rows that came stay placed"
    assert time.monotonic() - start < 10, "not held up by RED's 30 s sleep after its 2 rows"


# --- the dialog -------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_every_line_reaches_each_ai_in_the_order_of_5_3(seats, tmp_path, puppet):
    records = tmp_path / "red.txt", tmp_path / "blue.txt"
    red_ai, blue_ai = f"{puppet} --record {records[0]} '0 3 DOWN' '0 4 DOWN'", f"{puppet} --record {records[1]} '9 6 UP'"
    result, *_ = await seats.play(red_ai, blue_ai, options())
    assert result.line == f"{puppet} BLUE SURRENDER 2 148 148"
    red, blue = ([ast.literal_eval(line) for line in path.read_text().splitlines()] for path in records)
    assert red[:2] == [f"RED {blue_ai} 10 10\n", "START\n"] and len(red) == 2 + 10 + 2 + 10 + 1 + 1
    assert red[12:14] == ["0 3 DOWN OK\n", "9 6 UP OK\n"]
    assert red[24:] == ["0 4 DOWN OK\n", f"QUIT {result.line}\n"]
    assert blue[:2] == [f"BLUE {red_ai} 10 10\n", "0 3 DOWN OK\n"]
    assert blue[12:15] == ["9 6 UP OK\n", "0 4 DOWN OK\n", "##########\n"]
    assert blue[-1] == f"QUIT {result.line}\n"


@pytest_twisted.ensureDeferred
async def test_the_winner_exiting_right_after_quit_gives_the_real_result(seats, puppet):
    # RED moves, BLUE surrenders; RED reads QUIT first and exits at once (§14.7).
    for _ in range(8):
        result, red, blue, _ = await seats.play(f"{puppet} '0 3 DOWN'", puppet, options())
        assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
        assert (red.exit_code, blue.exit_code) == (0, 0)


# --- replies: framing, EOF, timeouts, limits -----------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_replies_are_bytes_as_latin1_framed_on_newline_only(seats, tmp_path, puppet):
    record = tmp_path / "blue.txt"
    result, *_ = await seats.play(f"{puppet} '0\\t3 DOWN 1 \\xff\\r'", f"{puppet} --record {record}", options())
    confirmation = "0\t3 DOWN 1 \xff\r OK"
    assert result.log[-4] == "1 RED: " + confirmation
    assert ast.literal_eval(record.read_text().splitlines()[1]) == confirmation + "\n", "echoed byte for byte"


@pytest_twisted.ensureDeferred
async def test_lines_sent_early_are_kept_for_the_next_ask(seats, puppet):
    result, *_ = await seats.play(f"{puppet} --eager '0 3 DOWN' '0 4 DOWN'", f"{puppet} '9 6 UP'", options())
    assert list(result.log[-6:-3]) == ["1 RED: 0 3 DOWN OK", "1 BLU: 9 6 UP OK", "2 RED: 0 4 DOWN OK"]
    assert result.line == f"{puppet} BLUE SURRENDER 2 148 148"


@pytest_twisted.ensureDeferred
async def test_an_ai_that_exits_mid_game_is_illegal_unintelligible(seats, puppet):
    result, red, _, _ = await seats.play(f"{puppet} '0 3 DOWN' @exit", f"{puppet} '9 6 UP'", options())
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148"
    assert result.reason == UNINTELLIGIBLE and result.log[-3] == "2 RED: "
    assert red.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_bytes_pending_at_eof_form_the_last_line(seats, puppet):
    result, red, _, _ = await seats.play(f"{puppet} '@last:0 3 DOWN'", f"{puppet} '9 6 UP'", options())
    assert result.log[-5] == "1 RED: 0 3 DOWN OK" and result.log[-3] == "2 RED: "
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148" and result.reason == UNINTELLIGIBLE
    assert red.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_eof_ends_the_game_even_with_i(seats, puppet):
    result, *_ = await seats.play(f"{puppet} @exit", puppet, options(allow_illegal=True))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148" and result.reason == UNINTELLIGIBLE


@pytest_twisted.ensureDeferred
async def test_garbage_is_unintelligible(seats, puppet):
    result, *_ = await seats.play(f"{puppet} 'hello world'", puppet, options())
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert list(result.log[-3:-1]) == ["1 RED: hello world", f"Game ends on RED's turn - REASON: {UNINTELLIGIBLE}"]


@pytest_twisted.ensureDeferred
async def test_an_ai_that_sleeps_past_the_timeout_is_illegal_and_killed_after_the_grace(seats, puppet):
    result, red, _, ended = await seats.play(f"{puppet} @sleep", puppet, options(timeout=0.5))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert result.reason == "Response timeout after 0.500000 seconds." and result.log[-3] == "1 RED: "
    assert red.exit_signal == signal.SIGKILL, "it slept through QUIT and was killed"
    assert time.monotonic() - ended < 10, "killed after the grace period, not after its 30 s sleep"


@pytest_twisted.ensureDeferred
async def test_the_whole_line_must_arrive_in_time(seats, puppet):
    # "0 3 " at once, "DOWN\n" after the timeout: a timeout, not a move (§11 row 5, §14.4).
    result, *_ = await seats.play(f"{puppet} @partial:0.8", puppet, options(timeout=0.4))
    assert result.line == f"{puppet} RED ILLEGAL 1 148 148"
    assert result.reason == "Response timeout after 0.400000 seconds." and result.log[-3] == "1 RED: "


@pytest_twisted.ensureDeferred
async def test_without_a_timeout_the_slow_line_is_the_move(seats, puppet):
    result, *_ = await seats.play(f"{puppet} @partial:0.3", puppet, options(timeout=None))
    assert result.log[-4] == "1 RED: 0 3 DOWN OK", "with -T 0 the late line is the move"


@pytest_twisted.ensureDeferred
async def test_a_line_longer_than_max_line_is_unintelligible_and_skipped(seats, puppet):
    long = "0 3 DOWN" + " " * 20  # would parse, but is longer than --max-line
    result, *_ = await seats.play(f"{puppet} '{long}' SURRENDER", f"{puppet} '9 6 UP'", options(max_line=16, allow_illegal=True))
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: SURRENDER OK"]


@pytest_twisted.ensureDeferred
async def test_a_flood_without_newline_is_one_overlong_line_and_memory_stays_bounded(seats, puppet):
    # RED floods 32 MiB without a newline at its first move, then exits; with -i the game goes on
    # (BLUE moves; no pausing) while the rest of that line is read and dropped, and RED's next ask
    # reads the end of its output (EOF). No timeout: nothing here races a clock.
    before = reset_peak_rss()
    result, red, _, _ = await seats.play(
        f"{puppet} @flood-exit:{FLOOD}", f"{puppet} '9 6 UP'", options(allow_illegal=True, pause=False, timeout=None)
    )
    grown = peak_growth(before)
    assert list(result.log[-5:-2]) == ["1 RED: " + OVERLONG, "1 BLU: 9 6 UP OK", "2 RED: "]
    assert result.line == f"{puppet} RED ILLEGAL 2 148 148" and result.reason == UNINTELLIGIBLE
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while reading a 32 MiB line"
    assert red.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_a_flood_of_lines_sent_early_keeps_memory_bounded(seats, puppet):
    # BLUE sends 32 MiB of "garbage" lines right after its setup, while RED thinks; the first is its
    # reply. Early lines are kept, but only up to a budget: then the pipe pushes back.
    before = reset_peak_rss()
    result, _, blue, _ = await seats.play(
        f"{puppet} --think 0.4 '0 3 DOWN'", f"{puppet} --flood-after-setup {FLOOD}", options(pause=False, timeout=None)
    )
    grown = peak_growth(before)
    assert result.line == f"{puppet} BLUE ILLEGAL 1 148 148" and result.reason == UNINTELLIGIBLE
    assert result.log[-3] == "1 BLU: garbage"
    assert grown < 12 * 1024, f"memory grew by {grown} KiB while 32 MiB of lines came early"
    assert blue.exit_signal == signal.SIGKILL


@pytest_twisted.ensureDeferred
async def test_an_ai_that_stops_reading_counts_as_gone_when_its_input_overflows(seats, puppet):
    s = seats.seat(f"{puppet} --setup 4", options(timeout=30))  # its setup, then it sleeps
    assert len(await seats.wait(s.setup("RED", "x"))) == 4
    s.tell("x" * (2 << 20))  # more than 1 MiB waits for it: gone, and the write did not raise
    s.tell("more")
    start = time.monotonic()
    assert await seats.wait(s.move(["." * 10] * 10, lambda r: True)) is None, "judged at its next ask: EOF"
    assert time.monotonic() - start < 10, "at once, not after the 30 s timeout"
    await seats.wait(s.quit("x RED ILLEGAL 1 148 148"))
    assert s.exit_signal == signal.SIGKILL and group_members(s.pid) == []


# --- the end: QUIT, grace, kill, reap (§5.6, §14.7) -------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_an_ai_that_ignores_sigterm_and_sleeps_after_quit_is_killed_after_the_grace(seats, puppet):
    result, red, blue, ended = await seats.play(f"{puppet} --linger SURRENDER", puppet, options(quit_grace=0.3))
    took = time.monotonic() - ended
    assert result.line == f"{puppet} RED SURRENDER 1 148 148"
    assert 0.25 <= took < 10, f"the match ended {took:.2f} s after its result (grace 0.3 s; it lingers 30 s)"
    assert red.exit_signal == signal.SIGKILL and blue.exit_code == 0


@pytest_twisted.ensureDeferred
async def test_kill_ends_the_group_at_once_even_during_the_grace(seats, puppet):
    # What an interrupted manager does (§11 row 17): no grace, even during a quit's grace period.
    s = seats.seat(f"{puppet} --fork --setup 4", options(quit_grace=30))
    assert len(await seats.wait(s.setup("RED", "x"))) == 4
    members = group_members(s.pid)
    quitting = s.quit("x RED SURRENDER 1 148 148")
    start = time.monotonic()
    await seats.wait(s.kill())
    assert seats.fired(quitting) and time.monotonic() - start < 10, "killed at once, not after the 30 s grace"
    assert len(members) == 2 and group_members(s.pid) == [] and s.exit_signal == signal.SIGKILL


@pytest_twisted.ensureDeferred
async def test_an_ai_that_forks_a_sleeping_child_leaves_nothing_behind(seats, tmp_path, puppet):
    group = tmp_path / "group"
    members = []
    result, red, _, ended = await seats.play(
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


# --- pausing (§5.9) -------------------------------------------------------------------------------


@pytest.mark.parametrize("pause", [True, False])
@pytest_twisted.ensureDeferred
async def test_the_idle_ai_is_stopped_while_the_other_thinks(seats, tmp_path, puppet, pause):
    # RED thinks until the test lets it answer (--think-until); meanwhile BLUE's group (BLUE and its
    # child) is sampled from a timer of the seats' own loop. Nothing depends on how fast anything runs.
    go = tmp_path / "go"
    opts = options(pause=pause, max_turns=3, timeout=None)
    red = seats.seat(f"{puppet} --think-until {go} '0 3 DOWN' '0 4 DOWN'", opts)
    blue = seats.seat(f"{puppet} --fork '9 6 UP' '9 5 UP'", opts)
    seen = []
    deadline = []

    def sample() -> None:
        if not (tmp_path / "go.thinking").exists():
            seats.call_later(0.005, sample)
            return
        members = group_members(blue.pid)
        if pause and not all(state == "T" for _, state in members) and time.monotonic() < deadline[-1]:
            seats.call_later(0.005, sample)  # SIGSTOP takes effect when each process next runs
            return
        (tmp_path / "go.thinking").unlink()
        seen.append(members)
        go.touch()

    real_move = red.move

    def move(view, acceptable):
        reply = real_move(view, acceptable)
        deadline.append(time.monotonic() + 10)
        seats.call_later(0, sample)
        return reply

    red.move = move
    result, *_ = await seats.play(red, blue, opts)
    assert result.line == f"{puppet} BLUE DRAW_DEFAULT 3 148 148"
    assert len(seen) == 2 and all(len(members) == 2 for members in seen), "BLUE and its child"
    for members in seen:
        if pause:
            assert all(state == "T" for _, state in members), members
        else:
            assert not any(state == "T" for _, state in members), members


# --- what escapes the group ends with the game -------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_a_child_that_left_the_group_with_setsid_ends_with_the_game(seats, tmp_path, puppet):
    escaped = tmp_path / "escaped"
    result, red, _, _ = await seats.play(
        f"{puppet} --escape {escaped} '0 3 DOWN'", f"{puppet} SURRENDER", options(quit_grace=0.3)
    )
    assert result.line == f"{puppet} BLUE SURRENDER 1 148 148"
    pid = read_pid(escaped)
    assert pid != red.pid
    assert wait_gone([pid]) == [], "the child that left the AI's group with setsid() outlived the game"
