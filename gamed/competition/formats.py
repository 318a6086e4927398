"""Tournament formats: which games to play, when a tournament is over, and what it says.

Pure: no I/O, no reactor. A format is handed everything scheduled so far (``Game``) and every
result so far (``Played``) and answers from those alone, so that a tournament resumed from its
stored games continues exactly where it stopped: nothing a format knows lives anywhere else.

Every format plays **pairs**: two games with the same opening and the colours swapped (the
first game's seat 0 is the second game's seat 1), numbered ``2p - 1`` and ``2p`` for pair ``p``.

- ``RoundRobin``: every bot against every other, ``rounds`` games per matchup; the colours
  alternate from one game of a matchup to the next, and games ``2k - 1`` and ``2k`` of a matchup
  are a pair (an odd ``rounds`` leaves the last game of each matchup without its partner).
- ``Gauntlet``: one bot (the first) against each of the others, ``rounds`` games each, the same
  way.
- ``SprtMatch``: two bots play pairs until the sequential probability ratio test
  (gamed.stats.Sprt, on the pentanomial counts of the finished pairs, in pair order) accepts H0 or
  H1, or ``max_games`` is reached.
- ``ConfidenceMatch``: a whole field, pairs chosen by gamed.ranking.ConfidenceRanking until the
  ranking (or its top k) is settled at ``confidence``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

import attrs

from gamed import ranking, stats

FORMATS = ("round-robin", "gauntlet", "sprt", "confidence")


class FormatError(ValueError):
    """A tournament that cannot be played as described; the message is one line for the user."""


@attrs.frozen
class Game:
    """One scheduled game: its number (1, 2, ...), its pair, the bots in seat order, the opening."""

    number: int
    pair: int
    seats: tuple[str, str]
    opening: int


@attrs.frozen
class Played:
    """A finished game: the scores per seat, why it ended, each seat's fault (or None), its match."""

    number: int
    scores: tuple[float, float]
    reason: str
    outcome: str = ""
    faults: tuple[str | None, str | None] = (None, None)
    match_id: int | None = None


@attrs.frozen
class Row:
    """One bot's line in the standings: points of games, W/D/L, and a Bradley-Terry rating (the
    field's mean at 0) with its interval at the report's confidence; rank 1 is the best."""

    bot: str
    rank: int
    points: float
    games: int
    wins: int
    draws: int
    losses: int
    rating: float
    low: float
    high: float
    faults: int


@attrs.frozen
class MatchLine:
    """What a two-bot match says so far: W/D/L and the pentanomial counts from the first bot's
    side, Elo with its interval and LOS, and for an SPRT the LLR with its bounds and decision."""

    first: str
    second: str
    wins: int
    draws: int
    losses: int
    pentanomial: tuple[int, int, int, int, int]
    elo: float
    low: float
    high: float
    los: float
    llr: float | None = None
    lower: float | None = None
    upper: float | None = None
    decision: str | None = None


def game_score(played: Played) -> tuple[float, float]:
    """The scores a result counts with: a game nobody won because one seat failed (it never
    started, or it left before the first move) is that seat's loss; any other 0-0 is a draw."""
    scores = played.scores
    if sum(scores) > 0:
        return scores
    faulty = [f is not None for f in played.faults]
    if faulty == [True, False]:
        return (0.0, 1.0)
    if faulty == [False, True]:
        return (1.0, 0.0)
    return (0.5, 0.5)


def _scored(games: Sequence[Game], played: Mapping[int, Played]) -> Iterator[tuple[Game, Played, tuple[float, float]]]:
    """(game, result, its game_score) of every played game that is scheduled, in result order."""
    by_number = {g.number: g for g in games}
    for number, result in played.items():
        game = by_number.get(number)
        if game is not None:
            yield game, result, game_score(result)


