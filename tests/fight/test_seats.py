"""Virtual Fight teams as seats of the shared seat model: logging in with an account's token,
guests and their names, a dropped AI's seat kept for the grace period (AWAY/BACK, its state on
return), the forfeit when the grace runs out (recorded and rated), and every refusal of the
issue's bad-input list, in memory (StringTransport, Clock, MemoryAccounts)."""

from __future__ import annotations

from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from gamed.config import FightConfig, Limits, PlayersConfig
from gamed.fight.game import IFightTeam
from gamed.fight.service import FightService
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.seats import ISeatGame, ISeatHolder
from gamed.fight.rules import Dir
from tests.fight.harness import Client, arena, place
from tests.memaccounts import MemoryAccounts
from tests.memstore import MemoryStore

PASS = [f"{n}&NONE" for n in range(5)]


class Arena:
    """A FightService on a Clock with the accounts alice, bob (a bot) and carol, a live hub with
    a memory store, and AIs connecting from chosen addresses. The pair delay is the default
    half second: an AI's first lines (LOGIN, RESUME) come before it joins the queue (``pair``)."""

    def __init__(self, grace: float = 30, guests: bool = True, teams: int = 2, **settings):
        self.clock = Clock()
        self.accounts = MemoryAccounts()
        self.tokens = {
            "alice": self.accounts.add("alice"),
            "bob": self.accounts.add("bob", kind="bot"),
            "carol": self.accounts.add("carol"),
        }
        self.players = Players(PlayersConfig(guests=guests), self.accounts, self.clock)
        self.store = MemoryStore()
        self.hub = LiveHub(self.clock, self.store)
        settings.setdefault("pair_delay", 0.5)
        settings.setdefault("gui_interval", 0)
        settings.setdefault("turn_time", 5)
        fmap = arena() if teams == 2 else None
        if fmap is None:
            settings["map"] = "four"
        config = FightConfig(teams=teams, grace=grace, **settings)
        self.service = FightService(config, Limits(), self.clock, fmap, hub=self.hub, players=self.players)

    def ai(self, *lines: str, host: str = "192.0.2.1") -> Client:
        client = Client(self.service, host=host, factory=self.service.ai_port_factory())
        if lines:
            client.send(*lines)
        return client

    def login(self, name: str, host: str = "192.0.2.1") -> Client:
        return self.ai(f"LOGIN&{name}&{self.tokens[name]}", host=host)

    def pair(self) -> None:
        """The pair delay passes: the AIs connected so far join the queue."""
        self.clock.advance(0.5)


def logged_in_game(**settings):
    """alice (team 0) and bob (team 1) logged in and playing turn 1; both read up to READY."""
    world = Arena(**settings)
    alice = world.login("alice")
    bob = world.login("bob", host="192.0.2.2")
    world.pair()
    assert alice.read() == ["OK", "255", "READY"] and bob.read() == ["OK", "255", "READY"]
    return world, alice, bob


# --- logging in, playing, dropping, coming back ----------------------------------------------


def test_login_play_drop_come_back_with_the_token_get_the_state_and_finish():
    world, alice, bob = logged_in_game(max_turns=3)
    game = world.service.games[1]
    assert game.names == ["alice", "bob"]
    alice.send("0&MOVE&DOWN", "1&SHOOT")
    assert alice.read() == ["255", "255"]
    alice.drop()  # mid-turn: the seat is away, its clock runs on
    assert bob.read() == ["AWAY&0&alice&30"], "bob used LOGIN: he is told"
    world.clock.advance(2)

    back = world.login("alice", host="192.0.2.9")  # another address: the token is what counts
    assert back.read() == [
        "OK",
        "255",
        "STATE&1&0&alice&3&0",
        "W&0&1&0&DOWN&ALIVE&ACTED",
        "W&1&0&1&DOWN&ALIVE&ACTED",
        "W&2&0&2&DOWN&ALIVE&FREE",
        "W&3&0&3&DOWN&ALIVE&FREE",
        "W&4&0&4&DOWN&ALIVE&FREE",
        "ENDSTATE",
        "READY",
    ]
    assert bob.read() == ["BACK&0&alice"]
    back.send(*PASS[2:])
    bob.send(*PASS)
    assert back.read() == ["255"] * 3 + ["200", "1&HIT&NOTHING", "READY"]
    assert bob.read() == ["255"] * 5 + ["200", "READY"]
    for _ in range(2):
        back.send(*PASS)
        bob.send(*PASS)
    assert back.read()[-1] == "GAMEOVER&DRAW" and bob.read()[-1] == "GAMEOVER&DRAW"
    (record,) = world.store.records
    assert (record.reason, record.scores, record.rated) == ("turn limit", (0.5, 0.5), True)
    assert [(s.name, s.kind, s.rated) for s in record.seats] == [("alice", "player", True), ("bob", "bot", True)]


