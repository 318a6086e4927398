"""Kalaha load benchmark: scripted bots play the real gamed daemon over loopback (``make bench``).

Phases, each against a fresh server; the server and this single-threaded epoll load generator are
pinned to one core each (unless --no-pin):

1. N concurrent games (N = 1, 100, 1000): bots send ``BOARD OFF`` and ``TABLE bench<i>``, answer each
   YOURMOVE with a legal pit from it, and reconnect when their game ends. Reported: moves/s; move
   latency p50/p99 (from just before a bot's send() of its move to the epoll wakeup in which that
   bot's socket delivers the PLAYED line echoing it); "prompt" latency (move -> next YOURMOVE in that
   game); daemon CPU per move; daemon RSS per player (VmRSS with all 2N players seated and the first
   movers holding their moves, minus VmRSS before, over 2N).
2. The same concurrency against a bare Twisted LineOnlyReceiver echo server (bench/echo_server.py):
   N clients with one request in flight each; the ratio Kalaha moves/s / echo req/s.
3. The same concurrency against the same bare server in relay mode (``echo_server.py --relay``),
   which has Kalaha's output pattern: N pairs of clients, a line from either member of a pair is
   written to both. The two clients of a pair take turns like Kalaha players (A sends, both
   receive, then B sends, ...), so each pair has one message in flight, as each game has one move.
   Reported: messages/s, latency (sender's send() -> the wakeup delivering its own copy), server
   CPU per message, and the ratio Kalaha moves/s / relay messages/s.
4. 10,000 idle connections opened at once (time until all have HELLO), then 100 games without,
   with and again without 1000 idle connections held open.

The load generator's own CPU use is printed with every figure: near 100% means the client, not the
server, limited the rate. The default run takes about 85 s.
"""

from __future__ import annotations

import argparse
import errno
import os
import random
import select
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (
    BIN,
    HOST,
    ROOT,
    BenchError,
    CpuWindow,
    Server,
    choose_cpus,
    exit_on_sigterm,
    finish,
    finish_profiler,
    fmt,
    guarded,
    machine,
    pct,
    perf,
    print_machine,
    print_profile,
    print_targets,
    raise_nofile,
    saturated,
    set_priority,
    start_profiler,
    stop_all,
    ports_only,
    warn_if_disturbed,
)

PREFIX = "kalaha-bench"  # of the log directory and of the py-spy stacks kept

BOT, ECHO, IDLE, RELAY = 0, 1, 2, 3
EPOLLIN, EPOLLOUT = select.EPOLLIN, select.EPOLLOUT

TARGETS = {
    "ratio_100": 0.70,  # Kalaha moves/s at 100 games / echo req/s at 100 clients
    "p99_100_ms": 5.0,  # p99 move latency at 100 games
    "rss_kb_per_player": 20.0,
    "idle_accept_s": 2.0,  # 10,000 idle connections all greeted
    "idle_effect": 0.10,  # relative change of the 100-game move rate with 1000 idle connections
}


# --- servers under test ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def daemon(args, idle_timeout: float | None = None, extra: tuple[str, ...] = ()) -> Server:
    """The daemon serving Kalaha only, on a free port; ``extra``: more twistd gamed options
    (bench/clock_cost.py passes the clock's)."""
    port = free_port()
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        *ports_only(kalaha=f"tcp:port={port}:interface={HOST}:backlog={args.backlog}"),
        "--max-per-peer", "0", "--max-connections", "0",
        "--kalaha-pair-delay", "0.5",
    ]  # fmt: skip
    if idle_timeout is not None:
        argv += ["--idle-timeout", f"{idle_timeout:g}"]
    argv += extra
    server = Server("gamed", argv, f"starting on {port}", args.server_cpu, args.logdir)
    server.port = port
    return server


def echo_server(args) -> Server:
    port = free_port()
    argv = [sys.executable, str(ROOT / "bench" / "echo_server.py"), "--port", str(port), "--backlog", str(args.backlog)]
    server = Server("echo", argv, f"listening on {port}", args.server_cpu, args.logdir)
    server.port = port
    return server


def relay_server(args) -> Server:
    port = free_port()
    argv = [
        sys.executable, str(ROOT / "bench" / "echo_server.py"), "--relay",
        "--port", str(port), "--backlog", str(args.backlog),
    ]  # fmt: skip
    server = Server("relay", argv, f"listening on {port}", args.server_cpu, args.logdir)
    server.port = port
    return server


# --- the load generator ----------------------------------------------------------------------


class Slot:
    """One Kalaha game slot: its two bots meet at table ``bench<i>``; a new pair follows each game."""

    __slots__ = ("hello", "t_move")

    def __init__(self, table: bytes):
        self.hello = b"BOARD OFF\nTABLE " + table + b"\n"
        self.t_move = 0.0


