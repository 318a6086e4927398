"""The Kalaha protocol over StringTransport and a Clock: every command, error, timeout and abort."""

import pytest
from twisted.internet.task import Clock
from twisted.logger import LogLevel, capturedLogs

from gamed.kalaha.protocol import KalahaProtocol
from gamed.kalaha.rules import Position
from tests.kalaha.harness import Client, greeted, make_service, pair
from tests.memclient import next_turns


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def service(clock):
    return make_service(clock)


def test_greeting_is_versioned_and_first(service):
    c = Client(service)
    lines = c.read()
    assert lines[0] == "HELLO KALAHA/1 gamed/0.1.0"
    assert lines[1].startswith("INFO ")


def test_two_connections_are_paired_in_arrival_order_after_the_pair_delay(clock):
    service = make_service(clock, pair_delay=0.5)
    a, b = Client(service), Client(service)
    a.read(), b.read()
    clock.advance(0.4)
    assert a.read() == [] and b.read() == []
    clock.advance(0.1)
    la, lb = a.read(), b.read()
    assert la[0] == "WAIT waiting for an opponent"
    assert la[1] == "START 1 A guest2" and lb[0] == "START 1 B guest1"
    assert la[2] == lb[1] == "POSITION 6 6 6 6 6 6 0 6 6 6 6 6 6 0 A"
    assert la[3] == lb[2] == "TURN A guest1"
    assert la[4] == "YOURMOVE 60 A1 A2 A3 A4 A5 A6" and len(lb) == 3


def test_third_and_fourth_connections_start_a_second_game(service):
    clients = [Client(service) for _ in range(4)]
    starts = [[line for line in c.read() if line.startswith("START")] for c in clients]
    assert [s[0].split()[1:3] for s in starts] == [["1", "A"], ["1", "B"], ["2", "A"], ["2", "B"]]
    assert len(service.games) == 2


def test_a_lone_player_is_told_he_waits(service):
    c = Client(service)
    assert "WAIT waiting for an opponent" in c.read()


def test_table_command_within_the_pair_delay_avoids_the_general_queue(clock):
    service = make_service(clock, pair_delay=0.5)
    a, b, c = Client(service), Client(service), Client(service)
    a.send("TABLE private")
    clock.advance(1)
    assert not any(line.startswith("START") for line in a.read())
    lb, lc = b.read(), c.read()
    assert "START 1 A guest3" in lb and "START 1 B guest2" in lc
    d = Client(service)
    d.send("TABLE private")
    assert "START 2 A guest4" in a.read()


def test_table_without_a_name_goes_back_to_the_general_queue(service):
    a = Client(service)
    a.send("TABLE x")
    assert a.read()[-2:] == ["OK TABLE x", "WAIT waiting at table x"]
    a.send("TABLE")
    assert a.read() == ["OK TABLE -", "WAIT waiting for an opponent"]
    b = Client(service)
    assert any(line.startswith("START") for line in b.read())


def test_meet_pairs_two_players_who_name_each_other(clock):
    service = make_service(clock, pair_delay=1)
    a, b, c = Client(service), Client(service), Client(service)
    a.send("NAME alice", "MEET bob")
    assert a.read()[-2:] == ["OK MEET bob", "WAIT waiting for bob to send MEET alice"]
    c.send("NAME carol", "MEET bob")  # carol wants bob too, but bob names alice
    b.send("NAME bob", "MEET alice")
    assert "START 1 B alice" in b.read()
    assert not any(line.startswith("START") for line in c.read())


def test_meet_yourself_is_refused(clock):
    service = make_service(clock, pair_delay=1)
    a = Client(service)
    a.send("NAME alice", "MEET alice")
    assert a.read()[-1] == "ERROR 401 you cannot meet yourself"


def test_name_is_validated_and_shown_to_the_opponent(service):
    a = greeted(service)
    a.send("NAME bad name!")
    assert a.read() == ["ERROR 401 usage: NAME <name> (1-32 letters, digits, _ . -)"]
    a.send("NAME " + "x" * 33)
    assert a.read()[0].startswith("ERROR 401")
    a.send("name Alice_1.0-b")
    assert a.read() == ["OK NAME Alice_1.0-b"]


def test_commands_are_case_insensitive(service):
    a = greeted(service)
    a.send("pInG", "help")
    lines = a.read()
    assert lines[0] == "PONG" and lines[1].startswith("HELP ") and lines[-1] == "HELP END"