def test_an_ai_that_never_used_a_login_command_is_not_told_away_or_back():
    world = Arena()
    guest = world.ai("NAME&dave")
    alice = world.login("alice", host="192.0.2.2")
    world.pair()
    assert guest.read() == ["OK", "255", "READY"] and alice.read() == ["OK", "255", "READY"]
    alice.drop()
    assert guest.read() == [], "an original AI gets no line it does not know"
    world.login("alice").read()
    assert guest.read() == []
    guest.send(*PASS)
    assert guest.read() == ["255"] * 5, "alice's turn is open again: the turn waits for her"


def test_the_state_of_a_seat_whose_turn_is_done_has_no_ready():
    world, alice, bob = logged_in_game()
    alice.send(*PASS)
    alice.read()
    alice.drop()
    back = world.login("alice")
    assert back.read()[-2:] == ["W&4&0&4&DOWN&ALIVE&FREE", "ENDSTATE"], "it waits for the 200 block"
    bob.read()
    bob.send(*PASS)
    assert back.read() == ["200", "READY"]


def test_a_guest_takes_its_seat_back_with_its_resume_token():
    world = Arena()
    dave = world.ai("NAME&dave")
    erin = world.ai("NAME&erin")
    world.pair()
    assert dave.read() == ["OK", "255", "READY"] and erin.read() == ["OK", "255", "READY"]
    dave.send("TOKEN")
    (line,) = dave.read()
    assert line.startswith("TOKEN&")
    resume = line.split("&", 1)[1]
    dave.drop()
    assert erin.read() == [], "erin used no login command"
    world.clock.advance(5)  # turn 1 timed out while dave was away; turn 2 is open
    world.clock.advance(2)
    assert erin.read() == ["200", "READY"]
    again = world.ai(f"RESUME&{resume}", host="203.0.113.5")
    lines = again.read()
    assert lines[:3] == ["OK", "255", "STATE&2&0&dave&3&0"], "3 s left, no strike while it was away"
    assert lines[-2:] == ["ENDSTATE", "READY"]
    again.send(*PASS)
    assert again.read() == ["255"] * 5


def test_a_guest_without_its_token_cannot_take_the_seat_by_its_name():
    world = Arena()
    dave, erin = world.ai("NAME&dave"), world.ai("NAME&erin")
    world.pair()
    dave.read(), erin.read()
    dave.drop()
    imposter = world.ai("NAME&dave", host="192.0.2.1")
    assert imposter.read() == ["OK", "432&another player here uses that name just now (dave)"]
    assert world.service.games[1].away == {0} and imposter.player.game is None


def test_two_guests_are_never_both_dan_but_a_name_is_free_once_its_ai_is_gone():
    world = Arena()
    first = world.ai("NAME&danny", "NAME&dan")
    second = world.ai("NAME&dan", "NAME&danny", host="192.0.2.2")
    assert first.read() == ["OK", "255", "255"]
    assert second.read() == ["OK", "432&another player here uses that name just now (dan)", "255"], "danny was freed"
    first.drop()  # while it waits: its name is free at once
    second.send("NAME&dan")
    assert second.read() == ["255"]


