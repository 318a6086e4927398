"""The seat model: seats away and back, the grace period, who may take a seat back, forfeits."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock
from zope.interface import implementer
from zope.interface.verify import verifyObject

from gamed.identity import Identity, LoginError, Refusal
from gamed.seats import ISeatGame, Presence, SeatBook


@implementer(ISeatGame)
class Game:
    """Notes what the seat model tells it, as a game would tell its players."""

    def __init__(self, id=1):
        self.id = id
        self.events = []

    def seat_away(self, seat):
        self.events.append(("away", seat.number))

    def seat_back(self, seat):
        self.events.append(("back", seat.number, seat.holder))

    def seat_forfeited(self, seat):
        self.events.append(("forfeit", seat.number))


class Conn:
    def __init__(self, name):
        self.name = name
        self.replaced = []

    def seat_replaced(self, seat):
        self.replaced.append(seat)


ALICE = Identity("alice", "person", 7)
BOB = Identity("bob")  # a guest


def book(grace=60.0):
    clock = Clock()
    return clock, SeatBook(clock, grace)


def test_a_game_provides_what_the_seat_model_calls():
    assert verifyObject(ISeatGame, Game())


def test_a_dropped_seat_is_away_for_the_grace_then_forfeits():
    clock, seats = book(60)
    game = Game()
    a, b = Conn("a"), Conn("b")
    sa = seats.seat(game, 0, ALICE, a, "10.0.0.1")
    seats.seat(game, 1, BOB, b, "10.0.0.2")
    seats.drop(sa, a)
    assert sa.presence is Presence.AWAY and sa.holder is None
    assert game.events == [("away", 0)]
    clock.advance(59)
    assert seats.grace_left(sa) == pytest.approx(1)
    assert game.events == [("away", 0)]
    clock.advance(1)
    assert game.events == [("away", 0), ("forfeit", 0)]
    assert sa.presence is Presence.GONE


def test_no_grace_forfeits_at_once_without_saying_away():
    clock, seats = book(0)
    game = Game()
    a = Conn("a")
    sa = seats.seat(game, 0, ALICE, a)
    seats.drop(sa, a)
    assert game.events == [("forfeit", 0)]


def test_the_same_account_takes_its_away_seat_back_and_the_grace_stops():
    clock, seats = book(60)
    game = Game()
    a = Conn("a")
    sa = seats.seat(game, 0, ALICE, a)
    seats.drop(sa, a)
    assert seats.find_account(Identity("alice", "person", 8), away_only=True) is None  # another account
    assert seats.find_account(Identity("alice", "person", 7), away_only=True) is sa
    again = Conn("a2")
    assert seats.resume(sa, again, "10.0.0.9") is None
    assert sa.holder is again and sa.connected and sa.host == "10.0.0.9"
    assert game.events[-1] == ("back", 0, again)
    clock.advance(120)
    assert ("forfeit", 0) not in game.events


def test_a_guest_comes_back_with_its_resume_token_only():
    clock, seats = book(60)
    game = Game()
    b = Conn("b")
    sb = seats.seat(game, 1, BOB, b)
    assert sb.resume_token and len(sb.resume_token) >= 24
    seats.drop(sb, b)
    assert seats.find_account(BOB, away_only=True) is None  # a guest has no account to log in with
    with pytest.raises(LoginError) as e:
        seats.find_token("x" * 24)
    assert e.value.refusal is Refusal.UNKNOWN_RESUME
    assert seats.find_token(sb.resume_token) is sb


def test_a_resume_token_of_a_finished_game_is_told_so():
    clock, seats = book(60)
    game = Game()
    b = Conn("b")
    sb = seats.seat(game, 1, BOB, b)
    seats.finish(game)
    with pytest.raises(LoginError) as e:
        seats.find_token(sb.resume_token)
    assert e.value.refusal is Refusal.FINISHED
    seats.drop(sb, b)  # the connection of a finished game going away changes nothing
    assert game.events == []


def test_resuming_a_connected_seat_replaces_the_old_connection():
    clock, seats = book(60)
    game = Game()
    old, new = Conn("old"), Conn("new")
    sb = seats.seat(game, 1, BOB, old)
    assert seats.resume(sb, new) is old
    assert old.replaced == [sb]
    seats.drop(sb, old)  # the replaced connection closing does not make the seat away
    assert sb.connected and sb.holder is new


def test_a_seat_is_retaken_from_its_address_only():
    clock, seats = book(60)
    game = Game()
    a = Conn("a")
    sa = seats.seat(game, 0, BOB, a, "127.0.0.1")
    seats.drop(sa, a)
    assert seats.find_host("127.0.0.2") is None
    assert seats.find_host("127.0.0.1") is sa


def test_a_program_seat_has_no_token_and_the_memory_of_finished_tokens_is_bounded():
    clock = Clock()
    seats = SeatBook(clock, 60, finished_memory=3)
    assert seats.seat(Game(), 0, Identity("gamed:2", "program")).resume_token is None
    tokens = []
    for n in range(5):
        game = Game(n)
        tokens.append(seats.seat(game, 0, BOB, Conn("b")).resume_token)
        seats.finish(game)
    refusals = []
    for token in tokens:
        with pytest.raises(LoginError) as e:
            seats.find_token(token)
        refusals.append(e.value.refusal)
    assert refusals == [Refusal.UNKNOWN_RESUME] * 2 + [Refusal.FINISHED] * 3


def test_labels_name_the_seat_and_the_player():
    clock, seats = book()
    assert seats.seat(Game(), 1, BOB, Conn("b")).label() == "seat 1 (bob)"
    assert BOB.shown() == "bob (guest)" and ALICE.shown() == "alice"
    assert not BOB.rated and ALICE.rated and Identity("gamed:2", "program").rated
    assert (ALICE.record_kind, BOB.record_kind, Identity("b", "bot", 3).record_kind) == ("player", "guest", "bot")


def test_names_in_use_ignore_case_and_an_away_seat_keeps_its_name_until_back_or_gone():
    clock, seats = book(60)
    names = seats.names
    a, b, c = Conn("a"), Conn("b"), Conn("c")
    names.changed(a, "Bob")
    assert names.in_use("bob", c) and names.in_use("BOB") and not names.in_use("bob", a)
    names.changed(a, "robert")  # the old name is free again
    assert not names.in_use("bob", c) and names.in_use("Robert", c)
    game = Game()
    seat = seats.seat(game, 0, Identity("carol"), b)
    names.changed(b, "carol")
    seats.drop(seat, b)
    names.released(b)  # the connection is gone, its away seat still goes by carol
    assert names.in_use("Carol", c)
    seats.resume(seat, c)
    assert not names.in_use("carol", c), "back at its seat: its player's connection names it"
    seats.drop(seat, c)
    assert names.in_use("carol")
    seats.finish(game)
    assert not names.in_use("carol") and len(names) == 1  # only a's "robert" is left