class Pair:
    """Two relay clients that take turns: the one that did not send the last message sends the next,
    once both have received the last one."""

    __slots__ = ("a", "b", "msg", "sender", "got", "t_sent")

    def __init__(self, index: int):
        self.a = self.b = None
        self.msg = b"R%d\n" % index  # tells a line relayed to the wrong pair from its own
        self.sender = None
        self.got = 0  # copies of the message in flight received so far (2 = both members)
        self.t_sent = 0.0


class Conn:
    __slots__ = ("sock", "fd", "kind", "slot", "buf", "t_sent", "up", "started", "pending", "ended")

    def __init__(self, sock, kind, slot, first):
        self.sock = sock
        self.fd = sock.fileno()
        self.kind = kind
        self.slot = slot
        self.buf = first  # bytes to send once connected, then the unparsed tail of the input
        self.t_sent = 0.0
        self.up = False
        self.started = False
        self.pending = None
        self.ended = False


class LoadGen:
    """A single-threaded epoll client driving bots, echo clients and idle connections."""

    def __init__(self, port: int, policy: str, seed: int, quickack: bool = False):
        self.addr = (HOST, port)
        self.quickack = quickack
        self.ep = select.epoll()
        self.conns: dict[int, Conn] = {}
        self.rng = random.Random(seed)
        self.first_pit = policy == "first"
        self.reconnect = True
        self.paused = False
        self.measuring = False
        self.reset()
        self.n_started = self.n_pending = self.n_hello = self.n_wait = 0
        self.t_last_hello = self.t_last_wait = 0.0
        self.games_total = 0
        self.errors = self.aborts = self.lost = 0
        self.idle_lost = self.idle_paired = 0
        self.lost_samples: list[bytes] = []
        self.hello_times: list[float] = []

    def reset(self) -> None:
        self.lat: list[float] = []
        self.prompt: list[float] = []
        self.moves = 0
        self.games = 0
        self.polls = 0

    # connections

    def connect(self, kind: int, slot=None, first: bytes = b"") -> Conn:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = s.connect_ex(self.addr)
        if err not in (0, errno.EINPROGRESS):
            s.close()
            raise BenchError(f"connect to {self.addr}: {os.strerror(err)}")
        c = Conn(s, kind, slot, first)
        self.conns[c.fd] = c
        self.ep.register(c.fd, EPOLLIN | EPOLLOUT)
        return c

    def drop(self, c: Conn) -> None:
        if self.conns.pop(c.fd, None) is not None:
            self.ep.unregister(c.fd)
            c.sock.close()

    def close_all(self, kind: int | None = None) -> None:
        self.reconnect = False if kind in (None, BOT) else self.reconnect
        for c in list(self.conns.values()):
            if kind is None or c.kind == kind:
                self.drop(c)

    def count(self, kind: int) -> int:
        return sum(1 for c in self.conns.values() if c.kind == kind)

    def _connected(self, c: Conn, ev: int) -> None:
        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.drop(c)
            raise BenchError(f"connect to {self.addr} failed: {os.strerror(err)}")
        if not ev & EPOLLOUT:
            return
        first, c.buf = c.buf, b""
        c.up = True
        self.ep.modify(c.fd, EPOLLIN)
        if c.kind == ECHO:
            c.t_sent = perf()
        if first:
            c.sock.send(first)

    # the event loop

    def run(self, seconds: float, until=None) -> bool:
        """Serve events for ``seconds`` or until ``until()`` is true (then return True)."""
        poll = self.ep.poll
        conns = self.conns
        end = perf() + seconds
        bot, echo, relay, idle = self._bot, self._echo, self._relay, self._idle
        while True:
            now = perf()
            if until is not None and until():
                return True
            if now >= end:
                return False
            events = poll(min(0.05, end - now))
            now = perf()
            self.polls += 1
            for fd, ev in events:
                c = conns.get(fd)
                if c is None:
                    continue
                if not c.up:
                    self._connected(c, ev)
                    continue
                kind = c.kind
                if kind == BOT:
                    bot(c, now)
                elif kind == ECHO:
                    echo(c, now)
                elif kind == RELAY:
                    relay(c, now)
                else:
                    idle(c, now)

    def _recv(self, c: Conn) -> bytes:
        try:
            data = c.sock.recv(16384)
            if self.quickack:  # diagnostic: acknowledge at once, so the server's Nagle never waits
                c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            return data
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _bot(self, c: Conn, now: float) -> None:
        data = self._recv(c)
        if not data:
            if data is not None:
                self._bot_closed(c)
            return
        if c.buf:
            data = c.buf + data
        end = data.rfind(b"\n") + 1
        if end < len(data):
            c.buf = data[end:]
            data = data[:end]
            if not data:
                return
        elif c.buf:
            c.buf = b""
        if c.t_sent and b"PLAYED" in data:  # the echo of this bot's own move
            if self.measuring:
                self.lat.append(now - c.t_sent)
                self.moves += 1
            c.t_sent = 0.0
        i = data.rfind(b"YOURMOVE ")
        if i >= 0:
            slot = c.slot
            if slot.t_move:
                if self.measuring:
                    self.prompt.append(now - slot.t_move)
                slot.t_move = 0.0
            pits = data[i : data.find(b"\r", i)].split()[2:]
            pit = pits[0] if self.first_pit else self.rng.choice(pits)
            if self.paused:
                c.pending = pit
                self.n_pending += 1
            else:
                self._move(c, pit)
        if not c.started and b"START " in data:
            c.started = True
            self.n_started += 1
        if b"RESULT " in data:
            c.ended = True
            c.slot.t_move = 0.0
            self.games_total += 1  # both bots see it: games = games_total / 2
            if self.measuring:
                self.games += 1
        if b"ERROR " in data:
            self.errors += 1
        if b"ABORT " in data:
            self.aborts += 1
            c.ended = True

    def _move(self, c: Conn, pit: bytes) -> None:
        t = perf()
        c.t_sent = t
        c.slot.t_move = t
        try:
            c.sock.send(pit + b"\n")
        except OSError:
            pass  # the close is noticed on the next read

    def release(self) -> None:
        """Unpause: every bot holding a YOURMOVE answers it now."""
        self.paused = False
        for c in list(self.conns.values()):
            if c.pending is not None:
                pit, c.pending = c.pending, None
                self._move(c, pit)

    def _bot_closed(self, c: Conn) -> None:
        self.drop(c)
        if not c.ended:
            self.lost += 1
        if self.reconnect:
            self.connect(BOT, c.slot, c.slot.hello)

    def _whole_lines(self, c: Conn) -> bytes | None:
        """The bytes of the whole lines now readable on ``c``; None while a line is incomplete or
        when ``c`` has closed (counted as lost)."""
        data = self._recv(c)
        if not data:
            if data is not None:
                self.lost += 1
                self.drop(c)
            return None
        if c.buf:
            data = c.buf + data
        if data[-1:] != b"\n":
            c.buf = data
            return None
        c.buf = b""
        return data

    def _echo(self, c: Conn, now: float) -> None:
        data = self._whole_lines(c)
        if data is None:
            return
        if self.measuring:
            self.lat.append(now - c.t_sent)
            self.moves += 1
        if not c.started:
            c.started = True
            self.n_started += 1
        c.t_sent = perf()
        c.sock.send(b"A3\n")

    def _relay(self, c: Conn, now: float) -> None:
        data = self._whole_lines(c)
        if data is None:
            return
        if not c.started:  # the server's greeting: it has given this connection its place in a pair
            c.started = True
            self.n_started += 1
            data = data[data.find(b"\n") + 1 :]
            if not data:
                return
        p = c.slot
        if data != p.msg:  # another pair's line, or more than the one message in flight
            self.errors += 1
        if c is p.sender and self.measuring:
            self.lat.append(now - p.t_sent)
            self.moves += 1
        p.got += 1
        if p.got >= 2:
            self.relay_send(p)

    def relay_send(self, p: Pair) -> None:
        """The member of ``p`` that did not send the last message sends the next one."""
        c = p.b if p.sender is p.a else p.a
        p.sender = c
        p.got = 0
        p.t_sent = perf()
        try:
            c.sock.send(p.msg)
        except OSError:
            pass  # the close is noticed on the next read

    def _idle(self, c: Conn, now: float) -> None:
        data = self._recv(c)
        if not data:
            if data is not None:
                self.lost += 1
                self.idle_lost += 1
                if not c.started:
                    self.n_wait += 1  # it will never wait: do not wait for it
                if len(self.lost_samples) < 3:
                    self.lost_samples.append(c.buf[-300:])
                self.drop(c)
            return
        c.buf = (c.buf + data)[-300:]  # kept only to explain a lost connection
        if not c.pending:
            c.pending = True
            self.n_hello += 1
            self.t_last_hello = now
            self.hello_times.append(now)
        if not c.started and (b"WAIT " in data or b"START " in data):
            c.started = True
            self.n_wait += 1
            self.t_last_wait = now
            if b"START " in data:
                self.idle_paired += 1

    # measurement

    def window(self, seconds: float, server: Server) -> dict:
        """Measure for ``seconds``: rates, latencies, server and client CPU."""
        self.reset()
        games0 = self.games_total
        self.measuring = True
        w = CpuWindow(server)
        self.run(seconds)
        w.stop()
        self.measuring = False
        server.check()
        wall, server_cpu, client_cpu = w.wall, w.server_cpu, w.client_cpu
        lat = sorted(self.lat)
        prompt = sorted(self.prompt)
        moves = self.moves
        return {
            "wall_s": wall,
            "count": moves,
            "rate": moves / wall,
            "p50_ms": pct(lat, 0.50) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "max_ms": (lat[-1] if lat else float("nan")) * 1e3,
            "prompt_p50_ms": pct(prompt, 0.50) * 1e3,
            "prompt_p99_ms": pct(prompt, 0.99) * 1e3,
            "games_per_s": (self.games_total - games0) / 2 / wall,  # each game: RESULT seen by both bots
            "server_cpu": server_cpu / wall,
            "server_us_per_op": server_cpu / moves * 1e6 if moves else float("nan"),
            "client_cpu": client_cpu / wall,
            "client_us_per_op": client_cpu / moves * 1e6 if moves else float("nan"),
            "ops_per_poll": moves / self.polls if self.polls else 0.0,
            "cpu_busy": [b / wall for b in w.busy],
            "other_cpu": max(0.0, w.other / wall),
        }


