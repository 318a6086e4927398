"""Connect Four on the shared seat model, in memory: logging in with a token, guests' names, a
player who drops is away for the grace period and takes its seat back (by its account or by a
guest's resume token) with the whole state, a seat not back in time forfeits (a rated loss), and
every refused login, name or resume gets its documented ``ERROR 42x``."""

from __future__ import annotations

import random

from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from gamed.config import Limits, PlayersConfig
from gamed.connect4.service import Connect4Service, Connect4Settings
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.seats import ISeatGame, ISeatHolder
from tests.memaccounts import MemoryAccounts
from tests.memclient import Client, next_turns
from tests.memstore import MemoryStore


def make(accounts=None, guests=True, grace=60.0, store=None, **settings):
    clock = Clock()
    settings.setdefault("board", False)
    players = Players(PlayersConfig(guests=guests), accounts, clock)
    hub = LiveHub(clock, store) if store is not None else None
    return Connect4Service(Connect4Settings(**settings), Limits(), clock, rng=random.Random(3), players=players,
                           grace=grace, hub=hub)


def greeted(service, *lines, host="192.0.2.1"):
    c = Client(service, host=host)
    c.read()
    if lines:
        c.send(*lines)
    return c


def login_pair(service, accounts, **kw):
    """alice (an account, player 0) and bob (an account, player 1) at table t, first moves 3, 4."""
    tokens = {name: accounts.add(name) for name in ("alice", "bob")}
    alice = greeted(service, f"LOGIN alice {tokens['alice']}", "TABLE t")
    bob = greeted(service, f"LOGIN bob {tokens['bob']}", "TABLE t", host="192.0.2.2")
    alice.send("3")
    bob.send("4")
    alice.read(), bob.read()
    return alice, bob, tokens


def test_the_game_and_the_connection_provide_the_seat_interfaces():
    service = make()
    a, b = greeted(service, "TABLE"), greeted(service, "TABLE")
    (game,) = service.games.values()
    assert verifyObject(ISeatGame, game)
    assert verifyObject(ISeatHolder, a.player) and a.player.seat is game.seats[0]
    assert [s.identity.name for s in game.seats.values()] == ["guest1", "guest2"]
    assert all(s.identity.guest and s.resume_token for s in game.seats.values())


def test_login_play_drop_come_back_with_the_token_and_finish():
    accounts = MemoryAccounts()
    store = MemoryStore()
    service = make(accounts, store=store)
    alice, bob, tokens = login_pair(service, accounts)
    alice.drop()
    assert bob.read() == ["AWAY 0 alice 60"]
    service.clock.advance(15)
    again = greeted(service, f"LOGIN alice {tokens['alice']}")
    assert again.read() == [
        "OK LOGIN alice",
        "OK RESUME 1 0",
        "START 1 0 7x6 bob",
        "BOARD 7x6 ...01.. ....... ....... ....... ....... .......",
        "STRIKES 0 0 3",
        "TURN 0 alice",
        "YOURMOVE 45 0 1 2 3 4 5 6",  # her clock ran while she was away
    ]
    assert bob.read() == ["BACK 0 alice"]
    for player, column in ((again, 3), (bob, 4), (again, 3), (bob, 4), (again, 3)):
        player.send(str(column))
    assert "RESULT WIN FOUR 0 3 0 3 3" in again.read() and again.lost
    assert "RESULT LOSE FOUR 0 3 0 3 3" in bob.read()
    (record,) = store.records
    assert record.reason == "four" and record.rated and record.scores == (1.0, 0.0)
    assert [(s.name, s.kind, s.rated) for s in record.seats] == [("alice", "player", True), ("bob", "player", True)]


def test_the_same_name_without_or_with_a_wrong_token_never_gets_the_seat():
    accounts = MemoryAccounts()
    service = make(accounts)
    alice, bob, tokens = login_pair(service, accounts)
    alice.drop()
    bob.read()
    checked = accounts.checked
    impostor = greeted(service, "NAME alice", "LOGIN alice " + "x" * 32, "LOGIN alice short", "RESUME " + "y" * 24,
                       host="198.51.100.7")
    assert impostor.read() == [
        "ERROR 424 that name is registered: send LOGIN <name> <token> to use it (alice)",
        "ERROR 420 unknown account or wrong token",
        "ERROR 420 unknown account or wrong token",
        "ERROR 427 unknown resume token",
    ]
    assert bob.read() == [] and service.games[1].seats[0].away
    assert accounts.checked - checked == 2  # the two LOGINs (a malformed token is checked as no token)


