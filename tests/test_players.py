"""Logging in with a token, guests' names, and the limit on failed logins per address."""

from __future__ import annotations

from twisted.internet.task import Clock

from gamed.config import PlayersConfig
from gamed.identity import Identity, LoginError, LoginLimit, Refusal, looks_like_token
from gamed.players import Players
from gamed.seats import Placement
from tests.memaccounts import MemoryAccounts


def make(**settings):
    clock = Clock()
    accounts = MemoryAccounts()
    return clock, accounts, Players(PlayersConfig(**settings), accounts, clock)


def refusal(d):
    failures = []
    d.addErrback(lambda f: failures.append(f.trap(LoginError) and f.value))
    assert failures, "the login was not refused"
    return failures[0].refusal


def identity(d):
    results = []
    d.addCallback(results.append)
    assert results, "no answer"
    return results[0]


def test_the_right_token_logs_in_as_the_account():
    clock, accounts, players = make()
    token = accounts.add("alice", "bot")
    who = identity(players.login("alice", token, "10.0.0.1"))
    assert (who.name, who.kind, who.account_id, who.rated, who.guest) == ("alice", "bot", 1, True, False)


def test_unknown_account_and_wrong_token_get_the_same_answer_and_revoked_its_own():
    clock, accounts, players = make()
    token = accounts.add("alice")
    assert refusal(players.login("alice", token[::-1], "h")) is Refusal.UNKNOWN_OR_WRONG
    assert refusal(players.login("nobody", token, "h2")) is Refusal.UNKNOWN_OR_WRONG
    accounts.revoke("alice")
    assert refusal(players.login("alice", token, "h3")) is Refusal.REVOKED


def test_a_rotated_token_stops_working_at_once():
    clock, accounts, players = make()
    old = accounts.add("alice")
    new = accounts.rotate("alice")
    assert refusal(players.login("alice", old, "h")) is Refusal.UNKNOWN_OR_WRONG
    assert identity(players.login("alice", new, "h")).name == "alice"


def test_without_a_records_database_there_are_no_accounts():
    players = Players(PlayersConfig(), None, Clock())
    assert refusal(players.login("alice", "x" * 32, "h")) is Refusal.NO_ACCOUNTS
    assert identity(players.guest("alice")).guest


def test_a_guest_may_not_use_a_registered_name_and_none_may_play_without_guests():
    clock, accounts, players = make()
    accounts.add("alice")
    assert refusal(players.guest("alice")) is Refusal.NAME_REGISTERED
    assert identity(players.guest("bob")).guest
    clock, accounts, closed = make(guests=False)
    assert refusal(closed.guest("bob")) is Refusal.GUESTS_OFF


def test_a_thousand_wrong_tokens_from_one_address_check_only_the_first_few():
    clock, accounts, players = make(login_failures=5, login_window=60)
    token = accounts.add("alice")
    answers = [refusal(players.login("alice", "w" * 32, "10.0.0.66")) for _ in range(1000)]
    assert answers[:5] == [Refusal.UNKNOWN_OR_WRONG] * 5
    assert set(answers[5:]) == {Refusal.TOO_MANY}
    assert accounts.checked == 5
    # Another address is not held up, and the right token from the flooding one waits too.
    assert identity(players.login("alice", token, "10.0.0.7")).name == "alice"
    assert refusal(players.login("alice", token, "10.0.0.66")) is Refusal.TOO_MANY
    clock.advance(60)
    assert identity(players.login("alice", token, "10.0.0.66")).name == "alice"


def test_logins_still_being_checked_count_against_the_address():
    clock, accounts, players = make(login_failures=3)
    accounts.pending = True
    token = accounts.add("alice")
    waiting = [players.login("alice", token, "h") for _ in range(3)]
    assert refusal(players.login("alice", token, "h")) is Refusal.TOO_MANY
    accounts.pending = False
    accounts.release()
    assert all(identity(d).name == "alice" for d in waiting)
    assert identity(players.login("alice", token, "h")).name == "alice"  # successes do not count


def test_the_wait_is_said_in_seconds():
    limit = LoginLimit(2, 60)
    limit.begin("h")
    limit.end("h", 100.0, failed=True)
    limit.begin("h")
    limit.end("h", 110.0, failed=True)
    assert limit.wait("h", 120.0) == 40.0
    assert limit.wait("other", 120.0) == 0.0
    assert limit.wait("h", 160.0) == 0.0  # the first failure has aged out


def test_the_limit_remembers_a_bounded_number_of_addresses():
    limit = LoginLimit(1, 60, max_hosts=100)
    for n in range(1000):
        limit.begin(f"h{n}")
        limit.end(f"h{n}", 1.0, failed=True)
    assert len(limit._failed) == 100
    assert limit.wait("h999", 2.0) > 0 and limit.wait("h0", 2.0) == 0


# --- host tokens: hosted bots that connect themselves (docs/hosting.md) -----------------------


def test_a_host_token_logs_its_bot_in_once_and_places_it_at_its_table():
    clock, accounts, players = make()
    bot = Identity("greedy", "bot")
    token = players.host_token(bot, "hosted1")
    assert looks_like_token(token) and token != players.host_token(bot, "hosted1")
    placed = []
    who = identity(players.login("greedy", token, "127.0.0.1", place=placed.append))
    assert who == bot and who.rated and not who.account
    assert placed == [Placement(bot, "hosted1")]
    # One-time: the second use is refused like any wrong token (and counts as a failure).
    assert refusal(players.login("greedy", token, "127.0.0.1", place=placed.append)) is Refusal.UNKNOWN_OR_WRONG
    assert len(placed) == 1


def test_a_host_token_is_only_its_bots_and_only_until_dropped():
    clock, accounts, players = make()
    token = players.host_token(Identity("greedy", "bot"), "hosted1")
    assert refusal(players.login("other", token, "h", place=lambda p: None)) is Refusal.UNKNOWN_OR_WRONG
    players.drop_host_token(token)
    assert refusal(players.login("greedy", token, "h", place=lambda p: None)) is Refusal.UNKNOWN_OR_WRONG
    players.drop_host_token(token)  # twice is fine


def test_a_host_token_needs_a_game_connection_and_works_without_accounts():
    clock, accounts, players = make()
    token = players.host_token(Identity("greedy", "bot"), "t")
    # The web site's login (no place) does not take host tokens.
    assert refusal(players.login("greedy", token, "h")) is Refusal.UNKNOWN_OR_WRONG
    bare = Players(PlayersConfig(), None, Clock())
    token = bare.host_token(Identity("greedy", "bot"), "t")
    assert identity(bare.login("greedy", token, "h", place=lambda p: None)).name == "greedy"
    assert refusal(bare.login("greedy", token, "h", place=lambda p: None)) is Refusal.NO_ACCOUNTS
