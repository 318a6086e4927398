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

    python bench/textline_held.py [--lines 20000] [--rev REV]
"""

from __future__ import annotations

import argparse
import importlib.util
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rev", default=None, help="measure gamed/textline.py of this git revision")
    args = parser.parse_args()
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
