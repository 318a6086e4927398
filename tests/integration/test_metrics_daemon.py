"""The daemon's Prometheus metrics (/metrics on the web site) against the real daemon: scrape,
play a Kalaha game over loopback, scrape again; the counters and gauges move as the game did."""

import pytest_twisted
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import reactor, task

from tests.integration.support import connect, take_seats
from tests.web.client import get

WEB = "tcp:port=0:interface=127.0.0.1"


async def scrape(url: str) -> dict[tuple, float]:
    code, kind, body = await get(url + "/metrics")
    assert code == 200 and kind.startswith("text/plain"), (code, kind)
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest_twisted.ensureDeferred
async def test_metrics_move_as_a_game_is_played(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 0\n")
    daemon = await start_daemon("--config", str(conf), "--records", f"sqlite:{tmp_path / 'r.sqlite'}", web=WEB)
    url = f"http://127.0.0.1:{daemon.ports['web']}"
    before = await scrape(url)
    assert value(before, "gamed_games_running", game="kalaha") == 0
    assert value(before, "gamed_connections", game="kalaha") == 0
    assert ("process_resident_memory_bytes", ()) in before

    a, b = await connect(daemon.port), await connect(daemon.port)
    for c in (a, b):
        c.send("BOARD OFF")
    await take_seats("metrics", a, b)
    assert (await a.expect("START")).startswith("START")
    during = await scrape(url)
    assert value(during, "gamed_games_running", game="kalaha") == 1
    assert value(during, "gamed_connections", game="kalaha") == 2
    a.send("A3")
    await b.expect("YOURMOVE")
    b.send("NONSENSE")  # ERROR 400 unknown command
    await b.expect("ERROR")
    b.send("RESIGN")
    await a.expect("RESULT")
    after = {}
    for _ in range(400):  # the match is stored a moment after its end; the reactor is looked at every 0.5 s
        after = await scrape(url)
        if value(after, "gamed_records_write_seconds_count") >= 1 and value(after, "gamed_reactor_lateness_seconds_count") >= 1:
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    assert value(after, "gamed_games_finished_total", game="kalaha", reason="resign") == 1
    assert value(after, "gamed_moves_total", game="kalaha") >= 1
    assert value(after, "gamed_errors_total", game="kalaha", code="400") == 1
    assert value(after, "gamed_games_running", game="kalaha") == 0
    assert value(after, "gamed_records_write_seconds_count") == 1
    assert value(after, "gamed_reactor_lateness_seconds_count") >= 1


@pytest_twisted.ensureDeferred
async def test_every_game_is_listed_on_a_daemon_with_every_game(start_daemon, tmp_path):
    daemon = await start_daemon(web=WEB, fight="tcp:0:interface=127.0.0.1", fight_gui="none",
                                combat="tcp:0:interface=127.0.0.1", connect4="tcp:0:interface=127.0.0.1")
    samples = await scrape(f"http://127.0.0.1:{daemon.ports['web']}")
    games = {dict(labels)["game"] for name, labels in samples if name == "gamed_games_running"}
    assert {"kalaha", "fight", "combat", "connect4"} <= games, games
    # Virtual Fight's replies are numbers: its "invalid" (100) is counted by that code
    fight = await connect(daemon.ports["fight"])
    fight.send("NO SUCH COMMAND")
    assert await fight.expect("100") == "100"
    samples = await scrape(f"http://127.0.0.1:{daemon.ports['web']}")
    assert value(samples, "gamed_errors_total", game="fight", code="100") == 1


@pytest_twisted.ensureDeferred
async def test_a_seat_whose_time_runs_out_is_counted(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 0.3\nstrikes = 1\n")
    daemon = await start_daemon("--config", str(conf), web=WEB)
    url = f"http://127.0.0.1:{daemon.ports['web']}"
    before = value(await scrape(url), "gamed_timeouts_total", game="kalaha")
    a, b = await connect(daemon.port), await connect(daemon.port)
    for c in (a, b):
        c.send("BOARD OFF")
    await take_seats("slow", a, b)
    await a.expect("YOURMOVE")  # ... and A lets its time run out: struck out, B wins
    await b.expect("RESULT")
    after = value(await scrape(url), "gamed_timeouts_total", game="kalaha")
    assert after == before + 1


@pytest_twisted.ensureDeferred
async def test_metrics_on_a_port_of_their_own_leave_the_web_site(start_daemon):
    daemon = await start_daemon("--metrics", "tcp:0:interface=127.0.0.1", web=WEB)
    own = f"http://127.0.0.1:{daemon.ports['metrics']}"
    site = f"http://127.0.0.1:{daemon.ports['web']}"
    samples = await scrape(own)
    assert ("gamed_games_running", (("game", "kalaha"),)) in samples
    code, _, body = await get(own + "/readyz")
    assert code == 200 and b'"ready"' in body
    assert (await get(own + "/healthz"))[0] == 200
    assert (await get(site + "/metrics"))[0] == 404  # no longer on the public site
    assert (await get(site + "/healthz"))[0] == 200  # (which keeps its own health checks)
    assert (await get(own + "/"))[0] == 404
