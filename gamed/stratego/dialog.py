"""The UCC dialog with one AI program, whatever runs it (ucc-stratego §5): what the two program
seats share, the daemon's ``process.ProgramSeat`` (on the Twisted reactor, Deferreds) and
gamed-stratego's ``pipes.PipeSeat`` (in its own loop, ``pipes.Waiter``).

``ProgramDialog`` is the seat's half that does not depend on the transport: the ISeat methods
(the setup and its four lines, ``START``, board views and replies, confirmations, pausing the
group while the other side thinks, ``QUIT`` with its grace period and the kill), one reply
asked at a time with its whole-line timeout (§5.7), early lines kept within their budget
(§5.1), a program judged gone when its input overflows, the killed group reaped (§5.6, §11 row
2) and the exit status recorded. Besides its group, the program's whole process tree is followed
(looked at when it starts, while it plays at most every ``LOOK_EVERY`` seconds unless
``follow_tree`` is off, and at the end:
``gamed.children.process_tree``) and SIGKILLed with it, so that a child which left the group with
``setsid()`` does not outlive the game. No Twisted and no clock of its own: a subclass provides the
transport, the timers and the kind of awaitable (see the class). It is on the start-up path of
gamed-stratego, which imports no Twisted (docs/performance.md).
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Callable

from gamed import children
from gamed.stratego.referee import TIMEOUT, MatchOptions
from gamed.stratego.wire import EARLY_LIMIT, OUTPUT_LIMIT, ReplyFramer, encode, resolve_program

REAP_POLL = 0.002  # seconds between waitid polls for killed group members
REAP_LIMIT = 1.0  # after SIGKILL: how long to wait for the group to die before giving up
LOOK_EVERY = 1.0  # seconds between looks at a playing program's process tree (each costs a /proc walk)


class ProgramDialog:
    """One AI program as a seat, but for its transport (see the module docstring).

    A subclass provides, besides starting the program (``_pid``, ``_reading`` and, when its start
    failed, ``_at_eof``, ``_exited`` and ``_reaped`` set):

    - its awaitables: ``_waiter()`` (a new one), ``_ready(value)`` (one that holds ``value``
      already), ``_fire(waiter, value)`` and ``_run(coroutine)`` (what ``setup`` returns for its
      coroutine; by default the coroutine itself);
    - ``call_later(delay, call)`` (giving something with ``cancel()``) and ``seconds()``, passed
      to ``__init__``;
    - ``_write(data)`` (best effort), ``_close_stdin()``, ``_start_reading()`` and
      ``_stop_reading()`` (which keep ``_reading`` true while the program's output is read);
    - ``_kill()`` (SIGKILL the group and, once its leader has exited, set ``_reap_deadline``
      and call ``_reap()``), ``_group_reaped()`` (the group is gone: end when all is done, then
      ``_release_waiters()``), and optionally ``_watch_exit()`` (the grace period has begun);
    - ``_report(level, text, **fields)``: ``text`` is a format string with ``{name}`` (the
      seat's name) and ``fields``; ``level`` is ``"info"`` (what a log keeps), ``"warn"`` or
      ``"error"`` (something went wrong).

    and feeds it the program's events: ``_received(data)`` for its output, ``_output_ended()``
    at its end, ``_judge_gone()`` when more than OUTPUT_LIMIT bytes wait for it.
    """

    human = False
    # Look at the program's process tree while it plays, at most every LOOK_EVERY seconds (and at
    # setup and QUIT). gamed-stratego does not need to: at the end of its match it ends everything
    # it is the subreaper of.
    follow_tree = True

    def __init__(self, argument: str, options: MatchOptions, call_later, seconds: Callable[[], float]):
        self.argument = argument
        self.name = argument.split(" ", 1)[0]
        self.options = options
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self._call_later = call_later
        self._seconds = seconds
        self._pausing = options.pause
        timeout = options.timeout
        self._timeout = timeout if timeout is not None and 0 < timeout < math.inf else None  # §5.7: else none
        # reading
        self._lines = ReplyFramer(options.max_line, self._overlong)
        self._at_eof = False
        self._pending = None  # the awaitable of the reply being asked for
        self._timer = None  # its timeout
        self._deadline: float | None = None  # the clock's (--clock): the instant the replies asked for are due
        # writing and the end
        self._gone = False  # more than OUTPUT_LIMIT waited for it
        self._pid: int | None = None
        self._exited = False
        self._reaped = False
        self._quitting = False
        self._finished = False
        self._quit_waiters: list = []
        self._kill_timer = None
        self._reap_deadline = 0.0
        self._tree: dict[int, int] = {}  # every process of the program seen so far: {pid: start}
        self._escaped: dict[int, int] = {}  # killed members of the tree outside the group, to reap
        self._next_look = 0.0

        self.argv = resolve_program(argument)
        self.valid = self.argv is not None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.argument!r} pid={self._pid}>"

    @property
    def pid(self) -> int | None:
        """The program's process id, also the id of its process group (None if never started; for
        the daemon's ``ProgramSeat``, until its reaper's child has said it, before its output)."""
        return self._pid

    @staticmethod
    def _run(coroutine):
        return coroutine

    # --- ISeat -----------------------------------------------------------------------------------

    def setup(self, colour: str, opponent: str):
        """``<COLOUR> <opponent> 10 10``; gives the (up to 4) lines that arrived in time."""
        if not self.valid:
            return self._ready([])
        self._look()
        self._write(encode(f"{colour} {opponent} 10 10\n"))
        return self._run(self._setup_lines())

    async def _setup_lines(self) -> list[str]:
        lines = []
        for _ in range(4):
            line = await self._read_line()
            if line is None or line is TIMEOUT:
                break
            lines.append(line)
        return lines

    def time_left(self, seconds: float | None) -> None:
        """Under a clock (--clock): the next reply (or the four setup lines) is due ``seconds``
        from now (None: no such instant), and the per-line timeout still holds for each line."""
        self._deadline = None if seconds is None else self._seconds() + seconds

    def start(self) -> None:
        if self.valid:
            self._write(b"START\n")

    def move(self, view: list[str], acceptable: Callable[[str], bool]):
        """The 10 view lines, then one reply: its text, None at EOF, or TIMEOUT."""
        if not self.valid:
            return self._ready(None)
        if self.follow_tree and self._seconds() >= self._next_look:
            self._look()
        self._write(encode("\n".join(view) + "\n"))
        return self._read_line()

    def tell(self, line: str) -> None:
        if self.valid:
            self._write(encode(line + "\n"))

    def pause(self) -> None:
        if self._pausing and self.valid:
            self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        if self._pausing and self.valid:
            self._signal_group(signal.SIGCONT)

    def quit(self, result_line: str | None):
        """Continue the group, ``QUIT <result line>``, close stdin, wait for the exit or the grace
        period, SIGKILL the group, reap it; gives None once the program has ended."""
        return self._end(result_line, max(self.options.quit_grace, 0.0))

    def kill(self):
        """SIGKILL the group now and reap it (the manager was interrupted, §11 row 17); gives None
        once the program has ended. Also cuts short the grace period of a ``quit()`` under way."""
        return self._end(None, 0.0)

    def _end(self, result_line: str | None, grace: float):
        if self._finished or not self.valid:
            return self._ready(None)
        waiter = self._waiter()
        self._quit_waiters.append(waiter)
        if self._quitting:
            if grace == 0.0 and self._kill_timer is not None:
                self._kill()
            return waiter
        self._quitting = True
        self._look()
        self._cancel_read()
        self._signal_group(signal.SIGCONT)
        if result_line is not None:
            self._write(encode(f"QUIT {result_line}\n"))
        self._close_stdin()
        self._lines.clear()
        self._start_reading()  # drain the program's output so that it is never blocked writing
        if self._exited or grace == 0.0:
            self._kill()
        else:
            self._kill_timer = self._call_later(grace, self._grace_over)
            self._watch_exit()
        return waiter

    def _watch_exit(self) -> None:
        pass

    # --- reading ---------------------------------------------------------------------------------

    def _read_line(self):
        """The next line: its text, None at EOF (or when gone), or TIMEOUT after the whole-line
        timeout. Lines that arrived early are used first."""
        assert self._pending is None, "one ask at a time"
        waiter = self._pending = self._waiter()
        self._deliver()
        if self._pending is waiter:
            delay = self._timeout
            if self._deadline is not None:
                left = max(0.0, self._deadline - self._seconds())
                delay = left if delay is None else min(delay, left)
            if delay is not None:
                self._timer = self._call_later(delay, self._on_timeout)
        return waiter

    def _deliver(self) -> None:
        waiter = self._pending
        if waiter is None:
            return
        if self._gone:
            reply = None
        elif self._lines.lines:
            reply = self._lines.pop()
            if not self._reading and self._lines.cost <= EARLY_LIMIT // 2:
                self._start_reading()
        elif self._at_eof:
            reply = None
            self._report("info", "{name}: judged gone: end of its output (EOF) when asked for a reply")
        else:
            return
        self._pending = None
        timer = self._timer
        if timer is not None:  # (a timer that has fired is None already)
            self._timer = None
            timer.cancel()
        self._fire(waiter, reply)

    def _on_timeout(self) -> None:
        self._timer = None
        waiter, self._pending = self._pending, None
        if waiter is None:
            return
        self._lines.drop_partial()  # §5.7: partial bytes at the deadline are discarded
        self._report("info", "{name}: no whole line within {timeout} s", timeout=self.options.timeout)
        self._fire(waiter, TIMEOUT)

    def _cancel_read(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()
        waiter, self._pending = self._pending, None
        if waiter is not None:  # ended while asking (a signal, the operator quit): as EOF
            self._fire(waiter, None)

    def _received(self, data: bytes) -> None:
        """A chunk of the program's output."""
        if self._quitting or self._gone:
            return  # drained and dropped
        lines = self._lines
        lines.feed(data)
        if lines.cost > EARLY_LIMIT and self._reading:
            self._stop_reading()  # the program blocks on its pipe until we need its lines
        if self._pending is not None:
            self._deliver()

    def _output_ended(self) -> None:
        """The end of the program's output (EOF)."""
        if not self._quitting:
            self._lines.end()  # §5.1: pending bytes form the last line
        self._at_eof = True
        self._deliver()

    def _overlong(self) -> None:
        self._report("info", "{name}: a reply line longer than {limit} bytes (unintelligible)", limit=self.options.max_line)

    def _judge_gone(self) -> None:
        """More than OUTPUT_LIMIT bytes wait for the program: it stopped reading its input, and its
        next ask (or the one under way) reads EOF."""
        if self._gone or self._quitting:
            return
        self._gone = True
        self._report(
            "warn", "{name}: judged gone: it stopped reading its input ({limit} bytes are waiting for it)", limit=OUTPUT_LIMIT
        )
        self._deliver()

    # --- signals and the end ---------------------------------------------------------------------

    def _look(self) -> None:
        """Remember the program's process tree as it is now (what it forked, in any session)."""
        if self._pid is None or self._reaped:
            return
        self._next_look = self._seconds() + LOOK_EVERY
        if not self._tree:  # the leader: not reaped yet when first looked at, so truly ours
            self._tree.update(children.process_tree(self._pid))
        for root, started in list(self._tree.items()):
            tree = children.process_tree(root)
            if tree.get(root) == started:  # not a reused pid
                self._tree.update(tree)

    def _signal_group(self, signum: int) -> None:
        if self._pid is None or self._reaped:
            return
        try:
            os.killpg(self._pid, signum)
        except (ProcessLookupError, PermissionError):
            pass  # the group is empty (or its leader has not made it yet)
        if signum == signal.SIGKILL:
            self._look()
            self._escaped.update((p, t) for p, t in children.end_processes(self._tree).items() if p != self._pid)

    def _grace_over(self) -> None:
        self._kill_timer = None
        self._kill()

    def _cancel_kill_timer(self) -> None:
        timer, self._kill_timer = self._kill_timer, None
        if timer is not None:
            timer.cancel()

    def _reap(self) -> None:
        """Reap the killed members of the group that are our children (the program, unless its
        driver reaps it, and what it left behind: we are its subreaper), polling until
        ``_reap_deadline``; then ``_group_reaped()``."""
        pid = self._pid
        while not self._reaped and pid is not None:
            try:
                info = os.waitid(os.P_PGID, pid, os.WEXITED | os.WNOHANG)
            except (AttributeError, OSError):  # ChildProcessError: nobody of that group is left
                break
            if info is None:  # members left that have not died yet
                if self._seconds() >= self._reap_deadline:
                    self._report("error", "{name}: process group {pgid} not reaped", pgid=pid)
                    break
                self._call_later(REAP_POLL, self._reap)
                return
            if info.si_pid == pid:
                self._record(info)
        if self._escaped:  # our children once their parents are gone (we are their subreaper)
            self._escaped = children.reap(self._escaped)
            if self._escaped and self._seconds() < self._reap_deadline:
                self._call_later(REAP_POLL, self._reap)
                return
        self._reaped = True
        self._group_reaped()

    def _record(self, info) -> None:
        """The program's exit, from ``os.waitid``."""
        self._exited = True
        if info.si_code == os.CLD_EXITED:
            self.exit_code = info.si_status
        else:  # killed or dumped
            self.exit_signal = info.si_status

    def _release_waiters(self) -> None:
        """The program has ended: ``quit()`` and ``kill()`` give None."""
        self._finished = True
        waiters, self._quit_waiters = self._quit_waiters, []
        for waiter in waiters:
            self._fire(waiter, None)
