"""Attack benchmark: do the running games stay unharmed while a few bad connections attack the daemon?

One real daemon (the work tree's gamed: ``PYTHONPATH=. .venv/bin/twistd -n gamed`` with Kalaha,
Connect Four, Virtual Fight (AI and GUI ports), GGZ Combat (binary and handshake ports) and the web
site, every port ``tcp:0`` on 127.0.0.1, read from the ready line; records off; every other
setting at its default, the per-port and per-address connection limits and the line-rate limiter
included) is pinned to CPU 1. This process, a single-threaded epoll load generator on CPU 0, plays
a steady load for the whole run:

- ``--kalaha`` Kalaha games (the bots of bench/kalaha_load.py: ``BOARD OFF``, ``TABLE bench<i>``, a
  random legal pit per YOURMOVE; a new pair as each game ends);
- ``--connect4`` Connect Four games between two person bots (``TABLE c4bench<i>``, a random legal
  column per YOURMOVE);
- ``--fight`` Virtual Fight games (two AIs at ``TABLE&vf<i>``; each turn every warrior passes with
  ``n&NONE``; a game lasts ``--fight-turns`` turns).

Every bot answers after ``--think`` seconds (20 ms by default), as a program that thinks a little
would: the steady load alone keeps the daemon well below one CPU (its share is printed), so what an
attack takes from the games shows. A move's latency is the time from just before the bot's send()
to the epoll wakeup that delivers the daemon's answer (``PLAYED`` in Kalaha and Connect Four, the
``200`` block in Virtual Fight). Every ``--probe-interval`` a new player connects (in turn to
Kalaha, Connect Four, Virtual Fight, Combat and the web) and the time to its first reply is taken
(the greeting; the web: the first byte of the answer to ``GET /api/games``); a probe answered with
a refusal (``503``, ``FULL``) or not at all within 5 s counts as failed.

The attacks run in a child process (this script with ``--attacker``), on CPU 0 beside the load
generator at niceness +10, from the source address 127.0.0.2 (another peer than the bots), each
between two quiet windows; in order:

  idle      1,000 idle connections, spread over the seven ports (they read what they are sent);
  slowloris 200 connections on the text ports (Kalaha, Connect Four, Virtual Fight, the Combat
            handshake) and the web, each sending one byte every 2 s and never a line end (the web:
            a request line, then header bytes that never end the headers);
  flood     50 connections writing garbage as fast as the kernel takes it (Kalaha and Connect Four:
            unknown command lines; Combat 5688: the Default map's MSG_OPTIONS, then REQ_SYNC
            ``0000000b``; the Combat handshake: HELP lines; ``--flood-ports``), reading and
            discarding what they get, reconnecting when closed;
  sse       100 event streams (``/api/games/<id>/events`` of running games) that never read
            (receive buffer 4 KiB), reopened on another game when the daemon closes one;
  noread    10 Combat clients (5688) that send the Default map's MSG_OPTIONS (the hosts' are
            taken), then REQ_SYNC as fast as the kernel takes it (at most ``--noread-requests``
            each), and never read (receive buffer 4 KiB).

Windows alternate quiet / attack (``--window`` seconds each, after a warm-up that lasts until
the daemon's RSS is steady); an attack window begins once its connections are up (at most 15 s)
and ends with them closed. Each attack is compared with the mean of the quiet windows on either
side of it, in the same run (one that began before the games had recovered is left out);
``--rounds N`` repeats the series and the verdicts take the medians. After an attack the bench
notes when the daemon's RSS is back within 10 % of the quiet window before the attack (looked for
during ``--settle`` seconds) and when the games' move rate is back to 80 % of the quiet one
(during ``--drain`` seconds). The daemon runs with ``[web] linger = 1`` (``--linger``): at the
default 60 s the finished games kept would make the RSS grow for the first minute. Targets
(issue 13): under every attack each game keeps >= 90 % of its move rate and its p99 move latency
stays <= 2x the quiet windows'; the RSS comes back within 10 %; a new player's first reply stays
under 100 ms (the slowest probe of the window; no probe failed).

A benchmark, not a test: exit status 0 whatever the figures, 2 when it cannot run, 130 on Ctrl-C;
the daemon and the attacker are always stopped. ``--short`` (``make bench``) takes about 90 s,
the default run about 4 minutes (``--rounds 3``: about 8).
"""

from __future__ import annotations

import argparse
import errno
import heapq
import json
import os
import random
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402 - the shared benchmark machinery
    BIN,
    HELPERS,
    HOST,
    READY,
    BenchError,
    CpuWindow,
    Server,
    choose_cpus,
    die_with_parent,
    exit_on_sigterm,
    finish,
    fmt,
    gamed_version,
    guarded,
    import_work_tree,
    machine,
    note_code_change,
    pct,
    perf,
    ports_only,
    print_machine,
    print_targets,
    raise_nofile,
    ready_ports,
    set_priority,
    stop_all,
    wait_quiet,
    warn_if_disturbed,
)
from kalaha_load import BOT, EPOLLIN, EPOLLOUT, Conn, LoadGen, Slot  # noqa: E402

PREFIX = "attack-bench"
ATTACKER_HOST = "127.0.0.2"  # the attackers' source address: another peer than the bots'
EPOLLRDHUP = getattr(select, "EPOLLRDHUP", 0x2000)

TARGET_RATE = 0.90  # move rate under attack / quiet
TARGET_P99 = 2.0  # p99 under attack / quiet
TARGET_RSS = 0.10  # RSS after the settle time, relative to the quiet window before the attack
TARGET_FIRST_MS = 100.0  # a new player's first reply

ATTACKS = ("idle", "slowloris", "flood", "sse", "noread")
GAMES = ("kalaha", "connect4", "fight")

C4, VF, PROBE, CONTROL = 10, 11, 12, 13  # connection kinds beside kalaha_load's BOT
PROBE_PORTS = ("kalaha", "connect4", "fight", "combat", "web")
WEB_PROBE = b"GET /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
PROBE_TIMEOUT = 5.0

