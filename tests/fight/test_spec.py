"""Virtual Fight as an AI sees it (docs/protocols/virtual-fight.md): the real FightService with
in-memory StringTransport connections on a task.Clock. One test per numbered statement of §1
(test_s1_NN_...), then the rules of §§2-8 that an AI can observe over its connection."""

import string

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.task import Clock

from gamed.config import FightConfig
from gamed.fight.rules import QUERIES, Dir
from gamed.fight.wire import AI_HELP, is_help, parse_command
from tests.fight.harness import ai, arena, gui, make_service, place, start_game
from tests.memclient import next_turns

UP, DOWN, LEFT, RIGHT = Dir.UP, Dir.DOWN, Dir.LEFT, Dir.RIGHT
PASS = [f"{n}&NONE" for n in range(5)]


def game(fmap=None, **settings):
    """A started 2-team game on ``fmap`` (default: a 10x10 open arena; team 0 on row 0 cols 0-4
    facing DOWN, team 1 on row 9 cols 5-9 facing UP). Returns clock, service, AI 0, AI 1, battle."""
    clock = Clock()
    service = make_service(clock, fmap=fmap if fmap is not None else arena(), **settings)
    a, b = start_game(service)
    return clock, service, a, b, service.games[1].battle


def passes(*numbers):
    return [f"{n}&NONE" for n in numbers]


def play_turn(*clients):
    """Every client passes with all five warriors; return what each then reads."""
    for c in clients:
        c.send(*PASS)
    return [c.read() for c in clients]


# --- §1 What the original documentation says ---------------------------------------------------


def test_s1_01_five_warriors_numbered_0_to_4():
    clock, service, a, b, battle = game()
    a.send(*(f"{n}&POS" for n in range(5)), "5&POS")
    assert a.read() == ["0,0", "0,1", "0,2", "0,3", "0,4", "100"]
    b.send(*(f"{n}&POS" for n in range(5)), "5&POS")
    assert b.read() == ["9,5", "9,6", "9,7", "9,8", "9,9", "100"]


def test_s1_02_an_ai_plays_its_turn_and_waits_for_the_others():
    clock, service, a, b, battle = game()
    a.send(*PASS)
    assert a.read() == ["255"] * 5  # a has finished, but the turn waits for b
    clock.advance(4)
    assert a.read() == []
    b.send("0&MOVE&UP", *passes(1, 2, 3, 4))  # the slow AI is not penalised: its move counts
    assert b.read() == ["255"] * 5 + ["200", "READY"]
    assert a.read() == ["200", "READY"]
    b.send("0&POS")
    assert b.read() == ["8,5"]


def test_s1_03_telnet_can_be_used_for_testing():
    assert FightConfig().listen == ("tcp:4500",) and FightConfig().gui_listen == ("tcp:4550",)
    clock, service, a, b, battle = game()
    a.raw(b"0&POS\r\n")  # telnet's end of line
    assert a.read() == ["0,0"]
    a.raw(b"1&POS\n")  # a bare newline
    assert a.read() == ["0,1"]
    # telnet option negotiation and subnegotiation bytes are ignored
    a.raw(b"\xff\xfd\x03\xff\xfb\x18\xff\xfa\x18\x00VT100\xff\xf02&POS\r\n")
    assert a.read() == ["0,2"]
    a.raw(b"\xff\xfb\x01\xff\xfd\x22\r\n")  # a line of nothing but negotiation: no reply
    assert a.read() == []
    for byte in b"3&pos\r\n":  # a telnet in character mode sends every key stroke alone
        a.raw(bytes([byte]))
    assert a.read() == ["0,3"]


def test_s1_04_command_format_is_not_case_sensitive():
    clock, service, a, b, battle = game()
    place(battle, 0, 1, (3, 1), UP)
    place(battle, 0, 2, (3, 5), UP)
    a.send("1&mOvE&DOWn", "2&MOVE&DOWN", "1&pos", "2&POS", "1&dIr", "2&DIR")
    assert a.read() == ["255", "255", "4,1", "4,5", "DOWN", "DOWN"]
    # MOVE needs a direction; SHOOT and NONE may have one or not
    a.send("0&MOVE", "0&NONE", "0&shoot", "3&Shoot&Left", "4&none&right", "4&DIR")
    assert a.read() == ["100", "255", "255", "255", "255", "RIGHT"]


def test_s1_05_move_moves_the_warrior_one_square():
    clock, service, a, b, battle = game()
    place(battle, 0, 4, (3, 4))
    a.send("4&MOVE&LEFT", "4&POS")
    assert a.read() == ["255", "3,3"]


def test_s1_06_pos_replies_the_position():
    clock, service, a, b, battle = game(arena(20, 20))
    place(battle, 0, 3, (3, 14))
    a.send("3&POS")
    assert a.read() == ["3,14"]


def test_s1_07_dir_replies_the_facing():
    clock = Clock()
    service = make_service(clock)  # the default map: team 0 faces RIGHT, team 1 LEFT
    a, b = start_game(service)
    b.send("0&DIR", "4&DIR")
    assert b.read() == ["LEFT", "LEFT"]
    a.send("0&DIR")
    assert a.read() == ["RIGHT"]


def test_s1_08_saw_replies_what_the_warrior_sees():
    # a warrior at 4,4 facing UP, enemies at 2,5 and 4,5 (on its right: not seen), a wall at 1,3
    clock, service, a, b, battle = game(arena(10, 10, walls=[(1, 3)]))
    for n in range(1, 5):
        place(battle, 0, n, (6, n - 1))  # teammates out of sight, behind
    place(battle, 0, 0, (4, 4), UP)
    place(battle, 1, 0, (2, 5))
    place(battle, 1, 1, (4, 5))
    a.send("0&SAW")
    assert a.read() == ["2,5,E&1,3,#"]


