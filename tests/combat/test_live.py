"""GGZ Combat feeds the live hub: a table per game once play starts (logged-in players and programs
rated, guests — ``player<k>`` defaults and NAMEs — not), every move and attack with the spectator state of the rules
layer, the end stored as a match (a forfeiting seat loses; abandoned games unrated). A hypothesis
property plays random legal games through the real service: no state reported while the game runs
shows the type of a unit that was not revealed to every seat in combat, every unit that was is
shown, and the final state shows every unit."""

from __future__ import annotations

import random

from hypothesis import event, given
from hypothesis import strategies as st
from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.maps import shipped_maps
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits, PlayersConfig
from gamed.observers import LiveHub
from gamed.players import Players
from gamed.stratego import rules
from gamed.stratego.rules import EMPTY, Opt, Unit
from tests.combat.test_protocol import DEFAULT, Player, TextPlayer, placement
from tests.combat.test_table import SECRECY_OPTS, legal_moves, with_options
from tests.memaccounts import MemoryAccounts
from tests.memstore import MemoryStore


def make(move_time: float = 0, rejoin_grace: float = 120, **config):
    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    config = CombatConfig(move_time=move_time, rejoin_grace=rejoin_grace, **config)
    players = Players(PlayersConfig(), MemoryAccounts(), clock)
    service = CombatService(Limits(idle_timeout=0), clock, config, rng=random.Random(1), hub=hub, players=players)
    return clock, hub, store, service


def start(service, alice, bob, options=DEFAULT):
    alice.send(wire.HostOptions.of(options))
    if not options.options & Opt.RANDOM_SETUP:
        alice.send(wire.MsgSetup(wire.write_setup(options, 0, placement(0))))
        bob.send(wire.MsgSetup(wire.write_setup(options, 1, placement(1))))
    alice.read()
    bob.read()


def named(service, name):
    """A player of the handshake port logged in as the account ``name`` (registered now)."""
    token = service.players.accounts.add(name)
    p = TextPlayer(service)
    p.say(f"LOGIN {name} {token}", "PLAY")
    assert p.lines() == [f"OK LOGIN {name}", "OK PLAY: binary protocol follows"]
    return p


def guest(service, name):
    p = TextPlayer(service)
    p.say(f"NAME {name}", "PLAY")
    p.lines()
    return p


# --- the rules function ---------------------------------------------------------------------


def test_spectator_state_hides_units_until_combat_shows_them():
    game = rules.CombatGame(rules.SMALL_LAYOUT, rules.SMALL_ARMY, 2)
    # Small map: seat 0's zone holds (0,0),(1,0),(0,1),(3,3),(4,3),(4,4); seat 1's the others.
    game.board.place(0, 0, Unit.FLAG)
    game.board.place(1, 0, Unit.MARSHAL)
    game.board.place(5, 0, Unit.SPY)
    game.board.place(4, 1, Unit.FLAG)
    game.board.place(9, 1, Unit.MARSHAL)
    game.board.place(3, 1, Unit.MARSHAL)
    state = rules.spectator_state(game)
    assert state["width"] == state["height"] == 5 and state["last"] is None
    assert state["cells"][0][:2] == [{"owner": 0, "unit": None}, {"owner": 0, "unit": None}]
    assert state["cells"][2][2] == "lake", "an off-map cell is not a place to stand either"
    assert state["cells"][1][1] is None
    game.request_move(0, 1, 2)  # marshal (1,0) -> (2,0)
    game.request_move(1, 9, 14)  # marshal (4,1) -> (4,2)
    game.request_move(0, 2, 3)  # marshal attacks marshal at (3,0): both die
    state = rules.spectator_state(game)
    assert state["cells"][0][2] is None and state["cells"][0][3] is None and state["last"] == [[2, 0], [3, 0]]
    game.request_move(1, 14, 9)
    game.request_move(0, 5, 6)  # spy (0,1) -> (1,1)
    game.request_move(1, 9, 14)
    game.request_move(0, 6, 7)  # the spy walks on, hidden
    assert rules.spectator_state(game)["cells"][1][2] == {"owner": 0, "unit": None}
    over = rules.spectator_state(game, over=True)
    assert over["cells"][1][2] == {"owner": 0, "unit": "spy"} and over["cells"][0][0] == {"owner": 0, "unit": "flag"}


