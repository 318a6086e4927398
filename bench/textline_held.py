"""CPU per line of the shared text-line framing (gamed.textline) while the line rate holds lines back,
against the same lines sent at a pace the rate allows (issue 13, item 2).

No sockets and no real time: one ``TextLineProtocol`` that answers ``PONG`` to every line, on a
``StringTransport`` and a ``task.Clock``, so the figures are the framing's own cost (the syscalls of
a real connection come on top). Three cases, each a bounded number of lines:

- held: N ``PING`` lines in one write, released by the rate (1000 lines/s after a burst of 1000)
  as the clock advances 1 ms at a time (the rate's timer fires once a token is back, as a
  reactor runs it);
- paced: the same N lines, one write each, 1 ms apart (never held);
- blank: 100,000 bare newlines in 64 KiB writes.

``--rev REV`` measures ``gamed/textline.py`` as it is in git revision REV (e.g. ``main``, before the
fix) instead of the checkout's.

``--daemon`` measures the same cases against a real daemon (Kalaha on loopback, the checkout's
code, or with ``--rev`` the whole tree of REV): the daemon's CPU (``/proc/<pid>/stat``) per line for
N ``PING`` lines in one write (held by the rate) against 2,000 sent one at a time, each after the
answer to the one before; and for 100,000 bare newlines then a close, the daemon's CPU and the time
until it has freed the connection (with ``--max-per-peer 1``, a new connection is greeted instead
of refused). Every wait is bounded (120 s).

    python bench/textline_held.py [--lines 20000] [--rev REV] [--daemon]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twisted.internet.task import Clock  # noqa: E402
from twisted.internet.testing import StringTransport  # noqa: E402

from gamed.config import Limits  # noqa: E402


def textline_module(rev: str | None):
    """gamed.textline from the checkout, or as it is in git revision ``rev``."""
    if rev is None:
        import gamed.textline

        return gamed.textline
    source = subprocess.run(
        ["git", "show", f"{rev}:gamed/textline.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "textline_at_rev.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("textline_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def connection(textline, limits: Limits):
    class Pong(textline.TextLineProtocol):
        answered = 0

        def on_line(self, text):
            self.answered += 1
            self.send_lines(["PONG"])

    clock = Clock()
    proto = Pong(limits, clock)
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport, clock


def held(textline, n: int) -> float:
    proto, transport, clock = connection(textline, Limits(idle_timeout=0))
    start = time.process_time()
    proto.dataReceived(b"PING\n" * n)
    for _ in range(2 * n):  # bounded: n lines need n - 1000 steps
        if proto.answered >= n:
            break
        clock.advance(0.001)
    else:
        raise RuntimeError("the held lines were not all released")
    return time.process_time() - start


def paced(textline, n: int) -> float:
    proto, transport, clock = connection(textline, Limits(idle_timeout=0))
    start = time.process_time()
    for _ in range(n):
        proto.dataReceived(b"PING\n")
        clock.advance(0.001)
    spent = time.process_time() - start
    if proto.answered != n:
        raise RuntimeError("paced lines were not all answered")
    return spent


def blank(textline, n: int = 100_000) -> float:
    proto, transport, clock = connection(textline, Limits(idle_timeout=0))
    chunk = 65_536
    start = time.process_time()
    data = b"\n" * n
    for i in range(0, n, chunk):
        proto.dataReceived(data[i : i + chunk])
    proto.dataReceived(b"PING\n")
    for _ in range(10_000):  # bounded: at the rate, 100,000 counted lines would need 2,000 steps
        if proto.answered:
            break
        clock.advance(0.05)
    return time.process_time() - start


# --- against a real daemon ---------------------------------------------------------------------

WAIT = 120.0  # seconds any one wait of the daemon cases may take


def daemon_tree(rev: str | None, scratch: str) -> Path:
    """The source tree the daemon runs: the checkout, or ``git archive REV`` unpacked."""
    if rev is None:
        return ROOT
    tree = Path(scratch) / "tree"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def start_daemon(tree: Path, scratch: str):
    from bench.common import Server, ports_only, ready_ports

    os.environ["PYTHONPATH"] = str(tree)
    twistd = str(Path(sys.executable).with_name("twistd"))
    argv = [twistd, "-n", "--pidfile=", "gamed", *ports_only(kalaha="tcp:0:interface=127.0.0.1"), "--max-per-peer", "1"]
    server = Server("gamed", argv, "gamed ready: ", None, scratch).start()
    return server, ready_ports(server.log_path)["kalaha"]


def open_client(port: int) -> tuple[socket.socket, str]:
    """A connection and its first line."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    first = b""
    while b"\n" not in first:
        chunk = sock.recv(4096)
        if not chunk:
            break
        first += chunk
    return sock, first.split(b"\r\n")[0].decode("ascii", "replace")


