"""Stratego matches of the daemon feed the live hub: a table per game (the AI programs' names,
rated), every half-move with the spectator state (a piece's type only once combat showed it), and
the end stored as a match with the game's -o log in ``extra["ucc_log"]``."""

from __future__ import annotations

from twisted.internet import defer
from twisted.internet.task import Clock

from gamed.config import AiProgram, Limits, StrategoConfig
from gamed.observers import LiveHub
from gamed.stratego.referee import MatchResult, Outcome
from gamed.stratego.service import StrategoService, match_scores, read_results
from tests.memstore import MemoryStore
from tests.stratego.scripted import BLUE_DEFAULT, RED_DEFAULT, ScriptedSeat


def make(tmp_path, replies, setups=None):
    """A service whose AIs answer from ``replies[name]`` (a fresh list per game)."""

    def seat(ai, workdir):
        s = ScriptedSeat(ai.command, None, list(replies[ai.name]))
        s.setup = lambda colour, opponent, s=s: defer.succeed(
            (setups or {}).get(ai.name) or (RED_DEFAULT if colour == "RED" else BLUE_DEFAULT)
        )
        return s

    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    ais = tuple(AiProgram(name, f"./{name}.py") for name in replies)
    service = StrategoService(StrategoConfig(ai=ais, timeout=2.0), Limits(), clock, tmp_path, seat_factory=seat, hub=hub)
    return hub, store, service


def test_a_game_is_watched_and_stored_with_its_log(tmp_path):
    replies = {
        "red_ai": ["1 3 DOWN", "1 4 LEFT", "0 4 RIGHT"],
        "blue_ai": ["0 6 UP", "0 5 UP", "SURRENDER"],
    }
    hub, store, service = make(tmp_path, replies)
    seen = []
    original = hub.open

    def open_and_watch(*args, **kwargs):
        table = original(*args, **kwargs)
        seen.append(table)
        return table

    hub.open = open_and_watch
    done = []
    service.run_tournament(1, ["red_ai", "blue_ai"]).addCallback(done.append)
    assert done
    record = store.records[0]  # red_ai plays RED in the first game
    assert record.game == "stratego" and record.rated and record.scores == (1.0, 0.0)
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("red_ai", True, "program"), ("blue_ai", True, "program")]
    assert [(m.seat, m.move) for m in record.moves] == [
        (0, "1 3 DOWN OK"), (1, "0 6 UP OK"), (0, "1 4 LEFT OK"), (1, "0 5 UP DIES 9 6"), (0, "0 4 RIGHT OK"),
    ]
    initial = record.initial_state
    assert initial["width"] == initial["height"] == 10 and initial["cells"][4][2] == "lake"
    assert all(c["unit"] is None for row in initial["cells"] for c in row if isinstance(c, dict))
    last = record.moves[-1].state
    assert last["cells"][4][1] == {"owner": 0, "unit": "lieutenant"}, "revealed in combat, followed as it moves"
    assert last["cells"][3][0] == {"owner": 0, "unit": None} and last["last"] == [[0, 4], [1, 4]]
    assert record.moves[3].state["cells"][5][0] is None, "the scout that died is gone"
    game = read_results(done[0])[0]
    log_text = (done[0] / game["log"]).read_text(encoding="latin-1")
    assert record.extra["ucc_log"] == log_text and record.extra["final_state"]["cells"] and log_text.startswith("./red_ai.py RED SETUP\n")
    assert record.reason == "This player has surrendered!"
    final = seen[0].state
    assert all(c["unit"] is not None for row in final["cells"] for c in row if isinstance(c, dict))
    stored = record.extra["final_state"]  # a replay ends on the whole board
    assert all(c["unit"] is not None for row in stored["cells"] for c in row if isinstance(c, dict))
    assert not hub.tables


def test_a_game_that_ends_in_setup_is_stored_too(tmp_path):
    replies = {"good": [], "bad": []}
    hub, store, service = make(tmp_path, replies, setups={"bad": ["nonsense"]})
    service.run_tournament(1, ["good", "bad"])
    first = store.records[0]
    assert first.moves == () and first.scores == (1.0, 0.0) and "illegal setup" in first.reason
    assert "BAD_SETUP" in first.extra["ucc_log"].splitlines()[-1]


def test_match_scores():
    def result(colour, outcome):
        return MatchResult("x", colour, outcome, 3, 0, 0, "", ())

    assert match_scores(result("RED", Outcome.VICTORY)) == ((1.0, 0.0), True)
    assert match_scores(result("BLUE", Outcome.SURRENDER)) == ((1.0, 0.0), True)
    assert match_scores(result("RED", Outcome.ILLEGAL)) == ((0.0, 1.0), True)
    assert match_scores(result("BLUE", Outcome.DRAW_DEFAULT)) == ((0.5, 0.5), True)
    assert match_scores(result("BOTH", Outcome.BAD_SETUP)) == ((0.0, 0.0), False)
    assert match_scores(None) == ((0.0, 0.0), False)


def test_the_move_that_captures_the_flag_shows_the_capture_and_every_piece(tmp_path):
    blue_setup = ["F67B669999", "6724898974", "BB31555583", "9B8sB479B8"]  # the flag in the front row
    hub, store, service = make(tmp_path, {"red_ai": ["0 3 DOWN 3"], "blue_ai": []}, setups={"blue_ai": blue_setup})
    service.run_tournament(1, ["red_ai", "blue_ai"])
    record = store.records[0]
    assert record.scores == (1.0, 0.0) and record.reason == "Captured the flag"
    (move,) = record.moves
    assert move.move == "0 3 DOWN 3 VICTORY_FLAG" and move.state["last"] == [[0, 3], [0, 6]]
    for state in (move.state, record.extra["final_state"]):  # the last frame of a replay, either way
        assert state["cells"][6][0] == {"owner": 0, "unit": "scout"}, "the attacker is on the flag's square"
        assert state["cells"][3][0] is None, "and no longer on its own"
        units = [c for row in state["cells"] for c in row if isinstance(c, dict)]
        assert all(c["unit"] is not None for c in units) and {"owner": 1, "unit": "flag"} not in units
    log_text = record.extra["ucc_log"]
    assert "1 RED: 0 3 DOWN 3 VICTORY_FLAG" in log_text.splitlines(), "the manager's log is unchanged"
