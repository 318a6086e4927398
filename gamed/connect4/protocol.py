"""The Connect Four line protocol: one connection is one player, in the lobby or at a game.

Thin by design: lines are parsed and rendered by ``gamed.connect4.wire``, moves are judged by
``Connect4Game``, pairing is done by the service's lobby, logging in and taking a seat back by
the shared ``gamed.login.LoginCommands`` (LOGIN, RESUME, TOKEN) and the service's ``SeatBook``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.logger import Logger
from twisted.python.failure import Failure

from zope.interface import implementer

from gamed import textwire
from gamed.connect4 import wire
from gamed.connect4.game import Connect4Game, GameError
from gamed.connect4.rules import Board
from gamed.connect4.wire import Code, ParseError, Reason
from gamed.gameservice import PlayerFactory
from gamed.generic.selftest import TextVoice
from gamed.identity import Identity, LoginError, Refusal
from gamed.login import LoginCommands
from gamed.ladder.commands import LadderCommands
from gamed.names import valid_name
from gamed.seats import ISeatHolder, Seat
from gamed.textline import CommandProtocol

if TYPE_CHECKING:
    from gamed.connect4.service import Connect4Service


@implementer(ISeatHolder)
class Connect4Protocol(LoginCommands, LadderCommands, CommandProtocol):
    """A player connected over TCP (a person with telnet/nc or a program): a guest (``NAME``, or
    ``guest<n>``) or, after ``LOGIN``, a registered account."""

    _log = Logger()
    wire = wire

    def __init__(self, service: Connect4Service, number: int):
        super().__init__(service.limits, service.clock, service.batch)
        self.service = service
        self._name: str | None = None
        self.name = f"guest{number}"
        self.identity: Identity | None = None  # a named guest or an account; None: guest<n>
        self.seat: Seat | None = None  # this connection's seat in its game
        self.game: Connect4Game | None = None
        self.match = None  # the engine match this connection started and watches
        self.starting = False  # a PLAY or MATCH whose engines are being started
        self.board_on = service.config.board
        self.strike_people = service.config.strike_people

    def __repr__(self) -> str:
        return f"<Connect4Protocol {self.name} {self.peer}>"

    @property
    def name(self) -> str:
        """The name this connection goes by (the service knows every name in use)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self.service.name_changed(self, value)
        self._name = value

    # --- connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        if self.placement is not None:
            self.identity = self.placement.identity
            self.name = self.identity.name
        self.service.connected(self)
        self.send_lines([wire.hello(), "INFO Welcome to Connect Four. Type HELP for the commands."])

    def on_disconnect(self, reason: Failure) -> None:
        self.service.lobby.leave(self)
        self.leave_ladder()
        self.service.disconnected(self)
        self.service.name_released(self)  # an away seat keeps its name taken (gamed.seats.NameBook)
        if self.seat is not None and self.game is not None and not self.game.over:
            self.service.seats.drop(self.seat, self)  # away for the grace period, then it forfeits
        if self.match is not None:
            self.match.stop("the player who started it left", "disconnect")

    def shutdown(self) -> None:
        if self.match is not None:
            self.match.stop("the server is shutting down", "shutdown")
        if self.game is None or self.game.over:
            self.close("server shutdown", [wire.abort(Reason.SHUTDOWN, "the server is shutting down"), "BYE"])

    # --- commands --------------------------------------------------------------------------

    def _name(self, args: list[str]) -> None:
        if len(args) != 1 or not valid_name(args[0]):
            raise ParseError(Code.BAD_ARGUMENTS, "usage: NAME <name> (1-32 letters, digits, _ . -)")
        self._check_not_hosted()
        if self.game is not None:
            raise ParseError(Code.NOT_NOW, "you cannot change your name during a game")
        self.check_guest_name(args[0], self._named)  # a registered name: ERROR 424

    def _named(self, identity: Identity) -> None:
        if self.game is not None:  # seated while the name was checked
            return self.send_lines([wire.error(Code.NOT_NOW, "you cannot change your name during a game")])
        if self.service.name_in_use(identity.name, self):
            return self.login_refused(LoginError(Refusal.NAME_IN_USE, identity.name))
        self.identity = identity
        self.name = identity.name
        self.send_lines([f"OK NAME {self.name}"])

    def seat_identity(self) -> Identity:
        """Who this connection is at a game: its account, its guest name, or ``guest<n>``."""
        return self.identity if self.identity is not None else Identity(self.name)

    def _check_not_hosted(self) -> None:
        """A hosted bot plays under its own name at its reserved table (ERROR 433 otherwise)."""
        if self.placement is not None:
            raise ParseError(textwire.REFUSAL_CODES[Refusal.HOSTED], Refusal.HOSTED.value)

    def _check_admitted(self) -> None:
        """With ``[players] guests = false`` only an account may play (ERROR 423 otherwise)."""
        if self.placement is not None:
            return
        if not self.service.players.guests and (self.identity is None or not self.identity.account):
            raise ParseError(textwire.REFUSAL_CODES[Refusal.GUESTS_OFF], Refusal.GUESTS_OFF.value)

    # --- logging in and coming back (gamed.login.LoginCommands) -------------------------------

    def seated(self) -> bool:
        return self.seat is not None or self.game is not None or self.starting

    def login_ok(self, identity: Identity) -> None:
        self.name = identity.name
        self.send_lines([f"OK LOGIN {identity.name}"])

    def login_refused(self, error: LoginError) -> None:
        self.send_lines([textwire.refused(error)])

    def login_usage(self, text: str) -> None:
        raise ParseError(Code.BAD_ARGUMENTS, text)

    def take_seat(self, seat: Seat) -> None:
        self.service.lobby.leave(self)
        self.leave_ladder()
        if self.match is not None:
            self.match.stop(f"{self.name} went back to a game")
        self.game = seat.game
        self.name = seat.name
        self.note_activity()

    def resume_ok(self, seat: Seat) -> None:
        self.send_lines([wire.resumed(seat.game.id, seat.number)])

    def token_reply(self, seat: Seat) -> None:
        self.send_lines([f"TOKEN {seat.resume_token}"])

    def seat_replaced(self, seat: Seat) -> None:
        """The player took this seat back on another connection: this one is done."""
        self.game = None
        self.seat = None
        self.close("its seat was taken back on another connection",
                   ["BYE your seat was taken back on another connection"])

    def _login(self, args: list[str]) -> None:
        self.login_command(args)

    def _resume_seat(self, args: list[str]) -> None:
        self.resume_command(args)

    def _token(self, args: list[str]) -> None:
        self.token_command(args)

    def _engines(self, args: list[str]) -> None:
        d = self.service.engine_list()
        d.addCallback(lambda engines: self.connected and self.send_lines(wire.engine_lines(engines)))
        d.addErrback(self._failed, "ENGINES")

    def _play(self, args: list[str]) -> None:
        self._check_not_hosted()
        self._check_in_lobby()
        self._check_admitted()
        engine, level, player, size, opening, control = wire.parse_play(args, self.service.default_size)
        self.service.lobby.leave(self)
        self.leave_ladder()
        self._starting(self.service.play_engine(self, engine, level, player, size, opening, control), "PLAY")

    def _match(self, args: list[str]) -> None:
        self._check_not_hosted()
        self._check_in_lobby()
        self._check_admitted()
        a, b, games, size = wire.parse_match(args, self.service.default_size)
        self.service.lobby.leave(self)
        self.leave_ladder()
        self._starting(self.service.play_match(self, a, b, games, size), "MATCH")

    def _starting(self, d, what: str) -> None:
        """Wait for engines to start; a refusal is the command's ERROR (no strike: no game yet)."""
        self.starting = True

        def done(result):
            self.starting = False
            return result

        def refused(failure):
            failure.trap(ParseError)
            if self.connected:
                self.send_lines([wire.error(failure.value.code, str(failure.value))])

        d.addBoth(done)
        d.addErrback(refused)
        d.addErrback(self._failed, what)

    def _failed(self, failure, what: str) -> None:
        self._log.failure("connect4 {what} failed", failure, what=what)
        if self.connected:
            self.on_internal_error()

    def _table(self, args: list[str]) -> None:
        self._check_in_lobby()
        self._check_admitted()
        table, size, control = wire.parse_table(args, self.service.default_size)
        lobby = self.service.lobby
        lobby.leave(self)
        self.leave_ladder()
        asked = "" if control is None else f" CLOCK {control.notation()}"
        self.send_lines([f"OK TABLE {table or '-'} {size[0]}x{size[1]}{asked}"])
        key = self.service.table_key(table, size, self.service.default_size, control)
        lobby.join(self, key if self.placement is None else self.placement.table)
        if self.game is None:
            self.send_lines([f"WAIT waiting for an opponent{f' at table {table}' if table else ''}"])

    def _move(self, args: list[str]) -> None:
        if len(args) != 1:
            raise ParseError(Code.BAD_ARGUMENTS, "usage: MOVE <column>, e.g. MOVE 3 or just 3")
        game = self.game
        if game is None or game.over:
            raise ParseError(Code.NOT_NOW, wire.NOT_IN_A_GAME)
        column = wire.parse_column(args[0], game.board.width)
        try:
            game.move(self, column)
        except GameError as e:
            self._error(e.code, str(e))

    def _board(self, args: list[str]) -> None:
        if args:
            switch = args[0].upper()
            if len(args) != 1 or switch not in ("ON", "OFF"):
                raise ParseError(Code.BAD_ARGUMENTS, "usage: BOARD [ON|OFF]")
            self.board_on = switch == "ON"
            return self.send_lines([f"OK BOARD {switch}"])
        if self.game is None:
            raise ParseError(Code.NOT_NOW, "you are not in a game")
        self.send_lines([wire.board_line(self.game.board), *wire.picture(self.game.board, self.game.names)])

    def _resign(self, args: list[str]) -> None:
        if self.match is not None:
            self.match.stop(f"stopped by {self.name}")
            return
        if self.game is None or self.game.over:
            raise ParseError(Code.NOT_NOW, "you are not in a game")
        self.game.resign(self)

    def _quit(self, args: list[str]) -> None:
        if self.match is not None:
            self.match.stop(f"stopped by {self.name}")
        if self.game is not None and not self.game.over:
            self.game.resign(self)
        else:
            self.close("client quit", ["BYE"])

    _COMMANDS = {
        "HELP": CommandProtocol._help,
        "LOGIN": _login,
        "NAME": _name,
        "ENGINES": _engines,
        "PLAY": _play,
        "TABLE": _table,
        "MATCH": _match,
        "MOVE": _move,
        "BOARD": _board,
        "CLOCKS": CommandProtocol._clocks,
        "RESIGN": _resign,
        "TOKEN": _token,
        "RESUME": _resume_seat,
        "PING": CommandProtocol._ping,
        "QUIT": _quit,
        "LADDER": LadderCommands.ladder_command,
        "SELFTEST": CommandProtocol._selftest,
    }

    # --- the self-test ---------------------------------------------------------------------------

    selftest_game = "connect4"

    def selftest_voice(self) -> Connect4Voice:
        return Connect4Voice(self)

    def selftest_refused(self) -> str | None:
        if self.game is not None or self.match is not None:
            return "you are in a game"
        self.leave_ladder()
        self.service.lobby.leave(self)
        return None

    def _check_in_lobby(self) -> None:
        if self.game is not None:
            raise ParseError(Code.NOT_NOW, "you are already in a game")
        if self.match is not None:
            raise ParseError(Code.NOT_NOW, "your match is still running (RESIGN stops it)")
        if self.starting:
            raise ParseError(Code.NOT_NOW, "your engines are still starting")

    def seat_in(self, game: Connect4Game) -> int:
        return game.player_of(self)

    # --- the ladder (gamed.ladder.commands.LadderCommands) ---------------------------------------

    def ladder_busy(self) -> str | None:
        try:
            self._check_in_lobby()
        except ParseError as e:
            return str(e)
        return None

    def ladder_leave_lobby(self) -> None:
        self.service.lobby.leave(self)

    # --- the game's calls ------------------------------------------------------------------

    def game_started(self, game: Connect4Game, player: int) -> None:
        self.game = game
        self.seat = game.seats[player]
        self.note_activity()
        lines = [wire.start(game.id, player, game.board, game.names[1 - player])]
        if self.clock_lines(game.control):
            lines.append(wire.time_control(game.control))
        self.send_lines(lines)

    def position_changed(self, game: Connect4Game, move) -> None:
        self.note_activity()
        lines = [] if move is None else [wire.played(*move)]
        self.send_lines(lines + self._position(game))

    def _position(self, game: Connect4Game, before_turn: tuple[str, ...] = ()) -> list[str]:
        board = game.board
        lines = [wire.board_line(board)]
        if self.board_on:
            lines.extend(wire.picture(board, game.names))
        lines.extend(before_turn)
        if not board.is_over():
            lines.append(wire.turn(board.to_move, game.names[board.to_move]))
        return lines

    def game_resumed(self, game: Connect4Game, player: int) -> None:
        """Back at the game: what START said, the position, the strikes, whether the opponent is
        away too, whose turn it is (the game then prompts if it is this player's move)."""
        self.seat = game.seats[player]
        extra = [wire.strikes(game.strikes, game.strike_limit)]
        opponent = game.seats[1 - player]
        if opponent.away:
            extra.append(wire.away(1 - player, opponent.name, self.service.seats.grace_left(opponent)))
        lines = [wire.start(game.id, player, game.board, game.names[1 - player])]
        self.send_lines(lines + self._position(game, tuple(extra)))

    def opponent_away(self, game: Connect4Game, player: int, seconds_left: float | None) -> None:
        self.note_activity()
        self.send_lines([wire.away(player, game.names[player], seconds_left)])

    def opponent_back(self, game: Connect4Game, player: int) -> None:
        self.note_activity()
        self.send_lines([wire.back(player, game.names[player])])

    def your_move(self, game: Connect4Game, seconds: float | None) -> None:
        prompt = wire.your_move(game.board, seconds)
        if self.clock_lines(game.control):
            self.send_lines([wire.clock(*game.clock_snapshot(game.player_of(self))), prompt])
        else:
            self.send_lines([prompt])

    def game_ended(self, game: Connect4Game) -> None:
        me = game.player_of(self)
        if game.aborted:
            who = "the engine" if game.reason is Reason.ENGINE else (
                "nobody" if game.culprit is None else game.names[game.culprit]
            )
            text = {
                Reason.DISCONNECT: f"{who} disconnected",
                Reason.ENGINE: f"the engine failed: {game.detail}" if game.detail else "the engine failed",
                Reason.SHUTDOWN: "the server is shutting down",
            }[game.reason]
            end = [wire.abort(game.reason, text)]
        else:
            lines = game.board.win_lines() if game.reason is Reason.FOUR else []
            end = [wire.result(me, game.winner, game.reason, lines)]
            if self.board_on:
                end.append(wire.result_info(me, game.winner, game.reason, lines, game.names, game.culprit,
                                             game.strike_limit, game.control, game.grace))
        self.game = None
        self.seat = None
        self.close(f"game {game.id} over ({game.reason.value})", [*end, "BYE thanks for playing"], routine=True)

    # --- an engine match's calls ---------------------------------------------------------------

    def match_started(self, match) -> None:
        self.match = match
        self.note_activity()
        w, h = match.size
        self.send_lines([f"OK MATCH {match.names[0]} {match.names[1]} {match.games} {w}x{h}"])

    def match_game(self, match, result) -> None:
        self.note_activity()
        names = {"a": match.names[0], "b": match.names[1]}
        first, second = (names["a"], names["b"]) if result.first == "a" else (names["b"], names["a"])
        winner = None if result.winner is None else names[result.winner]
        self.send_lines([wire.match_game(result.number, first, second, winner, result.moves, result.reason)])

    def match_ended(self, match, summary, stopped: str | None) -> None:
        self.match = None
        if self.connected:
            self.note_activity()
            self.send_lines([wire.match_end(summary.name_a, summary.score_a, summary.name_b, summary.score_b,
                                            len(summary.results), stopped)])


class Connect4Factory(PlayerFactory):
    """Builds a Connect4Protocol per connection for one Connect4Service."""

    protocol = Connect4Protocol
    prefix = "connect4"


class Connect4Voice(TextVoice):
    """The self-test in Connect Four's lines: ``START 0 0 7x6 selftest``, ``BOARD``, ``YOURMOVE``."""

    def start(self) -> str:
        return wire.start(0, 0, Board(7, 6), "selftest")

    def position(self, state) -> list[str]:
        return [wire.board_line(state)]

    def prompt(self, state, seconds: float) -> str:
        return wire.your_move(state, seconds)
