"""Kalaha against the real daemon over loopback: documented sessions, full games, load, aborts."""

import json
import random

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from tests.docsessions import sessions
from tests.integration.support import add_accounts, connect, gamed_args, spawn, take_seats, with_timeout
from tests.web.client import get_json

# The examples need time to send their first lines before the pair delay seats them.
DOC_ARGS = ("--kalaha-pair-delay", "1.5")


def needs_known_tokens(session) -> bool:
    """Sessions that show an account's token or a resume token, which only the in-memory replay
    can make the server use (tests/kalaha/test_doc_sessions.py)."""
    return any(s.kind == ">" and s.text.split()[0].upper() in ("LOGIN", "RESUME", "TOKEN") for s in session.steps)


# Real time passes between their lines (on a busy machine, more than the half millisecond that
# would show), so their banks show milliseconds the documents cannot know.
MILLISECONDS = {"A timed game", "Out of time"}
# A table the daemon reserves for its hosted bots cannot be reserved from outside.
RESERVED = {"A tournament game from its opening"}
DAEMON_SESSIONS = [
    s for s in sessions("kalaha.md") if not needs_known_tokens(s) and s.title not in MILLISECONDS | RESERVED
]
GRACE = {"A seat not back in time forfeits": 2}  # as in tests/kalaha/test_doc_sessions.py


def test_the_daemon_replays_every_session_without_tokens():
    assert [s.title for s in DAEMON_SESSIONS] == [
        "Two people with telnet",
        "Two programs, a complete game",
        "Playing the computer",
        "A seat not back in time forfeits",
        "A program checks itself",
    ]


@pytest.mark.parametrize("session", DAEMON_SESSIONS, ids=lambda s: s.title)
@pytest_twisted.ensureDeferred
async def test_documented_session_replays_byte_for_byte(start_daemon, session, tmp_path):
    args = DOC_ARGS
    if session.title in GRACE:
        conf = tmp_path / "gamed.conf"
        conf.write_text(f"[kalaha]\ngrace = {GRACE[session.title]}\n")
        args = (*args, "--config", str(conf))
    daemon = await start_daemon(*args)
    clients = {}
    for n, step in enumerate(session.steps, 1):
        if step.client not in clients:
            clients[step.client] = await connect(daemon.port)
        c = clients[step.client]
        if step.kind == ">":
            c.send(step.text)
        elif step.kind == ":" and step.text == "drops":
            assert not c.lines, f"step {n}: {step.client} got lines the session does not show"
            c.transport.loseConnection()
        elif step.kind == "<":
            got = await with_timeout(c.next_line(), 10, f"step {n}: {step.client}< {step.text}")
            assert got == step.text, f"step {n}"
        else:
            await c.wait_closed()
            assert not c.lines, f"step {n}: {step.client} got lines the session does not show"
    for name, c in clients.items():
        await c.wait_closed()
        text = "".join(line + "\r\n" for line in (s.text for s in session.steps if s.client == name and s.kind == "<"))
        assert bytes(c.raw) == text.encode("ascii"), f"{name}: the bytes differ from the document"


async def play_random_game(port: int, table: str, rng: random.Random) -> dict[str, list[str]]:
    """Two bots meet at ``table`` and play random legal moves; returns every line each received."""
    a, b = await connect(port), await connect(port)
    for c in (a, b):
        c.send("BOARD OFF", f"TABLE {table}")
    seen = {"first": [], "second": []}  # by connection, not side

    async def bot(c, who):
        while True:
            line = await c.next_line(timeout=30)
            seen[who].append(line)
            if line.startswith("YOURMOVE"):
                c.send(rng.choice(line.split()[2:]))
            elif line.startswith("BYE"):
                await c.wait_closed()
                return

    await defer.gatherResults(
        [defer.ensureDeferred(bot(a, "first")), defer.ensureDeferred(bot(b, "second"))], consumeErrors=True
    )
    return seen