# --- refusals --------------------------------------------------------------------------------


def test_a_registered_name_without_its_token_is_refused_and_never_gets_the_seat():
    world, alice, bob = logged_in_game()
    alice.drop()
    bob.read()
    plain = world.ai("NAME&alice")
    wrong = world.ai("LOGIN&alice&" + "x" * 32, host="192.0.2.3")
    junk = world.ai("LOGIN&alice&short", host="192.0.2.4")
    assert plain.read() == ["OK", "424&that name is registered: send LOGIN <name> <token> to use it (alice)"]
    assert wrong.read() == ["OK", "420&unknown account or wrong token"]
    assert junk.read() == ["OK", "420&unknown account or wrong token"]
    game = world.service.games[1]
    assert game.away == {0} and all(c.player.game is None for c in (plain, wrong, junk))
    assert bob.read() == []


def test_unknown_revoked_and_rotated_tokens_stop_working_at_once():
    world = Arena()
    nobody = world.ai("LOGIN&zed&" + "z" * 24)
    world.accounts.revoke("carol")
    revoked = world.ai(f"LOGIN&carol&{world.tokens['carol']}", host="192.0.2.2")
    old = world.tokens["alice"]
    world.accounts.rotate("alice")
    rotated = world.ai(f"LOGIN&alice&{old}", host="192.0.2.3")
    assert nobody.read() == ["OK", "420&unknown account or wrong token"]
    assert revoked.read() == ["OK", "421&this account's token has been revoked"]
    assert rotated.read() == ["OK", "420&unknown account or wrong token"]
    assert not world.service.games, "refused logins play as guests at most: nobody was seated yet"


def test_login_after_seating_and_other_misuse_get_their_documented_replies():
    world, alice, bob = logged_in_game()
    alice.send(f"LOGIN&carol&{world.tokens['carol']}", "RESUME&" + "r" * 24, "LOGIN&x")
    assert alice.read() == ["425&log in or resume before you are seated, not during a game"] * 3
    lone = world.ai("TOKEN", "RESUME&" + "q" * 24, "LOGIN&only-a-name", "RESUME&a&b", host="192.0.2.7")
    assert lone.read() == [
        "OK",
        "430&you have no seat in a game",
        "427&unknown resume token",
        "100",
        "100",
    ]
    lone.send(f"LOGIN&carol&{world.tokens['carol']}", f"LOGIN&carol&{world.tokens['carol']}", "NAME&x")
    assert lone.read() == ["255", "426&you are logged in already (carol)", "426&you are logged in already (carol)"]


def test_a_resume_token_of_a_finished_game_is_told_the_game_is_over():
    world = Arena(grace=0)
    dave, erin = world.ai("NAME&dave"), world.ai("NAME&erin")
    world.pair()
    dave.read(), erin.read()
    dave.send("TOKEN")
    resume = dave.read()[0].split("&", 1)[1]
    erin.drop()  # no grace: erin forfeits at once
    dave.send(*PASS)
    assert dave.read()[-1] == "GAMEOVER&WIN"
    late = world.ai(f"RESUME&{resume}")
    assert late.read() == ["OK", "428&the game of that resume token is over"]


def test_a_thousand_wrong_tokens_from_one_address_are_limited_and_another_game_plays_on():
    world, alice, bob = logged_in_game()
    checked = world.accounts.checked
    flood = world.ai(*[f"LOGIN&carol&{'w' * 20}{n:04d}" for n in range(1000)], host="198.51.100.66")
    replies: list[str] = []
    while len(replies) < 1001 and world.clock.seconds() < 2:  # it reads its replies as they come
        world.clock.pump([0.001] * 10)  # a flood is handled a share at a time, as the reactor would
        replies += flood.read()
    assert replies[0] == "OK" and len(replies) == 1001
    failures = world.players.config.login_failures
    assert replies[1 : 1 + failures] == ["420&unknown account or wrong token"] * failures
    limited = "422&too many failed logins from your address (try again in "
    assert all(r.startswith(limited) for r in replies[1 + failures :])
    assert world.accounts.checked - checked == failures, "a limited login checks no token"
    alice.send(*PASS)
    bob.send(*PASS)
    assert alice.read() == ["255"] * 5 + ["200", "READY"] and bob.read() == ["255"] * 5 + ["200", "READY"]
    other = world.login("carol", host="198.51.100.67")
    assert other.read() == ["OK", "255"], "another address logs in as usual"


