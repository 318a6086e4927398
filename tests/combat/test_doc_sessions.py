"""The example sessions of docs/protocols/combat.md, replayed in memory against CombatService.

Each textual line of a session is converted to a Combat message: a ``X>`` line is encoded with
``wire.encode_client`` and sent on X's connection (``RAW <hex>`` sends the bytes as they are); the
bytes X receives are parsed with ``wire.ClientParser`` and every message must be exactly the next
``X<`` line, in order, both as text and as bytes. A client connects just before its first line
(connections are seated in arrival order); ``X: closed`` means the server closed X's connection.

A client with ``LINE <text>`` steps talks to the handshake port: ``LINE`` lines are its text lines
until the one that says the binary protocol follows. ``X> DISCONNECT`` closes X's connection and
``X> WAIT <seconds>`` lets the server's clock run. Tokens are random, so ``$alice`` / ``$bob`` in a
sent line stand for those accounts' tokens, and a resume token the server sends is shown (and may be
sent back) as ``$t1``, ``$t2``, ... in the order they appear.
"""

from __future__ import annotations

import random
import re

import pytest
from twisted.internet.task import Clock

from gamed.combat import wire
from gamed.combat.client import ServerStream
from gamed.combat.service import CombatService
from gamed.config import CombatConfig, Limits, PlayersConfig
from gamed.players import Players
from tests.docsessions import replay_in_memory, sessions
from tests.memaccounts import MemoryAccounts
from tests.memclient import Client

SESSIONS = sessions("combat.md")

KINDS = {kind.value: kind for kind in wire.SeatKind}


# --- the textual form of a message (defined in the document's "Example sessions") ----------


def _hex(data: bytes) -> str:
    return bytes(data).hex()


def text_of(message) -> str:
    """The session text of a server→client or client→server message."""
    match message:
        case wire.MsgSeat(seat, seats, version):
            return f"MSG_SEAT seat={seat} players={seats} version={version}"
        case wire.MsgPlayers(seats, _):
            return "MSG_PLAYERS " + " ".join(
                s.kind.value if s.kind is wire.SeatKind.OPEN else f"{s.kind.value}:{s.name}" for s in seats
            )
        case wire.ReqOptions():
            return "REQ_OPTIONS"
        case wire.MsgOptions(options):
            return f"MSG_OPTIONS raw={_hex(wire.write_options(options))}"
        case wire.HostOptions(data):
            return f"MSG_OPTIONS raw={_hex(data)}"
        case wire.ReqSetup():
            return "REQ_SETUP"
        case wire.MsgSetup(data):
            return f"MSG_SETUP raw={_hex(data)}"
        case wire.MsgStart():
            return "MSG_START"
        case wire.ReqMove(source, target):
            return f"REQ_MOVE from={source} to={target}"
        case wire.MsgMove(source, target):
            return f"MSG_MOVE from={source} to={target}"
        case wire.MsgMoveError(code, seat):
            return f"MSG_MOVE error={code} seat={seat}"
        case wire.MsgAttack(source, who_from, target, who_to):
            return f"MSG_ATTACK from={source} who_from={who_from} to={target} who_to={who_to}"
        case wire.MsgGameover(winner):
            return f"MSG_GAMEOVER winner={winner}"
        case wire.ReqSync():
            return "REQ_SYNC"
        case wire.MsgSync(turn, state, units):
            return f"MSG_SYNC turn={turn} state={state.name} units={_hex(units)}"
    raise TypeError(f"no session text for {message!r}")


def _fields(words: list[str], *names: str) -> list[str]:
    got = dict(word.split("=", 1) for word in words)
    assert list(got) == list(names), f"fields {list(got)}, expected {list(names)}"
    return [got[name] for name in names]


def _ints(words: list[str], *names: str) -> list[int]:
    return [int(v) for v in _fields(words, *names)]


