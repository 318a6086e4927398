"""The example sessions of docs/protocols/virtual-fight.md, replayed line for line against the server.

In memory (StringTransport, Clock), on the configuration the document states: the default map and
settings except ``--fight-max-turns 3``. Clients ``A``-``F`` are AIs on the AI port, ``G``-``Z``
observers on the GUI port; a client connects at its first step. Time passes only while a client
waits for a line that has not come: the clock then moves to the server's next timer (the pair
delay, the turn time, the lobby timeout), one timer at a time.
"""

import pytest
from twisted.internet.task import Clock

from gamed.config import FightConfig
from tests.docsessions import DOCS, sessions
from tests.fight.harness import Client, ai, gui, make_service

SESSIONS = sessions("virtual-fight.md")

# The document's recording configuration: FightConfig's defaults (which the harness changes for
# other tests: no pair delay, observer events sent at once) except the turn limit.
SETTINGS = {"pair_delay": FightConfig().pair_delay, "gui_interval": FightConfig().gui_interval, "max_turns": 3}
OBSERVERS = "GHIJKLMNOPQRSTUVWXYZ"
MAX_TIMERS = 20  # timers one expected line may wait for; a missing line fails instead of spinning


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two AIs by hand",
        "Meeting at a table",
        "Waiting alone",
        "An observer",
    ]


def test_the_document_states_the_recording_configuration():
    assert SETTINGS["pair_delay"] == 0.5, "the document says: half a second"
    assert "`--fight-max-turns 3`" in (DOCS / "virtual-fight.md").read_text()


def _next_timer(clock: Clock) -> None:
    calls = clock.getDelayedCalls()
    assert calls, "a client waits for a line but no timer is left to run"
    clock.advance(max(0.0, min(call.getTime() for call in calls) - clock.seconds()))


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    clock = Clock()
    service = make_service(clock, **SETTINGS)
    clients: dict[str, Client] = {}
    pending: dict[str, list[str]] = {}
    received: dict[str, bytes] = {}

    def client(name: str) -> Client:
        if name not in clients:
            clients[name] = gui(service) if name in OBSERVERS else ai(service)
            pending[name] = []
            received[name] = b""
        return clients[name]

    def take(name: str) -> None:
        """Move what ``name`` received into its pending lines (and its byte record)."""
        received[name] += clients[name].transport.value()
        pending[name].extend(clients[name].read())

    for n, step in enumerate(session.steps, 1):
        c = client(step.client)
        if step.kind == ">":
            assert not c.lost, f"step {n}: {step.client} is closed"
            c.send(step.text)
        elif step.kind == "<":
            timers = 0
            while True:
                take(step.client)
                if pending[step.client] or timers == MAX_TIMERS:
                    break
                _next_timer(clock)
                timers += 1
            assert pending[step.client], f"step {n}: {step.client} expected {step.text!r}, got nothing"
            got = pending[step.client].pop(0)
            assert got == step.text, f"step {n}"
        else:
            take(step.client)
            assert pending[step.client] == [] and c.lost, f"step {n}: {step.client} should be closed"
    for name in clients:
        take(name)
        assert pending[name] == [], f"{name} received lines the session does not show"
        shown = "".join(f"{st.text}\r\n" for st in session.steps if st.client == name and st.kind == "<")
        assert received[name] == shown.encode("ascii"), f"{name}: the bytes differ from the document"
