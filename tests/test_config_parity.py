"""One configuration: every setting of every section is in etc/gamed.conf.example (set, or shown
commented out where its default cannot be written in TOML), and every line of the example given
on the command line as --set section.setting=value gives the same setting as the file does. A
setting added in one place only fails here."""

from __future__ import annotations

import pathlib
import re
import tomllib

import attrs
import pytest

from gamed import config
from gamed.tap import Options

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "etc" / "gamed.conf.example"
# Tables of named entries, not settings: [bots.<name>], [tournaments.<name>], [stratego.ai.<name>].
TABLES = {("bots", "bots"), ("tournaments", "tournaments"), ("stratego", "ai")}


def settings() -> list[tuple[str, str]]:
    out = []
    for section, cls in config.sections(config.Config).items():
        for field in attrs.fields(cls):
            if (section, field.name) not in TABLES and not field.name.startswith("_"):
                out.append((section, field.name))
    return out


def example_lines() -> dict[tuple[str, str], tuple[str, bool]]:
    """(section, setting) -> (its value's text, commented out) for every line of the example."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    section = ""
    for line in EXAMPLE.read_text().splitlines():
        header = re.match(r"^\s*\[([\w.]+)\]\s*$", line)
        if header:
            section = header.group(1)
            continue
        setting = re.match(r"^(#\s*)?([a-z_]+)\s*=\s*(.+)$", line)
        if setting and section:
            key = (section, setting.group(2))
            if key not in found or (found[key][1] and not setting.group(1)):
                found[key] = (setting.group(3), bool(setting.group(1)))
    return found


def test_every_setting_is_in_the_example_file():
    lines = example_lines()
    missing = [f"{s}.{n}" for s, n in settings() if (s, n) not in lines]
    assert not missing, f"etc/gamed.conf.example lacks {', '.join(missing)}"


def test_the_example_names_no_setting_the_daemon_does_not_have():
    known = set(settings())
    unknown = [f"{s}.{n}" for (s, n), (_, commented) in example_lines().items()
               if (s, n) not in known and not commented and s.split(".")[0] not in ("bots", "tournaments", "stratego")]
    assert not unknown, unknown


@pytest.mark.parametrize("section,name", settings(), ids=[f"{s}.{n}" for s, n in settings()])
def test_each_setting_given_with_set_is_the_one_the_file_gives(tmp_path, section, name):
    text, commented = example_lines().get((section, name), (None, True))
    if text is None:
        pytest.fail(f"{section}.{name} is not in the example file")
    value_text = text.split(" #")[0].strip()
    in_file = tmp_path / "one.conf"
    in_file.write_text(f"[{section}]\n{name} = {value_text}\n")
    from_file = config.load(str(in_file))
    options = Options()
    options.parseOptions(["--set", f"{section}.{name}={value_text}"])
    from_command_line = options.effective_config()
    assert getattr(getattr(from_command_line, section), name) == getattr(getattr(from_file, section), name)
    if not commented:  # the file's line is the default, as the example says
        assert getattr(getattr(from_file, section), name) == getattr(getattr(config.Config(), section), name)
