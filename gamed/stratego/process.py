"""AI programs as seats on the Twisted reactor: a subprocess speaking the UCC protocol
(ucc-stratego §5) on stdin/stdout, for the daemon's matches (tournaments, Combat's UCC seats).

``ProgramSeat`` starts the program (§2.5) through ``reactor.spawnProcess``, under a reaper of its
own, as the leader of its own process group, and bounds every buffer (§5.1, §11 rows 1 and 16); the UCC dialog itself (replies
framed by ``wire.ReplyFramer`` (§5.1), whole lines timed (§5.7), the group paused while the other
side thinks (§5.9), ``QUIT``, a grace period, SIGKILL to the whole group and reaping (§5.6, §11
row 2)) is ``dialog.ProgramDialog``, given the transport, Deferreds and the reactor's timers.
gamed-stratego runs its one match without the reactor, with ``pipes.PipeSeat``: the same dialog
over its own loop (tests/stratego/test_program_seats.py checks both seats).

The reaper: every program runs under a small process of its own, its parent
(``gamed.reaper``, started by ``gamed.children.reaper_command``, a bare ``python -I -S``): a
child subreaper with SIGTERM as its parent death signal, which forks the program as the leader of
a new session and process group (``argv[0]`` unchanged, no PATH search, SIGKILL as its death
signal) and passes on its stdin, stdout and stderr. The program's pid (its group's id) is the
first line of its stdout, written by the reaper's child before the exec and taken off here, so it
is known before any of the program's output; until then ``pid`` is None. Whatever the program
forks stays in the reaper's tree, even after a double fork or ``setsid()``: when the program
exits (or the daemon dies, even by SIGKILL) the reaper SIGKILLs and reaps all of it and ends as
the program did (its exit status, or death by its signal), so ``exit_code``/``exit_signal`` and
the logs read as before.

The kill: SIGKILL to the program's group and to every process of the reaper's tree but the reaper
(``children.end_processes``), SIGTERM to the reaper, which then ends and reaps what is left and
exits; if it has not within ``REAP_LIMIT`` its whole tree, itself included, is SIGKILLed from here.
This process stays a child subreaper (``PR_SET_CHILD_SUBREAPER``) for that case: what such a kill
orphans comes here and is reaped (the ``_escaped`` set of the dialog).
"""

from __future__ import annotations

import os
import signal

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger
from zope.interface import implementer

from gamed import children
from gamed.children import become_subreaper, minimal_environment, reaper_command
from gamed.stratego.dialog import LOOK_EVERY, REAP_LIMIT, ProgramDialog
from gamed.stratego.referee import MatchOptions
from gamed.stratego.seats import ISeat
from gamed.stratego.wire import EARLY_LIMIT, OUTPUT_LIMIT, OVERLONG, resolve_program

__all__ = ["EARLY_LIMIT", "OUTPUT_LIMIT", "OVERLONG", "ProgramSeat", "resolve_program"]

_log = Logger(namespace="gamed.stratego.process")
_PID_LINE = 20  # the longest pid line, newline excluded


# --- the seat ----------------------------------------------------------------------------------


class _ProgramProtocol(ProcessProtocol):
    """Forwards the process's events to its seat."""

    def __init__(self, seat: ProgramSeat):
        self.seat = seat

    def childDataReceived(self, childFD, data):
        if childFD == 1:
            self.seat._received(data)
        elif childFD == 2:
            self.seat._stderr(data)

    def childConnectionLost(self, childFD):
        if childFD == 1:
            self.seat._output_ended()

    def processExited(self, reason):
        self.seat._on_exited(reason.value)

    def processEnded(self, reason):
        self.seat._on_ended()


