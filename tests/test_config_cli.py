"""``gamed config check FILE`` and ``gamed config show``: a file is checked as the daemon reads it
(one line for what is wrong), and the effective settings are printed as a config file that reads
back as the same configuration."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from gamed import config

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOT = ROOT / "examples" / "bots" / "kalaha_bot.py"


def gamed(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gamed.cli", *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


FULL = f"""
[kalaha]
move_time = 7.5
clock = "5m+2s"
first = "alternate"
[connect4]
listen = ["tcp:4701", "tcp:4702:interface=127.0.0.1"]
[stratego]
rounds = 1
[stratego.ai.first]
command = "/bin/true --x"
[stratego.ai.second]
command = "/bin/true"
workdir = "persistent"
[web]
cors = "https://example.org"
trusted_proxies = "127.0.0.1"
[ladder]
window = 150.0
[bots.alpha]
game = "kalaha"
command = "{sys.executable} {BOT} 1"
limits = {{ cpu = 5, memory = "256M" }}
[bots.beta]
game = "kalaha"
command = "{sys.executable} {BOT} 2"
workdir = "persistent"
[tournaments.cup]
game = "kalaha"
format = "sprt"
bots = ["alpha", "beta"]
elo1 = 20
concurrency = 2
"""


def test_check_says_ok_or_names_what_is_wrong(tmp_path):
    good = tmp_path / "good.conf"
    good.write_text(FULL)
    out = gamed("config", "check", str(good), cwd=tmp_path)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"{good}: ok\n", "")
    bad = tmp_path / "bad.conf"
    bad.write_text("[kalaha]\nmove_time = -1\n")
    out = gamed("config", "check", str(bad), cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "kalaha.move_time must not be negative" in out.stderr
    out = gamed("config", "check", str(tmp_path / "missing.conf"), cwd=tmp_path)
    assert out.returncode == 1 and "cannot read config file" in out.stderr


def test_show_prints_every_setting_and_reads_back_as_the_same_configuration(tmp_path):
    src = tmp_path / "src.conf"
    src.write_text(FULL)
    out = gamed("config", "show", "--config", str(src), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    shown = tmp_path / "shown.conf"
    shown.write_text(out.stdout)
    assert config.load(str(shown)) == config.load(str(src))
    for setting in ("[records]", "database = ", "[players]", "guests = true", "[bots.alpha]", "[tournaments.cup]",
                    "[stratego.ai.first]", 'clock = "5m+2s"', "window = 150.0"):
        assert setting in out.stdout, setting
    defaults = gamed("config", "show", cwd=tmp_path)
    (tmp_path / "defaults.conf").write_text(defaults.stdout)
    assert config.load(str(tmp_path / "defaults.conf")) == config.Config()


def test_a_records_file_in_a_missing_folder_is_an_error_not_a_new_database(tmp_path):
    for database in ("/nonexistent/dir/x.sqlite", "sqlite:///nonexistent/dir/x.sqlite"):
        conf = tmp_path / "c.conf"
        conf.write_text(f'[records]\ndatabase = "{database}"\n')
        out = gamed("config", "check", str(conf), cwd=tmp_path)
        assert out.returncode == 1 and "records.database: the folder /nonexistent/dir does not exist" in out.stderr, out
        assert out.stderr.count("\n") == 1
    conf.write_text(f'[records]\ndatabase = "{tmp_path}/x.sqlite"\n')
    assert gamed("config", "check", str(conf), cwd=tmp_path).returncode == 0
    assert not (tmp_path / "x.sqlite").exists(), "checking creates nothing"


def test_check_reads_the_admin_consoles_key_files_and_makes_none(tmp_path):
    from tests.integration.adminsupport import make_key

    keys_file = tmp_path / "authorized_keys"
    conf = tmp_path / "c.conf"
    conf.write_text(f'[admin]\nlisten = "tcp:2222:interface=127.0.0.1"\nauthorized_keys = "{keys_file}"\n'
                    f'host_key = "{tmp_path}/host_key"\n')
    out = gamed("config", "check", str(conf), cwd=tmp_path)
    assert out.returncode == 1 and f"admin.authorized_keys {keys_file}: cannot be read" in out.stderr, out
    assert out.stderr.count("\n") == 1
    keys_file.write_bytes(make_key(tmp_path / "k").public().toString("openssh") + b"\n")
    assert gamed("config", "check", str(conf), cwd=tmp_path).stdout == f"{conf}: ok\n"
    assert not (tmp_path / "host_key").exists(), "checking makes no host key"
    (tmp_path / "host_key").write_text("not a key\n")
    out = gamed("config", "check", str(conf), cwd=tmp_path)
    assert out.returncode == 1 and "admin.host_key" in out.stderr and "not a usable private key" in out.stderr, out
