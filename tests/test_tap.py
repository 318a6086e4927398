"""Plugin discovery, command-line options and the TOML config file."""

import contextlib
import pathlib
import re
import sqlite3
import sys

import pytest
from twisted.application import strports
from twisted.application.service import IServiceMaker
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import capturedLogs, formatEvent
from twisted.plugin import getPlugins
from twisted.python import usage

from gamed import config, tap
from gamed.config import Config, ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _in_a_scratch_directory(tmp_path, monkeypatch):
    """makeService opens the default records database (./gamed.sqlite): never in the checkout."""
    monkeypatch.chdir(tmp_path)


def options(*argv: str) -> tap.Options:
    opts = tap.Options()
    opts.parseOptions(list(argv))
    return opts


def test_plugin_is_discovered_by_twisted():
    makers = {p.tapname: p for p in getPlugins(IServiceMaker)}
    assert "gamed" in makers
    assert makers["gamed"].options is tap.Options
    assert makers["gamed"].makeService is tap.makeService


def test_defaults():
    cfg = options().config
    assert cfg == Config()
    assert cfg.kalaha.listen == ("tcp:4600",)
    assert cfg.kalaha.move_time == 60 and cfg.kalaha.strikes == 3


def test_command_line_settings():
    cfg = options(
        "--kalaha", "tcp:5000", "--kalaha", "tcp:5001:interface=127.0.0.1",
        "--kalaha-move-time", "12.5", "--kalaha-strikes", "0", "--kalaha-first", "random",
        "--kalaha-computer", "no", "--kalaha-board", "off", "--max-line", "100",
        "--idle-timeout", "0", "--max-connections", "5", "--max-per-peer", "0", "--line-rate", "0",
    ).config
    assert cfg.kalaha.listen == ("tcp:5000", "tcp:5001:interface=127.0.0.1")
    assert cfg.kalaha.move_time == 12.5 and cfg.kalaha.strikes == 0 and cfg.kalaha.first == "random"
    assert cfg.kalaha.computer is False and cfg.kalaha.board is False
    assert cfg.limits.max_line == 100 and cfg.limits.idle_timeout == 0
    assert cfg.limits.max_connections == 5 and cfg.limits.max_per_peer == 0 and cfg.limits.line_rate == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--kalaha-move-time", "soon"], "kalaha.move_time must be a number, not 'soon'"),
        (["--kalaha-strikes", "-1"], "kalaha.strikes must not be negative"),
        (["--kalaha-strikes", "1.5"], "kalaha.strikes must be a whole number"),
        (["--kalaha-first", "loudest"], "kalaha.first must be one of arrival, alternate, random"),
        (["--kalaha-computer", "maybe"], "kalaha.computer must be true or false"),
        (["--max-line", "3"], "limits.max_line must be 16 to 1048576 bytes"),
        (["--kalaha", "tcp:notaport"], "--kalaha 'tcp:notaport' is not a usable listen description"),
        (["--kalaha", "carrier-pigeon:1"], "is not a usable listen description"),
        (["--kalaha", "none", "--fight", "none", "--combat", "none", "--combat-text", "none", "--connect4", "none"], "every game is switched off: nothing to serve"),
        (["--config", "/nonexistent/gamed.conf"], "cannot read config file /nonexistent/gamed.conf"),
        (["--frobnicate"], "frobnicate"),
    ],
)
def test_bad_options_are_usage_errors_with_a_clear_message(argv, message):
    with pytest.raises(usage.UsageError, match=".*") as e:
        options(*argv)
    assert message in str(e.value)


def test_config_file_is_read_and_the_command_line_wins(tmp_path):
    path = tmp_path / "gamed.conf"
    path.write_text(
        """
[kalaha]
listen = ["tcp:4700", "tcp:4701"]
move_time = 30
first = "alternate"

[limits]
max_per_peer = 8
"""
    )
    cfg = options("--config", str(path), "--kalaha-move-time", "5").config
    assert cfg.kalaha.listen == ("tcp:4700", "tcp:4701")
    assert cfg.kalaha.first == "alternate" and cfg.limits.max_per_peer == 8
    assert cfg.kalaha.move_time == 5


def test_strikes_for_people_are_set_per_game_in_the_config_file():
    built = config.build({"kalaha": {"strike_people": True}, "connect4": {"strike_people": "yes"}})
    assert built.kalaha.strike_people and built.connect4.strike_people
    assert not Config().kalaha.strike_people and not Config().connect4.strike_people


