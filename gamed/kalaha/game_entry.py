"""Kalaha in the game registry (gamed.registry): its section, port and options."""

from __future__ import annotations

from typing import Any

from gamed.registry import Game, GameContext, GameOption, GamePort

FIRST_CHOICES = ("arrival", "alternate", "random")


def _validate(k: Any) -> None:
    from gamed.config import ConfigError, flag_policy, no_setup
    from gamed.timecontrol import FlagPolicy

    if k.first not in FIRST_CHOICES:
        raise ConfigError(f"kalaha.first must be one of {', '.join(FIRST_CHOICES)}, not {k.first!r}")
    flag_policy("kalaha", k.on_flag, (FlagPolicy.LOSE, FlagPolicy.DEFAULT))
    no_setup("kalaha", k.clock)


def _stones(final_state: Any) -> list[float] | None:
    """The stones in each store at the end (all 72 once a game ends normally)."""
    if isinstance(final_state, dict):
        stores = final_state.get("stores")
        if isinstance(stores, list) and all(isinstance(s, (int, float)) for s in stores):
            return [float(s) for s in stores]
    return None


def _service(ctx: GameContext):
    from gamed.kalaha.service import KalahaService

    kalaha = KalahaService(ctx.cfg.kalaha, ctx.limits, ctx.reactor, think=ctx.think, hub=ctx.hub, players=ctx.players,
                           ladder=ctx.cfg.ladder)
    return kalaha, {"kalaha": kalaha.port_factory}


GAME = Game(
    name="kalaha",
    title="Kalaha",
    section="kalaha",
    settings="gamed.config:KalahaConfig",
    seats=(2, 2),
    board="kalaha",
    service=_service,
    check=_validate,
    scored=_stones,
    replayer="gamed.kalaha.rules:next_state",
    replay_version="kalaha/1",
    generic="gamed.kalaha.generic:host",
    ports=(
        GamePort(
            "kalaha", "listen", "kalaha", "gamed.socket",
            "Listen for Kalaha on this strports description; repeatable; 'none' = off [default: tcp:4600]",
        ),
    ),
    options=(
        GameOption("kalaha-move-time", "move_time", "Seconds per Kalaha move (running out loses), 0 = no limit [default: {default:g}]"),
        GameOption("kalaha-clock", "clock", "Kalaha's time control (docs/clocks.md: 60s, 5m+2s, 5m+2s,move=30s,game=1h); unset = --kalaha-move-time per move"),
        GameOption("kalaha-strikes", "strikes", "Protocol errors that lose a Kalaha game (connections with drawings off; people too with strike_people in the config), 0 = never [default: {default}]"),
        GameOption("kalaha-first", "first", "Who plays A and moves first: arrival, alternate or random [default: arrival]"),
        GameOption("kalaha-pair-delay", "pair_delay", "Seconds a new Kalaha connection has to choose a table before it is paired [default: {default:g}]"),
        GameOption("kalaha-computer", "computer", "Allow the built-in computer player: yes or no [default: yes]"),
        GameOption("kalaha-board", "board", "Send board drawings unless a client switches them off: yes or no [default: yes]"),
    ),
)
