"""The Connect Four line protocol, in memory: StringTransport clients on a Clock."""

from __future__ import annotations

import random

from twisted.internet.task import Clock

from gamed.config import Limits
from gamed.connect4.service import Connect4Service, Connect4Settings
from tests.memclient import Client


def make_service(seed: int = 3, **settings) -> Connect4Service:
    settings.setdefault("board", False)
    return Connect4Service(Connect4Settings(**settings), Limits(), Clock(), rng=random.Random(seed))


def greeted(service) -> Client:
    c = Client(service)
    c.read()
    return c


def pair(service, size: str = ""):
    a, b = greeted(service), greeted(service)
    a.send("NAME alice", f"TABLE t1 {size}".strip())
    b.send("NAME bob", f"TABLE t1 {size}".strip())
    return a, b


def codes(lines):
    return [int(line.split()[1]) for line in lines if line.startswith("ERROR")]


def test_greeting():
    c = Client(make_service())
    lines = c.read()
    assert lines[0].startswith("HELLO CONNECT4/1 gamed/")
    assert lines[1].startswith("INFO")
    c.send("HELP")
    assert c.read()[-1] == "HELP END"


def test_help_lists_the_game_and_help_accounts_the_login_commands():
    c = Client(make_service())
    c.read()
    c.send("HELP")
    commands = [line.split()[1] for line in c.read()[:-1]]
    assert "LOGIN" not in commands and "CLOCKS" not in commands and "MATCH" in commands, "HELP alone lists what it always listed"
    c.send("HELP accounts")
    accounts = [line.split()[1] for line in c.read()[:-1]]
    assert accounts == ["LOGIN", "RESUME", "TOKEN", "LADDER"]
    c.send("HELP clocks")
    clocks = [line.split()[1] for line in c.read()[:-1]]
    assert clocks == ["CLOCKS", "PLAY", "TABLE"]
    c.send("HELP selftest")
    selftest = [line.split()[1] for line in c.read()[:-1]]
    assert selftest == ["SELFTEST"]
    assert sorted(set(commands + accounts + clocks + selftest)) == sorted(type(c.player)._COMMANDS), "every command is listed"


def test_engines_lists_levels():
    c = greeted(make_service())
    c.send("ENGINES")
    lines = c.read()
    assert lines[0].startswith("ENGINE gamed 5 ")
    assert [line.split()[:3] for line in lines[1:6]] == [["LEVEL", "gamed", str(n)] for n in range(5)]
    assert lines[-1] == "ENGINE END"


def _check_result(lines, board_line, me):
    result = [line for line in lines if line.startswith("RESULT")][0].split()
    cells = board_line.split()[2:]  # rows, bottom first
    outcome, reason, winner = result[1:4]
    x1, y1, x2, y2 = map(int, result[4:])
    if reason == "FOUR":
        stones = {cells[y][x] for x, y in _segment(x1, y1, x2, y2)}
        assert stones == {winner}
        assert max(abs(x2 - x1), abs(y2 - y1)) >= 3
        assert outcome == ("WIN" if int(winner) == me else "LOSE")
    else:
        assert (reason, winner, outcome) == ("FULL", "-", "DRAW")


def _segment(x1, y1, x2, y2):
    n = max(abs(x2 - x1), abs(y2 - y1))
    dx, dy = (x2 - x1) // n, (y2 - y1) // n
    return [(x1 + i * dx, y1 + i * dy) for i in range(n + 1)]


def test_person_plays_random_engine_to_the_end():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:0 FIRST 5x4")
    lines = c.read()
    assert lines[0] == "START 1 0 5x4 gamed:0"
    rng = random.Random(11)
    all_lines = list(lines)
    for _ in range(40):
        if c.lost:
            break
        prompt = [line for line in lines if line.startswith("YOURMOVE")]
        if prompt:
            c.send(str(rng.choice(prompt[-1].split()[2:])))
        service.clock.advance(0)
        lines = c.read()
        all_lines += lines
    assert c.lost and all_lines[-1].startswith("BYE")
    last_board = [line for line in all_lines if line.startswith("BOARD ")][-1]
    _check_result(all_lines, last_board, me=0)
    assert not service.games


