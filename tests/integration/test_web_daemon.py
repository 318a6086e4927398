"""The web site of the real daemon: a Kalaha game between two TCP clients watched over
/api/games/<id>/events (snapshot, moves, end), then its stored match; and the example session of
docs/web-api.md replayed line for line."""

from __future__ import annotations

import json

import pytest_twisted
from twisted.internet import reactor, task

from tests.integration.support import LOOPBACK, connect, flag_capture_config, gamed_args, spawn, take_seats, with_timeout
from tests.web.client import events, get_json
from tests.web.docsession import alike, session


async def start_daemon(tmp_path, *extra):
    database = tmp_path / "records.sqlite"
    daemon = spawn(gamed_args("--web", LOOPBACK, "--records", str(database), *extra, kalaha=LOOPBACK), expect_ports=2)
    await with_timeout(daemon.listening, 30, "the daemon to listen")
    return daemon, f"http://127.0.0.1:{daemon.ports['web']}"


async def poll_json(url: str, predicate, what: str, seconds: float = 30):
    """GET ``url`` until ``predicate(body)`` is true; returns that value."""
    for _ in range(int(seconds * 10)):
        code, body = await get_json(url)
        found = predicate(body) if code == 200 else None
        if found:
            return found
        await task.deferLater(reactor, 0.1, lambda: None)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


async def players(daemon):
    a = await connect(daemon.ports["kalaha"])
    b = await connect(daemon.ports["kalaha"])
    a.send("NAME alice")
    b.send("NAME bob")
    await take_seats("web", a, b)
    await a.expect("START")
    await b.expect("START")
    return a, b


@pytest_twisted.ensureDeferred
async def test_a_kalaha_game_watched_in_the_browser_api_then_its_match(tmp_path):
    daemon, url = await start_daemon(tmp_path)
    try:
        a, b = await players(daemon)
        code, games = await get_json(url + "/api/games")
        (summary,) = games["games"]
        assert summary["game"] == "kalaha" and [p["name"] for p in summary["players"]] == ["alice", "bob"]
        table_id = summary["id"]
        a.send("MOVE 1")  # lands in A's store: A moves again
        await a.expect("TURN")
        response, stream = await events(f"{url}/api/games/{table_id}/events")  # a late viewer
        snapshot = await stream.expect("snapshot")
        assert [m["move"] for m in snapshot["moves"]] == ["A1"] and snapshot["spectators"] == 1
        assert snapshot["state"]["stores"] == [1, 0] and snapshot["to_move"] == 0
        a.send("MOVE 2")
        move = await stream.expect("move")
        assert (move["n"], move["seat"], move["move"], move["to_move"]) == (2, 0, "A2", 1)
        assert move["state"]["pits"][0] == [0, 0, 8, 8, 8, 8]
        b.send("MOVE 6")
        move = await stream.expect("move")
        assert (move["n"], move["seat"], move["move"]) == (3, 1, "B6")
        b.send("RESIGN")
        end = await stream.expect("end")
        assert end["result"] == {"scores": [1.0, 0.0], "reason": "resign"}
        await with_timeout(stream.done, 10, "the stream to close at the end")
        code, match = await get_json(f"{url}/api/matches/{end['match_id']}")
        assert code == 200 and match["game"] == "kalaha" and match["reason"] == "resign" and match["rated"]
        assert [m["move"] for m in match["moves"]] == ["A1", "A2", "B6"]
        assert match["moves"][2]["state"] == move["state"]
        assert [(s["name"], s["kind"], s["rated"]) for s in match["seats"]] == [("alice", "guest", False), ("bob", "guest", False)]
        code, ratings = await get_json(f"{url}/api/ratings/kalaha")
        assert ratings["ratings"] == []  # guests are never rated
    finally:
        assert await daemon.stop()
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_the_documented_session(tmp_path):
    daemon, url = await start_daemon(tmp_path)
    clients, stream = {}, None
    try:
        for step in session():
            where = f"docs/web-api.md step {step}"
            if step.kind == "send":
                if step.who not in clients:
                    clients[step.who] = await connect(daemon.ports["kalaha"])
                clients[step.who].send(step.text)
            elif step.kind == "expect":
                client = clients[step.who]
                while await client.next_line() != step.text:
                    pass
            elif step.kind == "get":
                code, body = await get_json(step.text.replace("http://localhost:8080", url))
                assert alike(body, step.data), f"{where}: got {json.dumps(body)}"
            elif step.kind == "stream":
                response, stream = await events(step.text.replace("http://localhost:8080", url))
            else:
                name, data = await stream.next_event()
                assert name == step.text and alike(data, step.data), f"{where}: got {name} {json.dumps(data)}"
    finally:
        assert await daemon.stop()


@pytest_twisted.ensureDeferred
async def test_a_stored_stratego_match_ends_on_the_flag_capture_applied(tmp_path):
    daemon, url = await start_daemon(tmp_path, "--config", str(flag_capture_config(tmp_path)))
    try:
        match_id = await poll_json(
            url + "/api/matches?game=stratego", lambda b: b["matches"] and b["matches"][0]["id"], "the stored match"
        )
        code, match = await get_json(f"{url}/api/matches/{match_id}")
        assert code == 200 and match["reason"] == "Captured the flag"
        (move,) = match["moves"]
        assert move["seat"] == 0 and move["move"] == "0 3 DOWN 3 VICTORY_FLAG"
        # The replay's last frame (the state after the move, and the final state it ends on):
        for state in (move["state"], match["extra"]["final_state"]):
            assert state["cells"][6][0] == {"owner": 0, "unit": "scout"}, "the attacker is on the flag's square"
            assert state["cells"][3][0] is None, "it left its own square"
            assert {"owner": 1, "unit": "flag"} not in [c for row in state["cells"] for c in row], "the flag is gone"
    finally:
        assert await daemon.stop()
    assert "Traceback" not in daemon.text
