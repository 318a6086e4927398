"""AI programs as seats on the Twisted reactor: a subprocess speaking the UCC protocol
(ucc-stratego §5) on stdin/stdout, for the daemon's matches (tournaments, Combat's UCC seats).

``ProgramSeat`` starts the program (§2.5) through ``reactor.spawnProcess`` as the leader of its own
process group, frames its replies with ``wire.ReplyFramer`` (§5.1), times whole lines (§5.7),
bounds every buffer (§5.1, §11 rows 1 and 16), pauses the group while the other side thinks (§5.9)
and ends it with ``QUIT``, a grace period, SIGKILL to the whole group and reaping (§5.6, §11 row
2). gamed-stratego runs its one match without the reactor, with ``pipes.PipeSeat``, which behaves
the same (tests/stratego/test_process.py and test_pipes.py check both).

Process groups: ``spawnProcess`` has no pre-exec hook, so the program is started through a helper
that makes it a group leader and then execs it with ``argv[0]`` unchanged and no PATH search.
The cheapest one is util-linux ``setsid`` (about 1 ms): it execs its argument by name, which is
exact when that name is the path to run (it contains a ``/`` and is not relative to another working
directory). For a bare name, or a relative path with ``cwd``, a small Python helper does the same
(``setsid()``, then ``execv(path, argv)``) at about 15 ms, paid once per game. Either way the AI
leads a new session and process group, and has no controlling terminal.

Orphans: once an AI's leader has exited, the children it forked belong to whoever reaps orphans.
To reap them as §5.6 asks (and not rely on an init that may not reap at all), the first seat makes
this process a child subreaper on Linux (``PR_SET_CHILD_SUBREAPER``); ``quit()`` then reaps every
remaining child of the AI's process group with ``waitid(P_PGID, ...)``.
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger
from zope.interface import implementer

from gamed.children import become_subreaper, leader_command, minimal_environment
from gamed.stratego.referee import TIMEOUT, MatchOptions
from gamed.stratego.seats import ISeat
from gamed.stratego.wire import EARLY_LIMIT, OUTPUT_LIMIT, OVERLONG, ReplyFramer, encode, resolve_program

__all__ = ["EARLY_LIMIT", "OUTPUT_LIMIT", "OVERLONG", "ProgramSeat", "leader_command", "resolve_program"]

_REAP_POLL = 0.002  # seconds between waitid polls for killed group members
_REAP_LIMIT = 1.0  # after SIGKILL: how long to wait before closing our pipe ends / giving up

_log = Logger(namespace="gamed.stratego.process")


# --- the seat ----------------------------------------------------------------------------------


class _ProgramProtocol(ProcessProtocol):
    """Forwards the process's events to its seat."""

    def __init__(self, seat: ProgramSeat):
        self.seat = seat

    def childDataReceived(self, childFD, data):
        if childFD == 1:
            self.seat._stdout(data)
        elif childFD == 2:
            self.seat._stderr(data)

    def childConnectionLost(self, childFD):
        if childFD == 1:
            self.seat._eof()

    def processExited(self, reason):
        self.seat._exited(reason.value)

    def processEnded(self, reason):
        self.seat._ended()