# The Default map's MSG_OPTIONS (docs/protocols/combat.md, the first session): a Combat client that
# floods sends it first, so that at a table it hosts every REQ_SYNC is answered with the 100 cells.
_DEFAULT_MAP = bytes.fromhex(
    "0a0a" + "10" * 40 + "0000020200000202000000000202000002020000" + "20" * 40
    + "010601080504040403020101" + "0144656661756c740000"
)  # fmt: skip
COMBAT_OPTIONS = (
    (3).to_bytes(4, "big") + (len(_DEFAULT_MAP) + 1).to_bytes(4, "big")
    + bytes((b + 1) & 0xFF for b in _DEFAULT_MAP) + b"\0"
)  # fmt: skip


# --- the daemon ------------------------------------------------------------------------------


class Daemon(Server):
    """common's Server, plus the ports the daemon chose (from its ready line); it dies with the bench."""

    preexec = staticmethod(die_with_parent)

    def start(self, timeout: float = 30.0) -> Daemon:
        super().start(timeout)
        self.ports = ready_ports(self.log_path)
        missing = {"kalaha", "connect4", "fight", "fight-gui", "combat", "combat-text", "web"} - self.ports.keys()
        if missing:
            raise BenchError(f"no {', '.join(sorted(missing))} port in the daemon's ready line:\n{self.tail()}")
        return self


def daemon(args) -> Daemon:
    any_port = f"tcp:0:interface={HOST}"
    config = Path(args.logdir) / "gamed.toml"
    config.write_text(f"[web]\nlinger = {args.linger:g}\n")
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed", f"--config={config}",
        *ports_only(kalaha=any_port, connect4=any_port, fight=any_port, fight_gui=any_port,
                    combat=any_port, combat_text=any_port, web=any_port),
        "--connect4-engines", "",
        "--fight-max-turns", str(args.fight_turns),
    ]  # fmt: skip
    return Daemon("gamed", argv, READY, args.server_cpu, args.logdir)


# --- the load generator ----------------------------------------------------------------------


class GameStats:
    """One game's moves and latencies in the current window."""

    def __init__(self):
        self.lat: list[float] = []
        self.games = 0
        self.lost = 0
        self.errors = 0


class VFTeam:
    """One Virtual Fight AI: its table and when its last action line went out."""

    __slots__ = ("table", "hello", "t_sent", "ended")

    def __init__(self, table: bytes, hello: bytes):
        self.table = table  # vf<i>a or vf<i>b: which of the two AIs of table vf<i>
        self.hello = hello
        self.t_sent = 0.0
        self.ended = False


