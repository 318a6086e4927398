"""Combat's seats against the real daemon (issue 14): an original client connecting while a seat
is away does not get that army (it comes from another address); the seat's own address takes it
back with the whole state; a guest of the handshake port comes back with its resume token; a seat
not back within the grace forfeits and the game is recorded as its loss; an account logs in and
takes its seat back with LOGIN, and an account not back in time loses, rated, in the records."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
from twisted.internet import defer, endpoints, reactor, task

from gamed.combat import wire
from gamed.stratego.rules import Unit
from tests.combat.test_table import line_map
from tests.integration.support import LOOPBACK, with_timeout
from tests.integration.test_combat_daemon import CombatClient

LINE = line_map(2, {Unit.FLAG: 1, Unit.MARSHAL: 1})  # cells 0 1 | 2 3: seat 0's marshal on 1 takes the flag on 2
SETUPS = ({0: Unit.FLAG, 1: Unit.MARSHAL}, {2: Unit.FLAG, 3: Unit.MARSHAL})


class HandshakeClient(CombatClient):
    """A client of the handshake port: ``await line()`` for text lines, then the binary protocol
    once a line says it follows."""

    def __init__(self):
        super().__init__()
        self.text = bytearray()
        self.text_lines: list[str] = []
        self.line_waiting: defer.Deferred | None = None
        self.binary = False

    def dataReceived(self, data):  # noqa: N802
        if self.binary:
            return super().dataReceived(data)
        self.text += data
        while not self.binary and b"\r\n" in self.text:
            line, _, rest = bytes(self.text).partition(b"\r\n")
            self.text = bytearray(rest)
            text = line.decode("ascii")
            self.text_lines.append(text)
            if text.endswith("binary protocol follows"):
                self.binary = True
                rest, self.text = bytes(self.text), bytearray()
                self._wake()
                if rest:
                    super().dataReceived(rest)
                return
        self._wake()

    def _wake(self):
        if self.line_waiting is not None and self.text_lines:
            d, self.line_waiting = self.line_waiting, None
            d.callback(self.text_lines.pop(0))

    def line(self, seconds=10):
        d = defer.Deferred()
        self.line_waiting = d
        self._wake()
        return with_timeout(d, seconds, "a handshake line")

    def say(self, text: str):
        self.transport.write(text.encode() + b"\r\n")


async def connect(port: int, client=None, bind: str = "127.0.0.1"):
    endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port, timeout=10, bindAddress=(bind, 0))
    return await endpoints.connectProtocol(endpoint, client or CombatClient())


async def start_line_game(first: CombatClient, second: CombatClient) -> None:
    """Both are seated (seat 0, seat 1): the host sends the 1-row map, both set up, it starts."""
    await first.expect(wire.ReqOptions)
    first.send(wire.HostOptions.of(LINE))
    for client, seat in ((first, 0), (second, 1)):
        await client.expect(wire.ReqSetup)
        client.send(wire.MsgSetup(wire.write_setup(LINE, seat, SETUPS[seat])))
    await first.expect(wire.MsgStart)
    await second.expect(wire.MsgStart)


async def seat_open(client: CombatClient, seat: int) -> None:
    while (await client.expect(wire.MsgPlayers)).seats[seat].kind is not wire.SeatKind.OPEN:
        pass


@pytest_twisted.ensureDeferred
async def test_an_original_client_from_another_address_does_not_get_the_away_army(start_daemon):
    daemon = await start_daemon("--combat-rejoin-grace", "60", kalaha="none", combat=LOOPBACK)
    port = daemon.ports["combat"]
    alice = await connect(port)
    assert await alice.expect(wire.MsgSeat) == wire.MsgSeat(0, 2)
    bob = await connect(port, bind="127.0.0.2")
    assert await bob.expect(wire.MsgSeat) == wire.MsgSeat(1, 2)
    await start_line_game(alice, bob)
    bob.transport.loseConnection()
    await seat_open(alice, 1)
    mallory = await connect(port, bind="127.0.0.3")
    assert await mallory.expect(wire.MsgSeat) == wire.MsgSeat(0, 2), "a new table's seat, not bob's army"
    await mallory.expect(wire.ReqOptions)
    back = await connect(port, bind="127.0.0.2")
    assert await back.expect(wire.MsgSeat) == wire.MsgSeat(1, 2), "bob's own address takes it back"
    sync = await back.expect(wire.MsgSync)
    assert sync.turn == 0 and sync.units == bytes([0x1C, 0x1C, 0x20, 0x2B]), "the whole state: its own view"
    await back.expect(wire.MsgStart)
    alice.send(wire.ReqMove(1, 2))
    assert await back.expect(wire.MsgGameover) == wire.MsgGameover(0)
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_a_guest_comes_back_with_its_resume_token_and_a_seat_not_back_forfeits(start_daemon, tmp_path):
    daemon = await start_daemon(
        "--combat-text", LOOPBACK, "--combat-rejoin-grace", "3", "--combat-records", str(tmp_path),
        kalaha="none", combat=LOOPBACK,
    )
    port = daemon.ports["combat-text"]
    ann = await connect(port, HandshakeClient())
    assert (await ann.line()).startswith("COMBAT gamed:")
    for line in ("NAME ann", "TOKEN", "PLAY"):
        ann.say(line)
    assert await ann.line() == "OK NAME ann"
    assert (await ann.line()).startswith("OK TOKEN")
    token = (await ann.line()).split()[1]
    assert await ann.line() == "OK PLAY: binary protocol follows"
    assert await ann.expect(wire.MsgSeat) == wire.MsgSeat(0, 2)
    bea = await connect(port, HandshakeClient())
    await bea.line()
    bea.say("NAME bea")
    bea.say("PLAY")
    await bea.line()
    assert await bea.line() == "OK PLAY: binary protocol follows"
    await start_line_game(ann, bea)
    ann.transport.loseConnection()
    await seat_open(bea, 0)
    back = await connect(port, HandshakeClient(), bind="127.0.0.2")
    await back.line()
    back.say(f"RESUME {token}")
    assert await back.line() == "OK RESUME seat 0 (ann): binary protocol follows"
    assert await back.expect(wire.MsgSeat) == wire.MsgSeat(0, 2)
    assert (await back.expect(wire.MsgSync)).turn == 0
    await back.expect(wire.MsgStart)
    bea.transport.loseConnection()  # now bea leaves and does not come back within 3 s
    assert await back.expect(wire.MsgGameover, seconds=20) == wire.MsgGameover(0)
    results = tmp_path / "results.jsonl"
    for _ in range(200):
        if results.exists() and results.read_text():
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (record["winner"], record["reason"], record["aborted"]) == (0, "forfeit", False)
    assert record["detail"] == "seat 1 (bea) left the game and did not come back within 3 s"
    late = await connect(port, HandshakeClient())
    await late.line()
    late.say(f"RESUME {token}")
    assert await late.line() == "ERROR 428 the game of that resume token is over"
    assert "Traceback" not in daemon.text and token not in daemon.text, "tokens are never logged"


@pytest_twisted.ensureDeferred
async def test_an_account_logs_in_and_takes_its_seat_back_and_a_wrong_token_does_not(start_daemon, tmp_path):
    from gamed import accounts
    from gamed.records import RecordStore

    database = tmp_path / "gamed.sqlite"
    store = RecordStore(f"sqlite:{database}", reactor)
    await store.start()
    book = accounts.AccountStore(store)
    _, alice_token = await book.add("alice")
    _, bob_token = await book.add("bob")
    await store.close()
    daemon = await start_daemon(
        "--combat-text", LOOPBACK, "--records", f"sqlite:{database}", kalaha="none", combat=LOOPBACK
    )
    port = daemon.ports["combat-text"]
    players = []
    for name, token in (("alice", alice_token), ("bob", bob_token)):
        client = await connect(port, HandshakeClient())
        await client.line()
        client.say(f"LOGIN {name} {token}")
        assert await client.line() == f"OK LOGIN {name}"
        client.say("PLAY")
        assert await client.line() == "OK PLAY: binary protocol follows"
        players.append(client)
    alice, bob = players
    await start_line_game(alice, bob)
    bob.transport.loseConnection()
    await seat_open(alice, 1)
    impostor = await connect(port, HandshakeClient())
    await impostor.line()
    impostor.say("NAME bob")
    assert (await impostor.line()).startswith("ERROR 424 ")
    impostor.say("LOGIN bob " + "x" * 32)
    assert await impostor.line() == "ERROR 420 unknown account or wrong token"
    back = await connect(port, HandshakeClient())
    await back.line()
    back.say(f"LOGIN bob {bob_token}")
    assert await back.line() == "OK LOGIN bob"
    back.say("PLAY")
    assert await back.line() == "OK RESUME seat 1 (bob): binary protocol follows"
    assert (await back.expect(wire.MsgSync)).turn == 0
    alice.send(wire.ReqMove(1, 2))
    assert await back.expect(wire.MsgGameover) == wire.MsgGameover(0)
    assert "Traceback" not in daemon.text


@pytest_twisted.ensureDeferred
async def test_an_account_not_back_in_time_forfeits_and_the_loss_is_rated_for_the_accounts(start_daemon, tmp_path):
    import sqlite3

    from gamed import accounts
    from gamed.records import RecordStore

    database = tmp_path / "gamed.sqlite"
    store = RecordStore(f"sqlite:{database}", reactor)
    await store.start()
    book = accounts.AccountStore(store)
    tokens = {name: (await book.add(name))[1] for name in ("alice", "bob")}
    await store.close()
    daemon = await start_daemon(
        "--combat-text", LOOPBACK, "--combat-rejoin-grace", "1", "--records", f"sqlite:{database}",
        kalaha="none", combat=LOOPBACK,
    )
    port = daemon.ports["combat-text"]
    players = []
    for name in ("alice", "bob"):
        client = await connect(port, HandshakeClient())
        await client.line()
        client.say(f"LOGIN {name} {tokens[name]}")
        assert await client.line() == f"OK LOGIN {name}"
        client.say("PLAY")
        assert await client.line() == "OK PLAY: binary protocol follows"
        players.append(client)
    alice, bob = players
    await start_line_game(alice, bob)
    bob.transport.loseConnection()  # bob does not come back within the 1 s grace
    assert await alice.expect(wire.MsgGameover, seconds=20) == wire.MsgGameover(0)
    rows = []
    for _ in range(200):
        with sqlite3.connect(database) as db:
            rows = db.execute(
                "SELECT m.reason, m.rated, s.seat, s.name, s.kind, s.score, s.account_id IS NOT NULL, s.rating_after,"
                " s.sigma_after"
                " FROM matches m JOIN seats s ON s.match_id = m.id WHERE m.game = 'combat' ORDER BY s.seat"
            ).fetchall()
        if rows:
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    assert [row[:7] for row in rows] == [
        ("forfeit", 1, 0, "alice", "player", 1.0, 1),
        ("forfeit", 1, 1, "bob", "player", 0.0, 1),
    ]
    assert rows[0][7] > 1500 > rows[1][7], "the forfeit is rated: alice gains what bob loses"
    assert rows[0][8] == rows[1][8] < 500, "and both newcomers' uncertainty shrank alike"
    with sqlite3.connect(database) as db:
        owners = db.execute("SELECT r.name, a.name FROM ratings r JOIN accounts a ON a.id = r.account_id WHERE r.game = 'combat'").fetchall()
    assert sorted(owners) == [("alice", "alice"), ("bob", "bob")], "each rated row is the account's"
    assert "Traceback" not in daemon.text and tokens["bob"] not in daemon.text
