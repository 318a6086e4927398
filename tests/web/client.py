"""A small HTTP client for the web API over real TCP: JSON GETs and server-sent event streams."""

from __future__ import annotations

import collections
import json

from twisted.internet import defer, protocol, reactor
from twisted.web.client import Agent, readBody
from twisted.web.http_headers import Headers

WAIT = 15  # seconds any single wait may take


async def get(url: str, timeout: float = WAIT):
    """(status, content-type, body bytes) of a GET."""
    agent = Agent(reactor)
    d = agent.request(b"GET", url.encode(), Headers({b"accept": [b"*/*"]}))
    d.addTimeout(timeout, reactor)
    response = await d
    body = readBody(response)
    body.addTimeout(timeout, reactor)
    data = await body
    return response.code, response.headers.getRawHeaders(b"content-type", [b""])[0].decode(), data


async def get_json(url: str, timeout: float = WAIT):
    """(status, parsed JSON) of a GET."""
    code, ctype, data = await get(url, timeout)
    assert ctype.startswith("application/json"), (code, ctype, data[:200])
    return code, json.loads(data)


class EventReader(protocol.Protocol):
    """Reads a text/event-stream body: ``await next_event()`` gives (name, data); comments are
    kept in ``comments``; ``done`` fires when the server ends the stream."""

    def __init__(self):
        self.buffer = b""
        self.events: collections.deque = collections.deque()
        self.waiters: collections.deque = collections.deque()
        self.comments: list[str] = []
        self.done = defer.Deferred()
        self.raw = b""

    def dataReceived(self, data):  # noqa: N802
        self.raw += data
        self.buffer += data
        while b"\n\n" in self.buffer:
            frame, self.buffer = self.buffer.split(b"\n\n", 1)
            name, payload = None, []
            for line in frame.decode("utf-8").split("\n"):
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                elif line.startswith("event: "):
                    name = line[len("event: "):]
                elif line.startswith("data: "):
                    payload.append(line[len("data: "):])
            if name is not None:
                event = (name, json.loads("\n".join(payload)))
                if self.waiters:
                    self.waiters.popleft().callback(event)
                else:
                    self.events.append(event)

    def connectionLost(self, reason):  # noqa: N802
        while self.waiters:
            self.waiters.popleft().errback(AssertionError("the stream ended while waiting for an event"))
        if not self.done.called:
            self.done.callback(None)

    def next_event(self, timeout: float = WAIT) -> defer.Deferred:
        if self.events:
            return defer.succeed(self.events.popleft())
        if self.done.called:
            return defer.fail(AssertionError("the stream has ended"))
        d = defer.Deferred()
        self.waiters.append(d)
        d.addTimeout(timeout, reactor)
        return d

    async def expect(self, name: str, timeout: float = WAIT):
        """Skip events until one named ``name``; return its data."""
        while True:
            event, data = await self.next_event(timeout)
            if event == name:
                return data

    def stop(self) -> None:
        self.transport.stopProducing()


async def events(url: str, timeout: float = WAIT):
    """Open an event stream: (response, EventReader)."""
    agent = Agent(reactor)
    d = agent.request(b"GET", url.encode(), Headers({b"accept": [b"text/event-stream"]}))
    d.addTimeout(timeout, reactor)
    response = await d
    reader = EventReader()
    response.deliverBody(reader)
    return response, reader
