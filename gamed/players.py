"""Who is playing: an identity per seat (an account, a guest, or a program the daemon started),
logging in with an account's token, the names guests may not use, and the limit on failed logins.

A hosted bot that connects itself (docs/hosting.md, ``talk = "connect"``) logs in with a *host
token*: ``host_token(identity, table)`` makes a random one-time token for that bot's seat at that
reserved table, kept in memory only (never in the database), accepted by the same ``login`` as an
account's token until it has been used once or ``drop_host_token`` drops it (its game is over).

One ``Players`` object serves the whole daemon; every game's protocol asks it, so logging in
works and fails the same way in every game. Accounts live in the records database
(``gamed.accounts.AccountStore`` provides ``IAccounts``); a daemon without records has no accounts,
only guests. A refused login is a ``LoginError`` whose ``refusal`` each wire maps to its own code
(``gamed.textwire.REFUSAL_CODES`` for the text protocols).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import Interface

from gamed.accounts import REVOKED
from gamed.config import PlayersConfig
from gamed.identity import GUEST_PREFIX, Identity, LoginError, LoginLimit, Refusal
from gamed.seats import Placement

HOST_TOKEN_BYTES = 24  # 32 URL-safe characters: the shape of an account's token

__all__ = ["GUEST_PREFIX", "IAccounts", "Identity", "LoginError", "LoginLimit", "Players", "Refusal"]


class IAccounts(Interface):
    """The accounts an organiser registered (``gamed.accounts.AccountStore``)."""

    def verify(name: str, token: str) -> Deferred:
        """Fires with the account (``id``, ``name``, ``kind``) whose token this is, or fails with
        ``gamed.accounts.LoginRefused`` (``reason``: unknown account or wrong token, revoked)."""

    def registered(name: str) -> Deferred:
        """Fires True when an account (revoked or not) has this name."""


class Players:
    """The daemon's players: logs clients in with their tokens, checks guests' names, and says
    whether guests may play at all (``[players] guests``)."""

    _log = Logger()

    def __init__(self, config: PlayersConfig, accounts: Any | None, clock: IReactorTime):
        self.config = config
        self.accounts = accounts  # an IAccounts provider, or None: no records database
        self.clock = clock
        self.limit = LoginLimit(config.login_failures, config.login_window)
        self._hosted: dict[str, Placement] = {}  # host token -> the seat it logs in to
        self.bans = None  # the operator's gamed.connections.Bans (gamed.admin), or None

    def banned(self, name: str) -> bool:
        """Whether the operator banned the account ``name`` (docs/admin.md)."""
        return self.bans is not None and self.bans.account(name) is not None

    # --- hosted bots that connect themselves -------------------------------------------------

    def host_token(self, identity: Identity, table: str, left: Callable[[], None] | None = None) -> str:
        """A new one-time token that logs in as ``identity`` (a hosted bot) placed at the
        reserved lobby table ``table``; valid until used once or dropped. ``left`` is called if
        that connection drops during its game (``gamed.seats.Placement``)."""
        token = secrets.token_urlsafe(HOST_TOKEN_BYTES)
        self._hosted[token] = Placement(identity, table, left)
        return token

    def drop_host_token(self, token: str) -> None:
        """``token``'s hosted game is over (or will not be played): it logs nobody in any more."""
        self._hosted.pop(token, None)

    def _take_host_token(self, name: str, token: str) -> Placement | None:
        """The seat an unused host token of the bot ``name`` logs in to, used up now; None when
        ``token`` is not one."""
        for known, placement in self._hosted.items():
            # Each compared in constant time: how long a wrong token takes tells nothing of a right one.
            if secrets.compare_digest(known.encode(), token.encode()) and placement.identity.name == name:
                del self._hosted[known]  # one-time: nobody else logs in with it
                return placement
        return None

    @property
    def guests(self) -> bool:
        return self.config.guests

    def login(self, name: str, token: str, host: str, place: Callable[[Placement], None] | None = None) -> Deferred:
        """Fires with the Identity of the account ``name`` when ``token`` is its token; fails
        with LoginError. ``host`` is the client's address: too many failures from it and it must
        wait (no token is checked meanwhile). The token is never logged.

        A game connection passes ``place``: then a hosted bot's host token (``host_token``) logs
        it in as its bot, once, with or without accounts, and ``place(placement)`` is called
        first (the connection keeps to its reserved seat). Without ``place`` (the web site) a
        host token is refused like any wrong token."""
        placement = self._take_host_token(name, token) if place is not None else None
        if placement is not None:
            place(placement)
            self._log.info("{host} logged in as hosted bot {name}", host=host, name=name)
            return defer.succeed(placement.identity)
        if self.accounts is None:
            return defer.fail(LoginError(Refusal.NO_ACCOUNTS))
        now = self.clock.seconds()
        wait = self.limit.wait(host, now)
        if wait:
            return defer.fail(LoginError(Refusal.TOO_MANY, f"try again in {max(1, round(wait))} s"))
        self.limit.begin(host)

        def verified(account: Any) -> Identity:
            self.limit.end(host, self.clock.seconds(), failed=False)
            if self.banned(account.name):
                self._log.info("{host}: login as {name} refused: the account is banned", host=host, name=account.name)
                raise LoginError(Refusal.BANNED)
            self._log.info("{host} logged in as {name}", host=host, name=account.name)
            return Identity(account.name, account.kind, account.id)

        def refused(failure) -> None:
            self.limit.end(host, self.clock.seconds(), failed=True)
            reason = getattr(failure.value, "reason", None)
            if reason is None:  # the database failed, not the client
                self._log.failure("checking a login for {name} failed", failure, name=name)
                raise LoginError(Refusal.NO_ACCOUNTS, "the accounts cannot be read just now")
            refusal = Refusal.REVOKED if reason == REVOKED else Refusal.UNKNOWN_OR_WRONG
            self._log.info("{host}: login as {name} refused: {why}", host=host, name=name, why=refusal.value)
            raise LoginError(refusal)

        d = defer.maybeDeferred(self.accounts.verify, name, token)
        d.addCallbacks(verified, refused)
        return d

    def guest(self, name: str) -> Deferred:
        """Fires with the guest Identity ``name``; fails with LoginError when guests may not
        play here, or when ``name`` belongs to an account (revoked or not)."""
        if not self.config.guests:
            return defer.fail(LoginError(Refusal.GUESTS_OFF))
        if self.accounts is None:
            return defer.succeed(Identity(name))

        def checked(registered: bool) -> Identity:
            if registered:
                raise LoginError(Refusal.NAME_REGISTERED, name)
            return Identity(name)

        d = defer.maybeDeferred(self.accounts.registered, name)
        d.addCallback(checked)
        return d
