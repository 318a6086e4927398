"""What only gamed-stratego's ``pipes.PipeSeat`` does (ucc-stratego §2.5): the behaviour it shares
with the daemon's ``ProgramSeat`` is checked for both in test_program_seats.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_twisted

from tests.stratego.seat_harness import options

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


@pytest_twisted.ensureDeferred
async def test_a_program_that_cannot_be_executed_behaves_like_one_that_exits_at_once(pipe_seats, tmp_path, puppet):
    # posix_spawn itself fails (the interpreter does not exist): no process, a warning on stderr.
    broken = tmp_path / "broken"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    warnings = []
    red = pipe_seats.seat(str(broken), options(), warn=warnings.append)
    assert red.valid and red.pid is None
    result, *_ = await pipe_seats.play(red, puppet, options())
    assert result.line == f"{broken} RED BAD_SETUP 0 0 148"
    assert warnings and "could not start" in warnings[0]
