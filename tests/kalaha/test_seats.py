"""Kalaha players you can trust: LOGIN with an account's token, guests' names, seats that drop and
come back (LOGIN, RESUME <token>), forfeits when the grace runs out, and every refusal's code.

Over StringTransport and a Clock, with in-memory accounts (tests/memaccounts.py); the same
behaviour against the real daemon is in tests/integration/test_kalaha_daemon.py.
"""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock
from twisted.logger import capturedLogs
from zope.interface.verify import verifyObject

from gamed.identity import LoginError, Refusal
from gamed.kalaha import ai
from gamed.kalaha.game import ComputerPlayer, IKalahaPlayer
from gamed.seats import ISeatGame, ISeatHolder
from tests.kalaha.harness import Client, logged_in, make_service, pair
from tests.memaccounts import MemoryAccounts
from tests.memclient import next_turns

OPENING = "POSITION 6 6 6 6 6 6 0 6 6 6 6 6 6 0 A"
AFTER_A3 = "POSITION 6 6 0 7 7 7 1 7 7 6 6 6 6 0 B"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def accounts():
    return MemoryAccounts()


@pytest.fixture
def service(clock, accounts):
    # A pair delay, so that a client can log in before it joins the general queue.
    return make_service(clock, accounts=accounts, pair_delay=0.5)


def seated_accounts(service, accounts, names=("alice", "bob")):
    """Two accounts logged in and seated at one game (A, B); their tokens; reads emptied."""
    tokens = [accounts.add(name) for name in names]
    clients = [logged_in(service, name, token, "TABLE t") for name, token in zip(names, tokens)]
    for client in clients:
        client.read()
    return clients, tokens


def test_protocol_game_and_computer_provide_their_interfaces(service, accounts):
    (a, b), _ = seated_accounts(service, accounts)
    game = a.player.game
    assert verifyObject(IKalahaPlayer, a.player) and verifyObject(ISeatHolder, a.player)
    assert verifyObject(ISeatGame, game)
    computer = ComputerPlayer(ai.LEVELS["easy"], service.clock, service.rng, service.think)
    assert verifyObject(IKalahaPlayer, computer)


def test_login_is_shown_by_the_account_name_and_the_game_is_played_as_usual(service, accounts):
    token = accounts.add("alice")
    a = Client(service)
    a.read()
    a.send(f"LOGIN alice {token}", "TABLE t")
    assert a.read() == ["OK LOGIN alice", "OK TABLE t", "WAIT waiting at table t"]
    b = Client(service)
    b.read()
    b.send("NAME bob", "TABLE t")
    assert b.read()[:2] == ["OK NAME bob", "OK TABLE t"]
    assert b.read() == [] and a.read()[0] == "START 1 A bob"
    seats = a.player.game.seats
    assert [(s.name, s.identity.kind, s.identity.rated) for s in seats.values()] == [
        ("alice", "person", True),
        ("bob", "guest", False),
    ]


def test_drop_and_log_in_again_within_the_grace_gets_the_whole_state_and_finishes(service, accounts, clock):
    (a, b), (token, _) = seated_accounts(service, accounts)
    a.send("A3")
    b.send("B1")
    a.read(), b.read()
    clock.advance(10)
    a.drop()
    assert b.read() == ["AWAY A alice 60"]
    clock.advance(12)
    again = Client(service)
    again.read()
    again.send(f"LOGIN alice {token}")
    assert again.read() == [
        "OK LOGIN alice",
        "START 1 A bob",
        "POSITION 7 6 0 7 7 7 1 0 8 7 7 7 7 1 A",
        "STRIKES 0 3",
        "TURN A alice",
        "YOURMOVE 38 A1 A2 A4 A5 A6",  # its clock ran on while it was away
    ]
    assert b.read() == ["BACK A alice"]
    again.send("A1")
    assert b.read()[0] == "PLAYED A A1 SOWN 7"
    b.send("RESIGN")
    assert again.read()[-3:] == ["SCORE 2 1", "RESULT WIN RESIGN bob resigned", "BYE thanks for playing"]
    assert b.read()[-2:] == ["RESULT LOSE RESIGN you resigned", "BYE thanks for playing"]
    assert service.games == {}


