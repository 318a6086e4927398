"""Virtual Fight games feed the live hub: a table per game, one move per resolved turn with the
spectator state (walls, warriors, shots), the end stored with per-team scores."""

from __future__ import annotations

from twisted.internet.task import Clock

from gamed.config import FightConfig, Limits, PlayersConfig
from gamed.fight import rules
from gamed.fight.service import FightService
from gamed.observers import LiveHub
from gamed.players import Players
from tests.memaccounts import MemoryAccounts
from tests.memstore import MemoryStore
from tests.fight.harness import ai, arena, place


def make():
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    service = FightService(FightConfig(pair_delay=0, gui_interval=0), Limits(), clock, arena(), hub=hub)
    return clock, hub, store, service


def test_spectator_state_shows_walls_warriors_and_shots():
    fmap = arena(walls=[(4, 4)])
    battle = rules.Battle(fmap, 2)
    state = rules.spectator_state(battle, 0)
    assert (state["width"], state["height"], state["turn"], state["shots"]) == (10, 10, 0, [])
    assert state["walls"][4][4] == "#" and state["walls"][5][5] == "#" and state["walls"][0] == "." * 10
    first = state["warriors"][0]
    assert first == {"team": 0, "id": 0, "x": 0, "y": 0, "facing": first["facing"], "alive": True}
    assert len(state["warriors"]) == 10
    battle.execute(0, rules.Command(0, rules.Verb.SHOOT, rules.Dir.DOWN))
    resolution = battle.resolve()
    state = rules.spectator_state(battle, 1, resolution)
    assert state["shots"] == [{"team": 0, "id": 0, "from": [0, 0], "to": [0, rules.SHOT_RANGE]}]  # x, y


def test_a_game_is_a_live_table_and_a_stored_match():
    clock, hub, store, service = make()
    a = ai(service, "NAME&red")
    b = ai(service)
    a.read(), b.read()
    (table,) = hub.tables.values()
    assert table.id == "fight-1"
    # Without a login both are guests, named or not: shown as guests and never rated.
    assert [(s.name, s.rated, s.kind) for s in table.seats] == [("red", False, "guest"), ("team1", False, "guest")]
    assert table.initial_state["turn"] == 0 and table.options["map"] == "test"
    for t in range(2):
        a.send(*(f"{w}&NONE" for w in range(5)))
        b.send(*(f"{w}&NONE" for w in range(5)))
        a.read(), b.read()
    assert [(m.n, m.seat, m.move) for m in table.moves] == [(1, None, "turn 1"), (2, None, "turn 2")]
    assert table.state["turn"] == 2
    service.abort_games()
    (record,) = store.records
    assert (record.game, record.reason, record.rated, record.scores) == ("fight", "shutdown", False, (0.5, 0.5))
    assert len(record.moves) == 2


def test_web_spectators_lag_like_the_gui_observers():
    clock = Clock()
    hub = LiveHub(clock, MemoryStore())
    service = FightService(FightConfig(pair_delay=0, gui_interval=0, gui_lag=2), Limits(), clock, arena(), hub=hub)
    a, b = ai(service), ai(service)
    a.read(), b.read()
    (table,) = hub.tables.values()
    seen = []
    for t in range(3):
        a.send(*(f"{w}&NONE" for w in range(5)))
        b.send(*(f"{w}&NONE" for w in range(5)))
        a.read(), b.read()
        seen.append(len(table.moves))
    assert seen == [0, 0, 1]  # two turns behind
    service.abort_games()
    assert [m.move for m in table.moves] == ["turn 1", "turn 2", "turn 3"]  # released at the end


def named_pair(**settings):
    """A game between the AIs of the accounts red (team 0, a person) and blue (team 1, a bot),
    both logged in, so both seats are rated."""
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    accounts = MemoryAccounts()
    tokens = {"red": accounts.add("red"), "blue": accounts.add("blue", kind="bot")}
    players = Players(PlayersConfig(), accounts, clock)
    config = FightConfig(pair_delay=0.5, gui_interval=0, **settings)
    service = FightService(config, Limits(), clock, arena(), hub=hub, players=players)
    red, blue = (ai(service, f"LOGIN&{name}&{tokens[name]}") for name in ("red", "blue"))
    clock.advance(0.5)  # the pair delay, in which both named their teams
    assert red.read() == blue.read() == ["OK", "255", "READY"]
    return clock, store, service, red, blue


def test_a_disqualification_is_recorded_as_a_timeout_loss_with_a_winner():
    clock, store, service, red, blue = named_pair(turn_time=5, strikes=2)
    for _ in range(2):
        red.send(*(f"{w}&NONE" for w in range(5)))
        clock.advance(5)  # blue never finishes a turn
    assert blue.read()[-2:] == ["200", "GAMEOVER&LOSE"]
    assert red.read()[-2:] == ["200", "GAMEOVER&WIN"]
    (record,) = store.records
    assert (record.reason, record.scores, record.rated) == ("timeout", (1.0, 0.0), True)
    assert record.moves[-1].move == "turn 2: blue (team 1) disqualified after 2 timeouts in a row"


def test_logged_in_teams_are_rated_seats_of_their_accounts():
    clock, store, service, red, blue = named_pair()
    (table,) = service.hub.tables.values()
    assert [(s.name, s.rated, s.kind) for s in table.seats] == [("red", True, "player"), ("blue", True, "bot")]


def test_a_disconnect_without_grace_is_recorded_as_a_forfeit_won_by_the_team_that_stayed():
    clock, store, service, red, blue = named_pair(grace=0)
    red.send(*(f"{w}&NONE" for w in range(5)))
    blue.drop()
    assert red.read()[-2:] == ["200", "GAMEOVER&WIN"]
    (record,) = store.records
    assert (record.reason, record.scores, record.rated) == ("forfeit", (1.0, 0.0), True)
    assert record.moves[-1].move == "turn 1: blue (team 1) left"


def test_a_game_won_by_shooting_is_recorded_in_the_games_own_terms():
    clock, store, service, red, blue = named_pair()
    battle = service.games[1].battle
    for w in battle.warriors[1][:4]:
        battle._kill(w)
    place(battle, 1, 4, (2, 0))
    red.send("0&SHOOT&DOWN", *(f"{w}&NONE" for w in range(1, 5)))
    blue.send("4&NONE")
    assert red.read()[-3:] == ["200", "0&HIT&ENEMY", "GAMEOVER&WIN"]
    (record,) = store.records
    assert (record.reason, record.scores) == ("last team standing", (1.0, 0.0))


def test_a_game_where_everybody_dies_at_once_is_a_draw_by_killing():
    clock, store, service, red, blue = named_pair()
    battle = service.games[1].battle
    for team in (0, 1):
        for w in battle.warriors[team][1:]:
            battle._kill(w)
    place(battle, 0, 0, (4, 4))
    place(battle, 1, 0, (5, 4))
    red.send("0&SHOOT&DOWN")
    blue.send("0&SHOOT&UP")
    assert red.read()[-4:] == ["200", "0&HIT&ENEMY", "0&KILLED", "GAMEOVER&DRAW"]
    (record,) = store.records
    assert (record.reason, record.scores) == ("all warriors killed", (0.5, 0.5))
