"""Fixtures for integration tests: every test here is marked ``integration``.

``start_daemon(*args)`` runs ``twistd -n gamed`` from this checkout as a subprocess on an
ephemeral loopback port and returns the ``Daemon`` once it listens; every daemon a test started
is stopped (SIGTERM, then SIGKILL) when the test ends.
"""

import pathlib

import pytest
import pytest_twisted

from tests.integration.support import LOOPBACK, Daemon, gamed_args, spawn, with_timeout

_HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        if _HERE in pathlib.Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest_twisted.async_yield_fixture
async def start_daemon():
    """Factory fixture: ``await start_daemon(*args)`` starts a daemon and waits until it listens."""
    started: list[Daemon] = []

    async def start(
        *extra: str,
        kalaha: str = LOOPBACK,
        fight: str = "none",
        fight_gui: str = "none",
        combat: str | None = None,
        connect4: str | None = None,
        web: str | None = None,
        timeout: float = 20,
    ) -> Daemon:
        ports = [kalaha, fight, fight_gui]
        if combat is not None:
            extra = ("--combat", combat, *extra)
            ports.append(combat)
        if connect4 is not None:
            extra = ("--connect4", connect4, *extra)
            ports.append(connect4)
        if web is not None:
            extra = ("--web", web, *extra)
            ports.append(web)
        daemon = spawn(
            gamed_args(*extra, kalaha=kalaha, fight=fight, fight_gui=fight_gui),
            expect_ports=sum(p != "none" for p in ports),
        )
        started.append(daemon)
        await with_timeout(daemon.listening, timeout, "the daemon to listen")
        return daemon

    yield start
    for daemon in started:
        await daemon.stop()