def test_config_listen_may_be_a_single_string():
    assert config.build({"kalaha": {"listen": "tcp:1234"}}).kalaha.listen == ("tcp:1234",)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[kalaha\n", "is not valid TOML"),
        ("[chess]\nx = 1\n", "unknown section [chess]; known: admin, bots, combat, connect4, fight, generic, kalaha, ladder, limits, players, records, stratego, tournaments, web"),
        ("[kalaha]\nspeed = 1\n", "unknown setting kalaha.speed"),
        ("[kalaha]\nmove_time = true\n", "kalaha.move_time must be a number, not True"),
        ("[kalaha]\nlisten = 4600\n", "kalaha.listen must be a listen description or a list of them"),
        ("kalaha = 3\n", "[kalaha] must be a table of settings"),
        ('[kalaha]\nstrike_people = "sometimes"\n', "kalaha.strike_people must be true or false, not 'sometimes'"),
        ("[connect4]\nstrike_people = 2\n", "connect4.strike_people must be true or false, not 2"),
    ],
)
def test_bad_config_files_name_the_file_and_the_setting(tmp_path, text, message):
    path = tmp_path / "bad.conf"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        config.load(str(path))
    assert str(path) in str(e.value) and message in str(e.value)


def test_shipped_example_config_is_valid_and_matches_the_defaults():
    assert config.load(str(ROOT / "etc" / "gamed.conf.example")) == Config()


def test_plain_tcp_descriptions_get_a_large_backlog():
    assert tap.listen_description("tcp:4600") == "tcp:4600:backlog=4096"
    assert tap.listen_description("tcp:4600:backlog=10") == "tcp:4600:backlog=10"
    assert tap.listen_description("ssl:4600:privateKey=k.pem") == "ssl:4600:privateKey=k.pem"


def test_make_service_listens_on_every_description():
    reactor = MemoryReactorClock()
    argv = ("--kalaha", "tcp:4600", "--kalaha", "tcp:4601", "--fight", "tcp:4500", "--fight-gui", "tcp:4550:backlog=9")
    service = tap.makeService(options(*argv), reactor=reactor)
    service.startService()
    ports = [(port, backlog) for port, factory, backlog, interface in reactor.tcpServers]
    assert ports == [(4600, 4096), (4601, 4096), (4500, 4096), (4550, 9), (5688, 4096), (5689, 4096), (4700, 4096), (8080, 4096), (4800, 4096)]
    kalaha = service.getServiceNamed("kalaha")
    assert all(isinstance(s, strports.StreamServerEndpointService) for s in kalaha)
    service.stopService()


def test_each_port_names_what_it_serves_and_one_line_says_when_all_listen():
    reactor = MemoryReactorClock()
    argv = ("--records", "none", "--kalaha", "tcp:4600", "--fight", "tcp:4500", "--combat", "none",
            "--combat-text", "none", "--connect4", "none", "--web", "tcp:8080")  # fmt: skip
    service = tap.makeService(options(*argv), reactor=reactor)
    with capturedLogs() as events:
        service.privilegedStartService()
        service.startService()
        assert not [e for e in events if "gamed ready" in formatEvent(e)], "not before the reactor runs"
        reactor.run()
    served = [factory.logPrefix() for port, factory, backlog, interface in reactor.tcpServers]
    assert served == ["kalaha", "virtual fight", "virtual fight GUI", "web site", "generic protocol"], "Twisted's 'X starting on N' lines"
    lines = [formatEvent(e) for e in events]
    assert lines.count(
        "gamed ready: kalaha tcp:4600, virtual fight tcp:4500, virtual fight GUI tcp:4550, web site tcp:8080, generic protocol tcp:4800"
    ) == 1  # (a MemoryReactor binds every interface; the daemon tests show an interface)
    assert [p.as_json()["address"] for p in service.ports.ports] == ["tcp:4600", "tcp:4500", "tcp:4550", "tcp:8080", "tcp:4800"]
    assert service.getServiceNamed("web").ports is service.ports  # the web site shows them to visitors
    service.stopService()


