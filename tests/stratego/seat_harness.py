"""The two program seats driven the same way in a test: ``PipeHarness`` (``pipes.PipeSeat`` in a
``SelectorLoop``) and ``ReactorHarness`` (``process.ProgramSeat`` on pytest-twisted's reactor), so
that one test checks both (tests/stratego/test_program_seats.py).

pytest-twisted runs every test in the reactor's greenlet, so a test is a coroutine
(``@pytest_twisted.ensureDeferred``) that awaits ``wait(...)`` and ``play(...)``: on the reactor they
await its Deferreds; in a SelectorLoop they run the loop to the end and never suspend (the reactor
has nothing to do meanwhile).

Every wait has a hard time limit, and after every match no process of either AI's process group
may remain (not even a zombie): /proc is scanned for the group id. ``cleanup()`` kills what a
failed test left behind.
"""

from __future__ import annotations

import os
import signal
import time

from twisted.internet import defer

from gamed.children import minimal_environment
from gamed.stratego.pipes import PipeSeat, SelectorLoop, Waiter
from gamed.stratego.process import ProgramSeat
from gamed.stratego.referee import MatchOptions, StrategoReferee
from tests.stratego.puppet import group_members

UNINTELLIGIBLE = "Unintelligable response"
FLOOD = 32 << 20

# A program that tells, on its stderr, how it was started: argv[0], whether it leads its own
# process group and session, its environment's names and its working directory.
INTROSPECT = (
    "import os,sys;"
    "sys.stderr.write(repr((sys.orig_argv[0], os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid(),"
    " sorted(os.environ), os.getcwd())))"
)


def options(**kw) -> MatchOptions:
    """MatchOptions for the tests: a 10 s reply timeout (every reply arms and cancels a timer, and
    a busy machine never reaches it) and a 0.3 s grace period, unless given."""
    kw.setdefault("timeout", 10.0)
    kw.setdefault("quit_grace", 0.3)
    return MatchOptions(**kw)


class _Harness:
    """What both harnesses share: starting seats, playing a match, cleaning up."""

    kind: type  # the seat class

    def __init__(self):
        self.started: list = []

    def seat(self, argument: str, opts: MatchOptions, extra_env: dict | None = None, **kwargs):
        """A seat of this kind for ``argument``, with the minimal environment plus ``extra_env``."""
        s = self._make(argument, opts, extra_env, **kwargs)
        self.started.append(s)
        return s

    async def play(self, red, blue, opts: MatchOptions, limit: float = 15.0, on_log=None):
        """One match through the referee; returns (result, red seat, blue seat, when the result
        line was logged). Both process groups must be gone when the match is over."""
        r = red if isinstance(red, self.kind) else self.seat(red, opts)
        b = blue if isinstance(blue, self.kind) else self.seat(blue, opts)
        ended = []

        def log(line):
            if on_log is not None:
                on_log(line)
            ended.append(time.monotonic())

        result = await self.wait(self._referee(r, b, opts, log).run(), limit)
        for s in (r, b):
            if s.pid is not None:
                assert group_members(s.pid) == [], f"{s.name}: its process group survived the match"
        return result, r, b, (ended[-1] if ended else time.monotonic())

    async def stderr_of(self, argument: str, opts: MatchOptions, extra_env: dict | None = None):
        """Start ``argument``, ask for its setup and quit it; (seat, setup lines, its stderr)."""
        s, read_stderr = self._with_stderr(argument, opts, extra_env)
        lines = await self.wait(s.setup("RED", "x"))
        await self.wait(s.quit(None))
        return s, lines, read_stderr()

    def cleanup(self) -> None:
        while self.started:
            s = self.started.pop()
            if s.pid is not None:
                try:
                    os.killpg(s.pid, signal.SIGKILL)
                except OSError:
                    pass


class PipeHarness(_Harness):
    """``PipeSeat`` in a ``SelectorLoop`` of its own (one per test)."""

    kind = PipeSeat

    def __init__(self):
        super().__init__()
        self.loop = SelectorLoop()

    def _make(self, argument, opts, extra_env, **kwargs):
        return self.kind(argument, opts, self.loop, env=minimal_environment(extra_env), **kwargs)

    def _referee(self, red, blue, opts, log):
        return StrategoReferee(red, blue, opts, on_log=log, sleep=self.loop.sleep)

    def _with_stderr(self, argument, opts, extra_env):
        # The program inherits our fd 2: make that a pipe while it starts.
        read_end, write_end = os.pipe()
        saved = os.dup(2)
        os.dup2(write_end, 2)
        try:
            s = self.seat(argument, opts, extra_env)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(write_end)

        def read() -> bytes:
            with os.fdopen(read_end, "rb") as f:
                return f.read()

        return s, read

    async def wait(self, awaitable, limit: float = 15.0):
        """Run the loop until ``awaitable`` gives its value (at most ``limit`` seconds)."""
        done = Waiter()
        out = []

        async def go():
            out.append(await awaitable)
            done.fire()

        self.loop.start(go())
        timer = self.loop.call_later(limit, done.fire)
        self.loop.run(until=done)
        timer.cancel()
        assert self.loop.failure is None, self.loop.failure
        assert out, f"nothing within {limit} s"
        return out[0]

    def call_later(self, delay: float, call):
        return self.loop.call_later(delay, call)

    @staticmethod
    def fired(awaitable) -> bool:
        return awaitable.done


class ReactorHarness(_Harness):
    """``ProgramSeat`` on pytest-twisted's reactor."""

    kind = ProgramSeat

    def __init__(self):
        from twisted.internet import reactor  # pytest-twisted's, installed at session start

        super().__init__()
        self.reactor = reactor

    def _make(self, argument, opts, extra_env, **kwargs):
        return self.kind(argument, opts, self.reactor, env=extra_env, **kwargs)

    def _referee(self, red, blue, opts, log):
        return StrategoReferee(red, blue, opts, clock=self.reactor, on_log=log)

    def _with_stderr(self, argument, opts, extra_env):
        s = self.seat(argument, opts, extra_env, stderr="capture")
        return s, lambda: s.stderr_text

    async def wait(self, awaitable, limit: float = 15.0):
        """Let the reactor run until ``awaitable`` gives its value (at most ``limit`` seconds)."""
        d = awaitable if isinstance(awaitable, defer.Deferred) else defer.ensureDeferred(awaitable)
        return await d.addTimeout(limit, self.reactor)

    def call_later(self, delay: float, call):
        return self.reactor.callLater(delay, call)

    @staticmethod
    def fired(awaitable) -> bool:
        return awaitable.called


def reset_peak_rss() -> int:
    """This process's VmRSS in KiB, after resetting its VmHWM where the kernel allows it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_kib("VmRSS")


def peak_growth(before_rss: int) -> int:
    """How far VmHWM (KiB) rose above ``before_rss``."""
    return _status_kib("VmHWM") - before_rss


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")
