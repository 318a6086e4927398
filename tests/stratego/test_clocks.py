"""gamed-stratego's clocks (--clock, --clock-lines), with real AI subprocesses: a program that
reads its bank from the CLOCK line and spends nearly all of it plays on; one 50 ms over its bank
loses (ILLEGAL, "Ran out of time (...)"); without --clock-lines the dialog is the original one."""

from __future__ import annotations

import sys

import pytest

from tests.stratego.test_cli import run

pytestmark = pytest.mark.integration

# An AI that plays PLAN: items "MOVE|SPEND" (``_`` for the blanks of MOVE), SPEND "budget-0.3", "budget+0.05" or seconds. The
# budget is the first field of the last CLOCK line; every line it reads is kept in <argv0>.read.
CLOCKED_AI = r'''
import sys, time
RED = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]
BLUE = ["967B669999", "6724898974", "BB31555583", "FB8sB479B8"]
plan = [item.replace("_", " ").split("|") for item in sys.argv[1:]]
seen = open(sys.argv[0] + ".read", "w")

def read():
    line = sys.stdin.readline()
    seen.write(line)
    seen.flush()
    if not line or line.startswith("QUIT"):
        sys.exit(0)
    return line.rstrip("\n")

colour = read().split()[0]
sys.stdout.write("\n".join(RED if colour == "RED" else BLUE) + "\n")
sys.stdout.flush()
budget = None
while True:
    line = read()
    if line.startswith("CLOCK "):
        budget = float(line.split()[1])
        for _ in range(10):
            read()
    elif len(line) == 10 and line[0] in "#.+" + "BFS123456789s" and " " not in line:
        for _ in range(9):  # a view without a CLOCK line (no --clock-lines)
            read()
    else:
        continue
    move, spend = plan.pop(0) if plan else ("SURRENDER", "0")
    if spend.startswith("budget"):
        wait = budget + float(spend[len("budget"):])
    else:
        wait = float(spend)
    time.sleep(max(0.0, wait))
    sys.stdout.write(move + "\n")
    sys.stdout.flush()
'''


def ai(tmp_path, name, *plan):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{CLOCKED_AI}")
    path.chmod(0o755)
    return f"./{name} " + " ".join(plan) if plan else f"./{name}"


def test_a_program_that_spends_all_but_300_ms_of_its_bank_plays_on(tmp_path):
    red = ai(tmp_path, "red.py", "0_3_DOWN|budget-0.3", "9_2_DOWN|0")
    blue = ai(tmp_path, "blue.py", "9_6_UP_3|0", "SURRENDER|0")
    done = run("--clock", "2s+50ms", "--clock-lines", "-o", "g.log", red, blue, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split()[1:3] == ["BLUE", "SURRENDER"], done.stdout
    clocks = [line for line in (tmp_path / "red.py.read").read_text().splitlines() if line.startswith("CLOCK ")]
    assert clocks[0] == "CLOCK 2.000 RED=2.000 BLUE=2.000", clocks
    _, budget, red_bank, blue_bank = clocks[1].split()
    assert 0.3 <= float(red_bank.split("=")[1]) <= 0.45, clocks[1]  # ~0.3 s left + 50 ms
    assert float(budget) == float(red_bank.split("=")[1])


def test_a_program_50_ms_over_its_bank_loses_on_time(tmp_path):
    red = ai(tmp_path, "red.py", "0_3_DOWN|budget+0.05")
    blue = ai(tmp_path, "blue.py")
    done = run("--clock", "1s+0", "--clock-lines", "-o", "g.log", red, blue, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("./red.py RED ILLEGAL 1 "), done.stdout
    log = (tmp_path / "g.log").read_text()
    assert "Game ends on RED's turn - REASON: Ran out of time (1s+0)." in log


def test_without_clock_lines_the_dialog_is_the_original_one_and_the_bank_still_runs(tmp_path):
    red = ai(tmp_path, "red.py", "0_3_DOWN|1.2")
    blue = ai(tmp_path, "blue.py")
    done = run("--clock", "1s+0", "-o", "g.log", red, blue, cwd=tmp_path)
    assert done.stdout.decode().startswith("./red.py RED ILLEGAL 1 "), done.stdout
    assert not any(line.startswith("CLOCK") for line in (tmp_path / "red.py.read").read_text().splitlines())


def test_a_malformed_clock_is_an_argument_error(tmp_path):
    done = run("--clock", "5x", "./a", "./b", cwd=tmp_path)
    assert done.returncode == 1
    assert b'Invalid time control "5x" for --clock' in done.stderr


def test_the_daemons_stratego_section_runs_its_matches_on_the_clock():
    from gamed.config import StrategoConfig
    from gamed.stratego.service import match_options
    from gamed.timecontrol import parse

    options = match_options(StrategoConfig(clock=parse("5m+2s,move=10s"), clock_lines=True))
    assert (options.clock, options.clock_lines, options.timeout) == (parse("5m+2s,move=10s"), True, 10.0)
    plain = match_options(StrategoConfig(timeout=2.0))
    assert (plain.clock, plain.clock_lines, plain.timeout) == (None, False, 2.0)
