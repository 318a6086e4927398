"""How many games the confidence ranking (gamed.ranking.ConfidenceRanking) needs to rank a field of
bots, against a fixed round robin that gets the ranking right as often.

The issue's goal: "the confidence mode needs at most 50 % of the games of a round robin for the same
correct ranking".

Simulated bots of known strength (gamed.simulation: draws, an opening book that favours white,
every matchup played as colour-swapped pairs) in these fields:

- ``spaced-60``: 8 bots 60 Elo apart;
- ``close-pair``: 8 bots 60 Elo apart, except two neighbours only 25 apart;
- ``top-3``: the spaced-60 field, but only the top 3 (and their order) asked for (``top_k=3``).

For each field and each of --seeds seeds the bots are shuffled (the scheduler never sees the true
order), then:

(a) the confidence mode at --confidence (0.95) runs until settled, --batch pairs at a time (pairs in
    play at once: they are allocated before any of their results is known); correct means the final
    standings have every bot in its true place (with top_k: the top k, in order);
(b) round robins play round after round, every matchup one colour-swapped pair per round, and are
    ranked by total score (a tie for a place counts as wrong). They are cheap to simulate, so they
    run on --rr-seeds other seeds (1000), all in step: R is the first number of rounds at which
    the share of correct round robins reaches the confidence mode's correct rate, estimated as
    (correct + 1/2) / (seeds + 1) so that a perfect record does not demand certainty.

Both sides draw each pair's score from the exact distribution of a colour-swapped pair
(``GameModel.pair_sampler``), the same model for the same seed.

Printed per field: the confidence mode's correct rate and games (mean, median, max), R and the
round robin's games, and the ratio of the means; beside it, for reference, the round robin that is
correct in 95 % of seeds (the confidence mode is usually right more often than its 95 %); then MET / NOT MET for every field against 50 %.
A default run (200 seeds per field) takes about a minute;
--quick runs 30 seeds (about 10 s; its figures are noisier, the round robin's R above all). Exit
status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import print_targets, work_tree_version  # noqa: E402 - the shared report lines

from gamed.ranking import ConfidenceRanking  # noqa: E402
from gamed.simulation import GameModel  # noqa: E402

TARGET = 0.5  # the confidence mode may need at most half the round robin's games
SPACED = tuple(60.0 * i for i in range(8))
CLOSE = (0.0, 60.0, 120.0, 180.0, 205.0, 265.0, 325.0, 385.0)
FIELDS = {
    # name: (true Elo of the bots, top_k)
    "spaced-60": (SPACED, None),
    "close-pair": (CLOSE, None),
    "top-3": (SPACED, 3),
}


def _field(strengths, seed: int):
    """The bots' names in a shuffled order, their true strength, and the game model of this seed."""
    rng = random.Random(seed)
    names = [f"bot{i}" for i in range(len(strengths))]
    rng.shuffle(names)
    truth = dict(zip(names, strengths, strict=True))
    model = GameModel.with_book(random.Random(10_000 + seed), draw_rate=0.35, size=40, bias=50.0)
    return names, truth, model


def _correct(order: list[str], truth: dict[str, float], top_k: int | None) -> bool:
    best_first = sorted(truth, key=lambda n: -truth[n])
    if top_k is None:
        return order == best_first
    return order[:top_k] == best_first[:top_k]


def _samplers(names, truth, model):
    """Each ordered matchup's pair-score sampler (the exact pair distribution of the model)."""
    return {(a, b): model.pair_sampler(truth[a] - truth[b]) for a in names for b in names if a != b}


def confidence_run(strengths, top_k, seed: int, confidence: float, batch: int) -> tuple[bool, int]:
    """One confidence-mode ranking: (correct, games played)."""
    names, truth, model = _field(strengths, seed)
    pair = _samplers(names, truth, model)
    rng = random.Random(seed)
    ranking = ConfidenceRanking(names, confidence=confidence, top_k=top_k, max_games=200_000)
    while not ranking.finished:
        pairs = ranking.next_pairs(batch)
        if not pairs:
            break
        for a, b in pairs:
            ranking.record(a, b, pair[a, b](rng))
    order = [s.player for s in ranking.standings()]
    return _correct(order, truth, top_k), ranking.games


def round_robin_rates(strengths, top_k, seeds: range, targets: tuple[float, ...], max_rounds: int) -> list:
    """Round robins on ``seeds``, played round by round in step: for each of ``targets``, the first
    number of rounds R at which the share of seeds whose ranking by score is correct reaches it,
    with that share ((None, best share) when no R up to ``max_rounds`` does)."""
    fields = []
    for seed in seeds:
        names, truth, model = _field(strengths, seed)
        fields.append((names, truth, _samplers(names, truth, model), random.Random(seed), dict.fromkeys(names, 0.0)))
    matchups = [list(combinations(f[0], 2)) for f in fields]
    places = len(strengths) if top_k is None else top_k + 1
    found: list = [None] * len(targets)
    best = 0.0
    for rounds in range(1, max_rounds + 1):
        correct = 0
        for (names, truth, pair, rng, score), games in zip(fields, matchups, strict=True):
            for a, b in games:
                s = pair[a, b](rng)
                score[a] += s
                score[b] += 2.0 - s
            order = sorted(names, key=lambda n: -score[n])
            tied = any(score[order[i]] == score[order[i + 1]] for i in range(min(places, len(names)) - 1))
            correct += not tied and _correct(order, truth, top_k)
        share = correct / len(fields)
        best = max(best, share)
        for k, target in enumerate(targets):
            if found[k] is None and share >= target:
                found[k] = (rounds, share)
        if all(found):
            break
    return [f if f is not None else (None, best) for f in found]


