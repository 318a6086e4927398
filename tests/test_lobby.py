"""The waiting room (gamed.lobby): seating by arrival order and by table name, seat counts,
leaving, dropping members that went away, reporting, and callbacks that join again."""

import pytest

from gamed.lobby import Lobby, LobbyError


class Recorder:
    """An ``on_table`` callback that remembers every table it was given."""

    def __init__(self):
        self.tables = []

    def __call__(self, members, name):
        self.tables.append((list(members), name))


def make(seats=2, **kwargs):
    seated = Recorder()
    return Lobby(seats, seated, **kwargs), seated


# --- arrival order -----------------------------------------------------------------------------


def test_two_seat_tables_are_formed_in_arrival_order():
    lobby, seated = make(2)
    assert lobby.join("a") == 1
    assert seated.tables == []
    assert lobby.join("b") == 0
    assert seated.tables == [(["a", "b"], None)]
    assert lobby.join("c") == 1
    assert lobby.join("d") == 0
    assert seated.tables == [(["a", "b"], None), (["c", "d"], None)]
    assert lobby.waiting() == []


def test_three_seat_tables_are_formed_in_arrival_order():
    lobby, seated = make(3)
    assert [lobby.join(m) for m in "abcdef"] == [2, 1, 0, 2, 1, 0]
    assert seated.tables == [(["a", "b", "c"], None), (["d", "e", "f"], None)]


def test_third_and_fourth_arrivals_form_the_second_two_seat_table():
    lobby, seated = make(2)
    for m in "abcde":
        lobby.join(m)
    assert seated.tables == [(["a", "b"], None), (["c", "d"], None)]
    assert lobby.waiting() == ["e"]
    assert lobby.free_seats("e") == 1


def test_seated_members_are_no_longer_waiting_and_may_join_again():
    lobby, seated = make(2)
    lobby.join("a")
    lobby.join("b")
    assert not lobby.is_waiting("a") and not lobby.is_waiting("b")
    assert lobby.leave("a") is False
    assert lobby.join("a") == 1
    assert lobby.is_waiting("a")


# --- named tables ------------------------------------------------------------------------------


def test_only_members_naming_the_same_table_sit_together():
    lobby, seated = make(2)
    lobby.join("a", table="red")
    lobby.join("b")
    lobby.join("c", table="blue")
    assert seated.tables == []
    lobby.join("d", table="red")
    assert seated.tables == [(["a", "d"], "red")]
    lobby.join("e", table="blue")
    assert seated.tables[-1] == (["c", "e"], "blue")
    assert lobby.waiting() == ["b"]


def test_named_tables_leave_the_general_queue_alone():
    lobby, seated = make(2)
    lobby.join("q1")
    lobby.join("n1", table="t")
    lobby.join("n2", table="t")
    assert seated.tables == [(["n1", "n2"], "t")]
    assert lobby.is_waiting("q1")
    assert lobby.free_seats("q1") == 1
    lobby.join("q2")
    assert seated.tables[-1] == (["q1", "q2"], None)


def test_opener_chooses_the_seat_count_of_a_named_table():
    lobby, seated = make(2, max_seats=4)
    assert lobby.join("a", table="big", seats=3) == 2
    assert lobby.join("b", table="big") == 1
    assert lobby.free_seats("a") == 1
    assert seated.tables == []
    assert lobby.join("c", table="big", seats=3) == 0
    assert seated.tables == [(["a", "b", "c"], "big")]


def test_named_table_without_a_seat_count_uses_the_lobby_default():
    lobby, seated = make(3)
    assert lobby.join("a", table="t") == 2
    lobby.join("b", table="t")
    lobby.join("c", table="t")
    assert seated.tables == [(["a", "b", "c"], "t")]


def test_joining_a_named_table_with_a_different_seat_count_is_refused():
    lobby, seated = make(2, max_seats=4)
    lobby.join("a", table="t", seats=3)
    with pytest.raises(LobbyError):
        lobby.join("b", table="t", seats=2)
    with pytest.raises(LobbyError):
        lobby.join("b", table="t", seats=4)
    assert not lobby.is_waiting("b")
    assert lobby.waiting() == ["a"]
    assert lobby.free_seats("a") == 2


