"""gamed-stratego's own event loop, and the AI programs and console it serves (no Twisted).

The competition's tournament script starts the manager once per game, so ``gamed-stratego`` pays
its start-up and its per-half-move cost in every game (docs/performance.md, "Stratego referee").
It therefore runs its one match in this small loop instead of the Twisted reactor, which the
daemon keeps for its many matches (``gamed.stratego.process.ProgramSeat``):

- ``SelectorLoop``: epoll (poll where there is none) for the pipes and stdin, timers on the
  monotonic clock, signals through ``signal.set_wakeup_fd`` (handled between events, never in the middle of
  one), and ``start(coroutine)``, which runs the referee: it awaits ``Waiter`` objects.
- ``PipeSeat``: an AI program (ucc-stratego §2.5, §5) started with ``fork`` and ``execve``
  (``gamed.children.spawn_leader``) as the leader of a new session and process group (no helper
  process, ``argv[0]`` as given, no PATH search, SIGPIPE and SIGXFSZ back to their defaults,
  SIGKILL as its parent death signal: it dies with gamed-stratego, even a SIGKILLed one). The UCC dialog itself (replies framed by
  ``wire.ReplyFramer``, whole lines timed (§5.7), the group paused while the other side thinks
  (§5.9), ``QUIT``, a grace period, SIGKILL to the group and reaping (§5.6, §11 row 2)) is
  ``dialog.ProgramDialog``, which the daemon's ``ProgramSeat`` shares; this seat gives it the
  pipes, Waiters and the loop's timers. Its exit is noticed through a pidfd (no SIGCHLD
  handler: stopping and continuing the AIs wakes nobody). Writes go straight to the
  non-blocking pipe (only what it does not take waits for the loop).
- ``PipeConsole``: stdin for the people and the ``-t`` prompt (``console.ConsoleLines``).
"""

from __future__ import annotations

import math
import os
import select
import signal
import time
from collections.abc import Callable

from gamed.children import become_subreaper, spawn_leader
from gamed.stratego.console import ConsoleLines
from gamed.stratego.dialog import REAP_LIMIT, REAP_POLL, ProgramDialog
from gamed.stratego.referee import MatchOptions, Ready
from gamed.stratego.wire import OUTPUT_LIMIT

_READ_SIZE = 1 << 16


class Waiter:
    """A value that arrives later: what the loop's seats return and the referee awaits (the
    loop's small Deferred). ``fire(value)`` delivers it once; the awaiting coroutine goes on at
    once, inside that call."""

    __slots__ = ("done", "value", "_wake")

    def __init__(self):
        self.done = False
        self.value = None
        self._wake: Callable[[], None] | None = None

    def fire(self, value=None) -> None:
        if self.done:
            return
        self.done = True
        self.value = value
        wake, self._wake = self._wake, None
        if wake is not None:
            wake()

    def __await__(self):
        if not self.done:
            yield self
        return self.value

    def __repr__(self) -> str:
        return f"<Waiter {'done: ' + repr(self.value) if self.done else 'waiting'}>"


class _Timer:
    __slots__ = ("deadline", "call", "_timers")

    def __init__(self, deadline: float, call: Callable[[], None], timers: list):
        self.deadline = deadline
        self.call = call
        self._timers = timers

    def cancel(self) -> None:
        try:
            self._timers.remove(self)
        except ValueError:  # it has fired, or was cancelled before
            pass


