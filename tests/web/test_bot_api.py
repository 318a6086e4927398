"""The HTTP bot API over real loopback HTTP (in-process, real reactor): a bot with an account's
token reads its NDJSON stream and POSTs its requests; it plays Kalaha against the computer and
against a person on the Kalaha port; its seat is away while no stream is open and comes back with
the next. Every message is checked against the generic protocol's schema."""

from __future__ import annotations

import collections
import io
import json
import pathlib
import re

import pytest
import pytest_twisted
from twisted.internet import defer, endpoints, protocol, reactor, task
from twisted.web.client import Agent, FileBodyProducer, readBody
from twisted.web.http_headers import Headers

from gamed.config import Limits, WebConfig
from gamed.generic.service import GenericService
from gamed.connect4.generic import Connect4Host
from gamed.connect4.service import Connect4Service, Connect4Settings
from gamed.kalaha.generic import KalahaHost
from gamed.observers import LiveHub
from tests.generic.harness import check_server_message
from tests.kalaha.harness import make_service
from tests.memaccounts import MemoryAccounts
from tests.web.client import WAIT


class Lines(protocol.Protocol):
    """An NDJSON body: ``await next()`` gives the next message (blank keep-alive lines skipped)."""

    def __init__(self):
        self.buffer = b""
        self.messages: collections.deque = collections.deque()
        self.waiters: collections.deque = collections.deque()
        self.done = defer.Deferred()
        self.raw: list[str] = []  # every line, as sent
        self._taken = 0

    async def next_raw(self) -> str:
        """The next line as the server wrote it."""
        if self._taken >= len(self.raw):
            await self.next()
        else:
            self.messages.popleft()
        self._taken += 1
        return self.raw[self._taken - 1]

    def left(self) -> list[str]:
        return self.raw[self._taken:]

    def dataReceived(self, data):  # noqa: N802
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if not line:
                continue
            message = check_server_message(json.loads(line))
            self.raw.append(line.decode("ascii"))
            if self.waiters:
                self.waiters.popleft().callback(message)
            else:
                self.messages.append(message)

    def connectionLost(self, reason):  # noqa: N802
        while self.waiters:
            self.waiters.popleft().errback(AssertionError("the stream ended"))
        if not self.done.called:
            self.done.callback(None)

    def next(self) -> defer.Deferred:
        if self.messages:
            return defer.succeed(self.messages.popleft())
        if self.done.called:
            return defer.fail(AssertionError("the stream has ended"))
        d = defer.Deferred()
        self.waiters.append(d)
        d.addTimeout(WAIT, reactor)
        return d

    async def until(self, kind: str, **fields) -> tuple[list[dict], dict]:
        seen = []
        while True:
            message = await self.next()
            seen.append(message)
            if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
                return seen, message


class World:
    def __init__(self, url, kalaha_port, token):
        self.url, self.kalaha_port, self.token = url, kalaha_port, token

    def auth(self, token=None):
        return Headers({b"authorization": [f"Bearer ann:{token or self.token}".encode()]})

    async def stream(self, token=None):
        response = await Agent(reactor).request(b"GET", f"{self.url}/api/bot/stream".encode(), self.auth(token))
        if response.code != 200:
            return response.code, json.loads(await readBody(response))
        assert response.headers.getRawHeaders(b"content-type") == [b"application/x-ndjson"]
        lines = Lines()
        response.deliverBody(lines)
        return 200, lines

    async def post_raw(self, kind, data):
        """(status, the answer's body as text) of a POST."""
        d = Agent(reactor).request(b"POST", f"{self.url}/api/bot/{kind}".encode(), self.auth(),
                                   FileBodyProducer(io.BytesIO(data)))
        d.addTimeout(WAIT, reactor)
        response = await d
        return response.code, (await readBody(response)).decode()

    async def post(self, kind, body=None, raw=None, headers=None):
        data = raw if raw is not None else json.dumps(body or {}).encode()
        d = Agent(reactor).request(b"POST", f"{self.url}/api/bot/{kind}".encode(), headers or self.auth(),
                                   FileBodyProducer(io.BytesIO(data)))
        d.addTimeout(WAIT, reactor)
        response = await d
        answer = json.loads(await readBody(response))
        return response.code, answer


@pytest_twisted.async_yield_fixture
async def world():
    accounts = MemoryAccounts()
    token = accounts.add("ann", "bot")
    kalaha = make_service(reactor, accounts=accounts, pair_delay=0.05)
    connect4 = Connect4Service(Connect4Settings(board=False), Limits(), reactor, players=kalaha.players)
    hosts = {"kalaha": KalahaHost(kalaha), "connect4": Connect4Host(connect4)}
    generic = GenericService(hosts, kalaha.players, Limits(), reactor)
    from gamed.web.service import WebService

    web = WebService(WebConfig(keepalive=0.2), Limits(), LiveHub(reactor), reactor, players=kalaha.players)
    web.serve_bots(generic)
    web.startService()
    kalaha.startService()
    connect4.startService()
    site = await endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(web.port_factory())
    kport = await endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(kalaha.port_factory())
    yield World(f"http://127.0.0.1:{site.getHost().port}", kport.getHost().port, token)
    await web.stopService()
    await kalaha.stopService()
    await connect4.stopService()
    await site.stopListening()
    await kport.stopListening()