def test_a_guest_comes_back_with_its_resume_token_and_nobody_takes_its_name():
    service = make()
    alice = greeted(service, "NAME alice", "TABLE")
    bob = greeted(service, "NAME bob", "TABLE")
    alice.read()
    bob.read()
    bob.send("TOKEN")
    (line,) = bob.read()
    assert line.startswith("TOKEN ")
    token = line.split()[1]
    alice.send("2")
    bob.drop()
    assert alice.read()[-1] == "AWAY 1 bob 60"
    other = greeted(service, "NAME bob", host="198.51.100.7")
    assert other.read() == ["ERROR 432 another player here uses that name just now (bob)"]
    back = greeted(service, f"RESUME {token}")
    assert back.read() == [
        "OK RESUME 1 1",
        "START 1 1 7x6 alice",
        "BOARD 7x6 ..0.... ....... ....... ....... ....... .......",
        "STRIKES 0 0 3",
        "TURN 1 bob",
        "YOURMOVE 60 0 1 2 3 4 5 6",
    ]
    assert alice.read() == ["BACK 1 bob"]
    back.send("2")
    assert alice.read()[0] == "PLAYED 1 2 1"


def test_a_resume_token_taken_back_on_a_new_connection_closes_the_old_one():
    service = make()
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    alice.send("TOKEN")
    token = alice.read()[-1].split()[1]
    bob.read()
    fresh = greeted(service, f"RESUME {token}")  # the old connection is half-dead, not gone yet
    assert alice.read() == ["BYE your seat was taken back on another connection"] and alice.lost
    assert fresh.read()[:2] == ["OK RESUME 1 0", "START 1 0 7x6 bob"]
    assert bob.read() == ["BACK 0 alice"]
    fresh.send("3")
    assert bob.read()[0] == "PLAYED 0 3 0"


def test_a_seat_not_back_in_time_forfeits_a_rated_loss():
    accounts = MemoryAccounts()
    store = MemoryStore()
    service = make(accounts, grace=30, store=store, move_time=0)
    alice, bob, _ = login_pair(service, accounts)
    bob.drop()
    assert alice.read() == ["AWAY 1 bob 30"]
    alice.send("5")
    alice.read()
    service.clock.advance(30)
    assert alice.read() == ["RESULT WIN FORFEIT 0 -1 -1 -1 -1", "BYE thanks for playing"]
    (record,) = store.records
    assert (record.reason, record.rated, record.scores) == ("forfeit", True, (1.0, 0.0))
    assert [s.rated for s in record.seats] == [True, True] and not service.games


def test_a_person_is_told_a_forfeit_in_words():
    service = make(grace=30, board=True)
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    alice.send("3")
    bob.send("4")
    alice.read()
    bob.drop()
    service.clock.advance(30)
    assert alice.read()[-3:] == [
        "RESULT WIN FORFEIT 0 -1 -1 -1 -1",
        "INFO bob (player 1) did not come back within 30 s: you win",
        "BYE thanks for playing",
    ]


def test_a_timeout_while_away_is_a_timeout_loss():
    service = make(grace=120, move_time=20)
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    alice.send("TOKEN")
    token = alice.read()[-1].split()[1]
    alice.drop()
    service.clock.advance(20)
    assert bob.read()[-2:] == ["RESULT WIN TIMEOUT 1 -1 -1 -1 -1", "BYE thanks for playing"]
    late = greeted(service, f"RESUME {token}")
    assert late.read() == ["ERROR 428 the game of that resume token is over"]


def test_a_person_away_from_an_engine_game_comes_back():
    service = make(grace=30)
    carol = greeted(service, "NAME carol", "PLAY gamed:1 FIRST 5x4")
    carol.send("TOKEN")
    token = carol.read()[-1].split()[1]
    carol.send("0")
    service.clock.advance(0)
    carol.drop()  # the engine has answered: her move, her clock runs
    service.clock.advance(10)
    back = greeted(service, f"RESUME {token}")
    lines = back.read()
    assert lines[:2] == ["OK RESUME 1 0", "START 1 0 5x4 gamed:1"]
    assert lines[-2:] == ["TURN 0 carol", "YOURMOVE 50 0 1 2 3 4"]
    back.send("RESIGN")
    assert back.read()[0] == "RESULT LOSE RESIGN 1 -1 -1 -1 -1"
    assert not service.games and not service.engine_seats


