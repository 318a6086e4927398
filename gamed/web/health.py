"""``/healthz`` and ``/readyz`` on the web site (docs/web-api.md, "Health"), for load balancers,
orchestrators and monitoring.

- ``/healthz``: the daemon is alive (its reactor answers): always ``200 {"status": "alive"}``.
- ``/readyz``: the daemon can serve games: every configured port listens and the records
  database (when there is one) answers a query within ``RECORDS_WAIT`` seconds. ``200
  {"status": "ready", "checks": {...}}``, else ``503 {"status": "not ready", "checks": {...}}``
  naming what is wrong (``"ports": "not listening: kalaha tcp:4600"``, ``"ports": "draining: ..."``
  once the operator drains the daemon (docs/admin.md), ``"records": "..."``).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.logger import Logger
from twisted.web import resource, server

from gamed.web.api import write_json

RECORDS_WAIT = 2.0  # seconds the records database has to answer a readiness check


class Health(resource.Resource):
    """``/healthz``: alive."""

    isLeaf = True

    def render_GET(self, request: server.Request) -> bytes:  # noqa: N802
        return write_json(request, {"status": "alive"})

    render_HEAD = render_GET  # noqa: N815


class Ready(resource.Resource):
    """``/readyz``: the ports listen and the records answer."""

    isLeaf = True
    _log = Logger()

    def __init__(self, ports: Any, store: Any, clock: Any):
        super().__init__()
        self.ports = ports
        self.store = store
        self.clock = clock

    def render_GET(self, request: server.Request) -> int:  # noqa: N802
        d = defer.ensureDeferred(self.checks())
        gone = []
        request.notifyFinish().addErrback(lambda _: gone.append(True))

        def answer(checks: dict[str, str]) -> None:
            if gone:
                return
            ready = all(value == "ok" for value in checks.values())
            body = write_json(request, {"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503)
            request.write(body if request.method != b"HEAD" else b"")
            request.finish()

        d.addCallback(answer)
        d.addErrback(lambda f: self._log.failure("answering /readyz failed", f))
        return server.NOT_DONE_YET

    render_HEAD = render_GET  # noqa: N815

    async def checks(self) -> dict[str, str]:
        checks = {"ports": self._ports()}
        if self.store is not None:
            checks["records"] = await self._records()
        return checks

    def _ports(self) -> str:
        if self.ports is None:
            return "ok"
        if getattr(self.ports, "draining", False):
            return "draining: no new games are started (the daemon exits once the games in play have finished)"
        waiting = [f"{p.serves} {p.description}" for p in self.ports.ports if p.port is None and p.path is None]
        return "ok" if not waiting else "not listening: " + ", ".join(waiting)

    async def _records(self) -> str:
        d = self.store.run_interaction(_ping)
        d.addTimeout(RECORDS_WAIT, self.clock)
        try:
            await d
        except defer.TimeoutError:
            return f"the records database did not answer within {RECORDS_WAIT:g} s"
        except Exception as e:  # the reason, in one line (a closed or unreachable database)
            return f"the records database cannot be used: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        return "ok"


def _ping(cursor: Any) -> None:
    cursor.execute("SELECT 1")
    cursor.fetchall()


def metrics_site(metrics: resource.Resource, ports: Any, store: Any, clock: Any, limits: Any):
    """The factory builder of the metrics' own port ([web] metrics_listen): ``/metrics``,
    ``/healthz`` and ``/readyz`` alone, without access lines, behind the connection limits."""
    from gamed.textline import ConnectionLimits
    from gamed.web.channel import refusal

    root = resource.Resource()
    root.putChild(b"metrics", metrics)
    root.putChild(b"healthz", Health())
    root.putChild(b"readyz", Ready(ports, store, clock))
    site = server.Site(root)
    site.displayTracebacks = False
    site.timeOut = 60  # seconds a connection may be idle
    site.log = lambda request: None  # (a scraper's requests are no one's access log)

    def factory() -> ConnectionLimits:
        return ConnectionLimits(site, limits.max_connections, limits.max_per_peer, lambda why: refusal(503, why))

    return factory
