"""Hosted bots against the real game services: real subprocesses in the sandbox, bridged to the
games' own protocols, on the real reactor. Each failure kind ends with its fault, and no process
of a bot outlives its game (checked in /proc)."""

from __future__ import annotations

import os
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from gamed.config import Connect4Config, KalahaConfig, Limits
from gamed.connect4.service import Connect4Service
from gamed.hosting.faults import Fault
from gamed.hosting.runner import HostedGames
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import parse_bot
from gamed.kalaha.service import KalahaService
from gamed.observers import LiveHub
from tests.procs import wait_gone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOTS = os.path.join(ROOT, "examples", "bots")
MISBEHAVE = os.path.join(ROOT, "tests", "hosting", "misbehave.py")
PY = sys.executable
ISOLATIONS = ["none"] + (["bwrap"] if Isolation.detect("auto").bwrap else [])
# ... and each with its programs run in sandboxes started ahead (gamed.hosting.warm)
STARTS = ISOLATIONS + [f"{isolation}/warm" for isolation in ISOLATIONS]


def programs_with(marker: str) -> list[int]:
    """The pids of every process whose command line holds ``marker``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def bot(name: str, game: str, command: str, **limits):
    return parse_bot(name, {"game": game, "command": command, "limits": limits}, ("kalaha", "connect4"))


def runner(tmp_path, isolation="none", move_time=10.0, start_timeout=10.0):
    """The runner of the tests; ``isolation`` "none", "bwrap", or either with "/warm": with two
    sandboxes per kind started ahead."""
    isolation, _, warm = isolation.partition("/")
    hub = LiveHub(reactor)
    kalaha = KalahaService(KalahaConfig(board=False, move_time=move_time, strikes=3), Limits(), reactor, hub=hub)
    connect4 = Connect4Service(Connect4Config(board=False), Limits(), reactor, hub=hub)
    return HostedGames(
        {"kalaha": kalaha, "connect4": connect4}, hub, reactor, Isolation.detect(isolation), str(tmp_path),
        start_timeout=start_timeout, warm=2 if warm else 0,
    )


async def play_started_ahead(games, game, bots):
    """Play ``bots`` with their sandboxes started ahead when the runner has a pool (checked: both
    programs ran in them), then end the pool: what is left running after is the bots' own."""
    games.warm_up(bots)
    try:
        result = await games.play(game, bots)
        if games.warm is not None:
            assert games.warm.used == len(bots)
        return result
    finally:
        games.stop()


