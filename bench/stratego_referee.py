"""Stratego referee benchmark: the gamed-stratego command as the tournament script runs it, one
process per game, side by side with the original UCC manager; a replay of the 2012 logs; and,
with --daemon, the referee inside the daemon's process.

1. The command (issue 12). Every game is a new process: ``gamed-stratego [switches] AI AI`` (by
   default the console script .venv/bin/gamed-stratego, which `make` installs from the work tree;
   --command another), both AIs examples/stratego/fast_ai given as bare paths, as the tournament
   script gives them, each game with its own seed through FAST_AI_SEED (fast_ai plays RED and BLUE
   from different streams of it), so every command plays the same games. With --original PATH (an
   original UCC ``stratego`` binary) every run is made with both, one after the other.
   a. Fixed cost: --fixed-runs runs of ``-m 1 -o LOG -T 2`` (the setups, START, no move, QUIT):
      wall time from exec to exit.
   b. Games: --games games of ``-m 1000 -o LOG -T 2``: wall time from exec to the first move
      and to exit, the command's own CPU time (its children excluded) and its half-moves (the
      log's move lines). fast_ai, with FAST_AI_REPORT, writes to stderr when it first reads a
      board (RED's first query: the first move) and when it reads QUIT, each time with its
      parent's (the manager's) CPU time so far; own CPU per half-move is the manager's CPU between
      the two, summed over the games, divided by their half-moves (the median per game is printed
      too). A process's own CPU is read from /proc (at exit while it is a zombie): its schedstat
      (exact, its main thread), or for a process whose threads used more, the utime+stime of them
      all (10 ms ticks). For comparison: each game's CPU from exec to exit less the fixed runs'
      median, and the slope of CPU against half-moves over the games.
   c. A round: the same games in the tournament script's pattern, each through /bin/sh as
      ``CMD -m 1000 -o LOG -T 2 "AI" "AI" 2>> LOG.stderr``, one after the other: the round's wall time.
   d. Verdicts: every game's log replayed with ``-m 1000 -f LOG`` gives its result line; with
      --original, every game's result line and log equal the original's.
   Targets: fixed cost <= 100 ms wall (exec to the first move, and exec to exit of a game that
   ends at once, medians) and own CPU per half-move <= the original's (measured with --original,
   else the issue's figures: 8.5 ms fixed cost, 0.12 ms per half-move).
2. Replay. The 187 UCC 2012 competition logs that end with a result line
   (tests/data/ucc-2012-logs.tar.xz, as tests/stratego/test_replay_corpus.py) are replayed in this
   process with parse_log + replay_seats and MatchOptions(max_turns=1000, timeout=None): the
   referee and the rules without any process or I/O. --replay-rounds rounds; reported: referee CPU
   per half-move (median round, and the fastest), parse_log's cost per log, and whether every log
   replays to its result line.
3. --daemon: the referee as the daemon runs it, in this process: StrategoReferee with two
   ProgramSeats on the real Twisted reactor, MatchOptions(max_turns=1000, timeout=2.0, pause=True)
   (--no-pause: pause=False), --daemon-games games (each side fast_ai SEED under its reaper, in its
   own process group) one at a time, then --parallel at a time, then cut at 150 turns (--no-cut
   skips it). Reported per phase: games/s, half-moves per game, referee CPU per half-move
   (getrusage(RUSAGE_SELF)), the AIs' CPU, wall time per game p50/p99/max, the split of a game into
   spawn, setup, play and quit, and the targets of that part (<= 0.2 ms of referee CPU per
   half-move, a game of ~150 turns in <= 100 ms).

The machine's other load (CPU time of all CPUs from /proc/stat, minus this process and its
children) is printed with every phase, as the other benchmarks do. Exit status 0 whatever the
figures; 2 when the AI cannot be built, a command cannot be run or a game does not end.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import hashlib
import os
import pstats
import random
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the work tree's gamed, not the venv's copy
sys.path.insert(1, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402 - the shared benchmark helpers
    ROOT,
    BenchError,
    cpu_busy,
    cpu_jiffies,
    exit_on_sigterm,
    finish,
    fmt,
    guarded,
    machine,
    note_code_change,
    pct,
    perf,
    print_machine,
    print_targets,
    set_priority,
    wait_quiet,
    work_tree_version,
    warn_if_disturbed,
)
from twisted.internet import defer  # noqa: E402

from gamed.stratego.process import ProgramSeat  # noqa: E402
from gamed.stratego.referee import MatchOptions, StrategoReferee, parse_log  # noqa: E402
from gamed.stratego.referee import replay_seats  # noqa: E402
from tests.stratego.corpus import ARCHIVE, logs, with_result  # noqa: E402 - the competition logs, in the repo

AI_DIR = ROOT / "examples" / "stratego"
AI = AI_DIR / "fast_ai"
CORPUS_SIZE = 187
cpu = time.process_time  # this process only (CLOCK_PROCESS_CPUTIME_ID): children excluded

TARGETS = {
    "referee_us_per_half_move": 200.0,  # <= 0.2 ms of referee time per half-move
    "game_150_ms": 100.0,  # a game of ~150 turns in <= 100 ms wall time
}
HALF_MOVES_150 = 300
CUT_TURNS = 150  # the cut phase: the same games, ended (DRAW_DEFAULT) after this many full turns
NEAR_150 = (120, 180)  # turns of the games reported directly as "~150 turns"


LIVE: set = set()  # ProgramSeats of the games under way: killed on the way out (Ctrl-C, errors)


# --- the AI ------------------------------------------------------------------------------------


def build_ai() -> str:
    """Build examples/stratego/fast_ai when it is missing or older than its source (`make examples`)."""
    source = AI_DIR / "fast_ai.c"
    if not AI.exists() or (source.exists() and AI.stat().st_mtime < source.stat().st_mtime):
        print("building examples/stratego/fast_ai (make examples) ...", flush=True)
        try:
            out = subprocess.run(
                ["make", "--no-print-directory", "-C", str(AI_DIR)], capture_output=True, text=True, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BenchError(f"cannot build {AI}: {e}; run `make examples`") from None
        if out.returncode != 0:
            raise BenchError(f"cannot build {AI} (make exited {out.returncode}):\n{out.stderr[-1000:]}")
    if not os.access(AI, os.X_OK):
        raise BenchError(f"{AI} is not executable; run `make examples`")
    return hashlib.sha1(AI.read_bytes()).hexdigest()[:10]


def game_seeds(seed: int, games: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(1, 2**32), rng.randrange(1, 2**32)) for _ in range(games)]


# --- the command, one process per game (issue 12) -------------------------------------------------

ORIGINAL_FIGURES = {"fixed_ms": 8.5, "cpu_us_per_half_move": 120.0}  # the issue's, for the original
ISSUE_BEFORE = {"fixed_ms": 657.0, "cpu_us_per_half_move": 240.0}  # the issue's, for gamed-stratego then
FIXED_TARGET_MS = 100.0
TICK = os.sysconf("SC_CLK_TCK")
_MOVE_LINE = re.compile(rb"^\d+ (?:RED|BLU): ", re.M)
_REPORT = re.compile(rb"^fast_ai: (first board|quit) (\d+\.\d+) manager (-?\d+) (-?\d+)$", re.M)
LIVE_COMMANDS: set = set()  # manager processes under way: their groups are killed on the way out


def own_cpu(pid: int) -> tuple[float, str]:
    """A zombie's own CPU time (children excluded) and how it was read: its schedstat (exact, the
    main thread only), or, when its threads used more than that, the utime+stime of all of them
    (whole clock ticks)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    ticks = (int(fields[11]) + int(fields[12])) / TICK
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            exact = int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return ticks, "ticks"
    if ticks > exact + 2.0 / TICK:  # other threads ran: only the ticks count them all
        return ticks, "ticks"
    return exact, "schedstat"


