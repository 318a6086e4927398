"""Programs the daemon runs as child processes (AI programs, native engine hosts).

Shared by every game that starts programs: ``reaper_command`` runs a Stratego AI under a reaper
of its own (``gamed.reaper``: the AI's parent and subreaper, which ends and reaps whatever the AI
leaves behind when it exits or the daemon dies); ``leader_command`` makes the child the leader of its own
process group (``spawnProcess`` has no pre-exec hook; util-linux ``setsid`` when the path is exact,
else a small Python helper), with ``argv[0]`` unchanged and no PATH search, and gives it a parent
death signal (``PR_SET_PDEATHSIG``: SIGKILL when the daemon dies, even by SIGKILL; util-linux
``setpriv --pdeathsig``, or the helper); ``spawn_leader`` does the same with ``fork`` for a
process without a reactor (gamed-stratego); ``minimal_environment`` is the explicit environment
they get; ``become_subreaper`` lets this process reap what a killed child's group leaves behind
(on Linux, ``PR_SET_CHILD_SUBREAPER``).

Escaped descendants: a program may fork a child that leaves its process group with ``setsid()``;
a signal to the group misses it. ``process_tree(pid)`` lists a program's whole tree from
``/proc`` (every descendant, whatever its session, with its start time so that a reused pid is
never hit), ``end_processes`` SIGKILLs such a list (stopping each one first, so that none forks
away while the rest are found) and ``end_children`` ends and reaps every child of this process
(what a subreaper such as gamed-stratego or the Connect Four engine host has adopted).
docs/deployment.md says what each game does with them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import time


def executable_file(path: str) -> bool:
    """True for an existing regular file the user may execute."""
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


_SETSID = next((p for p in ("/usr/bin/setsid", "/bin/setsid") if executable_file(p)), None)
_SETPRIV = next((p for p in ("/usr/bin/setpriv", "/bin/setpriv") if executable_file(p)), None)
SETSID, SETPRIV = _SETSID, _SETPRIV  # util-linux's setsid and setpriv where installed (None if not)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_PYTHON = os.path.realpath(sys.executable) if sys.executable else None  # no venv start-up cost
# The directory that holds the gamed package: the reaper's interpreter runs with -I -S (no
# environment, no site), so it is told where to import gamed.reaper from.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REAPER = "import sys;sys.path.insert(0,sys.argv[1]);from gamed.reaper import main;main(sys.argv[2:])"
# Python ignores SIGPIPE and SIGXFSZ and an exec keeps that: give the AI the defaults back.
_HELPER = (
    "import os,sys,signal\n"
    "signal.signal(signal.SIGPIPE,signal.SIG_DFL)\n"
    "signal.signal(signal.SIGXFSZ,signal.SIG_DFL)\n"
    "os.setsid()\n"
    "try:\n"
    " import ctypes\n"
    " ctypes.CDLL(None).prctl(1,9,0,0,0)\n"  # PR_SET_PDEATHSIG, SIGKILL: die with the daemon
    "except Exception:\n"
    " pass\n"
    "if os.getppid()!=int(sys.argv[1]):\n"  # the daemon died before the prctl
    " os._exit(1)\n"
    "try:\n"
    " os.execv(sys.argv[2],sys.argv[3:])\n"
    "except OSError as e:\n"
    " sys.stderr.write('cannot execute %r: %s\\n'%(sys.argv[1],e.strerror))\n"
    " os._exit(127)\n"
)


def _exact_path(given: str, cwd: str | None) -> str:
    """The path to execute for ``given`` (no PATH search): relative to our own working directory,
    made absolute when the program runs in ``cwd``."""
    path = given if "/" in given else "./" + given
    return os.path.abspath(path) if cwd is not None else path


exact_path = _exact_path  # (for gamed.hosting.sandbox's native reaper)


def reaper_command(argv: list[str], cwd: str | None = None) -> tuple[str, list[str]]:
    """(executable, args) for spawnProcess that run ``argv`` under a reaper of its own
    (``gamed.reaper``): the reaper is the spawned process, and it forks ``argv`` as the leader of a
    new session, with ``argv[0]`` unchanged and no PATH search (the path is resolved as by
    ``leader_command``). The program's pid is the first line of its stdout (before any of its own
    output); the reaper's exit reads as the program's."""
    if _PYTHON is None:  # pragma: no cover - an embedded interpreter without an executable
        raise OSError(errno.ENOEXEC, "no interpreter for the reaper")
    return _PYTHON, [_PYTHON, "-I", "-S", "-c", _REAPER, _ROOT, str(os.getpid()), _exact_path(argv[0], cwd), *argv]


def leader_command(argv: list[str], cwd: str | None = None) -> tuple[str, list[str]]:
    """(executable, args) for spawnProcess that run ``argv`` as a new process group's leader,
    with ``argv[0]`` unchanged and no PATH search (the path is resolved against our own working
    directory even when the program runs in ``cwd``)."""
    given = argv[0]
    path = _exact_path(given, cwd)
    if _SETSID is not None and _SETPRIV is not None and path == given:
        # setpriv sets the death signal and execs setsid, which execs the program: one pid, no fork
        # (the spawned child is no group leader, so setsid does not fork, which would clear it).
        return _SETPRIV, ["setpriv", "--pdeathsig", "KILL", "--", _SETSID, "--", *argv]
    if _PYTHON is None:  # pragma: no cover - an embedded interpreter without an executable
        raise OSError(errno.ENOEXEC, "no helper to start a process group")
    return _PYTHON, [_PYTHON, "-I", "-S", "-c", _HELPER, str(os.getpid()), path, *argv]


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - no C library to ask
        return None


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` (Linux); True if it succeeded."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    try:
        return libc is not None and libc.prctl(option, int(value), 0, 0, 0) == 0
    except AttributeError:  # pragma: no cover
        return False


def set_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Ask for ``signum`` when our parent (the thread that forked us) dies (Linux); True if set."""
    return prctl(PR_SET_PDEATHSIG, signum)