class Format:
    """What every format answers; ``plan``, ``finished`` and ``describe`` are its own."""

    kind = ""
    bots: tuple[str, ...] = ()
    confidence = 0.95

    def plan(self, games: Sequence[Game], played: Mapping[int, Played], room: int) -> list[Game]:
        """The games to schedule now, given everything scheduled and finished so far; ``room`` is
        how many more pairs may be in play at once (formats with a fixed schedule ignore it)."""
        raise NotImplementedError

    def finished(self, games: Sequence[Game], played: Mapping[int, Played]) -> bool:
        """Whether the tournament is over once every scheduled game has been played."""
        raise NotImplementedError

    def total(self) -> int | None:
        """The number of games it will play (None: it depends on the results)."""
        return None

    def describe(self) -> str:
        raise NotImplementedError

    # --- reports -----------------------------------------------------------------------------

    def standings(self, games: Sequence[Game], played: Mapping[int, Played]) -> list[Row]:
        """Every bot, best first (by rating, then points)."""
        tally = {bot: [0.0, 0, 0, 0, 0, 0] for bot in self.bots}  # points, games, W, D, L, faults
        for game, result, scores in _scored(games, played):
            for seat, bot in enumerate(game.seats):
                mine, theirs = scores[seat], scores[1 - seat]
                row = tally[bot]
                row[0] += mine
                row[1] += 1
                row[2 if mine > theirs else 3 if mine == theirs else 4] += 1
                row[5] += result.faults[seat] is not None
        fit = ranking.fit_ratings(self.bots, _outcomes(games, played))
        order = {s.player: s for s in fit.standings(self.confidence)}
        rows = []
        for bot in self.bots:
            s = order[bot]
            points, count, wins, draws, losses, faults = tally[bot]
            rows.append(Row(bot, 0, points, count, wins, draws, losses, s.rating, s.low, s.high, faults))
        rows.sort(key=lambda r: (-(r.rating if math.isfinite(r.low) else -math.inf), -r.points, r.bot))
        return [attrs.evolve(r, rank=i + 1) for i, r in enumerate(rows)]

    def crosstable(self, games: Sequence[Game], played: Mapping[int, Played]) -> dict[str, dict[str, tuple[float, int]]]:
        """``table[a][b]``: a's points and games against b."""
        table = {a: {b: (0.0, 0) for b in self.bots if b != a} for a in self.bots}
        for game, result, scores in _scored(games, played):
            for seat, bot in enumerate(game.seats):
                other = game.seats[1 - seat]
                points, count = table[bot][other]
                table[bot][other] = (points + scores[seat], count + 1)
        return table

    def match_line(self, games: Sequence[Game], played: Mapping[int, Played]) -> MatchLine | None:
        """For a two-bot tournament: W/D/L, pairs, Elo, LOS of the first bot against the second."""
        if len(self.bots) != 2:
            return None
        first, second = self.bots
        singles, pairs = _match_results(first, games, played)
        trinomial = stats.Trinomial.from_games(singles)
        pentanomial = stats.Pentanomial.from_pairs(pairs)
        results: stats.Results = pentanomial if pentanomial.pairs else trinomial
        if results.games:
            e = stats.estimate(results, self.confidence)
            elo, low, high, los = e.elo, e.low, e.high, e.los
        else:
            elo, low, high, los = 0.0, -math.inf, math.inf, 0.5
        return MatchLine(
            first, second, trinomial.wins, trinomial.draws, trinomial.losses, pentanomial.counts, elo, low, high, los
        )


def _outcomes(games: Sequence[Game], played: Mapping[int, Played]) -> list[ranking.Outcome]:
    """The finished results as rating units: a pair when both its games are finished, else each
    finished game on its own."""
    by_pair: dict[int, list[Game]] = {}
    for game in games:
        by_pair.setdefault(game.pair, []).append(game)
    units = []
    for pair in sorted(by_pair):
        members = [g for g in by_pair[pair] if g.number in played]
        if len(members) == 2 and members[0].seats == members[1].seats[::-1]:
            a, b = members[0].seats
            score = game_score(played[members[0].number])[0] + game_score(played[members[1].number])[1]
            units.append(ranking.Outcome(a, b, score, 2))
        else:
            for g in members:
                units.append(ranking.Outcome(g.seats[0], g.seats[1], game_score(played[g.number])[0], 1))
    return units