def test_s1_09_shoot_turns_then_shoots_three_squares():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), DOWN)  # shooting DOWN would hit teammate 1 at 6,0
    place(battle, 0, 1, (6, 0), RIGHT)
    place(battle, 0, 2, (8, 0), RIGHT)
    place(battle, 1, 0, (4, 3))  # three squares to the right of warrior 0
    place(battle, 1, 1, (6, 4))  # four squares ahead of warrior 1: out of range
    place(battle, 1, 2, (8, 2))  # straight ahead of warrior 2
    a.send("0&SHOOT&RIGHT", "0&DIR", "1&SHOOT", "2&SHOOT", *passes(3, 4))
    assert a.read() == ["255", "RIGHT", "255", "255", "255", "255"]
    b.send(*PASS)
    assert a.read() == ["200", "0&HIT&ENEMY", "1&HIT&NOTHING", "2&HIT&ENEMY", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "0&KILLED", "2&KILLED", "READY"]
    b.send("1&POS", "0&POS")
    assert b.read() == ["6,4", "100"]


def test_s1_10_none_does_nothing_or_turns_without_moving():
    clock, service, a, b, battle = game(arena(20, 20))
    place(battle, 0, 1, (8, 8), UP)
    place(battle, 1, 0, (8, 10))  # on warrior 1's right: not seen while it faces UP
    a.send("1&SAW", "1&NONE", "1&POS", "1&DIR")
    assert a.read() == ["", "255", "8,8", "UP"]
    a.send("1&NONE&RIGHT", "1&SAW", "1&POS")
    assert a.read() == ["255", "8,10,E", "8,8"]


def test_s1_11_one_action_per_turn_replies_255_and_120():
    clock, service, a, b, battle = game()
    a.send("1&MOVE&DOWN", "1&MOVE&DOWN")
    assert a.read() == ["255", "120"]
    a.send("2&NONE", "2&NONE")
    assert a.read() == ["255", "255"]
    a.send("3&MOVE&DOWN", "3&NONE&UP", "3&DIR")
    assert a.read() == ["255", "120", "DOWN"]


def test_s1_12_shots_happen_after_all_movements():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 0, 1, (6, 0), RIGHT)
    place(battle, 1, 0, (5, 2))  # will step into warrior 0's line of fire
    place(battle, 1, 1, (6, 2))  # in warrior 1's line of fire; will step away
    a.send("0&SHOOT", "1&SHOOT")
    assert a.read() == ["255", "255"]  # answered at once
    b.send("0&MOVE&UP", "1&MOVE&DOWN", *passes(2, 3, 4))
    assert b.read() == ["255"] * 5
    a.send(*passes(2, 3, 4))
    assert a.read() == ["255"] * 3 + ["200", "0&HIT&ENEMY", "1&HIT&NOTHING", "READY"]
    assert b.read() == ["200", "0&KILLED", "READY"]
    b.send("1&POS")
    assert b.read() == ["7,2"]


def test_s1_13_turn_report_lines():
    clock, service, a, b, battle = game(arena(10, 10, walls=[(2, 7)]))
    place(battle, 0, 0, (4, 0), RIGHT)  # into empty space: NOTHING
    place(battle, 0, 1, (2, 5), RIGHT)  # into the wall at 2,7: WALL
    place(battle, 0, 2, (5, 5), DOWN)  # at the enemy on 6,5: ENEMY
    place(battle, 0, 3, (6, 8), UP)  # at teammate 4 on 5,8: OWN
    place(battle, 0, 4, (5, 8))
    place(battle, 1, 0, (6, 5))
    a.send(*(f"{n}&SHOOT" for n in range(4)), "4&NONE")
    b.send(*PASS)
    assert a.read() == ["255"] * 5 + [
        "200",
        "0&HIT&NOTHING",
        "1&HIT&WALL",
        "2&HIT&ENEMY",
        "3&HIT&OWN",
        "4&KILLED",
        "READY",
    ]
    assert b.read() == ["255"] * 5 + ["200", "0&KILLED", "READY"]


def test_s1_14_error_codes():
    clock, service, a, b, battle = game()
    a.send("7&POS", "0&FLY", "0&MOVE&UP", "0&MOVE&RIGHT", "1&MOVE&DOWN", "1&MOVE&DOWN")
    # invalid, invalid, out of the screen, destination not empty, done, already acted
    assert a.read() == ["100", "100", "112", "111", "255", "120"]


def test_s1_15_ok_on_connect_ready_at_start_and_after_each_turn_nothing_before():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a = ai(service)
    assert a.read() == ["OK"]
    a.send("0&POS", "0&NONE", "0&MOVE&DOWN")
    assert a.read() == ["100", "100", "100"]  # no command is accepted before the first READY
    b = ai(service)
    assert b.read() == ["OK", "READY"]
    assert a.read() == ["READY"]
    a.send("0&POS")
    assert a.read() == ["0,0"]
    for _ in range(2):  # READY again at the end of every turn
        assert play_turn(a, b) == [["255"] * 5 + ["200", "READY"]] * 2


# --- §2 Transport and framing -------------------------------------------------------------------


def test_s2_server_ends_every_line_with_crlf():
    clock, service, a, b, battle = game()
    a.raw(b"0&POS\n0&SAW\n9&POS\n")
    data = a.transport.value()
    assert data.endswith(b"\r\n") and data.count(b"\n") == data.count(b"\r\n") == 3


def test_s2_accepts_lf_and_crlf_line_ends():
    clock, service, a, b, battle = game()
    a.raw(b"0&POS\n1&POS\r\n2&POS\n")
    assert a.read() == ["0,0", "0,1", "0,2"]


