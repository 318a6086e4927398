"""GGZ Combat flood benchmark: what clients that send as fast as they can and never read cost
the daemon and the other players (issue 13, item 1).

The daemon (the work tree's gamed with only --combat and --combat-text on loopback ports) is
started by the script and always killed at the end. A probe player, seated at a table with a
partner, sends REQ_SYNC and waits for its MSG_SYNC, one at a time (every --probe-every seconds);
its round trip is the latency measured. Phases, each at most --phase seconds:

- quiet: the probe alone;
- sync flood: a client on the binary port hosts a table (the Default map, so each MSG_SYNC carries
  the board) and sends REQ_SYNC --syncs times, reading nothing (receive buffer 4 KiB);
- help flood: a client on the handshake port sends HELP --helps times, reading nothing;
- each flood is followed by a quiet phase ("after").

Measured per phase: probe round trips (p50/p99/max, count), daemon RSS (peak and at the end),
daemon CPU, whether and when the daemon dropped the flooder, and the time from connecting to the
MSG_SEAT of a new player who arrives in the middle of the phase. Exit status 0 whatever the
figures, 2 when the daemon cannot start.
"""

from __future__ import annotations

import argparse
import errno
import os
import select
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BIN, HOST, READY, ROOT, BenchError, Server, pct, ports_only, ready_ports  # noqa: E402

sys.path.insert(0, str(ROOT))
from gamed.combat import wire  # noqa: E402
from gamed.combat.maps import shipped_maps  # noqa: E402

CHUNK = 1 << 16
TCP_ESTABLISHED = 1  # tcpi_state in Linux's struct tcp_info


class Probe:
    """A seated player that measures REQ_SYNC -> MSG_SYNC round trips, one at a time."""

    def __init__(self, port: int):
        self.sock = socket.create_connection((HOST, port), timeout=10)
        self.sock.setblocking(False)
        self.parser = wire.ClientParser()
        self.sent_at: float | None = None
        self.times: list[float] = []

    def send_sync(self) -> None:
        self.sock.sendall(wire.encode_client(wire.ReqSync()))
        self.sent_at = time.perf_counter()

    def readable(self) -> None:
        data = self.sock.recv(CHUNK)
        if not data:
            raise BenchError("the probe's connection was closed")
        for message in self.parser.feed(data):
            if isinstance(message, wire.MsgSync) and self.sent_at is not None:
                self.times.append(time.perf_counter() - self.sent_at)
                self.sent_at = None


class Flooder:
    """Sends ``payload`` as fast as the daemon takes it and never reads."""

    def __init__(self, port: int, payload: bytes):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((HOST, port))
        self.sock.setblocking(False)
        self.payload = memoryview(payload)
        self.sent = 0
        self.dropped_at: float | None = None

    @property
    def busy(self) -> bool:
        return self.dropped_at is None and self.sent < len(self.payload)

    def writable(self) -> None:
        try:
            self.sent += self.sock.send(self.payload[self.sent : self.sent + CHUNK])
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return
            self.dropped_at = time.perf_counter()  # reset by the daemon

    def poll_dropped(self) -> None:
        """Notice a reset or close by the daemon even once everything is sent: the socket's TCP
        state is no longer ESTABLISHED."""
        if self.dropped_at is None and self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] != TCP_ESTABLISHED:
            self.dropped_at = time.perf_counter()


def first_reply(port: int) -> float:
    """Seconds from connecting to the first message (MSG_SEAT) of a new binary-port player."""
    t0 = time.perf_counter()
    with socket.create_connection((HOST, port), timeout=10) as s:
        s.recv(4)
        return time.perf_counter() - t0


