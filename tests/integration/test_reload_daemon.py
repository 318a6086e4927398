"""SIGHUP re-reads the settings of a running daemon: what can change now applies to the games
that begin afterwards, the rest is named as needing a restart, and a file that cannot be used
changes nothing; the daemon runs on throughout."""

import pytest_twisted
from twisted.internet import reactor, task

from tests.integration.support import connect, take_seats


async def logged(daemon, words: str, timeout: float = 20) -> str:
    for _ in range(int(timeout / 0.05)):
        for line in daemon.text.splitlines():
            if words in line:
                return line
        await task.deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"no log line with {words!r}:\n{daemon.text}")


async def first_prompt(daemon, table: str) -> str:
    a, b = await connect(daemon.port), await connect(daemon.port)
    for c in (a, b):
        c.send("BOARD OFF")
    await take_seats(table, a, b)
    prompt = await a.expect("YOURMOVE", timeout=10)
    for c in (a, b):
        c.transport.loseConnection()
    return prompt


@pytest_twisted.ensureDeferred
async def test_sighup_applies_what_it_can_and_names_the_rest(start_daemon, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 60\n[players]\ngrace = 60\n")
    daemon = await start_daemon("--config", str(conf))
    assert (await first_prompt(daemon, "before")).startswith("YOURMOVE 60 ")

    conf.write_text("[kalaha]\nmove_time = 30\n[ladder]\nwindow = 150\n[players]\ngrace = 10\n")
    daemon.signal("HUP")
    line = await logged(daemon, "settings reloaded from")
    assert f"settings reloaded from {conf}: applied kalaha.move_time, ladder.window; need a restart: players.grace" in line
    assert (await first_prompt(daemon, "after")).startswith("YOURMOVE 30 "), "new games have the new move time"

    conf.write_text("[kalaha]\nmove_time = -5\n")
    daemon.signal("HUP")
    line = await logged(daemon, "settings not reloaded")
    assert "kalaha.move_time must not be negative" in line
    assert (await first_prompt(daemon, "still")).startswith("YOURMOVE 30 "), "the running settings stay"
    assert daemon.exit_code is None and not daemon.exited
