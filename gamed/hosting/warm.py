"""Sandboxes started ahead of their games, so that a hosted program's start costs one pipe write.

Making bubblewrap's namespaces takes some 4–6 ms of wall time per program here, most of it the
mount namespace, and the kernel makes them one at a time (docs/performance.md, "Hosted bots"):
paid twice per game, in the game's own time, it was most of a fast bot's game. ``WarmSandboxes``
keeps up to ``size`` sandboxes per kind started ahead: the native reaper
(gamed/hosting/reaper.c, ``--wait`` or, inside bubblewrap, ``--wait-exec``) waits in each
for its start message on stdin. A game takes one (``take``), its ``HostedProgram`` adopts the
process (it becomes the process's protocol) and writes the start message: the program's limits,
working directory, command and environment; the reaper sets the limits and runs the program
(inside bubblewrap in its own place, without it as its subreaper), so the program is what
it would have been when started for its game. The pool is refilled behind it, off the game's path.

A kind is what the sandbox was made with: whether it keeps the network (a bot that connects
itself) and the folders under /tmp its command needs; without bubblewrap there is one kind.
With bubblewrap each sandbox binds a fresh working directory made for it, which its game then
uses (bots with a persistent directory are started for their game, as before). An unused
sandbox ends after ``idle`` seconds, and all of them with the daemon (``stop``); one that ends
on its own while it waits is logged, and after three such ends in a row the pool stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from typing import Any

import attrs
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger

from gamed import children
from gamed.hosting import sandbox
from gamed.hosting.process import spawn

IDLE = 60.0  # seconds an unused sandbox waits before it is ended
_FAILURES = 3  # sandboxes in a row that end while they wait: the pool stops


@attrs.define(eq=False)
class Warm:
    """One sandbox waiting for its program."""

    key: tuple
    workdir: str | None  # the fresh working directory bound into it (bubblewrap), else None
    process: Any = None  # the reactor's process (IProcessTransport)
    expiry: Any = None  # the IDelayedCall that ends it unused
    taken: bool = False
    ending: bool = False  # ended by the pool (idle, stop), not by itself


class _Waiting(ProcessProtocol):
    """A sandbox's protocol until a program adopts its process."""

    def __init__(self, pool: WarmSandboxes, warm: Warm):
        self.pool = pool
        self.warm = warm
        self.stderr = b""

    def childDataReceived(self, fd: int, data: bytes) -> None:  # noqa: N802
        self.stderr = (self.stderr + data)[-1024:]

    def processEnded(self, reason: Any) -> None:  # noqa: N802
        self.pool._ended(self.warm, self.stderr)


class WarmSandboxes:
    """Sandboxes started ahead, up to ``size`` per kind (see the module docstring)."""

    _log = Logger()

    def __init__(self, reactor: Any, isolation: sandbox.Isolation, root: str, size: int = 2, idle: float = IDLE):
        self.reactor = reactor
        self.isolation = isolation
        self.root = root  # where the fresh directories of bubblewrapped sandboxes are made
        self.size = size
        self.idle = idle
        self.waiting: dict[tuple, list[Warm]] = {}
        self.on = size > 0 and sandbox.warm_possible()
        self._failures = 0
        self._filling: set[tuple] = set()
        self.used = 0  # programs started in a sandbox from here

    def count(self) -> int:
        """Sandboxes waiting now."""
        return sum(len(w) for w in self.waiting.values())

    def take(self, argv: tuple[str, ...], network: bool = False) -> Warm | None:
        """A waiting sandbox for ``argv``, or None (the program is started for its game); either
        way the pool of its kind is filled up behind it."""
        if not self.on:
            return None
        key = sandbox.warm_kind(self.isolation, argv, network)
        waiting = self.waiting.get(key, [])
        warm = None
        while waiting and warm is None:
            one = waiting.pop(0)
            if one.process is not None and one.process.pid is not None:
                warm = one
        if warm is not None:
            warm.taken = True
            self._failures = 0
            self.used += 1
            if warm.expiry is not None and warm.expiry.active():
                warm.expiry.cancel()
        if key not in self._filling:
            self._filling.add(key)
            self.reactor.callLater(0, self._fill, key, argv, network)
        return warm

    def fill(self, argv: tuple[str, ...], network: bool = False) -> None:
        """Start sandboxes for ``argv`` now, up to ``size`` of its kind (a tournament's bots)."""
        if self.on:
            self._fill(sandbox.warm_kind(self.isolation, argv, network), argv, network)

    def _fill(self, key: tuple, argv: tuple[str, ...], network: bool) -> None:
        self._filling.discard(key)
        waiting = self.waiting.setdefault(key, [])
        while self.on and len(waiting) < self.size:
            warm = self._start(key, argv, network)
            if warm is None:
                return
            waiting.append(warm)

    def _start(self, key: tuple, argv: tuple[str, ...], network: bool) -> Warm | None:
        workdir = None
        if self.isolation.bwrap:
            os.makedirs(self.root, mode=0o700, exist_ok=True)
            workdir = tempfile.mkdtemp(prefix="warm-", dir=self.root)
        warm = Warm(key, workdir)
        executable, args = sandbox.warm_command(self.isolation, argv, workdir or self.root, network)
        try:
            warm.process = spawn(self.reactor, _Waiting(self, warm), executable, args, children.minimal_environment())
        except OSError as e:
            self._log.warn("cannot start a sandbox ahead: {why}; hosted programs start with their games", why=e)
            self.on = False
            self._remove(workdir)
            return None
        warm.expiry = self.reactor.callLater(self.idle, self._expire, warm)
        return warm

    def _expire(self, warm: Warm) -> None:
        waiting = self.waiting.get(warm.key, [])
        if warm in waiting:
            waiting.remove(warm)
        self._end(warm)

    def _end(self, warm: Warm) -> None:
        warm.ending = True
        if warm.process is not None and warm.process.pid is not None:
            # (without bubblewrap it leads no group yet: it makes its session once told what to run)
            for kill in (os.killpg, os.kill):
                try:
                    kill(warm.process.pid, signal.SIGKILL)
                except OSError:
                    pass

    def _ended(self, warm: Warm, stderr: bytes) -> None:
        """A sandbox that no program adopted has ended."""
        waiting = self.waiting.get(warm.key, [])
        if warm in waiting:
            waiting.remove(warm)
        if warm.expiry is not None and warm.expiry.active():
            warm.expiry.cancel()
        self._remove(warm.workdir)
        if warm.ending:
            return
        self._failures += 1
        text = stderr.decode("utf-8", "replace").strip().splitlines()
        self._log.warn(
            "a sandbox started ahead ended while it waited{why}",
            why=f": {text[-1]}" if text else "",
        )
        if self._failures >= _FAILURES and self.on:
            self.on = False
            self._log.warn("{n} sandboxes started ahead ended while they waited: hosted programs start with their games", n=self._failures)

    @staticmethod
    def _remove(workdir: str | None) -> None:
        if workdir is None:
            return
        try:
            os.rmdir(workdir)
        except OSError:
            shutil.rmtree(workdir, ignore_errors=True)

    def stop(self) -> None:
        """End every waiting sandbox (the daemon stops); no more are started."""
        self.on = False
        for waiting in self.waiting.values():
            for warm in list(waiting):
                if warm.expiry is not None and warm.expiry.active():
                    warm.expiry.cancel()
                self._end(warm)
                self._remove(warm.workdir)  # (now: the reactor may stop before its end is seen)
