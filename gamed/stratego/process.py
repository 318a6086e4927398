"""AI programs as seats on the Twisted reactor: a subprocess speaking the UCC protocol
(ucc-stratego §5) on stdin/stdout, for the daemon's matches (tournaments, Combat's UCC seats).

``ProgramSeat`` starts the program (§2.5) through ``reactor.spawnProcess`` as the leader of its own
process group and bounds every buffer (§5.1, §11 rows 1 and 16); the UCC dialog itself (replies
framed by ``wire.ReplyFramer`` (§5.1), whole lines timed (§5.7), the group paused while the other
side thinks (§5.9), ``QUIT``, a grace period, SIGKILL to the whole group and reaping (§5.6, §11
row 2)) is ``dialog.ProgramDialog``, given the transport, Deferreds and the reactor's timers.
gamed-stratego runs its one match without the reactor, with ``pipes.PipeSeat``: the same dialog
over its own loop (tests/stratego/test_program_seats.py checks both seats).

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

import os
import signal

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger
from zope.interface import implementer

from gamed.children import become_subreaper, leader_command, minimal_environment
from gamed.stratego.dialog import REAP_LIMIT, ProgramDialog
from gamed.stratego.referee import MatchOptions
from gamed.stratego.seats import ISeat
from gamed.stratego.wire import EARLY_LIMIT, OUTPUT_LIMIT, OVERLONG, resolve_program

__all__ = ["EARLY_LIMIT", "OUTPUT_LIMIT", "OVERLONG", "ProgramSeat", "leader_command", "resolve_program"]

_log = Logger(namespace="gamed.stratego.process")


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
        if self.valid:
            self._spawn(cwd, env)

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
            self._at_eof = self._exited = self._has_ended = self._reaped = True
            return
        finally:
            if devnull is not None:
                os.close(devnull)
        self._pid = self._transport.pid
        writer = getattr(self._transport, "pipes", {}).get(0)
        if writer is not None:
            writer.bufferSize = OUTPUT_LIMIT
            self._transport.registerProducer(_OutputLimit(self), True)

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
        self._exited = True
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
        """SIGKILL the whole group (stragglers too, once the leader is gone) and reap it."""
        self._cancel_kill_timer()
        if not self._exited:
            _log.info("{name}: still running at the end: killed", name=self.name)
        self._signal_group(signal.SIGKILL)
        if self._pid is None:
            self._reaped = True
            self._maybe_done()
            return
        if not self._exited and self._transport is not None:
            try:  # the leader too, in case it had not become a group leader yet
                self._transport.signalProcess("KILL")
            except Exception:
                pass
            return  # processExited calls _kill again, now with the leader reaped
        self._reap_deadline = self._seconds() + REAP_LIMIT
        self._reap()

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
