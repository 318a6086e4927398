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
- waits, with every signal it acts on blocked and taken by ``sigwaitinfo`` (one thread, no
  handler): each SIGCHLD reaps whatever has ended. SIGTERM (its death signal, or the daemon
  ending the game), SIGHUP, SIGINT or SIGQUIT SIGKILL the program's whole tree at once. When the
  program has exited it SIGKILLs and reaps every descendant left (``children.end_children``) and
  ends as the program did: the same exit status, or death by the same signal (with no core file
  of its own). The daemon's logs and the UCC results therefore read as if it ran the program itself.
"""

from __future__ import annotations

import os
import signal

from gamed import children

# What the reaper acts on; all of them blocked from its start and taken by sigwaitinfo.
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
_WATCHED = (signal.SIGCHLD, *_ENDING)


def main(argv: list[str]) -> None:
    """Run ``argv`` = DAEMON_PID PATH ARGV... under this reaper (see the module docstring)."""
    daemon, path, args = int(argv[0]), argv[1], argv[2:]
    given = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
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
    """Reap children until ``program`` has ended, ending its tree on a signal that asks for it;
    the program's (si_code, si_status)."""
    ending = False
    while True:
        info = signal.sigwaitinfo(_WATCHED)
        if info.si_signo != signal.SIGCHLD:
            if not ending:
                ending = True
                children.end_processes(children.process_tree(os.getpid(), include_root=False))
            continue
        status = _reap_ended(program)
        if status is not None:
            return status


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