class SteadyLoad(LoadGen):
    """kalaha_load's Kalaha bots (with a think time), Connect Four and Virtual Fight bots, first-reply
    probes and the RSS samples, in one epoll loop; the attacker's control pipe too."""

    def __init__(self, d: Daemon, args):
        super().__init__(d.ports["kalaha"], "random", args.seed)
        self.d = d
        self.addrs = {name: (HOST, port) for name, port in d.ports.items()}
        self.think = args.think
        self.timers: list = []
        self.n_timer = 0
        self.c4_rng = random.Random(args.seed + 1)
        self.probe_interval = args.probe_interval
        self.next_probe = 0.0
        self.probe_i = 0
        self.probe_conn: Conn | None = None
        self.next_sample = 0.0
        self.rss: list[int] = []
        self.control = None  # the attacker's stdout (a pipe), read into control_lines
        self.control_buf = b""
        self.control_lines: list[str] = []
        self.clear()

    def clear(self) -> None:
        self.stats = {g: GameStats() for g in GAMES}
        self.probes: dict[str, list[float]] = {p: [] for p in PROBE_PORTS}
        self.probe_fail: list[str] = []
        self.rss = []

    # connections

    def connect(self, kind: int, slot=None, first: bytes = b"") -> Conn:
        port = {BOT: "kalaha", C4: "connect4", VF: "fight"}.get(kind) or slot[0]
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = s.connect_ex(self.addrs[port])
        if err not in (0, errno.EINPROGRESS):
            s.close()
            raise BenchError(f"connect to the {port} port: {os.strerror(err)}")
        c = Conn(s, kind, slot, first)
        self.conns[c.fd] = c
        self.ep.register(c.fd, EPOLLIN | EPOLLOUT)
        return c

    def _connected(self, c: Conn, ev: int) -> None:
        if c.kind == PROBE and c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            self._probe_done(c, perf(), "connection refused")
            return
        super()._connected(c, ev)

    def attach_control(self, pipe) -> None:
        os.set_blocking(pipe.fileno(), False)
        self.control = pipe
        self.ep.register(pipe.fileno(), EPOLLIN)

    def _control(self) -> None:
        try:
            data = os.read(self.control.fileno(), 65536)
        except BlockingIOError:
            return
        if not data:
            self.ep.unregister(self.control.fileno())
            self.control = None
            self.control_lines.append("EOF")
            return
        data = self.control_buf + data
        *lines, self.control_buf = data.split(b"\n")
        self.control_lines += [x.decode(errors="replace") for x in lines]

    # the bots' think time (the Kalaha bots' moves go through _move)

    def _move(self, c: Conn, pit: bytes) -> None:
        self._later(c, pit + b"\n")

    def _later(self, c: Conn, data: bytes) -> None:
        self.n_timer += 1
        heapq.heappush(self.timers, (perf() + self.think, self.n_timer, c, data))

    def _fire(self, now: float) -> None:
        timers = self.timers
        while timers and timers[0][0] <= now:
            _, _, c, data = heapq.heappop(timers)
            if self.conns.get(c.fd) is not c:
                continue
            t = perf()
            if c.kind == BOT:
                c.t_sent = t
                c.slot.t_move = t
            else:
                c.t_sent = t if c.kind == C4 else 0.0
                if c.kind == VF:
                    c.slot.t_sent = t
            try:
                c.sock.send(data)
            except OSError:
                pass  # the close is noticed on the next read

    # Kalaha: kalaha_load's bots; their latencies go to stats["kalaha"] at the end of a window

    def _bot_closed(self, c: Conn) -> None:
        if not c.ended and self.measuring:
            self.stats["kalaha"].lost += 1
        super()._bot_closed(c)

    # Connect Four: two person bots per table, a new pair as each game ends

    def _lines(self, c: Conn):
        data = self._recv(c)
        if not data:
            return None if data is None else False
        data = c.buf + data
        end = data.rfind(b"\n") + 1
        c.buf = data[end:]
        return data[:end].splitlines()

    def _c4(self, c: Conn, now: float) -> None:
        lines = self._lines(c)
        if lines is None:
            return
        if lines is False:
            self.drop(c)
            if self.measuring and not c.ended:
                self.stats["connect4"].lost += 1
            if self.reconnect:
                self.connect(C4, c.slot, c.slot.hello)
            return
        st = self.stats["connect4"]
        for line in lines:
            word = line.split(b" ", 1)[0]
            if word == b"YOURMOVE":
                self._later(c, self.c4_rng.choice(line.split()[2:]) + b"\n")
            elif word == b"PLAYED":
                if c.t_sent:
                    if self.measuring:
                        st.lat.append(now - c.t_sent)
                    c.t_sent = 0.0
            elif word in (b"RESULT", b"ABORT"):
                c.ended = True
                if self.measuring:
                    st.games += 1
                    st.errors += word == b"ABORT"
            elif word == b"ERROR" and self.measuring:
                st.errors += 1

    # Virtual Fight: two AIs per named table; every warrior passes each turn

    def _vf(self, c: Conn, now: float) -> None:
        lines = self._lines(c)
        if lines is None:
            return
        team = c.slot
        if lines is False:
            self.drop(c)
            if self.measuring and not team.ended:
                self.stats["fight"].lost += 1
            if self.reconnect:
                self.connect(VF, VFTeam(team.table, team.hello), team.hello)
            return
        st = self.stats["fight"]
        for line in lines:
            line = line.rstrip(b"\r")
            if line == b"READY":
                if not c.started:
                    c.started = True
                    self.n_started += 1
                self._later(c, b"0&NONE\n1&NONE\n2&NONE\n3&NONE\n4&NONE\n")
            elif line == b"200":
                if team.t_sent:
                    if self.measuring:
                        st.lat.append(now - team.t_sent)
                    team.t_sent = 0.0
            elif line.startswith(b"GAMEOVER&"):
                team.ended = True
                if self.measuring and c.kind == VF and team.table.endswith(b"a"):
                    st.games += 1
            elif line == b"100" and self.measuring:
                st.errors += 1

    # first-reply probes: a new player, connect -> the first bytes it receives

    def _probe(self, now: float) -> None:
        port = PROBE_PORTS[self.probe_i % len(PROBE_PORTS)]
        self.probe_i += 1
        c = self.probe_conn = self.connect(PROBE, (port, now), WEB_PROBE if port == "web" else b"")
        c.t_sent = now

    def _probe_read(self, c: Conn, now: float) -> None:
        data = self._recv(c)
        if data is None:
            return
        port = c.slot[0]
        if not data:
            self._probe_done(c, now, "closed without a reply")
        elif data.startswith(b"503") or b"FULL&" in data or (port == "web" and not data.startswith(b"HTTP/1.1 200")):
            self._probe_done(c, now, f"refused: {data[:60]!r}")
        else:
            self._probe_done(c, now, None)

    def _probe_done(self, c: Conn, now: float, failure: str | None) -> None:
        self.drop(c)
        self.probe_conn = None
        port = c.slot[0]
        if not self.measuring:
            return
        if failure is None:
            self.probes[port].append(now - c.t_sent)
        else:
            self.probe_fail.append(f"{port}: {failure}")

    # the event loop

    def run(self, seconds: float, until=None) -> bool:
        poll = self.ep.poll
        conns = self.conns
        end = perf() + seconds
        control = self.control.fileno() if self.control is not None else -1
        while True:
            now = perf()
            self._fire(now)
            if now >= self.next_sample:
                self.next_sample = now + 0.25
                self.rss.append(self.d.rss_kb())
            probe = self.probe_conn
            if probe is not None and now - probe.t_sent > PROBE_TIMEOUT:
                self._probe_done(probe, now, f"no reply within {PROBE_TIMEOUT:g} s")
            elif probe is None and now >= self.next_probe:
                self.next_probe = now + self.probe_interval
                self._probe(now)
            if until is not None and until():
                return True
            if now >= end:
                return False
            wait = min(0.02, end - now)
            if self.timers:
                wait = max(0.0, min(wait, self.timers[0][0] - now))
            events = poll(wait)
            now = perf()
            self.polls += 1
            for fd, ev in events:
                if fd == control:
                    self._control()
                    control = self.control.fileno() if self.control is not None else -1
                    continue
                c = conns.get(fd)
                if c is None:
                    continue
                if not c.up:
                    self._connected(c, ev)
                    continue
                kind = c.kind
                if kind == BOT:
                    self._bot(c, now)
                elif kind == C4:
                    self._c4(c, now)
                elif kind == VF:
                    self._vf(c, now)
                elif kind == PROBE:
                    self._probe_read(c, now)

    # the windows

    def window(self, seconds: float, server: Server, attacker=None) -> dict:
        """Measure for ``seconds``: each game's move rate and latencies, the probes, RSS, CPU."""
        self.reset()
        self.clear()
        errors0 = self.errors + self.aborts
        self.measuring = True
        a0 = attacker.cpu_seconds() if attacker is not None else 0.0
        w = CpuWindow(server)
        self.run(seconds)
        w.stop()
        a1 = attacker.cpu_seconds() if attacker is not None else 0.0
        probe = self.probe_conn
        if probe is not None and perf() - probe.t_sent > 0.01:  # unanswered so far: at least this slow
            self.probes[probe.slot[0]].append(perf() - probe.t_sent)
        self.measuring = False
        server.check()
        self.stats["kalaha"].lat = self.lat
        self.stats["kalaha"].games = self.games // 2
        self.stats["kalaha"].errors = self.errors + self.aborts - errors0
        wall = w.wall
        out: dict = {"wall_s": wall}
        for g, st in self.stats.items():
            lat = sorted(st.lat)
            out[g] = {
                "moves": len(lat),
                "rate": len(lat) / wall,
                "p50_ms": pct(lat, 0.50) * 1e3,
                "p99_ms": pct(lat, 0.99) * 1e3,
                "max_ms": (lat[-1] if lat else float("nan")) * 1e3,
                "games": st.games,
                "lost": st.lost,
                "errors": st.errors,
            }
        first = sorted(x for v in self.probes.values() for x in v)
        out["first_reply"] = {
            "samples": len(first),
            "p50_ms": pct(first, 0.5) * 1e3,
            "max_ms": (first[-1] if first else float("nan")) * 1e3,
            "by_port_max_ms": {p: max(v) * 1e3 if v else float("nan") for p, v in self.probes.items()},
            "failed": len(self.probe_fail),
            "failures": self.probe_fail[:5],
        }
        rss = self.rss or [server.rss_kb()]
        out["rss_kb"] = {"median": statistics.median(rss), "max": max(rss), "last": rss[-1]}
        attacker_cpu = a1 - a0
        out["server_cpu"] = w.server_cpu / wall
        out["client_cpu"] = w.client_cpu / wall
        out["attacker_cpu"] = attacker_cpu / wall
        out["other_cpu"] = max(0.0, (w.other - attacker_cpu) / wall)
        out["cpu_busy"] = [b / wall for b in w.busy]
        return out


