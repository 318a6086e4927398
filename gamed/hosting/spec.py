"""What a registered bot is: its game, command, working directory policy, limits and how it talks
(pure; docs/hosting.md). Bots come from the config file (``[bots.<name>]``) and from the records
database (``gamed bot add``); both are checked here, with one clear line for what is wrong.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping
from typing import Any

import attrs

from gamed.names import valid_name

KIB, MIB, GIB = 1024, 1024**2, 1024**3
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmg]i?b?|b)?\s*\Z", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": KIB, "m": MIB, "g": GIB}

WORKDIRS = ("fresh", "persistent")  # an empty directory per game (removed after), or one kept per bot
TALKS = ("stdio", "connect")  # the game's protocol on stdin/stdout, or the bot connects itself


class SpecError(ValueError):
    """A bot or a limit that cannot be used; the message names it and says what is allowed."""


def parse_size(value: Any, where: str) -> int:
    """Bytes from a whole number of bytes or ``"512M"``, ``"64 MiB"``, ``"1G"``, ``"100k"``."""
    if isinstance(value, bool):
        raise SpecError(f"{where} must be a size such as 512M, not {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and (m := _SIZE.match(value)):
        number = int(float(m[1]) * _UNITS[(m[2] or "")[:1].lower()])
    else:
        raise SpecError(f"{where} must be a size in bytes or with K, M or G (512M), not {value!r}")
    if number < 1:
        raise SpecError(f"{where} must be at least 1 byte, not {value!r}")
    return number


def _whole(value: Any, where: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < least:
        raise SpecError(f"{where} must be a whole number of at least {least}, not {value!r}")
    return int(value)


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86_400:
        raise SpecError(f"{where} must be more than 0 and at most 86400 seconds, not {value!r}")
    return float(value)


@attrs.frozen
class BotLimits:
    """What one hosted program may use in one game (each enforced as docs/hosting.md says)."""

    cpu: float = 60.0  # CPU seconds (RLIMIT_CPU), over the whole game
    memory: int = 512 * MIB  # resident memory of its whole process tree (and twice that of address space)
    files: int = 64  # open files (RLIMIT_NOFILE)
    processes: int = 32  # processes and threads of its tree
    output: int = 16 * MIB  # bytes it may write on stdout and stderr
    disk: int = 64 * MIB  # bytes in its working directory (and per file: RLIMIT_FSIZE)

    def shown(self) -> str:
        return (
            f"cpu {self.cpu:g} s, memory {self.memory // MIB} MiB, files {self.files}, "
            f"processes {self.processes}, output {self.output // KIB} KiB, disk {self.disk // KIB} KiB"
        )


_LIMIT_KINDS = {"cpu": _seconds, "memory": parse_size, "output": parse_size, "disk": parse_size}


def parse_limits(values: Mapping[str, Any], where: str, base: BotLimits | None = None) -> BotLimits:
    """``{"cpu": 10, "memory": "256M", ...}`` on top of ``base`` (the defaults)."""
    base = base or BotLimits()
    known = [f.name for f in attrs.fields(BotLimits)]
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise SpecError(f"unknown limit {where}.{key}; known: {', '.join(known)}")
        check = _LIMIT_KINDS.get(key)
        changes[key] = check(value, f"{where}.{key}") if check else _whole(value, f"{where}.{key}")
    return attrs.evolve(base, **changes)


@attrs.frozen
class BotSpec:
    """A hosted bot: ``argv`` is its command (the program resolved to an absolute path)."""

    name: str
    game: str
    argv: tuple[str, ...]
    workdir: str = "fresh"
    directory: str = ""  # the persistent working directory ("" = <state>/bots/<name>)
    talk: str = "stdio"
    limits: BotLimits = BotLimits()

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def resolve_command(command: str, where: str, base: str | None = None) -> tuple[str, ...]:
    """The command as argv with its program made absolute (``PATH`` searched for a bare name,
    relative paths taken from ``base`` or the working directory), checked to exist and be
    executable now, so that a typo stops start-up rather than every game; arguments that name
    existing files by relative paths (with a ``/``) are made absolute too."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise SpecError(f"{where}.command cannot be split into words: {e}") from None
    if not argv:
        raise SpecError(f"{where}.command must not be empty")
    program = argv[0]
    if "/" in program:
        path = os.path.abspath(os.path.join(base or os.getcwd(), program))
    else:
        path = shutil.which(program) or ""
        if not path:
            raise SpecError(f"{where}.command: {program!r} is not found on PATH")
    if not os.path.exists(path):
        raise SpecError(f"{where}.command: {path} does not exist")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise SpecError(f"{where}.command: {path} is not an executable file")
    # The program runs in its own working directory: an argument naming a file by a relative
    # path ("examples/bots/kalaha_bot.py") is made absolute, as the program's own path is.
    args = [os.path.abspath(os.path.join(base or os.getcwd(), a)) if "/" in a and not a.startswith("/")
            and os.path.exists(os.path.join(base or os.getcwd(), a)) else a for a in argv[1:]]
    return (path, *args)


def parse_bot(name: str, entry: Any, games: tuple[str, ...], base_limits: BotLimits | None = None,
              base: str | None = None) -> BotSpec:
    """One ``[bots.<name>]`` table (or a stored bot's fields) as a BotSpec, or SpecError."""
    where = f"bots.{name}"
    if not valid_name(name):
        raise SpecError(f"{where}: a bot name is 1-32 letters, digits, _ . -")
    if not isinstance(entry, Mapping):
        raise SpecError(f"{where} must be a table with game and command")
    known = ("game", "command", "workdir", "directory", "talk", "limits")
    for key in entry:
        if key not in known:
            raise SpecError(f"unknown setting {where}.{key}; known: {', '.join(known)}")
    game = entry.get("game")
    if game not in games:
        raise SpecError(f"{where}.game must be one of {', '.join(games)}, not {game!r}")
    command = entry.get("command")
    if not isinstance(command, str):
        raise SpecError(f"{where}.command must be a string such as \"python3 bot.py\"")
    workdir = entry.get("workdir", "fresh")
    if workdir not in WORKDIRS:
        raise SpecError(f"{where}.workdir must be fresh or persistent, not {workdir!r}")
    talk = entry.get("talk", "stdio")
    if talk not in TALKS:
        raise SpecError(f"{where}.talk must be stdio or connect, not {talk!r}")
    directory = entry.get("directory", "")
    if not isinstance(directory, str):
        raise SpecError(f"{where}.directory must be a path")
    limits = entry.get("limits", {})
    if not isinstance(limits, Mapping):
        raise SpecError(f"{where}.limits must be a table such as {{ cpu = 10, memory = \"256M\" }}")
    return BotSpec(
        name=name,
        game=game,
        argv=resolve_command(command, where, base),
        workdir=workdir,
        directory=os.path.abspath(directory) if directory else "",
        talk=talk,
        limits=parse_limits(limits, f"{where}.limits", base_limits),
    )
