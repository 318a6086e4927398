#!/usr/bin/env python3
"""Connect Four Perfect level benchmark: is every move perfect, and is every move <= 1 s?

It measures the shipped solver engine as `make examples` installs it (engines/solver/engine.so
with its opening book beside it) in three parts:

1. Pons' test sets (tests/data/connect4-pons-testsets.tar.xz, all six, all 1000 lines each unless
   --pons-limit): for every position the library (loaded in this process with ctypes) solves the
   score, which must equal the file's, then, after emptying its transposition table (a cold start,
   as in a new engine host), chooses Perfect's move (C4_BestMove, timed); the move is checked by
   solving the position after it (its score must be the negated expected score).
2. --positions (1000) seeded random positions (--seed), non-terminal, spread evenly over every
   length 0..41 (random legal moves; a position in which somebody has won is drawn again). For each
   one a fresh engine host (python -m gamed.connect4.host, the daemon's path to a native engine)
   gets NEWGAME 7 6, the position's moves as PLAY, then AUTO <player> 2 (timed from writing the
   request to reading the answer). The move is checked against the exact scores of all the
   position's children from C4_Solve (no time limit; kept in --reference, a JSON file reused when
   it holds the same positions). The host's memory is read from /proc before it quits.
3. --verify-book (200) seeded random positions after 12 moves: the book's score equals the score
   of the same library's search without the book (a copy of it in a folder without the book).
4. --tail N (0: not run) more random positions of each length 12..17, the hardest lengths (the
   first ones the book does not answer), in this process with an emptied table before each:
   Perfect's move timed and checked (the score after it is the negated score of the position).
5. --extra MOVES,MOVES,... (1-based column sequences, e.g. the slowest ones known): timed the
   same way and checked against the exact scores of all their children.

It prints MET/NOT MET for "every move perfect" and "max <= 1 s a move", and mean/p99/max per length
band. It is a benchmark, not a test: it exits 0 whatever the figures are, 2 when it cannot run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    ROOT,
    BenchError,
    CpuWindow,
    finish,
    fmt,
    machine,
    pct,
    perf,
    print_targets,
    wait_quiet,
    warn_if_disturbed,
)
from connect4_solver import SETS, load_sets  # noqa: E402

ENGINE = ROOT / "engines" / "solver" / "engine.so"
BOOK_NAME = "book_12ply_distances.dat"
INVALID = -1000
MOVE_LIMIT_S = 1.0
# length bands for the report: before the book, the book's own depth, then on without it
BANDS = ((0, 11), (12, 12), (13, 15), (16, 20), (21, 41))


def load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.C4_Solve.argtypes, lib.C4_Solve.restype = [ctypes.c_char_p], ctypes.c_long
    lib.C4_BestMove.argtypes, lib.C4_BestMove.restype = [ctypes.c_char_p], ctypes.c_long
    lib.C4_BookDepth.argtypes, lib.C4_BookDepth.restype = [], ctypes.c_long
    lib.C4_SolveNodes.argtypes, lib.C4_SolveNodes.restype = [], ctypes.c_longlong
    lib.C4_ClearTable.argtypes, lib.C4_ClearTable.restype = [], None
    return lib


def children_cpu() -> float:
    """CPU seconds of this process's ended children (the engine hosts)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def moves_text(columns) -> bytes:
    return "".join(str(c + 1) for c in columns).encode()


def random_position(rng: random.Random, length: int) -> list[int]:
    """Columns (0-based) of ``length`` random legal moves after which nobody has four in a line."""
    while True:
        heights, cols, owner = [0] * 7, [], {}
        for i in range(length):
            c = rng.choice([c for c in range(7) if heights[c] < 6])
            owner[c, heights[c]] = i % 2
            heights[c] += 1
            cols.append(c)
        if not any(
            all(owner.get((x + k * dx, y + k * dy)) == p for k in range(4))
            for (x, y), p in owner.items()
            for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1))
        ):
            return cols