def test_version_option(capsys):
    with pytest.raises(SystemExit) as e:
        options("--version")
    assert e.value.code == 0 and capsys.readouterr().out.startswith("gamed 0.")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[stratego.ai."bad name"]\ncommand = "x"\n', "stratego.ai.bad name: an AI name is 1-32 letters"),
        ("[stratego.ai.a]\nopponent = \"x\"\n", "stratego.ai.a needs a command"),
        ('[stratego.ai.a]\ncommand = "x"\nflavour = 1\n', "unknown setting stratego.ai.a.flavour"),
        ('[stratego.ai.a]\ncommand = "x"\nworkdir = "tmp"\n', "stratego.ai.a.workdir must be fresh or persistent"),
        ("[stratego]\nrounds = 1\n", "stratego.rounds needs at least two AI programs"),
        ("[stratego]\nconcurrency = 0\n", "stratego.concurrency must be at least 1"),
    ],
)
def test_bad_stratego_settings_name_the_setting(tmp_path, text, message):
    path = tmp_path / "bad.conf"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        config.load(str(path))
    assert message in str(e.value)


def test_registered_ais_start_the_stratego_service(tmp_path):
    path = tmp_path / "gamed.conf"
    path.write_text('[stratego.ai.a]\ncommand = "./a"\n[stratego.ai.b]\ncommand = "./b x"\nopponent = "b-v2"\n')
    cfg = options("--config", str(path), "--kalaha", "none", "--fight", "none").config
    assert [(ai.name, ai.command, ai.shown) for ai in cfg.stratego.ai] == [("a", "./a", "./a"), ("b", "./b x", "b-v2")]
    service = tap.makeService(options("--config", str(path)), reactor=MemoryReactorClock())
    assert service.getServiceNamed("stratego").ais.keys() == {"a", "b"}


def test_connect4_is_served_by_default_and_can_be_switched_off():
    service = tap.makeService(options(), reactor=MemoryReactorClock())
    assert service.getServiceNamed("connect4").config.engines_dir == "engines"
    with pytest.raises(KeyError):
        tap.makeService(options("--connect4", "none"), reactor=MemoryReactorClock()).getServiceNamed("connect4")
    cfg = options("--connect4-engines", "/opt/engines", "--connect4-engine-time", "2.5", "--connect4-move-time", "30").config
    assert (cfg.connect4.engines_dir, cfg.connect4.engine_time, cfg.connect4.move_time) == ("/opt/engines", 2.5, 30.0)


def test_web_and_records_options():
    cfg = options("--web", "tcp:8181", "--web", "tcp:8182", "--records", "none").config
    assert cfg.web.listen == ("tcp:8181", "tcp:8182") and cfg.records.database == ""
    cfg = options("--web", "none", "--records", "sqlite:rel/x.sqlite").config
    assert cfg.web.listen == () and cfg.records.database == "sqlite:rel/x.sqlite"
    assert Config().web.listen == ("tcp:8080",) and Config().web.keepalive == 15.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("[web]\nviewer_buffer = 100\n", "web.viewer_buffer must be at least 4096 bytes"),
        ("[web]\nkeepalive = 7200\n", "web.keepalive must be at most 3600 seconds"),
        ("[web]\nmax_viewers = -1\n", "web.max_viewers must not be negative"),
        ("[web]\nmax_body = 100000000\n", "web.max_body must be at most 16777216 bytes"),
        ("[web]\nrequest_time = -1\n", "web.request_time must not be negative"),
        ("[web]\nidle_timeout = \"soon\"\n", "web.idle_timeout must be a number"),
        ("[web]\ncors = \"example.org\"\n", "web.cors must be \"\" (none), \"*\" (any) or origins like https://example.org"),
        ("[web]\ncors = \"https://a.example/path\"\n", "not 'https://a.example/path'"),
        ("[web]\ncors = \"* https://a.example\"\n", "not '*'"),
    ],
)
def test_bad_web_settings_name_the_setting(tmp_path, text, message):
    path = tmp_path / "bad.conf"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        config.load(str(path))
    assert message in str(e.value)


