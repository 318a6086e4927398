"""The ladder in the text games, in memory (Clock, StringTransport): logged-in connections that
send LADDER are paired by rating, guests and hosted bots are refused with the documented codes,
LADDER OFF and a disconnect take a connection off, an account's concurrency is kept, and the
pairing timer runs only while two or more wait."""

from __future__ import annotations

import random

from twisted.internet import defer
from twisted.internet.task import Clock

from gamed import ratings as skill
from gamed.config import LadderConfig, Limits, PlayersConfig
from gamed.connect4.service import Connect4Service, Connect4Settings
from gamed.ladder.policy import LadderRules
from gamed.ladder.service import Ladder
from gamed.players import Players
from tests.kalaha.harness import make_service
from tests.memaccounts import MemoryAccounts
from tests.memclient import Client

LADDER = LadderConfig(window=200, widening=20, concurrency=2, pair_cap=10, in_row=0, interval=1.0)


def kalaha(ladder=LADDER, **kw):
    clock = Clock()
    accounts = MemoryAccounts()
    service = make_service(clock, accounts=accounts, ladder=ladder, pair_delay=0.5, **kw)
    return service, clock, accounts


def connect4(ladder=LADDER):
    clock = Clock()
    accounts = MemoryAccounts()
    players = Players(PlayersConfig(), accounts, clock)
    service = Connect4Service(Connect4Settings(board=False), Limits(), clock, rng=random.Random(3), players=players, ladder=ladder)
    return service, clock, accounts


def on_ladder(service, accounts, name, *extra, host="192.0.2.1"):
    token = accounts._accounts[name][1] if name in accounts._accounts else accounts.add(name, kind="bot")
    c = Client(service, host=host)
    c.read()
    c.send(f"LOGIN {name} {token}", "LADDER", *extra)
    return c


# --- Kalaha --------------------------------------------------------------------------------------


def test_two_logged_in_bots_on_the_ladder_play_each_other():
    service, clock, accounts = kalaha()
    a = on_ladder(service, accounts, "alpha")
    assert a.read() == ["OK LOGIN alpha", "OK LADDER 1", "WAIT waiting for a ladder opponent (rating 1500 +/- 980)"]
    clock.advance(0.6)  # past the pair delay: a ladder bot is not put in the general queue
    assert a.read() == [] and not service.lobby.is_waiting(a.player)
    b = on_ladder(service, accounts, "beta", host="192.0.2.2")
    assert b.read()[-1].startswith("WAIT waiting for a ladder opponent")
    clock.advance(0)
    (game,) = service.games.values()
    assert game.names == {"A": "alpha", "B": "beta"}, "the longer waiter plays first"
    assert a.read()[0] == "START 1 A beta" and b.read()[0] == "START 1 B alpha"
    account = a.player.identity.account_id
    assert service.ladder.running(account) == 1
    a.send("RESIGN")
    assert service.ladder.running(account) == 0 and not service.games


def test_a_guest_is_refused_the_ladder_and_so_is_an_unknown_count():
    service, clock, accounts = kalaha()
    c = Client(service)
    c.read()
    c.send("LADDER")
    assert c.read() == ["ERROR 434 the ladder is for registered players: send LOGIN <name> <token> first"]
    c.send(f"LOGIN bot {accounts.add('bot', kind='bot')}")
    c.read()
    c.send("LADDER 3", "LADDER x", "LADDER 1 2", "LADDER OFF")
    assert c.read() == [
        "ERROR 401 ladder games at once must be 1 to 2",
        "ERROR 401 usage: LADDER [<games at once>] | LADDER OFF",
        "ERROR 401 usage: LADDER [<games at once>] | LADDER OFF",
        "ERROR 404 you are not on the ladder",
    ]
    c.send("LADDER 2", "LADDER")
    assert c.read() == [
        "OK LADDER 2", "WAIT waiting for a ladder opponent (rating 1500 +/- 980)",
        "ERROR 404 you are on the ladder already; LADDER OFF first",
    ]


def test_a_server_without_a_ladder_says_so():
    service, clock, accounts = kalaha(ladder=LadderConfig(enabled=False))
    c = on_ladder(service, accounts, "alpha")
    assert c.read() == ["OK LOGIN alpha", "ERROR 435 this server runs no ladder for this game"]


def test_ladder_off_a_table_or_a_disconnect_take_a_bot_off_the_ladder():
    service, clock, accounts = kalaha()
    a = on_ladder(service, accounts, "alpha")
    a.send("LADDER OFF")
    assert a.read()[-1] == "OK LADDER OFF" and not service.ladder.is_waiting(a.player)
    a.send("LADDER", "TABLE t1")
    assert a.read()[-2:] == ["OK TABLE t1", "WAIT waiting at table t1"]
    assert not service.ladder.is_waiting(a.player)
    b = on_ladder(service, accounts, "beta")
    b.read()
    b.transport.loseConnection()
    b.protocol.connectionLost(None)
    assert service.ladder.waiting() == []
    c = on_ladder(service, accounts, "gamma")
    clock.advance(5)
    assert not service.games, "nobody left on the ladder to play gamma"
    assert c.read()[-1].startswith("WAIT")


def test_an_account_plays_at_most_its_limit_of_ladder_games_at_once():
    service, clock, accounts = kalaha()
    a1 = on_ladder(service, accounts, "alpha")  # LADDER: one game at once
    a2 = on_ladder(service, accounts, "alpha")
    b = on_ladder(service, accounts, "beta", host="192.0.2.2")
    c = on_ladder(service, accounts, "gamma", host="192.0.2.3")
    clock.advance(0)
    assert len(service.games) == 1, "alpha's second connection waits while its first plays"
    (game,) = service.games.values()
    assert "alpha" in game.names.values()
    waiting = {e.member for e in service.ladder.waiting()}
    assert a2.player in waiting or a1.player in waiting
    for client in (a1, a2, b, c):
        client.read()
    (player,) = [cl for cl in (a1, a2) if cl.player.game is game]
    player.send("RESIGN")
    clock.advance(0)
    assert len(service.games) == 1 and "alpha" in next(iter(service.games.values())).names.values(), \
        "the game over, alpha's other connection plays the one still waiting"


