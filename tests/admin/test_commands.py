"""The admin console's commands without SSH: a real KalahaService on a Clock, its real connection
limits reporting to a real ConnectionRegistry, StringTransport clients, and AdminCommands over
the real DaemonTarget (gamed.admin): parsing, formatting, kicks, broadcasts, bans in memory, the
drain, and every line answered with a status, never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet import defer
from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from gamed.admin.commands import FAILED, OK, USAGE, AdminCommands, IAdminTarget, Reply, help_lines
from gamed.admin.daemon import DaemonTarget, Drain
from gamed.connections import DRAINING, Ban, BanError, Bans, ConnectionRegistry
from tests.kalaha.harness import make_service, pair
from tests.memclient import Client


class Setup:
    def __init__(self):
        self.clock = Clock()
        self.service = make_service(self.clock)
        self.registry = ConnectionRegistry(Bans(), self.clock)
        self.stopped = []
        self.drain = Drain(self.registry, {"kalaha": self.service}, None, self.clock, lambda: self.stopped.append(True))
        self.target = DaemonTarget(self.registry, {"kalaha": self.service}, None, self.service.players, None,
                                   self.drain, self.clock)
        self.commands = AdminCommands(self.target)

    def factory(self):
        limits = self.service.port_factory()
        limits.registry, limits.game, limits.option = self.registry, "kalaha", "kalaha"
        return limits

    def client(self, host="192.0.2.1") -> Client:
        return Client(self.service, host=host, factory=self.factory())

    def run(self, line: str) -> Reply:
        return _result(self.commands.run(line))


def _result(d: defer.Deferred):
    out = []
    d.addBoth(out.append)
    assert out, "answered at once"
    return out[0]


def test_the_target_provides_the_interface():
    assert verifyObject(IAdminTarget, Setup().target)


def test_connections_players_and_kick():
    s = Setup()
    alice, bob = s.client(), s.client("192.0.2.9")  # (paired at once: no pair delay here)
    alice.read(), bob.read()
    reply = s.run("connections")
    assert reply.status == OK
    assert [line.split()[:6] for line in reply.lines] == [
        ["ID", "GAME", "PORT", "PEER", "NAME", "TABLE"],
        ["1", "kalaha", "kalaha:12345", f"192.0.2.1:{alice.transport.getPeer().port}", "guest1", "#1"],
        ["2", "kalaha", "kalaha:12345", f"192.0.2.9:{bob.transport.getPeer().port}", "guest2", "#1"],
    ]
    assert [line.split() for line in s.run("players").lines[1:]] == [["guest1", "guest", "1", "#1"], ["guest2", "guest", "2", "#1"]]
    assert s.run("kick 2 enough").lines == (f"kicked 2: kalaha 192.0.2.9:{bob.transport.getPeer().port} guest2 (enough)",)
    assert bob.read()[-1] == "BYE kicked by the operator: enough"
    bob.finish()
    assert [line.split()[0] for line in s.run("connections").lines] == ["ID", "1"]
    assert s.run("kick 2") == Reply(("error: no connection 2",), FAILED)


def test_broadcast_reaches_every_text_player_and_says_how_many():
    s = Setup()
    clients = [s.client() for _ in range(3)]
    for c in clients:
        c.read()
    assert s.run("broadcast  dinner is served ").lines == ("sent to 3 connections, 3 kalaha",)
    assert [c.read() for c in clients] == [["INFO operator: dinner is served"]] * 3


def test_an_address_ban_refuses_new_connections_with_the_ports_refusal():
    s = Setup()
    s.registry.bans.add(Ban("address", "192.0.2.0/24", "flood"))
    refused = s.client("192.0.2.77")
    assert refused.read() == ["ERROR 503 your address is banned from this server: flood"] and refused.closing
    assert s.client("198.51.100.1").read()[0].startswith("HELLO ")
    assert [c.id for c in s.registry] == [1]  # the refused one was never registered


def test_drain_closes_idle_connections_refuses_new_ones_and_stops_after_the_last_game():
    s = Setup()
    alice, bob = pair(s.service)
    idle = s.client()
    idle.read()
    assert s.run("drain").lines == ("draining: no new games; 1 in play; the daemon exits when they have finished",)
    assert idle.read() == [f"BYE {DRAINING}"]
    late = s.client()
    assert late.read() == [f"ERROR 503 {DRAINING}"]
    assert s.run("drain").lines[0].startswith("already draining; 1 in play")
    s.clock.advance(1)
    assert not s.stopped, "the game in play goes on"
    alice.send("RESIGN")
    s.clock.advance(1)
    assert s.stopped == [True]


@pytest.mark.parametrize(
    ("line", "answer", "status"),
    [
        ("frob", "error: unknown command frob; type help", USAGE),
        ("kick", "error: usage: kick CONNECTION-ID [REASON]", USAGE),
        ("kick x1", "error: a connection id is a number, not 'x1'", USAGE),
        ("tables chess", "error: no game chess; served: kalaha", FAILED),
        ("tables", "error: this daemon keeps no live tables (it has neither a web site nor a records database)", FAILED),
        ("show kalaha-3", "error: this daemon keeps no live tables (it has neither a web site nor a records database)", FAILED),
        ("show a b c", "error: usage: show TABLE (kalaha-1) or show GAME NUMBER (kalaha 1)", USAGE),
        ("ban address 10.0.0.0/8", "error: bans are kept in the records database, and this daemon has none ([records] database)", FAILED),
        ("ban user x", "error: usage: ban address ADDRESS|CIDR [REASON] | ban account NAME [REASON]", USAGE),
        ("broadcast", "error: usage: broadcast TEXT", USAGE),
        ("broadcast caf\u00e9", "error: the text must be printable ASCII text", USAGE),
        ("broadcast " + "x" * 401, "error: the text is 401 characters, more than 400", USAGE),
        ("games now", "error: usage: games", USAGE),
    ],
)
def test_bad_input_gets_one_clear_line_and_a_status(line, answer, status):
    assert Setup().run(line) == Reply((answer,), status)


def test_help_lists_every_command():
    lines = Setup().run("help").lines
    assert lines == tuple(help_lines())
    for command in ("games", "tables", "connections", "players", "show", "kick", "ban", "unban", "bans", "broadcast", "drain"):
        assert any(line.startswith(command + " ") for line in lines), command


@given(st.text(max_size=200))
def test_any_line_is_answered_with_a_status(line):
    reply = Setup().run(line)
    assert isinstance(reply, Reply) and reply.status in (OK, FAILED, USAGE)
    assert all(text.isascii() and text.isprintable() for text in reply.lines)


def test_a_bug_is_logged_and_answered_without_a_traceback():
    s = Setup()
    s.target.games = lambda: 1 / 0
    from twisted.logger import capturedLogs

    with capturedLogs() as events:
        assert s.run("games") == Reply(("error: internal error; it has been logged",), FAILED)
    assert any("admin command" in str(e.get("log_format")) for e in events)


def test_bans_canonical_networks_and_mapped_addresses():
    bans = Bans()
    assert bans.add(Ban("address", "10.1.2.3/8")).target == "10.0.0.0/8"
    assert bans.add(Ban("address", "2001:DB8::1")).target == "2001:db8::1"
    assert bans.add(Ban("account", "Mallory")).target == "Mallory"
    assert bans.address("10.200.0.1").target == "10.0.0.0/8"
    assert bans.address("::ffff:10.0.0.5").target == "10.0.0.0/8"
    assert bans.address("2001:db8::1") is not None and bans.address("2001:db8::2") is None
    assert bans.address("/tmp/socket") is None
    assert bans.account("MALLORY").target == "Mallory"
    assert bans.remove("address", "10.9.9.9/8").target == "10.0.0.0/8"
    assert bans.remove("address", "10.9.9.9/8") is None
    with pytest.raises(BanError, match="not an address or a network"):
        bans.add(Ban("address", "example.org"))
