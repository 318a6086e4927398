"""Programs started through ``gamed.children.leader_command`` die with the process that started
them, even a SIGKILLed one (their parent death signal), whichever helper starts them; a program
under its reaper (``reaper_command``) does too, and so does what it forked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gamed import children
from tests.procs import read_pid, wait_gone
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


# Starts argv under its reaper (reaper_command) with a pipe as its stdout, prints the reaper's pid
# and the program's (the first line of that stdout), waits.
REAPED_STARTER = """
import os, sys
from gamed.children import reaper_command
executable, args = reaper_command(sys.argv[1:])
r, w = os.pipe()
pid = os.posix_spawn(executable, args, dict(os.environ), file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])
os.close(w)
line = b""
while not line.endswith(b"\\n"):
    line += os.read(r, 1) or b"\\n"
print(pid, line.decode().strip(), flush=True)
os.waitpid(pid, 0)
"""

# Forks a child that leaves the session with setsid() and writes its pid to argv[1], then sleeps.
ESCAPING = """import os, sys, time
if os.fork() == 0:
    os.setsid()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\\n" % os.getpid())
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""


def test_what_a_program_forked_dies_with_its_sigkilled_daemon_through_its_reaper(tmp_path):
    program = write_script(tmp_path / "escaping", ESCAPING)
    escaped = tmp_path / "escaped"
    starter = subprocess.Popen(
        [sys.executable, "-c", REAPED_STARTER, program, str(escaped)], cwd=tmp_path, stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    forked = None
    try:
        reaper, pid = map(int, starter.stdout.readline().split())
        forked = read_pid(escaped)
        assert os.getsid(forked) == forked != pid and os.getsid(pid) == pid, "both lead sessions of their own"
        starter.kill()
        starter.wait(timeout=10)
        assert wait_gone([reaper, pid, forked], 10) == [], "the reaper, its program or what that forked outlived the daemon"
    finally:
        starter.kill()
        starter.wait(timeout=10)
        if forked is not None and wait_gone([forked], 0):
            os.kill(forked, 9)


def test_group_members_are_the_processes_of_a_group_started_since_its_leader():
    from gamed.children import group_members, start_time

    leader = subprocess.Popen(["/bin/sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        started = None
        for _ in range(500):  # until the shell has started both
            started = start_time(leader.pid)
            members = group_members(leader.pid, started)
            if len(members) == 3:
                break
            time.sleep(0.01)
        assert leader.pid in members and len(members) == 3, members
        assert group_members(leader.pid, started + 10**9) == {}  # none started after that: an older group
        assert group_members(os.getpgrp(), None)  # (this test's own group has members)
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()
