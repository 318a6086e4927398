"""The seat interface of the UCC referee (``ISeat``), and which seats provide it.

A seat is one side of a match (ucc-stratego §12.1): ``ProgramSeat`` (an AI program on the
daemon's reactor, ``gamed.stratego.process``), ``PipeSeat`` (an AI program in gamed-stratego's
own loop, ``gamed.stratego.pipes``), ``ConsoleSeat`` (a person at the console,
``gamed.stratego.console``) and ``ReplaySeat`` (a replayed ``-o`` log, ``gamed.stratego.referee``).
The last three are declared here rather than where they are defined: their modules are on the
start-up path of ``gamed-stratego``, which imports no zope.interface (docs/performance.md).
The two program seats share their dialog with the program (``gamed.stratego.dialog.ProgramDialog``).
"""

from __future__ import annotations

from zope.interface import Attribute, Interface, classImplements

from gamed.stratego.console import ConsoleSeat
from gamed.stratego.pipes import PipeSeat
from gamed.stratego.referee import ReplaySeat


class ISeat(Interface):
    """One side of a match: an AI program, a person, a replayed log or a connection.

    The methods that wait return an awaitable that the referee awaits: a Deferred for a seat on
    the reactor, a ``pipes.Waiter`` for a seat in gamed-stratego's loop, or ``referee.Ready``
    (or a coroutine) for one that needs no waiting of its own. The referee is driven by the same
    kind of driver as its seats."""

    name = Attribute("The NAME in the result line and the log (§2.5).")
    argument = Attribute("The player argument as given: the OPPONENT shown to the other side.")
    valid = Attribute("False when the player cannot be started: BAD_SETUP before anything is asked.")
    human = Attribute("True for a person (the log then gives no executable hint).")

    def setup(colour: str, opponent: str):
        """Ask for the setup; gives the (up to 4) lines that arrived in time, in order."""

    def start() -> None:
        """RED only: the game begins (``START``)."""

    def move(view: list[str], acceptable):
        """Show the board view and ask for a reply; gives the reply text, None at EOF, or
        TIMEOUT. A person may be asked again until ``acceptable(reply)`` holds."""

    def tell(line: str) -> None:
        """A confirmation line (best effort; it reaches the program before its next query)."""

    def pause() -> None:
        """The other side is thinking (SIGSTOP the program's process group)."""

    def resume() -> None:
        """This side's turn (SIGCONT)."""

    def quit(result_line: str | None):
        """``QUIT <result line>`` (nothing when None: the operator quit), then end the player;
        gives None once it is gone."""

    def kill():
        """End the player now (shutdown, Ctrl-C): no grace period; gives None once it is gone."""


classImplements(ReplaySeat, ISeat)
classImplements(PipeSeat, ISeat)
classImplements(ConsoleSeat, ISeat)
