"""GGZ Combat's clocks against the real daemon: the binary protocol has no room for them, so a bot
reads its bank from the web (``/api/games/<id>``: ``clocks`` after each move, ``to_move``); one
that spends nearly all of it plays on, one 50 ms over it loses, and the records say why."""

from __future__ import annotations

import json

import pytest_twisted
from twisted.internet import reactor, task

from gamed.combat import wire
from tests.combat.test_protocol import DEFAULT, placement
from tests.integration.support import LOOPBACK
from tests.integration.test_combat_daemon import connect
from tests.integration.test_web_daemon import poll_json


@pytest_twisted.ensureDeferred
async def test_a_bot_that_reads_its_bank_from_the_web_spends_it_and_one_50_ms_over_loses(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text('[combat]\nclock = "2s+50ms"\n')
    records = tmp_path / "combat"
    daemon = await start_daemon("--config", str(conf), "--combat-records", str(records),
                                kalaha="none", combat=LOOPBACK, web=LOOPBACK)
    alice = await connect(daemon.ports["combat"])
    await alice.expect(wire.ReqOptions)
    bob = await connect(daemon.ports["combat"])
    await bob.expect(wire.MsgSeat)
    alice.send(wire.HostOptions.of(DEFAULT))
    for client, seat in ((alice, 0), (bob, 1)):
        await client.expect(wire.ReqSetup)
        client.send(wire.MsgSetup(wire.write_setup(DEFAULT, seat, placement(seat))))
    await alice.expect(wire.MsgStart)
    url = f"http://127.0.0.1:{daemon.ports['web']}/api/games"
    (game,) = await poll_json(url, lambda body: body["games"] or None, "the Combat game in /api/games")
    detail = await poll_json(f"{url}/{game['id']}", lambda body: body, "the game's detail")
    assert detail["options"]["clock"] == "2s+50ms" and detail["clocks"] == {"0": 2.0, "1": 2.0}, detail
    # alice spends all but 300 ms of her bank, then moves
    await task.deferLater(reactor, detail["clocks"]["0"] - 0.3, lambda: None)
    alice.send(wire.ReqMove(30, 40))
    assert await bob.expect(wire.MsgMove) == wire.MsgMove(30, 40)
    after = await poll_json(f"{url}/{game['id']}", lambda body: body["moves"] and body, "alice's move")
    assert 0.3 <= after["clocks"]["0"] <= 0.45, after["clocks"]  # ~0.3 s left + the 50 ms increment
    # bob waits 50 ms past his whole bank: he loses on time
    await task.deferLater(reactor, after["clocks"]["1"] + 0.05, lambda: None)
    bob.send(wire.ReqMove(69, 59))
    over = await alice.expect(wire.MsgGameover)
    assert over.winner == 0
    results = records / "results.jsonl"
    for _ in range(100):
        if results.exists() and results.read_text():
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (record["winner"], record["reason"]) == (0, "timeout")
    assert record["detail"] == "seat 1 (player2) ran out of time (2s+50ms)"
    assert "Traceback" not in daemon.text
