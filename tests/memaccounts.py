"""An in-memory provider of ``gamed.players.IAccounts`` for unit tests of the login commands and
the seat model (the real ``gamed.accounts.AccountStore`` is tested against SQLite and PostgreSQL,
and through the daemon in the integration tests)."""

from __future__ import annotations

import secrets

import attrs
from twisted.internet import defer
from zope.interface import implementer

from gamed.players import IAccounts


class Refused(Exception):
    """What AccountStore.verify fails with: ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class _Account:
    id: int
    name: str
    kind: str


@implementer(IAccounts)
class MemoryAccounts:
    """Accounts kept in a dict: ``add`` returns the token; ``revoke``/``rotate`` act at once.
    ``pending`` True keeps every answer back until ``release()`` (a slow database)."""

    def __init__(self):
        self._accounts: dict[str, tuple[_Account, str | None]] = {}
        self.pending = False
        self._held: list[tuple[defer.Deferred, object]] = []
        self.checked = 0  # tokens compared (a rate-limited login compares none)

    def add(self, name: str, kind: str = "person", token: str | None = None) -> str:
        """Register ``name``; returns its token (``token``, for a documented example, or a new one)."""
        token = token or secrets.token_urlsafe(24)
        self._accounts[name] = (_Account(len(self._accounts) + 1, name, kind), token)
        return token

    def revoke(self, name: str) -> None:
        account, _ = self._accounts[name]
        self._accounts[name] = (account, None)

    def rotate(self, name: str) -> str:
        account, _ = self._accounts[name]
        token = secrets.token_urlsafe(24)
        self._accounts[name] = (account, token)
        return token

    def _answer(self, outcome):
        d = defer.Deferred()
        if self.pending:
            self._held.append((d, outcome))
        else:
            self._fire(d, outcome)
        return d

    @staticmethod
    def _fire(d, outcome):
        if isinstance(outcome, Exception):
            d.errback(outcome)
        else:
            d.callback(outcome)

    def release(self) -> None:
        held, self._held = self._held, []
        for d, outcome in held:
            self._fire(d, outcome)

    def verify(self, name: str, token: str):
        self.checked += 1
        entry = self._accounts.get(name)
        if entry is None:
            return self._answer(Refused("unknown account or wrong token"))
        account, current = entry
        if current is None:
            return self._answer(Refused("this account's token has been revoked"))
        if not secrets.compare_digest(current, token):
            return self._answer(Refused("unknown account or wrong token"))
        return self._answer(account)

    def registered(self, name: str):
        return self._answer(name in self._accounts)
