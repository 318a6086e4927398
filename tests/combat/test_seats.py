"""Combat's seats in the shared seat model (issue 14): logging in on the handshake port, a seat
that drops is away for the grace and only its own player takes it back (the same account, its
resume token, or on the binary port the same address), a seat not back in time forfeits (a rated
loss), and every refused login, name or resume gets its documented ``ERROR <code> <text>`` line."""

from __future__ import annotations

import json
import random
import re

from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.client import ServerStream
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits, PlayersConfig
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.stratego.rules import Unit
from tests.combat.test_protocol import DEFAULT, placement
from tests.combat.test_table import line_map
from tests.memaccounts import MemoryAccounts
from tests.memclient import Client, next_turns
from tests.memstore import MemoryStore

LINE = line_map(2, {Unit.FLAG: 1, Unit.MARSHAL: 1})  # cells 0 1 | 2 3
SWITCH = re.compile(rb"^OK [^\r\n]*: binary protocol follows\r\n", re.M)


class Conn:
    """A client of either port from ``host``: text lines until the binary protocol starts, then
    Combat messages."""

    def __init__(self, service, host="192.0.2.1", text=True):
        factory = service.text_port_factory() if text else service.port_factory()
        self.client = Client(service, host=host, factory=factory)
        self.stream = ServerStream()  # the terminal client's reader: binary messages and NOTICES lines
        self.binary = not text
        self.got: list = []
        self.notices: list[str] = []
        self.lines()

    def _binary(self, data: bytes) -> None:
        for kind, value in self.stream.feed(data):
            assert kind in ("message", "notice"), (kind, value)
            (self.got if kind == "message" else self.notices).append(value)

    def say(self, *lines: str) -> list[str]:
        self.client.raw(b"".join(line.encode() + b"\r\n" for line in lines))
        return self.lines()

    def lines(self) -> list[str]:
        data = self.client.transport.value()
        self.client.transport.clear()
        self.client.finish()
        if self.binary:
            self._binary(data)
            return []
        switch = SWITCH.search(data)
        if switch is None:
            return data.decode("ascii").split("\r\n")[:-1]
        self.binary = True
        self._binary(data[switch.end() :])
        return data[: switch.end()].decode("ascii").split("\r\n")[:-1]

    def send(self, message) -> None:
        self.client.raw(wire.encode_client(message))

    def read(self) -> list:
        self.lines()
        got, self.got = self.got, []
        return got


def make(grace=120.0, guests=True, rejoin="address", **players):
    clock = Clock()
    store = MemoryStore()
    accounts = MemoryAccounts()
    config = CombatConfig(move_time=0, rejoin_grace=grace, rejoin=rejoin)
    service = CombatService(
        Limits(idle_timeout=0),
        clock,
        config,
        rng=random.Random(1),
        hub=LiveHub(clock, store),
        players=Players(PlayersConfig(guests=guests, **players), accounts, clock),
    )
    return clock, store, accounts, service


def login(service, accounts, name, host="192.0.2.1", token=None):
    token = token or accounts.add(name)
    conn = Conn(service, host)
    assert conn.say(f"LOGIN {name} {token}") == [f"OK LOGIN {name}"]
    return conn, token


def start_line(alice, bob):
    """alice (seat 0) and bob (seat 1) play the 1-row map: alice's marshal (cell 1) can take
    bob's flag (cell 2) with her first move."""
    alice.send(wire.HostOptions.of(LINE))
    alice.send(wire.MsgSetup(wire.write_setup(LINE, 0, {0: Unit.FLAG, 1: Unit.MARSHAL})))
    bob.send(wire.MsgSetup(wire.write_setup(LINE, 1, {2: Unit.FLAG, 3: Unit.MARSHAL})))
    assert wire.MsgStart() in alice.read() and wire.MsgStart() in bob.read()


def players_of(conn) -> list[str]:
    (players,) = [m for m in conn.read() if isinstance(m, wire.MsgPlayers)][-1:]
    return [s.name if s.kind is not wire.SeatKind.OPEN else "-" for s in players.seats]


