"""A hosted program running for one game, bridged to the game's own protocol on stdin/stdout.

``HostedProgram`` is the ``ProcessProtocol`` of one program. In "stdio" mode it hands a game
protocol (built by the game port's factory, exactly the object a TCP connection gets) a transport
of its own, ``ProgramTransport``: what the game writes goes to the program's stdin, what the
program writes on stdout is the game's input, so the program sees the game exactly as a TCP
client would. A watchdog on the injected clock looks at the program's whole process tree (from
/proc): resident memory, the number of processes, CPU seconds, the bytes in its working directory.
Whatever crosses a limit is killed at once with its fault (``gamed.hosting.faults``); the kernel's
own limits (``gamed.hosting.sandbox``) stop the rest. When the program ends, every process of its
tree is SIGKILLed, so none survives its game; ``ended`` fires with its Trouble, or None for an
exit with status 0.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import attrs
from twisted.internet import defer, error
from twisted.internet import process as _process
from twisted.internet.posixbase import PosixReactorBase
from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.internet.protocol import ProcessProtocol
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gamed import children
from gamed.hosting import sandbox
from gamed.hosting.faults import Fault, Trouble, signal_name
from gamed.hosting.spec import KIB, MIB, BotSpec

WATCH_EVERY = 0.2  # seconds between the watchdog's looks at the program's tree
DISK_EVERY = 5  # ... and every this many looks, at its working directory
_DISK_ENTRIES = 20_000  # at most this many files are counted (a program cannot make the look slow)
LOST_AFTER = 1.0  # seconds a program's pid may be gone (its exit not reported to us) before it is ended
HELD_OPEN = 2.0  # seconds after its exit that its pipes may stay open (an escaped process holds them)
STDERR_KEPT = 4 * KIB  # the end of its stderr, kept for the log and the fault
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# What a program's stderr says when it ran out of memory (Python, C++, glibc, Java, Go).
_MEMORY_WORDS = (b"MemoryError", b"bad_alloc", b"Cannot allocate memory", b"OutOfMemoryError", b"out of memory")


@implementer(IAddress)
@attrs.frozen
class ProgramAddress:
    """The "peer" of a hosted program's connection: ``bot:<name>`` in logs."""

    name: str
    host: str = "bot"

    @property
    def port(self) -> str:
        return self.name


class ProgramTransport:
    """The transport a game protocol gets for a hosted program (the parts of ITransport, IConsumer
    and IProducer the game protocols use)."""

    disconnecting = False

    def __init__(self, program: HostedProgram):
        self._program = program

    def write(self, data: bytes) -> None:
        self._program.to_program(data)

    def writeSequence(self, data) -> None:  # noqa: N802
        self._program.to_program(b"".join(data))

    def loseConnection(self) -> None:  # noqa: N802
        self.disconnecting = True
        self._program.hang_up()

    def abortConnection(self) -> None:  # noqa: N802
        self.disconnecting = True
        self._program.kill(None)

    def getPeer(self) -> ProgramAddress:  # noqa: N802
        return ProgramAddress(self._program.spec.name)

    def getHost(self) -> ProgramAddress:  # noqa: N802
        return ProgramAddress("gamed")

    def registerProducer(self, producer, streaming) -> None:  # noqa: N802
        self._program.register_producer(producer, streaming)

    def unregisterProducer(self) -> None:  # noqa: N802
        self._program.unregister_producer()

    def pauseProducing(self) -> None:  # noqa: N802
        self._program.pause_reading()

    def resumeProducing(self) -> None:  # noqa: N802
        self._program.resume_reading()

    def stopProducing(self) -> None:  # noqa: N802
        self._program.kill(None)

    def signal_tree(self, signum: int) -> None:
        """Send ``signum`` to the program's process groups (a referee pausing it: SIGSTOP/SIGCONT)."""
        self._program.signal_groups(signum)