class SelectorLoop:
    """The event loop of one gamed-stratego process (see the module docstring).

    ``failure`` holds an exception raised by a callback or by a coroutine run with ``start``:
    ``run`` then returns at once, and the caller reports it.
    """

    def __init__(self):
        if hasattr(select, "epoll"):
            self._poller, self._ms, self._in, self._out = select.epoll(), False, select.EPOLLIN, select.EPOLLOUT
        else:  # pragma: no cover - not Linux
            self._poller, self._ms, self._in, self._out = select.poll(), True, select.POLLIN, select.POLLOUT
        self._calls: dict[int, Callable[[], None]] = {}  # fd -> what to call when it is ready
        # The timers that are due later: a handful at most (a reply's timeout per AI, a stall, the
        # Tk window's refresh), so a list scanned each round beats a heap.
        self._timers: list[_Timer] = []
        self._signal_fd: int | None = None
        self._on_signal: Callable[[int], None] | None = None
        self.failure: BaseException | None = None

    # --- time --------------------------------------------------------------------------------

    def seconds(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, call: Callable[[], None]) -> _Timer:
        """Call ``call()`` after ``delay`` seconds; ``cancel()`` the result to forget it."""
        timer = _Timer(time.monotonic() + delay, call, self._timers)
        self._timers.append(timer)
        return timer

    def sleep(self, seconds: float) -> Waiter:
        """A Waiter that fires after ``seconds`` (the ``-t`` stall)."""
        waiter = Waiter()
        self.call_later(seconds, waiter.fire)
        return waiter

    # --- descriptors -------------------------------------------------------------------------

    def add_reader(self, fd: int, call: Callable[[], None]) -> None:
        """Call ``call()`` whenever ``fd`` is readable (or at its end). Raises PermissionError for a
        descriptor that cannot be polled (a regular file, /dev/null)."""
        self._poller.register(fd, self._in)
        self._calls[fd] = call

    def add_writer(self, fd: int, call: Callable[[], None]) -> None:
        """Call ``call()`` whenever ``fd`` can be written to (or has failed)."""
        self._poller.register(fd, self._out)
        self._calls[fd] = call

    def remove(self, fd: int) -> None:
        """Stop watching ``fd`` (no error if it was not watched)."""
        if self._calls.pop(fd, None) is not None:
            try:
                self._poller.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass

    # --- signals -----------------------------------------------------------------------------

    def watch_signals(self, signums, on_signal: Callable[[int], None]) -> None:
        """Handle ``signums`` with ``on_signal(signum)``, called from the loop between events."""
        if not signums:
            return
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._signal_fd = read_end
        self._on_signal = on_signal
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        for signum in signums:
            signal.signal(signum, _note_signal)  # the number arrives through the wakeup fd
        self.add_reader(read_end, self._signalled)

    def _signalled(self) -> None:
        try:
            data = os.read(self._signal_fd, 64)
        except OSError:
            return
        for signum in data:
            self._on_signal(signum)

    # --- coroutines --------------------------------------------------------------------------

    def start(self, coroutine) -> Waiter:
        """Run ``coroutine`` (it awaits Waiters and Ready values); the Waiter returned fires
        with its result. An exception it raises ends the loop (``failure``)."""
        done = Waiter()

        def step() -> None:
            while True:
                try:
                    waiter = coroutine.send(None)
                except StopIteration as stop:
                    done.fire(stop.value)
                    return
                except BaseException as e:  # noqa: BLE001 - reported by whoever runs the loop
                    self.failure = e
                    return
                if type(waiter) is not Waiter:
                    self.failure = TypeError(f"a coroutine in the loop awaited {waiter!r}, not a Waiter")
                    return
                if not waiter.done:
                    waiter._wake = step
                    return

        step()
        return done

    # --- the loop ----------------------------------------------------------------------------

    def run(self, until: Waiter) -> None:
        """Handle events and timers until ``until`` has fired (or a callback failed)."""
        poll = self._poller.poll
        calls = self._calls
        timers = self._timers
        monotonic = time.monotonic
        while not until.done and self.failure is None:
            timeout = -1 if not self._ms else None
            if timers:
                timeout = max(0.0, min(timer.deadline for timer in timers) - monotonic())
                if self._ms:  # pragma: no cover - poll: milliseconds, rounded up
                    timeout = math.ceil(timeout * 1000)
            if not timers and not calls:
                self.failure = RuntimeError("the loop has nothing left to wait for")
                return
            for fd, _ in poll(timeout):
                call = calls.get(fd)
                if call is None:
                    continue  # removed by an earlier callback of this round
                try:
                    call()
                except BaseException as e:  # noqa: BLE001
                    self.failure = e
                    return
            if timers:
                now = monotonic()
                for timer in [timer for timer in timers if timer.deadline <= now]:
                    if timer in timers:  # not cancelled by an earlier one of this round
                        timers.remove(timer)
                        try:
                            timer.call()
                        except BaseException as e:  # noqa: BLE001
                            self.failure = e
                            return


def _note_signal(signum, frame) -> None:
    """The Python-level handler: nothing to do here (see SelectorLoop.watch_signals)."""


# --- an AI program ---------------------------------------------------------------------------------


