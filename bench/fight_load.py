"""Virtual Fight load benchmark: scripted bots play the real gamed daemon over loopback.

The daemon (the work tree's gamed: PYTHONPATH=. .venv/bin/twistd -n gamed --kalaha none --fight
tcp:0 --fight-gui tcp:0 ...) is started by the script, which reads both ports from its log, and is
always killed at the end (also on errors and Ctrl-C). The bots run in this process, a
single-threaded epoll loop over raw sockets (the cheapest client Python offers); the daemon goes on
CPU 1 and the bench on CPU 0 (unless --no-pin). On a 2-CPU machine the client still competes with
the daemon for the machine (memory, caches, the kernel's loopback work), so its CPU is printed with
every figure.

Bots are scripted AIs. On each READY a bot sends a few queries (two SAW and one POS by default),
and once they are answered one action per living warrior, all in one write: mostly a MOVE onto a
square it believes free (walls of the default map, its own warriors, bodies and enemies it saw),
now and then (3%) a SHOOT in a random direction, a turn on the spot when boxed in. With --aim it
also shoots at enemies a SAW showed in line (games then end sooner). A MOVE the server refuses
(111/112: an enemy it did not see) is followed by a bare NONE for that warrior, so a turn ends
because both teams finished, not at the deadline. By default bots answer at once (the daemon is
saturated in scenario 1); --think MS makes each bot wait 0.5-1.5 x MS after READY.

1. Load: --games concurrent 2-team games (default 200), seated one pair at a time (team 0 connects,
   gets OK, then team 1), then released together. Games that end (a team wiped out, or --turns
   reached) are replaced by a new pair at once. Measured in a time window: turns/s over all games;
   the latency from the last action of a turn (the line that finished the last team, sent by the
   bench) to the arrival of that turn's 200 block at the bot that sent it (p50/p99/max); daemon
   CPU (user+sys / wall, and per turn); daemon RSS.
2. Observers: one game with no observer, then the same game (same bot seeds) with --observers GUI
   observers connected to the GUI port and reading everything, alternated for --rounds rounds (the
   order flips every round). A variant plays games back to back until they have lasted --turns
   turns (a game may end early when a team is wiped out); its turn rate is turns / the games' time
   from first READY to GAMEOVER. Cost = 1 - median(with) / median(without). The observers run in a
   child process (niceness +10, on the bench's core) that reads all its sockets every millisecond.

The daemon runs with --max-per-peer 0 --max-connections 0 (every connection comes from
127.0.0.1) and --line-rate 0: with the default rate limit (1000 lines/s per connection) a single
game of bots that answer at once (about 8 lines per team and turn) is held to about 200 turns/s,
and scenario 2 would measure the limiter, not the daemon (--line-rate 1000 shows it).

A default run takes about 80-90 s. Exit status 0 whatever the figures, 2 when the daemon
cannot start or a phase cannot get going.
"""

from __future__ import annotations

import argparse
import collections
import errno
import heapq
import json
import os
import random
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402 - the shared benchmark machinery
    BIN,
    HELPERS,
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
    self_cpu,
    set_priority,
    start_profiler,
    stop_all,
    ports_only,
    warn_if_disturbed,
    gamed_version,
    import_work_tree,
)

sys.path.insert(1, str(ROOT))
from gamed.fight.rules import DEFAULT_MAP_TEXT  # noqa: E402 - the bots plan on the daemon's own map

EPOLLIN, EPOLLOUT = select.EPOLLIN, select.EPOLLOUT
PREFIX = "fight-bench"  # of the log directory and of the py-spy stacks kept

TARGETS = {
    "p99_ms": 10.0,  # last action of a turn -> its 200 block, at 200 games
    "observer_cost": 0.10,  # share of one game's turn rate that 100 observers may cost
}

# The default map of the spec (section 4): the bots plan their moves on it.
MAP = DEFAULT_MAP_TEXT.splitlines()
ROWS, COLS = len(MAP), len(MAP[0])
WALLS = frozenset((r, c) for r, row in enumerate(MAP) for c, ch in enumerate(row) if ch == "#")
STARTS = [[(r, c) for r, row in enumerate(MAP) for c, ch in enumerate(row) if ch == str(t)] for t in (0, 1)]
UP, DOWN, LEFT, RIGHT = range(4)
DNAME = (b"UP", b"DOWN", b"LEFT", b"RIGHT")
DVEC = ((-1, 0), (1, 0), (0, -1), (0, 1))
FACING = (RIGHT, LEFT)  # initial facing of team 0 and team 1 on the default map

# What a bot expects as the reply to each line it sent.
Q_POS, Q_SAW, A_MOVE, A_SHOOT, A_FACE, A_PASS = range(6)
REPLY_CODES = {b"255", b"100", b"111", b"112", b"120"}


# --- the daemon ------------------------------------------------------------------------------


def daemon(args, name: str = "gamed", extra: tuple[str, ...] = ()) -> Server:
    """The work tree's gamed on two ephemeral loopback ports (AI and GUI), read from its log;
    ``extra``: more twistd gamed options (bench/clock_cost.py passes the clock's)."""
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        *ports_only(fight=f"tcp:0:interface={HOST}", fight_gui=f"tcp:0:interface={HOST}"),
        "--fight-pair-delay", "0",
        "--fight-max-turns", str(args.turns),
        "--fight-turn-time", f"{args.turn_time:g}",
        "--max-per-peer", "0", "--max-connections", "0",
        "--line-rate", f"{args.line_rate:g}",
    ]  # fmt: skip
    if args.gui_interval is not None:
        argv += ["--fight-gui-interval", f"{args.gui_interval:g}"]
    argv += extra
    return FightServer(name, argv, READY, args.server_cpu, args.logdir)