def test_with_guests_off_an_ai_must_log_in_before_it_plays():
    world = Arena(guests=False)
    guest = world.ai("NAME&dave", "TABLE&t1", "0&POS")
    assert guest.read() == [
        "OK",
        "423&this server admits registered players only: send LOGIN <name> <token> first",
        "423&this server admits registered players only: send LOGIN <name> <token> first",
        "100",
    ]
    alice = world.login("alice", host="192.0.2.2")
    world.pair()
    assert alice.read() == ["OK", "255"] and not world.service.games, "the guest never joined the queue"
    guest.send(f"LOGIN&carol&{world.tokens['carol']}")
    assert guest.read() == ["255", "READY"] and alice.read() == ["READY"]
    assert world.service.games[1].names == ["alice", "carol"]


def test_an_ai_whose_login_is_still_being_checked_joins_the_queue_only_once_it_is_answered():
    world = Arena()
    waiting = world.ai("NAME&dave")
    world.pair()
    world.accounts.pending = True  # a slow database
    alice = world.login("alice", host="192.0.2.2")
    late = world.ai("LOGIN&carol&" + "c" * 24, host="192.0.2.3")
    world.pair()
    assert not world.service.games, "nobody joins as a guest while its LOGIN is checked"
    world.accounts.release()
    assert alice.read() == ["OK", "255", "READY"] and waiting.read() == ["OK", "255", "READY"]
    assert world.service.games[1].names == ["dave", "alice"]
    assert [s.identity.kind for s in world.service.seats.seats_of(world.service.games[1])] == ["guest", "person"]
    assert late.read() == ["OK", "420&unknown account or wrong token"], "refused: it waits as a guest"
    assert world.service.lobby.is_waiting(late.player)


def test_one_account_never_plays_itself():
    world = Arena()
    first = world.login("alice")
    second = world.login("alice", host="192.0.2.2")
    world.pair()
    assert first.read() == ["OK", "255"] and second.read() == ["OK", "255"]
    assert not world.service.games
    bob = world.login("bob", host="192.0.2.3")
    world.pair()
    assert bob.read() == ["OK", "255", "READY"] and first.read() == ["READY"] and second.read() == []


# --- the grace period ------------------------------------------------------------------------


def test_an_away_team_times_out_without_disqualification_and_forfeits_when_the_grace_ends():
    world, alice, bob = logged_in_game(grace=28, strikes=2)
    alice.drop()
    assert bob.read() == ["AWAY&0&alice&28"]
    for turn in range(5):  # 25 s: five timeouts in a row, but the seat is away, not struck out
        bob.send(*PASS)
        world.clock.advance(5)
        assert bob.read() == ["255"] * 5 + ["200", "READY"], turn
    assert world.service.games[1].battle.playing == {0, 1}
    bob.send(*PASS)
    world.clock.advance(5)  # the grace ends after 28 s: the seat forfeits, the turn closes for bob
    assert bob.read() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    (record,) = world.store.records
    assert (record.reason, record.scores, record.rated) == ("forfeit", (0.0, 1.0), True)
    assert record.moves[-1].move == "turn 6: alice (team 0) forfeited (not back in time)"
    assert world.players.config.guests and not world.service.games


