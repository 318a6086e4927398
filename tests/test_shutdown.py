"""A daemon that stops while games run loses none of them: every game service's running games are
stored as interrupted (reason ``shutdown``, not rated) before the records close, also a game that
ends only some time after the stop began (a Stratego game whose programs are still being killed),
and a table that no service finished is ended by the live hub and logged."""

from __future__ import annotations

from twisted.application.service import MultiService
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent

from gamed.config import AiProgram, Limits, StrategoConfig
from gamed.gameservice import GameService
from gamed.observers import LiveHub
from gamed.records import RecordsError, RecordsService, Seat
from gamed.stratego.service import StrategoService, read_results
from tests.stratego.scripted import ScriptedSeat


class ClosingStore:
    """The RecordStore API in memory, refusing stores once it is closed (as the real one does)."""

    def __init__(self):
        self.records = []
        self.closed = False

    def start(self):
        return defer.succeed(0)

    def store(self, record):
        if self.closed:
            return defer.fail(RecordsError("the records store is closed"))
        self.records.append(record)
        return defer.succeed(len(self.records))

    def close(self):
        self.closed = True
        return defer.succeed(None)


def daemon(clock, *services_of_hub):
    """A root service with the records service first (so it is stopped last), as gamed.tap builds it."""
    store = ClosingStore()
    hub = LiveHub(clock, store)
    root = MultiService()
    RecordsService(store, hub).setServiceParent(root)
    for make in services_of_hub:
        make(hub).setServiceParent(root)
    return root, hub, store


def test_a_stratego_game_that_ends_after_the_stop_began_is_stored_before_the_records_close(tmp_path):
    clock = Clock()
    seats = []

    def make_seat(ai, workdir):
        seat = ScriptedSeat(ai.command)
        hanging = defer.Deferred()  # the program never answers its setup
        seat.setup = lambda colour, opponent: hanging
        # Killing a program takes a moment (its process has to end): the setup then reads nothing.
        seat.kill = lambda: clock.callLater(0.5, lambda: hanging.called or hanging.callback([])) and defer.succeed(None)
        seats.append(seat)
        return seat

    config = StrategoConfig(ai=(AiProgram("a", "./a"), AiProgram("b", "./b")), rounds=1, concurrency=1, timeout=0)
    root, hub, store = daemon(
        clock, lambda hub: StrategoService(config, Limits(), clock, tmp_path, seat_factory=make_seat, hub=hub)
    )
    root.startService()
    assert seats, "the first game is waiting for its setups"
    stopped = []
    root.stopService().addBoth(stopped.append)
    assert not stopped and not store.closed, "the records wait for the game being aborted"
    clock.advance(1)
    assert stopped and store.closed
    (record,) = store.records
    assert (record.game, record.reason, record.rated, record.scores) == ("stratego", "shutdown", False, (0.0, 0.0))
    (tournament,) = tmp_path.glob("tournament-*")
    (game,) = read_results(tournament)
    assert game["aborted"] and game["reason"] == "shutdown" and game["result"] is None


class ForgetfulService(GameService):
    """A game service that records nothing when it stops (the hub's safety net must)."""

    name = "kalaha"

    def __init__(self, hub, clock):
        super().__init__(Limits(), clock)
        self.hub = hub
        self.table = hub.open("kalaha", [Seat(0, "alice", True), Seat(1, "bob", True)], {}, {"pits": []})
        self.table.moved(0, "A1", {"pits": [1]}, 1)


def test_a_table_no_service_finished_is_stored_as_interrupted_and_logged():
    clock = Clock()
    root, hub, store = daemon(clock, lambda hub: ForgetfulService(hub, clock))
    root.startService()
    with capturedLogs() as events:
        root.stopService()
    (record,) = store.records
    assert (record.reason, record.rated, record.scores, len(record.moves)) == ("shutdown", False, (0.0, 0.0), 1)
    assert store.closed and not hub.tables
    logged = [formatEvent(e) for e in events]
    assert any("table kalaha-1 (seat 0 alice, seat 1 bob) interrupted by the shutdown after 1 moves" in line for line in logged), logged


class StuckService(ForgetfulService):
    """A game service whose games never finish ending (a program that cannot be killed)."""

    def games_ending(self):
        return [defer.Deferred()]


def test_games_that_never_end_hold_the_records_open_only_for_the_stop_timeout():
    clock = Clock()
    root, hub, store = daemon(clock, lambda hub: StuckService(hub, clock))
    root.startService()
    root.stopService()
    clock.advance(29)
    assert not store.closed and not store.records
    clock.advance(1)
    (record,) = store.records
    assert record.reason == "shutdown" and store.closed