def server_message(text: str):
    """The server→client message a ``X<`` line shows."""
    name, *words = text.split(" ")
    match name:
        case "MSG_SEAT":
            return wire.MsgSeat(*_ints(words, "seat", "players", "version"))
        case "MSG_PLAYERS":
            seats = []
            for word in words:
                kind, _, seat_name = word.partition(":")
                seats.append(wire.PlayerSeat(KINDS[kind], seat_name))
            return wire.MsgPlayers(seats)
        case "REQ_OPTIONS" if not words:
            return wire.ReqOptions()
        case "MSG_OPTIONS":
            (raw,) = _fields(words, "raw")
            options, unrecognised = wire.read_options(bytes.fromhex(raw))
            assert unrecognised == 0
            return wire.MsgOptions(options)
        case "REQ_SETUP" if not words:
            return wire.ReqSetup()
        case "MSG_START" if not words:
            return wire.MsgStart()
        case "MSG_MOVE" if words and words[0].startswith("error="):
            return wire.MsgMoveError(*_ints(words, "error", "seat"))
        case "MSG_MOVE":
            return wire.MsgMove(*_ints(words, "from", "to"))
        case "MSG_ATTACK":
            return wire.MsgAttack(*_ints(words, "from", "who_from", "to", "who_to"))
        case "MSG_GAMEOVER":
            return wire.MsgGameover(*_ints(words, "winner"))
        case "MSG_SYNC":
            turn, state, units = _fields(words, "turn", "state", "units")
            return wire.MsgSync(int(turn), wire.State[state], bytes.fromhex(units))
    raise ValueError(f"not a server message: {text!r}")


def client_bytes(text: str) -> bytes:
    """The bytes a ``X>`` line sends."""
    name, *words = text.split(" ")
    match name:
        case "RAW":
            return bytes.fromhex("".join(words))
        case "REQ_OPTIONS" if not words:
            message = wire.ReqOptions()
        case "MSG_OPTIONS":
            message = wire.HostOptions(bytes.fromhex(*_fields(words, "raw")))
        case "MSG_SETUP":
            message = wire.MsgSetup(bytes.fromhex(*_fields(words, "raw")))
        case "REQ_MOVE":
            message = wire.ReqMove(*_ints(words, "from", "to"))
        case "REQ_SYNC" if not words:
            message = wire.ReqSync()
        case _:
            raise ValueError(f"not a client message: {text!r}")
    assert text_of(message) == text, "the session line is not in its canonical form"
    return wire.encode_client(message)


# --- replaying -----------------------------------------------------------------------------


_SWITCH = re.compile(rb"^OK [^\r\n]*: binary protocol follows\r\n", re.M)


class World:
    """What a session's clients share: the service, its clock, the tokens by placeholder."""

    def __init__(self, service: CombatService, clock: Clock, tokens: dict[str, str]):
        self.service = service
        self.clock = clock
        self.tokens = dict(tokens)  # placeholder ("$alice", "$t1") -> token
        self.resumes = 0

    def placeholder(self, token: str) -> str:
        for name, value in self.tokens.items():
            if value == token:
                return name
        self.resumes += 1
        name = f"$t{self.resumes}"
        self.tokens[name] = token
        return name

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\w+", lambda m: self.tokens.get(m[0], m[0]), text)


class Seat:
    """One connection of a session, speaking in session lines: ``send`` encodes a ``X>`` line, ``read``
    parses what arrived and gives each message's text, having checked that the text reads back as the
    same message with the same bytes. A handshake client's text lines read as ``LINE <text>``."""

    def __init__(self, world: World, handshake: bool = False):
        self.world = world
        service = world.service
        self.client = Client(service, factory=service.text_port_factory() if handshake else None)
        self.parser = wire.ClientParser()
        self.text = handshake
        # After the handshake its binary part may carry NOTICES lines: the terminal client's reader.
        self.stream = ServerStream() if handshake else None

    @property
    def lost(self) -> bool:
        return self.client.lost

    def send(self, text: str) -> None:
        if text == "DISCONNECT":
            return self.client.drop()
        if text.startswith("WAIT "):
            return self.world.clock.advance(float(text.split()[1]))
        if text.startswith("LINE "):
            return self.client.raw(self.world.substitute(text[5:]).encode("ascii") + b"\r\n")
        self.client.raw(client_bytes(text))

    def _lines(self, data: bytes) -> tuple[list[str], bytes]:
        switch = _SWITCH.search(data)
        text, rest = (data, b"") if switch is None else (data[: switch.end()], data[switch.end() :])
        assert text.endswith(b"\r\n") or not text, "a text line arrived cut short"
        lines = []
        for line in text.decode("ascii").split("\r\n")[:-1]:
            if line.startswith("TOKEN "):
                line = "TOKEN " + self.world.placeholder(line[6:])
            lines.append("LINE " + line)
        if switch is not None:
            self.text = False
        return lines, rest

    def read(self) -> list[str]:
        data = self.client.transport.value()
        self.client.transport.clear()
        lines = []
        if self.text:
            lines, data = self._lines(data)
        if self.stream is not None:  # "message" events, and "notice" lines between them
            events = self.stream.feed(data)
            assert all(kind in ("message", "notice") for kind, _ in events), events
        else:
            events = [("message", m) for m in self.parser.feed(data)]
            assert self.parser.buffered == 0, "a message arrived cut short"
        self.client.finish()
        for kind, got in events:
            if kind == "notice":
                lines.append("LINE " + got)
                continue
            text = text_of(got)
            expected = server_message(text)
            assert expected == got, text
            assert wire.encode(expected) == wire.encode(got), text
            lines.append(text)
        return lines


