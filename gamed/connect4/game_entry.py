"""Connect Four in the game registry (gamed.registry): its section, port and options."""

from __future__ import annotations

import re
from typing import Any

from gamed.registry import Game, GameContext, GameOption, GamePort


def _validate(c4: Any) -> None:
    from gamed.config import ConfigError, flag_policy, no_setup
    from gamed.timecontrol import FlagPolicy

    no_setup("connect4", c4.clock)
    flag_policy("connect4", c4.on_flag, (FlagPolicy.LOSE, FlagPolicy.DEFAULT))

    if not (4 <= c4.width <= 16 and 4 <= c4.height <= 16):
        raise ConfigError(f"connect4.width and connect4.height must be 4 to 16, not {c4.width}x{c4.height}")
    if c4.engine_time <= 0:
        raise ConfigError(f"connect4.engine_time must be more than 0 seconds, not {c4.engine_time}")
    if not 0 <= c4.engine_nice <= 19:
        raise ConfigError(f"connect4.engine_nice must be 0 to 19, not {c4.engine_nice}")
    if c4.engine_cpus not in ("auto", "all") and not re.fullmatch(r"[0-9]{1,4}(,[0-9]{1,4})*", c4.engine_cpus):
        raise ConfigError(f"connect4.engine_cpus must be auto, all or a list of CPU numbers like 1,2,3, not {c4.engine_cpus!r}")
    if c4.engine_games < 0 or c4.match_games < 1:
        raise ConfigError("connect4.engine_games must be 0 or more and connect4.match_games 1 or more")


def _service(ctx: GameContext):
    from gamed.connect4.service import Connect4Service

    connect4 = Connect4Service(
        ctx.cfg.connect4, ctx.limits, ctx.reactor, think=ctx.think, reactor=ctx.reactor, hub=ctx.hub, players=ctx.players,
        ladder=ctx.cfg.ladder,
    )
    return connect4, {"connect4": connect4.port_factory}


GAME = Game(
    name="connect4",
    title="Connect Four",
    section="connect4",
    settings="gamed.config:Connect4Config",
    seats=(2, 2),
    board="connect4",
    replayer="gamed.connect4.rules:next_state",
    replay_version="connect4/1",
    service=_service,
    check=_validate,
    generic="gamed.connect4.generic:host",
    ports=(
        GamePort(
            "connect4", "listen", "connect four", "gamed-connect4.socket",
            "Listen for Connect Four players and programs; repeatable; 'none' = off [default: tcp:4700]",
        ),
    ),
    options=(
        GameOption("connect4-move-time", "move_time", "Seconds per Connect Four move of a player, 0 = no limit [default: {default:g}]"),
        GameOption("connect4-clock", "clock", "Connect Four's time control (docs/clocks.md: 60s, 3m+2s); unset = --connect4-move-time"),
        GameOption("connect4-engines", "engines_dir", "Folder of Connect Four engines (<name>/engine.so); '' = built-in engines only [default: engines]"),
        GameOption("connect4-engine-time", "engine_time", "Seconds a Connect Four engine may think per move [default: {default:g}]"),
    ),
)
