"""The example C bots (examples/bots/*.c) compiled once per test run into a temporary folder, so
the tests never depend on a `make examples` that a fresh checkout has not run (skipped, loudly,
only where no C compiler exists)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

BOTS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "bots"


@pytest.fixture(scope="session")
def c_bots(tmp_path_factory) -> dict[str, str]:
    """``{"kalaha": path, "connect4": path, "combat": path, "fight": path}`` of the example C bots, freshly built."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) ON PATH: the example C bots cannot be built and tested")
    out = tmp_path_factory.mktemp("c-bots")
    built = {}
    for game in ("kalaha", "connect4", "combat", "fight"):
        binary = out / f"{game}_bot"
        subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-o", str(binary), str(BOTS / f"{game}_bot.c")], check=True, timeout=60)
        built[game] = str(binary)
    return built
