"""Hosted Virtual Fight bots against the real Fight service: real subprocesses in the sandbox,
each bridged to a connection of the AI port's protocol placed at a table reserved for the game's
teams, on the real reactor. The Python and C example bots play whole games (two teams, and
four on the four-team map), a crash ends with its fault, and no process of a bot outlives its
game."""

from __future__ import annotations

import os
import sys

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from gamed.config import FightConfig, Limits, PlayersConfig
from gamed.fight.rules import resolve_map
from gamed.fight.service import FightService
from gamed.hosting.faults import Fault
from gamed.hosting.runner import HostedGames
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import parse_bot
from gamed.identity import Identity
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.seats import Placement
from tests.hosting.test_hosted_games import ISOLATIONS, programs_with
from tests.procs import wait_gone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOT = os.path.join(ROOT, "examples", "bots", "fight_bot.py")
MISBEHAVE = os.path.join(ROOT, "tests", "hosting", "fight_misbehave.py")
PY = sys.executable
ENDS = ("last team standing", "all warriors killed", "turn limit")


def bot(name: str, command: str, **limits):
    return parse_bot(name, {"game": "fight", "command": command, "limits": limits}, ("fight",))


def runner(tmp_path, isolation="none", teams=2, max_turns=120, turn_time=10.0):
    hub = LiveHub(reactor)
    fmap = resolve_map("four" if teams > 2 else "default")
    fight = FightService(FightConfig(teams=teams, max_turns=max_turns, turn_time=turn_time), Limits(), reactor,
                         fmap=fmap, hub=hub)
    return HostedGames({"fight": fight}, hub, reactor, Isolation.detect(isolation), str(tmp_path),
                       start_timeout=20.0), fight


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_two_python_bots_fight_to_the_end(tmp_path, isolation):
    games, fight = runner(tmp_path, isolation)
    result = await games.play("fight", [bot("red", f"{PY} {BOT} 3 {tmp_path}"), bot("blue", f"{PY} {BOT} 4 {tmp_path}")])
    assert result.played and result.bots == ("red", "blue"), result
    assert result.faults == (None, None), result
    assert result.reason in ENDS, result
    assert sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5]), result
    assert result.table.startswith("fight-")
    assert not fight.games and not fight.lobby.waiting()  # the game is over and nobody waits
    assert not os.listdir(tmp_path / "bots" / "games")
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_four_bots_fight_on_the_four_team_map(tmp_path):
    games, fight = runner(tmp_path, teams=4, max_turns=80)
    names = ("north", "east", "south", "west")
    result = await games.play("fight", [bot(name, f"{PY} {BOT} {seed} {tmp_path}") for seed, name in enumerate(names)])
    assert result.played and result.bots == names, result
    assert result.faults == (None,) * 4, result
    assert result.reason in ENDS and len(result.scores) == 4, result
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_fight_needs_as_many_bots_as_teams(tmp_path):
    games, fight = runner(tmp_path)
    with pytest.raises(ValueError, match="cannot reserve a fight table: seat count must be 2 to 2"):
        await games.play("fight", [bot(name, f"{PY} {BOT} 1 {tmp_path}") for name in ("a", "b", "c")])
    assert wait_gone(programs_with(str(tmp_path))) == []


