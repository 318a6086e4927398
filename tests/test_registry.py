"""The game registry: every registered game provides IGame, and everything that lists games (the
command line, the config file, the ports, the records' game types, the web API) reads it, so a
made-up sixth game gets its section, options, port and web listing from one registry entry."""

from __future__ import annotations

import configparser
import json
import pathlib
import re
import subprocess
import sys

import attrs
import pytest
from twisted.application.service import MultiService
from twisted.internet.address import IPv4Address
from twisted.internet.protocol import Factory
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import capturedLogs, formatEvent
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python import usage
from twisted.web.test.requesthelper import DummyRequest
from zope.interface.verify import verifyObject

from gamed import config, ports, records, registry, tap
from gamed.registry import Game, GameContext, GameOption, GamePort, IGame
from gamed.textline import ConnectionLimits

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _in_a_scratch_directory(tmp_path, monkeypatch):
    """makeService opens the default records database (./gamed.sqlite): never in the checkout."""
    monkeypatch.chdir(tmp_path)


# --- the five games -------------------------------------------------------------------------------


def test_every_registered_game_provides_igame():
    assert [g.name for g in registry.GAMES] == ["kalaha", "fight", "combat", "stratego", "connect4"]
    for game in registry.GAMES:
        assert verifyObject(IGame, game)
        lo, hi = game.seats
        assert 1 <= lo <= hi


def test_names_sections_options_and_ports_are_unique_and_name_real_settings():
    games = registry.GAMES
    assert len({g.name for g in games}) == len({g.section for g in games}) == len(games)
    options = [o.option for g in games for o in g.options] + [p.option for g in games for p in g.ports]
    assert len(options) == len(set(options))
    for game in games:
        fields = {f.name for f in attrs.fields(game.settings)}
        for option in game.options:
            assert option.setting in fields, f"--{option.option}: {game.section} has no {option.setting}"
        for port in game.ports:
            assert isinstance(getattr(game.settings(), port.setting), tuple), f"{game.section}.{port.setting}"


def test_importing_the_registry_imports_no_reactor_and_no_game_service():
    code = (
        "import sys; from gamed import registry; games = registry.GAMES; "
        "[g.settings for g in games]; "
        "print(sorted(m for m in sys.modules if m == 'twisted.internet.reactor' or m.endswith('.service')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_config_has_a_section_of_each_game_and_the_shared_ones():
    cfg = config.Config()
    for game in registry.GAMES:
        assert isinstance(getattr(cfg, game.section), game.settings)
    assert list(config.sections(config.Config)) == [g.section for g in registry.GAMES] + ["web", "generic", "limits", "records", "players", "bots", "tournaments", "ladder", "admin"]


def test_records_ports_and_web_name_the_registered_games():
    assert records.GAME_TYPES == tuple(g.name for g in registry.GAMES)
    for game in registry.GAMES:
        for port in game.ports:
            assert ports.SERVED[port.option] == port.serves


def _unit(name: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str
    parser.read(ROOT / "systemd" / name)
    return parser


def test_every_port_has_its_systemd_socket_unit():
    sockets = _unit("gamed.service")["Service"]["Sockets"].split()
    for port in [p for g in registry.GAMES for p in g.ports] + [tap.WEB_PORT]:
        assert port.unit in sockets, f"gamed.service does not pass {port.unit}"
        assert _unit(port.unit)["Socket"]["FileDescriptorName"] == port.option


def _readme_options() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("| option | default | meaning |", 1)[1].split("\n\n", 1)[0]
    first_cells = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `--")]
    return {name for cell in first_cells for name in re.findall(r"`--([a-z0-9-]+)", cell)}


def test_help_lists_the_options_of_the_readme_table():
    shown = set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9-]+)", str(tap.Options()), re.MULTILINE))
    assert shown - {"help", "version"} == _readme_options()


# --- a made-up sixth game -------------------------------------------------------------------------


@attrs.frozen
class NimConfig:
    """Settings of the made-up game."""

    listen: tuple[str, ...] = ("tcp:4800",)
    heaps: int = 3
    grace: float | None = None


def _check_nim(settings: NimConfig) -> None:
    if not 1 <= settings.heaps <= 9:
        raise config.ConfigError(f"nim.heaps must be 1 to 9, not {settings.heaps}")


class NimProtocol(LineOnlyReceiver):
    def connectionMade(self):  # noqa: N802
        self.sendLine(b"HELLO NIM %d" % self.factory.heaps)


class NimService(MultiService):
    name = "nim"

    def __init__(self, settings: NimConfig, ctx: GameContext):
        super().__init__()
        self.settings, self.ctx = settings, ctx

    def port_factory(self) -> ConnectionLimits:
        factory = Factory.forProtocol(NimProtocol)
        factory.heaps = self.settings.heaps
        return ConnectionLimits(factory, self.ctx.limits.max_connections, self.ctx.limits.max_per_peer)