class FightServer(Server):
    """common's Server, plus the two ports the daemon chose."""

    def start(self, timeout: float = 20.0) -> FightServer:
        super().start(timeout)
        ports = ready_ports(self.log_path)
        if {"fight", "fight-gui"} <= ports.keys():
            self.port, self.gui_port = ports["fight"], ports["fight-gui"]
            return self
        raise BenchError(f"could not read the AI and GUI ports from the daemon's log:\n{self.tail()}")


# --- the bots --------------------------------------------------------------------------------


class Game:
    """One game as the bench sees it: its two bots (team 0 connects first) and their seeds."""

    __slots__ = ("slot", "seed", "bots", "t_first", "t_end", "turns", "closed", "cpu0")

    def __init__(self, slot: int, seed: int):
        self.slot = slot
        self.seed = seed
        self.bots: list[Bot | None] = [None, None]
        self.t_first = 0.0  # team 0's first READY
        self.t_end = 0.0  # the first GAMEOVER
        self.turns = 0
        self.closed = 0  # bots whose connection has ended
        self.cpu0 = 0.0


class Bot:
    """One AI connection playing one team with a simple scripted policy."""

    __slots__ = (
        "sock", "fd", "game", "team", "rng", "up", "buf", "alive", "pos", "face", "bodies", "seen",
        "turn", "expect", "phase", "fallback", "fin_turn", "fin_t", "in_report", "held", "ended",
        "restart", "clock_ack",
    )  # fmt: skip

    def __init__(self, game: Game, team: int):
        self.game = game
        self.team = team
        self.rng = random.Random(game.seed * 2 + team)
        self.sock = None
        self.fd = -1
        self.up = False
        self.buf = b""
        self.alive = [True] * 5
        self.pos = list(STARTS[team])
        self.face = [FACING[team]] * 5
        self.bodies: set = set()
        self.seen: dict = {}  # enemies seen this turn: square -> True
        self.turn = 0
        self.expect: collections.deque = collections.deque()
        self.phase = 0  # 0 waiting for READY, 1 queries sent, 2 actions sent, 3 finished
        self.fallback: list[int] = []
        self.fin_turn = [0, 0]  # by turn parity: the turn and send time of the team's last action line
        self.fin_t = [0.0, 0.0]
        self.in_report = False
        self.held = False
        self.ended = False
        self.restart = False
        self.clock_ack = False  # CLOCKS&ON sent, its 255 not read yet


