"""``gamed-stratego``, the command line (ucc-stratego §2, §7, §8-§10, §11, §14.6).

Pure argument handling runs in-process through ``main(argv)``; everything that plays a game runs
the CLI as a real subprocess (``python -m gamed.stratego.cli``), with replays (``-f``), people
fed through stdin, and tiny scripted AI programs written to ``tmp_path``.
"""

from __future__ import annotations

import math
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest
from twisted.internet import defer

from gamed.stratego import cli
from gamed.stratego.cli import parse_arguments
from gamed.stratego.referee import BLUE, RED, StrategoReferee
from tests.procs import read_pid, wait_gone
from tests.stratego.puppet import PUPPET, write_script
from tests.stratego.scripted import BLUE_DEFAULT, RED_DEFAULT, ScriptedSeat

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
RANDOM_AI = ROOT / "examples" / "stratego" / "random_ai.py"

# The manual's example game (§14.1).
EXAMPLE_LOG = [
    "./red.py RED SETUP",
    *RED_DEFAULT,
    "./blue.py BLUE SETUP",
    *BLUE_DEFAULT,
    "1 RED: 0 3 DOWN OK",
    "1 BLU: 9 6 UP 3 BOTHDIE 9 9",
    "2 RED: 9 2 DOWN OK",
    "2 BLU: SURRENDER OK",
    "Game ends on BLUE's turn - REASON: This player has surrendered!",
    "./blue.py BLUE SURRENDER 2 146 146",
]
EXAMPLE_RESULT = "./blue.py BLUE SURRENDER 2 146 146"
RED_MOVES = ["0 3 DOWN", "9 2 DOWN"]
BLUE_MOVES = ["9 6 UP 3", "SURRENDER"]


# --- helpers ----------------------------------------------------------------------------------


