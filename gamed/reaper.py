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
- waits: its main thread reaps each child that exits (orphans of the program too; being only
  stopped or continued, as the daemon pauses the program, wakes nobody), and a second thread takes
  SIGTERM (its death signal, or the daemon ending the game), SIGHUP, SIGINT and SIGQUIT with
  ``sigwait`` and then SIGKILLs the program's whole tree at once. When the program has exited the
  reaper SIGKILLs and reaps every descendant left (``children.end_children``) and ends as the
  program did: the same exit status, or death by the same signal (with no core file of its own).
  The daemon's logs and the UCC results therefore read as if it ran the program itself.
"""

from __future__ import annotations

import _thread  # one watching thread, never joined: not worth threading's import time
import os
import signal

from gamed import children

# What ends the program's tree at once; blocked from the start, taken by the watching thread.
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)


def main(argv: list[str]) -> None:
    """Run ``argv`` = DAEMON_PID PATH ARGV... under this reaper (see the module docstring)."""
    daemon, path, args = int(argv[0]), argv[1], argv[2:]
    given = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # (never ignored: its children are waited for)
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
    _thread.start_new_thread(_end_on_signal, ())
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


def _end_on_signal() -> None:
    """The watching thread: a signal of ``_ENDING`` SIGKILLs the program's whole tree (the main
    thread then sees the program end)."""
    signal.sigwait(_ENDING)
    children.end_processes(children.process_tree(os.getpid(), include_root=False))


def _wait(program: int) -> tuple[int, int]:
    """Reap every child that exits until ``program`` has; the program's (si_code, si_status)."""
    while True:
        info = os.waitid(os.P_ALL, 0, os.WEXITED)
        if info.si_pid == program:
            return info.si_code, info.si_status


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
    signal.pthread_kill(_thread.get_ident(), value)  # to this thread: not the one in sigwait
    os._exit(128 + value)  # pragma: no cover - a signal that does not end a process


def _say(text: str) -> None:
    try:
        os.write(2, f"gamed reaper: {text}\n".encode(errors="replace"))
    except OSError:
        pass
