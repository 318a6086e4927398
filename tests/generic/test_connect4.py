"""Connect Four through the generic port: against a person on the Connect Four port, the
built-in engine and the perfect solver; a full column, bad options, taking a seat back. In
memory, on a Clock; every server message is schema-checked."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from gamed.connect4 import engines
from gamed.connect4.generic import Connect4Host
from tests.connect4.native_libs import NATIVE, install_book
from tests.connect4.test_protocol import greeted, make_service
from tests.generic.harness import JsonClient, generic_service
from tests.memclient import next_turns


def world_of(c4):
    generic = generic_service({"connect4": Connect4Host(c4)}, c4.players, c4.clock)
    return c4.clock, c4, generic


@pytest.fixture
def world():
    return world_of(make_service())


def bot(generic, name):
    client = JsonClient(generic)
    (hello,) = client.messages()
    assert hello["games"] == ["connect4"]
    client.send({"type": "guest", "name": name, "id": 1})
    assert client.messages() == [{"type": "ok", "for": "guest", "id": 1, "name": name}]
    return client


def person_at(c4, name, table):
    person = greeted(c4)
    person.send(f"NAME {name}", f"TABLE {table}")
    return person


def cells_of(state):
    return state["observation"]["cells"]


def test_the_games_reply_lists_connect4_with_its_options_and_engines(world):
    _, _, generic = world
    client = bot(generic, "ann")
    client.send({"type": "games"})
    (games,) = client.messages()
    (c4,) = games["games"]
    assert c4["name"] == "connect4" and c4["title"] == "Connect Four" and c4["seats"] == [2, 2]
    assert c4["opponents"] == ["person", "engine"]
    assert c4["options"]["width"] == {"type": "integer", "default": 7, "help": "columns of the board",
                                      "minimum": 4, "maximum": 16}
    assert c4["options"]["height"]["default"] == 6
    assert c4["engines"]["gamed"]["levels"][0].startswith("Random") and c4["levels"]["gamed:0"].startswith("Random")
    assert "column" in c4["grammar"]


def test_a_generic_bot_and_a_telnet_person_meet_at_one_table_and_play_both_ways(world):
    clock, c4, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "table": "t1"})
    assert [m["type"] for m in gen.messages()] == ["ok", "waiting"]
    person = person_at(c4, "tel", "t1")
    lines = person.read()
    assert "START 1 1 7x6 gen" in lines, lines
    msgs = gen.messages()
    started = msgs[0]
    assert started["type"] == "started" and started["seat"] == 0 and started["seats"] == ["gen", "tel"]
    assert started["options"] == {"width": 7, "height": 6, "clock": "1m", "move_time": 60.0}
    state = msgs[-1]
    assert state["type"] == "state" and state["to_act"] == [0] and state["turn"] == 0
    assert state["actions"] == ["0", "1", "2", "3", "4", "5", "6"]
    assert state["clock"] == {"move": 60.0, "banks": [None, None]}
    assert cells_of(state) == [[None] * 6] * 7 and "0 (X) to move" in state["text"]
    gen.send({"type": "act", "action": "3"})
    msgs = gen.messages()
    assert msgs[-1]["to_act"] == [1] and "actions" not in msgs[-1] and msgs[-1]["turn"] == 1
    assert cells_of(msgs[-1])[3][0] == 0
    lines = person.read()
    assert "PLAYED 0 3 0" in lines and any(line.startswith("YOURMOVE") for line in lines)
    person.send("MOVE 3")
    assert "PLAYED 1 3 1" in person.read()
    state = gen.messages()[-1]
    assert state["to_act"] == [0] and state["turn"] == 2 and cells_of(state)[3][:2] == [0, 1]
    gen.send({"type": "act", "action": 0, "turn": 2})  # by index: column 0
    assert cells_of(gen.messages()[-1])[0][0] == 0
    assert "PLAYED 0 0 0" in person.read()
    person.send("RESIGN")
    (ended,) = gen.of("ended")
    assert ended["reason"] == "resign" and ended["scores"] == [1.0, 0.0] and "tel resigned" in ended["text"]
    assert ended["observation"]["cells"][3][:2] == [0, 1]


def test_a_full_column_is_refused_with_the_legal_actions(world):
    clock, c4, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "table": "t2", "options": {"width": 5, "height": 4}})
    person = person_at(c4, "tel", "t2 5x4")
    assert any(line.startswith("START") and "5x4" in line for line in person.read())
    started = gen.of("started")[0]
    assert started["options"]["width"] == 5 and started["options"]["height"] == 4
    for _ in range(2):
        gen.send({"type": "act", "action": "2"})
        person.send("MOVE 2")
    msgs = gen.messages()
    assert msgs[-1]["actions"] == ["0", "1", "3", "4"]
    gen.send({"type": "act", "action": "2"})
    (error,) = gen.messages()
    assert error["code"] == "no_such_action" and error["legal"] == ["0", "1", "3", "4"]
    assert error["retries_left"] == 2 and "full" in error["text"]
    gen.send({"type": "act", "action": "4"})
    assert gen.messages()[-1]["to_act"] == [1]


@pytest.mark.parametrize(
    "play, text",
    [
        ({"options": {"pits": 4}}, "unknown option pits"),
        ({"options": {"width": 99}}, "option width must be from 4 to 16"),
        ({"options": {"height": "tall"}}, "option height must be a integer"),
        ({"clock": "forever"}, "clock: "),
    ],
)
def test_bad_options_are_bad_option(world, play, text):
    _, _, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", **play})
    (error,) = gen.messages()
    assert error["code"] == "bad_option" and error["text"].startswith(text), error
    gen.send({"type": "play", "game": "connect4", "table": "ok"})
    assert [m["type"] for m in gen.messages()] == ["ok", "waiting"]


@pytest.mark.parametrize(
    "opponent",
    [{"kind": "bot"}, {"kind": "engine", "name": "deep-blue"}, {"kind": "engine", "level": "9"},
     {"kind": "engine", "level": "godlike"}],
)
def test_an_opponent_that_is_not_here_is_no_such_opponent(world, opponent):
    _, _, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "opponent": opponent})
    (error,) = gen.messages()
    assert error["code"] == "no_such_opponent", error


def until_asked(clock, client, seat):
    msgs = []
    for _ in range(100):
        next_turns(clock)
        msgs += client.messages()
        last = msgs[-1] if msgs else {"type": None}
        if last["type"] == "ended" or last["type"] == "state" and last["to_act"] == [seat]:
            return msgs
    raise AssertionError(f"never asked: {msgs}")


def play_out(clock, gen, seat, choose, msgs):
    """From ``msgs`` (up to the state that asks ``seat``), play ``choose(state)`` whenever asked
    until the end; the ended message."""
    for _ in range(200):
        if msgs[-1]["type"] == "ended":
            return msgs[-1]
        gen.send({"type": "act", "action": choose(msgs[-1]), "turn": msgs[-1]["turn"]})
        msgs = until_asked(clock, gen, seat)
    raise AssertionError("no end")


def winner_of(observation):
    line = observation["win_line"]
    return None if line is None else observation["cells"][line[0][0]][line[0][1]]


def test_an_engine_by_name_and_level_plays_a_whole_game_on_a_clock(world):
    clock, _, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "opponent": {"kind": "engine", "name": "gamed", "level": "Random"},
              "seat": 1, "clock": "5m+2s"})
    msgs = until_asked(clock, gen, 1)
    assert msgs[0]["type"] == "ok" and msgs[1]["type"] == "started" and msgs[1]["seats"] == ["gamed:0", "gen"]
    assert msgs[1]["options"] == {"width": 7, "height": 6, "clock": "5m+2s"}
    assert msgs[-1]["clock"]["banks"][1] == 300.0 and msgs[-1]["turn"] == 1
    ended = play_out(clock, gen, 1, lambda state: state["actions"][0], msgs)
    winner = winner_of(ended["observation"])
    assert ended["scores"] == ([1.0, 0.0] if winner == 0 else [0.0, 1.0] if winner == 1 else [0.5, 0.5])
    assert ended["reason"] == ("four" if winner is not None else "full")


def test_a_dropped_generic_bot_takes_its_seat_back_with_its_token(world):
    clock, c4, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "table": "t3", "clock": "3m"})
    person = person_at(c4, "tel", "t3 CLOCK 3m")
    first = gen.of("started")[0]
    gen.send({"type": "act", "action": "3"})
    person.send("MOVE 4")
    gen.messages()
    gen.send({"type": "token"})
    (token,) = gen.messages()
    gen.drop()
    assert any(line.startswith("AWAY 0 gen") for line in person.read())
    again = JsonClient(generic)
    again.messages()
    again.send({"type": "resume", "token": token["token"]})
    msgs = again.messages()
    assert [m["type"] for m in msgs][:2] == ["ok", "started"] and msgs[1]["resumed"] is True
    assert msgs[1]["options"] == first["options"] and msgs[1]["seats"] == ["gen", "tel"]
    state = msgs[-1]
    assert state["type"] == "state" and state["to_act"] == [0] and state["turn"] == 2 and state["actions"]
    assert cells_of(state)[3][0] == 0 and cells_of(state)[4][0] == 1
    assert any(line.startswith("BACK 0 gen") for line in person.read())
    again.send({"type": "act", "action": "3", "turn": 2})
    assert again.messages()[-1]["to_act"] == [1]
    assert "PLAYED 0 3 1" in person.read()


# --- the perfect solver (gamed/connect4/native/solver.c), in this process ------------------------

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


class _Solver:
    """The solver's library behind the built-in engines' interface (engines.IEngine), so the
    service plays it in memory, as it plays its own engine."""

    last_error = None

    def __init__(self, lib, rng=None):
        self.lib = lib

    def description(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self.lib.C4_Desc(buf, 256)
        return buf.value.decode()

    def new_game(self, width, height):
        return bool(self.lib.C4_NewGame(width, height, 0))

    def play_move(self, player, column):
        return bool(self.lib.C4_PlayMove(player, column))

    def auto_move(self, player, level):
        return int(self.lib.C4_AutoMove(player, level))

    def end_game(self):
        self.lib.C4_EndGame()

    def enum_levels(self, level):
        buf = ctypes.create_string_buffer(256)
        return buf.value.decode() if self.lib.C4_EnumLevels(level, buf, 256) else None


@pytest.fixture(scope="module")
def solver_lib(tmp_path_factory):
    if CC is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) FOUND: the solver is not built")
    folder = tmp_path_factory.mktemp("c4solver")
    try:
        install_book(folder)  # Perfect is exact on 7x6 with its opening book beside it
    except ImportError:
        pytest.skip("the solver's opening book (bitbully-databases) is not installed")
    out = folder / "libsolver.so"
    subprocess.run([CC, "-O2", "-fPIC", "-shared", "-o", str(out), str(NATIVE / "solver.c")], check=True,
                   capture_output=True, timeout=120)
    lib = ctypes.CDLL(str(out))
    long = ctypes.c_long
    text = [ctypes.c_char_p, ctypes.c_size_t]
    for fn, res, args in [("C4_Desc", None, text), ("C4_NewGame", ctypes.c_int, [long] * 3),
                          ("C4_PlayMove", ctypes.c_int, [long] * 2), ("C4_AutoMove", long, [long] * 2),
                          ("C4_EndGame", None, []), ("C4_EnumLevels", ctypes.c_int, [long, *text])]:
        getattr(lib, fn).restype, getattr(lib, fn).argtypes = res, args
    return lib


def test_a_generic_bot_does_not_beat_the_perfect_solver(solver_lib, monkeypatch):
    monkeypatch.setitem(engines._REGISTRY, "solver", lambda rng=None: _Solver(solver_lib, rng))
    clock, _, generic = world_of(make_service())
    gen = bot(generic, "gen")
    gen.send({"type": "games"})
    levels = gen.messages()[0]["games"][0]["engines"]["solver"]["levels"]
    assert levels[2].startswith("Perfect")
    gen.send({"type": "play", "game": "connect4", "opponent": {"kind": "engine", "level": "solver:Perfect"}, "seat": 1})
    msgs = until_asked(clock, gen, 1)
    assert msgs[1]["seats"] == ["solver:2", "gen"]
    assert cells_of(msgs[-1])[3][0] == 0, "the solver opens in the middle"
    middle = lambda state: min(state["actions"], key=lambda a: (abs(int(a) - 3), a))  # noqa: E731
    ended = play_out(clock, gen, 1, middle, msgs)
    assert ended["reason"] in ("four", "full")
    winner = winner_of(ended["observation"])
    assert winner != 1, "nobody beats the solver's first move on 7x6"
    assert ended["scores"] == ([1.0, 0.0] if winner == 0 else [0.5, 0.5])
    if winner == 0:
        assert ended["text"] == "solver:2 won: four in a row"


def test_the_registry_offers_connect4_on_the_generic_port(world):
    from gamed import registry

    _, c4, _ = world
    host = registry.by_name()["connect4"].generic_host(c4)
    assert isinstance(host, Connect4Host) and host.service is c4 and host.name == "connect4"


def test_a_shutdown_ends_the_game_as_aborted_then_says_bye(world):
    clock, c4, generic = world
    gen = bot(generic, "gen")
    gen.send({"type": "play", "game": "connect4", "table": "t4"})
    person_at(c4, "tel", "t4")
    gen.messages()
    generic.startService()
    c4.startService()
    generic.stopService()
    c4.stopService()
    msgs = gen.messages()
    assert [m["type"] for m in msgs] == ["ended", "bye"]
    assert msgs[0]["reason"] == "shutdown" and msgs[0]["scores"] is None and msgs[0]["text"].startswith("aborted")
