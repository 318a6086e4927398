"""Web observers and records benchmark (issue 7): SSE spectators on running Kalaha games, and the
reactor time of storing a finished match (``make bench``).

Phases:

1. The real daemon (``twistd gamed``, Kalaha and web ports, ``--records sqlite:<tmp file>`` so every
   finished match is stored, ``--kalaha-move-time 0``) runs --games Kalaha games: pairs of scripted
   players meet at named tables and play random legal pits at a steady pace (each move is sent
   100-200 ms after its YOURMOVE); a finished game is followed by a new one at the same slot.
   a. --seconds of play without spectators: the games' move rate.
   b. --spectators SSE clients (raw asyncio HTTP/1.0, no browser) spread evenly over the games
      (``GET /api/games/<id>/events``, table ids from ``GET /api/games``; a spectator whose game
      ended watches the next game of its slot), then --seconds of play: the move rate again, and the
      delay from a player writing its move (the time just before the write) to the SSE ``move``
      event with that game and move number ``n`` reaching each spectator (p50/p95/p99/max).
   Targets: p99 delay <= 50 ms; move rate with spectators >= 90 % of the rate without.
2. Storing a finished match (in a subprocess: ``--store-probe``): a real LiveHub with a real
   RecordStore on a real SQLite file under the real reactor, with two SSE-like viewers on the table
   and one on the list of games (as in the daemon with spectators). For each of --records records (a
   long Kalaha game and a 500-turn Virtual Fight game), the reactor-thread CPU time
   (time.thread_time) of: LiveTable.finish (building the MatchRecord, RecordStore.store up to the
   Deferred it returns), the callbacks when the pool thread is done (_stored, which also queries the
   recent matches for the list viewers, and _close, which sends the end event), and everything else
   the reactor thread did until the end event was out (adbapi's callFromThread wake-ups, the recent-
   matches callback). Also the longest reactor stall a 1 ms heartbeat saw while storing (the pool
   thread holding the GIL while it encodes the moves' states), compared with the same heartbeat idle.
   Target: <= 5 ms of reactor time per stored match.

The daemon and the probe run the work tree's gamed (PYTHONPATH=<checkout>). The daemon is pinned
to CPU 1 and this load generator to CPU 0 (unless --no-pin). A default run takes about 100 s (up
to 20 s more waiting for an idle machine); --smoke about 15 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
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
    fmt,
    guarded,
    machine,
    note_code_change,
    pct,
    perf,
    ports_only,
    print_machine,
    print_targets,
    raise_nofile,
    saturated,
    set_priority,
    stop_all,
    wait_quiet,
    warn_if_disturbed,
    gamed_version,
    import_work_tree,
)

PREFIX = "web-bench"

TARGETS = {
    "p99_ms": 50.0,  # move -> SSE event at a spectator
    "rate_ratio": 0.90,  # games' move rate with spectators / without
    "store_reactor_ms": 5.0,  # reactor time per stored match
}

_N_RE = re.compile(rb'"n":(\d+)')


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def daemon(args) -> Server:
    kport, wport = free_port(), free_port()
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        *ports_only(kalaha=f"tcp:port={kport}:interface={HOST}", web=f"tcp:port={wport}:interface={HOST}"),
        "--records", f"sqlite:{Path(args.logdir) / 'records.sqlite'}",
        "--max-per-peer", "0", "--max-connections", "0",
        "--kalaha-pair-delay", "0.5", "--kalaha-move-time", "0",
    ]  # fmt: skip
    server = Server("gamed", argv, f"starting on {kport}", args.server_cpu, args.logdir)
    server.kport, server.wport = kport, wport
    return server


# --- the load generator (asyncio) ------------------------------------------------------------


class Load:
    """Players, spectators and what they measure."""

    def __init__(self, args, kport: int, wport: int):
        self.args = args
        self.kport, self.wport = kport, wport
        self.rng = random.Random(args.seed)
        self.sent: dict[tuple[int, int, int], float] = {}  # (slot, generation, n) -> time of the write
        self.table_of: dict[str, tuple[int, int]] = {}  # live table id -> (slot, generation)
        self.measuring = False
        self.stopping = False
        self.moves = 0  # moves written while measuring
        self.games_done = 0
        self.delays: list[float] = []
        self.echoes: list[float] = []  # control: a player's write of its move -> the PLAYED line echoing it
        self.unmatched = 0  # move events whose write time is unknown (sent before we looked)
        self.errors: list[str] = []
        self.events = 0
        self.spectator_tasks: list[asyncio.Task] = []
        self.reattach = 0
        self.refused = 0

    # players

    async def player(self, slot: int, side: str) -> None:
        gen = 0
        while not self.stopping:
            gen += 1
            try:
                await asyncio.wait_for(self._game(slot, gen, side), timeout=self.args.game_timeout)
            except asyncio.TimeoutError:
                self.errors.append(f"slot {slot} game {gen}: no end within {self.args.game_timeout:g} s")
            except (ConnectionError, OSError) as e:
                if not self.stopping:
                    self.errors.append(f"slot {slot} game {gen}: {e}")
                    await asyncio.sleep(0.2)

    async def _game(self, slot: int, gen: int, side: str) -> None:
        reader, writer = await asyncio.open_connection(HOST, self.kport)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            writer.write(f"BOARD OFF\nNAME s{slot}g{gen}{side}\nTABLE w{slot}g{gen}\n".encode())
            played = 0
            t_own = 0.0
            while True:
                line = await reader.readline()
                if not line:
                    raise ConnectionError("closed by the server")
                if line.startswith(b"PLAYED "):
                    played += 1
                    if t_own:
                        if self.measuring:
                            self.echoes.append(perf() - t_own)
                        t_own = 0.0
                elif line.startswith(b"YOURMOVE "):
                    pits = line.split()[2:]
                    await asyncio.sleep(self.rng.uniform(self.args.pace_min, self.args.pace_max))
                    if self.stopping:
                        return
                    self.sent[(slot, gen, played + 1)] = t_own = perf()
                    writer.write(b"MOVE " + self.rng.choice(pits) + b"\n")
                    if self.measuring:
                        self.moves += 1
                elif line.startswith((b"RESULT ", b"ABORT ")):
                    if side == "a":
                        self.games_done += 1
                        # forget this game's write times once no spectator can still be receiving them
                        asyncio.get_running_loop().call_later(5.0, self._forget, slot, gen, played)
                    if line.startswith(b"ABORT "):
                        self.errors.append(f"slot {slot} game {gen}: {line.decode().strip()}")
                    return
                elif line.startswith(b"ERROR "):
                    self.errors.append(f"slot {slot} game {gen}: {line.decode().strip()}")
        finally:
            writer.close()

    def _forget(self, slot: int, gen: int, played: int) -> None:
        for n in range(1, played + 2):
            self.sent.pop((slot, gen, n), None)

    # HTTP

    async def _http_get(self, path: str, timeout: float = 5.0) -> bytes:
        async def go() -> bytes:
            reader, writer = await asyncio.open_connection(HOST, self.wport)
            try:
                writer.write(f"GET {path} HTTP/1.0\r\nHost: {HOST}\r\n\r\n".encode())
                data = await reader.read()
            finally:
                writer.close()
            head, _, body = data.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.") or b" 200 " not in head.split(b"\r\n", 1)[0]:
                raise BenchError(f"GET {path}: {head[:200]!r}")
            return body

        return await asyncio.wait_for(go(), timeout)

    async def refresh_tables(self) -> None:
        body = await self._http_get("/api/games")
        for game in json.loads(body)["games"]:
            for p in game["players"]:
                m = re.fullmatch(r"s(\d+)g(\d+)[ab]", p["name"])
                if m:
                    self.table_of[game["id"]] = (int(m.group(1)), int(m.group(2)))
                    break

    # spectators

    async def spectator(self, slot: int) -> None:
        last_gen = 0
        while not self.stopping:
            table = None
            for _ in range(100):  # bounded: 100 * 0.1 s
                await self.refresh_tables()
                live = [(g, t) for t, (s, g) in self.table_of.items() if s == slot and g > last_gen]
                if live:
                    last_gen, table = max(live)
                    break
                await asyncio.sleep(0.1)
            if table is None:
                raise BenchError(f"no game at slot {slot} for 10 s")
            await self._watch(table, slot, last_gen)
            self.reattach += 1

    async def _watch(self, table: str, slot: int, gen: int) -> None:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, self.wport), 5.0)
        try:
            writer.write(f"GET /api/games/{table}/events HTTP/1.0\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n\r\n".encode())
            status = await asyncio.wait_for(reader.readline(), 5.0)
            if b" 200 " not in status:
                self.refused += 1
                return
            event = b""
            while True:
                # a keepalive comes every 15 s and each game ends within --game-timeout
                line = await asyncio.wait_for(reader.readline(), self.args.game_timeout + 20)
                if not line:
                    return
                if line.startswith(b"event: "):
                    event = line[7:].strip()
                elif line.startswith(b"data: ") and event == b"move":
                    now = perf()
                    self.events += 1
                    m = _N_RE.search(line)
                    t = self.sent.get((slot, gen, int(m.group(1)))) if m else None
                    if t is None:
                        self.unmatched += 1
                    elif self.measuring:
                        self.delays.append(now - t)
                elif line.startswith(b"data: ") and event == b"end":
                    return
        finally:
            writer.close()


async def run_load(args, server: Server) -> dict:
    load = Load(args, server.kport, server.wport)
    loop = asyncio.get_running_loop()
    players = [loop.create_task(load.player(i, side)) for i in range(args.games) for side in "ab"]
    out: dict = {}

    async def window(name: str) -> dict:
        await asyncio.sleep(args.warmup)
        server.check()
        load.moves, load.delays, load.unmatched, load.events, load.echoes = 0, [], 0, 0, []
        games0 = load.games_done
        cpu = CpuWindow(server)
        load.measuring = True
        await asyncio.sleep(args.seconds)
        load.measuring = False
        cpu.stop()
        delays = sorted(load.delays)
        echoes = sorted(load.echoes)
        return {
            "phase": name,
            "moves": load.moves,
            "rate": load.moves / cpu.wall,
            "games_finished": load.games_done - games0,
            "events": load.events,
            "delays": len(delays),
            "unmatched": load.unmatched,
            "p50_ms": pct(delays, 0.50) * 1e3,
            "p95_ms": pct(delays, 0.95) * 1e3,
            "p99_ms": pct(delays, 0.99) * 1e3,
            "max_ms": (delays[-1] if delays else float("nan")) * 1e3,
            "mean_ms": (statistics.fmean(delays) if delays else float("nan")) * 1e3,
            "echo_p50_ms": pct(echoes, 0.50) * 1e3,
            "echo_p99_ms": pct(echoes, 0.99) * 1e3,
            "echo_max_ms": (echoes[-1] if echoes else float("nan")) * 1e3,
            "server_cpu": cpu.server_cpu / cpu.wall,
            "client_cpu": cpu.client_cpu / cpu.wall,
            "other_cpu": cpu.other / cpu.wall,
            "wall_s": cpu.wall,
        }

    try:
        print(f"  {args.games} games without spectators ...", flush=True)
        out["without"] = await window("without")
        print_window(out["without"])
        print(f"  {args.spectators} spectators on {args.games} games ...", flush=True)
        load.spectator_tasks = [loop.create_task(load.spectator(i % args.games)) for i in range(args.spectators)]
        await asyncio.sleep(0.5)
        out["with"] = await window("with")
        print_window(out["with"])
        for t in load.spectator_tasks:
            if t.done() and t.exception() is not None:
                raise t.exception()
        out["with"]["spectators_reattached"] = load.reattach
        out["with"]["refused"] = load.refused
        out["errors"] = load.errors[:20]
        out["n_errors"] = len(load.errors)
        out["db_matches"] = len((json.loads(await load._http_get("/api/matches?limit=500")))["matches"])
    finally:
        load.stopping = True
        for t in players + load.spectator_tasks:
            t.cancel()
        await asyncio.wait(players + load.spectator_tasks, timeout=5)
    return out


def print_window(w: dict) -> None:
    line = f"    {w['rate']:,.1f} moves/s, {w['games_finished']} games finished"
    if w["delays"]:
        line += (
            f"; move -> spectator p50 {fmt(w['p50_ms'])} p95 {fmt(w['p95_ms'])} p99 {fmt(w['p99_ms'])} "
            f"max {fmt(w['max_ms'])} ms ({w['delays']:,} deliveries)"
        )
    line += f"; control move -> PLAYED at the mover p50 {fmt(w['echo_p50_ms'])} p99 {fmt(w['echo_p99_ms'])} ms"
    line += (
        f"; daemon CPU {w['server_cpu']:.0%}, client CPU {w['client_cpu']:.0%}{saturated(w['client_cpu'])}, "
        f"other {w['other_cpu']:.0%}"
    )
    print(line, flush=True)


# --- storing a finished match: in-process, under the real reactor ----------------------------------


def kalaha_record_parts(rng: random.Random, moves: int):
    state = {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}
    out = []
    for n in range(1, moves + 1):
        seat = n % 2
        out.append(
            (
                seat,
                f"{'AB'[seat]}{rng.randint(1, 6)}",
                {"pits": [[rng.randint(0, 12) for _ in range(6)] for _ in range(2)], "stores": [rng.randint(0, 36), rng.randint(0, 36)], "to_move": 1 - seat},
            )
        )
    return {"pits": 6, "stones": 6, "move_time": 0.0}, state, out, 2


def fight_record_parts(rng: random.Random, turns: int):
    walls = (ROOT / "gamed" / "fight" / "maps" / "four.map").read_text().split()
    walls = ["".join("#" if c == "#" else "." for c in row) for row in walls]
    h, w = len(walls), len(walls[0])

    def state(turn: int) -> dict:
        warriors = [
            {"team": t, "id": i, "x": rng.randrange(w), "y": rng.randrange(h), "facing": rng.choice(("UP", "DOWN", "LEFT", "RIGHT")), "alive": rng.random() > 0.3}
            for t in range(4)
            for i in range(5)
        ]
        shots = [{"team": rng.randrange(4), "id": rng.randrange(5), "from": [rng.randrange(w), rng.randrange(h)], "to": [rng.randrange(w), rng.randrange(h)]} for _ in range(rng.randint(0, 8))]
        return {"width": w, "height": h, "walls": walls, "warriors": warriors, "shots": shots, "turn": turn}

    out = [(None, f"turn {n}: 0.{rng.randrange(5)} shoots left (enemy)", state(n)) for n in range(1, turns + 1)]
    return {"map": "four", "teams": 4, "max_turns": turns, "turn_time": 1.0}, state(0), out, 4


def store_probe(argv: list[str]) -> int:
    """Measure the reactor-side cost of storing finished matches; print one JSON object."""
    p = argparse.ArgumentParser(prog="web_load.py --store-probe")
    p.add_argument("--store-probe", action="store_true")
    p.add_argument("--db", required=True)
    p.add_argument("--records", type=int, default=200)
    p.add_argument("--kalaha-moves", type=int, default=150)
    p.add_argument("--fight-turns", type=int, default=500)
    a = p.parse_args(argv)

    from twisted.internet import defer, reactor, task

    from gamed.observers import LiveHub
    from gamed.records import RecordStore, Seat
    from gamed.tap import tune_thread_switching

    tune_thread_switching()  # as the daemon does

    store = RecordStore(f"sqlite:{a.db}", reactor)
    hub = LiveHub(reactor, store=store, linger=3600.0, coalesce=0.5)
    main_thread_time = time.thread_time
    results: dict = {}

    class Viewer:
        """Stands in for an SSE stream: counts bytes, notes the end."""

        def __init__(self):
            self.bytes = 0
            self.ended = None

        def deliver(self, data: bytes) -> None:
            self.bytes += len(data)

        def end(self) -> None:
            if self.ended is not None and not self.ended.called:
                self.ended.callback(None)

    list_viewer = Viewer()
    hub.add_list_viewer(list_viewer)

    class Heartbeat:
        """A 1 ms callLater chain: the worst lateness of the reactor."""

        def __init__(self):
            self.worst = 0.0
            self.call = None
            self.running = False

        def start(self):
            self.worst, self.running = 0.0, True
            self._tick(None)

        def _tick(self, due):
            now = time.perf_counter()
            if due is not None:
                self.worst = max(self.worst, now - due)
            if self.running:
                self.call = reactor.callLater(0.001, self._tick, now + 0.001)

        def stop(self):
            self.running = False
            if self.call is not None and self.call.active():
                self.call.cancel()
            return self.worst

    beat = Heartbeat()

    def one(name: str, parts, rng: random.Random, i: int):
        """Open a table, play its moves, add two viewers; return (table, Deferred of its end)."""
        options, initial, moves, seats_n = parts(rng)
        seats = [Seat(s, f"p{i % 17}s{s}", True) for s in range(seats_n)]
        table = hub.open(name, seats, options, initial, None)
        for seat, move, state in moves:
            table.moved(seat, move, state, None if seat is None else 1 - seat)
        viewers = [Viewer(), Viewer()]
        for v in viewers:
            table.add(v)
        done = defer.Deferred()
        viewers[0].ended = done
        return table, done, tuple([1.0] + [0.0] * (seats_n - 1)), moves[-1][2], len(moves)

    @defer.inlineCallbacks
    def kind(name: str, parts, n: int):
        rng = random.Random(7)
        finish_ms, callbacks_ms, total_ms, wall_ms = [], [], [], []
        # pass 1: reactor-thread CPU time per stored match (no heartbeat running)
        for i in range(n):
            table, done, scores, last, n_moves = one(name, parts, rng, i)
            cb = [0.0]

            def timed(fn):
                def wrapper(*args):
                    t0 = main_thread_time()
                    try:
                        return fn(*args)
                    finally:
                        cb[0] += main_thread_time() - t0

                return wrapper

            # instance attributes shadow the methods finish() hands to the Deferred
            table._stored, table._close = timed(table._stored), timed(table._close)
            w0 = time.perf_counter()
            t0 = main_thread_time()
            table.finish(scores, "end", state=last)
            t1 = main_thread_time()
            yield done
            # let the recent-matches refresh for the list viewer come back too
            yield task.deferLater(reactor, 0.002, lambda: None)
            t2 = main_thread_time()
            wall_ms.append((time.perf_counter() - w0) * 1e3)
            finish_ms.append((t1 - t0) * 1e3)
            callbacks_ms.append(cb[0] * 1e3)
            total_ms.append((t2 - t0) * 1e3)
            if table.match_id is None:
                raise RuntimeError(f"{name} record {i} was not stored")
        # pass 2: the worst lateness of a 1 ms heartbeat per stored match, and idle for as long
        stalls, idle = [], []
        for i in range(min(n, 50)):
            table, done, scores, last, _ = one(name, parts, rng, n + i)
            beat.start()
            w0 = time.perf_counter()
            table.finish(scores, "end", state=last)
            yield done
            stalls.append(beat.stop() * 1e3)
            wall = time.perf_counter() - w0
            beat.start()
            yield task.deferLater(reactor, wall, lambda: None)
            idle.append(beat.stop() * 1e3)

        def stats(v):
            s = sorted(v)
            return {"mean": statistics.fmean(s), "p50": pct(s, 0.5), "p99": pct(s, 0.99), "max": s[-1]}

        results[name] = {
            "records": n,
            "moves_per_record": n_moves,
            "finish_ms": stats(finish_ms),
            "callbacks_ms": stats(callbacks_ms),
            "reactor_ms": stats(total_ms),
            "wall_ms": stats(wall_ms),
            "stall_ms": stats(stalls),
            "stall_idle_ms": stats(idle),
        }

    @defer.inlineCallbacks
    def main():
        try:
            yield store.start()
            yield kind("kalaha", lambda rng: kalaha_record_parts(rng, a.kalaha_moves), a.records)
            yield kind("fight", lambda rng: fight_record_parts(rng, a.fight_turns), a.records)
            yield store.close()
        except Exception as e:
            results["error"] = repr(e)
        finally:
            reactor.stop()

    reactor.callWhenRunning(main)
    watchdog = reactor.callLater(300, lambda: (results.setdefault("error", "timeout"), reactor.stop()))
    reactor.run()
    if watchdog.active():
        watchdog.cancel()
    print(json.dumps(results))
    return 0 if "error" not in results else 1


def run_store_probe(args) -> dict:
    db = Path(args.logdir) / "probe.sqlite"
    argv = [sys.executable, str(Path(__file__).resolve()), "--store-probe", "--db", str(db), "--records", str(args.records)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    if args.server_cpu is not None:
        try:
            os.sched_setaffinity(proc.pid, {args.server_cpu})
        except OSError:
            pass
    try:
        out, err = proc.communicate(timeout=330)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise BenchError("the store probe did not finish within 330 s") from None
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    try:
        res = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"store probe failed ({proc.returncode}): {err.decode(errors='replace')[-1500:]}") from None
    if "error" in res:
        raise BenchError(f"store probe: {res['error']}: {err.decode(errors='replace')[-1500:]}")
    return res


# --- report --------------------------------------------------------------------------------------


def report(results: dict) -> list:
    print_machine(results["machine"])
    a = results["args"]
    print(
        f"run: {a['games']} games, {a['spectators']} spectators, {a['seconds']:g} s windows after {a['warmup']:g} s "
        f"warm-up, moves {a['pace_min'] * 1e3:.0f}-{a['pace_max'] * 1e3:.0f} ms after YOURMOVE; store probe "
        f"{a['records']} records per kind; machine before the run: {results.get('quiet', '?')}"
    )
    verdicts = []
    load = results.get("load")
    if load:
        wo, wi = load["without"], load["with"]
        print("\n                          move -> SSE spectator                        move -> PLAYED (control)")
        print("phase            moves/s  games  p50 ms  p95 ms  p99 ms  max ms  deliveries  p50 ms  p99 ms  max ms  daemon CPU  client CPU  other")
        for w in (wo, wi):
            print(
                f"{w['phase']:<15} {w['rate']:>8.1f} {w['games_finished']:>6} {fmt(w['p50_ms']):>7} {fmt(w['p95_ms']):>7} "
                f"{fmt(w['p99_ms']):>7} {fmt(w['max_ms']):>7} {w['delays']:>11,} {fmt(w['echo_p50_ms']):>7} {fmt(w['echo_p99_ms']):>7} "
                f"{fmt(w['echo_max_ms']):>7} {w['server_cpu']:>11.0%} "
                f"{w['client_cpu']:>10.0%}{'!' if w['client_cpu'] >= 0.9 else ' '} {w['other_cpu']:>5.0%}"
            )
        print(
            f"spectators re-attached to the next game of their slot {wi.get('spectators_reattached', 0)} times; "
            f"{wi['unmatched']} move events without a known write time (ignored); "
            f"{load['db_matches']} matches in the records database (newest 500 counted); "
            f"{load['n_errors']} player errors" + (f": {load['errors'][:3]}" if load["n_errors"] else "")
        )
        ratio = wi["rate"] / wo["rate"] if wo["rate"] else float("nan")
        verdicts.append((f"p99 move -> SSE spectator <= 50 ms ({a['spectators']} streams, {a['games']} games)", wi["p99_ms"] <= TARGETS["p99_ms"], f"{fmt(wi['p99_ms'])} ms"))
        verdicts.append(("move rate with spectators >= 90% of without", ratio >= TARGETS["rate_ratio"], f"{ratio:.1%}"))
    probe = results.get("store")
    if probe:
        print("\nStoring a finished match (reactor-thread CPU ms per match: mean / p99 / max)")
        worst = 0.0
        for name, r in probe.items():
            f, c, t, w = r["finish_ms"], r["callbacks_ms"], r["reactor_ms"], r["wall_ms"]
            print(
                f"  {name:<7} {r['records']} records x {r['moves_per_record']} moves: finish() {f['mean']:.2f} / {f['p99']:.2f} / {f['max']:.2f}; "
                f"stored+end callbacks {c['mean']:.2f} / {c['p99']:.2f} / {c['max']:.2f}; all reactor work {t['mean']:.2f} / "
                f"{t['p99']:.2f} / {t['max']:.2f}; wall time to the end event {w['mean']:.1f} / {w['p99']:.1f} ms; "
                f"reactor lateness (1 ms heartbeat, worst per match, p50 / max) while storing {r['stall_ms']['p50']:.1f} / "
                f"{r['stall_ms']['max']:.1f} ms, idle {r['stall_idle_ms']['p50']:.1f} / {r['stall_idle_ms']['max']:.1f} ms"
            )
            worst = max(worst, t["p99"])
        verdicts.append(("storing a finished match <= 5 ms of reactor time (p99 of all reactor work)", worst <= TARGETS["store_reactor_ms"], f"{worst:.2f} ms"))
    if load:
        warn_if_disturbed((w["other_cpu"] for w in (load["without"], load["with"])), during=" during a window")
    print_targets(verdicts)
    return verdicts


# --- main ------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=50, help="concurrent Kalaha games [%(default)s]")
    p.add_argument("--spectators", type=int, default=100, help="SSE spectators spread over the games [%(default)s]")
    p.add_argument("--seconds", type=float, default=20.0, help="measurement window per phase [%(default)s]")
    p.add_argument("--warmup", type=float, default=3.0, help="warm-up before each window [%(default)s]")
    p.add_argument("--pace-min", type=float, default=0.10, help="least delay YOURMOVE -> move, s [%(default)s]")
    p.add_argument("--pace-max", type=float, default=0.20, help="most delay YOURMOVE -> move, s [%(default)s]")
    p.add_argument("--records", type=int, default=200, help="records per kind in the store probe [%(default)s]")
    p.add_argument("--game-timeout", type=float, default=60.0, help="longest a game may take, s [%(default)s]")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--smoke", action="store_true", help="a few seconds: 10 games, 20 spectators, 2 s windows, 20 records")
    p.add_argument("--skip-load", action="store_true", help="only the store probe")
    p.add_argument("--skip-store", action="store_true", help="no store probe")
    p.add_argument("--quiet-wait", type=float, default=20.0, help="wait up to this long for an idle machine first [%(default)s]")
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemon and the load generator to CPUs")
    p.add_argument("--nice", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--keep-logs", action="store_true")
    args = p.parse_args(argv)
    if args.smoke:
        args.games, args.spectators, args.seconds, args.warmup, args.records, args.quiet_wait = 10, 20, 2.0, 1.0, 20, 0
    if args.games < 1 or args.spectators < 0 or args.seconds <= 0 or not 0 <= args.pace_min <= args.pace_max:
        p.error("need --games >= 1, --spectators >= 0, --seconds > 0, 0 <= --pace-min <= --pace-max")
    return args


def main(argv=None) -> int:
    if "--store-probe" in (argv if argv is not None else sys.argv[1:]):
        return store_probe(argv if argv is not None else sys.argv[1:])
    args = parse_args(argv)
    exit_on_sigterm()
    import_work_tree()  # for the daemon and the store probe
    pinned = choose_cpus(args)
    results: dict = {"machine": machine(gamed_version()), "args": {}}
    logdir = tempfile.mkdtemp(prefix=PREFIX + "-")
    args.logdir = logdir
    t_start = perf()

    def body() -> int:
        raise_nofile(2 * args.games + args.spectators + 200)
        if pinned:
            os.sched_setaffinity(0, {args.client_cpu})
        args.sched = set_priority(args.nice)
        results["args"] = {k: v for k, v in vars(args).items()}
        results["quiet"] = wait_quiet(args.quiet_wait)
        if not args.skip_load:
            print(f"web: {args.games} Kalaha games, {args.spectators} SSE spectators ...", flush=True)
            with daemon(args) as server:
                results["load"] = asyncio.run(run_load(args, server))
        if not args.skip_store:
            print(f"store: {args.records} Kalaha and {args.records} Virtual Fight records ...", flush=True)
            results["store"] = run_store_probe(args)
        note_code_change(results["machine"], gamed_version())
        return finish(results, report(results), t_start, args.json)

    return guarded("web_load", body, lambda: stop_all(logdir, args.keep_logs, "server"))


if __name__ == "__main__":
    sys.exit(main())