def test_s2_accepts_bare_cr_line_ends():
    # §2: "It accepts \n, \r\n or \r"
    clock, service, a, b, battle = game()
    a.raw(b"0&POS\r1&POS\r")
    assert a.read() == ["0,0", "0,1"]


def test_s2_strips_surrounding_blanks_and_ignores_empty_lines():
    clock, service, a, b, battle = game()
    a.send("  0&POS  ", "", "   ", "\t1&POS\t", "")
    assert a.read() == ["0,0", "0,1"]


def test_s2_exactly_one_reply_per_line_in_order():
    clock, service, a, b, battle = game()
    a.send("0&POS", "junk", "0&MOVE&UP", "1&DIR", "1&NONE", "1&NONE&RIGHT", "1&DIR", "9&SAW", "2&SHOOT", "2&SHOOT")
    assert a.read() == ["0,0", "100", "112", "DOWN", "255", "255", "RIGHT", "100", "255", "120"]


def test_s2_over_long_line_answered_100_when_it_ends_and_next_line_works():
    clock, service, a, b, battle = game()
    a.raw(b"0&POS" + b"x" * 200)
    a.raw(b"y" * 100)  # 305 bytes and counting: nothing is answered before the line ends
    assert a.read() == []
    a.raw(b"z" * 100_000)
    a.raw(b"\r\n0&POS\r\n")
    assert a.read() == ["100", "0,0"]


def test_s2_line_length_limit_is_256_bytes():
    clock, service, a, b, battle = game()
    a.send("0&POS" + " " * 251)  # 256 bytes: accepted (trailing blanks stripped)
    a.send("0&POS" + " " * 252)  # 257 bytes: too long
    assert a.read() == ["0,0", "100"]


def test_s2_more_than_1000_lines_in_a_turn_answered_100_until_next_ready():
    clock, service, a, b, battle = game()
    a.send(*["0&POS"] * 1000)
    next_turns(clock)  # a connection's lines are handled 16 per reactor turn
    assert a.read() == ["0,0"] * 1000
    a.send("0&POS", *PASS)
    clock.advance(0.1)  # the line rate limit may hold the flood back for a moment
    assert a.read() == ["100"] * 6
    b.send(*PASS)
    assert b.read() == ["255"] * 5  # a has not finished: its passes were refused
    clock.advance(5)
    assert a.read() == ["200", "READY"]
    a.send("0&POS", "0&MOVE&DOWN")
    assert a.read() == ["0,0", "255"]


def test_s2_non_ascii_or_control_characters_answered_100():
    clock, service, a, b, battle = game()
    a.raw("0&POS\u00e9\r\n".encode("utf-8"))
    a.raw(b"0&P\x01OS\r\n")
    a.raw(b"0&POS\x80\r\n")
    a.send("0&POS")
    assert a.read() == ["100", "100", "100", "0,0"]


def test_s2_line_after_the_deadline_is_answered_after_the_next_ready():
    clock, service, a, b, battle = game()
    clock.advance(5)  # the turn ends at its deadline
    assert a.read() == ["200", "READY"]
    # A line arriving at the deadline instant, before the reactor ran the timer: it belongs to
    # the next turn, so READY comes first.
    clock.rightNow += 5
    a.send("0&MOVE&DOWN", "7&POS")
    assert a.read() == ["200", "READY", "255", "100"]
    assert b.read() == ["200", "READY", "200", "READY"]
    a.send("0&MOVE&DOWN", "0&POS")  # the late MOVE was this turn's action
    assert a.read() == ["120", "1,0"]


def test_s2_late_line_for_a_dead_warrior_is_answered_100_after_ready():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 1))
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    a.read()
    b.send(*passes(1, 2, 3, 4))
    clock.rightNow += 5  # b's next line arrives when the turn's time is up
    b.send("0&POS")
    assert b.read() == ["255"] * 4 + ["200", "0&KILLED", "READY", "100"]


def test_s2_shot_is_an_alias_of_shoot():
    clock, service, a, b, battle = game()
    place(battle, 1, 0, (2, 0))
    a.send("0&SHOT", "1&shot&up", *passes(2, 3, 4))
    b.send(*PASS)
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&ENEMY", "1&HIT&NOTHING", "READY"]


# --- §3 Games, teams and the waiting room --------------------------------------------------------


def test_s3_connections_grouped_in_arrival_order_two_teams_by_default():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    first = ai(service)
    assert first.read() == ["OK"]
    second = ai(service)
    assert first.read() == ["READY"] and second.read() == ["OK", "READY"]
    third = ai(service)
    assert third.read() == ["OK"]
    fourth = ai(service)
    assert third.read() == ["READY"] and fourth.read() == ["OK", "READY"]
    for client, square in [(first, "0,0"), (second, "9,5"), (third, "0,0"), (fourth, "9,5")]:
        client.send("0&POS")
        assert client.read() == [square]  # team 0 = first to connect, on the start squares marked 0
    assert sorted(service.games) == [1, 2]  # two games at once


def test_s3_ai_that_disconnects_before_its_game_never_becomes_a_team():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    gone = ai(service)
    gone.drop()
    second = ai(service)
    assert second.read() == ["OK"]
    third = ai(service)
    assert second.read() == ["READY"] and third.read() == ["OK", "READY"]
    second.send("0&POS")
    assert second.read() == ["0,0"]
    assert play_turn(second, third) == [["255"] * 5 + ["200", "READY"]] * 2


def test_s3_until_the_game_starts_commands_are_answered_100():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a = ai(service)
    a.send("0&POS", "hello", "1&NONE", "READY")
    assert a.read() == ["OK", "100", "100", "100", "100"]


