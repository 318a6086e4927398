"""The ``gamed`` command: tools around the daemon's data. ``gamed export MATCH_ID`` prints a stored
match; ``gamed player add|list|revoke|rotate`` manages the accounts (gamed.accounts) that may log in;
``gamed tournament run|list|status|standings|export|remove`` runs and shows tournaments between
hosted bots (gamed.competition.cli); ``gamed bot add|list|show|remove`` keeps hosted bots in the
records database (gamed.hosting.cli); ``gamed records compact|prune DAYS`` drops the states the
rules rebuild from matches stored with every state, or old matches' moves (gamed.records);
``gamed admin COMMAND`` runs a command on a running daemon's SSH admin console
(gamed.admin.client, docs/admin.md).

The daemon itself runs with ``twistd -n gamed``; this command works on its records database, also
while the daemon runs (SQLite's WAL journal and busy timeout let both write the same file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from gamed.accounts import KINDS, AccountError, AccountStore
from gamed.config import Config, ConfigError, load
from gamed.records import RecordsError, RecordStore

_DATABASE_HELP = (
    "records database: a SQLite path, sqlite:///abs/path, sqlite:rel/path or postgresql://... "
    f"[default: [records] database of --config, else {Config().records.database}]"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gamed", description="Tools for the gamed daemon's records and accounts.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    export = commands.add_parser(
        "export",
        help="print a stored match",
        description="Print a stored match as JSON, or (--format ucc) a Stratego match as the UCC manager's -o log.",
    )
    export.add_argument("match_id", metavar="MATCH_ID", help="the match number (as shown by the web pages and /api/matches)")
    export.add_argument("--database", "--records", dest="database", metavar="URL", help=_DATABASE_HELP)
    export.add_argument("--config", metavar="FILE", help="the daemon's config file (for its [records] database)")
    export.add_argument("--format", choices=("json", "ucc"), default="json", help="json (default) or ucc (Stratego only)")
    _player_parser(commands)
    kept = commands.add_parser(
        "records",
        help="compact or prune the records database",
        description="Work on the stored matches: compact (drop the states the rules rebuild from matches stored "
        "with every state, as before gamed 17) or prune (drop the moves of old matches, keeping their results).",
    )
    work = kept.add_subparsers(dest="action", required=True, metavar="ACTION")
    compact = work.add_parser("compact", help="drop the states the rules rebuild, from matches that keep every state")
    prune = work.add_parser("prune", help="drop the moves of matches that ended more than DAYS days ago ([records] keep_moves)")
    prune.add_argument("days", metavar="DAYS", type=float, help="keep the moves of the matches of the last DAYS days")
    for sub in (compact, prune):
        sub.add_argument("--database", "--records", dest="database", metavar="URL", help=_DATABASE_HELP)
        sub.add_argument("--config", metavar="FILE", help="the daemon's config file (for its [records] database)")
    from gamed.competition import cli as tournament_cli

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--records", "--database", dest="database", metavar="URL", help=_DATABASE_HELP)
    common.add_argument("--config", metavar="FILE", help="the daemon's config file (its [tournaments.*], [bots.*] and [records])")
    tournament_cli.add_parser(commands, common)
    from gamed.hosting import cli as bot_cli

    bot_cli.add_parser(commands, common)
    _admin_parser(commands)
    settings = commands.add_parser("config", help="check a config file, or show the effective settings",
                                   description="Check a config file as the daemon would read it, or print the effective settings.")
    actions = settings.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate a config file: 'FILE: ok', or the one line naming what is wrong (exit 1)")
    check.add_argument("file", metavar="FILE")
    show = actions.add_parser("show", help="print every effective setting as a config file (the defaults, or --config FILE on top of them)")
    show.add_argument("--config", metavar="FILE", help="the config file to read [default: none: the defaults]")
    return parser


def _admin_parser(commands: Any) -> None:
    """``gamed admin [--config FILE | --host H --port P] --key FILE COMMAND ...``."""
    admin = commands.add_parser(
        "admin",
        help="run a command on a running daemon's SSH admin console",
        description="Run one admin console command (games, tables, connections, players, show, kick, ban, unban, "
        "bans, broadcast, drain, help: docs/admin.md) on a running daemon over SSH, print its output and exit "
        "with its status (0 done, 1 an error such as an unknown target, 2 not understood, 255 the console "
        "could not be reached or refused the key). The console's host key must be known: --config (the public "
        "half of its admin.host_key file) or --known-hosts.",
    )
    admin.add_argument("--config", metavar="FILE", help="the daemon's config file: its admin.listen (where) and admin.host_key (the host key to expect)")
    admin.add_argument("--host", metavar="HOST", help="the console's address [default: admin.listen's interface, else 127.0.0.1]")
    admin.add_argument("--port", metavar="PORT", type=int, help="the console's port [default: admin.listen's]")
    admin.add_argument("--key", metavar="FILE", required=True, help="your private key (unencrypted OpenSSH or PEM), whose public key is in admin.authorized_keys")
    admin.add_argument("--known-hosts", metavar="FILE", help="an OpenSSH known_hosts file with the console's host key ([host]:port or host)")
    admin.add_argument("--user", default="admin", help=argparse.SUPPRESS)
    admin.add_argument("words", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")


def _player_parser(commands: Any) -> None:
    """``gamed player add|list|revoke|rotate``."""
    player = commands.add_parser(
        "player",
        help="register players and bots and manage their tokens",
        description="Register the players and bots that may log in with a secret token, and manage their tokens. "
        "Only a salted hash of each token is kept, in the records database; a token is shown once, when made.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--records", "--database", dest="database", metavar="URL", help=_DATABASE_HELP)
    common.add_argument("--config", metavar="FILE", help="the daemon's config file (for its [records] database)")
    actions = player.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser(
        "add",
        parents=[common],
        help="register a player or bot and print its token (once)",
        description="Register NAME and print its new token once (keep it: it cannot be shown again). "
        "Ratings the typed name NAME earned before it had an account become the account's. "
        "Creates the records database if there is none yet.",
    )
    add.add_argument("name", metavar="NAME", help="1-32 letters, digits, _ . - ; not starting with 'guest'; unique in any case")
    add.add_argument("--kind", choices=KINDS, default="person", help="person (default) or bot (a program)")
    actions.add_parser("list", parents=[common], help="list the accounts", description="List every account: name, kind, when created, state, when its token was last rotated.")
    revoke = actions.add_parser(
        "revoke",
        parents=[common],
        help="kill an account's token at once",
        description="Kill NAME's token at once: it can no longer log in, and its name stays taken. "
        "'gamed player rotate NAME' gives it a new token and makes it active again.",
    )
    revoke.add_argument("name", metavar="NAME")
    rotate = actions.add_parser(
        "rotate",
        parents=[common],
        help="give an account a new token (the old one dies at once)",
        description="Give NAME a new token and print it once; the old token stops working at once. "
        "A revoked account is active again with the new token.",
    )
    rotate.add_argument("name", metavar="NAME")


def _fail(message: str) -> None:
    """One clear line on stderr and exit status 1."""
    print(f"gamed: {message}", file=sys.stderr)
    raise SystemExit(1)


def _database(args: argparse.Namespace) -> str:
    """The records URL: ``--database``/``--records``, else the config file's, else the default."""
    url = args.database
    if url is None:
        try:
            url = load(args.config).records.database if args.config else Config().records.database
        except ConfigError as e:
            _fail(str(e))
    if not url or url == "none":
        _fail("no records database configured")
    return url