def read_pongs(sock: socket.socket, n: int) -> None:
    seen, rest = 0, b""
    deadline = time.monotonic() + WAIT
    while seen < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {seen} of {n} PONG lines within {WAIT:g} s")
        data = sock.recv(65536)
        if not data:
            raise RuntimeError("the daemon closed the connection")
        lines = (rest + data).split(b"\r\n")
        rest = lines.pop()  # a line cut between two reads is counted once it is complete
        seen += lines.count(b"PONG")


def daemon_cases(rev: str | None, n: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tree = daemon_tree(rev, scratch)
        server, port = start_daemon(tree, scratch)
        try:
            sock, _ = open_client(port)
            time.sleep(1)  # the greeting's INFO lines, and a quiet daemon before measuring
            sock.settimeout(1)
            try:
                while sock.recv(65536):
                    pass
            except TimeoutError:
                pass
            sock.settimeout(WAIT)
            cpu0, t0 = server.cpu_seconds(), time.monotonic()
            sock.sendall(b"PING\r\n" * n)
            read_pongs(sock, n)
            held_cpu, held_wall = server.cpu_seconds() - cpu0, time.monotonic() - t0
            paced_n = 2000
            cpu0 = server.cpu_seconds()
            for _ in range(paced_n):
                sock.sendall(b"PING\r\n")
                read_pongs(sock, 1)
            paced_cpu = server.cpu_seconds() - cpu0
            print(f"daemon held   {held_cpu * 1e6 / n:8.1f} us CPU per line ({held_cpu:.2f} s CPU, {held_wall:.1f} s)")
            print(f"daemon paced  {paced_cpu * 1e6 / paced_n:8.1f} us CPU per line (round trips)")
            print(f"daemon ratio  {held_cpu / n / (paced_cpu / paced_n):8.1f}")
            cpu0, t0 = server.cpu_seconds(), time.monotonic()
            sock.sendall(b"\n" * 100_000)
            sock.close()
            while True:  # until the daemon has seen the close: with --max-per-peer 1 it greets again
                if time.monotonic() - t0 > WAIT:
                    print(f"daemon blank  the connection was still held after {WAIT:g} s")
                    break
                probe, first = open_client(port)
                probe.close()
                if first.startswith("HELLO"):
                    print(
                        f"daemon blank  {server.cpu_seconds() - cpu0:8.2f} s CPU; the connection was freed "
                        f"after {time.monotonic() - t0:.2f} s"
                    )
                    break
                time.sleep(0.1)
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rev", default=None, help="measure gamed/textline.py of this git revision")
    parser.add_argument("--daemon", action="store_true", help="measure a real daemon instead")
    args = parser.parse_args()
    if args.daemon:
        print(f"daemon: {args.rev or 'checkout'}; {args.lines} PING lines; Python {sys.version.split()[0]}")
        daemon_cases(args.rev, args.lines)
        return
    textline = textline_module(args.rev)
    n = args.lines
    print(f"gamed/textline.py: {args.rev or 'checkout'}; {n} PING lines; Python {sys.version.split()[0]}")
    t_held, t_paced = held(textline, n), paced(textline, n)
    print(f"held   {t_held * 1e6 / n:8.1f} us CPU per line ({t_held:.2f} s)")
    print(f"paced  {t_paced * 1e6 / n:8.1f} us CPU per line ({t_paced:.2f} s)")
    print(f"ratio  {t_held / t_paced:8.1f}")
    t_blank = blank(textline)
    print(f"blank  {t_blank:8.2f} s CPU for 100,000 bare newlines and one PING answered")


if __name__ == "__main__":
    main()
