"""The Virtual Fight GUI port (spec §9) in memory: greeting, following games, late joiners, live
events, LIST/WATCH/QUIT, the token, the lag, and the bounded output that drops a slow observer."""

from __future__ import annotations

from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent

from tests.fight.harness import ai, arena, gui, make_service, place, start_game
from gamed.fight.rules import Dir

PASS_ALL = [f"{n}&NONE" for n in range(5)]


def intro(lines):
    """Split an observer's lines into (map part, snapshot part, the rest)."""
    snap = lines.index(next(line for line in lines if line.startswith("SNAPSHOT&")))
    end = lines.index("ENDSNAPSHOT", snap)
    return lines[:snap], lines[snap : end + 1], lines[end + 1 :]


def play_turn(a, b, a_lines=PASS_ALL, b_lines=PASS_ALL):
    a.send(*a_lines)
    b.send(*b_lines)
    a.read()
    b.read()


def test_observer_is_greeted_and_waits_for_the_next_game():
    service = make_service(fmap=arena())
    g = gui(service)
    assert g.read() == ["HELLO&VF-OBSERVER&1"]
    a = ai(service, "NAME&red")
    assert g.read() == []
    ai(service)
    head, snap, rest = intro(g.read())
    assert head[0] == "MAP&10&10" and head[1:11] == [f"ROW&{r}&.........." for r in range(10)]
    assert head[11:] == ["TEAM&0&red", "TEAM&1&team1"], "a team without NAME is team<t>"
    assert snap[0] == "SNAPSHOT&0" and len(snap) == 12
    assert "W&0&0&0&0&DOWN&ALIVE" in snap and "W&1&0&9&5&UP&ALIVE" in snap and "W&1&4&9&9&UP&ALIVE" in snap
    assert rest == ["TURN&1"]
    assert not a.lost


def test_live_events_of_a_turn_and_its_resolution():
    clock = Clock()
    service = make_service(clock, fmap=arena())
    a, b = start_game(service)
    battle = service.games[1].battle
    place(battle, 1, 0, (3, 0), Dir.LEFT)
    g = gui(service)
    g.read()
    a.send("0&MOVE&DOWN", "1&NONE&RIGHT", "2&SHOOT&DOWN", "3&NONE", "4&NONE")
    b.send("0&shoot&up", *PASS_ALL[1:])
    assert g.read() == [
        "MOVE&0&0&1&0&DOWN",
        "FACE&0&1&RIGHT",
        "AIM&0&2&DOWN",
        "ENDTURN&0&DONE",
        "AIM&1&0&UP",
        "ENDTURN&1&DONE",
        "SHOT&0&2&DOWN&3&2&NOTHING",
        "SHOT&1&0&UP&1&0&ENEMY",
        "KILLED&0&0&1&0",
        "SNAPSHOT&1",
        "W&0&0&1&0&DOWN&DEAD",
        "W&0&1&0&1&RIGHT&ALIVE",
        "W&0&2&0&2&DOWN&ALIVE",
        "W&0&3&0&3&DOWN&ALIVE",
        "W&0&4&0&4&DOWN&ALIVE",
        "W&1&0&3&0&UP&ALIVE",
        "W&1&1&9&6&UP&ALIVE",
        "W&1&2&9&7&UP&ALIVE",
        "W&1&3&9&8&UP&ALIVE",
        "W&1&4&9&9&UP&ALIVE",
        "ENDSNAPSHOT",
        "TURN&2",
    ]


def test_a_late_observer_gets_the_map_the_last_snapshot_and_the_events_since():
    service = make_service(fmap=arena())
    a, b = start_game(service)
    play_turn(a, b)
    a.send("0&MOVE&DOWN")
    g = gui(service)
    lines = g.read()
    assert lines[0] == "HELLO&VF-OBSERVER&1"
    head, snap, rest = intro(lines[1:])
    assert head[0] == "MAP&10&10" and snap[0] == "SNAPSHOT&1"
    assert rest == ["TURN&2", "MOVE&0&0&1&0&DOWN"]


