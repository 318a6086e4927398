"""Logging in, naming and taking a seat back, the same in every text protocol.

``LoginCommands`` is a mixin for a ``TextLineProtocol`` (Kalaha, Connect Four, Virtual Fight's
AI port, the Combat handshake): it implements the commands

- ``LOGIN <name> <token>``: become the account ``name``; if that account has a seat away in a
  running game of this service, take it back at once (a hosted bot's one-time host token makes
  the connection that bot's, placed at its reserved table: ``gamed.players.Players.host_token``);
- ``RESUME <token>``: take back the seat of a resume token (``TOKEN`` tells a seated player its
  token; a guest needs it to come back, an account may use it too);
- ``TOKEN``: the resume token of this connection's seat;
- the guest's ``NAME <name>`` check (``check_guest_name``): a registered name is refused.

While a login or a name is being checked (the accounts are in the records database, the token
is checked off the reactor) the connection's next lines wait, so replies keep their order.
Each protocol says how it words replies: ``login_ok(identity)``, ``login_refused(error)``,
``resume_ok(seat)``, ``token_reply(seat)``; and how to take a seat: ``take_seat(seat)`` (the
protocol's own bookkeeping; ``SeatBook.resume`` tells the game, which sends the state).
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gamed.identity import Identity, LoginError, Refusal
from gamed.names import valid_name
from gamed.seats import Placement, Seat


class LoginCommands:
    """Mixin: LOGIN, RESUME and TOKEN for a text protocol with ``service.players`` (the daemon's
    ``Players``) and ``service.seats`` (its ``SeatBook``)."""

    _log = Logger()
    identity: Identity | None = None  # an account once logged in, a guest once named or seated
    seat: Seat | None = None  # the seat this connection holds in a running game
    placement = None  # a hosted bot's gamed.seats.Placement: it neither logs in nor resumes

    # --- what the protocol provides ----------------------------------------------------------

    def seated(self) -> bool:
        """True while this connection is at a game (or being seated): too late to log in."""
        return self.seat is not None

    def login_ok(self, identity: Identity) -> None:
        raise NotImplementedError

    def login_refused(self, error: LoginError) -> None:
        raise NotImplementedError

    def login_usage(self, text: str) -> None:
        """Arguments of LOGIN/RESUME that are wrong (the protocol's bad-arguments error)."""
        raise NotImplementedError

    def take_seat(self, seat: Seat) -> None:
        """Make ``seat`` this connection's (its game, its side); ``SeatBook.resume`` follows."""
        raise NotImplementedError

    def resume_ok(self, seat: Seat) -> None:
        """Tell the client it has its seat back (before the game sends the state)."""

    def token_reply(self, seat: Seat) -> None:
        raise NotImplementedError

    # --- helpers ---------------------------------------------------------------------------------

    @property
    def host(self) -> str:
        peer = self.transport.getPeer() if self.transport is not None else None
        return str(getattr(peer, "host", "?"))

    def _wait_for(self, d: Deferred, done, why: str = "login") -> None:
        """Hold this connection's next lines until ``d`` has fired and ``done`` has run. An
        answer that is there at once (a refusal by the failed-login limit, no database) holds
        nothing: resuming from inside the line being handled would handle the next line one
        call deeper, and a thousand such lines would exhaust the stack. (``d.called`` cannot
        tell: a Deferred waiting for one it chains to is "called" with no result yet.)"""
        state = {"over": False, "held": False}

        def answered(result: Any) -> None:
            if self.connected and not self.closing:
                with self.batch:
                    done(result)

        def failed(failure) -> None:
            if self.connected and not self.closing:
                with self.batch:
                    if failure.check(LoginError):
                        self.login_refused(failure.value)
                    else:
                        self._log.failure("checking a login for {peer} failed", failure, peer=self.peer)
                        self.login_refused(LoginError(Refusal.NO_ACCOUNTS, "the accounts cannot be read just now"))

        def over(_: Any) -> None:
            state["over"] = True
            if state["held"]:
                self._resume(why)

        d.addCallbacks(answered, failed)
        d.addErrback(lambda f: self._log.failure("answering a login of {peer} failed", f, peer=self.peer))
        d.addBoth(over)
        if not state["over"]:
            state["held"] = True
            self._pause(why)

    # --- commands --------------------------------------------------------------------------------

    def login_command(self, args: list[str]) -> None:
        if len(args) != 2 or not valid_name(args[0]):
            return self.login_usage("usage: LOGIN <name> <token>")
        if self.placement is not None:
            return self.login_refused(LoginError(Refusal.HOSTED))
        if self.identity is not None and self.identity.account:
            return self.login_refused(LoginError(Refusal.ALREADY, self.identity.name))
        if self.seated():
            return self.login_refused(LoginError(Refusal.TOO_LATE))
        name, token = args  # a malformed token is refused without being hashed (still a failure)
        self._wait_for(self.service.players.login(name, token, self.host, place=self._placed), self._logged_in)

    def _placed(self, placement: Placement) -> None:
        """Logged in with a host token (a hosted bot that connects itself, docs/hosting.md): this
        connection is that bot's, at its reserved table, as if the daemon had placed it."""
        self.placement = placement

    def _logged_in(self, identity: Identity) -> None:
        if self.seated():  # seated while the token was checked (a pairing timer)
            return self.login_refused(LoginError(Refusal.TOO_LATE))
        self.identity = identity
        self.login_ok(identity)
        seat = self.service.seats.find_account(identity, away_only=True)
        if seat is not None:
            self._take_back(seat)

    def resume_command(self, args: list[str]) -> None:
        if len(args) != 1:
            return self.login_usage("usage: RESUME <token>")
        if self.placement is not None:
            return self.login_refused(LoginError(Refusal.HOSTED))
        if self.seated():
            return self.login_refused(LoginError(Refusal.TOO_LATE))
        try:
            seat = self.service.seats.find_token(args[0])
        except LoginError as e:
            return self.login_refused(e)
        if seat.identity.account and self.service.players.banned(seat.identity.name):
            return self.login_refused(LoginError(Refusal.BANNED))
        if self.identity is not None and self.identity.account and seat.identity.account_id != self.identity.account_id:
            return self.login_refused(LoginError(Refusal.UNKNOWN_RESUME))
        self.identity = seat.identity
        self._take_back(seat)

    def token_command(self, args: list[str]) -> None:
        if self.seat is None or self.seat.resume_token is None:
            return self.login_refused(LoginError(Refusal.NO_SEAT))
        self.token_reply(self.seat)

    def _take_back(self, seat: Seat) -> None:
        self.take_seat(seat)
        self.seat = seat
        self.resume_ok(seat)
        self.service.seats.resume(seat, self, self.host)

    def check_guest_name(self, name: str, done) -> None:
        """Check that a guest may call itself ``name`` (not a registered name, guests allowed),
        then ``done(identity)``; a refusal goes to ``login_refused``."""
        if self.identity is not None and self.identity.account:
            return self.login_refused(LoginError(Refusal.ALREADY, self.identity.name))
        self._wait_for(self.service.players.guest(name), done, "name")