def test_the_player_who_is_back_gets_start_position_strikes_turn_and_the_others_back(service, accounts, clock):
    (a, b), (token, _) = seated_accounts(service, accounts)
    a.send("A3")
    b.send("A1")  # not B's pit: a strike (drawings are off: programs)
    b.read()
    b.drop()
    assert a.read()[-1] == "AWAY B bob 60"
    clock.advance(25)
    back = Client(service)
    back.read()
    back.send(f"LOGIN bob {accounts_token(accounts, 'bob')}")
    assert back.read() == [
        "OK LOGIN bob",
        "START 1 B alice",
        AFTER_A3,
        "STRIKES 1 3",
        "TURN B bob",
        "YOURMOVE 35 B1 B2 B3 B4 B5 B6",  # the clock ran on while bob was away
    ]
    assert a.read() == ["BACK B bob"]
    back.send("B1")
    assert a.read()[0] == "PLAYED B B1 SOWN 7"


def accounts_token(accounts, name):
    """The current token of ``name`` in MemoryAccounts (tests only)."""
    return accounts._accounts[name][1]


def test_a_guest_asks_its_token_and_resumes_with_it(clock):
    service = make_service(clock, move_time=0)
    a, b = pair(service)
    a.send("TOKEN")
    (line,) = a.read()
    word, token = line.split()
    assert word == "TOKEN" and len(token) >= 16
    a.send("A3")
    b.read()
    a.drop()
    assert b.read() == ["AWAY A alice 60"]
    back = Client(service)
    back.read()
    back.send("BOARD ON", f"RESUME {token}")
    lines = back.read()
    assert lines[:4] == ["OK BOARD ON", "OK RESUME 1 A", "START 1 A bob", AFTER_A3]
    assert [line.split()[0] for line in lines[4:]] == ["BOARD"] * 7 + ["STRIKES", "TURN"]
    assert lines[-2:] == ["STRIKES 0 3", "TURN B bob"]
    assert b.read() == ["BACK A alice"]
    assert back.player.name == "alice"


def test_a_new_connection_with_the_token_replaces_a_connection_that_is_not_dead_yet(clock):
    service = make_service(clock, move_time=0)
    a, b = pair(service)
    a.send("TOKEN")
    token = a.read()[0].split()[1]
    new = Client(service)
    new.read()
    new.send(f"RESUME {token}")
    assert a.read() == ["BYE your seat was taken back by a new connection"] and a.lost
    assert new.read()[:2] == ["OK RESUME 1 A", "START 1 A bob"]
    assert b.read() == ["BACK A alice"]
    new.send("A3")
    assert b.read()[0] == "PLAYED A A3 SOWN 6"


def test_a_seat_not_back_in_time_forfeits_and_the_opponent_wins(service, accounts, clock):
    (a, b), (token, _) = seated_accounts(service, accounts)
    a.send("A3")
    b.send("B1")
    a.read()
    b.drop()  # A is to move, so A's clock runs, not B's
    assert a.read() == ["AWAY B bob 60"]
    a.send("A1")
    clock.advance(59)
    a.read()
    clock.advance(1)
    lines = a.read()
    assert lines[-3:] == [lines[-3], "RESULT WIN FORFEIT bob did not come back within 60 s", "BYE thanks for playing"]
    assert lines[-3].startswith("SCORE ")
    late = Client(service)
    late.read()
    late.send(f"LOGIN bob {accounts_token(accounts, 'bob')}")
    assert late.read() == ["OK LOGIN bob"]  # no seat any more: just logged in
    assert late.player.game is None


def test_an_away_player_who_is_to_move_loses_on_time(service, accounts, clock):
    (a, b), _ = seated_accounts(service, accounts)
    a.send("A3")
    b.drop()
    clock.advance(60)  # the move time (60 s) and the grace (60 s): the clock is first
    assert a.read()[-3:] == ["SCORE 1 0", "RESULT WIN TIMEOUT bob did not move within 60 s", "BYE thanks for playing"]


