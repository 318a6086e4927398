"""Tournament openings in Virtual Fight: opening n seeds the teams' start squares (pure rules),
and a reserved table with an opening starts its game there, as an AI finds with ``POS``; the two
games of a pair (the seats swapped) start alike with the AIs in each other's places; an ordinary
table starts on the map's own squares."""

from __future__ import annotations

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from gamed.fight import rules
from gamed.fight.rules import default_map, opening_map, resolve_map
from gamed.identity import Identity
from gamed.observers import LiveHub
from gamed.seats import Placement
from tests.fight.harness import make_service, start_game
from tests.memstore import MemoryStore


def mirror(fmap, square):
    return fmap.rows - 1 - square[0], fmap.cols - 1 - square[1]


def test_opening_zero_is_the_map_and_the_others_are_seeded_point_symmetric_starts_in_each_teams_third():
    fmap = default_map()
    assert opening_map(fmap, 0) is fmap
    seen = set()
    for n in range(1, 41):
        m = opening_map(fmap, n)
        assert m == opening_map(fmap, n)  # a pure function of the number
        zero, one = m.starts
        assert m.walls == fmap.walls and m.name == fmap.name
        assert list(zero) == sorted(zero) and len(set(zero)) == rules.WARRIORS
        assert sorted(mirror(m, s) for s in zero) == list(one)  # both teams start alike
        assert not (set(zero) | set(one)) & fmap.walls
        assert all(c <= 7 for _, c in zero) and all(c >= 12 for _, c in one)  # each in its own third (of 20 columns)
        assert m.facing(0) is {rules.Dir.RIGHT: rules.Dir.LEFT, rules.Dir.LEFT: rules.Dir.RIGHT,
                               rules.Dir.UP: rules.Dir.DOWN, rules.Dir.DOWN: rules.Dir.UP}[m.facing(1)]
        # a valid map by the loader's own checks (point symmetry, reachability)
        grid = [list(row) for row in m.cell_rows()]
        for team, squares in enumerate(m.starts):
            for r, c in squares:
                grid[r][c] = str(team)
        assert rules.parse_map("\n".join("".join(row) for row in grid)).starts == m.starts
        seen.add(m.starts)
    assert len(seen) == 40 and fmap.starts not in seen


def test_a_map_of_more_teams_keeps_its_starts_and_bad_numbers_are_refused():
    four = resolve_map("four")
    assert opening_map(four, 3) is four
    for bad in (-1, 2.0, "1", None):
        with pytest.raises(ValueError):
            opening_map(default_map(), bad)


def placed(service, name, table):
    protocol = service.player_factory.buildProtocol(None)
    protocol.placement = Placement(Identity(name, "bot"), table)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def positions(protocol, transport) -> list[tuple[int, int]]:
    """What the AI's five warriors answer to POS."""
    transport.clear()
    protocol.dataReceived(b"".join(b"%d&POS\r\n" % n for n in range(rules.WARRIORS)))
    lines = transport.value().decode().split("\r\n")[:-1]
    return [tuple(int(x) for x in line.split(",")) for line in lines]


def play_reserved(service, clock, key, names, opening):
    service.reserve_table(key, list(names), opening)
    ais = {name: placed(service, name, key) for name in names}
    clock.advance(service.config.pair_delay)
    for protocol, transport in ais.values():
        assert transport.value().endswith(b"READY\r\n"), transport.value()
    return {name: positions(*ais[name]) for name in names}, ais


def test_both_games_of_a_pair_start_on_the_openings_squares_with_the_ais_swapped():
    clock = Clock()
    service = make_service(clock)
    first, ais1 = play_reserved(service, clock, "g1", ("ann", "bob"), 5)
    second, ais2 = play_reserved(service, clock, "g2", ("bob", "ann"), 5)
    expected = opening_map(service.map, 5).starts
    assert first == {"ann": list(expected[0]), "bob": list(expected[1])}
    assert second == {"bob": list(expected[0]), "ann": list(expected[1])}  # the starting places exchanged
    assert list(expected[0]) != list(service.map.starts[0])
    third, _ = play_reserved(service, clock, "g3", ("ann", "bob"), 6)
    assert third["ann"] == list(opening_map(service.map, 6).starts[0]) != first["ann"]


def test_a_table_without_an_opening_starts_on_the_maps_own_squares():
    clock = Clock()
    service = make_service(clock)
    reserved, _ = play_reserved(service, clock, "g1", ("ann", "bob"), None)
    assert reserved == {"ann": list(service.map.starts[0]), "bob": list(service.map.starts[1])}
    ordinary = start_game(service)
    (game,) = [g for g in service.games.values() if g.players[0] is ordinary[0].player]
    assert [[w.square for w in team] for team in game.battle.warriors] == [list(t) for t in service.map.starts]


def test_spectators_and_the_records_see_the_openings_start_squares():
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    service = make_service(clock)
    service.hub = hub
    play_reserved(service, clock, "g1", ("ann", "bob"), 2)
    (table,) = hub.tables.values()
    starts = opening_map(service.map, 2).starts
    assert table.options["opening"] == 2 and table.options["starts"] == [[list(s) for s in t] for t in starts]
    warriors = {(w["team"], w["id"]): (w["y"], w["x"]) for w in table.initial_state["warriors"]}
    assert warriors == {(t, n): s for t, team in enumerate(starts) for n, s in enumerate(team)}


def test_the_protocol_document_shows_opening_one_as_it_is():
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocols" / "virtual-fight.md"
    text = " ".join(doc.read_text().split())
    m = re.search(r"opening 1 starts team 0 at (.+?) and team 1 at (.+?)\.", text)
    shown = [[tuple(int(x) for x in sq.strip("` ").split(",")) for sq in part.split(", ")] for part in m.groups()]
    assert shown == [list(team) for team in opening_map(default_map(), 1).starts]
