"""The shipped systemd units and example files are valid and say what the docs promise."""

import configparser
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def unit(name: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str
    parser.read(ROOT / "systemd" / name)
    return parser


def test_service_runs_twistd_in_the_foreground_without_a_pid_file_and_hardened():
    service = unit("gamed.service")["Service"]
    assert service["Type"] == "simple"
    assert "twistd --nodaemon --pidfile= --logger=gamed.logs.text_observer gamed --config /etc/gamed/gamed.conf" in service["ExecStart"]
    assert service["DynamicUser"] == "yes" and service["StateDirectory"] == "gamed"
    for setting in ("NoNewPrivileges", "ProtectSystem", "PrivateTmp", "RestrictAddressFamilies", "SystemCallFilter"):
        assert setting in service


def test_socket_names_the_kalaha_port_for_the_systemd_endpoint():
    socket = unit("gamed.socket")["Socket"]
    assert socket["ListenStream"].endswith(":4600")
    assert socket["FileDescriptorName"] == "kalaha"
    assert socket["Service"] == "gamed.service"


@pytest.mark.parametrize("name, port", [("fight", 4500), ("fight-gui", 4550), ("combat", 5688), ("combat-text", 5689), ("connect4", 4700), ("web", 8080), ("generic", 4800), ("metrics", 9464)])
def test_game_sockets_are_named_for_their_endpoints_and_passed_to_the_service(name, port):
    socket = unit(f"gamed-{name}.socket")["Socket"]
    assert socket["ListenStream"].endswith(f":{port}")
    assert socket["FileDescriptorName"] == name
    assert socket["Service"] == "gamed.service"
    assert f"gamed-{name}.socket" in unit("gamed.service")["Service"]["Sockets"].split()


def test_units_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit files were not verified")
    names = ("gamed.service", "gamed.socket", "gamed-fight.socket", "gamed-fight-gui.socket")
    names += ("gamed-combat.socket", "gamed-combat-text.socket", "gamed-connect4.socket", "gamed-web.socket", "gamed-generic.socket", "gamed-metrics.socket")
    for name in names:
        text = (ROOT / "systemd" / name).read_text()
        # verify insists that the ExecStart binary exists on this machine
        (tmp_path / name).write_text(text.replace("/opt/gamed/.venv/bin/twistd", shutil.which("true")))
    result = subprocess.run(
        [analyze, "verify", *(str(tmp_path / name) for name in reversed(names))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "gamed.service" not in result.stderr, result.stderr


def test_the_service_scores_at_most_1_4_under_systemd_analyze_security():
    """1.7 before issue 17 (no PrivateUsers, the whole @system-service syscall set); a change that
    makes the unit more exposed fails here."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit's exposure was not measured")
    result = subprocess.run(
        [analyze, "security", "--offline=yes", "--threshold=14", str(ROOT / "systemd" / "gamed.service")],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stdout[-600:]
    assert "Overall exposure level for gamed.service: 1." in result.stdout