def test_engine_moves_first_when_person_is_second():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:1 SECOND")
    assert c.read()[0] == "START 1 1 7x6 gamed:1"
    service.clock.advance(0)
    lines = c.read()
    assert lines[0].startswith("PLAYED 0 ")
    assert lines[-1].startswith("YOURMOVE 60 ")


def test_paired_vertical_win():
    service = make_service()
    a, b = pair(service)
    la, lb = a.read(), b.read()
    assert "START 1 0 7x6 bob" in la and "START 1 1 7x6 alice" in lb
    for col_a, col_b in [(3, 4), (3, 4), (3, 4)]:
        a.send(str(col_a))
        b.send(f"MOVE {col_b}")
    a.send("3")
    la, lb = a.read(), b.read()
    assert "RESULT WIN FOUR 0 3 0 3 3" in la
    assert "RESULT LOSE FOUR 0 3 0 3 3" in lb
    assert a.lost and b.lost


def test_paired_on_custom_size_only_with_same_size():
    service = make_service()
    a, b = greeted(service), greeted(service)
    a.send("TABLE 8x8")
    b.send("TABLE")
    assert a.read()[-1].startswith("WAIT") and b.read()[-1].startswith("WAIT")
    c = greeted(service)
    c.send("TABLE 8x8")
    assert any(line.startswith("START 1 1 8x8") for line in c.read())


def test_errors():
    service = make_service(strikes=0)
    a, b = pair(service)
    a.read(), b.read()
    b.send("3")  # out of turn
    a.send("MOVE x", "MOVE 7", "-1", "MOVE", "FLY")
    assert codes(b.read()) == [410]
    assert codes(a.read()) == [411, 411, 411, 401, 400]
    for _ in range(2):
        a.send("0")
        b.send("0")
    a.send("0")
    b.send("0")
    assert codes(a.read()) == []
    a.send("0")  # full column
    assert codes(a.read()) == [412]
    c = greeted(service)
    c.send("PLAY gamed:9", "PLAY gamed:x", "PLAY nosuch", "PLAY gamed 3x6", "PLAY gamed 17x4", "TABLE 20x20", "MOVE 1")
    assert codes(c.read()) == [406, 406, 405, 407, 407, 407, 404]


def test_strikes_lose_the_game():
    service = make_service(strikes=2)
    a, b = pair(service)
    a.read(), b.read()
    a.send("99", "99")
    assert a.read()[-2] == "RESULT LOSE STRIKES 1 -1 -1 -1 -1"
    assert "RESULT WIN STRIKES 1 -1 -1 -1 -1" in b.read()


def test_a_persons_typos_and_early_lines_cost_nothing():
    service = make_service(board=True)
    a, b = pair(service)
    a.read(), b.read()
    a.send("9", "MOVE", "x")
    lines = a.read()
    assert [line for line in lines if line.startswith("ERROR")] == [
        "ERROR 411 column 9 is not on the board (0..6)",
        "ERROR 401 usage: MOVE <column>, e.g. MOVE 3 or just 3",
        "ERROR 400 unknown command X; type HELP",
    ]
    assert lines.count("YOURMOVE 60 0 1 2 3 4 5 6") == 3
    b.send("3")
    assert b.read() == ["ERROR 410 it is not your move"]
    assert not a.lost and service.games[1].strikes == {0: 0, 1: 0}


def test_people_are_struck_on_their_own_turn_only_when_configured():
    service = make_service(board=True, strike_people=True, strikes=2)
    a, b = pair(service)
    a.read(), b.read()
    b.send("3", "3")
    assert b.read() == ["ERROR 410 it is not your move", "ERROR 410 it is not your move"]
    a.send("9", "9")
    assert "RESULT LOSE STRIKES 1 -1 -1 -1 -1" in a.read()