def run_manager(argv: list[str], env: dict, workdir: Path, shell: bool = False, timeout: float = 120.0) -> dict:
    """Run one manager process to its end: exec -> exit wall time, its own CPU, its stdout and
    stderr, and (from fast_ai's report) exec -> its first query of a move."""
    out_path, err_path = workdir / "stdout", workdir / "stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv if not shell else ["/bin/sh", "-c", argv],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=workdir, start_new_session=True,
        )  # fmt: skip
        LIVE_COMMANDS.add(proc.pid)
        deadline = t0 + timeout
        while True:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"{argv if shell else shlex.join(argv)} did not end within {timeout:g} s")
            time.sleep(0.0005)
        t1 = time.monotonic()
        cpu, how = own_cpu(proc.pid)
        proc.wait()
        LIVE_COMMANDS.discard(proc.pid)
    stdout, stderr = out_path.read_bytes(), err_path.read_bytes()
    reports: dict[bytes, list[tuple[float, int, int]]] = {b"first board": [], b"quit": []}
    for m in _REPORT.finditer(stderr):
        reports[m.group(1)].append((float(m.group(2)), int(m.group(3)), int(m.group(4))))
    first = min(reports[b"first board"], default=None)
    quit = min(reports[b"quit"], default=None)
    play_cpu = play_by = None
    if first is not None and first[1] >= 0:
        # The manager's CPU from its first query of a move to QUIT (or, when the AIs were killed
        # before they could say, to its exit): the half-moves alone, without start-up and end.
        ns, ticks = (quit[1], quit[2]) if quit is not None else (round(cpu * 1e9), None)
        exact = (ns - first[1]) / 1e9
        if ticks is not None and (ticks - first[2]) / TICK > exact + 2.0 / TICK:  # other threads ran
            play_cpu, play_by = (ticks - first[2]) / TICK, "ticks"
        else:
            play_cpu, play_by = exact, "schedstat"
    return {
        "status": proc.returncode,
        "wall_s": t1 - t0,
        "first_move_s": (first[0] - t0) if first is not None else None,
        "cpu_s": cpu,
        "cpu_by": how,
        "play_cpu_s": play_cpu,
        "play_by": play_by if quit is not None or play_by is None else play_by + ", to its exit",
        "stdout": stdout.decode("latin-1"),
        "stderr": stderr.decode("latin-1"),
    }


def installed_matches_work_tree(command: str) -> str | None:
    """Why the console script ``command`` would not run the work tree's gamed/stratego (its venv's
    copy differs: run `make`), or None."""
    python = Path(command).resolve().parent / "python"
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-I", "-c", "import gamed.stratego.cli as c, os; print(os.path.dirname(c.__file__))"],
        capture_output=True, text=True, cwd="/",
    )  # fmt: skip
    where = Path(probe.stdout.strip()) if probe.returncode == 0 else None
    if where is None or not where.is_dir():
        return f"{command}: its Python cannot import gamed.stratego.cli"
    stale = [
        f.name for f in sorted((ROOT / "gamed" / "stratego").glob("*.py"))
        if not (where / f.name).exists() or (where / f.name).read_bytes() != f.read_bytes()
    ]  # fmt: skip
    if where.resolve() == (ROOT / "gamed" / "stratego").resolve() or not stale:
        return None
    return f"{command} runs {where}, which differs from the work tree in {', '.join(stale)}: run `make`"


def manager_env(seed: int) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the console script runs its venv's installed gamed
    env.update(FAST_AI_SEED=str(seed), FAST_AI_REPORT="1", LANG="C", LC_ALL="C")
    return env


def half_moves_of(log: bytes) -> int:
    return len(_MOVE_LINE.findall(log))


def command_phases(args, commands: dict[str, str]) -> dict:
    """Phases 1a-1d for each command (ours, and the original if given), run by turns."""
    ai = str(AI)
    seeds = [args.seed * 1000 + i for i in range(args.games)]
    root = Path(tempfile.mkdtemp(prefix="stratego-bench."))
    results: dict = {name: {"fixed": [], "games": [], "round": {}, "replays": []} for name in commands}
    try:
        quiet = wait_quiet(args.wait_quiet)
        # 1a. fixed cost
        window = CpuTally()
        print(f"fixed cost: {args.fixed_runs} runs of -m 1, each command in turn ...", flush=True)
        for i in range(args.fixed_runs):
            for name, command in commands.items():
                workdir = root / name / f"fixed{i}"
                workdir.mkdir(parents=True)
                run = run_manager([command, "-m", "1", "-o", "game.log", "-T", "2", ai, ai], manager_env(seeds[0]), workdir)
                check_result(run, name, workdir)
                results[name]["fixed"].append(run)
        results["fixed_other_cpu"] = window.other()
        # 1b. games
        window = CpuTally()
        print(f"games: {args.games} games of -m 1000, each command in turn ...", flush=True)
        for i, seed in enumerate(seeds):
            for name, command in commands.items():
                workdir = root / name / f"game{i}"
                workdir.mkdir(parents=True)
                run = run_manager([command, "-m", "1000", "-o", "game.log", "-T", "2", ai, ai], manager_env(seed), workdir)
                check_result(run, name, workdir)
                run["log"] = (workdir / "game.log").read_bytes()
                run["half_moves"] = half_moves_of(run["log"])
                run["line"] = run["stdout"].strip()
                results[name]["games"].append(run)
        results["games_other_cpu"] = window.other()
        # 1c. the tournament script's round
        print(f"round: the {args.games} games again through /bin/sh, as the tournament script runs them ...", flush=True)
        for name, command in commands.items():
            window = CpuTally()
            t0 = perf()
            lines = []
            for i, seed in enumerate(seeds):
                workdir = root / name / f"round{i}"
                workdir.mkdir(parents=True)
                line = f'{shlex.quote(command)} -m 1000 -o game.log -T 2 "{ai}" "{ai}" 2>> game.log.stderr'
                run = run_manager(line, manager_env(seed), workdir, shell=True)
                lines.append(run["stdout"].strip())
            results[name]["round"] = {"wall_s": perf() - t0, "lines": lines, "other_cpu": window.other()}
        # 1d. every log replays to its result line (ours: the command itself; the original's logs too)
        print("verdicts: replaying every game's log with -m 1000 -f ...", flush=True)
        ours = commands["gamed-stratego"]
        for name in commands:
            for i, run in enumerate(results[name]["games"]):
                workdir = root / name / f"game{i}"
                replay = run_manager([ours, "-m", "1000", "-f", "game.log"], manager_env(0), workdir)
                results[name]["replays"].append(replay["stdout"].strip() == run["line"])
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"  (kept the games' directories in {root})")
    results["quiet"] = quiet
    for name in commands:
        results[name]["figures"] = command_figures(results[name])
    for other in ("original", "before"):
        if other in commands:
            a, b = results["gamed-stratego"]["games"], results[other]["games"]
            results[f"same_lines_{other}"] = sum(x["line"] == y["line"] for x, y in zip(a, b))
            results[f"same_logs_{other}"] = sum(x["log"] == y["log"] for x, y in zip(a, b))
    for name in commands:
        for run in results[name]["games"]:
            run.pop("log", None)
    return results


