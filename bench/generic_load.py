"""The generic port's cost against a game's own text port: Kalaha moves, side by side in one run.

Issue 18's target: moves over the generic port cost at most 1.5 x the server CPU of the same
game's own text port. One daemon serves Kalaha on its own port and on the generic port; the
phases alternate (text, generic, text, generic...) against a fresh daemon each, so that a drift
of the machine shows as a difference between the rounds of one kind. In each phase N games run
at once between scripted bots that answer at once with a random legal pit:

- text: ``BOARD OFF``, ``TABLE t<i>``, ``MOVE <pit>`` on each ``YOURMOVE``; a finished game closes
  the connection (the Kalaha protocol's BYE) and the bot connects again;
- generic: ``{"type":"play","game":"kalaha","table":"g<i>"}``, ``{"type":"act","action":<n>}`` on
  each state that lists actions; a finished game leaves the connection open and the bot plays
  again on it.

Reported per phase: moves/s, the daemon's CPU per move (µs), the load generator's CPU; then the
ratio of the generic rounds' CPU per move to the text rounds'. ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import os
import json
import random
import select
import socket
import sys
import tempfile
import time

from common import (
    BIN, HOST, BenchError, CpuWindow, Server, choose_cpus, exit_on_sigterm, fmt, gamed_version, guarded, machine, ports_only,
    print_machine, stop_all,
)

perf = time.perf_counter


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def daemon(args) -> Server:
    kalaha, generic = free_ports(2)
    argv = [
        str(BIN / "twistd"), "-n", "--pidfile=", "gamed",
        *ports_only(kalaha=f"tcp:port={kalaha}:interface={HOST}", generic=f"tcp:port={generic}:interface={HOST}"),
        "--max-per-peer", "0", "--max-connections", "0", "--line-rate", "0", "--kalaha-pair-delay", "0",
    ]  # fmt: skip
    server = Server("gamed", argv, "gamed ready", args.server_cpu, args.logdir)
    server.ports = {"text": kalaha, "generic": generic}
    return server


class Bot:
    """One player: its socket, what it has read but not handled, and how it answers."""

    def __init__(self, gen: LoadGen, kind: str, table: str):
        self.gen, self.kind, self.table = gen, kind, table
        self.buf = b""
        self.sock: socket.socket | None = None
        self.connect()

    def connect(self) -> None:
        sock = socket.create_connection((HOST, self.gen.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self.sock = sock
        self.buf = b""
        self.gen.register(self)
        if self.kind == "text":
            self.send(f"BOARD OFF\r\nTABLE {self.table}\r\n")
        else:
            self.play()

    def play(self) -> None:
        self.send(json.dumps({"type": "play", "game": "kalaha", "table": self.table}) + "\n")

    def send(self, text: str) -> None:
        self.sock.sendall(text.encode("ascii"))

    def readable(self) -> None:
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except ConnectionError:
            data = b""
        if not data:
            self.gen.unregister(self)
            self.sock.close()
            self.connect()
            return
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self.line(line.rstrip(b"\r"))

    def line(self, line: bytes) -> None:
        rng = self.gen.rng
        if self.kind == "text":
            if line.startswith(b"YOURMOVE"):
                pits = line.split()[2:]
                self.send(f"MOVE {rng.choice(pits).decode()}\r\n")
                self.gen.moves += 1
            return
        if b'"actions"' in line:
            message = json.loads(line)
            if message["type"] == "state" and message.get("actions"):
                self.send(json.dumps({"type": "act", "action": rng.randrange(len(message["actions"]))}) + "\n")
                self.gen.moves += 1
        elif line.startswith(b'{"type":"ended"'):
            self.play()


class LoadGen:
    def __init__(self, port: int, seed: int):
        self.port = port
        self.rng = random.Random(seed)
        self.poll = select.epoll()
        self.bots: dict[int, Bot] = {}
        self.moves = 0

    def register(self, bot: Bot) -> None:
        self.bots[bot.sock.fileno()] = bot
        self.poll.register(bot.sock.fileno(), select.EPOLLIN)

    def unregister(self, bot: Bot) -> None:
        self.poll.unregister(bot.sock.fileno())
        del self.bots[bot.sock.fileno()]

    def run(self, seconds: float) -> None:
        end = perf() + seconds
        while perf() < end:
            for fd, _ in self.poll.poll(0.05):
                bot = self.bots.get(fd)
                if bot is not None:
                    bot.readable()


def started(args) -> Server:
    """A fresh daemon; its free ports may be taken by another program meanwhile: try again."""
    for attempt in range(3):
        try:
            return daemon(args).start()
        except BenchError as e:
            if "Address already in use" not in str(e) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def phase(args, kind: str) -> dict:
    server = started(args)
    try:
        gen = LoadGen(server.ports[kind], args.seed)
        for i in range(args.games):
            table = f"{kind[0]}{i}"
            Bot(gen, kind, table)
            Bot(gen, kind, table)
        gen.run(args.warmup)
        gen.moves = 0
        window = CpuWindow(server)
        gen.run(args.window)
        window.stop()
        moves = gen.moves
        server.check()
    finally:
        server.stop()
    if not moves:
        raise RuntimeError(f"no {kind} moves were played:\n{server.tail()}")
    return {
        "kind": kind, "moves": moves, "moves_per_s": moves / window.wall,
        "server_us_per_move": window.server_cpu / moves * 1e6, "server_cpu": window.server_cpu / window.wall,
        "client_cpu": window.client_cpu / window.wall,
    }


def main(argv=None) -> int:
    return guarded("generic_load", lambda: _main(argv))


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=100, help="concurrent games per phase [%(default)s]")
    p.add_argument("--rounds", type=int, default=2, help="rounds of (text, generic) [%(default)s]")
    p.add_argument("--window", type=float, default=5.0, help="seconds measured per phase [%(default)s]")
    p.add_argument("--warmup", type=float, default=1.5, help="seconds before each window [%(default)s]")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-pin", action="store_true", help="do not pin the daemon and this process to CPUs")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    args = p.parse_args(argv)
    args.logdir = tempfile.mkdtemp(prefix="gamed-bench-generic-")
    try:
        return _run(args)
    finally:
        stop_all(args.logdir, keep_logs=False)


def _run(args) -> int:
    if choose_cpus(args):
        os.sched_setaffinity(0, {args.client_cpu})
    exit_on_sigterm()
    info = machine(gamed_version())
    print_machine(info)
    results = []
    for r in range(args.rounds):
        for kind in ("text", "generic"):
            res = phase(args, kind)
            results.append(res)
            print(f"round {r + 1} {kind:8s} {args.games} games: {res['moves_per_s']:8.0f} moves/s, "
                  f"server {fmt(res['server_us_per_move'], 1)} us/move (cpu {res['server_cpu']:.0%}), "
                  f"client cpu {res['client_cpu']:.0%}")
    text = [r["server_us_per_move"] for r in results if r["kind"] == "text"]
    generic = [r["server_us_per_move"] for r in results if r["kind"] == "generic"]
    ratio = (sum(generic) / len(generic)) / (sum(text) / len(text))
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"generic / text server CPU per move: {ratio:.2f} (target <= 1.5: {verdict})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "phases": results, "ratio": ratio}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
