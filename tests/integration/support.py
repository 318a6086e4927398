"""Real daemons and real TCP clients for integration tests: ``spawn``/``run`` a ``twistd -n gamed`` of
this checkout, ``connect`` a ``LineClient``, and bound every wait with ``with_timeout``."""

from __future__ import annotations

import collections
import os
import pathlib
import re
import signal
import sys

from twisted.internet import defer, endpoints, protocol, reactor
from twisted.internet.error import ConnectionDone, ProcessDone
from twisted.protocols.basic import LineOnlyReceiver

from gamed.ports import parse_ready_line

ROOT = pathlib.Path(__file__).resolve().parents[2]
TWISTD = str(pathlib.Path(sys.executable).with_name("twistd"))
TWIST = str(pathlib.Path(sys.executable).with_name("twist"))

def child_env(**extra: str) -> dict[str, str]:
    """The environment for a daemon run from this checkout (plugin found through PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LISTEN_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def ready_ports(text: str) -> dict[str, list[tuple[str, int]]] | None:
    """The ports of the daemon's ready line in ``text`` (``{"kalaha": [(host, port)], ...}``), or
    None before it has logged one."""
    for line in text.splitlines():
        found = parse_ready_line(line)
        if found is not None:
            return found
    return None


class Daemon(protocol.ProcessProtocol):
    """A gamed daemon process: its output, the ports it listens on (from its ``gamed ready: ...``
    line, logged once every port listens), its exit. ``listening`` fires with the ready line and
    fails if it lists fewer than ``expect_ports`` ports."""

    def __init__(self, expect_ports: int = 1):
        self.output = bytearray()
        self.ports: dict[str, int] = {}  # the first port of each option: "kalaha", "web", "fight-gui" ...
        self.addresses: dict[str, list[tuple[str, int]]] = {}  # every port of each option
        self.expect_ports = expect_ports
        self._scanned = 0
        self.listening = defer.Deferred()
        self.ended = defer.Deferred()
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self.exited = False
        self.pid: int | None = None

    @property
    def port(self) -> int:
        return self.ports["kalaha"]

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def connectionMade(self):  # noqa: N802
        self.pid = self.transport.pid

    def outReceived(self, data):  # noqa: N802
        self.output += data
        if self.listening.called:
            return
        end = self.output.rfind(b"\n") + 1  # complete lines only
        found = ready_ports(self.output[self._scanned : end].decode("utf-8", "replace"))
        self._scanned = end
        if found is None:
            return
        self.addresses = found
        self.ports = {option: where[0][1] for option, where in found.items()}
        listed = sum(len(where) for where in found.values())
        if listed < self.expect_ports:
            self.listening.errback(RuntimeError(f"the daemon listens on {listed} ports, not {self.expect_ports}:\n{self.text}"))
        else:
            self.listening.callback(self)

    errReceived = outReceived

    def processEnded(self, reason):  # noqa: N802
        self.exited = True
        self.exit_code = 0 if reason.check(ProcessDone) else reason.value.exitCode
        self.exit_signal = None if reason.check(ProcessDone) else reason.value.signal
        if not self.listening.called:
            self.listening.errback(RuntimeError(f"daemon exited ({self.exit_code}) before listening:\n{self.text}"))
        self.ended.callback(self.exit_code)

    @property
    def clean_exit(self) -> bool:
        """Exit 0, or death by the SIGTERM twistd re-raises after a clean shutdown."""
        return self.exit_code == 0 or self.exit_signal == signal.SIGTERM

    def signal(self, name: str) -> None:
        if not self.exited:
            self.transport.signalProcess(name)

    async def stop(self, timeout: float = 15) -> bool:
        """SIGTERM, then wait for the exit (SIGKILL after ``timeout``); True for a clean exit."""
        if not self.exited:
            self.signal("TERM")
            killer = reactor.callLater(timeout, self.signal, "KILL")
            await self.ended
            if killer.active():
                killer.cancel()
        return self.clean_exit


def spawn(args, executable=TWISTD, env=None, expect_ports=1, child_fds=None) -> Daemon:
    """Start ``executable`` with ``args`` in the checkout; no waiting."""
    daemon = Daemon(expect_ports)
    reactor.spawnProcess(
        daemon,
        args[0] if executable is None else executable,
        ([] if executable is None else [executable]) + list(args),
        env=env or child_env(),
        path=str(ROOT),
        childFDs=child_fds,
    )
    return daemon


LOOPBACK = "tcp:0:interface=127.0.0.1"
FLAG_AI = ROOT / "tests" / "web" / "flag_ai.py"


def flag_capture_config(directory: pathlib.Path) -> pathlib.Path:
    """A config file whose Stratego tournament (played at start-up) is two games, each won by RED
    on its first move by taking BLUE's flag (tests/web/flag_ai.py plays both sides): real stored
    Stratego matches in a moment."""
    path = directory / "gamed.conf"
    command = f"{sys.executable} {FLAG_AI}"
    path.write_text(
        f"""
