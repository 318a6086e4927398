"""Issue 5: a person on the Combat handshake port plays a registered UCC AI (the fast C example)."""

from __future__ import annotations

import os
import random
import time

import attrs
import pytest
import pytest_twisted
from twisted.internet import task
from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.service import CombatService
from gamed.combat.ucc_seat import AiOpponent, attack_outcome, ucc_confirmation
from gamed.config import AiProgram, CombatConfig, Limits
from gamed.stratego import rules
from tests.combat.test_protocol import DEFAULT, placement
from tests.memclient import Client
from tests.stratego.programs import compile_fast_ai

UCC = attrs.evolve(DEFAULT, options=rules.Opt.SUPER_SCOUT)
OK_LINE = b"binary protocol follows\r\n"


def _reactor():
    from twisted.internet import reactor

    return reactor


@pytest.fixture(scope="module")
def fast_ai(tmp_path_factory):
    return compile_fast_ai(tmp_path_factory.mktemp("fast"))


class Human:
    """A person on the handshake port: text lines first, then the binary protocol."""

    def __init__(self, service):
        self.client = Client(service, factory=service.text_port_factory())
        self.parser = wire.ClientParser()
        self.text = self.client.transport.value()
        self.client.transport.clear()
        self.binary = False
        self.got: list = []

    def say(self, line: str) -> list[str]:
        self.client.send(line)
        data = self.client.transport.value()
        self.client.transport.clear()
        if OK_LINE in data:
            text, rest = data.split(OK_LINE, 1)
            self.binary = True
            self.got += self.parser.feed(rest)
            return (text + OK_LINE).decode().split("\r\n")[:-1]
        return data.decode().split("\r\n")[:-1]

    def send(self, message) -> None:
        self.client.raw(wire.encode_client(message))

    def poll(self) -> list:
        data = self.client.transport.value()
        self.client.transport.clear()
        self.got += self.parser.feed(data)
        return self.got


def _service(reactor, ais, **kwargs) -> CombatService:
    return CombatService(Limits(), reactor, CombatConfig(move_time=0, rejoin_grace=0), random.Random(1), ais=ais, **kwargs)


