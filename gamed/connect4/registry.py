"""Finding Connect Four engines and driving any of them asynchronously (connect-four §2).

Engines are the built-in Python ones (:mod:`gamed.connect4.engines`) plus every
``<engines folder>/<name>/engine.so`` (the folder is given by the caller). Each is described by an
:class:`EngineInfo` (name, description, level names); a native engine is asked through its host
process (``desc`` and ``enum_levels`` 0.. until refused).

:class:`AsyncEngine` is the uniform facade a game drives: every operation returns a Deferred.
For a Python engine, ``auto_move`` (the search) runs through an injected ``think`` callable
-- by default :func:`thread_think`, i.e. ``deferToThreadPool`` on the reactor's pool -- so the
reactor thread is never blocked; the cheap operations run inline. For a native engine every
operation is already a Deferred of the host process (failures are ``EngineFailed``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Protocol

import attr
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool

from gamed.connect4 import engines as builtin
from gamed.connect4.native_engine import EngineFailed, NativeEngine

ENGINE_FILE = "engine.so"
MAX_LEVELS = 100  # a native engine that names more levels than this is cut short

Think = Callable[[Callable[[], int]], Deferred]


def run_inline(work: Callable[[], int]) -> Deferred:
    """Run the search at once on the calling thread (unit tests only: blocks the reactor)."""
    return defer.maybeDeferred(work)


def thread_think(reactor) -> Think:
    """A ``think`` that runs the search in the reactor's thread pool (never blocks the reactor)."""

    def think(work: Callable[[], int]) -> Deferred:
        return deferToThreadPool(reactor, reactor.getThreadPool(), work)

    return think


@attr.s(frozen=True, auto_attribs=True)
class EngineInfo:
    """One engine that can be played: ``kind`` is "python" or "native" (then ``path`` is set)."""

    name: str
    description: str
    levels: tuple[str, ...]
    kind: str
    path: str | None = None
    error: str | None = None  # set if a native engine could not be asked (it is then unusable)

    @property
    def usable(self) -> bool:
        return self.error is None and bool(self.levels)


class UnknownEngine(KeyError):
    """No engine by that name (``str(e.args[0])`` says which ones exist)."""


def native_libraries(engines_dir: str | None) -> dict[str, str]:
    """``{name: path}`` of every ``engines_dir/<name>/engine.so`` (empty without a folder)."""
    found: dict[str, str] = {}
    if not engines_dir or not os.path.isdir(engines_dir):
        return found
    for name in sorted(os.listdir(engines_dir)):
        path = os.path.join(engines_dir, name, ENGINE_FILE)
        if os.path.isfile(path) and name not in builtin.engine_names():
            found[name] = os.path.abspath(path)
    return found


def python_info(name: str) -> EngineInfo:
    engine = builtin.create_engine(name)
    return EngineInfo(name, engine.description(), tuple(builtin.engine_levels(engine)), "python")


@defer.inlineCallbacks
def native_info(reactor, name: str, path: str, **engine_options):
    """Ask a native engine's host for its description and levels; the host is closed after."""
    engine = NativeEngine(reactor, path, **engine_options)
    try:
        desc = yield engine.desc()
        levels = []
        while len(levels) < MAX_LEVELS:
            level = yield engine.enum_levels(len(levels))
            if level is None:
                break
            levels.append(level)
        return EngineInfo(name, desc, tuple(levels), "native", path)
    except EngineFailed as e:
        return EngineInfo(name, "", (), "native", path, error=e.reason)
    finally:
        yield engine.close()


@defer.inlineCallbacks
def discover_engines(reactor, engines_dir: str | None = None, **engine_options):
    """Deferred list of :class:`EngineInfo`: the built-in engines, then the native ones by name."""
    infos = [python_info(name) for name in builtin.engine_names()]
    for name, path in native_libraries(engines_dir).items():
        infos.append((yield native_info(reactor, name, path, **engine_options)))
    return infos


class AsyncEngine(Protocol):
    """What a game drives: the engine operations a match needs, each returning a Deferred."""

    name: str

    def new_game(self, width: int, height: int) -> Deferred: ...

    def play_move(self, player: int, column: int) -> Deferred: ...

    def auto_move(self, player: int, level: int) -> Deferred: ...

    def end_game(self) -> Deferred: ...

    def close(self) -> Deferred: ...

    def abort(self, reason: str = ...) -> Deferred: ...


class PythonAsyncEngine:
    """A Python :class:`~gamed.connect4.engines.IEngine` behind Deferreds; the search via ``think``.

    Only one operation is outstanding at a time (the match waits for each), so the engine object
    is touched by one thread at a time.
    """

    def __init__(self, name: str, engine, think: Think):
        self.name = name
        self.engine = engine
        self.think = think

    def new_game(self, width: int, height: int) -> Deferred:
        return defer.maybeDeferred(self.engine.new_game, width, height)

    def play_move(self, player: int, column: int) -> Deferred:
        return defer.maybeDeferred(self.engine.play_move, player, column)

    def auto_move(self, player: int, level: int) -> Deferred:
        return self.think(lambda: self.engine.auto_move(player, level))

    def end_game(self) -> Deferred:
        return defer.maybeDeferred(self.engine.end_game)

    def close(self) -> Deferred:
        return defer.succeed(None)

    def abort(self, reason: str = "engine work cancelled") -> Deferred:
        """Give up the engine now; a search running in a thread finishes unseen (its result is
        dropped) since Python threads cannot be interrupted."""
        return defer.succeed(None)


class NativeAsyncEngine:
    """A :class:`NativeEngine` (already asynchronous) under the facade's names."""

    def __init__(self, name: str, engine: NativeEngine):
        self.name = name
        self.engine = engine

    def new_game(self, width: int, height: int) -> Deferred:
        return self.engine.new_game(width, height)

    def play_move(self, player: int, column: int) -> Deferred:
        return self.engine.play_move(player, column)

    def auto_move(self, player: int, level: int) -> Deferred:
        return self.engine.auto_move(player, level)

    def end_game(self) -> Deferred:
        return self.engine.end_game()

    def close(self) -> Deferred:
        return self.engine.close()

    def abort(self, reason: str = "engine work cancelled") -> Deferred:
        """End the host now; its pending and later calls fail with ``reason``."""
        return self.engine.kill(reason)


def open_engine(
    reactor,
    name: str,
    engines_dir: str | None = None,
    *,
    think: Think | None = None,
    rng: random.Random | None = None,
    **engine_options,
):
    """A fresh :class:`AsyncEngine` for engine ``name``; :class:`UnknownEngine` if none."""
    if name in builtin.engine_names():
        return PythonAsyncEngine(
            name, builtin.create_engine(name, rng=rng), think or thread_think(reactor)
        )
    natives = native_libraries(engines_dir)
    if name in natives:
        return NativeAsyncEngine(name, NativeEngine(reactor, natives[name], **engine_options))
    known = builtin.engine_names() + list(natives)
    raise UnknownEngine(f"no engine named {name!r}; known: {', '.join(known)}")
