"""One rules core for UCC Stratego and GGZ Combat (ucc-stratego §12.3).

Random move sequences from random full setups are played through the UCC referee (``ucc_check``
and the referee's own board update, with ``-i`` so that an illegal move passes the turn instead of
ending the game) and, move for move, through Combat's rules with the Default map and SUPER_SCOUT
(``combat_check`` and ``CombatGame``). After every move both must give the same legality verdict,
the same combat outcome and the same board; a flag capture ends the sequence (there the boards
differ only as documented: Combat moves the attacker onto the flag's cell). The game ends at the
same moment on both sides, with the same winner.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from gamed.stratego import referee as ucc
from gamed.stratego import rules
from gamed.stratego.rules import DEFAULT_ARMY, DEFAULT_LAYOUT, EMPTY, TOKENS, CombatGame, MoveKind, Opt
from tests.stratego.scripted import BLUE_DEFAULT, RED_DEFAULT, ScriptedSeat, play

COMBAT_OPTIONS = Opt.SUPER_SCOUT  # the UCC preset: Default + SUPER_SCOUT
ARMY_TOKENS = [TOKENS[code] for code, count in enumerate(DEFAULT_ARMY) for _ in range(count)]
DIRECTIONS = sorted(rules.DIRECTIONS)
_MOVE_LINE = re.compile(r"\d+ (?:RED|BLU): ")


def rows(tokens) -> list[str]:
    tokens = "".join(tokens)
    return [tokens[i : i + 10] for i in range(0, 40, 10)]


setups = st.permutations(ARMY_TOKENS).map(rows)


def setup_bytes(seat: int, lines: list[str]) -> bytes:
    """A UCC setup as Combat's CBT_MSG_SETUP content: the seat's zone cells in index order (RED's
    rows are y 0..3 and BLUE's y 6..9, each in the order sent)."""
    return bytes((seat + 1) << 4 | rules.UNIT_OF_TOKEN[t] for t in "".join(lines))


def combat_cells(x: int, y: int, direction: str, mult: int) -> tuple[int, int]:
    """The Combat request for a UCC move: (from, to) cells, -1 for coordinates off the board (a
    Combat client has no cell for them; its nearest request is out of range, -2)."""
    dx, dy = rules.DIRECTIONS[direction]
    tx, ty = x + dx * mult, y + dy * mult
    source = y * 10 + x if 0 <= x < 10 and 0 <= y < 10 else -1
    target = ty * 10 + tx if 0 <= tx < 10 and 0 <= ty < 10 else -1
    return source, target


def legal_moves(board: rules.Board, side: int) -> list[tuple[int, int, str, int]]:
    """Every legal UCC move of ``side`` (scouts: every multiplier up to the first obstacle)."""
    moves = []
    for cell, value in enumerate(board.cells):
        if value == EMPTY or value >> 4 != side or value & 0x0F < rules.Unit.SPY:
            continue
        x, y = cell % 10, cell // 10
        longest = 9 if value & 0x0F == rules.Unit.SCOUT else 1
        for direction in DIRECTIONS:
            for mult in range(1, longest + 1):
                checked = rules.ucc_check(board, side, x, y, direction, mult)
                if isinstance(checked, str):
                    break
                moves.append((x, y, direction, mult))
                if board.cells[checked[1]] != EMPTY:
                    break
    return moves


def candidate_moves(board: rules.Board, side: int):
    """The moves judged both ways before each half-move: every piece of ``side`` one step in each
    direction (lakes, edges, own and enemy pieces, bombs and flags included), and each scout along
    its lines up to and including the first illegal multiplier (an obstacle or the edge)."""
    for cell, value in enumerate(board.cells):
        if value == EMPTY or value >> 4 != side:
            continue
        x, y = cell % 10, cell // 10
        scout = value & 0x0F == rules.Unit.SCOUT
        for direction, (dx, dy) in rules.DIRECTIONS.items():
            mult = 1
            while True:
                yield x, y, direction, mult
                tx, ty = x + dx * mult, y + dy * mult
                if not scout or not (0 <= tx < 10 and 0 <= ty < 10) or not board.layout.open(ty * 10 + tx):
                    break
                if board.cells[ty * 10 + tx] != EMPTY:
                    break
                mult += 1


def outcome_of(result) -> str:
    """The UCC outcome token a Combat move result stands for."""
    if result.kind is MoveKind.ERROR:
        return "ILLEGAL"
    if result.kind is MoveKind.MOVE:
        return "OK"
    fa, fd = result.pair
    a, d = TOKENS[abs(fa)], TOKENS[abs(fd)]
    if fd == 0:
        return "VICTORY_FLAG"
    if fa < 0 and fd < 0:
        return f"BOTHDIE {a} {d}"
    if fa < 0:
        return f"KILLS {a} {d}"
    return f"DIES {a} {d}"


class Twin:
    """Plays each move the referee asks for on a CombatGame too, and compares."""

    def __init__(self, red_setup: list[str], blue_setup: list[str], choose, budget: int):
        self.setups = (red_setup, blue_setup)
        self.game = CombatGame(DEFAULT_LAYOUT, DEFAULT_ARMY, 2, COMBAT_OPTIONS)
        assert self.game.accept_setup(0, setup_bytes(0, red_setup))
        assert self.game.accept_setup(1, setup_bytes(1, blue_setup))
        self.choose = choose
        self.budget = budget
        self.played: list[tuple[int, str, rules.MoveResult]] = []
        self.checked = 0  # moves compared with the referee's log so far
        self.move_lines: list[str] = []
        self.log_seen = 0
        self.flag_captured = False
        self.failure: BaseException | None = None

    def reconcile(self, log, board: rules.Board) -> None:
        """Compare the referee's move lines and board with Combat's results since the last call."""
        self.move_lines.extend(line for line in log[self.log_seen :] if _MOVE_LINE.match(line))
        self.log_seen = len(log)
        for k in range(self.checked, len(self.played)):
            side, reply, result = self.played[k]
            line = self.move_lines[k]
            text = _MOVE_LINE.sub("", line, count=1)
            assert text.startswith(reply + " "), (line, reply)
            assert text[len(reply) + 1 :] == outcome_of(result), (line, result)
        self.checked = len(self.played)
        if not self.played or self.played[-1][2].pair is None or self.played[-1][2].pair[1] != 0:
            assert board.cells == self.game.board.cells
        else:
            # The flag capture: the UCC manager leaves the board as it was; Combat moves the attacker
            # onto the flag's cell. The game is over either way.
            result = self.played[-1][2]
            expected = list(board.cells)
            expected[result.target], expected[result.source] = expected[result.source], EMPTY
            assert self.game.board.cells == expected
            self.flag_captured = True

    def same_verdict(self, board: rules.Board, side: int, x: int, y: int, direction: str, mult: int) -> int:
        """Judge one move both ways without playing it: both legal (the same cells, a move or an
        attack alike) or both illegal. Returns Combat's code."""
        verdict = rules.ucc_check(board, side, x, y, direction, mult)
        source, target = combat_cells(x, y, direction, mult)
        code = rules.combat_check(self.game.board, side, source, target, COMBAT_OPTIONS)
        assert isinstance(verdict, str) == (code < 0), ((x, y, direction, mult), verdict, code)
        if code > 0:
            assert verdict == (source, target)
            assert code == (rules.Check.MOVE if board.cells[target] == EMPTY else rules.Check.ATTACK)
        return code

    def reply(self, referee) -> str | None:
        """The seat's answer; a failed comparison is kept for ``run`` to raise (the referee would
        turn it into INTERNAL_ERROR)."""
        try:
            return self._reply(referee)
        except BaseException as e:
            self.failure = e
            raise

    def _reply(self, referee) -> str | None:
        """A move chosen for the referee's board, judged both ways and played on Combat too."""
        self.reconcile(referee.log, referee.board)
        assert not self.game.over, "the referee asks for a move after Combat's game over"
        if len(self.played) >= self.budget:
            return None  # EOF: the referee ends the game (ILLEGAL)
        side = referee.to_move
        for x, y, direction, mult in candidate_moves(referee.board, side):
            self.same_verdict(referee.board, side, x, y, direction, mult)
        x, y, direction, mult = self.choose(referee.board, side)
        code = self.same_verdict(referee.board, side, x, y, direction, mult)
        # UCC with -i passes the turn after an illegal move; Combat keeps it: play as the UCC side.
        self.game.turn = side
        result = self.game.request_move(side, *combat_cells(x, y, direction, mult))
        assert result.code == code
        reply = f"{x} {y} {direction} {mult}"
        self.played.append((side, reply, result))
        return reply

    def run(self) -> ucc.MatchResult:
        """Play the match through the referee, comparing move by move, then compare the ending."""
        replies = [self.reply] * (self.budget + 2)
        red = ScriptedSeat("./red.py", self.setups[0], replies)
        blue = ScriptedSeat("./blue.py", self.setups[1], replies)
        result = play(red, blue, allow_illegal=True, max_turns=None)
        if self.failure is not None:
            raise self.failure
        self.reconcile(result.log, red.referee.board)
        winner = self.game.winner
        if result.reason == ucc.CAPTURED:
            assert self.flag_captured and winner == self.played[-1][0]
        elif result.reason == ucc.ATTRITION:
            assert winner == ucc.COLOURS.index(result.colour)
        elif result.reason == ucc.NO_MOBILE:
            assert winner == -1
        else:
            assert result.reason == ucc.UNINTELLIGIBLE and winner is None  # the script ran out
        return result


def play_twin(red_setup, blue_setup, choose, budget: int) -> tuple[ucc.MatchResult, Twin]:
    """Play ``choose``'s moves (at most ``budget``) from the two setups on both rule sets."""
    twin = Twin(red_setup, blue_setup, choose, budget)
    return twin.run(), twin


def drawn_moves(data):
    """Move choices drawn by hypothesis: mostly legal moves (attacks preferred), some moves of an
    own piece in any direction and multiplier, some anything at all."""

    def choose(board, side):
        kind = data.draw(st.sampled_from(["attack", "attack", "legal", "legal", "piece", "any"]), label="kind")
        if kind in ("attack", "legal"):
            moves = legal_moves(board, side)
            attacks = [m for m in moves if board.cells[combat_cells(*m)[1]] != EMPTY]
            pool = attacks if kind == "attack" and attacks else moves
            if pool:
                return data.draw(st.sampled_from(pool))
        if kind != "any":
            own = [c for c, v in enumerate(board.cells) if v != EMPTY and v >> 4 == side]
            cell = data.draw(st.sampled_from(own))
            mult = data.draw(st.just(1) | st.integers(0, 10))
            return cell % 10, cell // 10, data.draw(st.sampled_from(DIRECTIONS)), mult
        return (
            data.draw(st.integers(-1, 10)),
            data.draw(st.integers(-1, 10)),
            data.draw(st.sampled_from(DIRECTIONS)),
            data.draw(st.integers(0, 12)),
        )

    return choose


@given(red=setups, blue=setups, budget=st.integers(1, 160), data=st.data())
def test_ucc_preset_and_combat_default_super_scout_agree(red, blue, budget, data):
    result, twin = play_twin(red, blue, drawn_moves(data), budget)
    event(result.reason)
    event(f"{sum(r.kind is MoveKind.ATTACK for _, _, r in twin.played) // 10 * 10}+ attacks")


def seeded_moves(rng: random.Random):
    """A seeded player for the deterministic runs: attacks first, else any legal move, now and then
    a random (often illegal) one."""

    def choose(board, side):
        if rng.random() < 0.1:
            return rng.randint(-1, 10), rng.randint(-1, 10), rng.choice(DIRECTIONS), rng.randint(0, 12)
        moves = legal_moves(board, side)
        attacks = [m for m in moves if board.cells[combat_cells(*m)[1]] != EMPTY]
        pool = attacks or moves
        if pool:
            return rng.choice(pool)
        return 0, 0, "UP", 1

    return choose


@pytest.mark.parametrize(
    "seed, reason, half_moves",
    [
        (9, ucc.CAPTURED, 13),
        (5, ucc.CAPTURED, 57),
        (34, ucc.ATTRITION, 997),
        (39, ucc.NO_MOBILE, 1749),  # the last mobile pieces trade off: Combat's winner is -1
    ],
)
def test_whole_seeded_games_agree_to_every_ending(seed, reason, half_moves):
    """Whole games from seeded random setups, one for each way a game ends (so the property above
    is not vacuous: these are the endings it must also meet)."""
    rng = random.Random(seed)
    red, blue = rows(rng.sample(ARMY_TOKENS, 40)), rows(rng.sample(ARMY_TOKENS, 40))
    result, twin = play_twin(red, blue, seeded_moves(rng), 2000)
    assert (result.reason, len(twin.played)) == (reason, half_moves)
    assert any(r.kind is MoveKind.ATTACK for _, _, r in twin.played)
    assert any(r.kind is MoveKind.ERROR for _, _, r in twin.played) or half_moves < 20


def test_the_flag_capture_vector_of_ucc_14_5():
    # BLUE's flag on (0, 6); RED's scout 0 3 DOWN 3 takes it: VICTORY_FLAG, and Combat agrees.
    blue = ["F67B669999", "6724898974", "BB31555583", "9B8sB479B8"]
    script = iter([(0, 3, "DOWN", 3)])
    result, twin = play_twin(RED_DEFAULT, blue, lambda board, side: next(script), 1)
    assert result.line == "./red.py RED VICTORY 1 148 148"
    assert twin.flag_captured and twin.game.winner == 0
    assert twin.played[0][2].pair == (-3, 0)


def test_the_manuals_example_moves_agree():
    # ucc-stratego §14.1: 0 3 DOWN OK, 9 6 UP 3 BOTHDIE 9 9, 9 2 DOWN OK (then the script ends).
    script = iter([(0, 3, "DOWN", 1), (9, 6, "UP", 3), (9, 2, "DOWN", 1)])
    result, twin = play_twin(RED_DEFAULT, BLUE_DEFAULT, lambda board, side: next(script), 3)
    assert [r.kind for _, _, r in twin.played] == [MoveKind.MOVE, MoveKind.ATTACK, MoveKind.MOVE]
    assert twin.played[1][2].pair == (-3, -3)