def test_help_lists_every_command(service):
    a = greeted(service)
    a.send("HELP")
    commands = [line.split()[1] for line in a.read()[:-1]]
    assert commands == [
        "HELP", "NAME", "TABLE", "MEET", "COMPUTER", "LEVELS", "MOVE", "BOARD", "POSITION", "RESIGN", "PING", "QUIT",
    ], "HELP alone lists what it always listed: a client that logs in nowhere sees the same bytes"
    a.send("HELP ACCOUNTS")
    accounts = [line.split()[1] for line in a.read()[:-1]]
    assert accounts == ["LOGIN", "RESUME", "TOKEN", "LADDER"]
    a.send("HELP CLOCKS")
    clocks = [line.split()[1] for line in a.read()[:-1]]
    assert clocks == ["CLOCKS", "TABLE"]
    a.send("HELP selftest")
    selftest = [line.split()[1] for line in a.read()[:-1]]
    assert selftest == ["SELFTEST"]
    assert sorted(set(commands + accounts + clocks + selftest)) == sorted(type(a.player)._COMMANDS), "every command is listed"


def test_levels_lists_the_computer_levels(service):
    a = greeted(service)
    a.send("LEVELS")
    lines = a.read()
    assert [line.split()[1] for line in lines[:-1]] == ["random", "easy", "medium", "hard"]
    assert lines[-1] == "LEVEL END"


def test_unknown_command_outside_a_game_is_an_error_without_strike(service):
    a = greeted(service)
    a.send("FROB 1 2")
    assert a.read() == ["ERROR 400 unknown command FROB; type HELP"]


def test_moves_before_a_game_are_refused(service):
    a = greeted(service)
    a.send("A1", "POSITION", "BOARD", "RESIGN")
    assert a.read() == [
        "ERROR 404 you are not in a game yet",
        "ERROR 404 you are not in a game yet",
        "ERROR 404 you are not in a game yet",
        "ERROR 404 you are not in a game",
    ]


def test_a_move_is_reported_to_both_players(service):
    a, b = pair(service)
    a.send("a3")
    la, lb = a.read(), b.read()
    assert la == lb[:len(la)]
    assert la[0] == "PLAYED A A3 SOWN 6"
    assert la[1] == "POSITION 6 6 0 7 7 7 1 7 7 6 6 6 6 0 B"
    assert la[2] == "TURN B bob"
    assert lb[3] == "YOURMOVE 60 B1 B2 B3 B4 B5 B6"


@pytest.mark.parametrize("text", ["A1", "a1", "1", "MOVE A1", "move 1"])
def test_every_move_spelling_is_accepted(service, text):
    a, b = pair(service)
    a.send(text)
    assert a.read()[0] == "PLAYED A A1 SOWN 6 EXTRA"


def test_extra_turn_prompts_the_same_player_again(service):
    a, b = pair(service)
    a.send("1")
    la = a.read()
    assert la[-2:] == ["TURN A alice", "YOURMOVE 60 A2 A3 A4 A5 A6"]
    assert not any(line.startswith("YOURMOVE") for line in b.read())


@pytest.mark.parametrize(
    "move, error",
    [
        ("B1", "ERROR 413 B1: that pit belongs to your opponent"),
        ("A7", "ERROR 412 A7: a store cannot be played"),
        ("B7", "ERROR 412 B7: a store cannot be played"),
        ("9", "ERROR 411 9: not a pit"),
        ("C2", "ERROR 411 C2: not a pit"),
        ("MOVE", "ERROR 401 usage: MOVE <pit>, e.g. MOVE A3 or just 3"),
    ],
)
def test_illegal_moves_name_the_reason_count_a_strike_and_ask_again(service, clock, move, error):
    a, b = pair(service)
    clock.advance(10)
    a.send(move)
    assert a.read() == [f"{error}; strike 1 of 3", "YOURMOVE 50 A1 A2 A3 A4 A5 A6"]
    assert b.read() == []


def test_empty_pit_is_refused(service):
    a, b = pair(service)
    a.send("A1")  # extra turn, A1 is now empty
    a.read()
    a.send("A1")
    assert a.read()[0] == "ERROR 414 A1: that pit is empty; strike 1 of 3"


def test_moving_out_of_turn_is_refused_with_a_strike_and_no_prompt(service):
    a, b = pair(service)
    b.send("B1")
    assert b.read() == ["ERROR 410 it is not your turn; strike 1 of 3"]


