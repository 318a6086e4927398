"""A player of the generic protocol, whatever carries its messages (a TCP line, an HTTP request).

``GenericSession`` handles the checked client messages of ``gamed.generic.wire`` for one player:
it lists the games, logs in (or names a guest), seats the player in the game it asks for (through
that game's ``IGenericHost``), passes its acts to its seat and takes a seat back. It talks to its
transport through ``ISessionTransport``: the TCP port (``gamed.generic.protocol``) and the HTTP bot
API hand it messages and send what it sends.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from zope.interface import Attribute, Interface

from gamed.generic import wire
from gamed.generic.seat import GenericSeat, IGenericHost, PlayError
from gamed.identity import Identity, LoginError, Refusal

# Guests of the generic port are numbered apart from the games' own ("guest7" on telnet).
_guest_numbers = itertools.count(1)


class ISessionTransport(Interface):
    """What carries one session's messages."""

    host = Attribute("The client's address, as text.")
    connected = Attribute("True while messages can still be sent.")

    def send(message: dict) -> None:
        """Send one server message."""

    def close(reason: str, message: dict | None) -> None:
        """Send ``message`` (a bye) and close; ``reason`` is logged."""

    def hold(d: Deferred) -> None:
        """Handle no further client message until ``d`` has fired (a login being checked)."""


