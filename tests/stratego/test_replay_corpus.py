"""The replay oracle: every UCC 2012 competition log that ends with a result line replays, with
``-m 1000`` as in the tournament, to exactly that line (ucc-stratego §9, §14.7)."""

from __future__ import annotations

import pytest

from gamed.stratego.referee import parse_log
from gamed.stratego.referee import replay_seats
from tests.stratego.corpus import logs, with_result
from tests.stratego.scripted import play

CORPUS = with_result()


def test_the_corpus_is_there():
    assert len(logs()) == 192 and len(CORPUS) == 187


@pytest.mark.parametrize("name, lines", CORPUS, ids=[name for name, _ in CORPUS])
def test_log_replays_to_its_result_line(name, lines):
    result = play(*replay_seats(parse_log(lines)), max_turns=1000, timeout=None)
    assert result.line == lines[-1]