class HostedProgram(ProcessProtocol):
    """One hosted program for one game (see the module docstring)."""

    _log = Logger()

    def __init__(
        self,
        spec: BotSpec,
        workdir: str,
        isolation: sandbox.Isolation,
        clock: IReactorTime,
        env: dict[str, str] | None = None,
        game_protocol: Any = None,
        network: bool = False,
        warm: Any = None,
    ):
        self.spec = spec
        self.workdir = workdir
        self.isolation = isolation
        self.clock = clock
        self.env = children.minimal_environment({"HOME": workdir, "TMPDIR": "/tmp" if isolation.bwrap else workdir, **(env or {})})
        self.game_protocol = game_protocol
        self.network = network
        self.warm = warm  # a gamed.hosting.warm.Warm: the sandbox started ahead it runs in, or None
        self.pid: int | None = None
        self.trouble: Trouble | None = None  # why we killed it (a limit), once we did
        self.output = 0  # bytes it wrote on stdout and stderr
        self.stderr_tail = b""
        self.cpu = 0.0  # CPU seconds of its tree at the last look
        self.peak_memory = 0
        self.ended: defer.Deferred = defer.Deferred()
        self.done = False
        self._tree: dict[int, int] = {}
        self._watch: LoopingCall | None = None
        self._looks = 0
        self._kill_call = None
        self._held_call = None
        self._started_at: int | None = None  # the kernel's start time of its pid (a reused pid is not it)
        self._gone_since: float | None = None
        self._connected = False
        self.ended_at: float | None = None
        self._exit: Failure | None = None
        self.reaped = not isolation.bwrap  # under gamed.reaper: its first stdout line is the program's pid
        self.program_pid: int | None = None
        self._pid_line = b""
        self.stopped = False  # the daemon ended it (its game was over, or a limit was crossed)
        self.released = False  # the game closed its connection before it ended
        self.exit_status: int | None = None  # its exit status once ended by an exit (not a signal)

    # --- starting ----------------------------------------------------------------------------

    def start(self, reactor: Any) -> None:
        """Spawn the program (or run it in its sandbox started ahead); a start that fails at once
        ends it with a START fault."""
        if self.warm is not None:
            return self._adopt(self.warm.process)
        executable, args = sandbox.launch_command(
            self.spec.argv, self.workdir, self.spec.limits, self.isolation, self.env, network=self.network
        )
        try:
            spawn(reactor, self, executable, args, self.env, sandbox.spawn_directory(self.workdir, self.isolation))
        except (OSError, error.ProcessExitedAlready) as e:
            self.trouble = Trouble(Fault.START, f"cannot start {self.spec.argv[0]}: {e}")
            self._finish(None)

    def _adopt(self, process: Any) -> None:
        """Become the protocol of a sandbox started ahead and send it the program to run."""
        try:
            message = sandbox.start_message(self.spec.argv, self.workdir, self.spec.limits, self.env)
        except ValueError as e:
            self.trouble = Trouble(Fault.START, f"cannot start {self.spec.argv[0]}: {e}")
            self._give_back()
            self._finish(None)
            return
        process.write(message)  # (before the game's protocol, which may greet it at once)
        process.proto = self  # (Twisted's Process tells its protocol of output and the end)
        self.makeConnection(process)

    def connectionMade(self) -> None:  # noqa: N802
        self.pid = self.transport.pid
        self._started_at = children.start_time(self.pid)  # (only the launcher exists yet)
        self._tree = {self.pid: self._started_at or 0}
        self._watch = LoopingCall(self._look)
        self._watch.clock = self.clock
        self._watch.start(WATCH_EVERY, now=False)
        if self.game_protocol is not None:
            self._connected = True
            self.game_protocol.makeConnection(ProgramTransport(self))

    # --- the bridge ---------------------------------------------------------------------------

    def to_program(self, data: bytes) -> None:
        if not self.done and self.transport is not None:
            try:
                self.transport.write(data)
            except (OSError, error.ProcessExitedAlready):
                pass

    def hang_up(self) -> None:
        """The game closed the connection: the program's stdin ends; it has a moment to exit."""
        if self.done or self.transport is None:
            return
        self.released = True  # its game is over for it (a Virtual Fight team out while others play on)
        try:
            self.transport.closeStdin()
        except (OSError, error.ProcessExitedAlready):
            pass
        if self._kill_call is None:
            self._kill_call = self.clock.callLater(1.0, self.kill, None)

    def register_producer(self, producer, streaming) -> None:
        if not self.done and self.transport is not None:
            self.transport.registerProducer(producer, streaming)

    def unregister_producer(self) -> None:
        if not self.done and self.transport is not None:
            self.transport.unregisterProducer()

    def pause_reading(self) -> None:
        if not self.done and self.transport is not None:
            self.transport.pauseProducing()

    def resume_reading(self) -> None:
        if not self.done and self.transport is not None:
            self.transport.resumeProducing()

    def childDataReceived(self, fd: int, data: bytes) -> None:  # noqa: N802
        if self.done:
            return
        self.output += len(data)
        if self.output > self.spec.limits.output:
            self.kill(Trouble(Fault.OUTPUT, f"wrote more than {_size(self.spec.limits.output)} on stdout and stderr"))
            return
        if fd == 2:
            self.stderr_tail = (self.stderr_tail + data)[-STDERR_KEPT:]
        elif fd == 1:
            if self.reaped and self.program_pid is None:
                self._pid_line += data
                if b"\n" not in self._pid_line:
                    return
                line, _, data = self._pid_line.partition(b"\n")
                self.output -= len(line) + 1
                try:
                    self.program_pid = int(line)
                except ValueError:
                    self.program_pid = 0
                if not data:
                    return
            if self.game_protocol is not None and self._connected:
                self.game_protocol.dataReceived(data)

    # --- limits --------------------------------------------------------------------------------

    def _look(self) -> None:
        """The watchdog: the program's tree against its memory, process and disk limits."""
        if self.done or self.pid is None:
            return
        tree = children.process_tree(self.pid)
        if self._exit is None and not self._is_mine(tree):
            self._maybe_lost()
            return
        self._tree.update(tree)
        limits = self.spec.limits
        memory, cpu = 0, 0.0
        for pid in tree:
            resident, used = _usage(pid)
            memory += resident
            cpu += used
        self.peak_memory = max(self.peak_memory, memory)
        self.cpu = max(self.cpu, cpu)
        if memory > limits.memory:
            return self.kill(Trouble(Fault.MEMORY, f"used {_size(memory)}, more than its {_size(limits.memory)}"))
        if len(tree) - self.reaped > limits.processes:  # (the reaper is not the program's)
            return self.kill(Trouble(Fault.CRASH, f"ran {len(tree)} processes, more than its {limits.processes}"))
        self._looks += 1
        if self._looks % DISK_EVERY == 0:
            used = disk_usage(self.workdir)
            if used > limits.disk:
                self.kill(Trouble(Fault.OUTPUT, f"put {_size(used)} in its working directory, more than its {_size(limits.disk)}"))

    def _is_mine(self, tree: dict[int, int]) -> bool:
        """True while its pid is there (a zombie too) and still the process we started."""
        if self.pid in tree:
            return self._started_at in (None, 0) or tree[self.pid] == self._started_at
        return children.zombie_of_mine(self.pid, self._started_at)

    def _maybe_lost(self) -> None:
        """Its pid is gone, yet the reactor has not told of its exit: something else in this
        process reaped it (its exit status is lost). After LOST_AFTER seconds it is ended here, so
        that its game does not wait for it for ever."""
        now = self.clock.seconds()
        if self._gone_since is None:
            self._gone_since = now
            return
        if now - self._gone_since < LOST_AFTER:
            return
        self._log.warn("bot {bot} (pid {pid}) is gone without an exit status: ended", bot=self.spec.name, pid=self.pid)
        # What it started before the watchdog saw it is still in its process group (bubblewrap's
        # namespace, killed before it set its death signal): those end too.
        self._tree.update(children.group_members(self.pid, self._started_at))
        self._abandon()
        self._finish(None)

    def _abandon(self) -> None:
        """Stop waiting for the reactor's news of it: no reaping of its pid, our ends of its pipes closed."""
        from twisted.internet import process as _process

        try:
            _process.unregisterReapProcessHandler(self.pid, self.transport)
        except Exception:
            pass
        try:
            self.transport.loseConnection()
        except Exception:
            pass

    def _pipes_held(self) -> None:
        """Its exit came, its pipes stay open: a process it left behind holds them. Close ours."""
        self._held_call = None
        if not self.done:
            self._log.warn("bot {bot} (pid {pid}) ended but its pipes stay open: closing them", bot=self.spec.name, pid=self.pid)
            try:
                self.transport.loseConnection()
            except Exception:
                pass

    def cancel(self) -> None:
        """End it now, whether it has started or not (a program never started just ends)."""
        if self.pid is None and not self.done:
            self._give_back()
            self._finish(None)
        else:
            self.kill(None)

    def _give_back(self) -> None:
        """The sandbox started ahead for it will not be used: it ends."""
        if self.warm is not None and self.warm.process is not None and self.pid is None:
            self.warm.ending = True
            try:
                self.warm.process.signalProcess("KILL")
            except (OSError, error.ProcessExitedAlready):
                pass

    def signal_groups(self, signum: int) -> None:
        """``signum`` to the program's process group (and, under gamed.reaper, the program's own)."""
        if self.done or self.pid is None:
            return
        for group in (self.pid, self.program_pid):
            if group:
                try:
                    os.killpg(group, signum)
                except OSError:
                    pass

    def kill(self, trouble: Trouble | None) -> None:
        """SIGKILL the program and its whole tree now; ``trouble`` is why (None: its game is over)."""
        if self.done:
            return
        self.stopped = True  # whatever the exit shows now, we ended it
        if trouble is not None and self.trouble is None:
            self.trouble = trouble
            self._log.info("bot {bot} (pid {pid}) stopped: {why}", bot=self.spec.name, pid=self.pid, why=trouble.text())
        if self.pid is not None:
            self._tree.update(children.process_tree(self.pid))
            for group in (self.pid, self.program_pid):
                if group:
                    try:
                        os.killpg(group, signal.SIGKILL)
                    except OSError:
                        pass
            children.end_processes(dict(self._tree))

    # --- the end -------------------------------------------------------------------------------

    def processExited(self, reason: Failure) -> None:  # noqa: N802
        # The program itself is gone; what it left behind may hold its pipes open (and keep
        # processEnded from coming): end the rest of its tree now.
        self._exit = reason
        if self.pid is not None:
            self._tree.update(children.process_tree(self.pid, include_root=False))
            children.end_processes({p: t for p, t in self._tree.items() if p != self.pid})
        if not self.done and self._held_call is None:
            self._held_call = self.clock.callLater(HELD_OPEN, self._pipes_held)

    def processEnded(self, reason: Failure) -> None:  # noqa: N802
        self._finish(reason)

    def _finish(self, reason: Failure | None) -> None:
        if self.done:
            return
        self.done = True
        self.ended_at = self.clock.seconds()
        if self._watch is not None and self._watch.running:
            self._watch.stop()
        for call in (self._kill_call, self._held_call):
            if call is not None and call.active():
                call.cancel()
        if self.pid is not None:
            # Whatever it left behind goes with it (a forked child outside its group, a daemon).
            self._tree.update(children.process_tree(self.pid, include_root=False))
            left = {p: t for p, t in self._tree.items() if p != self.pid}
            children.end_processes(left)
            # A daemon that is a subreaper (Stratego's AIs make it one) adopts what the program
            # leaves (bubblewrap's own init): reap those now and once more a moment later.
            left = children.reap(left)
            if left:
                self.clock.callLater(WATCH_EVERY * 5, children.reap, left)
        if reason is not None:
            self.exit_status = getattr(reason.value, "exitCode", None)
        trouble = self.trouble
        if trouble is None and reason is not None and not self.stopped:
            trouble = self._judge(reason.value)
        if trouble is not None and self.trouble is None and trouble.fault is not Fault.START:
            self._log.info("bot {bot} (pid {pid}) ended: {why}", bot=self.spec.name, pid=self.pid, why=trouble.text())
        self.trouble = trouble
        if self._connected:
            self._connected = False
            self.game_protocol.connectionLost(Failure(error.ConnectionDone("the program ended")))
        self.ended.callback(trouble)

    def _judge(self, value: Exception) -> Trouble | None:
        """The fault an exit shows (None for status 0)."""
        code = getattr(value, "exitCode", None)
        sig = getattr(value, "signal", None) or sandbox.bwrap_signal(code, bool(self.isolation.bwrap))
        limits = self.spec.limits
        if any(word in self.stderr_tail for word in _MEMORY_WORDS):
            return Trouble(Fault.MEMORY, f"ran out of memory (its limit is {_size(limits.memory)})")
        if b"File too large" in self.stderr_tail:  # EFBIG: a program that ignores SIGXFSZ (Python)
            return Trouble(Fault.OUTPUT, f"wrote a file larger than {_size(limits.disk)}")
        if sig is not None:
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and self.cpu >= limits.cpu - 0.5):
                return Trouble(Fault.TIME, f"used its {limits.cpu:g} CPU seconds")
            if sig == signal.SIGXFSZ:
                return Trouble(Fault.OUTPUT, f"wrote a file larger than {_size(limits.disk)}")
            return Trouble(Fault.CRASH, f"killed by {signal_name(sig)}")
        if code == sandbox.EXEC_FAILED and self.output == len(self.stderr_tail) and b"cannot execute" in self.stderr_tail:
            return Trouble(Fault.START, self.stderr_tail.decode("utf-8", "replace").strip().splitlines()[-1])
        if code:
            return Trouble(Fault.CRASH, f"exited with status {code}")
        return None

    def stderr_text(self) -> str:
        return self.stderr_tail.decode("utf-8", "replace")


