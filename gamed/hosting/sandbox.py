"""How a hosted program is started: its own session and process group, a parent death signal,
resource limits, a minimal environment, and bubblewrap's namespaces where the machine has it.

``Isolation.detect`` runs once at start-up and says what this machine offers (the daemon logs it);
``launch_command`` gives the (executable, argv) for ``spawnProcess`` that set the limits, make
the program (or bubblewrap) the leader of a new session, ask for SIGKILL when the daemon dies,
restore the signals Python ignores, set umask 077 and exec bubblewrap with the program (no network,
the system read-only, its own /tmp and process namespace, only its working directory writable),
or without bubblewrap the program under a reaper (its subreaper: nothing it forks outlives it;
the program's pid is then the first line on stdout). Three ways, cheapest first: without
bubblewrap the native reaper (``gamed-reaper``, gamed/hosting/reaper.c) does it all itself; else
util-linux's prlimit, setpriv and setsid with the shell (the quick start); else a bare Python
interpreter (``-I -S``) running ``_LAUNCHER``, and ``gamed.reaper`` in Python. A Python start-up
costs some 20 ms of CPU, most of a fast bot's game (docs/performance.md, "Hosted bots").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import attrs

from gamed import children
from gamed.hosting.spec import MIB, BotLimits

_PYTHON = os.path.realpath(sys.executable) if sys.executable else "/usr/bin/python3"
EXEC_FAILED = 127  # the launcher's exit status when the program cannot be executed

# argv: DAEMON_PID LIMITS PATH ARGV...; LIMITS is "NAME=SOFT:HARD,..." of resource.RLIMIT_*.
_LAUNCHER = (
    "import os,sys,signal,resource\n"
    "for s in (signal.SIGPIPE,signal.SIGXFSZ,signal.SIGXCPU):signal.signal(s,signal.SIG_DFL)\n"
    "os.setsid()\n"
    "try:\n"
    " import ctypes\n"
    " ctypes.CDLL(None).prctl(1,9,0,0,0)\n"  # PR_SET_PDEATHSIG = SIGKILL: it dies with the daemon
    "except Exception:\n"
    " pass\n"
    "if os.getppid()!=int(sys.argv[1]):os._exit(1)\n"  # the daemon died before the prctl
    "for item in filter(None,sys.argv[2].split(',')):\n"
    " n,v=item.split('=');s,h=v.split(':')\n"
    " try:resource.setrlimit(getattr(resource,n),(int(s),int(h)))\n"
    " except (ValueError,OSError):pass\n"
    "os.umask(0o077)\n"
    "try:\n"
    " os.execv(sys.argv[3],sys.argv[4:])\n"
    "except OSError as e:\n"
    " sys.stderr.write('cannot execute %s: %s\\n'%(sys.argv[3],e.strerror))\n"
    " os._exit(127)\n"
)

# The quick start: the same steps as _LAUNCHER with small programs of util-linux and the shell
# instead of a Python interpreter, whose start-up (about 20 ms of CPU with ctypes) would be most
# of a fast bot's game (bench/hosted_games.py). prlimit sets the limits and execs setpriv, which
# sets SIGKILL as the death signal (it survives the execs that follow) and execs the shell, which
# sets the umask, exits 1 if the daemon died before the death signal was set, and execs setsid.
# Twisted's spawnProcess already gives the child the default disposition of every signal Python
# ignores (SIGPIPE, SIGXFSZ). Without any of these programs the Python launcher does it all.
_PRLIMIT = shutil.which("prlimit") or ""
_SETPRIV = children.SETPRIV or ""
_SETSID = children.SETSID or ""
_SH = "/bin/sh" if os.access("/bin/sh", os.X_OK) else ""
_QUICK_START = all((_PRLIMIT, _SETPRIV, _SETSID, _SH))
_SH_START = 'umask 077; [ "$PPID" = "$1" ] || exit 1; cd "$2" || exit 127; shift 2; exec "$@"'
_PRLIMIT_OPTIONS = {
    "RLIMIT_CPU": "--cpu",
    "RLIMIT_AS": "--as",
    "RLIMIT_NOFILE": "--nofile",
    "RLIMIT_FSIZE": "--fsize",
    "RLIMIT_CORE": "--core",
    "RLIMIT_NPROC": "--nproc",
}


def rlimits(limits: BotLimits, root: bool | None = None) -> dict[str, tuple[int, int]]:
    """The kernel limits of a program: CPU seconds (SIGXCPU at the limit, SIGKILL a second later),
    address space (twice the memory limit, at least 256 MiB more: the watchdog judges resident
    memory, this only stops a runaway), open files, file size, no core files, and processes
    (RLIMIT_NPROC counts every process of the user, so it is set only for a user other than root's
    daemon, where it is the user's own; the watchdog counts the program's tree everywhere)."""
    cpu = max(1, int(limits.cpu + 0.999))
    address = max(2 * limits.memory, limits.memory + 256 * MIB)
    out = {
        "RLIMIT_CPU": (cpu, cpu + 1),
        "RLIMIT_AS": (address, address),
        "RLIMIT_NOFILE": (limits.files, limits.files),
        "RLIMIT_FSIZE": (limits.disk, limits.disk),
        "RLIMIT_CORE": (0, 0),
    }
    if not (os.geteuid() == 0 if root is None else root):
        out["RLIMIT_NPROC"] = (limits.processes, limits.processes)
    return out


@attrs.frozen
class Isolation:
    """What the machine offers beyond resource limits: ``bwrap`` is bubblewrap's path when it
    works here (it needs user or mount namespaces), else ""."""

    bwrap: str = ""
    why: str = ""  # why there is no bubblewrap (for the start-up line)

    @classmethod
    def detect(cls, mode: str = "auto") -> Isolation:
        """``mode``: "auto" (bubblewrap if it works), "bwrap" (required: ValueError if it does
        not work) or "none"."""
        if mode == "none":
            return cls(why="switched off ([bots] isolation = none)")
        path = shutil.which("bwrap") or ""
        why = ""
        if not path:
            why = "bubblewrap (bwrap) is not installed"
        else:
            try:
                done = subprocess.run(
                    [path, *_BWRAP_BASE, "--", "/bin/true"], capture_output=True, timeout=10, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as e:
                why = f"bubblewrap does not run here: {e}"
            else:
                if done.returncode != 0:
                    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
                    why = f"bubblewrap does not work here: {text[-1] if text else done.returncode}"
        if why:
            if mode == "bwrap":
                raise ValueError(f"bots.isolation = bwrap, but {why}")
            return cls(why=why)
        return cls(bwrap=path)

    def shown(self) -> str:
        if self.bwrap:
            return "bubblewrap (no network, read-only system, own /tmp and process namespace) and resource limits"
        return f"resource limits only ({self.why})"


# Namespaces and the file system every bubblewrapped program gets.
_BWRAP_BASE = (
    "--die-with-parent",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
)


def _hidden_by_tmp(argv: tuple[str, ...]) -> list[str]:
    """The folders the sandbox's own /tmp would hide from the command: for every argument that
    is an absolute path under /tmp, the top folder under /tmp that holds it (``/tmp/x`` of
    ``/tmp/x/venv/bin/python``: an interpreter needs its whole environment, a script its
    modules), read-only."""
    seen: list[str] = []
    for arg in argv:
        if not arg.startswith("/tmp/") or not os.path.exists(arg):
            continue
        top = "/tmp/" + arg[len("/tmp/"):].split("/", 1)[0]
        if top != "/tmp/" and top not in seen:
            seen.append(top)
    return seen


def launch_command(
    argv: tuple[str, ...], workdir: str, limits: BotLimits, isolation: Isolation, env: dict[str, str],
    network: bool = False,
) -> tuple[str, list[str]]:
    """(executable, args) for ``spawnProcess`` that run ``argv`` in ``workdir`` as the sandbox
    says. ``network``: keep the network (a bot that connects to the daemon itself)."""
    if isolation.bwrap:
        program = [
            *_bwrap(isolation, argv, workdir, network),
            *[x for key, value in sorted(env.items()) for x in ("--setenv", key, value)],
            "--", *argv,
        ]
        if _native_reaper():  # one exec of the native launcher, then bubblewrap in its place
            return NATIVE_REAPER, [NATIVE_REAPER, "--exec", _limit_text(limits), workdir, str(os.getpid()), *program]
    elif _native_reaper():
        # The native reaper is its own launcher: one exec, and Twisted's posix_spawn (no path).
        start = [NATIVE_REAPER, "--start", _limit_text(limits), workdir, str(os.getpid())]
        return NATIVE_REAPER, [*start, children.exact_path(argv[0], workdir), *argv]
    else:
        # Without a process namespace, gamed.reaper is the program's parent and subreaper: what
        # the program forks, even into a session of its own, ends with it.
        program = children.reaper_command(list(argv), workdir)[1]
    if _QUICK_START:
        return _PRLIMIT, [_PRLIMIT, *_prlimit_options(limits), "--", *_quick_start(program, workdir)]
    return _PYTHON, [_PYTHON, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), _limit_text(limits), program[0], *program]


def warm_command(isolation: Isolation, argv: tuple[str, ...], workdir: str, network: bool = False) -> tuple[str, list[str]]:
    """(executable, args) of a sandbox started ahead of its game (gamed.hosting.warm): the native
    reaper waiting for its start message (``start_message``) on stdin. With bubblewrap the
    namespaces are made now, binding ``workdir`` (a fresh directory made for it) and the
    folders under /tmp that ``argv`` names; ``workdir`` is unused without bubblewrap. Needs the
    native reaper (``warm_possible``)."""
    if not isolation.bwrap:
        return NATIVE_REAPER, [NATIVE_REAPER, "--wait", str(os.getpid())]
    program = [*_bwrap(isolation, (*argv, NATIVE_REAPER), workdir, network), "--", NATIVE_REAPER, "--wait-exec"]
    # The limits are the program's own (set by --wait-exec); bubblewrap runs without them.
    return NATIVE_REAPER, [NATIVE_REAPER, "--exec", "", workdir, str(os.getpid()), *program]


def warm_kind(isolation: Isolation, argv: tuple[str, ...], network: bool) -> tuple:
    """What a sandbox started ahead for ``argv`` is made with: without bubblewrap nothing (one
    kind), with it whether it keeps the network and the folders under /tmp it binds."""
    if not isolation.bwrap:
        return ("reaper",)
    return ("bwrap", network, tuple(_hidden_by_tmp((*argv, NATIVE_REAPER))))


def warm_possible() -> bool:
    """Whether sandboxes can be started ahead here: the native reaper reads their start messages."""
    return _native_reaper()


def start_message(argv: tuple[str, ...], workdir: str, limits: BotLimits, env: dict[str, str]) -> bytes:
    """What a sandbox started ahead reads on stdin to run ``argv`` (gamed/hosting/reaper.c):
    the length line, then NUL-ended LIMITS, DIRECTORY, PATH, the argument count, the arguments and
    the environment (the program's path is absolute: ``gamed.hosting.spec`` resolves it)."""
    path = children.exact_path(argv[0], workdir)
    fields = [_limit_text(limits), workdir, path, str(len(argv)), *argv, *(f"{k}={v}" for k, v in sorted(env.items()))]
    if any("\0" in field for field in fields):
        raise ValueError("a NUL byte in a hosted program's command or environment")
    body = b"".join(os.fsencode(field) + b"\0" for field in fields)
    return b"%d\n%s" % (len(body), body)


def _bwrap(isolation: Isolation, argv: tuple[str, ...], workdir: str, network: bool) -> list[str]:
    """Bubblewrap and its options up to the environment: its namespaces (the network kept for a
    bot that connects itself), the folders under /tmp that ``argv`` names, ``workdir`` writable."""
    return [
        isolation.bwrap,
        *[a for a in _BWRAP_BASE if not (network and a == "--unshare-net")],
        *[x for path in _hidden_by_tmp(argv) for x in ("--ro-bind", path, path)],
        "--bind", workdir, workdir,
        "--chdir", workdir,
        "--clearenv",
    ]


def _limit_text(limits: BotLimits) -> str:
    """The limits as the launchers read them: ``RLIMIT_CPU=SOFT:HARD,RLIMIT_AS=...``."""
    return ",".join(f"{name}={soft}:{hard}" for name, (soft, hard) in rlimits(limits).items())


def _prlimit_options(limits: BotLimits) -> list[str]:
    return [f"{_PRLIMIT_OPTIONS[name]}={soft}:{hard}" for name, (soft, hard) in rlimits(limits).items()]


def _quick_start(program: list[str], workdir: str) -> list[str]:
    """What follows prlimit in the quick start: setpriv sets the death signal, the shell sets the
    umask, checks that the daemon is still its parent and changes to the working directory, setsid
    makes the program (bubblewrap or the reaper) a session leader (it is no group leader, so
    setsid does not fork)."""
    return [
        _SETPRIV, "--pdeathsig", "KILL", "--",
        _SH, "-c", _SH_START, "sh", str(os.getpid()), workdir,
        _SETSID, "--", *program,
    ]


# gamed-reaper (gamed/hosting/reaper.c, built beside this module by `make examples`): the same
# reaper as gamed.reaper without a Python interpreter's start-up; gamed.reaper where it is not built.
NATIVE_REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gamed-reaper")


def _native_reaper() -> bool:
    return children.executable_file(NATIVE_REAPER)


def spawn_directory(workdir: str, isolation: Isolation) -> str | None:
    """The ``path`` to give ``spawnProcess`` for a program that runs in ``workdir``: None when
    its start changes directory itself (the quick start, the native reaper), so that Twisted can
    start it with posix_spawn instead of forking the daemon (a fork copies the daemon's page
    tables: milliseconds of its CPU per program)."""
    return None if _QUICK_START or _native_reaper() else workdir


def bwrap_signal(exit_code: int | None, isolated: bool) -> int | None:
    """Bubblewrap ends with 128 + the signal that killed its program: that signal, else None."""
    if isolated and exit_code is not None and 128 < exit_code < 128 + 65:
        return exit_code - 128
    return None
