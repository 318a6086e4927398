"""What the benchmarks (kalaha_load.py, fight_load.py, stratego_referee.py) share: server
subprocesses, CPU and load sampling, the py-spy profile of a daemon, the description of the machine
and of the code measured, scheduling, the report's common lines, and the way out (signals, cleanup)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
perf = time.perf_counter

HELPERS: list[subprocess.Popen] = []  # py-spy and other helper processes, killed on the way out


# Every listening option of the daemon: a benchmark serves only what it measures.
GAME_PORTS = ("kalaha", "fight", "fight-gui", "combat", "combat-text", "connect4", "web", "generic")


def ports_only(**ports: str) -> list[str]:
    """twistd gamed arguments that serve the given ports (``fight_gui="tcp:0"``...) and switch
    every other port and the records off, so benchmarks neither clash nor measure extra work."""
    argv = []
    for name in GAME_PORTS:
        argv += [f"--{name}", ports.pop(name.replace("-", "_"), "none")]
    if ports:
        raise ValueError(f"unknown ports: {', '.join(ports)}")
    return argv + ["--records", "none", "--combat-records", ""]


class BenchError(Exception):
    """The benchmark cannot go on (a server did not start, a phase never got going...)."""


# What a daemon logs once every port listens: "gamed ready: kalaha tcp:127.0.0.1:4600, ...".
READY = "gamed ready: "


def ready_ports(log_path: Path) -> dict[str, int]:
    """The first port of each option ("fight", "fight-gui", "combat"...) in the daemon's ready
    line in ``log_path``; empty until it has logged one."""
    sys.path.insert(0, str(ROOT))
    try:
        from gamed.ports import parse_ready_line
    finally:
        sys.path.remove(str(ROOT))
    for line in log_path.read_text(errors="replace").splitlines():
        found = parse_ready_line(line)
        if found is not None:
            return {option: where[0][1] for option, where in found.items()}
    return {}


# --- servers under test ----------------------------------------------------------------------


class Server:
    """A server subprocess in its own session (process group), logging to a temporary file."""

    live: list[Server] = []
    preexec = None  # run in the child before it starts (e.g. to die with this process)
    env: dict[str, str] | None = None  # the child's environment; None = this process's

    def __init__(self, name: str, argv: list[str], ready: str, cpu: int | None, logdir: str):
        self.name = name
        self.argv = argv
        self.ready = ready
        self.cpu = cpu
        self.log_path = Path(logdir) / f"{name}-{len(Server.live)}-{int(time.time() * 1000)}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> Server:
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=self.preexec,
                env=self.env,
            )
        except OSError as e:
            raise BenchError(f"cannot start {self.name} ({self.argv[0]}): {e}; run `make` first?") from None
        finally:
            log.close()
        Server.live.append(self)
        if self.cpu is not None:
            try:
                os.sched_setaffinity(self.proc.pid, {self.cpu})
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while True:
            if self.ready in self.log_path.read_text(errors="replace"):
                return self
            rc = self.proc.poll()
            if rc is not None:
                raise BenchError(f"{self.name} exited with status {rc} before listening:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} did not report {self.ready!r} within {timeout:g} s:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join("    " + line for line in text[-lines:]) or "    (empty log)"

    def check(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            raise BenchError(f"{self.name} died during the run:\n{self.tail()}")

    def rss_kb(self) -> int:
        self.check()
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise BenchError("no VmRSS in /proc status")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the whole process (all threads), from /proc/<pid>/stat."""
        self.check()
        with open(f"/proc/{self.proc.pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rfind(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self in Server.live:
            Server.live.remove(self)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- CPU and load --------------------------------------------------------------------------------


def cpu_jiffies() -> list[tuple[int, int]]:
    """(busy, total) jiffies of every CPU from /proc/stat; busy counts steal time too."""
    out = []
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]  # idle + iowait
                out.append((sum(v[:8]) - idle, sum(v[:8])))
    return out


def cpu_busy(stat0: list[tuple[int, int]], stat1: list[tuple[int, int]]) -> list[float]:
    """Seconds each CPU was busy between two cpu_jiffies() samples."""
    tick = os.sysconf("SC_CLK_TCK")
    return [(b1 - b0) / tick for (b0, _), (b1, _) in zip(stat0, stat1)]


