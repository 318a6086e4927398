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


async def _get_with(url: str, headers: dict[bytes, list[bytes]]):
    from twisted.web.client import Agent, readBody
    from twisted.web.http_headers import Headers

    response = await Agent(reactor).request(b"GET", url.encode(), Headers(headers))
    await readBody(response)
    return response.code


@pytest_twisted.ensureDeferred
async def test_x_forwarded_for_names_the_client_only_behind_a_trusted_proxy(tmp_path):
    path = tmp_path / "access.log"
    trusting = await serve(LiveHub(reactor), access_log=str(path), trusted_proxies="127.0.0.1, ::1")
    try:
        # the client, then a second trusted proxy: the last address that is not a trusted proxy
        await _get_with(trusting.url + "/healthz", {b"x-forwarded-for": [b"198.51.100.4, 203.0.113.9, 127.0.0.1"]})
        await _get_with(trusting.url + "/healthz", {b"x-forwarded-for": [b"not-an-address"]})
        await _get_with(trusting.url + "/healthz", {})
    finally:
        await close(trusting)
    lines = path.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ['"203.0.113.9"', '"127.0.0.1"', '"127.0.0.1"']
    other = tmp_path / "other.log"
    distrusting = await serve(LiveHub(reactor), access_log=str(other), trusted_proxies="127.0.0.2")
    try:
        await _get_with(distrusting.url + "/healthz", {b"x-forwarded-for": [b"203.0.113.9"]})
    finally:
        await close(distrusting)
    assert other.read_text().split()[0] == '"127.0.0.1"', "from an untrusted peer the header means nothing"


def test_a_trusted_proxy_is_exempt_from_the_per_address_connection_limit():
    from gamed.config import Limits, WebConfig
    from gamed.web.service import WebService
    from twisted.internet.address import IPv4Address

    web = WebService(WebConfig(trusted_proxies="127.0.0.1"), Limits(max_per_peer=1), LiveHub(reactor), reactor)
    limits = web.port_factory()
    proxy_conns = [limits.buildProtocol(IPv4Address("TCP", "127.0.0.1", n)) for n in (1, 2, 3)]
    assert all(type(p).__name__ != "_Refusal" for p in proxy_conns)
    limits.buildProtocol(IPv4Address("TCP", "192.0.2.1", 1))
    assert type(limits.buildProtocol(IPv4Address("TCP", "192.0.2.1", 2))).__name__ == "_Refusal"
