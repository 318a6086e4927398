"""The example sessions of docs/protocols/kalaha.md, replayed line for line against the server.

In memory here (StringTransport, Clock); the same sessions run against the real daemon in
tests/integration/test_kalaha_daemon.py (all but those that need an account or a resume token,
which the daemon draws at random).
"""

import itertools

import pytest
from twisted.internet.task import Clock

from gamed import seats
from gamed.config import LadderConfig
from gamed.identity import Identity
from gamed.seats import Placement
from tests.docsessions import replay_in_memory, sessions
from tests.kalaha.harness import Client, make_service
from tests.kalaha.test_openings import Placing
from tests.memaccounts import MemoryAccounts

SESSIONS = sessions("kalaha.md")

# What the documents show: alice's account token, the resume tokens the server hands out (in
# the order seats are taken), and the grace of a session whose server has its own.
ALICE_TOKEN = "kT9v2Qm4Xw7Lp0Zr8Ns6Bd3Hy5Fj1Gc"
RESUME_TOKENS = ("Wq3pZ0sV9kdmR6uX2bYhT4nC", "Jm8cQ1rT5vXz0pLk3wNf7bHd")
GRACE = {"A seat not back in time forfeits": 2}
ACCOUNTS = {
    "A registered player logs in and comes back": {"alice": ALICE_TOKEN},
    "Two bots on the ladder": {"alpha": "Lq7Zp2Xc9Vb4Nm6Rt1Ys8Dw3Fh5Gj0Ke", "beta": "Pw4Hs8Kd2Mz6Qa0Xv5Rc9Tn3Jb7Lf1Ug"},
}
# Sessions at a table the daemon reserved for its hosted bots: (table, {client: bot}, opening).
RESERVED = {"A tournament game from its opening": ("cup-7", {"A": "alpha", "B": "beta"}, 1)}


def test_the_document_has_its_sessions():
    assert [s.title for s in SESSIONS] == [
        "Two people with telnet",
        "Two programs, a complete game",
        "Playing the computer",
        "A guest comes back with its resume token",
        "A registered player logs in and comes back",
        "A timed game",
        "Out of time",
        "A seat not back in time forfeits",
        "Two bots on the ladder",
        "A tournament game from its opening",
        "A program checks itself",
    ]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session, monkeypatch):
    tokens = itertools.cycle(RESUME_TOKENS)
    monkeypatch.setattr(seats.secrets, "token_urlsafe", lambda n: next(tokens))
    clock = Clock()
    accounts = MemoryAccounts()
    for name, token in ACCOUNTS.get(session.title, {}).items():
        accounts.add(name, token=token)
    settings = {"grace": GRACE[session.title]} if session.title in GRACE else {}
    service = make_service(clock, pair_delay=0.5, board=True, accounts=accounts, ladder=LadderConfig(), **settings)
    connect = lambda name: Client(service)  # noqa: E731
    if session.title in RESERVED:  # the hosted bots are placed at their table, as the daemon does
        table, bots, opening = RESERVED[session.title]
        service.reserve_table(table, list(bots.values()), opening)
        connect = lambda name: Client(  # noqa: E731
            service, factory=Placing(service, Placement(Identity(bots[name], "bot"), table))
        )
    # Only the pair delay (and a session's grace) passes in the examples.
    replay_in_memory(session, connect, lambda: clock.advance(0.5))