def test_resign():
    service = make_service()
    a, b = pair(service)
    a.read(), b.read()
    b.send("RESIGN")
    assert "RESULT WIN RESIGN 0 -1 -1 -1 -1" in a.read()
    assert "RESULT LOSE RESIGN 0 -1 -1 -1 -1" in b.read()


def test_timeout_loses():
    service = make_service(move_time=5)
    a, b = pair(service)
    a.read(), b.read()
    service.clock.advance(5)
    assert "RESULT LOSE TIMEOUT 1 -1 -1 -1 -1" in a.read()


def test_a_drop_before_any_move_without_a_grace_aborts_at_once():
    service = make_service(grace=0)
    a, b = pair(service)
    a.read(), b.read()
    a.drop()
    lines = b.read()
    assert lines[0] == "ABORT DISCONNECT alice disconnected"
    assert b.lost and not service.games and not service.connections


def test_a_drop_before_any_move_aborts_when_the_grace_ends():
    service = make_service(grace=20)
    a, b = pair(service)
    a.read(), b.read()
    a.drop()
    assert b.read() == ["AWAY 0 alice 20"]
    service.clock.advance(19.5)
    assert b.read() == [] and service.games
    service.clock.advance(0.5)
    assert b.read()[0] == "ABORT DISCONNECT alice disconnected"
    assert b.lost and not service.games and not service.connections


def test_disconnect_during_engine_game():
    service = make_service(grace=5)
    c = greeted(service)
    c.send("PLAY gamed:2")
    c.read()
    c.drop()
    service.clock.advance(1)
    assert service.games, "the engine waits for the person's return"
    service.clock.advance(4)
    assert not service.games and not service.engine_seats


def test_board_command():
    service = make_service()
    a, b = pair(service, "4x4")
    a.read(), b.read()
    a.send("BOARD ON", "2")
    lines = a.read()
    assert "BOARD 4x4 ..0. .... .... ...." in lines
    assert any(line.startswith("PICTURE") for line in lines)
    b.read()
    b.send("BOARD")
    assert b.read() == [
        "BOARD 4x4 ..0. .... .... ....",
        "PICTURE . . . .",
        "PICTURE . . . .",
        "PICTURE . . . .",
        "PICTURE . . X .",
        "PICTURE -------",
        "PICTURE 0 1 2 3",
        "PICTURE X player 0 alice, O player 1 bob",
    ]


def test_people_get_a_readable_line_after_the_result():
    service = make_service(board=True)
    a, b = pair(service)
    for _ in range(3):
        a.send("3")
        b.send("4")
    b.send("BOARD OFF")
    a.send("3")
    la, lb = a.read(), b.read()
    assert la[-3:] == [
        "RESULT WIN FOUR 0 3 0 3 3",
        "INFO you won: four in a line from column 3 row 0 to column 3 row 3",
        "BYE thanks for playing",
    ]
    assert lb[-2:] == ["RESULT LOSE FOUR 0 3 0 3 3", "BYE thanks for playing"], "no INFO with drawings off"


def test_the_readable_line_names_the_winner_and_how():
    service = make_service(board=True, move_time=5)
    a, b = pair(service)
    a.send("3")
    service.clock.advance(5)
    assert a.read()[-2] == "INFO bob (player 1) did not move within 5 s: you win"
    assert b.read()[-2] == "INFO you did not move within 5 s: alice (player 0) wins"
    c = greeted(service)
    c.send("PLAY gamed:1 ME FROM 1,1,0,0,0,0,2,3,4,3,0,1,4", "2")
    assert c.read()[-2] == ("INFO you won: four in a line from column 0 row 1 to column 3 row 1"
                            " and from column 0 row 3 to column 3 row 0")
    d, e = pair(service)
    d.send("RESIGN")
    assert d.read()[-2] == "INFO you resigned: bob (player 1) wins"
    assert e.read()[-2] == "INFO alice (player 0) resigned: you win"


