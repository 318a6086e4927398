"""UCC Stratego on the generic port (gamed.generic): a generic bot plays one of the daemon's AI
programs (``[stratego] ai``), refereed by the same ``StrategoReferee`` as every other match.

A ``StrategoSeat`` is at the same time the session's generic seat and the referee's seat
(``ISeat``): asked for its setup, it sends a state in phase ``setup`` (the rules' example setups
as actions) and gives the referee the four lines of the bot's act; asked for a move, it sends the
seat's view of a ``gamed.stratego.play`` state built from the referee's own board, and gives the
referee the bot's action as its reply line. An act the rules refuse is refused with the legal
actions and costs one of ``STRIKES`` strikes (the last one loses the match, as an illegal move
does); an answer that does not come within the referee's move time is the referee's timeout. A
bot that resigns or goes away surrenders (during setup: gives no setup), so the match ends at
once and the program is told ``QUIT`` and ended by the referee.
"""

from __future__ import annotations

import itertools
import pathlib
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from zope.interface import implementer

from gamed.generic import wire
from gamed.generic.seat import GenericSeat, IGenericHost, PlayError
from gamed.outcome import outcome_text
from gamed.play import NOT_YOUR_TURN, IllegalAction
from gamed.stratego import play
from gamed.stratego.play import RULES, StrategoState
from gamed.stratego.referee import BLUE, COLOURS, RED, TIMEOUT, MatchResult, Outcome, StrategoReferee
from gamed.stratego.seats import ISeat

STRIKES = 3  # refused acts a generic seat may send in one match; the last one loses it
_SURRENDER = "SURRENDER"
_ids = itertools.count(1)


class _Match:
    """One match of a generic seat: its id (the generic messages'), the referee, the program."""

    def __init__(self, ai_name: str):
        self.id = next(_ids)
        self.ai_name = ai_name
        self.referee: StrategoReferee | None = None
        self.over = False
        self.names: list[str] = []  # by seat number (RED, BLUE)