class CpuTally:
    """The CPU time of other programs over a stretch: every CPU's busy time (/proc/stat) less
    this process's and its reaped children's (the managers and, through them, the AIs)."""

    def __init__(self):
        self.t0 = perf()
        self.stat0 = cpu_jiffies()
        self.self0, _, self.kids0 = rusage()

    def other(self) -> float:
        wall = perf() - self.t0
        busy = sum(cpu_busy(self.stat0, cpu_jiffies()))
        self1, _, kids1 = rusage()
        return max(0.0, busy - (self1 - self.self0) - (kids1 - self.kids0)) / wall


def check_result(run: dict, name: str, workdir: Path) -> None:
    line = run["stdout"].strip().split("\n")[-1] if run["stdout"].strip() else ""
    if run["status"] != 0 or len(line.split(" ")) != 6:
        raise BenchError(
            f"{name} in {workdir}: exit status {run['status']}, stdout {run['stdout'][-200:]!r}, "
            f"stderr {run['stderr'][-500:]!r}"
        )


def command_figures(r: dict) -> dict:
    """Medians and the CPU per half-move of one command's runs."""
    fixed, games = r["fixed"], r["games"]
    fixed_cpu = statistics.median(x["cpu_s"] for x in fixed)
    hm = sum(g["half_moves"] for g in games)
    cpu = sum(g["cpu_s"] for g in games)
    xs, ys = [g["half_moves"] for g in games], [g["cpu_s"] for g in games]
    slope = statistics.linear_regression(xs, ys).slope if len(set(xs)) > 1 else float("nan")
    firsts = sorted(g["first_move_s"] for g in games if g["first_move_s"] is not None)
    walls = sorted(x["wall_s"] for x in fixed)
    played = [g for g in games if g["half_moves"] and g["play_cpu_s"] is not None]
    play_hm = sum(g["half_moves"] for g in played)
    per_game = [g["play_cpu_s"] / g["half_moves"] for g in played]
    return {
        "fixed_wall_ms_p50": statistics.median(walls) * 1e3,
        "fixed_wall_ms_min": walls[0] * 1e3,
        "fixed_wall_ms_max": walls[-1] * 1e3,
        "fixed_cpu_ms": fixed_cpu * 1e3,
        "first_move_ms_p50": statistics.median(firsts) * 1e3 if firsts else float("nan"),
        "first_move_ms_max": firsts[-1] * 1e3 if firsts else float("nan"),
        "game_wall_ms_p50": statistics.median(g["wall_s"] for g in games) * 1e3,
        "half_moves": hm,
        "half_moves_per_game": hm / len(games),
        "cpu_us_per_half_move": sum(g["play_cpu_s"] for g in played) / play_hm * 1e6 if play_hm else float("nan"),
        "cpu_us_per_half_move_p50": statistics.median(per_game) * 1e6 if per_game else float("nan"),
        "cpu_us_per_half_move_sum": (cpu - len(games) * fixed_cpu) / hm * 1e6 if hm else float("nan"),
        "cpu_us_per_half_move_all": cpu / hm * 1e6 if hm else float("nan"),
        "cpu_slope_us": slope * 1e6,
        "cpu_by": sorted({x["cpu_by"] for x in fixed + games}),
        "play_by": sorted({g["play_by"] for g in played}),
        "outcomes": dict(collections.Counter(g["line"].split(" ")[2] for g in games).most_common()),
        "replays_ok": sum(r["replays"]),
    }


