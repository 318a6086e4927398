"""UCC Stratego through the generic port: a generic bot plays a whole match against an example AI
program (a real subprocess, the real StrategoReferee, the real reactor); refused moves and
opponents. The bot is an in-memory JsonClient of a GenericService on the reactor."""

from __future__ import annotations

import random

import pytest
import pytest_twisted
from twisted.internet import reactor, task

from gamed.config import AiProgram, Limits, PlayersConfig, StrategoConfig
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.stratego.generic import StrategoHost
from gamed.stratego.service import StrategoService
from tests.generic.harness import JsonClient, generic_service
from tests.memstore import MemoryStore
from tests.stratego.test_service_programs import python_ai

pytestmark = pytest.mark.integration


@pytest.fixture
def world(tmp_path, request):
    ais = (AiProgram("random", python_ai(tmp_path, 5)),)
    timeout = getattr(request, "param", 5.0)
    service = StrategoService(StrategoConfig(ai=ais, timeout=timeout, max_turns=150), Limits(), reactor,
                              tmp_path / "state", hub=LiveHub(reactor, MemoryStore()))
    players = Players(PlayersConfig(guests=True), None, reactor)
    generic = generic_service({"stratego": StrategoHost(service)}, players, reactor)
    return service, generic


def bot(generic, name="gen") -> JsonClient:
    client = JsonClient(generic)
    client.messages()
    client.send({"type": "guest", "name": name, "id": 1})
    assert client.messages() == [{"type": "ok", "for": "guest", "id": 1, "name": name}]
    return client


async def until(client: JsonClient, kinds: tuple[str, ...], seen: list[dict], seconds: float = 30.0) -> dict:
    """The next message of one of ``kinds`` (every message read on the way is kept in ``seen``),
    looking again on each reactor turn until ``seconds`` have passed."""
    deadline = reactor.seconds() + seconds
    while True:
        for message in client.messages():
            seen.append(message)
        for i, message in enumerate(seen):
            if message["type"] in kinds:
                del seen[: i + 1]
                return message
        assert reactor.seconds() < deadline, f"no {kinds} in time"
        await task.deferLater(reactor, 0.01, lambda: None)


async def all_ended(service: StrategoService, seconds: float = 30.0) -> None:
    """Wait until the service runs no match (its programs are ended and reaped)."""
    deadline = reactor.seconds() + seconds
    while service._running:
        assert reactor.seconds() < deadline, "the match did not end"
        await task.deferLater(reactor, 0.01, lambda: None)


def enemy_named(observation: dict, seat: int) -> int:
    return sum(1 for row in observation["cells"] for c in row
               if isinstance(c, dict) and c["owner"] != seat and c["unit"] is not None)


@pytest.mark.parametrize("seat", [0, 1])
@pytest_twisted.ensureDeferred
async def test_a_generic_bot_plays_a_whole_match_against_an_ai_program(world, seat):
    service, generic = world
    client = bot(generic)
    client.send({"type": "games"})
    (games,) = client.messages()
    (stratego,) = games["games"]
    assert stratego["opponents"] == ["engine"] and list(stratego["levels"]) == ["random"]
    client.send({"type": "play", "game": "stratego", "opponent": {"kind": "engine", "level": "random"}, "seat": seat})
    seen: list[dict] = []
    assert (await until(client, ("ok",), seen))["for"] == "play"
    started = await until(client, ("started",), seen)
    assert started["seat"] == seat and started["seats"][seat] == "gen" and started["seats"][1 - seat] == "random"
    rng = random.Random(11)
    combats = 0
    asked_moves = 0
    while True:
        message = await until(client, ("state", "ended"), seen)
        if message["type"] == "ended":
            break
        observation = message["observation"]
        last = observation["last_move"] or ""
        combats += any(word in last.split() for word in ("KILLS", "DIES", "BOTHDIE"))
        assert enemy_named(observation, seat) <= combats, "an unrevealed enemy rank is shown"
        if seat not in message["to_act"]:
            continue
        if message["phase"] == "setup":
            assert enemy_named(observation, seat) == 0
            client.send({"type": "act", "action": message["actions"][0], "turn": message["turn"]})
            continue
        assert message["phase"] == "move" and message["clock"]["move"] == 5.0
        moves = [a for a in message["actions"] if a != "SURRENDER"]
        asked_moves += 1
        client.send({"type": "act", "action": rng.choice(moves), "turn": message["turn"]})
    assert asked_moves > 0
    assert message["scores"] in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5]), message
    assert message["reason"] in ("victory", "surrender", "illegal", "draw", "draw_default"), message
    await all_ended(service)


