"""The daemon side of a native Connect Four engine (spec connect-four §2).

``NativeEngine`` runs one native library (``engine.so``) in its own host process
(``python -m gamed.connect4.host PATH``, see :mod:`gamed.connect4.host` for the line protocol),
started with ``reactor.spawnProcess`` as the leader of a new process group with a minimal
environment. Every call returns a Deferred of the validated reply. Each request has a time limit
(``call_timeout``; ``auto_timeout`` for ``C4_AutoMove``) counted from the moment it is the oldest
unanswered one, on the injected reactor's clock. A crash, an exit, a hang past the limit, an
over-long line or a malformed reply (e.g. a column outside the board) fails the pending call and
every pending and later call with :class:`EngineFailed` (the reason says what happened), and the
host is ended: SIGTERM, on which it SIGKILLs whatever the engine forked (it is their subreaper)
and exits at once, then after ``close_grace`` SIGKILL to the host's whole tree (stopped first;
``gamed.children.end_processes``) and group; ``ended`` fires once the host has been reaped.
``close()`` ends it cleanly (``QUIT``, a grace period, then the same SIGKILL). The host has a
parent death signal and watches its input, so it never outlives the daemon, even a SIGKILLed one.

This module is deliberately independent of the Python engine interface; an adapter can wrap it.
"""

from __future__ import annotations

import collections
import os
import signal
import sys

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger

from gamed import children
from gamed.children import leader_command, minimal_environment

