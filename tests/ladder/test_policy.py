"""The ladder's pure matchmaking (gamed.ladder.policy): who meets whom, the reach that widens with
waiting, each account's concurrency, the per-pair caps and the colours."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gamed.ladder.policy import Entry, LadderRules, PairHistory, pairs, reach

RULES = LadderRules(window=100, widening=10, concurrency=4, pair_cap=3, pair_window=3600, in_row=0)


def entry(account, mu, since=0.0, limit=1, sigma=100.0):
    return Entry(member=f"conn-{account}-{mu}-{since}", account=account, mu=mu, sigma=sigma, since=since, limit=limit)


def names(chosen):
    return [(a.account, b.account) for a, b in chosen]


def test_the_closest_ratings_meet_first():
    field = [entry("a", 1500), entry("b", 1900), entry("c", 1540), entry("d", 1880)]
    assert sorted(map(sorted, names(pairs(field, 0.0, {}, PairHistory(), RULES)))) == [["a", "c"], ["b", "d"]]


def test_ratings_too_far_apart_wait_until_the_reach_has_widened():
    field = [entry("a", 1500, since=0.0), entry("b", 1750, since=5.0)]
    assert pairs(field, 10.0, {}, PairHistory(), RULES) == []  # a reaches 100 + 10 * 10 = 200 < 250
    assert reach(field[0], 15.0, RULES) == 250
    assert names(pairs(field, 15.0, {}, PairHistory(), RULES)) == [("a", "b")]  # a waited longer: it plays first


def test_two_connections_of_one_account_never_meet():
    assert pairs([entry("a", 1500), entry("a", 1500, since=1)], 0.0, {}, PairHistory(), RULES) == []


def test_an_account_plays_no_more_ladder_games_at_once_than_its_limit():
    field = [entry("a", 1500, limit=2), entry("b", 1500), entry("a", 1501, since=1, limit=2), entry("c", 1501)]
    assert len(pairs(field, 0.0, {}, PairHistory(), RULES)) == 2
    assert len(pairs(field, 0.0, {"a": 1}, PairHistory(), RULES)) == 1, "one place left for a"
    field1 = [entry("a", 1500, limit=1), entry("b", 1500), entry("a", 1501, since=1, limit=1), entry("c", 1501)]
    assert len(pairs(field1, 0.0, {}, PairHistory(), RULES)) == 1


def test_the_pair_cap_holds_within_its_window_and_lifts_after_it():
    history = PairHistory()
    for t in (0.0, 10.0, 20.0):
        history.begun("a", "b", t)
    field = [entry("a", 1500, since=30), entry("b", 1500, since=30)]
    assert pairs(field, 30.0, {}, history, RULES) == []
    assert len(pairs(field, 3601.0, {}, history, RULES)) == 1


def test_games_in_a_row_against_one_opponent_are_capped_when_asked():
    rules = LadderRules(window=100, widening=0, concurrency=4, pair_cap=100, pair_window=3600, in_row=2)
    history = PairHistory()
    history.begun("a", "b", 0.0)
    history.begun("b", "a", 1.0)
    field = [entry("a", 1500, since=2), entry("b", 1500, since=2), entry("c", 1550, since=2)]
    chosen = names(pairs(field, 2.0, {}, history, rules))
    assert len(chosen) == 1 and "c" in chosen[0], chosen


def test_the_colours_alternate_between_two_accounts():
    history = PairHistory()
    a, b = entry("a", 1500), entry("b", 1500, since=1)
    first, second = history.order(a, b)
    assert first.account == "a", "at the first meeting the longer waiter plays first"
    history.begun(first.account, second.account, 0.0)
    assert history.order(a, b)[0].account == "b"
    assert history.order(b, a)[0].account == "b"


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(1000, 2000), st.integers(0, 60), st.integers(1, 3)), max_size=12),
       st.integers(0, 120))
def test_every_choice_respects_the_rules(raw, now):
    field = [Entry(member=i, account=a, mu=mu, sigma=100, since=min(since, now), limit=lim)
             for i, (a, mu, since, lim) in enumerate(raw)]
    chosen = pairs(field, float(now), {}, PairHistory(), RULES)
    members = [e.member for pair in chosen for e in pair]
    assert len(members) == len(set(members)), "nobody plays two games from one round"
    per_account: dict = {}
    for first, second in chosen:
        assert first.account != second.account
        longer = first if first.since <= second.since else second
        assert abs(first.mu - second.mu) <= reach(longer, float(now), RULES)
        for e in (first, second):
            per_account[e.account] = per_account.get(e.account, 0) + 1
            assert per_account[e.account] <= e.limit
    assert pairs(field, float(now), {}, PairHistory(), RULES) == chosen, "deterministic"