def self_cpu() -> float:
    """This process's user + system CPU time in seconds (its children excluded)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class CpuWindow:
    """CPU use over a stretch of wall time: a server's (if any), this process's, and every CPU's.

    ``other`` (after stop()) is the CPU time that went to neither: other programs, and
    interrupt/softirq work charged to no process."""

    def __init__(self, server: Server | None = None):
        self.server = server
        self.cpu0 = server.cpu_seconds() if server is not None else 0.0
        self.self0 = self_cpu()
        self.stat0 = cpu_jiffies()
        self.t0 = perf()

    def stop(self) -> CpuWindow:
        self.wall = perf() - self.t0
        stat1 = cpu_jiffies()
        self.client_cpu = self_cpu() - self.self0
        self.server_cpu = self.server.cpu_seconds() - self.cpu0 if self.server is not None else 0.0
        self.busy = cpu_busy(self.stat0, stat1)
        self.other = sum(self.busy) - self.server_cpu - self.client_cpu
        return self


def wait_quiet(limit: float, busy_max: float = 0.15, span: float = 3.0) -> str:
    """Wait (at most ``limit`` seconds) until the whole machine has been under ``busy_max`` of its
    CPUs busy for ``span`` seconds; say how it went. Blocks: called between phases only."""
    if limit <= 0:
        return "not waited"
    t0 = perf()
    quiet_since = perf()
    last = cpu_jiffies()
    while True:
        time.sleep(0.25)
        now = cpu_jiffies()
        busy = sum(cpu_busy(last, now)) / 0.25 / len(now)
        last = now
        if busy >= busy_max:
            quiet_since = perf()
        elif perf() - quiet_since >= span:
            return f"quiet after {perf() - t0:.1f} s"
        if perf() - t0 >= limit:
            return f"NOT quiet after {limit:g} s: went on"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


# --- this process: limits, scheduling, signals, the way out ----------------------------------------


def raise_nofile(need: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < need:
        raise BenchError(f"need about {need} open files but the hard limit is {hard}; lower --idle or --games")
    return hard


def choose_cpus(args) -> bool:
    """Set args.server_cpu and args.client_cpu (1 and 0, or None when not pinned); True if pinned."""
    pinned = not args.no_pin and (os.cpu_count() or 1) >= 2
    args.server_cpu, args.client_cpu = (1, 0) if pinned else (None, None)
    return pinned


def set_priority(nice: int) -> str:
    """Apply niceness ``nice`` (if any) to this process, which its children inherit; describe the
    scheduling it then runs under."""
    if nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as e:
            raise BenchError(f"cannot set niceness {nice}: {e}") from None
    policy = os.sched_getscheduler(0)
    if policy in (os.SCHED_FIFO, os.SCHED_RR):
        name = "SCHED_FIFO" if policy == os.SCHED_FIFO else "SCHED_RR"
        return f"{name} priority {os.sched_getparam(0).sched_priority} (real time)"
    return f"normal, niceness {os.getpriority(os.PRIO_PROCESS, 0)}"


def die_with_parent() -> None:
    """Linux, in a child between fork and exec: SIGKILL it when this process dies (even by SIGKILL),
    through prctl(PR_SET_PDEATHSIG); elsewhere nothing."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def exit_on_sigterm() -> None:
    """SIGTERM ends the bench like Ctrl-C does, through the cleanup (exit status 143)."""
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))


def guarded(name: str, body, cleanup=None) -> int:
    """Run ``body()`` and return its exit status; a BenchError gives 2, Ctrl-C 130; ``cleanup()``
    runs in every case."""
    try:
        return body()
    except BenchError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    finally:
        if cleanup is not None:
            cleanup()


def stop_all(logdir: str, keep_logs: bool, what: str = "server") -> None:
    """Kill the helper processes and stop the servers still running; keep or remove their logs."""
    for proc in HELPERS:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    for server in list(Server.live):
        server.stop()
    if keep_logs:
        print(f"{what} logs kept in {logdir}")
    else:
        for f in Path(logdir).glob("*"):
            f.unlink()
        os.rmdir(logdir)


# --- profiling a daemon (py-spy) -------------------------------------------------------------------


