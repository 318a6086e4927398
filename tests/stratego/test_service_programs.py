"""The daemon's Stratego service with real AI programs: a tournament between the example AIs is
played, recorded and scored, and a game gives the same result line as the command-line referee."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, utils

from gamed.config import AiProgram, Limits, StrategoConfig
from gamed.stratego.service import StrategoService, read_results, table
from tests.stratego.programs import compile_fast_ai

# Real subprocesses and the real reactor: run with the integration tests (make integration).
pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
RANDOM_AI = ROOT / "examples" / "stratego" / "random_ai.py"


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


def python_ai(tmp_path, seed):
    """The random example AI behind a #! line that names this interpreter, with a fixed seed."""
    script = tmp_path / f"random_{seed}.py"
    script.write_text(f"#!{sys.executable}\n" + RANDOM_AI.read_text())
    script.chmod(0o755)
    return f"{script} {seed}"


@pytest_twisted.ensureDeferred
async def test_a_tournament_between_the_example_ais_is_recorded(tmp_path, fast_ai):
    ais = (
        AiProgram("fast", f"{fast_ai} 7"),
        AiProgram("random", python_ai(tmp_path, 3)),
        AiProgram("fast2", f"{fast_ai} 11", workdir="persistent"),
    )
    config = StrategoConfig(ai=ais, concurrency=2, timeout=5.0)
    service = StrategoService(config, Limits(), reactor, tmp_path / "state")
    d = service.run_tournament(1)
    d.addTimeout(60, reactor)
    directory = await d
    games = read_results(directory)
    assert len(games) == 6 and {(g["red"], g["blue"]) for g in games} == {
        (a, b) for a in ("fast", "random", "fast2") for b in ("fast", "random", "fast2") if a != b
    }
    for g in games:
        assert len(g["result"].split(" ")) == 6 and not g["aborted"]
        log = (directory / g["log"]).read_text().splitlines()
        assert log[-1] == g["result"]
    rows = table(directory)
    assert len(rows) == 4 and sorted(r.split()[1] for r in rows[1:]) == ["fast", "fast2", "random"]
    assert (tmp_path / "state" / "ai" / "fast2").is_dir(), "a persistent working directory is kept"


@pytest_twisted.ensureDeferred
async def test_the_service_and_the_command_line_agree(tmp_path, fast_ai):
    if not (ROOT / "gamed" / "stratego" / "cli.py").exists():
        pytest.skip("gamed-stratego's command line is not there yet")
    red, blue = f"{fast_ai} 5", f"{fast_ai} 9"
    ais = (AiProgram("red", red), AiProgram("blue", blue))
    service = StrategoService(StrategoConfig(ai=ais, timeout=5.0), Limits(), reactor, tmp_path / "state")
    (tmp_path / "logs").mkdir()
    d = defer.ensureDeferred(service.play(tmp_path, 1, 1, ais[0], ais[1]))
    d.addTimeout(30, reactor)
    result = await d
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = ["-m", "gamed.stratego.cli", "-m", "1000", "-T", "5", red, blue]
    d = utils.getProcessOutputAndValue(sys.executable, args, env=env, path=str(tmp_path), reactor=reactor)
    d.addTimeout(30, reactor)
    out, err, code = await d
    assert code == 0, err
    assert out.decode() == result.line + "\n"