async def _until(predicate, seconds: float = 15.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await task.deferLater(_reactor(), 0.01, lambda: None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _legal_move(table) -> tuple[int, int]:
    """A move of seat 0 onto an empty cell (the table's own board decides)."""
    board = table.game.board
    for cell, value in enumerate(board.cells):
        if value == rules.EMPTY or rules.owner_of(value) != 0 or not rules.unit_of(value).mobile:
            continue
        for direction in rules.DIRECTIONS:
            checked = rules.ucc_check(board, 0, cell % 10, cell // 10, direction, 1)
            if not isinstance(checked, str) and board.cells[checked[1]] == rules.EMPTY:
                return checked
    raise AssertionError("no legal move for seat 0")


def test_computer_lists_the_ais_and_refuses_an_unknown_one():
    service = _service(Clock(), {"fast": AiProgram("fast", "/bin/true"), "alpha": AiProgram("alpha", "/bin/true")})
    human = Human(service)
    assert human.say("COMPUTER") == ["AI alpha", "AI fast", "END"]
    assert human.say("COMPUTER nobody") == ["ERROR no computer opponent nobody; COMPUTER lists them"]
    assert not human.binary and not service.tables


def test_computer_without_a_registered_ai_says_so():
    human = Human(_service(Clock(), {}))
    assert human.say("COMPUTER") == ["ERROR no computer opponent is registered on this server"]
    assert human.say("COMPUTER fast") == ["ERROR no computer opponent is registered on this server"]
    assert not human.binary and not human.client.closing, "the handshake goes on (PLAY still works)"


def test_computer_does_not_play_at_a_named_table():
    service = _service(Clock(), {"fast": AiProgram("fast", "/bin/true")})
    human = Human(service)
    human.say("TABLE big 3")
    assert human.say("COMPUTER fast") == ["ERROR a computer opponent plays at a 2-seat table of its own, not at table big"]
    assert not human.binary and not service.tables


def test_confirmations_follow_the_ucc_referee():
    assert ucc_confirmation(30, 40, "OK") == "0 3 DOWN OK"
    assert ucc_confirmation(30, 50, "BOTHDIE 9 9") == "0 3 DOWN 2 BOTHDIE 9 9"
    assert ucc_confirmation(61, 60, "OK") == "1 6 LEFT OK"
    assert attack_outcome(-rules.Unit.SPY, -rules.Unit.MARSHAL)[0] == "BOTHDIE s 1"
    assert attack_outcome(-rules.Unit.MINER, rules.Unit.BOMB)[0] == "KILLS 8 B"
    assert attack_outcome(rules.Unit.CAPTAIN, -rules.Unit.BOMB)[0] == "DIES 5 B"
    assert attack_outcome(-rules.Unit.SCOUT, 0)[0] == "VICTORY_FLAG"


def _ai_of(service) -> AiOpponent:
    (entry,) = service._tables.values()
    return entry.sitting[1]


async def _ann_plays_the_fast_ai(service) -> tuple[Human, AiOpponent]:
    """ann hosts a UCC game against the ``fast`` AI and sets up; (ann, the AI) once it started."""
    human = Human(service)
    human.say("NAME ann")
    human.say("TOKEN")
    lines = human.say("COMPUTER fast")
    assert lines[0].startswith("TOKEN ") and lines[1] == "OK COMPUTER fast: binary protocol follows"
    human.token = lines[0].split()[1]  # the resume token of ann's seat
    ai = _ai_of(service)
    human.send(wire.HostOptions.of(UCC))
    human.send(wire.MsgSetup(wire.write_setup(UCC, 0, placement(0))))
    await _until(lambda: any(isinstance(m, wire.MsgStart) for m in human.poll()))
    return human, ai


@pytest_twisted.ensureDeferred
async def test_a_person_plays_the_fast_ai_and_leaving_ends_the_program(fast_ai):
    service = _service(_reactor(), {"fast": AiProgram("fast", fast_ai)})
    human = Human(service)
    assert human.say("NAME ann") == ["OK NAME ann"]
    human.say("COMPUTER fast")
    assert human.binary
    got = human.poll()
    assert got[0] == wire.MsgSeat(0, 2) and wire.ReqOptions() in got
    ai = _ai_of(service)
    pid = ai.program.reaper_pid  # its reaper ends last, once the program and all it forked are gone
    assert pid is not None and _alive(pid)
    human.send(wire.HostOptions.of(UCC))
    assert wire.ReqSetup() in human.poll()
    human.send(wire.MsgSetup(wire.write_setup(UCC, 0, placement(0))))
    await _until(lambda: any(isinstance(m, wire.MsgStart) for m in human.poll()))
    table = service.tables[ai.seating.table_id]
    assert set(table.game.setup_done) == {0, 1}
    assert all(table.game.board.cells[c] != rules.EMPTY for c in range(60, 100)), "the AI's setup is on the board"
    for _ in range(3):
        source, target = _legal_move(table)
        before = len(human.poll())
        human.send(wire.ReqMove(source, target))
        assert human.poll()[before] == wire.MsgMove(source, target)
        await _until(lambda: table.turn == 0 or table.state is not wire.State.PLAYING)
        answer = human.poll()[before + 1]
        assert isinstance(answer, (wire.MsgMove, wire.MsgAttack)) and answer.source >= 40, answer
        if table.state is not wire.State.PLAYING:
            break
    human.client.drop()
    await _until(lambda: ai.ended is not None and ai.ended.called)
    await _until(lambda: not _alive(pid), 5.0)
    assert not service.tables


@pytest_twisted.ensureDeferred
async def test_options_other_than_the_ucc_rules_make_the_ai_leave(fast_ai):
    service = _service(_reactor(), {"fast": AiProgram("fast", fast_ai)})
    human = Human(service)
    human.say("COMPUTER fast")
    ai = _ai_of(service)
    pid = ai.program.reaper_pid  # its reaper ends last, once the program and all it forked are gone
    human.poll()
    human.send(wire.HostOptions.of(DEFAULT))  # no SUPER_SCOUT
    await _until(lambda: ai.ended is not None and ai.ended.called)
    await _until(lambda: not _alive(pid), 5.0)
    data = human.client.transport.value()
    binary, _, text = data.partition(b"ERROR ")
    assert human.parser.feed(binary) == [wire.MsgOptions(DEFAULT), wire.ReqSetup()], "the messages, then the reason"
    assert text == (
        b"computer opponent fast left the table: the options are 0x0000, not SUPER_SCOUT (0x0010) alone;"
        b" it plays the UCC rules only (the Default map and army with SUPER_SCOUT alone)\r\n"
    )
    assert human.client.closing
    human.client.finish()
    assert not service.tables


@pytest_twisted.ensureDeferred
async def test_a_person_who_leaves_a_game_against_the_ai_loses_it_when_the_grace_ends(fast_ai, tmp_path):
    import json

    from gamed.observers import LiveHub
    from tests.memstore import MemoryStore

    store = MemoryStore()
    config = CombatConfig(move_time=0, rejoin_grace=0.5)
    service = CombatService(
        Limits(), _reactor(), config, random.Random(1), ais={"fast": AiProgram("fast", fast_ai)},
        hub=LiveHub(_reactor(), store), records_dir=tmp_path,
    )
    human, ai = await _ann_plays_the_fast_ai(service)
    human.client.drop()  # ann leaves the running game
    await _until(lambda: store.records)
    (record,) = store.records
    assert [(s.name, s.kind, s.rated) for s in record.seats] == [("ann", "guest", False), ("fast", "program", True)]
    assert (record.scores, record.reason, record.rated) == ((0.0, 1.0), "forfeit", True), "the AI wins"
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert (result["winner"], result["reason"], result["aborted"]) == (1, "forfeit", False)
    await _until(lambda: ai.ended is not None and ai.ended.called)
    await _until(lambda: not service.tables)


@pytest_twisted.ensureDeferred
async def test_a_person_comes_back_to_its_game_against_the_ai_with_its_resume_token(fast_ai):
    config = CombatConfig(move_time=0, rejoin_grace=60)
    service = CombatService(Limits(), _reactor(), config, random.Random(1), ais={"fast": AiProgram("fast", fast_ai)})
    human, ai = await _ann_plays_the_fast_ai(service)
    table = service.tables[ai.seating.table_id]
    human.client.drop()
    impostor = Human(service)
    assert impostor.say("NAME ann") == ["ERROR 432 another player here uses that name just now (ann)"]
    assert impostor.say("COMPUTER fast")[-1] == "OK COMPUTER fast: binary protocol follows"
    assert len(service.tables) == 2, "a new game against a new AI, not ann's"
    impostor.client.drop()
    await _until(lambda: len(service.tables) == 1)  # its AI leaves the table nobody else can join
    back = Human(service)
    assert back.say(f"RESUME {human.token}") == ["OK RESUME seat 0 (ann): binary protocol follows"]
    got = back.poll()
    assert got[0] == wire.MsgSeat(0, 2) and isinstance(got[-1], wire.MsgStart)
    assert len(service.tables) == 1 and _ai_of(service) is ai, "the same game, the same AI"
    sync = next(m for m in got if isinstance(m, wire.MsgSync))
    assert sync.state is wire.State.PLAYING and sync.turn == 0
    source, target = _legal_move(table)
    back.send(wire.ReqMove(source, target))
    await _until(lambda: table.turn == 0 or table.state is not wire.State.PLAYING)
    assert any(isinstance(m, (wire.MsgMove, wire.MsgAttack)) and m.source >= 40 for m in back.poll()), "the AI answers"
    service.abort_games()
    await _until(lambda: ai.ended is not None and ai.ended.called)