def test_three_strikes_lose_the_game(service):
    a, b = pair(service)
    a.send("B1", "FOO", "A7")
    la, lb = a.read(), b.read()
    assert la[-4:] == [
        "ERROR 412 A7: a store cannot be played; strike 3 of 3",
        "SCORE 0 0",
        "RESULT LOSE STRIKES you made 3 protocol errors",
        "BYE thanks for playing",
    ]
    assert lb == ["SCORE 0 0", "RESULT WIN STRIKES alice made 3 protocol errors", "BYE thanks for playing"]
    assert a.lost and b.lost
    assert service.games == {}


def test_a_persons_typos_get_their_error_and_cost_nothing(clock):
    # Drawings on: the connection behaves as a person, so the three typos of issue 12 cost nothing.
    service = make_service(clock, board=True)
    a, b = pair(service)
    clock.advance(5)
    a.send("B1", "A7", "move")
    assert a.read() == [
        "ERROR 413 B1: that pit belongs to your opponent",
        "YOURMOVE 55 A1 A2 A3 A4 A5 A6",
        "ERROR 412 A7: a store cannot be played",
        "YOURMOVE 55 A1 A2 A3 A4 A5 A6",
        "ERROR 401 usage: MOVE <pit>, e.g. MOVE A3 or just 3",
        "YOURMOVE 55 A1 A2 A3 A4 A5 A6",
    ]
    assert b.read() == []
    a.send("A3")
    assert a.read()[0] == "PLAYED A A3 SOWN 6"
    assert service.games[1].strikes == {"A": 0, "B": 0}


def test_a_persons_line_out_of_turn_costs_nothing_even_when_people_are_struck(clock):
    service = make_service(clock, board=True, strike_people=True)
    a, b = pair(service)
    b.send("B1", "FOO")
    assert b.read() == ["ERROR 410 it is not your turn", "ERROR 400 unknown command FOO; type HELP"]
    a.send("B1")
    assert a.read() == ["ERROR 413 B1: that pit belongs to your opponent; strike 1 of 3", "YOURMOVE 60 A1 A2 A3 A4 A5 A6"]


def test_people_lose_on_strikes_on_their_own_turn_when_configured(clock):
    service = make_service(clock, board=True, strike_people=True)
    a, b = pair(service)
    a.send("B1", "A7", "move")
    assert a.read()[-3:] == ["SCORE 0 0", "RESULT LOSE STRIKES you made 3 protocol errors", "BYE thanks for playing"]


def test_a_connection_that_switches_its_drawings_off_is_struck_as_a_program(clock):
    service = make_service(clock, board=True)
    a, b = pair(service)
    a.send("B1", "BOARD OFF", "B1")
    assert a.read() == [
        "ERROR 413 B1: that pit belongs to your opponent",
        "YOURMOVE 60 A1 A2 A3 A4 A5 A6",
        "OK BOARD OFF",
        "ERROR 413 B1: that pit belongs to your opponent; strike 1 of 3",
        "YOURMOVE 60 A1 A2 A3 A4 A5 A6",
    ]


def test_strike_limit_zero_never_loses(clock):
    service = make_service(clock, strikes=0)
    a, b = pair(service)
    a.send(*["B1"] * 10)
    lines = a.read()
    assert lines[-2:] == ["ERROR 413 B1: that pit belongs to your opponent", "YOURMOVE 60 A1 A2 A3 A4 A5 A6"]
    assert not a.closing


def test_move_timeout_loses_the_game_for_the_player_out_of_time(service, clock):
    a, b = pair(service)
    a.send("A3")
    a.read(), b.read()
    clock.advance(59.9)
    assert b.read() == []
    clock.advance(0.1)
    assert b.read() == ["SCORE 1 0", "RESULT LOSE TIMEOUT you did not move within 60 s", "BYE thanks for playing"]
    assert a.read() == ["SCORE 1 0", "RESULT WIN TIMEOUT bob did not move within 60 s", "BYE thanks for playing"]
    assert a.lost and b.lost and service.games == {}


def test_a_move_just_before_the_deadline_counts(service, clock):
    a, b = pair(service)
    clock.advance(59.99)
    a.send("A3")
    assert a.read()[0] == "PLAYED A A3 SOWN 6"
    assert b.read()[-1] == "YOURMOVE 60 B1 B2 B3 B4 B5 B6", "the next move has its own full time"


