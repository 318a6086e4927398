"""The web API over real loopback HTTP (in-process, real reactor): JSON endpoints, 404s, the event
streams of a table and of the front page, matches and ratings from a real RecordStore, static pages."""

from __future__ import annotations

import urllib.parse

import pytest
import pytest_twisted
from twisted.internet import defer, endpoints, protocol, reactor, task

from gamed import __version__
from gamed.config import Limits, WebConfig
from gamed.observers import LiveHub
from gamed.ports import ListeningPorts
from gamed.ratings import INITIAL, rate
from gamed.records import MatchRecord, Move, RecordStore, Seat
from gamed.web.service import WebService
from tests.web.client import events, get, get_json

SEATS = [Seat(0, "alice", rated=True), Seat(1, "bob", rated=True)]


def kalaha_state(n):
    return {"pits": [[6 - n % 6] * 6, [6] * 6], "stores": [n, 0], "to_move": n % 2}


class Site:
    def __init__(self, hub, web, port):
        self.hub, self.web, self.port = hub, web, port
        self.url = f"http://127.0.0.1:{port.getHost().port}"


async def serve(hub, **config):
    """The site on a loopback port, which it lists among the daemon's ports (``/api/server``)."""
    ports = ListeningPorts()
    web = WebService(WebConfig(**config), Limits(), hub, reactor, ports=ports)
    web.startService()
    endpoint = ports.watch("web", "tcp:0:interface=127.0.0.1", endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1"))
    port = await endpoint.listen(web.port_factory())
    return Site(hub, web, port)


async def close(site):
    await site.web.stopService()
    await site.port.stopListening()


@pytest_twisted.async_yield_fixture
async def site():
    s = await serve(LiveHub(reactor))
    yield s
    await close(s)


@pytest_twisted.async_yield_fixture
async def recorded(tmp_path):
    store = RecordStore(str(tmp_path / "records.sqlite"), reactor)
    await store.start()
    s = await serve(LiveHub(reactor, store))
    yield s
    await close(s)
    await store.close()


@pytest_twisted.ensureDeferred
async def test_games_list_and_table(site):
    code, body = await get_json(site.url + "/api/games")
    assert code == 200 and body == {"games": []}
    table = site.hub.open("kalaha", SEATS, {"pits": 6}, kalaha_state(0), {0: 60.0, 1: None})
    table.moved(0, "A1", kalaha_state(1), 1)
    code, body = await get_json(site.url + "/api/games")
    assert [g["id"] for g in body["games"]] == [table.id]
    assert body["games"][0]["players"] == [
        {"seat": 0, "name": "alice", "kind": "player", "account": False},
        {"seat": 1, "name": "bob", "kind": "player", "account": False},
    ]
    code, detail = await get_json(f"{site.url}/api/games/{table.id}")
    assert code == 200
    assert detail["state"] == kalaha_state(1) and detail["initial_state"] == kalaha_state(0)
    assert [m["move"] for m in detail["moves"]] == ["A1"] and detail["result"] is None
    assert detail["options"] == {"pits": 6} and detail["turn"] == 1
    table.finish((1.0, 0.0), "end")


@pytest.mark.parametrize(
    "path, message",
    [
        ("/api/games/kalaha-99", "no game kalaha-99"),
        ("/api/games/kalaha-99/events", "no game kalaha-99"),
        ("/api/matches/7", "no match 7"),
        ("/api/matches/x", "no match x"),
        ("/api/frobnicate", "no such resource: /api/frobnicate"),
        ("/nonexistent.html", "no such page"),
        ("/api/ratings/chess", "no game type chess; known: kalaha, fight, combat, stratego, connect4"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_unknown_things_are_json_404s(site, path, message):
    code, body = await get_json(site.url + path)
    assert code == 404 and message in body["error"]


@pytest_twisted.ensureDeferred
async def test_bad_query_is_a_json_400(site):
    code, body = await get_json(site.url + "/api/matches?limit=lots")
    assert code == 400 and "limit must be a whole number" in body["error"]
    code, body = await get_json(site.url + "/api/matches?game=chess")
    assert code == 400 and body["error"].startswith("no game type chess; known: kalaha")


@pytest_twisted.ensureDeferred
async def test_without_records_matches_and_ratings_are_empty(site):
    assert await get_json(site.url + "/api/matches") == (200, {"matches": []})
    assert await get_json(site.url + "/api/ratings/kalaha") == (200, {"game": "kalaha", "ratings": []})


@pytest_twisted.ensureDeferred
async def test_table_stream_snapshot_moves_end_then_match(recorded):
    site = recorded
    table = site.hub.open("kalaha", SEATS, {"pits": 6}, kalaha_state(0))
    table.moved(0, "A1", kalaha_state(1), 1)
    response, stream = await events(f"{site.url}/api/games/{table.id}/events")
    assert response.code == 200
    assert response.headers.getRawHeaders(b"content-type") == [b"text/event-stream; charset=utf-8"]
    snapshot = await stream.expect("snapshot")
    assert [m["move"] for m in snapshot["moves"]] == ["A1"] and snapshot["spectators"] == 1
    table.moved(1, "B2", kalaha_state(2), 0)
    move = await stream.expect("move")
    assert (move["n"], move["seat"], move["move"], move["state"]) == (2, 1, "B2", kalaha_state(2))
    table.finish((1.0, 0.0), "end", kalaha_state(3))
    end = await stream.expect("end")
    assert end["result"] == {"scores": [1.0, 0.0], "reason": "end"} and isinstance(end["match_id"], int)
    assert end["outcome"] == "alice won 3\u20130", "Kalaha's result in stones"
    await stream.done  # the server closes the stream at the end
    code, match = await get_json(f"{site.url}/api/matches/{end['match_id']}")
    assert code == 200 and [m["move"] for m in match["moves"]] == ["A1", "B2"]
    assert match["moves"][1]["state"] == kalaha_state(2)
    code, listing = await get_json(f"{site.url}/api/matches?game=kalaha&limit=5")
    assert [m["id"] for m in listing["matches"]] == [end["match_id"]]
    code, ratings = await get_json(f"{site.url}/api/ratings/kalaha")
    assert [r["name"] for r in ratings["ratings"]] == ["alice", "bob"]
    alice, bob = ratings["ratings"]
    assert alice["rating"] > 1500 > bob["rating"] and alice["sigma"] == bob["sigma"] < 500
    # the 95 % interval around each rating, and the provisional mark of a player after one game
    for r in (alice, bob):
        assert r["low"] == pytest.approx(r["rating"] - 1.959964 * r["sigma"], abs=0.001)
        assert r["high"] == pytest.approx(r["rating"] + 1.959964 * r["sigma"], abs=0.001)
        assert r["conservative"] == pytest.approx(r["rating"] - 3 * r["sigma"]) and r["provisional"] is True


@pytest_twisted.ensureDeferred
async def test_the_match_json_carries_each_moves_clock(recorded):
    site = recorded
    table = site.hub.open("kalaha", SEATS, {"pits": 6, "clock": "1m+1s"}, kalaha_state(0), {0: 60.0, 1: 60.0})
    table.moved(0, "A1", kalaha_state(1), 1, {0: 59.766, 1: 60.0}, timing={0: {"used": 1.234, "left": 59.766, "credit": 0.012}})
    table.moved(1, "B2", kalaha_state(2), 0)  # no clock kept for this one
    table.moved(0, "A3", kalaha_state(3), 1, timing={0: {"used": 0.5, "left": None, "credit": 0.0}})
    response, stream = await events(f"{site.url}/api/games/{table.id}/events")
    await stream.expect("snapshot")
    table.finish((1.0, 0.0), "end", kalaha_state(4))
    end = await stream.expect("end")
    await stream.done
    code, match = await get_json(f"{site.url}/api/matches/{end['match_id']}")
    assert code == 200
    assert [(m["move"], m["clock"]) for m in match["moves"]] == [
        ("A1", {"0": {"used": 1.234, "left": 59.766, "credit": 0.012}}),
        ("B2", None),
        ("A3", {"0": {"used": 0.5, "left": None, "credit": 0.0}}),
    ]

@pytest_twisted.ensureDeferred
async def test_front_page_stream_lists_games_and_matches(recorded):
    site = recorded
    response, stream = await events(f"{site.url}/api/events")
    assert await stream.expect("games") == {"games": []}
    assert await stream.expect("matches") == {"matches": []}
    table = site.hub.open("kalaha", SEATS, {}, kalaha_state(0))
    games = await stream.expect("games")
    assert [g["id"] for g in games["games"]] == [table.id]
    table.finish((0.5, 0.5), "end")
    matches = await stream.expect("matches")
    assert [m["game"] for m in matches["matches"]] == ["kalaha"]
    stream.stop()


@pytest_twisted.ensureDeferred
async def test_a_viewer_that_disconnects_is_no_longer_counted(site):
    table = site.hub.open("kalaha", SEATS, {}, kalaha_state(0))
    response, stream = await events(f"{site.url}/api/games/{table.id}/events")
    await stream.expect("snapshot")
    assert table.summary()["spectators"] == 1
    stream.stop()
    for _ in range(500):
        if not table.viewers:
            break
        await task.deferLater(reactor, 0.01)
    assert table.summary()["spectators"] == 0
    table.finish((0.5, 0.5), "end")


@pytest_twisted.ensureDeferred
async def test_static_pages_are_served(site):
    code, ctype, body = await get(site.url + "/")
    assert code == 200 and ctype.startswith("text/html") and b"<html" in body.lower()


@pytest_twisted.ensureDeferred
async def test_the_server_lists_its_ports_for_the_how_to(site):
    code, body = await get_json(site.url + "/api/server")
    assert code == 200 and body["version"] == __version__ and body["records"] is False
    assert body["ports"] == [
        {
            "serves": "web",
            "name": "web site",
            "address": f"tcp:127.0.0.1:{site.port.getHost().port}",
            "host": "127.0.0.1",
            "port": site.port.getHost().port,
            "tls": False,
        }
    ]
    assert [g["name"] for g in body["games"]] == ["kalaha", "fight", "combat", "stratego", "connect4"]
    assert body["games"][1] == {"name": "fight", "title": "Virtual Fight", "seats": [2, 4], "board": "fight"}
    assert body["games"][2] == {"name": "combat", "title": "Combat", "seats": [2, 15], "board": "stratego"}


def match(a, b, scores, reason, moves=2, rated=True, game="kalaha", extra=None):
    return MatchRecord(
        game=game,
        started=1.0,
        ended=2.0,
        seats=(Seat(0, a, True), Seat(1, b, True)),
        options={},
        moves=tuple(Move(n, n % 2, f"A{n}", float(n)) for n in range(1, moves + 1)),
        scores=scores,
        reason=reason,
        rated=rated,
        extra=extra or {},
    )


@pytest_twisted.ensureDeferred
async def test_matches_say_their_result_and_unplayed_ones_can_be_left_out(recorded):
    store = recorded.hub.store
    final = {"pits": [[0] * 6, [0] * 6], "stores": [40, 32], "to_move": None}
    won = await store.store(match("alice", "bob", (1.0, 0.0), "end", extra={"final_state": final}))
    unplayed = await store.store(match("alice", "carol", (0.0, 0.0), "disconnect", moves=0, rated=False))
    code, body = await get_json(recorded.url + "/api/matches")
    assert [m["id"] for m in body["matches"]] == [unplayed, won]
    assert [m["outcome"] for m in body["matches"]] == ["aborted: a player left", "alice won 40\u201332"]
    assert body["matches"][1]["points"] == [40.0, 32.0] and body["matches"][1]["turns"] == 2
    code, body = await get_json(recorded.url + "/api/matches?unplayed=no")
    assert [m["id"] for m in body["matches"]] == [won]
    code, body = await get_json(recorded.url + "/api/matches?unplayed=perhaps")
    assert code == 400 and body["error"] == "unplayed must be yes or no, not 'perhaps'"
    # The front page's stream leaves them out.
    response, stream = await events(f"{recorded.url}/api/events")
    assert [m["id"] for m in (await stream.expect("matches"))["matches"]] == [won]
    stream.stop()


@pytest_twisted.ensureDeferred
async def test_a_players_page_data(recorded):
    store = recorded.hub.store
    first = await store.store(match("alice", "bob", (1.0, 0.0), "resign"))
    second = await store.store(match("gamed:2", "alice", (1.0, 0.0), "four", game="connect4"))
    unplayed = await store.store(match("alice", "carol", (0.0, 0.0), "shutdown", moves=0, rated=False))
    code, body = await get_json(recorded.url + "/api/players/alice")
    assert code == 200 and body["name"] == "alice"
    assert [m["id"] for m in body["matches"]] == [unplayed, second, first]
    won, lost = rate([INITIAL, INITIAL], [1, 0])
    assert [(r["game"], r["rating"], r["sigma"], r["provisional"], r["rank"], r["games"]) for r in body["ratings"]] == [
        ("connect4", lost.mu, lost.sigma, True, 2, 1),
        ("kalaha", won.mu, won.sigma, True, 1, 1),
    ]
    code, body = await get_json(recorded.url + "/api/players/alice?unplayed=no&limit=1")
    assert [m["id"] for m in body["matches"]] == [second]
    code, body = await get_json(recorded.url + "/api/players/" + urllib.parse.quote("gamed:2"))
    assert code == 200 and body["name"] == "gamed:2" and [m["outcome"] for m in body["matches"]] == ["gamed:2 won: four in a row"]
    code, body = await get_json(recorded.url + "/api/players/nobody")
    assert (code, body) == (404, {"error": "no player nobody"})


@pytest_twisted.ensureDeferred
async def test_without_records_there_are_no_players(site):
    code, body = await get_json(site.url + "/api/players/alice")
    assert (code, body) == (404, {"error": "no player alice (no records are kept)"})


@pytest_twisted.ensureDeferred
async def test_a_finished_table_says_its_result_in_words(site):
    table = site.hub.open("connect4", SEATS, {}, {"cells": []})
    table.moved(1, "3", {"cells": []}, 0)
    table.finish((0.0, 1.0), "four", {"cells": []})
    code, detail = await get_json(f"{site.url}/api/games/{table.id}")
    assert detail["result"] == {"scores": [0.0, 1.0], "reason": "four"} and detail["outcome"] == "bob won: four in a row"


@pytest_twisted.ensureDeferred
async def test_unicode_digits_never_name_a_match(recorded):
    first = await recorded.hub.store.store(match("alice", "bob", (1.0, 0.0), "end"))
    assert first == 1
    assert (await get_json(recorded.url + "/api/matches/1"))[0] == 200
    for path in ("/api/matches/%D9%A1", "/api/matches/%C2%B9", "/api/matches/%EF%BC%91", "/api/matches/" + "9" * 30):
        code, body = await get_json(recorded.url + path)
        assert code == 404 and body["error"].startswith("no match "), (path, body)
    code, body = await get_json(recorded.url + "/api/matches?limit=%C2%B2")
    assert code == 400 and body["error"].startswith("limit must be a whole number")
    code, body = await get_json(recorded.url + "/api/players/a%2500b")
    assert code == 404


class RawClient(protocol.Protocol):
    """Sends bytes as told and keeps what it receives; ``done`` fires with it at the close."""

    def __init__(self):
        self.received = b""
        self.done = defer.Deferred()

    def dataReceived(self, data):  # noqa: N802
        self.received += data

    def connectionLost(self, reason):  # noqa: N802
        self.done.callback(self.received)


async def raw_connect(site) -> RawClient:
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", site.port.getHost().port)
    client = RawClient()
    await endpoints.connectProtocol(endpoint, client)
    return client


@pytest_twisted.ensureDeferred
async def test_a_large_post_is_refused_before_its_body_is_read():
    s = await serve(LiveHub(reactor))
    try:
        client = await raw_connect(s)
        client.transport.write(b"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Length: 52428800\r\n\r\n" + b"x" * 1_048_576)
        received = await client.done.addTimeout(15, reactor)
        assert received.startswith(b"HTTP/1.1 405 Method Not Allowed\r\n"), received[:200]
        assert received.endswith(b'{"error":"only GET and HEAD are allowed here"}')
    finally:
        await close(s)


@pytest_twisted.ensureDeferred
async def test_a_slowloris_connection_is_closed_after_request_time():
    s = await serve(LiveHub(reactor), request_time=1.0)
    try:
        client = await raw_connect(s)
        request = iter(b"GET /api/games HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000)
        trickle = task.LoopingCall(lambda: client.transport.write(bytes([next(request)])))
        trickle.start(0.25)  # well within the idle timeout, which each byte resets
        try:
            received = await client.done.addTimeout(15, reactor)
        finally:
            trickle.stop()
        assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), received[:200]
        assert received.endswith(b'{"error":"a request must arrive within 1 seconds"}')
        code, body = await get_json(s.url + "/api/games")  # the site still answers others at once
        assert code == 200
    finally:
        await close(s)


@pytest_twisted.ensureDeferred
async def test_a_body_over_max_body_is_refused_with_413():
    s = await serve(LiveHub(reactor), max_body=4096)
    try:
        client = await raw_connect(s)
        client.transport.write(b"GET /api/games HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000)
        received = await client.done.addTimeout(15, reactor)
        assert received.startswith(b"HTTP/1.1 413 Content Too Large\r\n"), received[:200]
        assert received.endswith(b'{"error":"a request body may have at most 4096 bytes"}')
    finally:
        await close(s)


async def _me(url, authorization=None):
    from twisted.web.client import Agent, readBody
    from twisted.web.http_headers import Headers

    headers = Headers({b"accept": [b"application/json"]})
    if authorization is not None:
        headers.addRawHeader(b"authorization", authorization.encode())
    d = Agent(reactor).request(b"GET", (url + "/api/me").encode(), headers)
    d.addTimeout(15, reactor)
    response = await d
    body = readBody(response)
    body.addTimeout(15, reactor)
    import json

    return response.code, json.loads(await body)


@pytest_twisted.ensureDeferred
async def test_api_me_logs_in_with_an_account_token_and_refuses_the_rest(tmp_path):
    from gamed.accounts import AccountStore
    from gamed.config import PlayersConfig
    from gamed.players import Players

    store = RecordStore(str(tmp_path / "records.sqlite"), reactor)
    await store.start()
    accounts = AccountStore(store, reactor)
    _, token = await accounts.add("alice", "bot")
    ports = ListeningPorts()
    players = Players(PlayersConfig(login_failures=3), accounts, reactor)
    web = WebService(WebConfig(), Limits(), LiveHub(reactor, store), reactor, ports=ports, players=players)
    web.startService()
    port = await endpoints.TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(web.port_factory())
    url = f"http://127.0.0.1:{port.getHost().port}"
    try:
        assert await _me(url, f"Bearer alice:{token}") == (200, {"name": "alice", "kind": "bot", "account": True})
        code, body = await _me(url)
        assert code == 401 and "Authorization: Bearer" in body["error"]
        assert await _me(url, f"Bearer alice:{'x' * 32}") == (401, {"error": "unknown account or wrong token", "code": 420})
        assert (await _me(url, f"Bearer nobody:{token}"))[1]["code"] == 420
        await accounts.revoke("alice")
        assert await _me(url, f"Bearer alice:{token}") == (401, {"error": "this account's token has been revoked", "code": 421})
        code, body = await _me(url, f"Bearer alice:{token}")  # the fourth failure from this address
        assert (code, body["code"]) == (429, 422) and "try again in" in body["error"]
    finally:
        await web.stopService()
        await port.stopListening()
        await store.close()


@pytest_twisted.ensureDeferred
async def test_tournaments_list_and_one_sprt_match_with_its_curve_crosstable_and_games(recorded):
    from gamed.competition.formats import Played, make_format
    from gamed.competition.store import TournamentStore

    code, body = await get_json(recorded.url + "/api/tournaments")
    assert code == 200 and body == {"tournaments": []}
    tournaments = TournamentStore(recorded.hub.store, reactor)
    spec = {"bots": ["new", "old"], "options": {"elo0": 0.0, "elo1": 20.0}}
    stored = await tournaments.open("tune", "kalaha", "sprt", spec)
    fmt = make_format("sprt", spec["bots"], spec["options"])
    games = fmt.plan([], {}, 2)
    await tournaments.schedule(stored.id, games)
    # the first pair: "new" wins both colours; the second pair is still in play
    for game in games[:2]:
        scores = (1.0, 0.0) if game.seats[0] == "new" else (0.0, 1.0)
        await tournaments.finish_game(stored.id, Played(game.number, scores, "end", "new won", match_id=40 + game.number))
    code, body = await get_json(recorded.url + "/api/tournaments")
    assert code == 200
    assert body["tournaments"] == [
        {"name": "tune", "game": "kalaha", "format": "sprt", "state": body["tournaments"][0]["state"],
         "scheduled": len(games), "played": 2, "created": body["tournaments"][0]["created"], "finished": None}
    ]
    code, one = await get_json(recorded.url + "/api/tournaments/tune")
    assert code == 200 and one["name"] == "tune" and one["format"] == "sprt"
    assert one["progress"] == {"scheduled": len(games), "played": 2, "total": None}
    assert one["crosstable"] == {"new": {"old": [2.0, 2]}, "old": {"new": [0.0, 2]}}
    assert [s["bot"] for s in one["standings"]] == ["new", "old"]
    match = one["match"]
    assert (match["wins"], match["draws"], match["losses"]) == (2, 0, 0) and match["pentanomial"] == [0, 0, 0, 0, 1]
    assert len(one["llr_curve"]) == 1 and one["llr_curve"][0] == pytest.approx(match["llr"])
    assert match["lower"] < 0 < match["upper"]
    played = [g for g in one["games"] if g["scores"] is not None]
    assert [g["match_id"] for g in played] == [41, 42] and played[0]["opening"] == played[1]["opening"]
    code, body = await get_json(recorded.url + "/api/tournaments/nothing")
    assert code == 404 and body == {"error": "no tournament named nothing"}


@pytest_twisted.ensureDeferred
async def test_tournaments_without_records_are_an_empty_list_and_404s(site):
    assert await get_json(site.url + "/api/tournaments") == (200, {"tournaments": []})
    code, body = await get_json(site.url + "/api/tournaments/cup")
    assert code == 404 and body == {"error": "no tournament named cup (no records are kept)"}
