"""Fixtures of the program seats' tests (test_program_seats.py, test_pipes.py, test_process.py)."""

from __future__ import annotations

import shlex

import pytest

from tests.stratego.puppet import PUPPET, write_script
from tests.stratego.seat_harness import PipeHarness, ReactorHarness


@pytest.fixture
def puppet(tmp_path):
    """The puppet script's path (quoted for use in a player argument)."""
    return shlex.quote(write_script(tmp_path / "puppet", PUPPET))


def _harness(kind):
    harness = kind()
    try:
        yield harness
    finally:
        harness.cleanup()  # a failed test must not leave AI processes behind for the next one


@pytest.fixture(params=[PipeHarness, ReactorHarness], ids=["PipeSeat", "ProgramSeat"])
def seats(request):
    """Each program seat in turn: ``PipeSeat`` in a SelectorLoop, ``ProgramSeat`` on the reactor."""
    yield from _harness(request.param)


@pytest.fixture
def pipe_seats():
    """``PipeSeat`` in a SelectorLoop of its own."""
    yield from _harness(PipeHarness)


@pytest.fixture
def reactor_seats():
    """``ProgramSeat`` on the reactor."""
    yield from _harness(ReactorHarness)