def test_the_resume_token_of_a_finished_game_is_refused_with_428(clock):
    service = make_service(clock)
    a, b = pair(service)
    a.send("TOKEN")
    token = a.read()[0].split()[1]
    a.send("RESIGN")
    late = Client(service)
    late.read()
    late.send(f"RESUME {token}", "RESUME " + "z" * 24, "RESUME")
    assert late.read() == [
        "ERROR 428 the game of that resume token is over",
        "ERROR 427 unknown resume token",
        "ERROR 401 usage: RESUME <token>",
    ]


def test_login_or_resume_after_seating_is_refused_with_425_and_is_a_strike(service, accounts):
    (a, b), (token, _) = seated_accounts(service, accounts)
    b.send(f"LOGIN carol {accounts.add('carol')}")
    assert b.read() == ["ERROR 426 you are logged in already (bob); strike 1 of 3"]  # (A is to move)
    c, d = pair(service, names=("carol2", "dave"))
    c.send(f"LOGIN carol {accounts_token(accounts, 'carol')}")
    assert c.read() == [
        "ERROR 425 log in or resume before you are seated, not during a game; strike 1 of 3",
        "YOURMOVE 60 A1 A2 A3 A4 A5 A6",
    ]
    c.send("RESUME " + "q" * 24)
    assert c.read()[0] == "ERROR 425 log in or resume before you are seated, not during a game; strike 2 of 3"


def test_token_outside_a_game_is_refused_with_430(service):
    c = Client(service)
    c.read()
    c.send("TOKEN", "TOKEN now")
    assert c.read() == ["ERROR 430 you have no seat in a game", "ERROR 401 usage: TOKEN"]


def test_a_registered_name_needs_its_token(service, accounts, clock):
    token = accounts.add("alice")
    good = logged_in(service, "alice", token, "TABLE t")
    bad = Client(service)
    bad.read()
    bad.send("NAME alice", f"LOGIN alice {'w' * 32}", "LOGIN alice short", "LOGIN nobody " + "n" * 32, "LOGIN alice")
    assert bad.read() == [
        "ERROR 432 another player here uses that name just now (alice)",
        "ERROR 420 unknown account or wrong token",
        "ERROR 420 unknown account or wrong token",
        "ERROR 420 unknown account or wrong token",
        "ERROR 401 usage: LOGIN <name> <token>",
    ]
    bad.send("TABLE t")
    assert bad.read() == ["OK TABLE t", "START 1 B alice", OPENING, "TURN A alice"]  # it plays alice, as a guest
    assert bad.player.name.startswith("guest")
    good.read()
    good.drop()
    thief = Client(service)
    thief.read()
    thief.send("NAME alice", f"LOGIN alice {'x' * 32}")
    assert [line.split()[1] for line in thief.read()] == ["432", "420"]  # alice's seat is away
    assert thief.player.game is None  # the away seat stays alice's


def test_revoked_and_rotated_tokens_stop_working_at_once(service, accounts):
    token = accounts.add("alice")
    accounts.revoke("alice")
    c = Client(service)
    c.read()
    c.send(f"LOGIN alice {token}")
    assert c.read() == ["ERROR 421 this account's token has been revoked"]
    new = accounts.rotate("alice")
    newer = accounts.rotate("alice")
    c.send(f"LOGIN alice {new}", f"LOGIN alice {newer}")
    assert c.read() == ["ERROR 420 unknown account or wrong token", "OK LOGIN alice"]


def test_two_guests_called_bob_are_never_paired_and_an_away_seat_keeps_its_name(clock):
    service = make_service(clock, move_time=0, pair_delay=0.5)
    a, b = Client(service), Client(service)
    a.read(), b.read()
    a.send("NAME bob")
    b.send("NAME bob", "NAME bobby")
    assert a.read() == ["OK NAME bob"]
    assert b.read() == ["ERROR 432 another player here uses that name just now (bob)", "OK NAME bobby"]
    clock.advance(0.5)
    assert a.read()[1] == "START 1 A bobby"
    a.send("A3")
    a.drop()  # bob's seat is away: its name stays taken
    c = Client(service)
    c.read()
    c.send("NAME bob")
    assert c.read() == ["ERROR 432 another player here uses that name just now (bob)"]
    d = Client(service)
    d.read()
    d.send(f"NAME {c.player.name}")  # a default name in use is in use too
    assert d.read() == [f"ERROR 432 another player here uses that name just now ({c.player.name})"]
    clock.advance(60)  # bob's seat forfeits: its name is free again
    assert b.read()[-2] == "RESULT WIN FORFEIT bob did not come back within 60 s"
    e = Client(service)
    e.read()
    e.send("NAME bob")
    assert e.read() == ["OK NAME bob"]


