"""``gamed-tournament``: run a tournament from a config file, then read its standings and games."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from gamed.stratego import tournament_cli
from tests.stratego.programs import compile_fast_ai

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


def test_run_then_standings_and_games(tmp_path, fast_ai, capsys):
    config = tmp_path / "gamed.conf"
    config.write_text(
        f'[stratego]\ngames = 4\n[stratego.ai.one]\ncommand = "{fast_ai} 1"\n'
        f'[stratego.ai.two]\ncommand = "{fast_ai} 2"\n[stratego.ai.three]\ncommand = "{fast_ai} 3"\n'
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "gamed.stratego.tournament_cli", "run", "--config", str(config)]
    done = subprocess.run(args + ["--state-dir", str(tmp_path / "state")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"tournament: {tmp_path / 'state'}/tournament-")
    assert lines[1].split()[:3] == ["#", "program", "points"] and len(lines) == 5
    directory = pathlib.Path(lines[0].split(": ", 1)[1])
    assert tournament_cli.main(["standings", str(directory)]) == 0
    assert capsys.readouterr().out.splitlines() == lines[1:]
    assert tournament_cli.main(["games", str(directory)]) == 0
    games = capsys.readouterr().out.splitlines()
    assert len(games) == 12 and games[0].startswith("   1  round 1  one vs two: ")
    assert [int(g.split()[0]) for g in games] == list(range(1, 13))


def test_games_are_listed_in_game_order_whatever_order_they_finished_in(tmp_path, capsys):
    import json

    finished = [(2, 1, "b", "c"), (1, 1, "a", "b"), (1, 2, "b", "a"), (3, 1, "c", "a")]
    (tmp_path / "results.jsonl").write_text(
        "".join(json.dumps({"game": n, "round": r, "red": red, "blue": blue, "result": "x"}) + "\n" for n, r, red, blue in finished)
    )
    assert tournament_cli.main(["games", str(tmp_path)]) == 0
    assert [line.split()[:3] for line in capsys.readouterr().out.splitlines()] == [
        ["1", "round", "1"], ["2", "round", "1"], ["3", "round", "1"], ["1", "round", "2"],
    ]


def test_errors_are_one_line_and_exit_1(tmp_path, capsys):
    assert tournament_cli.main(["standings", str(tmp_path)]) == 1
    assert "no results.jsonl" in capsys.readouterr().err
    config = tmp_path / "gamed.conf"
    config.write_text('[stratego.ai.only]\ncommand = "/bin/true"\n')
    assert tournament_cli.main(["run", "--config", str(config)]) == 1
    assert "fewer than two AI programs" in capsys.readouterr().err
    config.write_text("[stratego]\ngames = 3\n")
    assert tournament_cli.main(["run", "--config", str(config)]) == 1
    assert "stratego.games must be an even number" in capsys.readouterr().err