def check_finished(seen):
    """Both bots of a game saw it to the end, each with the result that its side's score earns.

    ``seen`` is keyed by connection; which of the two plays A depends on whose TABLE line the
    server handled first, so each bot's side is read from its START line.
    """
    sides = set()
    for lines in seen.values():
        side = next(line for line in lines if line.startswith("START")).split()[2]
        sides.add(side)
        assert lines[-3].startswith("SCORE ") and lines[-1].startswith("BYE")
        score_a, score_b = map(int, lines[-3].split()[1:])
        assert score_a + score_b == 72
        result = lines[-2].split()
        assert result[0] == "RESULT" and result[2] == "END"
        mine, theirs = (score_a, score_b) if side == "A" else (score_b, score_a)
        assert result[1] == ("WIN" if mine > theirs else "LOSE" if mine < theirs else "DRAW")
    assert sides == {"A", "B"}


@pytest_twisted.ensureDeferred
async def test_two_clients_play_a_full_game_and_both_connections_close(start_daemon):
    daemon = await start_daemon()
    seen = await with_timeout(defer.ensureDeferred(play_random_game(daemon.port, "full", random.Random(1))), 30, "game")
    check_finished(seen)


@pytest_twisted.ensureDeferred
async def test_fifty_games_at_once_all_finish(start_daemon):
    daemon = await start_daemon("--max-per-peer", "0")
    rng = random.Random(50)
    games = [defer.ensureDeferred(play_random_game(daemon.port, f"t{i}", rng)) for i in range(50)]
    results = await with_timeout(defer.gatherResults(games, consumeErrors=True), 60, "50 games")
    assert len(results) == 50
    game_ids = set()
    for seen in results:
        check_finished(seen)
        game_ids.add(next(line for line in seen["first"] if line.startswith("START")).split()[1])
    assert len(game_ids) == 50


@pytest_twisted.ensureDeferred
async def test_plain_connections_pair_in_arrival_order(start_daemon):
    daemon = await start_daemon("--kalaha-pair-delay", "0")
    clients = []
    for _ in range(4):
        c = await connect(daemon.port)
        await c.expect("WAIT") if len(clients) % 2 == 0 else None
        clients.append(c)
    starts = [await c.expect("START") for c in clients]
    assert [s.split()[2] for s in starts] == ["A", "B", "A", "B"]
    assert starts[0].split()[1] == starts[1].split()[1] != starts[2].split()[1] == starts[3].split()[1]


def grace_config(tmp_path, grace: float) -> str:
    """A config file with Kalaha's grace and no move time limit (no timeout can end the game)."""
    conf = tmp_path / "gamed.conf"
    conf.write_text(f"[kalaha]\nmove_time = 0\ngrace = {grace}\n")
    return str(conf)


@pytest_twisted.ensureDeferred
async def test_a_seat_that_drops_is_away_and_forfeits_when_the_grace_ends(start_daemon, tmp_path):
    daemon = await start_daemon("--config", grace_config(tmp_path, 1))
    a, b = await connect(daemon.port), await connect(daemon.port)
    a.send("NAME alice")
    b.send("NAME bob")
    await take_seats("x", a, b)
    await a.expect("YOURMOVE")
    a.send("A3")
    await b.expect("YOURMOVE")
    a.transport.loseConnection()
    assert await b.expect("AWAY") == "AWAY A alice 1"
    assert await b.next_line() == "SCORE 1 0"
    assert await b.next_line() == "RESULT WIN FORFEIT alice did not come back within 1 s"
    assert (await b.next_line()).startswith("BYE")
    await b.wait_closed()
    assert "left game" in daemon.text and "did not come back within 1 s" in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_guest_takes_its_seat_back_with_its_resume_token_and_finishes(start_daemon, tmp_path):
    daemon = await start_daemon("--config", grace_config(tmp_path, 30))
    a, b = await connect(daemon.port), await connect(daemon.port)
    a.send("BOARD OFF", "NAME alice")
    b.send("BOARD OFF", "NAME bob")
    await take_seats("r", a, b)
    game = (await a.expect("START")).split()[1]
    await a.expect("YOURMOVE")
    a.send("A3", "TOKEN")
    token = (await a.expect("TOKEN")).split()[1]
    await b.expect("YOURMOVE")
    a.transport.loseConnection()
    assert await b.expect("AWAY") == "AWAY A alice 30"
    # Nobody else gets alice's name, let alone her seat.
    thief = await connect(daemon.port)
    thief.send("NAME alice", "RESUME " + "x" * 24)
    assert await thief.expect("ERROR") == "ERROR 432 another player here uses that name just now (alice)"
    assert await thief.expect("ERROR") == "ERROR 427 unknown resume token"
    thief.transport.loseConnection()
    back = await connect(daemon.port)
    back.send("BOARD OFF", f"RESUME {token}")
    assert await back.expect("OK") == "OK BOARD OFF"
    assert [await back.next_line() for _ in range(5)] == [
        f"OK RESUME {game} A",
        f"START {game} A bob",
        "POSITION 6 6 0 7 7 7 1 7 7 6 6 6 6 0 B",
        "STRIKES 0 3",
        "TURN B bob",
    ]
    assert await b.expect("BACK") == "BACK A alice"
    b.send("B1")
    assert await back.expect("PLAYED") == "PLAYED B B1 SOWN 7"
    assert (await back.expect("YOURMOVE")).startswith("YOURMOVE - ")
    back.send("RESIGN")
    assert await back.expect("RESULT") == "RESULT LOSE RESIGN you resigned"
    assert await b.expect("RESULT") == "RESULT WIN RESIGN alice resigned"
    late = await connect(daemon.port)
    late.send(f"RESUME {token}")
    assert await late.expect("ERROR") == "ERROR 428 the game of that resume token is over"


