"""Registering hosted bots: every mistake in a [bots] section stops start-up with one clear line."""

from __future__ import annotations

import os
import stat

import pytest

from gamed.config import ConfigError, build
from gamed.hosting.faults import Fault, Trouble, game_fault, seat_fault
from gamed.hosting.sandbox import rlimits
from gamed.hosting.spec import MIB, BotLimits, SpecError, parse_size

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_BOT = os.path.join(ROOT, "examples", "bots", "kalaha_bot.py")


def bots(**tables):
    return build({"bots": tables}).bots


def test_a_bot_table_becomes_a_spec_with_its_limits_and_an_absolute_command():
    cfg = bots(isolation="none", alpha={"game": "kalaha", "command": f"python3 {os.path.relpath(PY_BOT)} 7",
                                        "workdir": "persistent", "limits": {"cpu": 5, "memory": "128M", "files": 16}})
    (alpha,) = cfg.bots
    assert cfg.isolation == "none" and cfg.bot("ALPHA") is alpha
    assert alpha.game == "kalaha" and alpha.workdir == "persistent" and alpha.talk == "stdio"
    assert os.path.isabs(alpha.argv[0]) and alpha.argv[1] == PY_BOT and alpha.argv[2] == "7"
    assert alpha.limits == BotLimits(cpu=5.0, memory=128 * MIB, files=16)


@pytest.mark.parametrize(
    "table,words",
    [
        ({"game": "chess", "command": "true"}, "bots.b.game must be one of kalaha, fight, combat, stratego, connect4, not 'chess'"),
        ({"game": "kalaha"}, "bots.b.command must be a string"),
        ({"game": "kalaha", "command": "no-such-program-here"}, "'no-such-program-here' is not found on PATH"),
        ({"game": "kalaha", "command": "./nothere/bot"}, "does not exist"),
        ({"game": "kalaha", "command": "true", "limits": {"gpu": 1}}, "unknown limit bots.b.limits.gpu; known: cpu, memory"),
        ({"game": "kalaha", "command": "true", "limits": {"memory": "lots"}}, "bots.b.limits.memory must be a size"),
        ({"game": "kalaha", "command": "true", "limits": {"cpu": 0}}, "bots.b.limits.cpu must be more than 0"),
        ({"game": "kalaha", "command": "true", "workdir": "shared"}, "bots.b.workdir must be fresh or persistent"),
        ({"game": "kalaha", "command": "true", "talk": "smoke"}, "bots.b.talk must be stdio or connect"),
        ({"game": "kalaha", "command": "true", "colour": "red"}, "unknown setting bots.b.colour"),
        ({"game": "kalaha", "command": "'unclosed"}, "cannot be split into words"),
    ],
)
def test_each_mistake_is_one_clear_line(table, words):
    with pytest.raises(ConfigError) as e:
        bots(b=table)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_file_that_is_not_executable_is_refused(tmp_path):
    script = tmp_path / "bot.py"
    script.write_text("print('hi')\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(ConfigError, match="is not an executable file"):
        bots(b={"game": "kalaha", "command": str(script)})
    with pytest.raises(ConfigError, match="is not an executable file"):
        bots(b={"game": "kalaha", "command": str(tmp_path)})


def test_the_section_settings_are_checked():
    with pytest.raises(ConfigError, match="bots.isolation must be one of auto, bwrap, none"):
        bots(isolation="docker")
    with pytest.raises(ConfigError, match="unknown setting bots.colour"):
        bots(colour="red")
    with pytest.raises(ConfigError, match="bots.start_timeout must be more than 0"):
        bots(start_timeout=0)
    with pytest.raises(ConfigError, match="bots.warm must be from 0 to 64 sandboxes, not 65"):
        bots(warm=65)
    with pytest.raises(ConfigError, match="bots.warm must be a"):
        bots(warm="many")
    assert bots(warm=0).warm == 0 and bots().warm == 4
    with pytest.raises(ConfigError, match="bots.b.*a bot name is 1-32"):
        bots(**{"b c": {"game": "kalaha", "command": "true"}})


def test_sizes():
    assert parse_size("512M", "x") == 512 * MIB
    assert parse_size("64 MiB", "x") == 64 * MIB
    assert parse_size("100k", "x") == 100 * 1024
    assert parse_size(4096, "x") == 4096
    for bad in ("0", -1, True, "5 parsecs", 1.5):
        with pytest.raises(SpecError):
            parse_size(bad, "x")


def test_kernel_limits_follow_the_bot_limits():
    limits = BotLimits(cpu=2.5, memory=100 * MIB, files=20, processes=4, disk=MIB)
    as_root = rlimits(limits, root=True)
    assert as_root["RLIMIT_CPU"] == (3, 4)
    assert as_root["RLIMIT_AS"] == (356 * MIB, 356 * MIB)
    assert as_root["RLIMIT_NOFILE"] == (20, 20) and as_root["RLIMIT_FSIZE"] == (MIB, MIB)
    assert as_root["RLIMIT_CORE"] == (0, 0) and "RLIMIT_NPROC" not in as_root
    assert rlimits(limits, root=False)["RLIMIT_NPROC"] == (4, 4)


def test_the_game_end_names_the_losers_fault():
    assert game_fault("timeout") is Fault.TIME
    assert game_fault("strikes") is Fault.PROTOCOL
    assert game_fault("Selected unit cannot move that way (illegal)") is Fault.ILLEGAL
    assert game_fault("end") is None and game_fault("four") is None
    crash = Trouble(Fault.CRASH, "killed by SIGSEGV")
    assert seat_fault(crash, "forfeit", lost=True) is crash
    assert seat_fault(None, "timeout", lost=True) == Trouble(Fault.TIME, "timeout")
    assert seat_fault(None, "timeout", lost=False) is None
    assert crash.text() == "crash: killed by SIGSEGV"
