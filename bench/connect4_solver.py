#!/usr/bin/env python3
"""Connect Four solver benchmark: solve Pascal Pons' test sets with the C solver through ctypes.

The solver is gamed/connect4/native/solver.c (libsolver.so, built with
`make -C gamed/connect4/native libsolver.so book`, which also copies its opening book beside it
from the bitbully-databases package; --no-book measures the search alone); its export
`long C4_Solve(const char *moves)` returns the exact score in the Pons convention (-1000 for an
invalid sequence). The test sets are read straight from tests/data/connect4-pons-testsets.tar.xz;
each line is `MOVES SCORE`.

For every set the bench solves the positions one at a time, in file order, in this process,
checks each score against the expected one (after one untimed warm-up solve, since the first
call allocates the transposition table) and times each call (time.perf_counter around the
ctypes call, so the ~1 us of ctypes overhead is included). It prints correct/total and the mean,
median, 99th percentile and max time per position, then each project target as MET or NOT MET.
It is a benchmark, not a test: it exits 0 whatever the figures are, 2 when the library or the
test sets cannot be loaded.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    ROOT,
    BenchError,
    finish,
    fmt,
    machine,
    pct,
    perf,
    print_targets,
)

NATIVE = ROOT / "gamed" / "connect4" / "native"
LIB = NATIVE / "libsolver.so"
TESTSETS = ROOT / "tests" / "data" / "connect4-pons-testsets.tar.xz"
INVALID = -1000
# solved once, untimed, before the sets: the first C4_Solve allocates the transposition table
WARMUP = (b"2252576253462244111563365343671351441", -1)  # Test_L3_R1, line 1

# set name -> default number of positions (None: all of them), in the order they are run
SETS: dict[str, int | None] = {
    "Test_L3_R1": None,
    "Test_L2_R1": None,
    "Test_L2_R2": None,
    "Test_L1_R1": None,
    "Test_L1_R2": None,
    "Test_L1_R3": None,
}

# set name -> target mean time per position in seconds (Test_L1_R3 has no target)
TARGET_MEAN = {
    "Test_L3_R1": 0.05e-3,
    "Test_L2_R1": 0.5e-3,
    "Test_L1_R1": 5e-3,
    "Test_L2_R2": 50e-3,
    "Test_L1_R2": 2.0,
}


def code_version() -> str:
    """The solver measured: git HEAD, whether solver.c has uncommitted changes, and its sha1."""
    import hashlib

    src = NATIVE / "solver.c"
    digest = hashlib.sha1(src.read_bytes()).hexdigest()[:10]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", str(src.relative_to(ROOT))], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        commit = head.stdout.strip() or "?"
    except OSError:
        commit, dirty = "?", ""
    return f"{LIB.relative_to(ROOT)}; git HEAD {commit}, solver.c {'modified' if dirty else 'clean'}, sha1 {digest}"


BOOK = NATIVE / "book_12ply_distances.dat"


def build(skip: bool, book: bool) -> None:
    if not skip:
        targets = ["libsolver.so"] + (["book", f"PYTHON={sys.executable}"] if book else [])
        r = subprocess.run(["make", "-C", str(NATIVE), *targets], capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"make -C {NATIVE.relative_to(ROOT)} failed:\n{r.stdout}{r.stderr}")
    if not LIB.exists():
        raise BenchError(f"{LIB} not found; run `make -C gamed/connect4/native`")
    if not book and BOOK.exists():
        BOOK.unlink()  # the library looks for its book beside it


def load_solver() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(LIB))
    lib.C4_Solve.argtypes = [ctypes.c_char_p]
    lib.C4_Solve.restype = ctypes.c_long
    lib.C4_SolveNodes.argtypes = []
    lib.C4_SolveNodes.restype = ctypes.c_longlong
    lib.C4_BookDepth.argtypes = []
    lib.C4_BookDepth.restype = ctypes.c_long
    return lib


def load_sets(names: list[str]) -> dict[str, list[tuple[bytes, int]]]:
    out: dict[str, list[tuple[bytes, int]]] = {}
    try:
        with tarfile.open(TESTSETS) as tar:
            for name in names:
                f = tar.extractfile(f"connect4-pons-testsets/{name}")
                if f is None:
                    raise BenchError(f"{name} is not a file in {TESTSETS.name}")
                rows = []
                for line in f.read().decode().splitlines():
                    if line.strip():
                        moves, score = line.split()
                        rows.append((moves.encode(), int(score)))
                out[name] = rows
    except (OSError, KeyError, tarfile.TarError) as e:
        raise BenchError(f"cannot read the test sets from {TESTSETS}: {e}") from None
    return out


def run_set(lib, name: str, rows: list[tuple[bytes, int]], max_seconds: float) -> dict:
    solve = lib.C4_Solve
    nodes = lib.C4_SolveNodes
    times: list[float] = []
    node_counts: list[int] = []
    wrong: list[dict] = []
    invalid = 0
    mismatches = 0
    t_set = perf()
    stopped = False
    for moves, expected in rows:
        t0 = perf()
        got = solve(moves)
        dt = perf() - t0
        times.append(dt)
        node_counts.append(nodes())
        if got != expected:
            mismatches += 1
            if got == INVALID:
                invalid += 1
            if len(wrong) < 20:
                wrong.append({"moves": moves.decode(), "expected": expected, "got": got})
        if max_seconds and perf() - t_set > max_seconds and len(times) < len(rows):
            stopped = True
            break
    n = len(times)
    correct = n - mismatches
    return {
        "set": name,
        "asked": len(rows),
        "solved": n,
        "stopped_by_time": stopped,
        "correct": correct,
        "invalid": invalid,
        "wrong": wrong,
        "mean_s": sum(times) / n if n else float("nan"),
        "median_s": pct(sorted(times), 0.5),
        "p99_s": pct(sorted(times), 0.99),
        "max_s": max(times) if n else float("nan"),
        "total_s": sum(times),
        "mean_nodes": sum(node_counts) / n if n else float("nan"),
        "max_nodes": max(node_counts) if n else 0,
        "max_position": rows[times.index(max(times))][0].decode() if n else "",
    }


def ms(s: float) -> str:
    return fmt(s * 1e3, 3)


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    m = results["machine"]
    print(f"\nmachine: {m['nproc']} CPUs, {m['cpu']}, Python {m['python']}, Linux {m['kernel']}")
    print(f"code: {m['code']}")
    print(f"\n{'set':<11} {'correct':>11} {'mean ms':>10} {'median ms':>10} {'p99 ms':>10} {'max ms':>10} {'mean nodes':>12}")
    for r in results["sets"]:
        note = f"  (stopped after {r['total_s']:.0f} s)" if r["stopped_by_time"] else ""
        print(
            f"{r['set']:<11} {r['correct']:>5}/{r['solved']:<5} {ms(r['mean_s']):>10} {ms(r['median_s']):>10} "
            f"{ms(r['p99_s']):>10} {ms(r['max_s']):>10} {r['mean_nodes']:>12,.0f}{note}"
        )
        for w in r["wrong"][:5]:
            print(f"    WRONG {w['moves']}: expected {w['expected']}, got {w['got']}")
    verdicts: list[tuple[str, bool | None, str]] = []
    done = results["sets"]
    total = sum(r["solved"] for r in done)
    correct = sum(r["correct"] for r in done)
    verdicts.append(("every score correct", correct == total, f"{correct}/{total} over {', '.join(r['set'] for r in done)}"))
    for r in done:
        limit = TARGET_MEAN.get(r["set"])
        if limit is None:
            continue
        in_file = results["positions_in_file"][r["set"]]
        part = "" if r["solved"] == in_file else f", first {r['solved']} of {in_file}"
        verdicts.append(
            (
                f"mean <= {fmt(limit * 1e3, 2 if limit < 1e-3 else 1 if limit < 1 else 0)} ms on {r['set']}",
                r["mean_s"] <= limit,
                f"{ms(r['mean_s'])} ms (max {ms(r['max_s'])} ms{part})",
            )
        )
    print_targets(verdicts)
    return verdicts


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --sets Test_L3_R1,Test_L2_R1 --json /tmp/c4.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sets",
        default=",".join(SETS),
        help="comma-separated test sets, run in that order [%(default)s]",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="solve only the first N positions of every set (default: all of them)",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=0,
        help="stop a set once it has taken this long (0: never) [%(default)s]",
    )
    p.add_argument("--no-build", action="store_true", help="do not run make; use the libsolver.so there is")
    p.add_argument("--no-book", action="store_true", help="without the opening book: the search alone (slow early on)")
    p.add_argument(
        "--sample",
        default="",
        metavar="LENGTHS",
        help="also solve --sample-count seeded random positions of each of these lengths (comma-separated), "
        "e.g. with --no-book to see what a book of that depth would cost to make",
    )
    p.add_argument("--sample-count", type=int, default=200, help="positions per --sample length [%(default)s]")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    args = p.parse_args()

    t_start = perf()
    names = [s.strip() for s in args.sets.split(",") if s.strip()]  # --sets '' solves no set
    unknown = [s for s in names if s not in SETS]
    if unknown:
        p.error(f"unknown set(s) {', '.join(unknown)}; known: {', '.join(SETS)}")
    try:
        build(args.no_build, not args.no_book)
        lib = load_solver()
        all_rows = load_sets(names)
    except (BenchError, OSError) as e:
        print(f"connect4_solver: {e}", file=sys.stderr)
        return 2

    book = lib.C4_BookDepth()
    print(f"opening book: {'every position after %d moves' % book if book >= 0 else 'none (the search alone)'}")
    results: dict = {
        "book_depth": book,
        "machine": machine(code_version()),
        "args": vars(args),
        "positions_in_file": {n: len(r) for n, r in all_rows.items()},
        "sets": [],
    }
    warm = lib.C4_Solve(WARMUP[0])
    if warm != WARMUP[1]:
        print(f"connect4_solver: warm-up position scored {warm}, expected {WARMUP[1]}", file=sys.stderr)
    for name in names:
        limit = args.limit if args.limit is not None else SETS[name]
        rows = all_rows[name][:limit] if limit else all_rows[name]
        print(f"{name}: {len(rows)} positions ...", flush=True)
        results["sets"].append(run_set(lib, name, rows, args.max_seconds))
    verdicts = report(results) if names else []
    if args.sample:
        results["samples"] = run_samples(lib, [int(x) for x in args.sample.split(",") if x], args.sample_count)
    return finish(results, verdicts, t_start, args.json)


def run_samples(lib, lengths: list[int], count: int) -> list[dict]:
    """Solve ``count`` random positions of each length (random legal moves, nobody has won; seed 10)."""
    from connect4_perfect import random_position

    rng = random.Random(10)
    out = []
    print(f"\n{'length':<7} {'positions':>9} {'mean ms':>10} {'p99 ms':>10} {'max ms':>10} {'mean nodes':>12}")
    for length in lengths:
        times, nodes = [], []
        for _ in range(count):
            moves = "".join(str(c + 1) for c in random_position(rng, length)).encode()
            t0 = perf()
            lib.C4_Solve(moves)
            times.append(perf() - t0)
            nodes.append(lib.C4_SolveNodes())
        t = sorted(times)
        row = {"length": length, "n": count, "mean_s": sum(t) / count, "p99_s": pct(t, 0.99), "max_s": t[-1],
               "mean_nodes": sum(nodes) / count}
        out.append(row)
        print(f"{length:<7} {count:>9} {ms(row['mean_s']):>10} {ms(row['p99_s']):>10} {ms(row['max_s']):>10} "
              f"{row['mean_nodes']:>12,.0f}", flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
