"""Stratego referee benchmark: games between the fast C example AIs, and a replay of the 2012 logs.

1. Process games. --games games (default 50) of examples/stratego/fast_ai against itself, each
   side started with its own seed (drawn from --seed, so a run is reproducible and every phase
   plays the same games). The referee runs in this process: StrategoReferee with two ProgramSeats
   on the real Twisted reactor, MatchOptions(max_turns=1000, timeout=2.0, pause=True) as in the
   2012 tournament (--no-pause: pause=False); the AIs are real subprocesses (through setsid, each
   leading its own process group, as gamed-stratego starts them). The games are played one at a
   time, then again --parallel at a time (default 2) on the same reactor. Reported per phase:
   games/s (games / the phase's wall time), half-moves per game, referee CPU per half-move (this
   process's user+sys time from getrusage(RUSAGE_SELF), children excluded, over the phase's
   half-moves; it includes starting and ending the AIs), the AIs' CPU (RUSAGE_CHILDREN), wall time
   per game (from creating the seats to both AIs reaped) p50/p99/max, and the outcomes. For the
   sequential phase a game's wall time and the referee's CPU are also split into spawn (creating
   the two seats: spawnProcess of setsid, which execs fast_ai), setup (until both setups are read), play (the
   half-moves, up to the end of the game) and quit (QUIT, the AIs' exit, reaping).
   A "150-turn game" (300 half-moves) is estimated per game as spawn + setup + quit + 300 x its
   play time per half-move; games that lasted 120-180 turns are also reported as they are.
2. Cut at 150 turns. The same games once more, one at a time, with max_turns=151: every game that
   gets that far ends DRAW_DEFAULT after exactly 150 turns, so the wall time of a 150-turn game
   (from creating the seats to both AIs reaped) is measured directly (--no-cut skips it).
3. Replay. The 187 UCC 2012 competition logs that end with a result line
   (tests/data/ucc-2012-logs.tar.xz, as tests/stratego/test_replay_corpus.py) are replayed with
   parse_log + replay_seats and MatchOptions(max_turns=1000, timeout=None): the referee and the
   rules without any process or I/O. --replay-rounds rounds; reported: referee CPU per half-move
   (median round, and the fastest), parse_log's cost per log, and whether every log replays to its
   result line.

The machine's other load (CPU time of all CPUs from /proc/stat, minus this process and its
children) is printed with every phase, as the other benchmarks do. Exit status 0 whatever the
figures; 2 when the AI cannot be built or started or a game does not end.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import hashlib
import os
import pstats
import random
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the work tree's gamed, not the venv's copy
sys.path.insert(1, str(Path(__file__).resolve().parent))

import attrs  # noqa: E402
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
    if not (red.valid and blue.valid and red.pid and blue.pid):
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
    opts = results["options"]
    print(
        f"AI: examples/stratego/fast_ai (sha1 {results['ai_sha1']}), seeds from --seed {a['seed']}; "
        f"MatchOptions(max_turns={opts['max_turns']}, timeout={opts['timeout']}, pause={opts['pause']})"
    )
    verdicts: list[tuple[str, bool, str]] = []
    phases = [p for p in (results.get("sequential"), results.get("parallel")) if p]
    if phases:
        pause = "with pausing (SIGSTOP/SIGCONT)" if opts["pause"] else "without pausing (--no-pause)"
        print(f"\nProcess games: {a['games']} games of fast_ai against fast_ai, {pause}")
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
    warn_if_disturbed(others, "the referee nor the AIs", priority="--nice -10")
    return verdicts


# --- main --------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --games 20 --profile --json /tmp/referee.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--games", type=int, default=50, help="games per phase [%(default)s]")
    p.add_argument("--parallel", type=int, default=2, help="games at a time in the parallel phase (1: skip it) [%(default)s]")
    p.add_argument("--seed", type=int, default=1, help="seed for the AIs' seeds (every phase plays the same games) [%(default)s]")
    p.add_argument("--no-pause", action="store_true", help="MatchOptions(pause=False): the idle AI is not SIGSTOPped")
    p.add_argument("--max-turns", type=int, default=1000, help="MatchOptions.max_turns, as the 2012 tournament [%(default)s]")
    p.add_argument("--timeout", type=float, default=2.0, help="MatchOptions.timeout in seconds [%(default)s]")
    p.add_argument("--warmup", type=int, default=1, help="games played first and not counted [%(default)s]")
    p.add_argument(
        "--no-cut", action="store_true",
        help=f"skip the cut phase (the same games again, one at a time, ended after {CUT_TURNS} turns: "
        "MatchOptions(max_turns=151), so a 150-turn game is measured directly)",
    )  # fmt: skip
    p.add_argument("--replay-rounds", type=int, default=5, help="rounds of the 187-log replay (0: skip it) [%(default)s]")
    p.add_argument("--skip-games", action="store_true", help="only the replay")
    p.add_argument(
        "--profile", action="store_true",
        help="after the measured phases, play the games once more one at a time, and replay the logs once, under "
        "cProfile (in this process: the referee), and print the top functions",
    )  # fmt: skip
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument(
        "--wait-quiet", type=float, default=0.0, metavar="SECONDS",
        help="before each measured phase, wait up to SECONDS until the machine has been under 15%% busy for 3 s "
        "(other people's work on a shared VM); 0 = do not wait [%(default)s]",
    )  # fmt: skip
    p.add_argument("--nice", type=int, default=0, help="niceness for the bench and the AIs (below 0 needs root)")
    p.add_argument("--json", metavar="FILE", help="also write every figure (and every game) to FILE as JSON")
    args = p.parse_args(argv)
    if args.games < 1 or args.parallel < 1 or args.warmup < 0 or args.replay_rounds < 0:
        p.error("--games and --parallel must be at least 1, --warmup and --replay-rounds at least 0")
    return args


async def run(reactor, args, results: dict) -> None:
    options = MatchOptions(max_turns=args.max_turns, timeout=args.timeout, pause=not args.no_pause)
    results["options"] = {"max_turns": options.max_turns, "timeout": options.timeout, "pause": options.pause}
    seeds = game_seeds(args.seed, args.games)
    if not args.skip_games:
        if args.warmup:
            print(f"warm-up: {args.warmup} game(s) ...", flush=True)
            await games_phase(reactor, options, game_seeds(args.seed + 10**6, args.warmup), 1)
        print(f"sequential: {args.games} games ...", flush=True)
        seq = results["sequential"] = await games_phase(reactor, options, seeds, 1, wait=args.wait_quiet)
        seq["split"] = split_figures(seq)
        print(
            f"  {seq['games_per_s']:.2f} games/s, {seq['half_moves_per_game']:.0f} half-moves per game, referee "
            f"{seq['referee_us_per_half_move']:.0f} us per half-move, wall p50 {seq['wall_p50_ms']:.1f} ms, "
            f"other CPU {seq['other_cpu']:.0%}",
            flush=True,
        )
        if args.parallel > 1:
            print(f"parallel: {args.games} games, {args.parallel} at a time ...", flush=True)
            par = results["parallel"] = await games_phase(reactor, options, seeds, args.parallel, wait=args.wait_quiet)
            print(
                f"  {par['games_per_s']:.2f} games/s, referee {par['referee_us_per_half_move']:.0f} us per half-move, "
                f"wall p50 {par['wall_p50_ms']:.1f} ms, other CPU {par['other_cpu']:.0%}",
                flush=True,
            )
            results["same_results"] = [r["line"] for r in seq["records"]] == [r["line"] for r in par["records"]]
        if not args.no_cut:
            print(f"cut: the same {args.games} games ended after {CUT_TURNS} turns, one at a time ...", flush=True)
            cut_options = attrs.evolve(options, max_turns=CUT_TURNS + 1)
            cut = results["cut"] = await games_phase(reactor, cut_options, seeds, 1, wait=args.wait_quiet)
            cut.update(cut_figures(cut))
            print(
                f"  {cut['cut_games']} games reached the cut: wall p50 {fmt(cut['cut_p50_ms'], 1)} ms, "
                f"other CPU {cut['other_cpu']:.0%}",
                flush=True,
            )
    if args.replay_rounds:
        print(f"replay: the {CORPUS_SIZE} competition logs, {args.replay_rounds} rounds ...", flush=True)
        rp = results["replay"] = replay_phase(args.replay_rounds, wait=args.wait_quiet)
        if "error" not in rp:
            print(f"  {rp['us_per_half_move_median']:.1f} us per half-move", flush=True)
    if args.profile:
        if not args.skip_games:
            print("profile: the games again, one at a time, under cProfile ...", flush=True)
            prof = cProfile.Profile()
            await games_phase(reactor, options, seeds, 1, profile=prof)
            results["profile_games"] = profile_summary(prof, args.profile_top)
        if args.replay_rounds:
            print("profile: one replay round under cProfile ...", flush=True)
            prof = cProfile.Profile()
            replay_phase(1, profile=prof)
            results["profile_replay"] = profile_summary(prof, args.profile_top)


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    results: dict = {"machine": {}, "args": {}}
    t_start = perf()

    def body() -> int:
        results["machine"] = machine(code_version())
        results["machine"]["loadavg"] = list(os.getloadavg())
        args.sched = set_priority(args.nice)  # the AIs inherit it
        results["args"] = dict(vars(args))
        results["ai_sha1"] = build_ai() if not args.skip_games else "-"

        from twisted.internet import reactor

        failure: list = []
        done: list = []

        async def play() -> None:
            try:
                await run(reactor, args, results)
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
                print("stratego_referee: terminated", file=sys.stderr)
                return 143
            raise KeyboardInterrupt
        note_code_change(results["machine"], code_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("stratego_referee", body, kill_live_seats)


def kill_live_seats() -> None:
    """The AIs of a game cut short (they may be SIGSTOPped): their process groups."""
    for seat in list(LIVE):
        if seat.pid is not None:
            try:
                os.killpg(seat.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.waitpid(seat.pid, 0)
            except ChildProcessError:
                pass


if __name__ == "__main__":
    sys.exit(main())