class LoadGen:
    """A single-threaded epoll client driving the bots."""

    def __init__(self, port: int, args):
        self.addr = (HOST, port)
        self.args = args
        self.ep = select.epoll()
        self.conns: dict[int, Bot] = {}
        self.queue: collections.deque[Game] = collections.deque()  # games waiting to be seated
        self.seating: Bot | None = None  # the bot whose OK we wait for before connecting the next
        self.paused = False
        self.replace = False  # seat a new game in the slot of every game that ends
        self.measuring = False
        self.on_game_end = None
        self.n_seated = self.n_held = 0
        self.next_seed = 1
        self.p_shoot = args.shoot
        self.aim = args.aim
        self.think = args.think / 1e3
        self.timers: list = []  # heap of (due, seq, bot): bots thinking before they play
        self._seq = 0
        self.n_queries = args.queries
        self.clocks = False  # bots send CLOCKS&ON and skip the TIMECONTROL and CLOCK lines (bench/clock_cost.py)
        self.reset()
        self.errors = self.late = self.lost = self.desync = 0
        self.error_samples: list[str] = []
        self.games_ended_total = 0
        self.game_lengths: list[int] = []
        self.hits = collections.Counter()
        self.kills = 0

    def reset(self) -> None:
        self.lat: list[float] = []
        self.turns = 0
        self.lines = 0
        self.polls = 0
        self.games_ended = 0
        self.clock_lines = 0

    # connections and seating

    def seat(self, game: Game) -> None:
        """Queue ``game`` for seating: team 0 connects, and team 1 only once team 0 has its OK, so
        the daemon's arrival-order lobby pairs exactly these two."""
        self.queue.append(game)
        self._seat_next()

    def _seat_next(self) -> None:
        if self.seating is None and self.queue:
            game = self.queue[0]
            self.seating = self._connect(game, 0)

    def _connect(self, game: Game, team: int) -> Bot:
        bot = Bot(game, team)
        game.bots[team] = bot
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

    def _ok(self, bot: Bot) -> None:
        if bot is not self.seating:
            return
        if bot.team == 0:
            self.seating = self._connect(bot.game, 1)
        else:
            self.queue.popleft()
            self.seating = None
            self.n_seated += 1
            self._seat_next()

    def drop(self, bot: Bot) -> None:
        if self.conns.pop(bot.fd, None) is not None:
            self.ep.unregister(bot.fd)
            bot.sock.close()
            game = bot.game
            game.closed += 1
            if game.closed == 2:
                if self.on_game_end is not None:
                    self.on_game_end(game)
                if self.replace:
                    self.seat(Game(game.slot, self._seed()))

    def _seed(self) -> int:
        self.next_seed += 1
        return self.next_seed

    def close_all(self) -> None:
        self.replace = False
        self.queue.clear()
        self.seating = None
        for bot in list(self.conns.values()):
            self.drop(bot)

    def release(self) -> None:
        """Unpause: every bot holding its first READY plays it now."""
        self.paused = False
        for bot in list(self.conns.values()):
            if bot.held:
                bot.held = False
                self._start_turn(bot)

    # the event loop

    def run(self, seconds: float, until=None) -> bool:
        """Serve events for ``seconds`` or until ``until()`` is true (then return True)."""
        poll = self.ep.poll
        conns = self.conns
        end = perf() + seconds
        receive = self._receive
        timers = self.timers
        while True:
            now = perf()
            while timers and timers[0][0] <= now:
                bot = heapq.heappop(timers)[2]
                if conns.get(bot.fd) is bot and not bot.ended:
                    self._play(bot)
            if until is not None and until():
                return True
            if now >= end:
                return False
            wait = min(0.05, end - now)
            if timers:
                wait = max(0.0, min(wait, timers[0][0] - now))
            events = poll(wait)
            now = perf()
            self.polls += 1
            for fd, ev in events:
                bot = conns.get(fd)
                if bot is None:
                    continue
                if not bot.up:
                    self._connected(bot, ev)
                    continue
                receive(bot, now)

    def _connected(self, bot: Bot, ev: int) -> None:
        err = bot.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.drop(bot)
            raise BenchError(f"connect to {self.addr} failed: {os.strerror(err)}")
        if ev & EPOLLOUT:
            bot.up = True
            self.ep.modify(bot.fd, EPOLLIN)
            if self.clocks:
                bot.clock_ack = True
                self._send(bot, b"CLOCKS&ON\n")

    def _send(self, bot: Bot, data: bytes) -> float:
        t = perf()
        try:
            n = bot.sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError:
            return t  # the close is noticed on the next read
        if n != len(data):
            raise BenchError("a bot's socket buffer was full (the daemon stopped reading)")
        return t

    def _error(self, bot: Bot, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"game {bot.game.slot} team {bot.team} turn {bot.turn}: {what}")

    def _receive(self, bot: Bot, now: float) -> None:
        try:
            data = bot.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            if not bot.ended:
                self.lost += 1
            self.drop(bot)
            return
        if bot.buf:
            data = bot.buf + data
        lines = data.split(b"\r\n")
        bot.buf = lines.pop()
        for line in lines:
            self._line(bot, line, now)

    def _line(self, bot: Bot, line: bytes, now: float) -> None:
        if self.clocks:  # the clock lines come anywhere (CLOCK between a turn report and READY)
            if line.startswith(b"CLOCK&"):
                if self.measuring:
                    self.clock_lines += 1
                return
            if line.startswith(b"TIMECONTROL&"):
                return
            if bot.clock_ack and line == b"255":  # the answer to CLOCKS&ON (precedes any other reply)
                bot.clock_ack = False
                return
        if bot.in_report:
            if line == b"READY":
                bot.in_report = False
                self._ready(bot, now)
            elif line.endswith(b"&KILLED"):
                w = int(line[:1])
                bot.alive[w] = False
                bot.bodies.add(bot.pos[w])
                self.kills += 1
            elif b"&HIT&" in line:
                self.hits[line.rpartition(b"&")[2]] += 1
            elif line.startswith(b"GAMEOVER&"):
                bot.in_report = False
                self._game_over(bot, now)
            else:
                self._error(bot, f"unexpected line in a turn report: {line!r}")
            return
        if bot.expect and line not in (b"200", b"READY") and not line.startswith(b"GAMEOVER&"):
            self._reply(bot, line)
        elif line == b"200":
            bot.in_report = True
            self._report(bot, now)
        elif line == b"READY":
            self._ready(bot, now)
        elif line == b"OK":
            self._ok(bot)
        elif line.startswith(b"GAMEOVER&"):
            self._game_over(bot, now)
        else:
            self._error(bot, f"unexpected line: {line!r}")

    def _ready(self, bot: Bot, now: float) -> None:
        bot.turn += 1
        if bot.turn == 1 and bot.team == 0:
            bot.game.t_first = now
        if bot.expect:  # the last turn ended at its deadline before we finished: finish reading first
            bot.restart = True
            return
        if self.paused:
            bot.held = True
            self.n_held += 1
            return
        self._start_turn(bot)

    def _start_turn(self, bot: Bot) -> None:
        if not self.think:
            self._play(bot)
            return
        self._seq += 1
        heapq.heappush(self.timers, (perf() + self.think * bot.rng.uniform(0.5, 1.5), self._seq, bot))

    def _report(self, bot: Bot, now: float) -> None:
        """The 200 block of turn ``bot.turn`` arrived at ``bot``."""
        k = bot.turn
        game = bot.game
        if bot.phase != 3:  # the turn ended at its deadline, not because both teams finished
            self.late += 1
        bot.phase = 0
        if bot.team == 0 and self.measuring:
            self.turns += 1
        i = k & 1
        if bot.fin_turn[i] != k:
            return
        t = bot.fin_t[i]
        other = game.bots[1 - bot.team]
        if other is not None and other.fin_turn[i] == k and other.fin_t[i] > t:
            return  # the other team finished last: its bot measures this turn
        if self.measuring:
            self.lat.append(now - t)

    def _game_over(self, bot: Bot, now: float) -> None:
        bot.ended = True
        game = bot.game
        if not game.t_end:
            game.t_end = now
            game.turns = bot.turn
            self.games_ended_total += 1
            self.game_lengths.append(bot.turn)
            if self.measuring:
                self.games_ended += 1

    # the scripted AI

    def _play(self, bot: Bot) -> None:
        """Start a turn: the queries (SAW, SAW, POS, ... for living warriors in rotation)."""
        living = [w for w in range(5) if bot.alive[w]]
        if not living:
            return
        bot.seen = {}
        out = []
        expect = bot.expect
        n = len(living)
        for i in range(self.n_queries):
            w = living[(bot.turn + i) % n]
            if i % 3 == 2:
                out.append(b"%d&POS\n" % w)
                expect.append((Q_POS, w))
            else:
                out.append(b"%d&SAW\n" % w)
                expect.append((Q_SAW, w))
        if out:
            bot.phase = 1
            self._send(bot, b"".join(out))
            self.lines += len(out)
        else:
            self._act(bot)

    def _act(self, bot: Bot) -> None:
        """One action per living warrior, in one write."""
        rng = bot.rng
        alive, pos, face = bot.alive, bot.pos, bot.face
        seen, bodies = bot.seen, bot.bodies
        own = {pos[w] for w in range(5) if alive[w]}
        out = []
        expect = bot.expect
        for w in range(5):
            if not alive[w]:
                continue
            r, c = pos[w]
            aim = None
            if seen and self.aim:
                for d in (face[w], UP, DOWN, LEFT, RIGHT):
                    dr, dc = DVEC[d]
                    rr, cc = r, c
                    for _ in range(3):
                        rr, cc = rr + dr, cc + dc
                        sq = (rr, cc)
                        if sq in seen:
                            aim = d
                            break
                        if sq in WALLS or sq in own or sq in bodies:
                            break
                    if aim is not None:
                        break
            if aim is None and rng.random() < self.p_shoot:
                aim = rng.randrange(4)
            if aim is not None:
                out.append(b"%d&SHOOT&%s\n" % (w, DNAME[aim]))
                expect.append((A_SHOOT, w, aim))
                continue
            f = face[w]
            order = (f, rng.randrange(4), rng.randrange(4), UP, DOWN, LEFT, RIGHT) if rng.random() < 0.8 else (
                rng.randrange(4), UP, DOWN, LEFT, RIGHT)
            for d in order:
                dr, dc = DVEC[d]
                target = (r + dr, c + dc)
                if (
                    0 <= target[0] < ROWS and 0 <= target[1] < COLS
                    and target not in WALLS and target not in own and target not in bodies and target not in seen
                ):  # fmt: skip
                    own.discard((r, c))
                    own.add(target)
                    out.append(b"%d&MOVE&%s\n" % (w, DNAME[d]))
                    expect.append((A_MOVE, w, d, target))
                    break
            else:
                d = rng.randrange(4)
                out.append(b"%d&NONE&%s\n" % (w, DNAME[d]))
                expect.append((A_FACE, w, d))
        bot.phase = 2
        self._finish_write(bot, out)

    def _finish_write(self, bot: Bot, out: list[bytes]) -> None:
        t = self._send(bot, b"".join(out))
        self.lines += len(out)
        i = bot.turn & 1
        bot.fin_turn[i] = bot.turn
        bot.fin_t[i] = t

    def _reply(self, bot: Bot, line: bytes) -> None:
        e = bot.expect.popleft()
        kind = e[0]
        if kind == Q_SAW:
            if line:
                for item in line.split(b"&"):
                    r, c, what = item.split(b",")
                    if what == b"E":
                        bot.seen[(int(r), int(c))] = True
                    elif what == b"x":
                        bot.bodies.add((int(r), int(c)))
        elif kind == Q_POS:
            w = e[1]
            r, _, c = line.partition(b",")
            try:
                where = (int(r), int(c))
            except ValueError:
                self._error(bot, f"POS answered {line!r}")
            else:
                if where != bot.pos[w]:
                    self.desync += 1
                    bot.pos[w] = where
        elif line == b"255":
            if kind == A_MOVE:
                bot.pos[e[1]] = e[3]
                bot.face[e[1]] = e[2]
            elif kind != A_PASS:
                bot.face[e[1]] = e[2]
        elif line in (b"111", b"112") and kind == A_MOVE:
            bot.fallback.append(e[1])  # an unseen enemy (or body) in the way: pass instead
        elif line == b"120":
            pass  # already acted: a late line of ours was applied to this turn
        else:
            self._error(bot, f"{line!r} in reply to {e!r}")
        if bot.expect:
            return
        if bot.restart:
            bot.restart = False
            bot.fallback = []
            self._play(bot)
        elif bot.phase == 1:
            self._act(bot)
        elif bot.phase == 2:
            if bot.fallback:
                out = [b"%d&NONE\n" % w for w in bot.fallback]
                bot.expect.extend((A_PASS, w) for w in bot.fallback)
                bot.fallback = []
                self._finish_write(bot, out)
            else:
                bot.phase = 3

    # measurement

    def window(self, seconds: float, server: Server) -> dict:
        """Measure for ``seconds``: turn rate, latencies, daemon and client CPU."""
        self.reset()
        self.measuring = True
        w = CpuWindow(server)
        self.run(seconds)
        w.stop()
        self.measuring = False
        server.check()
        wall, server_cpu, client_cpu = w.wall, w.server_cpu, w.client_cpu
        lat = sorted(self.lat)
        turns = self.turns
        return {
            "wall_s": wall,
            "turns": turns,
            "samples": len(lat),
            "rate": turns / wall,
            "lines_per_s": self.lines / wall,
            "p50_ms": pct(lat, 0.50) * 1e3,
            "p90_ms": pct(lat, 0.90) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "max_ms": (lat[-1] if lat else float("nan")) * 1e3,
            "games_ended": self.games_ended,
            "server_cpu": server_cpu / wall,
            "server_us_per_turn": server_cpu / turns * 1e6 if turns else float("nan"),
            "client_cpu": client_cpu / wall,
            "client_us_per_turn": client_cpu / turns * 1e6 if turns else float("nan"),
            "cpu_busy": [b / wall for b in w.busy],
            "other_cpu": max(0.0, w.other / wall),
            "clock_lines": self.clock_lines,
        }


