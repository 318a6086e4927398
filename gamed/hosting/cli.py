"""``gamed bot add|list|show|remove``: hosted bots kept in the records database (docs/hosting.md,
"Bots in the records database").

``add`` checks a bot as the daemon checks a ``[bots.<name>]`` table (its game, its settings and
limits, its program found and executable, made absolute from the working directory), refuses a
name that is taken, starts a stdio bot once to see that it does not exit at once, and only then
stores it. The daemon (and ``gamed tournament run``) then host it like a config bot. Every
refusal is one line and exit status 1.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from typing import Any

import attrs

from gamed.hosting.spec import WORKDIRS, TALKS, BotLimits, SpecError, parse_bot, parse_limits


_LIMIT_NAMES = tuple(f.name for f in attrs.fields(BotLimits))


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    bot = commands.add_parser(
        "bot",
        help="register hosted bots in the records database",
        description="Register the hosted bots the daemon runs besides the config's [bots.<name>] tables, "
        "in the records database (docs/hosting.md).",
    )
    actions = bot.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser(
        "add", parents=[common], help="check a bot, start it once, and store it",
        description="Check NAME's settings as a [bots.NAME] table is checked, start its command once (a stdio bot "
        "must still run after a second; it is then stopped), and store it. Creates the records database if "
        "there is none yet.",
    )
    add.add_argument("name", metavar="NAME", help="1-32 letters, digits, _ . - ; unique in any case")
    add.add_argument("--game", required=True, metavar="GAME", help="the game it plays (kalaha, connect4, stratego, ...)")
    add.add_argument("--command", dest="program", required=True, metavar="COMMAND",
                     help='its command line, such as "python3 examples/bots/kalaha_bot.py 7" (relative paths are '
                     "taken from the working directory and stored absolute)")
    add.add_argument("--workdir", default="fresh", metavar="|".join(WORKDIRS),
                     help="fresh (an empty directory per game, the default) or persistent (one kept for the bot)")
    add.add_argument("--directory", default="", metavar="DIR", help="the persistent working directory [default: <state>/bots/NAME]")
    add.add_argument("--talk", default="stdio", metavar="|".join(TALKS),
                     help="stdio (the game's protocol on stdin/stdout, the default) or connect (it connects itself)")
    add.add_argument("--limit", dest="limits", action="append", default=[], metavar="NAME=VALUE",
                     help=f"a limit other than the default, repeatable: {', '.join(_LIMIT_NAMES)} (cpu=10 memory=256M)")
    actions.add_parser(
        "list", parents=[common], help="list the bots",
        description="One line per bot of the records database, and with --config the config's bots too (SOURCE says which).",
    )
    show = actions.add_parser("show", parents=[common], help="every setting of a bot, its limits included")
    show.add_argument("name", metavar="NAME")
    remove = actions.add_parser("remove", parents=[common], help="forget a bot of the records database (its matches stay)")
    remove.add_argument("name", metavar="NAME")


def limit_values(given: list[str]) -> dict[str, Any]:
    """``["cpu=10", "memory=256M"]`` as ``{"cpu": 10, "memory": "256M"}`` (numbers where they are
    numbers; ``parse_limits`` judges the values); ValueError of one line for a malformed one."""
    values: dict[str, Any] = {}
    for item in given:
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key or not text:
            raise ValueError(f"--limit takes NAME=VALUE, such as cpu=10 or memory=256M, not {item!r}")
        value: Any = text
        for kind in (int, float):
            try:
                value = kind(text)
                break
            except ValueError:
                pass
        values[key] = value
    return values


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _shown(name: str, source: str, game: str, command: str, workdir: str, directory: str, talk: str,
           limits: BotLimits) -> None:
    for key, value in (
        ("name", name), ("source", source), ("game", game), ("command", command), ("workdir", workdir),
        ("directory", directory or ("-" if workdir == "fresh" else "<state>/bots/" + name)), ("talk", talk),
        ("limits", limits.shown()),
    ):
        print(f"{key + ':':<10} {value}")


async def main(reactor: Any, args: argparse.Namespace, open_records: Any, fail: Any) -> None:
    """``open_records(args, reactor, create)``: (URL, RecordStore) of the database the command
    names (gamed.cli); ``fail(line)`` ends the command with that line and exit status 1."""
    from gamed import registry
    from gamed.config import ConfigError, load
    from gamed.hosting.store import BotStore, BotStoreError
    from gamed.records import RecordsError

    cfg = None
    if args.config:
        try:
            cfg = load(args.config)
        except ConfigError as e:
            fail(str(e))
    games = tuple(game.name for game in registry.GAMES)
    spec = limits = None
    if args.action == "add":
        try:
            limits = limit_values(args.limits)
            spec = parse_bot(
                args.name,
                {"game": args.game, "command": args.program, "workdir": args.workdir, "directory": args.directory,
                 "talk": args.talk, "limits": limits},
                games, base=os.getcwd(),
            )
        except (SpecError, ValueError) as e:
            fail(str(e))
        if cfg is not None and cfg.bots.bot(args.name) is not None:
            fail(f"bot {args.name} is in the config {args.config} already: give this one another name")
    url, records = open_records(args, reactor, args.action == "add")
    store = BotStore(records, reactor)
    try:
        await records.start()
        if args.action == "add":
            await _add(reactor, store, spec, limits, cfg, fail)
        elif args.action == "list":
            stored = await store.list()
            rows = [(b.name, "records", b.game, b.talk, b.workdir, shlex.join(b.argv)) for b in stored]
            rows += [(b.name, "config", b.game, b.talk, b.workdir, b.command) for b in (cfg.bots.bots if cfg else ())]
            if not rows:
                print("no bots")
            else:
                _table([("NAME", "SOURCE", "GAME", "TALK", "WORKDIR", "COMMAND"), *sorted(rows, key=lambda r: r[0].lower())])
        elif args.action == "show":
            found = await store.get(args.name)
            if found is not None:
                try:
                    limits_shown, trouble = found.spec(games).limits, ""
                except SpecError as e:  # shown all the same, with what the daemon would say of it
                    limits_shown, trouble = parse_limits(found.limits, f"bots.{found.name}.limits"), str(e)
                _shown(found.name, f"records database (added {_when(found.added)})", found.game, shlex.join(found.argv),
                       found.workdir, found.directory, found.talk, limits_shown)
                if trouble:
                    print(f"{'problem:':<10} {trouble}")
            elif cfg is not None and (bot := cfg.bots.bot(args.name)) is not None:
                _shown(bot.name, f"config {args.config}", bot.game, bot.command, bot.workdir, bot.directory, bot.talk, bot.limits)
            else:
                fail(f"no bot named {args.name} in the records database{' or the config' if cfg else ''}")
        elif args.action == "remove":
            if cfg is not None and (bot := cfg.bots.bot(args.name)) is not None and await store.get(args.name) is None:
                fail(f"bot {bot.name} is in the config {args.config}: remove its [bots.{bot.name}] table there")
            gone = await store.remove(args.name)
            print(f"removed bot {gone.name} (its matches and ratings stay in the records)")
    except (BotStoreError, RecordsError, SpecError) as e:
        fail(str(e))
    except Exception as e:  # the driver's own errors: not a database, cannot connect ...
        text = str(e).strip()
        fail(f"cannot use the records database {url}: {text.splitlines()[0] if text else type(e).__name__}")
    finally:
        await records.close()


async def _add(reactor: Any, store: Any, spec: Any, limits: dict, cfg: Any, fail: Any) -> None:
    from gamed.hosting.sandbox import Isolation
    from gamed.hosting.startcheck import exits_at_once

    if (found := await store.get(spec.name)) is not None:
        fail(f"there is already a bot named {found.name} in the records database")
    try:
        isolation = Isolation.detect(cfg.bots.isolation if cfg is not None else "auto")
    except ValueError as e:
        fail(str(e))
    why = await exits_at_once(spec, reactor, isolation)
    if why is not None:
        fail(f"bot {spec.name}: its command {why}")
    added = await store.add(spec, limits)
    print(f"added bot {added.name}: {added.game}, talks on {added.talk}, {added.workdir} working directory")
    print(f"command: {spec.command}")
