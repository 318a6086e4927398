"""The ways a hosted program is started (gamed.hosting.sandbox.launch_command): the native reaper
(gamed/hosting/reaper.c), the util-linux quick start and the Python launcher all give the program
the same limits, umask, working directory and session, and the program's exit reads the same."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from gamed.hosting import sandbox
from gamed.hosting.spec import parse_bot

SOURCE = pathlib.Path(sandbox.__file__).with_name("reaper.c")
REPORT = (
    "import os,resource;"
    "print(oct(os.umask(0)),resource.getrlimit(resource.RLIMIT_NOFILE),resource.getrlimit(resource.RLIMIT_CPU),"
    "os.getsid(0)==os.getpid(),os.getcwd(),flush=True);"
    "raise SystemExit(int(os.environ.get('CODE','0')))"
)


@pytest.fixture(scope="module")
def native_reaper(tmp_path_factory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) ON PATH: the native reaper cannot be built and tested")
    binary = tmp_path_factory.mktemp("reaper") / "gamed-reaper"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-o", str(binary), str(SOURCE)], check=True, timeout=60)
    return str(binary)


STARTS = ["native", "quick", "python"]


def command(monkeypatch, start: str, native: str, isolation: sandbox.Isolation, workdir: str, code: int = 0):
    monkeypatch.setattr(sandbox, "NATIVE_REAPER", native if start == "native" else "/nonexistent/gamed-reaper")
    if start == "python":
        monkeypatch.setattr(sandbox, "_QUICK_START", False)
    elif start == "quick" and not sandbox._QUICK_START:
        pytest.skip("util-linux's prlimit, setpriv or setsid is not installed")
    bot = parse_bot("probe", {"game": "kalaha", "command": sys.executable, "limits": {"files": 40, "cpu": 7}}, ("kalaha",))
    argv = (*bot.argv, "-I", "-S", "-c", REPORT)
    env = {"PATH": "/usr/bin:/bin", "CODE": str(code)}
    executable, args = sandbox.launch_command(argv, workdir, bot.limits, isolation, env)
    return subprocess.run(
        args, executable=executable, cwd=sandbox.spawn_directory(workdir, isolation), env=env,
        stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
    )


@pytest.mark.parametrize("start", STARTS)
def test_every_start_gives_the_same_limits_umask_directory_and_session(tmp_path, monkeypatch, native_reaper, start):
    done = command(monkeypatch, start, native_reaper, sandbox.Isolation.detect("none"), str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().split("\n")
    assert lines[0].isdigit()  # under a reaper: the program's pid first
    assert lines[1] == f"0o77 (40, 40) (7, 8) True {tmp_path}"


@pytest.mark.parametrize("start", STARTS)
def test_the_exit_status_and_a_missing_program_read_the_same(tmp_path, monkeypatch, native_reaper, start):
    done = command(monkeypatch, start, native_reaper, sandbox.Isolation.detect("none"), str(tmp_path), code=3)
    assert done.returncode == 3
    bot = parse_bot("probe", {"game": "kalaha", "command": sys.executable}, ("kalaha",))
    executable, args = sandbox.launch_command(("/nonexistent/bot",), str(tmp_path), bot.limits, sandbox.Isolation.detect("none"), {})
    gone = subprocess.run(
        args, executable=executable, cwd=sandbox.spawn_directory(str(tmp_path), sandbox.Isolation.detect("none")),
        env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
    )
    assert gone.returncode == sandbox.EXEC_FAILED and b"cannot execute" in gone.stderr


@pytest.mark.skipif(not sandbox.Isolation.detect("auto").bwrap, reason="bubblewrap does not work here")
@pytest.mark.parametrize("start", STARTS)
def test_bubblewrap_starts_give_the_same_limits_and_umask(tmp_path, monkeypatch, native_reaper, start):
    done = command(monkeypatch, start, native_reaper, sandbox.Isolation.detect("bwrap"), str(tmp_path))
    assert done.returncode == 0, done.stderr
    umask, *_ = done.stdout.decode().split()
    assert umask == "0o77"
    assert "(40, 40) (7, 8)" in done.stdout.decode()
    assert str(tmp_path) in done.stdout.decode()
    assert os.listdir(tmp_path) == []
