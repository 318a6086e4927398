"""The UCC referee's logic against the spec's test vectors (ucc-stratego §14), with scripted seats."""

from __future__ import annotations

import pytest

from gamed.stratego.referee import SURRENDER, Move, Outcome, parse_log, parse_reply, reply_from_log
from gamed.stratego.rules import Unit
from tests.stratego.scripted import BLUE_DEFAULT, RED_DEFAULT, TIMEOUT, ScriptedSeat, pair, play

RED_VIEW_START = RED_DEFAULT + ["..++..++..", "..++..++.."] + ["##########"] * 4


def test_the_manuals_example_game_14_1():
    red, blue = pair(["0 3 DOWN", "9 2 DOWN"], ["9 6 UP 3", "SURRENDER"])
    result = play(red, blue)
    assert result.line == "./blue.py BLUE SURRENDER 2 146 146"
    assert red.read == [
        "RED ./blue.py 10 10",
        "START",
        *RED_VIEW_START,
        "0 3 DOWN OK",
        "9 6 UP 3 BOTHDIE 9 9",
        "FB8sB479B8",
        "BB31555583",
        "6724898974",
        ".67B66999.",
        "9.++..++..",
        "..++..++..",
        "#########.",
        "##########",
        "##########",
        "##########",
        "9 2 DOWN OK",
        "QUIT ./blue.py BLUE SURRENDER 2 146 146",
    ]
    assert blue.read == [
        "BLUE ./red.py 10 10",
        "0 3 DOWN OK",
        "##########",
        "##########",
        "##########",
        ".#########",
        "#.++..++..",
        "..++..++..",
        "967B669999",
        "6724898974",
        "BB31555583",
        "FB8sB479B8",
        "9 6 UP 3 BOTHDIE 9 9",
        "9 2 DOWN OK",
        "##########",
        "##########",
        "#########.",
        ".#########",
        "#.++..++..",
        "..++..++..",
        "967B66999.",
        "6724898974",
        "BB31555583",
        "FB8sB479B8",
        "QUIT ./blue.py BLUE SURRENDER 2 146 146",
    ]
    assert list(result.log) == [
        "./red.py RED SETUP",
        *RED_DEFAULT,
        "./blue.py BLUE SETUP",
        *BLUE_DEFAULT,
        "1 RED: 0 3 DOWN OK",
        "1 BLU: 9 6 UP 3 BOTHDIE 9 9",
        "2 RED: 9 2 DOWN OK",
        "2 BLU: SURRENDER OK",
        "Game ends on BLUE's turn - REASON: This player has surrendered!",
        "./blue.py BLUE SURRENDER 2 146 146",
    ]


def test_the_example_with_m_2_ends_in_a_default_draw():
    red, blue = pair(["0 3 DOWN", "9 2 DOWN"], ["9 6 UP 3", "SURRENDER"])
    result = play(red, blue, max_turns=2)
    assert result.line == "./blue.py BLUE DRAW_DEFAULT 2 146 146"
    assert red.read[-3:] == ["0 3 DOWN OK", "9 6 UP 3 BOTHDIE 9 9", "QUIT ./blue.py BLUE DRAW_DEFAULT 2 146 146"]
    assert list(result.log[-3:]) == [
        "1 BLU: 9 6 UP 3 BOTHDIE 9 9",
        "Game ends on BLUE's turn - REASON: Game declared a draw after 2 turns",
        "./blue.py BLUE DRAW_DEFAULT 2 146 146",
    ]


def test_setup_queries_name_the_opponent_argument_exactly_14_2():
    red = ScriptedSeat("../../agents/ramen/ramen", RED_DEFAULT, ["SURRENDER"])
    blue = ScriptedSeat("../../agents/vixen/vixen.py", BLUE_DEFAULT)
    play(red, blue)
    assert red.read[0] == "RED ../../agents/vixen/vixen.py 10 10"
    assert blue.read[0] == "BLUE ../../agents/ramen/ramen 10 10"
    red = ScriptedSeat("./red.py", RED_DEFAULT, ["SURRENDER"])
    blue = ScriptedSeat("./my ai/blue", BLUE_DEFAULT)
    result = play(red, blue)
    assert red.read[0] == "RED ./my ai/blue 10 10" and result.line.startswith("./red.py RED SURRENDER")


