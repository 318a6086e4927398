"""The ``gamed`` command: tools around the daemon's data. ``gamed export MATCH_ID`` prints a stored match.

The daemon itself runs with ``twistd -n gamed``; this command only reads what it recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gamed.config import Config, ConfigError, load
from gamed.records import RecordsError, RecordStore


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gamed", description="Tools for the gamed daemon's records.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    export = commands.add_parser(
        "export",
        help="print a stored match",
        description="Print a stored match as JSON, or (--format ucc) a Stratego match as the UCC manager's -o log.",
    )
    export.add_argument("match_id", metavar="MATCH_ID", help="the match number (as shown by the web pages and /api/matches)")
    export.add_argument(
        "--database",
        metavar="URL",
        help="records database: a SQLite path, sqlite:///abs/path, sqlite:rel/path or postgresql://... "
        f"[default: [records] database of --config, else {Config().records.database}]",
    )
    export.add_argument("--config", metavar="FILE", help="the daemon's config file (for its [records] database)")
    export.add_argument("--format", choices=("json", "ucc"), default="json", help="json (default) or ucc (Stratego only)")
    return parser


def _fail(message: str) -> None:
    """One clear line on stderr and exit status 1."""
    print(f"gamed: {message}", file=sys.stderr)
    raise SystemExit(1)


async def _export(reactor: Any, args: argparse.Namespace) -> None:
    try:
        match_id = int(args.match_id)
    except ValueError:
        _fail(f"a match id is a number, not {args.match_id!r}")
    url = args.database
    if url is None:
        try:
            url = load(args.config).records.database if args.config else Config().records.database
        except ConfigError as e:
            _fail(str(e))
    if not url or url == "none":
        _fail("no records database configured")
    try:
        store = RecordStore(url, reactor, create=False)
    except RecordsError as e:
        _fail(str(e))
    try:
        await store.start()
        data = await store.match(match_id)
    except RecordsError as e:
        _fail(str(e))
    except Exception as e:  # the driver's own errors: not a database, cannot connect ...
        _fail(f"cannot read the records database {url}: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}")
    finally:
        await store.close()
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


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: ``gamed export MATCH_ID [--database URL] [--format json|ucc]``."""
    from twisted.internet import defer, task

    args = _parser().parse_args(argv)
    if args.command == "export":
        task.react(lambda reactor: defer.ensureDeferred(_export(reactor, args)))


if __name__ == "__main__":
    main()
