"""Results in words for people: every game's ways to end, never internal jargon."""

import pytest

from gamed.outcome import outcome_text, points

AB = ["alice", "bob"]


@pytest.mark.parametrize(
    "game, scores, reason, kw, text",
    [
        ("kalaha", (1, 0), "end", {"points": [40, 32]}, "alice won 40\u201332"),
        ("kalaha", (0, 1), "end", {"points": [30, 42]}, "bob won 42\u201330"),
        ("kalaha", (0.5, 0.5), "end", {"points": [36, 36]}, "draw 36\u201336"),
        ("kalaha", (1, 0), "end", {}, "alice won"),
        ("kalaha", (1, 0), "end", {"points": [3, 30]}, "alice won"),
        ("kalaha", (0, 1), "resign", {"points": [10, 3]}, "bob won: alice resigned"),
        ("kalaha", (1, 0), "timeout", {}, "alice won: bob ran out of time"),
        ("kalaha", (1, 0), "strikes", {}, "alice won: bob made too many protocol errors"),
        ("kalaha", (0, 0), "disconnect", {"rated": False}, "aborted: a player left"),
        ("kalaha", (0, 0), "shutdown", {"rated": False}, "aborted: the server stopped"),
        ("connect4", (0, 1), "four", {}, "bob won: four in a row"),
        ("connect4", (0.5, 0.5), "full", {}, "draw: the board is full"),
        ("connect4", (0, 0), "engine: the host process died", {"rated": False}, "aborted: an engine failed (the host process died)"),
        ("fight", (1, 0), "timeout", {}, "alice won: bob disqualified"),
        ("fight", (0, 1), "last team standing", {}, "bob won: last team standing"),
        ("fight", (0.5, 0.5), "all warriors killed", {}, "draw: all warriors killed"),
        ("fight", (1, 0), "turn limit", {}, "alice won: most warriors alive after the last turn"),
        ("fight", (1, 0), "disconnect", {}, "alice won: bob left the game"),
        ("combat", (1, 0), "flag captured", {}, "alice won: flag captured"),
        ("combat", (0, 1), "forfeit", {"detail": "seat 0 (alice) left the game"}, "bob won: seat 0 (alice) left the game"),
        ("combat", (1, 0), "no movable units left", {}, "alice won: bob has no movable units left"),
        ("stratego", (1, 0), "Captured the flag", {}, "alice won: flag captured"),
        ("stratego", (0, 1), "This player has surrendered!", {}, "bob won: alice surrendered"),
        ("stratego", (1, 0), "Response timeout after 2.000000 seconds.", {}, "alice won: bob ran out of time"),
        ("stratego", (1, 0), "Selected piece belongs to other player", {}, "alice won: bob made an illegal move (selected piece belongs to other player)"),
        ("stratego", (0.5, 0.5), "Game declared a draw after 1000 turns", {}, "draw after 1000 turns"),
        ("stratego", (0.5, 0.5), "Game declared a draw because neither player has mobile pieces", {}, "draw: neither side can move"),
        ("stratego", (0, 0), "An illegal setup was made by BOTH", {"rated": False}, "aborted: both setups were illegal"),
        ("stratego", (1, 0), "An illegal setup was made by bob", {}, "alice won: bob made an illegal setup"),
        ("kalaha", (1, 0), "something new", {}, "alice won: something new"),
    ],
)
def test_every_way_a_game_ends_in_words(game, scores, reason, kw, text):
    assert outcome_text(game, AB, scores, reason, **kw) == text


def test_more_seats_name_every_winner_and_loser():
    names = ["ann", "ben", "cat", "dan"]
    assert outcome_text("fight", names, (1, 0, 0, 0), "last team standing") == "ann won: last team standing"
    assert outcome_text("fight", names, (0.5, 0.5, 0, 0), "turn limit") == "ann and ben drew: most warriors alive after the last turn"
    assert outcome_text("fight", names, (0, 0, 1, 0), "timeout") == "cat won: ann, ben and dan disqualified"


def test_no_jargon_such_as_won_end():
    for reason in ("end", "END"):
        assert "(" not in outcome_text("kalaha", AB, (1, 0), reason) and "end" not in outcome_text("kalaha", AB, (1, 0), reason)


def test_points_are_kalahas_stones():
    assert points("kalaha", {"pits": [[0] * 6, [0] * 6], "stores": [40, 32], "to_move": None}) == [40.0, 32.0]
    assert points("kalaha", None) is None and points("connect4", {"stores": [1, 2]}) is None