def tcp_counters() -> dict[str, int]:
    """The kernel's TcpExt counters (system-wide) from /proc/net/netstat."""
    try:
        with open("/proc/net/netstat") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))
    return {}


# --- phases ----------------------------------------------------------------------------------


def start_games(gen: LoadGen, n: int, first_slot: int = 0, timeout: float = 30.0) -> None:
    """Connect n bot pairs while paused; return once every game has started and its first mover
    holds its YOURMOVE (nothing is moving)."""
    gen.paused = True
    gen.reconnect = True
    started, pending = gen.n_started, gen.n_pending
    for i in range(first_slot, first_slot + n):
        slot = Slot(b"bench%d" % i)
        gen.connect(BOT, slot, slot.hello)
        gen.connect(BOT, slot, slot.hello)
    ok = gen.run(timeout, until=lambda: gen.n_started - started >= 2 * n and gen.n_pending - pending >= n)
    if not ok:
        raise BenchError(
            f"only {gen.n_started - started} of {2 * n} bots got START and {gen.n_pending - pending} of {n} "
            f"first movers got YOURMOVE within {timeout:g} s"
        )


def warm_up_game(gen: LoadGen) -> None:
    """Play one game to its end, so that code paths run once are not billed to the measured players."""
    gen.reconnect = False
    slot = Slot(b"warmup")
    gen.connect(BOT, slot, slot.hello)
    gen.connect(BOT, slot, slot.hello)
    if not gen.run(15, until=lambda: gen.count(BOT) == 0):
        raise BenchError("the warm-up game did not finish within 15 s")


