"""The per-program reaper: the parent of one Stratego AI program the daemon runs, which ends
whatever the program leaves behind, when the program exits or when the daemon dies, even by
SIGKILL (docs/deployment.md, "Child processes").

``gamed.children.reaper_command`` runs it as ``python -I -S -c <start> ROOT DAEMON_PID PATH
ARGV...`` (no site, no environment variables: the start-up of a bare interpreter; it imports only
this module and ``gamed.children``, which need nothing but the standard library). The reaper

- leads a process group of its own (a Ctrl-C or a hangup meant for the daemon's group is not its
  business: the daemon ends its games itself);
- is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so that everything the program forks stays
  in its tree, even after a double fork or ``setsid()``;
- has SIGTERM as its parent death signal, so that it notices the daemon's end, whatever ended it;
- forks the program as the leader of a new session and process group, with SIGKILL as its parent
  death signal (it dies with its reaper), the signal mask the reaper was given, and SIGPIPE and
  SIGXFSZ at their defaults. The child first writes its pid and a newline to its stdout, so that
  the daemon knows the program's pid (its group's id) before any of its output, then execs PATH
  with ARGV (``argv[0]`` as given, no PATH search);
- closes its own copies of stdin and stdout: the daemon talks to the program through them
  directly, and sees their end when the program closes them or exits;
- waits in one thread, in ``poll`` on a pidfd of the program and on the wake-up fd of its
  signal handlers (``signal.set_wakeup_fd``), so that only the program's end or a signal that
  asks for it wakes it: the daemon's pausing (SIGSTOP/SIGCONT) of the program does not (no SIGCHLD
  handler), and neither does a second thread, whose exit would make the daemon's reaping of the
  reaper cost about a millisecond of its reactor's time. SIGTERM (its death signal, or the daemon
  ending the game), SIGHUP, SIGINT or SIGQUIT SIGKILL the program's whole tree at once. Orphans that
  have ended are reaped at every wake-up, and at least once a second. When the program has exited
  the reaper SIGKILLs and reaps every descendant left (``children.end_children``) and ends as the
  program did: the same exit status, or death by the same signal (with no core file of its own).
  The daemon's logs and the UCC results therefore read as if it ran the program itself.
"""

from __future__ import annotations

import os
import select
import signal

from gamed import children

# What ends the program's tree at once: blocked until their handlers are in place.
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
_REAP_EVERY = 1.0  # seconds: how long an ended orphan of the program may stay a zombie
_POLL_EVERY = 0.05  # seconds between looks at the program without a pidfd (before Linux 5.3)


def main(argv: list[str]) -> None:
    """Run ``argv`` = DAEMON_PID PATH ARGV... under this reaper (see the module docstring)."""
    daemon, path, args = int(argv[0]), argv[1], argv[2:]
    given = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # (not ignored: its children are waited for)
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    children.prctl(children.PR_SET_CHILD_SUBREAPER, 1)
    children.set_death_signal(signal.SIGTERM)
    if os.getppid() != daemon:  # the daemon died before the death signal was set
        os._exit(1)
    try:
        program = os.fork()
    except OSError as e:
        _say(f"cannot fork {path!r}: {e.strerror}")
        os._exit(127)
    if program == 0:  # pragma: no cover - the child, until exec
        _execute(path, args, given, reaper=os.getppid())
    for fd in (0, 1):
        os.close(fd)
    status = _wait(program)
    children.end_children()
    _end_as(status)


def _execute(path: str, args: list[str], mask, reaper: int) -> None:
    """The child: a new session with SIGKILL as its death signal, its pid on stdout, then exec."""
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.setsid()
        children.set_death_signal(signal.SIGKILL)
        if os.getppid() != reaper:  # the reaper died before the death signal was set
            os._exit(1)
        os.write(1, b"%d\n" % os.getpid())
        # Python ignores SIGPIPE and SIGXFSZ and an exec keeps that: give the AI the defaults back.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        os.execv(path, args)
    except OSError as e:
        _say(f"cannot execute {path!r}: {e.strerror}")
    finally:
        os._exit(127)


def _wait(program: int) -> tuple[int, int]:
    """Wait until ``program`` has ended, ending its tree on a signal of ``_ENDING`` and reaping the
    orphans that end meanwhile; the program's (si_code, si_status)."""
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_write)
    for signum in _ENDING:
        signal.signal(signum, _noted)
    poller = select.poll()
    poller.register(wake_read, select.POLLIN)
    try:
        poller.register(os.pidfd_open(program), select.POLLIN)
        every = _REAP_EVERY
    except (AttributeError, OSError):
        every = _POLL_EVERY
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _ENDING)  # one that came meanwhile is taken now
    ending = False
    while True:
        status = _reap_ended(program)
        if status is not None:
            return status
        if any(fd == wake_read for fd, _ in poller.poll(every * 1000)):
            try:
                os.read(wake_read, 512)  # (else it would wake every poll from now on)
            except BlockingIOError:
                pass
            if not ending:
                ending = True
                children.end_processes(children.process_tree(os.getpid(), include_root=False))


def _noted(signum, frame) -> None:
    """The handler of ``_ENDING``: the wake-up fd has woken the loop already."""


def _reap_ended(program: int) -> tuple[int, int] | None:
    """Reap every child that has ended (orphans of the program too); the program's (si_code,
    si_status) if it was among them."""
    status = None
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            return status
        if info is None:
            return status
        if info.si_pid == program:
            status = (info.si_code, info.si_status)


def _end_as(status: tuple[int, int]) -> None:
    """Exit with the program's status, or die of the signal that ended it."""
    code, value = status
    if code == os.CLD_EXITED:
        os._exit(value)
    children.prctl(children.PR_SET_DUMPABLE, 0)  # no core file of the reaper's own
    try:
        signal.signal(value, signal.SIG_DFL)
    except (OSError, ValueError):  # SIGKILL: cannot be caught anyway
        pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {value})
    os.kill(os.getpid(), value)
    os._exit(128 + value)  # pragma: no cover - a signal that does not end a process


def _say(text: str) -> None:
    try:
        os.write(2, f"gamed reaper: {text}\n".encode(errors="replace"))
    except OSError:
        pass