def print_command_report(results: dict, commands: dict[str, str], verdicts: list) -> None:
    names = list(commands)
    print("\nThe command, one process per game (fast_ai against fast_ai, -m 1000 -o LOG -T 2, seeds by FAST_AI_SEED)")
    for name in names:
        print(f"  {name}: {commands[name]}")
    if "original" not in commands:
        print(
            "  original: not measured here (no --original PATH); its figures below are the issue's "
            f"({ORIGINAL_FIGURES['fixed_ms']} ms fixed cost, {ORIGINAL_FIGURES['cpu_us_per_half_move'] / 1e3:.2f} ms "
            "own CPU per half-move), measured on another machine"
        )
    rows = [
        ("exec -> exit, -m 1 (ms): p50 / min / max", lambda f: f"{f['fixed_wall_ms_p50']:.1f} / {f['fixed_wall_ms_min']:.1f} / {f['fixed_wall_ms_max']:.1f}"),
        ("exec -> first move (ms): p50 / max", lambda f: f"{fmt(f['first_move_ms_p50'], 1)} / {fmt(f['first_move_ms_max'], 1)}"),
        ("own CPU of a -m 1 run (ms, median)", lambda f: f"{f['fixed_cpu_ms']:.1f}"),
        ("half-moves per game (mean)", lambda f: f"{f['half_moves_per_game']:.1f}"),
        ("wall per game (ms, p50)", lambda f: f"{f['game_wall_ms_p50']:.1f}"),
        ("own CPU per half-move (us), first move to QUIT", lambda f: f"{f['cpu_us_per_half_move']:.1f}"),
        ("  per game: p50", lambda f: f"{f['cpu_us_per_half_move_p50']:.1f}"),
        ("  exec to exit less the -m 1 median / slope", lambda f: f"{f['cpu_us_per_half_move_sum']:.1f} / {fmt(f['cpu_slope_us'], 1)}"),
        ("  exec to exit, fixed part included", lambda f: f"{f['cpu_us_per_half_move_all']:.1f}"),
        ("own CPU read from (exec to exit; the half-moves)", lambda f: ", ".join(f["cpu_by"]) + "; " + ", ".join(f["play_by"])),
        ("logs replaying to their result line", lambda f: f"{f['replays_ok']} of {len(results[names[0]]['games'])}"),
    ]
    width = max(len(r[0]) for r in rows) + 2
    print("  " + " " * width + "".join(f"{n:>24}" for n in names))
    for label, cell in rows:
        print("  " + f"{label:<{width}}" + "".join(f"{cell(results[n]['figures']):>24}" for n in names))
    for name in names:
        rd = results[name]["round"]
        print(f"  a round of {len(rd['lines'])} games through /bin/sh, {name}: {rd['wall_s']:.2f} s wall (other CPU {rd['other_cpu']:.0%})")
    ours = results["gamed-stratego"]["figures"]
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in ours["outcomes"].items()))
    print(f"  other CPU: fixed-cost runs {results['fixed_other_cpu']:.0%}, games {results['games_other_cpu']:.0%}; before: {results['quiet']}")
    n = len(results["gamed-stratego"]["games"])
    for other in ("original", "before"):
        if other in commands:
            print(
                f"  the same games, {other}: result lines equal in {results['same_lines_' + other]} of {n}, "
                f"logs byte for byte in {results['same_logs_' + other]} of {n}"
            )
    if "original" in commands:
        ref_fixed = results["original"]["figures"]["fixed_wall_ms_p50"]
        ref_cpu = results["original"]["figures"]["cpu_us_per_half_move"]
        ref = "the original, measured"
    else:
        ref_fixed, ref_cpu, ref = ORIGINAL_FIGURES["fixed_ms"], ORIGINAL_FIGURES["cpu_us_per_half_move"], "the issue's figure"
    fixed = max(ours["fixed_wall_ms_p50"], ours["first_move_ms_p50"])
    verdicts.append(
        (
            f"fixed cost per game <= {FIXED_TARGET_MS:.0f} ms wall (exec to the first move, and exec to exit of -m 1, p50)",
            fixed <= FIXED_TARGET_MS,
            f"{fmt(ours['first_move_ms_p50'], 1)} ms to the first move, {ours['fixed_wall_ms_p50']:.1f} ms to exit "
            f"(original: {ref_fixed:.1f} ms, {ref})",
        )
    )
    verdicts.append(
        (
            "own CPU per half-move <= the original's",
            ours["cpu_us_per_half_move"] <= ref_cpu,
            f"{ours['cpu_us_per_half_move']:.1f} us against {ref_cpu:.1f} us ({ref})",
        )
    )
    if "before" in commands and "original" not in commands:
        # Like for like: the issue measured the original beside the gamed-stratego of then; with
        # that one here as --before, the original's figures scale by the issue's ratios.
        before = results["before"]["figures"]
        scale_fixed = ORIGINAL_FIGURES["fixed_ms"] / ISSUE_BEFORE["fixed_ms"]
        scale_cpu = ORIGINAL_FIGURES["cpu_us_per_half_move"] / ISSUE_BEFORE["cpu_us_per_half_move"]
        print(
            f"  the issue's ratios applied to --before (original = before x {scale_fixed:.4f} fixed, x {scale_cpu:.2f} "
            f"per half-move): the original here would be {before['fixed_wall_ms_p50'] * scale_fixed:.1f} ms fixed and "
            f"{before['cpu_us_per_half_move'] * scale_cpu:.1f} us per half-move"
        )
        verdicts.append(
            (
                "own CPU per half-move <= the original's, scaled to this machine by --before",
                ours["cpu_us_per_half_move"] <= before["cpu_us_per_half_move"] * scale_cpu,
                f"{ours['cpu_us_per_half_move']:.1f} us against {before['cpu_us_per_half_move'] * scale_cpu:.1f} us "
                f"(before's {before['cpu_us_per_half_move']:.1f} us x {scale_cpu:.2f})",
            )
        )
    verdicts.append(
        (
            "verdicts unchanged: every game's log replays to its result line"
            + "".join(f", and equals {o}'s" for o in ("original", "before") if o in commands),
            ours["replays_ok"] == len(results["gamed-stratego"]["games"])
            and all(results[f"same_logs_{o}"] == n for o in ("original", "before") if o in commands),
            f"{ours['replays_ok']} of {n} replay"
            + "".join(f"; {results['same_logs_' + o]} logs equal {o}'s" for o in ("original", "before") if o in commands),
        )
    )


def kill_live_commands() -> None:
    """A manager cut short: SIGTERM (gamed-stratego then kills and reaps its AIs), SIGKILL after 2 s."""
    for pid in list(LIVE_COMMANDS):
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            LIVE_COMMANDS.discard(pid)
    deadline = time.monotonic() + 2.0
    for pid in list(LIVE_COMMANDS):
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.02)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, PermissionError, ChildProcessError):
                pass


# --- process games -----------------------------------------------------------------------------


async def play_game(reactor, options: MatchOptions, index: int, seeds: tuple[int, int]) -> dict:
    """One game of fast_ai (seeds[0], RED) against fast_ai (seeds[1], BLUE): its result, the
    times of its parts and this process's CPU time at the same points."""
    marks: dict[str, tuple[float, float]] = {}
    ai = shlex.quote(str(AI))

    def on_log(line: str) -> None:
        if "setup" not in marks:  # the first log line: both setups have been read
            marks["setup"] = (perf(), cpu())
        if line.startswith("Game ends "):  # written just before the result line; then QUIT
            marks["over"] = (perf(), cpu())

    t0, c0 = perf(), cpu()
    red = ProgramSeat(f"{ai} {seeds[0]}", options, reactor, stderr="discard")
    blue = ProgramSeat(f"{ai} {seeds[1]}", options, reactor, stderr="discard")
    t1, c1 = perf(), cpu()
    LIVE.update((red, blue))
    if not (red.valid and blue.valid and red.reaper_pid and blue.reaper_pid):  # (each AI's pid comes later)
        raise BenchError(f"cannot start {AI} (run `make examples`)")
    referee = StrategoReferee(red, blue, options, clock=reactor, on_log=on_log)
    result = await referee.run()
    t3, c3 = perf(), cpu()
    LIVE.difference_update((red, blue))
    if result is None:
        raise BenchError(f"game {index} ended without a result")
    t2s, c2s = marks.get("setup", (t3, c3))
    t2, c2 = marks.get("over", (t3, c3))
    return {
        "index": index,
        "seeds": list(seeds),
        "line": result.line.replace(str(AI), "fast_ai"),
        "outcome": result.outcome.value,
        "reason": result.reason,
        "turn": result.turn,
        "half_moves": referee.half_moves,
        "wall_s": t3 - t0,
        "spawn_s": t1 - t0,
        "setup_s": t2s - t1,
        "play_s": t2 - t2s,
        "quit_s": t3 - t2,
        # this process's CPU in each part: meaningful when the games are played one at a time
        "cpu_spawn_s": c1 - c0,
        "cpu_setup_s": c2s - c1,
        "cpu_play_s": c2 - c2s,
        "cpu_quit_s": c3 - c2,
        "ai_exit": [red.exit_code, blue.exit_code],
    }


