"""``gamed tournament`` as a real subprocess: hosted bots (real programs in the sandbox) play a
tournament of the config into a real SQLite records database; a run SIGKILLed mid-way resumes
with every finished game kept once; the reading commands and the bad-input refusals."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.hosting.test_hosted_games import programs_with
from tests.procs import wait_gone

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLOW = ROOT / "tests" / "competition" / "slow_kalaha.py"
BOT = ROOT / "examples" / "bots" / "kalaha_bot.py"


def gamed(*args, cwd, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gamed.cli", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def config(tmp_path, tournament: str, pause: float = 0.0, bots=("alpha", "beta", "gamma")) -> pathlib.Path:
    lines = [f'[records]\ndatabase = "{tmp_path}/records.sqlite"\n[bots]\nisolation = "none"\n']
    for seed, name in enumerate(bots, 1):
        command = f"{sys.executable} {SLOW} {seed} {pause} {tmp_path}" if pause else f"{sys.executable} {BOT} {seed} {tmp_path}"
        lines.append(f'[bots.{name}]\ngame = "kalaha"\ncommand = "{command}"\n')
    lines.append(tournament)
    path = tmp_path / "gamed.conf"
    path.write_text("\n".join(lines))
    return path


def finished_games(db: pathlib.Path) -> dict[int, tuple]:
    if not db.exists():
        return {}
    with sqlite3.connect(db, timeout=10) as conn:
        try:
            rows = conn.execute(
                "SELECT number, seats, scores, match_id FROM tournament_games WHERE scores IS NOT NULL"
            ).fetchall()
        except sqlite3.OperationalError:  # not migrated yet
            return {}
    return {n: (seats, scores, match_id) for n, seats, scores, match_id in rows}


def test_a_round_robin_runs_to_its_standings_and_the_reading_commands_show_it(tmp_path):
    conf = config(tmp_path, '[tournaments.cup]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "beta", "gamma"]\nrounds = 2\nconcurrency = 2\n')
    run = gamed("tournament", "run", "cup", "--config", str(conf), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "cup: [########################] 6/6 games" in run.stdout
    assert "round robin of 3 bots, 2 games per matchup, 6 games (kalaha); finished, 6 of 6 games" in run.stdout
    games = finished_games(tmp_path / "records.sqlite")
    assert sorted(games) == [1, 2, 3, 4, 5, 6]
    # every game is a stored match of its own, with the bots in the seats the schedule gave
    with sqlite3.connect(tmp_path / "records.sqlite") as conn:
        for seats, _, match_id in games.values():
            names = [n for (n,) in conn.execute("SELECT name FROM seats WHERE match_id = ? ORDER BY seat", (match_id,))]
            assert names == json.loads(seats)
    assert len({m for _, _, m in games.values()}) == 6

    status = gamed("tournament", "status", "cup", "--config", str(conf), cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("cup: [########################] 6/6 games")
    table = gamed("tournament", "standings", "cup", "--config", str(conf), cwd=tmp_path)
    assert table.returncode == 0 and "crosstable" in table.stdout
    assert {line.split()[1] for line in table.stdout.splitlines()[2:5]} == {"alpha", "beta", "gamma"}
    exported = json.loads(gamed("tournament", "export", "cup", "--config", str(conf), cwd=tmp_path).stdout)
    assert exported["state"] == "finished" and len(exported["games"]) == 6
    assert sum(s["points"] for s in exported["standings"]) == 6
    listed = gamed("tournament", "list", "--config", str(conf), cwd=tmp_path)
    assert listed.stdout.split() == ["cup", "kalaha", "round-robin", "finished", "6/6", "games"]
    # run again: nothing more is played
    again = gamed("tournament", "run", "cup", "--config", str(conf), cwd=tmp_path)
    assert again.returncode == 0 and finished_games(tmp_path / "records.sqlite") == games


def test_a_tournament_killed_mid_way_resumes_with_every_finished_game_kept_once(tmp_path):
    conf = config(
        tmp_path, '[tournaments.long]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "beta", "gamma"]\nrounds = 4\nconcurrency = 2\n',
        pause=0.01,
    )
    db = tmp_path / "records.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(
        [sys.executable, "-m", "gamed.cli", "tournament", "run", "long", "--config", str(conf)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while len(finished_games(db)) < 3 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.poll() is None, "the tournament ended before it could be killed"
    # One process plays a tournament: a second run while the first plays is refused in one line.
    rival = gamed("tournament", "run", "long", "--config", str(conf), cwd=tmp_path)
    assert rival.returncode == 1 and rival.stderr.count("\n") == 1, rival.stderr
    assert f"tournament long is being played by process {first.pid} on " in rival.stderr
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    before = finished_games(db)
    assert 3 <= len(before) < 12
    # its bots die with it (their parent death signal), games in play included
    assert wait_gone(programs_with(str(tmp_path))) == []

    second = gamed("tournament", "run", "long", "--config", str(conf), cwd=tmp_path, timeout=300)
    assert second.returncode == 0, second.stderr
    after = finished_games(db)
    assert sorted(after) == list(range(1, 13))
    assert all(after[n] == before[n] for n in before)  # kept as they were, not played again
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT COUNT(*), COUNT(DISTINCT number) FROM tournament_games").fetchone()
        assert rows == (12, 12)
    assert len({m for _, _, m in after.values()}) == 12


@pytest.mark.parametrize(
    "tournament, words",
    [
        ('[tournaments.t]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha"]\n', "tournaments.t: a tournament needs at least two bots, not 1"),
        (
            '[tournaments.t]\ngame = "kalaha"\nformat = "sprt"\nbots = ["alpha", "beta"]\nelo0 = 10\nelo1 = 0\n',
            "tournaments.t: impossible SPRT: elo0 must be less than elo1, not 10 >= 0",
        ),
        ('[tournaments.t]\ngame = "kalaha"\nformat = "gauntlet"\nbots = ["alpha", "zeta"]\n', "tournaments.t: no hosted bot zeta"),
        ('[tournaments.t]\ngame = "chess"\nformat = "gauntlet"\nbots = ["alpha", "beta"]\n', "tournaments.t.game must be one of"),
        ('[tournaments.t]\ngame = "kalaha"\nformat = "swiss"\nbots = ["alpha", "beta"]\n', "tournaments.t.format must be one of"),
    ],
)
def test_impossible_tournaments_stop_with_one_line(tmp_path, tournament, words):
    conf = config(tmp_path, tournament)
    result = gamed("tournament", "run", "t", "--config", str(conf), cwd=tmp_path)
    assert result.returncode == 1
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_unknown_tournaments_are_one_line(tmp_path):
    conf = config(tmp_path, "")
    result = gamed("tournament", "run", "nosuch", "--config", str(conf), cwd=tmp_path)
    assert result.returncode == 1 and "has no [tournaments.nosuch]; it has: none" in result.stderr
    gamed("player", "add", "somebody", "--config", str(conf), cwd=tmp_path)  # creates the database
    shown = gamed("tournament", "status", "nosuch", "--config", str(conf), cwd=tmp_path)
    assert shown.returncode == 1 and shown.stderr.strip() == "gamed: no tournament named nosuch"


def _daemon(conf: pathlib.Path, tmp_path: pathlib.Path) -> subprocess.Popen:
    from tests.integration.support import LOOPBACK, TWISTD, child_env, gamed_args

    args = gamed_args("--config", str(conf), "--records", str(tmp_path / "records.sqlite"), kalaha=LOOPBACK)
    log = open(tmp_path / "daemon.log", "a")
    return subprocess.Popen([TWISTD, *args], cwd=tmp_path, env=child_env(), stdout=log, stderr=subprocess.STDOUT)


def _wait(predicate, what: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_the_daemon_plays_its_tournament_and_a_restart_resumes_it_keeping_every_game_once(tmp_path):
    conf = config(
        tmp_path,
        '[tournaments.league]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "beta", "gamma"]\n'
        "rounds = 2\nconcurrency = 1\ndaemon = true\n",
        pause=0.02,
    )
    db = tmp_path / "records.sqlite"
    first = _daemon(conf, tmp_path)
    try:
        _wait(lambda: len(finished_games(db)) >= 2 or first.poll() is not None, "two finished games")
        assert first.poll() is None, (tmp_path / "daemon.log").read_text()
        first.send_signal(signal.SIGTERM)  # a restart: the game in play is abandoned, not stored
        assert first.wait(30) in (0, -signal.SIGTERM)  # twistd ends by the signal it shut down on
    finally:
        if first.poll() is None:
            first.kill()
    before = finished_games(db)
    assert 2 <= len(before) < 6
    log = (tmp_path / "daemon.log").read_text()
    assert "tournament league: playing (round robin of 3 bots" in log and "it resumes when the daemon starts again" in log
    second = _daemon(conf, tmp_path)
    try:
        _wait(lambda: len(finished_games(db)) == 6 or second.poll() is not None, "all six games")
        _wait(lambda: "tournament league: finished, 6 games" in (tmp_path / "daemon.log").read_text(), "the end line")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) in (0, -signal.SIGTERM)
    after = finished_games(db)
    assert sorted(after) == [1, 2, 3, 4, 5, 6]
    assert {n: after[n] for n in before} == before  # the games of before the restart, kept as they were
    assert len({m for _, _, m in after.values()}) == 6  # six matches: none played twice
    log = (tmp_path / "daemon.log").read_text()
    assert "Traceback" not in log, log
    status = gamed("tournament", "status", "league", "--config", str(conf), cwd=tmp_path)
    assert status.returncode == 0 and "6/6 games" in status.stdout
    assert wait_gone(programs_with(str(tmp_path))) == []


def test_a_kalaha_tournament_plays_each_pair_from_its_own_opening(tmp_path):
    """Both games of a pair (the colours swapped) start from the pair's opening, as the records
    keep it (the match option and the initial state); the pairs' openings differ."""
    from gamed.kalaha import rules

    conf = config(tmp_path, '[tournaments.pairs]\ngame = "kalaha"\nformat = "round-robin"\nbots = ["alpha", "beta"]\nrounds = 4\nconcurrency = 2\n', bots=("alpha", "beta"))
    run = gamed("tournament", "run", "pairs", "--config", str(conf), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(tmp_path / "records.sqlite") as conn:
        rows = conn.execute(
            "SELECT g.number, g.pair, g.opening, g.seats, m.options, m.initial_state FROM tournament_games g"
            " JOIN matches m ON m.id = g.match_id ORDER BY g.number"
        ).fetchall()
    assert [(n, pair, opening) for n, pair, opening, *_ in rows] == [(1, 1, 1), (2, 1, 1), (3, 2, 2), (4, 2, 2)]
    starts = {}
    for _, pair, opening, seats, options, initial in rows:
        moves = rules.play_moves(rules.opening(opening))
        assert json.loads(options)["opening"] == [f"{m.side}{m.pit}" for m in moves]
        assert json.loads(initial) == rules.spectator_state(moves[-1].position)
        starts.setdefault(pair, []).append((json.loads(seats), initial))
    for (seats1, start1), (seats2, start2) in starts.values():
        assert seats1 == seats2[::-1] and start1 == start2
    assert starts[1][0][1] != starts[2][0][1]
