"""Virtual Fight against the real daemon over loopback: the example AI as real subprocesses, a
departure mid-turn, a late observer, and an observer that never reads.

Every wait is bounded; each test starts its own daemon on ephemeral loopback ports.
"""

from __future__ import annotations

import ast
import errno
import re
import socket
import sys
import time

import pytest_twisted
from twisted.internet import defer, reactor, task

from tests.integration.support import LOOPBACK, ROOT, connect, run, with_timeout

EXAMPLE = ROOT / "examples" / "fight" / "simple_ai.py"
FIGHT = {"fight": LOOPBACK, "fight_gui": LOOPBACK, "kalaha": "none"}
# AIs that answer at once play hundreds of lines a second: the line rate would only slow the tests.
FAST = ("--line-rate", "0")
_RESULT = re.compile(r"^(?P<name>\S+): GAMEOVER&(?P<result>WIN|LOSE|DRAW) after (?P<turns>\d+) turns$", re.M)


async def fight_daemon(start_daemon, *extra: str):
    daemon = await start_daemon(*FAST, *extra, **FIGHT)
    return daemon, daemon.ports["fight"], daemon.ports["fight-gui"]


async def example_ai(port: int, name: str, seed: int, timeout: float = 25) -> tuple[int, str]:
    """Run examples/fight/simple_ai.py as a subprocess to its end: (exit code, output)."""
    args = [sys.executable, str(EXAMPLE), "--port", str(port), "--host", "127.0.0.1"]
    args += ["--name", name, "--seed", str(seed), "--timeout", "15"]
    return await run(args, executable=None, timeout=timeout)


async def observe(port: int, lines: list[str]) -> None:
    """An observer that records every line until its game's GAMEOVER."""
    gui = await connect(port)
    while True:
        line = await gui.next_line(timeout=25)
        lines.append(line)
        if line.startswith("GAMEOVER&"):
            gui.transport.loseConnection()
            return


async def play_example_game(start_daemon, names: list[str], *extra: str) -> tuple[dict, list[str], str]:
    """``names`` example AIs play one game, watched by an observer; returns each AI's result line
    fields by name, the observer's lines and the daemon's log."""
    daemon, port, gui_port = await fight_daemon(start_daemon, "--fight-pair-delay", "1", *extra)
    seen: list[str] = []
    watcher = defer.ensureDeferred(observe(gui_port, seen))
    runs = [defer.ensureDeferred(example_ai(port, name, seed)) for seed, name in enumerate(names, 1)]
    done = await with_timeout(defer.gatherResults(runs, consumeErrors=True), 30, "the example AIs")
    await with_timeout(watcher, 10, "the observer's GAMEOVER")
    results = {}
    for (code, output), name in zip(done, names):
        assert code == 0, f"{name} exited {code}:\n{output}"
        m = _RESULT.search(output)
        assert m and m["name"] == name, output
        results[name] = m
    return results, seen, daemon.text


def check_observer_agrees(results: dict, seen: list[str]) -> None:
    """The observer's TEAM lines and GAMEOVER line tell the same story as the AIs' results."""
    teams = {int(t): name for _, t, name in (line.split("&") for line in seen if line.startswith("TEAM&"))}
    assert sorted(teams.values()) == sorted(results)
    over = seen[-1].split("&")
    winners = [name for name, m in results.items() if m["result"] == "WIN"]
    if over[1] == "WIN":
        assert winners == [teams[int(over[2])]], (over, results)
    else:
        assert over[1] == "DRAW" and not winners
    last_turn = int(over[-1])
    # The teams still playing at the end played every turn; a team put out earlier fewer.
    assert max(int(m["turns"]) for m in results.values()) == last_turn