ENGINES = {"kalaha": ("random", "computer-random", {"end"}), "connect4": ("gamed:0", "gamed:0", {"four", "draw"})}


@pytest.mark.parametrize("game", ["kalaha", "connect4"])
@pytest_twisted.ensureDeferred
async def test_a_bot_plays_a_whole_game_against_the_computer_over_http(world, game):
    level, computer, reasons = ENGINES[game]
    code, lines = await world.stream()
    assert code == 200
    hello = await lines.next()
    assert hello["type"] == "hello" and hello["games"] == ["kalaha", "connect4"]
    code, answer = await world.post("play", {"game": game, "opponent": {"kind": "engine", "level": level}, "id": 4})
    assert (code, answer) == (200, {"type": "ok", "for": "play", "game": game, "table": None, "id": 4}), answer
    _, started = await lines.until("started")
    assert started["seats"] == ["ann", computer] and started["seat"] == 0
    refused_once = False
    while True:
        message = await lines.next()
        if message["type"] == "ended":
            break
        if message["type"] == "state" and "actions" in message:
            if not refused_once:
                refused_once = True
                code, error = await world.post("act", {"action": 99})
                assert code == 400 and error["code"] == "no_such_action" and error["legal"] == message["actions"]
                assert error["retries_left"] == 2  # 3 strikes in either game: this was the first
            code, answer = await world.post("act", {"action": 0, "turn": message["turn"]})
            assert (code, answer) == (200, {"type": "ok", "for": "act"})
    assert message["reason"] in reasons and sorted(message["scores"]) in ([0.0, 1.0], [0.5, 0.5])


@pytest_twisted.ensureDeferred
async def test_requests_without_a_token_a_stream_or_a_proper_body_are_refused(world):
    code, answer = await world.stream(token="x" * 32)
    assert code == 401 and answer["code"] == "refused" and answer["refusal"]
    code, answer = await world.post("play", {"game": "kalaha"}, headers=Headers())
    assert code == 401 and "Authorization: Bearer" in answer["error"]
    code, answer = await world.post("play", {"game": "kalaha"})
    assert code == 409 and answer["code"] == "not_now" and "stream" in answer["text"]
    code, lines = await world.stream()
    await lines.next()
    for body, raw, status, error in [
        (None, b"{nope", 400, "bad_json"),
        (None, b"[1]", 400, "not_an_object"),
        ({"game": "chess"}, None, 404, "no_such_game"),
        ({"game": "kalaha", "colour": "red"}, None, 400, "unknown_field"),
        ({}, None, 400, "missing_field"),
    ]:
        code, answer = await world.post("play", body, raw=raw)
        assert (code, answer["type"], answer["code"], answer["for"]) == (status, "error", error, "play"), answer
    code, answer = await world.post("act", {"action": 0})
    assert code == 409 and answer["code"] == "not_now"
    code, answer = await world.post("dance")
    assert code == 404
    code, games = await world.post("games")
    assert code == 404


@pytest_twisted.ensureDeferred
async def test_a_person_on_telnet_meets_the_http_bot_and_its_seat_survives_a_new_stream(world):
    code, lines = await world.stream()
    await lines.next()
    assert (await world.post("play", {"game": "kalaha", "table": "t1"}))[0] == 200
    await lines.until("waiting")
    person = await endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", world.kalaha_port).connect(
        protocol.Factory.forProtocol(TextPerson))
    person.transport.write(b"NAME tel\r\nBOARD OFF\r\nTABLE t1\r\n")
    _, started = await lines.until("started")
    assert started["seats"] == ["ann", "tel"]
    _, state = await lines.until("state")
    assert state["actions"] == ["A1", "A2", "A3", "A4", "A5", "A6"]
    code, again = await world.stream()  # a second stream takes over; the first is told so
    _, bye = await lines.until("bye")
    assert bye["text"] == "another stream of this account took over"
    await again.next()  # hello
    _, started = await again.until("started")
    assert started["resumed"] is True
    _, state = await again.until("state")
    assert "actions" in state
    assert (await world.post("act", {"action": "A3"})) == (200, {"type": "ok", "for": "act"})
    await person.seen(b"PLAYED A A3")
    assert (await world.post("resign")) == (200, {"type": "ok", "for": "resign"})
    _, ended = await again.until("ended")
    assert ended["reason"] == "resign" and ended["scores"] == [0.0, 1.0]
    person.transport.loseConnection()


