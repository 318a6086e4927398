"""The child-process side of a native Connect Four engine (spec connect-four §1-§2).

Run as ``python -m gamed.connect4.host [--nice N] [--cpus 1,2] PATH_TO_ENGINE.so`` (the options
lower the host's priority and keep it to some CPUs, so that engine searches leave the daemon room). It loads the library with ctypes,
declares the ten ``C4_*`` functions and serves them over a tiny line protocol on stdin/stdout, so
that a crash, a hang or a corrupted heap in the engine only ever takes this process down.
The daemon side is :mod:`gamed.connect4.native_engine`.

Protocol (ASCII, one line each way, ``\\n``-terminated; the host answers requests in order)::

    host, once at start:   READY                       library loaded, all ten symbols found
                           ERR <message>               load failure / missing symbol; exit status 2
    DESC                -> OK <text>                   C4_Desc (control characters become spaces)
    NEWGAME <w> <h> [n] -> OK <int>                    C4_NewGame(w, h, n)   (n defaults to 0)
    PLAY <player> <col> -> OK <int>                    C4_PlayMove
    AUTO <player> <lvl> -> OK <long>                   C4_AutoMove (the column played, -1 if full)
    STATE <x> <y>       -> OK <long>                   C4_GetState
    WINNER <player>     -> OK <int>                    C4_IsWinner
    TIE                 -> OK <int>                    C4_IsTie
    WINCOORDS <player>  -> OK <x1> <y1> <x2> <y2>      C4_WinCoords
    ENDGAME             -> OK                          C4_EndGame
    LEVEL <lvl>         -> OK <int> [<name>]           C4_EnumLevels (the name only when TRUE)
    QUIT                -> (no reply) exit 0; end of input does the same
    anything else       -> ERR <message>               the host keeps serving

Integers are reported raw (as the C function returned them); the daemon side validates them.
The engine's own writes to file descriptor 1 are redirected to stderr so that they cannot corrupt
the protocol: the replies go to a private duplicate of the original stdout.

The host never outlives its daemon nor leaves anything behind: it is a child subreaper
(``PR_SET_CHILD_SUBREAPER``), so whatever the engine forks stays in its tree even after a
``setsid()``; a thread reads the requests, so the end of input (the daemon closed it, or died,
even by SIGKILL) is seen while the engine computes; and its parent death signal is SIGTERM,
taken by another thread with ``sigwait``. On QUIT, the end of input or that signal the host
SIGKILLs and reaps every descendant (``gamed.children.end_children``) and exits.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading

from gamed import children

TEXT_SIZE = 256  # buffer for C4_Desc / C4_EnumLevels names

_L = ctypes.c_long
_I = ctypes.c_int
_PL = ctypes.POINTER(ctypes.c_long)

# name: (argtypes, restype)
SIGNATURES: dict[str, tuple[list, object]] = {
    "C4_Desc": ([ctypes.c_char_p, ctypes.c_size_t], None),
    "C4_NewGame": ([_L, _L, _L], _I),
    "C4_PlayMove": ([_L, _L], _I),
    "C4_AutoMove": ([_L, _L], _L),
    "C4_GetState": ([_L, _L], _L),
    "C4_IsWinner": ([_L], _I),
    "C4_IsTie": ([], _I),
    "C4_WinCoords": ([_L, _PL, _PL, _PL, _PL], None),
    "C4_EndGame": ([], None),
    "C4_EnumLevels": ([_L, ctypes.c_char_p, ctypes.c_size_t], _I),
}


class LoadError(Exception):
    pass


def load(path: str) -> dict:
    """The ten functions of the library at ``path``, with argtypes/restype declared."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LoadError(f"cannot load {path}: {e}") from None
    functions = {}
    missing = []
    for name, (argtypes, restype) in SIGNATURES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.argtypes = argtypes
        f.restype = restype
        functions[name] = f
    if missing:
        raise LoadError("missing symbol " + " ".join(missing))
    return functions


def _text(buf: ctypes.Array) -> str:
    buf[len(buf) - 1] = b"\0"  # never trust the engine to terminate it
    raw = buf.value.decode("latin-1")
    return "".join(c if c.isprintable() else " " for c in raw).strip()