@implementer(ISeat)
class StrategoSeat(GenericSeat):
    """A generic player of UCC Stratego: one side of a referee's match."""

    rules = RULES
    game_name = "stratego"
    valid = True
    human = False

    _log = Logger()

    def __init__(self, session: Any, service: Any, reactor):
        super().__init__(session)
        self.service = service
        self.reactor = reactor
        self.name = self.argument = session.identity.name
        self.strikes = 0
        self.surrendering = False
        self._pending: Deferred | None = None  # the referee's question being answered
        self._timer = None
        self._budget: float | None = None  # the clock's most for the next reply (time_left)

    def __repr__(self) -> str:
        return f"<StrategoSeat {self.identity.name} {self.host}>"

    # --- the states ----------------------------------------------------------------------------

    @property
    def referee(self) -> StrategoReferee:
        return self.game.referee

    def _play_state(self, end: tuple | None = None, to_move: int | None = None) -> StrategoState:
        """The referee's board as a ``gamed.stratego.play`` state."""
        referee = self.referee
        if referee.turn == 0:
            set_up = (self.number == BLUE, False) if end is None else (True, True)
        else:
            set_up = (True, True)
        return StrategoState(
            cells=tuple(referee.board.cells),
            max_turns=referee.options.max_turns or 100_000,
            set_up=set_up,
            turn=referee.turn,
            to_move=referee.to_move if to_move is None else to_move,
            half_moves=referee.half_moves,
            revealed=frozenset(referee.revealed),
            last=referee.last,
            captured=referee.captured is not None,
            confirmation=self._last_confirmation,
            end=end,
        )

    _last_confirmation = ""

    def _clock(self) -> dict:
        return {"move": self._seconds(), "banks": list(self.referee.banks)}

    def _seconds(self) -> float | None:
        return self._budget if self._budget is not None else self.referee.options.timeout

    def _ask(self, state: StrategoState, late: Any = TIMEOUT) -> Deferred:
        """Send ``state`` to be acted in; the Deferred gives the answer, or ``late`` when the
        referee's move time runs out first."""
        self.turn = (0 if state.turn == 0 and not state.set_up[RED] else 1 if state.turn == 0 else 2) + state.half_moves
        self._pending = d = Deferred()
        self.send_state(state, self._clock(), force=True)
        seconds = self._seconds()
        if seconds:
            self._timer = self.reactor.callLater(seconds, self._late, late)
        return d

    timed_out = False  # an answer did not come within its time (the records' reason says so)

    def _late(self, answer: Any) -> None:
        self.timed_out = True
        self._answer(answer)

    def _answer(self, answer: Any) -> None:
        d, self._pending = self._pending, None
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if d is not None:
            d.callback(answer)

    @property
    def _in_setup(self) -> bool:
        return self.game is not None and self.game.referee is not None and self.referee.turn == 0

    # --- the session's requests ------------------------------------------------------------------

    def submit(self, action: str) -> None:
        if self._pending is None:
            raise IllegalAction(NOT_YOUR_TURN, "it is not your turn")
        RULES.apply(self.state, self.number, action)  # raises IllegalAction for what the referee refuses
        if self._in_setup:
            self._answer(play._setup_rows(self.number, action.strip()))
        else:
            self._answer(action.strip())

    def resign(self) -> None:
        self.surrendering = True
        if self._pending is not None:
            self._answer([] if self._in_setup else _SURRENDER)

    def leave(self) -> None:
        if self.playing and not self.game.over:
            self.resign()

    def retries_left(self) -> int | None:
        if not self.playing or self.game.over:
            return None
        return STRIKES - self.strikes - 1

    def strike(self) -> None:
        if not self.playing or self.game.over:
            return
        self.strikes += 1
        if self.strikes >= STRIKES and self._pending is not None:
            self._answer([] if self._in_setup else None)  # no setup / no reply: the referee's loss

    # --- ISeat -----------------------------------------------------------------------------------

    def setup(self, colour: str, opponent: str) -> Deferred:
        if self.surrendering:
            return defer.succeed([])
        return self._ask(self._play_state(), [])  # a setup not given in time: BAD_SETUP

    def start(self) -> None:
        pass

    def move(self, view: list[str], acceptable: Callable[[str], bool]) -> Deferred:
        if self.surrendering:
            return defer.succeed(_SURRENDER)
        return self._ask(self._play_state())

    def time_left(self, seconds: float | None) -> None:
        self._budget = seconds

    def tell(self, line: str) -> None:
        self._last_confirmation = line
        referee = self.game.referee if self.game is not None else None
        if referee is not None and referee.to_move == self.number and self.connected:
            # The seat's own move as played: its result, before the other side answers.
            self.turn += 1
            self.send_state(self._play_state(to_move=1 - self.number), {"move": None, "banks": list(referee.banks)})

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def quit(self, result_line: str | None) -> Deferred:
        self._answer(None)
        return defer.succeed(None)

    def kill(self) -> Deferred:
        self._answer(None)
        return defer.succeed(None)

    # --- the end -------------------------------------------------------------------------------

    def match_ended(self, result: MatchResult | None) -> None:
        """The referee's result (None: aborted) as the generic ``ended``."""
        self.game.over = True
        self._answer(None)
        if self.done:
            return
        if not self.session.connected:  # it went away (and surrendered): nobody to tell
            self.done = True
            return
        if result is None or result.colour not in COLOURS or result.outcome is Outcome.INTERNAL_ERROR:
            scores, reason = None, "shutdown" if result is None else "aborted"
            text = "the match was aborted" if result is None else f"{result.line}: {result.reason}"
            state = None
        else:
            from gamed.stratego.service import match_scores

            scores = list(match_scores(result)[0])
            reason = result.outcome.value.lower()
            text = outcome_text("stratego", self.game.names, scores, result.reason)  # as the pages say it
            side = COLOURS.index(result.colour)
            state = self._play_state(end=(side, result.outcome.value, result.reason))
        self.send_ended(reason, text, scores, state)


