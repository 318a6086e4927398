"""The Combat adapter and service in memory: connections are seated in arrival order, the table's
messages reach the right sockets as bytes, fatal input closes only that connection."""

from __future__ import annotations

import random
import re

from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.maps import shipped_maps
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits
from gamed.stratego.rules import Unit
from tests.memclient import Client

DEFAULT = shipped_maps()["Default"]
# The UCC default army, by row, as Combat unit codes (front row last for seat 0).
ROWS = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]
CODES = {"F": Unit.FLAG, "B": Unit.BOMB, "s": Unit.SPY} | {str(9 - i): Unit.SCOUT + i for i in range(9)}


def placement(seat: int) -> dict[int, int]:
    rows = ROWS if seat == 0 else list(reversed(ROWS))
    first = 0 if seat == 0 else 60
    return {first + 10 * r + c: CODES[t] for r, row in enumerate(rows) for c, t in enumerate(row)}


class Player:
    """A Combat client: sends client messages, reads server messages."""

    def __init__(self, service):
        self.client = Client(service)
        self.parser = wire.ClientParser()

    def send(self, message) -> None:
        self.client.raw(wire.encode_client(message))

    def read(self) -> list:
        data = self.client.transport.value()
        self.client.transport.clear()
        return self.parser.feed(data)


def make_service(**kwargs) -> CombatService:
    return CombatService(Limits(), Clock(), rng=random.Random(1), **kwargs)


def test_two_players_are_seated_and_play_a_first_move():
    service = make_service()
    alice = Player(service)
    first = alice.read()
    assert first[0] == wire.MsgSeat(0, 2) and isinstance(first[1], wire.MsgPlayers)
    assert first[2] == wire.ReqOptions(), "the first joiner is the host"
    bob = Player(service)
    assert bob.read()[0] == wire.MsgSeat(1, 2)
    alice.read()
    alice.send(wire.HostOptions.of(DEFAULT))
    for p in (alice, bob):
        got = p.read()
        assert wire.MsgOptions(DEFAULT) in got and wire.ReqSetup() in got
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    assert any(isinstance(m, wire.MsgStart) for m in alice.read())
    bob.read()
    alice.send(wire.ReqMove(30, 40))  # seat 0's scout steps forward
    assert alice.read() == bob.read() == [wire.MsgMove(30, 40)]
    bob.send(wire.ReqMove(61, 51))  # seat 1's lieutenant at (1,6) steps up
    assert alice.read() == bob.read() == [wire.MsgMove(61, 51)]
    bob.send(wire.ReqMove(62, 52))  # out of turn: seat 0 plays now
    assert alice.read() == bob.read() == [wire.MsgMoveError(-3, 1)]


def test_a_third_connection_starts_a_second_table():
    service = make_service()
    players = [Player(service) for _ in range(3)]
    assert players[2].read()[0] == wire.MsgSeat(0, 2)
    assert len(service.tables) == 2


def test_fatal_input_closes_only_that_connection_and_frees_the_seat():
    service = make_service()
    alice, bob = Player(service), Player(service)
    alice.read()
    bob.read()
    bob.client.raw(wire.encode_int(99))  # an unknown opcode
    assert bob.client.lost
    got = alice.read()
    assert isinstance(got[0], wire.MsgPlayers) and not alice.client.lost
    carol = Player(service)
    assert carol.read()[0] == wire.MsgSeat(1, 2), "the freed seat is taken by the next joiner"


def test_a_table_everyone_left_is_removed():
    service = make_service()
    alice = Player(service)
    alice.client.drop()
    assert service.tables == {}


def started(service):
    """Two players at a started game on the Default map (their reads emptied)."""
    alice, bob = Player(service), Player(service)
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    alice.read()
    bob.read()
    return alice, bob


def test_the_seat_to_move_loses_when_its_move_time_runs_out():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0), clock, CombatConfig(move_time=60), rng=random.Random(1))
    alice, bob = started(service)
    clock.advance(50)
    alice.send(wire.ReqMove(30, 40))  # in time: bob's clock starts now
    alice.read()
    bob.read()
    clock.advance(59)
    assert bob.read() == []
    clock.advance(1)
    got = bob.read()
    assert got[0] == wire.MsgGameover(0) and isinstance(got[1], wire.MsgSync), "seat 0 wins on time"
    assert alice.read()[0] == wire.MsgGameover(0)


