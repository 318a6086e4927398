"""In-memory Virtual Fight AIs and observers for unit tests: StringTransport connections to a
FightService on a Clock."""

from __future__ import annotations

import attrs
from twisted.internet.task import Clock

from gamed.config import FightConfig, Limits
from gamed.fight.rules import Battle, Dir, FightMap, Warrior, parse_map
from gamed.fight.service import FightService
from gamed.players import Players
from tests.memclient import Client

__all__ = ["Client", "ai", "arena", "gui", "make_service", "open_map", "place", "start_game"]


def make_service(
    clock: Clock | None = None, fmap: FightMap | None = None, players: Players | None = None, **settings
) -> FightService:
    """A FightService on a Clock; keyword arguments set FightConfig or Limits fields
    (``time_control`` sets FightConfig.clock); ``players`` (with accounts) is the daemon's Players
    (default: guests only, no accounts).

    The pair delay defaults to 0 here, so a game starts as soon as enough AIs are connected, and
    so does the observers' gathering interval, so each event reaches them at once.
    """
    limit_names = {a.name for a in attrs.fields(Limits)}
    fight = {k: v for k, v in settings.items() if k not in limit_names}
    limits = {k: v for k, v in settings.items() if k in limit_names}
    if "time_control" in fight:
        fight["clock"] = fight.pop("time_control")
    fight.setdefault("pair_delay", 0)
    fight.setdefault("gui_interval", 0)
    return FightService(FightConfig(**fight), Limits(**limits), clock or Clock(), fmap, players=players)


def ai(service: FightService, *lines: str) -> Client:
    """A new AI connection (its OK not read yet), which first sends ``lines`` (e.g. NAME&x)."""
    client = Client(service, factory=service.ai_port_factory())
    if lines:
        client.send(*lines)
    return client


def gui(service: FightService) -> Client:
    """A new observer connection on the GUI port."""
    return Client(service, factory=service.gui_port_factory())


def start_game(service: FightService, teams: int = 2) -> list[Client]:
    """``teams`` AIs connected until their game started; every AI's lines read (OK ... READY)."""
    clients = [ai(service) for _ in range(teams)]
    for c in clients:
        lines = c.read()
        assert lines[0] == "OK" and lines[-1] == "READY", lines
    return clients


def open_map(rows: int, cols: int, teams: dict[int, list[tuple[int, int]]], walls=()) -> FightMap:
    """A validated map from explicit squares; ``teams`` maps team -> its five start squares
    (a two-team map must be point-symmetric, as the loader requires)."""
    grid = [["."] * cols for _ in range(rows)]
    for r, c in walls:
        grid[r][c] = "#"
    for team, squares in teams.items():
        for r, c in squares:
            grid[r][c] = str(team)
    return parse_map("\n".join("".join(row) for row in grid), "test")


def arena(rows: int = 10, cols: int = 10, walls=()) -> FightMap:
    """A point-symmetric two-team map: team 0 starts on row 0 (columns 0-4), team 1 on the last
    row (the last five columns); ``walls`` are mirrored so the map stays valid."""
    mirrored = set(walls) | {(rows - 1 - r, cols - 1 - c) for r, c in walls}
    return open_map(
        rows,
        cols,
        {0: [(0, c) for c in range(5)], 1: [(rows - 1, cols - 1 - c) for c in range(5)]},
        mirrored,
    )


def place(battle: Battle, team: int, number: int, square: tuple[int, int], facing: Dir | None = None) -> Warrior:
    """Put a living warrior on ``square`` (which must be free), optionally turning it."""
    warrior = battle.warriors[team][number]
    assert battle.occupied.get(warrior.square) is warrior
    assert not battle.blocked(square), f"{square} is not free"
    del battle.occupied[warrior.square]
    warrior.row, warrior.col = square
    battle.occupied[square] = warrior
    if facing is not None:
        warrior.facing = facing
    return warrior