def test_the_example_ai_uses_only_the_standard_library():
    imported = set()
    for node in ast.walk(ast.parse(EXAMPLE.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported


@pytest_twisted.ensureDeferred
async def test_two_example_ais_play_to_the_end(start_daemon):
    results, seen, log = await play_example_game(start_daemon, ["alice", "bob"], "--fight-max-turns", "200")
    outcome = sorted(m["result"] for m in results.values())
    assert outcome in (["LOSE", "WIN"], ["DRAW", "DRAW"]), results
    assert results["alice"]["turns"] == results["bob"]["turns"]
    check_observer_agrees(results, seen)
    assert re.search(r"fight game 1 ended after turn \d+ \(\w[\w ]*\): (alice|bob) \w+, (alice|bob) \w+", log), log
    assert "Traceback" not in log


@pytest_twisted.ensureDeferred
async def test_the_example_ai_passes_the_self_test_of_the_real_daemon(start_daemon):
    daemon, port, _ = await fight_daemon(start_daemon)
    args = [sys.executable, str(EXAMPLE), "--port", str(port), "--host", "127.0.0.1", "--seed", "3", "--selftest"]
    code, output = await run(args, executable=None, timeout=25)
    assert code == 0, output
    assert output.splitlines() == [
        "SELFTEST&OK&the first turn: every warrior acts or passes",
        "SELFTEST&OK&a killed warrior: no command for it",
        "SELFTEST&OK&a short turn time: 2 s",
        "SELFTEST&OK&the end: nothing after GAMEOVER",
        "SELFTEST&VERDICT&PASS",
    ]
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_four_example_ais_play_a_four_team_game(start_daemon):
    names = ["north", "east", "south", "west"]
    results, seen, log = await play_example_game(
        start_daemon, names, "--fight-teams", "4", "--fight-map", "four", "--fight-max-turns", "200"
    )
    outcome = sorted(m["result"] for m in results.values())
    wins, draws = outcome.count("WIN"), outcome.count("DRAW")
    assert (wins, draws) == (1, 0) or (wins == 0 and draws >= 1), results
    assert outcome.count("LOSE") == 4 - wins - draws
    assert seen[0] == "HELLO&VF-OBSERVER&1" and "MAP&20&20" in seen
    assert sum(line.startswith("W&") for line in seen[: seen.index("ENDSNAPSHOT") + 1]) == 20
    check_observer_agrees(results, seen)
    assert "Traceback" not in log


async def lines_until(client, last: str, timeout: float = 10) -> list[str]:
    """Lines up to and including the first that starts with ``last``."""
    out = []
    while not out or not out[-1].startswith(last):
        out.append(await with_timeout(client.next_line(timeout), timeout, f"a line starting {last!r}"))
    return out


async def quiet(client, seconds: float = 0.3) -> list[str]:
    """Whatever ``client`` receives within ``seconds`` (normally nothing)."""
    await task.deferLater(reactor, seconds, lambda: None)
    got = list(client.lines)
    client.lines.clear()
    return got


@pytest_twisted.ensureDeferred
async def test_an_ai_leaving_mid_turn_ends_the_game_after_the_others_finish_the_turn(start_daemon, tmp_path):
    config = tmp_path / "gamed.conf"
    config.write_text("[fight]\ngrace = 0\n")  # no grace: a team whose AI leaves is out at once
    daemon, port, gui_port = await fight_daemon(start_daemon, "--config", str(config), "--fight-pair-delay", "0.2")
    gui = await connect(gui_port)
    assert await gui.next_line() == "HELLO&VF-OBSERVER&1"
    a = await connect(port)
    a.send("NAME&stayer")
    assert await lines_until(a, "255") == ["OK", "255"]
    b = await connect(port)
    b.send("NAME&leaver")
    assert await lines_until(b, "READY") == ["OK", "255", "READY"]
    assert await a.next_line() == "READY"

    a.send("0&SHOOT&LEFT", "1&MOVE&UP")
    assert [await a.next_line(), await a.next_line()] == ["255", "255"]
    b.send("0&SHOOT", "1&POS")  # b's shot is queued, then b goes away mid-turn
    assert [await b.next_line(), await b.next_line()] == ["255", "7,18"]
    b.transport.loseConnection()
    await b.wait_closed()
    assert await quiet(a) == [], "the turn must not end before the remaining AI has finished"

    a.send("2&NONE", "3&NONE", "4&NONE")
    assert await lines_until(a, "GAMEOVER") == ["255", "255", "255", "200", "0&HIT&NOTHING", "GAMEOVER&WIN"]
    await a.wait_closed()

    events = await lines_until(gui, "GAMEOVER")
    assert "ENDTURN&1&GONE" in events
    assert events.index("ENDTURN&1&GONE") < events.index("ENDTURN&0&DONE")
    shots = [line for line in events if line.startswith("SHOT&")]
    assert shots == ["SHOT&0&0&LEFT&3&0&NOTHING"], "the leaver's queued shot is cancelled"
    after = events[events.index("SNAPSHOT&1") :]
    assert [line for line in after if line.startswith("W&1&")] == [
        f"W&1&{n}&{row}&18&LEFT&DEAD" for n, row in enumerate((4, 7, 10, 13, 16))
    ]
    assert events[-1] == "GAMEOVER&WIN&0&1"
    assert "leaver (team 1) left" in daemon.text
    assert "fight game 1 ended after turn 1 (forfeit): stayer WIN" in daemon.text


async def play_turn(ai, commands: list[str]) -> list[str]:
    """Send ``commands`` for one turn; returns their replies (the 200 block is left unread)."""
    ai.send(*commands)
    return [await ai.next_line() for _ in commands]


@pytest_twisted.ensureDeferred
async def test_an_observer_joining_late_gets_the_map_and_a_snapshot_at_once_then_live_events(start_daemon):
    daemon, port, gui_port = await fight_daemon(start_daemon, "--fight-pair-delay", "0.2", "--fight-turn-time", "20")
    early = await connect(gui_port)
    a = await connect(port)
    a.send("NAME&alice")
    assert await lines_until(a, "255") == ["OK", "255"]
    b = await connect(port)
    b.send("NAME&bob")
    assert await lines_until(b, "READY") == ["OK", "255", "READY"]
    assert await a.next_line() == "READY"

    # Turn 1 is played to its end; in turn 2 alice moves, then the late observer connects.
    assert await play_turn(a, ["0&MOVE&DOWN", "1&NONE", "2&NONE", "3&NONE", "4&NONE"]) == ["255"] * 5
    assert await play_turn(b, ["0&NONE&UP", "1&NONE", "2&NONE", "3&NONE", "4&NONE"]) == ["255"] * 5
    assert await lines_until(a, "READY") == ["200", "READY"]
    assert await lines_until(b, "READY") == ["200", "READY"]
    assert await play_turn(a, ["2&MOVE&UP"]) == ["255"]
    before = await lines_until(early, "MOVE&0&2")  # the early observer saw it: it has happened

    late = await connect(gui_port)
    intro = [await with_timeout(late.next_line(), 2, f"introduction line {n}") for n in range(1 + 1 + 20 + 2 + 12 + 2)]
    assert intro[0] == "HELLO&VF-OBSERVER&1"
    assert intro[1] == "MAP&20&20"
    assert [line.split("&")[1] for line in intro[2:22]] == [str(r) for r in range(20)]
    assert intro[2:22] == [line for line in before if line.startswith("ROW&")]
    assert intro[5] == "ROW&3&................#..."
    assert intro[22:24] == ["TEAM&0&alice", "TEAM&1&bob"]
    snapshot = intro[24:36]
    assert snapshot[0] == "SNAPSHOT&1" and snapshot[-1] == "ENDSNAPSHOT"
    assert "W&0&0&4&1&DOWN&ALIVE" in snapshot and "W&1&0&4&18&UP&ALIVE" in snapshot
    # ... the same snapshot the early observer got after turn 1, then the events since it.
    first = before.index("SNAPSHOT&1")
    assert snapshot == before[first : first + 12]
    assert intro[36:] == ["TURN&2", "MOVE&0&2&8&1&UP"]
    assert await quiet(late) == []

    # Live events from now on.
    assert await play_turn(b, ["4&SHOOT&UP"]) == ["255"]
    assert await late.next_line() == "AIM&1&4&UP"
    assert await play_turn(a, ["0&NONE", "1&NONE", "3&NONE", "4&NONE"]) == ["255"] * 4
    assert await late.next_line() == "ENDTURN&0&DONE"
    assert await play_turn(b, ["0&NONE", "1&NONE", "2&NONE", "3&NONE"]) == ["255"] * 4
    assert await lines_until(late, "ENDSNAPSHOT") == (
        ["ENDTURN&1&DONE", "SHOT&1&4&UP&13&18&OWN", "KILLED&1&3&13&18", "SNAPSHOT&2"]
        + [line for line in await lines_until(early, "ENDSNAPSHOT") if line.startswith("W&")][-10:]
        + ["ENDSNAPSHOT"]
    )
    assert await late.next_line() == "TURN&3"
    late.send("LIST")
    assert [await late.next_line(), await late.next_line()] == ["GAME&1&alice,bob&3", "END"]
    assert "Traceback" not in daemon.text


async def turner(ai, ready_times: list[float], stop: defer.Deferred) -> str:
    """A scripted AI that turns every warrior UP (an action each observer sees), every turn, until
    ``stop`` fires; then it leaves (or the game ends first). Records when each READY arrived."""
    while True:
        line = await ai.next_line(timeout=10)
        if line == "READY":
            ready_times.append(time.monotonic())
            if stop.called:
                ai.transport.loseConnection()
                return "left"
            ai.send(*[f"{n}&NONE&UP" for n in range(5)])
        elif line.startswith("GAMEOVER&"):
            return line


def stalled_observer(port: int) -> socket.socket:
    """An observer socket that never reads, with a small receive buffer set before connecting (so
    that the window it offers stays small)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def closed_by_server(sock: socket.socket, timeout: float = 5) -> bool:
    """Drain ``sock`` until the server's close (EOF or reset) shows; False if it does not within
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = sock.recv(1 << 16)
        except BlockingIOError:
            await task.deferLater(reactor, 0.05, lambda: None)
            continue
        except OSError as e:
            return e.errno in (errno.ECONNRESET, errno.EPIPE)
        if not data:
            return True
    return False


@pytest_twisted.ensureDeferred
async def test_a_stalled_observer_is_dropped_and_the_game_keeps_its_pace(start_daemon, tmp_path):
    config = tmp_path / "gamed.conf"
    config.write_text("[fight]\ngrace = 0\n")  # the AI that leaves at the end is out at once
    daemon, port, gui_port = await fight_daemon(
        start_daemon,
        *("--config", str(config), "--fight-pair-delay", "0", "--fight-gui-buffer", "4096", "--fight-max-turns", "100000"),
    )
    slow = stalled_observer(gui_port)
    try:
        await task.deferLater(reactor, 0.2, lambda: None)  # it is waiting for the next game
        a, b = await connect(port), await connect(port)
        times: list[float] = []
        stop = defer.Deferred()
        # a leaves when told to; b plays on and wins.
        players = [defer.ensureDeferred(turner(a, times, stop)), defer.ensureDeferred(turner(b, [], defer.Deferred()))]
        dropped_at = None
        started = time.monotonic()
        while time.monotonic() - started < 20:
            await task.deferLater(reactor, 0.05, lambda: None)
            assert not any(p.called for p in players), "the game ended early"
            if dropped_at is None and re.search(r"observer \S+ dropped", daemon.text):
                dropped_at = len(times)
            if dropped_at is not None and len(times) >= dropped_at + max(500, dropped_at // 4):
                break
        assert dropped_at is not None, f"the stalled observer was not dropped after {len(times)} turns:\n{daemon.text}"
        assert len(times) >= dropped_at + 100, f"only {len(times) - dropped_at} turns after the drop"
        stop.callback(None)
        ends = await with_timeout(defer.gatherResults(players, consumeErrors=True), 10, "the scripted AIs")
        assert sorted(ends) == ["GAMEOVER&WIN", "left"]
        assert await closed_by_server(slow), "the server should have closed the stalled observer"
    finally:
        slow.close()

    # The game never waited for the observer: no turn took anywhere near the 5 s turn time, and
    # the pace while the observer was stalled (before it was dropped) matches the pace after.
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) < 1.0, f"a turn took {max(gaps):.2f} s"
    stalled = dropped_at / (times[dropped_at - 1] - times[0])
    free = (len(times) - dropped_at) / (times[-1] - times[dropped_at - 1])
    assert stalled > free / 3, f"{stalled:.0f} turns/s while stalled, {free:.0f} turns/s after"
    assert len(re.findall(r"observer \S+ dropped", daemon.text)) == 1
    assert "Traceback" not in daemon.text