class GenericSession:
    """One player: a guest (``guest-<n>`` until it names itself) or, after ``login``, an account."""

    _log = Logger()

    def __init__(self, hosts: Mapping[str, IGenericHost], players: Any, transport: ISessionTransport,
                 selftest: Callable[[GenericSession, str], Any] | None = None):
        self.hosts = hosts
        self.players = players
        self.transport = transport
        self.identity = Identity(f"guest-{next(_guest_numbers)}")
        self.named = False  # a guest that chose its name, or an account
        self.seat: GenericSeat | None = None  # waiting for a game or in one
        self.selftest = selftest
        self.probe: Any = None  # a self-test being played (gamed.generic.selftest)

    @property
    def host(self) -> str:
        return self.transport.host

    @property
    def connected(self) -> bool:
        return bool(self.transport.connected)

    def send(self, message: dict) -> None:
        self.transport.send(message)

    def hello(self) -> dict:
        return wire.hello(list(self.hosts), bool(self.players.guests))

    # --- messages ------------------------------------------------------------------------------

    def receive(self, message: dict) -> None:
        """One checked client message."""
        if self.probe is not None and self.probe.receive(message):
            return
        handler = self._HANDLERS[message["type"]]
        handler(self, message)

    def refuse(self, code: str, text: str, message: dict | None = None, **fields: Any) -> None:
        """Refuse a message (None: a line that did not parse): while a game runs, a strike of
        the game's, with the legal actions, as every refused line of a seat is."""
        if self.probe is not None and self.probe.malformed(code, text):
            return  # a self-test's deviation, reported by it
        for_ = None if message is None else message.get("type")
        request_id = None if message is None else message.get("id")
        seat = self.seat
        if seat is not None and seat.playing and not fields:
            seat.refused(code, text, for_, request_id)
        else:
            self.send(wire.error(code, text, for_, request_id, **fields))

    def _games(self, message: dict) -> None:
        games = [{"name": name, **host.describe()} for name, host in self.hosts.items()]
        self.send({"type": "games", "games": games})

    def _hello(self, message: dict) -> None:
        self.send(self.hello())

    def _ping(self, message: dict) -> None:
        reply = {"type": "pong"}
        if "id" in message:
            reply["id"] = message["id"]
        self.send(reply)

    def _quit(self, message: dict) -> None:
        seat = self.seat
        if seat is not None and seat.playing:
            seat.resign()
        self.transport.close("client quit", wire.bye("goodbye"))

    # --- who plays -----------------------------------------------------------------------------

    def _login(self, message: dict) -> None:
        if self.identity.account:
            return self._login_refused(LoginError(Refusal.ALREADY, self.identity.name), message)
        if self.seat is not None:
            return self._login_refused(LoginError(Refusal.TOO_LATE), message)
        d = self.players.login(message["name"], message["token"], self.host)
        self._wait(d, lambda identity: self._logged_in(identity, message), message)

    def _logged_in(self, identity: Identity, message: dict) -> None:
        if self.seat is not None:
            return self._login_refused(LoginError(Refusal.TOO_LATE), message)
        self.identity = identity
        self.named = True
        self.send(wire.ok("login", message.get("id"), name=identity.name))
        for host in self.hosts.values():  # an away seat of the account is taken back at once
            seat = host.take_back(self, None)
            if seat is not None:
                self.seat = seat
                return

    def _guest(self, message: dict) -> None:
        if self.identity.account:
            return self._login_refused(LoginError(Refusal.ALREADY, self.identity.name), message)
        if self.seat is not None:
            return self.refuse(wire.NOT_NOW, "you cannot change your name during a game", message)
        name = message["name"]
        self._wait(self.players.guest(name), lambda identity: self._named(identity, message), message)

    def _named(self, identity: Identity, message: dict) -> None:
        if self.seat is not None:
            return self.refuse(wire.NOT_NOW, "you cannot change your name during a game", message)
        self.identity = identity
        self.named = True
        self.send(wire.ok("guest", message.get("id"), name=identity.name))

    def _wait(self, d: Deferred, done: Callable[[Any], None], message: dict) -> None:
        def answered(result: Any) -> None:
            if self.connected:
                done(result)

        def failed(failure) -> None:
            if not self.connected:
                return
            if failure.check(LoginError):
                self._login_refused(failure.value, message)
            else:
                self._log.failure("checking a login for {host} failed", failure, host=self.host)
                self._login_refused(LoginError(Refusal.NO_ACCOUNTS, "the accounts cannot be read just now"), message)

        d.addCallbacks(answered, failed)
        d.addErrback(lambda f: self._log.failure("answering a login of {host} failed", f, host=self.host))
        self.transport.hold(d)

    def _login_refused(self, error: LoginError, message: dict) -> None:
        self.refuse(wire.REFUSED, error.text, message, refusal=error.refusal.name.lower())

    # --- games ---------------------------------------------------------------------------------

    def _host(self, name: str, message: dict) -> IGenericHost | None:
        host = self.hosts.get(name)
        if host is None:
            self.refuse(wire.NO_SUCH_GAME, f"no game {name[:32]!r} here; games: {', '.join(self.hosts) or 'none'}", message)
        return host

    def _play(self, message: dict) -> None:
        if self.seat is not None:
            what = "playing" if self.seat.playing else "waiting for a game"
            return self.refuse(wire.NOT_NOW, f"you are {what} already; leave first", message)
        if self.identity.guest and not self.players.guests:
            return self._login_refused(LoginError(Refusal.GUESTS_OFF), message)
        host = self._host(message["game"], message)
        if host is None:
            return
        try:
            start = host.prepare(self, message)
        except PlayError as e:
            return self.refuse(e.code, e.text, message)
        self.send(wire.ok("play", message.get("id"), game=host.name, table=message.get("table")))
        seat = start()
        self.seat = None if seat.done else seat  # done: refused after all (an engine that did not start)

    def _act(self, message: dict) -> None:
        seat = self.seat
        if seat is None or not seat.playing:
            return self.refuse(wire.NOT_NOW, "you are not in a game", message)
        seat.act(message["action"], message.get("turn"), message.get("id"))

    def _resign(self, message: dict) -> None:
        seat = self.seat
        if seat is None or not seat.playing:
            return self.refuse(wire.NOT_NOW, "you are not in a game", message)
        seat.resign()

    def _leave(self, message: dict) -> None:
        seat = self.seat
        if seat is None:
            return self.refuse(wire.NOT_NOW, "you are neither waiting nor playing", message)
        if seat.playing:
            return self.refuse(wire.NOT_NOW, "you are in a game: resign to leave it", message)
        self.seat = None
        seat.leave()
        self.send(wire.ok("leave", message.get("id")))

    def _resume(self, message: dict) -> None:
        if self.seat is not None:
            return self._login_refused(LoginError(Refusal.TOO_LATE), message)
        token = message["token"]
        for host in self.hosts.values():
            try:
                seat = host.take_back(self, token)
            except LoginError as e:
                return self._login_refused(e, message)
            if seat is not None:
                self.seat = seat
                return
        self._login_refused(LoginError(Refusal.UNKNOWN_RESUME), message)

    def _token(self, message: dict) -> None:
        seat = self.seat
        if seat is None or seat.seat is None or seat.seat.resume_token is None or not seat.playing:
            return self._login_refused(LoginError(Refusal.NO_SEAT), message)
        self.send({"type": "token", "token": seat.seat.resume_token, "id": seat.game.id})

    def _selftest(self, message: dict) -> None:
        if self.selftest is None:
            return self.refuse(wire.UNAVAILABLE, "there is no self-test on this port", message)
        if self.seat is not None:
            return self.refuse(wire.NOT_NOW, "leave your game first", message)
        if self._host(message["game"], message) is not None:
            self.probe = self.selftest(self, message["game"])

    _HANDLERS: dict[str, Callable[[GenericSession, dict], None]] = {
        "hello": _hello,
        "games": _games,
        "login": _login,
        "guest": _guest,
        "play": _play,
        "act": _act,
        "resign": _resign,
        "leave": _leave,
        "resume": _resume,
        "token": _token,
        "ping": _ping,
        "quit": _quit,
        "selftest": _selftest,
    }

    # --- from the seat -------------------------------------------------------------------------

    def seat_ended(self, seat: GenericSeat, message: dict) -> None:
        """``seat``'s game is over (``message`` is its ended): the session may play again."""
        if self.seat is seat:
            self.seat = None
        self.send(message)
        if self.stopping:  # the game was ended by the shutdown
            self.transport.close("server shutdown", wire.bye("the server is shutting down"))

    def seat_replaced(self, seat: GenericSeat) -> None:
        """Another connection of this player took the seat back: this one closes."""
        if self.seat is seat:
            self.seat = None
        self.transport.close("a new connection took its seat", wire.bye("your seat was taken back by a new connection"))

    def gone(self) -> None:
        """The transport is gone: a waiting seat leaves the lobby, a playing one is away."""
        seat, self.seat = self.seat, None
        if seat is not None:
            seat.leave()
        if self.probe is not None:
            self.probe.gone()
            self.probe = None

    stopping = False

    def shutdown(self) -> None:
        """The server is stopping: a session without a running game is told so and closed; one
        with a game is closed once its game has ended (the game's service aborts it)."""
        self.stopping = True
        if self.seat is None or not self.seat.playing:
            self.transport.close("server shutdown", wire.bye("the server is shutting down"))
