"""The Kalaha line protocol: one connection is one player, in the lobby or at a game.

Thin by design: lines are parsed and rendered by ``gamed.kalaha.wire``, moves are judged by the
game and the rules, pairing is done by the service's lobby, logging in and taking a seat back by
the shared ``gamed.login.LoginCommands``. See ``docs/protocols/kalaha.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gamed import textwire
from gamed.identity import Identity, LoginError, Refusal
from gamed.names import valid_name
from gamed.kalaha import ai, wire
from gamed.kalaha.game import IKalahaPlayer, KalahaGame
from gamed.kalaha.rules import A, B, SIDES, IllegalMove, Move, Outcome, other
from gamed.kalaha.wire import Code
from gamed.gameservice import PlayerFactory
from gamed.generic.selftest import TextVoice
from gamed.ladder.commands import LadderCommands
from gamed.lobby import LobbyError
from gamed.login import LoginCommands
from gamed.seats import ISeatHolder, Seat
from gamed.textline import CommandProtocol

if TYPE_CHECKING:
    from gamed.kalaha.service import KalahaService

_CHECKS = frozenset({"login", "name"})  # the pauses of LoginCommands while a check runs


@implementer(IKalahaPlayer, ISeatHolder)
class KalahaProtocol(LoginCommands, LadderCommands, CommandProtocol):
    """A player connected over TCP (a person with telnet/nc or a program): a guest (named
    ``guest<n>`` until it sends NAME) or, after LOGIN, a registered account."""

    _log = Logger()
    wire = wire

    def __init__(self, service: KalahaService, number: int):
        super().__init__(service.limits, service.clock, service.batch)
        self.service = service
        self.identity = Identity(f"guest{number}")
        self.game: KalahaGame | None = None
        self.side: str | None = None
        self.board_on = service.config.board
        self.strike_people = service.config.strike_people
        self._join_call = None
        self._join_due = False  # the pair delay is over, but a guest may not play here: wait for LOGIN
        self._resuming = False  # the RESUME command is being answered (its OK line is due)

    def __repr__(self) -> str:
        return f"<KalahaProtocol {self.name} {self.peer}>"

    @property
    def name(self) -> str:
        return self.identity.name

    # --- connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        if self.placement is not None:
            self.identity = self.placement.identity
        self.service.connected(self)
        self.service.name_changed(self, self.name)
        lines = [wire.hello(), "INFO Welcome to Kalaha. Type HELP for the commands."]
        if not self.service.players.guests:
            lines.append(f"INFO {Refusal.GUESTS_OFF.value}")
        self.send_lines(lines)
        delay = self.service.config.pair_delay
        if delay:
            self._join_call = self.clock.callLater(delay, self._auto_join)
        else:
            self._auto_join()

    def on_disconnect(self, reason: Failure) -> None:
        self._cancel_auto_join()
        self.service.lobby.leave(self)
        self.leave_ladder()
        self.service.disconnected(self)
        if self.game is not None and not self.game.over:
            self._log.info("{name} ({peer}) left game {game}", name=self.name, peer=self.peer, game=self.game.id)
            self.game.leave(self)  # an away seat keeps its name taken (gamed.seats.NameBook)
        self.service.name_released(self)

    def shutdown(self) -> None:
        """The server is stopping: a waiting player is told so and disconnected."""
        if self.game is None or self.game.over:
            self.close("server shutdown", ["ABORT SHUTDOWN the server is shutting down", "BYE"])

    # --- commands --------------------------------------------------------------------------

    def _name(self, args: list[str]) -> None:
        if len(args) != 1 or not valid_name(args[0]):
            return self._error(Code.BAD_ARGUMENTS, "usage: NAME <name> (1-32 letters, digits, _ . -)")
        if self.placement is not None:
            return self.login_refused(LoginError(Refusal.HOSTED))
        if self.game is not None:
            return self._error(Code.NOT_NOW, "you cannot change your name during a game")
        name = args[0]
        if self.service.name_in_use(name, self):
            return self.login_refused(LoginError(Refusal.NAME_IN_USE, name))
        self.check_guest_name(name, self._named)

    def _named(self, identity: Identity) -> None:
        if self.game is not None:  # seated while the name was checked
            return self._error(Code.NOT_NOW, "you cannot change your name during a game")
        if self.service.name_in_use(identity.name, self):  # taken while it was checked
            return self.login_refused(LoginError(Refusal.NAME_IN_USE, identity.name))
        self._rename(identity)
        self.send_lines([f"OK NAME {self.name}"])
        self._join_if_due()

    def _rename(self, identity: Identity) -> None:
        self.identity = identity
        self.service.name_changed(self, self.name)

    def _resume_seat(self, args: list[str]) -> None:
        self._resuming = True
        try:
            self.resume_command(args)
        finally:
            self._resuming = False

    def _token(self, args: list[str]) -> None:
        if args:
            return self._error(Code.BAD_ARGUMENTS, "usage: TOKEN")
        self.token_command(args)

    def _table(self, args: list[str]) -> None:
        args, control = textwire.take_clock(args, Code.BAD_ARGUMENTS, "usage: TABLE [<table>] CLOCK <time control>, e.g. CLOCK 5m+2s")
        if len(args) > 1 or (args and not valid_name(args[0])):
            return self._error(Code.BAD_ARGUMENTS, "usage: TABLE [<table>] (1-32 letters, digits, _ . -)")
        table = args[0] if args else None
        if self.placement is not None and self.game is not None:
            # A hosted bot seated by the pair delay before its TABLE arrived: it is at the table
            # the daemon chose for it, as TABLE would have put it (no error, no strike).
            return self.send_lines([f"OK TABLE {table or '-'}"])
        if self._not_in_lobby() or self._guest_refused():
            return
        asked = "" if control is None else f" CLOCK {control.notation()}"
        self.send_lines([f"OK TABLE {table or '-'}{asked}"])
        self._join(self.service.table_key(table, control), f"at table {table}" if table else "for an opponent")

    def _meet(self, args: list[str]) -> None:
        if len(args) != 1 or not valid_name(args[0]):
            return self._error(Code.BAD_ARGUMENTS, "usage: MEET <name>")
        if self._not_in_lobby() or self._guest_refused():
            return
        if args[0] == self.name:
            return self._error(Code.BAD_ARGUMENTS, "you cannot meet yourself")
        # Both players name each other, so they arrive at the same private table.
        table = "meet " + " ".join(sorted((self.name, args[0])))
        self.send_lines([f"OK MEET {args[0]}"])
        self._join(table, f"for {args[0]} to send MEET {self.name}")

    def _computer(self, args: list[str]) -> None:
        if self._not_in_lobby() or self._guest_refused():
            return
        if self.placement is not None:
            return self.login_refused(LoginError(Refusal.HOSTED))
        if not self.service.config.computer:
            return self._error(Code.UNAVAILABLE, "the computer player is switched off on this server")
        level_name, side = ai.DEFAULT_LEVEL, A
        for arg in args:
            if arg.upper() in (A, B):
                side = arg.upper()
            elif arg.lower() in ai.LEVELS:
                level_name = arg.lower()
            else:
                levels = ", ".join(ai.LEVELS)
                return self._error(Code.BAD_ARGUMENTS, f"usage: COMPUTER [<level>] [A|B]; levels: {levels}")
        self._cancel_auto_join()
        self.service.lobby.leave(self)
        self.leave_ladder()
        self.send_lines([f"OK COMPUTER {level_name} {side}"])
        self.service.play_computer(self, ai.LEVELS[level_name], side)

    def _levels(self, args: list[str]) -> None:
        lines = [f"LEVEL {lv.name} {lv.description}" for lv in ai.LEVELS.values()]
        self.send_lines(lines + ["LEVEL END"])

    def _move(self, args: list[str]) -> None:
        if len(args) != 1:
            return self._error(Code.BAD_ARGUMENTS, "usage: MOVE <pit>, e.g. MOVE A3 or just 3")
        if self.game is None or self.game.over:
            return self._error(Code.NOT_NOW, "you are not in a game yet")
        try:
            self.game.move(self, args[0])
        except IllegalMove as e:
            self._error(wire.ILLEGAL_CODES[e.reason], str(e))

    def _board(self, args: list[str]) -> None:
        if args:
            switch = args[0].upper()
            if len(args) != 1 or switch not in ("ON", "OFF"):
                return self._error(Code.BAD_ARGUMENTS, "usage: BOARD [ON|OFF]")
            self.board_on = switch == "ON"
            return self.send_lines([f"OK BOARD {switch}"])
        if self.game is None:
            return self._error(Code.NOT_NOW, "you are not in a game yet")
        self.send_lines(wire.board(self.game.position, self.side))

    def _position(self, args: list[str]) -> None:
        if self.game is None:
            return self._error(Code.NOT_NOW, "you are not in a game yet")
        self.send_lines([wire.position(self.game.position)])

    def _resign(self, args: list[str]) -> None:
        if self.game is None or self.game.over:
            return self._error(Code.NOT_NOW, "you are not in a game")
        self.game.resign(self)

    def _quit(self, args: list[str]) -> None:
        if self.game is not None and not self.game.over:
            self.game.resign(self)
        else:
            self.close("client quit", ["BYE"])

    # A class-level table of plain functions: bound methods stored on the instance would make
    # every connection a reference cycle that only the cyclic garbage collector can free.
    _COMMANDS = {
        "HELP": CommandProtocol._help,
        "NAME": _name,
        "TABLE": _table,
        "MEET": _meet,
        "COMPUTER": _computer,
        "LEVELS": _levels,
        "MOVE": _move,
        "BOARD": _board,
        "CLOCKS": CommandProtocol._clocks,
        "POSITION": _position,
        "RESIGN": _resign,
        "PING": CommandProtocol._ping,
        "QUIT": _quit,
        "LOGIN": LoginCommands.login_command,
        "RESUME": _resume_seat,
        "TOKEN": _token,
        "LADDER": LadderCommands.ladder_command,
        "SELFTEST": CommandProtocol._selftest,
    }

    # --- the self-test ---------------------------------------------------------------------------

    selftest_game = "kalaha"

    def selftest_voice(self) -> KalahaVoice:
        return KalahaVoice(self)

    def selftest_refused(self) -> str | None:
        if self.game is not None:
            return "you are in a game"
        self._cancel_auto_join()  # a self-test first, then perhaps a game: out of the queue meanwhile
        self._join_due = False
        self.leave_ladder()
        self.service.lobby.leave(self)
        return None

    # --- lobby -----------------------------------------------------------------------------

    def _not_in_lobby(self) -> bool:
        if self.game is not None:
            self._error(Code.NOT_NOW, "you are already in a game")
            return True
        return False

    def _guest_refused(self) -> bool:
        """A guest on a server that admits registered players only is refused (423)."""
        if self.identity.guest and not self.service.players.guests:
            self.login_refused(LoginError(Refusal.GUESTS_OFF))
            return True
        return False

    def _auto_join(self) -> None:
        self._join_call = None
        if self.game is None and not self.service.lobby.is_waiting(self) and not self.closing and not self.on_ladder():
            if self._paused & _CHECKS:  # its login or name is being checked: join once answered
                self._join_due = True
                return
            if self.identity.guest and not self.service.players.guests:
                self._join_due = True  # paired once it has logged in
                return
            self._join(None, "for an opponent")

    def _join_if_due(self) -> None:
        """A check has been answered: join the general queue now if the pair delay is over. From
        the clock, so that a seat the login takes back is taken first."""
        if self._join_due and self.game is None and self._join_call is None and not self.closing:
            self._join_call = self.clock.callLater(0, self._auto_join)

    def _cancel_auto_join(self) -> None:
        if self._join_call is not None and self._join_call.active():
            self._join_call.cancel()
        self._join_call = None

    def _join(self, table: str | None, what: str) -> None:
        if self.placement is not None:  # a hosted bot keeps to its reserved table
            table = self.placement.table
        self._cancel_auto_join()
        self._join_due = False
        self.leave_ladder()
        lobby = self.service.lobby
        lobby.leave(self)
        try:
            lobby.join(self, table)
        except LobbyError as e:  # pragma: no cover - two-seat tables cannot be mismatched
            return self._error(Code.NOT_NOW, str(e))
        if self.game is None:
            self.send_lines([f"WAIT waiting {what}"])

    def seat_in(self, game: KalahaGame) -> str:
        return self.side

    # --- the ladder (gamed.ladder.commands.LadderCommands) ---------------------------------------

    def ladder_busy(self) -> str | None:
        return "you are already in a game" if self.game is not None else None

    def ladder_leave_lobby(self) -> None:
        self._cancel_auto_join()
        self._join_due = False
        self.service.lobby.leave(self)


    # --- LoginCommands: how logging in and coming back are worded ---------------------------------

    def seated(self) -> bool:
        return self.game is not None

    def login_ok(self, identity: Identity) -> None:
        self._rename(identity)
        self.send_lines([f"OK LOGIN {identity.name}"])
        self._join_if_due()

    def login_refused(self, error: LoginError) -> None:
        self._error(textwire.REFUSAL_CODES[error.refusal], error.text)
        self._join_if_due()

    def login_usage(self, text: str) -> None:
        self._error(Code.BAD_ARGUMENTS, text)

    def take_seat(self, seat: Seat) -> None:
        self._cancel_auto_join()
        self._join_due = False
        self.service.lobby.leave(self)
        self.leave_ladder()
        self._rename(seat.identity)
        self.game = seat.game
        self.side = SIDES[seat.number]

    def resume_ok(self, seat: Seat) -> None:
        if self._resuming:
            self.send_lines([f"OK RESUME {seat.game.id} {SIDES[seat.number]}"])

    def token_reply(self, seat: Seat) -> None:
        self.send_lines([f"TOKEN {seat.resume_token}"])

    # --- ISeatHolder -----------------------------------------------------------------------

    def seat_replaced(self, seat: Seat) -> None:
        """Another connection of this player took the seat: this one says why and closes."""
        self.game = self.seat = None
        self.close("a new connection took its seat", ["BYE your seat was taken back by a new connection"])

    # --- IKalahaPlayer ---------------------------------------------------------------------

    def game_started(self, game: KalahaGame, side: str) -> None:
        self._cancel_auto_join()
        self.game = game
        self.side = side
        self.seat = game.seats[side]
        self.note_activity()
        lines = [wire.start(game.id, side, game.names[other(side)])]
        if self.clock_lines(game.control):
            lines.append(wire.time_control(game.control))
        self.send_lines(lines)

    def position_changed(self, game: KalahaGame, move: Move | None) -> None:
        self.note_activity()
        lines = [] if move is None else [wire.played(move)]
        lines.append(wire.position(game.position))
        if self.board_on:
            lines.extend(wire.board(game.position, self.side))
        if not game.position.over:
            lines.append(wire.turn(game.position, game.names))
        self.send_lines(lines)

    def your_move(self, game: KalahaGame, seconds: float | None) -> None:
        prompt = wire.your_move(game.position, seconds)
        if self.clock_lines(game.control):
            self.send_lines([wire.clock(*game.clock_snapshot(self.side)), prompt])
        else:
            self.send_lines([prompt])

    def game_resumed(self, game: KalahaGame, side: str) -> None:
        self.note_activity()
        opponent = other(side)
        lines = [wire.start(game.id, side, game.names[opponent]), wire.position(game.position)]
        if self.board_on:
            lines.extend(wire.board(game.position, side))
        lines.append(wire.strikes(game.strikes[side], game.strike_limit))
        away = game.seats[opponent]
        if away.away:
            lines.append(wire.away(opponent, away.name, game.book.grace_left(away)))
        if not game.position.over:
            lines.append(wire.turn(game.position, game.names))
        self.send_lines(lines)

    def seat_away(self, game: KalahaGame, side: str, seconds: float | None) -> None:
        self.note_activity()
        self.send_lines([wire.away(side, game.names[side], seconds)])

    def seat_back(self, game: KalahaGame, side: str) -> None:
        self.note_activity()
        self.send_lines([wire.back(side, game.names[side])])

    def game_ended(self, game: KalahaGame, outcome: Outcome) -> None:
        lines = wire.game_over(outcome, self.side, game.names, game.strike_limit, game.control, game.book.grace)
        self.game = None  # the game keeps its players; dropping it here leaves no cycle to collect
        self.seat = None
        self.close(f"game {game.id} over ({outcome.reason.value})", lines, routine=True)


class KalahaFactory(PlayerFactory):
    """Builds a KalahaProtocol per connection for one KalahaService."""

    protocol = KalahaProtocol
    prefix = "kalaha"


class KalahaVoice(TextVoice):
    """The self-test in Kalaha's lines: ``START 0 A selftest``, ``POSITION``, ``YOURMOVE``."""

    def start(self) -> str:
        return wire.start(0, "A", "selftest")

    def position(self, state) -> list[str]:
        return [wire.position(state)]

    def prompt(self, state, seconds: float) -> str:
        return wire.your_move(state, seconds)