def test_log_in_play_drop_log_in_again_get_the_whole_state_and_finish():
    clock, store, accounts, service = make()
    alice, _ = login(service, accounts, "alice")
    bob, token = login(service, accounts, "bob")
    assert alice.say("PLAY") == ["OK PLAY: binary protocol follows"]
    assert bob.say("PLAY") == ["OK PLAY: binary protocol follows"]
    start_line(alice, bob)
    bob.client.drop()
    assert players_of(alice) == ["alice", "-"], "the others see the seat open while it is away"
    clock.advance(100)  # within the grace
    back = Conn(service)
    assert back.say(f"LOGIN bob {token}") == ["OK LOGIN bob"]
    assert back.say("TABLE other", "PLAY") == ["OK TABLE other", "OK RESUME seat 1 (bob): binary protocol follows"]
    got = back.read()
    assert got[:2] == [wire.MsgSeat(1, 2), wire.MsgPlayers([wire.PlayerSeat(wire.SeatKind.PLAYER, n) for n in ("alice", "bob")])]
    assert got[2] == wire.MsgOptions(LINE)
    assert got[3] == wire.MsgSync(0, wire.State.PLAYING, bytes([0x1C, 0x1C, 0x20, 0x2B])), "its own view, alice to move"
    assert got[4:] == [wire.MsgStart()]
    assert alice.read()[-2:] == [wire.MsgPlayers([wire.PlayerSeat(wire.SeatKind.PLAYER, n) for n in ("alice", "bob")]), wire.MsgStart()]
    alice.send(wire.ReqMove(1, 2))  # takes the flag
    assert wire.MsgGameover(0) in back.read() and wire.MsgGameover(0) in alice.read()
    (record,) = store.records
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("alice", True, "player"), ("bob", True, "player")]
    assert (record.scores, record.reason, record.rated) == ((1.0, 0.0), "flag captured", True)


def test_a_seat_not_back_in_time_forfeits_a_rated_loss():
    clock, store, accounts, service = make(grace=30)
    alice, _ = login(service, accounts, "alice")
    bob, token = login(service, accounts, "bob")
    alice.say("PLAY")
    bob.say("PLAY")
    start_line(alice, bob)
    bob.client.drop()
    clock.advance(30)
    assert alice.read()[-2:][0] == wire.MsgGameover(0)
    (record,) = store.records
    assert (record.scores, record.reason, record.rated) == ((1.0, 0.0), "forfeit", True)
    assert record.extra["detail"] == "seat 1 (bob) left the game and did not come back within 30 s"
    late = Conn(service)
    assert late.say(f"LOGIN bob {token}") == ["OK LOGIN bob"]
    assert late.say("PLAY") == ["OK PLAY: binary protocol follows"], "no seat to take back: a new game"
    assert late.read()[0] == wire.MsgSeat(0, 2)


def test_the_same_name_without_or_with_a_wrong_token_never_gets_the_seat():
    clock, store, accounts, service = make()
    alice, _ = login(service, accounts, "alice")
    bob, token = login(service, accounts, "bob")
    alice.say("PLAY")
    bob.say("PLAY")
    start_line(alice, bob)
    bob.client.drop()
    other = Conn(service)
    assert other.say("NAME bob") == ["ERROR 424 that name is registered: send LOGIN <name> <token> to use it (bob)"]
    assert other.say("LOGIN bob " + "x" * 24) == ["ERROR 420 unknown account or wrong token"]
    assert other.say("LOGIN bob short") == ["ERROR 420 unknown account or wrong token"]
    assert other.say("TABLE t", "PLAY")[-1] == "OK PLAY: binary protocol follows"
    assert other.read()[0] == wire.MsgSeat(0, 2), "a seat at a new table, not bob's"
    assert service.seats.seats_of(service._tables[1])[1].away, "bob's seat is still away"


