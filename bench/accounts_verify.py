"""What a login's token check costs (gamed.accounts), and that it does not stall the reactor.

In one process, on the real reactor and a SQLite records database in a temporary directory:

- hash: ``hash_token`` (scrypt, N = 2^14, r = 8, p = 1) timed ``--hashes`` times in a row;
- logins: ``--logins`` calls of ``AccountStore.verify`` with ``--concurrency`` of them in flight
  at once (of which ``--hashes-at-once`` hash at the same time, 1 as in the daemon), a third each with the right token, a wrong token and an unknown name (all three cost
  one hash), while a 5 ms ``LoopingCall`` measures how late the reactor runs it (what a game's
  timer or a connection's line would wait);
- malformed: as many verifies with strings that are no token (refused without hashing).

Every wait is bounded (the run stops after 300 s).

    python bench/accounts_verify.py [--hashes 20] [--logins 300] [--concurrency 10] [--hashes-at-once 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twisted.internet import defer, task  # noqa: E402

from gamed.accounts import AccountStore, LoginRefused, hash_token, new_token  # noqa: E402
from gamed.records import RecordStore  # noqa: E402

perf = time.perf_counter
TICK = 0.005


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class LagProbe:
    """How late a 5 ms LoopingCall runs while something else happens."""

    def __init__(self, reactor):
        self.lags: list[float] = []
        self._last = perf()
        self._call = task.LoopingCall(self._tick)
        self._call.clock = reactor

    def _tick(self):
        now = perf()
        self.lags.append(max(0.0, now - self._last - TICK))
        self._last = now

    def start(self):
        self._last = perf()
        self._call.start(TICK, now=False)

    def stop(self):
        self._call.stop()


async def run_logins(reactor, store, attempts, concurrency):
    """Run ``attempts`` [(name, token, expect_ok)] with ``concurrency`` at once -> (seconds, ok, refused)."""
    ok = refused = 0
    queue = list(attempts)

    async def worker():
        nonlocal ok, refused
        while queue:
            name, token, good = queue.pop()
            try:
                await store.verify(name, token)
                assert good, name
                ok += 1
            except LoginRefused:
                assert not good, name
                refused += 1

    start = perf()
    await defer.gatherResults([defer.ensureDeferred(worker()) for _ in range(concurrency)])
    return perf() - start, ok, refused


async def main(reactor, args):
    watchdog = reactor.callLater(300, lambda: (print("bench: gave up after 300 s", file=sys.stderr), os._exit(1)))
    token = new_token()
    times = []
    for _ in range(args.hashes):
        start = perf()
        hash_token(token)
        times.append(perf() - start)
    print(f"hash_token: {args.hashes} in a row: median {statistics.median(times) * 1000:.1f} ms, min {min(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms")

    directory = tempfile.mkdtemp(prefix="gamed-bench-accounts-")
    records = RecordStore(os.path.join(directory, "gamed.sqlite"), reactor)
    await records.start()
    store = AccountStore(records, reactor, hashes_at_once=args.hashes_at_once)
    tokens = {}
    for i in range(10):
        _, tokens[f"player{i}x"] = await store.add(f"player{i}x")
    names = sorted(tokens)
    attempts = []
    for i in range(args.logins):
        name = names[i % len(names)]
        kind = i % 3
        if kind == 0:
            attempts.append((name, tokens[name], True))
        elif kind == 1:
            attempts.append((name, new_token(), False))
        else:
            attempts.append((f"nobody{i}", tokens[name], False))

    for label, batch in (("logins", attempts), ("malformed", [(a[0], "x" * 31, False) for a in attempts])):
        probe = LagProbe(reactor)
        probe.start()
        seconds, ok, refused = await run_logins(reactor, store, batch, args.concurrency)
        probe.stop()
        lags = probe.lags or [0.0]
        print(
            f"{label}: {len(batch)} verifies ({ok} accepted, {refused} refused), {args.concurrency} at once: "
            f"{seconds:.2f} s = {len(batch) / seconds:.0f}/s; reactor lag of a 5 ms timer: "
            f"median {statistics.median(lags) * 1000:.1f} ms, p99 {pct(lags, 0.99) * 1000:.1f} ms, max {max(lags) * 1000:.1f} ms"
        )
    await records.close()
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; Python {sys.version.split()[0]}")
    watchdog.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hashes", type=int, default=20)
    parser.add_argument("--logins", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--hashes-at-once", type=int, default=1, help="AccountStore(hashes_at_once=...): 1 as the daemon")
    options = parser.parse_args()
    task.react(lambda reactor: defer.ensureDeferred(main(reactor, options)))