def make_world() -> World:
    """The service of the sessions: the accounts alice and bob, a 60 s grace, no move time."""
    clock = Clock()
    accounts = MemoryAccounts()
    tokens = {f"${name}": accounts.add(name) for name in ("alice", "bob")}
    players = Players(PlayersConfig(), accounts, clock)
    service = CombatService(Limits(), clock, CombatConfig(move_time=0, rejoin_grace=60), rng=random.Random(1), players=players)
    return World(service, clock, tokens)


def replay(session) -> None:
    world = make_world()
    handshake = {s.client for s in session.steps if s.text.startswith("LINE ")}
    # Nothing here runs from the clock but WAIT: every line a client waits for has already arrived.
    replay_in_memory(session, lambda name: Seat(world, name in handshake), max_waits=0)


def test_the_document_has_its_sessions():
    titles = [s.title for s in SESSIONS]
    assert "Two players start a game on the Default map" in titles
    assert "A move out of turn and an illegal move" in titles
    assert "A map name that is not plain text is refused" in titles
    assert "A logged-in player drops and logs in again" in titles
    assert "A guest comes back with its resume token" in titles
    assert "A seat not back within the grace loses" in titles
    assert "An original client comes back from the same address" in titles


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.title)
def test_session_replays_exactly(session):
    replay(session)


def test_the_notation_round_trips_every_message_kind():
    from gamed.combat.maps import shipped_maps

    small = shipped_maps()["Small"]
    for message in [
        wire.MsgSeat(1, 2),
        wire.MsgPlayers([wire.PlayerSeat(wire.SeatKind.PLAYER, "player1"), wire.PlayerSeat(wire.SeatKind.OPEN)]),
        wire.ReqOptions(),
        wire.MsgOptions(small),
        wire.ReqSetup(),
        wire.MsgStart(),
        wire.MsgMove(30, 40),
        wire.MsgMoveError(-3, 1),
        wire.MsgAttack(49, -11, 59, 7),
        wire.MsgGameover(-1),
        wire.MsgSync(0, wire.State.WAIT),
        wire.MsgSync(1, wire.State.PLAYING, bytes([0x1C, 0x0F, 0x2B])),
    ]:
        assert server_message(text_of(message)) == message
    for message in [wire.ReqOptions(), wire.HostOptions.of(small), wire.MsgSetup(b"\x10\x1b"), wire.ReqMove(-1, 0), wire.ReqSync()]:
        assert client_bytes(text_of(message)) == wire.encode_client(message)


def test_the_example_bot_readme_tells_the_default_ports():
    import pathlib
    import re

    from gamed.config import CombatConfig

    text = (pathlib.Path(__file__).resolve().parents[2] / "examples/combat/README.md").read_text()
    assert "off by default" not in text
    found = re.search(r"Combat is on by default \(binary port `([^`]+)`, handshake port `([^`]+)`", text)
    assert found, "the README says where Combat listens by default"
    assert (found[1], found[2]) == (CombatConfig().listen[0], CombatConfig().text_listen[0])