def _match_results(first: str, games: Sequence[Game], played: Mapping[int, Played]) -> tuple[list[float], list[float]]:
    """``first``'s game scores, and its pair scores of the pairs with both games finished."""
    singles: list[float] = []
    by_pair: dict[int, float] = {}
    count: dict[int, int] = {}
    for game in sorted(games, key=lambda g: g.number):
        if game.number not in played:
            continue
        mine = game_score(played[game.number])[game.seats.index(first)]
        singles.append(mine)
        by_pair[game.pair] = by_pair.get(game.pair, 0.0) + mine
        count[game.pair] = count.get(game.pair, 0) + 1
    pairs = [by_pair[p] for p in sorted(by_pair) if count[p] == 2]
    return singles, pairs


def _bots(bots: Sequence[str], least: int = 2) -> tuple[str, ...]:
    names = tuple(bots)
    if len(names) < least:
        raise FormatError(f"a tournament needs at least {least} bots, not {len(names)}")
    lowered = [n.lower() for n in names]
    for name in names:
        if lowered.count(name.lower()) > 1:
            raise FormatError(f"bot {name} is named twice")
    return names


def _rounds(rounds: int) -> int:
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= 10000:
        raise FormatError(f"rounds must be a whole number from 1 to 10000, not {rounds!r}")
    return rounds