def rusage() -> tuple[float, float, float]:
    """(this process's user+sys, its sys, its reaped children's user+sys) in seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, me.ru_stime, kids.ru_utime + kids.ru_stime


async def games_phase(
    reactor, options: MatchOptions, seeds: list[tuple[int, int]], parallel: int, profile=None, wait: float = 0.0
) -> dict:
    """Play the games ``parallel`` at a time (a new one starts as soon as one ends)."""
    queue = collections.deque(enumerate(seeds))
    records: list[dict | None] = [None] * len(seeds)

    async def worker() -> None:
        while queue:
            i, s = queue.popleft()
            records[i] = await play_game(reactor, options, i, s)

    quiet = wait_quiet(wait)
    self0, sys0, kids0 = rusage()
    stat0 = cpu_jiffies()
    t0 = perf()
    if profile is not None:
        profile.enable()
    try:
        await defer.gatherResults([defer.ensureDeferred(worker()) for _ in range(parallel)], consumeErrors=True)
    except defer.FirstError as e:
        raise e.subFailure.value from None
    finally:
        if profile is not None:
            profile.disable()
    wall = perf() - t0
    stat1 = cpu_jiffies()
    self1, sys1, kids1 = rusage()
    busy = sum(cpu_busy(stat0, stat1))
    games = [r for r in records if r is not None]
    half_moves = sum(r["half_moves"] for r in games)
    referee_cpu, ai_cpu = self1 - self0, kids1 - kids0
    walls = sorted(r["wall_s"] for r in games)
    return {
        "parallel": parallel,
        "quiet": quiet,
        "games": len(games),
        "wall_s": wall,
        "games_per_s": len(games) / wall,
        "half_moves": half_moves,
        "half_moves_per_game": half_moves / len(games),
        "turns_per_game": statistics.mean(r["turn"] for r in games),
        "referee_cpu_s": referee_cpu,
        "referee_us_per_half_move": referee_cpu / half_moves * 1e6,
        "referee_cpu_share": referee_cpu / wall,
        "referee_sys_us_per_half_move": (sys1 - sys0) / half_moves * 1e6,
        "ai_cpu_s": ai_cpu,
        "ai_us_per_half_move": ai_cpu / half_moves * 1e6,
        "ai_cpu_share": ai_cpu / wall,
        "other_cpu": max(0.0, (busy - referee_cpu - ai_cpu) / wall),
        "wall_p50_ms": pct(walls, 0.50) * 1e3,
        "wall_p99_ms": pct(walls, 0.99) * 1e3,
        "wall_max_ms": walls[-1] * 1e3,
        "outcomes": dict(collections.Counter(r["outcome"] for r in games).most_common()),
        "records": games,
    }


def cut_figures(phase: dict) -> dict:
    """The games of the cut phase that lasted the whole CUT_TURNS turns (DRAW_DEFAULT)."""
    cut = [r for r in phase["records"] if r["half_moves"] == 2 * CUT_TURNS]
    walls = sorted(r["wall_s"] for r in cut)
    hm = sum(r["half_moves"] for r in cut)
    return {
        "cut_games": len(cut),
        "cut_p50_ms": pct(walls, 0.50) * 1e3,
        "cut_p99_ms": pct(walls, 0.99) * 1e3,
        "cut_max_ms": (walls[-1] if walls else float("nan")) * 1e3,
        "cut_play_p50_ms": pct(sorted(r["play_s"] for r in cut), 0.50) * 1e3,
        "cut_referee_us_per_half_move": sum(r["cpu_play_s"] for r in cut) / hm * 1e6 if hm else float("nan"),
    }


def split_figures(phase: dict) -> dict:
    """Where a game's wall time and the referee's CPU go (meaningful for games played one at a time),
    and the 150-turn estimate."""
    games = phase["records"]
    med = lambda key: statistics.median(r[key] for r in games)  # noqa: E731
    fixed = [r["spawn_s"] + r["setup_s"] + r["quit_s"] for r in games]
    per_hm = [r["play_s"] / r["half_moves"] for r in games if r["half_moves"]]
    est = sorted(f + HALF_MOVES_150 * r["play_s"] / r["half_moves"] for f, r in zip(fixed, games) if r["half_moves"])
    near = sorted(r["wall_s"] for r in games if NEAR_150[0] <= r["turn"] <= NEAR_150[1])
    near_play = sorted(r["play_s"] for r in games if NEAR_150[0] <= r["turn"] <= NEAR_150[1])
    hm = sum(r["half_moves"] for r in games)
    n = len(games)
    return {
        "spawn_ms": med("spawn_s") * 1e3,
        "setup_ms": med("setup_s") * 1e3,
        "play_ms": med("play_s") * 1e3,
        "quit_ms": med("quit_s") * 1e3,
        "play_us_per_half_move_p50": statistics.median(per_hm) * 1e6,
        "play_us_per_half_move_mean": sum(r["play_s"] for r in games) / hm * 1e6,
        "game_150_p50_ms": pct(est, 0.50) * 1e3,
        "game_150_p99_ms": pct(est, 0.99) * 1e3,
        "game_150_max_ms": est[-1] * 1e3,
        "near_150_games": len(near),
        "near_150_p50_ms": pct(near, 0.50) * 1e3,
        "near_150_max_ms": (near[-1] if near else float("nan")) * 1e3,
        "near_150_play_p50_ms": pct(near_play, 0.50) * 1e3,
        "near_150_mean_turns": statistics.mean(r["turn"] for r in games if NEAR_150[0] <= r["turn"] <= NEAR_150[1])
        if near
        else float("nan"),
        # this process's CPU per game part (the sum is the phase's CPU less the gaps between games)
        "cpu_spawn_ms": sum(r["cpu_spawn_s"] for r in games) / n * 1e3,
        "cpu_setup_ms": sum(r["cpu_setup_s"] for r in games) / n * 1e3,
        "cpu_quit_ms": sum(r["cpu_quit_s"] for r in games) / n * 1e3,
        "cpu_play_us_per_half_move": sum(r["cpu_play_s"] for r in games) / hm * 1e6,
        "turns_min": min(r["turn"] for r in games),
        "turns_median": statistics.median(r["turn"] for r in games),
        "turns_max": max(r["turn"] for r in games),
    }


# --- replay of the competition logs --------------------------------------------------------------


def replay_phase(rounds: int, profile=None, wait: float = 0.0) -> dict:
    """Replay the corpus ``rounds`` times; the referee's CPU per half-move, no process, no I/O."""
    if not ARCHIVE.exists():
        return {"error": f"no logs in {ARCHIVE}"}
    quiet = wait_quiet(wait)
    corpus = [list(lines) for _, lines in with_result()]
    c0 = cpu()
    parsed = [parse_log(lines) for lines in corpus]
    parse_cpu = cpu() - c0
    options = MatchOptions(max_turns=1000, timeout=None)
    per_round = []
    mismatches = 0
    half_moves = 0
    for _ in range(rounds):
        half_moves = 0
        c0, t0 = cpu(), perf()
        if profile is not None:
            profile.enable()
        for log, lines in zip(parsed, corpus):
            referee = StrategoReferee(*replay_seats(log), options)
            out: list = []
            defer.ensureDeferred(referee.run()).addBoth(out.append)
            half_moves += referee.half_moves
            if not out or getattr(out[0], "line", None) != lines[-1]:
                mismatches += 1
        if profile is not None:
            profile.disable()
        c1, t1 = cpu(), perf()
        per_round.append({"cpu_s": c1 - c0, "wall_s": t1 - t0})
    us = sorted(r["cpu_s"] / half_moves * 1e6 for r in per_round)
    return {
        "quiet": quiet,
        "logs": len(corpus),
        "files": len(logs()),
        "half_moves": half_moves,
        "half_moves_per_log": half_moves / len(corpus) if corpus else float("nan"),
        "rounds": per_round,
        "us_per_half_move_median": statistics.median(us),
        "us_per_half_move_min": us[0],
        "us_per_half_move_max": us[-1],
        "wall_us_per_half_move_median": statistics.median(r["wall_s"] for r in per_round) / half_moves * 1e6,
        "parse_us_per_log": parse_cpu / len(corpus) * 1e6 if corpus else float("nan"),
        "parse_us_per_half_move": parse_cpu / half_moves * 1e6 if half_moves else float("nan"),
        "mismatches": mismatches,
    }