def test_a_draw_on_a_full_board_says_so():
    service = make_service(board=True)
    c = greeted(service)
    c.send("PLAY gamed:0 ME 4x4 FROM 3,2,1,0,2,0,0,0,3,3,1,2,3,1,2")
    c.send("1")
    assert c.read()[-3:] == ["RESULT DRAW FULL - -1 -1 -1 -1", "INFO a draw: the board is full", "BYE thanks for playing"]


def test_a_column_typed_in_the_lobby_says_how_to_start_a_game():
    c = greeted(make_service())
    c.send("3", "MOVE 3")
    hint = "ERROR 404 you are not in a game; start one with PLAY <engine> (ENGINES lists them) or TABLE (another person)"
    assert c.read() == [hint, hint]


def test_play_from_an_opening():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:0 SECOND 5x4 FROM 2,2,1")
    lines = c.read()
    assert lines[0] == "START 1 1 5x4 gamed:0"
    assert lines[1] == "BOARD 5x4 .00.. ..1.. ..... ....."
    assert lines[2:] == ["TURN 1 guest1", "YOURMOVE 60 0 1 2 3 4"]  # three stones played: player 1 moves
    assert service.games[1].board.moves == [2, 2, 1]


def test_play_from_an_opening_where_the_engine_moves():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:4 FIRST FROM 0,0,1,1,2")
    assert c.read()[0] == "START 1 0 7x6 gamed:4"
    service.clock.advance(0)
    assert c.read()[0] == "PLAYED 1 3 0"  # it blocks the three


def test_bad_openings_are_refused():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed FROM 1,x", "PLAY gamed FROM 9", "PLAY gamed 4x4 FROM 0,0,0,0,0", "PLAY gamed FROM 0,1,0,1,0,1,0",
           "PLAY gamed FROM", "PLAY gamed FROM 1 FIRST")
    assert codes(c.read()) == [401, 411, 411, 411, 401, 401]
    assert not service.games


def test_an_opening_that_ends_the_game_is_an_illegal_opening():
    c = greeted(make_service())
    c.send("PLAY gamed FROM 0,1,0,1,0,1,0,1")
    assert c.read() == ["ERROR 411 the opening ends the game at move 7 (0): four in a line; nothing is left to play"]
    c.send("PLAY gamed 4x4 FROM 3,2,1,0,2,0,0,0,3,3,1,2,3,1,2,1")
    assert c.read() == ["ERROR 411 the opening ends the game at move 16 (1): the board is full; nothing is left to play"]


def test_me_and_engine_say_who_moves_next_after_an_opening():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:0 ME FROM 3")  # one stone played: player 1 moves next
    lines = c.read()
    assert lines[0] == "START 1 1 7x6 gamed:0" and lines[-1] == "YOURMOVE 60 0 1 2 3 4 5 6"
    d = greeted(service)
    d.send("play gamed:0 engine from 3")  # the engine moves next: it is player 1, you are player 0
    assert d.read()[0] == "START 2 0 7x6 gamed:0"
    e = greeted(service)
    e.send("PLAY gamed:0 ME")  # no opening: the one who moves next is player 0
    assert e.read()[0] == "START 3 0 7x6 gamed:0"
    f = greeted(service)
    f.send("PLAY gamed:0 ENGINE 5x4 FROM 0,0")
    assert f.read()[0] == "START 4 1 5x4 gamed:0"


def test_two_words_for_the_side_are_refused_with_the_usage():
    c = greeted(make_service())
    c.send("PLAY gamed FIRST ME", "PLAY gamed ENGINE SECOND", "PLAY gamed ME ME")
    usage = ("ERROR 401 usage: PLAY <engine>[:<level>] [FIRST|SECOND|ME|ENGINE] [WxH] [FROM <column>,<column>,...]"
             " (one of FIRST, SECOND, ME, ENGINE)")
    assert c.read() == [usage] * 3