[stratego]
rounds = 1
games = 2
state_dir = "{directory / 'stratego'}"
[stratego.ai.taker]
command = "{command}"
[stratego.ai.keeper]
command = "{command}"
"""
    )
    return path


def gamed_args(*extra: str, kalaha: str = LOOPBACK, fight: str = "none", fight_gui: str = "none") -> list[str]:
    """twistd arguments for a daemon serving the given ports only (``none`` = off)."""
    ports = ["--kalaha", kalaha, "--fight", fight, "--fight-gui", fight_gui]
    if "--combat" not in extra:
        ports += ["--combat", "none"]
    if "--connect4" not in extra:
        ports += ["--connect4", "none"]
    if "--combat-text" not in extra:
        ports += ["--combat-text", "none"]
    if "--web" not in extra:
        ports += ["--web", "none"]
    if "--generic" not in extra:
        ports += ["--generic", "none"]
    if "--records" not in extra:
        ports += ["--records", "none"]  # tests that want records name a database in a temporary directory
    if "--combat-records" not in extra:
        ports += ["--combat-records", ""]  # tests that want records name a temporary directory
    return ["--nodaemon", "--pidfile=", "gamed", *ports, *extra]


async def with_timeout(d: defer.Deferred, seconds: float, what: str):
    """Await ``d`` but fail the test after ``seconds`` (every wait in these tests is bounded)."""
    d.addTimeout(seconds, reactor)
    try:
        return await d
    except defer.TimeoutError:
        raise AssertionError(f"timed out after {seconds} s waiting for {what}") from None


class LineClient(LineOnlyReceiver):
    """A test client: ``await next_line()``, ``send(text)``, ``await closed``."""

    delimiter = b"\r\n"
    MAX_LENGTH = 1 << 20

    def __init__(self):
        self.lines: collections.deque[str] = collections.deque()
        self.waiters: collections.deque[defer.Deferred] = collections.deque()
        self.closed = defer.Deferred()
        self.raw = bytearray()

    def dataReceived(self, data):  # noqa: N802
        self.raw += data
        super().dataReceived(data)

    def lineReceived(self, line):  # noqa: N802
        text = line.decode("ascii")
        if self.waiters:
            self.waiters.popleft().callback(text)
        else:
            self.lines.append(text)

    def connectionLost(self, reason=None):  # noqa: N802
        while self.waiters:
            self.waiters.popleft().errback(ConnectionDone("closed while waiting for a line"))
        if not self.closed.called:
            self.closed.callback(None)

    def send(self, *lines: str) -> None:
        self.transport.write(b"".join(line.encode("ascii") + b"\r\n" for line in lines))

    def next_line(self, timeout: float = 10) -> defer.Deferred:
        if self.lines:
            return defer.succeed(self.lines.popleft())
        if self.closed.called:
            return defer.fail(ConnectionDone("connection closed"))
        d = defer.Deferred()
        self.waiters.append(d)

        def forget(result):
            # A waiter that timed out must not swallow the line that comes after it.
            if d in self.waiters:
                self.waiters.remove(d)
            return result

        d.addTimeout(timeout, reactor)
        d.addErrback(forget)
        return d

    async def expect(self, keyword: str, timeout: float = 10) -> str:
        """Skip lines until one starts with ``keyword``; return it."""
        while True:
            line = await self.next_line(timeout)
            if line.split(" ", 1)[0] == keyword:
                return line

    async def expect_prefix(self, prefix: str, timeout: float = 10) -> str:
        """Skip lines until one starts with ``prefix``; return it."""
        while True:
            line = await self.next_line(timeout)
            if line.startswith(prefix):
                return line

    async def wait_closed(self, timeout: float = 10) -> None:
        await with_timeout(self.closed, timeout, "the server to close the connection")


async def connect(port: int, host: str = "127.0.0.1") -> LineClient:
    endpoint = endpoints.TCP4ClientEndpoint(reactor, host, port, timeout=10)
    return await endpoints.connectProtocol(endpoint, LineClient())


async def take_seats(table: str, *clients: LineClient, before: tuple[str, ...] = ()) -> None:
    """Send ``before`` and ``TABLE <table>`` from each client in turn, each once the one before it
    is seated (its ``OK TABLE``): the first client is then the table's first player, whatever the
    load on the machine (two lines sent back to back may reach the server in either order)."""
    for client in clients:
        client.send(*before, f"TABLE {table}")
        await client.expect_prefix("OK TABLE")


async def run(args, executable=TWISTD, env=None, timeout: float = 30) -> tuple[int, str]:
    """Run a command to its end; returns (exit code, output)."""
    proc = spawn(args, executable=executable, env=env)
    proc.listening.addErrback(lambda f: None)
    killer = reactor.callLater(timeout, proc.signal, "KILL")
    code = await proc.ended
    if killer.active():
        killer.cancel()
    return code, proc.text


_TOKEN = re.compile(r"token for (\S+): ([A-Za-z0-9_-]{16,128})")


async def add_accounts(database, names) -> dict[str, str]:
    """Register ``names`` in the SQLite records ``database`` with ``gamed player add`` (the
    returns their tokens."""
    tokens = {}
    for name in names:
        code, out = await run(
            [sys.executable, "-m", "gamed.cli", "player", "add", name, "--records", f"sqlite:{database}"], executable=None
        )
        assert code == 0, out
        found = _TOKEN.search(out)
        assert found and found[1] == name, out
        tokens[name] = found[2]
    return tokens