# --- profiles ----------------------------------------------------------------------------------


def profile_summary(profile: cProfile.Profile, top: int) -> dict:
    """Self and inclusive shares per function. cProfile's clock is wall time: the time spent inside
    epoll's poll() is mostly waiting for the AIs, so it is left out (and so are the reactor-loop
    functions that only contain it), and the shares are of the rest, the referee's busy time."""
    stats = pstats.Stats(profile)
    entries = stats.stats
    idle = {k for k in entries if k[0] == "~" and "'poll' of 'select.epoll'" in k[2]}
    idle_tt = sum(entries[k][2] for k in idle)
    # the callers (transitively) of poll(): their inclusive time contains the waiting
    waiting, todo = set(idle), list(idle)
    while todo:
        for caller in entries[todo.pop()][4]:
            if caller not in waiting and caller in entries:
                waiting.add(caller)
                todo.append(caller)
    total = max(stats.total_tt - idle_tt, 1e-9)
    rows = []
    by_file: dict[str, float] = collections.Counter()
    for key, (cc, nc, tt, ct, _callers) in entries.items():
        if key in idle:
            continue
        filename, line, name = key
        where = _short(filename)
        label = f"{name} ({where}:{line})" if where != "~" else name
        rows.append((label, nc, tt, None if key in waiting else ct))
        by_file[where if where != "~" else name] += tt
    own = sorted(rows, key=lambda r: -r[2])[:top]
    incl = sorted((r for r in rows if r[3] is not None), key=lambda r: -r[3])[:top]
    return {
        "total_s": total,
        "idle_s": idle_tt,
        "self": [(label, nc, tt / total) for label, nc, tt, _ in own],
        "inclusive": [(label, nc, ct / total) for label, nc, _, ct in incl],
        "files": [(f, t / total) for f, t in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]],
    }


def _short(filename: str) -> str:
    if filename == "~":
        return filename
    for marker in (str(ROOT) + "/", "site-packages/", "lib/python3.11/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def print_profile(title: str, prof: dict) -> None:
    idle = f", {prof['idle_s']:.2f} s in epoll's poll() left out" if prof["idle_s"] else ""
    print(f"\n{title} (cProfile: {prof['total_s']:.2f} s of busy time{idle}; shares of the busy time)")
    print("  self time by file (built-ins by name): " + ", ".join(f"{f} {s:.0%}" for f, s in prof["files"][:10]))
    print(f"  {'self':>6} {'calls':>8}  {'function':<58}  {'incl.':>6}  function")
    for i in range(max(len(prof["self"]), len(prof["inclusive"]))):
        a = prof["self"][i] if i < len(prof["self"]) else ("", 0, 0.0)
        b = prof["inclusive"][i] if i < len(prof["inclusive"]) else ("", 0, 0.0)
        print(f"  {a[2]:6.1%} {a[1]:>8}  {a[0][:58]:<58}  {b[2]:6.1%}  {b[0][:70]}")


# --- report ------------------------------------------------------------------------------------


def code_version() -> str:
    """The bench imports the work tree's gamed: its commit, uncommitted gamed/stratego files, a hash of
    gamed/stratego's sources."""
    return work_tree_version("gamed/stratego", str(ROOT))


def report(results: dict) -> list[tuple[str, bool, str]]:
    m, a = results["machine"], results["args"]
    print_machine(m, "gamed/stratego")
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in m['loadavg'])}; scheduling: {a['sched']}")
    print(f"AI: examples/stratego/fast_ai (sha1 {results['ai_sha1']}), seeds from --seed {a['seed']}")
    if results.get("stale"):
        print(f"WARNING: {results['stale']}")
    verdicts: list[tuple[str, bool, str]] = []
    if "command" in results:
        print_command_report(results["command"], results["commands"], verdicts)
    opts = results["options"]
    phases = [p for p in (results.get("sequential"), results.get("parallel")) if p]
    if phases:
        pause = "with pausing (SIGSTOP/SIGCONT)" if opts["pause"] else "without pausing (--no-pause)"
        print(
            f"\nThe daemon's referee (--daemon): {a['daemon_games']} games of fast_ai against fast_ai, {pause}, "
            f"MatchOptions(max_turns={opts['max_turns']}, timeout={opts['timeout']}, pause={opts['pause']})"
        )
        print(
            f"  {'':<14} {'games/s':>8} {'half-moves':>10} {'referee':>12} {'AI CPU':>12} "
            f"{'wall ms per game':>20} {'referee':>8} {'AIs':>5} {'other':>6}"
        )
        print(
            f"  {'':<14} {'':>8} {'per game':>10} {'us/half-mv':>12} {'us/half-mv':>12} "
            f"{'p50 / p99 / max':>20} {'CPU':>8} {'CPU':>5} {'CPU':>6}"
        )
        for p in phases:
            label = "sequential" if p["parallel"] == 1 else f"{p['parallel']} in parallel"
            print(
                f"  {label:<14} {p['games_per_s']:>8.2f} {p['half_moves_per_game']:>10.1f} "
                f"{p['referee_us_per_half_move']:>12.1f} {p['ai_us_per_half_move']:>12.1f} "
                f"{fmt(p['wall_p50_ms'], 1) + ' / ' + fmt(p['wall_p99_ms'], 1) + ' / ' + fmt(p['wall_max_ms'], 1):>20} "
                f"{p['referee_cpu_share']:>8.0%} {p['ai_cpu_share']:>5.0%} {p['other_cpu']:>6.0%}"
            )
        print(
            "  of the referee's CPU, system time (in the kernel): "
            + ", ".join(
                f"{'sequential' if p['parallel'] == 1 else str(p['parallel']) + ' in parallel'} "
                f"{p['referee_sys_us_per_half_move']:.1f} us per half-move"
                for p in phases
            )
        )
        if a["wait_quiet"]:
            print("  before each phase: " + "; ".join(f"{p['quiet']}" for p in phases))
        seq = results.get("sequential")
        if seq:
            s = seq["split"]
            print(
                f"  turns per game (sequential): min {s['turns_min']}, median {s['turns_median']:g}, max "
                f"{s['turns_max']}, mean {seq['turns_per_game']:.1f}; outcomes: "
                + ", ".join(f"{k} {v}" for k, v in seq["outcomes"].items())
            )
            odd = collections.Counter(
                r["reason"] for r in seq["records"] if r["outcome"] in ("ILLEGAL", "INTERNAL_ERROR", "BAD_SETUP")
            )
            for reason, n in odd.items():
                print(f"    !! {n} x {reason}")
            print(
                f"  a game's wall time (sequential, medians): spawn {s['spawn_ms']:.2f} ms, setup {s['setup_ms']:.2f} ms, "
                f"play {s['play_ms']:.1f} ms ({s['play_us_per_half_move_p50']:.0f} us per half-move; mean "
                f"{s['play_us_per_half_move_mean']:.0f}), quit {s['quit_ms']:.2f} ms"
            )
            print(
                f"  referee CPU per game part (sequential, means): spawn {s['cpu_spawn_ms']:.2f} ms, setup "
                f"{s['cpu_setup_ms']:.2f} ms, quit {s['cpu_quit_ms']:.2f} ms per game; play "
                f"{s['cpu_play_us_per_half_move']:.1f} us per half-move"
            )
            near = (
                f"{s['near_150_games']} games of {NEAR_150[0]}-{NEAR_150[1]} turns (mean {s['near_150_mean_turns']:.0f}): "
                f"wall p50 {fmt(s['near_150_p50_ms'], 1)} ms, max {fmt(s['near_150_max_ms'], 1)} ms"
                if s["near_150_games"]
                else f"no game of {NEAR_150[0]}-{NEAR_150[1]} turns"
            )
            print(
                f"  150-turn game (spawn + setup + quit + 300 x play per half-move, per game): p50 "
                f"{s['game_150_p50_ms']:.1f} ms, p99 {s['game_150_p99_ms']:.1f} ms, max {s['game_150_max_ms']:.1f} ms; "
                + near
            )
        cut = results.get("cut")
        if cut:
            print(
                f"  cut phase (the same games ended after {CUT_TURNS} turns, max_turns={CUT_TURNS + 1}, one at a time): "
                f"{cut['cut_games']} games lasted the {CUT_TURNS} turns: wall p50 {fmt(cut['cut_p50_ms'], 1)} ms, "
                f"p99 {fmt(cut['cut_p99_ms'], 1)} ms, max {fmt(cut['cut_max_ms'], 1)} ms (play p50 "
                f"{fmt(cut['cut_play_p50_ms'], 1)} ms); referee {fmt(cut['cut_referee_us_per_half_move'], 1)} us per "
                f"half-move in play; {cut['games_per_s']:.2f} games/s; other CPU {cut['other_cpu']:.0%}"
            )
        if results.get("same_results") is not None:
            print(
                "  every phase played the same games: "
                + ("yes (same result lines)" if results["same_results"] else "NO: result lines differ between phases")
            )
    rp = results.get("replay")
    if rp:
        if "error" in rp:
            print(f"\nReplay: skipped ({rp['error']})")
        else:
            print(
                f"\nReplay of the {rp['logs']} UCC 2012 logs with a result line (no processes), "
                f"{len(rp['rounds'])} rounds of {rp['half_moves']:,} half-moves ({rp['half_moves_per_log']:.0f} per log):"
            )
            print(
                f"  referee CPU {rp['us_per_half_move_median']:.1f} us per half-move (median round; "
                f"{rp['us_per_half_move_min']:.1f}-{rp['us_per_half_move_max']:.1f}), wall "
                f"{rp['wall_us_per_half_move_median']:.1f} us; parse_log {rp['parse_us_per_log']:.0f} us per log "
                f"({rp['parse_us_per_half_move']:.1f} us per half-move); "
                + (
                    "every log replays to its result line"
                    if not rp["mismatches"]
                    else f"!! {rp['mismatches']} replays did not give the log's result line"
                )
            )
    for title, key in (("Referee profile, process games one at a time", "profile_games"), ("Referee profile, replay", "profile_replay")):
        if key in results:
            print_profile(title, results[key])
    seq = results.get("sequential")
    if seq:
        verdicts.append(
            (
                "referee CPU <= 0.2 ms per half-move (games one at a time)",
                seq["referee_us_per_half_move"] <= TARGETS["referee_us_per_half_move"],
                f"{seq['referee_us_per_half_move']:.0f} us (play only {seq['split']['cpu_play_us_per_half_move']:.0f} us"
                + (f"; replay {rp['us_per_half_move_median']:.0f} us" if rp and "error" not in rp else "")
                + ")",
            )
        )
        s = seq["split"]
        cut = results.get("cut")
        measured = cut is not None and cut["cut_games"] >= 5
        figure = cut["cut_p50_ms"] if measured else s["game_150_p50_ms"]
        parts = []
        if cut is not None:
            parts.append(f"{fmt(cut['cut_p50_ms'], 1)} ms p50 measured ({cut['cut_games']} games cut at {CUT_TURNS} turns)")
        parts.append(f"{s['game_150_p50_ms']:.1f} ms p50 estimated from the whole games")
        if s["near_150_games"]:
            parts.append(f"{s['near_150_games']} games of {NEAR_150[0]}-{NEAR_150[1]} turns: p50 {s['near_150_p50_ms']:.1f} ms")
        verdicts.append(
            (
                "a game of ~150 turns in <= 100 ms wall time (games one at a time)",
                figure <= TARGETS["game_150_ms"],
                "; ".join(parts),
            )
        )
    print_targets(verdicts)
    others = [p["other_cpu"] for p in phases + ([results["cut"]] if results.get("cut") else [])]
    if "command" in results:
        c = results["command"]
        others += [c["fixed_other_cpu"], c["games_other_cpu"]] + [c[n]["round"]["other_cpu"] for n in results["commands"]]
    warn_if_disturbed(others, "the referee nor the AIs", priority="--nice -10")
    return verdicts