def warm_up(gen: SteadyLoad, d: Daemon, limit: float) -> dict:
    """Play until the daemon's RSS has stopped growing (three samples 2 s apart within 1 %), at most
    ``limit`` seconds: the windows then compare an attack with a steady quiet level."""
    t0 = perf()
    samples = [d.rss_kb()]
    stable = False
    while perf() - t0 < limit and not stable:
        gen.run(2.0)
        samples.append(d.rss_kb())
        last = samples[-3:]
        stable = len(last) == 3 and max(last) <= min(last) * 1.01
    return {"s": perf() - t0, "rss_kb": samples[-1], "stable": stable}


def start_load(gen: SteadyLoad, args) -> None:
    """Seat every game and wait until each has started."""
    gen.reconnect = True
    for i in range(args.kalaha):
        slot = Slot(b"bench%d" % i)
        gen.connect(BOT, slot, slot.hello)
        gen.connect(BOT, slot, slot.hello)
    for i in range(args.connect4):
        slot = Slot(b"c4bench%d" % i)
        slot.hello = b"BOARD OFF\nTABLE c4bench%d\n" % i
        gen.connect(C4, slot, slot.hello)
        gen.connect(C4, slot, slot.hello)
    for i in range(args.fight):
        for side in (b"a", b"b"):
            team = VFTeam(b"vf%d%s" % (i, side), b"TABLE&vf%d\n" % i)
            gen.connect(VF, team, team.hello)
    want = 2 * args.kalaha + 2 * args.fight
    if not gen.run(30.0, until=lambda: gen.n_started >= want):
        raise BenchError(f"only {gen.n_started} of {want} Kalaha and Virtual Fight players started within 30 s")


# --- the attacker (a child process) ----------------------------------------------------------


class Attack:
    __slots__ = ("sock", "fd", "port", "up", "off", "due", "sent", "target")

    def __init__(self, port: str, target: str = ""):
        self.port = port
        self.sock = None
        self.fd = -1
        self.up = False
        self.off = 0
        self.due = 0.0
        self.sent = 0
        self.target = target