def kalaha_phase(args, n: int) -> dict:
    with daemon(args) as d:
        return kalaha_games(args, d, n)


def kalaha_games(args, d: Server, n: int, first_slot: int = 0, gen: LoadGen | None = None) -> dict:
    """N games on the running daemon ``d`` (tables bench<first_slot>...): warm-up game, seating,
    warm-up, one measured window; every bot is disconnected at the end. ``gen``: a load generator
    set up by the caller (bench/clock_cost.py), else a new one."""
    if gen is None:
        gen = LoadGen(d.port, args.policy, args.seed, args.quickack)
    try:
        warm_up_game(gen)
        gen.run(0.2)
        rss0 = d.rss_kb()
        t0 = perf()
        start_games(gen, n, first_slot)
        setup = perf() - t0
        gen.run(0.3)  # let the daemon flush everything
        rss1 = d.rss_kb()
        gen.release()
        gen.run(args.warmup)
        spy = start_profiler(args, d, n, args.window) if n in args.profile else None
        result = gen.window(args.window, d)
        if spy is not None:
            result["profile"] = finish_profiler(spy, args.profile_top, PREFIX)
        result.update(
            n=n,
            players=2 * n,
            setup_s=setup,
            rss_before_kb=rss0,
            rss_players_kb=rss1,
            rss_kb_per_player=(rss1 - rss0) / (2 * n),
            errors=gen.errors,
            aborts=gen.aborts,
            lost=gen.lost,
        )
        return result
    finally:
        gen.close_all()


def echo_phase(args, n: int) -> dict:
    with echo_server(args) as e:
        gen = LoadGen(e.port, args.policy, args.seed, args.quickack)
        try:
            rss0 = e.rss_kb()
            for _ in range(n):
                gen.connect(ECHO, None, b"A3\n")
            if not gen.run(30, until=lambda: gen.n_started >= n):
                raise BenchError(f"only {gen.n_started} of {n} echo clients got a reply within 30 s")
            gen.run(args.warmup)
            rss1 = e.rss_kb()
            result = gen.window(args.window, e)
            result.update(n=n, rss_kb_per_conn=(rss1 - rss0) / n, lost=gen.lost)
            return result
        finally:
            gen.close_all()


def relay_phase(args, n: int) -> dict:
    with relay_server(args) as r:
        gen = LoadGen(r.port, args.policy, args.seed, args.quickack)
        try:
            pairs = []
            t0 = perf()
            # The server pairs connections in the order it accepts them: connect one client at a
            # time and wait for its greeting, so that the 2i-th and (2i+1)-th accepted are pair i.
            for i in range(n):
                p = Pair(i)
                for member in ("a", "b"):
                    started = gen.n_started
                    setattr(p, member, gen.connect(RELAY, p))
                    if not gen.run(10, until=lambda started=started: gen.n_started > started):
                        raise BenchError(f"relay client {2 * i + (member == 'b')} of {2 * n} got no greeting in 10 s")
                pairs.append(p)
            setup = perf() - t0
            for p in pairs:
                gen.relay_send(p)  # A of every pair sends first
            gen.run(args.warmup)
            result = gen.window(args.window, r)
            result.update(n=n, setup_s=setup, errors=gen.errors, lost=gen.lost)
            return result
        finally:
            gen.close_all()


