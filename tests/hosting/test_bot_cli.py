"""``gamed bot add|list|show|remove`` as real subprocesses on real SQLite records databases (and
PostgreSQL when GAMED_TEST_POSTGRES_URL is set): the round trip, every refusal as one line and
exit status 1 with nothing stored, no process of a checked bot left behind, and the daemon (``gamed
tournament run``, ``twistd gamed``) hosting the stored bots beside the config's."""

from __future__ import annotations

import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest

from tests.hosting.test_hosted_games import programs_with
from tests.procs import wait_gone
from tests.test_accounts import url  # noqa: F401  (the SQLite / PostgreSQL fixture)

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOT = ROOT / "examples" / "bots" / "kalaha_bot.py"
PY = sys.executable


def gamed(*args, cwd=None, timeout=120):
    """``python -m gamed.cli ARGS`` (what the ``gamed`` console script runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [PY, "-m", "gamed.cli", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd or ROOT
    )


def one_error(out, *words):
    """Exit status 1, nothing on stdout, one line on stderr holding each of ``words``."""
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamed: "), out.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def names(out) -> list[str]:
    """The NAME column of ``gamed bot list``."""
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    if lines == ["no bots"]:
        return []
    assert lines[0].split() == ["NAME", "SOURCE", "GAME", "TALK", "WORKDIR", "COMMAND"]
    return [line.split()[0] for line in lines[1:]]


def test_add_list_show_remove(url, tmp_path):  # noqa: F811
    db = ("--records", url)
    # a relative path, from the working directory, is stored absolute; tmp_path marks its processes
    out = gamed("bot", "add", "alpha", "--game", "kalaha", "--command", f"{PY} examples/bots/kalaha_bot.py 7 {tmp_path}",
                "--limit", "cpu=10", "--limit", "memory=256M", *db)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "added bot alpha: kalaha, talks on stdio, fresh working directory",
        f"command: {PY} {BOT} 7 {tmp_path}",
    ]
    # the check started it once and stopped it: nothing of it runs on
    assert wait_gone(programs_with(str(tmp_path))) == []
    out = gamed("bot", "add", "beta", "--game", "kalaha", "--command", f"{PY} {BOT} 8", "--workdir", "persistent",
                "--directory", str(tmp_path / "beta"), "--talk", "connect", *db)
    assert out.returncode == 0, out.stderr

    listed = gamed("bot", "list", *db)
    assert names(listed) == ["alpha", "beta"]
    assert listed.stdout.splitlines()[1].split() == ["alpha", "records", "kalaha", "stdio", "fresh", PY, str(BOT), "7", str(tmp_path)]
    assert listed.stdout.splitlines()[2].split()[:5] == ["beta", "records", "kalaha", "connect", "persistent"]

    shown = gamed("bot", "show", "ALPHA", *db)  # any case
    assert shown.returncode == 0, shown.stderr
    fields = dict(line.split(":", 1) for line in shown.stdout.splitlines())
    fields = {key: value.strip() for key, value in fields.items()}
    assert fields["name"] == "alpha" and fields["game"] == "kalaha" and fields["talk"] == "stdio"
    assert fields["source"].startswith("records database (added ")
    assert fields["command"] == f"{PY} {BOT} 7 {tmp_path}" and fields["workdir"] == "fresh"
    assert fields["limits"] == (
        "cpu 10 s, memory 256 MiB, files 64, processes 32, output 16384 KiB, disk 65536 KiB"
    )
    beta = gamed("bot", "show", "beta", *db).stdout
    assert f"directory: {tmp_path / 'beta'}" in beta and "talk:      connect" in beta

    out = gamed("bot", "remove", "alpha", *db)
    assert (out.returncode, out.stdout) == (0, "removed bot alpha (its matches and ratings stay in the records)\n")
    one_error(gamed("bot", "remove", "alpha", *db), "no bot named alpha in the records database")
    one_error(gamed("bot", "show", "alpha", *db), "no bot named alpha in the records database")
    assert names(gamed("bot", "list", *db)) == ["beta"]
    gamed("bot", "remove", "beta", *db)
    assert gamed("bot", "list", *db).stdout == "no bots\n"


def _script(tmp_path, name: str, text: str, mode: int = 0o755) -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return path


def test_each_bad_bot_is_refused_with_one_line_and_nothing_is_stored(tmp_path):
    db = ("--records", f"sqlite:{tmp_path / 'records.sqlite'}")
    exit3 = _script(tmp_path, "exit3.sh", "#!/bin/sh\necho 'no model file here' >&2\necho more >&2\nexit 3\n")
    _script(tmp_path, "plain.txt", "not a program\n", mode=0o644)

    def add(name, command, *more):
        return gamed("bot", "add", name, "--game", "kalaha", "--command", command, *more, *db, cwd=tmp_path)

    one_error(add("gone", "./no-such-bot --fast"), f"bots.gone.command: {tmp_path / 'no-such-bot'} does not exist")
    one_error(add("gone", "no-such-program-anywhere"), "bots.gone.command: 'no-such-program-anywhere' is not found on PATH")
    one_error(add("plain", "./plain.txt"), f"bots.plain.command: {tmp_path / 'plain.txt'} is not an executable file")
    one_error(add("false", "/bin/false"), "bot false: its command exited at once (status 1)")
    one_error(add("exit3", "./exit3.sh"), "bot exit3: its command exited at once (status 3); stderr: no model file here")
    one_error(add("py", f"{PY} -c 'import no_such_module_here'"),
              "bot py: its command exited at once (status 1); stderr: ModuleNotFoundError: No module named 'no_such_module_here'")
    one_error(add("quiet", "/bin/true"), "bot quiet: its command exited at once (status 0)")
    # a bot that connects itself is started too, with a port to connect to: one that cannot, or
    # does not even try, is refused the same way
    one_error(add("noport", f"{PY} -c 'import os,socket; socket.create_connection((os.environ[\"GAMED_HOST\"], 1))'", "--talk", "connect"),
              "bot noport: its command exited at once (status 1); stderr: ConnectionRefusedError: [Errno 111] Connection refused")
    one_error(add("cquiet", "/bin/true", "--talk", "connect"), "bot cquiet: its command exited at once (status 0)")
    one_error(gamed("bot", "add", "chess", "--game", "chess", "--command", f"{PY} {BOT}", *db, cwd=tmp_path),
              "bots.chess.game must be one of kalaha,", "not 'chess'")
    one_error(add("lim", f"{PY} {BOT}", "--limit", "speed=9"),
              "unknown limit bots.lim.limits.speed; known: cpu, memory, files, processes, output, disk")
    one_error(add("lim", f"{PY} {BOT}", "--limit", "memory=lots"), "bots.lim.limits.memory must be a size")
    one_error(add("lim", f"{PY} {BOT}", "--limit", "cpu"), "--limit takes NAME=VALUE")
    one_error(add("bad:name", f"{PY} {BOT}"), "bots.bad:name: a bot name is 1-32 letters, digits, _ . -")
    one_error(add("odd", f"{PY} {BOT}", "--workdir", "shared"), "bots.odd.workdir must be fresh or persistent, not 'shared'")
    one_error(add("odd", f"{PY} {BOT}", "--talk", "smoke"), "bots.odd.talk must be stdio or connect, not 'smoke'")
    # nothing was stored by any of them
    with sqlite3.connect(tmp_path / "records.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM bots").fetchone() == (0,)

    assert add("alpha", f"{PY} {BOT} 1 {tmp_path}").returncode == 0
    one_error(add("Alpha", f"{PY} {BOT} 2 {tmp_path}"), "there is already a bot named alpha in the records database")
    assert names(gamed("bot", "list", *db)) == ["alpha"]
    one_error(gamed("bot", "remove", "nobody", *db), "no bot named nobody in the records database")
    # no database: none configured, or none at that path (none is made by a reader)
    one_error(gamed("bot", "list", "--records", "none"), "no records database configured")
    one_error(gamed("bot", "add", "beta", "--game", "kalaha", "--command", f"{PY} {BOT}", "--records", "none"),
              "no records database configured")
    one_error(gamed("bot", "list", "--records", str(tmp_path / "missing.sqlite")), f"no records database at {tmp_path / 'missing.sqlite'}")
    assert not (tmp_path / "missing.sqlite").exists()
    assert wait_gone(programs_with(str(tmp_path))) == []


def test_a_bot_that_forks_leaves_nothing_after_its_check(tmp_path):
    # the program starts a child of its own that would sleep on: the check ends the whole tree
    # (the interpreter comes as an argument: a path under /tmp, as in a fresh clone there, is
    # visible in the sandbox only when the command names it)
    sleeper = f"\"$1\" -c 'import time; time.sleep(300)' {tmp_path}"
    forks = _script(tmp_path, "forks.sh", f"#!/bin/sh\n{sleeper} &\nexec {sleeper}\n")
    out = gamed("bot", "add", "forks", "--game", "kalaha", "--command", f"{forks} {PY}", "--records", str(tmp_path / "r.sqlite"))
    assert out.returncode == 0, out.stderr
    assert wait_gone(programs_with(str(tmp_path))) == []


def _config(tmp_path, bots: dict[str, str], tournament: str = "") -> pathlib.Path:
    lines = [f'[records]\ndatabase = "{tmp_path}/records.sqlite"\n[bots]\nisolation = "none"\n']
    for name, command in bots.items():
        lines.append(f'[bots.{name}]\ngame = "kalaha"\ncommand = "{command}"\n')
    lines.append(tournament)
    path = tmp_path / "gamed.conf"
    path.write_text("\n".join(lines))
    return path


def test_list_and_show_with_the_config_show_both_and_a_config_name_is_refused(tmp_path):
    conf = _config(tmp_path, {"alpha": f"{PY} {BOT} 1 {tmp_path}"})
    out = gamed("bot", "add", "beta", "--game", "kalaha", "--command", f"{PY} {BOT} 2 {tmp_path}", "--config", str(conf))
    assert out.returncode == 0, out.stderr
    listed = gamed("bot", "list", "--config", str(conf))
    assert [line.split()[:2] for line in listed.stdout.splitlines()[1:]] == [["alpha", "config"], ["beta", "records"]]
    assert names(gamed("bot", "list", "--records", str(tmp_path / "records.sqlite"))) == ["beta"]
    assert f"source:    config {conf}" in gamed("bot", "show", "alpha", "--config", str(conf)).stdout
    one_error(gamed("bot", "add", "ALPHA", "--game", "kalaha", "--command", f"{PY} {BOT}", "--config", str(conf)),
              f"bot ALPHA is in the config {conf} already")
    one_error(gamed("bot", "remove", "alpha", "--config", str(conf)), f"bot alpha is in the config {conf}: remove its [bots.alpha] table there")
    assert wait_gone(programs_with(str(tmp_path))) == []


def test_a_tournament_plays_a_config_bot_against_a_stored_one(tmp_path):
    conf = _config(
        tmp_path, {"alpha": f"{PY} {BOT} 1 {tmp_path}"},
        '[tournaments.duel]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "stored"]\nrounds = 2\n',
    )
    out = gamed("bot", "add", "stored", "--game", "kalaha", "--command", f"{PY} {BOT} 5 {tmp_path}", "--config", str(conf))
    assert out.returncode == 0, out.stderr
    run = gamed("tournament", "run", "duel", "--config", str(conf), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "duel: [########################] 2/2 games" in run.stdout
    with sqlite3.connect(tmp_path / "records.sqlite") as conn:
        seats = conn.execute(
            "SELECT s.name FROM tournament_games g JOIN seats s ON s.match_id = g.match_id ORDER BY g.number, s.seat"
        ).fetchall()
    assert [name for (name,) in seats] == ["alpha", "stored", "stored", "alpha"]
    assert wait_gone(programs_with(str(tmp_path))) == []
    # without the stored bot the tournament names an unknown bot: refused at start, as a config typo is
    assert gamed("bot", "remove", "stored", "--config", str(conf)).returncode == 0
    one_error(gamed("tournament", "run", "duel", "--config", str(conf), cwd=tmp_path), "tournaments.duel: no hosted bot stored")


def _start(conf: pathlib.Path, tmp_path: pathlib.Path) -> subprocess.CompletedProcess:
    """``twistd gamed`` with ``conf`` (a start that is expected to stop at once)."""
    from tests.integration.support import LOOPBACK, TWISTD, child_env, gamed_args

    args = gamed_args("--config", str(conf), "--records", str(tmp_path / "records.sqlite"), kalaha=LOOPBACK)
    return subprocess.run([TWISTD, *args], cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=60)


def test_a_name_in_the_config_and_the_database_or_a_stored_program_gone_stops_start_up(tmp_path):
    db = ("--records", str(tmp_path / "records.sqlite"))
    copy = _script(tmp_path, "copy_bot.py", BOT.read_text())
    assert gamed("bot", "add", "alpha", "--game", "kalaha", "--command", f"{copy} 1 {tmp_path}", *db).returncode == 0
    conf = _config(tmp_path, {"Alpha": f"{PY} {BOT} 1 {tmp_path}"})
    started = _start(conf, tmp_path)
    assert started.returncode == 1, started.stdout + started.stderr
    lines = [line for line in (started.stdout + started.stderr).splitlines() if line.strip()]
    assert lines == ["gamed: cannot start: bot alpha is in the config and in the records database"]

    conf = _config(tmp_path, {"beta": f"{PY} {BOT} 2 {tmp_path}"})
    copy.unlink()
    started = _start(conf, tmp_path)
    assert started.returncode == 1, started.stdout + started.stderr
    lines = [line for line in (started.stdout + started.stderr).splitlines() if line.strip()]
    assert lines == [
        f"gamed: cannot start: bots.alpha.command: {copy} does not exist "
        "(bot alpha of the records database; 'gamed bot remove alpha' forgets it)"
    ]
    # show still shows it, and says what the daemon would
    shown = gamed("bot", "show", "alpha", *db)
    assert shown.returncode == 0 and f"problem:   bots.alpha.command: {copy} does not exist" in shown.stdout
    assert wait_gone(programs_with(str(tmp_path))) == []


def test_the_daemon_plays_its_tournament_with_a_stored_bot(tmp_path):
    from tests.competition.test_tournament_cli import _daemon, _wait, finished_games

    conf = _config(
        tmp_path, {"alpha": f"{PY} {BOT} 1 {tmp_path}"},
        '[tournaments.league]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "stored"]\nrounds = 2\ndaemon = true\n',
    )
    out = gamed("bot", "add", "stored", "--game", "kalaha", "--command", f"{PY} {BOT} 4 {tmp_path}", "--config", str(conf))
    assert out.returncode == 0, out.stderr
    daemon = _daemon(conf, tmp_path)
    try:
        _wait(lambda: "tournament league: finished, 2 games" in (tmp_path / "daemon.log").read_text()
              or daemon.poll() is not None, "the end line")
        assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()
    finally:
        daemon.terminate()
        daemon.wait(30)
    assert sorted(finished_games(tmp_path / "records.sqlite")) == [1, 2]
    log = (tmp_path / "daemon.log").read_text()
    assert "hosted bots: 2 registered (alpha, stored)" in log and "Traceback" not in log, log
    assert wait_gone(programs_with(str(tmp_path))) == []