@implementer(IGenericHost)
class StrategoHost:
    """UCC Stratego for the generic port, against the AI programs of ``service`` (a StrategoService)."""

    name = "stratego"
    rules = RULES
    _log = Logger()

    def __init__(self, service: Any):
        self.service = service

    def describe(self) -> dict:
        return {
            "title": "UCC Stratego",
            "seats": [2, 2],
            "options": {},
            "opponents": ["engine"],
            "levels": {name: f"the AI program {name}" for name in self.service.ais},
            "grammar": f"setup: {play.SETUP_GRAMMAR}; move: {play.MOVE_GRAMMAR}",
        }

    def prepare(self, session: Any, request: dict) -> Callable[[], StrategoSeat]:
        service = self.service
        if request.get("options"):
            name = next(iter(request["options"]))
            raise PlayError(wire.BAD_OPTION, f"unknown option {name[:32]}; the server's [stratego] settings apply")
        if "clock" in request:
            raise PlayError(wire.BAD_OPTION, "clock: the server's [stratego] time control applies")
        opponent = request.get("opponent", {"kind": "engine"})
        if opponent["kind"] != "engine":
            raise PlayError(wire.NO_SUCH_OPPONENT, "Stratego on this port is played against the server's AI "
                                                   "programs only: opponent kind 'engine'")
        if not service.ais:
            raise PlayError(wire.UNAVAILABLE, "no Stratego AI program is configured on this server")
        if getattr(service, "_stopping", False):
            raise PlayError(wire.UNAVAILABLE, "the server is shutting down")
        level = opponent.get("level", next(iter(service.ais)))
        if level not in service.ais:
            raise PlayError(wire.NO_SUCH_OPPONENT, f"no AI {level[:32]!r}; AIs: {', '.join(service.ais)}")
        number = BLUE if request.get("seat") == 1 else RED
        return lambda: self._start(session, level, number)

    def _start(self, session: Any, ai_name: str, number: int) -> StrategoSeat:
        from gamed.stratego.service import match_options

        service = self.service
        seat = StrategoSeat(session, service, service.reactor)
        session.seat = seat
        ai = service.ais[ai_name]
        if ai.workdir == "persistent":
            workdir = service.state_dir / "ai" / ai.name
            workdir.mkdir(parents=True, exist_ok=True)
            fresh = None
        else:
            base = service.state_dir / "generic"
            base.mkdir(parents=True, exist_ok=True)
            workdir = fresh = pathlib.Path(tempfile.mkdtemp(prefix=f"{ai.name}.", dir=base))
        program = service._seat(ai, workdir)
        match = seat.game = _Match(ai_name)
        seat.number = number
        sides = [seat, program] if number == RED else [program, seat]
        names = match.names = [seat.name, ai.name] if number == RED else [ai.name, seat.name]  # as tournaments do
        live: list = []

        def opened(referee):
            if service.hub is not None:
                kinds = ["guest" if seat.identity.guest else "player", "program"]
                kinds = kinds if number == RED else kinds[::-1]
                live.append(service._open_live(referee, names, kinds, {"generic": True}))

        def ended(referee, result):
            try:
                seat.match_ended(None if referee.aborted else result)
            except Exception:
                self._log.failure("stratego: the generic seat's end failed")
            if service.hub is None:
                return
            if not live:
                opened(referee)
            from gamed.observers import SHUTDOWN
            from gamed.stratego.service import match_scores

            scores, rated = match_scores(None if referee.aborted else result)
            reason = SHUTDOWN if result is None or referee.aborted else result.reason
            extra = {"ucc_log": "".join(line + "\n" for line in referee.log)}
            try:
                live[0].finish(scores, reason, referee.spectator_state(over=True), rated=rated, extra=extra)
            except Exception:
                self._log.failure("stratego: the live table could not be finished")

        referee = match.referee = StrategoReferee(
            sides[0], sides[1], match_options(service.config), service.reactor, on_start=opened, on_end=ended,
            on_move=lambda referee, side, move: live and service._moved(live[0], referee, side, move),
        )
        seat.send_started(match.id, number, names, {"ai": ai_name, "max_turns": service.config.max_turns,
                                                    "timeout": service.config.time_control.move})
        service._running.add(referee)

        def done(result):
            service._running.discard(referee)
            if fresh is not None:
                shutil.rmtree(fresh, ignore_errors=True)
            return result

        d = defer.ensureDeferred(referee.run())
        d.addBoth(done)
        d.addErrback(lambda f: self._log.failure("stratego: generic match {id} failed", f, id=match.id))
        return seat

    def take_back(self, session: Any, token: str | None) -> StrategoSeat | None:
        return None  # a match against a program does not wait for a seat that went away


def host(service: Any) -> StrategoHost:
    """The registry's ``generic`` builder."""
    return StrategoHost(service)
