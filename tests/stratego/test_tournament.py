"""Tournaments: pairings with colours alternated, the 2012 scoring table, standings, and the
service that plays them and records every game (scripted seats here; real programs in
tests/stratego/test_service_programs.py)."""

from __future__ import annotations

import json

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent

from gamed.config import AiProgram, Limits, StrategoConfig
from gamed.stratego import tournament
from gamed.stratego.service import StrategoService, read_results, table
from tests.stratego.scripted import BLUE_DEFAULT, RED_DEFAULT, ScriptedSeat


def test_a_round_plays_every_ordered_pair_games_over_two_times():
    pairs = tournament.pairings(["a", "b", "c"], 4)
    assert len(pairs) == 12
    for red in "abc":
        assert sum(1 for r, b in pairs if r == red) == 4, "each plays RED as often as BLUE"
        assert sum(1 for r, b in pairs if b == red) == 4
    assert all(r != b for r, b in pairs)


@pytest.mark.parametrize(
    "line, red, blue",
    [
        ("./a RED VICTORY 100 40 30", 0.3, 0.1),
        ("./b BLUE VICTORY 100 40 30", 0.1, 0.3),
        ("./a RED SURRENDER 3 148 148", 0.0, 0.3),
        ("./a RED DRAW 300 0 0", 0.2, 0.2),
        ("./b BLUE DRAW_DEFAULT 1000 50 60", 0.1, 0.1),
        ("./a RED ILLEGAL 5 148 148", -0.1, 0.2),
        ("./b BLUE ILLEGAL 5 148 148", 0.2, -0.1),
        ("./a RED BAD_SETUP 0 0 148", 0.0, 0.0),
        ("neither BOTH BAD_SETUP 0 0 0", 0.0, 0.0),
        ("garbage", 0.0, 0.0),
    ],
)
def test_scoring_follows_the_2012_runner(line, red, blue):
    scored = tournament.score(line)
    assert (scored.red, scored.blue) == (red, blue)


def test_standings_sum_points_and_count_results():
    rows = tournament.standings(
        [
            ("a", "b", "./a RED VICTORY 10 1 1"),
            ("b", "a", "./b RED ILLEGAL 3 1 1"),
            ("a", "c", "./c BLUE DRAW_DEFAULT 1000 1 1"),
        ]
    )
    assert [(r.name, r.points, r.wins, r.draws, r.losses, r.illegal) for r in rows] == [
        ("a", 0.6, 2, 1, 0, 0),
        ("c", 0.1, 0, 1, 0, 0),
        ("b", 0.0, 0, 0, 2, 1),
    ]
    assert tournament.render(rows)[1].split()[:3] == ["1", "a", "0.6"]


def scripted_factory(behaviour):
    """Seats for registered names: 'quitter' surrenders at once, 'mover' plays 0 3 DOWN then waits."""

    def make(ai, workdir):
        seat = ScriptedSeat(ai.command, None, behaviour[ai.name]())
        # The default setup of whichever colour the seat is given.
        seat.setup = lambda colour, opponent, seat=seat: (
            seat.read.append(f"{colour} {opponent} 10 10")
            or defer.succeed(RED_DEFAULT if colour == "RED" else BLUE_DEFAULT)
        )
        return seat

    return make


def make_service(tmp_path, **settings):
    ais = (AiProgram("quitter", "./quit.py"), AiProgram("mover", "./move.py", opponent="mover-v1"))
    config = StrategoConfig(ai=ais, **settings)
    behaviour = {"quitter": lambda: ["SURRENDER"], "mover": lambda: ["1 3 DOWN", "1 6 UP", "SURRENDER"]}
    return StrategoService(config, Limits(), Clock(), tmp_path, seat_factory=scripted_factory(behaviour))


def test_a_tournament_records_every_game_and_its_log(tmp_path):
    service = make_service(tmp_path, games=2)
    done = []
    service.run_tournament(1).addCallback(done.append)
    assert done, "scripted seats answer at once"
    directory = done[0]
    games = read_results(directory)
    assert [(g["red"], g["blue"], g["result"]) for g in games] == [
        ("quitter", "mover", "./quit.py RED SURRENDER 1 148 148"),
        ("mover", "quitter", "./quit.py BLUE SURRENDER 1 148 148"),
    ]
    log = (directory / games[0]["log"]).read_text().splitlines()
    assert log[0] == "./quit.py RED SETUP" and log[-1] == games[0]["result"]
    assert all(not g["aborted"] for g in games)
    assert table(directory)[1].split()[:3] == ["1", "mover", "0.6"]
    assert not [p for p in directory.iterdir() if p.name not in ("logs", "results.jsonl", "tournament.json")], "fresh workdirs removed"


def test_the_opponent_shown_is_the_registered_one(tmp_path):
    seats = []
    service = make_service(tmp_path)
    factory = service._seat_factory
    service._seat_factory = lambda ai, workdir: seats.append(factory(ai, workdir)) or seats[-1]
    service.run_tournament(1)
    quitter_as_red = seats[0]
    assert quitter_as_red.read[0] == "RED mover-v1 10 10"