def test_a_survivor_stays_revealed_as_it_moves_but_not_under_silent_options():
    for options, shown in ((Opt.NONE, True), (Opt.SILENT_OFFENSE, False), (Opt.UNKNOWN_VICTOR, False)):
        game = rules.CombatGame(rules.DEFAULT_LAYOUT, rules.DEFAULT_ARMY, 2, options)
        game.board.place(0, 0, Unit.FLAG)
        game.board.place(99, 1, Unit.FLAG)
        game.board.place(30, 0, Unit.GENERAL)
        game.board.place(40, 1, Unit.SCOUT)
        game.board.place(69, 1, Unit.SCOUT)
        result = game.request_move(0, 30, 40)  # the general takes the scout
        assert rules.spectator_move(game, result) == ("0,3x0,4 general>scout: kills" if shown else "0,3x0,4 ?>scout: kills")
        game.request_move(1, 69, 59)
        game.request_move(0, 40, 41)
        cell = rules.spectator_state(game)["cells"][4][1]
        assert cell == {"owner": 0, "unit": "general" if shown else None}, options
        assert rules.spectator_move(game, game.last_result) == "0,4-1,4"


# --- the service ----------------------------------------------------------------------------


def test_a_game_is_watched_and_recorded_with_named_and_unnamed_seats():
    clock, hub, store, service = make()
    alice = named(service, "alice")
    bob = Player(service)  # the binary port: player<k>, a guest, unrated
    start(service, alice, bob)
    (table,) = hub.tables.values()
    assert table.id == "combat-1" and table.game == "combat"
    assert [(s.name, s.rated, s.kind) for s in table.seats] == [("alice", True, "player"), ("player2", False, "guest")]
    assert table.options["map"] == "Default" and table.options["seats"] == 2
    assert all(c is None or c == "lake" or c["unit"] is None for row in table.initial_state["cells"] for c in row)
    alice.send(wire.ReqMove(30, 40))
    bob.send(wire.ReqMove(61, 51))
    assert [(m.seat, m.move) for m in table.moves] == [(0, "0,3-0,4"), (1, "1,6-1,5")]
    assert table.state["last"] == [[1, 6], [1, 5]] and table.to_move == 0
    bob.client.drop()
    clock.advance(120)  # bob does not come back: he forfeits and loses
    (record,) = store.records
    assert record.scores == (1.0, 0.0) and record.rated and record.reason == "forfeit"
    assert record.extra["detail"] == "seat 1 (player2) left the game and did not come back within 120 s"
    final = hub.ended["combat-1"].state  # what the end event shows: every unit
    assert all(c is None or c == "lake" or c["unit"] is not None for row in final["cells"] for c in row)
    assert not hub.tables


def test_an_abandoned_game_is_stored_unrated_and_a_shutdown_too():
    clock, hub, store, service = make()
    alice, bob = Player(service), Player(service)
    start(service, alice, bob)
    alice.client.drop()
    bob.client.drop()
    assert not store.records, "both seats are away: either may come back"
    clock.advance(120)  # nobody did: the game is abandoned, nobody wins
    carol, dave = Player(service), Player(service)
    start(service, carol, dave)
    service.abort_games()
    assert [(r.rated, r.scores, r.reason) for r in store.records] == [
        (False, (0.0, 0.0), "every player left"),
        (False, (0.0, 0.0), "shutdown"),
    ]


def test_without_a_hub_nothing_is_built():
    service = CombatService(Limits(idle_timeout=0), Clock(), CombatConfig(move_time=0), rng=random.Random(1))
    alice, bob = Player(service), Player(service)
    start(service, alice, bob)
    alice.send(wire.ReqMove(30, 40))
    assert all(e.live is None for e in service._tables.values())


# --- hypothesis: the spectator stream keeps hidden units hidden -------------------------------