def run_phase(name, server, probe, drains, flooder, seconds, every, port) -> dict:
    rss = [server.rss_kb()]
    cpu0 = server.cpu_seconds()
    probe.times = []
    t0 = time.perf_counter()
    next_probe = t0
    next_rss = t0 + 0.1
    newcomer = None
    while True:
        now = time.perf_counter()
        if now - t0 > seconds or (flooder is not None and flooder.dropped_at is not None and newcomer is not None):
            break
        if newcomer is None and now - t0 > min(1.0, seconds / 2):
            newcomer = first_reply(port)
        if probe.sent_at is None and now >= next_probe:
            probe.send_sync()
            next_probe = now + every
        if now >= next_rss:
            rss.append(server.rss_kb())
            next_rss = now + 0.1
            if flooder is not None:
                flooder.poll_dropped()
        readers = [probe.sock, *drains]
        writers = [flooder.sock] if flooder is not None and flooder.busy else []
        r, w, _ = select.select(readers, writers, [], 0.005)
        for sock in r:
            if sock is probe.sock:
                probe.readable()
            else:
                sock.recv(CHUNK)
        if w:
            flooder.writable()
    elapsed = time.perf_counter() - t0
    times = sorted(probe.times) or [float("nan")]
    result = {
        "phase": name,
        "seconds": elapsed,
        "probes": len(probe.times),
        "p50_ms": statistics.median(times) * 1e3,
        "p99_ms": pct(times, 99) * 1e3,
        "max_ms": times[-1] * 1e3,
        "rss_peak_mb": max(rss) / 1024,
        "rss_end_mb": server.rss_kb() / 1024,
        "cpu_s": server.cpu_seconds() - cpu0,
        "newcomer_ms": None if newcomer is None else newcomer * 1e3,
    }
    if flooder is not None:
        result["sent_mb"] = flooder.sent / 2**20
        result["dropped_after_s"] = None if flooder.dropped_at is None else flooder.dropped_at - t0
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--syncs", type=int, default=500_000, help="REQ_SYNC messages of the sync flood [500000]")
    parser.add_argument("--helps", type=int, default=400_000, help="HELP lines of the help flood [400000]")
    parser.add_argument("--phase", type=float, default=6.0, help="longest phase, in seconds [6]")
    parser.add_argument("--probe-every", type=float, default=0.01, help="seconds between probe round trips [0.01]")
    args = parser.parse_args()
    logdir = tempfile.mkdtemp(prefix="combat-flood-")
    argv = [str(BIN / "twistd"), "--nodaemon", "--pidfile=", "gamed", *ports_only(combat="tcp:0:interface=127.0.0.1", combat_text="tcp:0:interface=127.0.0.1"), "--max-per-peer", "0"]
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + env_path if env_path else "")
    server = Server("gamed", argv, READY, None, logdir)
    try:
        server.start()
        ports = ready_ports(server.log_path)
        probe = Probe(ports["combat"])
        partner = socket.create_connection((HOST, ports["combat"]), timeout=10)
        partner.setblocking(False)
        time.sleep(0.2)
        default = shipped_maps()["Default"]
        phases = [("quiet", None)]
        phases.append(("sync flood", (ports["combat"], wire.encode_client(wire.HostOptions.of(default)) + wire.encode_client(wire.ReqSync()) * args.syncs)))
        phases.append(("after", None))
        phases.append(("help flood", (ports["combat-text"], b"HELP\r\n" * args.helps)))
        phases.append(("after", None))
        results = []
        for name, flood in phases:
            flooder = None if flood is None else Flooder(*flood)
            results.append(run_phase(name, server, probe, [partner], flooder, args.phase, args.probe_every, ports["combat"]))
            if flooder is not None:
                flooder.sock.close()
        log = server.log_path.read_text(errors="replace")
        print(f"GGZ Combat flood benchmark: {args.syncs} REQ_SYNC, {args.helps} HELP, phases <= {args.phase:g} s")
        for r in results:
            line = (
                f"  {r['phase']:<11} {r['seconds']:5.1f} s  probe p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.2f} ms"
                f" max {r['max_ms']:.1f} ms ({r['probes']})  RSS peak {r['rss_peak_mb']:.1f} MB end {r['rss_end_mb']:.1f} MB"
                f"  CPU {r['cpu_s']:.2f} s  new player {r['newcomer_ms']:.1f} ms"
            )
            if "sent_mb" in r:
                dropped = "not dropped" if r["dropped_after_s"] is None else f"dropped after {r['dropped_after_s']:.2f} s"
                line += f"  flooder sent {r['sent_mb']:.2f} MB, {dropped}"
            print(line)
        print(f"  daemon log: {log.count('cut off:')} 'cut off' lines")
    except BenchError as e:
        print(f"combat_flood: {e}", file=sys.stderr)
        return 2
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