def test_move_time_zero_means_no_limit(clock):
    service = make_service(clock, move_time=0, idle_timeout=0)
    a, b = pair(service)
    clock.advance(100_000)
    a.send("A3")
    assert a.read()[0] == "PLAYED A A3 SOWN 6"


def test_resign_ends_the_game_with_a_result(service):
    a, b = pair(service)
    a.send("A3")
    a.read(), b.read()
    b.send("RESIGN")
    assert a.read()[1] == "RESULT WIN RESIGN bob resigned"
    assert b.read() == ["SCORE 1 0", "RESULT LOSE RESIGN you resigned", "BYE thanks for playing"]


def test_quit_in_a_game_resigns_and_quit_in_the_lobby_says_bye(service):
    a, b = pair(service)
    a.send("QUIT")
    assert b.read()[1] == "RESULT WIN RESIGN alice resigned"
    c = greeted(service)
    c.send("QUIT")
    assert c.read() == ["BYE"] and c.lost


def test_disconnect_mid_game_is_away_then_a_forfeit_the_opponent_wins(clock):
    service = make_service(clock, move_time=0)
    a, b = pair(service)
    a.send("A3")
    b.read()
    clock.advance(5)
    a.drop()
    assert b.read() == ["AWAY A alice 60"]
    clock.advance(59.9)
    assert b.read() == [] and not b.lost
    clock.advance(0.1)
    assert b.read() == ["SCORE 1 0", "RESULT WIN FORFEIT alice did not come back within 60 s", "BYE thanks for playing"]
    assert b.lost and service.games == {}


def test_without_a_grace_a_disconnect_forfeits_at_once(clock):
    service = make_service(clock, grace=0)
    a, b = pair(service)
    a.send("A3")
    b.read()
    a.drop()
    assert b.read() == ["SCORE 1 0", "RESULT WIN FORFEIT alice left the game", "BYE thanks for playing"]
    assert b.lost and service.games == {}


def test_a_disconnect_before_the_first_move_aborts_when_the_grace_ends(clock):
    service = make_service(clock, move_time=0)
    a, b = pair(service)
    b.drop()
    assert a.read() == ["AWAY B bob 60"]
    clock.advance(60)
    assert a.read() == ["SCORE 0 0", "ABORT DISCONNECT bob disconnected", "BYE thanks for playing"]


def test_disconnect_while_waiting_leaves_the_queue(service):
    a = Client(service)
    a.drop()
    b = Client(service)
    assert "WAIT waiting for an opponent" in b.read()
    assert service.lobby.waiting() == [b.player]


def test_name_cannot_change_during_a_game(service):
    a, b = pair(service)
    a.send("NAME zed")
    assert a.read()[0] == "ERROR 404 you cannot change your name during a game; strike 1 of 3"


def test_lobby_commands_during_a_game_are_refused(service):
    a, b = pair(service)
    b.send("TABLE x", "COMPUTER")
    assert b.read() == [
        "ERROR 404 you are already in a game; strike 1 of 3",
        "ERROR 404 you are already in a game; strike 2 of 3",
    ]


def test_board_drawing_on_request_and_switch(service):
    a, b = pair(service)
    a.send("BOARD")
    drawing = a.read()
    assert len(drawing) == 7 and all(line.startswith("BOARD ") for line in drawing)
    assert drawing[3] == "BOARD  B7 |  0                           0 | A7"
    a.send("BOARD ON")
    assert a.read() == ["OK BOARD ON"]
    a.send("A3")
    la = a.read()
    assert [line.split()[0] for line in la] == ["PLAYED", "POSITION"] + ["BOARD"] * 7 + ["TURN"]
    assert not any(line.startswith("BOARD") for line in b.read())
    b.send("BOARD OFF")
    assert b.read() == ["OK BOARD OFF"]


