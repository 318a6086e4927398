"""Hosted GGZ Combat bots against the real Combat service: real subprocesses in the sandbox,
each bridged to a connection of the handshake port's protocol (text lines, then binary) placed
at a table reserved for the two, on the real reactor. A crash, an illegal move and bad input end
with their faults, and no process of a bot outlives its game."""

from __future__ import annotations

import os
import sys

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.testing import StringTransport

from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits
from gamed.hosting.faults import Fault
from gamed.hosting.runner import HostedGames
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import parse_bot
from gamed.identity import Identity
from gamed.observers import LiveHub
from gamed.seats import Placement
from tests.hosting.test_hosted_games import ISOLATIONS, programs_with
from tests.procs import wait_gone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOT = os.path.join(ROOT, "examples", "bots", "combat_bot.py")
MISBEHAVE = os.path.join(ROOT, "tests", "hosting", "combat_misbehave.py")
PY = sys.executable


def bot(name: str, command: str, **limits):
    return parse_bot(name, {"game": "combat", "command": command, "limits": limits}, ("combat",))


def runner(tmp_path, isolation="none", move_time=10.0, start_timeout=10.0):
    hub = LiveHub(reactor)
    combat = CombatService(Limits(), reactor, CombatConfig(move_time=move_time, records=""), hub=hub)
    return HostedGames({"combat": combat}, hub, reactor, Isolation.detect(isolation), str(tmp_path),
                       start_timeout=start_timeout), combat


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_two_python_bots_play_combat_to_its_end(tmp_path, isolation):
    games, combat = runner(tmp_path, isolation)
    result = await games.play("combat", [bot("north", f"{PY} {BOT} 3 {tmp_path}"),
                                         bot("south", f"{PY} {BOT} 4 {tmp_path}")])
    assert result.played and result.bots == ("north", "south"), result
    assert result.faults == (None, None), result
    assert result.reason in ("flag captured", "no movable units left", "no seat has a flag and a movable unit"), result
    assert sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5]), result
    assert result.table.startswith("combat-")
    assert not combat._tables and not combat._reserved  # the table is gone with its game
    assert not os.listdir(tmp_path / "bots" / "games")
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_the_c_bot_and_the_python_bot_play_combat_both_ways(tmp_path, c_bots):
    games, _ = runner(tmp_path)
    py, c = bot("pybot", f"{PY} {BOT} 5 {tmp_path}"), bot("cbot", f"{c_bots['combat']} 9 {tmp_path}")
    for names in ((py, c), (c, py)):
        result = await games.play("combat", list(names))
        assert result.played and result.faults == (None, None), result
        assert sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5]), result
    assert wait_gone(programs_with(str(tmp_path))) == []


FAILURES = [
    # (mode, fault, words in the detail: the process's, else the game's end reason)
    ("crash", Fault.CRASH, "SIGSEGV"),
    ("illegal", Fault.ILLEGAL, "illegal"),  # a refused move loses a hosted bot's game at once
    ("garbage", Fault.PROTOCOL, "protocol"),  # an unknown opcode: the server closes it
]


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("mode,fault,words", FAILURES, ids=[f[0] for f in FAILURES])
@pytest_twisted.ensureDeferred
async def test_each_failure_ends_with_its_fault_and_leaves_no_process(tmp_path, isolation, mode, fault, words):
    games, _ = runner(tmp_path, isolation)
    bad = bot("wild", f"{PY} {MISBEHAVE} {mode} {tmp_path}")
    good = bot("steady", f"{PY} {BOT} 1 {tmp_path}")
    result = await games.play("combat", [bad, good])  # seat 0 moves first
    assert result.played and result.scores == (0.0, 1.0), result
    trouble = result.faults[0]
    assert trouble is not None and trouble.fault is fault, result
    assert words in trouble.text(), trouble
    assert result.faults[1] is None
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_that_exits_before_its_game_is_a_start_fault_and_the_table_is_released(tmp_path):
    games, combat = runner(tmp_path)
    result = await games.play("combat", [bot("steady", f"{PY} {BOT} 1 {tmp_path}"),
                                         bot("early", f"{PY} {MISBEHAVE} early {tmp_path}")])
    assert not result.played and result.match_id is None
    assert result.faults[1].fault is Fault.START and "status 3" in result.faults[1].text()
    assert result.faults[0] is None
    assert not combat._reserved and not combat._tables
    assert wait_gone(programs_with(str(tmp_path))) == []


def _handshake(service, placement=None):
    protocol = service.player_factory.buildProtocol(None)
    protocol.placement = placement
    transport = StringTransport()
    protocol.makeConnection(transport)
    transport.clear()
    return protocol, transport