@pytest.mark.parametrize(
    "reply, confirmation",
    [
        ("0 3 DOWN", "0 3 DOWN OK"),
        ("0 3 DOWN\r", "0 3 DOWN\r OK"),
        ("0 3 DOWN ", "0 3 DOWN  OK"),
        ("  0 3 DOWN", "  0 3 DOWN OK"),
        ("0\t3\tDOWN", "0\t3\tDOWN OK"),
        ("+0 3 DOWN", "+0 3 DOWN OK"),
        ("0 3DOWN", "0 3DOWN OK"),
        ("0 3 DOWN 1 foo", "0 3 DOWN 1 foo OK"),
        ("0 3 DOWN 2x", "0 3 DOWN 2x OK"),
        ("1 3 DOWN 1", "1 3 DOWN 1 OK"),
        ("0 3 DOWN 3", "0 3 DOWN 3 BOTHDIE 9 9"),
    ],
)
def test_confirmations_echo_the_reply_byte_for_byte_14_3(reply, confirmation):
    red, blue = pair([reply], ["SURRENDER"])
    play(red, blue)
    assert red.read[12] == confirmation and blue.read[1] == confirmation


def test_a_scout_moved_two_squares_lands_two_squares_on():
    red, blue = pair(["0 3 DOWN 2x"], ["SURRENDER"])
    play(red, blue)
    view = blue.read[2:12]  # BLUE's view before its move shows the scout as '#'
    assert view[3][0] == "." and view[4][0] == "." and view[5][0] == "#"


@pytest.mark.parametrize(
    "attacker, defender, confirmation",
    [
        ("s", "1", "KILLS s 1"),
        ("1", "s", "KILLS 1 s"),
        ("5", "B", "DIES 5 B"),
        ("8", "B", "KILLS 8 B"),
        ("9", "9", "BOTHDIE 9 9"),
        ("7", "4", "DIES 7 4"),
        ("s", "s", "BOTHDIE s s"),
        ("3", "3", "BOTHDIE 3 3"),
    ],
)
def test_combat_outcomes_are_sent_with_piece_tokens(attacker, defender, confirmation):
    # The attacker stands at (0,3) in RED's front row, the defender at (0,6) in BLUE's; RED walks
    # down and attacks on its third move while BLUE shuffles a piece elsewhere.
    red_rows = swap(RED_DEFAULT, 3, 0, attacker)
    blue_rows = swap(BLUE_DEFAULT, 0, 0, defender)
    red, blue = pair(
        ["0 3 DOWN", "0 4 DOWN", "0 5 DOWN"],
        ["5 6 UP", "5 5 UP", "SURRENDER"],
        red_setup=red_rows,
        blue_setup=blue_rows,
    )
    result = play(red, blue)
    assert f"0 5 DOWN {confirmation}" in red.read and f"0 5 DOWN {confirmation}" in blue.read
    assert result.outcome is Outcome.SURRENDER


def swap(rows, row, col, token):
    """``rows`` with ``token`` at (row, col), exchanged with the first other square holding it."""
    rows = [list(r) for r in rows]
    here = rows[row][col]
    if here != token:
        for r, line in enumerate(rows):
            for c, t in enumerate(line):
                if t == token and (r, c) != (row, col):
                    rows[r][c], rows[row][col] = here, token
                    return ["".join(x) for x in rows]
    return ["".join(x) for x in rows]