def test_a_guest_resumes_with_its_resume_token_and_not_after_the_game():
    clock, store, accounts, service = make()
    ann, bea = Conn(service), Conn(service)
    assert ann.say("NAME ann", "TOKEN") == ["OK NAME ann", "OK TOKEN: your resume token comes just before OK PLAY"]
    lines = ann.say("PLAY")
    assert lines[0].startswith("TOKEN ") and lines[1] == "OK PLAY: binary protocol follows"
    token = lines[0].split()[1]
    assert ann.read()[0] == wire.MsgSeat(0, 2), "the binary protocol follows the lines"
    bea.say("NAME bea", "PLAY")
    ann.got.clear()
    start_line(ann, bea)
    ann.client.drop()
    assert Conn(service).say("NAME ann") == ["ERROR 432 another player here uses that name just now (ann)"]
    assert Conn(service).say("RESUME " + "y" * 24) == ["ERROR 427 unknown resume token"]
    back = Conn(service, host="198.51.100.7")  # a token works from any address
    assert back.say(f"RESUME {token}") == ["OK RESUME seat 0 (ann): binary protocol follows"]
    assert back.read()[-1] == wire.MsgStart()
    assert Conn(service).say(f"RESUME {token}") == ["ERROR 429 that seat is not away (its player is connected)"]
    assert Conn(service).say("NAME ann") == ["ERROR 432 another player here uses that name just now (ann)"]
    binary = Conn(service, text=False).client.player.name
    assert Conn(service).say(f"NAME {binary}") == [f"ERROR 432 another player here uses that name just now ({binary})"]
    back.send(wire.ReqMove(1, 2))
    assert wire.MsgGameover(0) in bea.read()
    (record,) = store.records
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("ann", False, "guest"), ("bea", False, "guest")]
    assert Conn(service).say(f"RESUME {token}") == ["ERROR 428 the game of that resume token is over"]


def test_an_original_client_from_another_address_does_not_get_an_away_seat():
    clock, store, accounts, service = make()
    first = Conn(service, host="192.0.2.1", text=False)
    second = Conn(service, host="192.0.2.2", text=False)
    start_line(first, second)
    second.client.drop()
    stranger = Conn(service, host="192.0.2.3", text=False)
    assert stranger.read()[0] == wire.MsgSeat(0, 2), "seated at a new table"
    assert players_of(first) == ["player1", "-"], "the away seat stays open"
    back = Conn(service, host="192.0.2.2", text=False)
    got = back.read()
    assert got[0] == wire.MsgSeat(1, 2) and got[-1] == wire.MsgStart(), "its own address takes it back"
    assert got[1].seats[1].name == "player2", "under the seat's name"
    first.send(wire.ReqMove(1, 2))
    assert wire.MsgGameover(0) in back.read()


def test_rejoin_anyone_is_the_original_behaviour():
    clock, store, accounts, service = make(rejoin="anyone")
    first = Conn(service, host="192.0.2.1", text=False)
    second = Conn(service, host="192.0.2.2", text=False)
    start_line(first, second)
    second.client.drop()
    stranger = Conn(service, host="192.0.2.3", text=False)
    got = stranger.read()
    assert got[0] == wire.MsgSeat(1, 2) and got[1].seats[1].name == "player3", "it takes over the army"


def test_guests_off_admits_logged_in_players_only():
    clock, store, accounts, service = make(guests=False)
    binary = Conn(service, text=False)
    assert binary.client.lost and binary.read() == [], "the binary port cannot log in: closed at once"
    guest = Conn(service)
    assert guest.say("NAME zed") == ["ERROR 423 this server admits registered players only: send LOGIN <name> <token> first"]
    assert guest.say("PLAY") == ["ERROR 423 this server admits registered players only: send LOGIN <name> <token> first"]
    assert guest.say("COMPUTER x") == ["ERROR no computer opponent is registered on this server"]
    assert not guest.binary and not guest.client.lost
    token = accounts.add("zed")
    assert guest.say(f"LOGIN zed {token}", "PLAY") == ["OK LOGIN zed", "OK PLAY: binary protocol follows"]


def test_logging_in_twice_and_after_the_switch_to_binary():
    clock, store, accounts, service = make()
    alice, token = login(service, accounts, "alice")
    assert alice.say(f"LOGIN alice {token}") == ["ERROR 426 you are logged in already (alice)"]
    assert alice.say("NAME other") == ["ERROR 426 you are logged in already (alice)"]
    assert alice.say("LOGIN alice") == ["ERROR usage: LOGIN <name> <token>"]
    assert alice.say("RESUME") == ["ERROR usage: RESUME <token>"]
    alice.say("PLAY")
    alice.client.raw(f"LOGIN alice {token}\r\n".encode())  # after PLAY only binary messages are read
    assert alice.client.lost, "not a Combat message: the connection is closed"


