"""``/healthz`` and ``/readyz`` over real loopback HTTP: alive always; ready only while every port
listens and the records database answers, with the reason when not."""

from __future__ import annotations

import pytest_twisted
from twisted.internet import endpoints, reactor

from gamed.observers import LiveHub
from gamed.records import RecordStore
from tests.web.client import get_json
from tests.web.test_api import close, serve


@pytest_twisted.ensureDeferred
async def test_alive_and_ready_without_records():
    s = await serve(LiveHub(reactor))
    try:
        assert await get_json(s.url + "/healthz") == (200, {"status": "alive"})
        assert await get_json(s.url + "/readyz") == (200, {"status": "ready", "checks": {"ports": "ok"}})
    finally:
        await close(s)


@pytest_twisted.ensureDeferred
async def test_not_ready_while_a_port_does_not_listen_or_the_records_cannot_be_used(tmp_path):
    store = RecordStore(str(tmp_path / "records.sqlite"), reactor)
    await store.start()
    s = await serve(LiveHub(reactor, store))
    try:
        assert await get_json(s.url + "/readyz") == (200, {"status": "ready", "checks": {"ports": "ok", "records": "ok"}})
        # a port of the daemon that has not come up (yet)
        s.web.ports.watch("kalaha", "tcp:4600", endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1"))
        code, body = await get_json(s.url + "/readyz")
        assert code == 503 and body["status"] == "not ready"
        assert body["checks"] == {"ports": "not listening: kalaha tcp:4600", "records": "ok"}
        await store.close()
        code, body = await get_json(s.url + "/readyz")
        assert code == 503 and body["checks"]["records"].startswith("the records database cannot be used: ")
        assert await get_json(s.url + "/healthz") == (200, {"status": "alive"}), "alive all the same"
    finally:
        await close(s)


@pytest_twisted.ensureDeferred
async def test_access_lines_go_to_their_own_log_or_nowhere(tmp_path):
    from twisted.logger import capturedLogs

    path = tmp_path / "access.log"
    s = await serve(LiveHub(reactor), access_log=str(path))
    try:
        with capturedLogs() as events:
            await get_json(s.url + "/healthz")
        assert not any("GET /healthz" in str(e.get("message", "")) for e in events), "not in the daemon's log"
    finally:
        await close(s)
    (line,) = path.read_text().splitlines()
    assert '"GET /healthz HTTP/1.1" 200' in line and line.startswith('"127.0.0.1"')
    quiet = await serve(LiveHub(reactor))  # the default: no access log at all
    try:
        with capturedLogs() as events:
            await get_json(quiet.url + "/healthz")
        assert not any("GET /healthz" in str(e.get("message", "")) for e in events)
    finally:
        await close(quiet)