class PipeSeat(ProgramDialog):
    """An AI program as a seat in gamed-stratego's loop (ucc-stratego §2.5, §5; see the module
    docstring): the dialog of ``dialog.ProgramDialog`` over non-blocking pipes, Waiters and the
    loop's timers. The program inherits our working directory and stderr; ``env`` is its whole
    environment. After ``quit()``/``kill()`` has fired, ``exit_code`` and ``exit_signal`` say how
    the program ended (both None if it never ran). ``warn(text)`` reports what goes wrong (a
    program that cannot be started, one judged gone, a group not reaped) on stderr.
    """

    _waiter = Waiter
    _ready = Ready
    _fire = staticmethod(Waiter.fire)
    follow_tree = False  # the CLI ends all it is the subreaper of when the match is over

    def __init__(self, argument: str, options: MatchOptions, loop: SelectorLoop, env: dict, warn=None):
        super().__init__(argument, options, loop.call_later, loop.seconds)
        self._loop = loop
        self._warn = warn if warn is not None else _stderr
        self._stdout: int | None = None
        self._reading = False
        self._stdin: int | None = None
        self._out = bytearray()  # what the pipe did not take yet
        self._close_stdin_after = False
        self._pidfd: int | None = None
        if self.valid:
            self._spawn(env)

    # --- start ---------------------------------------------------------------------------------

    def _spawn(self, env: dict) -> None:
        become_subreaper()
        ends: list[int] = []
        try:
            stdin_read, stdin_write = _pipe(ends)
            stdout_read, stdout_write = _pipe(ends)
            # A session leader with SIGKILL as its parent death signal: it dies with us.
            self._pid = spawn_leader(self.argv[0], self.argv, env, stdin_read, stdout_write)
        except OSError as e:
            # §2.5: an exec that fails after the checks behaves like a program that exits at once.
            self._warn(f"{self.name}: could not start {self.argv!r}: {e.strerror or e}")
            for fd in ends:
                os.close(fd)
            self._at_eof = self._exited = self._reaped = True
            return
        os.close(stdin_read)
        os.close(stdout_write)
        self._stdin, self._stdout = stdin_write, stdout_read
        os.set_blocking(stdin_write, False)
        os.set_blocking(stdout_read, False)
        self._start_reading()
        try:
            self._pidfd = os.pidfd_open(self._pid)
        except (AttributeError, OSError):  # before Linux 5.3: its exit is polled for at the end
            self._pidfd = None
        else:
            self._loop.add_reader(self._pidfd, self._on_exit)

    def _report(self, level: str, text: str, **fields) -> None:
        if level != "info":  # gamed-stratego keeps no log of its own: only what went wrong
            self._warn(text.format(name=self.name, **fields))

    # --- writing -------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Best effort: a program that is gone or closed its stdin just does not get it."""
        if self._gone or self._stdin is None:
            return
        if self._out:  # the pipe is full: queue behind what waits
            self._out += data
        else:
            try:
                written = os.write(self._stdin, data)
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: it closed its stdin (or exited); never ends the game (§11 row 1)
                self._drop_stdin()
                return
            if written == len(data):
                return
            self._out += data[written:]
            self._loop.add_writer(self._stdin, self._on_writable)
        if len(self._out) > OUTPUT_LIMIT and not self._quitting:
            self._drop_stdin()  # it stopped reading its input: judged at its next ask (EOF)
            self._judge_gone()

    def _on_writable(self) -> None:
        try:
            written = os.write(self._stdin, self._out)
        except BlockingIOError:
            return
        except OSError:
            self._drop_stdin()
            return
        del self._out[:written]
        if not self._out:
            self._loop.remove(self._stdin)
            if self._close_stdin_after:
                self._drop_stdin()

    def _close_stdin(self) -> None:
        """Close its stdin once what waits has been written."""
        if self._out:
            self._close_stdin_after = True
        else:
            self._drop_stdin()

    def _drop_stdin(self) -> None:
        if self._stdin is not None:
            self._loop.remove(self._stdin)
            os.close(self._stdin)
            self._stdin = None
        self._out.clear()

    # --- reading -------------------------------------------------------------------------------

    def _on_readable(self) -> None:
        data = _read_some(self._stdout)
        if data is None:
            return
        if data:
            self._received(data)
        else:
            self._stop_reading()
            self._output_ended()

    def _start_reading(self) -> None:
        if not self._reading and self._stdout is not None and not self._at_eof:
            self._reading = True
            self._loop.add_reader(self._stdout, self._on_readable)

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove(self._stdout)

    # --- the end -------------------------------------------------------------------------------

    def _watch_exit(self) -> None:
        if self._pidfd is None:
            self._loop.call_later(REAP_POLL, self._poll_exit)

    def _on_exit(self) -> None:
        """The pidfd is readable: the program has exited."""
        self._loop.remove(self._pidfd)
        self._reap_leader()

    def _poll_exit(self) -> None:
        if not (self._exited or self._reaped) and not self._reap_leader():
            self._loop.call_later(REAP_POLL, self._poll_exit)

    def _reap_leader(self) -> bool:
        """Reap the program if it has exited (then, when ending, kill and reap the rest of its
        group); False while it runs."""
        if self._exited:
            return True
        try:
            info = os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            info = None
            self._exited = True
        else:
            if info is None:
                return False
            self._record(info)
        if self._quitting:
            self._kill()
        return True

    def _kill(self) -> None:
        """SIGKILL the whole group (stragglers too, once the leader is gone) and reap it."""
        self._cancel_kill_timer()
        if self._pid is None or self._reaped:  # it never ran (its exec failed), or all is done
            self._reaped = True
            if not self._finished:
                self._group_reaped()
            return
        if self._reap_deadline:  # reaping under way
            return
        self._signal_group(signal.SIGKILL)
        self._reap_deadline = self._seconds() + REAP_LIMIT
        self._reap()

    def _group_reaped(self) -> None:
        self._stop_reading()
        for fd in (self._stdout, self._pidfd):
            if fd is not None:
                self._loop.remove(fd)
                os.close(fd)
        self._stdout = self._pidfd = None
        self._drop_stdin()
        self._release_waiters()


