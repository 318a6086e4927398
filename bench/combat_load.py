"""GGZ Combat load benchmark: --games concurrent 2-seat games of random bots over loopback.

The daemon (the work tree's gamed: PYTHONPATH=. .venv/bin/twistd -n gamed --kalaha none --fight
none --fight-gui none --combat tcp:0:interface=127.0.0.1 --max-per-peer 0 --max-connections 0) is
started by the script, which reads its port from its log, and is always killed at the end. The
bots run in this process, one single-threaded epoll loop over raw sockets; the daemon goes on CPU 1
and the bench on CPU 0 (unless --no-pin).

Each bot plays like examples/combat/random_bot.py: the host (seat 0) sends the Default 10x10 map,
both send a shuffled setup, ask for a SYNC after START, and on their turn move a random movable unit
one step (an attack half the time when one is possible), trying another move when the server
refuses one. Games are seated one pair at a time (seat 0 connects and gets MSG_SEAT, then seat 1),
held after their first SYNC until all are seated, then released together. A game that ends
(GAMEOVER, or a bot with no move left to try: both bots then hang up) is replaced by a new pair.

Measured in a --window after --warmup seconds: moves/s over all games (accepted moves: MSG_MOVE or
MSG_ATTACK); the move latency, from sending REQ_MOVE to the arrival of the MSG_MOVE/MSG_ATTACK for
it at the mover (p50/p90/p99/max); daemon CPU (per move) and RSS. Target: p99 <= 5 ms at 100
games. Exit status 0 whatever the figures, 2 when the daemon cannot start or the load never gets
going.
"""

from __future__ import annotations

import argparse
import collections
import errno
import heapq
import os
import random
import select
import socket
import statistics
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402 - the shared benchmark machinery
    BIN,
    HOST,
    READY,
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
    note_code_change,
    pct,
    perf,
    print_machine,
    print_profile,
    print_targets,
    raise_nofile,
    ready_ports,
    saturated,
    set_priority,
    start_profiler,
    stop_all,
    ports_only,
    gamed_version,
    import_work_tree,
)

sys.path.insert(1, str(ROOT))
from gamed.combat import wire  # noqa: E402 - the codec's opcodes and string encoding

EPOLLIN, EPOLLOUT = select.EPOLLIN, select.EPOLLOUT
PREFIX = "combat-bench"
TARGET_P99_MS = 5.0  # REQ_MOVE -> its MSG_MOVE/MSG_ATTACK at the mover, at 100 games

MSG_SEAT, MSG_PLAYERS, REQ_OPTIONS, MSG_OPTIONS, REQ_SETUP, MSG_SETUP, MSG_START = range(7)
REQ_MOVE, MSG_MOVE, MSG_ATTACK, MSG_GAMEOVER, REQ_SYNC, MSG_SYNC = range(7, 13)
assert wire.Op.MSG_SYNC == MSG_SYNC and wire.Op.REQ_MOVE == REQ_MOVE
EMPTY, UNKNOWN, T_OPEN = wire.U_EMPTY, wire.U_UNKNOWN, wire.T_OPEN
PLAYER_OPEN = 1  # seat type "open" in MSG_PLAYERS: no name follows

# The Default map as random_bot.py sends it (raw options bytes before the +1 encoding).
DEFAULT_MAP = bytes.fromhex(
    "0a0a" + "10" * 40 + "0000020200000202000000000202000002020000" + "20" * 40
    + "010601080504040403020101" + "01" + b"Default".hex() + "0000"
)  # fmt: skip
I4 = struct.Struct(">i")
unpack_from = I4.unpack_from
pack = I4.pack
REQ_SYNC_BYTES = pack(REQ_SYNC)


def binary_string(raw: bytes) -> bytes:
    return wire.encode_string(wire.plus_one(raw))


# --- the daemon ------------------------------------------------------------------------------


class CombatServer(Server):
    """common's Server, plus the port the daemon chose (read from its log)."""

    def start(self, timeout: float = 20.0) -> CombatServer:
        super().start(timeout)
        port = ready_ports(self.log_path).get("combat")
        if port is not None:
            self.port = port
            return self
        raise BenchError(f"could not read the Combat port from the daemon's log:\n{self.tail()}")