def start_profiler(args, server: Server, what, seconds: float, settle: float = 0.2):
    """Start py-spy on ``server`` for the coming ``seconds`` (raw stacks in args.logdir); ``what``
    names the profile. --profile-native: C frames too, which makes py-spy pause the daemon."""
    spy = BIN / "py-spy"
    if not spy.exists():  # the venv's, else one on PATH (e.g. pip install --target DIR py-spy, DIR/bin on PATH)
        spy = shutil.which("py-spy")
        if spy is None:
            raise BenchError(f"--profile needs py-spy: {BIN / 'pip'} install py-spy (or py-spy on PATH)")
    out = Path(args.logdir) / f"profile-{what}.txt"
    argv = [str(spy), "record", "--pid", str(server.proc.pid), "--duration", str(max(1, round(seconds)))]
    if args.profile_native:  # C frames too (syscalls, the garbage collector); py-spy must pause the daemon
        argv += ["--rate", "100", "--native"]
    else:
        argv += ["--rate", "250", "--nonblocking"]
    argv += ["--format", "raw", "--output", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    HELPERS.append(proc)
    time.sleep(settle)  # let py-spy attach
    return proc, out, what


def finish_profiler(spy, top: int, prefix: str, timeout: float = 30.0) -> dict:
    """Wait for py-spy, summarise its stacks and keep them as <tmp>/<prefix>-profile-<what>.txt."""
    proc, out, what = spy
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise BenchError("py-spy did not finish") from None
    if proc.returncode != 0 or not out.exists():
        raise BenchError(f"py-spy failed ({proc.returncode}): {err.decode(errors='replace')[-500:]}")
    summary = profile_summary(out.read_text(), top)
    kept = Path(tempfile.gettempdir()) / f"{prefix}-profile-{what}.txt"
    kept.write_text(out.read_text())
    summary["stacks"] = str(kept)
    return summary


def _frame_name(frame: str) -> str:
    # py-spy raw frames look like "function (path/to/file.py:123)"
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})" if path else name


def profile_summary(collapsed: str, top: int) -> dict:
    """Self and inclusive shares of the samples per function, from py-spy's collapsed stacks."""
    total = 0
    own: dict[str, int] = {}
    incl: dict[str, int] = {}
    files: dict[str, int] = {}
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        k = int(count)
        total += k
        frames = [_frame_name(f) for f in stack.split(";")]
        own[frames[-1]] = own.get(frames[-1], 0) + k
        leaf_file = frames[-1].rpartition(" (")[2].rstrip(")") or "?"
        files[leaf_file] = files.get(leaf_file, 0) + k
        for name in set(frames):
            incl[name] = incl.get(name, 0) + k
    if not total:
        return {"samples": 0, "self": [], "inclusive": [], "files": []}
    rank = lambda d: [(name, v / total) for name, v in sorted(d.items(), key=lambda kv: -kv[1])[:top]]  # noqa: E731
    return {"samples": total, "self": rank(own), "inclusive": rank(incl), "files": rank(files)}


def print_profile(n, prof: dict) -> None:
    """Print a py-spy summary; ``n`` is a game count or a description of the phase."""
    where = f"{n} games" if isinstance(n, int) else n
    print(
        f"\nDaemon profile at {where} (py-spy, {prof['samples']} samples of busy time; stacks in {prof['stacks']})"
    )
    print("  self time by file or library: " + ", ".join(f"{name} {share:.0%}" for name, share in prof["files"][:12]))
    print("  self time (leaf function)                                         inclusive time")
    rows = max(len(prof["self"]), len(prof["inclusive"]))
    for i in range(rows):
        left = prof["self"][i] if i < len(prof["self"]) else ("", 0.0)
        right = prof["inclusive"][i] if i < len(prof["inclusive"]) else ("", 0.0)
        print(f"  {left[1]:6.1%} {left[0][:58]:<58}  {right[1]:6.1%} {right[0][:70]}")


# --- the machine and the code measured -------------------------------------------------------------