# --- scenario 1: many games --------------------------------------------------------------------


def load_phase(args) -> dict:
    with daemon(args) as d:
        return load_games(args, d)


def load_games(args, d: Server, gen: LoadGen | None = None) -> dict:
    """Scenario 1 on the running daemon ``d``: seat --games games, play --warmup seconds, measure
    one --window; every bot is disconnected at the end. ``gen``: a load generator set up by the
    caller (bench/clock_cost.py), else a new one."""
    n = args.games
    if gen is None:
        gen = LoadGen(d.port, args)
    try:
        gen.run(0.2)
        rss0 = d.rss_kb()
        gen.paused = True
        t0 = perf()
        for i in range(n):
            gen.seat(Game(i, gen._seed()))
        ok = gen.run(30, until=lambda: gen.n_seated >= n and gen.n_held >= 2 * n)
        if not ok:
            raise BenchError(
                f"only {gen.n_seated} of {n} games were seated and {gen.n_held} of {2 * n} bots had READY within 30 s"
            )
        setup = perf() - t0
        gen.run(0.3)
        rss1 = d.rss_kb()
        gen.replace = True
        gen.release()
        gen.run(args.warmup)
        spy = start_profiler(args, d, "load", args.window, 0.3) if "load" in args.profile else None
        result = gen.window(args.window, d)
        if spy is not None:
            result["profile"] = finish_profiler(spy, args.profile_top, PREFIX, 60)
        rss2 = d.rss_kb()
        result.update(
            games=n,
            setup_s=setup,
            rss_before_kb=rss0,
            rss_seated_kb=rss1,
            rss_end_kb=rss2,
            rss_kb_per_game=(rss1 - rss0) / n,
            late=gen.late,
            errors=gen.errors,
            error_samples=gen.error_samples,
            lost=gen.lost,
            desync=gen.desync,
            games_ended_total=gen.games_ended_total,
            game_length_median=statistics.median(gen.game_lengths) if gen.game_lengths else None,
            hits=dict((k.decode(), v) for k, v in gen.hits.items()),
            kills=gen.kills,
        )
        return result
    finally:
        gen.close_all()