def child_scores(lib, columns) -> dict[int, int]:
    """{column: exact score of playing it for the side to move}, each child solved exactly."""
    scores = {}
    base = moves_text(columns)
    for c in range(7):
        if columns.count(c) >= 6:
            continue
        s = lib.C4_Solve(base + str(c + 1).encode())
        scores[c] = 22 - (len(columns) // 2 + 1) if s == INVALID else -s  # INVALID: this stone wins
    return scores


# --- part 1: Pons' test sets ------------------------------------------------------------------


def run_pons(lib, names: list[str], limit: int | None) -> list[dict]:
    out = []
    for name, rows in load_sets(names).items():
        rows = rows[:limit] if limit else rows
        print(f"{name}: {len(rows)} positions ...", flush=True)
        score_bad, move_bad, times, slowest = [], [], [], ("", 0.0)
        for moves, expected in rows:
            if lib.C4_Solve(moves) != expected:
                score_bad.append(moves.decode())
            lib.C4_ClearTable()
            t0 = perf()
            col = lib.C4_BestMove(moves)
            dt = perf() - t0
            times.append(dt)
            if dt > slowest[1]:
                slowest = (moves.decode(), dt)
            after = lib.C4_Solve(moves + str(col + 1).encode()) if 0 <= col < 7 else None
            won_now = after == INVALID and expected == 22 - (len(moves) // 2 + 1)
            if not (won_now or after == -expected):
                move_bad.append(f"{moves.decode()} -> column {col}")
        srt = sorted(times)
        out.append({
            "set": name, "positions": len(rows), "scores_wrong": score_bad[:20], "moves_wrong": move_bad[:20],
            "n_scores_wrong": len(score_bad), "n_moves_wrong": len(move_bad),
            "mean_s": sum(times) / len(times), "p99_s": pct(srt, 0.99), "max_s": srt[-1], "slowest": slowest[0],
        })
    return out


# --- part 2: random positions through the engine host -------------------------------------------


class Host:
    """One engine host process (the daemon's way to run a native engine), driven synchronously."""

    def __init__(self, engine: Path):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gamed.connect4.host", str(engine)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=env,
        )
        if self._line() != "READY":
            raise BenchError("the engine host did not start")

    def _line(self) -> str:
        return self.proc.stdout.readline().decode().strip()

    def ask(self, request: str) -> str:
        self.proc.stdin.write(request.encode() + b"\n")
        self.proc.stdin.flush()
        reply = self._line()
        if not reply.startswith("OK"):
            raise BenchError(f"engine host: {request} -> {reply!r}")
        return reply[3:]

    def memory_kb(self) -> dict[str, int]:
        found = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                    found[key] = int(value.split()[0])
        return found

    def close(self) -> None:
        try:
            self.proc.stdin.write(b"QUIT\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def positions(seed: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [random_position(rng, i % 42) for i in range(count)]


def reference(lib, cases: list[list[int]], path: Path) -> list[dict[int, int]]:
    """Exact child scores of every case, from ``path`` when it holds these very positions."""
    try:
        cached = json.loads(path.read_text())
        if cached["positions"] == cases:
            print(f"reference child scores: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} (cached)")
            return [{int(k): v for k, v in r.items()} for r in cached["scores"]]
    except (OSError, ValueError, KeyError):
        pass
    t0 = perf()
    scores = [child_scores(lib, cols) for cols in cases]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"positions": cases, "scores": scores}) + "\n")
    print(f"reference child scores: computed in {perf() - t0:.0f} s, kept in {path}")
    return scores


def run_random(engine: Path, cases, refs, reuse_host: bool) -> dict:
    rows, memory, starts = [], [], []
    host = None
    for i, (cols, scores) in enumerate(zip(cases, refs)):
        if host is None:
            t0 = perf()
            host = Host(engine)
            host.ask("NEWGAME 7 6")  # the first call loads the book
            starts.append(perf() - t0)
        else:
            host.ask("NEWGAME 7 6")
        for k, c in enumerate(cols):
            host.ask(f"PLAY {k % 2} {c}")
        t0 = perf()
        col = int(host.ask(f"AUTO {len(cols) % 2} 2"))
        dt = perf() - t0
        host.ask("ENDGAME")
        best = max(scores.values())
        rows.append({"length": len(cols), "moves": moves_text(cols).decode(), "column": col, "seconds": dt,
                     "perfect": scores.get(col) == best, "best": best, "got": scores.get(col)})
        if not reuse_host or i == len(cases) - 1:
            memory.append(host.memory_kb())
            host.close()
            host = None
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(cases)} positions", flush=True)
    return {"rows": rows, "memory": memory, "start_s": starts}