def spawn_leader(path: str, argv: list[str], env: dict, stdin: int, stdout: int) -> int:
    """Fork and exec ``path`` (no PATH search) with ``argv`` and ``env`` as the leader of a new
    session, with ``stdin``/``stdout`` as its fds 0 and 1, SIGPIPE and SIGXFSZ at their defaults
    and SIGKILL as its parent death signal; its pid. OSError if it cannot be executed. For a
    process without threads (gamed-stratego): ``os.posix_spawn`` cannot set a death signal."""
    libc = _libc() if sys.platform.startswith("linux") else None
    parent = os.getpid()
    report_read, report_write = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, until exec
        try:
            os.close(report_read)
            os.setsid()
            if libc is not None:
                libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            os.execve(path, argv, env)
        except OSError as e:
            try:
                os.write(report_write, str(e.errno or errno.ENOEXEC).encode())
            except OSError:
                pass
        finally:
            os._exit(127)
    os.close(report_write)
    try:
        report = os.read(report_read, 16)
    finally:
        os.close(report_read)
    if report:
        os.waitpid(pid, 0)
        code = int(report)
        raise OSError(code, os.strerror(code), path)
    return pid


# --- process trees ---------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of ``pid`` from /proc, or None if it is gone (or a zombie)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[19])


def group_members(pgid: int, since: int | None) -> dict[int, int]:
    """``{pid: start time}`` of every living process in process group ``pgid`` that started at or
    after ``since`` (the group's leader's start: a process of an older group of a reused pid is not
    one of them); a scan of all of /proc, for the rare case where the leader is gone before its
    children were seen."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is None or fields[0] in (b"Z", b"X") or int(fields[2]) != pgid:
            continue
        started = int(fields[19])
        if since is None or started >= since:
            found[int(name)] = started
    return found


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, from /proc), None when it is not running."""
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _children_of(pid: int) -> set[int] | None:
    """The children of ``pid`` from /proc/PID/task/*/children (None without that file)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return set()
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.update(int(c) for c in f.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except OSError:
            continue
    return found


def _all_parents() -> dict[int, int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                parents[int(name)] = stat[0]
    return parents


def process_tree(pid: int, include_root: bool = True) -> dict[int, int]:
    """``{pid: start time}`` of ``pid`` (if ``include_root``) and every living descendant, in
    whatever session or group; empty without /proc."""
    tree: dict[int, int] = {}
    if not os.path.isdir("/proc"):
        return tree
    parents = None
    todo = [pid]
    while todo:
        current = todo.pop()
        stat = _stat(current)
        if stat is None and current != pid:
            continue
        if stat is not None and (include_root or current != pid):
            tree[current] = stat[1]
        kids = _children_of(current)
        if kids is None:
            parents = parents if parents is not None else _all_parents()
            kids = {child for child, parent in parents.items() if parent == current}
        todo.extend(k for k in kids if k not in tree)
    return tree


def end_processes(processes: dict[int, int], rounds: int = 20) -> dict[int, int]:
    """SIGKILL every process of ``processes`` ({pid: start time}, as ``process_tree`` gives) that
    still is the process it was, and their descendants found meanwhile: each is stopped first so
    that none can fork away. The processes signalled ({pid: start time})."""
    stopped: dict[int, int] = {}
    todo = dict(processes)
    for _ in range(rounds):
        if not todo:
            break
        for pid, started in todo.items():
            if _signal_same(pid, started, signal.SIGSTOP):
                stopped[pid] = started
        found: dict[int, int] = {}
        for pid in list(todo):
            for child, started in process_tree(pid, include_root=False).items():
                if child not in stopped:
                    found[child] = started
        todo = found
    for pid, started in stopped.items():
        _signal_same(pid, started, signal.SIGKILL)
    return stopped


def _signal_same(pid: int, started: int, sig: int) -> bool:
    """Send ``sig`` to ``pid`` if it still is the process that started at ``started`` (not a new
    one that reused its number); True when it was sent."""
    stat = _stat(pid)
    if stat is None or stat[1] != started:
        return False
    try:
        os.kill(pid, sig)
    except OSError:
        return False
    return True


def zombie_of_mine(pid: int, started: int | None = None) -> bool:
    """True when ``pid`` is a zombie child of this process (that started at ``started``, if given)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] != b"Z" or int(fields[1]) != os.getpid():
        return False
    return not started or int(fields[19]) == started