@pytest.mark.parametrize(
    "reply, log_line, reason",
    [
        ("10 3 DOWN", "1 RED: 10 3 DOWN ILLEGAL", "Coords outside board"),
        ("0 4 DOWN", "1 RED: 0 4 DOWN ILLEGAL", "Move does not select a piece"),
        ("0 6 UP", "1 RED: 0 6 UP ILLEGAL", "Selected piece belongs to other player"),
        ("2 4 UP", "1 RED: 2 4 UP ILLEGAL", "Selected piece belongs to other player"),
        ("0 0 DOWN", "1 RED: 0 0 DOWN ILLEGAL", "Selected piece is not mobile (FLAG or BOMB)"),
        ("2 0 UP", "1 RED: 2 0 UP ILLEGAL", "Selected unit cannot move that way"),
        ("1 3 DOWN 2", "1 RED: 1 3 DOWN 2 ILLEGAL", "Selected unit cannot move that way"),
        ("0 3 DOWN x", "1 RED: 0 3 DOWN x ILLEGAL", "Selected unit cannot move that way"),
        ("0 3 DOWN -2", "1 RED: 0 3 DOWN -2 ILLEGAL", "Selected unit cannot move that way"),
        ("0 3 DOWN 99999999999", "1 RED: 0 3 DOWN 99999999999 ILLEGAL", "Attempted move into square occupied by neutral or allied piece"),
        ("9 3 RIGHT 99999999999", "1 RED: 9 3 RIGHT 99999999999 ILLEGAL", "Selected unit cannot move that way"),
        ("0 2 DOWN", "1 RED: 0 2 DOWN ILLEGAL", "Attempted move into square occupied by neutral or allied piece"),
        ("2 3 DOWN", "1 RED: 2 3 DOWN ILLEGAL", "Attempted move into square occupied by neutral or allied piece"),
        ("0 3 DOWN 4", "1 RED: 0 3 DOWN 4 ILLEGAL", "Attempted move into square occupied by neutral or allied piece"),
        ("0 3 down", "1 RED: 0 3 down", "Unintelligable response"),
        ("NO_MOVE", "1 RED: NO_MOVE", "Unintelligable response"),
        ("SURRENDER ", "1 RED: SURRENDER ", "Unintelligable response"),
        ("", "1 RED: ", "Unintelligable response"),
        (None, "1 RED: ", "Unintelligable response"),
        (TIMEOUT, "1 RED: ", "Response timeout after 2.000000 seconds."),
        ("99999999999 3 DOWN", "1 RED: 99999999999 3 DOWN", "Unintelligable response"),
    ],
)
def test_illegal_and_unintelligible_first_moves_14_4(reply, log_line, reason):
    red, blue = pair([reply])
    result = play(red, blue)
    assert result.line == "./red.py RED ILLEGAL 1 148 148"
    assert list(result.log[-3:]) == [log_line, f"Game ends on RED's turn - REASON: {reason}", result.line]
    assert red.read[-1] == blue.read[-1] == "QUIT ./red.py RED ILLEGAL 1 148 148"
    assert red.read[-2] == "##########" and blue.read == ["BLUE ./red.py 10 10", "QUIT ./red.py RED ILLEGAL 1 148 148"]


def test_timeout_reason_prints_the_timeout_with_six_decimals():
    red, blue = pair([TIMEOUT])
    result = play(red, blue, timeout=0.5)
    assert result.reason == "Response timeout after 0.500000 seconds."


def test_with_i_an_illegal_move_passes_the_turn_and_is_confirmed_illegal():
    red, blue = pair(["0 4 DOWN", "0 3 down", "SURRENDER"], ["9 6 UP", "9 5 UP"])
    result = play(red, blue, allow_illegal=True)
    assert "0 4 DOWN ILLEGAL" in red.read and "0 4 DOWN ILLEGAL" in blue.read
    assert "0 3 down" in red.read and "0 3 down" in blue.read, "unintelligible: the reply alone"
    assert result.line == "./red.py RED SURRENDER 3 148 148"


@pytest.mark.parametrize("reply", [None, TIMEOUT])
def test_with_i_eof_and_timeouts_still_end_the_game(reply):
    red, blue = pair([reply])
    assert play(red, blue, allow_illegal=True).line == "./red.py RED ILLEGAL 1 148 148"


@pytest.mark.parametrize("max_turns", [0, 1])
def test_m_0_and_m_1_play_no_move_14_5(max_turns):
    red, blue = pair(["0 3 DOWN"])
    result = play(red, blue, max_turns=max_turns)
    assert result.line == "./red.py RED DRAW_DEFAULT 1 148 148"
    assert red.read == ["RED ./blue.py 10 10", "START", "QUIT ./red.py RED DRAW_DEFAULT 1 148 148"]
    assert result.log[-2] == "Game ends on RED's turn - REASON: Game declared a draw after 1 turns"