def test_an_account_with_an_away_seat_gets_it_back_with_computer_too_and_its_token_on_request():
    clock, store, accounts, service = make()
    alice, _ = login(service, accounts, "alice")
    bob, token = login(service, accounts, "bob")
    alice.say("PLAY")
    bob.say("PLAY")
    start_line(alice, bob)
    bob.client.drop()
    back = Conn(service)
    lines = back.say(f"LOGIN bob {token}", "TOKEN", "COMPUTER fast")
    assert lines[:2] == ["OK LOGIN bob", "OK TOKEN: your resume token comes just before OK PLAY"]
    assert lines[2] == f"TOKEN {service.seats.seats_of(service._tables[1])[1].resume_token}"
    assert lines[3:] == ["OK RESUME seat 1 (bob): binary protocol follows"]


def test_lines_wait_while_a_login_is_checked():
    clock, store, accounts, service = make()
    token = accounts.add("alice")
    accounts.pending = True  # a slow database
    alice = Conn(service)
    assert alice.say(f"LOGIN alice {token}", "PLAY") == []
    accounts.release()
    assert alice.lines() == ["OK LOGIN alice", "OK PLAY: binary protocol follows"]
    assert alice.read()[1].seats[0].name == "alice"


def test_a_thousand_wrong_tokens_from_one_address_are_refused_and_others_play_on():
    clock, store, accounts, service = make(login_failures=5, login_window=60)
    accounts.add("bob")
    alice, _ = login(service, accounts, "alice", host="192.0.2.9")
    carol, _ = login(service, accounts, "carol", host="192.0.2.9")
    alice.say("PLAY")
    carol.say("PLAY")
    start_line(alice, carol)
    checked = accounts.checked
    attacker = Conn(service, host="203.0.113.5")
    answers = attacker.say(*[f"LOGIN bob {'w' * 23}{i % 10}" for i in range(1000)])
    next_turns(clock)  # a flood is handled a share per turn
    answers += attacker.lines()
    assert answers[:5] == ["ERROR 420 unknown account or wrong token"] * 5
    assert set(answers[5:]) == {"ERROR 422 too many failed logins from your address (try again in 60 s)"}
    assert len(answers) == 1000 and accounts.checked - checked == 5, "only 5 tokens were checked"
    alice.send(wire.ReqMove(1, 2))  # the game on the same service goes on
    assert wire.MsgGameover(0) in carol.read()
    assert Conn(service, host="203.0.113.6").say("NAME dan") == ["OK NAME dan"], "another address is not held up"


def test_two_connections_of_one_account_never_sit_at_one_table():
    clock, store, accounts, service = make()
    one, token = login(service, accounts, "alice")
    two, _ = login(service, accounts, "alice", token=token)
    one.say("TABLE t", "PLAY")
    assert two.say("TABLE t", "PLAY")[-1] == "ERROR table t: you sit at it already (another connection of yours)"
    assert two.say("TABLE u", "PLAY")[-1] == "OK PLAY: binary protocol follows"


def test_a_timeout_while_away_is_a_timeout_loss(tmp_path):
    clock = Clock()
    store = MemoryStore()
    service = CombatService(
        Limits(idle_timeout=0), clock, CombatConfig(move_time=20, rejoin_grace=120), rng=random.Random(1),
        hub=LiveHub(clock, store), records_dir=tmp_path,
    )
    first = Conn(service, text=False)
    second = Conn(service, host="192.0.2.2", text=False)
    start_line(first, second)
    first.client.drop()  # seat 0 is to move and away: its clock runs on
    clock.advance(20)
    assert wire.MsgGameover(1) in second.read()
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert (result["winner"], result["reason"]) == (1, "timeout")


def test_the_default_grace_is_the_shared_one():
    clock = Clock()
    players = Players(PlayersConfig(grace=7), None, clock)
    assert CombatService(Limits(), clock, CombatConfig(), players=players).seats.grace == 7
    assert CombatService(Limits(), clock, CombatConfig(rejoin_grace=3), players=players).seats.grace == 3
    assert CombatService(Limits(), clock, CombatConfig(rejoin_grace=3), players=players, grace=5).seats.grace == 5
    assert CombatService(Limits(), clock, CombatConfig()).seats.grace == PlayersConfig().grace


