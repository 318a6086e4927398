"""How a hosted game ends badly, in one taxonomy for every game (pure).

A seat's ``Fault`` is what its program did wrong, or None when it played the game out. The
process side (``gamed.hosting.process``) knows what the kernel and the watchdog saw (a signal, a
limit, an exit before the game); the game side knows why the game ended (the records' reason:
``timeout``, ``strikes``, ``forfeit``...). ``seat_fault`` combines them.
"""

from __future__ import annotations

import enum
import signal as _signal

import attrs


class Fault(enum.Enum):
    """Why a hosted program's game ended badly; the value is the word shown everywhere."""

    TIME = "time"  # its clock ran out, or its CPU seconds did
    MEMORY = "memory"  # it used more memory than its limit
    OUTPUT = "output"  # it wrote more than its limit (stdout, stderr, or disk in its directory)
    CRASH = "crash"  # it died by a signal or exited while the game was on
    PROTOCOL = "protocol"  # it broke the game's protocol (too many bad lines, it left its table)
    ILLEGAL = "illegal"  # it made an illegal move
    START = "start"  # it could not be started, or never took its seat


@attrs.frozen
class Trouble:
    """A fault with the words that say what happened: ``crash: killed by SIGSEGV``."""

    fault: Fault
    detail: str = ""

    def text(self) -> str:
        return f"{self.fault.value}: {self.detail}" if self.detail else self.fault.value


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number Python does not name."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# The records' reasons (lower case) that put the blame on the seat that lost.
_GAME_FAULTS = {
    "timeout": Fault.TIME,
    "strikes": Fault.PROTOCOL,
    "protocol": Fault.PROTOCOL,  # the server closed its connection (Combat: bad input)
    "unintelligable response": Fault.PROTOCOL,  # Stratego's UCC referee (its spelling)
    "illegal": Fault.ILLEGAL,
    "illegal move": Fault.ILLEGAL,
}


def game_fault(reason: str) -> Fault | None:
    """The fault of the losing seat that a game's end ``reason`` names, or None (a normal end)."""
    key = (reason or "").strip().lower()
    fault = _GAME_FAULTS.get(key) or _GAME_FAULTS.get(key.partition(":")[0])
    if fault is None and key.startswith(("response timeout", "ran out of time")):
        return Fault.TIME
    if fault is None and "illegal" in key:
        return Fault.ILLEGAL
    return fault


def seat_fault(process: Trouble | None, reason: str, lost: bool) -> Trouble | None:
    """A seat's fault: what its process did (when that ended it before the game was over), else
    what the game's end blames it for when it lost, else None."""
    if process is not None:
        return process
    if lost:
        fault = game_fault(reason)
        if fault is not None:
            return Trouble(fault, reason)
    return None
