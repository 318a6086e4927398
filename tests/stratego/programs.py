"""The example C AI compiled for tests (skipped, loudly, only where no C compiler exists)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "stratego"


def compile_fast_ai(directory: pathlib.Path) -> str:
    """examples/stratego/fast_ai.c built with ``cc -O2`` into ``directory``; its path."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) ON PATH: the C example AI cannot be built and tested")
    out = directory / "fast_ai"
    subprocess.run([cc, "-O2", "-Wall", "-o", str(out), str(EXAMPLES / "fast_ai.c")], check=True, timeout=60)
    return str(out)