def serve_line(f: dict, line: str) -> str | None:
    """The reply line (without newline) for one request line; None for QUIT."""
    words = line.split()
    if not words:
        return "ERR empty request"
    cmd, args = words[0].upper(), words[1:]
    try:
        nums = [int(a) for a in args]
    except ValueError:
        return "ERR arguments must be integers"

    def need(*counts):
        if len(nums) not in counts:
            raise ValueError(f"{cmd} takes {' or '.join(map(str, counts))} argument(s)")

    try:
        if cmd == "QUIT":
            return None
        if cmd == "DESC":
            need(0)
            buf = ctypes.create_string_buffer(TEXT_SIZE)
            f["C4_Desc"](buf, TEXT_SIZE - 1)
            return ("OK " + _text(buf)).rstrip()
        if cmd == "NEWGAME":
            need(2, 3)
            w, h, n = (nums + [0])[:3]
            return f"OK {f['C4_NewGame'](w, h, n)}"
        if cmd == "PLAY":
            need(2)
            return f"OK {f['C4_PlayMove'](*nums)}"
        if cmd == "AUTO":
            need(2)
            return f"OK {f['C4_AutoMove'](*nums)}"
        if cmd == "STATE":
            need(2)
            return f"OK {f['C4_GetState'](*nums)}"
        if cmd == "WINNER":
            need(1)
            return f"OK {f['C4_IsWinner'](*nums)}"
        if cmd == "TIE":
            need(0)
            return f"OK {f['C4_IsTie']()}"
        if cmd == "WINCOORDS":
            need(1)
            c = [ctypes.c_long(-1) for _ in range(4)]
            f["C4_WinCoords"](nums[0], *(ctypes.byref(x) for x in c))
            return "OK " + " ".join(str(x.value) for x in c)
        if cmd == "ENDGAME":
            need(0)
            f["C4_EndGame"]()
            return "OK"
        if cmd == "LEVEL":
            need(1)
            buf = ctypes.create_string_buffer(TEXT_SIZE)
            ok = f["C4_EnumLevels"](nums[0], buf, TEXT_SIZE - 1)
            return f"OK {ok} {_text(buf)}".rstrip() if ok else f"OK {ok}"
    except (ValueError, OverflowError, ctypes.ArgumentError) as e:
        return f"ERR {cmd}: {e}"
    return f"ERR unknown request {cmd[:40]}"


def _apply_policy(argv: list[str]) -> list[str]:
    """Apply ``--nice N`` and ``--cpus N,N...`` (leading options) to this process; the rest."""
    while len(argv) >= 2 and argv[0] in ("--nice", "--cpus"):
        option, value, argv = argv[0], argv[1], argv[2:]
        try:
            if option == "--nice":
                os.nice(int(value))
            else:
                cpus = {int(c) for c in value.split(",") if c}
                os.sched_setaffinity(0, cpus & os.sched_getaffinity(0) or os.sched_getaffinity(0))
        except OSError as e:  # e.g. forbidden by a sandbox: the engine still runs, just not tuned
            print(f"gamed.connect4.host: {option} {value} not applied: {e}", file=sys.stderr)
    return argv


def _end(status: int) -> None:
    """End every descendant (stopped first, then SIGKILLed and reaped), then this process at once
    (a thread of ours may be inside the engine)."""
    try:
        children.end_children()
    finally:
        os._exit(status)


def _read_requests(requests: queue.Queue) -> None:
    """The reading thread: request lines into ``requests``; QUIT or the end of input ends all."""
    for raw in sys.stdin.buffer:
        words = raw.split()
        if words and words[0].upper() == b"QUIT":
            break
        requests.put(raw)
    _end(0)


def _watch_signals() -> None:
    """The signal thread: SIGTERM (our parent death signal) or SIGHUP ends all."""
    signal.sigwait({signal.SIGTERM, signal.SIGHUP})
    _end(0)


def _guard() -> None:
    """Subreaper, parent death signal and the two watching threads (see the module docstring)."""
    children.become_subreaper()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})  # for sigwait only
    children.set_death_signal(signal.SIGTERM)
    if os.getppid() == 1:  # the daemon died before the death signal was set
        os._exit(0)
    threading.Thread(target=_watch_signals, name="signals", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _guard()
    # Replies go to a private copy of stdout; the engine's fd 1 becomes stderr.
    out = os.fdopen(os.dup(1), "w", encoding="ascii", errors="replace", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        argv = _apply_policy(argv)
    except ValueError as e:
        out.write(f"ERR bad host option: {' '.join(str(e).split())}\n")
        return 2
    if len(argv) != 1:
        out.write("ERR usage: python -m gamed.connect4.host [--nice N] [--cpus N,N...] PATH_TO_ENGINE.so\n")
        return 2
    try:
        functions = load(argv[0])
    except LoadError as e:
        out.write(f"ERR {' '.join(str(e).split())}\n")
        return 2
    out.write("READY\n")
    requests: queue.Queue = queue.Queue()
    threading.Thread(target=_read_requests, args=(requests,), name="requests", daemon=True).start()
    while True:
        reply = serve_line(functions, requests.get().decode("latin-1"))
        if reply is None:
            _end(0)
        out.write(reply + "\n")


if __name__ == "__main__":
    sys.exit(main())
