"""A 4-seat GGZ Combat table on a custom 4-player map (issue 5): four copies of
examples/combat/random_bot.py play over loopback against the real daemon (``--combat-seats 4``),
the first one as host sending the map's options string (``--options-hex``).

A beaten seat keeps its turn slot (spec §11.2, §11.5); one left with no movable unit can never
move, so the daemon runs with a short ``--combat-move-time`` that passes such a seat's turn on.
"""

from __future__ import annotations

import re
import time

import pytest_twisted

from gamed.combat.maps import parse_map, write_map
from gamed.combat.wire import CombatOptions, HostOptions, owner_nibble, read_options, write_options
from tests.integration.support import LOOPBACK, with_timeout
from tests.integration.test_combat_bots import WINNER, _sleep, spawn_bot

SEATS = 4
SIDE = 8
# flag, bomb, spy, scout, miner, sergeant, lieutenant, captain, major, colonel, general, marshal
ARMY = (1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1)
MOVE = re.compile(rb"seat (\d): turn \d+: move")


def four_corner_map() -> CombatOptions:
    """8x8, a 2x2 zone in each corner (seat 0 top left, 1 top right, 2 bottom left, 3 bottom
    right), a 2x2 lake in the middle; every zone exactly holds the army of 4 units."""
    types = bytearray(SIDE * SIDE)
    corners = {0: (0, 0), 1: (SIDE - 2, 0), 2: (0, SIDE - 2), 3: (SIDE - 2, SIDE - 2)}
    for seat, (x0, y0) in corners.items():
        for y in range(y0, y0 + 2):
            for x in range(x0, x0 + 2):
                types[y * SIDE + x] = owner_nibble(seat)
    for y in (3, 4):
        for x in (3, 4):
            types[y * SIDE + x] = 2  # T_LAKE
    return CombatOptions(SIDE, SIDE, bytes(types), ARMY, name="Four")


def test_four_corner_map_is_valid():
    options = four_corner_map()
    assert options.check(SEATS) == 0
    assert all(len(options.zone(seat)) == sum(ARMY) for seat in range(SEATS))
    raw = write_options(options)
    assert read_options(raw) == (options, 0)
    assert HostOptions.of(options).data == raw
    assert HostOptions.of(options).read() == (options, 0)
    # The map file format (§9) writes '1'+owner for any owner, but its loader knows only the zones
    # of seats 0 and 1 ('1', '2'): a 4-player map does not survive a file round trip.
    text = write_map(options)
    assert all(letter in text for letter in "1234")
    loaded = parse_map(text, "Four")
    assert [len(loaded.zone(seat)) for seat in range(SEATS)] == [4, 4, 0, 0]


@pytest_twisted.ensureDeferred
async def test_four_random_bots_play_a_four_seat_table(start_daemon):
    started = time.monotonic()
    options = four_corner_map()
    assert options.check(SEATS) == 0
    daemon = await start_daemon(
        "--combat-seats", str(SEATS), "--combat-move-time", "0.5", kalaha="none", combat=LOOPBACK
    )
    port = daemon.ports["combat"]
    bots = []
    try:
        for seat in range(SEATS):
            extra = ["--seed", str(seat + 1), "--verbose"]
            if seat == 0:
                extra += ["--options-hex", HostOptions.of(options).data.hex()]
            bot = spawn_bot(port, *extra)
            bots.append(bot)
            # Start the next bot only once this one is seated (it logs its seat), so seats go in order.
            for _ in range(100):
                if f"seat {seat}:".encode() in bot.err or bot.ended.called:
                    break
                await _sleep(0.1)
            assert f"seat {seat}:".encode() in bot.err, bot.err
        remaining = 55 - (time.monotonic() - started)
        codes = [await with_timeout(bot.ended, max(remaining, 1), "a bot to finish") for bot in bots]
    finally:
        for bot in bots:
            bot.kill()
    outputs = [bot.out.decode() for bot in bots]
    details = f"outputs {outputs}, errors {[bot.err.decode()[-1500:] for bot in bots]}"
    assert codes == [0] * SEATS, details
    assert b"host: sending the options given" in bots[0].err
    for seat, bot in enumerate(bots):
        assert f"{SEATS} seats, protocol 10".encode() in bot.err, details
        assert f"seat {seat}:" in outputs[seat], details
        assert WINNER.search(outputs[seat]) is not None, details
    winners = {WINNER.search(out).group(1) for out in outputs}
    assert len(winners) == 1, details
    assert winners.pop() in {"-1", *map(str, range(SEATS))}, details
    # Every seat got at least one turn and moved (the host's START sync, then the rotation).
    movers = {int(m.group(1)) for bot in bots for m in MOVE.finditer(bot.err)}
    assert movers == set(range(SEATS)), details
    assert "Traceback" not in daemon.text, daemon.text[-3000:]
    assert time.monotonic() - started < 60