def daemon(args) -> CombatServer:
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        *ports_only(combat=f"tcp:0:interface={HOST}"),
        "--max-per-peer", "0", "--max-connections", "0",
    ]  # fmt: skip
    return CombatServer("gamed", argv, READY, args.server_cpu, args.logdir)


# --- the bots --------------------------------------------------------------------------------


class Game:
    __slots__ = ("bots", "closed", "moves", "ended")

    def __init__(self):
        self.bots: list[Bot | None] = [None, None]
        self.closed = 0
        self.moves = 0
        self.ended = False


class Bot:
    __slots__ = (
        "sock", "fd", "game", "rng", "up", "buf", "seat", "seats", "width", "types", "army", "units",
        "turn", "playing", "tried", "t_sent", "held", "nbrs",
    )  # fmt: skip

    def __init__(self, game: Game, seed: int):
        self.game = game
        self.rng = random.Random(seed)
        self.sock = None
        self.fd = -1
        self.up = False
        self.buf = b""
        self.seat = -1
        self.seats = 2
        self.width = 0
        self.types = b""
        self.army: list[int] = []
        self.units: list[int] = []
        self.turn = 0
        self.playing = False
        self.tried: set = set()
        self.t_sent = 0.0
        self.held = False
        self.nbrs: list[list[int]] = []

    def read_options(self, raw: bytes) -> None:
        w, h = raw[0], raw[1]
        self.width = w
        self.types = raw[2 : 2 + w * h]
        self.army = list(raw[2 + w * h : 2 + w * h + 12])
        self.units = [EMPTY] * (w * h)
        types = self.types
        self.nbrs = []
        for i in range(w * h):
            x, y = i % w, i // w
            cells = []
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = x + dx, y + dy
                if 0 <= nx < w and 0 <= ny < h and types[ny * w + nx] & 0x0F == T_OPEN:
                    cells.append(ny * w + nx)
            self.nbrs.append(cells)

    def walled_in(self, zone: list[int], pieces: list[int]) -> bool:
        fixed = {cell for cell, code in zip(zone, pieces) if code in (0, 1)}
        inside = set(zone)
        for start, code in zip(zone, pieces):
            if not 2 <= code <= 11:
                continue
            seen, todo = {start}, [start]
            while todo and all(cell in inside for cell in todo):
                cell = todo.pop()
                for j in self.nbrs[cell]:
                    if j not in seen and j not in fixed:
                        seen.add(j)
                        todo.append(j)
            if not seen - inside:
                return True
        return False

    def setup(self) -> bytes:
        zone = [i for i, t in enumerate(self.types) if (t >> 4) - 1 == self.seat]
        army = [code for code, count in enumerate(self.army) for _ in range(count)]
        pieces = army + [EMPTY] * (len(zone) - len(army))
        for _ in range(1000):
            self.rng.shuffle(pieces)
            if not self.walled_in(zone, pieces):
                break
        mine = (self.seat + 1) << 4
        return bytes(EMPTY if p == EMPTY else mine | p for p in pieces)

    def choose(self):
        """A one-step move of an own movable unit not tried this turn (an attack half the time
        when one is possible), or None."""
        own = self.seat + 1
        units, nbrs, tried = self.units, self.nbrs, self.tried
        moves, attacks = [], []
        for i, unit in enumerate(units):
            if unit >> 4 != own or not 2 <= unit & 0x0F <= 11:
                continue
            for j in nbrs[i]:
                u = units[j]
                if u >> 4 != own and (i, j) not in tried:
                    moves.append((i, j))
                    if u != EMPTY:
                        attacks.append((i, j))
        if not moves:
            return None
        rng = self.rng
        return rng.choice(attacks if attacks and rng.random() < 0.5 else moves)