@pytest_twisted.ensureDeferred
async def test_accounts_log_in_come_back_and_a_forfeit_is_recorded_and_rated(start_daemon, tmp_path):
    database = tmp_path / "r.sqlite"
    tokens = await add_accounts(database, ("alice", "bob"))
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 0\ngrace = 2\n")
    daemon = await start_daemon("--config", str(conf), "--records", f"sqlite:{database}", web="tcp:port=0:interface=127.0.0.1")
    a, b = await connect(daemon.port), await connect(daemon.port)
    a.send("BOARD OFF", f"LOGIN alice {tokens['alice']}")
    b.send("BOARD OFF", f"LOGIN bob {tokens['bob']}")
    assert await a.expect_prefix("OK LOGIN") == "OK LOGIN alice"
    assert await b.expect_prefix("OK LOGIN") == "OK LOGIN bob"
    await take_seats("acc", a, b)
    game = (await a.expect("START")).split()[1]
    a.send("A3")
    await b.expect("YOURMOVE")
    a.transport.loseConnection()
    assert await b.expect("AWAY") == "AWAY A alice 2"
    # alice's name is hers: no token, a wrong one, the name alone: refused, and no seat
    thief = await connect(daemon.port)
    thief.send("NAME alice", "LOGIN alice " + "w" * 32)
    assert (await thief.expect("ERROR")).startswith("ERROR 432 ")
    assert await thief.expect("ERROR") == "ERROR 420 unknown account or wrong token"
    back = await connect(daemon.port)
    back.send("BOARD OFF", f"LOGIN alice {tokens['alice']}")
    assert await back.expect_prefix("OK LOGIN") == "OK LOGIN alice"
    assert [await back.next_line() for _ in range(4)] == [
        f"START {game} A bob",
        "POSITION 6 6 0 7 7 7 1 7 7 6 6 6 6 0 B",
        "STRIKES 0 3",
        "TURN B bob",
    ]
    assert await b.expect("BACK") == "BACK A alice"
    b.send("B1")
    await back.expect("YOURMOVE")
    back.send("A1")
    await b.expect("YOURMOVE")
    b.transport.loseConnection()  # bob does not come back: he forfeits
    assert await back.expect("AWAY") == "AWAY B bob 2"
    assert await back.expect("RESULT") == "RESULT WIN FORFEIT bob did not come back within 2 s"
    url = f"http://127.0.0.1:{daemon.ports['web']}"
    for _ in range(100):
        code, listing = await get_json(url + "/api/matches?game=kalaha")
        if listing["matches"]:
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    (summary,) = listing["matches"]
    code, match = await get_json(f"{url}/api/matches/{summary['id']}")
    assert (match["reason"], match["rated"], match["scores"]) == ("forfeit", True, [1.0, 0.0])
    assert [(s["name"], s["kind"], s["rated"]) for s in match["seats"]] == [("alice", "player", True), ("bob", "player", True)]
    assert all(s["rating_after"] is not None for s in match["seats"])