def test_a_dropped_player_may_come_back_within_the_grace_period():
    clock = Clock()
    config = CombatConfig(move_time=0, rejoin_grace=120)
    service = CombatService(Limits(idle_timeout=0), clock, config, rng=random.Random(1))
    alice, bob = started(service)
    bob.client.drop()
    alice.read()
    clock.advance(100)
    back = Player(service)
    got = back.read()
    assert got[0] == wire.MsgSeat(1, 2), "the next joiner takes the kept seat"
    assert any(isinstance(m, wire.MsgSync) for m in got) and isinstance(got[-1], wire.MsgStart)
    clock.advance(100)
    alice.send(wire.ReqMove(30, 40))
    assert back.read() == [wire.MsgMove(30, 40)], "the game goes on with the returned player"


def test_a_seat_not_back_in_time_loses():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0), clock, CombatConfig(move_time=0, rejoin_grace=120), rng=random.Random(1))
    alice, bob = started(service)
    bob.client.drop()
    alice.read()
    clock.advance(120)
    assert alice.read()[0] == wire.MsgGameover(0)


class TextPlayer(Player):
    """A client of the handshake port: text lines first, then the binary protocol."""

    def __init__(self, service):
        self.client = Client(service, factory=service.text_port_factory())
        self.parser = wire.ClientParser()
        self.greeting = self.lines()

    def say(self, *lines: str) -> None:
        self.client.raw(b"".join(line.encode() + b"\r\n" for line in lines))

    def lines(self) -> list[str]:
        data = self.client.transport.value()
        self.client.transport.clear()
        # The text part ends with the line that says the binary protocol follows (PLAY, RESUME, ...).
        switch = re.search(rb"^OK [^\r\n]*: binary protocol follows\r\n", bytes(data), re.M)
        if switch is None:
            return data.decode("ascii").split("\r\n")[:-1]
        lines = data[: switch.end()].decode("ascii").split("\r\n")[:-1]
        self.binary = self.parser.feed(data[switch.end() :])
        return lines


def test_the_handshake_chooses_name_and_table_then_switches_to_binary():
    service = make_service()
    alice = TextPlayer(service)
    assert alice.greeting[0].startswith("COMBAT gamed:")
    alice.say("NAME alice", "TABLE t1", "PLAY")
    assert alice.lines() == ["OK NAME alice", "OK TABLE t1", "OK PLAY: binary protocol follows"]
    assert alice.binary[0] == wire.MsgSeat(0, 2)
    assert alice.binary[1].seats[0].name == "alice"
    anonymous = Player(service)
    assert anonymous.read()[0] == wire.MsgSeat(0, 2), "the binary port does not join a named table"
    bob = TextPlayer(service)
    bob.say("NAME bob", "TABLE t1", "PLAY")
    assert bob.lines()[-1].startswith("OK PLAY") and bob.binary[0] == wire.MsgSeat(1, 2)


def test_the_first_at_a_named_table_sets_its_seats():
    service = make_service()
    host = TextPlayer(service)
    host.say("TABLE big 3", "PLAY")
    host.lines()
    assert host.binary[0] == wire.MsgSeat(0, 3)
    other = TextPlayer(service)
    other.say("TABLE big 2", "PLAY")
    assert other.lines()[-1] == "ERROR table big has 3 seats"
    other.say("TABLE big", "PLAY")
    assert other.lines()[-1].startswith("OK PLAY") and other.binary[0] == wire.MsgSeat(1, 3)


def test_binary_bytes_right_after_play_are_not_lost():
    service = make_service()
    alice = TextPlayer(service)
    alice.client.raw(b"PLAY\r\n" + wire.encode_client(wire.ReqSync()))
    alice.lines()
    assert isinstance(alice.binary[-1], wire.MsgSync), "the REQ_SYNC in the same packet was answered"