class Attacker:
    """The attacks of one kind, driven by lines on stdin: ``start <kind>``, ``stop``, ``exit``."""

    def __init__(self, ports: dict[str, int], args):
        self.ports = ports
        self.args = args
        self.ep = select.epoll()
        self.conns: dict[int, Attack] = {}
        self.kind = None
        self.rng = random.Random(args.seed + 7)
        self.ids: list[str] = []
        self.ids_at = 0.0
        self.stdin = sys.stdin.buffer.raw.fileno()
        os.set_blocking(self.stdin, False)
        self.ep.register(self.stdin, EPOLLIN)
        self.inbuf = b""
        self.reset()
        self.chunks = {
            "kalaha": b"XYZZY garbage 0123456789\n" * 2600,
            "connect4": b"PLUGH garbage 0123456789\n" * 2600,
            "combat": b"\x00\x00\x00\x0b" * 16384,
            "combat-text": b"HELP\n" * 13000,
        }

    def reset(self) -> None:
        self.n = {"connected": 0, "failed": 0, "closed_by_daemon": 0, "reconnects": 0, "bytes_sent": 0,
                  "bytes_read": 0}  # fmt: skip

    def say(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    # connections

    def open(self, a: Attack) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if self.kind in ("sse", "noread"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            s.bind((ATTACKER_HOST, 0))
        except OSError:
            pass  # no such address: attack from the bots' address
        err = s.connect_ex((HOST, self.ports[a.port]))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.n["failed"] += 1
            return
        a.sock, a.fd, a.up, a.off = s, s.fileno(), False, 0
        self.conns[a.fd] = a
        self.ep.register(a.fd, EPOLLOUT | EPOLLIN | EPOLLRDHUP)

    def close(self, a: Attack) -> None:
        if self.conns.pop(a.fd, None) is not None:
            self.ep.unregister(a.fd)
            a.sock.close()

    def start(self, kind: str) -> None:
        self.kind = kind
        self.reset()
        args = self.args
        if kind == "idle":
            ports = ("kalaha", "connect4", "fight", "fight-gui", "combat", "combat-text", "web")
            todo = [Attack(ports[i % len(ports)]) for i in range(args.idle)]
        elif kind == "slowloris":
            ports = ("kalaha", "connect4", "fight", "combat-text", "web")
            todo = [Attack(ports[i % len(ports)]) for i in range(args.slowloris)]
        elif kind == "flood":
            ports = args.flood_ports
            todo = [Attack(ports[i % len(ports)]) for i in range(args.flood)]
        elif kind == "sse":
            todo = [Attack("web", self.game_id()) for _ in range(args.sse)]
        elif kind == "noread":
            todo = [Attack("combat") for _ in range(args.noread)]
        else:
            raise ValueError(kind)
        for i, a in enumerate(todo):
            a.due = perf() + (i % 20) * 0.1  # slowloris: the bytes of different connections spread
            self.open(a)
        self.total = len(todo)
        self.t_start = perf()
        self.reported = False

    def game_id(self) -> str:
        """A running game's id, from /api/games (fetched again at most every 0.5 s)."""
        if not self.ids or perf() - self.ids_at > 0.5:
            self.ids_at = perf()
            try:
                url = f"http://{HOST}:{self.ports['web']}/api/games"
                with urllib.request.urlopen(url, timeout=2.0) as r:
                    games = json.load(r)["games"]
                fight = [g["id"] for g in games if g["game"] == "fight"]
                self.ids = fight or [g["id"] for g in games] or self.ids
            except (OSError, ValueError, KeyError):
                pass
        return self.rng.choice(self.ids) if self.ids else "kalaha-1"

    def stop(self) -> None:
        for a in list(self.conns.values()):
            self.close(a)
        self.kind = None
        self.say("stopped " + json.dumps(self.n))

    # the loop

    def loop(self, lifetime: float) -> int:
        end = perf() + lifetime
        while perf() < end:
            events = self.ep.poll(0.05)
            now = perf()
            for fd, ev in events:
                if fd == self.stdin:
                    if not self.command():
                        return 0
                    continue
                a = self.conns.get(fd)
                if a is not None:
                    self.event(a, ev, now)
            if self.kind is not None:
                self.tick(now)
        return 0

    def command(self) -> bool:
        try:
            data = os.read(self.stdin, 4096)
        except BlockingIOError:
            return True
        if not data:
            return False  # the bench has gone
        self.inbuf += data
        *lines, self.inbuf = self.inbuf.split(b"\n")
        for line in lines:
            word, _, rest = line.decode().partition(" ")
            if word == "start":
                self.start(rest)
            elif word == "stop":
                self.stop()
            elif word == "exit":
                return False
        return True

    def event(self, a: Attack, ev: int, now: float) -> None:
        kind = self.kind
        if not a.up:
            if a.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) or ev & (select.EPOLLHUP | select.EPOLLERR):
                self.n["failed"] += 1
                self.close(a)
                self.lost(a)
                return
            if not ev & EPOLLOUT:
                return
            a.up = True
            self.n["connected"] += 1
            first = b""
            if kind == "sse":
                first = (f"GET /api/games/{a.target}/events HTTP/1.1\r\nHost: {HOST}\r\n"
                         "Accept: text/event-stream\r\n\r\n").encode()  # fmt: skip
            elif kind == "slowloris" and a.port == "web":
                first = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            elif kind in ("flood", "noread") and a.port == "combat":
                first = COMBAT_OPTIONS  # the table's map, if this connection hosts it
            if first:
                self.send(a, first)
            mask = {"flood": EPOLLIN | EPOLLOUT | EPOLLRDHUP, "noread": EPOLLOUT | EPOLLRDHUP, "sse": EPOLLRDHUP}
            self.ep.modify(a.fd, mask.get(kind, EPOLLIN | EPOLLRDHUP))
            return
        if kind in ("sse", "noread"):  # never read: a hang-up is the daemon closing
            if ev & (EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR):
                self.n["closed_by_daemon"] += 1
                self.close(a)
                self.lost(a)
            elif ev & EPOLLOUT and kind == "noread":
                self.flood(a)
            return
        if ev & EPOLLIN or ev & (EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR):
            try:
                data = a.sock.recv(65536)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                self.n["closed_by_daemon"] += 1
                self.close(a)
                self.lost(a)
                return
            if data:
                self.n["bytes_read"] += len(data)
        if ev & EPOLLOUT and kind == "flood":
            self.flood(a)

    def send(self, a: Attack, data: bytes) -> int:
        try:
            n = a.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            return 0  # the close is noticed by the next event
        a.sent += n
        self.n["bytes_sent"] += n
        return n

    def flood(self, a: Attack) -> None:
        chunk = self.chunks[a.port]
        if self.kind == "noread":
            limit = self.args.noread_requests * 4
            if a.sent >= limit:
                self.ep.modify(a.fd, EPOLLRDHUP)
                return
            chunk = chunk[: limit - a.sent]
        n = self.send(a, chunk[a.off :] if a.off else chunk)
        a.off = (a.off + n) % len(chunk) if n and a.off + n < len(chunk) else 0

    def lost(self, a: Attack) -> None:
        """The daemon closed (or refused) ``a``: flood and event streams come back, bounded."""
        if self.kind in ("flood", "sse") and self.n["reconnects"] < self.args.max_reconnects:
            self.n["reconnects"] += 1
            b = Attack(a.port, self.game_id() if self.kind == "sse" else "")
            self.open(b)

    def tick(self, now: float) -> None:
        if not self.reported:
            pending = sum(1 for a in self.conns.values() if not a.up)
            if pending == 0 or now - self.t_start > 15.0:
                self.reported = True
                self.say(f"up {self.n['connected']} {self.n['failed']} {pending}")
        if self.kind == "slowloris":
            for a in self.conns.values():
                if a.up and now >= a.due:
                    a.due = now + 2.0
                    self.send(a, b"X")


def attacker_main(args) -> int:
    die_with_parent()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    raise_nofile(args.idle + 1000)
    ports = json.loads(args.attacker)
    return Attacker(ports, args).loop(args.max_seconds)


def lifetime(args) -> float:
    """The attacker's lifetime: the longest the run may take (every bounded wait at its bound)."""
    per_attack = 30 + 1 + 2 * args.window + max(args.settle, args.drain) + 30
    return 60 + args.warmup + args.window + args.rounds * len(args.attacks) * per_attack


class AttackerProcess:
    """The attacker child: this script with --attacker, at niceness +10 on the bench's CPU."""

    def __init__(self, d: Daemon, args, gen: SteadyLoad):
        argv = [
            sys.executable, __file__, "--attacker", json.dumps(d.ports),
            "--idle", str(args.idle), "--slowloris", str(args.slowloris), "--flood", str(args.flood),
            "--sse", str(args.sse), "--noread", str(args.noread), "--flood-ports", ",".join(args.flood_ports),
            "--noread-requests", str(args.noread_requests), "--max-reconnects", str(args.max_reconnects),
            "--seed", str(args.seed), "--max-seconds", str(args.max_seconds or lifetime(args)),
        ]  # fmt: skip

        def child() -> None:
            die_with_parent()
            os.nice(10)
            if args.client_cpu is not None:
                os.sched_setaffinity(0, {args.client_cpu})

        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True, preexec_fn=child
        )
        HELPERS.append(self.proc)
        self.gen = gen
        gen.attach_control(self.proc.stdout)

    def cpu_seconds(self) -> float:
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                stat = f.read()
        except OSError:
            return 0.0
        fields = stat[stat.rfind(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def tell(self, line: str) -> None:
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise BenchError(f"the attacker has gone (status {self.proc.poll()})") from None

    def answer(self, word: str, timeout: float) -> str:
        """Serve the games until the attacker says ``word ...`` (at most ``timeout`` seconds)."""
        gen = self.gen
        gen.control_lines.clear()
        if not gen.run(timeout, until=lambda: bool(gen.control_lines)):
            raise BenchError(f"the attacker did not say {word!r} within {timeout:g} s")
        line = gen.control_lines.pop(0)
        if not line.startswith(word):
            raise BenchError(f"the attacker said {line!r}, not {word!r} (status {self.proc.poll()})")
        return line[len(word) :].strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"exit\n")
                self.proc.stdin.close()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# --- the run ---------------------------------------------------------------------------------


def settle(gen: SteadyLoad, d: Daemon, quiet: dict, limit: float, drain: float) -> dict:
    """After an attack, serving the games in steps of half a second: when the daemon's RSS is back
    within TARGET_RSS of the quiet window's (looked for during ``limit`` seconds), and when the
    games' move rate over a step is back to 80 % of the quiet window's (during ``drain`` seconds)."""
    t0 = perf()
    quiet_kb = quiet["rss_kb"]["median"]
    bound = quiet_kb * (1 + TARGET_RSS)
    quiet_rate = sum(quiet[g]["rate"] for g in GAMES)
    back_at = calm_at = rss_kb = None
    while True:
        elapsed = perf() - t0
        if (back_at is not None or elapsed >= limit) and (calm_at is not None or elapsed >= drain):
            break
        gen.reset()
        gen.clear()
        gen.measuring = True
        t1 = perf()
        gen.run(0.5)
        gen.measuring = False
        moves = len(gen.lat) + sum(len(gen.stats[g].lat) for g in GAMES if g != "kalaha")
        now = perf() - t0
        kb = d.rss_kb()
        if back_at is None and rss_kb is None:
            if kb <= bound:
                back_at, rss_kb = now, kb
            elif now >= limit:
                rss_kb = kb  # not back: the RSS at the end of the settle time
        if calm_at is None and moves / (perf() - t1) >= 0.8 * quiet_rate:
            calm_at = now
    return {
        "back": back_at is not None,
        "after_s": back_at if back_at is not None else limit,
        "rss_kb": rss_kb if rss_kb is not None else d.rss_kb(),
        "quiet_kb": quiet_kb,
        "calm": calm_at is not None,
        "calm_after_s": calm_at if calm_at is not None else drain,
    }


def run_phases(args) -> dict:
    out: dict = {"windows": [], "attacks": {}}
    with daemon(args) as d:
        gen = SteadyLoad(d, args)
        attacker = AttackerProcess(d, args, gen)
        try:
            start_load(gen, args)
            out["warmup"] = warm_up(gen, d, args.warmup)
            print(f"warm-up: {out['warmup']['s']:.0f} s, RSS {out['warmup']['rss_kb'] / 1024:.0f} MiB"
                  f"{'' if out['warmup']['stable'] else ' (still growing)'}", flush=True)  # fmt: skip
            print(f"steady load: {args.kalaha} Kalaha, {args.connect4} Connect Four, {args.fight} Virtual Fight "
                  f"games, think {args.think * 1e3:g} ms; windows of {args.window:g} s", flush=True)  # fmt: skip
            q = gen.window(args.window, d, attacker)
            q["calm_before"] = True
            first_quiet = q
            out["windows"].append(("quiet", q))
            print(f"  quiet      {line(q)}", flush=True)
            for g in GAMES:
                if q[g]["moves"] == 0 and vars(args)[g] > 0:
                    raise BenchError(f"no {g} move was played in the first quiet window")
            for kind, rnd in [(k, r) for r in range(args.rounds) for k in args.attacks]:
                attacker.tell(f"start {kind}")
                up = attacker.answer("up", 30.0).split()
                gen.run(1.0)  # let the daemon take in the connections' first bytes
                a = gen.window(args.window, d, attacker)
                a["connected"], a["failed"], a["pending"] = (int(x) for x in up)
                attacker.tell("stop")
                a["attacker"] = json.loads(attacker.answer("stopped", 30.0))
                a["memory"] = settle(gen, d, q, args.settle, args.drain)
                a["round"] = rnd + 1
                out["windows"].append((kind, a))
                print(f"  {kind:<10} {line(a)}", flush=True)
                print(f"             {attack_line(a)}", flush=True)
                q2 = gen.window(args.window, d, attacker)
                q2["calm_before"] = a["memory"]["calm"]
                out["windows"].append(("quiet", q2))
                print(f"  quiet      {line(q2)}{'' if q2['calm_before'] else '  (games had not recovered: not used)'}",
                      flush=True)  # fmt: skip
                r = compare(a, [w for w in (q, q2) if w["calm_before"]] or [first_quiet])
                out["attacks"].setdefault(kind, []).append(r)
                q = q2
        finally:
            attacker.stop()
            gen.close_all()
    return out


def compare(a: dict, quiet: list[dict]) -> dict:
    """An attack window against the mean of its neighbouring quiet windows (those that began with
    the daemon calm; the first quiet window of the run when neither did)."""
    r: dict = {"quiet_windows": len(quiet)}
    for g in GAMES:
        rate = statistics.mean(q[g]["rate"] for q in quiet)
        p99 = statistics.mean(q[g]["p99_ms"] for q in quiet)
        r[g] = {
            "rate_ratio": a[g]["rate"] / rate if rate else float("nan"),
            # no move at all under the attack: infinitely worse
            "p99_ratio": float("inf") if not a[g]["moves"] else a[g]["p99_ms"] / p99 if p99 > 0 else float("nan"),
        }
    m = a["memory"]
    r["rss_back"] = m["back"]
    r["rss_after_ratio"] = m["rss_kb"] / m["quiet_kb"]
    r["rss_peak_ratio"] = a["rss_kb"]["max"] / m["quiet_kb"]
    r["first_reply_max_ms"] = a["first_reply"]["max_ms"]
    r["quiet_first_reply_max_ms"] = max(q["first_reply"]["max_ms"] for q in quiet)
    r["first_reply_failed"] = a["first_reply"]["failed"]
    return r


def line(w: dict) -> str:
    games = "  ".join(
        f"{g[:2]} {w[g]['rate']:6.1f}/s p99 {fmt(w[g]['p99_ms'], 1):>6} ms" for g in GAMES
    )
    f = w["first_reply"]
    fail = f" ({f['failed']} failed)" if f["failed"] else ""
    return (
        f"{games}  first reply max {fmt(f['max_ms'], 1)} ms{fail}  RSS {w['rss_kb']['median'] / 1024:.0f} MiB  "
        f"CPU daemon {w['server_cpu']:.0%} bots {w['client_cpu']:.0%} attacker {w['attacker_cpu']:.0%} "
        f"other {w['other_cpu']:.0%}"
    )


def attack_line(a: dict) -> str:
    n, m = a["attacker"], a["memory"]
    back = f"back within 10 % after {m['after_s']:.1f} s" if m["back"] else f"NOT back after {m['after_s']:.1f} s"
    calm = (f"games recovered after {m['calm_after_s']:.1f} s" if m["calm"]
            else f"games NOT recovered after {m['calm_after_s']:.0f} s")  # fmt: skip
    return (
        f"connections up {a['connected']} (failed {a['failed']}, pending {a['pending']}), closed by the daemon "
        f"{n['closed_by_daemon']}, reconnects {n['reconnects']}, sent {n['bytes_sent'] / 1e6:.1f} MB; RSS peak "
        f"{a['rss_kb']['max'] / 1024:.0f} MiB, {back} ({m['rss_kb'] / 1024:.0f} MiB vs quiet {m['quiet_kb'] / 1024:.0f}); {calm}"
    )


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    """The ratios of every attack window; the verdicts on the median over the rounds."""
    verdicts = []
    print("\nEach attack against the mean of the quiet windows before and after it")
    print(f"  {'attack':<10} {'round':>5}  {'move rate ratio (ka/c4/vf)':<28} {'p99 ratio (ka/c4/vf)':<22} "
          f"{'RSS peak/after':<16} first reply max (quiet)")  # fmt: skip
    for kind, rounds in results["attacks"].items():
        for i, r in enumerate(rounds, 1):
            rates = "/".join(fmt(r[g]["rate_ratio"], 2) for g in GAMES)
            p99s = "/".join(fmt(r[g]["p99_ratio"], 1) for g in GAMES)
            fail = f" ({r['first_reply_failed']} failed)" if r["first_reply_failed"] else ""
            print(f"  {kind:<10} {i:>5}  {rates:<28} {p99s:<22} {r['rss_peak_ratio']:.2f}/{r['rss_after_ratio']:.2f}"
                  f"       {fmt(r['first_reply_max_ms'], 1)} ms{fail} ({fmt(r['quiet_first_reply_max_ms'], 1)} ms)")  # fmt: skip
    median = statistics.median
    for kind, rounds in results["attacks"].items():
        of = f" (median of {len(rounds)} rounds)" if len(rounds) > 1 else ""
        worst_rate = median(min(r[g]["rate_ratio"] for g in GAMES) for r in rounds)
        worst_p99 = median(max(r[g]["p99_ratio"] for g in GAMES) for r in rounds)
        after = median(r["rss_after_ratio"] for r in rounds)
        peak = median(r["rss_peak_ratio"] for r in rounds)
        first = median(r["first_reply_max_ms"] for r in rounds)
        failed = sum(r["first_reply_failed"] for r in rounds)
        verdicts.append((f"{kind}: every game keeps >= {TARGET_RATE:.0%} of its move rate",
                         worst_rate >= TARGET_RATE, f"worst {worst_rate:.2f}{of}"))  # fmt: skip
        verdicts.append((f"{kind}: every game's p99 <= {TARGET_P99:g}x the quiet windows'",
                         worst_p99 <= TARGET_P99, f"worst {worst_p99:.1f}x{of}"))  # fmt: skip
        verdicts.append((f"{kind}: daemon RSS back within {TARGET_RSS:.0%} of quiet", after <= 1 + TARGET_RSS,
                         f"{after:.2f}x after the settle time (peak {peak:.2f}x){of}"))  # fmt: skip
        failed_text = f", {failed} probes failed" if failed else ""
        verdicts.append((f"{kind}: a new player's first reply < {TARGET_FIRST_MS:g} ms",
                         first < TARGET_FIRST_MS and not failed, f"slowest {fmt(first, 1)} ms{of}{failed_text}"))  # fmt: skip
    return verdicts


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kalaha", type=int, default=20, help="concurrent Kalaha games [%(default)s]")
    p.add_argument("--connect4", type=int, default=10, help="concurrent Connect Four games [%(default)s]")
    p.add_argument("--fight", type=int, default=10, help="concurrent Virtual Fight games [%(default)s]")
    p.add_argument("--fight-turns", type=int, default=500, help="turns a Virtual Fight game lasts [%(default)s]")
    p.add_argument("--think", type=float, default=0.02, help="seconds every bot thinks before it moves [%(default)s]")
    p.add_argument("--window", type=float, default=10.0, help="seconds of each quiet and attack window [%(default)s]")
    p.add_argument("--warmup", type=float, default=30.0,
                   help="seconds of load at most before the first window, until the RSS is steady [%(default)s]")  # fmt: skip
    p.add_argument("--settle", type=float, default=10.0,
                   help="seconds the RSS may take to come back after an attack [%(default)s]")  # fmt: skip
    p.add_argument("--drain", type=float, default=60.0,
                   help="seconds the games may take to recover (80 %% of the quiet move rate) after an attack [%(default)s]")  # fmt: skip
    p.add_argument("--linger", type=float, default=1.0,
                   help="the daemon's [web] linger: seconds a finished game stays in memory [%(default)s]")  # fmt: skip
    p.add_argument("--probe-interval", type=float, default=0.25,
                   help="seconds between two new players' connections [%(default)s]")  # fmt: skip
    p.add_argument("--rounds", type=int, default=1, help="times the whole series of attacks is run [%(default)s]")
    p.add_argument("--attacks", default=",".join(ATTACKS), help="the attacks, in order [%(default)s]")
    p.add_argument("--idle", type=int, default=1000, help="idle connections [%(default)s]")
    p.add_argument("--slowloris", type=int, default=200, help="slowloris connections [%(default)s]")
    p.add_argument("--flood", type=int, default=50, help="flooding connections [%(default)s]")
    p.add_argument("--flood-ports", default="kalaha,connect4,combat,combat-text",
                   help="the ports the flooders share, in turn [%(default)s]")  # fmt: skip
    p.add_argument("--sse", type=int, default=100, help="event streams that never read [%(default)s]")
    p.add_argument("--noread", type=int, default=10, help="Combat clients that never read [%(default)s]")
    p.add_argument("--noread-requests", type=int, default=500_000,
                   help="REQ_SYNC each never-reading Combat client sends at most [%(default)s]")  # fmt: skip
    p.add_argument("--max-reconnects", type=int, default=20_000,
                   help="reconnections of flooders and event streams per attack, at most [%(default)s]")  # fmt: skip
    p.add_argument("--wait-quiet", type=float, default=30.0, metavar="S",
                   help="wait at most S seconds for the machine to be quiet first, 0 = no [%(default)s]")  # fmt: skip
    p.add_argument("--nice", type=int, default=0, help="niceness of the bench and the daemon (-10: priority)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemon and the bench to CPUs")
    p.add_argument("--seed", type=int, default=1, help="seed of the bots' choices [%(default)s]")
    p.add_argument("--short", action="store_true",
                   help="the short form (make bench): 4 s windows, 5 s settle, 20 s drain and warm-up at most")  # fmt: skip
    p.add_argument("--max-seconds", type=float, default=0.0,
                   help="the attacker's lifetime; 0 = the longest the run may take [%(default)s]")  # fmt: skip
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemon's log (its directory is printed)")
    p.add_argument("--attacker", metavar="PORTS", help=argparse.SUPPRESS)  # the child process
    args = p.parse_args(argv)
    if args.short:
        args.window, args.settle, args.drain, args.warmup = 4.0, 5.0, 20.0, 20.0
        args.wait_quiet = min(args.wait_quiet, 10.0)
    args.attacks = [a for a in args.attacks.split(",") if a]
    args.flood_ports = [x for x in args.flood_ports.split(",") if x]
    wrong = set(args.flood_ports) - {"kalaha", "connect4", "combat", "combat-text"}
    if wrong or not args.flood_ports:
        p.error(f"--flood-ports: kalaha, connect4, combat or combat-text, not {', '.join(sorted(wrong)) or 'none'}")
    unknown = set(args.attacks) - set(ATTACKS)
    if unknown:
        p.error(f"unknown attacks: {', '.join(sorted(unknown))} (known: {', '.join(ATTACKS)})")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.attacker:
        return attacker_main(args)
    exit_on_sigterm()
    args.logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    t_start = perf()

    def body() -> int:
        import_work_tree()
        priority = set_priority(args.nice)
        raise_nofile(4 * (args.kalaha + args.connect4 + args.fight) + 1000)
        pinned = choose_cpus(args)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        results: dict = {"machine": machine(gamed_version()), "args": {k: v for k, v in vars(args).items()}}
        results["machine"]["priority"] = priority
        if args.wait_quiet > 0:
            print(f"waiting (at most {args.wait_quiet:g} s) for the machine to be quiet ...", flush=True)
        results["quiet"] = wait_quiet(args.wait_quiet)
        print(f"machine: {results['quiet']}", flush=True)
        results.update(run_phases(args))
        note_code_change(results["machine"], gamed_version())
        print_machine(results["machine"])
        print(f"scheduling: {priority}; daemon on CPU {args.server_cpu}, bots and attacker on CPU {args.client_cpu}"
              if pinned else f"scheduling: {priority}; not pinned")  # fmt: skip
        verdicts = report(results)
        print_targets(verdicts)
        others = [w["other_cpu"] for _, w in results["windows"]]
        warn_if_disturbed(others, "the daemon, the bots nor the attacker", " during a window")
        return finish(results, verdicts, t_start, args.json)

    return guarded("attack_load", body, lambda: stop_all(args.logdir, args.keep_logs, "daemon"))


if __name__ == "__main__":
    sys.exit(main())
