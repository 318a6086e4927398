"""The Virtual Fight GUI port (4550): read-only observers of running games (spec §9).

An observer follows one game at a time through that game's ``Channel``; the service decides which
(the oldest running game, the next to start, or the one asked for with ``WATCH``). Output is
bounded: an observer that stops reading is dropped, never waited for.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory
from twisted.python.failure import Failure

from gamed.fight import wire
from gamed.observers import BoundedOutput
from gamed.textline import TextLineProtocol

if TYPE_CHECKING:
    from gamed.fight.service import FightService


class FightGuiProtocol(BoundedOutput, TextLineProtocol):
    """One observer connection: ``LIST``, ``WATCH&<id>``, ``QUIT``, ``HELP``; anything else is ignored.
    It is closed (and the reason logged) once it has sent nothing and been sent nothing for the
    GUI idle timeout."""

    def __init__(self, service: FightService):
        super().__init__(service.gui_limits, service.clock, service.batch)
        self.service = service
        self.output_limit = service.config.gui_buffer
        self.authorized = not service.config.gui_token

    def on_connect(self) -> None:
        self.service.connected(self)
        if self.authorized:
            self._start()

    def on_disconnect(self, reason: Failure) -> None:
        self.service.observer_gone(self)
        self.service.disconnected(self)

    def shutdown(self) -> None:
        self.close("server shutdown")

    def on_line(self, text: str) -> None:
        keyword, argument = wire.parse_gui(text)
        if not self.authorized:
            token = self.service.config.gui_token
            if keyword != "AUTH" or argument is None:
                self.close("observer did not authenticate (no AUTH first)", [wire.DENIED_NO_AUTH])
            elif hmac.compare_digest(argument.encode(), token.encode()):
                self.authorized = True
                self._start()
            else:
                self.close("observer did not authenticate (wrong token)", [wire.DENIED_TOKEN])
            return
        if keyword == "LIST":
            self.send_lines(self.service.listing() + ["END"])
        elif keyword == "WATCH" and argument is not None and argument.isdigit():
            game = self.service.games.get(int(argument))
            if game is not None:
                self.service.watch(self, game)
        elif keyword == "QUIT":
            self.close("observer quit")
        elif keyword == "HELP":
            self.send_lines(list(wire.GUI_HELP))

    def deliver(self, data: bytes) -> None:
        # An observer following a game is not idle while its events flow, however long it is
        # silent; one that waits for a game hears of nothing and must say something now and then.
        self.note_activity()
        super().deliver(data)

    def on_line_too_long(self) -> None:
        if not self.authorized:
            self.close("observer did not authenticate (no AUTH first)", [wire.DENIED_NO_AUTH])

    on_garbage = on_line_too_long

    def _start(self) -> None:
        self.send_lines([wire.HELLO])
        self.service.follow(self)


class FightGuiFactory(Factory):
    """Builds a FightGuiProtocol per observer connection."""

    noisy = False

    def __init__(self, service: FightService):
        self.service = service

    def logPrefix(self) -> str:  # noqa: N802
        return "fight-gui"

    def buildProtocol(self, addr) -> FightGuiProtocol:  # noqa: N802
        protocol = FightGuiProtocol(self.service)
        protocol.factory = self
        return protocol