def test_the_web_bounds_and_cross_origin_policy_come_from_the_config(tmp_path):
    path = tmp_path / "gamed.conf"
    path.write_text('[web]\nidle_timeout = 30\nrequest_time = 4\nmax_body = 1024\ncors = "https://a.example, http://b.example:81"\n')
    service = tap.makeService(options("--config", str(path), "--records", "none"), reactor=MemoryReactorClock())
    web = service.getServiceNamed("web")
    site = web.site()
    assert site.timeOut == 30.0
    channel = site.buildProtocol(None)
    assert (channel.timeOut, channel.request_time, channel.max_body) == (30.0, 4.0, 1024)
    assert config.cors_origins(web.config.cors) == ("https://a.example", "http://b.example:81")
    assert config.cors_origins("") == () and config.cors_origins(" * ") == ("*",)
    assert Config().web.cors == "" and Config().web.max_body == 65_536


def test_the_web_site_and_records_share_one_hub_with_the_games():
    reactor = MemoryReactorClock()
    service = tap.makeService(options("--records", "none", "--fight", "tcp:4500"), reactor=reactor)
    web = service.getServiceNamed("web")
    assert service.getServiceNamed("kalaha").hub is web.hub is service.getServiceNamed("fight").hub
    assert web.hub.store is None
    with pytest.raises(KeyError):
        tap.makeService(options("--web", "none", "--records", "none"), reactor=MemoryReactorClock()).getServiceNamed("web")


def test_records_on_give_the_hub_a_store_opened_by_the_records_service(tmp_path):
    database = tmp_path / "m.sqlite"
    service = tap.makeService(options("--records", str(database)), reactor=MemoryReactorClock())
    records = service.getServiceNamed("records")
    assert list(service)[0] is records  # started first, stopped last (after the games' last stores)
    assert service.getServiceNamed("web").hub.store is records.store


def test_records_are_migrated_at_start_up_and_a_bad_database_stops_it(tmp_path):
    database = tmp_path / "m.sqlite"
    tap.makeService(options("--records", f"sqlite:{database}"), reactor=MemoryReactorClock())
    with contextlib.closing(sqlite3.connect(database)) as conn:  # migrated before the reactor runs
        assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] >= 2
    (tmp_path / "text.sqlite").write_text("not a database\n")
    for bad, why in (("text.sqlite", "file is not a database"), ("text.sqlite/x/y.sqlite", "does not exist"), ("no/dir/z.sqlite", "the directory")):
        with pytest.raises(SystemExit) as e:
            tap.makeService(options("--records", f"sqlite:{tmp_path / bad}"), reactor=MemoryReactorClock())
        assert str(e.value).startswith(f"gamed: cannot start: cannot open the records database sqlite:{tmp_path / bad}: ")
        assert why in str(e.value)
    assert not (tmp_path / "no").exists()


def test_without_web_and_records_no_game_feeds_a_hub():
    service = tap.makeService(options("--web", "none", "--records", "none"), reactor=MemoryReactorClock())
    assert all(service.getServiceNamed(name).hub is None for name in ("kalaha", "fight", "combat", "connect4"))
    service = tap.makeService(options("--records", "none"), reactor=MemoryReactorClock())
    assert service.getServiceNamed("kalaha").hub is service.getServiceNamed("connect4").hub is not None


# --- the daemon-wide connection budget (issue 13, item 3) ----------------------------------------


def test_the_connection_budget_is_what_the_open_file_limit_leaves_after_the_reserve():
    cfg = options().config
    reserve = tap.reserved_descriptors(cfg)
    # 8 ports, 20 engine hosts of 6 descriptors (16 games + 4 being described), the daemon's own.
    assert reserve == {"daemon": 32, "refusals": 64, "listening ports": 8, "engine hosts": 120}
    with capturedLogs() as events:
        budget = tap.connection_budget(cfg, 65_536)
    assert budget.max_total == 65_536 - 224
    lines = [formatEvent(e) for e in events]
    assert lines[0] == (
        "connections: at most 65312 on all ports together (open-file limit 65536, 224 reserved: "
        "32 daemon, 64 refusals, 8 listening ports, 120 engine hosts)"
    )
    assert "the per-port limits allow 80000 connections (8 ports x 10000), more than the 65312" in lines[1]


def test_a_connection_budget_the_open_file_limit_cannot_hold_stops_start_up():
    cfg = options("--max-total-connections", "1000").config
    with pytest.raises(SystemExit) as e:
        tap.connection_budget(cfg, 1024)
    assert str(e.value) == (
        "gamed: cannot start: limits.max_total_connections is 1000, but the open-file limit of 1024 leaves 800 "
        "descriptors for connections (224 reserved: 32 daemon, 64 refusals, 8 listening ports, 120 engine hosts); "
        "raise the limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower the setting"
    )
    with pytest.raises(SystemExit, match="the open-file limit of 200 leaves 0 descriptors for connections"):
        tap.connection_budget(options().config, 200)
    assert tap.connection_budget(options("--max-total-connections", "800").config, 1024).max_total == 800