class LoadGen:
    """The single-threaded epoll client driving every bot."""

    def __init__(self, port: int, args):
        self.addr = (HOST, port)
        self.ep = select.epoll()
        self.conns: dict[int, Bot] = {}
        self.queue: collections.deque[Game] = collections.deque()
        self.seating: Bot | None = None
        self.paused = False
        self.replace = False
        self.measuring = False
        self.n_seated = self.n_held = 0
        self.seed = args.seed * 1_000_003
        self.think = args.think  # seconds a bot waits before each move (0 = at once: saturation)
        self.due: list[tuple[float, int, Bot]] = []  # (when, tie-breaker, bot): moves after thinking
        self._ticket = 0
        self.games_ended = self.stuck = self.lost = self.errors = 0
        self.game_lengths: list[int] = []
        self.error_samples: list[str] = []
        self.reset()

    def reset(self) -> None:
        self.lat: list[float] = []
        self.moves = 0
        self.refused = 0
        self.games_ended_window = 0

    # seating

    def seat(self, game: Game) -> None:
        self.queue.append(game)
        if self.seating is None:
            self.seating = self._connect(self.queue[0], 0)

    def _connect(self, game: Game, k: int) -> Bot:
        self.seed += 1
        bot = Bot(game, self.seed)
        game.bots[k] = bot
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = s.connect_ex(self.addr)
        if err not in (0, errno.EINPROGRESS):
            s.close()
            raise BenchError(f"connect to {self.addr}: {os.strerror(err)}")
        bot.sock, bot.fd = s, s.fileno()
        self.conns[bot.fd] = bot
        self.ep.register(bot.fd, EPOLLIN | EPOLLOUT)
        return bot

    def _seated(self, bot: Bot) -> None:
        if bot is not self.seating:
            return
        game = bot.game
        if bot is game.bots[0]:
            self.seating = self._connect(game, 1)
        else:
            self.queue.popleft()
            self.seating = None
            self.n_seated += 1
            if self.queue:
                self.seating = self._connect(self.queue[0], 0)

    def end_game(self, game: Game, stuck: bool = False) -> None:
        if not game.ended:
            game.ended = True
            self.games_ended += 1
            self.stuck += stuck
            self.game_lengths.append(game.moves)
            if self.measuring:
                self.games_ended_window += 1
        for bot in game.bots:
            if bot is not None:
                self.drop(bot)

    def drop(self, bot: Bot) -> None:
        if self.conns.pop(bot.fd, None) is None:
            return
        self.ep.unregister(bot.fd)
        bot.sock.close()
        game = bot.game
        game.closed += 1
        if not game.ended:
            self.lost += 1
            self.end_game(game)
        if game.closed == 2 and self.replace:
            self.seat(Game())

    def close_all(self) -> None:
        self.replace = False
        self.queue.clear()
        self.seating = None
        for bot in list(self.conns.values()):
            self.drop(bot)

    def release(self) -> None:
        self.paused = False
        for bot in list(self.conns.values()):
            if bot.held:
                bot.held = False
                self.play(bot)

    def error(self, bot: Bot, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"seat {bot.seat}: {what}")

    # the loop

    def run(self, seconds: float, until=None) -> bool:
        poll, conns, receive = self.ep.poll, self.conns, self.receive
        end = perf() + seconds
        while True:
            if until is not None and until():
                return True
            now = perf()
            if now >= end:
                return False
            due = self.due
            while due and due[0][0] <= now:
                self.play(heapq.heappop(due)[2])
            wait = min(0.05, end - now, due[0][0] - now if due else 0.05)
            for fd, ev in poll(max(wait, 0.0)):
                bot = conns.get(fd)
                if bot is None:
                    continue
                if not bot.up:
                    err = bot.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise BenchError(f"connect to {self.addr} failed: {os.strerror(err)}")
                    bot.up = True
                    self.ep.modify(fd, EPOLLIN)
                    if not ev & EPOLLIN:
                        continue
                receive(bot)

    def send(self, bot: Bot, data: bytes) -> float:
        t = perf()
        try:
            n = bot.sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError:
            return t
        if n != len(data):
            raise BenchError("a bot's socket buffer was full (the daemon stopped reading)")
        return t

    def receive(self, bot: Bot) -> None:
        try:
            data = bot.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        now = perf()
        if not data:
            self.drop(bot)
            return
        if bot.buf:
            data = bot.buf + data
        p, n = 0, len(data)
        while n - p >= 4 and self.fd_alive(bot):
            op = unpack_from(data, p)[0]
            q = p + 4
            if op == MSG_MOVE or op == MSG_ATTACK:
                size = 8 if op == MSG_MOVE else 16
                if n - q < size:
                    break
                if op == MSG_MOVE:
                    self.on_move(bot, unpack_from(data, q)[0], unpack_from(data, q + 4)[0], now)
                else:
                    a = [unpack_from(data, q + k)[0] for k in (0, 4, 8, 12)]
                    self.on_attack(bot, a, now)
                p = q + size
            elif op == MSG_SYNC or op == MSG_OPTIONS:
                if n - q < 4:
                    break
                size = unpack_from(data, q)[0]
                if n - q - 4 < size:
                    break
                raw = wire.minus_one(data[q + 4 : q + 4 + size - 1])
                p = q + 4 + size
                if op == MSG_OPTIONS:
                    bot.read_options(raw)
                else:
                    self.on_sync(bot, raw)
            elif op == MSG_SEAT:
                if n - q < 12:
                    break
                bot.seat, bot.seats = unpack_from(data, q)[0], unpack_from(data, q + 4)[0]
                p = q + 12
                self._seated(bot)
            elif op == MSG_PLAYERS:
                r = q
                for _ in range(bot.seats):
                    if n - r < 4:
                        r = -1
                        break
                    kind = unpack_from(data, r)[0]
                    r += 4
                    if kind != PLAYER_OPEN:
                        if n - r < 4 or n - r - 4 < unpack_from(data, r)[0]:
                            r = -1
                            break
                        r += 4 + unpack_from(data, r)[0]
                if r < 0:
                    break
                p = r
            elif op == REQ_OPTIONS:
                p = q
                self.send(bot, pack(MSG_OPTIONS) + binary_string(DEFAULT_MAP))
            elif op == REQ_SETUP:
                p = q
                self.send(bot, pack(MSG_SETUP) + binary_string(bot.setup()))
            elif op == MSG_START:
                p = q
                self.on_start(bot)
            elif op == MSG_GAMEOVER:
                if n - q < 4:
                    break
                p = q + 4
                self.end_game(bot.game)
            else:
                self.error(bot, f"unknown opcode {op}")
                self.end_game(bot.game)
                return
        if self.fd_alive(bot):
            bot.buf = data[p:]

    def fd_alive(self, bot: Bot) -> bool:
        return self.conns.get(bot.fd) is bot

    # the game

    def on_start(self, bot: Bot) -> None:
        seat = bot.seat
        for i, t in enumerate(bot.types):
            owner = (t >> 4) - 1
            if owner not in (-1, seat) and owner < bot.seats and bot.units[i] == EMPTY:
                bot.units[i] = ((owner + 1) << 4) | UNKNOWN
        bot.turn = 0
        bot.playing = True
        self.send(bot, REQ_SYNC_BYTES)

    def on_sync(self, bot: Bot, raw: bytes) -> None:
        if bot.game.ended or len(raw) != 2 + len(bot.units):
            return
        first = not bot.held and bot.t_sent == 0.0 and bot.game.moves == 0
        bot.turn, bot.units = raw[0], list(raw[2:])
        bot.tried.clear()
        if first and self.paused:
            bot.held = True
            self.n_held += 1
            return
        self.play(bot)

    def play(self, bot: Bot) -> None:
        if not bot.playing or bot.turn != bot.seat or bot.game.ended:
            return
        move = bot.choose()
        if move is None:  # nothing left to try: this game is stuck, end it
            self.end_game(bot.game, stuck=True)
            return
        bot.tried.add(move)
        bot.t_sent = self.send(bot, pack(REQ_MOVE) + pack(move[0]) + pack(move[1]))

    def _moved(self, bot: Bot, now: float) -> None:
        if bot.turn == bot.seat:  # the mover: its move is answered
            bot.game.moves += 1
            if self.measuring:
                self.moves += 1
                self.lat.append(now - bot.t_sent)
        bot.turn = 0 if bot.turn >= bot.seats - 1 else bot.turn + 1
        bot.tried.clear()
        if self.think and bot.turn == bot.seat:
            self._ticket += 1
            heapq.heappush(self.due, (perf() + self.think, self._ticket, bot))
        else:
            self.play(bot)

    def on_move(self, bot: Bot, source: int, target: int, now: float) -> None:
        if source < 0:  # error form: code, seat of the sender
            if target == bot.seat:
                if self.measuring:
                    self.refused += 1
                self.play(bot)
            return
        units = bot.units
        units[target], units[source] = units[source], EMPTY
        self._moved(bot, now)

    def on_attack(self, bot: Bot, a: list[int], now: float) -> None:
        source, who_from, target, who_to = a
        units = bot.units
        if who_from < 0 and who_to >= 0:
            units[target], units[source] = units[source], EMPTY
        elif who_from >= 0 and who_to < 0:
            units[source] = EMPTY
        else:
            units[source] = units[target] = EMPTY
        self._moved(bot, now)

    # measurement

    def window(self, seconds: float, server: Server) -> dict:
        self.reset()
        self.measuring = True
        w = CpuWindow(server)
        self.run(seconds)
        w.stop()
        self.measuring = False
        server.check()
        lat = sorted(self.lat)
        moves, wall = self.moves, w.wall
        return {
            "wall_s": wall,
            "moves": moves,
            "rate": moves / wall,
            "refused": self.refused,
            "p50_ms": pct(lat, 0.50) * 1e3,
            "p90_ms": pct(lat, 0.90) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "max_ms": (lat[-1] if lat else float("nan")) * 1e3,
            "games_ended": self.games_ended_window,
            "server_cpu": w.server_cpu / wall,
            "server_us_per_move": w.server_cpu / moves * 1e6 if moves else float("nan"),
            "client_cpu": w.client_cpu / wall,
            "client_us_per_move": w.client_cpu / moves * 1e6 if moves else float("nan"),
            "other_cpu": max(0.0, w.other / wall),
        }


