"""Programs the daemon runs as child processes (AI programs, native engine hosts).

Shared by every game that starts programs: ``leader_command`` makes the child the leader of its own
process group (``spawnProcess`` has no pre-exec hook; util-linux ``setsid`` when the path is exact,
else a small Python helper), with ``argv[0]`` unchanged and no PATH search; ``minimal_environment``
is the explicit environment they get; ``become_subreaper`` lets this process reap what a killed
child's group leaves behind (on Linux, ``PR_SET_CHILD_SUBREAPER``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys


def executable_file(path: str) -> bool:
    """True for an existing regular file the user may execute."""
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


_SETSID = next((p for p in ("/usr/bin/setsid", "/bin/setsid") if executable_file(p)), None)
_PYTHON = os.path.realpath(sys.executable) if sys.executable else None  # no venv start-up cost
# Python ignores SIGPIPE and SIGXFSZ and an exec keeps that: give the AI the defaults back.
_HELPER = (
    "import os,sys,signal\n"
    "signal.signal(signal.SIGPIPE,signal.SIG_DFL)\n"
    "signal.signal(signal.SIGXFSZ,signal.SIG_DFL)\n"
    "os.setsid()\n"
    "try:\n"
    " os.execv(sys.argv[1],sys.argv[2:])\n"
    "except OSError as e:\n"
    " sys.stderr.write('cannot execute %r: %s\\n'%(sys.argv[1],e.strerror))\n"
    " os._exit(127)\n"
)


def leader_command(argv: list[str], cwd: str | None = None) -> tuple[str, list[str]]:
    """(executable, args) for spawnProcess that run ``argv`` as a new process group's leader,
    with ``argv[0]`` unchanged and no PATH search (the path is resolved against our own working
    directory even when the program runs in ``cwd``)."""
    given = argv[0]
    path = given if "/" in given else "./" + given
    if cwd is not None:
        path = os.path.abspath(path)
    if _SETSID is not None and path == given:
        return _SETSID, ["setsid", "--", *argv]
    if _PYTHON is None:  # pragma: no cover - an embedded interpreter without an executable
        raise OSError(errno.ENOEXEC, "no helper to start a process group")
    return _PYTHON, [_PYTHON, "-I", "-S", "-c", _HELPER, path, *argv]


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
        if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
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