def test_login_and_resume_after_seating_are_refused():
    accounts = MemoryAccounts()
    service = make(accounts)
    alice, bob, tokens = login_pair(service, accounts)
    bob.send("TOKEN")
    token = bob.read()[0].split()[1]
    alice.send(f"LOGIN alice {tokens['alice']}", f"RESUME {token}")
    assert alice.read() == [
        "ERROR 426 you are logged in already (alice)",
        "ERROR 425 log in or resume before you are seated, not during a game",
    ]
    guest = greeted(service, "NAME gus", "TABLE")
    greeted(service, "TABLE")
    guest.read()
    guest.send(f"LOGIN alice {tokens['alice']}")
    assert guest.read() == ["ERROR 425 log in or resume before you are seated, not during a game"]
    lobby = greeted(service, "TOKEN", "RESUME")
    assert lobby.read() == ["ERROR 430 you have no seat in a game", "ERROR 401 usage: RESUME <token>"]


def test_a_resume_token_of_a_finished_game_is_refused():
    service = make()
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    alice.send("TOKEN")
    token = alice.read()[-1].split()[1]
    alice.send("RESIGN")
    assert bob.read()[-2] == "RESULT WIN RESIGN 1 -1 -1 -1 -1"
    late = greeted(service, f"RESUME {token}")
    assert late.read() == ["ERROR 428 the game of that resume token is over"]


def test_revoked_and_rotated_tokens_stop_working_at_once():
    accounts = MemoryAccounts()
    service = make(accounts)
    old = accounts.add("alice")
    accounts.add("bob")
    accounts.revoke("bob")
    c = greeted(service, "LOGIN bob " + "z" * 24)
    assert c.read() == ["ERROR 421 this account's token has been revoked"]
    new = accounts.rotate("alice")
    c.send(f"LOGIN alice {old}")
    assert c.read() == ["ERROR 420 unknown account or wrong token"]
    c.send(f"LOGIN alice {new}")
    assert c.read() == ["OK LOGIN alice"]


def test_guests_off_admit_accounts_only():
    accounts = MemoryAccounts()
    token = accounts.add("alice")
    service = make(accounts, guests=False)
    c = greeted(service, "NAME bob", "TABLE", "PLAY gamed", "MATCH gamed gamed", "ENGINES")
    lines = c.read()
    text = "ERROR 423 this server admits registered players only: send LOGIN <name> <token> first"
    assert lines[:4] == [text] * 4 and lines[4].startswith("ENGINE gamed")
    assert not service.games and not service.lobby.waiting()
    c.send(f"LOGIN alice {token}", "PLAY gamed:0")
    assert c.read()[:2] == ["OK LOGIN alice", "START 1 0 7x6 gamed:0"]


def test_a_login_without_accounts_is_refused():
    c = greeted(make(), "LOGIN alice " + "t" * 24)
    assert c.read() == ["ERROR 431 this server has no accounts (no records database)"]


def test_two_guests_called_bob_are_never_paired():
    service = make()
    first = greeted(service, "NAME bob", "TABLE")
    second = greeted(service, "NAME bob", "NAME BOB", host="198.51.100.7")
    assert second.read() == ["ERROR 432 another player here uses that name just now (bob)",
                             "ERROR 432 another player here uses that name just now (BOB)"]
    greeted(service)  # guest3
    second.send("NAME guest3")  # the default name of a connection that is here
    assert second.read() == ["ERROR 432 another player here uses that name just now (guest3)"]
    first.read()
    first.send("NAME bob")  # one's own name again is fine
    assert first.read() == ["OK NAME bob"]


def test_two_connections_of_one_account_are_never_paired():
    accounts = MemoryAccounts()
    token = accounts.add("alice")
    service = make(accounts)
    one = greeted(service, f"LOGIN alice {token}", "TABLE")
    two = greeted(service, f"LOGIN alice {token}", "TABLE")
    assert not service.games
    carl = greeted(service, "TABLE")
    assert one.read()[-1] == "YOURMOVE 60 0 1 2 3 4 5 6" and "START 1 1 7x6 alice" in carl.read()
    assert two.read() == ["OK LOGIN alice", "OK TABLE - 7x6", "WAIT waiting for an opponent"]


def test_lines_wait_while_a_login_is_checked():
    accounts = MemoryAccounts()
    token = accounts.add("alice")
    accounts.pending = True  # a slow database
    service = make(accounts)
    c = greeted(service, f"LOGIN alice {token}", "PING", "TABLE")
    assert c.read() == []
    accounts.release()
    assert c.read() == ["OK LOGIN alice", "PONG", "OK TABLE - 7x6", "WAIT waiting for an opponent"]