def call(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``main(argv)`` in-process (argument handling only: nothing here starts the reactor)."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(argv), prog="gamed-stratego")
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def environment(**changes) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env.pop("DISPLAY", None)
    env.update(changes)
    return env


def run(*argv: str, cwd, stdin: bytes | None = None, env=None, timeout: float = 30) -> subprocess.CompletedProcess:
    """The CLI as a subprocess; stdin is /dev/null unless given."""
    return subprocess.run(
        [sys.executable, "-m", "gamed.stratego.cli", *argv],
        cwd=cwd,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        env=env or environment(),
        timeout=timeout,
    )


def write_log(path: pathlib.Path, lines=EXAMPLE_LOG) -> pathlib.Path:
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return path


def scripted_ai(path: pathlib.Path, replies: list[str]) -> pathlib.Path:
    """An AI that sends all its replies at once (the manager keeps early lines, §5.1) and records
    every line it reads in ``<path>.read`` until QUIT."""
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.stdout.write({''.join(r + chr(10) for r in replies)!r})\n"
        "sys.stdout.flush()\n"
        f"with open({str(path) + '.read'!r}, 'w', encoding='latin-1') as record:\n"
        "    for line in sys.stdin:\n"
        "        record.write(line)\n"
        "        record.flush()\n"
        "        if line.startswith('QUIT'):\n"
        "            break\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def read_by(path: pathlib.Path) -> list[str]:
    return path.with_name(path.name + ".read").read_text(encoding="latin-1").splitlines()


@pytest.fixture
def example_ais(tmp_path):
    red = scripted_ai(tmp_path / "red.py", RED_DEFAULT + RED_MOVES)
    blue = scripted_ai(tmp_path / "blue.py", BLUE_DEFAULT + BLUE_MOVES)
    return red, blue


HUMAN_EXAMPLE = "DEFAULT\nDEFAULT\n0 3 DOWN\n9 6 UP 3\n9 2 DOWN\nSURRENDER\n"


# --- §14.6, argument errors (in-process) ---------------------------------------------------------


def test_no_arguments_prints_the_usage_on_stderr_and_exits_0(capsys):
    code, out, err = call(capsys)
    assert (code, out) == (0, "")
    assert err == "Usage: gamed-stratego [options] red blue\n       gamed-stratego --help\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["./a"], "ARGUMENT_ERROR - Did not recieve enough players (did you mean to use the -f switch?)"),
        (["./a", "./b", "./c"], 'ARGUMENT_ERROR - Unexpected argument "./c"...'),
        (["-x", "./a", "./b"], 'ARGUMENT_ERROR - Unrecognised switch "-x"...'),
        (["-px", "./a", "./b"], 'ARGUMENT_ERROR - Unrecognised switch "-px"...'),
        (["-", "./a", "./b"], 'ARGUMENT_ERROR - Unrecognised switch "-"...'),
        (["--foo", "./a", "./b"], 'ARGUMENT_ERROR - Unrecognised switch "--foo"...'),
        (["--pause=1", "./a", "./b"], 'ARGUMENT_ERROR - Unrecognised switch "--pause=1"...'),
        (["./a", "./b", "-m"], "ARGUMENT_ERROR - Expected max_turns value after -m switch!"),
        (["./a", "./b", "-t"], "ARGUMENT_ERROR - Expected stall time value after -t switch!"),
        (["./a", "./b", "-T"], "ARGUMENT_ERROR - Expected timeout value after -T switch!"),
        (["./a", "./b", "-o"], 'ARGUMENT_ERROR - Expected filename or "stdout" after -o switch!'),
        (["-f"], "ARGUMENT_ERROR - Expected filename after -f switch!"),
        (["./a", "./b", "-o="], 'ARGUMENT_ERROR - Expected filename or "stdout" after -o switch!'),
        (["-o", "a.log", "-o", "b.log", "./a", "./b"], "ARGUMENT_ERROR - Expected at most ONE -o switch!"),
        (["-f", "g.log", "-f", "h.log"], "ARGUMENT_ERROR - Expected at most ONE -f switch!"),
        (["-f", "g.log", "./a"], 'ARGUMENT_ERROR - Unexpected argument "./a"...'),
        (["./a", "-f", "g.log"], 'ARGUMENT_ERROR - Unexpected argument "./a"...'),
        (["-I", "imgs", "./a", "./b"], "ERROR: -I switch supplied, but image output is not supported."),
        (["-v", "game.mp4", "./a", "./b"], "ERROR: -v switch supplied, but image output is not supported."),
        (["@network", "./b"], 'ARGUMENT_ERROR - Unsupported player "@network"'),
        (["./a", "@network:10.0.0.1"], 'ARGUMENT_ERROR - Unsupported player "@network:10.0.0.1"'),
        (["@robot", "@human"], 'ARGUMENT_ERROR - Unsupported player "@robot"'),
        (["-m", "12x", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "12x" for -m switch!'),
        (["-m", "1e3", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "1e3" for -m switch!'),
        (["-Tnan", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "nan" for -T switch!'),
        (["-T", "\u0131nf", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "?nf" for -T switch!'),  # dotless i
        (["-t", "1_0", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "1_0" for -t switch!'),
        (["-t", "", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "" for -t switch!'),
        (["--quit-grace=-1", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "-1" for --quit-grace switch!'),
        (["--max-line", "0", "./a", "./b"], 'ARGUMENT_ERROR - Invalid value "0" for --max-line switch!'),
        (["./a", "./b", "--quit-grace"], "ARGUMENT_ERROR - Expected value after --quit-grace switch!"),
    ],
)
def test_argument_errors_go_to_stderr_with_exit_1_14_6(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = call(capsys, *argv)
    assert (code, out, err) == (1, "", message + "\n")
    assert list(tmp_path.iterdir()) == []  # no -o file was created


def test_h_acts_when_reached_and_earlier_errors_come_first(capsys):
    code, out, err = call(capsys, "-x", "-h")
    assert (code, out) == (1, "")
    assert "Unrecognised" in err
    for argv in (["-h", "-x"], ["./a", "-ph"], ["--help"], ["./a", "./b", "-h"]):
        code, out, err = call(capsys, *argv)
        assert (code, err) == (0, "")
        assert out.startswith("NAME\n") and "SYNOPSIS" in out


def test_the_manual_describes_every_switch_the_protocol_and_the_exit_status(capsys):
    code, out, _ = call(capsys, "--help")
    assert code == 0
    assert out == cli.manual_text()
    for word in ("-g", "-p", "-i", "-r", "-b", "-o", "-t", "-T", "-m", "-f", "-h, --help", "--pause", "--no-pause",
                 "--quit-grace", "--max-line", "--clock", "--clock-lines", "@human", "QUIT <result line>", "START", "BOTHDIE", "SURRENDER",
                 "NAME COLOUR OUTCOME TURN RED_VALUE BLUE_VALUE", "DRAW_DEFAULT", "BAD_SETUP", "EXIT STATUS", "128+N"):
        assert word in out, word


# --- §2.3 parsing (values, groups, toggles) --------------------------------------------------------


def test_attached_values_equal_separate_ones():
    assert parse_arguments(["-m1000", "-T=2", "./a", "./b"]) == parse_arguments(["-m", "1000", "-T", "2", "./a", "./b"])
    assert parse_arguments(["-ip", "./a", "./b"]) == parse_arguments(["-i", "-p", "./a", "./b"])
    assert parse_arguments(["-o=game.log", "./a", "./b"]).log_file == "game.log"
    assert parse_arguments(["-o=", "game.log", "./a", "./b"]).log_file == "game.log"  # the beta spelling
    assert parse_arguments(["-o", "-x", "./a", "./b"]).log_file == "-x"
    assert parse_arguments(["-o==x", "./a", "./b"]).log_file == "=x"
    assert parse_arguments(["-ipm", "7", "./a", "./b"]).max_turns == 7
    args = parse_arguments(["-pgirbo", "out.log", "./a", "./b"])
    assert (args.print_board, args.graphics, args.allow_illegal, args.hidden, args.log_file) == (
        True, True, True, {RED, BLUE}, "out.log")


def test_values_of_t_T_and_m():
    def parsed(*argv):
        return parse_arguments([*argv, "./a", "./b"])

    assert parsed().match_options().max_turns == 5000
    assert parsed().match_options().timeout == 2.0
    assert parsed("-T", "0.5").timeout == 0.5
    assert parsed("-T", "1e-1").timeout == 0.1
    for value in ("0", "-1", "inf", "INFINITY", "Inf"):
        assert parsed("-T", value).timeout is None  # no timeout
    assert parsed("-t", "0.25").stall == 0.25
    assert parsed("-t", "0").stall == 0
    for value in ("-1", "inf", "-inf"):
        assert math.isinf(parsed("-t", value).stall)  # wait for the operator
    assert parsed("-m", "+12").max_turns == 12
    assert parsed("-m", "0").max_turns == 0
    for value in ("-1", "inf"):
        assert parsed("-m", value).max_turns is None  # no limit


def test_toggles_and_idempotent_hiding_11_14():
    assert parse_arguments(["-p", "./a", "./b"]).print_board
    assert not parse_arguments(["-p", "-p", "./a", "./b"]).print_board
    assert not parse_arguments(["-pp", "./a", "./b"]).print_board
    assert parse_arguments(["-r", "-r", "./a", "./b"]).hidden == {RED}
    assert parse_arguments(["-bb", "./a", "./b"]).hidden == {BLUE}
    assert parse_arguments(["-rb", "./a", "./b"]).hidden == {RED, BLUE}


def test_long_options_and_the_double_dash():
    args = parse_arguments(["--no-pause", "--quit-grace=0.5", "--max-line", "100", "./a", "./b"])
    o = args.match_options()
    assert (o.pause, o.quit_grace, o.max_line) == (False, 0.5, 100)
    assert parse_arguments(["--no-pause", "--pause", "./a", "./b"]).pause is True
    assert parse_arguments(["--quit-grace", "2", "./a", "./b"]).quit_grace == 2.0
    assert parse_arguments(["--", "-x", "-y"]).players == ["-x", "-y"]
    assert parse_arguments(["-i", "--", "@human", "--foo"]).players == ["@human", "--foo"]


def test_o_and_f_in_either_order_11_11():
    for argv in (["-o", "new.log", "-f", "g.log"], ["-f", "g.log", "-o", "new.log"]):
        args = parse_arguments(argv)
        assert (args.log_file, args.input_file, args.players) == ("new.log", "g.log", [])


def test_human_players_are_accepted_in_both_spellings():
    assert parse_arguments(["@human", "human"]).players == ["@human", "human"]


def test_prog_name_is_the_invoked_name():
    assert cli.prog_name("/usr/local/judge/manager/stratego") == "stratego"
    assert cli.prog_name("/work/.venv/bin/gamed-stratego") == "gamed-stratego"
    assert cli.prog_name("/work/gamed/stratego/cli.py") == "gamed-stratego"  # python -m
    assert cli.prog_name("") == "gamed-stratego"


def test_unopenable_o_and_unreadable_f_are_argument_errors_11_12(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_log(tmp_path / "g.log")
    code, out, err = call(capsys, "-o", str(tmp_path / "no" / "such" / "dir.log"), "-f", "g.log")
    assert (code, out) == (1, "")
    assert err == f'ARGUMENT_ERROR - Could not open log file "{tmp_path / "no" / "such" / "dir.log"}"\n'
    code, out, err = call(capsys, "-o", ".", "-f", "g.log")
    assert (code, out, err) == (1, "", 'ARGUMENT_ERROR - Could not open log file "."\n')
    code, out, err = call(capsys, "-f", "missing.log")
    assert (code, out, err) == (1, "", 'ARGUMENT_ERROR - Could not open input file "missing.log"\n')
    code, out, err = call(capsys, "-o", "new.log", "-f", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == f'ARGUMENT_ERROR - Could not open input file "{tmp_path}"\n'
    assert not (tmp_path / "new.log").exists()  # nothing is truncated when the input is bad


# --- rendering (-p, -r, -b) --------------------------------------------------------------------------


def _referee_after_the_first_move():
    red = ScriptedSeat("./red.py", RED_DEFAULT, ["0 3 DOWN 3"])
    blue = ScriptedSeat("./blue.py", BLUE_DEFAULT, [])
    pictures = []
    referee = StrategoReferee(red, blue, on_board=lambda ref, final: pictures.append((final, ref.turn)))
    defer.ensureDeferred(referee.run())
    return referee, pictures


def test_hidden_pieces_show_as_hash_except_those_revealed_by_combat():
    referee, pictures = _referee_after_the_first_move()  # 0 3 DOWN 3: scouts BOTHDIE, BLUE EOF
    assert pictures == [(False, 1), (False, 1), (True, 1)]
    referee.revealed.add(referee.board.layout.index(5, 6))
    hidden_blue = cli.render_board(referee, False, {BLUE})
    plain = cli.render_board(referee, False)
    assert hidden_blue.startswith("\x1b[H\x1b[2J1 BLUE to move")
    rows = [line[3:] for line in hidden_blue.splitlines()[2:]]
    assert "\x1b[1;31mF" in rows[0]  # RED shown
    assert rows[6].count("#") == 8  # BLUE's row 6 hidden: the scout died, (5,6) was revealed
    assert "\x1b[1;34m6" in rows[6]
    assert "#" not in plain
    final = cli.render_board(referee, True, {RED, BLUE})
    assert final.startswith("\x1b[H\x1b[2J1 Final State") and "#" not in final


# --- games in a subprocess ---------------------------------------------------------------------------


def test_f_replays_a_log_and_o_writes_it_again_in_either_order_14_6(tmp_path):
    write_log(tmp_path / "g.log")
    for argv in (["-o", "new.log", "-f", "g.log"], ["-f", "g.log", "-o", "new.log"]):
        done = run(*argv, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, (EXAMPLE_RESULT + "\n").encode(), b"")
        assert (tmp_path / "new.log").read_bytes() == (tmp_path / "g.log").read_bytes()


def test_o_stdout_puts_the_log_on_stdout_and_the_result_line_once_last_11_3(tmp_path):
    write_log(tmp_path / "g.log")
    done = run("-o", "stdout", "-f", "g.log", cwd=tmp_path)
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert lines == EXAMPLE_LOG
    assert lines.count(EXAMPLE_RESULT) == 1


def test_h_prints_the_manual_from_an_empty_directory_without_a_pager_11_10(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run("-h", cwd=empty, env=environment(PATH=str(empty), TERM="dumb"))
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode() == cli.manual_text()
    assert list(empty.iterdir()) == []


def test_the_program_works_under_the_name_stratego(tmp_path):
    wrapper = tmp_path / "stratego"
    wrapper.write_text(f"#!{sys.executable}\nfrom gamed.stratego.cli import main\nmain()\n")
    wrapper.chmod(0o755)
    programs = [wrapper]
    installed = pathlib.Path(sys.executable).parent / "gamed-stratego"
    if installed.exists():  # the console script, symlinked as the tournament runner names it
        (tmp_path / "link").mkdir()
        (tmp_path / "link" / "stratego").symlink_to(installed)
        programs.append(tmp_path / "link" / "stratego")
    write_log(tmp_path / "g.log")
    for program in programs:
        done = subprocess.run([str(program)], capture_output=True, env=environment(), timeout=30)
        assert done.returncode == 0
        assert done.stderr == b"Usage: stratego [options] red blue\n       stratego --help\n"
        done = subprocess.run([str(program), "-f", "g.log"], cwd=tmp_path, capture_output=True, env=environment(), timeout=30)
        assert (done.returncode, done.stdout) == (0, (EXAMPLE_RESULT + "\n").encode())


def test_p_prints_the_board_before_each_half_move_and_at_the_end(tmp_path):
    write_log(tmp_path / "g.log")
    done = run("-p", "-r", "-r", "-f", "g.log", cwd=tmp_path)
    assert done.returncode == 0
    out = done.stdout.decode()
    assert out.endswith("\n" + EXAMPLE_RESULT + "\n")
    pictures = out.split("\x1b[H\x1b[2J")[1:]
    assert [p.splitlines()[0].split("    ")[0] for p in pictures] == [
        "1 RED to move (./red.py)",
        "1 BLUE to move (./blue.py)",
        "2 RED to move (./red.py)",
        "2 BLUE to move (./blue.py)",
        "2 Final State",
    ]
    first_rows = pictures[0].splitlines()[2:12]
    assert "F" not in first_rows[0] and first_rows[0].count("#") == 10  # RED hidden (-r -r = -r)
    assert "\x1b[1;34mF" in first_rows[9]  # BLUE shown
    assert "\x1b[1;31mF" in pictures[-1]  # the final state shows everything


def test_g_without_a_display_draws_on_stderr_and_keeps_stdout_to_the_result_line(tmp_path):
    write_log(tmp_path / "g.log")
    done = run("-g", "-f", "g.log", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, (EXAMPLE_RESULT + "\n").encode())
    err = done.stderr.decode()
    assert err.startswith("WARNING: -g:")
    assert "2 Final State" in err


def test_t_stalls_between_half_moves_without_blocking(tmp_path):
    write_log(tmp_path / "g.log")
    started = time.monotonic()
    done = run("-t", "0.1", "-f", "g.log", cwd=tmp_path)
    assert time.monotonic() - started >= 0.3  # three half-moves did not end the game
    assert (done.returncode, done.stdout, done.stderr) == (0, (EXAMPLE_RESULT + "\n").encode(), b"")


def test_t_inf_waits_for_enter_and_quit_exits_0_without_a_result_line(tmp_path):
    write_log(tmp_path / "g.log")
    done = run("-t", "inf", "-o", "q.log", "-f", "g.log", cwd=tmp_path, stdin=b"\nQUIT\n")
    assert (done.returncode, done.stdout) == (0, b"")
    prompt = "Waiting for user to press enter... (type QUIT to exit)\n"
    assert done.stderr.decode() == prompt * 2 + "Ordered to quit... exiting...\n"
    assert (tmp_path / "q.log").read_text().splitlines() == EXAMPLE_LOG[:12]


def test_t_negative_goes_on_when_stdin_ends(tmp_path):
    write_log(tmp_path / "g.log")
    done = run("-t", "-1", "-f", "g.log", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, (EXAMPLE_RESULT + "\n").encode())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_match_with_128_plus_the_signal_11_17(tmp_path, signum):
    write_log(tmp_path / "g.log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gamed.stratego.cli", "-t", "60", "-o", "s.log", "-f", "g.log"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(),
        preexec_fn=_default_signals,
    )
    _wait_for(lambda: (tmp_path / "s.log").exists() and "1 RED:" in (tmp_path / "s.log").read_text())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=10)
    assert (proc.returncode, out) == (128 + signum, b"")
    assert "Game ends" not in (tmp_path / "s.log").read_text()


def test_what_the_ais_left_behind_ends_with_the_match(tmp_path):
    # RED's grandchild leaves its group with setsid() and is orphaned before the game starts: only
    # gamed-stratego, its subreaper, still knows it, and ends it when the match is over.
    puppet = write_script(tmp_path / "puppet", PUPPET)
    escaped = tmp_path / "escaped"
    done = run(f"{puppet} --escape-orphan {escaped} '0 3 DOWN'", f"{puppet} SURRENDER", cwd=tmp_path)
    assert done.stdout.decode().endswith("BLUE SURRENDER 1 148 148\n"), done
    assert wait_gone([read_pid(escaped)]) == [], "an AI's orphan outlived the match"


def test_the_ais_die_with_a_sigkilled_gamed_stratego(tmp_path):
    puppet = write_script(tmp_path / "puppet", PUPPET)
    red, blue = tmp_path / "red", tmp_path / "blue"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gamed.stratego.cli", f"{puppet} --group {red} @sleep", f"{puppet} --group {blue} @sleep"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment(),
    )
    try:
        pids = [read_pid(red), read_pid(blue)]
        proc.kill()
        proc.wait(timeout=10)
        assert wait_gone(pids) == [], "an AI outlived the SIGKILLed gamed-stratego"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _default_signals() -> None:
    """In the child: SIGINT as a terminal would deliver it, even when the test run itself was
    started in the background with SIGINT ignored (the CLI keeps an inherited SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# --- people on the console (§5.8) ----------------------------------------------------------------------


def test_two_people_play_the_example_game_through_stdin(tmp_path):
    done = run("-o", "h.log", "@human", "human", cwd=tmp_path, stdin=HUMAN_EXAMPLE.encode())
    assert (done.returncode, done.stdout) == (0, b"human BLUE SURRENDER 2 146 146\n")
    err = done.stderr.decode()
    assert "RED human 10 10" in err and "BLUE @human 10 10" in err
    assert "START\n" in err
    assert err.count("\n0 3 DOWN OK\n") == 1  # one console: a confirmation is shown once
    assert " 0 FB8sB479B8\n" in err and " 6 967B669999\n" in err  # each sees their own view
    assert "QUIT human BLUE SURRENDER 2 146 146" in err
    log = (tmp_path / "h.log").read_text().splitlines()
    assert log[0] == "human RED SETUP" and log[-1] == "human BLUE SURRENDER 2 146 146"
    replay = run("-f", "h.log", cwd=tmp_path)  # a log written by gamed replays to its result
    assert replay.stdout == b"human BLUE SURRENDER 2 146 146\n"


def test_setups_as_four_words_and_an_invalid_setup_asked_again(tmp_path):
    typed = (
        "FB8sB479B8 BB31555583\n6724898974   967B669999\n"  # RED: four words over two lines
        "967B669999 6724898974 BB31555583 FB8sB479B9\n"  # BLUE: one scout too many
        "FB8sB479B8 BB31555583 6724898974 967B669999\n"  # BLUE's rows in the wrong zone order: still 40 pieces
        "0 3 DOWN\nSURRENDER\n"
    )
    done = run("-o", "h.log", "@human", "@human", cwd=tmp_path, stdin=typed.encode())
    assert (done.returncode, done.stdout) == (0, b"human BLUE SURRENDER 1 148 148\n")
    err = done.stderr.decode()
    assert err.count("Invalid setup: 967B669999 6724898974 BB31555583 FB8sB479B9 <- Please try again!") == 1
    log = (tmp_path / "h.log").read_text().splitlines()
    assert log[6:10] == ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]


def test_a_bad_move_is_asked_again_without_i(tmp_path):
    typed = "DEFAULT\nDEFAULT\n0 4 DOWN\n0 3 down\n0 3 DOWN\nSURRENDER\n"
    done = run("@human", "@human", cwd=tmp_path, stdin=typed.encode())
    assert done.stdout == b"human BLUE SURRENDER 1 148 148\n"
    err = done.stderr.decode()
    assert "Bad move: '0 4 DOWN' <- Please try again!" in err
    assert "Bad move: '0 3 down' <- Please try again!" in err


def test_with_i_a_persons_illegal_move_is_played_as_illegal(tmp_path):
    typed = "DEFAULT\nDEFAULT\n0 4 DOWN\nSURRENDER\n"
    done = run("-i", "-o", "h.log", "@human", "@human", cwd=tmp_path, stdin=typed.encode())
    assert done.stdout == b"human BLUE SURRENDER 1 148 148\n"
    assert "1 RED: 0 4 DOWN ILLEGAL" in (tmp_path / "h.log").read_text().splitlines()


def test_the_end_of_stdin_is_an_illegal_reply_for_a_person(tmp_path):
    done = run("@human", "@human", cwd=tmp_path, stdin=b"DEFAULT\nDEFAULT\n")
    assert (done.returncode, done.stdout) == (0, b"human RED ILLEGAL 1 148 148\n")
    done = run("@human", "@human", cwd=tmp_path, stdin=b"DEFAULT\n")
    assert done.stdout == b"human BLUE BAD_SETUP 0 148 0\n"


# --- AI programs ---------------------------------------------------------------------------------------


def test_the_manuals_example_game_with_ai_programs_14_1(tmp_path, example_ais):
    red, blue = example_ais
    done = run("-o", "game.log", "./red.py", "./blue.py", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, (EXAMPLE_RESULT + "\n").encode(), b"")
    assert (tmp_path / "game.log").read_text().splitlines() == EXAMPLE_LOG
    assert read_by(red)[:2] == ["RED ./blue.py 10 10", "START"]
    assert read_by(red)[12:14] == ["0 3 DOWN OK", "9 6 UP 3 BOTHDIE 9 9"]
    assert read_by(red)[-2:] == ["9 2 DOWN OK", "QUIT " + EXAMPLE_RESULT]
    assert len(read_by(red)) == 2 + 10 + 2 + 10 + 2
    assert read_by(blue)[:2] == ["BLUE ./red.py 10 10", "0 3 DOWN OK"]
    assert read_by(blue)[-2:] == ["FB8sB479B8", "QUIT " + EXAMPLE_RESULT]
    replay = run("-f", "game.log", cwd=tmp_path)
    assert replay.stdout == (EXAMPLE_RESULT + "\n").encode()


def test_attached_values_and_grouped_switches_play_the_same_game(tmp_path, example_ais):
    a = run("-m1000", "-T=2", "./red.py", "./blue.py", cwd=tmp_path)
    b = run("-m", "1000", "-T", "0", "./red.py", "./blue.py", cwd=tmp_path)  # -T 0: no timeout
    assert a.stdout == b.stdout == (EXAMPLE_RESULT + "\n").encode()
    assert a.returncode == b.returncode == 0


def test_ip_tolerates_an_illegal_move_and_prints_the_board(tmp_path):
    scripted_ai(tmp_path / "red.py", RED_DEFAULT + ["0 4 DOWN", "0 3 DOWN"])
    scripted_ai(tmp_path / "blue.py", BLUE_DEFAULT + ["9 6 UP", "SURRENDER"])
    done = run("-ip", "./red.py", "./blue.py", cwd=tmp_path)
    assert done.returncode == 0
    out = done.stdout.decode()
    assert out.endswith("\n./blue.py BLUE SURRENDER 2 148 148\n")
    assert "2 Final State" in out
    red_read = read_by(tmp_path / "red.py")
    assert "0 4 DOWN ILLEGAL" in red_read


def test_m_2_ends_the_example_in_a_default_draw(tmp_path, example_ais):
    done = run("-m", "2", "-o", "game.log", "./red.py", "./blue.py", cwd=tmp_path)
    assert done.stdout == b"./blue.py BLUE DRAW_DEFAULT 2 146 146\n"
    assert read_by(example_ais[0])[-1] == "QUIT ./blue.py BLUE DRAW_DEFAULT 2 146 146"
    replay = run("-m", "2", "-f", "game.log", cwd=tmp_path)
    assert replay.stdout == done.stdout


def test_a_missing_program_is_bad_setup_with_exit_0_14_5(tmp_path, example_ais):
    done = run("-o", "bad.log", "/nonexistent/ai", "./blue.py", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, b"/nonexistent/ai RED BAD_SETUP 0 0 0\n")
    assert read_by(example_ais[1]) == ["QUIT /nonexistent/ai RED BAD_SETUP 0 0 0"]
    assert (tmp_path / "bad.log").read_text().splitlines()[:2] == [
        "Controller for Player RED is invalid!",
        'Check that executable "/nonexistent/ai" exists and has executable permissions set.',
    ]
    replay = run("-f", "bad.log", cwd=tmp_path)
    assert replay.stdout == done.stdout


def test_an_ai_against_a_person_gets_the_human_argument_as_opponent_14_2(tmp_path, example_ais):
    done = run("./red.py", "@human", cwd=tmp_path, stdin=b"DEFAULT\n9 6 UP 3\nSURRENDER\n")
    assert done.stdout == b"human BLUE SURRENDER 2 146 146\n"
    assert read_by(example_ais[0])[0] == "RED @human 10 10"
    assert "BLUE ./red.py 10 10" in done.stderr.decode()


@pytest.mark.skipif(not RANDOM_AI.exists(), reason="examples/stratego/random_ai.py is not there")
def test_o_stdout_with_real_ais_and_stdin_at_dev_null_14_7(tmp_path):
    shutil.copy(RANDOM_AI, tmp_path / "random_ai.py")
    done = run("-m", "40", "-o", "stdout", "./random_ai.py 1", "./random_ai.py 2", cwd=tmp_path)
    assert done.returncode == 0
    lines = done.stdout.decode("latin-1").splitlines()
    result = lines[-1]
    assert len(result.split(" ")) == 6
    assert lines.count(result) == 1
    assert lines[-2].startswith("Game ends ")
    write_log(tmp_path / "r.log", lines)
    assert run("-m", "40", "-f", "r.log", cwd=tmp_path).stdout.decode() == result + "\n"


def test_a_game_imports_neither_twisted_nor_zope_nor_attrs(tmp_path, example_ais):
    # The tournament script starts the manager once per game: its start-up is most of a short
    # game's cost (docs/performance.md), and these three were most of the start-up.
    for argv in (["-o", "game.log", "./red.py", "./blue.py"], ["-f", "game.log"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "gamed.stratego.cli", *argv],
            cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, env=environment(), timeout=30,
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (0, (EXAMPLE_RESULT + "\n").encode())
        imported = [line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")]
        assert "gamed.stratego.referee" in imported
        assert [m for m in imported if m.split(".")[0] in ("twisted", "zope", "attr", "attrs")] == []


def test_sigint_kills_the_ais_and_exits_130(tmp_path):
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    sleeper.chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gamed.stratego.cli", "-T", "0", "--quit-grace=0.2", "./sleeper.py", "./sleeper.py"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(),
        preexec_fn=_default_signals,
    )
    _wait_for(lambda: len(_sleepers(tmp_path)) == 2)  # both started: the match is on
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=10)
    assert (proc.returncode, out) == (130, b"")
    assert _sleepers(tmp_path) == []


def _sleepers(tmp_path) -> list[int]:
    """Live AI processes running ``tmp_path``'s sleeper (by their working directory)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().split(") ")[1].split()[0]
        except OSError:
            continue
        if cwd == str(tmp_path) and b"./sleeper.py" in cmdline[:3] and state != "Z" and b"gamed.stratego.cli" not in cmdline:
            found.append(int(entry.name))
    return found