@implementer(ISeat)
class ProgramSeat(ProgramDialog):
    """An AI program as a seat (ucc-stratego §2.5, §5): the dialog of ``dialog.ProgramDialog``
    over ``spawnProcess``'s transport, Deferreds and the reactor's timers.

    ``stderr``: ``"inherit"`` (the AI writes to our fd 2), ``"capture"`` (kept in ``stderr_text``,
    at most ``stderr_limit`` bytes) or ``"discard"``. ``cwd``: the AI's working directory (default
    ours). ``env``: added to the minimal environment. After ``quit()`` has fired, ``exit_code`` and
    ``exit_signal`` say how the program ended (both None if it never ran).
    """

    _waiter = Deferred
    _ready = staticmethod(defer.succeed)
    # The reaper keeps the program's whole tree (it is its subreaper): one look when the program
    # is killed finds all of it, none is needed while it plays.
    follow_tree = False
    _fire = staticmethod(Deferred.callback)
    _run = staticmethod(defer.ensureDeferred)

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
        super().__init__(argument, options, reactor.callLater, reactor.seconds)
        self.stderr_text = b""
        self._reactor = reactor
        self._capture = stderr == "capture"
        self._stderr_mode = stderr
        self._stderr_limit = stderr_limit
        self._reading = True  # until the early lines' budget pauses it
        self._transport = None
        self._has_ended = False
        self._force_timer = None
        self._reaper: int | None = None  # the reaper's pid (signalled only until it is reaped)
        self._header: bytes | None = None  # the start of the program's pid line, until it is whole
        self._reaper_timer = None  # SIGKILL for a reaper that does not end after SIGTERM
        if self.valid:
            self._spawn(cwd, env)

    # --- start ---------------------------------------------------------------------------------

    def _spawn(self, cwd: str | None, env: dict | None) -> None:
        become_subreaper()
        devnull = None
        try:
            executable, args = reaper_command(self.argv, cwd)
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
            self._at_eof = self._exited = self._has_ended = self._reaped = True
            return
        finally:
            if devnull is not None:
                os.close(devnull)
        self._reaper = self._transport.pid
        self._header = b""
        writer = getattr(self._transport, "pipes", {}).get(0)
        if writer is not None:
            writer.bufferSize = OUTPUT_LIMIT
            self._transport.registerProducer(_OutputLimit(self), True)

    @property
    def reaper_pid(self) -> int | None:
        """The pid of the program's reaper (None if it never started)."""
        return self._reaper

    def _report(self, level: str, text: str, **fields) -> None:
        getattr(_log, level)(text, name=self.name, **fields)

    # --- writing -----------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Best effort: a program that is gone or closed its stdin just does not get it."""
        if self._gone or self._transport is None:
            return
        try:
            self._transport.write(data)
        except Exception as e:  # never let a dead pipe end the game (§11 row 1)
            _log.debug("{name}: write failed: {error}", name=self.name, error=e)

    def _close_stdin(self) -> None:
        if self._transport is not None:
            self._transport.closeStdin()

    # --- reading -----------------------------------------------------------------------------------

    def _received(self, data: bytes) -> None:
        """The program's output, once its pid line (written before its exec) is taken off."""
        if self._header is not None:
            header = self._header + data
            end = header.find(b"\n")
            if end < 0 and len(header) <= _PID_LINE:
                self._header = header
                return
            self._header = None
            if 0 < end <= _PID_LINE and header[:end].isdigit():
                self._pid = int(header[:end])
                data = header[end + 1 :]
            else:  # pragma: no cover - only the reaper's child writes before the program
                _log.error("{name}: no pid line from its reaper: {start!r}", name=self.name, start=header[:_PID_LINE])
                data = header
            if not data:
                return
        super()._received(data)

    def _stop_reading(self) -> None:
        reader = getattr(self._transport, "pipes", {}).get(1)
        if reader is not None:
            reader.stopReading()
            self._reading = False

    def _start_reading(self) -> None:
        if self._reading:
            return
        self._reading = True
        reader = getattr(self._transport, "pipes", {}).get(1)
        if reader is not None:
            reader.startReading()

    def _stderr(self, data: bytes) -> None:
        room = self._stderr_limit - len(self.stderr_text)
        if room > 0:
            self.stderr_text += data[:room]

    # --- the end -----------------------------------------------------------------------------------

    def _on_exited(self, reason) -> None:
        # The reaper has been reaped (so has the program, by the reaper): its pid is free now.
        self._exited = True
        if self._reaper_timer is not None and self._reaper_timer.active():
            self._reaper_timer.cancel()
        self._reaper_timer = None
        self.exit_code = getattr(reason, "exitCode", None)
        self.exit_signal = getattr(reason, "signal", None)
        if self._quitting:
            self._kill()
        elif self.exit_signal is not None:
            _log.info("{name}: ended by signal {signal}", name=self.name, signal=self.exit_signal)
        else:
            _log.info("{name}: exited with status {code}", name=self.name, code=self.exit_code)

    def _on_ended(self) -> None:
        self._has_ended = True
        if self._force_timer is not None and self._force_timer.active():
            self._force_timer.cancel()
        self._at_eof = True
        self._deliver()
        self._maybe_done()

    def _kill(self) -> None:
        """SIGKILL the program's group and tree, end its reaper, then reap what comes back here."""
        self._cancel_kill_timer()
        if not self._exited:
            _log.info("{name}: still running at the end: killed", name=self.name)
        self._signal_group(signal.SIGKILL)
        if self._transport is None:
            self._reaped = True
            self._maybe_done()
            return
        if not self._exited:
            self._end_reaper()
            return  # processExited calls _kill again, once the reaper has ended
        self._reap_deadline = self._seconds() + REAP_LIMIT
        self._reap()

    def _look(self) -> None:
        """Remember the reaper's tree as it is now but the reaper: the program and all it forked."""
        if self._reaper is None or self._exited:  # (a reaped reaper's pid may be another's now)
            return
        self._next_look = self._seconds() + LOOK_EVERY
        self._tree.update(children.process_tree(self._reaper, include_root=False))

    def _signal_group(self, signum: int) -> None:
        if not self._exited:  # else the reaper has ended the group, and its id may be another's
            super()._signal_group(signum)

    def _end_reaper(self) -> None:
        """SIGTERM the reaper (it ends and reaps the program's tree, then exits as the program did);
        SIGKILL its tree from here if it has not ended within REAP_LIMIT."""
        if self._reaper_timer is not None:
            return
        try:
            self._transport.signalProcess("TERM")
        except Exception:  # ProcessExitedAlready: processExited is on its way
            return
        self._reaper_timer = self._reactor.callLater(REAP_LIMIT, self._kill_reaper)

    def _kill_reaper(self) -> None:
        self._reaper_timer = None
        if self._exited:
            return
        _log.warn("{name}: its reaper did not end within {limit} s: killed", name=self.name, limit=REAP_LIMIT)
        tree = children.process_tree(self._reaper)
        self._escaped.update((p, t) for p, t in children.end_processes(tree).items() if p not in (self._reaper, self._pid))

    def _group_reaped(self) -> None:
        if not self._has_ended:
            # Only pipes held open by an escaped process can keep processEnded away now.
            self._force_timer = self._reactor.callLater(REAP_LIMIT, self._force_end)
        self._maybe_done()

    def _force_end(self) -> None:
        if not self._has_ended and self._transport is not None:
            _log.warn("{name}: its pipes stay open after the kill: closing them", name=self.name)
            self._transport.loseConnection()

    def _maybe_done(self) -> None:
        if self._quitting and self._has_ended and self._reaped and not self._finished:
            self._release_waiters()


class _OutputLimit:
    """A streaming producer on the AI's stdin: paused when more than OUTPUT_LIMIT bytes wait."""

    def __init__(self, seat: ProgramSeat):
        self.seat = seat

    def pauseProducing(self):
        self.seat._judge_gone()

    def resumeProducing(self):
        pass

    def stopProducing(self):
        pass
