"""One configuration: every setting can be given in the config file and on the command line by
the same name (``--set section.setting=value``), and the shipped ``etc/gamed.conf.example`` lists
every one of them; a setting that exists in one place only fails here."""

from __future__ import annotations

import pathlib
import re
import tomllib

import attrs
import pytest

from gamed import config, tap
from gamed.config import Config

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "etc" / "gamed.conf.example"

# Settings whose value is a table of tables ([stratego.ai.<name>], [bots.<name>],
# [tournaments.<name>]): the example shows one such table, commented.
TABLES = {("stratego", "ai"): "stratego.ai.", ("bots", "bots"): "bots.", ("tournaments", "tournaments"): "tournaments."}


def _every_setting():
    for section, cls in config.sections(Config).items():
        for field in attrs.fields(cls):
            yield section, field.name


def _example():
    """{section: names set or shown commented (``# name = ...``)} and the text."""
    text = EXAMPLE.read_text(encoding="utf-8")
    named = {section: set(values) for section, values in tomllib.loads(text).items()}
    section = None
    for line in text.splitlines():
        header = re.match(r"^\[([\w.]+)\]", line)
        if header:
            section = header[1]
            continue
        commented = re.match(r"^# ([a-z_]\w*) = ", line)  # "#   name = " lines belong to a commented table
        if commented and section:
            named.setdefault(section, set()).add(commented[1])
    return named, text


@pytest.mark.parametrize("section, setting", list(_every_setting()))
def test_every_setting_is_in_the_example_config(section, setting):
    named, text = _example()
    if (section, setting) in TABLES:
        assert f"#   [{TABLES[section, setting]}" in text, f"the example shows no [{TABLES[section, setting]}<name>] table"
        return
    assert setting in named.get(section, set()), f"{section}.{setting} is not in {EXAMPLE.name}"


def test_every_setting_of_the_example_exists():
    named, _ = _example()
    known = {section: {f.name for f in attrs.fields(cls)} for section, cls in config.sections(Config).items()}
    for section, names in named.items():
        if "." in section:
            continue  # a table of a table setting ([stratego.ai.<name>] ...)
        assert section in known, f"[{section}] is no section"
        assert names <= known[section], f"[{section}]: {sorted(names - known[section])} are no settings"


def _toml(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return None


@pytest.mark.parametrize("section, setting", [s for s in _every_setting() if s not in TABLES])
def test_every_setting_is_taken_on_the_command_line_by_its_name(section, setting):
    default = getattr(getattr(Config(), section), setting)
    text = _toml(default)
    if text is None:  # a time control, or unset (None, a grace that falls back to [players]): a value
        text, default = ('"60s"', None) if setting == "clock" else ("30.0", 30.0)
    options = tap.options_class(tap.registry.GAMES)()
    options.parseOptions(["--records", "none", "--set", f"{section}.{setting}={text}"])
    got = getattr(getattr(options.config, section), setting)
    if setting == "clock":
        assert got is not None and got.move == 60.0
    else:
        assert got == default
