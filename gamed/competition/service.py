"""The daemon's own tournaments: every ``[tournaments.<name>]`` with ``daemon = true`` is played
(or, after a restart, resumed where it stopped) while the daemon runs.

``TournamentService`` starts the config's daemon tournaments on the ``Director`` when the daemon
starts; when it stops, the director stops them first (the games in play are abandoned and played
again on resume; every finished game is stored already), then the hosted programs still running
are ended. A tournament that cannot run (its definition changed since it was stored, a bot gone)
is logged with its reason; the others go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.application.service import Service
from twisted.internet import defer
from twisted.logger import Logger

from gamed.competition.director import Definition, Director, Report


class TournamentService(Service):
    """Runs ``definitions`` on ``director`` while the daemon runs (see the module docstring)."""

    _log = Logger()

    def __init__(self, director: Director, definitions: Sequence[Definition], hosted: Any = None):
        self.director = director
        self.definitions = list(definitions)
        self.hosted = hosted
        self.runs: dict[str, defer.Deferred] = {}
        self.reports: dict[str, Report] = {}

    def startService(self) -> None:  # noqa: N802
        super().startService()
        for definition in self.definitions:
            self._log.info(
                "tournament {name}: playing ({description})", name=definition.name, description=definition.format.describe()
            )
            d = self.director.run(definition)
            d.addCallbacks(self._ended, self._failed, callbackArgs=(definition.name,), errbackArgs=(definition.name,))
            self.runs[definition.name] = d

    def _ended(self, report: Report, name: str) -> None:
        self.reports[name] = report
        if report.state == "finished":
            self._log.info("tournament {name}: finished, {n} games", name=name, n=report.finished)
        else:
            self._log.info(
                "tournament {name}: stopped after {n} games; it resumes when the daemon starts again", name=name, n=report.finished
            )

    def _failed(self, failure: Any, name: str) -> None:
        self._log.error("tournament {name} cannot go on: {why}", name=name, why=failure.getErrorMessage())

    def stopService(self) -> defer.Deferred | None:  # noqa: N802
        if not self.running:
            return None
        super().stopService()
        self.director.stop()
        d = defer.DeferredList(list(self.runs.values()))
        if self.hosted is not None:
            d.addBoth(lambda _: self.hosted.stop())
        return d