def _fixed_schedule(matchups: list[tuple[str, str]], rounds: int) -> list[Game]:
    """``rounds`` games of every matchup, round by round (every matchup's game k before any
    matchup's game k + 1), colours alternating, games 2k - 1 and 2k of a matchup a pair."""
    games = []
    number = 0
    pair_of: dict[tuple[int, int], int] = {}
    pairs = 0
    for game_round in range(rounds):
        for index, (a, b) in enumerate(matchups):
            number += 1
            key = (index, game_round // 2)
            if key not in pair_of:
                pairs += 1
                pair_of[key] = pairs
            seats = (a, b) if game_round % 2 == 0 else (b, a)
            games.append(Game(number, pair_of[key], seats, pair_of[key]))
    return games


class _Fixed(Format):
    """A format whose whole schedule is known at the start."""

    schedule: list[Game]

    def __init__(self, bots: Sequence[str], rounds: int = 2, confidence: float = 0.95):
        self.bots = _bots(bots)
        self.rounds = _rounds(rounds)
        self.confidence = _confidence(confidence)
        self.schedule = _fixed_schedule(self.matchups(), self.rounds)

    def matchups(self) -> list[tuple[str, str]]:
        """The pairs of bots that play, in the order of each round."""
        raise NotImplementedError

    def plan(self, games: Sequence[Game], played: Mapping[int, Played], room: int) -> list[Game]:
        return [g for g in self.schedule if g.number > len(games)]

    def finished(self, games: Sequence[Game], played: Mapping[int, Played]) -> bool:
        return len(games) >= len(self.schedule)

    def total(self) -> int:
        return len(self.schedule)


class RoundRobin(_Fixed):
    kind = "round-robin"

    def matchups(self) -> list[tuple[str, str]]:
        return [(a, b) for i, a in enumerate(self.bots) for b in self.bots[i + 1:]]

    def describe(self) -> str:
        return f"round robin of {len(self.bots)} bots, {self.rounds} games per matchup, {len(self.schedule)} games"


class Gauntlet(_Fixed):
    kind = "gauntlet"

    def matchups(self) -> list[tuple[str, str]]:
        return [(self.bots[0], other) for other in self.bots[1:]]

    def describe(self) -> str:
        return f"gauntlet of {self.bots[0]} against {len(self.bots) - 1} bots, {self.rounds} games each, {len(self.schedule)} games"


def _confidence(value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.5 < value < 1.0:
        raise FormatError(f"the confidence must be between 0.5 and 1 (exclusive), not {value!r}")
    return float(value)


def _max_games(value: int | None, least: int = 2) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise FormatError(f"max_games must be a whole number of at least {least}, not {value!r}")
    return value


def _next_pair(games: Sequence[Game]) -> int:
    return max((g.pair for g in games), default=0) + 1


def _pair_games(games: Sequence[Game], first: str, second: str) -> list[Game]:
    """The two games of the next pair: ``first`` in seat 0, then the colours swapped."""
    number = len(games)
    pair = _next_pair(games)
    return [Game(number + 1, pair, (first, second), pair), Game(number + 2, pair, (second, first), pair)]


def _pending_pairs(games: Sequence[Game], played: Mapping[int, Played]) -> int:
    return len({g.pair for g in games if g.number not in played})


class SprtMatch(Format):
    """Two bots, pairs until the SPRT decides (on finished pairs in pair order) or ``max_games``."""

    kind = "sprt"

    def __init__(
        self,
        bots: Sequence[str],
        elo0: float = 0.0,
        elo1: float = 10.0,
        alpha: float = 0.05,
        beta: float = 0.05,
        model: str = "logistic",
        max_games: int | None = None,
        confidence: float = 0.95,
    ):
        self.bots = _bots(bots)
        if len(self.bots) != 2:
            raise FormatError(f"an SPRT match is between two bots, not {len(self.bots)}")
        try:
            self.sprt = stats.Sprt(elo0, elo1, alpha, beta, model)
        except (ValueError, TypeError) as e:
            raise FormatError(f"impossible SPRT: {e}") from None
        self.max_games = _max_games(max_games)
        self.confidence = _confidence(confidence)
        self._scores: list[float] = []  # the finished pairs' scores seen last, and the LLR after each
        self._curve: list[float] = []

    def describe(self) -> str:
        s = self.sprt
        limit = f", at most {self.max_games} games" if self.max_games else ""
        return (
            f"SPRT {self.bots[0]} against {self.bots[1]}: H0 elo <= {s.elo0:g}, H1 elo >= {s.elo1:g} "
            f"({s.model}), alpha {s.alpha:g}, beta {s.beta:g}{limit}"
        )

    def decision(self, games: Sequence[Game], played: Mapping[int, Played]) -> tuple[str | None, int, list[float]]:
        """(decision or None, the pairs it took, the LLR after each finished pair in pair order),
        counting pairs in order only up to the first one not finished."""
        by_pair: dict[int, list[Game]] = {}
        for game in games:
            by_pair.setdefault(game.pair, []).append(game)
        scores: list[float] = []
        for pair in sorted(by_pair):
            members = by_pair[pair]
            if len(members) < 2 or any(g.number not in played for g in members):
                break
            scores.append(sum(game_score(played[g.number])[g.seats.index(self.bots[0])] for g in members))
        # The LLR after each pair, kept for the pairs seen before (the director asks after every
        # game: recomputing the whole curve each time would cost the square of the pairs).
        known = 0
        while known < min(len(scores), len(self._scores)) and scores[known] == self._scores[known]:
            known += 1
        del self._scores[known:], self._curve[known:]
        counts = [0] * 5
        for score in scores[:known]:
            counts[int(score * 2)] += 1
        for score in scores[known:]:
            counts[int(score * 2)] += 1
            self._scores.append(score)
            self._curve.append(self.sprt.llr(stats.Pentanomial(counts)))
        for index, llr in enumerate(self._curve):
            verdict = "H1" if llr >= self.sprt.upper else "H0" if llr <= self.sprt.lower else None
            if verdict is not None:
                return verdict, index + 1, self._curve[: index + 1]
        return None, len(scores), list(self._curve)

    def _capped(self, games: Sequence[Game]) -> bool:
        return self.max_games is not None and len(games) + 2 > self.max_games

    def plan(self, games: Sequence[Game], played: Mapping[int, Played], room: int) -> list[Game]:
        if self.decision(games, played)[0] is not None:
            return []
        planned: list[Game] = []
        while room > 0 and not self._capped(list(games) + planned):
            planned += _pair_games(list(games) + planned, *self.bots)
            room -= 1
        return planned

    def finished(self, games: Sequence[Game], played: Mapping[int, Played]) -> bool:
        return self.decision(games, played)[0] is not None or self._capped(games)

    def match_line(self, games: Sequence[Game], played: Mapping[int, Played]) -> MatchLine | None:
        line = super().match_line(games, played)
        verdict, _, curve = self.decision(games, played)
        return attrs.evolve(
            line, llr=curve[-1] if curve else 0.0, lower=self.sprt.lower, upper=self.sprt.upper, decision=verdict
        )


class ConfidenceMatch(Format):
    """A field ranked by gamed.ranking.ConfidenceRanking: pairs for the orders not yet settled."""

    kind = "confidence"

    def __init__(
        self, bots: Sequence[str], confidence: float = 0.95, top_k: int | None = None, max_games: int | None = None
    ):
        self.bots = _bots(bots)
        self.confidence = _confidence(confidence)
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k < len(self.bots)):
            raise FormatError(f"top_k must be a whole number from 1 to {len(self.bots) - 1}, not {top_k!r}")
        self.top_k = top_k
        self.max_games = _max_games(max_games)

    def describe(self) -> str:
        what = f"the top {self.top_k}" if self.top_k else "the whole ranking"
        limit = f", at most {self.max_games} games" if self.max_games else ""
        return f"confidence ranking of {len(self.bots)} bots until {what} is settled at {self.confidence:g}{limit}"

    def scheduler(self, games: Sequence[Game], played: Mapping[int, Played]) -> ranking.ConfidenceRanking:
        """A ConfidenceRanking that knows every finished pair, and every unfinished one as pending."""
        scheduler = ranking.ConfidenceRanking(self.bots, self.confidence, self.top_k, self.max_games)
        by_pair: dict[int, list[Game]] = {}
        for game in games:
            by_pair.setdefault(game.pair, []).append(game)
        for pair in sorted(by_pair):
            members = by_pair[pair]
            a, b = members[0].seats
            if all(g.number in played for g in members):
                score = sum(game_score(played[g.number])[g.seats.index(a)] for g in members)
                scheduler.record(a, b, score)
            else:
                scheduler.pending(a, b)
        return scheduler

    def plan(self, games: Sequence[Game], played: Mapping[int, Played], room: int) -> list[Game]:
        if room <= 0:
            return []
        planned: list[Game] = []
        for a, b in self.scheduler(games, played).next_pairs(room):
            planned += _pair_games(list(games) + planned, a, b)
        return planned

    def finished(self, games: Sequence[Game], played: Mapping[int, Played]) -> bool:
        if _pending_pairs(games, played):
            return False
        return self.scheduler(games, played).finished


def make_format(kind: str, bots: Sequence[str], options: Mapping[str, object]) -> Format:
    """The format ``kind`` for ``bots`` with ``options`` (the keys of its constructor)."""
    makers = {"round-robin": RoundRobin, "gauntlet": Gauntlet, "sprt": SprtMatch, "confidence": ConfidenceMatch}
    maker = makers.get(kind)
    if maker is None:
        raise FormatError(f"unknown format {kind!r}; known: {', '.join(FORMATS)}")
    try:
        return maker(bots, **options)
    except TypeError as e:
        raise FormatError(f"{kind}: {e}") from None
