"""Virtual Fight in the game registry (gamed.registry): its section, AI and GUI ports, options."""

from __future__ import annotations

from typing import Any

from gamed.registry import Game, GameContext, GameOption, GamePort


def _validate(f: Any) -> None:
    from gamed.config import ConfigError, flag_policy
    from gamed.timecontrol import FlagPolicy

    flag_policy("fight", f.on_flag, (FlagPolicy.PASS, FlagPolicy.LOSE))

    if not 2 <= f.teams <= 4:
        raise ConfigError(f"fight.teams must be 2 to 4, not {f.teams}")
    if f.max_turns < 1:
        raise ConfigError("fight.max_turns must be at least 1")
    if not 16 <= f.max_line <= 65_536:
        raise ConfigError(f"fight.max_line must be 16 to 65536 bytes, not {f.max_line}")
    if f.max_lines < 1:
        raise ConfigError("fight.max_lines must be at least 1")
    if f.gui_interval > 10:
        raise ConfigError(f"fight.gui_interval must be at most 10 seconds, not {f.gui_interval:g}")
    if f.gui_buffer < 4096:
        raise ConfigError(f"fight.gui_buffer must be at least 4096 bytes, not {f.gui_buffer}")
    if f.gui_token and not all(33 <= ord(ch) < 127 and ch != "&" for ch in f.gui_token):
        raise ConfigError("fight.gui_token must be printable ASCII without blanks or '&'")


def _check_map(settings: Any):
    """The map the games are played on, read before anything listens (ConfigError if unusable)."""
    from gamed.config import ConfigError
    from gamed.fight.rules import MapError, resolve_map

    try:
        fight_map = resolve_map(settings.map)
    except MapError as e:
        raise ConfigError(f"fight.map: {e}") from None
    if fight_map.teams < settings.teams:
        raise ConfigError(
            f"fight.map: {fight_map.name} has start squares for {fight_map.teams} teams, "
            f"but fight.teams is {settings.teams}"
        )
    return fight_map


def _service(ctx: GameContext):
    from gamed.fight.service import FightService

    fight = FightService(ctx.cfg.fight, ctx.limits, ctx.reactor, ctx.prepared, hub=ctx.hub, players=ctx.players)
    return fight, {"fight": fight.ai_port_factory, "fight-gui": fight.gui_port_factory}


GAME = Game(
    name="fight",
    title="Virtual Fight",
    section="fight",
    settings="gamed.config:FightConfig",
    seats=(2, 4),
    board="fight",
    replayer="gamed.fight.rules:next_state",
    replay_version="fight/1",
    service=_service,
    check=_validate,
    reasons={"timeout": "{loser} disqualified"},  # too many timeouts in a row
    before=_check_map,
    ports=(
        GamePort(
            "fight", "listen", "virtual fight", "gamed-fight.socket",
            "Listen for Virtual Fight AIs on this strports description; repeatable; 'none' = off [default: tcp:4500]",
        ),
        GamePort(
            "fight-gui", "gui_listen", "virtual fight GUI", "gamed-fight-gui.socket",
            "Listen for Virtual Fight observers (GUIs); repeatable; 'none' = off [default: tcp:4550]",
            plays=False,  # the GUI port alone serves no game
        ),
    ),
    options=(
        GameOption("fight-teams", "teams", "Teams per Virtual Fight game, 2 to 4 [default: {default}]"),
        GameOption("fight-map", "map", "Virtual Fight map: a shipped map (default, four) or a map file [default: default]"),
        GameOption("fight-turn-time", "turn_time", "Seconds per Virtual Fight turn, 0 = no limit [default: {default:g}]"),
        GameOption("fight-clock", "clock", "Virtual Fight's time control (docs/clocks.md: 5s, 1m+2s,move=5s,setup=30s); unset = --fight-turn-time"),
        GameOption("fight-max-turns", "max_turns", "Turns after which a Virtual Fight game ends [default: {default}]"),
        GameOption("fight-strikes", "strikes", "Timeouts in a row that disqualify an AI, 0 = never [default: {default}]"),
        GameOption("fight-pair-delay", "pair_delay", "Seconds a new AI has to send NAME/TABLE before it is queued [default: {default:g}]"),
        GameOption("fight-lobby-timeout", "lobby_timeout", "Seconds an AI may wait for a game, 0 = forever [default: {default:g}]"),
        GameOption("fight-max-lines", "max_lines", "Lines an AI may send in one turn [default: {default}]"),
        GameOption("fight-gui-token", "gui_token", "Observers must send AUTH&<token> first [default: none]"),
        GameOption("fight-gui-lag", "gui_lag", "Turns observers are kept behind the game [default: {default}]"),
        GameOption("fight-gui-buffer", "gui_buffer", "Bytes an observer may leave unread before it is dropped [default: {default}]"),
        GameOption("fight-gui-interval", "gui_interval", "Seconds observer events are gathered before they are sent, 0 = at once [default: {default:g}]"),
        GameOption("fight-gui-idle-timeout", "gui_idle_timeout", "Seconds an observer may send nothing while no event reaches it (one following a game is not idle), 0 = never [default: {default:g}]"),
    ),
)