def load_phase(args) -> dict:
    n = args.games
    with daemon(args) as d:
        gen = LoadGen(d.port, args)
        try:
            gen.run(0.2)
            rss0 = d.rss_kb()
            gen.paused = True
            t0 = perf()
            for _ in range(n):
                gen.seat(Game())
            if not gen.run(60, until=lambda: gen.n_seated >= n and gen.n_held >= 2 * n):
                raise BenchError(f"only {gen.n_seated} of {n} games seated, {gen.n_held} of {2 * n} bots synced in 60 s")
            setup = perf() - t0
            gen.run(0.3)
            rss1 = d.rss_kb()
            gen.replace = True
            gen.release()
            gen.run(args.warmup)
            spy = start_profiler(args, d, "load", args.window, 0.3) if args.profile else None
            r = gen.window(args.window, d)
            if spy is not None:
                r["profile"] = finish_profiler(spy, args.profile_top, PREFIX, 60)
            r.update(
                games=n,
                setup_s=setup,
                rss_before_kb=rss0,
                rss_seated_kb=rss1,
                rss_end_kb=d.rss_kb(),
                rss_kb_per_game=(rss1 - rss0) / n,
                games_ended_total=gen.games_ended,
                stuck=gen.stuck,
                lost=gen.lost,
                errors=gen.errors,
                error_samples=gen.error_samples,
                game_length_median=statistics.median(gen.game_lengths) if gen.game_lengths else None,
            )
            return r
        finally:
            gen.close_all()