def compare(name: str, args) -> dict:
    strengths, top_k = FIELDS[name]
    seeds = range(args.seeds)
    runs = [confidence_run(strengths, top_k, seed, args.confidence, args.batch) for seed in seeds]
    hits = sum(ok for ok, _ in runs)
    games = [g for _, g in runs]
    # the round robin is cheap to simulate: many more seeds make its correct rate per R smooth, so
    # that R does not depend on luck. The confidence mode's rate is estimated as (hits + 1/2) /
    # (seeds + 1), so that a perfect record does not ask the round robin for certainty.
    target = (hits + 0.5) / (args.seeds + 1)
    rr_seeds = range(1_000_000, 1_000_000 + args.rr_seeds)
    (needed, rr_share), (needed95, rr_share95) = round_robin_rates(
        strengths, top_k, rr_seeds, (target, 0.95), args.max_rounds
    )
    per_round = len(strengths) * (len(strengths) - 1)  # games per round: every matchup, two games
    rr_games = needed * per_round if needed else None
    rr_games95 = needed95 * per_round if needed95 else None
    return {
        "field": name,
        "bots": len(strengths),
        "top_k": top_k,
        "seeds": args.seeds,
        "confidence_correct": hits / args.seeds,
        "confidence_games_mean": statistics.mean(games),
        "confidence_games_median": statistics.median(games),
        "confidence_games_max": max(games),
        "round_robin_rounds": needed,
        "round_robin_games": rr_games,
        "target": target,
        "round_robin_correct": rr_share,
        "ratio": statistics.mean(games) / rr_games if rr_games else None,
        "round_robin_rounds_95": needed95,
        "round_robin_games_95": rr_games95,
        "round_robin_correct_95": rr_share95,
        "ratio_95": statistics.mean(games) / rr_games95 if rr_games95 else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="seeds per field (default 200)")
    parser.add_argument("--quick", action="store_true", help="30 seeds per field")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--batch", type=int, default=4, help="pairs handed out at once (default 4)")
    parser.add_argument("--rr-seeds", type=int, default=1000, help="round robin seeds per field (default 1000)")
    parser.add_argument("--max-rounds", type=int, default=150, help="longest round robin tried (default 150)")
    parser.add_argument("--field", action="append", choices=sorted(FIELDS), help="only this field (repeatable)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 30
    start = time.perf_counter()
    print(f"code: {work_tree_version('gamed', 'imported from the work tree')}")
    print(
        f"{args.seeds} seeds per field ({args.rr_seeds} for the round robin), confidence {args.confidence}, "
        f"{args.batch} pairs at a time; "
        "draw rate 0.35 between equals, 40 openings with white +0..100 Elo"
    )
    verdicts = []
    for name in args.field or FIELDS:
        r = compare(name, args)
        print(
            f"\n{name} ({r['bots']} bots{', top ' + str(r['top_k']) if r['top_k'] else ''}):\n"
            f"  confidence mode: correct {r['confidence_correct']:.1%}, games mean {r['confidence_games_mean']:,.0f}, "
            f"median {r['confidence_games_median']:,.0f}, max {r['confidence_games_max']:,}"
        )
        if r["round_robin_rounds"] is None:
            print(
                f"  round robin: not correct in {r['target']:.1%} of seeds within {args.max_rounds} rounds "
                f"(at best {r['round_robin_correct']:.1%})"
            )
            verdicts.append((f"{name}: confidence games <= 50 % of the round robin's", True, "round robin never as good"))
            continue
        print(
            f"  round robin: {r['round_robin_rounds']} rounds = {r['round_robin_games']:,} games "
            f"(correct {r['round_robin_correct']:.1%}, target {r['target']:.1%})\n"
            f"  confidence / round robin games: {r['ratio']:.0%}"
        )
        if r["round_robin_rounds_95"]:
            print(
                f"  (a round robin correct in 95 % of seeds: {r['round_robin_rounds_95']} rounds = "
                f"{r['round_robin_games_95']:,} games, correct {r['round_robin_correct_95']:.1%}; "
                f"confidence / that: {r['ratio_95']:.0%})"
            )
        verdicts.append(
            (f"{name}: confidence games <= 50 % of the round robin's", r["ratio"] <= TARGET, f"{r['ratio']:.0%}")
        )
    print_targets(verdicts)
    print(f"\ntotal time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