def spawn(reactor: Any, protocol: ProcessProtocol, executable: str, args: list[str], env: dict[str, str], path: str | None = None) -> Any:
    """Start ``executable`` for ``protocol``: through _NativeStart when it is the native launcher
    (which needs no working directory), else with the reactor's spawnProcess."""
    if executable == sandbox.NATIVE_REAPER and path is None and isinstance(reactor, PosixReactorBase):
        return _NativeStart(reactor, executable, args, env, None, protocol, None, None, None)
    return reactor.spawnProcess(protocol, executable, args, env=env, path=path)


class _NativeStart(_process.Process):
    """A program started through the native launcher (gamed-reaper), which closes every file
    descriptor but 0, 1 and 2 as the first thing it does: so its posix_spawn needs only the three
    dup2s of its pipes, not Twisted's look at every descriptor the daemon has open (one fcntl each:
    hundreds with many games in play). Otherwise Twisted's own process, reaping and pipes."""

    def _trySpawnInsteadOfFork(self, path, uid, gid, executable, args, environment, kwargs):  # noqa: N802
        fdmap = kwargs.get("fdmap") or {}
        if uid is not None or gid is not None or path is not None or sorted(fdmap) != [0, 1, 2] \
                or any(parent < 3 for parent in fdmap.values()):
            return super()._trySpawnInsteadOfFork(path, uid, gid, executable, args, environment, kwargs)
        ignored = [s for s in range(1, signal.NSIG) if signal.getsignal(s) == signal.SIG_IGN]
        actions = [(os.POSIX_SPAWN_DUP2, parent, child) for child, parent in sorted(fdmap.items())]
        self.pid = os.posix_spawn(executable, args, environment, file_actions=actions, setsigdef=ignored)
        self.status = -1
        return True


def _usage(pid: int) -> tuple[int, float]:
    """(resident bytes, CPU seconds) of one process from /proc, (0, 0) if it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            resident = int(f.read().split()[1]) * _PAGE
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
    except (OSError, IndexError, ValueError):
        return 0, 0.0
    return resident, cpu


def disk_usage(path: str, limit: int = _DISK_ENTRIES) -> int:
    """Bytes of the files under ``path`` (allocated blocks or size, whichever is more; at most
    ``limit`` entries are looked at, so a program cannot make this slow)."""
    total, seen, stack = 0, 0, [path]
    while stack and seen < limit:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        break
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            st = entry.stat(follow_symlinks=False)
                            total += max(st.st_size, st.st_blocks * 512)
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def _size(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:.0f} MiB" if n % MIB == 0 or n >= 10 * MIB else f"{n / MIB:.1f} MiB"
    if n >= KIB:
        return f"{n // KIB} KiB"
    return f"{n} bytes"

