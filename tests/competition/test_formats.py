"""Tournament formats (gamed.competition.formats): their schedules, their ends and their reports,
driven as the director drives them (plan, play, plan again) by simulated bots of known strength."""

from __future__ import annotations

import math
import random

import pytest

from gamed import stats
from gamed.competition.formats import (
    ConfidenceMatch,
    FormatError,
    Gauntlet,
    Played,
    RoundRobin,
    SprtMatch,
    game_score,
    make_format,
)


def play_out(fmt, strengths, seed=1, room=4, limit=100_000):
    """Drive ``fmt`` like the director: plan, play every planned game (simulated: an expected
    score of the logistic Elo of the strength difference, draws 40 % of the weaker side's
    share), repeat until it is over."""
    rng = random.Random(seed)
    games, played = [], {}
    while True:
        open_pairs = len({g.pair for g in games if g.number not in played})
        new = fmt.plan(games, played, max(0, room - open_pairs))
        games += new
        waiting = [g for g in games if g.number not in played]
        if not waiting:
            assert fmt.finished(games, played)
            return games, played
        for g in waiting:
            a, b = g.seats
            p = stats.expected_score(strengths[a] - strengths[b])
            draw = 0.4 * min(p, 1 - p)  # wins p - draw/2, so the expected score is p
            r = rng.random()
            scores = (0.5, 0.5) if r < draw else (1.0, 0.0) if r < draw + p - draw / 2 else (0.0, 1.0)
            played[g.number] = Played(g.number, scores, "end")
        assert len(games) < limit


def test_a_round_robin_plays_every_matchup_its_rounds_with_colours_alternating_and_pairs_sharing_openings():
    fmt = RoundRobin(["a", "b", "c", "d"], rounds=4)
    assert fmt.total() == 6 * 4
    games, played = play_out(fmt, {"a": 0, "b": 0, "c": 0, "d": 0})
    assert [g.number for g in games] == list(range(1, 25))
    by_matchup = {}
    for g in games:
        by_matchup.setdefault(frozenset(g.seats), []).append(g)
    assert len(by_matchup) == 6
    for matchup in by_matchup.values():
        assert len(matchup) == 4
        firsts = [g.seats[0] for g in matchup]
        assert firsts[0] != firsts[1] and firsts[0] == firsts[2] and firsts[1] == firsts[3]
        # games 1+2 and 3+4 of a matchup are pairs: same pair, same opening, colours swapped
        for one, two in (matchup[0:2], matchup[2:4]):
            assert one.pair == two.pair and one.opening == two.opening and one.seats == two.seats[::-1]
        assert matchup[0].pair != matchup[2].pair
    # round by round: every matchup's first game comes before any matchup's second
    assert max(g.number for m in by_matchup.values() for g in m[:1]) < min(g.number for m in by_matchup.values() for g in m[1:2])


def test_a_gauntlet_is_the_first_bot_against_each_other():
    fmt = Gauntlet(["new", "x", "y", "z"], rounds=2)
    games, _ = play_out(fmt, {"new": 0, "x": 0, "y": 0, "z": 0})
    assert len(games) == 6 and all("new" in g.seats for g in games)
    assert {frozenset(g.seats) - {"new"} for g in games} == {frozenset({"x"}), frozenset({"y"}), frozenset({"z"})}


def test_standings_have_points_wdl_and_a_rating_interval_best_first():
    fmt = RoundRobin(["weak", "mid", "strong"], rounds=40)
    games, played = play_out(fmt, {"weak": -300, "mid": 0, "strong": 300}, seed=3)
    rows = fmt.standings(games, played)
    assert [r.bot for r in rows] == ["strong", "mid", "weak"] and [r.rank for r in rows] == [1, 2, 3]
    for r in rows:
        assert r.games == 80 and r.wins + r.draws + r.losses == 80
        assert r.low < r.rating < r.high and math.isfinite(r.low)
    assert sum(r.points for r in rows) == len(games)
    table = fmt.crosstable(games, played)
    assert table["strong"]["weak"][1] == 40 and table["strong"]["weak"][0] + table["weak"]["strong"][0] == 40


def test_a_game_that_one_seat_failed_to_start_is_its_loss_and_a_double_failure_a_draw():
    assert game_score(Played(1, (0.0, 0.0), "no game", faults=("start: x", None))) == (0.0, 1.0)
    assert game_score(Played(1, (0.0, 0.0), "disconnect", faults=(None, "protocol: left"))) == (1.0, 0.0)
    assert game_score(Played(1, (0.0, 0.0), "no game", faults=("start", "start"))) == (0.5, 0.5)
    assert game_score(Played(1, (1.0, 0.0), "end")) == (1.0, 0.0)