def test_meet_a_registered_name_meets_only_that_account(service, accounts, clock):
    token = accounts.add("alice")
    b = Client(service)
    b.read()
    b.send("NAME bob", "MEET alice")
    assert b.read() == ["OK NAME bob", "OK MEET alice", "WAIT waiting for alice to send MEET bob"]
    fake = Client(service)
    fake.read()
    fake.send("NAME alice", "MEET bob")
    assert fake.read()[0].startswith("ERROR 424 ")
    assert fake.read() == [] and b.read() == []  # the fake "alice" is guest3: no meeting
    real = Client(service)
    real.read()
    real.send(f"LOGIN alice {token}", "MEET bob")
    assert real.read()[:3] == ["OK LOGIN alice", "OK MEET bob", "START 1 B bob"]
    assert b.read()[0] == "START 1 A alice"


def test_one_accounts_two_connections_never_play_each_other(service, accounts, clock):
    token = accounts.add("alice")
    one = logged_in(service, "alice", token)
    two = logged_in(service, "alice", token)
    clock.advance(0.5)
    assert one.read() == ["WAIT waiting for an opponent"] and two.read() == ["WAIT waiting for an opponent"]
    assert one.player.game is None and two.player.game is None
    guest = Client(service)
    guest.read()
    clock.advance(0.5)
    assert one.read()[0] == "START 1 A guest3" and guest.read()[0] == "START 1 B alice"
    assert two.player.game is None and service.lobby.waiting() == [two.player]


def test_a_server_for_registered_players_only_refuses_guests_and_pairs_after_login(clock, accounts):
    service = make_service(clock, accounts=accounts, guests=False, pair_delay=0.5)
    g = Client(service)
    assert g.read() == [
        "HELLO KALAHA/1 gamed/0.1.0",
        "INFO Welcome to Kalaha. Type HELP for the commands.",
        "INFO this server admits registered players only: send LOGIN <name> <token> first",
    ]
    refused = "ERROR 423 this server admits registered players only: send LOGIN <name> <token> first"
    g.send("NAME gary", "TABLE t", "MEET bob", "COMPUTER")
    assert g.read() == [refused] * 4
    clock.advance(1)
    assert g.read() == []  # not queued
    a = logged_in(service, "alice", accounts.add("alice"))
    clock.advance(1)
    assert a.read() == ["WAIT waiting for an opponent"]
    b = Client(service)
    b.read()
    clock.advance(1)
    b.send(f"LOGIN bob {accounts.add('bob')}")  # after its pair delay: it joins at once
    clock.advance(0)
    assert b.read()[:2] == ["OK LOGIN bob", "START 1 B alice"]
    assert g.read() == [] and g.player.game is None


def test_a_thousand_wrong_tokens_from_one_address_are_limited_and_other_games_play_on(clock, accounts):
    service = make_service(clock, accounts=accounts, pair_delay=0.5, move_time=0)
    a, b = pair(service)
    accounts.add("alice2")
    attacker = Client(service, host="198.51.100.7")
    attacker.read()
    attacker.raw(b"".join(b"LOGIN alice2 " + f"{n:032d}".encode() + b"\r\n" for n in range(1000)))
    a.send("A3")
    assert b.read()[0] == "PLAYED A A3 SOWN 6"  # while the flood waits its turns
    a.read()
    next_turns(clock)
    lines = attacker.read()
    assert len(lines) == 1000
    assert lines[:5] == ["ERROR 420 unknown account or wrong token"] * 5
    assert all(line.startswith("ERROR 422 too many failed logins from your address (try again in ") for line in lines[5:])
    assert accounts.checked == 5  # the tokens compared: the limit's, not a thousand
    b.send("B1")
    assert a.read()[0] == "PLAYED B B1 SOWN 7"
    # another address is not limited
    other = Client(service, host="198.51.100.8")
    other.read()
    other.send(f"LOGIN alice2 {accounts_token(accounts, 'alice2')}")
    assert other.read() == ["OK LOGIN alice2"]