def test_a_last_stone_that_completes_two_lines_reports_both():
    service = make_service()
    c = greeted(service)
    c.send("PLAY gamed:1 ME FROM 1,1,0,0,0,0,2,3,4,3,0,1,4")
    assert c.read()[0] == "START 1 1 7x6 gamed:1"
    c.send("2")
    lines = c.read()
    assert lines[0] == "PLAYED 1 2 1"
    assert lines[-2:] == ["RESULT WIN FOUR 1 0 1 3 1 0 3 3 0", "BYE thanks for playing"]


def test_a_match_between_built_in_levels():
    service = make_service()
    c = greeted(service)
    c.send("MATCH gamed:0 gamed:4 4 5x4")
    lines = c.read()
    assert lines[0] == "OK MATCH gamed:0 gamed:4 4 5x4"
    games = [line.split() for line in lines if line.startswith("MATCHGAME")]
    assert [g[1:4] for g in games] == [["1", "gamed:0", "gamed:4"], ["2", "gamed:4", "gamed:0"],
                                      ["3", "gamed:0", "gamed:4"], ["4", "gamed:4", "gamed:0"]]
    end = lines[-1].split()
    assert end[0] == "MATCHEND" and end[1] == "gamed:0" and end[3] == "gamed:4" and end[5] == "4"
    assert float(end[2]) + float(end[4]) == 4
    wins = {"gamed:0": 0.0, "gamed:4": 0.0}
    for g in games:
        if g[4] == "-":
            wins["gamed:0"] += 0.5
            wins["gamed:4"] += 0.5
        else:
            wins[g[4]] += 1
        board = __import__("gamed.connect4.rules", fromlist=["Board"]).Board(5, 4)
        for column in g[5].split(","):
            board.drop(int(column))  # every recorded move was legal
        assert board.is_over()
    assert (float(end[2]), float(end[4])) == (wins["gamed:0"], wins["gamed:4"])
    assert not service.matches and not c.lost


def test_match_errors():
    service = make_service(match_games=10)
    c = greeted(service)
    c.send("MATCH gamed", "MATCH gamed nosuch", "MATCH gamed:0 gamed:7", "MATCH gamed gamed 0", "MATCH gamed gamed 11",
           "MATCH gamed gamed 3 2x2", "MATCH gamed gamed x")
    assert codes(c.read()) == [401, 405, 406, 401, 401, 407, 401]
    c.send("PLAY gamed:2", "MATCH gamed gamed")
    assert codes(c.read()) == [404]


def test_engine_seats_are_limited():
    service = make_service(engine_games=1)
    first = greeted(service)
    first.send("PLAY gamed:1")
    assert first.read()[0].startswith("START ")
    second = greeted(service)
    second.send("PLAY gamed:1", "MATCH gamed gamed")
    assert codes(second.read()) == [409, 409]
    first.send("RESIGN")
    first.read()
    second.send("PLAY gamed:1")
    assert second.read()[0].startswith("START ")  # the seat was given back


class _BrokenEngine(__import__("gamed.connect4.engines", fromlist=["GamedEngine"]).GamedEngine):
    """The built-in engine, except that it cannot start a game."""

    def new_game(self, width, height):
        raise RuntimeError("out of memory")


def test_an_engine_that_cannot_start_is_error_408(monkeypatch):
    from gamed.connect4 import engines

    monkeypatch.setitem(engines._REGISTRY, "broken", _BrokenEngine)
    service = make_service()
    c = greeted(service)
    c.send("PLAY broken:0")
    lines = c.read()
    assert lines == ["ERROR 408 engine broken failed to start: out of memory"], lines
    assert not service.games and service.engine_seats == 0
    c.send("PLAY gamed:0")
    assert c.read()[0].startswith("START ")
