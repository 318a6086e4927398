"""Whether a bot's command keeps running once started (``gamed bot add``, docs/hosting.md).

``exits_at_once`` starts the program once, as a hosted game starts it (the same sandbox, limits
and minimal environment, a fresh working directory, its stdin open and nothing said on it), and
waits ``within`` seconds: a program that ends by itself in that time (a crash at start-up, a
missing module, a command such as ``/bin/false``) is reported with its exit status and the first
line of its stderr (of a Python traceback, the last: the exception); one that still runs is killed with its whole tree, so that nothing of it
survives the check. A bot that connects itself gets a port to connect to for the check (a
listening socket on 127.0.0.1 that accepts its connection and says nothing, as a daemon that has
not answered its LOGIN yet), with GAMED_HOST, GAMED_PORT and a GAMED_TOKEN that logs nobody in.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from twisted.internet import defer, protocol

from gamed.hosting.process import HostedProgram
from gamed.hosting.sandbox import Isolation
from gamed.hosting.spec import BotSpec

WITHIN = 1.0  # seconds a program must keep running to pass


async def exits_at_once(spec: BotSpec, reactor: Any, isolation: Isolation, within: float = WITHIN) -> str | None:
    """None when ``spec``'s program still runs after ``within`` seconds (it is then killed),
    else one line saying how it ended: ``exited at once (status 3); stderr: <its first line>``."""
    workdir = tempfile.mkdtemp(prefix=f"gamed-check-{spec.name}-")
    port = None
    try:
        env = {"GAMED_GAME": spec.game, "GAMED_NAME": spec.name, "GAMED_SEAT": "0", "GAMED_TABLE": f"check-{spec.name}"}
        if spec.talk == "connect":
            port = reactor.listenTCP(0, _Silent(), interface="127.0.0.1")
            env.update({"GAMED_HOST": "127.0.0.1", "GAMED_PORT": str(port.getHost().port), "GAMED_TOKEN": "start-check"})
        program = HostedProgram(spec, workdir, isolation, reactor, env=env, network=spec.talk == "connect")
        ended = defer.Deferred()
        program.ended.addBoth(lambda trouble: ended.called or ended.callback(True))
        timer = reactor.callLater(within, lambda: ended.called or ended.callback(False))
        program.start(reactor)
        by_itself = await ended
        if timer.active():
            timer.cancel()
        if not by_itself:
            program.kill(None)
            await _ended(program)
            return None
        status = program.exit_status
        words = "exited at once" + (f" (status {status})" if status is not None else "")
        if program.trouble is not None and status is None:
            words += f" ({program.trouble.text()})"
        return words + (f"; stderr: {line}" if (line := _telling_line(program.stderr_text())) else "")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if port is not None:
            await port.stopListening()


class _Silent(protocol.Factory):
    """Connections that are accepted and never answered; what they send is dropped."""

    protocol = protocol.Protocol


def _telling_line(stderr: str) -> str:
    """The first line of ``stderr``; of a Python traceback, its last (the exception and why)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]


async def _ended(program: HostedProgram) -> None:
    """Wait until the program's end is known (its ``ended`` may have fired already)."""
    if not program.done:
        done = defer.Deferred()
        program.ended.addBoth(lambda result: done.callback(None) or result)
        await done