def idle_accept_phase(args) -> dict:
    n = args.idle
    with daemon(args, idle_timeout=0) as d:
        gen = LoadGen(d.port, args.policy, args.seed, args.quickack)
        try:
            gen.run(0.2)
            rss0 = d.rss_kb()
            cpu0 = d.cpu_seconds()
            tcp0 = tcp_counters()
            spy = start_profiler(args, d, "idle", 3) if "idle" in args.profile else None
            t0 = perf()
            for i in range(n):
                gen.connect(IDLE, None, b"TABLE idle%d\n" % i)
            issued = perf() - t0
            ok = gen.run(60, until=lambda: gen.n_hello + gen.idle_lost >= n and gen.n_wait >= n)
            if not ok:
                raise BenchError(
                    f"after 60 s only {gen.n_hello} of {n} idle connections had HELLO and {gen.n_wait} WAIT "
                    f"({gen.idle_lost} lost)"
                )
            cpu1 = d.cpu_seconds()
            tcp1 = tcp_counters()
            gen.run(0.3)
            rss1 = d.rss_kb()
            profile = finish_profiler(spy, args.profile_top, PREFIX) if spy is not None else None
            return {
                "profile": profile,
                "n": n,
                "connects_issued_s": issued,
                "all_hello_s": gen.t_last_hello - t0,
                "hello_quantiles_s": {
                    q: pct(sorted(gen.hello_times), q / 100) - t0 for q in (50, 90, 99)
                },
                "all_wait_s": gen.t_last_wait - t0,
                "server_cpu_s": cpu1 - cpu0,
                "listen_overflows": tcp1.get("ListenOverflows", 0) - tcp0.get("ListenOverflows", 0),
                "syn_retrans": tcp1.get("TCPSynRetrans", 0) - tcp0.get("TCPSynRetrans", 0),
                "rss_kb_per_conn": (rss1 - rss0) / n,
                "lost": gen.idle_lost,
                "paired": gen.idle_paired,
                "lost_samples": [b.decode("ascii", "replace") for b in gen.lost_samples],
            }
        finally:
            gen.close_all()


def idle_effect_phase(args) -> dict:
    """The 100-game move rate in alternating windows without and with the idle connections held
    open (without, with, without, with, without), all in one daemon. This VM's speed drifts by
    tens of per cent within seconds, so the change is the median of the "with" windows against
    the median of the "without" windows rather than one window against another."""
    n, idle = args.idle_games, args.idle_held
    seconds = max(1.0, args.window * 0.6)
    with daemon(args, idle_timeout=0) as d:
        gen = LoadGen(d.port, args.policy, args.seed, args.quickack)
        try:
            warm_up_game(gen)
            start_games(gen, n)
            gen.release()
            gen.run(args.warmup)
            without, with_idle = [gen.window(seconds, d)], []
            held = 0
            for round_ in range(2):
                waits = gen.n_wait
                for i in range(idle):
                    gen.connect(IDLE, None, b"TABLE idle%d-%d\n" % (round_, i))
                if not gen.run(30, until=lambda: gen.n_wait - waits >= idle):
                    raise BenchError(f"only {gen.n_wait - waits} of {idle} idle connections were waiting after 30 s")
                gen.run(0.5)
                with_idle.append(gen.window(seconds, d))
                held = max(held, gen.count(IDLE))
                gen.close_all(IDLE)
                gen.run(0.5)
                without.append(gen.window(seconds, d))
            base = statistics.median(w["rate"] for w in without)
            during = statistics.median(w["rate"] for w in with_idle)
            return {
                "games": n,
                "idle_held": held,
                "without": without,
                "with": with_idle,
                "change": during / base - 1,
                "errors": gen.errors,
                "aborts": gen.aborts,
                "lost": gen.lost,
            }
        finally:
            gen.close_all()


# --- report ----------------------------------------------------------------------------------


