"""One generic session's seat in a game of a game service, and what a game gives the generic port.

A game that can be played over the generic protocol has a host (``IGenericHost``, in its folder's
``generic.py``): it describes the game and seats a session in it (its lobby, a named table, its
computer). The seat the session gets is a ``GenericSeat`` subclass that is, to the game, one more
player of its own kind (a ``KalahaGame`` sees an ``IKalahaPlayer``), so a generic bot and a
person on telnet meet at the same table, and observers and records see a seat like any other.
The subclass turns the game's events into the generic messages with the helpers here, which
read the game's common rules interface (``gamed.play.IRules``): observations, text, legal
actions. An act the rules refuse is a strike of the game's own (its documented retry budget).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.logger import Logger
from zope.interface import Attribute, Interface

from gamed import play
from gamed.generic import wire


class PlayError(Exception):
    """A play request the host refuses: ``code`` is a wire error code."""

    def __init__(self, code: str, text: str):
        super().__init__(code, text)
        self.code = code
        self.text = text


class IGenericHost(Interface):
    """A game as the generic port offers it."""

    name = Attribute("The game's registry name: 'kalaha'.")
    rules = Attribute("Its gamed.play.IRules.")

    def describe() -> dict:
        """The game in the ``games`` reply: title, seats, options, opponents, engine levels."""

    def prepare(session: Any, request: dict) -> Callable[[], GenericSeat]:
        """Check that ``session`` can be seated as ``request`` (a checked ``play`` message) asks
        (raises PlayError naming why not); the callable returned seats it and returns its seat,
        waiting or playing already (the session says ``ok`` in between)."""

    def take_back(session: Any, token: str | None) -> GenericSeat | None:
        """The seat of ``token`` (or, with None, an away seat of the session's account) taken
        back by ``session``; None when there is none here. Raises LoginError for a token of this
        game that cannot be used."""


class _View:
    """What every message about one state says to one seat (or to all, in a game without hidden
    information), encoded once: the phase, who acts, the observation, the text; and, per
    acting seat, its legal actions."""

    __slots__ = ("state", "to_act", "head", "_actions", "legal")

    def __init__(self, rules: play.IRules, state: Any, seat: int | None):
        self.state = state
        to_act = self.to_act = rules.to_act(state)
        self.head = (
            f'"phase":"{rules.phase(state)}","to_act":[{",".join(map(str, to_act))}],'
            f'"observation":{wire.dumps(rules.observation(state, seat))},"text":{wire.dumps(rules.render(state, seat))}'
        )
        self._actions: dict[int, str] = {}
        self.legal: dict[int, play.Actions] = {}

    def actions(self, rules: play.IRules, state: Any, seat: int) -> str:
        encoded = self._actions.get(seat)
        if encoded is None:
            actions = self.legal[seat] = rules.legal_actions(state, seat)
            encoded = f',"actions":{wire.dumps(list(actions.strings))}'
            if not actions.complete:
                encoded += ',"complete":false'
            if actions.grammar:
                encoded += f',"grammar":{wire.dumps(actions.grammar)}'
            self._actions[seat] = encoded
        return encoded


# The views of the states sent last, by id (the entry keeps its state, so an id is not reused
# while it is here): every seat of a game is sent the same state one after the other.
_VIEWS: dict[tuple[int, int | None], _View] = {}
_VIEWS_KEPT = 256


def views(rules: play.IRules, state: Any, seat: int | None) -> _View:
    """The encoded view of ``state`` for ``seat`` (for everyone when the game hides nothing)."""
    if not rules.hidden:
        seat = None
    key = (id(state), seat)
    view = _VIEWS.get(key)
    if view is None or view.state is not state:
        if len(_VIEWS) >= _VIEWS_KEPT:
            _VIEWS.clear()
        view = _VIEWS[key] = _View(rules, state, seat)
    return view


class GenericSeat:
    """A session's place in one game: waiting for it, playing it, or done. Subclasses add the
    game's player interface and ``submit``, ``resign``, ``leave``, ``strike``."""

    _log = Logger()
    rules: play.IRules
    game_name = ""

    def __init__(self, session: Any):
        self.session = session
        self.identity = session.identity
        self.host = session.host
        self.game: Any = None
        self.seat = None  # the gamed.seats.Seat, once seated
        self.number: int | None = None
        self.turn = 0  # actions played in the game so far (every seat's), the "turn" of states
        self.state: Any = None  # the rules' state last sent
        self._asked: Any = None  # the state this seat was last asked to act in
        self._asked_actions: play.Actions | None = None  # ... and the actions it was sent
        self.done = False

    @property
    def connected(self) -> bool:
        return bool(self.session.connected) and not self.done

    @property
    def playing(self) -> bool:
        return self.game is not None and not self.done

    # --- messages, for subclasses -------------------------------------------------------------

    def send_started(self, game_id: int, number: int, names: list[str], options: dict, resumed: bool = False) -> None:
        self.number = number
        message = {"type": "started", "game": self.game_name, "id": game_id, "seat": number, "seats": names, "options": options}
        if resumed:
            message["resumed"] = True
        self.session.send(message)

    def send_state(self, state: Any, clock: dict | None = None, force: bool = False) -> None:
        """The seat's view of ``state``, with its legal actions when it acts in it. A state the
        seat was asked to act in already is not sent again (a refused act's error has the
        actions) unless ``force``."""
        rules = self.rules
        view = views(rules, state, self.number)
        acting = self.number in view.to_act
        if acting and state is self._asked and not force:
            return
        self.state = state
        parts = [
            f'{{"type":"state","game":"{self.game_name}","id":{self.game.id},"turn":{self.turn},',
            view.head,
        ]
        if clock is not None:
            parts.append(',"clock":')
            parts.append(wire.clock(clock))
        if acting:
            parts.append(view.actions(rules, state, self.number))
            self._asked = state
            self._asked_actions = view.legal[self.number]
        parts.append("}")
        self.session.send(wire.Encoded("".join(parts)))

    def send_event(self, event: str, seat: int, name: str, seconds: float | None = None, **more: Any) -> None:
        message = {"type": "event", "event": event, "seat": seat, "name": name, **more}
        if event == "away":
            message["seconds"] = seconds
        self.session.send(message)

    def send_ended(self, reason: str, text: str, scores: list[float] | None, state: Any = None) -> None:
        message: dict[str, Any] = {"type": "ended", "game": self.game_name, "id": self.game.id, "reason": reason,
                                   "text": text, "scores": scores}
        if state is not None:
            message["observation"] = self.rules.observation(state, self.number)
        self.done = True
        self.session.seat_ended(self, message)

    # --- the session's requests ----------------------------------------------------------------

    def act(self, answer: int | str, turn: int | None, request_id: Any = None) -> None:
        """The session's answer: resolved against the legal actions and submitted, or refused
        with the legal actions (and a strike of the game's)."""
        state = self.state
        try:
            if state is None:
                raise play.IllegalAction(play.NOT_YOUR_TURN, "the game has not started yet")
            if turn is not None and turn != self.turn:
                when = "is over" if turn < self.turn else "has not come"
                raise play.IllegalAction(play.NOT_YOUR_TURN, f"turn {turn} {when}; it is turn {self.turn}")
            actions = self._asked_actions
            if state is self._asked and actions is not None and type(answer) is int and 0 <= answer < len(actions.strings):
                action = actions.strings[answer]  # the move path: an index into what was sent
            else:
                action = play.resolve(self.rules, state, self.number, answer)
            self.submit(action)
        except play.IllegalAction as e:
            self.refused(e.reason, e.text, "act", request_id)

    def refused(self, code: str, text: str, for_: str | None, request_id: Any = None) -> None:
        """Send the error of a refused message while this seat plays: the legal actions when it
        acts, the retries left, and the strike (which may end the game)."""
        fields: dict[str, Any] = {}
        state = self.state
        acting = state is not None and self.number in self.rules.to_act(state)
        if acting:
            fields["legal"] = list(self.rules.legal_actions(state, self.number).strings)
        left = self.retries_left()
        fields["retries_left"] = left
        self.session.send(wire.error(code, text, for_, request_id, **fields))
        if left is not None:
            self.strike()

    # --- what a game's seat implements ---------------------------------------------------------

    def submit(self, action: str) -> None:
        """Play the resolved ``action`` in the game; raises play.IllegalAction."""
        raise NotImplementedError

    def resign(self) -> None:
        raise NotImplementedError

    def leave(self) -> None:
        """The session is gone or leaves: leave the lobby, or leave the game (its seat is away
        for the grace period, as any player's)."""
        raise NotImplementedError

    def retries_left(self) -> int | None:
        """Asked while a refused message is being answered: how many more this seat may send
        and still play on; 0 says this one loses the game. None: they cost nothing (no strikes
        in this game, or the game is not running)."""
        return None

    def strike(self) -> None:
        """Count a refused message (the game's strike; it may end the game)."""

    # --- ISeatHolder ---------------------------------------------------------------------------

    def seat_replaced(self, seat: Any) -> None:
        self.done = True
        self.game = self.seat = None
        self.session.seat_replaced(self)