FAILURES = [
    # (mode, limits, fault, words in the detail)
    ("crash", {}, Fault.CRASH, "killed by SIGSEGV"),
    ("quit", {}, Fault.PROTOCOL, "left the game"),
    ("hog", {"cpu": 1}, Fault.TIME, "CPU"),
]


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("mode,limits,fault,words", FAILURES, ids=[f[0] for f in FAILURES])
@pytest_twisted.ensureDeferred
async def test_each_failure_ends_with_its_fault_and_leaves_no_process(tmp_path, isolation, mode, limits, fault, words):
    games, fight = runner(tmp_path, isolation)
    steady = bot("steady", f"{PY} {BOT} 1 {tmp_path}")
    wild = bot("wild", f"{PY} {MISBEHAVE} {mode} {tmp_path}", **limits)
    result = await games.play("fight", [steady, wild])
    assert result.played and result.scores == (1.0, 0.0), result
    assert result.reason == "forfeit", result  # its team left at once: no grace for a hosted program
    trouble = result.faults[1]
    assert trouble is not None and trouble.fault is fault, result
    assert words in trouble.text(), trouble
    assert result.faults[0] is None
    assert not fight.games
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_whose_turns_time_out_is_disqualified_with_a_time_fault(tmp_path):
    hub = LiveHub(reactor)
    fight = FightService(FightConfig(turn_time=1.0, strikes=2), Limits(), reactor, hub=hub)
    games = HostedGames({"fight": fight}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=20.0)
    result = await games.play("fight", [bot("sleepy", f"{PY} {MISBEHAVE} sleep {tmp_path}"),
                                        bot("steady", f"{PY} {BOT} 1 {tmp_path}")])
    assert result.played and result.scores == (0.0, 1.0) and result.reason == "timeout", result
    assert result.faults[0] is not None and result.faults[0].fault is Fault.TIME and result.faults[1] is None, result
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_in_a_four_team_fight_each_loser_is_blamed_for_its_own_way_out(tmp_path):
    # The sleepy team is disqualified early for its timeouts; the game goes on between the three
    # others and ends as fights end: only the sleepy one has a fault, and it is a time fault.
    hub = LiveHub(reactor)
    fight = FightService(FightConfig(teams=4, turn_time=1.0, strikes=2, max_turns=60), Limits(), reactor, hub=hub,
                         fmap=resolve_map("four"))
    games = HostedGames({"fight": fight}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=20.0)
    bots = [bot("sleepy", f"{PY} {MISBEHAVE} sleep {tmp_path}")]
    bots += [bot(name, f"{PY} {BOT} {seed} {tmp_path}") for seed, name in enumerate(("east", "south", "west"), 1)]
    result = await games.play("fight", bots)
    assert result.played and result.scores[0] == 0.0 and result.reason != "timeout", result
    assert result.faults[0] is not None and result.faults[0].fault is Fault.TIME, result
    assert result.faults[1:] == (None, None, None), result
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_that_exits_before_its_game_is_a_start_fault_and_the_table_is_released(tmp_path):
    games, fight = runner(tmp_path)
    result = await games.play("fight", [bot("steady", f"{PY} {BOT} 1 {tmp_path}"),
                                        bot("early", f"{PY} {MISBEHAVE} early {tmp_path}")])
    assert not result.played and result.match_id is None
    assert result.faults[1].fault is Fault.START and "status 3" in result.faults[1].text()
    assert result.faults[0] is None
    assert not fight.lobby._reserved and not fight.lobby.waiting() and not fight.games  # the table is released
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_the_c_bot_and_the_python_bot_fight_both_ways(tmp_path, isolation, c_bots):
    games, _ = runner(tmp_path, isolation)
    py, c = bot("pybot", f"{PY} {BOT} 5 {tmp_path}"), bot("cbot", f"{c_bots['fight']} 9 {tmp_path}")
    for seats in ((py, c), (c, py)):
        result = await games.play("fight", list(seats))
        assert result.played and result.faults == (None, None), result
        assert result.bots == tuple(b.name for b in seats)
        assert result.reason in ENDS and sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5]), result
    assert wait_gone(programs_with(str(tmp_path))) == []