def code_version() -> str:
    """Which gamed the daemon runs: the copy installed in the venv, compared with the work tree."""
    try:
        out = subprocess.run(
            [str(BIN / "python"), "-c", "import gamed, os; print(os.path.dirname(gamed.__file__))"],
            capture_output=True, text=True, cwd=tempfile.gettempdir(),
        )  # fmt: skip
        installed = Path(out.stdout.strip())
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    except OSError:
        return "?"
    differ = []
    for f in sorted((ROOT / "gamed").rglob("*.py")):
        rel = f.relative_to(ROOT / "gamed")
        other = installed / rel
        if not other.exists() or other.read_bytes() != f.read_bytes():
            differ.append(str(rel))
    where = "the work tree" if not differ else f"an older install (differs from the work tree in {', '.join(differ)})"
    return f"gamed installed in the venv = {where}; git HEAD {head.stdout.strip() or '?'}"


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    print_machine(results["machine"])
    a = results["args"]
    print(f"pinning: server on CPU {a['server_cpu']}, load generator on CPU {a['client_cpu']}; scheduling: {a['sched']}")
    kal, echo, relay = results.get("kalaha", {}), results.get("echo", {}), results.get("relay", {})
    if kal:
        print("\nKalaha games (moves/s; latency = own move -> own PLAYED; prompt = move -> next YOURMOVE)")
        print(
            f"{'games':>6} {'moves/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'prompt p50':>10} {'prompt p99':>10} "
            f"{'games/s':>8} {'srv CPU':>8} {'srv us/mv':>9} {'cli CPU':>8} {'other':>6} {'RSS KB/player':>13} "
            f"{'vs echo':>7} {'vs relay':>8}"
        )
        for n, r in kal.items():
            e, rl = echo.get(n), relay.get(n)
            ratio = r["rate"] / e["rate"] if e else float("nan")
            ratio_relay = r["rate"] / rl["rate"] if rl else float("nan")
            print(
                f"{n:>6} {r['rate']:>9,.0f} {fmt(r['p50_ms']):>7} {fmt(r['p99_ms']):>7} {fmt(r['max_ms'], 1):>7} "
                f"{fmt(r['prompt_p50_ms']):>10} {fmt(r['prompt_p99_ms']):>10} {r['games_per_s']:>8,.1f} "
                f"{r['server_cpu']:>7.0%} {fmt(r['server_us_per_op'], 0):>9} "
                f"{r['client_cpu']:>7.0%}{'!' if r['client_cpu'] >= 0.9 else ' '}{r['other_cpu']:>6.0%} "
                f"{fmt(r['rss_kb_per_player'], 1):>13} {fmt(ratio):>7} {fmt(ratio_relay):>8}"
            )
            if r["errors"] or r["aborts"] or r["lost"]:
                print(f"       !! {r['errors']} ERROR lines, {r['aborts']} aborts, {r['lost']} connections lost")
    if echo:
        print("\nEcho baseline (bare Twisted LineOnlyReceiver; req/s with one request in flight per client)")
        print(
            f"{'clients':>7} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'srv CPU':>8} {'srv us/req':>10} {'cli CPU':>8} "
            f"{'other':>6} {'RSS KB/conn':>11}"
        )
        for n, r in echo.items():
            print(
                f"{n:>7} {r['rate']:>9,.0f} {fmt(r['p50_ms']):>7} {fmt(r['p99_ms']):>7} {r['server_cpu']:>7.0%} "
                f"{fmt(r['server_us_per_op'], 0):>10} {r['client_cpu']:>7.0%}{'!' if r['client_cpu'] >= 0.9 else ' '}"
                f"{r['other_cpu']:>6.0%} {fmt(r['rss_kb_per_conn'], 1):>11}"
            )
    if relay:
        print(
            "\nRelay baseline (the same bare server with --relay: a line from either client of a pair is written to "
            "both; the pair's clients take turns, one message in flight per pair; latency = send -> own copy back)"
        )
        print(
            f"{'pairs':>7} {'msgs/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'srv CPU':>8} {'srv us/msg':>10} "
            f"{'cli CPU':>8} {'other':>6} {'Kalaha/relay':>12}"
        )
        for n, r in relay.items():
            k = kal.get(n)
            ratio = k["rate"] / r["rate"] if k else float("nan")
            print(
                f"{n:>7} {r['rate']:>9,.0f} {fmt(r['p50_ms']):>7} {fmt(r['p99_ms']):>7} {fmt(r['max_ms'], 1):>7} "
                f"{r['server_cpu']:>7.0%} {fmt(r['server_us_per_op'], 0):>10} "
                f"{r['client_cpu']:>7.0%}{'!' if r['client_cpu'] >= 0.9 else ' '}{r['other_cpu']:>6.0%} "
                f"{fmt(ratio):>12}"
            )
            if r["errors"] or r["lost"]:
                print(f"       !! {r['errors']} unexpected lines, {r['lost']} connections lost")
    acc, eff = results.get("idle_accept"), results.get("idle_effect")
    if acc:
        print(
            f"\nIdle connections: {acc['n']:,} connects issued in {acc['connects_issued_s']:.2f} s, all greeted (HELLO) "
            f"after {acc['all_hello_s']:.2f} s (half after {acc['hello_quantiles_s'][50]:.2f} s, 90% after "
            f"{acc['hello_quantiles_s'][90]:.2f} s, 99% after {acc['hello_quantiles_s'][99]:.2f} s), all waiting at "
            f"their table (WAIT) after {acc['all_wait_s']:.2f} s; "
            f"daemon CPU {acc['server_cpu_s']:.2f} s ({acc['server_cpu_s'] / acc['n'] * 1e6:.0f} us per connection); "
            f"{acc['rss_kb_per_conn']:.1f} KB RSS per idle connection; accept queue overflowed "
            f"{acc['listen_overflows']:,} times, {acc['syn_retrans']:,} SYNs resent (after 1 s each)"
            + (f"; {acc['lost']} lost" if acc["lost"] else "")
            + (f"; {acc['paired']} paired into games" if acc["paired"] else "")
        )
        for sample in acc["lost_samples"]:
            print(f"    a lost connection had received: {sample!r}")
        if acc.get("profile"):
            print_profile(f"the {acc['n']:,}-connection accept test (3 s from the first connect)", acc["profile"])
    if eff:
        rates = lambda ws: " / ".join(f"{w['rate']:,.0f}" for w in ws)  # noqa: E731
        print(
            f"{eff['games']} games: {rates(eff['without'])} moves/s in the windows without idle connections, "
            f"{rates(eff['with'])} with {eff['idle_held']:,} held open -> change of the medians {eff['change']:+.1%} "
            f"(server us/move without {' / '.join(fmt(w['server_us_per_op'], 0) for w in eff['without'])}, "
            f"with {' / '.join(fmt(w['server_us_per_op'], 0) for w in eff['with'])})"
        )

    verdicts: list[tuple[str, bool | None, str]] = []
    k100, e100, r100 = kal.get(100), echo.get(100), relay.get(100)
    if k100 and e100:
        ratio = k100["rate"] / e100["rate"]
        per_cpu = e100["server_us_per_op"] / k100["server_us_per_op"]
        vs_relay = ""
        if r100:
            vs_relay = (
                f"; for comparison, Kalaha / relay baseline: {k100['rate'] / r100['rate']:.0%} of its rate, "
                f"server CPU per relayed message / per move {r100['server_us_per_op'] / k100['server_us_per_op']:.0%}"
            )
        verdicts.append(
            (
                "100 games >= 70% of the echo baseline's rate",
                ratio >= TARGETS["ratio_100"],
                f"{ratio:.0%} (server CPU per echo request / per move: {per_cpu:.0%}{vs_relay})",
            )
        )
    if k100:
        verdicts.append(("p99 move latency <= 5 ms at 100 games", k100["p99_ms"] <= TARGETS["p99_100_ms"], f"{k100['p99_ms']:.2f} ms"))
    if kal:
        biggest = max(kal)
        rss = kal[biggest]["rss_kb_per_player"]
        verdicts.append(
            (f"<= 20 KB RSS per connected player ({2 * biggest} players)", rss <= TARGETS["rss_kb_per_player"], f"{rss:.1f} KB")
        )
    if acc:
        verdicts.append(
            (f"{acc['n']:,} idle connections accepted within 2 s", acc["all_hello_s"] <= TARGETS["idle_accept_s"], f"{acc['all_hello_s']:.2f} s")
        )
    if eff:
        verdicts.append(
            (
                f"{eff['idle_held']:,} idle connections change the {eff['games']}-game rate by <= 10%",
                abs(eff["change"]) <= TARGETS["idle_effect"],
                f"{eff['change']:+.1%}",
            )
        )
    for n, r in kal.items():
        if "profile" in r:
            print_profile(n, r["profile"])
    print_targets(verdicts)
    windows = list(kal.values()) + list(echo.values()) + list(relay.values())
    if eff:
        windows += eff["without"] + eff["with"]
    if any(r["client_cpu"] >= 0.9 for r in windows):
        print(
            "\nNote: the load generator was CPU-saturated (>= 90%) in phases marked '!': there the rate is a lower "
            "bound on what the server can do, and latencies include client queueing."
        )
    warn_if_disturbed((r["other_cpu"] for r in windows), "the server nor the load generator", " during a window")
    return verdicts


