"""The Virtual Fight service as a whole: grouping AIs into games, many games at once, shutdown,
connection limits, and the start-up checks of its options (ports, map files, team counts)."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock
from twisted.python import usage

from gamed import tap
from gamed.fight.rules import default_map
from tests.fight.harness import Client, ai, arena, gui, make_service, start_game

PASS_ALL = [f"{n}&NONE" for n in range(5)]


def test_many_games_run_at_once_in_arrival_order():
    service = make_service(fmap=arena())
    clients = [ai(service) for _ in range(6)]
    assert sorted(service.games) == [1, 2, 3]
    for game_id, pair in zip((1, 2, 3), (clients[0:2], clients[2:4], clients[4:6])):
        assert service.games[game_id].players == [c.player for c in pair]
    for c in clients:
        assert c.read() == ["OK", "READY"]


def test_a_connection_that_closed_while_waiting_never_becomes_a_team():
    service = make_service(fmap=arena())
    gone = ai(service)
    gone.drop()
    a = ai(service)
    assert not service.games and a.read() == ["OK"]
    b = ai(service)
    assert service.games[1].players == [a.player, b.player]


def test_pair_delay_lets_an_ai_choose_a_table_first():
    clock = Clock()
    service = make_service(clock, fmap=arena(), pair_delay=0.5)
    a = ai(service)
    b = ai(service, "TABLE&t1")
    c = ai(service, "NAME&carol", "TABLE&t1")
    assert [x.read() for x in (a, b, c)] == [["OK"], ["OK", "255", "READY"], ["OK", "255", "255", "READY"]]
    assert service.games[1].names == ["team0", "carol"]
    clock.advance(0.5)
    assert a.read() == [] and len(service.games) == 1, "a waits in the general queue"


def test_four_team_games_on_the_four_team_map():
    service = make_service(teams=4, map="four")
    clients = start_game(service, teams=4)
    game = service.games[1]
    assert game.names == ["team0", "team1", "team2", "team3"]
    for c in clients[:3]:
        c.send(*PASS_ALL)
    assert all(c.read() == ["255"] * 5 for c in clients[:3])
    clients[3].send(*PASS_ALL)
    assert clients[0].read() == ["200", "READY"]


def test_a_map_without_enough_teams_is_refused():
    with pytest.raises(ValueError, match="start squares for 2 teams, not 3"):
        make_service(fmap=default_map(), teams=3)


def test_shutdown_tells_every_ai_and_closes_every_connection():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    service.startService()
    a, b = start_game(service)
    waiting = ai(service)
    waiting.read()
    g = gui(service)
    g.read()
    d = service.stopService()
    assert a.read() == ["GAMEOVER&DRAW"] and b.read() == ["GAMEOVER&DRAW"]
    assert waiting.read() == ["GAMEOVER&DRAW"]
    assert g.read()[-1] == "GAMEOVER&DRAW&1"
    for c in (a, b, waiting, g):
        c.finish()
        assert c.lost
    assert d.called and not service.games


def test_connection_limits_answer_full():
    service = make_service(fmap=arena(), max_per_peer=1)
    port = service.ai_port_factory()  # the limits count per listening port
    Client(service, factory=port).read()
    refused = Client(service, factory=port)
    assert refused.read() == ["FULL&too many connections from 192.0.2.1 (limit 1)"]


def test_an_internal_error_is_answered_100_and_the_game_goes_on(monkeypatch):
    service = make_service(fmap=arena())
    a, b = start_game(service)
    battle = service.games[1].battle

    def broken(team, command):
        raise RuntimeError("bug")

    monkeypatch.setattr(battle, "execute", broken)
    a.send("0&POS")
    assert a.read() == ["100"]
    monkeypatch.undo()
    a.send("0&POS")
    assert a.read() == ["0,0"]


# --- start-up options ------------------------------------------------------------------------


def options(*argv):
    o = tap.Options()
    o.parseOptions(list(argv))
    return o


def test_fight_defaults_and_options():
    o = options()
    assert o.config.fight.listen == ("tcp:4500",) and o.config.fight.gui_listen == ("tcp:4550",)
    assert o.prepared["fight"].name == "default" and o.config.fight.turn_time == 5
    o = options("--fight-teams", "4", "--fight-map", "four", "--fight-turn-time", "1.5", "--fight-gui", "none")
    assert o.config.fight.teams == 4 and o.prepared["fight"].teams == 4 and o.config.fight.gui_listen == ()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--fight-teams", "5"], "fight.teams must be 2 to 4, not 5"),
        (["--fight-teams", "3"], "fight.map: default has start squares for 2 teams, but fight.teams is 3"),
        (["--fight-map", "nowhere"], "fight.map: no shipped map called 'nowhere' (shipped: default, four)"),
        (["--fight-map", "/nonexistent/x.map"], "fight.map: cannot read map file /nonexistent/x.map"),
        (["--fight-max-turns", "0"], "fight.max_turns must be at least 1"),
        (["--fight-gui-token", "a b"], "fight.gui_token must be printable ASCII"),
        (["--fight", "tcp:nope"], "--fight 'tcp:nope' is not a usable listen description"),
        (["--fight-gui", "tcp:nope"], "--fight-gui 'tcp:nope' is not a usable listen description"),
    ],
)
def test_bad_fight_options_stop_start_up(argv, message):
    with pytest.raises(usage.UsageError) as e:
        options(*argv)
    assert message in str(e.value)


def test_an_invalid_map_file_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "lopsided.map"
    path.write_text("00000\n.....\n#...1\n....1\n..111\n")
    with pytest.raises(usage.UsageError) as e:
        options("--fight-map", str(path))
    assert str(e.value).startswith(f"fight.map: {path}: a 2-team map must be point-symmetric")


def test_a_valid_map_file_is_used(tmp_path):
    path = tmp_path / "small.map"
    path.write_text("00000\n.....\n..#..\n.....\n11111\n")
    o = options("--fight-map", str(path))
    assert o.prepared["fight"].rows == 5 and o.prepared["fight"].walls == {(2, 2)}


def test_help_on_the_ai_port_lists_the_commands_before_and_during_a_game():
    service = make_service(fmap=arena())
    a = ai(service, "HELP")
    lines = a.read()
    assert lines[0] == "OK" and lines[-1] == "HELP&END" and all(line.startswith("HELP&") for line in lines[1:])
    words = [line.split()[0] for line in lines[1:-1]]
    assert words[:8] == [
        "HELP&n&POS", "HELP&n&DIR", "HELP&n&SAW", "HELP&n&MOVE&D",
        "HELP&n&SHOOT[&D]", "HELP&n&NONE[&D]", "HELP&NAME&<name>", "HELP&TABLE&<table>",
    ]
    b = ai(service)
    assert a.read() == ["READY"] and b.read() == ["OK", "READY"]
    b.send("0&POS", "Help", "1&POS")
    assert b.read() == ["9,5", *lines[1:], "9,6"], "in a game too, in order with the other replies"