def _ai(service, placement=None):
    protocol = service.player_factory.buildProtocol(None)
    protocol.placement = placement
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def test_a_reserved_fight_table_takes_only_its_placed_bots_and_they_keep_to_it():
    clock = Clock()
    fight = FightService(FightConfig(), Limits(), clock)
    fight.reserve_table("match1", ["ann", "bob"])
    assert fight.table_waiting("match1")
    # Anybody else asking for the table is refused (also a guest who calls itself like a bot).
    stranger, out = _ai(fight)
    stranger.dataReceived(b"NAME&ann\r\nTABLE&match1\r\n")
    assert out.value() == b"OK\r\n255\r\n100&table match1 is reserved for a hosted game\r\n"
    assert not fight.lobby.is_waiting(stranger)
    clock.advance(FightConfig().pair_delay)
    assert fight.lobby.table_of(stranger) is None  # in the general queue, as before
    # The placed bots: their names and table are the daemon's; what would change them is refused.
    bob, out = _ai(fight, Placement(Identity("bob", "bot"), "match1"))
    bob.dataReceived(b"NAME&eve\r\nLOGIN&eve&xxxxxxxxxxxxxxxxxxxxxxxx\r\nRESUME&abcdefghijklmnopqrstuvwx\r\nTABLE&elsewhere\r\n")
    hosted = b"433&this seat is assigned by the daemon: a hosted bot plays under its own name\r\n"
    assert out.value() == b"OK\r\n" + hosted * 3 + b"255\r\n"
    assert fight.lobby.table_of(bob) == "match1" and fight.table_waiting("match1")
    ann, out = _ai(fight, Placement(Identity("ann", "bot"), "match1"))
    clock.advance(FightConfig().pair_delay)  # ann joins after the pair delay, as any AI
    assert not fight.table_waiting("match1")
    (game,) = fight.games.values()
    assert [p.name for p in game.players] == ["ann", "bob"]  # the reserved order, not the arrival order
    assert out.value() == b"OK\r\nREADY\r\n"
    assert bob.seat.identity == Identity("bob", "bot") and bob.seat.identity.rated


@pytest_twisted.ensureDeferred
async def test_a_python_bot_that_connects_itself_fights_a_piped_c_bot(tmp_path, c_bots):
    """talk = "connect": LOGIN&<name>&<host token>, TABLE&<table> on the real AI port."""
    players = Players(PlayersConfig(), None, reactor)  # no records: the host token needs no accounts
    hub = LiveHub(reactor)
    fight = FightService(FightConfig(max_turns=120, turn_time=10.0), Limits(), reactor, hub=hub, players=players)
    port = reactor.listenTCP(0, fight.ai_port_factory(), interface="127.0.0.1")
    try:
        games = HostedGames({"fight": fight}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=20.0,
                            address={"fight": ("127.0.0.1", port.getHost().port)}, tokens=players)
        net = parse_bot("netfight", {"game": "fight", "command": f"{PY} {BOT} 7", "talk": "connect"}, ("fight",))
        for seats in ((net, bot("cbot", f"{c_bots['fight']} 2 {tmp_path}")), (bot("cbot", f"{c_bots['fight']} 3 {tmp_path}"), net)):
            result = await games.play("fight", list(seats))
            assert result.played and result.faults == (None, None), result
            assert result.reason in ENDS, result
        assert not players._hosted  # every host token is gone with its game
        assert wait_gone(programs_with(str(tmp_path))) == [] and wait_gone(programs_with(BOT)) == []
    finally:
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_hosted_pair_fights_from_its_openings_start_squares_both_ways(tmp_path, c_bots):
    """The runner's opening seeds the start squares: both games of the pair (the seats swapped)
    start on them, the example bots fight from there, and another opening starts elsewhere."""
    from gamed.fight.rules import opening_map
    from tests.memstore import MemoryStore

    store = MemoryStore()
    hub = LiveHub(reactor, store)
    fight = FightService(FightConfig(max_turns=60, turn_time=10.0), Limits(), reactor, hub=hub)
    games = HostedGames({"fight": fight}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=20.0)
    py, c = bot("pybot", f"{PY} {BOT} 5 {tmp_path}"), bot("cbot", f"{c_bots['fight']} 9 {tmp_path}")

    def start_of(result):
        record = store.records[result.match_id - 1]
        where = {(w["team"], w["id"]): (w["y"], w["x"]) for w in record.initial_state["warriors"]}
        return record.options["opening"], [[where[t, n] for n in range(5)] for t in (0, 1)]

    first = await games.play("fight", [py, c], opening=4)
    second = await games.play("fight", [c, py], opening=4)
    other = await games.play("fight", [py, c], opening=9)
    for result in (first, second, other):
        assert result.played and result.faults == (None, None) and result.reason in ENDS, result
    squares = [list(team) for team in opening_map(fight.map, 4).starts]
    assert start_of(first) == start_of(second) == (4, squares)
    assert start_of(other) == (9, [list(team) for team in opening_map(fight.map, 9).starts]) != start_of(first)
    assert wait_gone(programs_with(str(tmp_path))) == []