# --- main ------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --games 100 --skip-echo --skip-idle --window 3 --profile 100",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--games", default="1,100,1000", help="comma-separated concurrent game counts N [%(default)s]")
    p.add_argument("--window", type=float, default=5.0, help="measurement window per phase, seconds [%(default)s]")
    p.add_argument("--warmup", type=float, default=1.0, help="warm-up before each window, seconds [%(default)s]")
    p.add_argument("--policy", choices=("random", "first"), default="random", help="bots' pit choice [%(default)s]")
    p.add_argument("--seed", type=int, default=1, help="seed of the bots' random pit choice [%(default)s]")
    p.add_argument("--idle", type=int, default=10_000, help="idle connections for the accept test [%(default)s]")
    p.add_argument("--idle-held", type=int, default=1000, help="idle connections held during games [%(default)s]")
    p.add_argument("--idle-games", type=int, default=100, help="games run beside the held idle connections [%(default)s]")
    p.add_argument("--backlog", type=int, default=4096, help="listen backlog of the servers [%(default)s]")
    p.add_argument("--skip-echo", action="store_true", help="skip the echo baseline")
    p.add_argument("--skip-relay", action="store_true", help="skip the relay baseline (echo_server.py --relay)")
    p.add_argument("--skip-idle", action="store_true", help="skip the idle-connection phases")
    p.add_argument(
        "--quickack",
        action="store_true",
        help="diagnostic: clients set TCP_QUICKACK after every read, which hides the server's Nagle delays",
    )
    p.add_argument(
        "--profile",
        default="",
        metavar="N[,N]",
        help="sample the daemon with py-spy during the window of these game counts (or 'idle': the accept test) "
        "and print its hot spots",
    )
    p.add_argument(
        "--profile-native",
        action="store_true",
        help="with --profile: native frames too (send/recv/epoll_ctl, gc); py-spy then pauses the daemon per sample",
    )
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument(
        "--nice",
        type=int,
        default=0,
        help="niceness for this process and the servers (needs root below 0); e.g. -10 on a machine others use",
    )
    p.add_argument("--no-pin", action="store_true", help="do not pin the server and the load generator to CPUs")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the servers' logs (their directory is printed)")
    args = p.parse_args(argv)
    try:
        args.games = [int(g) for g in args.games.split(",") if g.strip()]
    except ValueError:
        p.error("--games takes comma-separated whole numbers")
    if any(g < 1 for g in args.games):
        p.error("--games must be at least 1")
    try:
        args.profile = [g.strip() if g.strip() == "idle" else int(g) for g in args.profile.split(",") if g.strip()]
    except ValueError:
        p.error("--profile takes comma-separated game counts and/or 'idle'")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    pinned = choose_cpus(args)
    results: dict = {"machine": machine(code_version()), "args": {}}
    logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    args.logdir = logdir
    t_start = perf()

    def body() -> int:
        raise_nofile(max([args.idle if not args.skip_idle else 0] + [2 * g for g in args.games]) + 200)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        args.sched = set_priority(args.nice)  # the servers inherit it
        results["args"] = {k: v for k, v in vars(args).items()}
        results["kalaha"], results["echo"], results["relay"] = {}, {}, {}
        for n in args.games:
            print(f"kalaha: {n} games ...", flush=True)
            r = results["kalaha"][n] = kalaha_phase(args, n)
            print(
                f"  {r['rate']:,.0f} moves/s, p50 {fmt(r['p50_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, "
                f"prompt p99 {fmt(r['prompt_p99_ms'])} ms, {r['rss_kb_per_player']:.1f} KB/player, "
                f"server CPU {r['server_cpu']:.0%}, client CPU {r['client_cpu']:.0%}{saturated(r['client_cpu'])}, "
                f"other {r['other_cpu']:.0%}",
                flush=True,
            )
            if r["count"] == 0:
                raise BenchError(f"no move was played in the {n}-game window")
            if not args.skip_echo:
                print(f"echo: {n} clients ...", flush=True)
                e = results["echo"][n] = echo_phase(args, n)
                print(
                    f"  {e['rate']:,.0f} req/s, p50 {fmt(e['p50_ms'])} ms, p99 {fmt(e['p99_ms'])} ms, server CPU "
                    f"{e['server_cpu']:.0%}, client CPU {e['client_cpu']:.0%}{saturated(e['client_cpu'])}, "
                    f"other {e['other_cpu']:.0%}",
                    flush=True,
                )
            if not args.skip_relay:
                print(f"relay: {n} pairs ...", flush=True)
                rl = results["relay"][n] = relay_phase(args, n)
                print(
                    f"  {rl['rate']:,.0f} msgs/s, p50 {fmt(rl['p50_ms'])} ms, p99 {fmt(rl['p99_ms'])} ms, server CPU "
                    f"{rl['server_cpu']:.0%} ({fmt(rl['server_us_per_op'], 0)} us/msg), client CPU "
                    f"{rl['client_cpu']:.0%}{saturated(rl['client_cpu'])}, other {rl['other_cpu']:.0%}",
                    flush=True,
                )
                if rl["count"] == 0:
                    raise BenchError(f"no message was relayed in the {n}-pair window")
        if not args.skip_idle:
            print(f"idle: {args.idle:,} connections ...", flush=True)
            results["idle_accept"] = idle_accept_phase(args)
            print(f"  all greeted after {results['idle_accept']['all_hello_s']:.2f} s", flush=True)
            print(f"idle: {args.idle_games} games with and without {args.idle_held:,} idle connections ...", flush=True)
            results["idle_effect"] = idle_effect_phase(args)
            print(f"  change {results['idle_effect']['change']:+.1%}", flush=True)
        return finish(results, report(results), t_start, args.json)

    return guarded("kalaha_load", body, lambda: stop_all(logdir, args.keep_logs, "server"))


if __name__ == "__main__":
    sys.exit(main())