def test_each_player_sees_the_board_from_its_own_side(service):
    a, b = pair(service)
    a.send("A3")
    a.read(), b.read()
    a.send("BOARD")
    b.send("BOARD")
    assert a.read() == [
        "BOARD            B6  B5  B4  B3  B2  B1",
        "BOARD     +--------------------------------+",
        "BOARD     |       6   6   6   6   7   7    |",
        "BOARD  B7 |  0                           1 | A7",
        "BOARD     |       6   6   0   7   7   7    |",
        "BOARD     +--------------------------------+",
        "BOARD            A1  A2  A3  A4  A5  A6",
    ]
    # B's own row at the bottom, sown left to right towards B's store on the right.
    assert b.read() == [
        "BOARD            A6  A5  A4  A3  A2  A1",
        "BOARD     +--------------------------------+",
        "BOARD     |       7   7   7   0   6   6    |",
        "BOARD  A7 |  1                           0 | B7",
        "BOARD     |       7   7   6   6   6   6    |",
        "BOARD     +--------------------------------+",
        "BOARD            B1  B2  B3  B4  B5  B6",
    ]
    b.send("POSITION")
    assert b.read() == ["POSITION 6 6 0 7 7 7 1 7 7 6 6 6 6 0 B"], "the machine line is the same for both"


def test_board_with_a_bad_argument_is_an_error(service):
    a, b = pair(service)
    b.send("BOARD SIDEWAYS")
    assert b.read() == ["ERROR 401 usage: BOARD [ON|OFF]; strike 1 of 3"]


def test_position_command_repeats_the_position_line(service):
    a, b = pair(service)
    b.send("POSITION")
    assert b.read() == ["POSITION 6 6 6 6 6 6 0 6 6 6 6 6 6 0 A"]


def test_ping_answers_pong(service):
    a = greeted(service)
    a.send("PING")
    assert a.read() == ["PONG"]


def test_full_game_to_the_final_score_then_both_close(service):
    a, b = pair(service)
    players = {"A": a, "B": b}
    pending = {"A": "YOURMOVE 60 A1 A2 A3 A4 A5 A6"}
    seen = {"A": [], "B": []}
    for _ in range(500):
        side, line = next(iter(pending.items()))
        pending.clear()
        players[side].send(line.split()[2])
        for s, c in players.items():
            for got in c.read():
                seen[s].append(got)
                if got.startswith("YOURMOVE"):
                    pending[s] = got
        if not pending:
            break
    for s in "AB":
        assert seen[s][-3].startswith("SCORE ")
        assert seen[s][-2].startswith("RESULT ")
        assert seen[s][-1] == "BYE thanks for playing"
    sa, sb = map(int, seen["A"][-3].split()[1:])
    assert sa + sb == 72
    ra, rb = seen["A"][-2].split()[1], seen["B"][-2].split()[1]
    expected = ("DRAW", "DRAW") if sa == sb else (("WIN", "LOSE") if sa > sb else ("LOSE", "WIN"))
    assert (ra, rb) == expected
    assert seen["A"][-2].endswith(f"END {sa} to {sb}")
    assert a.lost and b.lost


def _set_position(service, pits, to_move="A"):
    """Put the running game into a position (to reach a particular end quickly)."""
    (game,) = service.games.values()
    game.position = Position(tuple(pits), to_move)


def test_the_game_ending_move_is_marked_end_and_has_no_extra(service):
    a, b = pair(service)
    # A's last stone falls into A7 (which would be an extra turn), and A has no stone left: B's
    # stones are swept into B7 and the game is over, so A does not move again.
    _set_position(service, [0, 0, 0, 0, 0, 1, 30, 2, 0, 0, 0, 3, 0, 36])
    a.send("A6")
    la, lb = a.read(), b.read()
    assert la[0] == lb[0] == "PLAYED A A6 SOWN 1 SWEEP 5 END"
    assert la[1] == "POSITION 0 0 0 0 0 0 31 0 0 0 0 0 0 41 -"
    assert la[2:] == ["SCORE 31 41", "RESULT LOSE END 31 to 41", "BYE thanks for playing"]


def test_a_game_ending_move_with_nothing_to_sweep_is_marked_end(service):
    a, b = pair(service)
    # B's pits are already empty; A's last stone empties A's side as well.
    _set_position(service, [0, 0, 0, 0, 0, 1, 40, 0, 0, 0, 0, 0, 0, 31])
    a.send("6")
    assert a.read()[:2] == ["PLAYED A A6 SOWN 1 END", "POSITION 0 0 0 0 0 0 41 0 0 0 0 0 0 31 -"]


def test_moves_that_do_not_end_the_game_carry_no_end(service):
    a, b = pair(service)
    a.send("A1")
    assert a.read()[0] == "PLAYED A A1 SOWN 6 EXTRA"