def test_lines_after_a_login_wait_for_its_answer(clock, accounts):
    service = make_service(clock, accounts=accounts, pair_delay=0.5)
    token = accounts.add("alice")
    accounts.pending = True
    c = Client(service)
    c.read()
    c.send(f"LOGIN alice {token}", "PING", "TABLE t")
    assert c.read() == []
    accounts.release()
    assert c.read() == ["OK LOGIN alice", "PONG", "OK TABLE t", "WAIT waiting at table t"]


def test_a_token_sent_on_a_line_of_its_own_is_an_unknown_command_and_never_logged(service, accounts):
    token = accounts.add("alice")
    c = Client(service)
    c.read()
    with capturedLogs() as events:
        c.send(token, f"LOGIN alice {token}")
    assert c.read()[0] == f"ERROR 400 unknown command {token[:20].upper()}; type HELP"
    text = repr(events)
    assert token not in text and token[:20] not in text


def test_a_client_whose_login_is_being_checked_is_not_paired_as_a_guest(clock, accounts):
    service = make_service(clock, accounts=accounts, pair_delay=0.5)
    token = accounts.add("alice")
    waiting = Client(service)
    waiting.read()
    clock.advance(0.5)
    assert waiting.read() == ["WAIT waiting for an opponent"]
    accounts.pending = True  # a slow database
    c = Client(service)
    c.read()
    c.send(f"LOGIN alice {token}")
    clock.advance(5)  # its pair delay is long over
    assert c.read() == [] and waiting.read() == []
    accounts.release()
    assert c.read() == ["OK LOGIN alice"]
    clock.advance(0)
    assert c.read()[0] == f"START 1 B {waiting.player.name}" and waiting.read()[0] == "START 1 A alice"


def test_a_player_back_while_its_opponent_is_away_is_told_so(clock):
    service = make_service(clock, move_time=0)
    a, b = pair(service)
    a.send("TOKEN")
    token = a.read()[0].split()[1]
    a.drop()
    clock.advance(20)
    b.drop()
    back = Client(service)
    back.read()
    back.send(f"RESUME {token}")
    assert back.read() == ["OK RESUME 1 A", "START 1 A bob", OPENING, "STRIKES 0 3", "AWAY B bob 60", "TURN A alice", "YOURMOVE - A1 A2 A3 A4 A5 A6"]
    clock.advance(60)  # bob does not come back; no move was made: no result
    assert back.read() == ["SCORE 0 0", "ABORT DISCONNECT bob disconnected", "BYE thanks for playing"]


def test_a_shutdown_with_a_seat_away_aborts_and_its_token_is_dead(clock):
    service = make_service(clock)
    a, b = pair(service)
    a.send("TOKEN")
    token = a.read()[0].split()[1]
    a.send("A3")
    a.drop()
    b.read()
    service.startService()
    service.stopService()
    assert b.read() == ["SCORE 1 0", "ABORT SHUTDOWN the server is shutting down", "BYE thanks for playing"]
    assert service.seats.games() == []
    with pytest.raises(LoginError) as refused:
        service.seats.find_token(token)
    assert refused.value.refusal is Refusal.FINISHED


def test_spectators_see_a_seat_away_until_its_grace_ends_and_back_again(clock, accounts):
    import time

    from gamed.observers import LiveHub
    from tests.memstore import MemoryStore

    hub = LiveHub(clock, MemoryStore())
    service = make_service(clock, accounts=accounts, hub=hub, pair_delay=0.5, grace=30)
    (a, b), (token, _) = seated_accounts(service, accounts)
    (summary,) = hub.games()["games"]
    table = hub.table(summary["id"])
    assert [p.get("away") for p in table.summary()["players"]] == [None, None]
    clock.advance(5)
    a.drop()
    players = table.summary()["players"]
    assert players[0]["away"] is True and "away" not in players[1]
    assert players[0]["back_by"] == pytest.approx(time.time() + 30, abs=5)
    logged_in(service, "alice", token)
    assert "away" not in table.summary()["players"][0]