def test_a_token_on_a_line_of_its_own_is_an_unknown_command_and_logs_nothing():
    from twisted.logger import capturedLogs

    accounts = MemoryAccounts()
    token = accounts.add("alice")
    service = make(accounts)
    with capturedLogs() as events:
        c = greeted(service, token, f"MOVE {token}", f"LOGIN alice {token}")
        lines = c.read()
    assert lines[0].startswith("ERROR 400 unknown command")
    assert lines[1:] == ["ERROR 404 " + "you are not in a game; start one with PLAY <engine> (ENGINES lists them)"
                         " or TABLE (another person)", "OK LOGIN alice"]
    assert not any(token in repr(event) for event in events)


def test_a_thousand_wrong_tokens_from_one_address_are_refused_without_slowing_a_game():
    accounts = MemoryAccounts()
    service = make(accounts)
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE", host="192.0.2.9")
    alice.read(), bob.read()
    flood = greeted(service, host="203.0.113.5")
    flood.send(*[f"LOGIN alice {'w' * 20}{n:04d}" for n in range(1000)])
    alice.send("3")
    assert alice.read()[0] == "PLAYED 0 3 0", "the game goes on while the flood waits its turn"
    next_turns(service.clock)
    lines = flood.read()
    assert len(lines) == 1000
    assert lines[:5] == ["ERROR 420 unknown account or wrong token"] * 5
    assert all(line.startswith("ERROR 422 too many failed logins from your address (try again in ") for line in lines[5:])
    assert accounts.checked == 5
    bob.send("4")
    assert alice.read()[0] == "PLAYED 1 4 0"
    ok = greeted(service, f"LOGIN bob {accounts.add('bob')}", host="192.0.2.10")
    assert ok.read() == ["OK LOGIN bob"], "another address is not affected"


def test_a_name_is_free_again_once_its_seat_is_no_longer_away():
    for grace in (0, 30):
        service = make(grace=grace)
        alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
        alice.send("3")
        bob.drop()
        service.clock.advance(grace)
        assert alice.read()[-2] == "RESULT WIN FORFEIT 0 -1 -1 -1 -1" and alice.lost and not service.games
        again = greeted(service, "NAME bob", "NAME alice")
        assert again.read() == ["OK NAME bob", "OK NAME alice"]


def test_the_first_of_two_away_players_back_is_told_the_other_is_away():
    service = make(grace=60)
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    tokens = []
    for c in (alice, bob):
        c.send("TOKEN")
        tokens.append(c.read()[-1].split()[1])
    alice.drop()
    service.clock.advance(5)
    bob.drop()
    service.clock.advance(5)
    back = greeted(service, f"RESUME {tokens[1]}")
    assert back.read()[-3:] == ["STRIKES 0 0 3", "AWAY 0 alice 50", "TURN 0 alice"]
    service.clock.advance(50)
    assert back.read() == ["RESULT WIN TIMEOUT 1 -1 -1 -1 -1", "BYE thanks for playing"]


def test_a_shutdown_while_a_seat_is_away_aborts_and_is_stored_so():
    store = MemoryStore()
    service = make(store=store)
    alice, bob = greeted(service, "NAME alice", "TABLE"), greeted(service, "NAME bob", "TABLE")
    alice.send("3")
    bob.read()
    bob.drop()
    service.abort_games()
    assert alice.read()[-2:] == ["ABORT SHUTDOWN the server is shutting down", "BYE thanks for playing"]
    (record,) = store.records
    assert (record.reason, record.rated) == ("shutdown", False)


def test_help_accounts_lists_the_login_commands():
    c = greeted(make(), "HELP ACCOUNTS")
    commands = [line.split()[1] for line in c.read()[:-1]]
    assert commands == ["LOGIN", "RESUME", "TOKEN", "LADDER"]


def test_logging_in_while_waiting_at_a_table_takes_the_away_seat_back():
    accounts = MemoryAccounts()
    service = make(accounts)
    alice, bob, tokens = login_pair(service, accounts)
    alice.drop()
    bob.read()
    again = greeted(service, "TABLE t", f"LOGIN alice {tokens['alice']}")
    lines = again.read()
    assert lines[:4] == ["OK TABLE t 7x6", "WAIT waiting for an opponent at table t", "OK LOGIN alice", "OK RESUME 1 0"]
    assert not service.lobby.waiting() and bob.read() == ["BACK 0 alice"]
    greeted(service, "TABLE t")
    assert len(service.games) == 1, "nobody waits at the table any more"
