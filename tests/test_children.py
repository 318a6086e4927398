"""Programs started through ``gamed.children.leader_command`` die with the process that started
them, even a SIGKILLed one (their parent death signal), whichever helper starts them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gamed import children
from tests.procs import wait_gone
from tests.stratego.puppet import write_script

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux")]

ROOT = Path(__file__).resolve().parents[1]

# Starts argv through leader_command (fork and exec, as spawnProcess does), prints the pid, waits.
STARTER = """
import os, sys
from gamed.children import leader_command
executable, args = leader_command(sys.argv[1:])
pid = os.posix_spawn(executable, args, dict(os.environ))
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def _cmdline(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


@pytest.mark.parametrize("how", ["exact path (setpriv and setsid)", "bare name (the Python helper)"])
def test_a_program_dies_with_its_sigkilled_parent(tmp_path, how):
    sleeper = write_script(tmp_path / "sleeper", "import time\ntime.sleep(60)\n")
    argument = sleeper if how.startswith("exact") else "sleeper"
    if how.startswith("exact") and children._SETPRIV is None:
        pytest.skip("no util-linux setpriv: the Python helper is used for every path")
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, argument], cwd=tmp_path, stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        pid = int(starter.stdout.readline())
        deadline = time.monotonic() + 10
        while _cmdline(pid)[1:2] != [b"-IS"]:  # the script runs (not a helper any more)
            assert time.monotonic() < deadline, f"the program never started: {_cmdline(pid)}"
            time.sleep(0.01)
        assert os.getsid(pid) == pid, "it leads its own session"
        starter.kill()
        starter.wait(timeout=10)
        assert wait_gone([pid], 10) == [], "the program outlived the process that started it"
    finally:
        starter.kill()
        starter.wait(timeout=10)