def reap(pids):
    """Reap those of ``pids`` that have ended as our children; the ones still there (not ended
    yet, or not re-parented to us yet: a subreaper adopts them when their parent dies). Only a
    zombie of ours is waited for, so that a pid meanwhile reused by another child is never reaped
    behind the reactor's back; given ``{pid: start time}`` (as ``process_tree`` gives), only a
    zombie that still is the process that started then (a number reused by a child the reactor
    spawned meanwhile is left alone, and is not "still there"), and the ones left come back as
    such a dict too."""
    me = os.getpid()
    started = pids if isinstance(pids, dict) else {}
    left: set[int] = set()
    for pid in pids:
        fields = _stat_fields(pid)
        if started and (fields is None or int(fields[19]) != started[pid]):
            continue  # gone, or another process with its number
        if fields is not None and fields[0] == b"Z" and int(fields[1]) == me:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if os.path.exists(f"/proc/{pid}"):
            left.add(pid)
    return {pid: started[pid] for pid in left} if started else left


def end_children(deadline: float = 2.0, spare: dict[int, int] | None = None) -> int:
    """SIGKILL every descendant of this process and reap our children, again for those adopted
    meanwhile (a subreaper adopts the orphans of what it kills), for at most ``deadline``
    seconds; how many were signalled. For a process whose descendants are all to end (the
    engine host, gamed-stratego at the end of its match), but the processes of ``spare`` ({pid:
    start time}, e.g. what ran before the match) and their own descendants."""
    ended = 0
    me = os.getpid()
    until = time.monotonic() + deadline
    while True:
        targets = process_tree(me, include_root=False)
        for pid, started in (spare or {}).items():
            if targets.get(pid) == started:
                for kept in process_tree(pid):
                    targets.pop(kept, None)
        if targets:
            ended += len(end_processes(targets))
        direct = _children_of(me)
        if direct is None:
            direct = {c for c, p in _all_parents().items() if p == me}
        left = reap(direct)
        if (not targets and not left) or time.monotonic() >= until:
            return ended
        time.sleep(0.002)


_subreaper_done = False


def become_subreaper() -> None:
    """Make this process the reaper of orphaned descendants (Linux; once; best effort), so the
    children of an AI that exited can be reaped here instead of staying zombies under init."""
    global _subreaper_done
    if _subreaper_done or not sys.platform.startswith("linux"):
        return
    _subreaper_done = True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            _debug("PR_SET_CHILD_SUBREAPER failed: errno {errno}", errno=ctypes.get_errno())
    except (OSError, AttributeError):
        _debug("no prctl: orphans of AI programs are left to init")


def _debug(text: str, **fields) -> None:
    # twisted.logger only when there is something to say: gamed-stratego imports this module
    # without Twisted (its start-up cost, docs/performance.md).
    from twisted.logger import Logger

    Logger(namespace="gamed.children").debug(text, **fields)


def minimal_environment(extra: dict | None = None) -> dict[str, str]:
    """PATH and HOME from our environment, LANG=LC_ALL=C, then ``extra``."""
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": os.environ.get("HOME") or "/",
        "LANG": "C",
        "LC_ALL": "C",
    }
    if extra:
        env.update(extra)
    return env