def _why(e: BaseException) -> str:
    """The first line of a driver's error message (or its class's name)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _records(args: argparse.Namespace, reactor: Any, create: bool = False) -> tuple[str, RecordStore]:
    """(URL, RecordStore) of the records database ``args`` name, not started yet; one line and
    exit status 1 when it cannot be opened. Only ``create`` makes a new one (a typo elsewhere
    must not leave an empty database behind)."""
    url = _database(args)
    try:
        return url, RecordStore(url, reactor, create=create)
    except RecordsError as e:
        _fail(str(e))


async def _export(reactor: Any, args: argparse.Namespace) -> None:
    try:
        match_id = int(args.match_id)
    except ValueError:
        _fail(f"a match id is a number, not {args.match_id!r}")
    url, data = await _using_records(args, reactor, "read", lambda store: store.match(match_id))
    if data is None:
        _fail(f"no match {match_id} in {url}")
    if args.format == "ucc":
        log_text = (data.get("extra") or {}).get("ucc_log")
        if data["game"] != "stratego" or not isinstance(log_text, str):
            _fail(f"match {match_id} is a {data['game']} match without a UCC log; only Stratego matches export as ucc")
        sys.stdout.write(log_text if log_text.endswith("\n") or not log_text else log_text + "\n")
    else:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    sys.stdout.flush()


async def _records_work(reactor: Any, args: argparse.Namespace) -> None:
    """``gamed records compact`` and ``gamed records prune DAYS``: one line of what was done."""
    if args.action == "prune" and not args.days > 0:
        _fail(f"prune keeps the moves of the last DAYS days: DAYS must be more than 0, not {args.days:g}")
    if args.action == "compact":
        url, (matches, moves, before, after) = await _using_records(args, reactor, "work on", lambda store: store.compact_stored())
        print(f"{url}: {matches} matches compacted: {moves} states ({before} bytes) now rebuilt by the rules "
              f"({after} bytes of patches)")
    else:
        url, (matches, moves) = await _using_records(
            args, reactor, "work on", lambda store: store.prune(time.time() - args.days * 86400)
        )
        print(f"{url}: the {moves} moves of {matches} matches that ended more than {args.days:g} days ago pruned")


async def _using_records(args: argparse.Namespace, reactor: Any, doing: str, work: Any) -> tuple[str, Any]:
    """(url, what ``work(store)`` fired with) on the records database the command names, opened
    for it and closed after; its errors end the command with one line (``cannot <doing> ...``)."""
    url, store = _records(args, reactor)
    try:
        await store.start()
        return url, await work(store)
    except RecordsError as e:
        _fail(str(e))
    except Exception as e:  # the driver's own errors: not a database, cannot connect ...
        _fail(f"cannot {doing} the records database {url}: {_why(e)}")
    finally:
        await store.close()


def _when(t: float | None) -> str:
    """A time for people: UTC, to the second (``2026-12-02 05:30:35Z``), or ``-``."""
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def _print_accounts(accounts: list) -> None:
    rows = [("NAME", "KIND", "CREATED", "STATE", "ROTATED")]
    rows += [(a.name, a.kind, _when(a.created), "active" if a.active else "revoked", _when(a.rotated)) for a in accounts]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


async def _player(reactor: Any, args: argparse.Namespace) -> None:
    url, records = _records(args, reactor, create=args.action == "add")
    store = AccountStore(records, reactor)
    try:
        await records.start()
        if args.action == "add":
            account, token = await store.add(args.name, args.kind)
            print(f"token for {account.name}: {token}")
            print(f"(shown only now: keep it secret; 'gamed player rotate {account.name}' makes a new one)")
        elif args.action == "list":
            _print_accounts(await store.list())
        elif args.action == "revoke":
            account = await store.revoke(args.name)
            print(f"revoked {account.name} (since {_when(account.revoked)})")
        elif args.action == "rotate":
            token = await store.rotate(args.name)
            account = await store.get(args.name)
            print(f"token for {account.name}: {token}")
            print("(the old token no longer works; shown only now: keep it secret)")
    except (AccountError, RecordsError) as e:
        _fail(str(e))
    except Exception as e:  # the driver's own errors: not a database, cannot connect ...
        _fail(f"cannot use the records database {url}: {_why(e)}")
    finally:
        await records.close()
    sys.stdout.flush()


def _missing_records_folder(database: str) -> str | None:
    """The folder of a SQLite records file that does not exist here (relative to the working
    directory, as the daemon opens it), else None."""
    from gamed.records import SQLITE, RecordsError, parse_url

    if not database:
        return None
    try:
        dialect, target = parse_url(database)
    except RecordsError:
        return None  # (the config's own check has refused it already)
    folder = os.path.dirname(os.path.abspath(target))
    return None if dialect is not SQLITE or os.path.isdir(folder) else folder


def _config(args: argparse.Namespace) -> None:
    """``gamed config check FILE`` and ``gamed config show [--config FILE]``."""
    from gamed import config as settings
    from gamed.configshow import to_toml

    path = args.file if args.action == "check" else args.config
    try:
        cfg = settings.load(path) if path else settings.Config()
    except settings.ConfigError as e:
        _fail(str(e))
    if args.action == "check":
        folder = _missing_records_folder(cfg.records.database)
        if folder is not None:
            _fail(f"{path}: records.database: the folder {folder} does not exist (the daemon would not start)")
        if cfg.admin.listen:  # the console's key files, as start-up reads them (making no host key)
            from gamed.admin import ssh

            try:
                ssh.check_authorized_keys(cfg.admin.authorized_keys)
                ssh.check_host_key(cfg.admin.host_key)
            except ssh.KeyFileError as e:
                _fail(f"{path}: {e} (the daemon would not start)")
        print(f"{path}: ok")
    else:
        sys.stdout.write(to_toml(cfg))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: ``gamed export MATCH_ID [--database URL] [--format json|ucc]``,
    ``gamed player add NAME [--kind person|bot] | list | revoke NAME | rotate NAME [--records URL]``,
    ``gamed tournament ...``, ``gamed bot add|list|show|remove ...`` and ``gamed records compact|prune DAYS``."""
    from twisted.internet import defer, task

    args = _parser().parse_args(argv)
    if args.command == "config":
        return _config(args)
    if args.command == "export":
        task.react(lambda reactor: defer.ensureDeferred(_export(reactor, args)))
    elif args.command == "records":
        task.react(lambda reactor: defer.ensureDeferred(_records_work(reactor, args)))
    elif args.command == "player":
        task.react(lambda reactor: defer.ensureDeferred(_player(reactor, args)))
    elif args.command == "tournament":
        from gamed.competition import cli as tournament_cli

        task.react(lambda reactor: defer.ensureDeferred(tournament_cli.main(reactor, args, _records, _fail)))
    elif args.command == "admin":
        from gamed.admin import client as admin_client

        task.react(lambda reactor: defer.ensureDeferred(admin_client.main(reactor, args, _fail)))
    elif args.command == "bot":
        from gamed.hosting import cli as bot_cli

        task.react(lambda reactor: defer.ensureDeferred(bot_cli.main(reactor, args, _records, _fail)))


if __name__ == "__main__":
    main()