def test_bad_handshake_lines_are_answered_and_an_over_long_one_closes():
    service = make_service()
    p = TextPlayer(service)
    p.say("DANCE", "NAME", "TABLE x 99", "HELP")
    lines = p.lines()
    assert lines[:3] == [
        "ERROR unknown command or bad arguments; HELP lists the commands",
        "ERROR unknown command or bad arguments; HELP lists the commands",
        "ERROR seats must be 2 to 15",
    ]
    assert lines[3].startswith("LOGIN <name> <token>") and any(line.startswith("NAME <name>") for line in lines)
    p.client.raw(b"x" * 300)
    assert p.lines() == ["ERROR line too long"] and p.client.lost


def test_a_player_of_a_named_table_comes_back_with_its_resume_token():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=0), clock, CombatConfig(move_time=0), rng=random.Random(1))
    alice, bob = TextPlayer(service), TextPlayer(service)
    for p in (alice, bob):
        p.say("TABLE duel", "TOKEN", "PLAY")
        lines = p.lines()
        assert lines[:2] == ["OK TABLE duel", "OK TOKEN: your resume token comes just before OK PLAY"]
        assert lines[2].startswith("TOKEN ") and lines[3] == "OK PLAY: binary protocol follows"
        p.token = lines[2].split()[1]
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.send(wire.MsgSetup(wire.write_setup(DEFAULT, 0, placement(0))))
    bob.send(wire.MsgSetup(wire.write_setup(DEFAULT, 1, placement(1))))
    bob.client.drop()
    stranger = Player(service)
    assert stranger.read()[0] == wire.MsgSeat(0, 2), "an anonymous joiner never takes a named table's seat"
    other = TextPlayer(service)
    other.say("TABLE duel", "PLAY")
    assert other.lines() == ["OK TABLE duel", "ERROR table duel is playing"], "nor one asking for the table"
    back = TextPlayer(service)
    back.say(f"RESUME {bob.token}")
    assert back.lines() == ["OK RESUME seat 1 (player2): binary protocol follows"]
    assert back.binary[0] == wire.MsgSeat(1, 2) and isinstance(back.binary[-1], wire.MsgStart)


def test_a_seat_left_during_setup_is_taken_by_the_next_connection():
    service = make_service()
    alice, bob = Player(service), Player(service)
    alice.send(wire.HostOptions.of(DEFAULT))
    alice.read()
    bob.client.drop()
    carol = Player(service)
    got = carol.read()
    assert got[0] == wire.MsgSeat(1, 2) and wire.ReqSetup() in got


def test_messages_sent_to_a_silent_player_keep_it_from_idling_out():
    clock = Clock()
    service = CombatService(Limits(idle_timeout=100), clock, CombatConfig(move_time=0), rng=random.Random(1))
    alice, bob = started(service)
    for _ in range(5):
        clock.advance(60)
        alice.send(wire.ReqSync())  # alice is active; bob only receives... nothing: syncs are private
    assert bob.client.closing, "bob said and received nothing for 100 s"
    clock2 = Clock()
    service = CombatService(Limits(idle_timeout=100), clock2, CombatConfig(move_time=0), rng=random.Random(1))
    alice, bob = started(service)
    clock2.advance(60)
    alice.send(wire.ReqMove(30, 40))  # bob is sent the move
    clock2.advance(60)
    assert not bob.client.closing, "a move sent to bob counts as activity"


def test_finished_and_abandoned_games_are_recorded(tmp_path):
    import json

    clock = Clock()
    service = CombatService(
        Limits(idle_timeout=0), clock, CombatConfig(move_time=60), rng=random.Random(1), records_dir=tmp_path
    )
    alice, bob = started(service)
    alice.send(wire.ReqMove(30, 40))
    clock.advance(60)  # bob runs out of time: alice wins
    carol, dave = started(service)
    carol.client.drop()
    dave.client.drop()  # everyone left a running game
    clock.advance(60)  # and nobody came back
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["winner"], r["aborted"], r["moves"]) for r in records] == [(0, False, 1), (None, True, 0)]
    assert records[0]["players"] == ["player1", "player2"] and records[0]["map"] == "Default"
    assert records[0]["reason"] == "timeout", "a loss on time, as in every game"
    assert records[0]["detail"] == "seat 1 (player2) ran out of its move time of 60 s"
    assert records[1]["reason"] == "every player left"