def _nim_service(ctx: GameContext):
    nim = NimService(ctx.cfg.nim, ctx)
    return nim, {"nim": nim.port_factory}


NIM = Game(
    name="nim",
    title="Nim",
    section="nim",
    settings=NimConfig,
    seats=(2, 2),
    service=_nim_service,
    check=_check_nim,
    ports=(GamePort("nim", "listen", "nim heaps", "gamed-nim.socket", "Listen for Nim players; repeatable; 'none' = off [default: tcp:4800]"),),
    options=(GameOption("nim-heaps", "heaps", "Heaps on a Nim board, 1 to 9 [default: {default}]"),),
)
SIX = registry.GAMES + (NIM,)


def six_options(*argv: str) -> tap.GamedOptions:
    opts = tap.options_class(SIX)()
    opts.parseOptions(list(argv))
    return opts


def test_a_sixth_game_provides_igame():
    assert verifyObject(IGame, NIM)


def test_a_sixth_game_gets_its_options_and_config_section(tmp_path):
    assert "--nim-heaps" not in str(tap.Options())  # the daemon's own registry does not have it
    usage_text = str(tap.options_class(SIX)())
    assert re.search(r"--nim=\s+Listen for Nim players", usage_text)
    assert re.search(r"--nim-heaps=\s+Heaps on a Nim board, 1 to 9 \[default: 3\]", usage_text)
    cfg = six_options("--nim", "tcp:4801", "--nim-heaps", "5").config
    assert cfg.nim == NimConfig(listen=("tcp:4801",), heaps=5)
    assert cfg.kalaha == config.Config().kalaha and cfg.grace("nim") == cfg.players.grace
    path = tmp_path / "nim.toml"
    path.write_text('[nim]\nheaps = 7\nlisten = ["tcp:4802"]\n')
    assert six_options("--config", str(path)).config.nim == NimConfig(listen=("tcp:4802",), heaps=7)
    assert six_options("--config", str(path), "--nim", "none").config.nim.listen == ()


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--nim-heaps", "many"), "nim.heaps must be a whole number, not 'many'"),
        (("--nim-heaps", "0"), "nim.heaps must be 1 to 9, not 0"),
        (("--nim", "bogus:1"), "--nim 'bogus:1' is not a usable listen description"),
    ],
)
def test_a_sixth_game_s_bad_settings_stop_start_up(argv, message):
    with pytest.raises(usage.UsageError, match=re.escape(message)):
        six_options(*argv)


def test_a_sixth_game_s_unknown_setting_is_named(tmp_path):
    path = tmp_path / "nim.toml"
    path.write_text("[nim]\nrows = 3\n")
    with pytest.raises(usage.UsageError, match=re.escape("unknown setting nim.rows; known: grace, heaps, listen")):
        six_options("--config", str(path))


def test_a_sixth_game_is_served_on_its_port_and_listed_on_the_web():
    reactor = MemoryReactorClock()
    argv = ("--records", "none", "--kalaha", "none", "--fight", "none", "--fight-gui", "none", "--combat", "none",
            "--combat-text", "none", "--connect4", "none", "--generic", "none", "--nim", "tcp:4801", "--nim-heaps", "4")  # fmt: skip
    service = tap.makeService(six_options(*argv), reactor=reactor)
    assert isinstance(service.getServiceNamed("nim"), NimService)
    with capturedLogs() as events:
        service.privilegedStartService()
        service.startService()
        reactor.run()
    assert [(port, factory.logPrefix()) for port, factory, _, _ in reactor.tcpServers] == [(4801, "nim heaps"), (8080, "web site")]
    assert [formatEvent(e) for e in events].count("gamed ready: nim heaps tcp:4801, web site tcp:8080") == 1
    factory = reactor.tcpServers[0][1]
    transport = StringTransport()
    factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000)).makeConnection(transport)
    assert transport.value() == b"HELLO NIM 4\r\n"

    api = service.getServiceNamed("web").root.children[b"api"]
    request = DummyRequest([b"server"])
    server = json.loads(api.render(request))
    assert server["games"][-1] == {"name": "nim", "title": "Nim", "seats": [2, 2], "board": None}
    assert [p["serves"] for p in server["ports"]] == ["nim", "web"]
    request = DummyRequest([b"ratings", b"nim"])
    assert json.loads(api.render(request)) == {"game": "nim", "ratings": []}
    request = DummyRequest([b"ratings", b"chess"])
    assert json.loads(api.render(request)) == {"error": "no game type chess; known: kalaha, fight, combat, stratego, connect4, nim"}
    assert request.responseCode == 404
    service.stopService()


def test_without_its_port_a_sixth_game_is_not_started():
    reactor = MemoryReactorClock()
    service = tap.makeService(six_options("--records", "none", "--nim", "none"), reactor=reactor)
    with pytest.raises(KeyError):
        service.getServiceNamed("nim")
    assert service.getServiceNamed("kalaha")
