"""Virtual Fight seen through the common game interface (``gamed.play.IRules``).

Seat t is team t. Turns are simultaneous: while a turn is open every team still playing acts
(phase ``turn``). A seat's actions are its warriors' commands as the AI protocol writes them
(``n&MOVE&D``, ``n&SHOOT&D``, ``n&NONE&D``; the protocol's other spellings are accepted too: any
case, a bare ``n&SHOOT``, ``SHOT``, a bare ``n&NONE`` pass), one action per warrior, then ``DONE``,
which closes the seat's turn. When every seat still playing has closed, the turn is resolved by the
rules (``Battle.resolve``, the shots as one batch, then ``judge``) as the game does.

The state is an immutable ``FightState``; each ``apply`` rebuilds a ``Battle`` from it, lets the
rules execute the command, and freezes the result. What a seat sees: its own warriors, its own
queued shots, and what its warriors see (spec §6 sight); a spectator sees every warrior but no
queued shot of the open turn.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from typing import Any

import attrs
from zope.interface import implementer

from gamed.fight import wire
from gamed.fight.rules import (
    DONE,
    QUERIES,
    Battle,
    Command,
    Dir,
    FightMap,
    Result,
    judge,
    resolve_map,
    shipped_maps,
)
from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, Actions, IllegalAction, IRules, OptionSpec

CLOSE = "DONE"
GRAMMAR = (
    "n&MOVE&D, n&SHOOT[&D] or n&NONE&D for warrior n (0-4), D one of UP DOWN LEFT RIGHT "
    "(one action per warrior a turn); DONE ends your turn"
)
_REFUSALS = {
    "100": "that warrior is dead",
    "111": "the square is not empty",
    "112": "that is off the map",
    "120": "that warrior has already acted this turn",
}
_SCORES = {Result.WIN: 1.0, Result.DRAW: 0.5, Result.LOSE: 0.0}

# One warrior: (row, col, facing name, alive).
WarriorState = tuple[int, int, str, bool]


@functools.lru_cache(maxsize=16)
def _map(name: str) -> FightMap:
    """A shipped map, read once (the packaged files are data, like the default map's text)."""
    return resolve_map(name)


@attrs.frozen
class FightState:
    """A game between turns or in an open turn."""

    map: str
    teams: int
    max_turns: int
    turn: int  # the open turn (from 1); the last resolved one once over
    warriors: tuple[tuple[WarriorState, ...], ...]  # [team][number]
    playing: frozenset[int]  # teams still in the game
    acted: frozenset[tuple[int, int]] = frozenset()
    passed: frozenset[tuple[int, int]] = frozenset()
    shots: tuple[tuple[int, int, str], ...] = ()  # queued: (team, number, direction), sorted
    closed: frozenset[int] = frozenset()  # seats that sent DONE this turn
    results: tuple[tuple[int, str], ...] = ()  # (team, WIN/LOSE/DRAW) of teams out, sorted
    over: bool = False


def _battle(state: FightState) -> Battle:
    battle = Battle(_map(state.map), state.teams)
    battle.occupied = {}
    battle.bodies = set()
    for team, warriors in zip(battle.warriors, state.warriors):
        for w, (row, col, facing, alive) in zip(team, warriors):
            w.row, w.col, w.facing, w.alive = row, col, Dir[facing], alive
            if alive:
                battle.occupied[w.square] = w
            else:
                battle.bodies.add(w.square)
    battle.playing = set(state.playing)
    battle.restore_turn(state.acted, state.passed, {(t, n): Dir[d] for t, n, d in state.shots})
    return battle


def _frozen(state: FightState, battle: Battle, **changes: Any) -> FightState:
    acted, passed, shots = battle.open_turn()
    return attrs.evolve(
        state,
        warriors=tuple(tuple((w.row, w.col, w.facing.name, w.alive) for w in team) for team in battle.warriors),
        playing=frozenset(battle.playing),
        acted=frozenset(acted),
        passed=frozenset(passed),
        shots=tuple(sorted((t, n, d.name) for (t, n), d in shots.items())),
        **changes,
    )


def _canonical(command: Command) -> str:
    text = f"{command.warrior}&{command.verb.value}"
    return text if command.direction is None else f"{text}&{command.direction.name}"


@implementer(IRules)
class FightRules:
    """The IRules of Virtual Fight (one instance, ``RULES``)."""

    name = "fight"
    hidden = True  # a seat sees only its own warriors
    options: Mapping[str, Any] = {
        "map": OptionSpec(
            "string", "default", "the map: default (2 teams) or four (2-4 teams)", choices=tuple(shipped_maps())
        ),
        "teams": OptionSpec(
            "integer", 2, "how many teams (the map must have start squares for them)", minimum=2, maximum=4
        ),
        "max_turns": OptionSpec(
            "integer", 500, "the turn after which the most living warriors win", minimum=1, maximum=10_000
        ),
    }

    def seat_count(self, options: Mapping[str, Any]) -> int:
        return int(options.get("teams", 2))

    def initial(self, options: Mapping[str, Any], rng: random.Random) -> FightState:
        name = options.get("map", "default")
        teams = int(options.get("teams", 2))
        battle = Battle(_map(name), teams)  # ValueError when the map has too few start squares
        state = FightState(name, teams, int(options.get("max_turns", 500)), 1, (), frozenset())
        return _frozen(state, battle)

    def to_act(self, state: FightState) -> tuple[int, ...]:
        if state.over:
            return ()
        return tuple(sorted(state.playing - state.closed))

    def phase(self, state: FightState) -> str:
        return "over" if state.over else "turn"

    def legal_actions(self, state: FightState, seat: int) -> Actions:
        if seat not in self.to_act(state):
            return Actions(grammar=GRAMMAR)
        battle = _battle(state)
        fmap = battle.map
        out = []
        for w in battle.living(seat):
            if battle.has_acted(seat, w.number):
                continue
            for d in Dir:
                target = (w.row + d.value[0], w.col + d.value[1])
                if fmap.inside(target) and not battle.blocked(target):
                    out.append(f"{w.number}&MOVE&{d.name}")
            out += [f"{w.number}&SHOOT&{d.name}" for d in Dir]
            out += [f"{w.number}&NONE&{d.name}" for d in Dir]
        out.append(CLOSE)
        return Actions(tuple(out), grammar=GRAMMAR)

    def apply(self, state: FightState, seat: int, action: str) -> FightState:
        if state.over:
            raise IllegalAction(GAME_OVER, "the game is over")
        if seat not in self.to_act(state):
            raise IllegalAction(NOT_YOUR_TURN, "your turn is closed: wait for the others")
        text = action.strip() if isinstance(action, str) else ""
        if text.upper() == CLOSE:
            closed = state.closed | {seat}
            state = attrs.evolve(state, closed=closed)
            if state.playing <= closed:
                return self._resolve(state)
            return state
        command = wire.parse_command(text) if text else None
        if command is None:
            raise IllegalAction(BAD_ACTION, f"not a Virtual Fight command: {text[:40]!r} ({GRAMMAR})")
        if command.verb in QUERIES:
            raise IllegalAction(BAD_ACTION, f"{command.verb.value} is a query, not an action: see the observation")
        battle = _battle(state)
        code, _ = battle.execute(seat, command)
        if code != DONE:
            why = _REFUSALS.get(code, code)
            raise IllegalAction(NO_SUCH_ACTION, f"{_canonical(command)}: {why} ({code})")
        return _frozen(state, battle)

    def _resolve(self, state: FightState) -> FightState:
        """Every seat has closed: the rules resolve the turn (spec §7) and judge the end (§8)."""
        battle = _battle(state)
        before = battle.living_teams()
        battle.resolve()
        over, results = judge(before, battle.counts(), state.turn, state.max_turns)
        if not over:
            for team in results:
                battle.remove_team(team)
        done = dict(state.results) | {t: r.value for t, r in results.items()}
        return _frozen(
            state,
            battle,
            closed=frozenset(),
            results=tuple(sorted(done.items())),
            over=over,
            turn=state.turn if over else state.turn + 1,
        )

    def observation(self, state: FightState, seat: int | None) -> dict:
        fmap = _map(state.map)
        view: dict[str, Any] = {
            "map": state.map,
            "rows": fmap.rows,
            "cols": fmap.cols,
            "walls": fmap.cell_rows(),
            "turn": state.turn,
            "max_turns": state.max_turns,
            "playing": sorted(state.playing),
            "closed": sorted(state.closed),
            "over": state.over,
            "results": {str(t): r for t, r in state.results},
        }
        if seat is None:
            view["warriors"] = [
                {"team": t, "id": n, "row": r, "col": c, "facing": f, "alive": a}
                for t, team in enumerate(state.warriors)
                for n, (r, c, f, a) in enumerate(team)
            ]
            return view
        battle = _battle(state)
        shots = battle.open_turn()[2]
        view["seat"] = seat
        view["warriors"] = [
            {
                "id": w.number, "row": w.row, "col": w.col, "facing": w.facing.name, "alive": w.alive,
                "acted": battle.has_acted(seat, w.number),
                "shot": shots[(seat, w.number)].name if (seat, w.number) in shots else None,
                "sees": [[r, c, letter] for (r, c), letter in battle.sight(w)] if w.alive else [],
            }
            for w in battle.warriors[seat]
        ]
        return view

    def render(self, state: FightState, seat: int | None) -> str:
        fmap = _map(state.map)
        grid = [list(row) for row in fmap.cell_rows()]
        for t, team in enumerate(state.warriors):
            for r, c, _, alive in team:
                if not alive:
                    grid[r][c] = "x"
                elif seat is None or t == seat:
                    grid[r][c] = str(t)
        lines = ["".join(row) for row in grid]
        if state.over:
            lines.append("game over: " + ", ".join(f"team {t} {r}" for t, r in state.results))
        else:
            lines.append(f"turn {state.turn}; to act: {', '.join(map(str, self.to_act(state)))}")
        return "\n".join(lines)

    def result(self, state: FightState) -> list[float] | None:
        if not state.over:
            return None
        results = dict(state.results)
        return [_SCORES[Result(results.get(t, "LOSE"))] for t in range(state.teams)]

    def dump(self, state: FightState) -> dict:
        return {
            "map": state.map,
            "teams": state.teams,
            "max_turns": state.max_turns,
            "turn": state.turn,
            "warriors": [[list(w) for w in team] for team in state.warriors],
            "playing": sorted(state.playing),
            "acted": sorted(map(list, state.acted)),
            "passed": sorted(map(list, state.passed)),
            "shots": [list(s) for s in state.shots],
            "closed": sorted(state.closed),
            "results": [list(r) for r in state.results],
            "over": state.over,
        }

    def load(self, data: Mapping[str, Any]) -> FightState:
        return FightState(
            map=str(data["map"]),
            teams=int(data["teams"]),
            max_turns=int(data["max_turns"]),
            turn=int(data["turn"]),
            warriors=tuple(
                tuple((int(r), int(c), str(f), bool(a)) for r, c, f, a in team) for team in data["warriors"]
            ),
            playing=frozenset(int(t) for t in data["playing"]),
            acted=frozenset((int(t), int(n)) for t, n in data["acted"]),
            passed=frozenset((int(t), int(n)) for t, n in data["passed"]),
            shots=tuple((int(t), int(n), str(d)) for t, n, d in data["shots"]),
            closed=frozenset(int(t) for t in data["closed"]),
            results=tuple((int(t), str(r)) for t, r in data["results"]),
            over=bool(data["over"]),
        )


RULES = FightRules()
