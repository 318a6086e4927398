"""A UCC 2012 Stratego AI as a Combat seat (issue 5, "cross-protocol seats").

``AiOpponent`` sits at a Combat table like a connection does: the service calls ``send(message)``
with every server message for its seat, and it answers through ``CombatService.receive_from``.
Behind it runs a registered AI program (``ProgramSeat``, ucc-stratego §5) playing BLUE (Combat
seat 1) on the Default map with SUPER_SCOUT, which are exactly the UCC rules (ucc-stratego §12.3:
cells ``y*10 + x``, UCC RED = seat 0, tokens ↔ unit codes).

The adapter: on CBT_MSG_OPTIONS it checks the host's options are the UCC ones (else it leaves, and
the service tells the person why in a closing ERROR line); on CBT_REQ_SETUP it asks the program ``BLUE <opponent> 10 10`` and sends its 4
rows (y = 6..9) as a Combat setup; each move of the table is told to the program as the UCC
referee's confirmation (``<x> <y> <DIR> [<mult>] <OUTCOME>``, its own moves as ``<reply>
<OUTCOME>``); on its turn it sends the program its 10-line view and turns the reply into
CBT_REQ_MOVE. An unintelligible, illegal or missing reply (timeout, EOF) forfeits. At game over
the program gets QUIT and ends; it is also ended when the person leaves before the game starts.
A person who leaves during the game finds it waiting (the rejoin grace); if they do not come back,
they lose and the AI wins.

Every action on the table runs from the reactor (``callLater(0)`` or a program reply), never
inside the service's delivery loop.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import TYPE_CHECKING

from twisted.logger import Logger

from gamed.combat import wire
from gamed.combat.wire import SeatKind, State
from gamed.config import AiProgram
from gamed.identity import Identity
from gamed.stratego import rules
from gamed.stratego.process import ProgramSeat
from gamed.stratego.referee import SETUP_ROWS, SURRENDER, TIMEOUT, MatchOptions, parse_reply, place_setup

if TYPE_CHECKING:
    from gamed.combat.service import CombatService, Seating

SEAT = 1  # the AI plays BLUE
COLOUR = "BLUE"
_DIRECTION = {(0, -1): "UP", (0, 1): "DOWN", (-1, 0): "LEFT", (1, 0): "RIGHT"}


def ucc_compatible(options: wire.CombatOptions) -> str | None:
    """Why ``options`` are not the UCC rules (Default map + SUPER_SCOUT only); None when they are."""
    if options.layout(2) != rules.DEFAULT_LAYOUT:
        return "the map is not the Default map"
    if tuple(options.army) != rules.DEFAULT_ARMY:
        return "the army is not the Default army"
    if rules.Opt(options.options) != rules.UCC_OPTIONS:
        return f"the options are {int(options.options):#06x}, not SUPER_SCOUT ({int(rules.UCC_OPTIONS):#06x}) alone"
    return None


def ucc_confirmation(source: int, target: int, outcome: str) -> str:
    """The UCC confirmation of a Combat move from ``source`` to ``target`` (cells y*10+x)."""
    x, y = source % 10, source // 10
    dx, dy = target % 10 - x, target // 10 - y
    mult = max(abs(dx), abs(dy))
    direction = _DIRECTION[(dx // mult if dx else 0, dy // mult if dy else 0)]
    text = f"{x} {y} {direction}"
    if mult > 1:
        text += f" {mult}"
    return f"{text} {outcome}"


def attack_outcome(who_from: int, who_to: int) -> tuple[str, rules.Fight]:
    """The UCC outcome token(s) of a CBT_MSG_ATTACK and what the attack did."""
    fight = rules.fight_of((who_from, who_to))
    a, d = rules.Unit(abs(who_from)).token, rules.Unit(abs(who_to)).token
    word = {
        rules.Fight.FLAG: "VICTORY_FLAG",
        rules.Fight.ATTACKER_WINS: "KILLS",
        rules.Fight.DEFENDER_WINS: "DIES",
        rules.Fight.BOTH_DIE: "BOTHDIE",
    }[fight]
    return (word if fight is rules.Fight.FLAG else f"{word} {a} {d}"), fight


class AiOpponent:
    """A registered UCC AI program seated at a Combat table (seat 1, BLUE)."""

    _log = Logger()
    seat = None  # its seat of the seat model (a program's: held by no connection)

    def __init__(self, service: CombatService, ai: AiProgram, reactor, options: MatchOptions | None = None):
        self.service = service
        self.ai = ai
        self.name = ai.name
        self.identity = Identity(ai.name, "program")  # a registered program: rated under its name
        self.seating: Seating | None = None
        self.closing = False
        self._reactor = reactor
        self._workdir = tempfile.mkdtemp(prefix=f"gamed-combat-ai.{ai.name}.")
        self.program = ProgramSeat(
            ai.command, options or MatchOptions(pause=False), reactor, stderr="capture", cwd=self._workdir
        )
        self.board = rules.Board()
        self._options: wire.CombatOptions | None = None
        self._setup_asked = False
        self._asking = False  # a move query is out
        self._reply: str | None = None  # the program's move the table has not confirmed yet
        self._reply_cells: tuple[int, int] | None = None
        self._over = False
        self.ended = None  # the Deferred of the program's end, once it was asked to end

    def __repr__(self) -> str:
        return f"<AiOpponent {self.name} {self.program!r}>"

    # --- messages from the table -----------------------------------------------------------------

    def send(self, message) -> None:
        if self.closing:
            return
        if isinstance(message, wire.MsgPlayers):
            self._players(message)
        elif isinstance(message, wire.ReqOptions):
            self._later(self.close, "it would have to choose the options (the person left?)")
        elif isinstance(message, wire.MsgOptions):
            self._options = message.options
            why = ucc_compatible(message.options)
            if why:
                self._later(self.close, f"{why}; it plays the UCC rules only (the Default map and army with SUPER_SCOUT alone)")
        elif isinstance(message, wire.ReqSetup):
            if self._setup_asked:
                self._later(self.close, "its setup was rejected")
            else:
                self._setup_asked = True
                self._later(self._ask_setup)
        elif isinstance(message, (wire.MsgStart, wire.MsgSync)):
            self._later(self._maybe_move)
        elif isinstance(message, wire.MsgMove):
            self._moved(message.source, message.target, "OK")
        elif isinstance(message, wire.MsgAttack):
            outcome, fight = attack_outcome(message.who_from, message.who_to)
            if fight is not rules.Fight.FLAG:
                self._moved(message.source, message.target, outcome)
        elif isinstance(message, wire.MsgMoveError):
            if message.seat == SEAT:
                self._later(self.close, f"the table refused its move ({message.code})")
        elif isinstance(message, wire.MsgGameover):
            self._over = True
            self._later(self._game_over, message.winner)

    def _players(self, message: wire.MsgPlayers) -> None:
        # Before the game an opponent who left ends the table; during the game the AI stays:
        # the person may come back, or loses when the rejoin grace ends (and the AI wins).
        seating = self.seating
        if seating is not None and seating.table.state in (State.PLAYING, State.DONE):
            return
        others = [s for i, s in enumerate(message.seats) if i != SEAT]
        if any(s.kind is SeatKind.OPEN for s in others):
            self._later(self.close, "its opponent left", False)

    def _later(self, func, *args) -> None:
        self._reactor.callLater(0, self._guarded, func, *args)

    def _guarded(self, func, *args) -> None:
        if self.closing:
            return
        try:
            func(*args)
        except Exception:
            self._log.failure("combat AI {name}: internal error", name=self.name)
            self.close("internal error (logged)")

    # --- setup -----------------------------------------------------------------------------------

    def _opponent(self) -> str:
        seating = self.seating
        name = seating.table.seats[1 - SEAT].name if seating is not None else ""
        return name or "@human"

    def _ask_setup(self) -> None:
        self.program.setup(COLOUR, self._opponent()).addCallback(lambda rows: self._guarded(self._got_setup, rows))

    def _got_setup(self, rows: list[str]) -> None:
        options = self._options
        board = rules.Board()
        if options is None or not place_setup(board, SEAT, rows):
            return self.close(f"invalid setup from the program: {rows!r}")
        cells = [y * 10 + x for y in SETUP_ROWS[SEAT] for x in range(10)]
        placement = {c: int(rules.unit_of(board.cells[c])) for c in cells if board.cells[c] != rules.EMPTY}
        self.board = board
        self.service.receive_from(self.seating, wire.MsgSetup(wire.write_setup(options, SEAT, placement)))

    # --- play ------------------------------------------------------------------------------------

    def _table_board(self) -> None:
        """Own units exact, the opponent's as unknown (``#``), from the table's view of this seat."""
        board = rules.Board()
        for cell, byte in enumerate(self.seating.table.view(SEAT)):
            owner = wire.owner_of(byte)
            if byte != wire.U_EMPTY and owner >= 0:
                code = byte & 0x0F  # the opponent's units are U_UNKNOWN: any code shows as '#'
                board.place(cell, owner, rules.Unit(code) if code <= rules.Unit.MARSHAL else rules.Unit.FLAG)
        self.board = board

    def _moved(self, source: int, target: int, outcome: str) -> None:
        if self._reply is not None and self._reply_cells == (source, target):
            line = f"{self._reply} {outcome}"
            self._reply = self._reply_cells = None
        else:
            line = ucc_confirmation(source, target, outcome)
        self.program.tell(line)
        self._later(self._maybe_move)

    def _maybe_move(self) -> None:
        seating = self.seating
        if self._over or self._asking or self._reply is not None or seating is None:
            return
        table = seating.table
        if table.state is not State.PLAYING or table.turn != SEAT:
            return
        self._table_board()
        self._asking = True
        self.program.move(self.board.view(SEAT), lambda reply: True).addCallback(
            lambda reply: self._guarded(self._got_move, reply)
        )

    def _got_move(self, reply) -> None:
        self._asking = False
        if self._over:
            return
        if reply is TIMEOUT:
            return self.close("the program did not reply in time", why="timeout")
        if reply is None:
            return self.close("the program ended without a reply")
        parsed = parse_reply(reply)
        if parsed is SURRENDER:
            return self.close("the program surrendered")
        if parsed is None:
            return self.close(f"unintelligible reply {reply!r}")
        self._table_board()
        checked = rules.ucc_check(self.board, SEAT, parsed.x, parsed.y, parsed.direction, parsed.mult)
        if isinstance(checked, str):
            return self.close(f"illegal reply {reply!r}: {checked}")
        self._reply, self._reply_cells = reply, checked
        self.service.receive_from(self.seating, wire.ReqMove(*checked))

    def _game_over(self, winner: int) -> None:
        if winner == SEAT:
            line = f"{self.name} {COLOUR} VICTORY"
        elif winner >= 0:
            line = f"{self._opponent()} RED VICTORY"
        else:
            line = "NONE BOTH DRAW"
        self._end(line)
        self.close(None)

    # --- the end ---------------------------------------------------------------------------------

    def _end(self, result_line: str | None):
        if self.ended is None:
            self.ended = self.program.quit(result_line) if result_line else self.program.kill()
            self.ended.addBoth(self._cleanup)
        return self.ended

    def _cleanup(self, result):
        shutil.rmtree(self._workdir, ignore_errors=True)
        stderr = self.program.stderr_text
        if stderr:
            self._log.info("combat AI {name} stderr: {text}", name=self.name, text=stderr[-2000:].decode("latin-1"))
        return None

    def close(self, reason: str | None, forfeit: bool = True, why: str = "forfeit") -> None:
        """Leave the table (during play with ``forfeit``: the AI loses at once, ``why`` is the
        record's reason) and end the program."""
        if self.closing:
            return
        self.closing = True
        if reason:
            self._log.info("combat AI {name} leaves: {reason}", name=self.name, reason=reason)
        seating, self.seating = self.seating, None
        if seating is not None:
            self.service.resign(seating, reason if forfeit else None, why)
        self._end(None)

    def shutdown(self) -> None:
        self.close("server shutdown")
