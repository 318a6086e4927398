"""What the clocks cost (issue 15): daemon CPU per Kalaha move and per Virtual Fight turn, with the
plain time limit and with a clock (bank + increment), measured side by side in one run.

Issue 15's requirement: "The clock adds no more than 5 % to the per-move server CPU of the Kalaha and
Virtual Fight benchmarks (measured side by side in one run against the code without clock lines)."

For each game two daemons of the work tree's gamed (``PYTHONPATH=<work tree> .venv/bin/twistd -n
gamed``) run for the whole run, both on CPU 1 (the bench on CPU 0, unless --no-pin):

- plain: Kalaha with the default per-move limit (``--kalaha-move-time 60``: no clock lines),
  Virtual Fight with ``--fight-turn-time 5``; the bots never send CLOCKS&ON.
- clock: ``--kalaha-clock 5m+2s`` (TIMECONTROL after START, a CLOCK line before every YOURMOVE,
  banks, increments and the round trip measured each move), ``--fight-clock 5m+1s,move=5s`` with
  bots that send ``CLOCKS&ON`` (TIMECONTROL once, a CLOCK line before every READY); the bots skip
  those lines.

The load is the one of ``bench/kalaha_load.py`` (--kalaha-games concurrent games of bots that answer
at once, a --warmup and a --window per round) and of ``bench/fight_load.py``'s scenario 1
(--fight-games games): the same bots, the same seeds and the same number of games on both sides.
The two daemons take turns, --rounds rounds, the order flipping every round (plain, clock; clock,
plain; ...), so that load from other programs hits both alike. Reported per round and as medians:
daemon CPU (user + sys) per move / per turn, the clock's extra cost in per cent (median clock /
median plain - 1; and the median of the per-round ratios), and MET / NOT MET against 5 %. The load
average and the CPU that went to other programs are printed beside the figures.

--plain-code COMMIT runs the plain daemons on that commit's gamed instead (``git archive`` into the
log directory, ``PYTHONPATH`` pointing there), e.g. a commit from before the clocks, to see what the
clock work costs a game that does not use it.

A default run takes about 2.5 minutes (``make bench-clocks``); it is not part of ``make bench``.
Exit status 0 whatever the figures, 2 when a daemon cannot start or a round cannot get going.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fight_load  # noqa: E402 - the Virtual Fight bots and daemon
import kalaha_load  # noqa: E402 - the Kalaha bots and daemon
from common import (  # noqa: E402 - the shared benchmark machinery
    ROOT,
    BenchError,
    choose_cpus,
    exit_on_sigterm,
    finish,
    fmt,
    gamed_version,
    guarded,
    import_work_tree,
    machine,
    note_code_change,
    perf,
    print_machine,
    print_profile,
    print_targets,
    raise_nofile,
    set_priority,
    stop_all,
    warn_if_disturbed,
)

PREFIX = "clock-bench"
TARGET = 0.05  # the clock may add at most 5 % to the daemon's CPU per move / per turn
VARIANTS = ("plain", "clock")


class KalahaClockGen(kalaha_load.LoadGen):
    """kalaha_load's bots (which take the last YOURMOVE of a read and skip every other line),
    counting the CLOCK lines they receive in the window. Used on both sides, so that both bench
    the same client."""

    clock_lines = 0

    def _recv(self, c):
        data = super()._recv(c)
        if data and self.measuring:
            self.clock_lines += data.count(b"CLOCK ")
        return data


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def kalaha_round(args, d, variant: str, r: int) -> dict:
    kargs = args.kalaha_args
    gen = KalahaClockGen(d.port, kargs.policy, kargs.seed, kargs.quickack)
    # a new range of tables every round: nothing left over from the last round's games
    w = kalaha_load.kalaha_games(kargs, d, args.kalaha_games, first_slot=(r + 1) * args.kalaha_games, gen=gen)
    w["clock_lines_per_op"] = gen.clock_lines / w["count"] if w["count"] else float("nan")
    w["us_per_op"] = w["server_us_per_op"]
    if w["errors"] or w["aborts"] or w["lost"]:
        raise BenchError(f"kalaha {variant}: {w['errors']} ERROR lines, {w['aborts']} aborts, {w['lost']} lost")
    return w


def fight_round(args, d, variant: str, r: int) -> dict:
    fargs = args.fight_args
    gen = fight_load.LoadGen(d.port, fargs)
    gen.clocks = variant == "clock" and not args.no_clocks_on
    w = fight_load.load_games(fargs, d, gen)
    w["count"] = w["turns"]
    w["clock_lines_per_op"] = w["clock_lines"] / w["turns"] if w["turns"] else float("nan")
    w["us_per_op"] = w["server_us_per_turn"]
    if w["errors"]:
        raise BenchError(f"fight {variant}: {w['errors']} unexpected lines: {w['error_samples']}")
    return w


GAMES = {
    # game: (unit, daemon factory, one round, the clock's daemon options)
    "kalaha": ("move", lambda args, name, extra: kalaha_load.daemon(args.kalaha_args, extra=extra), kalaha_round),
    "fight": ("turn", lambda args, name, extra: fight_load.daemon(args.fight_args, name, extra), fight_round),
}


def compare(args, game: str) -> dict:
    """Both daemons of ``game`` up for the whole comparison; --rounds rounds, the order flipping."""
    unit, make_daemon, one_round = GAMES[game]
    control = args.kalaha_clock if game == "kalaha" else args.fight_clock
    extra = {"plain": (), "clock": (f"--{game}-clock", control)}
    daemons = {}
    for v in VARIANTS:
        d = make_daemon(args, f"gamed-{v}", extra[v])
        if v == "plain" and args.plain_env is not None:
            d.env = args.plain_env
        daemons[v] = d.start()
    rounds = []
    try:
        for r in range(args.rounds):
            order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
            pair = {}
            for v in order:
                w = pair[v] = one_round(args, daemons[v], v, r)
                w["load_average"] = os.getloadavg()[0]
                print(
                    f"  round {r + 1} {v:<5}: {w['count']:,} {unit}s in {w['wall_s']:.1f} s, daemon "
                    f"{w['us_per_op']:,.1f} us/{unit} (CPU {w['server_cpu']:.0%}), bench CPU {w['client_cpu']:.0%}, "
                    f"other {w['other_cpu']:.0%}, {w['clock_lines_per_op']:.2f} CLOCK lines/{unit}, "
                    f"load {load_average()}",
                    flush=True,
                )
            rounds.append(pair)
        profile = {}
        for v in VARIANTS if game in args.profile else ():
            sub = args.kalaha_args if game == "kalaha" else args.fight_args
            sub.profile = [args.kalaha_games] if game == "kalaha" else ["load"]
            try:
                w = one_round(args, daemons[v], v, args.rounds)
            finally:
                sub.profile = []
            prof = w["profile"]
            kept = Path(prof["stacks"])
            mine = kept.with_name(f"{PREFIX}-profile-{game}-{v}.txt")
            kept.replace(mine)
            prof["stacks"] = str(mine)
            profile[v] = prof
    finally:
        for d in daemons.values():
            d.stop()
    us = {v: [p[v]["us_per_op"] for p in rounds] for v in VARIANTS}
    med = {v: statistics.median(us[v]) for v in VARIANTS}
    paired = [p["clock"]["us_per_op"] / p["plain"]["us_per_op"] - 1 for p in rounds]
    return {
        "game": game,
        "unit": unit,
        "control": control,
        "games": args.kalaha_games if game == "kalaha" else args.fight_games,
        "rounds": rounds,
        "median_us": med,
        "cost": med["clock"] / med["plain"] - 1,
        "cost_paired": paired,
        "cost_paired_median": statistics.median(paired),
        "profile": profile,
    }


def export_code(commit: str, where: str) -> tuple[dict[str, str], str]:
    """``commit``'s gamed/ and twisted/ exported into the directory ``where``; the environment that
    makes a daemon import it, and a description of it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", f"{commit}^{{commit}}"], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout.strip()
        archive = subprocess.run(["git", "archive", sha, "gamed", "twisted"], capture_output=True, cwd=ROOT, check=True)
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise BenchError(f"cannot export --plain-code {commit}: {e}") from None
    env = dict(os.environ)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([str(where), *rest])
    return env, f"commit {sha} (git archive, PYTHONPATH={where})"


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    a = results["args"]
    print_machine(results["machine"], "gamed/")
    if results.get("plain_code"):
        print(f"plain daemons' code: {results['plain_code']} (the clock daemons run the work tree)")
    print(
        f"pinning: daemons on CPU {a['server_cpu']}, bench on CPU {a['client_cpu']}; scheduling: {a['sched']}; "
        f"load average {results['load_before']} before, {results['load_after']} after (1, 5, 15 min)"
    )
    verdicts = []
    others = []
    for game in ("kalaha", "fight"):
        c = results.get(game)
        if not c:
            continue
        unit = c["unit"]
        title = "Kalaha" if game == "kalaha" else "Virtual Fight"
        plain = "--kalaha-move-time 60" if game == "kalaha" else "--fight-turn-time 5"
        print(
            f"\n{title}: {c['games']} concurrent games, {a['window']:g} s window per round; plain = {plain}, "
            f"clock = --{game}-clock {c['control']}" + (" + CLOCKS&ON" if game == "fight" and not a["no_clocks_on"] else "")
        )
        print(
            f"{'round':>5} {'us/' + unit + ' plain':>14} {'us/' + unit + ' clock':>14} {'clock/plain':>11} "
            f"{unit + 's/s plain':>13} {unit + 's/s clock':>13} {'CLOCK lines/' + unit:>16} {'other':>11} {'load':>5}"
        )
        for i, p in enumerate(c["rounds"], 1):
            w, k = p["plain"], p["clock"]
            others += [w["other_cpu"], k["other_cpu"]]
            print(
                f"{i:>5} {w['us_per_op']:>14,.1f} {k['us_per_op']:>14,.1f} {k['us_per_op'] / w['us_per_op'] - 1:>+11.1%} "
                f"{w['rate']:>13,.0f} {k['rate']:>13,.0f} {k['clock_lines_per_op']:>16.2f} "
                f"{w['other_cpu']:>5.0%}/{k['other_cpu']:<5.0%} {k['load_average']:>5.2f}"
            )
        print(
            f"  medians: {c['median_us']['plain']:,.1f} us per {unit} plain, {c['median_us']['clock']:,.1f} with the "
            f"clock -> {c['cost']:+.1%} (median of the per-round ratios {c['cost_paired_median']:+.1%}, range "
            f"{min(c['cost_paired']):+.1%} .. {max(c['cost_paired']):+.1%})"
        )
        for v, prof in c["profile"].items():
            print_profile(f"{title}, {v} (one extra round)", prof)
        verdicts.append(
            (
                f"{title}: the clock adds <= 5% to the daemon's CPU per {unit}",
                c["cost"] <= TARGET,
                f"{c['cost']:+.1%} ({fmt(c['median_us']['plain'], 1)} -> {fmt(c['median_us']['clock'], 1)} us/{unit})",
            )
        )
    print_targets(verdicts)
    warn_if_disturbed(others, "the daemons nor the bench", " during a window")
    return verdicts


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --rounds 3 --skip-fight --profile kalaha",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--rounds", type=int, default=5, help="rounds of (plain, clock) per game [%(default)s]")
    p.add_argument("--window", type=float, default=5.0, help="measured seconds per round and variant [%(default)s]")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds of play before each window [%(default)s]")
    p.add_argument("--kalaha-games", type=int, default=100, help="concurrent Kalaha games [%(default)s]")
    p.add_argument("--fight-games", type=int, default=50, help="concurrent Virtual Fight games [%(default)s]")
    p.add_argument("--kalaha-clock", default="5m+2s", help="the clock side's --kalaha-clock [%(default)s]")
    p.add_argument("--fight-clock", default="5m+1s,move=5s", help="the clock side's --fight-clock [%(default)s]")
    p.add_argument(
        "--plain-code", metavar="COMMIT",
        help="run the plain daemons on this commit's gamed (e.g. one from before the clocks) [the work tree]",
    )  # fmt: skip
    p.add_argument(
        "--no-clocks-on", action="store_true",
        help="the clock side's Fight bots do not send CLOCKS&ON (with --fight-clock 5s and --kalaha-clock 60s, "
        "which send no clock lines, and --plain-code: the cost of the clock code to games without clock lines)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=1, help="seed of the Kalaha bots' pit choice [%(default)s]")
    p.add_argument("--skip-kalaha", action="store_true", help="compare Virtual Fight only")
    p.add_argument("--skip-fight", action="store_true", help="compare Kalaha only")
    p.add_argument(
        "--profile", default="", metavar="GAME[,GAME]",
        help="after the rounds, one more round per variant of 'kalaha' and/or 'fight' sampled with py-spy; "
        "prints the daemon's hot spots with and without the clock",
    )  # fmt: skip
    p.add_argument("--profile-native", action="store_true", help="with --profile: C frames too (py-spy pauses the daemon)")
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument("--nice", type=int, default=0, help="niceness for the bench and the daemons (below 0 needs root)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemons and the bench to CPUs")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemons' logs (their directory is printed)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.kalaha_games < 1 or args.fight_games < 1 or args.window <= 0:
        p.error("--rounds, --kalaha-games and --fight-games must be at least 1, --window above 0")
    args.profile = [g.strip() for g in args.profile.split(",") if g.strip()]
    if any(g not in GAMES for g in args.profile):
        p.error("--profile takes 'kalaha' and/or 'fight'")
    common = ["--window", f"{args.window:g}", "--warmup", f"{args.warmup:g}"]
    # the two benchmarks' own defaults for everything else (bots, daemon options)
    args.kalaha_args = kalaha_load.parse_args(common + ["--seed", str(args.seed)])
    args.fight_args = fight_load.parse_args(common + ["--games", str(args.fight_games)])
    for sub in (args.kalaha_args, args.fight_args):
        sub.profile = []
        sub.profile_native = args.profile_native
        sub.profile_top = args.profile_top
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    pinned = choose_cpus(args)
    import_work_tree()  # both daemons run the work tree's gamed (kalaha_load alone runs the venv's)
    results: dict = {"machine": {}, "args": {}}
    logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    args.logdir = logdir
    t_start = perf()
    code_dirs: list[str] = []  # --plain-code's export

    def cleanup() -> None:
        stop_all(logdir, args.keep_logs, "daemon")
        for where in code_dirs:
            shutil.rmtree(where, ignore_errors=True)

    def body() -> int:
        results["machine"] = machine(gamed_version())
        raise_nofile(4 * max(args.kalaha_games, args.fight_games) + 200)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        args.sched = set_priority(args.nice)  # the daemons inherit it
        for sub in (args.kalaha_args, args.fight_args):
            sub.logdir, sub.server_cpu, sub.client_cpu, sub.sched = logdir, args.server_cpu, args.client_cpu, args.sched
        results["args"] = {k: v for k, v in vars(args).items() if not k.endswith(("_args", "_env"))}
        args.plain_env = None
        if args.plain_code:
            code_dirs.append(tempfile.mkdtemp(prefix=PREFIX + "-code-"))
            args.plain_env, results["plain_code"] = export_code(args.plain_code, code_dirs[0])
        results["load_before"] = load_average()
        if not args.skip_kalaha:
            print(
                f"kalaha: {args.kalaha_games} games, plain vs --kalaha-clock {args.kalaha_clock}, {args.rounds} rounds ...", flush=True
            )
            results["kalaha"] = compare(args, "kalaha")
        if not args.skip_fight:
            print(
                f"fight: {args.fight_games} games, plain vs --fight-clock {args.fight_clock}, {args.rounds} rounds ...", flush=True
            )
            results["fight"] = compare(args, "fight")
        results["load_after"] = load_average()
        note_code_change(results["machine"], gamed_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("clock_cost", body, cleanup)


if __name__ == "__main__":
    sys.exit(main())