@pytest.mark.parametrize("difference, expected", [(60, "H1"), (-60, "H0")])
def test_an_sprt_match_stops_when_the_test_decides_and_says_so(difference, expected):
    fmt = SprtMatch(["new", "old"], elo0=0, elo1=20, alpha=0.05, beta=0.05)
    games, played = play_out(fmt, {"new": difference, "old": 0}, seed=5, room=2)
    verdict, pairs, curve = fmt.decision(games, played)
    assert verdict == expected
    assert len(curve) == pairs and (curve[-1] >= fmt.sprt.upper if expected == "H1" else curve[-1] <= fmt.sprt.lower)
    # the test was still open before its last pair
    assert all(fmt.sprt.lower < llr < fmt.sprt.upper for llr in curve[:-1])
    line = fmt.match_line(games, played)
    assert line.decision == expected and line.llr == curve[-1]
    assert sum(line.pentanomial) >= pairs and line.wins + line.draws + line.losses == len(played)
    assert (line.elo > 0) == (difference > 0) and line.low < line.elo < line.high


def test_sprt_decisions_of_simulated_matches_keep_to_the_error_rates():
    """Bots exactly at elo0 (H0 true) accept H1 at most about alpha of the time, and bots at
    elo1 accept H0 at most about beta (seeded, 150 matches each; bound with slack for sampling:
    an SPRT's real error rates are below its nominal ones)."""
    wrong = {}
    for truth, bad in ((0, "H1"), (80, "H0")):
        mistakes = 0
        for seed in range(150):
            fmt = SprtMatch(["new", "old"], elo0=0, elo1=80, alpha=0.1, beta=0.1)
            games, played = play_out(fmt, {"new": truth, "old": 0}, seed=seed, room=1)
            mistakes += fmt.decision(games, played)[0] == bad
        wrong[truth] = mistakes / 150
    assert wrong[0] <= 0.15 and wrong[80] <= 0.15, wrong


def test_an_sprt_with_a_game_cap_stops_there_undecided():
    fmt = SprtMatch(["a", "b"], elo0=0, elo1=5, max_games=20)
    games, played = play_out(fmt, {"a": 0, "b": 0})
    assert len(games) == 20 and fmt.decision(games, played)[0] is None and fmt.finished(games, played)


def test_a_confidence_match_ranks_a_spread_field_correctly():
    strengths = {"a": 400, "b": 200, "c": 0, "d": -200}
    fmt = ConfidenceMatch(list(strengths), confidence=0.95)
    games, played = play_out(fmt, strengths, seed=2)
    rows = fmt.standings(games, played)
    assert [r.bot for r in rows] == ["a", "b", "c", "d"]
    assert len(games) % 2 == 0 and all(g.number in played for g in games)


def test_a_format_resumed_from_part_of_its_games_plans_the_same_rest():
    """What the director does after a restart: a new format object is asked with what is stored."""
    games, played = play_out(SprtMatch(["a", "b"], elo0=0, elo1=20), {"a": 80, "b": 0}, seed=9, room=1)
    assert len(games) >= 8
    for cut in (2, 4, len(games) - 2):
        fresh = SprtMatch(["a", "b"], elo0=0, elo1=20)
        assert fresh.plan(games[:cut], {n: p for n, p in played.items() if n <= cut}, 1) == games[cut:cut + 2]
    fresh = ConfidenceMatch(["a", "b", "c"])
    first = fresh.plan([], {}, 3)
    # a confidence match resumed with its first pair in flight does not hand that pair out again
    again = ConfidenceMatch(["a", "b", "c"]).plan(first[:2], {}, 2)
    assert {g.seats for g in again} == {g.seats for g in first[2:]}


@pytest.mark.parametrize(
    "kind, bots, options, words",
    [
        ("round-robin", ["a"], {}, "at least 2 bots"),
        ("round-robin", ["a", "A"], {}, "named twice"),
        ("round-robin", ["a", "b"], {"rounds": 0}, "rounds must be"),
        ("sprt", ["a", "b", "c"], {}, "between two bots"),
        ("sprt", ["a", "b"], {"elo0": 10, "elo1": 5}, "impossible SPRT: elo0 must be less than elo1"),
        ("sprt", ["a", "b"], {"alpha": 0.7}, "impossible SPRT: alpha"),
        ("sprt", ["a", "b"], {"elo0": 20000, "elo1": 30000}, "impossible SPRT"),
        ("confidence", ["a", "b", "c"], {"top_k": 3}, "top_k must be"),
        ("confidence", ["a", "b"], {"confidence": 1.0}, "confidence must be"),
        ("knockout", ["a", "b"], {}, "unknown format"),
    ],
)
def test_impossible_tournaments_are_refused_with_one_line(kind, bots, options, words):
    with pytest.raises(FormatError) as e:
        make_format(kind, bots, options)
    assert words in str(e.value) and "\n" not in str(e.value)
