"""The effective configuration as a TOML config file (``gamed config show``, docs/deployment.md):
every section with every setting, the hosted bots, the Stratego AI programs and the tournaments.
Read back with ``gamed.config.load`` it gives the same configuration. Pure."""

from __future__ import annotations

import json
from typing import Any

import attrs

from gamed.config import AiProgram, BotsConfig, Config, StrategoConfig, TournamentsConfig, sections
from gamed.timecontrol import TimeControl


def _value(value: Any) -> str | None:
    """A setting's TOML literal, or None for a setting that is unset (None)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: the same escapes
    if isinstance(value, TimeControl):
        return json.dumps(value.notation())
    if isinstance(value, (tuple, list)):
        items = [_value(v) for v in value]
        return "[" + ", ".join(i for i in items if i is not None) + "]"
    if isinstance(value, dict):
        items = [f"{json.dumps(str(k))} = {v}" for k, v in ((k, _value(v)) for k, v in value.items()) if v is not None]
        return "{ " + ", ".join(items) + " }"
    raise TypeError(f"no TOML for {value!r}")


def _table(name: str, fields: dict[str, Any], unset: bool = True) -> list[str]:
    lines = [f"[{name}]"]
    for key, value in fields.items():
        literal = _value(value)
        if literal is not None:
            lines.append(f"{key} = {literal}")
        elif unset:
            lines.append(f"# {key}: unset (its default applies)")
    return lines + [""]


def _bot(spec: Any) -> dict[str, Any]:
    from gamed.hosting.spec import BotLimits

    default = BotLimits()
    limits = {f.name: getattr(spec.limits, f.name) for f in attrs.fields(BotLimits)
              if getattr(spec.limits, f.name) != getattr(default, f.name)}
    return {"game": spec.game, "command": spec.command, "workdir": spec.workdir, "directory": spec.directory,
            "talk": spec.talk, "limits": limits}


def to_toml(config: Config) -> str:
    """``config`` as the text of a config file."""
    out = ["# gamed config show: the effective settings", ""]
    for name, cls in sections(type(config)).items():
        section = getattr(config, name)
        if cls is BotsConfig:
            out += _table(name, {"isolation": section.isolation, "start_timeout": section.start_timeout, "warm": section.warm})
            for bot in section.bots:
                out += _table(f"{name}.{bot.name}", _bot(bot))
            continue
        if cls is TournamentsConfig:
            for t in section.tournaments:
                fields = {"game": t.game, "format": t.kind, "bots": list(t.bots), "concurrency": t.concurrency,
                          "daemon": t.daemon, **dict(t.options)}
                out += _table(f"{name}.{t.name}", fields)
            continue
        fields = {f.name: getattr(section, f.name) for f in attrs.fields(cls)}
        ais = fields.pop("ai", ()) if cls is StrategoConfig else ()
        out += _table(name, fields)
        for ai in ais:
            out += _table(f"{name}.ai.{ai.name}", {f.name: getattr(ai, f.name) for f in attrs.fields(AiProgram) if f.name != "name"})
    return "\n".join(out)