def test_timeouts_and_departures_are_shown():
    clock = Clock()
    service = make_service(clock, fmap=arena(), turn_time=5, grace=0)
    a, b = start_game(service)
    g = gui(service)
    g.read()
    a.send(*PASS_ALL)
    clock.advance(5)
    lines = g.read()
    assert lines[:2] == ["ENDTURN&0&DONE", "ENDTURN&1&TIMEOUT"]
    b.drop()
    assert g.read() == ["ENDTURN&1&GONE"]
    a.send(*PASS_ALL)
    lines = g.read()
    assert lines[0] == "ENDTURN&0&DONE" and "W&1&0&9&5&UP&DEAD" in lines
    assert lines[-1] == "GAMEOVER&WIN&0&2"


def test_list_watch_and_following_the_oldest_game_after_game_over():
    service = make_service(fmap=arena(), grace=0)
    a1, b1 = start_game(service)
    a2, b2 = start_game(service)
    g = gui(service)
    head, snap, rest = intro(g.read()[1:])
    assert rest == ["TURN&1"], "a new observer follows the oldest running game"
    play_turn(a2, b2)
    g.send("list")
    assert g.read() == ["GAME&1&team0,team1&1", "GAME&2&team0,team1&2", "END"]
    g.send("WATCH&2")
    head, snap, rest = intro(g.read())
    assert snap[0] == "SNAPSHOT&1" and rest == ["TURN&2"]
    g.send("WATCH&99", "WATCH&x", "DANCE", "WATCH")
    assert g.read() == [], "unknown ids and unknown commands are ignored"
    play_turn(a1, b1)
    assert g.read() == [], "no longer watching game 1"
    b2.drop()
    a2.send(*PASS_ALL)
    lines = g.read()
    over = lines.index("GAMEOVER&WIN&0&2")
    head, snap, rest = intro(lines[over + 1 :])
    assert snap[0] == "SNAPSHOT&1" and rest == ["TURN&2"], "back to the oldest running game, game 1"
    g.send("QUIT")
    assert g.lost


def test_observer_waits_for_the_next_game_when_none_is_left():
    service = make_service(fmap=arena(), grace=0)
    a, b = start_game(service)
    g = gui(service)
    g.read()
    b.drop()
    a.send(*PASS_ALL)
    assert g.read()[-1] == "GAMEOVER&WIN&0&1"
    start_game(service)
    head, snap, rest = intro(g.read())
    assert head[0] == "MAP&10&10" and rest == ["TURN&1"]
    g.send("LIST")
    assert g.read() == ["GAME&2&team0,team1&1", "END"]


def test_token_must_come_first():
    service = make_service(fmap=arena(), gui_token="s3cret")
    good = gui(service)
    assert good.read() == []
    good.send("AUTH&s3cret")
    assert good.read() == ["HELLO&VF-OBSERVER&1"]
    for first, reply in (
        ("LIST", "DENIED&this server requires AUTH&<token> as the first line"),
        ("HELP", "DENIED&this server requires AUTH&<token> as the first line"),
        ("AUTH", "DENIED&this server requires AUTH&<token> as the first line"),
        ("AUTH&wrong", "DENIED&wrong token"),
    ):
        bad = gui(service)
        with capturedLogs() as events:
            bad.send(first)
        assert bad.read() == [reply] and bad.lost, first
        assert any("did not authenticate" in formatEvent(e) for e in events), "the close is logged with its reason"
    bad = gui(service)
    bad.send("x" * 1000)
    assert bad.read() == ["DENIED&this server requires AUTH&<token> as the first line"] and bad.lost


def test_help_lists_the_observer_commands():
    service = make_service(fmap=arena())
    g = gui(service)
    g.read()
    g.send("help")
    lines = g.read()
    assert lines[-1] == "HELP&END" and all(line.startswith("HELP&") for line in lines)
    assert [line.split()[0] for line in lines[:-1]] == ["HELP&LIST", "HELP&WATCH&<id>", "HELP&QUIT"]


def test_lagged_observers_see_a_turn_only_after_n_more_turns():
    service = make_service(fmap=arena(), gui_lag=2, grace=0)
    a, b = start_game(service)
    g = gui(service)
    head, snap, rest = intro(g.read()[1:])
    assert snap[0] == "SNAPSHOT&0" and rest == []
    play_turn(a, b, ["0&MOVE&DOWN"] + PASS_ALL[1:])
    play_turn(a, b)
    assert g.read() == [], "turn 1 is held until turn 3 is resolved"
    play_turn(a, b)
    lines = g.read()
    assert lines[:3] == ["TURN&1", "MOVE&0&0&1&0&DOWN", "ENDTURN&0&DONE"]
    assert lines[-1] == "ENDSNAPSHOT" and "SNAPSHOT&1" in lines and "TURN&2" not in lines
    late = gui(service)
    head, snap, rest = intro(late.read()[1:])
    assert snap[0] == "SNAPSHOT&1" and rest == []
    b.drop()
    a.send(*PASS_ALL)
    lines = g.read()
    assert lines[0] == "TURN&2" and lines[-1] == "GAMEOVER&WIN&0&4", "the end releases everything"


