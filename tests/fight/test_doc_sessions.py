"""The example sessions of docs/protocols/virtual-fight.md, replayed line for line against the server.

In memory (StringTransport, Clock), on the configuration the document states: the default map and
settings except ``--fight-max-turns 3``. Clients ``A``-``F`` are AIs on the AI port, ``G``-``Z``
observers on the GUI port; a client connects at its first step. Time passes only while a client
waits for a line that has not come: the clock then moves to the server's next timer (the pair
delay, the turn time, the lobby timeout), one timer at a time.
"""

import types

import pytest
from twisted.internet.task import Clock

from gamed import seats
from gamed.config import FightConfig, PlayersConfig
from gamed.players import Players
from gamed.timecontrol import parse
from tests.docsessions import DOCS, replay_in_memory, sessions
from tests.fight.harness import Client, ai, gui, make_service
from tests.memaccounts import MemoryAccounts

SESSIONS = sessions("virtual-fight.md")

# The document's recording configuration: FightConfig's defaults (which the harness changes for
# other tests: no pair delay, observer events sent at once) except the turn limit.
SETTINGS = {"pair_delay": FightConfig().pair_delay, "gui_interval": FightConfig().gui_interval, "max_turns": 3}
# Sessions recorded with other settings, as the document says before each of them.
SESSION_SETTINGS = {"Away too long": {"grace": 8}, "A team out of time": {"time_control": parse("4s+1s")}}
# The accounts of the document's sessions, with the tokens it shows ("gamed player add" prints a
# random one), and the resume tokens the sessions show, handed out in this order.
ACCOUNTS = {"ann": "ann-token-0123456789", "ben": "ben-token-0123456789"}
RESUME_TOKENS = ("Qm7Tn0dXbV2mLs9aEw4cYhZ1", "Xr5Kp8wLc3nHq6sJd2vGf9Bt")
OBSERVERS = "GHIJKLMNOPQRSTUVWXYZ"
MAX_TIMERS = 20  # timers one expected line may wait for; a missing line fails instead of spinning


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two AIs by hand",
        "Meeting at a table",
        "Waiting alone",
        "Asking for help",
        "An observer",
        "Logging in and coming back",
        "A guest comes back with its resume token",
        "Away too long",
        "Refused logins",
        "A team out of time",
        "A program checks itself",
        "A self-test that fails",
    ]


def test_the_document_states_the_recording_configuration():
    assert SETTINGS["pair_delay"] == 0.5, "the document says: half a second"
    assert "`--fight-max-turns 3`" in (DOCS / "virtual-fight.md").read_text()


def _next_timer(clock: Clock) -> None:
    calls = clock.getDelayedCalls()
    assert calls, "a client waits for a line but no timer is left to run"
    clock.advance(max(0.0, min(call.getTime() for call in calls) - clock.seconds()))


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session, monkeypatch):
    clock = Clock()
    accounts = MemoryAccounts()
    for name, token in ACCOUNTS.items():
        accounts.add(name, token=token)
    tokens = iter(RESUME_TOKENS)
    monkeypatch.setattr(seats, "secrets", types.SimpleNamespace(token_urlsafe=lambda n: next(tokens)))
    players = Players(PlayersConfig(), accounts, clock)
    service = make_service(clock, players=players, **SETTINGS, **SESSION_SETTINGS.get(session.title, {}))
    received: dict[str, bytes] = {}

    def connect(name: str) -> Client:
        received[name] = b""
        return gui(service) if name in OBSERVERS else ai(service)

    def read(name: str, client: Client) -> list[str]:
        """The lines ``name`` received, also kept as bytes."""
        received[name] += client.transport.value()
        return client.read()

    clients = replay_in_memory(session, connect, lambda: _next_timer(clock), max_waits=MAX_TIMERS, read=read)
    for name in clients:
        shown = "".join(f"{st.text}\r\n" for st in session.steps if st.client == name and st.kind == "<")
        assert received[name] == shown.encode("ascii"), f"{name}: the bytes differ from the document"