# --- report and main ---------------------------------------------------------------------------


def report(results: dict) -> list:
    a, r = results["args"], results["load"]
    print_machine(results["machine"], "gamed/")
    print(
        f"pinning: daemon on CPU {a['server_cpu']}, bench on CPU {a['client_cpu']}; scheduling: {a['sched']}"
    )
    print(
        f"\n{r['games']} concurrent 2-seat games (random bots, Default map), {a['window']:g} s window after "
        f"{a['warmup']:g} s of play; latency = REQ_MOVE sent -> its MSG_MOVE/MSG_ATTACK at the mover; "
        + (f"bots think {a['think'] * 1000:g} ms per move" if a.get("think") else "bots answer at once (saturation)")
    )
    print(f"  {r['rate']:,.0f} moves/s over all games ({r['rate'] / r['games']:.1f} per game), {r['refused']} moves refused")
    print(
        f"  latency p50 {fmt(r['p50_ms'], 3)} ms, p90 {fmt(r['p90_ms'], 3)} ms, p99 {fmt(r['p99_ms'], 3)} ms, "
        f"max {fmt(r['max_ms'], 1)} ms ({r['moves']:,} moves)"
    )
    print(
        f"  daemon CPU {r['server_cpu']:.0%} of a core, {fmt(r['server_us_per_move'], 0)} us per move; "
        f"bench CPU {r['client_cpu']:.0%}{saturated(r['client_cpu'])} ({fmt(r['client_us_per_move'], 0)} us per move); "
        f"other {r['other_cpu']:.0%}"
    )
    print(
        f"  daemon RSS {r['rss_before_kb'] / 1024:.1f} MB idle, {r['rss_seated_kb'] / 1024:.1f} MB with {r['games']} "
        f"games seated ({r['rss_kb_per_game']:.1f} KB per game), {r['rss_end_kb'] / 1024:.1f} MB at the end"
    )
    print(
        f"  {r['games_ended']} games ended in the window ({r['games_ended_total']} in all, median length "
        f"{r['game_length_median'] or '-'} moves, {r['stuck']} stuck) and were replaced; {r['lost']} connections lost, "
        f"{r['errors']} protocol surprises"
    )
    for s in r["error_samples"]:
        print(f"    {s}")
    if "profile" in r:
        print_profile(f"{r['games']} games", r["profile"])
    verdicts = [
        (
            f"p99 REQ_MOVE -> MSG_MOVE/MSG_ATTACK <= {TARGET_P99_MS:g} ms at {r['games']} games",
            r["p99_ms"] <= TARGET_P99_MS,
            f"{r['p99_ms']:.2f} ms",
        )
    ]
    print_targets(verdicts)
    if r["client_cpu"] >= 0.9:
        print("\nNote: the bench was CPU-saturated: moves/s is a lower bound and latencies include its queueing.")
    return verdicts


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=100, help="concurrent games [%(default)s]")
    p.add_argument("--window", type=float, default=10.0, help="measured seconds [%(default)s]")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of play before the window [%(default)s]")
    p.add_argument("--seed", type=int, default=1, help="seed of the bots' random choices [%(default)s]")
    p.add_argument("--think", type=float, default=0.0,
                   help="seconds a bot thinks before each move; 0 = answer at once, saturating the daemon [%(default)s]")
    p.add_argument("--profile", action="store_true", help="sample the daemon with py-spy during the window")
    p.add_argument("--profile-native", action="store_true", help="with --profile: C frames too")
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument("--nice", type=int, default=0, help="niceness for the bench and the daemon")
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemon and the bench to CPUs")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemon's log")
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("--games must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    pinned = choose_cpus(args)
    import_work_tree()
    results: dict = {"machine": {}, "args": {}}
    args.logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    t_start = perf()

    def body() -> int:
        results["machine"] = machine(gamed_version())
        raise_nofile(2 * args.games + 200)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        args.sched = set_priority(args.nice)
        results["args"] = dict(vars(args))
        print(f"{args.games} games ...", flush=True)
        r = results["load"] = load_phase(args)
        if r["moves"] == 0:
            raise BenchError("no move was played in the window")
        note_code_change(results["machine"], gamed_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("combat_load", body, lambda: stop_all(args.logdir, args.keep_logs, "daemon"))


if __name__ == "__main__":
    sys.exit(main())
