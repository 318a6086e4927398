"""The ways a hosted program is started (gamed.hosting.sandbox.launch_command): the native reaper
(gamed/hosting/reaper.c), the util-linux quick start, the Python launcher and a sandbox started
ahead (``warm_command`` + its ``start_message``, gamed.hosting.warm) all give the program the
same limits, umask, working directory and session, and the program's exit reads the same."""

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


STARTS = ["native", "quick", "python", "warm"]


def command(monkeypatch, start: str, native: str, isolation: sandbox.Isolation, workdir: str, code: int = 0):
    monkeypatch.setattr(sandbox, "NATIVE_REAPER", native if start in ("native", "warm") else "/nonexistent/gamed-reaper")
    if start == "python":
        monkeypatch.setattr(sandbox, "_QUICK_START", False)
    elif start == "quick" and not sandbox._QUICK_START:
        pytest.skip("util-linux's prlimit, setpriv or setsid is not installed")
    bot = parse_bot("probe", {"game": "kalaha", "command": sys.executable, "limits": {"files": 40, "cpu": 7}}, ("kalaha",))
    argv = (*bot.argv, "-I", "-S", "-c", REPORT)
    env = {"PATH": "/usr/bin:/bin", "CODE": str(code)}
    if start == "warm":
        return run_warm(argv, workdir, bot.limits, isolation, env)
    executable, args = sandbox.launch_command(argv, workdir, bot.limits, isolation, env)
    return subprocess.run(
        args, executable=executable, cwd=sandbox.spawn_directory(workdir, isolation), env=env,
        stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
    )


def run_warm(argv, workdir, limits, isolation, env):
    """The sandbox started ahead for ``argv``, told by its start message to run it."""
    executable, args = sandbox.warm_command(isolation, argv, workdir)
    return subprocess.run(
        args, executable=executable, env={"PATH": "/usr/bin:/bin"}, input=sandbox.start_message(argv, workdir, limits, env),
        capture_output=True, timeout=30, check=False,
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
    if start == "warm":
        gone = run_warm(("/nonexistent/bot",), str(tmp_path), bot.limits, sandbox.Isolation.detect("none"), {})
    else:
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


@pytest.mark.parametrize("isolation", ["none"] + (["bwrap"] if sandbox.Isolation.detect("auto").bwrap else []))
def test_a_sandbox_started_ahead_reads_only_its_start_message_the_rest_is_the_programs(tmp_path, monkeypatch, native_reaper, isolation):
    monkeypatch.setattr(sandbox, "NATIVE_REAPER", native_reaper)
    iso = sandbox.Isolation.detect(isolation)
    bot = parse_bot("probe", {"game": "kalaha", "command": "/bin/sh"}, ("kalaha",))
    argv = ("/bin/sh", "-c", 'read line; echo "$GREETING $line"; cat')
    executable, args = sandbox.warm_command(iso, argv, str(tmp_path))
    message = sandbox.start_message(argv, str(tmp_path), bot.limits, {"GREETING": "hello", "PATH": "/usr/bin:/bin"})
    done = subprocess.run(args, executable=executable, env={}, input=message + b"first\nsecond\n", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode().splitlines()
    if isolation == "none":
        assert out.pop(0).isdigit()  # under the reaper: the program's pid first
    assert out == ["hello first", "second"]


@pytest.mark.parametrize("garbage", [b"", b"12\nabc", b"x\n", b"99999999999\n", b"4\nab\0\0"], ids=["none", "short", "not-a-length", "huge", "too-few-fields"])
def test_a_sandbox_started_ahead_without_a_good_start_message_exits_127_and_says_so(native_reaper, garbage):
    done = subprocess.run([native_reaper, "--wait-exec"], input=garbage, capture_output=True, timeout=30)
    assert done.returncode == sandbox.EXEC_FAILED
    assert done.stderr == b"gamed reaper: no start message on stdin\n"