@pytest_twisted.ensureDeferred
async def test_move_time_limit_from_the_command_line(start_daemon):
    daemon = await start_daemon("--kalaha-move-time", "1")
    a, b = await connect(daemon.port), await connect(daemon.port)
    await take_seats("slow", a, b)
    assert (await a.expect("YOURMOVE")).startswith("YOURMOVE 1 ")
    assert await a.expect("RESULT") == "RESULT LOSE TIMEOUT you did not move within 1 s"
    assert await b.expect("RESULT") == "RESULT WIN TIMEOUT guest1 did not move within 1 s"


@pytest_twisted.ensureDeferred
async def test_config_file_settings_apply(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text('[kalaha]\nmove_time = 42\nstrikes = 1\nboard = false\n')
    daemon = await start_daemon("--config", str(conf))
    a, b = await connect(daemon.port), await connect(daemon.port)
    await take_seats("c", a, b)
    assert (await a.expect("YOURMOVE")).startswith("YOURMOVE 42 ")
    a.send("B1")
    assert await a.next_line() == "ERROR 413 B1: that pit belongs to your opponent; strike 1 of 1"
    assert await a.next_line() == "SCORE 0 0"
    assert await a.next_line() == "RESULT LOSE STRIKES you made 1 protocol errors"


@pytest_twisted.ensureDeferred
async def test_sigterm_aborts_running_games_and_the_daemon_exits_cleanly(start_daemon):
    daemon = await start_daemon()
    a, b = await connect(daemon.port), await connect(daemon.port)
    await take_seats("s", a, b)
    await a.expect("YOURMOVE")
    clean = await daemon.stop()
    assert await a.expect("ABORT") == "ABORT SHUTDOWN the server is shutting down"
    assert await b.expect("ABORT") == "ABORT SHUTDOWN the server is shutting down"
    await a.wait_closed()
    assert clean, daemon.text
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_garbage_and_floods_do_not_disturb_another_game(start_daemon):
    daemon = await start_daemon("--max-line", "64", "--kalaha-pair-delay", "5")
    bad = await connect(daemon.port)
    garbage = bytes(b for b in range(256) if b != 13) * 8  # every byte value but CR, which ends a line
    bad.transport.write(garbage + b"\r\n" + b"z" * 100_000 + b"\n" + b"PING\n" * 5000)
    seen = await with_timeout(defer.ensureDeferred(play_random_game(daemon.port, "calm", random.Random(3))), 30, "game")
    check_finished(seen)
    assert await bad.expect("ERROR") == "ERROR 403 not ASCII text"
    assert (await bad.expect("ERROR")).startswith("ERROR 402 line too long")
    assert await bad.expect("PONG") == "PONG"
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_logs_are_text_by_default_and_json_lines_with_the_logger_option(start_daemon):
    daemon = await start_daemon()
    await daemon.stop()
    assert f"[-] kalaha starting on {daemon.port}\n" in daemon.text, "the port's line names what it serves"
    assert f"gamed ready: kalaha tcp:127.0.0.1:{daemon.port}\n" in daemon.text
    d = spawn(["--logger=gamed.logs.json_observer", *gamed_args()])
    try:
        await with_timeout(d.listening, 20, "the daemon with JSON logs to listen")
    finally:
        await d.stop()
    # The daemon may be stopped before the reactor runs (and logs its shutdown), so only the
    # start-up events are certain.
    lines = d.text.splitlines()
    events = [json.loads(line) for line in lines]
    assert len(events) == len(lines) >= 3, "every line is one JSON object"
    assert any(f"kalaha starting on {d.port}" in json.dumps(e) for e in events)
    assert any(e.get("line") == f"gamed ready: kalaha tcp:127.0.0.1:{d.port}" for e in events)
    # flat objects: time, level, system, message and the event's own fields, nothing of Twisted's
    assert all({"time", "level", "system", "message"} <= set(e) for e in events)
    assert not any(key.startswith("log_") for e in events for key in e)
    ready = next(e for e in events if e.get("line", "").startswith("gamed ready:"))
    assert (ready["level"], ready["system"], ready["message"]) == ("info", "gamed.tap", ready["line"])
