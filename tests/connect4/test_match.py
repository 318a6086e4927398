"""Engine discovery, the async facade, matches and the ``gamed-c4`` CLI (connect-four §2).

In-process with the real reactor (pytest-twisted); every wait is bounded."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from gamed.connect4.match import A, B, play_match
from gamed.connect4.registry import discover_engines, open_engine, run_inline

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
WAIT = 15.0


def bounded(d):
    return d.addTimeout(WAIT, reactor)


@pytest.fixture
def engines_dir(tmp_path):
    if CC is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang): native engine tests skipped")
    folder = tmp_path / "engines"
    (folder / "example").mkdir(parents=True)
    src = os.path.join(REPO, "gamed", "connect4", "native", "example_engine.c")
    subprocess.run(
        [CC, "-O2", "-fPIC", "-shared", "-o", str(folder / "example" / "engine.so"), src],
        check=True, timeout=60,
    )
    return str(folder)


@pytest_twisted.ensureDeferred
async def test_list_shows_builtin_levels():
    infos = await bounded(discover_engines(reactor))
    gamed = {i.name: i for i in infos}["gamed"]
    assert gamed.kind == "python"
    assert gamed.levels == (
        "Random (a random legal column; instant)",
        "Threat-aware (heuristic: win, block, avoid a win on top, else random; instant)",
        "Alpha-beta 2 (heuristic: 2 plies, at most 5,000 positions a move)",
        "Alpha-beta 4 (heuristic: 4 plies, at most 15,000 positions a move)",
        "Alpha-beta 6 (heuristic: 6 plies, at most 30,000 positions a move)",
    )


@pytest_twisted.ensureDeferred
async def test_level_two_beats_level_zero_with_alternating_colours():
    a = open_engine(reactor, "gamed", rng=random.Random(1))  # thread-pool search
    b = open_engine(reactor, "gamed", rng=random.Random(2))
    summary = await bounded(play_match(a, b, 4, 7, 6, (2, 0)))
    assert [r.first for r in summary.results] == [A, B, A, B]
    assert summary.score_a > summary.score_b
    assert summary.score_a + summary.score_b == 4
    for r in summary.results:
        assert r.reason and r.moves


class _Cheater:
    """An engine that answers an off-board column."""

    name = "cheater"

    def new_game(self, w, h):
        return defer.succeed(True)

    def play_move(self, p, c):
        return defer.succeed(True)

    def auto_move(self, p, level):
        return defer.succeed(99)

    def end_game(self):
        return defer.succeed(None)

    def close(self):
        return defer.succeed(None)


@pytest_twisted.ensureDeferred
async def test_illegal_answer_loses_with_reason():
    good = open_engine(reactor, "gamed", think=run_inline, rng=random.Random(3))
    summary = await bounded(play_match(_Cheater(), good, 2, 7, 6, (0, 0)))
    assert [r.winner for r in summary.results] == [B, B]
    assert all("illegal move 99" in r.reason for r in summary.results)
    assert summary.score_b == 2


@pytest_twisted.ensureDeferred
async def test_native_engine_listed_and_plays_a_match(engines_dir):
    infos = {i.name: i for i in await bounded(discover_engines(reactor, engines_dir))}
    assert infos["example"].kind == "native"
    assert infos["example"].levels == (
        "Random (a random legal column; instant)",
        "Greedy (heuristic: win, block, avoid a win on top, centre first; instant)",
    )
    assert infos["example"].description
    native = open_engine(reactor, "example", engines_dir)
    python = open_engine(reactor, "gamed", rng=random.Random(4))
    try:
        summary = await bounded(play_match(native, python, 2, 7, 6, (1, 1)))
    finally:
        await bounded(native.close())
    assert len(summary.results) == 2
    assert summary.score_a + summary.score_b == 2
    assert all("failed" not in r.reason and "illegal" not in r.reason for r in summary.results)


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run(
        [sys.executable, "-m", "gamed.connect4.cli", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=30,
    )


def test_cli_match_prints_score():
    p = _cli("match", "gamed:1", "gamed:0", "--games", "2", "--size", "7x6")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("game 1: gamed:1 vs gamed:0")
    assert lines[1].startswith("game 2: gamed:0 vs gamed:1")
    assert lines[-1].startswith("gamed:1 ") and lines[-1].endswith(" gamed:0") and " - " in lines[-1]


def test_cli_list_with_native(engines_dir):
    p = _cli("list", "--engines", engines_dir)
    assert p.returncode == 0, p.stderr
    assert "gamed (python)" in p.stdout and "4: Alpha-beta 6 (heuristic" in p.stdout
    assert "example (native)" in p.stdout and "1: Greedy (heuristic" in p.stdout


@pytest.mark.parametrize(
    "args",
    [("match", "nope", "gamed"), ("match", "gamed:9", "gamed"), ("match", "gamed", "gamed", "--size", "3x3")],
)
def test_cli_usage_errors_exit_2(args):
    p = _cli(*args)
    assert p.returncode == 2
    assert "error" in p.stderr