# --- scenario 2: observers ---------------------------------------------------------------------


class ObserverChild:
    """A child process (this script, --observer-child) holding N GUI observers that read everything."""

    def __init__(self, args, port: int, n: int):
        argv = [
            sys.executable, str(Path(__file__).resolve()), "--observer-child",
            "--observer-port", str(port), "--observers", str(n),
            "--observer-sleep", f"{args.observer_sleep:g}", "--observer-nice", str(args.observer_nice),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        HELPERS.append(self.proc)
        self.n = n

    def _read_line(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise BenchError(f"the observer process did not answer within {timeout:g} s")
        line = self.proc.stdout.readline()
        if not line:
            raise BenchError(f"the observer process exited with status {self.proc.wait()}")
        return line

    def wait_ready(self, timeout: float = 30.0) -> None:
        line = self._read_line(timeout)
        if line.strip() != b"READY":
            raise BenchError(f"the observer process said {line!r}")

    def stop(self, games: int) -> dict:
        """Let the observers read to the end of the ``games`` games, then collect their figures."""
        self.proc.stdin.write(b"STOP %d\n" % games)
        self.proc.stdin.flush()
        stats = json.loads(self._read_line(30.0))
        self.proc.wait(10)
        return stats


def observer_child(args) -> int:
    """Run N observers: connect, wait for every HELLO, say READY; read until ``STOP <games>`` and every
    observer has seen that many GAMEOVER lines; print the figures as JSON."""
    if args.observer_nice:
        os.nice(args.observer_nice)
    n = args.observers
    ep = select.epoll()
    socks = {}
    state = {}  # fd -> [bytes, hello, games over, closed, tail]
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.connect((HOST, args.observer_port))
        s.setblocking(False)
        socks[s.fileno()] = s
        state[s.fileno()] = [0, False, 0, False, b""]
        ep.register(s.fileno(), EPOLLIN)
    stdin = sys.stdin.buffer
    ep.register(stdin.fileno(), EPOLLIN)
    ready_said = stopping = False
    games = 1
    cpu0 = self_cpu()
    t_stop = None
    recvs = 0
    while True:
        if not ready_said and all(st[1] for st in state.values()):
            sys.stdout.buffer.write(b"READY\n")
            sys.stdout.buffer.flush()
            ready_said = True
            cpu0 = self_cpu()
        if stopping and all(st[2] >= games or st[3] for st in state.values()):
            break
        if stopping and perf() - t_stop > 10:
            break
        events = ep.poll(0.5)
        for fd, _ in events:
            if fd == stdin.fileno():
                line = stdin.readline()
                if not line or line.startswith(b"STOP"):
                    stopping = True
                    games = int(line.split()[1]) if line.strip() != b"STOP" and line else 1
                    t_stop = perf()
                    ep.unregister(fd)
                continue
            st = state[fd]
            try:
                data = socks[fd].recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            recvs += 1
            if not data:
                st[3] = True
                ep.unregister(fd)
                continue
            st[0] += len(data)
            if not st[1] and b"HELLO&" in data:
                st[1] = True
            seen = st[4] + data
            st[2] += seen.count(b"\nGAMEOVER&")
            st[4] = seen[-9:]  # shorter than the marker: a match is never counted twice
        if args.observer_sleep and ready_said:
            time.sleep(args.observer_sleep)  # read in bulk, as a GUI drawing frames would
    cpu = self_cpu() - cpu0
    out = {
        "observers": n,
        "bytes": sum(st[0] for st in state.values()),
        "complete": sum(1 for st in state.values() if st[2] >= games),
        "dropped": sum(1 for st in state.values() if st[3] and st[2] < games),
        "cpu_s": cpu,
        "recvs": recvs,
    }
    sys.stdout.buffer.write(json.dumps(out).encode() + b"\n")
    sys.stdout.buffer.flush()
    for s in socks.values():
        s.close()
    return 0


def play_round(gen: LoadGen, d: Server, seed: int, observers: ObserverChild | None) -> dict:
    """Play games back to back (bots seeded with ``seed``, ``seed`` + 1, ...) until together they
    have lasted --turns turns (a game ends early when a team is wiped out), and time them.

    The turn rate counts each game from its first READY (at team 0's bot) to its first GAMEOVER,
    so the few milliseconds between games (two connects, the game's start) are left out."""
    ended: list[Game] = []
    gen.on_game_end = ended.append
    w = CpuWindow(d)
    turns, seconds, games = 0, 0.0, []
    while turns < gen.args.turns:
        game = Game(0, seed + len(games))
        gen.seat(game)
        timeout = max(60.0, gen.args.turns * 0.05)
        if not gen.run(timeout, until=lambda: ended):
            raise BenchError(f"a {gen.args.turns}-turn game did not end within {timeout:g} s")
        ended.clear()
        if not game.t_end or not game.t_first:
            raise BenchError("a game ended without READY or GAMEOVER (connection lost?)")
        turns += game.turns
        seconds += game.t_end - game.t_first
        games.append(game.turns)
    w.stop()
    gen.on_game_end = None
    wall = w.wall
    result = {
        "observers": observers.n if observers else 0,
        "games": games,
        "turns": turns,
        "seconds": seconds,
        "rate": turns / seconds,
        "server_cpu": w.server_cpu / wall,
        "server_us_per_turn": w.server_cpu / turns * 1e6,
        "client_cpu": w.client_cpu / wall,
        "other_cpu_s": w.other,  # includes the observer process
        "wall_s": wall,
    }
    if observers is not None:
        stats = observers.stop(len(games))
        result["observer_stats"] = stats
        result["observer_cpu"] = stats["cpu_s"] / wall
        result["other_cpu_s"] -= stats["cpu_s"]
        if stats["dropped"] or stats["complete"] < stats["observers"]:
            print(
                f"  !! only {stats['complete']} of {stats['observers']} observers saw every game to its end "
                f"({stats['dropped']} dropped by the daemon)",
                flush=True,
            )
    result["other_cpu"] = max(0.0, result["other_cpu_s"] / wall)
    return result


def observers_phase(args) -> dict:
    n_obs = args.observers
    with daemon(args) as d:
        gen = LoadGen(d.port, args)
        try:
            gen.run(0.2)
            seed = 7
            # Warm-up, not counted: the daemon's first game (imports, caches, first allocations).
            play_round(gen, d, seed, None)
            rounds: list[dict] = []
            for r in range(args.rounds):
                order = (("without", 0), ("with", n_obs))
                pair = {}
                for variant, obs in order if r % 2 == 0 else order[::-1]:
                    child = None
                    if obs:
                        child = ObserverChild(args, d.gui_port, obs)
                        child.wait_ready()
                    g = play_round(gen, d, seed, child)
                    pair[variant] = g
                    print(
                        f"  round {r + 1}, {obs:>3} observers: {g['turns']} turns ({len(g['games'])} games) in "
                        f"{g['seconds']:.2f} s = "
                        f"{g['rate']:,.0f} turns/s, daemon {g['server_us_per_turn']:,.0f} us/turn "
                        f"(CPU {g['server_cpu']:.0%}), bench CPU {g['client_cpu']:.0%}"
                        + (f", observers' CPU {g['observer_cpu']:.0%}" if obs else ""),
                        flush=True,
                    )
                rounds.append(pair)
            profile = {}
            if "observers" in args.profile:
                # Not in the measured rounds: py-spy takes CPU on the bench's core. Games are played
                # back to back until it has sampled for --profile-seconds.
                for obs in (0, n_obs):
                    spy = start_profiler(args, d, f"observers-{obs}", args.profile_seconds, 0.3)
                    while spy[0].poll() is None:
                        child = None
                        if obs:
                            child = ObserverChild(args, d.gui_port, obs)
                            child.wait_ready()
                        play_round(gen, d, seed, child)
                    profile[obs] = finish_profiler(spy, args.profile_top, PREFIX, 60)
            without = [p["without"]["rate"] for p in rounds]
            with_obs = [p["with"]["rate"] for p in rounds]
            cost = 1 - statistics.median(with_obs) / statistics.median(without)
            paired = [1 - p["with"]["rate"] / p["without"]["rate"] for p in rounds]
            us_without = statistics.median(p["without"]["server_us_per_turn"] for p in rounds)
            us_with = statistics.median(p["with"]["server_us_per_turn"] for p in rounds)
            return {
                "observers": n_obs,
                "turns": args.turns,
                "rounds": rounds,
                "rate_without": statistics.median(without),
                "rate_with": statistics.median(with_obs),
                "cost": cost,
                "cost_paired_median": statistics.median(paired),
                "cost_paired": paired,
                "server_us_per_turn_without": us_without,
                "server_us_per_turn_with": us_with,
                "server_us_per_observer_turn": (us_with - us_without) / n_obs if n_obs else float("nan"),
                "profile": profile,
                "errors": gen.errors,
                "error_samples": gen.error_samples,
                "late": gen.late,
                "lost": gen.lost,
                "game_lengths": gen.game_lengths,
            }
        finally:
            gen.close_all()


# --- report ------------------------------------------------------------------------------------


def report(results: dict) -> list[tuple[str, bool | None, str]]:
    a = results["args"]
    print_machine(results["machine"], "gamed/")
    print(
        f"pinning: daemon on CPU {a['server_cpu']}, bench (bots, observers) on CPU {a['client_cpu']}; "
        f"scheduling: {a['sched']}"
    )
    verdicts: list[tuple[str, bool | None, str]] = []
    load = results.get("load")
    if load:
        r = load
        print(
            f"\nScenario 1: {r['games']} concurrent games, {a['window']:g} s window after {a['warmup']:g} s of play "
            f"(bots: {a['queries']} queries + 1 action per living warrior per turn, "
            + (f"thinking 0.5-1.5 x {a['think']:g} ms first; " if a["think"] else "answering at once; ")
            + "latency = the line that finished the last team -> that turn's 200 block at its bot)"
        )
        print(
            f"  {r['rate']:,.0f} turns/s over all games ({r['rate'] / r['games']:.1f} per game), "
            f"{r['lines_per_s']:,.0f} AI lines/s"
        )
        print(
            f"  latency p50 {fmt(r['p50_ms'])} ms, p90 {fmt(r['p90_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, "
            f"max {fmt(r['max_ms'], 1)} ms ({r['samples']:,} turns)"
        )
        print(
            f"  daemon CPU {r['server_cpu']:.0%} of a core, {fmt(r['server_us_per_turn'], 0)} us per turn; "
            f"bench CPU {r['client_cpu']:.0%}{saturated(r['client_cpu'])} "
            f"({fmt(r['client_us_per_turn'], 0)} us per turn); other {r['other_cpu']:.0%}"
        )
        print(
            f"  daemon RSS {r['rss_before_kb'] / 1024:.1f} MB idle, {r['rss_seated_kb'] / 1024:.1f} MB with "
            f"{r['games']} games seated ({r['rss_kb_per_game']:.1f} KB per game), {r['rss_end_kb'] / 1024:.1f} MB "
            "at the end of the window"
        )
        print(
            f"  {r['games_ended']} games ended in the window ({r['games_ended_total']} in all, median length "
            f"{r['game_length_median'] or '-'} turns) and were replaced; {r['late']} turns ended at the deadline; "
            f"{r['errors']} unexpected lines, {r['lost']} connections lost, {r['desync']} position mismatches"
        )
        for sample in r["error_samples"]:
            print(f"    {sample}")
        if "profile" in r:
            print_profile(f"scenario 1 ({r['games']} games)", r["profile"])
        verdicts.append(
            (
                f"p99 last action -> 200 block <= 10 ms at {r['games']} games",
                r["p99_ms"] <= TARGETS["p99_ms"],
                f"{r['p99_ms']:.2f} ms",
            )
        )
    obs = results.get("observers")
    if obs:
        n = obs["observers"]
        interval = "the daemon's default" if a["gui_interval"] is None else f"{a['gui_interval']:g} s"
        print(
            f"\nScenario 2: {obs['turns']} turns of one game per variant, without and with {n} GUI observers, "
            f"{len(obs['rounds'])} rounds "
            f"(--fight-gui-interval: {interval})"
        )
        print(
            f"{'round':>5} {'turns/s without':>16} {'turns/s with':>13} {'change':>7} {'us/turn without':>16} "
            f"{'us/turn with':>13} {'observers MB/s':>14} {'obs. CPU':>8} {'other':>11}"
        )
        for i, p in enumerate(obs["rounds"], 1):
            w, o = p["without"], p["with"]
            st = o.get("observer_stats", {})
            mbs = st.get("bytes", 0) / o["seconds"] / 1e6 if o["seconds"] else float("nan")
            print(
                f"{i:>5} {w['rate']:>16,.0f} {o['rate']:>13,.0f} {o['rate'] / w['rate'] - 1:>+7.1%} "
                f"{w['server_us_per_turn']:>16,.0f} {o['server_us_per_turn']:>13,.0f} {mbs:>14.1f} "
                f"{o.get('observer_cpu', 0.0):>8.0%} {w['other_cpu']:>5.0%}/{o['other_cpu']:<5.0%}"
            )
        print(
            f"  medians: {obs['rate_without']:,.0f} turns/s without, {obs['rate_with']:,.0f} with {n} observers -> "
            f"cost {obs['cost']:.1%} (median of the per-round costs {obs['cost_paired_median']:.1%}); daemon "
            f"{obs['server_us_per_turn_without']:,.0f} -> {obs['server_us_per_turn_with']:,.0f} us per turn, "
            f"{obs['server_us_per_observer_turn']:.1f} us per observer per turn"
        )
        if obs["errors"] or obs["late"] or obs["lost"]:
            print(f"  !! {obs['errors']} unexpected lines, {obs['late']} turns at the deadline, {obs['lost']} lost")
        for k, prof in obs.get("profile", {}).items():
            print_profile(f"scenario 2 with {k} observers (one extra game)", prof)
        verdicts.append(
            (
                f"{n} observers cost <= 10% of the game's turn rate",
                obs["cost"] <= TARGETS["observer_cost"],
                f"{obs['cost']:.1%}",
            )
        )
    print_targets(verdicts)
    others = ([load["other_cpu"]] if load else []) + [
        g["other_cpu"] for p in (obs["rounds"] if obs else []) for g in p.values()
    ]
    warn_if_disturbed(others, "the daemon nor the bench")
    if load and load["client_cpu"] >= 0.9:
        print(
            "\nNote: the bench was CPU-saturated (>= 90% of its core) in scenario 1: the turn rate is a lower bound "
            "of what the daemon can do, and latencies include the bench's own queueing."
        )
    return verdicts


# --- main --------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Example: %(prog)s --games 50 --skip-observers --window 5 --profile load",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--games", type=int, default=200, help="scenario 1: concurrent games [%(default)s]")
    p.add_argument(
        "--turns", type=int, default=5000,
        help="turns per game (the daemon's --fight-max-turns); scenario 2 plays games back to back until this "
        "many turns per round and variant; scenario 1 replaces games that end [%(default)s]",
    )  # fmt: skip
    p.add_argument("--observers", type=int, default=100, help="scenario 2: GUI observers [%(default)s]")
    p.add_argument("--rounds", type=int, default=7, help="scenario 2: rounds of (without, with) observers [%(default)s]")
    p.add_argument("--window", type=float, default=10.0, help="scenario 1: measured seconds [%(default)s]")
    p.add_argument("--warmup", type=float, default=2.0, help="scenario 1: seconds of play before the window [%(default)s]")
    p.add_argument("--queries", type=int, default=3, help="queries per bot per turn (SAW, SAW, POS, ...) [%(default)s]")
    p.add_argument(
        "--shoot", type=float, default=0.03, help="chance that a warrior shoots at random instead of moving [%(default)s]"
    )
    p.add_argument(
        "--aim", action="store_true",
        help="bots also shoot at enemies their SAW shows in line (more kills: games end sooner)",
    )  # fmt: skip
    p.add_argument(
        "--think", type=float, default=0.0, metavar="MS",
        help="each bot waits a random 0.5-1.5 x MS after READY before it plays (0 = answer at once, which keeps "
        "the daemon saturated in scenario 1) [%(default)s]",
    )  # fmt: skip
    p.add_argument("--line-rate", type=float, default=0.0, help="the daemon's --line-rate, 0 = unlimited [%(default)s]")
    p.add_argument(
        "--gui-interval", type=float, default=None, metavar="SECONDS",
        help="the daemon's --fight-gui-interval (observer events gathered this long; 0 = a write per event) "
        "[the daemon's default]",
    )  # fmt: skip
    p.add_argument("--turn-time", type=float, default=5.0, help="the daemon's --fight-turn-time [%(default)s]")
    p.add_argument("--skip-load", action="store_true", help="skip scenario 1")
    p.add_argument("--skip-observers", action="store_true", help="skip scenario 2")
    p.add_argument(
        "--observer-sleep", type=float, default=0.001,
        help="seconds the observer process sleeps between reads of all its sockets [%(default)s]",
    )  # fmt: skip
    p.add_argument("--observer-nice", type=int, default=10, help="niceness of the observer process [%(default)s]")
    p.add_argument(
        "--profile", default="", metavar="WHAT[,WHAT]",
        help="sample the daemon with py-spy: 'load' (scenario 1's window), 'observers' (one extra game without "
        "and one with observers after scenario 2's rounds); prints the hot spots",
    )  # fmt: skip
    p.add_argument("--profile-native", action="store_true", help="with --profile: C frames too (py-spy pauses the daemon)")
    p.add_argument(
        "--profile-seconds", type=float, default=5.0,
        help="with --profile observers: seconds sampled per variant [%(default)s]",
    )  # fmt: skip
    p.add_argument("--profile-top", type=int, default=25, help="functions listed per profile [%(default)s]")
    p.add_argument("--nice", type=int, default=0, help="niceness for the bench and the daemon (below 0 needs root)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemon and the bench to CPUs")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemon's logs (their directory is printed)")
    p.add_argument("--observer-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--observer-port", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.games < 1 or args.turns < 1 or args.rounds < 1 or args.observers < 0 or args.queries < 0:
        p.error("--games, --turns and --rounds must be at least 1, --observers and --queries at least 0")
    args.profile = [w.strip() for w in args.profile.split(",") if w.strip()]
    if any(w not in ("load", "observers") for w in args.profile):
        p.error("--profile takes 'load' and/or 'observers'")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.observer_child:
        return observer_child(args)
    exit_on_sigterm()
    pinned = choose_cpus(args)
    import_work_tree()
    results: dict = {"machine": {}, "args": {}}
    logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    args.logdir = logdir
    t_start = perf()

    def body() -> int:
        results["machine"] = machine(gamed_version())
        raise_nofile(2 * args.games + args.observers + 200)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        args.sched = set_priority(args.nice)  # the daemon inherits it
        results["args"] = {k: v for k, v in vars(args).items()}
        if not args.skip_load:
            print(f"scenario 1: {args.games} games ...", flush=True)
            r = results["load"] = load_phase(args)
            print(
                f"  {r['rate']:,.0f} turns/s, p50 {fmt(r['p50_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, daemon CPU "
                f"{r['server_cpu']:.0%} ({fmt(r['server_us_per_turn'], 0)} us/turn), bench CPU {r['client_cpu']:.0%}"
                f"{saturated(r['client_cpu'])}, other {r['other_cpu']:.0%}",
                flush=True,
            )
            if r["turns"] == 0:
                raise BenchError("no turn was played in scenario 1's window")
        if not args.skip_observers:
            print(
                f"scenario 2: {args.turns} turns per variant, 0 vs {args.observers} observers, {args.rounds} rounds ...",
                flush=True,
            )
            results["observers"] = observers_phase(args)
        note_code_change(results["machine"], gamed_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("fight_load", body, lambda: stop_all(logdir, args.keep_logs, "daemon"))


if __name__ == "__main__":
    sys.exit(main())