def test_results_survive_a_line_cut_off_by_a_crash(tmp_path):
    (tmp_path / "results.jsonl").write_text(json.dumps({"game": 1, "red": "a", "blue": "b", "result": "./a RED DRAW 1 0 0"}) + "\n{\"game\": 2, \"re")
    assert [g["game"] for g in read_results(tmp_path)] == [1]


def test_shutdown_aborts_running_games_and_starts_no_more(tmp_path):
    hanging = defer.Deferred()

    def make(ai, workdir):
        seat = ScriptedSeat(ai.command, RED_DEFAULT if ai.name == "quitter" else BLUE_DEFAULT)
        seat.move = lambda view, acceptable: hanging  # never answers until killed
        seat.kill = lambda: (hanging.called or hanging.callback(None)) or defer.succeed(None)
        return seat

    config = StrategoConfig(ai=(AiProgram("quitter", "./q"), AiProgram("mover", "./m")), concurrency=1)
    service = StrategoService(config, Limits(), Clock(), tmp_path, seat_factory=make)
    done = []
    service.run_tournament(1).addCallback(done.append)
    assert not done
    service.stopService()
    assert done, "the tournament ends once its running game is aborted"
    games = read_results(done[0])
    assert len(games) == 1 and games[0]["aborted"], "the second game never started"
    assert table(done[0]) == table(done[0])[:1], "aborted games are not in the standings"


def resumable(tmp_path, hang_game=None, **settings):
    """A service on ``tmp_path`` whose seats play the scripted games, except that game number
    ``hang_game`` never gets its setups (until its programs are killed)."""
    played = []

    def make(ai, workdir):
        game = len(played) // 2 + 1
        played.append((game, ai.name))
        if game == hang_game:
            seat = ScriptedSeat(ai.command)
            hanging = defer.Deferred()
            seat.setup = lambda colour, opponent: hanging
            seat.kill = lambda: (hanging.called or hanging.callback([])) or defer.succeed(None)
            return seat
        return scripted_factory({"quitter": lambda: ["SURRENDER"], "mover": lambda: ["1 3 DOWN", "SURRENDER"]})(ai, workdir)

    ais = (AiProgram("quitter", "./quit.py"), AiProgram("mover", "./move.py"))
    config = StrategoConfig(ai=ais, rounds=1, concurrency=1, **settings)
    return StrategoService(config, Limits(), Clock(), tmp_path, seat_factory=make), played


def test_a_restart_continues_the_tournament_where_it_stopped(tmp_path):
    first, played = resumable(tmp_path, hang_game=2)
    first.startService()
    assert [game for game, _ in played] == [1, 1, 2, 2], "game 2 waits for its setups"
    first.stopService()  # game 2 is aborted
    (directory,) = tmp_path.glob("tournament-*")
    assert [(g["game"], g["aborted"]) for g in read_results(directory)] == [(1, False), (2, True)]

    again, played = resumable(tmp_path)
    with capturedLogs() as events:
        again.startService()
    assert [game for game, _ in played] == [1, 1], "only the interrupted game is played again, as game 2"
    assert list(tmp_path.glob("tournament-*")) == [directory], "no new tournament"
    games = read_results(directory)
    assert [(g["game"], g["red"], g["aborted"]) for g in games] == [(1, "quitter", False), (2, "mover", True), (2, "mover", False)]
    assert games[1]["log"] != games[2]["log"] and (directory / games[1]["log"]).exists(), "the aborted game's log is kept"
    assert [row.split()[:4] for row in table(directory)[1:]] == [["1", "mover", "0.6", "2"], ["2", "quitter", "0.0", "2"]]
    logged = " | ".join(formatEvent(e) for e in events)
    assert f"stratego tournament {directory}: continuing, 1 of 2 games recorded" in logged, logged


def test_a_game_cut_off_by_a_crash_is_played_at_the_next_start(tmp_path):
    crashed, _ = resumable(tmp_path, hang_game=2)
    crashed.startService()  # the daemon dies here without stopping: game 2 left no line at all
    (directory,) = tmp_path.glob("tournament-*")
    assert [g["game"] for g in read_results(directory)] == [1]
    again, played = resumable(tmp_path)
    again.startService()
    assert [game for game, _ in played] == [1, 1]
    assert [(g["game"], g["aborted"]) for g in read_results(directory)] == [(1, False), (2, False)]


def test_a_complete_tournament_is_not_played_again_but_another_configuration_is_a_new_one(tmp_path):
    first, played = resumable(tmp_path)
    first.startService()
    assert len(played) == 4
    (directory,) = tmp_path.glob("tournament-*")
    again, played = resumable(tmp_path)
    with capturedLogs() as events:
        again.startService()
    assert played == [] and len(read_results(directory)) == 2
    logged = " | ".join(formatEvent(e) for e in events)
    assert f"stratego tournament {directory} is complete (2 games)" in logged, logged
    other, played = resumable(tmp_path, max_turns=50)
    other.startService()
    assert len(played) == 4 and len(list(tmp_path.glob("tournament-*"))) == 2, "other match settings: a fresh tournament"