# --- main --------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --original /opt/ucc/judge/manager/stratego --json /tmp/referee.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--command", default=str(Path(sys.executable).parent / "gamed-stratego"),
        help="the gamed-stratego command to measure [%(default)s]",
    )  # fmt: skip
    p.add_argument("--original", metavar="PATH", help="an original UCC 2012 stratego manager, measured side by side")
    p.add_argument(
        "--before", metavar="PATH",
        help="another gamed-stratego (an earlier build, e.g. another checkout's .venv/bin/gamed-stratego), measured "
        "side by side as 'before'",
    )  # fmt: skip
    p.add_argument("--games", type=int, default=20, help="games (and the round's games) per command [%(default)s]")
    p.add_argument("--fixed-runs", type=int, default=20, help="runs of -m 1 per command [%(default)s]")
    p.add_argument("--seed", type=int, default=1, help="seed for the games' seeds (every command plays the same games) [%(default)s]")
    p.add_argument("--keep", action="store_true", help="keep the games' directories (logs, stdout, stderr)")
    p.add_argument("--skip-command", action="store_true", help="skip part 1 (the command)")
    p.add_argument("--replay-rounds", type=int, default=5, help="rounds of the 187-log replay (0: skip it) [%(default)s]")
    p.add_argument("--daemon", action="store_true", help="also part 3: the referee as the daemon runs it, in this process")
    p.add_argument("--daemon-games", type=int, default=50, help="games per phase of part 3 [%(default)s]")
    p.add_argument("--parallel", type=int, default=2, help="part 3: games at a time in the parallel phase (1: skip it) [%(default)s]")
    p.add_argument("--no-pause", action="store_true", help="part 3: MatchOptions(pause=False): the idle AI is not SIGSTOPped")
    p.add_argument("--max-turns", type=int, default=1000, help="part 3: MatchOptions.max_turns, as the 2012 tournament [%(default)s]")
    p.add_argument("--timeout", type=float, default=2.0, help="part 3: MatchOptions.timeout in seconds [%(default)s]")
    p.add_argument("--warmup", type=int, default=1, help="part 3: games played first and not counted [%(default)s]")
    p.add_argument(
        "--no-cut", action="store_true",
        help=f"part 3: skip the cut phase (the same games again, one at a time, ended after {CUT_TURNS} turns: "
        "MatchOptions(max_turns=151), so a 150-turn game is measured directly)",
    )  # fmt: skip
    p.add_argument(
        "--profile", action="store_true",
        help="after the measured phases, replay the logs once (and with --daemon play its games once more one at "
        "a time) under cProfile in this process, and print the top functions",
    )  # fmt: skip
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument(
        "--wait-quiet", type=float, default=0.0, metavar="SECONDS",
        help="before each measured phase, wait up to SECONDS until the machine has been under 15%% busy for 3 s "
        "(other people's work on a shared VM); 0 = do not wait [%(default)s]",
    )  # fmt: skip
    p.add_argument("--nice", type=int, default=0, help="niceness for the bench, the managers and the AIs (below 0 needs root)")
    p.add_argument("--json", metavar="FILE", help="also write every figure (and every game) to FILE as JSON")
    args = p.parse_args(argv)
    if min(args.games, args.fixed_runs, args.daemon_games, args.parallel) < 1 or args.warmup < 0 or args.replay_rounds < 0:
        p.error("--games, --fixed-runs, --daemon-games and --parallel must be at least 1, --warmup and --replay-rounds at least 0")
    return args


