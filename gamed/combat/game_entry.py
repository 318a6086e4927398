"""GGZ Combat in the game registry (gamed.registry): its section, binary and text ports, options."""

from __future__ import annotations

import pathlib
from typing import Any

from gamed.registry import Game, GameContext, GameOption, GamePort

REJOIN_CHOICES = ("address", "anyone")  # [combat] rejoin: who may take an away seat of the binary port


def _validate(combat: Any) -> None:
    from gamed.config import ConfigError, flag_policy
    from gamed.timecontrol import FlagPolicy

    flag_policy("combat", combat.on_flag, (FlagPolicy.LOSE,))

    if not 2 <= combat.seats <= 15:
        raise ConfigError(f"combat.seats must be 2 to 15, not {combat.seats}")
    if combat.rejoin not in REJOIN_CHOICES:
        raise ConfigError(f"combat.rejoin must be one of {', '.join(REJOIN_CHOICES)}, not {combat.rejoin!r}")


def _service(ctx: GameContext):
    from gamed.combat.service import CombatService

    cfg = ctx.cfg
    records = pathlib.Path(cfg.combat.records) if cfg.combat.records else None
    ais = {ai.name: ai for ai in cfg.stratego.ai}
    combat = CombatService(
        ctx.limits, ctx.reactor, cfg.combat, ais=ais, records_dir=records, hub=ctx.hub, players=ctx.players, grace=cfg.grace("combat")
    )
    return combat, {"combat": combat.port_factory, "combat-text": combat.text_port_factory}


GAME = Game(
    name="combat",
    title="Combat",
    section="combat",
    settings="gamed.config:CombatConfig",
    seats=(2, 15),
    board="stratego",
    replayer="gamed.stratego.rules:next_state",
    replay_version="combat/1",
    service=_service,
    check=_validate,
    ports=(
        GamePort(
            "combat", "listen", "combat", "gamed-combat.socket",
            "Listen for GGZ Combat clients (binary protocol 10); repeatable; 'none' = off [default: tcp:5688]",
            bots=False,  # no text lines: a bot that connects itself logs in on the handshake port
        ),
        GamePort(
            "combat-text", "text_listen", "combat handshake", "gamed-combat-text.socket",
            "Listen for GGZ Combat clients that start with the text handshake; repeatable; 'none' = off [default: tcp:5689]",
        ),
    ),
    options=(
        GameOption("combat-seats", "seats", "Seats per GGZ Combat table, 2 to 15 [default: {default}]"),
        GameOption("combat-move-time", "move_time", "Seconds per Combat move, 0 = no limit [default: {default:g}]"),
        GameOption("combat-clock", "clock", "Combat's time control (docs/clocks.md: 10m, 30m+10s,setup=5m); unset = --combat-move-time"),
        GameOption("combat-rejoin-grace", "rejoin_grace", "Seconds a seat that dropped during a Combat game is kept for its return, then it loses; 0 = it loses at once [default: the [players] grace]"),
        GameOption("combat-records", "records", "Directory where each finished Combat game is also appended to results.jsonl (an export: the records database keeps every game); '' = none [default: '']"),
    ),
)