def test_computer_opponent_plays_its_moves(service, clock):
    a = greeted(service)
    a.send("COMPUTER random")
    lines = a.read()
    assert lines[:2] == ["OK COMPUTER random A", "START 1 A computer-random"]
    a.send("A3")
    clock.advance(0)
    lines = a.read()
    assert lines[0] == "PLAYED A A3 SOWN 6"
    assert lines[3].startswith("PLAYED B B")
    assert lines[-1].startswith("YOURMOVE ")


def test_computer_opponent_can_move_first(service, clock):
    a = greeted(service)
    a.send("computer EASY b")
    clock.advance(0)
    lines = a.read()
    assert lines[:2] == ["OK COMPUTER easy B", "START 1 B computer-easy"]
    assert any(line.startswith("PLAYED A A") for line in lines)


def test_computer_bad_level_and_switched_off(clock):
    service = make_service(clock)
    a = greeted(service)
    a.send("COMPUTER grandmaster")
    assert a.read() == ["ERROR 401 usage: COMPUTER [<level>] [A|B]; levels: random, easy, medium, hard"]
    off = make_service(clock, computer=False)
    b = greeted(off)
    b.send("COMPUTER")
    assert b.read() == ["ERROR 405 the computer player is switched off on this server"]


def test_computer_game_ends_with_result(service, clock):
    a = greeted(service)
    a.send("COMPUTER easy")
    lines = a.read()
    for _ in range(200):
        prompt = [line for line in lines if line.startswith("YOURMOVE")]
        if not prompt:
            break
        a.send(prompt[-1].split()[2])
        clock.advance(0)
        lines = a.read()
    assert lines[-2].startswith("RESULT ") and a.lost


# --- bad input and connection policies -------------------------------------------------------


def test_over_long_line_is_answered_when_it_ends_and_following_lines_still_count(clock):
    service = make_service(clock, max_line=64)
    a = greeted(service)
    a.raw(b"x" * 200 + b"\r\nPING\r\n")
    assert a.read() == ["ERROR 402 line too long (the limit is 64 bytes)", "PONG"]


def test_over_long_line_arriving_in_pieces_is_discarded_as_it_comes(clock):
    service = make_service(clock, max_line=64)
    a = greeted(service)
    for _ in range(100):
        a.raw(b"y" * 1000)
    assert a.read() == [] and len(a.player._buffer) <= 65
    a.raw(b"yyy\nPING\n")
    assert a.read() == ["ERROR 402 line too long (the limit is 64 bytes)", "PONG"]


def test_line_at_the_limit_is_accepted(clock):
    service = make_service(clock, max_line=64)
    a = greeted(service)
    a.raw(b"PING" + b" " * 60 + b"\r\n")
    assert a.read() == ["PONG"]


def test_binary_garbage_gets_an_error_and_counts_as_a_strike_in_game(service):
    a, b = pair(service)
    a.raw(b"\x00\x01\xfe\x80garbage\n")
    assert a.read() == ["ERROR 403 not ASCII text; strike 1 of 3", "YOURMOVE 60 A1 A2 A3 A4 A5 A6"]


def test_telnet_negotiation_is_ignored(service):
    a = greeted(service)
    a.raw(b"\xff\xfb\x1f\xff\xfd\x03PING\r\n")
    assert a.read() == ["PONG"]


def test_bare_newlines_and_blank_lines(service):
    a = greeted(service)
    a.raw(b"\n   \nPING\n\r\n  ping  \n")
    assert a.read() == ["PONG", "PONG"]


def test_lines_split_at_every_byte_are_reassembled(service):
    a = greeted(service)
    for byte in b"NAME alice\r\nPING\r\n":
        a.raw(bytes([byte]))
    assert a.read() == ["OK NAME alice", "PONG"]


def test_client_that_never_sends_anything_is_closed_after_the_idle_timeout(clock):
    service = make_service(clock, idle_timeout=30, pair_delay=0)
    a = greeted(service)
    with capturedLogs() as events:
        clock.advance(30)
    assert a.read() == ["BYE nothing happened for 30 s"] and a.lost
    assert any("idle timeout" in str(e.get("reason")) for e in events)
    assert service.lobby.waiting() == []


def test_game_events_keep_a_waiting_player_from_idling_out(clock):
    service = make_service(clock, idle_timeout=30)
    a, b = pair(service)
    clock.advance(20)
    a.send("A3")  # a's last line: t=20
    clock.advance(25)
    b.send("B1")  # a hears of it at t=45
    clock.advance(25)
    assert not a.closing, "a sent nothing for 50 s but heard of b's move 25 s ago"
    a.read()
    a.send("A1")
    assert a.read()[0] == "PLAYED A A1 SOWN 7"