def test_a_slow_observer_is_dropped_and_the_game_goes_on():
    service = make_service(fmap=arena(), gui_buffer=4096)
    a, b = start_game(service)
    slow, fast = gui(service), gui(service)
    slow.read()
    fast.read()
    slow.player.pauseProducing()  # its transport buffer is full: the client does not read
    turns = 0
    while not slow.closing:
        play_turn(a, b)
        turns += 1
        assert turns < 50, "the slow observer was never dropped"
    assert slow.player.dropped and slow.transport.disconnecting
    slow.drop()
    play_turn(a, b)
    assert not fast.lost and fast.read()[-1] == f"TURN&{turns + 2}"
    assert service.games[1].turn == turns + 2


def test_a_paused_observer_that_resumes_gets_everything_in_order():
    service = make_service(fmap=arena())
    a, b = start_game(service)
    g = gui(service)
    g.read()
    g.player.pauseProducing()
    play_turn(a, b)
    g.send("LIST")
    assert g.read() == []
    g.player.resumeProducing()
    lines = g.read()
    assert lines[0] == "ENDTURN&0&DONE" and lines[-3:] == ["TURN&2", "GAME&1&team0,team1&2", "END"]


def test_events_are_gathered_for_the_interval_and_the_end_is_sent_at_once():
    clock = Clock()
    service = make_service(clock, fmap=arena(), gui_interval=0.05, grace=0)
    a, b = start_game(service)
    g = gui(service)
    g.read()
    play_turn(a, b)
    play_turn(a, b)
    assert g.read() == [], "nothing is written before the interval is over"
    clock.advance(0.05)
    lines = g.read()
    assert lines.count("ENDSNAPSHOT") == 2 and lines[-1] == "TURN&3", "two turns in one write"
    b.drop()
    a.send(*PASS_ALL)
    assert g.read()[-1] == "GAMEOVER&WIN&0&3"


# --- the observers' idle timeout (issue 13, item 9) ----------------------------------------------


def test_an_observer_that_says_nothing_and_hears_of_nothing_is_closed_after_the_idle_timeout():
    clock = Clock()
    service = make_service(clock, fmap=arena(), gui_idle_timeout=60)
    g = gui(service)
    assert g.read() == ["HELLO&VF-OBSERVER&1"]
    clock.advance(50)
    g.send("LIST")  # any line counts
    assert g.read() == ["END"]
    clock.advance(59)
    assert not g.closing
    with capturedLogs() as events:
        clock.advance(1)
    assert g.closing and g.read() == []
    assert any(e.get("reason") == "idle timeout" for e in events)


def test_an_observer_is_not_idle_while_the_game_it_follows_sends_events():
    clock = Clock()
    service = make_service(clock, fmap=arena(), gui_idle_timeout=60, turn_time=40, grace=0)
    g = gui(service)
    a, b = start_game(service)
    for _ in range(4):  # 160 s of turns that time out, the observer silent all along
        clock.advance(40)
        a.read(), b.read()
    assert not g.closing and "TURN&5" in g.read()
    a.drop(), b.drop()  # the game ends; the observer waits for the next one and hears nothing
    g.read()
    clock.advance(60)
    assert g.closing


def test_an_observer_that_never_authenticates_is_closed_after_the_idle_timeout():
    clock = Clock()
    service = make_service(clock, fmap=arena(), gui_idle_timeout=30, gui_token="s3cret")
    g = gui(service)
    clock.advance(30)
    assert g.closing and g.read() == []


def test_the_observers_idle_timeout_can_be_switched_off():
    clock = Clock()
    service = make_service(clock, fmap=arena(), gui_idle_timeout=0)
    g = gui(service)
    clock.advance(100_000)
    assert not g.closing