@implementer(ISeat)
class ProgramSeat:
    """An AI program as a seat (ucc-stratego §2.5, §5).

    ``stderr``: ``"inherit"`` (the AI writes to our fd 2), ``"capture"`` (kept in ``stderr_text``,
    at most ``stderr_limit`` bytes) or ``"discard"``. ``cwd``: the AI's working directory (default
    ours). ``env``: added to the minimal environment. After ``quit()`` has fired, ``exit_code`` and
    ``exit_signal`` say how the program ended (both None if it never ran).
    """

    human = False

    def __init__(
        self,
        argument: str,
        options: MatchOptions,
        reactor,
        stderr: str = "inherit",
        cwd: str | None = None,
        env: dict | None = None,
        stderr_limit: int = 65536,
    ):
        if stderr not in ("inherit", "capture", "discard"):
            raise ValueError(f"stderr must be 'inherit', 'capture' or 'discard', not {stderr!r}")
        self.argument = argument
        self.name = argument.split(" ", 1)[0]
        self.options = options
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self.stderr_text = b""
        self._reactor = reactor
        self._capture = stderr == "capture"
        self._stderr_mode = stderr
        self._stderr_limit = stderr_limit
        # reading
        self._lines = ReplyFramer(options.max_line, self._overlong)
        self._at_eof = False
        self._reading_paused = False
        self._pending: Deferred | None = None
        self._timer = None
        # writing and the end
        self._gone = False  # more than OUTPUT_LIMIT buffered towards it
        self._transport = None
        self._pid: int | None = None
        self._has_exited = False
        self._has_ended = False
        self._quitting = False
        self._quit_waiters: list[Deferred] = []
        self._quit_done = False
        self._kill_timer = None
        self._reap_deadline = 0.0
        self._reaped = False
        self._force_timer = None

        self.argv = resolve_program(argument)
        self.valid = self.argv is not None
        if self.valid:
            self._spawn(cwd, env)

    def __repr__(self) -> str:
        return f"<ProgramSeat {self.argument!r} pid={self._pid}>"

    @property
    def pid(self) -> int | None:
        """The program's process id, also the id of its process group (None if never started)."""
        return self._pid

    # --- start ---------------------------------------------------------------------------------

    def _spawn(self, cwd: str | None, env: dict | None) -> None:
        become_subreaper()
        devnull = None
        try:
            executable, args = leader_command(self.argv, cwd)
            childFDs = {0: "w", 1: "r", 2: "r" if self._capture else 2}
            if self._stderr_mode == "discard":
                devnull = os.open(os.devnull, os.O_WRONLY)
                childFDs[2] = devnull
            self._transport = self._reactor.spawnProcess(
                _ProgramProtocol(self), executable, args, env=minimal_environment(env), path=cwd, childFDs=childFDs
            )
        except Exception as e:
            # §2.5: an exec that fails after the checks behaves like a program that exits at once.
            _log.error("{name}: could not start {argv!r}: {error}", name=self.name, argv=self.argv, error=e)
            self._transport = None
            self._at_eof = self._has_exited = self._has_ended = self._reaped = True
            return
        finally:
            if devnull is not None:
                os.close(devnull)
        self._pid = self._transport.pid
        writer = getattr(self._transport, "pipes", {}).get(0)
        if writer is not None:
            writer.bufferSize = OUTPUT_LIMIT
            self._transport.registerProducer(_OutputLimit(self), True)

    # --- ISeat -----------------------------------------------------------------------------------

    def setup(self, colour: str, opponent: str) -> Deferred:
        """``<COLOUR> <opponent> 10 10``; fires with the (up to 4) lines that arrived in time."""
        if not self.valid:
            return defer.succeed([])
        self._write(f"{colour} {opponent} 10 10\n")
        return defer.ensureDeferred(self._setup_lines())

    async def _setup_lines(self) -> list[str]:
        lines = []
        for _ in range(4):
            line = await self._read_line()
            if line is None or line is TIMEOUT:
                break
            lines.append(line)
        return lines

    def start(self) -> None:
        if self.valid:
            self._write("START\n")

    def move(self, view: list[str], acceptable: Callable[[str], bool]) -> Deferred:
        """The 10 view lines, then one reply: its text, None at EOF, or TIMEOUT."""
        if not self.valid:
            return defer.succeed(None)
        self._write("\n".join(view) + "\n")
        return self._read_line()

    def tell(self, line: str) -> None:
        if self.valid:
            self._write(line + "\n")

    def pause(self) -> None:
        if self.valid and self.options.pause:
            self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        if self.valid and self.options.pause:
            self._signal_group(signal.SIGCONT)

    def quit(self, result_line: str | None) -> Deferred:
        """Continue the group, ``QUIT <result line>``, close stdin, wait for the exit or the grace
        period, SIGKILL the group, reap it; fires once the program has ended."""
        return self._end(result_line, max(self.options.quit_grace, 0.0))

    def kill(self) -> Deferred:
        """SIGKILL the group now and reap it (the manager was interrupted, §11 row 17); fires once
        the program has ended. Also cuts short the grace period of a ``quit()`` under way."""
        return self._end(None, 0.0)

    def _end(self, result_line: str | None, grace: float) -> Deferred:
        d = Deferred()
        if self._quit_done or not self.valid:
            d.callback(None)
            return d
        self._quit_waiters.append(d)
        if self._quitting:
            if grace == 0.0 and self._kill_timer is not None:
                self._kill()
            return d
        self._quitting = True
        self._cancel_read()
        self._signal_group(signal.SIGCONT)
        if result_line is not None:
            self._write(f"QUIT {result_line}\n")
        if self._transport is not None:
            self._transport.closeStdin()
        self._lines.clear()
        self._resume_reading()  # drain the program's output so its pipes can close
        if self._has_exited or grace == 0.0:
            self._kill()
        else:
            self._kill_timer = self._reactor.callLater(grace, self._kill)
        return d

    # --- writing -----------------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        """Best effort: a program that is gone or closed its stdin just does not get it."""
        if self._gone or self._transport is None:
            return
        try:
            self._transport.write(encode(text))
        except Exception as e:  # never let a dead pipe end the game (§11 row 1)
            _log.debug("{name}: write failed: {error}", name=self.name, error=e)

    def _overflow(self) -> None:
        if self._gone or self._quitting:
            return
        self._gone = True
        _log.warn(
            "{name}: judged gone: it stopped reading its input ({limit} bytes are waiting for it)",
            name=self.name,
            limit=OUTPUT_LIMIT,
        )
        self._deliver()

    # --- reading -----------------------------------------------------------------------------------

    def _read_line(self) -> Deferred:
        """The next line: its text, None at EOF (or when gone), or TIMEOUT after the whole-line
        timeout. Lines that arrived early are used first."""
        assert self._pending is None, "one ask at a time"
        d = self._pending = Deferred()
        self._deliver()
        timeout = self.options.timeout
        if self._pending is d and timeout is not None and 0 < timeout < math.inf:  # §5.7: else none
            self._timer = self._reactor.callLater(timeout, self._on_timeout)
        return d

    def _deliver(self) -> None:
        d = self._pending
        if d is None:
            return
        if self._gone:
            reply = None
        elif self._lines.lines:
            reply = self._lines.pop()
            if self._reading_paused and self._lines.cost <= EARLY_LIMIT // 2:
                self._resume_reading()
        elif self._at_eof:
            reply = None
            _log.info("{name}: judged gone: end of its output (EOF) when asked for a reply", name=self.name)
        else:
            return
        self._pending = None
        self._cancel_timer()
        d.callback(reply)

    def _on_timeout(self) -> None:
        self._timer = None
        d, self._pending = self._pending, None
        if d is None:
            return
        self._lines.drop_partial()  # §5.7: partial bytes at the deadline are discarded
        _log.info(
            "{name}: no whole line within {timeout} s", name=self.name, timeout=self.options.timeout
        )
        d.callback(TIMEOUT)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None

    def _cancel_read(self) -> None:
        self._cancel_timer()
        d, self._pending = self._pending, None
        if d is not None:  # a quit while asking (the operator quit): treat as EOF
            d.callback(None)

    def _stdout(self, data: bytes) -> None:
        if self._quitting or self._gone:
            return
        self._lines.feed(data)
        if self._lines.cost > EARLY_LIMIT and not self._reading_paused:
            self._pause_reading()  # the program blocks on its pipe until we need its lines
        self._deliver()

    def _overlong(self) -> None:
        _log.info("{name}: a reply line longer than {limit} bytes (unintelligible)", name=self.name, limit=self.options.max_line)

    def _eof(self) -> None:
        if not self._quitting:  # §5.1: pending bytes form the last line
            self._lines.end()
        self._at_eof = True
        self._deliver()

    def _pause_reading(self) -> None:
        reader = getattr(self._transport, "pipes", {}).get(1)
        if reader is not None:
            reader.stopReading()
            self._reading_paused = True

    def _resume_reading(self) -> None:
        if not self._reading_paused:
            return
        self._reading_paused = False
        reader = getattr(self._transport, "pipes", {}).get(1)
        if reader is not None:
            reader.startReading()

    def _stderr(self, data: bytes) -> None:
        room = self._stderr_limit - len(self.stderr_text)
        if room > 0:
            self.stderr_text += data[:room]

    # --- signals and the end ----------------------------------------------------------------------

    def _signal_group(self, signum: int) -> None:
        if self._pid is None or self._reaped:
            return
        try:
            os.killpg(self._pid, signum)
        except (ProcessLookupError, PermissionError):
            pass  # the group is empty (or its leader has not made it yet)

    def _exited(self, reason) -> None:
        self._has_exited = True
        self.exit_code = getattr(reason, "exitCode", None)
        self.exit_signal = getattr(reason, "signal", None)
        if self._quitting:
            self._kill()
        elif self.exit_signal is not None:
            _log.info("{name}: ended by signal {signal}", name=self.name, signal=self.exit_signal)
        else:
            _log.info("{name}: exited with status {code}", name=self.name, code=self.exit_code)

    def _ended(self) -> None:
        self._has_ended = True
        if self._force_timer is not None and self._force_timer.active():
            self._force_timer.cancel()
        self._at_eof = True
        self._deliver()
        self._maybe_done()

    def _kill(self) -> None:
        """SIGKILL the whole group (stragglers too, once the leader is gone) and reap it."""
        if self._kill_timer is not None:
            if self._kill_timer.active():
                self._kill_timer.cancel()
            self._kill_timer = None
        if not self._has_exited:
            _log.info("{name}: still running at the end: killed", name=self.name)
        self._signal_group(signal.SIGKILL)
        if self._pid is None:
            self._reaped = True
            self._maybe_done()
            return
        if not self._has_exited and self._transport is not None:
            try:  # the leader too, in case it had not become a group leader yet
                self._transport.signalProcess("KILL")
            except Exception:
                pass
            return  # processExited calls _kill again, now with the leader reaped
        self._reap_deadline = self._reactor.seconds() + _REAP_LIMIT
        self._reap()

    def _reap(self) -> None:
        """Reap the killed members of the group that became our children (subreaper)."""
        while not self._reaped:
            try:
                info = os.waitid(os.P_PGID, self._pid, os.WEXITED | os.WNOHANG)
            except ChildProcessError:
                info = None
                self._reaped = True
                break
            except (AttributeError, OSError):
                self._reaped = True
                break
            if info is None:  # members left that have not died yet
                if self._reactor.seconds() >= self._reap_deadline:
                    _log.error("{name}: process group {pgid} not reaped", name=self.name, pgid=self._pid)
                    self._reaped = True
                    break
                self._reactor.callLater(_REAP_POLL, self._reap)
                return
        if not self._has_ended:
            # Only pipes held open by an escaped process can keep processEnded away now.
            self._force_timer = self._reactor.callLater(_REAP_LIMIT, self._force_end)
        self._maybe_done()

    def _force_end(self) -> None:
        if not self._has_ended and self._transport is not None:
            _log.warn("{name}: its pipes stay open after the kill: closing them", name=self.name)
            self._transport.loseConnection()

    def _maybe_done(self) -> None:
        if not (self._quitting and self._has_ended and self._reaped) or self._quit_done:
            return
        self._quit_done = True
        waiters, self._quit_waiters = self._quit_waiters, []
        for d in waiters:
            d.callback(None)


class _OutputLimit:
    """A streaming producer on the AI's stdin: paused when more than OUTPUT_LIMIT bytes wait."""

    def __init__(self, seat: ProgramSeat):
        self.seat = seat

    def pauseProducing(self):
        self.seat._overflow()

    def resumeProducing(self):
        pass

    def stopProducing(self):
        pass