def test_a_seat_back_in_time_plays_on_and_its_strikes_count_again():
    world, alice, bob = logged_in_game(grace=30, strikes=2)
    alice.drop()
    bob.read()
    world.clock.advance(5)  # turn 1 times out while alice is away: no strike
    bob.read()
    back = world.login("alice")
    assert back.read()[2] == "STATE&2&0&alice&5&0"
    for _ in range(2):  # now two timeouts in a row disqualify alice as usual
        bob.send(*PASS)
        world.clock.advance(5)
    assert back.read()[-2:] == ["200", "GAMEOVER&LOSE"]
    (record,) = world.store.records
    assert record.reason == "timeout"


def test_a_forfeit_in_a_three_team_game_lets_the_others_play_on():
    world = Arena(teams=3, grace=8)
    names = ("alice", "bob", "carol")
    clients = [world.login(name, host=f"192.0.2.{n + 1}") for n, name in enumerate(names)]
    world.pair()
    assert all(c.read() == ["OK", "255", "READY"] for c in clients)
    alice, bob, carol = clients
    bob.drop()
    assert alice.read() == ["AWAY&1&bob&8"] and carol.read() == ["AWAY&1&bob&8"]
    world.clock.advance(5)  # turn 1 times out for everyone
    assert alice.read() == ["200", "READY"] and carol.read() == ["200", "READY"]
    alice.send(*PASS)
    carol.send(*PASS)
    assert alice.read() == ["255"] * 5 and carol.read() == ["255"] * 5, "turn 2 waits for bob's seat"
    world.clock.advance(3)  # bob's grace ends: his team is out and the turn closes for the others
    assert alice.read() == ["200", "READY"] and carol.read() == ["200", "READY"]
    game = world.service.games[1]
    assert game.battle.playing == {0, 2} and {t: r.value for t, r in game.results.items()} == {1: "LOSE"}
    (table,) = world.hub.tables.values()
    assert table.moves[-1].move == "turn 2: bob (team 1) forfeited (not back in time)"
    again = world.login("bob")
    assert again.read() == ["OK", "255"] and again.player.game is None, "no seat left to take back"


def test_an_away_team_wiped_out_learns_its_result_when_it_comes_back():
    world = Arena(teams=3, grace=60)
    clients = [world.login(name, host=f"192.0.2.{n + 1}") for n, name in enumerate(("alice", "bob", "carol"))]
    world.pair()
    for c in clients:
        c.read()
    alice, bob, carol = clients
    battle = world.service.games[1].battle
    for n in range(5):
        place(battle, 1, n, (6, 5 + n))
        place(battle, 0, n, (7, 5 + n), Dir.UP)
    bob.drop()
    alice.read(), carol.read()
    alice.send(*(f"{n}&SHOOT" for n in range(5)))
    carol.send(*PASS)
    world.clock.advance(5)
    assert alice.read()[-1] == "READY"
    back = world.login("bob")
    assert back.read() == ["OK", "255", "GAMEOVER&LOSE"]


def test_a_new_connection_of_the_same_account_replaces_a_half_dead_one():
    world, alice, bob = logged_in_game()
    alice.send("TOKEN")
    resume = alice.read()[0].split("&", 1)[1]
    fresh = world.ai(f"RESUME&{resume}", host="192.0.2.8")
    assert fresh.read()[:3] == ["OK", "255", "STATE&1&0&alice&5&0"]
    assert alice.closing, "the old connection is closed"
    alice.finish()
    assert bob.read() == ["BACK&0&alice"]
    fresh.send(*PASS)
    bob.send(*PASS)
    assert fresh.read() == ["255"] * 5 + ["200", "READY"]


def test_the_game_and_the_ai_connection_provide_the_seat_interfaces():
    world, alice, bob = logged_in_game()
    assert verifyObject(ISeatGame, world.service.games[1])
    assert verifyObject(ISeatHolder, alice.player) and verifyObject(IFightTeam, alice.player)
    assert [seat.label() for seat in world.service.seats.seats_of(world.service.games[1])] == [
        "seat 0 (alice)",
        "seat 1 (bob)",
    ]
