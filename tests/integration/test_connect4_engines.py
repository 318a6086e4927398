"""Connect Four engines in the real daemon: native engines from an engines folder (the shipped
solver and engines compiled here, some broken on purpose), each in its own host process.

A person-like client beats the random engine and loses to the solver from a known position; a
crashing, a hanging and a lying engine each end only their own game, with the reason, while a
good engine's game goes on; a MATCH between engines is played and scored; nothing is left
running."""

from __future__ import annotations

import json
import os
import pathlib
import random
import sqlite3
import subprocess
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from gamed.connect4 import rules
from gamed.connect4.engines import AlphaBeta
from gamed.connect4.rules import Board
from tests.connect4.native_libs import VARIANTS, compile_engines, escaping_engine, install_book, shipped_source
from tests.procs import read_pid, wait_gone
from tests.integration.support import LOOPBACK, ROOT, connect

ENGINE_TIME = 3  # seconds an engine may think per move (the hanging engine is cut off after it)
# Pons Test_L2_R1: "662222576343651642712157" scores +8 for the side to move (player 0 here).
KNOWN_WIN = ",".join(str(int(c) - 1) for c in "662222576343651642712157")


@pytest.fixture(scope="module")
def engines_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("engines")
    sources = {name: VARIANTS[name] for name in ("good", "crash", "hang", "garbage", "full", "missing")}
    sources["solver"] = shipped_source("solver.c")
    compile_engines(out, sources)
    install_book(out / "solver")  # as `make install` puts it: Perfect is exact
    return str(out)


async def started(start_daemon, engines_dir):
    return await start_daemon(
        "--connect4-engines", engines_dir, "--connect4-engine-time", str(ENGINE_TIME),
        kalaha="none", connect4=LOOPBACK,
    )