def test_s3_name_answered_255_and_shown_to_observers():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    watcher = gui(service)
    alice = ai(service, "NAME&alice")
    assert alice.read() == ["OK", "255"]
    bob = ai(service)
    assert bob.read() == ["OK", "READY"]
    lines = watcher.read()
    assert "TEAM&0&alice" in lines and "TEAM&1&team1" in lines
    watcher.send("LIST")
    assert watcher.read() == ["GAME&1&alice,team1&1", "END"]


def test_s3_invalid_name_is_answered_100():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a = ai(service, "NAME&two words", "NAME&" + "x" * 33, "NAME&")
    assert a.read() == ["OK", "100", "100", "100"]


def test_s3_extensions_after_the_game_started_are_invalid():
    clock, service, a, b, battle = game()
    a.send("NAME&late", "TABLE&late")
    assert a.read() == ["100", "100"]


def test_s3_table_groups_ais_numbered_in_order_they_joined_it():
    clock = Clock()
    service = make_service(clock, fmap=arena(), pair_delay=0.5)
    early = ai(service)
    clock.advance(1)  # early waits in the general queue
    later = ai(service, "TABLE&x")
    clock.advance(1)  # later waits at table x
    assert early.read() == ["OK"] and later.read() == ["OK", "255"]
    early.send("TABLE&x")  # early leaves the general queue and joins table x second
    assert early.read() == ["255", "READY"]
    assert later.read() == ["READY"]
    later.send("0&POS")
    early.send("0&POS")
    assert later.read() == ["0,0"]  # team 0: first to join the table
    assert early.read() == ["9,5"]  # team 1, although it connected first
    other = ai(service)
    clock.advance(1)
    assert other.read() == ["OK"]  # the general queue is empty: other waits


def test_s3_table_members_and_general_queue_never_mix():
    clock = Clock()
    service = make_service(clock, fmap=arena(), pair_delay=0.5)
    t1 = ai(service, "TABLE&ring")
    g1 = ai(service)
    g2 = ai(service)
    t2 = ai(service, "TABLE&ring")
    clock.advance(1)
    assert t1.read() == ["OK", "255", "READY"] and t2.read() == ["OK", "255", "READY"]
    assert g1.read() == ["OK", "READY"] and g2.read() == ["OK", "READY"]
    t1.send("0&POS")
    t2.send("0&POS")
    assert (t1.read(), t2.read()) == (["0,0"], ["9,5"])
    # t1 and t2 play each other: their two passes end a turn; g1 and g2 are in the other game
    assert play_turn(t1, t2) == [["255"] * 5 + ["200", "READY"]] * 2
    assert g1.read() == [] and g2.read() == []
    assert play_turn(g1, g2) == [["255"] * 5 + ["200", "READY"]] * 2


def test_s3_lobby_timeout_300_s_gameover_draw():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a = ai(service)
    assert a.read() == ["OK"]
    clock.advance(299)
    assert a.read() == [] and not a.closing
    clock.advance(1)
    assert a.read() == ["GAMEOVER&DRAW"]
    assert a.lost  # disconnected
    b = ai(service)
    assert b.read() == ["OK"]  # a is not in the queue any more


# --- §4 The map ---------------------------------------------------------------------------------


def test_s4_positions_are_row_col_and_directions_move_as_specified():
    clock, service, a, b, battle = game()
    for n, square in enumerate([(3, 3), (3, 6), (6, 3), (6, 6)]):
        place(battle, 0, n, square)
    a.send("0&MOVE&UP", "1&MOVE&DOWN", "2&MOVE&LEFT", "3&MOVE&RIGHT", *(f"{n}&POS" for n in range(4)))
    assert a.read() == ["255"] * 4 + ["2,3", "4,6", "6,2", "6,7"]


def test_s4_outside_the_grid_is_out_of_screen():
    clock, service, a, b, battle = game()
    a.send("0&MOVE&UP", "0&MOVE&LEFT", "4&MOVE&UP")
    b.send("4&MOVE&DOWN", "4&MOVE&RIGHT", "0&MOVE&DOWN")
    assert a.read() == ["112"] * 3 and b.read() == ["112"] * 3


def test_s4_default_map_start_squares_in_reading_order_and_facings():
    clock = Clock()
    service = make_service(clock)
    a, b = start_game(service)
    a.send(*(f"{n}&POS" for n in range(5)), "0&DIR")
    b.send(*(f"{n}&POS" for n in range(5)), "0&DIR")
    assert a.read() == ["3,1", "6,1", "9,1", "12,1", "15,1", "RIGHT"]
    assert b.read() == ["4,18", "7,18", "10,18", "13,18", "16,18", "LEFT"]


def test_s4_default_map_walls_block_moves():
    clock = Clock()
    service = make_service(clock)
    a, b = start_game(service)
    # team 0 warrior 4 at 15,1; the wall at 15,3 (spec map row 15: .0.#...)
    a.send("4&MOVE&RIGHT")  # to 15,2
    assert a.read() == ["255"]
    play_turn(a, b)
    a.send("4&MOVE&RIGHT", "4&POS")
    assert a.read() == ["111", "15,2"]


# --- §5 Turns -----------------------------------------------------------------------------------


def test_s5_rejected_move_does_not_use_the_action_nor_turn_the_warrior():
    clock, service, a, b, battle = game()
    a.send("0&MOVE&UP", "0&DIR", "0&MOVE&RIGHT", "0&DIR", "0&MOVE&LEFT", "0&DIR", "0&MOVE&DOWN", "0&POS")
    assert a.read() == ["112", "DOWN", "111", "DOWN", "112", "DOWN", "255", "1,0"]


