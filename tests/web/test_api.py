"""The web API over real loopback HTTP (in-process, real reactor): JSON endpoints, 404s, the event
streams of a table and of the front page, matches and ratings from a real RecordStore, static pages."""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import reactor, task

from gamed.config import Limits, WebConfig
from gamed.observers import LiveHub
from gamed.records import RecordStore, Seat
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
    web = WebService(WebConfig(**config), Limits(), hub, reactor)
    web.startService()
    port = reactor.listenTCP(0, web.port_factory(), interface="127.0.0.1")
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
    assert body["games"][0]["players"] == [{"seat": 0, "name": "alice"}, {"seat": 1, "name": "bob"}]
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
    await stream.done  # the server closes the stream at the end
    code, match = await get_json(f"{site.url}/api/matches/{end['match_id']}")
    assert code == 200 and [m["move"] for m in match["moves"]] == ["A1", "B2"]
    assert match["moves"][1]["state"] == kalaha_state(2)
    code, listing = await get_json(f"{site.url}/api/matches?game=kalaha&limit=5")
    assert [m["id"] for m in listing["matches"]] == [end["match_id"]]
    code, ratings = await get_json(f"{site.url}/api/ratings/kalaha")
    assert [r["name"] for r in ratings["ratings"]] == ["alice", "bob"]
    assert ratings["ratings"][0]["rating"] > ratings["ratings"][1]["rating"]


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
