"""The Connect Four line protocol: one connection is one player, in the lobby or at a game.

Thin by design: lines are parsed and rendered by ``gamed.connect4.wire``, moves are judged by
``Connect4Game``, pairing is done by the service's lobby.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.logger import Logger
from twisted.python.failure import Failure

from gamed.names import valid_name
from gamed.connect4 import wire
from gamed.connect4.game import Connect4Game, GameError
from gamed.connect4.wire import Code, ParseError, Reason
from gamed.gameservice import PlayerFactory
from gamed.textline import CommandProtocol

if TYPE_CHECKING:
    from gamed.connect4.service import Connect4Service


class Connect4Protocol(CommandProtocol):
    """A player connected over TCP (a person with telnet/nc or a program)."""

    _log = Logger()
    wire = wire

    def __init__(self, service: Connect4Service, number: int):
        super().__init__(service.limits, service.clock, service.batch)
        self.service = service
        self.name = f"guest{number}"
        self.named = False  # True once the player gave a name (only named players are rated)
        self.game: Connect4Game | None = None
        self.match = None  # the engine match this connection started and watches
        self.starting = False  # a PLAY or MATCH whose engines are being started
        self.board_on = service.config.board
        self.strike_people = service.config.strike_people

    def __repr__(self) -> str:
        return f"<Connect4Protocol {self.name} {self.peer}>"

    # --- connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        self.service.connected(self)
        self.send_lines([wire.hello(), "INFO Welcome to Connect Four. Type HELP for the commands."])

    def on_disconnect(self, reason: Failure) -> None:
        self.service.lobby.leave(self)
        self.service.disconnected(self)
        if self.game is not None and not self.game.over:
            self.game.leave(self)
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
        if self.game is not None:
            raise ParseError(Code.NOT_NOW, "you cannot change your name during a game")
        self.name = args[0]
        self.named = True
        self.send_lines([f"OK NAME {self.name}"])

    def _engines(self, args: list[str]) -> None:
        d = self.service.engine_list()
        d.addCallback(lambda engines: self.connected and self.send_lines(wire.engine_lines(engines)))
        d.addErrback(self._failed, "ENGINES")

    def _play(self, args: list[str]) -> None:
        self._check_in_lobby()
        engine, level, player, size, opening = wire.parse_play(args, self.service.default_size)
        self.service.lobby.leave(self)
        self._starting(self.service.play_engine(self, engine, level, player, size, opening), "PLAY")

    def _match(self, args: list[str]) -> None:
        self._check_in_lobby()
        a, b, games, size = wire.parse_match(args, self.service.default_size)
        self.service.lobby.leave(self)
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
        table, size = wire.parse_table(args, self.service.default_size)
        lobby = self.service.lobby
        lobby.leave(self)
        self.send_lines([f"OK TABLE {table or '-'} {size[0]}x{size[1]}"])
        lobby.join(self, self.service.table_key(table, size, self.service.default_size))
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
        "NAME": _name,
        "ENGINES": _engines,
        "PLAY": _play,
        "TABLE": _table,
        "MATCH": _match,
        "MOVE": _move,
        "BOARD": _board,
        "RESIGN": _resign,
        "PING": CommandProtocol._ping,
        "QUIT": _quit,
    }

    def _check_in_lobby(self) -> None:
        if self.game is not None:
            raise ParseError(Code.NOT_NOW, "you are already in a game")
        if self.match is not None:
            raise ParseError(Code.NOT_NOW, "your match is still running (RESIGN stops it)")
        if self.starting:
            raise ParseError(Code.NOT_NOW, "your engines are still starting")

    def seat_in(self, game: Connect4Game) -> int:
        return game.player_of(self)

    # --- the game's calls ------------------------------------------------------------------

    def game_started(self, game: Connect4Game, player: int) -> None:
        self.game = game
        self.note_activity()
        self.send_lines([wire.start(game.id, player, game.board, game.names[1 - player])])

    def position_changed(self, game: Connect4Game, move) -> None:
        self.note_activity()
        board = game.board
        lines = [] if move is None else [wire.played(*move)]
        lines.append(wire.board_line(board))
        if self.board_on:
            lines.extend(wire.picture(board, game.names))
        if not board.is_over():
            lines.append(wire.turn(board.to_move, game.names[board.to_move]))
        self.send_lines(lines)

    def your_move(self, game: Connect4Game, seconds: float | None) -> None:
        self.send_lines([wire.your_move(game.board, seconds)])

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
                                             game.strike_limit, game.move_time))
        self.game = None
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
