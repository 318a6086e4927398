"""The replay oracle: every UCC 2012 competition log that ends with a result line replays, with
``-m 1000`` as in the tournament, to exactly that line (ucc-stratego §9, §14.7)."""

from __future__ import annotations

import pathlib

import pytest

from gamed.stratego.referee import parse_log
from gamed.stratego.seats import replay_seats
from tests.stratego.scripted import play

LOGS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "ucc-2012-logs"


def read_lines(path: pathlib.Path) -> list[str]:
    lines = path.read_bytes().decode("latin-1").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def corpus() -> list[pathlib.Path]:
    if not LOGS.is_dir():
        return []
    return sorted(p for p in LOGS.iterdir() if len(read_lines(p)[-1].split(" ")) == 6)


CORPUS = corpus()


def test_the_corpus_is_there():
    assert len(CORPUS) == 187, f"expected the 187 logs with a result line under {LOGS}"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_log_replays_to_its_result_line(path):
    lines = read_lines(path)
    result = play(*replay_seats(parse_log(lines)), max_turns=1000, timeout=None)
    assert result.line == lines[-1]