def host_processes(engines_dir: str) -> list[int]:
    """Engine host processes still alive for engines of ``engines_dir``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"gamed.connect4.host" in cmd and b"\0" + engines_dir.encode() in cmd:
            found.append(int(pid))
    return found


async def settle(what, seconds=8.0):
    """Poll ``what()`` until it is true (bounded)."""
    for _ in range(int(seconds / 0.1)):
        if what():
            return
        await task.deferLater(reactor, 0.1, lambda: None)
    raise AssertionError("condition not reached in time")


async def play_out(client, choose, opening=(), timeout=20.0) -> tuple[str, Board | None, str | None]:
    """Follow the game (START, the opening, PLAYED lines) and answer every YOURMOVE with
    ``choose(board)`` until RESULT or ABORT; (that line, the final board, the START line)."""
    board = start = None
    while True:
        line = await client.next_line(timeout=timeout)
        words = line.split()
        if words[0] == "START":
            start = line
            board = Board(*map(int, words[3].split("x")))
            for column in opening:
                board.drop(column)
        elif words[0] == "PLAYED":
            board.drop(int(words[2]))
        elif words[0] == "YOURMOVE":
            client.send(str(choose(board)))
        elif words[0] in ("RESULT", "ABORT"):
            return line, board, start


def strong(board: Board) -> int:
    return AlphaBeta(board.copy(), 200_000).choose(6, random.Random(1))


@pytest_twisted.ensureDeferred
async def test_engines_folder_is_listed(start_daemon, engines_dir):
    daemon = await started(start_daemon, engines_dir)
    client = await connect(daemon.ports["connect4"])
    client.send("ENGINES")
    lines = [await client.expect("ENGINE", timeout=15)]  # after the first scan of the folder
    while lines[-1] != "ENGINE END":
        lines.append(await client.next_line())
    engines = {line.split()[1]: line for line in lines if line.startswith("ENGINE ") and line != "ENGINE END"}
    assert sorted(engines) == ["crash", "full", "gamed", "garbage", "good", "hang", "missing", "solver"]
    assert engines["solver"].startswith("ENGINE solver 3 Perfect-play solver")
    assert "opening book of every position after 12 moves" in engines["solver"]
    assert "LEVEL solver 2 Perfect (exact on 7x6, <= 1 s a move; heuristic on other sizes)" in lines
    assert "LEVEL good 1 Hard" in lines
    # A symbol is missing: listed as unavailable with the reason, and logged.
    assert engines["missing"] == "ENGINE missing 0 unavailable: engine engine.so failed to load: missing symbol C4_IsTie"
    assert "connect4 engine missing" in daemon.text and "is unavailable: " in daemon.text
    client.send("PLAY missing:0")
    assert (await client.expect("ERROR")).startswith("ERROR 408 engine missing is unavailable: engine engine.so failed")


@pytest_twisted.ensureDeferred
async def test_person_beats_the_random_engine_and_loses_to_the_solver(start_daemon, engines_dir):
    daemon = await started(start_daemon, engines_dir)
    port = daemon.ports["connect4"]
    person = await connect(port)
    person.send("NAME carol", "BOARD OFF", "PLAY gamed:0 FIRST")
    result, _, start = await play_out(person, strong)
    assert start == "START 1 0 7x6 gamed:0"
    assert result.startswith("RESULT WIN FOUR 0 "), result

    person = await connect(port)
    person.send("BOARD OFF", f"PLAY solver:2 SECOND FROM {KNOWN_WIN}")
    opening = [int(c) for c in KNOWN_WIN.split(",")]
    result, board, start = await play_out(person, strong, opening)
    assert start == "START 2 1 7x6 solver:2"
    assert result.startswith("RESULT LOSE FOUR 0 "), result
    # Pons' score +8 for player 0: perfect play wins with its 22 - 8 = 14th stone.
    assert board.cells.count(0) == 14
    assert "Traceback" not in daemon.text


async def engine_reply(client, command: str) -> str:
    """The engine's first move after ``command`` started a game at the engine's turn: the last
    PLAYED line before the person is asked to move."""
    client.send("BOARD OFF", command)
    played = None
    while True:
        line = await client.next_line(timeout=15)
        if line.startswith("PLAYED "):
            played = line
        elif line.startswith(("YOURMOVE", "RESULT", "ABORT", "ERROR")):
            return played or line


@pytest_twisted.ensureDeferred
async def test_perfect_plays_the_best_moves_of_issue_12(start_daemon, engines_dir):
    """Perfect once answered column 2 (a loss) where column 4 wins, and column 5 (a slower win)
    where column 3 wins faster; through the daemon it now plays 4 and 3."""
    daemon = await started(start_daemon, engines_dir)
    first = await connect(daemon.ports["connect4"])
    assert (await engine_reply(first, "PLAY solver:2 FIRST FROM 2,6,4,2,2,5,6,4,5")).startswith("PLAYED 1 4 ")
    second = await connect(daemon.ports["connect4"])
    assert (await engine_reply(second, "PLAY solver:2 SECOND FROM 5,3,1,6,5,6,3,0")).startswith("PLAYED 0 3 ")
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_broken_engines_end_only_their_own_games(start_daemon, engines_dir):
    daemon = await started(start_daemon, engines_dir)
    port = daemon.ports["connect4"]
    clients = {}
    for name in ("good", "crash", "hang", "garbage"):
        clients[name] = c = await connect(port)
        c.send("BOARD OFF", f"PLAY {name}:1 SECOND 6x5")
    outcomes = await defer.gatherResults(
        [defer.ensureDeferred(play_out(c, lambda board: board.legal_columns()[-1], timeout=ENGINE_TIME + 10))
         for c in clients.values()]
    )
    ends = {name: outcome[0] for name, outcome in zip(clients, outcomes)}
    assert ends["good"].startswith("RESULT "), ends
    assert ends["crash"].startswith("ABORT ENGINE the engine failed: engine process killed by signal SIGSEGV"), ends
    assert ends["hang"] == f"ABORT ENGINE the engine failed: the engine did not move within {ENGINE_TIME} s", ends
    assert ends["garbage"].startswith("ABORT ENGINE the engine failed: C4_AutoMove: malformed answer"), ends
    await settle(lambda: not host_processes(engines_dir))  # every host, the hanging one too, is gone
    # An engine that plays a full column: the person fills column 0 with it, then it is refused.
    full = await connect(port)
    full.send("BOARD OFF", "PLAY full:0 SECOND 6x4")
    line, board, _ = await play_out(full, lambda board: 0 if board.can_drop(0) else board.legal_columns()[0])
    assert line == "ABORT ENGINE the engine failed: the engine played 0: column 0 is full", line
    # The daemon still serves: a new game against the good engine starts.
    again = await connect(port)
    again.send("PLAY good:0")
    assert (await again.expect("START")).startswith("START ")
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_match_between_native_engines(start_daemon, engines_dir):
    daemon = await started(start_daemon, engines_dir)
    watcher = await connect(daemon.ports["connect4"])
    watcher.send("MATCH solver:1 good:0 2")
    assert (await watcher.expect("OK")) == "OK MATCH solver:1 good:0 2 7x6"
    games = [await watcher.expect("MATCHGAME", timeout=20), await watcher.expect("MATCHGAME", timeout=20)]
    assert games[0].split()[1:5] == ["1", "solver:1", "good:0", "solver:1"]  # the solver beats "lowest column"
    assert games[1].split()[1:5] == ["2", "good:0", "solver:1", "solver:1"]
    assert (await watcher.expect("MATCHEND")) == "MATCHEND solver:1 2 good:0 0 2"
    await settle(lambda: not host_processes(engines_dir))
    # A match can be stopped; its engines are closed.
    watcher.send("MATCH hang:0 good:0 4")
    await watcher.expect("OK")
    watcher.send("RESIGN")
    line = await watcher.expect("MATCHEND")
    assert line.startswith("MATCHEND hang:0 0 good:0 0 0 stopped: stopped by guest1"), line
    await settle(lambda: not host_processes(engines_dir))


@pytest_twisted.ensureDeferred
async def test_games_and_match_games_are_recorded(start_daemon, engines_dir, tmp_path):
    database = tmp_path / "records.sqlite"
    daemon = await start_daemon(
        "--connect4-engines", engines_dir, "--records", f"sqlite:{database}", kalaha="none", connect4=LOOPBACK,
    )
    port = daemon.ports["connect4"]
    person = await connect(port)
    person.send("NAME erin", "BOARD OFF", "PLAY solver:0 4x4 FROM 1,2")
    await person.expect("YOURMOVE")
    person.send("RESIGN")
    assert (await person.expect("RESULT")).startswith("RESULT LOSE RESIGN")
    watcher = await connect(port)
    watcher.send("MATCH solver:1 good:0 2 5x4")
    await watcher.expect("MATCHEND", timeout=30)
    await settle(lambda: b"stored as match 3" in daemon.output)
    assert await daemon.stop()
    # The records survive the daemon and read back with `gamed export`.
    exported = []
    for match_id in (1, 2, 3):
        out = subprocess.run([sys.executable, "-m", "gamed.cli", "export", str(match_id), "--database", f"sqlite:{database}"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        exported.append(json.loads(out.stdout))
    game, *series = exported
    assert game["game"] == "connect4" and game["reason"] == "resign" and game["options"]["opening"] == [1, 2]
    # erin never logged in: a guest, never rated; the engine is a program the daemon runs: rated
    assert [(s["name"], s["rated"], s["kind"]) for s in game["seats"]] == [("erin", False, "guest"),
                                                                           ("solver:0", True, "engine")]
    assert game["scores"] == [0.0, 1.0]
    assert [[s["name"] for s in m["seats"]] for m in series] == [["solver:1", "good:0"], ["good:0", "solver:1"]]
    for m in series:
        board = Board(5, 4)
        for move in m["moves"]:
            board.drop(int(move["move"]))
        assert board.is_over() and m["moves"][-1]["state"]["cells"] == rules.spectator_state(board)["cells"]


@pytest_twisted.ensureDeferred
async def test_an_engine_removed_after_it_was_listed_is_refused_cleanly(start_daemon, engines_dir, tmp_path):
    folder = tmp_path / "engines"
    (folder / "brief").mkdir(parents=True)
    (folder / "brief" / "engine.so").write_bytes((pathlib.Path(engines_dir) / "good" / "engine.so").read_bytes())
    daemon = await start_daemon("--connect4-engines", str(folder), kalaha="none", connect4=LOOPBACK)
    client = await connect(daemon.ports["connect4"])
    client.send("ENGINES")
    assert (await client.expect("ENGINE", timeout=15)).startswith("ENGINE gamed ")
    assert (await client.expect("ENGINE")).startswith("ENGINE brief ")
    (folder / "brief" / "engine.so").unlink()
    client.send("PLAY brief:0")
    line = await client.expect("ERROR")
    assert line.startswith("ERROR 405 no engine brief"), line  # the folder is rescanned: it is gone
    # A new library dropped in appears without a restart.
    (folder / "late").mkdir()
    (folder / "late" / "engine.so").write_bytes((pathlib.Path(engines_dir) / "good" / "engine.so").read_bytes())
    client.send("PLAY late:1 SECOND 5x4")
    assert (await client.expect("START", timeout=15)) == "START 1 1 5x4 late:1"
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_sigkilled_daemon_leaves_no_engine_host_nor_what_it_forked(start_daemon, tmp_path):
    # The engine forks a child that leaves the host's session, then thinks for ever; the daemon is
    # SIGKILLed meanwhile (no stopService runs): the host and that child must end all the same.
    folder = tmp_path / "engines"
    folder.mkdir()
    pidfile = tmp_path / "escaped"
    compile_engines(folder, {"thinker": escaping_engine(str(pidfile), think_forever=True)})
    daemon = await start_daemon(
        "--connect4-engines", str(folder), "--connect4-engine-time", "60", kalaha="none", connect4=LOOPBACK
    )
    person = await connect(daemon.ports["connect4"])
    person.send("PLAY thinker:0 SECOND")
    assert (await person.expect("START", timeout=15)).startswith("START 1 1 7x6 thinker:0")
    escaped = read_pid(pidfile)
    hosts = host_processes(str(folder))
    assert escaped in hosts and len(hosts) == 2, "the host and the child it forked"
    daemon.signal("KILL")
    await daemon.ended
    assert wait_gone(hosts + [escaped], 10) == [], "an engine host or its child outlived the daemon"


@pytest_twisted.ensureDeferred
async def test_a_shutdown_during_a_match_stores_its_game_as_interrupted(start_daemon, engines_dir, tmp_path):
    database = tmp_path / "records.sqlite"
    daemon = await start_daemon(
        "--connect4-engines", engines_dir, "--connect4-engine-time", "60", "--records", f"sqlite:{database}",
        kalaha="none", connect4=LOOPBACK,
    )
    watcher = await connect(daemon.ports["connect4"])
    watcher.send("MATCH hang:0 good:0 2")
    assert (await watcher.expect("OK")) == "OK MATCH hang:0 good:0 2 7x6"
    await settle(lambda: host_processes(engines_dir))  # the first game runs: hang thinks for ever
    assert await daemon.stop()
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT game, reason, rated FROM matches").fetchall()
    assert rows == [("connect4", "shutdown", 0)], daemon.text[-3000:]
    assert "engine work cancelled" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_an_engine_past_its_time_is_told_and_logged_with_the_same_time(start_daemon, engines_dir):
    import re

    daemon = await started(start_daemon, engines_dir)
    person = await connect(daemon.ports["connect4"])
    person.send("BOARD OFF", "PLAY hang:0 SECOND")
    abort = await person.expect("ABORT", timeout=ENGINE_TIME + 10)
    assert abort == f"ABORT ENGINE the engine failed: the engine did not move within {ENGINE_TIME} s", abort
    watcher = await connect(daemon.ports["connect4"])
    watcher.send("MATCH hang:0 good:0 2")
    games = [await watcher.expect("MATCHGAME", timeout=ENGINE_TIME + 10) for _ in range(2)]
    assert games[0].endswith(f"hang:0 failed: no move within {ENGINE_TIME} s"), games
    assert games[1].endswith(f"hang:0 failed to start: no move within {ENGINE_TIME} s"), games
    await watcher.expect("MATCHEND")
    told = set(re.findall(r"within (\d+) s", " ".join([abort, *games])))
    logged = set(re.findall(r"within (\d+) s", daemon.text))
    assert told == logged == {str(ENGINE_TIME)}, [l for l in daemon.text.splitlines() if "within" in l]


@pytest_twisted.ensureDeferred
async def test_an_engine_that_hangs_describing_itself_delays_nobody(start_daemon, tmp_path):
    # "mute" never returns from C4_Desc. ENGINES answers while it is still being asked, PLAY of
    # another engine does not wait for it, and once its time is up it is listed as unavailable
    # with the reason; a PLAY of it is refused with that reason. It is asked once, not again.
    folder = tmp_path / "engines"
    folder.mkdir()
    compile_engines(folder, {name: VARIANTS[name] for name in ("good", "mute")})
    daemon = await start_daemon(
        "--connect4-engines", str(folder), "--connect4-engine-time", "5", kalaha="none", connect4=LOOPBACK
    )
    client = await connect(daemon.ports["connect4"])

    async def listing() -> dict[str, str]:
        client.send("ENGINES")
        lines = [await client.expect("ENGINE", timeout=15)]
        while lines[-1] != "ENGINE END":
            lines.append(await client.next_line())
        return {line.split()[1]: line for line in lines if line != "ENGINE END" and line.startswith("ENGINE ")}

    first = await listing()
    assert first["mute"] == "ENGINE mute 0 unavailable: still being asked for its description and levels", first
    assert first["good"] == "ENGINE good 2 lowest column first"
    player = await connect(daemon.ports["connect4"])
    player.send("BOARD OFF", "PLAY good:0")
    assert (await player.expect("START")).startswith("START 1 0 7x6 good:0")
    assert (await listing())["mute"].endswith("still being asked for its description and levels")
    for _ in range(100):
        now = await listing()
        if "still being asked" not in now["mute"]:
            break
        await task.deferLater(reactor, 0.1, lambda: None)
    assert now["mute"] == "ENGINE mute 0 unavailable: C4_Desc did not answer within 5 s", now
    client.send("PLAY mute:0")
    assert (await client.expect("ERROR")) == "ERROR 408 engine mute is unavailable: C4_Desc did not answer within 5 s"
    await settle(lambda: len(host_processes(str(folder))) == 1)  # mute's host is gone; good's plays on
    assert daemon.text.count("connect4 engine mute") == 1, "asked once (the library did not change)"
