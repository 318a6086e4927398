"""The Virtual Fight AI protocol (port 4500): one connection is one AI commanding one team.

Thin by design: commands are parsed by ``gamed.fight.wire`` and judged by the game and the rules;
grouping into games is done by the service's lobby; logging in, naming and taking a seat back go
through the shared ``LoginCommands`` (``LOGIN&<name>&<token>``, ``RESUME&<token>``, ``TOKEN``).
See ``docs/protocols/virtual-fight.md``.
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
from gamed.identity import Identity, LoginError, Refusal
from gamed.login import LoginCommands
from gamed.seats import ISeatHolder, Seat
from gamed.textline import TextLineProtocol

if TYPE_CHECKING:
    from gamed.fight.selftest import FightSelfTest
    from gamed.fight.service import FightService
    from gamed.timecontrol import TimeControl


@implementer(IFightTeam, ISeatHolder)
class FightProtocol(LoginCommands, TextLineProtocol):
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
        self.extended = False  # it used LOGIN, RESUME or TOKEN: it is told AWAY and BACK
        self._join_due = False  # the pair delay is over, but it may not play before it logs in
        self._login_pending = False  # a LOGIN is being checked: it joins the queue after the answer
        self._join_call = None
        self._lobby_call = None
        self.clocks_on = False  # CLOCKS&ON: a CLOCK line before every READY (opt-in: old AIs see none)
        self._told_control = False  # the TIMECONTROL line goes once, before the first CLOCK line
        self.probe: FightSelfTest | None = None  # the self-test being played (SELFTEST)

    def __repr__(self) -> str:
        return f"<FightProtocol {self.name or self.number} {self.peer}>"

    # --- connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        if self.placement is not None:
            self.identity = self.placement.identity
            self.name = self.identity.name
            self.service.name_changed(self, self.name)
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
        if self.probe is not None:
            self.probe.gone()
            self.probe = None
        self.service.lobby.leave(self)
        self.service.disconnected(self)
        if self.seat is not None and not self.done:
            self.service.seats.drop(self.seat, self)  # away for the grace, or out at once
        self.service.name_released(self)  # an away seat keeps its name taken (gamed.seats.NameBook)

    def on_line(self, text: str) -> None:
        login = wire.parse_login(text)
        if login is not None:
            self._login_line(*login)
            return
        clocks = wire.parse_clocks(text)
        if clocks is not None:
            if self.done:
                return
            self._catch_up()  # a line after the deadline belongs to the next turn
            self.clocks_on = clocks
            self.send_lines([DONE])
            return
        if self.probe is not None:
            self.probe.line(text)
            return
        if self.game is not None:
            if not self.done:
                self.game.command(self, text)
            return
        if wire.is_help(text):
            self.send_lines(list(wire.AI_HELP))
            return
        if wire.is_selftest(text):
            self._selftest()
            return
        extension = wire.parse_extension(text)
        if extension is None:
            self.send_lines([INVALID])
            return
        keyword, value = extension
        if keyword == "NAME" and self.placement is not None:
            self.login_refused(LoginError(Refusal.HOSTED))
        elif keyword == "NAME":
            self.check_guest_name(value, self._named)  # a registered name first, then one in use
        elif not self.may_play():
            self.login_refused(LoginError(Refusal.GUESTS_OFF))
        elif self.placement is None and self.service.lobby.reserved(value):
            self.send_lines([wire.reserved_table(value)])  # it stays where it waits
        else:
            self.send_lines([DONE])
            # Join the named table now (the pair delay only exists to give the AI this chance).
            self.table = value
            self.service.lobby.leave(self)
            self._join()

    def _named(self, identity: Identity) -> None:
        if self.game is not None:  # seated while the name was checked: too late for a name
            self.send_lines([INVALID])
            return
        if self.service.name_in_use(identity.name, self):
            self.login_refused(LoginError(Refusal.NAME_IN_USE, identity.name))
            return
        self.service.name_changed(self, identity.name)
        self.identity = identity
        self.name = identity.name
        self.send_lines([DONE])

    def may_play(self) -> bool:
        """False while guests may not play here and this AI has not logged in."""
        if self.placement is not None:
            return True
        return self.service.players.guests or (self.identity is not None and self.identity.account)

    # --- logging in, taking a seat back -------------------------------------------------------

    def _login_line(self, keyword: str, args: list[str]) -> None:
        self.extended = True
        if keyword == "TOKEN":
            if self.done:
                return
            self._catch_up()
            self.token_command(args)
        elif self.game is not None or self.probe is not None:
            if not self.done:
                self._catch_up()
                self.login_refused(LoginError(Refusal.TOO_LATE))
        elif keyword == "LOGIN":
            self._login_pending = True
            self.login_command(args)
        else:
            self.resume_command(args)

    def _catch_up(self) -> None:
        """Close a turn (of the game, or of the self-test) whose time is up before a line that is
        not a command is answered: it belongs to the next turn, as every line does."""
        if self.probe is not None:
            self.probe.catch_up()
        elif self.game is not None:
            self.game.catch_up()

    # --- the self-test (gamed.fight.selftest) -------------------------------------------------

    def _selftest(self) -> None:
        """``SELFTEST`` in the waiting room: out of the queue, a scripted match, a verdict; then
        back in the waiting room, out of the queue (``TABLE`` takes it to a table)."""
        from gamed.fight.selftest import FightSelfTest

        if self.placement is not None:  # a hosted bot's seat is kept for its game
            self.send_lines([INVALID])
            return
        self._cancel_calls()
        self.service.lobby.leave(self)
        self._join_due = False
        self.probe = FightSelfTest(self, self.clock, self._selftest_done, self.service.config.max_lines)
        self.probe.begin()

    def _selftest_done(self) -> None:
        self.probe = None
        self._told_control = False  # a real game tells its own control
        config = self.service.config
        if config.lobby_timeout and not self.closing:
            self._lobby_call = self.clock.callLater(config.lobby_timeout, self._lobby_timed_out)

    def seated(self) -> bool:
        return self.seat is not None or self.game is not None

    def login_ok(self, identity: Identity) -> None:
        self.name = identity.name
        self.send_lines([DONE])

    def _logged_in(self, identity: Identity) -> None:
        self._login_pending = False
        if self.seated():  # seated while the token was checked (the pair delay ran out)
            self.login_refused(LoginError(Refusal.TOO_LATE))
            return
        self.identity = identity
        seat = self.service.seats.find_account(identity, away_only=True)
        if seat is not None:
            self._take_back(seat)  # one reply all the same: the 255 of resume_ok
            return
        self.login_ok(identity)
        if self.game is None and self._join_due:
            self._join()  # it waited for this login to play

    def login_refused(self, error: LoginError) -> None:
        line = wire.refused(error)
        self._count(int(line.partition("&")[0]))
        self.send_lines([line])

    def _count(self, code: int) -> None:
        """One more reply of ``code`` sent, for the metrics (gamed_errors_total)."""
        errors = getattr(self.service, "errors", None)
        if errors is not None:
            errors[code] += 1
        self._login_answered()

    def login_usage(self, text: str) -> None:
        self.send_lines([INVALID])
        self._login_answered()

    def _login_answered(self) -> None:
        """A LOGIN was refused: an AI the pair delay kept waiting for it joins the queue now
        (as a guest, if guests may play)."""
        if self._login_pending:
            self._login_pending = False
            if self.game is None and self._join_due:
                self._join()

    def take_seat(self, seat: Seat) -> None:
        self._cancel_calls()
        self.service.lobby.leave(self)
        self.name = seat.name
        self.game = seat.game
        self.done = False
        self.note_activity()

    def resume_ok(self, seat: Seat) -> None:
        self.send_lines([DONE])

    def token_reply(self, seat: Seat) -> None:
        self.send_lines([wire.token(seat.resume_token)])

    def seat_replaced(self, seat: Seat) -> None:
        """Another connection of this AI's player took the seat: this one is done."""
        self.seat = None
        self.done = True
        self.close(f"{seat.label()} taken back by a new connection", routine=False)

    def on_line_too_long(self) -> None:
        self._bad_line(f"(a line over {self.limits.max_line} bytes)")

    def on_garbage(self) -> None:
        self._bad_line("(bytes that are not ASCII text)")

    def on_internal_error(self) -> None:
        if not self.done:
            self.send_lines([INVALID])

    def on_idle(self) -> None:
        self.close("idle timeout")

    def shutdown(self) -> None:
        """The server is stopping: a waiting AI is told its game will not happen."""
        if self.game is None:
            self.close("server shutdown", [wire.game_over(Result.DRAW)])

    def _bad_line(self, received: str) -> None:
        if self.probe is not None:
            self.probe.line(None, received)
        elif self.game is not None:
            if not self.done:
                self.game.command(self, None)
        else:
            self.send_lines([INVALID])

    # --- lobby -----------------------------------------------------------------------------

    def _join(self) -> None:
        if self._join_call is not None and self._join_call.active():
            self._join_call.cancel()
        self._join_call = None
        if self.probe is not None:
            return  # it plays its self-test: the queue waits until it asks again (TABLE)
        if self._login_pending or not self.may_play():
            self._join_due = True  # it joins once its login has been answered (or it logs in)
            return
        if self.game is None and not self.closing and not self.service.lobby.is_waiting(self):
            self.service.lobby.join(self, self.table if self.placement is None else self.placement.table)

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
        if len(lines) == 1 and lines[0] == INVALID:  # (every "invalid" reply is sent alone)
            self._count(int(INVALID))
        super().send_lines(lines)

    def ready(self, game: FightGame, team: int) -> None:
        self.send_lines(self.ready_lines(game.control, team, *game.clock_snapshot(team)))

    def ready_lines(
        self, control: TimeControl, team: int, left: float | None, banks: list[float | None]
    ) -> list[str]:
        """``READY``, after the clock lines when the AI asked for them (``CLOCKS&ON``)."""
        lines = []
        if self.clocks_on:
            if not self._told_control:
                self._told_control = True
                lines.append(wire.time_control(control, team))
            lines.append(wire.clock(left, banks))
        lines.append(wire.READY)
        return lines

    def notice(self, lines: list[str]) -> None:
        if self.extended and not self.done:
            self.send_lines(lines)

    def game_ended(self, game: FightGame, result: Result) -> None:
        self.done = True
        self.close(f"fight game {game.id} over ({result.value})", [wire.game_over(result)], routine=True)


class FightFactory(PlayerFactory):
    """Builds a FightProtocol per AI connection for one FightService."""

    protocol = FightProtocol
    prefix = "fight"
