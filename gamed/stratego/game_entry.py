"""Stratego in the game registry (gamed.registry): AI programs the daemon runs, no ports."""

from __future__ import annotations

from typing import Any

from gamed.registry import Game, GameContext


def _validate(st: Any) -> None:
    from gamed.config import ConfigError

    if st.rounds and len(st.ai) < 2:
        raise ConfigError("stratego.rounds needs at least two AI programs in [stratego.ai.<name>]")
    if st.games < 2 or st.games % 2:
        raise ConfigError(f"stratego.games must be an even number >= 2 (both colours equally often), not {st.games}")
    if st.concurrency < 1:
        raise ConfigError("stratego.concurrency must be at least 1")


def _service(ctx: GameContext):
    from gamed.stratego.service import StrategoService

    return StrategoService(ctx.cfg.stratego, ctx.limits, ctx.reactor, hub=ctx.hub), {}


GAME = Game(
    name="stratego",
    title="Stratego",
    section="stratego",
    settings="gamed.config:StrategoConfig",
    seats=(2, 2),
    board="stratego",
    replayer="gamed.stratego.referee:next_state",
    replay_version="stratego/1",
    generic="gamed.stratego.generic:host",
    service=_service,
    check=_validate,
    on=lambda settings: bool(settings.ai),  # it runs when AI programs are registered
)
