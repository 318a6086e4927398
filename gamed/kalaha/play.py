"""Kalaha seen through the common game interface (``gamed.play.IRules``).

The state is the rules' ``Position``; seat 0 is A (moves first), seat 1 is B. An action is the pit
to sow, canonically ``A1``..``A6`` or ``B1``..``B6`` (the Kalaha protocol's spellings, a bare
``1``..``6`` too, are accepted). There is nothing hidden: every seat sees the whole board.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from zope.interface import implementer

from gamed.kalaha import rules
from gamed.kalaha.rules import SIDES, Illegal, IllegalMove, Position
from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, Actions, IllegalAction, IRules

GRAMMAR = "the pit to sow: A1..A6 for seat 0 (A), B1..B6 for seat 1 (B)"

_REASONS = {
    Illegal.GAME_OVER: GAME_OVER,
    Illegal.NOT_YOUR_TURN: NOT_YOUR_TURN,
    Illegal.NOT_A_PIT: BAD_ACTION,
    Illegal.STORE: NO_SUCH_ACTION,
    Illegal.OPPONENT_PIT: NO_SUCH_ACTION,
    Illegal.EMPTY_PIT: NO_SUCH_ACTION,
}


def illegal(e: IllegalMove) -> IllegalAction:
    """The rules' refusal of a sowing as the common interface names it."""
    return IllegalAction(_REASONS[e.reason], str(e))


# The board for people: B's pits (B6..B1) above A's, the stores at the ends; then who moves.
_BOARD = (
    "      B6  B5  B4  B3  B2  B1\n"
    "     {12:2d}  {11:2d}  {10:2d}  {9:2d}  {8:2d}  {7:2d}\n"
    "B7 {13:2d}" + " " * 24 + "{6:2d} A7\n"
    "     {0:2d}  {1:2d}  {2:2d}  {3:2d}  {4:2d}  {5:2d}\n"
    "      A1  A2  A3  A4  A5  A6\n"
)


@implementer(IRules)
class KalahaRules:
    """The IRules of Kalaha (one instance, ``RULES``)."""

    name = "kalaha"
    options: Mapping[str, Any] = {}
    hidden = False

    def seat_count(self, options: Mapping[str, Any]) -> int:
        return 2

    def initial(self, options: Mapping[str, Any], rng: random.Random) -> Position:
        return Position.start()

    def to_act(self, state: Position) -> tuple[int, ...]:
        return () if state.over else (SIDES.index(state.to_move),)

    def phase(self, state: Position) -> str:
        return "over" if state.over else "move"

    def legal_actions(self, state: Position, seat: int) -> Actions:
        if state.over or SIDES[seat] != state.to_move:
            return Actions(grammar=GRAMMAR)
        side = state.to_move
        return Actions(tuple(f"{side}{pit}" for pit in state.legal_moves()), grammar=GRAMMAR)

    def apply(self, state: Position, seat: int, action: str) -> Position:
        side = SIDES[seat]
        try:
            if state.over:
                raise IllegalMove(Illegal.GAME_OVER)
            if side != state.to_move:
                raise IllegalMove(Illegal.NOT_YOUR_TURN)
            return rules.play(state, rules.parse_pit(action, side)).position
        except IllegalMove as e:
            raise illegal(e) from None

    def observation(self, state: Position, seat: int | None) -> dict:
        view = rules.spectator_state(state)
        view["over"] = state.over
        return view

    def render(self, state: Position, seat: int | None) -> str:
        text = _BOARD.format(*state.pits)
        if state.over:
            winner = state.winner()
            return f"{text}game over: {'a draw' if winner is None else winner + ' won'}"
        return f"{text}{state.to_move} to move"

    def result(self, state: Position) -> list[float] | None:
        if not state.over:
            return None
        winner = state.winner()
        if winner is None:
            return [0.5, 0.5]
        return [1.0, 0.0] if winner == SIDES[0] else [0.0, 1.0]

    def dump(self, state: Position) -> dict:
        return {"pits": list(state.pits), "to_move": state.to_move}

    def load(self, data: Mapping[str, Any]) -> Position:
        return Position(tuple(int(n) for n in data["pits"]), str(data["to_move"]))


RULES = KalahaRules()
