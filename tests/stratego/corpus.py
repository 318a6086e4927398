"""The UCC 2012 competition logs (reference data from the competition, see its README in the
shared data), kept in the repository as tests/data/ucc-2012-logs.tar.xz so that a clean checkout
has them: 192 logs, 187 of which end with a result line."""

from __future__ import annotations

import functools
import pathlib
import tarfile

ARCHIVE = pathlib.Path(__file__).resolve().parents[1] / "data" / "ucc-2012-logs.tar.xz"


def split_lines(data: bytes) -> list[str]:
    """A log's lines: split on \\n only, bytes as latin-1 (a \\r inside a line is data)."""
    lines = data.decode("latin-1").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@functools.lru_cache(maxsize=1)
def logs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every log as (file name, lines), sorted by name."""
    out = []
    with tarfile.open(ARCHIVE, "r:xz") as archive:
        for member in archive.getmembers():
            if member.isfile():
                out.append((pathlib.PurePath(member.name).name, tuple(split_lines(archive.extractfile(member).read()))))
    return tuple(sorted(out))


def with_result() -> list[tuple[str, tuple[str, ...]]]:
    """The logs that end with a six-token result line (the replay oracle's corpus)."""
    return [(name, lines) for name, lines in logs() if lines and len(lines[-1].split(" ")) == 6]