def band_figures(rows: list[dict]) -> list[dict]:
    out = []
    for lo, hi in BANDS:
        t = sorted(r["seconds"] for r in rows if lo <= r["length"] <= hi)
        if t:
            out.append({"band": f"{lo}-{hi}" if lo != hi else str(lo), "n": len(t), "mean_s": sum(t) / len(t),
                        "p99_s": pct(t, 0.99), "max_s": t[-1],
                        "perfect": sum(r["perfect"] for r in rows if lo <= r["length"] <= hi)})
    return out


# --- part 4: the tail of the hardest lengths ----------------------------------------------------


def run_tail(lib, per_length: int, seed: int) -> list[dict]:
    rng = random.Random(seed + 1)
    out = []
    for length in range(12, 18):
        times, wrong, slowest = [], [], ("", 0.0)
        for _ in range(per_length):
            cols = random_position(rng, length)
            moves = moves_text(cols)
            lib.C4_ClearTable()
            t0 = perf()
            col = lib.C4_BestMove(moves)
            dt = perf() - t0
            times.append(dt)
            if dt > slowest[1]:
                slowest = (moves.decode(), dt)
            score = lib.C4_Solve(moves)
            after = lib.C4_Solve(moves + str(col + 1).encode())
            if not (after == -score or (after == INVALID and score == 22 - (length // 2 + 1))):
                wrong.append(f"{moves.decode()} -> column {col}")
        t = sorted(times)
        out.append({"length": length, "n": len(t), "wrong": wrong, "mean_s": sum(t) / len(t),
                    "p99_s": pct(t, 0.99), "max_s": t[-1], "slowest": slowest[0]})
        print(f"  length {length}: {len(t)} positions, max {ms(t[-1])} ms", flush=True)
    return out


# --- part 3: the book against the search ---------------------------------------------------------


def verify_book(booked, engine: Path, count: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="c4-nobook-") as d:
        copy = Path(d) / "engine.so"
        shutil.copy(engine, copy)
        bare = load(copy)
        if bare.C4_BookDepth() != -1:
            raise BenchError("the copy without a book still found one")
        rng = random.Random(seed)
        agree, disagree, t_search = 0, [], 0.0
        while agree + len(disagree) < count:
            moves = moves_text(random_position(rng, 12))
            score = booked.C4_Solve(moves)
            if score == 15:  # the side to move wins at once: not in the book
                continue
            t0 = perf()
            searched = bare.C4_Solve(moves)
            t_search += perf() - t0
            if searched == score:
                agree += 1
            else:
                disagree.append({"moves": moves.decode(), "book": score, "search": searched})
    return {"positions": count, "agree": agree, "disagree": disagree, "search_s": t_search}


def code_version() -> str:
    import hashlib

    digest = hashlib.sha1((ROOT / "gamed" / "connect4" / "native" / "solver.c").read_bytes()).hexdigest()[:10]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return f"{ENGINE.relative_to(ROOT)} (solver.c sha1 {digest}), git HEAD {head or '?'}"


def ms(s: float) -> str:
    return fmt(s * 1e3, 2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", type=Path, default=ENGINE, help="the engine library [%(default)s]")
    p.add_argument("--sets", default=",".join(SETS), help="Pons sets, comma-separated ('' for none) [%(default)s]")
    p.add_argument("--pons-limit", type=int, default=None, help="only the first N positions of each set")
    p.add_argument("--positions", type=int, default=1000, help="random positions [%(default)s]")
    p.add_argument("--seed", type=int, default=12, help="seed of the random positions [%(default)s]")
    p.add_argument("--reference", type=Path, default=None,
                   help="cache of the exact child scores [bench/cache/connect4-perfect-seed<seed>-n<positions>.json]")
    p.add_argument("--reuse-host", action="store_true",
                   help="one engine host for all random positions (its table stays warm) instead of one per position")
    p.add_argument("--verify-book", type=int, default=200, help="book entries checked against the search [%(default)s]")
    p.add_argument("--tail", type=int, default=0, help="extra positions of each length 12..17 (in process) [%(default)s]")
    p.add_argument("--extra", default="", help="more positions (1-based moves, comma-separated) to time")
    p.add_argument("--wait-quiet", type=float, default=30, help="wait up to S s for a quiet machine first [%(default)s]")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    args = p.parse_args()
    t_start = perf()
    engine = args.engine.resolve()
    if not engine.exists():
        print(f"connect4_perfect: {engine} not found; run `make examples`", file=sys.stderr)
        return 2
    lib = load(engine)
    book = lib.C4_BookDepth()
    if book < 0:
        print(f"connect4_perfect: WARNING: no opening book beside {engine} ({BOOK_NAME}); Perfect is then "
              "not exact: measured anyway", file=sys.stderr)
    results: dict = {"machine": machine(code_version()), "args": vars(args), "book_depth": book}
    print(f"machine: {results['machine']['nproc']} CPUs, {results['machine']['cpu']}; code: {results['machine']['code']}")
    print(f"waiting for a quiet machine: {wait_quiet(args.wait_quiet)}")
    verdicts: list[tuple[str, bool | None, str]] = []
    other = []
    try:
        names = [s for s in args.sets.split(",") if s]
        if names:
            window = CpuWindow()
            results["pons"] = run_pons(lib, names, args.pons_limit)
            window.stop()
            other.append(window.other / window.wall)
            print(f"\n{'set':<11} {'positions':>9} {'scores ok':>9} {'moves ok':>9} {'mean ms':>9} {'p99 ms':>9} {'max ms':>9}  slowest")
            for r in results["pons"]:
                print(f"{r['set']:<11} {r['positions']:>9} {r['positions'] - r['n_scores_wrong']:>9} "
                      f"{r['positions'] - r['n_moves_wrong']:>9} {ms(r['mean_s']):>9} {ms(r['p99_s']):>9} "
                      f"{ms(r['max_s']):>9}  {r['slowest']}")
                for w in r["scores_wrong"][:3] + r["moves_wrong"][:3]:
                    print(f"    WRONG {w}")
        if args.positions:
            cases = positions(args.seed, args.positions)
            ref_path = args.reference or ROOT / "bench" / "cache" / f"connect4-perfect-seed{args.seed}-n{args.positions}.json"
            refs = reference(lib, cases, ref_path)
            window, children0 = CpuWindow(), children_cpu()
            print(f"random positions: {len(cases)} through {'one host' if args.reuse_host else 'a fresh host each'} ...", flush=True)
            rnd = run_random(engine, cases, refs, args.reuse_host)
            w = window.stop()
            results["random"] = {"bands": band_figures(rnd["rows"]), "memory_kb": rnd["memory"],
                                 "host_start_s": rnd["start_s"], "wrong": [r for r in rnd["rows"] if not r["perfect"]],
                                 "slowest": sorted(rnd["rows"], key=lambda r: -r["seconds"])[:5]}
            print(f"\n{'length':<7} {'positions':>9} {'perfect':>8} {'mean ms':>9} {'p99 ms':>9} {'max ms':>9}")
            for b in results["random"]["bands"]:
                print(f"{b['band']:<7} {b['n']:>9} {b['perfect']:>8} {ms(b['mean_s']):>9} {ms(b['p99_s']):>9} {ms(b['max_s']):>9}")
            for r in results["random"]["wrong"][:5]:
                print(f"    NOT PERFECT after {r['moves'] or '(empty)'}: column {r['column']} scores {r['got']}, best {r['best']}")
            mem = rnd["memory"]
            hwm = max(m.get("VmHWM", 0) for m in mem)
            starts = sorted(rnd["start_s"])
            print(f"engine host: peak RSS {hwm / 1024:.1f} MiB (the last: anon {mem[-1].get('RssAnon', 0) / 1024:.1f} MiB, "
                  f"file-backed {mem[-1].get('RssFile', 0) / 1024:.1f} MiB, the book shared between hosts); "
                  f"start to the first game {ms(pct(starts, 0.5))} ms median, {ms(starts[-1])} ms max")
            results["random"]["peak_rss_kb"] = hwm
            other.append((w.other - (children_cpu() - children0)) / w.wall)  # the hosts are no others
        if args.verify_book:
            t0 = perf()
            results["book_check"] = vb = verify_book(lib, engine, args.verify_book, args.seed)
            print(f"\nbook check: {vb['agree']}/{vb['positions']} positions after 12 moves agree with the search "
                  f"({vb['search_s']:.0f} s of search, {perf() - t0:.0f} s in all)")
        if args.tail:
            print(f"\ntail: {args.tail} positions of each length 12..17 ...", flush=True)
            window = CpuWindow()
            results["tail"] = run_tail(lib, args.tail, args.seed)
            window.stop()
            other.append(window.other / window.wall)
            print(f"\n{'length':<7} {'positions':>9} {'perfect':>8} {'mean ms':>9} {'p99 ms':>9} {'max ms':>9}  slowest")
            for r in results["tail"]:
                print(f"{r['length']:<7} {r['n']:>9} {r['n'] - len(r['wrong']):>8} {ms(r['mean_s']):>9} "
                      f"{ms(r['p99_s']):>9} {ms(r['max_s']):>9}  {r['slowest']}")
        if args.extra:
            results["extra"] = []
            for text in args.extra.split(","):
                cols = [int(ch) - 1 for ch in text.strip()]
                lib.C4_ClearTable()
                t0 = perf()
                col = lib.C4_BestMove(moves_text(cols))
                dt = perf() - t0
                scores = child_scores(lib, cols)
                ok = scores.get(col) == max(scores.values())
                results["extra"].append({"moves": text, "column": col, "seconds": dt, "perfect": ok})
                print(f"extra {text}: column {col} in {ms(dt)} ms, {'perfect' if ok else 'NOT PERFECT'}")
    except BenchError as e:
        print(f"connect4_perfect: {e}", file=sys.stderr)
        return 2

    all_moves = sum(r["positions"] for r in results.get("pons", []))
    bad_moves = sum(r["n_moves_wrong"] for r in results.get("pons", []))
    bad_scores = sum(r["n_scores_wrong"] for r in results.get("pons", []))
    max_pons = max((r["max_s"] for r in results.get("pons", [])), default=0.0)
    rnd_bands = results.get("random", {}).get("bands", [])
    n_rnd = sum(b["n"] for b in rnd_bands)
    ok_rnd = sum(b["perfect"] for b in rnd_bands)
    max_rnd = max((b["max_s"] for b in rnd_bands), default=0.0)
    tail = results.get("tail", [])
    n_tail, bad_tail = sum(r["n"] for r in tail), sum(len(r["wrong"]) for r in tail)
    max_tail = max((r["max_s"] for r in tail), default=0.0)
    extra = results.get("extra", [])
    max_extra = max((r["seconds"] for r in extra), default=0.0)
    bad_tail += sum(not r["perfect"] for r in extra)
    n_tail += len(extra)
    if all_moves:
        verdicts.append(("every Pons score correct", bad_scores == 0, f"{all_moves - bad_scores}/{all_moves}"))
    verdicts.append(("every move perfect", bad_moves == 0 and ok_rnd == n_rnd and bad_tail == 0 and book >= 0,
                     f"{all_moves - bad_moves}/{all_moves} Pons positions, {ok_rnd}/{n_rnd} random positions"
                     + (f", {n_tail - bad_tail}/{n_tail} tail and extra positions" if tail or extra else "")
                     + ("" if book >= 0 else " (NO BOOK: Perfect is not exact)")))
    verdicts.append((f"max <= {MOVE_LIMIT_S:g} s a move", max(max_pons, max_rnd, max_tail, max_extra) <= MOVE_LIMIT_S,
                     f"{ms(max_pons)} ms on the Pons sets (cold table), {ms(max_rnd)} ms through the host"
                     + (f", {ms(max_tail)} ms on the tail" if tail else "")
                     + (f", {ms(max_extra)} ms on the extra positions" if extra else "")))
    if "book_check" in results:
        vb = results["book_check"]
        verdicts.append(("book agrees with the search", not vb["disagree"], f"{vb['agree']}/{vb['positions']}"))
    print_targets(verdicts)
    warn_if_disturbed(other, measured="the engine nor this benchmark", during=" during a part", priority=None)
    return finish(results, verdicts, t_start, args.json)


if __name__ == "__main__":
    sys.exit(main())