MAX_LINE = 4096  # bytes in one reply line from the host
STDERR_TAIL = 2048  # bytes of the host's stderr kept for failure reasons
_log = Logger(namespace="gamed.connect4.native_engine")

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class EngineFailed(Exception):
    """The native engine cannot go on; ``reason`` says why (crash, timeout, malformed answer...)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _signal_name(num) -> str:
    try:
        return signal.Signals(num).name
    except (ValueError, TypeError):
        return str(num)


class _HostProtocol(ProcessProtocol):
    def __init__(self, engine: NativeEngine):
        self.engine = engine

    def childDataReceived(self, childFD, data):
        if childFD == 1:
            self.engine._stdout(data)
        elif childFD == 2:
            self.engine._stderr(data)

    def childConnectionLost(self, childFD):
        if childFD == 1:
            self.engine._eof()

    def processEnded(self, reason):
        self.engine._process_ended(reason)


class _Request:
    __slots__ = ("line", "name", "parse", "timeout", "deferred")

    def __init__(self, line, name, parse, timeout):
        self.line, self.name, self.parse, self.timeout = line, name, parse, timeout
        self.deferred = Deferred()


class NativeEngine:
    """One native engine library in its own host process (one game at a time)."""

    def __init__(
        self,
        reactor,
        library: str,
        *,
        call_timeout: float = 5.0,
        auto_timeout: float = 10.0,
        start_timeout: float = 10.0,
        close_grace: float = 1.0,
        max_line: int = MAX_LINE,
        python: str | None = None,
        pythonpath: str | None = None,
        nice: int = 0,
        cpus: frozenset[int] | None = None,
    ):
        self._reactor = reactor
        self.library = os.path.abspath(library)
        self.call_timeout = call_timeout
        self.auto_timeout = auto_timeout
        self.start_timeout = start_timeout
        self.close_grace = close_grace
        self.max_line = max_line
        self.width: int | None = None
        self.height: int | None = None
        self.failure: EngineFailed | None = None
        self.ended: Deferred = Deferred()  # fires (None) once the host process has been reaped
        self._buffer = b""
        self._stderr_tail = b""
        self._ready = False
        self._pending: collections.deque[_Request] = collections.deque()
        self._timer = None
        self._timer_for = None
        self._has_ended = False
        self._closing = False
        self._grace_timer = None
        self._terminating = False
        env = minimal_environment({"PYTHONPATH": pythonpath or _PROJECT_ROOT, "PYTHONDONTWRITEBYTECODE": "1"})
        python = python or sys.executable
        policy = (["--nice", str(nice)] if nice else []) + (["--cpus", ",".join(map(str, sorted(cpus)))] if cpus else [])
        executable, args = leader_command([python, "-m", "gamed.connect4.host", *policy, self.library])
        self._transport = reactor.spawnProcess(
            _HostProtocol(self), executable, args, env=env, path=_PROJECT_ROOT, childFDs={0: "w", 1: "r", 2: "r"}
        )
        self.pid = self._transport.pid
        self._arm()

    # --- the ten operations ------------------------------------------------------------------

    def desc(self) -> Deferred:
        return self._call("DESC", "C4_Desc", lambda w: " ".join(w))

    def new_game(self, width: int, height: int, num: int = 0) -> Deferred:
        def parse(words):
            ok = self._bool(words)
            if ok:
                self.width, self.height = width, height
            return ok

        return self._call(f"NEWGAME {int(width)} {int(height)} {int(num)}", "C4_NewGame", parse)

    def play_move(self, player: int, column: int) -> Deferred:
        return self._call(f"PLAY {int(player)} {int(column)}", "C4_PlayMove", self._bool)

    def auto_move(self, player: int, level: int) -> Deferred:
        def parse(words):
            col = self._int(words)
            limit = self.width if self.width is not None else 16
            if not -1 <= col < limit:
                raise ValueError(f"column {col} outside -1..{limit - 1}")
            return col

        return self._call(f"AUTO {int(player)} {int(level)}", "C4_AutoMove", parse, self.auto_timeout)

    def get_state(self, x: int, y: int) -> Deferred:
        def parse(words):
            v = self._int(words)
            if v not in (-1, 0, 1):
                raise ValueError(f"state {v} is not -1, 0 or 1")
            return v

        return self._call(f"STATE {int(x)} {int(y)}", "C4_GetState", parse)

    def is_winner(self, player: int) -> Deferred:
        return self._call(f"WINNER {int(player)}", "C4_IsWinner", self._bool)

    def is_tie(self) -> Deferred:
        return self._call("TIE", "C4_IsTie", self._bool)

    def win_coords(self, player: int) -> Deferred:
        """Fires with (x1, y1, x2, y2), or None when the engine reports no line (all -1, which
        is also what the host reports if the engine leaves the outputs untouched)."""

        def parse(words):
            if len(words) != 4:
                raise ValueError("expected four coordinates")
            xy = tuple(int(w) for w in words)
            if xy == (-1, -1, -1, -1):
                return None
            if self.width is not None:
                for x, y in (xy[:2], xy[2:]):
                    if not (0 <= x < self.width and 0 <= y < self.height):
                        raise ValueError(f"coordinate ({x}, {y}) outside the board")
            return xy

        return self._call(f"WINCOORDS {int(player)}", "C4_WinCoords", parse)

    def end_game(self) -> Deferred:
        def parse(words):
            if words:
                raise ValueError("unexpected data")
            self.width = self.height = None
            return None

        return self._call("ENDGAME", "C4_EndGame", parse)

    def enum_levels(self, level: int) -> Deferred:
        """Fires with the level's name, or None if the level is not supported."""

        def parse(words):
            if not words:
                raise ValueError("empty answer")
            ok = int(words[0]) != 0
            return (" ".join(words[1:]) or f"Level {level}") if ok else None

        return self._call(f"LEVEL {int(level)}", "C4_EnumLevels", parse)

    def close(self) -> Deferred:
        """End the host (QUIT, grace period, SIGKILL); fires once it has been reaped."""
        if not self._has_ended and not self._closing:
            self._closing = True
            self._fail(EngineFailed("engine closed"), kill=False)
            try:
                self._transport.write(b"QUIT\n")
                self._transport.closeStdin()
            except Exception:  # pragma: no cover - pipe already gone
                pass
            self._grace_timer = self._reactor.callLater(self.close_grace, self._kill_tree)
        return self._when_ended()

    def kill(self, reason: str = "engine killed") -> Deferred:
        """End the host at once (SIGKILL to its process group), failing any pending call with
        ``reason``: a search still running is cancelled. Fires once the host has been reaped."""
        if not self._has_ended:
            self._closing = True
            self._fail(EngineFailed(reason))
        return self._when_ended()

    # --- parsing helpers ---------------------------------------------------------------------

    @staticmethod
    def _int(words) -> int:
        if len(words) != 1:
            raise ValueError("expected one integer")
        return int(words[0])

    def _bool(self, words) -> bool:
        return self._int(words) != 0

    # --- machinery ---------------------------------------------------------------------------

    def _when_ended(self) -> Deferred:
        d = Deferred()
        if self._has_ended:
            d.callback(None)
        else:
            self.ended.addBoth(lambda r: (d.callback(None), r)[1])
        return d

    def _call(self, line: str, name: str, parse, timeout: float | None = None) -> Deferred:
        if self.failure is not None:
            return defer.fail(self.failure)
        req = _Request(line, name, parse, self.call_timeout if timeout is None else timeout)
        self._pending.append(req)
        self._transport.write(line.encode("ascii") + b"\n")
        if self._ready and len(self._pending) == 1:
            self._arm()
        return req.deferred

    def _arm(self) -> None:
        """(Re)start the timer for what we are waiting for now: READY or the oldest request."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self.failure is not None:
            return
        if not self._ready:
            self._timer = self._reactor.callLater(self.start_timeout, self._timed_out, "start-up")
        elif self._pending:
            req = self._pending[0]
            self._timer = self._reactor.callLater(req.timeout, self._timed_out, req.name)

    def _timed_out(self, what: str) -> None:
        self._timer = None
        limit = self.start_timeout if what == "start-up" else self._pending[0].timeout
        self._fail(EngineFailed(f"{what} did not answer within {limit:g} s"))

    def _stdout(self, data: bytes) -> None:
        if self.failure is not None:
            return
        self._buffer += data
        while self.failure is None:
            nl = self._buffer.find(b"\n")
            if nl < 0:
                if len(self._buffer) > self.max_line:
                    self._fail(EngineFailed(f"reply line longer than {self.max_line} bytes"))
                return
            if nl > self.max_line:
                self._fail(EngineFailed(f"reply line longer than {self.max_line} bytes"))
                return
            line, self._buffer = self._buffer[:nl], self._buffer[nl + 1 :]
            self._line(line.decode("latin-1").rstrip("\r"))

    def _line(self, line: str) -> None:
        if not self._ready:
            if line == "READY":
                self._ready = True
                self._arm()
            elif line.startswith("ERR "):
                self._fail(EngineFailed(f"engine {os.path.basename(self.library)} failed to load: {line[4:]}"))
            else:
                self._fail(EngineFailed(f"malformed greeting from the host: {line[:80]!r}"))
            return
        if not self._pending:
            self._fail(EngineFailed(f"unexpected line from the host: {line[:80]!r}"))
            return
        req = self._pending[0]
        if line.startswith("ERR"):
            self._fail(EngineFailed(f"{req.name}: host error: {line[4:84]}"))
            return
        if not (line == "OK" or line.startswith("OK ")):
            self._fail(EngineFailed(f"{req.name}: malformed answer {line[:80]!r}"))
            return
        try:
            value = req.parse(line[3:].split())
        except ValueError as e:
            self._fail(EngineFailed(f"{req.name}: malformed answer {line[3:83]!r}: {e}"))
            return
        self._pending.popleft()
        self._arm()
        req.deferred.callback(value)

    def _stderr(self, data: bytes) -> None:
        self._stderr_tail = (self._stderr_tail + data)[-STDERR_TAIL:]

    def _eof(self) -> None:
        # Usually the process is ending: wait briefly so the reason can name the exit status or
        # signal; a host that closed its output but lives on is killed.
        if self.failure is None and not self._closing and not self._has_ended:
            if self._timer is not None and self._timer.active():
                self._timer.cancel()
            self._timer = self._reactor.callLater(0.5, self._fail, EngineFailed("engine host closed its output"))

    def _process_ended(self, reason) -> None:
        self._has_ended = True
        for t in (self._timer, self._grace_timer):
            if t is not None and t.active():
                t.cancel()
        if self.failure is None:
            value = reason.value
            sig = getattr(value, "signal", None)
            if sig is not None:
                why = f"engine process killed by signal {_signal_name(sig)}"
            else:
                why = f"engine process exited with status {getattr(value, 'exitCode', '?')}"
            tail = self._stderr_tail.decode("latin-1").strip().splitlines()
            if tail:
                why += f" ({tail[-1][:200]})"
            self._fail(EngineFailed(why), kill=False)
        self.ended.callback(None)

    def _fail(self, failure: EngineFailed, kill: bool = True) -> None:
        """Fail every pending and later call with ``failure``; SIGKILL the host group."""
        if self.failure is None:
            self.failure = failure
            if not self._closing:
                _log.info("native engine {lib}: {reason}", lib=self.library, reason=failure.reason)
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        pending, self._pending = self._pending, collections.deque()
        if kill:
            self._kill()
        for req in pending:
            req.deferred.errback(self.failure)

    def _kill(self) -> None:
        """SIGTERM: the host ends its descendants and exits; SIGKILL after ``close_grace``."""
        if self._has_ended or self._terminating:
            return
        self._terminating = True
        try:
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass
        if self._grace_timer is not None and self._grace_timer.active():
            self._grace_timer.cancel()
        self._grace_timer = self._reactor.callLater(self.close_grace, self._kill_tree)

    def _kill_tree(self) -> None:
        """SIGKILL the host, whatever it forked (in any session) and its group."""
        self._grace_timer = None
        if self._has_ended:
            return
        children.end_processes(children.process_tree(self.pid))
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                self._transport.signalProcess("KILL")
            except Exception:
                pass
