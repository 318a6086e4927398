"""UCC Stratego seen through the common game interface (``gamed.play.IRules``).

Seat 0 is RED (rows y 0..3, moves first), seat 1 is BLUE (rows y 6..9). The game opens with the
``setup`` phase, where both seats act at once: a setup is the protocol's four setup lines joined
by ``/``, in the order the side sends them (RED's back row first, BLUE's front row first; the
word ``DEFAULT`` and the lines separated by spaces are accepted too), judged by the referee's own
setup check (``referee.place_setup``: 40 pieces, exactly the army). Then ``move``: a move is
written as the protocol writes it, ``X Y DIR`` or ``X Y DIR N`` for a scout going N squares (any
reply the referee reads as that move is accepted), or ``SURRENDER``. A move the referee would call
ILLEGAL or unintelligible is refused here instead; the game ends as the referee ends it (flag
capture, attrition, surrender, the turn limit), with its outcome words and reasons.

Hidden information: a seat sees its own pieces and, of the enemy's, only those whose rank combat
has shown both sides (the confirmation's tokens); spectators see only those until the game is
over, everything after. The state is an immutable ``StrategoState``; ``apply`` plays on a copy of
the board with ``referee.play_checked`` and ``referee.attrition``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import attrs
from zope.interface import implementer

from gamed.play import BAD_ACTION, GAME_OVER, NO_SUCH_ACTION, NOT_YOUR_TURN, Actions, IllegalAction, IRules, OptionSpec
from gamed.stratego import referee, rules
from gamed.stratego.referee import BLUE, COLOURS, DEFAULT_SETUPS, RED, SURRENDER, Outcome
from gamed.stratego.rules import DEFAULT_ARMY, DIRECTIONS, EMPTY, TOKENS, UNIT_OF_TOKEN, Board

SETUP_GRAMMAR = (
    "four setup lines of 10 tokens (1-9 s B F) joined by '/', all 40 pieces: RED's back row (y 0) first, "
    "BLUE's front row (y 6) first; or DEFAULT"
)
MOVE_GRAMMAR = (
    "X Y DIR [N]: the piece at column X, row Y (0-9, row 0 at the top) goes DIR (UP DOWN LEFT RIGHT) "
    "one square, a scout N squares; or SURRENDER"
)
_SURRENDER = "SURRENDER"
_DRAWS = (Outcome.DRAW.value, Outcome.DRAW_DEFAULT.value)


@attrs.frozen
class StrategoState:
    """A UCC Stratego game: the board's cells (``rules.Board.cells``), who has set up, the turn
    counter (0 during setup), the side to move, the cells whose piece combat revealed, the last
    move and its confirmation, and the end (the side the result line names, outcome, reason)."""

    cells: tuple[int, ...]
    max_turns: int = 1000
    set_up: tuple[bool, bool] = (False, False)
    turn: int = 0
    to_move: int = RED
    half_moves: int = 0
    revealed: frozenset[int] = frozenset()
    last: tuple[int, int] | None = None  # the last move's (source, target) cells
    captured: bool = False  # the last move took the flag (the UCC board stays as it was)
    confirmation: str = ""  # the last half-move as both sides were told it (or logged)
    end: tuple[int | None, str, str] | None = None  # (named side, Outcome value, reason)

    @property
    def over(self) -> bool:
        return self.end is not None

    def board(self) -> Board:
        """A Board holding these cells (a fresh copy to play on)."""
        board = Board()
        board.cells = list(self.cells)
        return board


def _setup_text(rows) -> str:
    return "/".join(rows)


def _examples(seat: int) -> tuple[str, ...]:
    """A few valid setups for ``seat``: the DEFAULT one, its mirror image and a fixed shuffle."""
    rows = DEFAULT_SETUPS[COLOURS[seat]]
    tokens = list("".join(rows))
    random.Random(2012 + seat).shuffle(tokens)
    shuffled = ["".join(tokens[i : i + 10]) for i in range(0, 40, 10)]
    return _setup_text(rows), _setup_text(row[::-1] for row in rows), _setup_text(shuffled)


def _setup_rows(seat: int, text: str) -> list[str]:
    """The four lines a setup action writes (BAD_ACTION when it is not four lines of tokens)."""
    if text.upper() == "DEFAULT":
        return list(DEFAULT_SETUPS[COLOURS[seat]])
    rows = [row.strip() for row in text.split("/")] if "/" in text else text.split()
    if len(rows) != 4 or any(len(row) != 10 or any(t != "." and t not in UNIT_OF_TOKEN for t in row) for row in rows):
        raise IllegalAction(BAD_ACTION, f"not a setup: {text[:60]!r} ({SETUP_GRAMMAR})")
    return rows


def _setup_refusal(rows: list[str]) -> str:
    """Why four well-formed lines are not a setup (the army's counts)."""
    counts = [0] * len(DEFAULT_ARMY)
    for token in "".join(rows):
        if token != ".":
            counts[UNIT_OF_TOKEN[token]] += 1
    wrong = [f"{counts[u]} {TOKENS[u]} of {n}" for u, n in enumerate(DEFAULT_ARMY) if counts[u] != n]
    return "a setup places the whole army (F1 B6 s1 9x8 8x5 7x4 6x4 5x4 4x3 3x2 2x1 1x1): " + ", ".join(wrong)


def _canonical_move(x: int, y: int, direction: str, mult: int) -> str:
    return f"{x} {y} {direction}" if mult == 1 else f"{x} {y} {direction} {mult}"


@implementer(IRules)
class StrategoRules:
    """The IRules of UCC Stratego (one instance, ``RULES``)."""

    name = "stratego"
    hidden = True  # a seat sees enemy ranks only where combat showed them
    options: Mapping[str, Any] = {
        "max_turns": OptionSpec(
            "integer", 1000, "the turn at which the game is a draw (DRAW_DEFAULT), as -m: N-1 full turns are played",
            minimum=1, maximum=100_000,
        ),
    }

    def seat_count(self, options: Mapping[str, Any]) -> int:
        return 2

    def initial(self, options: Mapping[str, Any], rng: random.Random) -> StrategoState:
        return StrategoState(cells=tuple(Board().cells), max_turns=int(options.get("max_turns", 1000)))

    def to_act(self, state: StrategoState) -> tuple[int, ...]:
        if state.over:
            return ()
        if state.turn == 0:
            return tuple(seat for seat in (RED, BLUE) if not state.set_up[seat])
        return (state.to_move,)

    def phase(self, state: StrategoState) -> str:
        if state.over:
            return "over"
        return "setup" if state.turn == 0 else "move"

    def legal_actions(self, state: StrategoState, seat: int) -> Actions:
        if state.turn == 0 and not state.over:
            if seat not in self.to_act(state):
                return Actions(complete=False, grammar=SETUP_GRAMMAR)
            return Actions(_examples(seat), complete=False, grammar=SETUP_GRAMMAR)
        if seat not in self.to_act(state):
            return Actions(grammar=MOVE_GRAMMAR)
        board = state.board()
        out = []
        for source, cell in enumerate(state.cells):
            if cell == EMPTY or cell >> 4 != seat or not rules.unit_of(cell).mobile:
                continue
            x, y = source % 10, source // 10
            for direction in DIRECTIONS:
                mult = 1
                while not isinstance(rules.ucc_check(board, seat, x, y, direction, mult), str):
                    out.append(_canonical_move(x, y, direction, mult))
                    mult += 1
        out.append(_SURRENDER)
        return Actions(tuple(out), grammar=MOVE_GRAMMAR)

    def apply(self, state: StrategoState, seat: int, action: str) -> StrategoState:
        if state.over:
            raise IllegalAction(GAME_OVER, "the game is over")
        if seat not in self.to_act(state):
            if state.turn == 0:
                raise IllegalAction(NOT_YOUR_TURN, "your setup is in: wait for the other side's")
            raise IllegalAction(NOT_YOUR_TURN, "it is not your turn")
        text = action.strip() if isinstance(action, str) else ""
        if state.turn == 0:
            return self._set_up(state, seat, text)
        return self._move(state, seat, text)

    def _set_up(self, state: StrategoState, seat: int, text: str) -> StrategoState:
        rows = _setup_rows(seat, text)
        board = state.board()
        if not referee.place_setup(board, seat, rows):
            raise IllegalAction(NO_SUCH_ACTION, _setup_refusal(rows))
        set_up = tuple(done or s == seat for s, done in enumerate(state.set_up))
        state = attrs.evolve(state, cells=tuple(board.cells), set_up=set_up)
        if not all(set_up):
            return state
        # Both are placed: RED gets START, turn 1 (§6.2); -m 1 ends it before any move.
        state = attrs.evolve(state, turn=1, to_move=RED)
        if state.turn >= state.max_turns:
            return attrs.evolve(state, end=(RED, Outcome.DRAW_DEFAULT.value, referee.draw_after(state.turn)))
        return state

    def _move(self, state: StrategoState, seat: int, text: str) -> StrategoState:
        parsed = referee.parse_reply(text)
        if parsed is SURRENDER:
            return attrs.evolve(
                state, half_moves=state.half_moves + 1, confirmation="SURRENDER OK",
                end=(seat, Outcome.SURRENDER.value, referee.SURRENDERED),
            )
        if parsed is None:
            raise IllegalAction(BAD_ACTION, f"not a move: {text[:40]!r} ({MOVE_GRAMMAR})")
        board = state.board()
        checked = rules.ucc_check(board, seat, parsed.x, parsed.y, parsed.direction, parsed.mult)
        if isinstance(checked, str):
            raise IllegalAction(NO_SUCH_ACTION, f"{_canonical_move(*parsed)}: {checked}")
        revealed = set(state.revealed)
        outcome = referee.play_checked(board, revealed, *checked)
        state = attrs.evolve(
            state,
            cells=tuple(board.cells),
            half_moves=state.half_moves + 1,
            revealed=frozenset(revealed),
            last=checked,
            confirmation=f"{_canonical_move(*parsed)} {outcome}",
        )
        if outcome == referee.VICTORY_FLAG:
            return attrs.evolve(state, captured=True, end=(seat, Outcome.VICTORY.value, referee.CAPTURED))
        ended = referee.attrition(board, seat)  # step 6 of this half-move
        if ended is not None:
            return attrs.evolve(state, end=(seat, ended[0].value, ended[1]))
        other = 1 - seat
        turn = state.turn + (seat == BLUE)
        state = attrs.evolve(state, turn=turn, to_move=other)
        if seat == BLUE and turn >= state.max_turns:  # step a of the next turn
            return attrs.evolve(state, end=(BLUE, Outcome.DRAW_DEFAULT.value, referee.draw_after(turn)))
        ended = referee.attrition(board, other)  # step 2 of the next half-move
        if ended is not None:
            return attrs.evolve(state, end=(other, ended[0].value, ended[1]))
        return state

    def _shown(self, state: StrategoState, seat: int | None) -> tuple[Board, set[int]]:
        """The board as viewers see it (a flag capture shown done) and the cells whose unit
        ``seat`` may see: combat-revealed ones and its own."""
        board = state.board()
        shown = set(state.revealed)
        if state.captured and state.last is not None:
            source, target = state.last
            rules.apply_fight(board, source, target, rules.Fight.FLAG)
            shown.add(target)
        if seat is not None:
            shown.update(i for i, cell in enumerate(board.cells) if cell != EMPTY and cell >> 4 == seat)
        return board, shown

    def observation(self, state: StrategoState, seat: int | None) -> dict:
        board, shown = self._shown(state, seat)
        view = rules.board_spectator_state(board, shown, state.last, show_all=state.over)
        view.update(
            seat=seat,
            colour=None if seat is None else COLOURS[seat],
            phase=self.phase(state),
            to_act=list(self.to_act(state)),
            set_up=list(state.set_up),
            turn=state.turn,
            max_turns=state.max_turns,
            last_move=state.confirmation or None,
            over=state.over,
        )
        if state.end is not None:
            side, outcome, reason = state.end
            view["end"] = {
                "colour": "BOTH" if side is None else COLOURS[side],
                "outcome": outcome,
                "reason": reason,
                "values": [board.value(RED), board.value(BLUE)],
            }
        return view

    def render(self, state: StrategoState, seat: int | None) -> str:
        board, shown = self._shown(state, seat)
        blocked = rules.DEFAULT_LAYOUT.lakes
        lines = ["   " + " ".join(f"{x:2d}" for x in range(10))]
        for y in range(10):
            row = []
            for i in range(y * 10, y * 10 + 10):
                cell = board.cells[i]
                if cell == EMPTY:
                    row.append("++" if i in blocked else "..")
                else:
                    token = TOKENS[cell & 0x0F] if state.over or i in shown else "#"
                    row.append("RB"[cell >> 4] + token)
            lines.append(f"{y:2d} " + " ".join(row))
        if state.confirmation:
            lines.append(f"last: {state.confirmation}")
        if state.end is not None:
            side, outcome, reason = state.end
            lines.append(f"game over: {'BOTH' if side is None else COLOURS[side]} {outcome} ({reason})")
        elif state.turn == 0:
            waiting = " and ".join(COLOURS[s] for s in self.to_act(state))
            lines.append(f"setup: waiting for {waiting}")
        else:
            lines.append(f"turn {state.turn}: {COLOURS[state.to_move]} to move")
        return "\n".join(lines)

    def result(self, state: StrategoState) -> list[float] | None:
        if state.end is None:
            return None
        side, outcome, _ = state.end
        if outcome in _DRAWS or side is None:
            return [0.5, 0.5]
        winner = side if outcome == Outcome.VICTORY.value else 1 - side
        return [1.0, 0.0] if winner == RED else [0.0, 1.0]

    def dump(self, state: StrategoState) -> dict:
        return {
            "cells": list(state.cells),
            "max_turns": state.max_turns,
            "set_up": list(state.set_up),
            "turn": state.turn,
            "to_move": state.to_move,
            "half_moves": state.half_moves,
            "revealed": sorted(state.revealed),
            "last": None if state.last is None else list(state.last),
            "captured": state.captured,
            "confirmation": state.confirmation,
            "end": None if state.end is None else list(state.end),
        }

    def load(self, data: Mapping[str, Any]) -> StrategoState:
        last, end = data["last"], data["end"]
        cells = tuple(int(c) for c in data["cells"])
        if len(cells) != 100:
            raise ValueError(f"a UCC board has 100 cells, not {len(cells)}")
        return StrategoState(
            cells=cells,
            max_turns=int(data["max_turns"]),
            set_up=(bool(data["set_up"][0]), bool(data["set_up"][1])),
            turn=int(data["turn"]),
            to_move=int(data["to_move"]),
            half_moves=int(data["half_moves"]),
            revealed=frozenset(int(c) for c in data["revealed"]),
            last=None if last is None else (int(last[0]), int(last[1])),
            captured=bool(data["captured"]),
            confirmation=str(data["confirmation"]),
            end=None if end is None else (None if end[0] is None else int(end[0]), str(end[1]), str(end[2])),
        )


RULES = StrategoRules()