def test_every_port_of_the_daemon_shares_one_connection_budget():
    reactor = MemoryReactorClock()
    service = tap.makeService(options("--records", "none", "--max-total-connections", "100"), reactor=reactor)
    service.startService()
    budgets = {id(factory.budget) for port, factory, backlog, interface in reactor.tcpServers}
    assert len(reactor.tcpServers) == 8 and len(budgets) == 1
    assert reactor.tcpServers[0][1].budget.max_total == 100
    service.stopService()


def test_hosted_bots_that_connect_get_the_daemons_players_and_each_games_first_port(tmp_path):
    path = tmp_path / "gamed.conf"
    bot = pathlib.Path(__file__).resolve().parents[1] / "examples" / "bots" / "kalaha_bot.py"
    path.write_text(f'[bots]\nisolation = "none"\n[bots.net]\ngame = "kalaha"\ncommand = "{bot}"\ntalk = "connect"\n')
    reactor = MemoryReactorClock()
    service = tap.makeService(options("--config", str(path), "--kalaha", "tcp:4601", "--kalaha", "tcp:4602",
                                      "--fight", "tcp:4501", "--fight-gui", "tcp:4550"),
                              reactor=reactor)
    hosted = service.hosted
    assert hosted.address.get("kalaha") is None  # not listening yet
    service.startService()
    assert hosted.tokens is service.getServiceNamed("kalaha").players  # one Players: LOGIN takes its tokens
    assert hosted.tokens is service.getServiceNamed("fight").players
    assert hosted.address.get("kalaha") == ("127.0.0.1", 4601)  # every interface: the bot uses loopback
    assert hosted.address.get("fight") == ("127.0.0.1", 4501)  # the AI port, not the GUI port
    assert hosted.address.get("chess", ("127.0.0.1", 0)) == ("127.0.0.1", 0)
    service.stopService()


def test_a_bot_that_connects_itself_is_sent_to_the_port_it_can_log_in_on():
    from gamed import registry
    from gamed.ports import ListeningPorts, ServedPort

    ports = ListeningPorts()
    ports.ports += [
        ServedPort("combat", "tcp:5688", host="0.0.0.0", port=5688),
        ServedPort("combat-text", "tcp:5689", host="0.0.0.0", port=5689),
        ServedPort("kalaha", "tcp:4600", host="127.0.0.2", port=4600),
    ]
    where = tap.BotAddresses(ports, registry.GAMES)
    assert where.get("combat") == ("127.0.0.1", 5689), "Combat's binary port has no LOGIN: its handshake port"
    assert where.get("kalaha") == ("127.0.0.2", 4600)
    assert where.get("fight", ("x", 1)) == ("x", 1)


def test_any_setting_of_the_file_can_be_given_on_the_command_line_by_its_name(tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text("[kalaha]\nmove_time = 10\n")
    options = tap.options_class(tap.registry.GAMES)()
    options.parseOptions([
        "--config", str(conf), "--records", "none",
        "--set", "kalaha.move_time=30", "--set", "ladder.window=150.5", "--set", "web.cors=https://a.example",
        "--set", "kalaha.listen=tcp:4601", "--set", "players.guests=true",
        "--set", f'bots.alpha.command="{sys.executable} -c pass"', "--set", "bots.alpha.game=kalaha",
    ])
    cfg = options.config
    assert (cfg.kalaha.move_time, cfg.ladder.window, cfg.web.cors, cfg.kalaha.listen) == (30.0, 150.5, "https://a.example", ("tcp:4601",))
    assert [b.name for b in cfg.bots.bots] == ["alpha"]
    for bad, words in (("kalaha.move_time", "--set takes section.setting=value"), ("kalaha.speed=3", "unknown setting kalaha.speed"),
                       ("kalaha.move_time=-1", "kalaha.move_time must not be negative"), ("chess.x=1", "unknown section [chess]")):
        with pytest.raises(usage.UsageError, match=re.escape(words)):
            tap.options_class(tap.registry.GAMES)().parseOptions(["--records", "none", "--set", bad])