def test_ratings_far_apart_meet_once_the_reach_has_widened():
    clock = Clock()
    started = []
    members = [object(), object()]
    table = {"strong": skill.Rating(2100, 100), "weak": skill.Rating(1500, 100)}
    ladder = Ladder("kalaha", LadderRules(window=200, widening=20, pair_cap=10, in_row=0), clock,
                    lambda a, b: started.append((a, b)) or len(started), rating=lambda n: defer.succeed(table[n]))
    ladder.join(members[0], 1, "strong", 1)
    ladder.join(members[1], 2, "weak", 1)
    clock.advance(0)
    assert started == [] and ladder.waiting()
    clock.pump([1] * 19)  # reach 200 + 20 * 19 = 580 < 600
    assert started == []
    clock.advance(1)
    assert started == [(members[0], members[1])]
    assert clock.getDelayedCalls() == [], "nobody waits: no pairing timer runs"
    ladder.ended(1)
    assert ladder.running(1) == ladder.running(2) == 0


def test_a_rating_that_cannot_be_read_is_a_newcomers():
    clock = Clock()
    ladder = Ladder("kalaha", LadderRules(), clock, lambda a, b: 1, rating=lambda n: defer.fail(RuntimeError("db down")))
    got = []
    ladder.join("m", 1, "x", 1).addCallback(got.append)
    assert got == [skill.INITIAL]


# --- Connect Four --------------------------------------------------------------------------------


def test_connect_four_bots_on_the_ladder_play_on_the_default_board():
    service, clock, accounts = connect4()
    a = on_ladder(service, accounts, "alpha")
    assert a.read() == ["OK LOGIN alpha", "OK LADDER 1", "WAIT waiting for a ladder opponent (rating 1500 +/- 980)"]
    b = on_ladder(service, accounts, "beta", host="192.0.2.2")
    b.read()
    clock.advance(0)
    (game,) = service.games.values()
    assert (game.board.width, game.board.height) == service.default_size
    assert a.read()[0].startswith("START") and b.read()[0].startswith("START")
    account = a.player.identity.account_id
    assert service.ladder.running(account) == 1
    a.send("RESIGN")
    assert service.ladder.running(account) == 0 and not service.games


def test_connect_four_guests_are_refused_and_a_table_leaves_the_ladder():
    service, clock, accounts = connect4()
    g = Client(service)
    g.read()
    g.send("LADDER")
    assert g.read() == ["ERROR 434 the ladder is for registered players: send LOGIN <name> <token> first"]
    a = on_ladder(service, accounts, "alpha")
    a.read()
    a.send("TABLE t")
    assert not service.ladder.is_waiting(a.player) and service.lobby.is_waiting(a.player)


# --- whatever the clients do ---------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ACTIONS = st.lists(
    st.tuples(
        st.integers(0, 4),  # which client
        st.sampled_from(["LADDER", "LADDER", "LADDER", "LADDER 2", "LADDER OFF", "TABLE t", "TABLE", "1", "3", "RESIGN",
                         "QUIT", "drop", "wait", "LOGIN"]),
    ),
    max_size=40,
)


STARTED: list[int] = []


@settings(max_examples=100, deadline=None)
@given(ACTIONS, st.booleans())
def test_whatever_the_clients_do_the_ladder_stays_consistent(actions, connect_four):
    service, clock, accounts = connect4() if connect_four else kalaha()
    names = ["alpha", "beta", "gamma", "delta", "alpha"]  # client 4: a second connection of alpha
    tokens = {name: accounts.add(name, kind="bot") for name in set(names)}
    clients: dict[int, Client] = {}
    ladder = service.ladder
    for who, action in actions:
        c = clients.get(who)
        if c is None or c.closing or c.lost:
            c = clients[who] = Client(service, host=f"192.0.2.{who + 1}")
            if who != 4 or action != "LOGIN":  # (client 4 sometimes stays a guest)
                c.send(f"LOGIN {names[who]} {tokens[names[who]]}")
        if action == "drop":
            c.drop()
        elif action == "wait":
            clock.advance(1.0)
        elif action == "LOGIN":
            c.send(f"LOGIN {names[who]} {tokens[names[who]]}")
        else:
            c.send(action)
        clock.advance(0)
        for client in clients.values():
            assert not any(line.startswith("ERROR 500") for line in client.read()), "no internal error, ever"
        for entry in ladder.waiting():
            member = entry.member
            assert member.connected and member.game is None, "only connected members not in a game wait"
            assert not service.lobby.is_waiting(member), "nobody waits on the ladder and in the lobby"
        in_ladder_games: dict = {}
        for game in service.games.values():
            if game.id in ladder._games:
                for account in ladder._games[game.id]:
                    in_ladder_games[account] = in_ladder_games.get(account, 0) + 1
        assert {a: n for a, n in ladder._running.items() if n} == in_ladder_games, "running counts are the games in play"
    STARTED.append(ladder.started)
    for c in clients.values():
        c.drop()
    clock.advance(120)  # every grace period over
    assert ladder.waiting() == [] and not ladder._running


def test_the_random_clients_above_played_ladder_games():
    # (run after the test above, in file order): its examples are no idle ones
    assert STARTED and sum(1 for n in STARTED if n) >= 5, STARTED