async def run_daemon(reactor, args, results: dict) -> None:
    """Part 3 (and its profile): the referee with ProgramSeats on the reactor."""
    options = MatchOptions(max_turns=args.max_turns, timeout=args.timeout, pause=not args.no_pause)
    seeds = game_seeds(args.seed, args.daemon_games)
    if args.warmup:
        print(f"daemon: warm-up, {args.warmup} game(s) ...", flush=True)
        await games_phase(reactor, options, game_seeds(args.seed + 10**6, args.warmup), 1)
    print(f"daemon, sequential: {args.daemon_games} games ...", flush=True)
    seq = results["sequential"] = await games_phase(reactor, options, seeds, 1, wait=args.wait_quiet)
    seq["split"] = split_figures(seq)
    print(
        f"  {seq['games_per_s']:.2f} games/s, {seq['half_moves_per_game']:.0f} half-moves per game, referee "
        f"{seq['referee_us_per_half_move']:.0f} us per half-move, wall p50 {seq['wall_p50_ms']:.1f} ms, "
        f"other CPU {seq['other_cpu']:.0%}",
        flush=True,
    )
    if args.parallel > 1:
        print(f"daemon, parallel: {args.daemon_games} games, {args.parallel} at a time ...", flush=True)
        par = results["parallel"] = await games_phase(reactor, options, seeds, args.parallel, wait=args.wait_quiet)
        print(
            f"  {par['games_per_s']:.2f} games/s, referee {par['referee_us_per_half_move']:.0f} us per half-move, "
            f"wall p50 {par['wall_p50_ms']:.1f} ms, other CPU {par['other_cpu']:.0%}",
            flush=True,
        )
        results["same_results"] = [r["line"] for r in seq["records"]] == [r["line"] for r in par["records"]]
    if not args.no_cut:
        print(f"daemon, cut: the same {args.daemon_games} games ended after {CUT_TURNS} turns, one at a time ...", flush=True)
        cut_options = options._replace(max_turns=CUT_TURNS + 1)
        cut = results["cut"] = await games_phase(reactor, cut_options, seeds, 1, wait=args.wait_quiet)
        cut.update(cut_figures(cut))
        print(
            f"  {cut['cut_games']} games reached the cut: wall p50 {fmt(cut['cut_p50_ms'], 1)} ms, "
            f"other CPU {cut['other_cpu']:.0%}",
            flush=True,
        )
    if args.profile:
        print("profile: the daemon's games again, one at a time, under cProfile ...", flush=True)
        prof = cProfile.Profile()
        await games_phase(reactor, options, seeds, 1, profile=prof)
        results["profile_games"] = profile_summary(prof, args.profile_top)


def run_reactor(args, results: dict) -> None:
    """Run part 3 on the Twisted reactor; re-raise what went wrong, Ctrl-C as KeyboardInterrupt."""
    from twisted.internet import reactor

    failure: list = []
    done: list = []

    async def play() -> None:
        try:
            await run_daemon(reactor, args, results)
            done.append(True)
        except BaseException as e:  # noqa: BLE001 - reported after the reactor stops
            failure.append(e)
        finally:
            if reactor.running:
                reactor.stop()

    stopped_by: list[int] = []

    def on_signal(signum, frame) -> None:
        stopped_by.append(signum)
        reactor.callFromThread(reactor.stop)

    def started() -> None:
        # After Twisted's own handlers (it installs SIGCHLD's, which reaps the AIs).
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        defer.ensureDeferred(play())

    reactor.callWhenRunning(started)
    reactor.run(installSignalHandlers=True)
    if failure:
        raise failure[0]
    if not done:
        if stopped_by and stopped_by[0] == signal.SIGTERM:
            raise SystemExit(143)
        raise KeyboardInterrupt


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    results: dict = {"machine": {}, "args": {}, "options": {}}
    t_start = perf()

    def body() -> int:
        results["machine"] = machine(code_version())
        results["machine"]["loadavg"] = list(os.getloadavg())
        args.sched = set_priority(args.nice)  # the managers and the AIs inherit it
        results["args"] = dict(vars(args))
        results["ai_sha1"] = build_ai()
        if not args.skip_command:
            commands = {"gamed-stratego": args.command}
            if args.original:
                commands["original"] = args.original
            if args.before:
                commands["before"] = args.before
            for command in commands.values():
                if not os.access(command, os.X_OK):
                    raise BenchError(f"{command} is not an executable file (make installs .venv/bin/gamed-stratego)")
            results["stale"] = installed_matches_work_tree(args.command)
            if results["stale"]:
                print(f"WARNING: {results['stale']}", flush=True)
            results["commands"] = commands
            results["command"] = command_phases(args, commands)
        if args.replay_rounds:
            print(f"replay: the {CORPUS_SIZE} competition logs, {args.replay_rounds} rounds ...", flush=True)
            rp = results["replay"] = replay_phase(args.replay_rounds, wait=args.wait_quiet)
            if "error" not in rp:
                print(f"  {rp['us_per_half_move_median']:.1f} us per half-move", flush=True)
        if args.daemon:
            results["options"] = {"max_turns": args.max_turns, "timeout": args.timeout, "pause": not args.no_pause}
            try:
                run_reactor(args, results)
            except SystemExit as e:
                print("stratego_referee: terminated", file=sys.stderr)
                return int(e.code)
        if args.profile and args.replay_rounds:
            print("profile: one replay round under cProfile ...", flush=True)
            prof = cProfile.Profile()
            replay_phase(1, profile=prof)
            results["profile_replay"] = profile_summary(prof, args.profile_top)
        note_code_change(results["machine"], code_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("stratego_referee", body, kill_live)


def kill_live() -> None:
    kill_live_commands()
    kill_live_seats()


def kill_live_seats() -> None:
    """The AIs of a game cut short (they may be SIGSTOPped): their process groups, then their
    reapers (which end what the AIs left and exit)."""
    for seat in list(LIVE):
        if seat.pid is not None:
            try:
                os.killpg(seat.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if seat.reaper_pid is not None:
            try:
                os.kill(seat.reaper_pid, signal.SIGTERM)
                os.waitpid(seat.reaper_pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass


if __name__ == "__main__":
    sys.exit(main())