def test_s5_malformed_command_does_not_use_the_action():
    clock, service, a, b, battle = game()
    a.send("0&MOVE&NORTH", "0&MOVE", "0&MOVE&DOWN&X", "0&MOVE&DOWN")
    assert a.read() == ["100", "100", "100", "255"]


def test_s5_bare_none_finishes_the_warrior_unless_it_acts_later():
    clock, service, a, b, battle = game()
    a.send(*PASS, "0&MOVE&DOWN", "0&NONE")  # all passed: finished; then warrior 0 acts after all
    assert a.read() == ["255"] * 7
    b.send(*PASS)
    assert b.read() == ["255"] * 5 + ["200", "READY"]  # no deadline needed: both finished
    a.read()
    a.send("0&POS")
    assert a.read() == ["1,0"]


def test_s5_queries_are_unlimited_and_use_no_action():
    clock, service, a, b, battle = game()
    a.send(*["0&POS", "0&DIR", "0&SAW"] * 100)
    next_turns(clock)  # a connection's lines are handled 16 per reactor turn
    replies = a.read()
    assert len(replies) == 300 and replies[:2] == ["0,0", "DOWN"]
    a.send("0&MOVE&DOWN")
    assert a.read() == ["255"]


def test_s5_validation_order_first_failure_wins():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 1))
    a.send("1&NONE&UP", "1&MOVE&UP", "2&NONE&LEFT", "2&MOVE&LEFT")
    assert a.read() == ["255", "120", "255", "120"]  # already acted beats 112 and 111
    a.send("0&SHOOT", "3&NONE", "4&NONE")
    b.send(*PASS)
    b.read()
    a.read()
    # warrior 0 of b is dead: 100 beats 120/111/112; a malformed command is 100 either way
    b.send("0&MOVE&DOWN", "0&MOVE&LEFT", "0&NONE", "0&POS", "0&SAW", "0&POS&UP")
    assert b.read() == ["100"] * 6


def test_s5_moves_apply_at_once_in_the_order_received():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 4))
    place(battle, 1, 0, (4, 6))
    a.send("0&MOVE&RIGHT")
    b.send("0&MOVE&LEFT", "0&MOVE&UP", "0&POS")  # 4,5 is taken now; the refused move costs nothing
    assert a.read() == ["255"] and b.read() == ["111", "255", "3,6"]
    a.send("1&MOVE&DOWN", "2&MOVE&LEFT", "2&POS")  # 0,1 is free as soon as warrior 1 left it
    assert a.read() == ["255", "255", "0,1"]


def test_s5_none_and_shoot_with_a_direction_turn_at_once():
    clock, service, a, b, battle = game()
    a.send("0&NONE&LEFT", "0&DIR", "1&SHOOT&UP", "1&DIR", "2&SHOOT", "2&DIR")
    assert a.read() == ["255", "LEFT", "255", "UP", "255", "DOWN"]


def test_s5_ai_finished_when_each_living_warrior_acted_or_passed():
    clock, service, a, b, battle = game()
    b.send(*PASS)
    a.send("0&MOVE&DOWN", "1&NONE&LEFT", "2&SHOOT", "3&NONE")
    assert a.read() == ["255"] * 4  # warrior 4 has neither acted nor passed
    assert b.read() == ["255"] * 5
    a.send("4&NONE")
    assert a.read() == ["255", "200", "2&HIT&NOTHING", "READY"]


def test_s5_dead_warriors_need_not_act():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (8, 5), DOWN)
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*PASS)
    assert b.read()[-2:] == ["0&KILLED", "READY"]
    a.read()
    b.send(*passes(1, 2, 3, 4))  # four living warriors passed: b has finished
    a.send(*PASS)
    assert a.read() == ["255"] * 5 + ["200", "READY"]


def test_s5_turn_time_limit_defaults_to_5_s_and_idle_warriors_stay():
    clock, service, a, b, battle = game()
    a.send("0&MOVE&DOWN")
    a.read()
    clock.advance(4.9)
    assert a.read() == [] and b.read() == []
    clock.advance(0.1)
    assert a.read() == ["200", "READY"] and b.read() == ["200", "READY"]
    a.send("0&POS", "1&POS")
    assert a.read() == ["1,0", "0,1"]
    clock.advance(4.9)  # the next turn has its own 5 s from its READY
    assert a.read() == []
    clock.advance(0.1)
    assert a.read() == ["200", "READY"]


def test_s5_turn_time_is_configurable():
    clock, service, a, b, battle = game(turn_time=2)
    clock.advance(1.9)
    assert a.read() == []
    clock.advance(0.1)
    assert a.read() == ["200", "READY"]


def test_s5_reply_to_the_finishing_command_comes_before_the_report():
    clock, service, a, b, battle = game()
    a.send(*PASS)
    a.read()
    b.send(*passes(0, 1, 2, 3))
    assert b.read() == ["255"] * 4
    b.send("4&NONE")
    assert b.read() == ["255", "200", "READY"]


def test_s5_commands_after_the_turn_ended_belong_to_the_next_turn():
    clock, service, a, b, battle = game()
    a.send("0&MOVE&DOWN")
    a.read()
    clock.advance(5)
    a.send("0&MOVE&DOWN", "0&POS")  # a new turn: the warrior may act again
    assert a.read() == ["200", "READY", "255", "2,0"]


# --- §6 Sight ----------------------------------------------------------------------------------


def test_s6_nothing_visible_is_an_empty_line():
    clock, service, a, b, battle = game()
    a.send("0&NONE&UP", "0&SAW", "0&POS")
    assert a.read() == ["255", "", "0,0"]