def test_capturing_the_flag_wins_and_leaves_the_board_unchanged_14_5():
    blue_rows = ["F67B669999", "6724898974", "BB31555583", "9B8sB479B8"]
    red, blue = pair(["0 3 DOWN 3"], blue_setup=blue_rows)
    result = play(red, blue)
    assert result.line == "./red.py RED VICTORY 1 148 148"
    assert list(result.log[-3:-1]) == ["1 RED: 0 3 DOWN 3 VICTORY_FLAG", "Game ends on RED's turn - REASON: Captured the flag"]
    assert red.read[-1] == "QUIT ./red.py RED VICTORY 1 148 148" and "0 3 DOWN 3 VICTORY_FLAG" not in red.read


def test_an_invalid_program_is_bad_setup_and_nothing_is_asked_14_5():
    red = ScriptedSeat("/nonexistent/ai", valid=False)
    blue = ScriptedSeat("./blue.py", BLUE_DEFAULT)
    result = play(red, blue)
    assert result.line == "/nonexistent/ai RED BAD_SETUP 0 0 0"
    assert blue.read == ["QUIT /nonexistent/ai RED BAD_SETUP 0 0 0"]
    assert list(result.log) == [
        "Controller for Player RED is invalid!",
        'Check that executable "/nonexistent/ai" exists and has executable permissions set.',
        "Game ends in the SETUP phase - REASON: An illegal setup was made by RED",
        "/nonexistent/ai RED BAD_SETUP 0 0 0",
    ]


def test_both_programs_invalid():
    result = play(ScriptedSeat("/no/red", valid=False), ScriptedSeat("/no/blue", valid=False))
    assert result.line == "neither BOTH BAD_SETUP 0 0 0"
    assert result.log[-2] == "Game ends in the SETUP phase - REASON: An illegal setup was made by BOTH players"


def test_both_setups_invalid_14_5():
    red, blue = pair(red_setup=["XXXXXXXXXX"] * 4, blue_setup=["XXXXXXXXXX"] * 4)
    result = play(red, blue)
    assert result.line == "neither BOTH BAD_SETUP 0 0 0"
    assert list(result.log) == [
        "BOTH players give invalid setup!",
        "./red.py RED SETUP",
        "INVALID!",
        "./blue.py BLUE SETUP",
        "INVALID!",
        "Game ends in the SETUP phase - REASON: An illegal setup was made by BOTH players",
        "neither BOTH BAD_SETUP 0 0 0",
    ]
    assert blue.read[0] == "BLUE ./red.py 10 10", "BLUE is asked even after RED's setup was rejected"


@pytest.mark.parametrize(
    "row1, line",
    [
        ("FB.sB479B8", "./red.py RED BAD_SETUP 0 145 148"),  # one miner missing
        ("FB8SB479B8", "./red.py RED BAD_SETUP 0 3 148"),  # S is not a token: F, B, 8 stay placed
        ("FB8sB479B8\r", "./red.py RED BAD_SETUP 0 0 148"),  # 11 bytes
        ("FB8sB479B", "./red.py RED BAD_SETUP 0 0 148"),  # 9 bytes
        ("FB8sB479B1", "./red.py RED BAD_SETUP 0 35 148"),  # row 2 holds a second marshal: refused there
        (".B8sB479B8", "./red.py RED BAD_SETUP 0 148 148"),  # no flag: found only after the 4 rows
    ],
)
def test_invalid_setups_keep_the_pieces_placed_before_the_failure(row1, line):
    red, blue = pair(red_setup=[row1] + RED_DEFAULT[1:])
    result = play(red, blue)
    assert result.line == line and result.outcome is Outcome.BAD_SETUP
    assert result.log[:2] == ("./red.py RED SETUP", "INVALID!")
    assert red.read == ["RED ./blue.py 10 10", f"QUIT {line}"], "no START after a bad setup"


def test_a_setup_with_empty_squares_is_invalid_even_with_a_flag():
    rows = ["F.........", "." * 10, "." * 10, "." * 10]
    red, blue = pair(red_setup=rows)
    assert play(red, blue).line == "./red.py RED BAD_SETUP 0 0 148"