def _pipe(ends: list[int]) -> tuple[int, int]:
    """A close-on-exec pipe whose ends are above the standard descriptors (so that the spawn's
    dup2 onto 0 and 1 always copies them), recorded in ``ends``."""
    pair = []
    for fd in os.pipe2(os.O_CLOEXEC):
        if fd <= 2:
            import fcntl

            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = moved
        ends.append(fd)
        pair.append(fd)
    return pair[0], pair[1]


def _read_some(fd: int) -> bytes | None:
    """What a non-blocking ``fd`` has: b"" at its end (or on an error), None when nothing yet."""
    try:
        return os.read(fd, _READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _stderr(text: str) -> None:
    try:
        os.write(2, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


# --- the console -----------------------------------------------------------------------------------


class PipeConsole(ConsoleLines):
    """stdin read in gamed-stratego's loop (people and the ``-t`` prompt): ``read_line`` gives
    Waiters. A descriptor that cannot be polled (a regular file, /dev/null) never blocks, so it
    is simply read when a line is wanted."""

    def __init__(self, loop: SelectorLoop, stdin_fd: int = 0, max_line: int = 65536, max_queued: int = 1000):
        super().__init__(stdin_fd, max_line, max_queued)
        self._loop = loop
        self._started = False
        self._watched = False
        self._made_nonblocking = False

    def read_line(self):
        self._start()
        while not self._watched and not self._eof and not self._lines:
            self._on_readable()  # a file: read on until a line or the end
        return super().read_line()

    def close(self) -> None:
        """Stop reading and give stdin back in blocking mode (it may be the shell's terminal)."""
        if self._watched:
            self._loop.remove(self._fd)
            self._watched = False
        if self._made_nonblocking:
            self._made_nonblocking = False
            try:
                os.set_blocking(self._fd, True)
            except OSError:
                pass
        if not self._eof:
            self._ended()

    def _start(self) -> None:
        if self._started or self._eof:
            return
        self._started = True
        try:
            if os.get_blocking(self._fd):
                os.set_blocking(self._fd, False)
                self._made_nonblocking = True
            self._loop.add_reader(self._fd, self._on_readable)
            self._watched = True
        except PermissionError:
            pass  # not pollable: read_line reads it directly
        except (OSError, ValueError):
            self._ended()

    def _on_readable(self) -> None:
        data = _read_some(self._fd)
        if data is None:
            return
        if data:
            self._received(data)
        else:
            if self._watched:
                self._loop.remove(self._fd)
                self._watched = False
            self._ended()

    def _waiter(self) -> Waiter:
        return Waiter()

    def _ready(self, value) -> Ready:
        return Ready(value)

    def _fire(self, waiter: Waiter, value) -> None:
        waiter.fire(value)

    def _pause_source(self) -> None:
        if self._watched:
            self._loop.remove(self._fd)

    def _resume_source(self) -> None:
        if self._watched:
            self._loop.add_reader(self._fd, self._on_readable)


__all__ = ["PipeConsole", "PipeSeat", "SelectorLoop", "Waiter"]