def test_s6_bodies_teammates_and_nearest_first_left_to_right():
    clock, service, a, b, battle = game(arena(15, 15, walls=[(3, 7)]))
    place(battle, 0, 0, (6, 7), UP)
    place(battle, 0, 1, (5, 7))  # a teammate does not hide what is behind it
    place(battle, 0, 2, (4, 5), UP)  # will kill enemy 0 at 3,5
    place(battle, 1, 0, (3, 5))
    place(battle, 1, 1, (4, 8))
    place(battle, 1, 2, (2, 7))  # hidden by the wall at 3,7
    place(battle, 1, 3, (2, 4))  # its line passes 4,5 (teammate) and 3,5 (body): still seen
    a.send("2&SHOOT", *passes(0, 1, 3, 4))
    b.send(*PASS)
    a.read()
    a.send("0&SAW")
    # f=1: 5,7 O; f=2: 4,5 O, 4,8 E; f=3: 3,5 x (body), 3,7 #; f=4: 2,4 E
    assert a.read() == ["5,7,O&4,5,O&4,8,E&3,5,x&3,7,#&2,4,E"]


def test_s6_sight_wedge_and_facing():
    clock, service, a, b, battle = game(arena(15, 15))
    place(battle, 0, 0, (7, 7), LEFT)
    place(battle, 1, 0, (7, 2))  # 5 ahead: seen
    place(battle, 1, 1, (3, 3))  # f=4, l=4: seen
    place(battle, 1, 2, (4, 5))  # f=2, l=3: outside the wedge
    place(battle, 1, 3, (7, 8))  # behind
    a.send("0&SAW", "0&NONE&RIGHT", "0&SAW")
    # facing LEFT the warrior's right is UP (smaller rows): 3,3 is f=4, l=+4; nearest first
    assert a.read() == ["3,3,E&7,2,E", "255", "7,8,E"]


# --- §7 Shots and the turn report ----------------------------------------------------------------


def test_s7_a_dead_body_stops_a_shot_as_wall():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 1))
    place(battle, 1, 1, (4, 2))  # behind the future body
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*PASS)
    assert a.read()[-3:] == ["200", "0&HIT&ENEMY", "READY"]
    assert b.read()[-3:] == ["200", "0&KILLED", "READY"]
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*passes(1, 2, 3, 4))
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&WALL", "READY"]
    assert b.read() == ["255"] * 4 + ["200", "READY"]
    b.send("1&POS", "1&MOVE&LEFT")  # alive, and a body is not an empty square
    assert b.read() == ["4,2", "111"]


def test_s7_a_warrior_killed_this_turn_still_fires():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 0, 1, (6, 2))
    place(battle, 1, 0, (4, 2), DOWN)
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send("0&SHOOT", *passes(1, 2, 3, 4))
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&ENEMY", "1&KILLED", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "0&HIT&ENEMY", "0&KILLED", "READY"]


def test_s7_an_enemy_that_moved_away_survives():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 2))
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send("0&MOVE&DOWN", *passes(1, 2, 3, 4))
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&NOTHING", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "READY"]


def test_s7_two_warriors_shooting_each_other_both_die():
    clock, service, a, b, battle = game()
    place(battle, 0, 3, (4, 1), RIGHT)
    place(battle, 1, 3, (4, 3), LEFT)
    a.send("3&SHOOT", *passes(0, 1, 2, 4))
    b.send("3&SHOOT", *passes(0, 1, 2, 4))
    assert a.read() == ["255"] * 5 + ["200", "3&HIT&ENEMY", "3&KILLED", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "3&HIT&ENEMY", "3&KILLED", "READY"]


def test_s7_two_shots_may_report_the_same_victim():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 1), RIGHT)
    place(battle, 0, 1, (3, 2), DOWN)
    place(battle, 1, 2, (4, 2))
    a.send("0&SHOOT", "1&SHOOT", *passes(2, 3, 4))
    b.send(*PASS)
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&ENEMY", "1&HIT&ENEMY", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "2&KILLED", "READY"]


def test_s7_report_ordered_by_warrior_with_hit_before_killed():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (8, 0), UP)  # shoots into empty space
    place(battle, 0, 1, (6, 3))  # killed by b's warrior 0
    place(battle, 0, 3, (4, 1), RIGHT)  # and b's 3 shoot each other
    place(battle, 1, 3, (4, 3), LEFT)
    place(battle, 1, 0, (6, 5), LEFT)
    b.send("3&SHOOT", "0&SHOOT", *passes(1, 2, 4))
    a.send("3&SHOOT", "0&SHOOT", *passes(1, 2, 4))
    assert a.read() == ["255"] * 5 + ["200", "0&HIT&NOTHING", "1&KILLED", "3&HIT&ENEMY", "3&KILLED", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "0&HIT&ENEMY", "3&HIT&ENEMY", "3&KILLED", "READY"]


def test_s7_200_is_sent_every_turn_even_without_shots():
    clock, service, a, b, battle = game()
    for _ in range(3):
        assert play_turn(a, b) == [["255"] * 5 + ["200", "READY"]] * 2
    clock.advance(5)
    assert a.read() == ["200", "READY"] and b.read() == ["200", "READY"]


def test_s7_killed_warriors_stay_bodies_for_the_rest_of_the_game():
    clock, service, a, b, battle = game()
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 1))
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*PASS)
    a.read(), b.read()
    for _ in range(2):
        play_turn(a, b)
    a.send("0&SAW", "0&MOVE&RIGHT")
    b.send("0&POS", "0&NONE")
    assert a.read() == ["4,1,x&0,4,O", "111"]
    assert b.read() == ["100", "100"]


# --- §8 End of game, faults ----------------------------------------------------------------------


