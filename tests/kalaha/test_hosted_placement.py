"""A hosted Kalaha bot (a connection with a placement, gamed.hosting) keeps to its reserved table:
the pair delay may seat it before its first line, TABLE, arrives; that TABLE is then answered as
TABLE is, not as an error that would cost it a strike."""

from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from gamed.identity import Identity
from gamed.seats import Placement
from tests.kalaha.harness import make_service
from tests.memclient import Client


class Placed(Client):
    """A connection the daemon makes for the hosted bot ``name`` (its placement set before it is up)."""

    def __init__(self, service, name):
        self.service, self.factory, self.lost = service, service.factory, False
        self.protocol = service.factory.buildProtocol(None)
        self.protocol.placement = Placement(Identity(name, "bot"), "hosted-1")
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self.read()


def test_a_late_table_of_a_seated_hosted_bot_is_no_error_and_no_strike():
    clock = Clock()
    service = make_service(clock, pair_delay=0.5, strikes=3)
    service.reserve_table("hosted-1", ["ann", "bob"])
    ann, bob = Placed(service, "ann"), Placed(service, "bob")
    ann.send("BOARD OFF")
    clock.advance(0.5)  # the pair delay seats both before bob's first line
    (game,) = service.games.values()
    assert game.names == {"A": "ann", "B": "bob"}
    bob.read()
    bob.send("BOARD OFF", "TABLE")
    assert bob.read() == ["OK BOARD OFF", "OK TABLE -"]
    assert game.strikes["B"] == 0
    bob.send("TABLE elsewhere")
    assert bob.read() == ["OK TABLE elsewhere"] and game.strikes["B"] == 0
