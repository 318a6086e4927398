"""Prometheus metrics of the daemon (docs/metrics.md), with ``prometheus_client``.

Almost everything is read at scrape time from what the daemon keeps anyway, so the move path
pays nothing for it: the games running and the connections of each game service, its seats away,
the ``ERROR`` codes its text protocols sent (``GameService.errors``), the moves and finished games
per game type and end reason that the live hub counts, the hosted programs running, the records
writes in flight. Two things are measured as they happen: how late a timer fires on the reactor
(a ``LoopingCall`` every ``LATENESS_EVERY`` seconds, a histogram) and how long each records write
takes (a histogram, fed by ``RecordStore.write_observers``). The process collector adds memory,
CPU and open files.

``Metrics.resource()`` is the ``/metrics`` page: rendered on the reactor thread (the collectors
read the reactor's own state, which no other thread may touch), in the text exposition format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from twisted.application.service import Service
from twisted.internet import task
from twisted.logger import Logger
from twisted.web import resource, server

from gamed import scheduler

_log = Logger()

LATENESS_EVERY = 0.5  # seconds between two looks at the reactor's lateness
LATENESS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _DaemonCollector:
    """What the daemon's services, hub, hosted-game runner and records hold just now."""

    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def describe(self):  # no samples at registration (the services may not exist yet)
        return []

    def collect(self):
        m = self.metrics
        running = GaugeMetricFamily("gamed_games_running", "Games in play, per game", labels=["game"])
        connections = GaugeMetricFamily("gamed_connections", "Open player connections, per game", labels=["game"])
        away = GaugeMetricFamily("gamed_players_away", "Seats whose player dropped and may come back, per game", labels=["game"])
        errors = CounterMetricFamily("gamed_errors", "ERROR lines sent to players, per game and code", labels=["game", "code"])
        for name, service in sorted(m.services.items()):
            try:
                count = service.games_running() if hasattr(service, "games_running") else len(getattr(service, "games", {}))
                running.add_metric([name], count)
                connections.add_metric([name], len(getattr(service, "connections", ())))
                seats = getattr(service, "seats", None)
                if hasattr(seats, "away_count"):
                    away.add_metric([name], seats.away_count())
                for code, n in sorted(getattr(service, "errors", {}).items()):
                    errors.add_metric([name, str(code)], n)
            except Exception:  # a scrape never fails for one service's figures
                _log.failure("metrics of {game} could not be read", game=name)
        yield from (running, connections, away, errors)
        hub = m.hub
        if hub is not None:
            moves = CounterMetricFamily("gamed_moves", "Moves played (a simultaneous turn counts once), per game", labels=["game"])
            for game, count in sorted(hub.moves.items()):
                moves.add_metric([game], count)
            finished = CounterMetricFamily("gamed_games_finished", "Games finished, per game and end reason", labels=["game", "reason"])
            for (game, reason), count in sorted(hub.finished.items()):
                finished.add_metric([game, reason], count)
            yield from (moves, finished)
        timeouts = CounterMetricFamily("gamed_timeouts", "Seats whose time ran out in a turn, per game", labels=["game"])
        for game, count in sorted(scheduler.TIMEOUTS.items()):
            timeouts.add_metric([game or "other"], count)
        yield timeouts
        hosted = m.hosted()
        if hosted is not None:
            yield GaugeMetricFamily("gamed_hosted_games", "Hosted bots' games being played", value=len(hosted.running))
            yield GaugeMetricFamily("gamed_hosted_programs", "Hosted programs running", value=hosted.programs_running())
            warm = hosted.warm
            yield GaugeMetricFamily("gamed_hosted_sandboxes_waiting", "Sandboxes started ahead, waiting for a program",
                                    value=warm.count() if warm is not None else 0)
        admin = m.admin()
        if admin is not None:  # the admin console (gamed.admin): its kicks and the bans in force
            yield CounterMetricFamily("gamed_admin_kicks", "Connections the operator closed (kick, ban)", value=admin.kicks)
            bans = GaugeMetricFamily("gamed_bans", "Bans in force, per kind", labels=["kind"])
            for kind in ("address", "account"):
                bans.add_metric([kind], sum(1 for b in admin.bans() if b.kind == kind))
            yield bans
        store = getattr(hub, "store", None)
        if store is not None:
            yield GaugeMetricFamily("gamed_records_queue", "Records database work in flight (writes and reads)",
                                    value=store.pending)


class Metrics(Service):
    """The daemon's metrics: a registry of its own (not prometheus_client's global one), the
    collectors above, and the reactor-lateness probe while the service runs."""

    def __init__(self, clock: Any, services: Mapping[str, Any], hub: Any = None,
                 hosted: Callable[[], Any] = lambda: None, admin: Callable[[], Any] = lambda: None):
        self.clock = clock
        self.admin = admin  # the admin console's gamed.admin.daemon.DaemonTarget, or None
        self.services = services
        self.hub = hub
        self.hosted = hosted
        self.registry = CollectorRegistry()
        self.registry.register(_DaemonCollector(self))
        ProcessCollector(registry=self.registry)
        self.lateness = Histogram("gamed_reactor_lateness_seconds", "How late a timer fires on the reactor",
                                  buckets=LATENESS_BUCKETS, registry=self.registry)
        self.writes = Histogram("gamed_records_write_seconds", "How long one records write (a finished match) takes",
                                buckets=WRITE_BUCKETS, registry=self.registry)
        store = getattr(hub, "store", None)
        if store is not None:
            store.write_observers.append(self.writes.observe)
        self._probe: task.LoopingCall | None = None
        self._due: float | None = None

    def startService(self) -> None:  # noqa: N802
        super().startService()
        self._probe = task.LoopingCall(self._look)
        self._probe.clock = self.clock
        self._due = self.clock.seconds() + LATENESS_EVERY
        self._probe.start(LATENESS_EVERY, now=False)

    def stopService(self):  # noqa: N802
        if self._probe is not None and self._probe.running:
            self._probe.stop()
        self._probe = None
        return super().stopService()

    def _look(self) -> None:
        now = self.clock.seconds()
        if self._due is not None:
            self.lateness.observe(max(0.0, now - self._due))
        self._due = now + LATENESS_EVERY

    def scrape(self) -> bytes:
        """The metrics in the text exposition format."""
        return generate_latest(self.registry)

    def resource(self) -> resource.Resource:
        return MetricsPage(self)


class MetricsPage(resource.Resource):
    """``/metrics``."""

    isLeaf = True

    def __init__(self, metrics: Metrics):
        super().__init__()
        self.metrics = metrics

    def render_GET(self, request: server.Request) -> bytes:  # noqa: N802
        request.setHeader(b"content-type", CONTENT_TYPE_LATEST.encode("ascii"))
        request.setHeader(b"cache-control", b"no-store")
        return self.metrics.scrape()