def test_s8_last_team_standing_wins_and_no_ready_follows():
    clock, service, a, b, battle = game()
    for n in range(5):
        place(battle, 0, n, (7, 5 + n), DOWN)  # each two squares above an enemy on row 9
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    assert a.read() == ["255"] * 5
    b.send(*PASS)
    assert a.read() == ["200"] + [f"{n}&HIT&ENEMY" for n in range(5)] + ["GAMEOVER&WIN"]
    assert b.read() == ["255"] * 5 + ["200"] + [f"{n}&KILLED" for n in range(5)] + ["GAMEOVER&LOSE"]
    assert a.closing and b.closing
    assert service.games == {}


def test_s8_all_dying_in_the_same_resolution_is_a_draw():
    clock, service, a, b, battle = game()
    for n in range(5):
        place(battle, 1, n, (6, 5 + n), UP)
        place(battle, 0, n, (5, 5 + n), DOWN)
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    b.send(*(f"{n}&SHOOT" for n in range(5)))
    block = ["200"] + [line for n in range(5) for line in (f"{n}&HIT&ENEMY", f"{n}&KILLED")]
    assert a.read() == ["255"] * 5 + block + ["GAMEOVER&DRAW"]
    assert b.read() == ["255"] * 5 + block + ["GAMEOVER&DRAW"]


def test_s8_turn_limit_most_living_warriors_wins():
    clock, service, a, b, battle = game(max_turns=3)
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 1))
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*PASS)
    assert a.read()[-1] == "READY" and b.read()[-1] == "READY"  # turn 1
    a.send(*PASS)
    b.send(*passes(1, 2, 3, 4))
    assert b.read() == ["255"] * 4 + ["200", "READY"]  # turn 2
    a.read()
    a.send(*PASS)
    b.send(*passes(1, 2, 3, 4))
    assert a.read() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]  # turn 3: 5 warriors against 4
    assert b.read() == ["255"] * 4 + ["200", "GAMEOVER&LOSE"]
    assert a.closing and b.closing


def test_s8_turn_limit_tie_is_a_draw_and_turns_count_from_1():
    clock, service, a, b, battle = game(max_turns=1)
    assert play_turn(a, b) == [["255"] * 5 + ["200", "GAMEOVER&DRAW"]] * 2
    assert a.closing and b.closing


def test_s8_turn_limit_by_deadline_alone():
    clock, service, a, b, battle = game(max_turns=2)
    clock.advance(5)
    assert a.read() == ["200", "READY"]
    clock.advance(5)
    assert a.read() == ["200", "GAMEOVER&DRAW"] and b.read() == ["200", "READY", "200", "GAMEOVER&DRAW"]


def four_team_game(teams, **settings):
    clock = Clock()
    service = make_service(clock, teams=teams, map="four", **settings)
    clients = start_game(service, teams=teams)
    return clock, service, clients, service.games[1].battle


def test_s8_three_teams_eliminated_ai_gets_lose_in_place_of_ready_others_go_on():
    clock, service, (a, b, c), battle = four_team_game(3)
    for n in range(5):
        place(battle, 2, n, (6, 5 + n))
        place(battle, 0, n, (7, 5 + n), UP)
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    b.send(*PASS)
    c.send(*PASS)
    assert c.read() == ["255"] * 5 + ["200"] + [f"{n}&KILLED" for n in range(5)] + ["GAMEOVER&LOSE"]
    assert c.closing
    assert a.read() == ["255"] * 5 + ["200"] + [f"{n}&HIT&ENEMY" for n in range(5)] + ["READY"]
    assert b.read() == ["255"] * 5 + ["200", "READY"]
    # the next turn ends as soon as the two remaining AIs have finished
    assert play_turn(a, b) == [["255"] * 5 + ["200", "READY"]] * 2


def test_s8_three_teams_turn_limit_tie_for_most_is_a_draw_the_others_lose():
    clock, service, (a, b, c), battle = four_team_game(3, max_turns=1)
    place(battle, 0, 0, (6, 5), RIGHT)
    place(battle, 2, 0, (6, 6))
    a.send("0&SHOOT", *passes(1, 2, 3, 4))
    b.send(*PASS)
    c.send(*PASS)
    assert a.read()[-2:] == ["0&HIT&ENEMY", "GAMEOVER&DRAW"]
    assert b.read()[-2:] == ["200", "GAMEOVER&DRAW"]
    assert c.read()[-2:] == ["0&KILLED", "GAMEOVER&LOSE"]


def test_s8_four_teams_one_eliminated_one_gone_the_others_play_on():
    # grace 0: an AI that leaves is out at once (with a grace its seat waits for it: test_seats.py)
    clock, service, (a, b, c, d), battle = four_team_game(4, grace=0)
    for n in range(5):
        place(battle, 3, n, (11, 5 + n))
        place(battle, 0, n, (12, 5 + n), UP)
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    c.drop()  # team 2 leaves mid-turn
    b.send(*PASS)
    d.send(*PASS)
    assert d.read() == ["255"] * 5 + ["200"] + [f"{n}&KILLED" for n in range(5)] + ["GAMEOVER&LOSE"]
    assert a.read()[-2:] == ["4&HIT&ENEMY", "READY"]
    assert b.read() == ["255"] * 5 + ["200", "READY"]
    assert play_turn(a, b) == [["255"] * 5 + ["200", "READY"]] * 2