@pytest.mark.parametrize("isolation", STARTS)
@pytest_twisted.ensureDeferred
async def test_python_and_c_bots_play_kalaha_both_ways(tmp_path, isolation, c_bots):
    games = runner(tmp_path, isolation)
    py = bot("pybot", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 3 {tmp_path}")
    c = bot("cbot", "kalaha", c_bots["kalaha"])
    games.warm_up([py, c])
    first = await games.play("kalaha", [py, c])
    second = await games.play("kalaha", [c, py])
    if games.warm is not None:
        assert games.warm.used == 4  # the second game's too: the pool was filled behind the first
        games.stop()
    for result, names in ((first, ("pybot", "cbot")), (second, ("cbot", "pybot"))):
        assert result.played and result.bots == names
        assert sorted(result.scores) in ([0.0, 1.0], [0.5, 0.5])
        assert result.reason == "end" and result.faults == (None, None)
        assert result.outcome.startswith(("pybot won", "cbot won", "draw"))
    # Fresh working directories are removed, and nothing of the bots runs on.
    assert not os.listdir(tmp_path / "bots" / "games")
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_python_and_c_bots_play_connect_four(tmp_path, c_bots):
    games = runner(tmp_path)
    result = await games.play("connect4", [
        bot("pyfour", "connect4", f"{PY} {BOTS}/connect4_bot.py 5"),
        bot("cfour", "connect4", c_bots["connect4"]),
    ])
    assert result.played and result.faults == (None, None)
    assert result.reason in ("four", "full")


FAILURES = [
    # (mode, limits, fault, words in the detail)
    ("crash", {}, Fault.CRASH, "SIGSEGV"),
    ("memory", {"memory": "64M"}, Fault.MEMORY, ""),
    ("cpu", {"cpu": 1}, Fault.TIME, "CPU"),
    ("output", {"output": "256K"}, Fault.OUTPUT, "stdout"),
    ("disk", {"disk": "2M"}, Fault.OUTPUT, ""),
    ("garbage", {}, Fault.PROTOCOL, "strikes"),
    ("sleep", {}, Fault.TIME, "timeout"),
    ("quit", {}, Fault.PROTOCOL, "left the game"),
]


@pytest.mark.parametrize("isolation", STARTS)
@pytest.mark.parametrize("mode,limits,fault,words", FAILURES, ids=[f[0] for f in FAILURES])
@pytest_twisted.ensureDeferred
async def test_each_failure_ends_with_its_fault_and_leaves_no_process(tmp_path, isolation, mode, limits, fault, words):
    games = runner(tmp_path, isolation, move_time=2.0)
    good = bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}")
    bad = bot("wild", "kalaha", f"{PY} {MISBEHAVE} {mode} {tmp_path}", **limits)
    result = await play_started_ahead(games, "kalaha", [bad, good])  # the bad bot is A: it moves first
    assert result.played, result
    # It lost; a game it left before the first move is aborted (nobody wins: no move was made).
    assert result.scores == ((0.0, 0.0) if result.reason == "disconnect" else (0.0, 1.0)), result
    trouble = result.faults[0]
    assert trouble is not None and trouble.fault is fault, result
    assert words in trouble.text(), trouble
    assert result.faults[1] is None
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest.mark.parametrize("isolation", STARTS)
@pytest_twisted.ensureDeferred
async def test_a_forked_child_does_not_survive_the_game(tmp_path, isolation):
    games = runner(tmp_path, isolation)
    result = await play_started_ahead(games, "kalaha", [
        bot("forker", "kalaha", f"{PY} {MISBEHAVE} fork {tmp_path}"),
        bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}"),
    ])
    assert result.played
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_that_exits_at_once_is_a_start_fault_and_no_game_is_played(tmp_path):
    games = runner(tmp_path)
    result = await games.play("kalaha", [
        bot("early", "kalaha", f"{PY} {MISBEHAVE} early"),
        bot("steady", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 1 {tmp_path}"),
    ])
    assert not result.played and result.match_id is None
    assert result.faults[0].fault is Fault.START and "status 3" in result.faults[0].text()
    assert result.faults[1] is None
    assert result.outcome.startswith("no game: early: start")
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest_twisted.ensureDeferred
async def test_a_bot_that_never_takes_its_seat_is_a_start_fault(tmp_path, c_bots):
    games = runner(tmp_path, start_timeout=1.0)
    # A Kalaha bot on the Connect Four table: it never asks for a table the way Connect Four needs.
    silent = bot("silent", "kalaha", f"{PY} -c 'import time; time.sleep(60)' {tmp_path}")
    result = await games.play("connect4", [silent, bot("cfour", "connect4", c_bots["connect4"])])
    assert not result.played
    assert result.faults[0].fault is Fault.START and "did not take its seat" in result.faults[0].text()
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest_twisted.ensureDeferred
async def test_a_program_whose_exit_another_part_of_the_daemon_reaped_still_ends(tmp_path, isolation):
    # Something else in the daemon waits for the program's pid (a stray waitpid, a reused pid's
    # group): the reactor never hears of its exit, yet the program ends, and its game with it.
    from gamed.hosting.process import HostedProgram

    spec = bot("sleeper", "kalaha", f"{PY} -c 'import time; time.sleep(60)' {tmp_path}")
    program = HostedProgram(spec, str(tmp_path), Isolation.detect(isolation), reactor)
    program.start(reactor)
    assert program.pid is not None
    os.kill(program.pid, 9)
    os.waitpid(program.pid, 0)  # taken before the reactor's SIGCHLD handler can run
    guard = reactor.callLater(30, program.ended.cancel)
    try:
        trouble = await program.ended
    finally:
        if guard.active():
            guard.cancel()
    assert program.done and trouble is None
    assert wait_gone(programs_with(str(tmp_path))) == []


@pytest.mark.parametrize("isolation", STARTS)
@pytest_twisted.ensureDeferred
async def test_a_hosted_program_inherits_no_descriptor_of_the_daemon(tmp_path, isolation):
    # A descriptor of the daemon without close-on-exec (as systemd passes listening sockets):
    # the program still has only its stdin, stdout and stderr.
    leaky = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaky, True)
    try:
        script = tmp_path / "fds.sh"
        # (the interpreter and the bot come as arguments: paths under /tmp, as in a fresh clone
        # there, are visible in the sandbox only when the command names them)
        script.write_text('#!/bin/sh\nls /proc/self/fd >&2\nexec "$1" "$2" 3\n')
        script.chmod(0o755)
        games = runner(tmp_path, isolation)
        result = await play_started_ahead(games, "kalaha", [bot("fds", "kalaha", f"{script} {PY} {BOTS}/kalaha_bot.py"),
                                                            bot("plain", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 4")])
        assert result.played and result.faults == (None, None), result
        listed = sorted(int(fd) for fd in result.stderr[0].split())
        assert listed[:3] == [0, 1, 2] and len(listed) == 4, listed  # (the fourth is ls's own listing)
        assert leaky not in listed[:3]
    finally:
        os.close(leaky)


@pytest_twisted.ensureDeferred
async def test_a_pair_of_hosted_kalaha_games_starts_from_its_opening_both_ways(tmp_path, c_bots):
    """The runner's opening: both games of a pair (the colours swapped) start from its position,
    the example bots play it out, a bot that follows the PLAYED lines alone knows the board, and
    the records show the opening; another opening starts elsewhere; no opening, the usual start."""
    from gamed.kalaha import rules
    from tests.memstore import MemoryStore

    store = MemoryStore()
    hub = LiveHub(reactor, store)
    kalaha = KalahaService(KalahaConfig(board=False, move_time=10.0, strikes=3), Limits(), reactor, hub=hub)
    games = HostedGames({"kalaha": kalaha}, hub, reactor, Isolation.detect("none"), str(tmp_path), start_timeout=10.0)
    py = bot("pybot", "kalaha", f"{PY} {BOTS}/kalaha_bot.py 3 {tmp_path}")
    c = bot("cbot", "kalaha", c_bots["kalaha"])
    tracker = os.path.join(ROOT, "tests", "hosting", "kalaha_tracker.py")
    seen = tmp_path / "tracker.txt"
    track = bot("tracker", "kalaha", f"{PY} {tracker} {seen}")

    def start_of(result):
        (record,) = [r for n, r in enumerate(store.records, 1) if n == result.match_id]
        return record.options.get("opening"), record.initial_state

    def reached(number):
        moves = rules.play_moves(rules.opening(number))
        return rules.spectator_state(moves[-1].position)

    first = await games.play("kalaha", [py, c], opening=7)
    second = await games.play("kalaha", [c, py], opening=7)
    for result in (first, second):
        assert result.played and result.reason == "end" and result.faults == (None, None), result
    def names(number):
        return [f"{m.side}{m.pit}" for m in rules.play_moves(rules.opening(number))]

    assert start_of(first) == start_of(second) == (names(7), reached(7))
    assert rules.opening(7) != rules.opening(8)
    other = await games.play("kalaha", [track, py], opening=8)
    assert other.played and other.faults == (None, None), other
    assert start_of(other)[1] == reached(8) != reached(7)
    told = seen.read_text().splitlines()
    assert "MISMATCH" not in " ".join(told)
    played = [line.split()[2] for line in told if line.startswith("PLAYED")]
    start = next(i for i, line in enumerate(told) if line.startswith("START"))
    assert told[start + 1 : start + 4] == ["POSITION 6 6 6 6 6 6 0 6 6 6 6 6 6 0 A", "TURN A tracker", f"PLAYED A {names(8)[0]} SOWN 6"]
    assert played[:2] == names(8)  # the opening, told as moves, then the game's own
    plain = await games.play("kalaha", [py, c])
    assert plain.played and start_of(plain) == (None, rules.spectator_state(rules.Position.start()))
    assert wait_gone(programs_with(str(tmp_path))) == []
