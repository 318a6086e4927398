"""``LADDER [<n>]`` and ``LADDER OFF``: the ladder command of the text games (docs/ladder.md).

Mixed into a game's line protocol (Kalaha, Connect Four), which provides ``service.ladder`` (a
gamed.ladder.service.Ladder, or None when the game has no ladder here), ``identity``,
``placement``, ``send_lines``, ``_error(code, text)``, ``wire.Code`` (its BAD_ARGUMENTS and
NOT_NOW), and two hooks: ``ladder_busy()`` (why it cannot wait just now, or None) and
``ladder_leave_lobby()`` (stop waiting anywhere else). The words and codes are the same in
every game: ``OK LADDER <n>``, ``WAIT waiting for a ladder opponent (rating <mu> +/- <half>)``,
``OK LADDER OFF``; ``ERROR 434`` for a guest, ``ERROR 435`` where there is no ladder,
``ERROR 433`` for a hosted bot.
"""

from __future__ import annotations

from gamed import ratings as skill
from gamed import textwire
from gamed.identity import Refusal
from gamed.ladder.service import LadderError

GUESTS_REFUSED = "the ladder is for registered players: send LOGIN <name> <token> first"
NO_LADDER = "this server runs no ladder for this game"


def waiting_line(rating: skill.Rating) -> str:
    """``WAIT waiting for a ladder opponent (rating 1500 +/- 980)``: the rating and its 95 % interval."""
    low, high = skill.interval(rating.mu, rating.sigma)
    return f"WAIT waiting for a ladder opponent (rating {rating.mu:.0f} +/- {(high - low) / 2:.0f})"


class LadderCommands:
    """The ``LADDER`` command for a text game's protocol (see the module docstring)."""

    def ladder_busy(self) -> str | None:
        """Why this connection cannot wait for the ladder now (in a game, ...), or None."""
        raise NotImplementedError

    def ladder_leave_lobby(self) -> None:
        """This connection waits for the ladder now: it stops waiting in the lobby."""
        raise NotImplementedError

    def on_ladder(self) -> bool:
        """True while this connection waits on the ladder."""
        ladder = getattr(self.service, "ladder", None)
        return ladder is not None and ladder.is_waiting(self)

    def leave_ladder(self) -> None:
        """Off the ladder (it asked for a table, an engine, took a seat back or left)."""
        ladder = getattr(self.service, "ladder", None)
        if ladder is not None:
            ladder.leave(self)

    def ladder_command(self, args: list[str]) -> None:
        code = self.wire.Code
        ladder = getattr(self.service, "ladder", None)
        usage = "usage: LADDER [<games at once>] | LADDER OFF"
        if len(args) > 1:
            return self._error(code.BAD_ARGUMENTS, usage)
        if args and args[0].upper() == "OFF":
            if ladder is not None and ladder.leave(self):
                return self.send_lines(["OK LADDER OFF"])
            return self._error(code.NOT_NOW, "you are not on the ladder")
        if args and not (args[0].isdigit() and len(args[0]) <= 3):
            return self._error(code.BAD_ARGUMENTS, usage)
        limit = int(args[0]) if args else 1
        if ladder is None:
            return self._error(textwire.LADDER_OFF, NO_LADDER)
        if self.placement is not None:
            return self._error(textwire.REFUSAL_CODES[Refusal.HOSTED], Refusal.HOSTED.value)
        identity = self.identity
        if identity is None or not identity.account:
            return self._error(textwire.LADDER_GUESTS, GUESTS_REFUSED)
        busy = self.ladder_busy()
        if busy is not None:
            return self._error(code.NOT_NOW, busy)
        if ladder.is_waiting(self):
            return self._error(code.NOT_NOW, "you are on the ladder already; LADDER OFF first")
        if not 1 <= limit <= ladder.rules.concurrency:
            return self._error(code.BAD_ARGUMENTS, f"ladder games at once must be 1 to {ladder.rules.concurrency}")
        self.ladder_leave_lobby()
        try:
            d = ladder.join(self, identity.account_id, identity.name, limit)
        except LadderError as e:  # pragma: no cover - checked above
            return self._error(code.NOT_NOW, str(e))
        # The rating is read from the records: hold this connection's next lines until the
        # answer is sent (unless it is there at once: resuming from inside this line would
        # handle the next one a call deeper).
        state = {"over": False, "held": False}

        def rated(rating: skill.Rating | None) -> None:
            if rating is not None and self.connected and not self.closing:
                with self.batch:
                    self.send_lines([f"OK LADDER {limit}", waiting_line(rating)])

        def over(_: object) -> None:
            state["over"] = True
            if state["held"]:
                self._resume("ladder")

        d.addCallback(rated)
        d.addErrback(lambda f: self._log.failure("answering LADDER for {peer} failed", f, peer=self.peer))
        d.addBoth(over)
        if not state["over"]:
            state["held"] = True
            self._pause("ladder")
