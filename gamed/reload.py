"""Re-reading the settings at run time: SIGHUP, or ``systemctl reload gamed`` (docs/deployment.md,
"Reloading the settings").

The config file is read again, the command line's settings on top, exactly as at start-up. A file
that cannot be used changes nothing (``settings not reloaded: <the one line>``). Otherwise every
setting that differs from the running ones is either applied now or named as needing a restart,
in one log line: ``settings reloaded from FILE: applied kalaha.move_time, ladder.window; need a
restart: web.cors``. Applied now:

- ``[kalaha]``: every setting but ``listen`` and ``grace``, for the games and connections that
  begin from then on (a game in play keeps the settings it began with);
- ``[ladder]``: every setting but ``enabled``, for the next pairing rounds.
"""

from __future__ import annotations

import signal
from typing import Any

import attrs
from twisted.logger import Logger
from twisted.python import usage

from gamed.config import sections

# section -> the settings of it that cannot change while the daemon runs (all the others can)
_APPLIED_BUT = {"kalaha": {"listen", "grace"}, "ladder": {"enabled"}}


def differences(old: Any, new: Any) -> list[str]:
    """``section.setting`` of every setting that differs between two configs, in their order."""
    out = []
    for name, cls in sections(type(old)).items():
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            continue
        for f in attrs.fields(cls):
            if getattr(a, f.name) != getattr(b, f.name):
                out.append(f"{name}.{f.name}")
    return out


class Reloader:
    """Applies a re-read configuration to the running services (``services``: {game: service})."""

    _log = Logger()

    def __init__(self, options: Any, current: Any, services: dict[str, Any]):
        self.options = options
        self.current = current
        self.services = services

    def install(self, reactor: Any) -> None:
        """Reload on SIGHUP (from the reactor's thread)."""
        signal.signal(signal.SIGHUP, lambda signum, frame: reactor.callFromThread(self.reload))

    def reload(self) -> tuple[list[str], list[str]] | None:
        """Read the settings again and apply them: (applied, needing a restart), None when refused."""
        where = self.options["config"] or "the command line"
        try:
            new = self.options.effective_config()
        except usage.UsageError as e:
            self._log.warn("settings not reloaded (the running ones stay): {why}", why=str(e))
            return None
        applied, restart = [], []
        for name in differences(self.current, new):
            section, setting = name.split(".", 1)
            if section in _APPLIED_BUT and setting not in _APPLIED_BUT[section] and self._apply(section, new):
                applied.append(name)
            else:
                restart.append(name)
        self.current = new
        if not applied and not restart:
            self._log.info("settings reloaded from {where}: nothing changed", where=where)
        else:
            self._log.info(
                "settings reloaded from {where}: applied {applied}; need a restart: {restart}",
                where=where, applied=", ".join(applied) or "none", restart=", ".join(restart) or "none",
                applied_settings=applied, restart_settings=restart,
            )
        return applied, restart

    def _apply(self, section: str, new: Any) -> bool:
        if section == "kalaha":
            service = self.services.get("kalaha")
            if service is None:
                return False
            service.config = new.kalaha
            return True
        if section == "ladder":
            ladders = [s.ladder for s in self.services.values() if getattr(s, "ladder", None) is not None]
            for ladder in ladders:
                ladder.rules = new.ladder.rules()
                ladder.interval = new.ladder.interval
            return bool(ladders)
        return False
