"""Connect Four seen through the common game interface (``gamed.play.IRules``).

The state is the rules' ``Board`` (never changed: ``apply`` copies it); seat 0 is player 0 and
moves first. An action is a column, canonically ``0``..``width-1`` as the Connect Four protocol
writes it (``MOVE 3`` is accepted too). Nothing is hidden.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from zope.interface import implementer

from gamed.connect4 import rules, wire
from gamed.connect4.rules import MAX_SIZE, MIN_SIZE, Board, IllegalMove
from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, Actions, IllegalAction, IRules, OptionSpec

_REASONS = {IllegalMove.BAD_COLUMN: NO_SUCH_ACTION, IllegalMove.COLUMN_FULL: NO_SUCH_ACTION, IllegalMove.GAME_OVER: GAME_OVER}


@implementer(IRules)
class Connect4Rules:
    """The IRules of Connect Four (one instance, ``RULES``)."""

    name = "connect4"
    hidden = False
    options: Mapping[str, Any] = {
        "width": OptionSpec("integer", 7, "columns of the board", minimum=MIN_SIZE, maximum=MAX_SIZE),
        "height": OptionSpec("integer", 6, "rows of the board", minimum=MIN_SIZE, maximum=MAX_SIZE),
    }

    def seat_count(self, options: Mapping[str, Any]) -> int:
        return 2

    def initial(self, options: Mapping[str, Any], rng: random.Random) -> Board:
        return Board(options.get("width", 7), options.get("height", 6))

    def to_act(self, state: Board) -> tuple[int, ...]:
        return () if state.is_over() else (state.to_move,)

    def phase(self, state: Board) -> str:
        return "over" if state.is_over() else "move"

    def _grammar(self, state: Board) -> str:
        return f"the column to drop a stone in: 0..{state.width - 1} (0 is the leftmost)"

    def legal_actions(self, state: Board, seat: int) -> Actions:
        if state.is_over() or seat != state.to_move:
            return Actions(grammar=self._grammar(state))
        return Actions(tuple(str(x) for x in state.legal_columns()), grammar=self._grammar(state))

    def apply(self, state: Board, seat: int, action: str) -> Board:
        if state.is_over():
            raise IllegalAction(GAME_OVER, "the game is over")
        if seat != state.to_move:
            raise IllegalAction(NOT_YOUR_TURN, "it is not your turn")
        words = str(action).split()
        if len(words) == 2 and words[0].upper() == "MOVE":
            words = words[1:]
        if len(words) != 1 or not (words[0].isascii() and words[0].isdigit()):
            raise IllegalAction(BAD_ACTION, f"not a column number: {str(action)[:20]}")
        try:
            column = wire.parse_column(words[0], state.width)
        except wire.ParseError as e:
            raise IllegalAction(NO_SUCH_ACTION, str(e)) from None
        after = state.copy()
        try:
            after.drop(column)
        except IllegalMove as e:
            raise IllegalAction(_REASONS[e.code], str(e)) from None
        return after

    def observation(self, state: Board, seat: int | None) -> dict:
        view = rules.spectator_state(state)
        view["over"] = state.is_over()
        return view

    def render(self, state: Board, seat: int | None) -> str:
        lines = [" ".join(str(x % 10) for x in range(state.width))]
        for y in range(state.height - 1, -1, -1):
            lines.append(" ".join(".XO"[state.get(x, y) + 1] for x in range(state.width)))
        if state.winner is not None:
            lines.append(f"game over: {state.winner} ({'XO'[state.winner]}) won")
        elif state.is_full():
            lines.append("game over: a draw")
        else:
            lines.append(f"{state.to_move} ({'XO'[state.to_move]}) to move")
        return "\n".join(lines)

    def result(self, state: Board) -> list[float] | None:
        if not state.is_over():
            return None
        if state.winner is None:
            return [0.5, 0.5]
        return [1.0, 0.0] if state.winner == 0 else [0.0, 1.0]

    def dump(self, state: Board) -> dict:
        return {"width": state.width, "height": state.height, "moves": list(state.moves)}

    def load(self, data: Mapping[str, Any]) -> Board:
        board = Board(int(data["width"]), int(data["height"]))
        for column in data["moves"]:
            board.drop(int(column))
        return board


RULES = Connect4Rules()