@pytest_twisted.ensureDeferred
async def test_an_illegal_move_is_refused_with_the_legal_ones_and_a_dropped_bot_loses(world):
    service, generic = world
    client = bot(generic)
    client.send({"type": "play", "game": "stratego", "opponent": {"kind": "engine"}, "seat": 0})
    seen: list[dict] = []
    state = await until(client, ("state",), seen)
    assert state["phase"] == "setup"
    client.send({"type": "act", "action": "DEFAULT"})
    state = await until(client, ("state",), seen)
    assert state["phase"] == "move" and state["to_act"] == [0]
    client.send({"type": "act", "action": "0 0 UP"})
    error = await until(client, ("error",), seen)
    assert error["code"] == "no_such_action" and error["retries_left"] == 2
    assert error["legal"] == state["actions"] and "SURRENDER" in error["legal"]
    (referee,) = service._running
    program = referee.seats[1]
    client.drop()
    await all_ended(service)
    assert referee.log[-1].startswith("gen RED SURRENDER"), referee.log[-1]
    assert program.exit_code is not None or program.exit_signal is not None, "the program is ended"
    (record,) = service.hub.store.records  # the web site's match: the bot's surrender
    assert [(s.name, s.kind) for s in record.seats] == [("gen", "guest"), ("random", "program")]
    assert record.scores == (0.0, 1.0) and record.reason == "This player has surrendered!"
    assert not service.hub.tables


def test_opponents_that_are_not_there_are_refused(world, tmp_path):
    service, generic = world
    client = bot(generic)
    client.send({"type": "play", "game": "stratego", "opponent": {"kind": "engine", "level": "nope"}})
    (error,) = client.messages()
    assert error["code"] == "no_such_opponent" and "random" in error["text"]
    client.send({"type": "play", "game": "stratego", "opponent": {"kind": "person"}})
    (error,) = client.messages()
    assert error["code"] == "no_such_opponent" and "engine" in error["text"]
    empty = StrategoService(StrategoConfig(), Limits(), reactor, tmp_path / "empty")
    other = generic_service({"stratego": StrategoHost(empty)}, Players(PlayersConfig(guests=True), None, reactor),
                            reactor)
    client = bot(other)
    client.send({"type": "play", "game": "stratego"})
    (error,) = client.messages()
    assert error["code"] == "unavailable"


@pytest.mark.parametrize("world", [1.0], indirect=True)
@pytest_twisted.ensureDeferred
async def test_a_move_not_answered_in_time_loses_and_a_shutdown_aborts(world):
    service, generic = world
    late = bot(generic, "late")
    late.send({"type": "play", "game": "stratego", "seat": 1})
    seen: list[dict] = []
    state = await until(late, ("state",), seen)
    assert state["phase"] == "setup" and state["clock"]["move"] == 1.0
    late.send({"type": "act", "action": "DEFAULT"})
    ended = await until(late, ("ended",), seen)  # the first move is never answered
    assert ended["reason"] == "illegal" and ended["scores"] == [1.0, 0.0]
    assert ended["text"] == "random won: late ran out of time", ended["text"]
    await all_ended(service)
    client = bot(generic, "stays")
    client.send({"type": "play", "game": "stratego", "seat": 0})
    state = await until(client, ("state",), seen)
    service.abort_games()
    ended = await until(client, ("ended",), seen)
    assert ended["reason"] == "shutdown" and ended["scores"] is None
    await all_ended(service)