def test_the_default_map_game_resumes_with_the_board_of_the_seat():
    clock, store, accounts, service = make()
    alice, _ = login(service, accounts, "alice")
    bob, token = login(service, accounts, "bob")
    alice.say("PLAY")
    bob.say("PLAY")
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    alice.send(wire.ReqMove(30, 40))
    bob.client.drop()
    back = Conn(service)
    back.say(f"LOGIN bob {token}", "PLAY")
    (sync,) = [m for m in back.read() if isinstance(m, wire.MsgSync)]
    assert sync.turn == 1 and sync.units[40] == 0x1C and sync.units[61] == 0x26, "bob to move; alice's scout moved"


def test_players_coming_and_going_at_a_waiting_table_leave_nothing_behind():
    clock, store, accounts, service = make()
    host = Conn(service, text=False)
    for _ in range(50):
        guest = Conn(service)
        lines = guest.say("TOKEN", "PLAY")
        token = lines[0].split()[1]
        guest.client.drop()
    (entry,) = service._tables.values()
    assert len(service.seats.seats_of(entry)) == 1, "only the host's seat"
    assert Conn(service).say(f"RESUME {token}") == ["ERROR 427 unknown resume token"]
    assert host.read()[0] == wire.MsgSeat(0, 2)


def test_seatbook_unseat_forgets_the_seat_and_its_token():
    from gamed.identity import Identity
    from gamed.seats import SeatBook

    book = SeatBook(Clock(), 60)
    game, holder = object(), object()
    seat = book.seat(game, 0, Identity("ann"), holder)
    book.unseat(seat)
    assert book.seats_of(game) == [] and not seat.connected
    try:
        book.find_token(seat.resume_token)
    except Exception as e:
        assert e.refusal.value == "unknown resume token"
    else:
        raise AssertionError("the token still finds a seat")


def test_a_table_provides_the_seat_models_game_interface():
    from zope.interface.verify import verifyObject

    from gamed.seats import ISeatGame

    clock, store, accounts, service = make()
    Conn(service, text=False)
    (entry,) = service._tables.values()
    assert verifyObject(ISeatGame, entry)


def test_login_without_a_records_database_is_refused_with_431():
    service = CombatService(Limits(idle_timeout=0), Clock(), CombatConfig(), rng=random.Random(1))
    conn = Conn(service)
    assert conn.say("LOGIN alice " + "a" * 24) == ["ERROR 431 this server has no accounts (no records database)"]
    assert conn.say("NAME alice", "PLAY") == ["OK NAME alice", "OK PLAY: binary protocol follows"], "guests still play"


def test_the_rejoin_setting_is_checked():
    import pytest

    from gamed import config

    assert config.build({"combat": {"rejoin": "anyone", "rejoin_grace": 5}}).combat.rejoin == "anyone"
    assert config.build({"combat": {"rejoin_grace": 5}}).grace("combat") == 5
    assert config.build({"players": {"grace": 9}}).grace("combat") == 9
    with pytest.raises(config.ConfigError, match="combat.rejoin must be one of address, anyone, not 'everyone'"):
        config.build({"combat": {"rejoin": "everyone"}})


def test_notices_tell_only_the_clients_that_asked_when_a_seat_drops_and_returns():
    clock, store, accounts, service = make(grace=90)
    alice, _ = login(service, accounts, "alice")
    assert alice.say("NOTICES") == ["OK NOTICES: AWAY and BACK lines come between the binary messages"]
    bob, token = login(service, accounts, "bob")
    carol = Conn(service)
    alice.say("TABLE t 3", "PLAY")
    bob.say("TABLE t", "PLAY")
    carol.say("NAME carol", "TABLE t", "PLAY")
    three = line_map(3, {Unit.FLAG: 1, Unit.MARSHAL: 1})
    alice.send(wire.HostOptions.of(three))
    for conn, seat in ((alice, 0), (bob, 1), (carol, 2)):
        first = 2 * seat
        conn.send(wire.MsgSetup(wire.write_setup(three, seat, {first: Unit.FLAG, first + 1: Unit.MARSHAL})))
    assert wire.MsgStart() in carol.read()
    bob.client.drop()
    clock.advance(30)
    alice.read()
    carol.read()
    assert alice.notices == ["AWAY 1 bob 90"] and carol.notices == [], "only who asked"
    back = Conn(service)
    back.say(f"LOGIN bob {token}", "PLAY")
    assert alice.read()[-1] == wire.MsgStart() and alice.notices == ["AWAY 1 bob 90", "BACK 1 bob"]
    assert back.notices == [] and carol.read()[-1] == wire.MsgStart() and carol.notices == []
