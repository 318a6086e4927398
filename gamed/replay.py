"""Moves' spectator states rebuilt by the rules instead of kept: what keeps the records small.

A game's replayer (``IGame.next_state``, gamed.registry) predicts the spectator state after a move
from the state before it and the move as stored (seat and move text). When a match is stored,
``compact`` compares each move's real state with the prediction and keeps only the difference, a
*patch* (``[]`` when the prediction is exact, which it is for nearly every move of every game but
Virtual Fight, whose move text does not say where the warriors went). ``rebuild`` runs the same
predictions from the match's initial state and applies the patches, so it gives back every state
exactly (the same JSON text) as the live game produced it. A state that cannot be predicted at all
(no previous state, a replayer that fails) is kept whole, and ``compact`` checks every patch by
applying it before it is trusted: no state is ever lost.

The patch format (JSON): a list of changes, each the path to a value (object keys, list indexes)
and its new value: ``[["warriors", 3, "x", 5], ["shots", []]]``; ``[[state]]`` replaces the whole
state. A path only names keys and indexes the prediction has, so an object keeps its keys' order.
The empty patch ``[]`` changes nothing.

Pure: no Twisted, no I/O. A replayer, once it has stored patches, must keep predicting what it
predicted then: a changed replayer gets a new version (``IGame.replay_version``), and a match is
rebuilt only by the version it was stored with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

NextState = Callable[[Any, "int | None", str], Any]  # (state before, seat, move text) -> state after

EMPTY = "[]"  # the patch of a move whose state the rules predict exactly


class ReplayError(Exception):
    """A stored match whose states cannot be rebuilt (a replayer that no longer predicts what it
    predicted when the match was stored); the message says which move."""


def dumps(value: Any) -> str:
    """The JSON text of a state as the records keep it (compact, non-ASCII kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def same(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same JSON text (so ``True`` is not ``1``, ``1.0`` is
    not ``1``, and an object's keys must come in the same order)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def diff(predicted: Any, actual: Any) -> list:
    """The patch that turns ``predicted`` into ``actual`` (``[]`` when they are the same)."""
    changes: list = []
    _diff(predicted, actual, [], changes)
    return changes


def _diff(predicted: Any, actual: Any, path: list, changes: list) -> None:
    if predicted is actual:
        return
    if type(predicted) is dict and type(actual) is dict and list(predicted) == list(actual):
        pairs = [(k, predicted[k], v) for k, v in actual.items()]
    elif type(predicted) is list and type(actual) is list and len(predicted) == len(actual):
        pairs = [(i, p, a) for i, (p, a) in enumerate(zip(predicted, actual))]
    else:
        if not same(predicted, actual):
            changes.append([*path, actual])
        return
    inner: list = []
    changed = 0
    for key, p, a in pairs:
        before = len(inner)
        _diff(p, a, [*path, key], inner)
        changed += len(inner) > before
    # Every value of the object or list changed: the whole of it is no longer than its changes.
    changes.extend([[*path, actual]] if changed and changed == len(pairs) and len(pairs) > 1 else inner)


def apply(predicted: Any, patch: list) -> Any:
    """``predicted`` with ``patch`` applied (``predicted`` itself is not changed; what the patch
    leaves alone is shared with it)."""
    for change in patch:
        if not isinstance(change, list) or not change:
            raise ReplayError(f"not a state patch: {dumps(patch)[:80]}")
        predicted = _put(predicted, change[:-1], change[-1])
    return predicted


def _put(value: Any, path: list, new: Any) -> Any:
    if not path:
        return new
    key, rest = path[0], path[1:]
    if type(value) is dict and type(key) is str and key in value:
        return {k: _put(v, rest, new) if k == key else v for k, v in value.items()}
    if type(value) is list and type(key) is int and 0 <= key < len(value):
        return [_put(v, rest, new) if i == key else v for i, v in enumerate(value)]
    raise ReplayError(f"a state patch's path {dumps(path)[:80]} is not in the state")


def predict(next_state: NextState, state: Any, seat: int | None, move: str) -> Any:
    """The replayer's prediction, or None when it has none (it failed: the state is kept whole)."""
    if state is None:
        return None
    try:
        return next_state(state, seat, move)
    except Exception:  # a replayer that cannot follow a move: the state is simply kept
        return None


def compact(
    next_state: NextState, initial_state: Any, moves: Sequence[tuple[int | None, str, Any]]
) -> list[tuple[Any, str | None]]:
    """For each move ``(seat, move text, state)``: what to keep, ``(state, None)`` (kept whole:
    no prediction, or a patch no smaller than the state) or ``(None, patch text)``; a move without
    a state keeps ``(None, None)``. Every patch is checked by applying it."""
    out: list[tuple[Any, str | None]] = []
    previous = initial_state
    for seat, move, state in moves:
        kept: tuple[Any, str | None] = (state, None)
        if state is not None:
            predicted = predict(next_state, previous, seat, move)
            if predicted is not None:
                patch = diff(predicted, state)
                if not patch:  # the prediction is the state (``diff`` compared them): the usual case
                    kept = (None, EMPTY)
                else:
                    text = dumps(patch)
                    if same(apply(predicted, json.loads(text)), state) and len(text) < len(dumps(state)):
                        kept = (None, text)
        out.append(kept)
        previous = state
    return out


def rebuild(
    next_state: NextState, initial_state: Any, moves: Sequence[tuple[int | None, str, Any, str | None]]
) -> list[Any]:
    """Every move's state from what ``compact`` kept: moves ``(seat, move text, state, patch)``."""
    states: list[Any] = []
    previous = initial_state
    for n, (seat, move, state, patch) in enumerate(moves, 1):
        if state is None and patch is not None:
            predicted = predict(next_state, previous, seat, move)
            if predicted is None:
                raise ReplayError(f"move {n} ({move!r}) cannot be replayed")
            state = apply(predicted, json.loads(patch))
        states.append(state)
        previous = state
    return states