@pytest.mark.parametrize("seats", [0, 1, 5, 100, -2])
def test_named_table_seat_counts_outside_the_allowed_range_are_refused(seats):
    lobby, seated = make(2, max_seats=4)
    with pytest.raises(LobbyError):
        lobby.join("a", table="t", seats=seats)
    assert not lobby.is_waiting("a")
    assert lobby.waiting() == []


def test_seat_count_range_defaults_to_exactly_the_lobby_seats():
    lobby, seated = make(2)
    with pytest.raises(LobbyError):
        lobby.join("a", table="t", seats=3)
    assert lobby.join("a", table="t", seats=2) == 1


def test_general_queue_refuses_another_seat_count():
    lobby, seated = make(2, max_seats=4)
    with pytest.raises(LobbyError):
        lobby.join("a", seats=3)
    assert not lobby.is_waiting("a")
    assert lobby.join("a", seats=2) == 1


def test_a_lobby_needs_at_least_one_seat():
    with pytest.raises(ValueError):
        Lobby(0, Recorder())


def test_a_named_table_disappears_when_its_last_member_leaves():
    lobby, seated = make(2, max_seats=4)
    lobby.join("a", table="t", seats=3)
    lobby.join("b", table="t")
    assert lobby.leave("a") is True
    assert lobby.free_seats("b") == 2
    assert lobby.leave("b") is True
    assert lobby.waiting() == []
    assert lobby.join("c", table="t", seats=2) == 1
    assert lobby.join("d", table="t") == 0
    assert seated.tables == [(["c", "d"], "t")]


def test_a_seated_named_table_can_be_opened_again_with_another_seat_count():
    lobby, seated = make(2, max_seats=4)
    lobby.join("a", table="t")
    lobby.join("b", table="t")
    assert lobby.join("c", table="t", seats=3) == 2


# --- leaving and dead members ------------------------------------------------------------------


def test_leave_before_seating_keeps_the_member_off_the_next_table():
    lobby, seated = make(2)
    lobby.join("a")
    assert lobby.leave("a") is True
    assert not lobby.is_waiting("a")
    assert lobby.leave("a") is False
    lobby.join("b")
    lobby.join("c")
    assert seated.tables == [(["b", "c"], None)]


def test_leave_of_an_unknown_member_reports_false():
    lobby, seated = make(2)
    assert lobby.leave("nobody") is False


def test_leave_from_a_named_table():
    lobby, seated = make(2)
    lobby.join("a", table="t")
    assert lobby.leave("a") is True
    lobby.join("b", table="t")
    lobby.join("c", table="t")
    assert seated.tables == [(["b", "c"], "t")]


def test_dead_members_in_the_queue_are_dropped_before_seating():
    gone = set()
    lobby, seated = make(2, alive=lambda m: m not in gone)
    lobby.join("a")
    gone.add("a")
    assert lobby.join("b") == 1
    assert seated.tables == []
    assert not lobby.is_waiting("a")
    assert lobby.waiting() == ["b"]
    assert lobby.join("c") == 0
    assert seated.tables == [(["b", "c"], None)]


def test_dead_members_never_reach_on_table_in_a_three_seat_queue():
    gone = set()
    lobby, seated = make(3, alive=lambda m: m not in gone)
    lobby.join("a")
    lobby.join("b")
    gone.add("a")
    assert lobby.join("c") == 1
    lobby.join("d")
    assert seated.tables == [(["b", "c", "d"], None)]
    assert all("a" not in members for members, _ in seated.tables)


def test_dead_members_at_a_named_table_are_dropped():
    gone = set()
    lobby, seated = make(2, alive=lambda m: m not in gone)
    lobby.join("a", table="t")
    gone.add("a")
    assert lobby.join("b", table="t") == 1
    assert not lobby.is_waiting("a")
    lobby.join("c", table="t")
    assert seated.tables == [(["b", "c"], "t")]


def test_a_named_table_whose_members_all_died_is_opened_afresh():
    gone = set()
    lobby, seated = make(2, alive=lambda m: m not in gone, max_seats=4)
    lobby.join("a", table="t", seats=3)
    gone.add("a")
    assert lobby.join("b", table="t", seats=2) == 1
    lobby.join("c", table="t")
    assert seated.tables == [(["b", "c"], "t")]


# --- reporting ---------------------------------------------------------------------------------