def _named_setup_table(seats: int, names: list[str]) -> tuple[CombatService, list]:
    """Players on the handshake port at the named table ``t`` of ``seats`` seats, in SETUP."""
    service = make_service()
    players = []
    for i, name in enumerate(names):
        p = TextPlayer(service)
        p.say(f"NAME {name}", f"TABLE t {seats}" if i == 0 else "TABLE t", "PLAY")
        p.lines()
        players.append(p)
    from tests.combat.test_table import line_map

    players[0].send(wire.HostOptions.of(line_map(seats, {0: 1, 3: 1})))
    for p in players:
        p.read()
    return service, players


def test_a_named_table_whose_player_left_during_setup_takes_the_next_player_by_name():
    service, (alice, bob, carol) = _named_setup_table(3, ["alice", "bob", "carol"])
    assert service.tables[1].state is wire.State.SETUP
    bob.client.drop()
    dave = TextPlayer(service)
    dave.say("NAME dave", "TABLE t", "PLAY")
    assert dave.lines()[-1] == "OK PLAY: binary protocol follows", "not 'ERROR table t is playing'"
    assert dave.binary[0] == wire.MsgSeat(1, 3) and dave.binary[-1] == wire.ReqSetup()
    assert [s.name for s in dave.binary[1].seats] == ["alice", "dave", "carol"]
    assert len(service.tables) == 1


def test_a_named_table_without_a_free_seat_is_refused_with_the_reason():
    service, (alice, bob) = _named_setup_table(2, ["alice", "bob"])  # full, in SETUP
    late = TextPlayer(service)
    late.say("TABLE t", "PLAY")
    assert late.lines()[-1] == "ERROR table t is full"
    assert not late.client.lost and len(service.tables) == 1
    waiting = TextPlayer(service)  # full but still waiting for the host's options
    waiting.say("TABLE w 2", "PLAY")
    TextPlayer(service).say("TABLE w", "PLAY")
    third = TextPlayer(service)
    third.say("TABLE w", "PLAY")
    assert third.lines()[-1] == "ERROR table w is full"
    assert [e.name for e in service._tables.values()].count("w") == 1, "no second table of the same name"


def test_without_a_rejoin_grace_leaving_a_running_game_loses_it_at_once(tmp_path):
    import json

    clock = Clock()
    config = CombatConfig(move_time=0, rejoin_grace=0)
    service = CombatService(Limits(idle_timeout=0), clock, config, rng=random.Random(1), records_dir=tmp_path)
    alice, bob = started(service)
    alice.client.drop()
    got = bob.read()
    assert got[1:] == [wire.MsgGameover(1), got[2]] and isinstance(got[2], wire.MsgSync), "bob wins at once"
    (record,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert (record["winner"], record["reason"], record["aborted"]) == (1, "forfeit", False)
    assert record["detail"] == "seat 0 (player1) left the game"


def test_a_game_won_by_taking_the_flag_is_recorded_as_such(tmp_path):
    import json

    from tests.combat.test_table import line_map

    service = make_service(records_dir=tmp_path)
    alice, bob = Player(service), Player(service)
    line = line_map(2, {Unit.FLAG: 1, Unit.MARSHAL: 1})  # cells 0 1 | 2 3
    alice.send(wire.HostOptions.of(line))
    alice.send(wire.MsgSetup(wire.write_setup(line, 0, {0: Unit.FLAG, 1: Unit.MARSHAL})))
    bob.send(wire.MsgSetup(wire.write_setup(line, 1, {2: Unit.FLAG, 3: Unit.MARSHAL})))
    alice.send(wire.ReqMove(1, 2))  # the marshal takes the flag
    assert wire.MsgGameover(0) in bob.read()
    (record,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert (record["winner"], record["reason"], record["detail"]) == (0, "flag captured", None)
