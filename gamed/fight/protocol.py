"""The Virtual Fight AI protocol (port 4500): one connection is one AI commanding one team.

Thin by design: commands are parsed by ``gamed.fight.wire`` and judged by the game and the rules;
grouping into games is done by the service's lobby. See ``docs/protocols/virtual-fight.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gamed.fight import wire
from gamed.fight.game import FightGame, IFightTeam
from gamed.fight.rules import DONE, INVALID, Result
from gamed.gameservice import PlayerFactory
from gamed.textline import TextLineProtocol

if TYPE_CHECKING:
    from gamed.fight.service import FightService


@implementer(IFightTeam)
class FightProtocol(TextLineProtocol):
    """An AI connected over TCP (a program, or a person testing with telnet)."""

    _log = Logger()

    def __init__(self, service: FightService, number: int):
        super().__init__(service.ai_limits, service.clock, service.batch)
        self.service = service
        self.number = number
        self.name: str | None = None
        self.table: str | None = None
        self.game: FightGame | None = None
        self.done = False  # out of its game: nothing more is answered
        self._join_call = None
        self._lobby_call = None

    def __repr__(self) -> str:
        return f"<FightProtocol {self.name or self.number} {self.peer}>"

    # --- connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        self.service.connected(self)
        self.send_lines([wire.OK])
        config = self.service.config
        if config.lobby_timeout:
            self._lobby_call = self.clock.callLater(config.lobby_timeout, self._lobby_timed_out)
        if config.pair_delay:
            self._join_call = self.clock.callLater(config.pair_delay, self._join)
        else:
            self._join()

    def on_disconnect(self, reason: Failure) -> None:
        self._cancel_calls()
        self.service.lobby.leave(self)
        self.service.disconnected(self)
        if self.game is not None and not self.done:
            self.game.leave(self)

    def on_line(self, text: str) -> None:
        if self.game is not None:
            if not self.done:
                self.game.command(self, text)
            return
        if wire.is_help(text):
            self.send_lines(list(wire.AI_HELP))
            return
        extension = wire.parse_extension(text)
        if extension is None:
            self.send_lines([INVALID])
            return
        keyword, value = extension
        if keyword == "NAME":
            self.name = value
            self.send_lines([DONE])
        else:
            self.send_lines([DONE])
            # Join the named table now (the pair delay only exists to give the AI this chance).
            self.table = value
            self.service.lobby.leave(self)
            self._join()

    def on_line_too_long(self) -> None:
        self._bad_line()

    def on_garbage(self) -> None:
        self._bad_line()

    def on_internal_error(self) -> None:
        if not self.done:
            self.send_lines([INVALID])

    def on_idle(self) -> None:
        self.close("idle timeout")

    def shutdown(self) -> None:
        """The server is stopping: a waiting AI is told its game will not happen."""
        if self.game is None:
            self.close("server shutdown", [wire.game_over(Result.DRAW)])

    def _bad_line(self) -> None:
        if self.game is not None:
            if not self.done:
                self.game.command(self, None)
        else:
            self.send_lines([INVALID])

    # --- lobby -----------------------------------------------------------------------------

    def _join(self) -> None:
        if self._join_call is not None and self._join_call.active():
            self._join_call.cancel()
        self._join_call = None
        if self.game is None and not self.closing and not self.service.lobby.is_waiting(self):
            self.service.lobby.join(self, self.table)

    def _lobby_timed_out(self) -> None:
        self._lobby_call = None
        if self.game is None:
            self.service.lobby.leave(self)
            self.close("no game within the lobby timeout", [wire.game_over(Result.DRAW)])

    def _cancel_calls(self) -> None:
        for call in (self._join_call, self._lobby_call):
            if call is not None and call.active():
                call.cancel()
        self._join_call = self._lobby_call = None

    # --- IFightTeam ------------------------------------------------------------------------

    def game_started(self, game: FightGame, team: int) -> None:
        self._cancel_calls()
        self.game = game
        self.note_activity()

    def send_lines(self, lines: list[str]) -> None:
        if not self.handling:
            self.resetTimeout()  # game events count as activity: a waiting AI is not idle
        super().send_lines(lines)

    def game_ended(self, game: FightGame, result: Result) -> None:
        self.done = True
        self.close(f"fight game {game.id} over ({result.value})", [wire.game_over(result)], routine=True)


class FightFactory(PlayerFactory):
    """Builds a FightProtocol per AI connection for one FightService."""

    protocol = FightProtocol
    prefix = "fight"