def test_flood_is_slowed_down_not_cut_off(clock):
    service = make_service(clock, line_rate=10, line_burst=5)
    a = greeted(service)
    with capturedLogs() as events:
        a.raw(b"PING\n" * 25)
        next_turns(clock)  # more than a turn's share: the rest of the burst in the next turns
    assert a.read() == ["PONG"] * 5, "the burst is answered at once"
    assert [e["log_format"] for e in events] == ["{peer} sends more than {rate:g} lines/s: slowed down"]
    assert a.transport.producerState == "paused", "the server stops reading from a flooding client"
    # (Steps of 1/8 s add up to whole seconds exactly; the lines go in groups, one per wake-up.)
    clock.pump([0.125] * 8)
    assert a.read() == ["PONG"] * 10, "then ten lines a second"
    clock.pump([0.125] * 8)
    assert a.read() == ["PONG"] * 10
    assert a.transport.producerState == "producing" and not a.closing


def test_lines_wait_while_the_client_does_not_read_its_replies(service):
    a = greeted(service)
    a.player.pauseProducing()  # what the transport does when its write buffer is full
    a.raw(b"PING\nPING\n")
    assert a.read() == []
    a.player.resumeProducing()
    assert a.read() == ["PONG", "PONG"]


def test_client_that_keeps_sending_without_reading_is_cut_off_before_memory_grows(service):
    a = greeted(service)
    a.player.pauseProducing()
    with capturedLogs() as events:
        for _ in range(20):
            a.raw(b"PING\n" * 10_000)
            if a.lost:
                break
    assert a.lost and a.transport.disconnected
    assert any("not reading its replies" in e["log_format"] for e in events)


def test_closing_client_that_never_reads_is_aborted_after_the_grace(clock):
    service = make_service(clock, close_grace=10)
    a = greeted(service)
    a.player.transport.loseConnection = lambda: None  # the close waits for unread output forever
    a.send("QUIT")
    assert not a.transport.disconnected
    clock.advance(10)
    assert a.transport.disconnected


def test_per_peer_limit_refuses_with_a_reason(clock):
    service = make_service(clock, max_per_peer=2)
    factory = service.port_factory()
    a = Client(service, factory=factory)
    Client(service, factory=factory)  # the second connection from the same address
    with capturedLogs() as events:
        c = Client(service, factory=factory)
    assert c.read() == ["ERROR 503 too many connections from 192.0.2.1 (limit 2)"] and c.closing
    assert any(e.get("log_level") == LogLevel.warn and "refused" in e["log_format"] for e in events)
    other = Client(service, host="198.51.100.7", factory=factory)
    assert other.read()[0].startswith("HELLO")
    a.drop()
    d = Client(service, factory=factory)
    assert d.read()[0].startswith("HELLO")


def test_total_limit_refuses_with_a_reason(clock):
    service = make_service(clock, max_connections=2, max_per_peer=0)
    factory = service.port_factory()
    clients = [Client(service, host=f"192.0.2.{i}", factory=factory) for i in range(3)]
    assert clients[2].read() == ["ERROR 503 server full (2 connections)"]
    assert not clients[1].closing


def test_an_internal_error_is_logged_and_answered_without_a_traceback(service, monkeypatch):
    a = greeted(service)

    def broken(self, args):
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(KalahaProtocol._COMMANDS, "PING", broken)
    with capturedLogs() as events:
        a.send("PING", "HELP")
    lines = a.read()
    assert lines[0] == "ERROR 500 internal error; it has been logged"
    assert lines[1].startswith("HELP ") and not a.closing
    assert any(e.get("log_failure") is not None for e in events)
    assert "Traceback" not in "".join(lines)


def test_shutdown_aborts_running_games_and_closes_waiting_players(service, clock):
    a, b = pair(service)
    w = greeted(service)
    service.startService()
    d = service.stopService()
    assert a.read() == ["SCORE 0 0", "ABORT SHUTDOWN the server is shutting down", "BYE thanks for playing"]
    assert b.read()[1] == "ABORT SHUTDOWN the server is shutting down"
    assert w.read() == ["ABORT SHUTDOWN the server is shutting down", "BYE"]
    assert d.called


def test_protocol_is_a_kalaha_player(service):
    a = Client(service)
    assert isinstance(a.player, KalahaProtocol)