def test_joining_twice_is_refused():
    lobby, seated = make(3)
    lobby.join("a")
    with pytest.raises(LobbyError):
        lobby.join("a")
    with pytest.raises(LobbyError):
        lobby.join("a", table="t")
    assert lobby.waiting() == ["a"]
    assert lobby.free_seats("a") == 2


def test_reporting_for_waiting_members():
    lobby, seated = make(3, max_seats=4)
    lobby.join("q1")
    lobby.join("x1", table="x", seats=4)
    lobby.join("q2")
    lobby.join("y1", table="y")
    lobby.join("x2", table="x")
    assert lobby.waiting() == ["q1", "q2", "x1", "x2", "y1"]
    assert lobby.table_of("q1") is None
    assert lobby.table_of("x2") == "x"
    assert lobby.table_of("y1") == "y"
    assert lobby.free_seats("q2") == 1
    assert lobby.free_seats("x1") == 2
    assert lobby.free_seats("y1") == 2
    assert all(lobby.is_waiting(m) for m in lobby.waiting())
    assert not lobby.is_waiting("z")


def test_members_can_be_any_hashable_objects():
    lobby, seated = make(2)
    first, second = object(), ("peer", 4711)
    lobby.join(first)
    lobby.join(second)
    assert seated.tables == [([first, second], None)]


# --- re-entrancy -------------------------------------------------------------------------------


def test_on_table_may_join_other_members():
    tables = []

    def on_table(members, name):
        tables.append((list(members), name))
        if members == ["a", "b"]:
            lobby.join("c")
            lobby.join("d")
            lobby.join("e", table="t")

    lobby = Lobby(2, on_table)
    lobby.join("a")
    lobby.join("b")
    assert tables == [(["a", "b"], None), (["c", "d"], None)]
    assert lobby.waiting() == ["e"]
    assert lobby.table_of("e") == "t"


def test_on_table_may_send_the_seated_members_back_to_their_named_table():
    tables = []

    def on_table(members, name):
        tables.append((list(members), name))
        if len(tables) < 3:
            for member in members:
                lobby.join(member, table=name)

    lobby = Lobby(2, on_table)
    lobby.join("a", table="rematch")
    lobby.join("b", table="rematch")
    assert tables == [(["a", "b"], "rematch")] * 3
    assert lobby.waiting() == []


def test_on_table_joining_one_member_leaves_it_waiting_in_the_queue():
    tables = []

    def on_table(members, name):
        tables.append(list(members))
        if len(tables) == 1:
            lobby.join("c")

    lobby = Lobby(2, on_table)
    lobby.join("a")
    lobby.join("b")
    assert tables == [["a", "b"]]
    assert lobby.waiting() == ["c"]
    assert lobby.free_seats("c") == 1
    lobby.join("d")
    assert tables == [["a", "b"], ["c", "d"]]


def test_join_reports_zero_when_its_table_was_seated_even_if_on_table_queued_someone():
    def on_table(members, name):
        if members == ["a", "b"]:
            lobby.join("c")

    lobby = Lobby(2, on_table)
    lobby.join("a")
    assert lobby.join("b") == 0


def test_two_connections_of_one_account_never_sit_at_one_table():
    tables = []
    keys = {"a1": "alice", "a2": "alice", "b": "bob", "g1": None, "g2": None}
    lobby = Lobby(2, lambda members, name: tables.append(members), key=keys.get)
    lobby.join("a1")
    assert lobby.join("a2") == 1  # waits: the only other member is the same account
    assert tables == []
    lobby.join("b")
    assert tables == [["a1", "b"]]
    lobby.join("g1")
    assert tables[-1] == ["a2", "g1"]
    lobby.join("g2")
    assert lobby.waiting() == ["g2"]  # guests (no key) are seated with anyone


def test_a_tables_key_carries_the_time_control_its_players_asked_for():
    from gamed.lobby import clock_table, table_clock
    from gamed.timecontrol import parse

    assert clock_table("blitz", None) == "blitz" and table_clock("blitz") == ("blitz", None)
    assert table_clock(None) == (None, None)
    for key in ("blitz", None, "meet ann bob", "t1/7x6"):
        assert table_clock(clock_table(key, parse("5m+2s,move=30s"))) == (key, parse("5m+2s,move=30s"))
    assert clock_table("t", parse("5m")) != clock_table("t", parse("1m")) != clock_table("t", None)
