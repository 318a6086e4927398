"""GGZ Combat seen through the common game interface (``gamed.play.IRules``).

The game is played on one of the shipped maps (``gamed.combat.maps``; each is for two seats) by
the shared Stratego core's ``CombatGame``: the setup check, the move checker, attacks, the counts
and the game-over test are its own, never repeated here. Seat 0 sets up in the zone the map marks
``1``, seat 1 in the one marked ``2``.

Phase ``setup``: every seat that has not set up acts at once. A setup is one token per cell of the
seat's zone, in increasing cell order (the order of the protocol's setup string): ``F`` flag,
``B`` bomb, ``s`` spy, ``9`` scout, ``8`` miner, ``7`` sergeant … ``2`` general, ``1`` marshal
(the UCC tokens, as the text client draws them), ``.`` an empty zone cell. Canonically the
zone's rows are joined by ``/``; any ``/`` and spaces are ignored. Under RANDOM_SETUP there is no
setup phase: the armies are placed at random when the game starts.

Phase ``move``: the seat to move acts; a move is ``x1,y1-x2,y2`` (columns and rows from 0 at the
top left, as the protocol numbers cells ``y*width + x``), an attack written the same way. The
legal moves are listed in full. A seat that is alive but boxed in has no move, and the Combat
table would wait for its clock; here its only action is ``RESIGN``, which it loses by (with more
seats, as a forfeit: its units leave and the others play on). The game ends as Combat ends it
(one seat left with a flag and a movable unit; none: nobody wins) or, so that a game without a
clock ends, after ``max_moves`` moves with nobody winning (the table's time cap).

Hidden information: a seat sees its own units (``combat_view``) and the units whose type combat
showed every seat (``CombatGame.revealed``; what an ATTACK tells one seat more under the silent
options is not kept); a spectator sees those only. OPEN_MAP shows every unit to all, and so does
the end of the game. Randomness (RANDOM_OUTCOME, RANDOM_SETUP) comes from a seed drawn in
``initial`` and the count of draws made: the n-th draw uses ``random.Random(f"combat/{seed}/{n}")``,
so the state stays small and ``dump``/``load`` carry it exactly.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Mapping
from typing import Any

import attrs
from zope.interface import implementer

from gamed.combat.maps import shipped_maps
from gamed.combat.wire import CombatOptions
from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, Actions, IllegalAction, IRules, OptionSpec
from gamed.stratego.rules import (
    EMPTY,
    TOKENS,
    U_EMPTY,
    U_UNKNOWN,
    UNIT_NAMES,
    UNIT_OF_TOKEN,
    CombatError,
    CombatGame,
    Layout,
    MoveKind,
    Opt,
    Unit,
    board_spectator_state,
    combat_view,
    combat_winner,
    spectator_move,
)

DEFAULT_MAP = "Default"  # the map the service's tables and tournaments start from
SEATS = 2  # every shipped map has zones for two seats
RESIGN = "RESIGN"

SETUP_GRAMMAR = (
    "one token per cell of your zone in increasing cell order (row by row from the top, each row left to right): "
    "F flag, B bomb, s spy, 9 scout, 8 miner, 7 sergeant, 6 lieutenant, 5 captain, 4 major, 3 colonel, "
    "2 general, 1 marshal, . empty; '/' and spaces are ignored (canonically the zone's rows are joined by '/'); "
    "exactly the map's army"
)
MOVE_GRAMMAR = (
    "x1,y1-x2,y2: the unit at column x1, row y1 (from 0, row 0 at the top) moves to or attacks x2,y2; "
    f"{RESIGN} only when you have no move"
)

_MOVE = re.compile(r"^(\d+)\s*,\s*(\d+)\s*[-x ]\s*(\d+)\s*,\s*(\d+)$")
_SEPARATORS = re.compile(r"[\s/]+")
_STRAIGHT = ((0, -1), (0, 1), (-1, 0), (1, 0))
_DIAGONAL = ((-1, -1), (1, -1), (-1, 1), (1, 1))


@functools.lru_cache(maxsize=None)
def _maps() -> dict[str, CombatOptions]:
    return shipped_maps()


@functools.lru_cache(maxsize=None)
def _layout(name: str) -> Layout:
    return _maps()[name].layout(SEATS)


def _map(name: str) -> CombatOptions:
    try:
        return _maps()[name]
    except KeyError:
        raise ValueError(f"no shipped map {name!r}; maps: {', '.join(sorted(_maps()))}") from None


def _rng(seed: int, draws: int) -> random.Random:
    return random.Random(f"combat/{seed}/{draws}")


@attrs.frozen
class CombatState:
    """A Combat game: the map and the option bits in force, the board's cells (``Board.cells``),
    every seat's remaining counts, who has set up, the seat to move, the moves played, the cells
    whose unit every seat was shown, the last move (cells, and in spectators' words), the winner
    (-1: nobody) with the reason, and the random seed with the number of draws made."""

    map: str
    options: int
    max_moves: int
    cells: tuple[int, ...]
    remaining: tuple[tuple[int, ...], ...]
    set_up: tuple[bool, ...]
    seed: int
    draws: int = 0
    turn: int = 0
    moves: int = 0
    revealed: frozenset[int] = frozenset()
    last: tuple[int, int] | None = None
    last_move: str = ""
    winner: int | None = None
    reason: str = ""

    @property
    def over(self) -> bool:
        return self.winner is not None

    @property
    def setting_up(self) -> bool:
        return not self.over and not all(self.set_up)

    @property
    def layout(self) -> Layout:
        return _layout(self.map)

    def game(self) -> CombatGame:
        """A ``CombatGame`` holding this state (fresh, to play on), its rng the next draw's."""
        options = _map(self.map)
        game = CombatGame(self.layout, options.army, len(self.set_up), Opt(self.options), _rng(self.seed, self.draws))
        game.board.cells = list(self.cells)
        game.remaining = [list(row) for row in self.remaining]
        game.setup_done = {seat for seat, done in enumerate(self.set_up) if done}
        game.turn = self.turn
        game.winner = self.winner
        game.revealed = set(self.revealed)
        game.last = self.last
        return game


def _evolve(state: CombatState, game: CombatGame, **changes) -> CombatState:
    """``state`` with ``game``'s board, counts, setups, turn, revealed cells and last move."""
    return attrs.evolve(
        state,
        cells=tuple(game.board.cells),
        remaining=tuple(tuple(row) for row in game.remaining),
        set_up=tuple(seat in game.setup_done for seat in range(len(state.set_up))),
        turn=game.turn,
        revealed=frozenset(game.revealed),
        last=game.last,
        **changes,
    )


def _xy(layout: Layout, cell: int) -> str:
    x, y = layout.xy(cell)
    return f"{x},{y}"


def move_text(layout: Layout, source: int, target: int) -> str:
    """The canonical move from ``source`` to ``target`` (cells): ``x1,y1-x2,y2``."""
    return f"{_xy(layout, source)}-{_xy(layout, target)}"


def _zone_rows(layout: Layout, seat: int) -> list[list[int]]:
    """``seat``'s zone cells in increasing order, grouped by row."""
    rows: dict[int, list[int]] = {}
    for cell in sorted(layout.zone(seat)):
        rows.setdefault(cell // layout.width, []).append(cell)
    return list(rows.values())


def setup_text(layout: Layout, seat: int, tokens: str) -> str:
    """The canonical setup of ``tokens`` (one per zone cell, in order): the zone's rows joined by '/'."""
    out, i = [], 0
    for row in _zone_rows(layout, seat):
        out.append(tokens[i : i + len(row)])
        i += len(row)
    return "/".join(out)


def _examples(layout: Layout, army, seat: int) -> tuple[str, ...]:
    """A few valid setups: the army in unit order (flag first), in the reverse order, and a fixed
    shuffle; the zone's extra cells, if any, left empty at the end."""
    size = len(layout.zone(seat))
    tokens = "".join(TOKENS[code] * count for code, count in enumerate(army))
    tokens += "." * (size - len(tokens))
    shuffled = list(tokens)
    random.Random(1999 + seat).shuffle(shuffled)
    examples = (tokens, tokens[::-1], "".join(shuffled))
    return tuple(dict.fromkeys(setup_text(layout, seat, t) for t in examples))


def _army_text(army) -> str:
    return " ".join(f"{TOKENS[code]}x{count}" for code, count in enumerate(army) if count)


@implementer(IRules)
class CombatRules:
    """The IRules of GGZ Combat (one instance, ``RULES``)."""

    name = "combat"
    hidden = True  # a seat sees other seats' units only where combat showed them

    @functools.cached_property
    def options(self) -> Mapping[str, OptionSpec]:
        return {
            "map": OptionSpec(
                "string", DEFAULT_MAP, "the shipped map played on (its size, lakes, zones, army and option bits)",
                choices=tuple(sorted(_maps())),
            ),
            "random_outcome": OptionSpec(
                "boolean", False, "RANDOM_OUTCOME on top of the map's options: attacks are decided by chance"
            ),
            "random_setup": OptionSpec(
                "boolean", False, "RANDOM_SETUP on top of the map's options: the armies are placed at random"
            ),
            "max_moves": OptionSpec(
                "integer", 2000, "the moves after which the game ends with nobody winning (0: no limit)",
                minimum=0, maximum=1_000_000,
            ),
        }

    def seat_count(self, options: Mapping[str, Any]) -> int:
        return SEATS

    def initial(self, options: Mapping[str, Any], rng: random.Random) -> CombatState:
        name = str(options.get("map", DEFAULT_MAP))
        combat = _map(name)
        bits = Opt(combat.options)
        if options.get("random_outcome"):
            bits |= Opt.RANDOM_OUTCOME
        if options.get("random_setup"):
            bits |= Opt.RANDOM_SETUP
        state = CombatState(
            map=name,
            options=int(bits),
            max_moves=int(options.get("max_moves", 2000)),
            cells=(EMPTY,) * (combat.width * combat.height),
            remaining=(tuple(combat.army),) * SEATS,
            set_up=(False,) * SEATS,
            seed=rng.getrandbits(64),
        )
        if bits & Opt.RANDOM_SETUP:
            game = state.game()
            game.place_randomly()
            state = _evolve(state, game, draws=state.draws + 1)
        return state

    def to_act(self, state: CombatState) -> tuple[int, ...]:
        if state.over:
            return ()
        if state.setting_up:
            return tuple(seat for seat, done in enumerate(state.set_up) if not done)
        return (state.turn,)

    def phase(self, state: CombatState) -> str:
        if state.over:
            return "over"
        return "setup" if state.setting_up else "move"

    def legal_actions(self, state: CombatState, seat: int) -> Actions:
        if state.setting_up:
            if seat not in self.to_act(state):
                return Actions(complete=False, grammar=SETUP_GRAMMAR)
            return Actions(_examples(state.layout, _map(state.map).army, seat), complete=False, grammar=SETUP_GRAMMAR)
        if seat not in self.to_act(state):
            return Actions(grammar=MOVE_GRAMMAR)
        moves = self._moves(state)
        return Actions(tuple(move_text(state.layout, s, t) for s, t in moves) or (RESIGN,), grammar=MOVE_GRAMMAR)

    def _moves(self, state: CombatState) -> list[tuple[int, int]]:
        """Every (source, target) the move checker allows the seat to move, by source then target.
        Only the rays from a unit can be legal (§11.1: straight, or exactly diagonal); a ray is
        followed past its first cell only for the units that go far, and stops past an occupied
        or off-map cell (or a lake, except for a sergeant that flies), beyond which no move is."""
        game = state.game()
        layout, cells, options = state.layout, state.cells, Opt(state.options)
        width, height = layout.width, layout.height
        directions = _STRAIGHT + (_DIAGONAL if options & Opt.ALLOW_DIAGONAL else ())
        rush = bool(options & Opt.RUSH_ATTACK)
        out = []
        for source, cell in enumerate(cells):
            if cell == EMPTY or cell >> 4 != state.turn:
                continue
            unit = cell & 0x0F
            flies = unit == Unit.SERGEANT and bool(options & Opt.SF_SERGEANT)
            far = rush or flies or unit == Unit.SCOUT
            x0, y0 = layout.xy(source)
            targets = []
            for dx, dy in directions:
                x, y = x0 + dx, y0 + dy
                while 0 <= x < width and 0 <= y < height:
                    target = y * width + x
                    if game.check(source, target) > 0:
                        targets.append(target)
                    if not far or cells[target] != EMPTY or target in layout.offmap:
                        break
                    if target in layout.lakes and not flies:
                        break
                    x, y = x + dx, y + dy
            out.extend((source, target) for target in sorted(targets))
        return out

    def apply(self, state: CombatState, seat: int, action: str) -> CombatState:
        if state.over:
            raise IllegalAction(GAME_OVER, "the game is over")
        if seat not in self.to_act(state):
            if state.setting_up:
                raise IllegalAction(NOT_YOUR_TURN, "your setup is in: wait for the other seats'")
            raise IllegalAction(NOT_YOUR_TURN, "it is not your turn")
        text = action.strip() if isinstance(action, str) else ""
        if state.setting_up:
            return self._set_up(state, seat, text)
        return self._move(state, seat, text)

    def _set_up(self, state: CombatState, seat: int, text: str) -> CombatState:
        layout, army = state.layout, _map(state.map).army
        zone = sorted(layout.zone(seat))
        tokens = _SEPARATORS.sub("", text)
        if not tokens or any(t != "." and t not in UNIT_OF_TOKEN for t in tokens):
            raise IllegalAction(BAD_ACTION, f"not a setup: {text[:60]!r} ({SETUP_GRAMMAR})")
        if len(tokens) != len(zone):
            raise IllegalAction(BAD_ACTION, f"{len(tokens)} tokens for a zone of {len(zone)} cells ({SETUP_GRAMMAR})")
        owner = (seat + 1) << 4
        units = bytes(U_EMPTY if t == "." else owner | UNIT_OF_TOKEN[t] for t in tokens)
        game = state.game()
        if not game.accept_setup(seat, units):
            counts = [tokens.count(token) for token in TOKENS]
            raise IllegalAction(
                NO_SUCH_ACTION, f"a setup places exactly the army ({_army_text(army)}), not {_army_text(counts)}"
            )
        return _evolve(state, game)

    def _move(self, state: CombatState, seat: int, text: str) -> CombatState:
        layout = state.layout
        if text.upper() == RESIGN:
            if self._moves(state):
                raise IllegalAction(NO_SUCH_ACTION, f"{RESIGN} only when you have no move: you have one")
            return self._resign(state, seat)
        parsed = _MOVE.match(text)
        if parsed is None:
            raise IllegalAction(BAD_ACTION, f"not a move: {text[:40]!r} ({MOVE_GRAMMAR})")
        x1, y1, x2, y2 = (int(v) for v in parsed.groups())
        if not all(0 <= x < layout.width for x in (x1, x2)) or not all(0 <= y < layout.height for y in (y1, y2)):
            raise IllegalAction(NO_SUCH_ACTION, f"{x1},{y1}-{x2},{y2}: {CombatError.OUTRANGE.name} (off the map)")
        source, target = layout.index(x1, y1), layout.index(x2, y2)
        game = state.game()
        result = game.request_move(seat, source, target)
        if result.kind is not MoveKind.MOVE and result.kind is not MoveKind.ATTACK:
            raise IllegalAction(NO_SUCH_ACTION, f"{move_text(layout, source, target)}: {CombatError(result.code).name}")
        draws = state.draws + (result.kind is MoveKind.ATTACK and bool(game.options & Opt.RANDOM_OUTCOME))
        moves = state.moves + 1
        state = _evolve(state, game, draws=draws, moves=moves, last_move=spectator_move(game, result))
        if game.winner is not None:
            return attrs.evolve(state, winner=game.winner, reason=self._why(game.winner))
        if state.max_moves and moves >= state.max_moves:
            return attrs.evolve(state, winner=-1, reason=f"{moves} moves played: the game ends, nobody wins")
        return state

    def _resign(self, state: CombatState, seat: int) -> CombatState:
        """A boxed-in seat gives up, as a seat forfeits at the table (CombatTable.forfeit)."""
        game = state.game()
        reason = f"seat {seat} has no move and resigns"
        if len(state.set_up) == 2:
            return attrs.evolve(state, winner=1 - seat, reason=reason, last_move=RESIGN)
        cells = game.board.cells
        for i, cell in enumerate(cells):
            if cell != EMPTY and cell >> 4 == seat:
                cells[i] = EMPTY
                game.revealed.discard(i)
        game.remaining[seat] = [0] * len(game.remaining[seat])
        winner = combat_winner(game.remaining)
        if winner is None:
            game.turn = 0 if game.turn >= game.seats - 1 else game.turn + 1
        state = _evolve(state, game, last_move=RESIGN)
        return state if winner is None else attrs.evolve(state, winner=winner, reason=reason)

    @staticmethod
    def _why(winner: int) -> str:
        if winner < 0:
            return "no seat has a flag and a movable unit left: nobody wins"
        return f"seat {winner} is the last with a flag and a movable unit"

    def _known(self, state: CombatState, seat: int | None) -> set[int]:
        """The cells whose unit ``seat`` (None: a spectator) may see: its own (``combat_view``)
        and those combat showed every seat; every unit under OPEN_MAP and once the game is over."""
        board = state.game().board
        if state.over or state.options & Opt.OPEN_MAP:
            view = combat_view(board, None)
        else:
            view = combat_view(board, -1 if seat is None else seat)
        known = {i for i, byte in enumerate(view) if byte != U_EMPTY and byte & 0x0F < U_UNKNOWN}
        return known | state.revealed

    def observation(self, state: CombatState, seat: int | None) -> dict:
        layout = state.layout
        view = board_spectator_state(state.game().board, self._known(state, seat), state.last)
        army = _map(state.map).army
        view.update(
            seat=seat,
            map=state.map,
            options=[bit.name for bit in Opt if bit and state.options & bit],
            army={UNIT_NAMES[code]: count for code, count in enumerate(army)},
            phase=self.phase(state),
            to_act=list(self.to_act(state)),
            set_up=list(state.set_up),
            turn=state.turn,
            moves=state.moves,
            max_moves=state.max_moves,
            last_move=state.last_move or None,
            over=state.over,
        )
        if seat is not None:
            view["zone"] = [list(layout.xy(cell)) for cell in sorted(layout.zone(seat))]
            view["remaining"] = {UNIT_NAMES[code]: n for code, n in enumerate(state.remaining[seat])}
        if state.over:
            view["end"] = {"winner": state.winner, "reason": state.reason}
        return view

    def render(self, state: CombatState, seat: int | None) -> str:
        layout = state.layout
        known = self._known(state, seat)
        lines = ["   " + " ".join(f"{x:2d}" for x in range(layout.width))]
        for y in range(layout.height):
            row = []
            for i in range(y * layout.width, (y + 1) * layout.width):
                cell = state.cells[i]
                if cell != EMPTY:
                    row.append("0123456789abcde"[cell >> 4] + (TOKENS[cell & 0x0F] if i in known else "#"))
                elif i in layout.lakes:
                    row.append("~~")
                elif i in layout.offmap:
                    row.append("  ")
                else:
                    row.append("..")
            lines.append(f"{y:2d} " + " ".join(row))
        if state.last_move:
            lines.append(f"last: {state.last_move}")
        if state.over:
            winner = "nobody" if state.winner is None or state.winner < 0 else f"seat {state.winner}"
            lines.append(f"game over: {winner} wins ({state.reason})")
        elif state.setting_up:
            lines.append(f"setup: waiting for seat {' and '.join(map(str, self.to_act(state)))}")
        else:
            lines.append(f"move {state.moves + 1}: seat {state.turn} to move")
        return "\n".join(lines)

    def result(self, state: CombatState) -> list[float] | None:
        if state.winner is None:
            return None
        seats = len(state.set_up)
        if state.winner < 0:
            return [1.0 / seats] * seats
        return [1.0 if seat == state.winner else 0.0 for seat in range(seats)]

    def dump(self, state: CombatState) -> dict:
        return {
            "map": state.map,
            "options": state.options,
            "max_moves": state.max_moves,
            "cells": list(state.cells),
            "remaining": [list(row) for row in state.remaining],
            "set_up": list(state.set_up),
            "seed": state.seed,
            "draws": state.draws,
            "turn": state.turn,
            "moves": state.moves,
            "revealed": sorted(state.revealed),
            "last": None if state.last is None else list(state.last),
            "last_move": state.last_move,
            "winner": state.winner,
            "reason": state.reason,
        }

    def load(self, data: Mapping[str, Any]) -> CombatState:
        name = str(data["map"])
        layout = _map(name).layout(SEATS)
        cells = tuple(int(c) for c in data["cells"])
        if len(cells) != layout.width * layout.height:
            raise ValueError(f"map {name} has {layout.width * layout.height} cells, not {len(cells)}")
        last, winner = data["last"], data["winner"]
        return CombatState(
            map=name,
            options=int(data["options"]),
            max_moves=int(data["max_moves"]),
            cells=cells,
            remaining=tuple(tuple(int(n) for n in row) for row in data["remaining"]),
            set_up=tuple(bool(done) for done in data["set_up"]),
            seed=int(data["seed"]),
            draws=int(data["draws"]),
            turn=int(data["turn"]),
            moves=int(data["moves"]),
            revealed=frozenset(int(c) for c in data["revealed"]),
            last=None if last is None else (int(last[0]), int(last[1])),
            last_move=str(data["last_move"]),
            winner=None if winner is None else int(winner),
            reason=str(data["reason"]),
        )


RULES = CombatRules()