def machine(code: str) -> dict:
    """The machine, Python and Twisted the bench runs on; ``code`` says which gamed it measures."""
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        twisted = subprocess.run(
            [sys.executable, "-c", "import twisted; print(twisted.__version__)"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        twisted = "?"
    return {
        "code": code,
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "twisted": twisted,
        "kernel": platform.release(),
    }


def work_tree_version(tree: str, runs: str) -> str:
    """The work tree's code under ``tree`` (e.g. "gamed"): the commit, the uncommitted files under
    ``tree`` and a hash of its sources (other people may be editing the tree while the bench runs).
    ``runs`` says how the bench gets the work tree's code (in the parentheses)."""
    digest = hashlib.sha1()
    for f in sorted((ROOT / tree).rglob("*.py")):
        digest.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", tree], capture_output=True, text=True, cwd=ROOT
        ).stdout.split("\n")
        commit = head.stdout.strip()
    except OSError:
        commit, dirty = "?", []
    changed = [line[3:] for line in dirty if line.strip()]
    where = "clean" if not changed else f"uncommitted changes in {', '.join(changed)}"
    return (
        f"the work tree ({runs}); git HEAD {commit or '?'}, {tree}/ {where}; "
        f"{tree}/*.py sha1 {digest.hexdigest()[:10]}"
    )


def import_work_tree() -> None:
    """Make the daemons and helper processes started from here import the work tree's gamed (and its
    twisted/plugins), not the copy installed in the venv."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


def gamed_version() -> str:
    """The gamed a daemon started after ``import_work_tree()`` runs: its commit, uncommitted gamed/
    files, and a hash of gamed/'s sources."""
    return work_tree_version("gamed", f"PYTHONPATH={ROOT}")


def note_code_change(machine_info: dict, code_now: str) -> None:
    """Record ``code_now`` as code_at_end when its source hash differs from the one at the start."""
    if code_now.rsplit("sha1 ", 1)[1] != machine_info["code"].rsplit("sha1 ", 1)[1]:
        machine_info["code_at_end"] = code_now


# --- the report ----------------------------------------------------------------------------------


def fmt(x: float, digits: int = 2) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"


def saturated(cpu: float) -> str:
    return " (SATURATED)" if cpu >= 0.9 else ""


def print_machine(m: dict, tree: str = "gamed/") -> None:
    print(f"\nmachine: {m['nproc']} CPUs, {m['cpu']}, Python {m['python']}, Twisted {m['twisted']}, Linux {m['kernel']}")
    print(f"code: {m['code']}")
    if "code_at_end" in m:
        print(f"WARNING: {tree} changed during the run; at the end: {m['code_at_end']}")


def print_targets(verdicts: list[tuple[str, bool | None, str]]) -> None:
    if verdicts:
        print("\nTargets")
        for text, ok, value in verdicts:
            print(f"  {'MET    ' if ok else 'NOT MET'}  {text}: {value}")


def warn_if_disturbed(
    other_cpu,
    measured: str | None = None,
    during: str = "",
    priority: str | None = "--nice -10 (or chrt -f 10 in front of the command)",
    threshold: float = 0.25,
) -> None:
    """Warn when programs other than the measured ones took ``threshold`` of a CPU or more.

    ``other_cpu``: the 'other' CPU share (CPUs) of each window or phase; ``measured``: who was measured
    ("neither <measured>"), else "other programs"; ``during``: when (" during a phase");
    ``priority``: how to run with priority over the others, or None when the bench cannot.
    """
    worst = max(other_cpu, default=0.0)
    if worst < threshold:
        return
    who = f"neither {measured}" if measured else "other programs"
    advice = f", or with {priority} to take priority over them" if priority else ""
    print(
        f"\nWARNING: up to {worst:.0%} of a CPU went to {who}{during} (column 'other': other programs, or "
        f"interrupt work charged to no process); they disturbed the figures. Run again on an idle machine{advice}."
    )


def finish(results: dict, verdicts: list[tuple[str, bool | None, str]], t_start: float, json_path: str | None) -> int:
    """Record the verdicts and the elapsed time, print it, write the JSON file if asked; exit status 0."""
    results["targets"] = [{"target": t, "met": ok, "value": v} for t, ok, v in verdicts]
    results["elapsed_s"] = perf() - t_start
    print(f"\ntotal time {results['elapsed_s']:.0f} s")
    if json_path:
        Path(json_path).write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0