class TextPerson(protocol.Protocol):
    def __init__(self):
        self.data = b""
        self.waiting: list = []

    def dataReceived(self, data):  # noqa: N802
        self.data += data
        for text, d in list(self.waiting):
            if text in self.data:
                self.waiting.remove((text, d))
                d.callback(None)

    def seen(self, text: bytes) -> defer.Deferred:
        if text in self.data:
            return defer.succeed(None)
        d = defer.Deferred()
        self.waiting.append((text, d))
        d.addTimeout(WAIT, reactor)
        return d


DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "web-api.md"
DOC_TOKEN = "kT9v2Qm4Xw7Lp0Zr8Ns6Bd3Hy5Fj1Gc"


def bot_session() -> list[tuple[str, str]]:
    """The steps of docs/web-api.md's bot session: (kind, text), kind one of S< POST => B>."""
    block = re.search(r"^```bot-session\n(.*?)^```", DOC.read_text(), re.M | re.S)
    assert block is not None, "docs/web-api.md shows a bot session"
    steps = []
    for line in block[1].splitlines():
        kind, _, text = line.partition(" ")
        assert kind in ("S<", "POST", "=>", "B>"), line
        steps.append((kind, text))
    return steps


@pytest_twisted.ensureDeferred
async def test_the_bot_session_of_the_document_replays_exactly(monkeypatch):
    accounts = MemoryAccounts()
    accounts.add("ann", "bot", token=DOC_TOKEN)
    # The game's clock stands still (so the states show whole seconds), running what is due now
    # every few milliseconds of the reactor's; the HTTP and telnet connections are real.
    clock = task.Clock()
    turns = task.LoopingCall(clock.advance, 0)
    turns.start(0.005)
    kalaha = make_service(clock, accounts=accounts)
    connect4 = Connect4Service(Connect4Settings(board=False), Limits(), reactor, players=kalaha.players)
    hosts = {"kalaha": KalahaHost(kalaha), "connect4": Connect4Host(connect4)}
    generic = GenericService(hosts, kalaha.players, Limits(), reactor)
    from gamed.web.service import WebService

    web = WebService(WebConfig(keepalive=0), Limits(), LiveHub(reactor), reactor, players=kalaha.players)
    web.serve_bots(generic)
    web.startService()
    kalaha.startService()
    connect4.startService()
    site = await endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(web.port_factory())
    kport = await endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(kalaha.port_factory())
    world = World(f"http://127.0.0.1:{site.getHost().port}", kport.getHost().port, DOC_TOKEN)
    person = None
    try:
        code, lines = await world.stream()
        answer = None
        for n, (kind, text) in enumerate(bot_session(), 1):
            where = f"docs/web-api.md bot session, step {n}: {kind} {text[:60]}"
            if kind == "S<":
                got = await lines.next_raw()
                assert got == text, where
            elif kind == "POST":
                path, _, body = text.partition(" ")
                answer = await world.post_raw(path.removeprefix("/api/bot/"), body.encode())
            elif kind == "=>":
                assert answer is not None and f"{answer[0]} {answer[1]}" == text, where
                answer = None
            else:
                if person is None:
                    person = await endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", world.kalaha_port).connect(
                        protocol.Factory.forProtocol(TextPerson))
                person.transport.write(text.encode() + b"\r\n")
        assert lines.left() == [], "the stream sent lines the session does not show"
    finally:
        if person is not None:
            person.transport.loseConnection()
        turns.stop()
        await web.stopService()
        await kalaha.stopService()
        await site.stopListening()
        await kport.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_guest_gets_a_name_and_token_and_plays_with_them(world):
    code, answer = await world.post("guest", {"name": "visitor"}, headers=Headers())
    assert code == 200 and answer["name"] == "visitor" and len(answer["token"]) >= 20
    token = answer["token"]
    assert (await world.post("guest", {"name": "visitor"}, headers=Headers()))[1]["refusal"] == "name_in_use"
    assert (await world.post("guest", {"name": "ann"}, headers=Headers()))[1]["refusal"] == "name_registered"
    assert (await world.post("guest", raw=b"[1]", headers=Headers()))[1]["code"] == "not_an_object"
    code, numbered = await world.post("guest", raw=b"", headers=Headers())
    assert code == 200 and numbered["name"].startswith("guest-")
    guest = Headers({b"authorization": [f"Bearer visitor:{token}".encode()]})
    response = await Agent(reactor).request(b"GET", f"{world.url}/api/bot/stream".encode(), guest)
    lines = Lines()
    response.deliverBody(lines)
    assert (await lines.next())["type"] == "hello"
    code, answer = await world.post("play", {"game": "kalaha", "opponent": {"kind": "engine"}}, headers=guest)
    assert code == 200
    _, started = await lines.until("started")
    assert started["seats"][0] == "visitor"
    wrong = Headers({b"authorization": [b"Bearer visitor:" + b"x" * 24]})
    assert (await world.post("resign", headers=wrong))[0] == 401
    assert (await world.post("resign", headers=guest))[0] == 200
    _, ended = await lines.until("ended")
    assert ended["reason"] == "resign"