@given(
    seed=st.integers(0, 2**32 - 1),
    mask=st.integers(0, 0xFFFF).map(lambda m: Opt(m) & (SECRECY_OPTS | Opt.OPEN_MAP)),
    map_name=st.sampled_from(["Small", "8x8", "Island_I", "Default"]),
)
def test_the_spectator_stream_shows_exactly_the_units_revealed_in_combat(seed, mask, map_name):
    rng = random.Random(seed)
    clock, hub, store, service = make()
    options = with_options(shipped_maps()[map_name], mask)
    alice, bob = Player(service), Player(service)
    players = (alice, bob)
    alice.send(wire.HostOptions.of(options))
    if not mask & Opt.RANDOM_SETUP:
        for seat in (0, 1):
            codes = [c for c, n in enumerate(options.army) for _ in range(n)]
            rng.shuffle(codes)
            players[seat].send(wire.MsgSetup(wire.write_setup(options, seat, dict(zip(options.zone(seat), codes)))))
    for p in players:
        p.read()
    table = service.tables[1]
    (live,) = hub.tables.values()
    board = table.game.board
    # The oracle: every unit by identity (its starting cell), followed through the messages.
    ids = {cell: cell for cell, value in enumerate(board.cells) if value != EMPTY}
    kinds = {cell: rules.UNIT_NAMES[value & 0x0F] for cell, value in enumerate(board.cells) if value != EMPTY}
    revealed: set[int] = set()
    fought: set[int] = set()
    silent = mask & (Opt.SILENT_OFFENSE | Opt.SILENT_DEFENSE | Opt.UNKNOWN_VICTOR)

    def check(state, over=False):
        for y, row in enumerate(state["cells"]):
            for x, cell in enumerate(row):
                i = y * options.width + x
                if board.cells[i] == EMPTY:
                    assert cell is None or cell == "lake"
                    continue
                assert cell["owner"] == board.cells[i] >> 4
                if over or mask & Opt.OPEN_MAP or ids[i] in revealed:
                    assert cell["unit"] == kinds[ids[i]]
                else:
                    assert cell["unit"] is None, (i, kinds[ids[i]])

    check(live.initial_state)
    for _ in range(60):
        moves = legal_moves(table)
        if table.state is not wire.State.PLAYING or not moves:
            break
        seat = table.turn
        source, target = rng.choice(moves)
        players[seat].send(wire.ReqMove(source, target))
        got = [p.read() for p in players]
        attacks = [next((m for m in g if isinstance(m, wire.MsgAttack)), None) for g in got]
        if attacks[0] is None:
            ids[target] = ids.pop(source)
        else:
            defender = 1 - seat
            a_id, d_id = ids.pop(source), ids.pop(target)
            fa, fd = attacks[seat].who_from, attacks[seat].who_to
            fought |= {a_id, d_id}
            if abs(attacks[defender].who_from) != 12:  # every seat was shown the attacker
                revealed.add(a_id)
            if abs(attacks[seat].who_to) != 12:  # ... and the defender
                revealed.add(d_id)
            if fa < 0 and fd >= 0:
                ids[target] = a_id
            elif fa >= 0 and fd < 0:
                ids[target] = d_id
        move = live.moves[-1] if table.state is wire.State.PLAYING else store.records[-1].moves[-1]
        assert move.seat == seat
        if table.state is wire.State.PLAYING:
            check(move.state)
            if not silent:
                alive = set(ids.values())
                assert {i for i in fought if i in alive} <= revealed, "every unit that fought is shown"
    event("units fought" if fought else "no fight")
    event("game over" if table.state is wire.State.DONE else "aborted")
    if table.state is wire.State.PLAYING:
        service.abort_games()
    (record,) = store.records
    check(record.moves[-1].state if record.moves and table.state is wire.State.DONE else live.state, over=True)
    assert record.game == "combat" and record.rated == (table.state is wire.State.DONE)