def keep_only(referee, seat, squares):
    """Remove every piece of ``seat`` except those on ``squares`` ((x, y) pairs)."""
    cells = referee.board.cells
    for i, c in enumerate(cells):
        if c != -1 and c >> 4 == seat and (i % 10, i // 10) not in squares:
            cells[i] = -1


def test_losing_the_last_mobile_piece_by_ones_own_move_is_judged_on_the_next_half_move():
    def last_scout_attacks_a_bomb(referee):
        keep_only(referee, 0, {(0, 0), (1, 0), (0, 3)})  # the flag, a bomb and the scout at (0,3)
        referee.board.place(60, 1, Unit.BOMB)  # BLUE's scout at (0,6) becomes a bomb
        return "0 3 DOWN 3"

    red, blue = pair([last_scout_attacks_a_bomb])
    result = play(red, blue)
    assert result.log[-3] == "1 RED: 0 3 DOWN 3 DIES 9 B", "the fatal move keeps its outcome"
    assert result.line == "./blue.py BLUE VICTORY 1 0 146"
    assert result.log[-2] == "Game ends on BLUE's turn - REASON: Destroyed all mobile enemy pieces"
    assert "0 3 DOWN 3 DIES 9 B" in blue.read, "the fatal move is still confirmed"


def test_destroying_the_last_enemy_mobile_piece_wins_at_once():
    def kill_the_last_one(referee):
        keep_only(referee, 1, {(0, 6), (3, 6)})  # BLUE keeps its scout at (0,6) and a bomb
        return "0 3 DOWN 3"  # RED's scout attacks BLUE's scout: both die, RED keeps others

    red, blue = pair([kill_the_last_one])
    result = play(red, blue)
    assert result.line == "./red.py RED VICTORY 1 146 0"
    assert result.reason == "Destroyed all mobile enemy pieces"


def test_neither_side_with_a_mobile_piece_is_a_draw():
    def last_two_scouts(referee):
        keep_only(referee, 0, {(0, 0), (0, 3)})
        keep_only(referee, 1, {(0, 6), (0, 9)})
        return "0 3 DOWN 3"

    red, blue = pair([last_two_scouts])
    result = play(red, blue)
    assert result.line == "./red.py RED DRAW 1 0 0"
    assert result.reason == "Game declared a draw because neither player has mobile pieces"


def test_turn_limit_comes_before_the_attrition_check():
    red, blue = pair(["0 3 DOWN"], ["9 6 UP"])
    result = play(red, blue, max_turns=2)
    assert result.outcome is Outcome.DRAW_DEFAULT and result.turn == 2


def test_replaying_the_example_log_reproduces_its_result():
    red, blue = pair(["0 3 DOWN", "9 2 DOWN"], ["9 6 UP 3", "SURRENDER"])
    result = play(red, blue)
    from gamed.stratego.referee import replay_seats

    replayed = play(*replay_seats(parse_log(result.log)))
    assert replayed.line == result.line and replayed.log == result.log


@pytest.mark.parametrize(
    "text, reply",
    [
        ("0 3 DOWN OK", "0 3 DOWN"),
        ("9 6 UP 3 BOTHDIE 9 9", "9 6 UP 3"),
        ("0 3 DOWN 0 ILLEGAL", "0 3 DOWN 0"),
        ("0 1 UP VICTORY_FLAG", "0 1 UP"),
        ("SURRENDER OK", "SURRENDER"),
        ("NO_MOVE", "NO_MOVE"),
        ("foo OK", "foo OK"),
        ("", ""),
        ("0 3 DOWN\r OK", "0 3 DOWN\r"),
        ("SURRENDER ILLEGAL", "SURRENDER ILLEGAL"),
    ],
)
def test_replies_are_recovered_from_log_lines(text, reply):
    assert reply_from_log(text) == reply


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("SURRENDER", SURRENDER),
        ("0 3 DOWN", Move(0, 3, "DOWN", 1)),
        ("0 3 DOWN \t", Move(0, 3, "DOWN", 1)),
        ("-1 +3 LEFT 7 junk", Move(-1, 3, "LEFT", 7)),
        ("0 3 DOWN x", Move(0, 3, "DOWN", 0)),
        ("0 3 DOWN 2x", Move(0, 3, "DOWN", 2)),
        ("0 3 down", None),
        ("0 DOWN", None),
        ("x 3 DOWN", None),
        (" SURRENDER", None),
        ("2147483648 0 UP", None),
        ("", None),
    ],
)
def test_reply_parsing_follows_cpp_stream_extraction(text, parsed):
    assert parse_reply(text) == parsed
