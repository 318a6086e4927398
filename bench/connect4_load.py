"""Connect Four load benchmark: do other games keep their latency while solver games think?

One real daemon (the work tree's gamed: ``PYTHONPATH=. .venv/bin/twistd -n gamed --kalaha
tcp:0 --connect4 tcp:0 --connect4-engines engines --connect4-engine-time 10``, every other game
off, ports chosen free by this script) serves Kalaha and Connect Four, with the native engines of
engines/ (built by ``make examples``). This process is a single-threaded epoll load generator
(the Kalaha bots of bench/kalaha_load.py) that also plays Connect Four against the solver:

A. Baseline: N Kalaha games (person-vs-person bots at tables ``bench<i>``, a new pair as each game
   ends). Each bot answers YOURMOVE with a random legal pit after ``--think`` seconds, as a program
   or a person would (``--think 0``: at once, which saturates the daemon instead). Measured for
   ``--seconds``: the move latency (from just before a bot's send() of its move to the epoll
   wakeup that delivers the PLAYED line echoing it) and its p50/p95/p99/max.
B. The same games, measured the same way, while 2 Connect Four clients play ``PLAY solver:2
   FIRST`` (the solver's Perfect level, which may think up to 3 s per move on early positions, in
   its own host process). They answer each YOURMOVE at once with a random legal column and start
   a new game as soon as one ends, so 2 solver games are thinking throughout. The daemon's side
   is checked too: the CPU time of its child processes (the engine hosts, alive or reaped) over
   the window, and how many of them were alive at each sample.

The daemon and the load generator are not pinned to CPUs: the solver hosts are the daemon's
children and would inherit its CPU. Target (issue 6): the daemon keeps serving other games with
p99 latency <= 10 ms while 2 solver games think. A benchmark, not a test: it exits 0 whatever the
figures are, 2 when it cannot run, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import heapq
import os
import random
import socket
import sys
import tempfile

from common import (
    BIN,
    HOST,
    ROOT,
    BenchError,
    CpuWindow,
    Server,
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
    raise_nofile,
    set_priority,
    stop_all,
    wait_quiet,
    warn_if_disturbed,
    gamed_version,
    import_work_tree,
)
from kalaha_load import BOT, EPOLLIN, EPOLLOUT, Conn, LoadGen, Slot, free_port, start_games

PREFIX = "connect4-load-bench"
C4 = 4  # connection kind: a Connect Four client playing the solver
TARGET_P99_MS = 10.0
ENGINE = b"solver:2"
SOLVER_GAMES = 2


# --- the daemon and its engine hosts ---------------------------------------------------------


def daemon(args) -> Server:
    kalaha, connect4 = free_port(), free_port()
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        "--kalaha", f"tcp:port={kalaha}:interface={HOST}",
        "--connect4", f"tcp:port={connect4}:interface={HOST}",
        "--connect4-engines", str(ROOT / "engines"), "--connect4-engine-time", "10",
        "--fight", "none", "--fight-gui", "none", "--combat", "none", "--combat-text", "none",
        "--web", "none", "--records", "none",
        "--max-per-peer", "0", "--max-connections", "0", "--kalaha-pair-delay", "0.5",
    ]  # fmt: skip
    server = Server("gamed", argv, f"starting on {connect4}", None, args.logdir)
    server.kalaha_port, server.connect4_port = kalaha, connect4
    return server


def _stat_cpu(fields: list[str], children: bool = False) -> float:
    i = 13 if children else 11  # utime, stime (or cutime, cstime), counted from field 3
    return (int(fields[i]) + int(fields[i + 1])) / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()  # fields from 3 (state) on


class ChildCpu:
    """CPU time of a process's children (the engine hosts) over a window: those alive at its end
    and those reaped during it (the parent's cutime/cstime), minus what they had used before."""

    def __init__(self, pid: int):
        self.pid = pid
        self.reaped0 = self._reaped()
        self.alive0 = self.alive()

    def _reaped(self) -> float:
        fields = _stat(self.pid)
        if fields is None:
            raise BenchError("the daemon is gone")
        return _stat_cpu(fields, children=True)

    def alive(self) -> dict[int, float]:
        """pid -> CPU seconds of the live (not zombie) children."""
        pids: set[int] = set()
        try:
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{tid}/children") as f:
                    pids.update(int(x) for x in f.read().split())
        except OSError:
            pass  # a thread ended while we looked: its children are counted on the next sample
        out = {}
        for pid in pids:
            fields = _stat(pid)
            if fields is not None and fields[0] != "Z":
                out[pid] = _stat_cpu(fields)
        return out

    def used(self) -> float:
        alive = self.alive()
        return self._reaped() - self.reaped0 + sum(alive.values()) - sum(self.alive0.values())


# --- the load generator ----------------------------------------------------------------------


class C4Client:
    """One Connect Four seat against the solver; a new connection (and game) follows each game."""

    __slots__ = ("index", "thinking_since")

    def __init__(self, index: int):
        self.index = index
        self.thinking_since = 0.0  # when our move went out and the solver's answer was still due


class MixedLoad(LoadGen):
    """The Kalaha load generator with a think time for the bots and Connect Four solver clients."""

    def __init__(self, kalaha_port: int, connect4_port: int, think: float, seed: int):
        super().__init__(kalaha_port, "random", seed)
        self.c4_addr = (HOST, connect4_port)
        self.think = think
        self.timers: list[tuple[float, int, Conn, bytes]] = []
        self.n_timer = 0
        self.c4_rng = random.Random(seed + 1)
        self.c4_reconnect = True
        self.c4_reset()
        self.c4_games_total = 0

    def c4_reset(self) -> None:
        self.c4_moves = 0  # solver moves (PLAYED 1) received
        self.c4_think: list[float] = []  # our move -> the solver's PLAYED
        self.c4_games = 0
        self.c4_aborts = 0
        self.c4_errors = 0
        self.c4_lost = 0
        self.c4_thinking_s = 0.0  # summed over the clients: time a solver answer was due
        self.c4_abort_lines: list[bytes] = []

    # Kalaha bots: a move goes out ``think`` seconds after its YOURMOVE

    def _move(self, c: Conn, pit: bytes) -> None:
        if self.think <= 0:
            return super()._move(c, pit)
        self.n_timer += 1
        heapq.heappush(self.timers, (perf() + self.think, self.n_timer, c, pit))

    def _fire(self, now: float) -> None:
        timers = self.timers
        while timers and timers[0][0] <= now:
            _, _, c, pit = heapq.heappop(timers)
            if self.conns.get(c.fd) is c:
                LoadGen._move(self, c, pit)

    # Connect Four clients

    def connect_c4(self, client: C4Client) -> Conn:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = s.connect_ex(self.c4_addr)
        if err not in (0, errno.EINPROGRESS):
            s.close()
            raise BenchError(f"connect to {self.c4_addr}: {os.strerror(err)}")
        c = Conn(s, C4, client, b"BOARD OFF\nPLAY " + ENGINE + b" FIRST\n")
        self.conns[c.fd] = c
        self.ep.register(c.fd, EPOLLIN | EPOLLOUT)
        return c

    def _c4(self, c: Conn, now: float) -> None:
        data = self._recv(c)
        if not data:
            if data is not None:
                self._c4_closed(c, now)
            return
        data = c.buf + data
        end = data.rfind(b"\n") + 1
        c.buf = data[end:]
        client = c.slot
        for line in data[:end].splitlines():
            word = line.split(b" ", 1)[0]
            if word == b"YOURMOVE":
                cols = line.split()[2:]
                if not c.started:
                    c.started = True
                    self.n_started += 1
                try:
                    c.sock.send(self.c4_rng.choice(cols) + b"\n")
                except OSError:
                    pass  # the close is noticed on the next read
                c.t_sent = perf()
                client.thinking_since = c.t_sent
            elif word == b"PLAYED" and line.startswith(b"PLAYED 1 "):
                self._c4_stop_thinking(client, now)
                if self.measuring:
                    self.c4_moves += 1
                    if c.t_sent:
                        self.c4_think.append(now - c.t_sent)
                c.t_sent = 0.0
            elif word in (b"RESULT", b"ABORT"):
                self._c4_stop_thinking(client, now)
                c.ended = True
                self.c4_games_total += 1
                if self.measuring:
                    self.c4_games += 1
                if word == b"ABORT":
                    self.c4_aborts += 1
                    if len(self.c4_abort_lines) < 3:
                        self.c4_abort_lines.append(line)
            elif word == b"ERROR" and self.measuring:
                self.c4_errors += 1

    def _c4_stop_thinking(self, client: C4Client, now: float) -> None:
        if client.thinking_since and self.measuring:
            self.c4_thinking_s += now - max(client.thinking_since, self.t_window)
        client.thinking_since = 0.0

    def _c4_closed(self, c: Conn, now: float) -> None:
        self.drop(c)
        self._c4_stop_thinking(c.slot, now)
        if not c.ended and self.measuring:
            self.c4_lost += 1
        if self.c4_reconnect:
            self.connect_c4(c.slot)

    # the event loop, with the bots' timers

    def run(self, seconds: float, until=None) -> bool:
        poll = self.ep.poll
        conns = self.conns
        end = perf() + seconds
        while True:
            now = perf()
            self._fire(now)
            if until is not None and until():
                return True
            if now >= end:
                return False
            wait = min(0.05, end - now)
            if self.timers:
                wait = max(0.0, min(wait, self.timers[0][0] - now))
            events = poll(wait)
            now = perf()
            self.polls += 1
            for fd, ev in events:
                c = conns.get(fd)
                if c is None:
                    continue
                if not c.up:
                    self._connected(c, ev)
                    continue
                if c.kind == BOT:
                    self._bot(c, now)
                elif c.kind == C4:
                    self._c4(c, now)
            if now >= self.next_sample:
                self._tick()
                self.next_sample = now + 0.1

    next_sample = 0.0
    hosts: ChildCpu | None = None  # the daemon's children, once measured
    renice: str | None = None  # diagnostic (--host-policy): applied to every engine host seen
    reniced: set[int] = set()
    alive_samples: list[int] = []
    thinking_samples: list[int] = []

    def _tick(self) -> None:
        """Every 0.1 s: count the engine hosts and the solver games thinking (and renice new hosts)."""
        if self.hosts is None:
            return
        alive = self.hosts.alive()
        if self.renice is not None:
            for pid in alive.keys() - self.reniced:
                try:
                    kind, _, value = self.renice.partition(":")
                    if kind == "idle":
                        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
                    elif kind == "nice":
                        os.setpriority(os.PRIO_PROCESS, pid, int(value))
                    else:  # cpu:N
                        os.sched_setaffinity(pid, {int(value)})
                except OSError:
                    pass  # it has just ended
                self.reniced.add(pid)
        if self.measuring:
            self.alive_samples.append(len(alive))
            self.thinking_samples.append(self.thinking_now())

    def thinking_now(self) -> int:
        return sum(1 for c in self.conns.values() if c.kind == C4 and c.slot.thinking_since)

    # measurement

    def measure(self, seconds: float, server: Server) -> dict:
        """Measure for ``seconds``: Kalaha latencies, the solver clients' moves, and CPU."""
        self.reset()
        self.c4_reset()
        hosts = self.hosts = ChildCpu(server.proc.pid)
        alive_samples: list[int] = []
        thinking_samples: list[int] = []
        self.alive_samples, self.thinking_samples = alive_samples, thinking_samples
        self.measuring = True
        self.t_window = perf()
        w = CpuWindow(server)
        self.run(seconds)
        w.stop()
        host_cpu = hosts.used()
        now = perf()
        for c in self.conns.values():  # solver answers still due at the end count up to now
            if c.kind == C4:
                self._c4_stop_thinking(c.slot, now)
                c.slot.thinking_since = now if c.t_sent else 0.0
        self.measuring = False
        server.check()
        wall = w.wall
        lat = sorted(self.lat)
        think = sorted(self.c4_think)
        return {
            "wall_s": wall,
            "moves": self.moves,
            "moves_per_s": self.moves / wall,
            "p50_ms": pct(lat, 0.50) * 1e3,
            "p95_ms": pct(lat, 0.95) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "max_ms": (lat[-1] if lat else float("nan")) * 1e3,
            "over_10ms": sum(1 for x in lat if x > TARGET_P99_MS / 1e3),
            "kalaha_games": self.games / 2,
            "errors": self.errors,
            "aborts": self.aborts,
            "lost": self.lost,
            "server_cpu": w.server_cpu / wall,
            "client_cpu": w.client_cpu / wall,
            "host_cpu_s": host_cpu,
            "host_cpu": host_cpu / wall,
            "other_cpu": max(0.0, (w.other - host_cpu) / wall),
            "cpu_busy": [b / wall for b in w.busy],
            "hosts_alive_min": min(alive_samples, default=0),
            "hosts_alive_mean": sum(alive_samples) / len(alive_samples) if alive_samples else 0.0,
            "solver_moves": self.c4_moves,
            "solver_games": self.c4_games,
            "solver_thinking": self.c4_thinking_s / wall,
            "solver_thinking_min": min(thinking_samples, default=0),
            "solver_move_p50_s": pct(think, 0.5),
            "solver_move_max_s": think[-1] if think else float("nan"),
            "solver_aborts": self.c4_aborts,
            "solver_abort_lines": [x.decode(errors="replace") for x in self.c4_abort_lines],
            "solver_errors": self.c4_errors,
            "solver_lost": self.c4_lost,
        }

    t_window = 0.0


# --- the run ---------------------------------------------------------------------------------


def run_phases(args) -> dict:
    out: dict = {}
    with daemon(args) as d:
        gen = MixedLoad(d.kalaha_port, d.connect4_port, args.think, args.seed)
        gen.renice = args.host_policy
        gen.hosts = ChildCpu(d.proc.pid)
        try:
            # one Kalaha game played to its end first, so that code run once is not measured
            gen.reconnect = False
            slot = Slot(b"warmup")
            gen.connect(BOT, slot, slot.hello)
            gen.connect(BOT, slot, slot.hello)
            if not gen.run(30, until=lambda: gen.count(BOT) == 0):
                raise BenchError("the warm-up Kalaha game did not finish within 30 s")
            start_games(gen, args.games)
            gen.release()
            gen.run(args.warmup)
            print(f"A: {args.games} Kalaha games for {args.seconds:g} s ...", flush=True)
            a = out["A"] = gen.measure(args.seconds, d)
            print(f"  {summary(a)}", flush=True)
            if a["moves"] == 0:
                raise BenchError("no Kalaha move was played in phase A")
            started = gen.n_started
            for i in range(SOLVER_GAMES):
                gen.connect_c4(C4Client(i))
            both = lambda: gen.n_started - started >= SOLVER_GAMES and gen.thinking_now() >= SOLVER_GAMES  # noqa: E731
            if not gen.run(30, until=both):
                raise BenchError(f"the {SOLVER_GAMES} solver games did not start within 30 s:\n{d.tail()}")
            gen.run(min(1.0, args.warmup))
            print(f"B: the same while {SOLVER_GAMES} solver games think, {args.seconds:g} s ...", flush=True)
            b = out["B"] = gen.measure(args.seconds, d)
            print(f"  {summary(b)}", flush=True)
            if b["host_cpu_s"] < 0.2 * args.seconds:
                raise BenchError(f"the solver hosts hardly ran in phase B ({b['host_cpu_s']:.1f} CPU s):\n{d.tail()}")
        finally:
            gen.c4_reconnect = False
            gen.close_all()
    return out


def summary(r: dict) -> str:
    s = (
        f"{r['moves']:,} moves ({r['moves_per_s']:,.0f}/s), p50 {fmt(r['p50_ms'])} ms, p95 {fmt(r['p95_ms'])} ms, "
        f"p99 {fmt(r['p99_ms'])} ms, max {fmt(r['max_ms'], 1)} ms; daemon CPU {r['server_cpu']:.0%}, "
        f"client CPU {r['client_cpu']:.0%}, other {r['other_cpu']:.0%}"
    )
    if r["solver_moves"] or r["host_cpu_s"] > 0.05:
        s += f"; solver: {r['solver_moves']} moves, {r['host_cpu_s']:.1f} CPU s"
    return s


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    print_machine(results["machine"])
    a = results["args"]
    print(
        f"daemon and load generator not pinned; scheduling: {a['sched']}; {a['games']} Kalaha games, bots think "
        f"{a['think'] * 1e3:g} ms per move; {SOLVER_GAMES} clients play {ENGINE.decode()} in phase B"
        + ("" if a["host_policy"] is None else f" (DIAGNOSTIC: engine hosts set to {a['host_policy']} by the bench)")
        + f"; machine before the run: {results['quiet']}, load average {results['loadavg_before']}"
    )
    phases = results.get("phases", {})
    names = {"A": "A: Kalaha alone", "B": f"B: + {SOLVER_GAMES} solver games"}
    print("\nKalaha move latency (own move -> own PLAYED)")
    print(
        f"{'phase':<24} {'moves':>7} {'moves/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'>10 ms':>7} {'daemon':>7} {'hosts':>6} {'client':>7} {'other':>6}"
    )
    for key, r in phases.items():
        print(
            f"{names[key]:<24} {r['moves']:>7,} {r['moves_per_s']:>8,.0f} {fmt(r['p50_ms']):>7} {fmt(r['p95_ms']):>7} "
            f"{fmt(r['p99_ms']):>7} {fmt(r['max_ms'], 1):>7} {r['over_10ms']:>7,} {r['server_cpu']:>6.0%} "
            f"{r['host_cpu']:>6.0%} {r['client_cpu']:>6.0%} {r['other_cpu']:>6.0%}"
        )
        if r["errors"] or r["aborts"] or r["lost"]:
            print(f"    !! Kalaha: {r['errors']} ERROR lines, {r['aborts']} aborts, {r['lost']} connections lost")
    print("  (CPU columns: share of one CPU; hosts = the daemon's child processes, i.e. the engine hosts)")
    b = phases.get("B")
    if b:
        print(
            f"\nSolver (phase B, {b['wall_s']:.1f} s): {b['solver_moves']} moves made, {b['solver_games']} games "
            f"finished; its host processes used {b['host_cpu_s']:.1f} CPU s ({b['host_cpu']:.2f} CPUs), "
            f"{b['hosts_alive_mean']:.2f} hosts alive on average (at least {b['hosts_alive_min']} at every 0.1 s "
            f"sample); a solver answer was due {b['solver_thinking']:.2f} of the time on average (per game: "
            f"{SOLVER_GAMES} = both thinking throughout; at least {b['solver_thinking_min']} at every sample); "
            f"solver move time median {fmt(b['solver_move_p50_s'], 2)} s, max {fmt(b['solver_move_max_s'], 2)} s"
        )
        if b["solver_aborts"] or b["solver_errors"] or b["solver_lost"]:
            print(
                f"    !! solver games: {b['solver_aborts']} aborted {b['solver_abort_lines']}, "
                f"{b['solver_errors']} ERROR lines, {b['solver_lost']} connections lost"
            )
    verdicts: list[tuple[str, bool | None, str]] = []
    if b:
        thinking = b["solver_thinking"] >= SOLVER_GAMES * 0.8 and b["host_cpu"] >= 0.5
        verdicts.append(
            (
                f"other games p99 <= 10 ms while {SOLVER_GAMES} solver games think",
                b["p99_ms"] <= TARGET_P99_MS and thinking,
                f"{b['p99_ms']:.2f} ms (alone {phases['A']['p99_ms']:.2f} ms; solver hosts {b['host_cpu']:.2f} CPUs"
                + ("" if thinking else "; the solver was NOT kept thinking")
                + ")",
            )
        )
    print_targets(verdicts)
    # No --nice here: only chrt in front of the command gives this run priority.
    warn_if_disturbed(
        (r["other_cpu"] for r in phases.values()), during=" during a phase", priority="chrt -f 10 in front of the command"
    )
    return verdicts


# --- main ------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --games 20 --seconds 20 --json /tmp/c4load.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--games", type=int, default=20, help="concurrent Kalaha games [%(default)s]")
    p.add_argument("--seconds", type=float, default=20.0, help="measurement window of each phase [%(default)s]")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up before phase A, seconds [%(default)s]")
    p.add_argument(
        "--think", type=float, default=0.05, help="seconds a Kalaha bot waits before each move, 0 = none [%(default)s]"
    )
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=30.0,
        help="first wait at most this long for the machine to be quiet, 0 = not [%(default)s]",
    )
    p.add_argument(
        "--host-policy",
        default=None,
        metavar="nice:N|idle|cpu:N",
        help="diagnostic: give every engine host process the daemon starts niceness N, the SCHED_IDLE policy, or "
        "CPU N only (affinity), from outside, within 0.1 s of its start",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the bots' choices [%(default)s]")
    p.add_argument("--smoke", action="store_true", help="about 12 s in all (4 games, 4 s phases): a quick check")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemon's log (its directory is printed)")
    args = p.parse_args(argv)
    if args.smoke:
        args.games, args.seconds, args.warmup, args.wait_quiet = 4, 4.0, 0.5, 0.0
    hp = args.host_policy
    if hp is not None and not (
        hp == "idle" or (hp.partition(":")[0] in ("nice", "cpu") and hp.partition(":")[2].lstrip("-").isdigit())
    ):
        p.error("--host-policy takes nice:N, idle or cpu:N")
    if args.games < 1 or args.seconds <= 0 or args.think < 0:
        p.error("--games must be at least 1, --seconds above 0, --think 0 or more")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    for lib in ("solver", "example"):
        if not (ROOT / "engines" / lib / "engine.so").exists():
            print(f"connect4_load: error: engines/{lib}/engine.so missing; run `make examples`", file=sys.stderr)
            return 2
    import_work_tree()
    results: dict = {"machine": machine(gamed_version()), "args": {}}
    args.logdir = logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    t_start = perf()

    def body() -> int:
        raise_nofile(2 * args.games + 200)
        args.sched = set_priority(0)
        results["args"] = dict(vars(args))
        if args.wait_quiet > 0:
            print(f"waiting (at most {args.wait_quiet:g} s) for the machine to be quiet ...", flush=True)
        results["quiet"] = wait_quiet(args.wait_quiet)
        results["loadavg_before"] = " ".join(open("/proc/loadavg").read().split()[:3])
        results["phases"] = run_phases(args)
        note_code_change(results["machine"], gamed_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("connect4_load", body, lambda: stop_all(logdir, args.keep_logs, "daemon"))


if __name__ == "__main__":
    sys.exit(main())