def test_a_reserved_table_takes_only_its_placed_bots_and_they_keep_to_it():
    combat = CombatService(Limits(), reactor, CombatConfig(records=""))
    combat.reserve_table("match1", ["ann", "bob"])
    assert combat.table_waiting("match1")
    # Anybody else asking for the table is refused, and stays in the handshake.
    stranger, out = _handshake(combat)
    stranger.dataReceived(b"TABLE match1\r\nPLAY\r\n")
    assert out.value() == b"OK TABLE match1\r\nERROR table match1 is reserved for a hosted game\r\n"
    # The placed bot: its name and table are the daemon's; what would change them is refused.
    placed, out = _handshake(combat, Placement(Identity("bob", "bot"), "match1"))
    placed.dataReceived(b"NAME eve\r\nLOGIN eve xxxxxxxxxxxxxxxxxxxxxxxx\r\nRESUME abc\r\nCOMPUTER ucc\r\nTABLE elsewhere\r\n")
    hosted = b"ERROR 433 this seat is assigned by the daemon: a hosted bot plays under its own name\r\n"
    assert out.value() == hosted * 4 + b"OK TABLE elsewhere\r\n"
    out.clear()
    placed.dataReceived(b"PLAY\r\n")
    assert out.value().startswith(b"OK PLAY: binary protocol follows\r\n")
    assert placed.seating.seat == 1 and placed.name == "bob"  # its reserved seat, whoever came first
    stranger2, out2 = _handshake(combat, Placement(Identity("bob", "bot"), "match1"))
    stranger2.dataReceived(b"PLAY\r\n")
    assert out2.value() == b"ERROR table match1 is reserved for a hosted game\r\n"  # bob sits there already
    combat.release_table("match1")
    assert not combat.table_waiting("match1")


@pytest_twisted.ensureDeferred
async def test_a_combat_bot_that_connects_itself_plays_a_piped_one(tmp_path):
    """talk = "connect": LOGIN <name> <host token>, TABLE <table>, PLAY on the real handshake port."""
    from gamed.config import PlayersConfig
    from gamed.players import Players

    players = Players(PlayersConfig(), None, reactor)  # no records: the host token needs no accounts
    hub = LiveHub(reactor)
    combat = CombatService(Limits(), reactor, CombatConfig(move_time=10.0, records=""), hub=hub, players=players)
    port = reactor.listenTCP(0, combat.text_port_factory(), interface="127.0.0.1")
    try:
        games = HostedGames({"combat": combat}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=20.0,
                            address={"combat": ("127.0.0.1", port.getHost().port)}, tokens=players)
        net = parse_bot("netcombat", {"game": "combat", "command": f"{PY} {BOT} 7", "talk": "connect"}, ("combat",))
        for seats in ((net, bot("piped", f"{PY} {BOT} 2 {tmp_path}")), (bot("piped", f"{PY} {BOT} 3 {tmp_path}"), net)):
            result = await games.play("combat", list(seats))
            assert result.played and result.faults == (None, None), result
            assert result.bots == tuple(b.name for b in seats)
        assert not players._hosted  # every host token is gone with its game
        assert wait_gone(programs_with(str(tmp_path))) == [] and wait_gone(programs_with(BOT)) == []
    finally:
        await port.stopListening()


async def test_hosted_pairs_play_their_openings_map_both_ways(tmp_path, c_bots):
    """The runner's opening picks the map: both games of a pair (the seats swapped) play it, the
    example bots (which read the map from CBT_MSG_OPTIONS) play every opening's map to its end,
    and the records name the map and the opening."""
    from gamed.combat import maps
    from tests.memstore import MemoryStore

    store = MemoryStore()
    hub = LiveHub(reactor, store)
    combat = CombatService(Limits(), reactor, CombatConfig(move_time=3.0, records=""), hub=hub)
    games = HostedGames({"combat": combat}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=10.0)
    py, c = bot("pybot", f"{PY} {BOT} 5 {tmp_path}"), bot("cbot", f"{c_bots['combat']} 9 {tmp_path}")
    played = {}
    for opening in range(1, len(maps.opening_maps(2)) + 1):
        for seats in ((py, c), (c, py)):
            result = await games.play("combat", list(seats), opening=opening)
            assert result.played, (opening, result)
            # The example bots never send a bad move; on a map where all their movable units are
            # boxed in they send none, and lose on time (a result, not a protocol fault).
            for trouble in result.faults:
                assert trouble is None or (trouble.fault is Fault.TIME and result.reason == "timeout"), (opening, result)
            record = store.records[result.match_id - 1]
            played.setdefault(opening, []).append((record.options["opening"], record.options["map"]))
    assert played == {n: [(n, maps.opening_map(n).name)] * 2 for n in played}
    assert len({games[0][1] for games in played.values()}) == len(played)  # distinct openings, distinct maps
    plain = await games.play("combat", [py, c])
    assert plain.played and "opening" not in store.records[plain.match_id - 1].options
    assert store.records[plain.match_id - 1].options["map"] == "Default"  # the host's choice, as always
    assert wait_gone(programs_with(str(tmp_path))) == []
