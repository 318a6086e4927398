"""The generic port: JSON lines over TCP, one ``GenericSession`` per connection.

Thin: the lines are framed, limited and budgeted by the shared ``TextLineProtocol`` (the line
limit, non-text bytes, the idle timeout, the line rate, output back-pressure), parsed by
``gamed.generic.wire`` and handled by the session. See ``docs/protocols/generic.md``.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gamed.gameservice import PlayerFactory
from gamed.generic import wire
from gamed.generic.session import GenericSession, ISessionTransport
from gamed.textline import TextLineProtocol


@implementer(ISessionTransport)
class GenericProtocol(TextLineProtocol):
    """One generic client: a bot, or a person with ``nc`` and some patience."""

    _log = Logger()

    def __init__(self, service: Any, number: int):
        super().__init__(service.limits, service.clock, service.batch)
        self.service = service
        self.session = GenericSession(service.hosts, service.players, self, selftest=service.selftest)

    def __repr__(self) -> str:
        return f"<GenericProtocol {self.session.identity.name} {self.peer}>"

    # --- ISessionTransport ---------------------------------------------------------------------

    @property
    def host(self) -> str:
        peer = self.transport.getPeer() if self.transport is not None else None
        return str(getattr(peer, "host", "?"))

    def send(self, message: dict | wire.Encoded) -> None:
        self.note_activity()
        if type(message) is dict and message.get("type") == "error":
            self.service.errors[message["code"]] += 1
        self.send_lines([wire.encode(message)])

    def hold(self, d: Deferred) -> None:
        state = {"over": False, "held": False}

        def over(result: Any) -> Any:
            state["over"] = True
            if state["held"]:
                self._resume("login")
            return result

        d.addBoth(over)
        if not state["over"]:
            state["held"] = True
            self._pause("login")

    def close(self, reason: str, message: dict | None = None, routine: bool = False) -> None:  # type: ignore[override]
        super().close(reason, [] if message is None else [wire.encode(message)], routine)

    # --- TextLineProtocol ----------------------------------------------------------------------

    def on_connect(self) -> None:
        self.service.connected(self)
        self.send(self.session.hello())

    def on_line(self, text: str) -> None:
        probe = self.session.probe
        if probe is not None:
            probe.heard(text)  # a self-test reports the line as it came
        try:
            message = wire.parse(text)
        except wire.WireError as e:
            return self.session.refuse(e.code, e.text, None if e.for_ is None else {"type": e.for_})
        self.session.receive(message)

    def on_line_too_long(self) -> None:
        self.session.refuse(wire.LINE_TOO_LONG, f"line too long (the limit is {self.limits.max_line} bytes)")

    def on_garbage(self) -> None:
        self.session.refuse(wire.NOT_TEXT, "not ASCII text (write other characters as \\u escapes)")

    def on_idle(self) -> None:
        self.close("idle timeout", wire.bye(f"nothing happened for {self.limits.idle_timeout:g} s"))

    def on_internal_error(self) -> None:
        self.send(wire.error(wire.INTERNAL, "internal error; it has been logged"))

    def on_disconnect(self, reason: Failure) -> None:
        self.session.gone()
        self.service.disconnected(self)

    def shutdown(self) -> None:
        self.session.shutdown()

    def bye_lines(self, text: str) -> list[str]:
        return [wire.encode(wire.bye(text))]

    def notice_lines(self, text: str) -> list[str] | None:
        return [wire.encode({"type": "notice", "text": f"operator: {text}"})]


class GenericFactory(PlayerFactory):
    protocol = GenericProtocol
    prefix = "generic"
