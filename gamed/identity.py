"""Who sits in a seat and why a login was refused: pure values shared by the seat model, the
login commands and every wire (which maps a ``Refusal`` to its own code), and the limit on failed
logins per client address (time comes in as an argument)."""

from __future__ import annotations

import enum
import re
from collections import OrderedDict

import attrs

# Any token a client may send: an account's (32 characters, gamed.accounts.valid_token) or a
# seat's resume token (24). Clients check what they are given with it before sending it.
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,128}\Z")


def looks_like_token(text: str) -> bool:
    """True for 16 to 128 letters, digits, ``_`` or ``-``: the shape of every gamed token."""
    return bool(TOKEN_SHAPE.match(text))


GUEST_PREFIX = "guest"  # default guest names are guest<N>; no account name may start with it
# The names the games give players who choose none (Combat's player<k>, Virtual Fight's team<t>,
# a records seat<n>): no account may be called so, or a guest would show under an account's name.
DEFAULT_NAME = re.compile(r"(?:player|team|seat)[0-9]+\Z", re.IGNORECASE)


class Refusal(enum.Enum):
    """Why a login, a name or a resume was refused; the value is the text a client is shown."""

    UNKNOWN_OR_WRONG = "unknown account or wrong token"
    REVOKED = "this account's token has been revoked"
    TOO_MANY = "too many failed logins from your address"
    NO_ACCOUNTS = "this server has no accounts (no records database)"
    GUESTS_OFF = "this server admits registered players only: send LOGIN <name> <token> first"
    NAME_REGISTERED = "that name is registered: send LOGIN <name> <token> to use it"
    NAME_IN_USE = "another player here uses that name just now"
    TOO_LATE = "log in or resume before you are seated, not during a game"
    ALREADY = "you are logged in already"
    UNKNOWN_RESUME = "unknown resume token"
    FINISHED = "the game of that resume token is over"
    NOT_AWAY = "that seat is not away (its player is connected)"
    NO_SEAT = "you have no seat in a game"
    HOSTED = "this seat is assigned by the daemon: a hosted bot plays under its own name"
    BANNED = "this account is banned from this server"


class LoginError(Exception):
    """A refused login, name or resume: ``refusal`` says why, ``detail`` adds words (the
    seconds to wait, the name), shown after the refusal's text."""

    def __init__(self, refusal: Refusal, detail: str = ""):
        self.refusal = refusal
        self.detail = detail
        super().__init__(self.text)

    @property
    def text(self) -> str:
        return self.refusal.value + (f" ({self.detail})" if self.detail else "")


@attrs.frozen
class Identity:
    """Who sits in a seat: ``kind`` is "person" or "bot" (an account: ``account_id`` set),
    "guest" (no token: shown as a guest, never rated) or "program" (started by the daemon itself:
    a computer player, an engine, an AI program)."""

    name: str
    kind: str = "guest"
    account_id: int | None = None

    @property
    def guest(self) -> bool:
        return self.kind == "guest"

    @property
    def account(self) -> bool:
        return self.account_id is not None

    @property
    def rated(self) -> bool:
        """Only identified players are rated: accounts and the daemon's own programs."""
        return self.kind != "guest"

    @property
    def record_kind(self) -> str:
        """The kind kept in the records' seats: "player" (a person's account), "bot", "guest"
        or "program"."""
        return "player" if self.kind == "person" else self.kind

    def shown(self) -> str:
        """The name with what it is, for people: ``alice``, ``bob (guest)``."""
        return f"{self.name} (guest)" if self.guest else self.name


class LoginLimit:
    """Allows ``failures`` failed logins per client address within ``window`` seconds; more
    must wait until the oldest has aged out. Attempts still being checked count as failures
    (a thousand logins sent at once are not a thousand token checks). At most ``max_hosts``
    addresses are remembered; the one not heard of longest is forgotten first. Pure: time comes in."""

    def __init__(self, failures: int, window: float, max_hosts: int = 65_536):
        self.failures = failures
        self.window = window
        self.max_hosts = max_hosts
        self._failed: OrderedDict[str, list[float]] = OrderedDict()
        self._checking: dict[str, int] = {}

    def _recent(self, host: str, now: float) -> list[float]:
        times = self._failed.get(host)
        if times is None:
            return []
        while times and times[0] <= now - self.window:
            times.pop(0)
        if not times:
            del self._failed[host]
        return times

    def wait(self, host: str, now: float) -> float:
        if not self.failures:
            return 0.0
        times = self._recent(host, now)
        if len(times) + self._checking.get(host, 0) < self.failures:
            return 0.0
        if not times:  # only attempts still being checked: the earliest answer is a moment away
            return 1.0
        return max(times[0] + self.window - now, 0.001)

    def begin(self, host: str) -> None:
        self._checking[host] = self._checking.get(host, 0) + 1

    def end(self, host: str, now: float, failed: bool) -> None:
        left = self._checking.get(host, 1) - 1
        if left:
            self._checking[host] = left
        else:
            self._checking.pop(host, None)
        if failed and self.failures:
            times = self._failed.pop(host, [])
            times.append(now)
            del times[: -self.failures]  # only the newest `failures` ever matter
            self._failed[host] = times
            while len(self._failed) > self.max_hosts:
                self._failed.popitem(last=False)