def test_s8_draw_goes_to_teams_that_had_living_warriors_before():
    clock, service, (a, b, c), battle = four_team_game(3)
    # turn 1: team 2 is wiped out; turn 2: teams 0 and 1 wipe each other out
    for n in range(5):
        place(battle, 2, n, (6, 5 + n))
        place(battle, 0, n, (7, 5 + n), UP)
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    b.send(*PASS)
    c.send(*PASS)
    assert c.read()[-1] == "GAMEOVER&LOSE"
    assert a.read()[-1] == "READY" and b.read()[-1] == "READY"
    for n in range(5):  # face to face on rows 11 and 12 (floor on the four map)
        place(battle, 0, n, (11, 5 + n), DOWN)
        place(battle, 1, n, (12, 5 + n), UP)
    a.send(*(f"{n}&SHOOT" for n in range(5)))
    b.send(*(f"{n}&SHOOT" for n in range(5)))
    assert a.read()[-2:] == ["4&KILLED", "GAMEOVER&DRAW"]
    assert b.read()[-2:] == ["4&KILLED", "GAMEOVER&DRAW"]


def test_s8_ai_disconnecting_mid_turn_becomes_bodies_shots_cancelled_others_get_report_first():
    clock, service, a, b, battle = game(grace=0)
    place(battle, 0, 0, (4, 0), RIGHT)
    place(battle, 1, 0, (4, 2))
    place(battle, 1, 1, (6, 0), UP)  # its shot would kill a's warrior 0
    a.send("0&SHOOT")
    b.send("1&SHOOT")
    assert a.read() == ["255"] and b.read() == ["255"]
    b.drop()
    assert a.read() == []  # the turn goes on for a
    a.send("0&SAW")
    assert "4,2,x" in a.read()[0].split("&")  # b's warriors are bodies at once
    a.send(*passes(1, 2, 3, 4))
    # the body stops a's shot; b's shot is cancelled (no 0&KILLED); game-over after the report
    assert a.read() == ["255"] * 4 + ["200", "0&HIT&WALL", "GAMEOVER&WIN"]
    assert a.closing


def test_s8_disconnect_of_the_last_unfinished_ai_ends_the_turn_at_once():
    clock, service, a, b, battle = game(grace=0)
    a.send(*PASS)
    a.read()
    b.drop()
    assert a.read() == ["200", "GAMEOVER&WIN"]


def test_s8_disqualified_after_10_timeouts_in_a_row():
    clock, service, a, b, battle = game()
    for turn in range(1, 10):
        a.send(*PASS)
        clock.advance(5)
        assert a.read() == ["255"] * 5 + ["200", "READY"], turn
        assert b.read() == ["200", "READY"], turn
    a.send(*PASS)
    clock.advance(5)
    assert b.read() == ["200", "GAMEOVER&LOSE"]
    assert a.read() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    assert b.closing


def test_s8_timeouts_must_be_in_a_row_to_disqualify():
    clock, service, a, b, battle = game()
    for turn in range(15):
        a.send(*PASS)
        if turn == 5:
            b.send(*PASS)  # one turn played in time resets the count
        else:
            clock.advance(5)
        assert a.read()[-1] == "READY", turn
        assert b.read()[-1] == "READY", turn


def test_s8_lines_after_the_game_over_line_are_never_answered():
    clock, service, a, b, battle = game(max_turns=1)
    a.send(*PASS)
    b.raw(b"0&NONE\r\n1&NONE\r\n2&NONE\r\n3&NONE\r\n4&NONE\r\n0&POS\r\n1&POS\r\n")
    assert b.read() == ["255"] * 5 + ["200", "GAMEOVER&DRAW"]
    assert a.read() == ["255"] * 5 + ["200", "GAMEOVER&DRAW"]
    assert a.lost and b.lost  # the server closed both connections: nothing more will come


def test_s8_an_ai_in_one_game_never_disturbs_another_game():
    clock = Clock()
    service = make_service(clock, fmap=arena(), grace=0)
    a, b = start_game(service)
    c, d = start_game(service)
    c.send("0&MOVE&DOWN")
    assert c.read() == ["255"]
    a.raw(b"\x00\x01garbage\xff\xfe\r\n" + b"q" * 5000 + b"\r\n")
    a.send(*["0&POS"] * 1200, *PASS)
    a.raw(b"\xff" * 300)
    clock.advance(1)
    a.drop()
    b.send(*PASS)
    assert b.read() == ["255"] * 5 + ["200", "GAMEOVER&WIN"]
    assert c.read() == [] and d.read() == []
    c.send("0&POS", *passes(1, 2, 3, 4))
    d.send(*PASS)
    assert c.read() == ["1,0"] + ["255"] * 4 + ["200", "READY"]
    assert d.read() == ["255"] * 5 + ["200", "READY"]
    assert list(service.games) == [2]


# --- nothing an AI sends can break the game (§2, §8) -------------------------------------------

_PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


@given(st.lists(st.text(alphabet=_PRINTABLE, max_size=40), max_size=20))
def test_every_non_empty_line_gets_exactly_one_reply(lines):  # HELP: one reply, of several lines
    # lines that could finish the turn are left out, so only replies come back
    lines = [line for line in lines if not ((cmd := parse_command(line.strip())) and cmd.verb not in QUERIES)]
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a, b = start_game(service)
    a.send(*lines)
    replies = a.read()
    # one reply line each; HELP's reply is the help text (found by hypothesis: ['HELP'])
    assert len(replies) == sum(len(AI_HELP) if is_help(line) else 1 for line in lines if line.strip())
    a.send("0&POS")
    assert a.read() == ["0,0"]


@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_break_the_game(data):
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a, b = start_game(service)
    a.raw(data)
    a.raw(b"\r\n")
    clock.advance(0.1)
    a.read()
    b.send("0&POS")
    assert b.read() == ["9,5"]
    clock.advance(5)
    if not a.lost:
        a.send("4&DIR")
        assert a.read()[-1] in {"UP", "DOWN", "LEFT", "RIGHT", "100"}