def test_with_rejoin_anyone_a_seat_taken_over_during_play_shows_and_records_the_new_player(tmp_path):
    import json

    from tests.test_live_hub import Viewer

    clock = Clock()
    store = MemoryStore()
    hub = LiveHub(clock, store)
    config = CombatConfig(move_time=0, rejoin_grace=120, rejoin="anyone")
    players = Players(PlayersConfig(), MemoryAccounts(), clock)
    service = CombatService(
        Limits(idle_timeout=0), clock, config, rng=random.Random(1), hub=hub, records_dir=tmp_path, players=players
    )
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    (table,) = hub.tables.values()
    viewer = Viewer()
    table.add(viewer)
    alice.send(wire.ReqMove(30, 40))
    bob.client.drop()
    carol = named(service, "carol")  # the original GGZ way: the next connection takes bob's kept seat
    assert [p["name"] for p in hub.games()["games"][0]["players"]] == ["alice", "carol"]
    name, snapshot = viewer.events[-1]
    assert name == "snapshot" and [p["name"] for p in snapshot["players"]] == ["alice", "carol"]
    assert snapshot["moves"] == [{"n": 1, "seat": 0, "move": "0,3-0,4", "t": 0.0, "clock": None}], "the game goes on"
    carol.send(wire.ReqMove(61, 51))
    carol.client.drop()
    clock.advance(120)  # carol does not come back: alice wins
    (record,) = store.records
    assert [(s.name, s.rated) for s in record.seats] == [("alice", True), ("carol", True)]
    assert record.scores == (1.0, 0.0)
    (result,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert result["players"] == ["alice", "carol"]


def test_with_rejoin_anyone_an_unnamed_player_taking_over_a_named_seat_is_not_rated():
    clock, hub, store, service = make(rejoin="anyone")
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    bob.client.drop()
    stranger = Player(service)  # the binary port: player<k>
    assert stranger.read()[0] == wire.MsgSeat(1, 2), "it takes bob's army"
    stranger.client.drop()
    clock.advance(120)
    (record,) = store.records
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("alice", True, "player"), ("player3", False, "guest")]


def test_a_stranger_never_gets_an_away_seat_and_the_forfeit_is_a_rated_loss():
    clock, hub, store, service = make()
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    bob.client.drop()
    stranger = Player(service)  # the binary port, the same address as bob: bob's seat was not held there
    assert stranger.read()[:2] == [wire.MsgSeat(0, 2), wire.MsgPlayers([wire.PlayerSeat(wire.SeatKind.PLAYER, "player3"), wire.PlayerSeat(wire.SeatKind.OPEN)])]
    other = guest(service, "mallory")
    assert other.binary[0] == wire.MsgSeat(1, 2), "a new table's seat, never bob's"
    clock.advance(120)
    (record,) = store.records
    assert [(s.name, s.rated, s.kind) for s in record.seats] == [("alice", True, "player"), ("bob", True, "player")]
    assert (record.scores, record.reason, record.rated) == ((1.0, 0.0), "forfeit", True)
    assert record.extra["detail"] == "seat 1 (bob) left the game and did not come back within 120 s"


def test_running_out_of_move_time_is_a_rated_loss_recorded_as_timeout():
    clock, hub, store, service = make(move_time=60)
    alice, bob = named(service, "alice"), named(service, "bob")
    start(service, alice, bob)
    alice.send(wire.ReqMove(30, 40))
    clock.advance(60)  # bob does not move in time
    (record,) = store.records
    assert (record.scores, record.reason, record.rated) == ((1.0, 0.0), "timeout", True)
    assert record.extra["detail"] == "seat 1 (bob) ran out of its move time of 60 s"
    assert hub.ended["combat-1"].result == {"scores": [1.0, 0.0], "reason": "timeout"}


def test_a_map_name_with_markup_never_reaches_the_games_list_or_the_records():
    import json

    import attrs

    clock, hub, store, service = make()
    alice, bob = Player(service), Player(service)
    alice.read()
    bob.read()
    alice.send(wire.HostOptions.of(attrs.evolve(DEFAULT, name="<img src=x onerror=alert(1)>")))
    assert alice.read() == [wire.ReqOptions()], "refused: the host is asked for options again"
    assert bob.read() == [] and not hub.tables
    start(service, alice, bob, attrs.evolve(DEFAULT, name="Plain name"))
    (table,) = hub.tables.values()
    assert table.options["map"] == "Plain name"
    alice.client.drop()
    bob.client.drop()
    clock.advance(120)
    shown = json.dumps([hub.games(), [attrs.asdict(r) for r in store.records]], default=str)
    assert "onerror" not in shown and "Plain name" in shown
