"""``gamed tournament run|list|status|standings|export|remove`` (docs/tournaments.md).

``run NAME --config FILE`` plays the config's ``[tournaments.NAME]`` in this process: it builds
the daemon's own services for that game (gamed.tap.makeService, its ports on loopback only, no
web site), plays the games with the hosted bots of ``[bots.<name>]`` and of ``gamed bot add``
(the records database's, joined to the config's by gamed.tap.with_stored_bots), keeps every game in the
records database, and shows a progress bar on a terminal (a line per game otherwise). Stopped
(Ctrl-C, SIGTERM, even SIGKILL) and run again, it resumes where it stopped. The other actions
read the records database only.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from typing import Any

from gamed.competition.director import Director, Report
from gamed.competition.view import export_data, stored_report
from gamed.competition.formats import FormatError, make_format
from gamed.competition.store import TournamentError, TournamentStore


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    tournament = commands.add_parser(
        "tournament",
        help="run tournaments between hosted bots and show their standings",
        description="Run a [tournaments.<name>] of the config between its hosted bots, resumably, and show "
        "what the records database keeps of tournaments.",
    )
    actions = tournament.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run", parents=[common], help="play (or resume) a tournament of the config",
        description="Play the config's [tournaments.NAME] here (needs --config), resuming what the records "
        "database has of it: no finished game is lost or played twice.",
    )
    run.add_argument("name", metavar="NAME")
    run.add_argument("--concurrency", type=int, metavar="N", help="games at once [default: the tournament's concurrency]")
    run.add_argument("--quiet", action="store_true", help="no progress output, only the final standings")
    actions.add_parser("list", parents=[common], help="list the stored tournaments")
    for action, words in (("status", "progress and the match line"), ("standings", "standings with intervals and the crosstable")):
        one = actions.add_parser(action, parents=[common], help=f"a tournament's {words}")
        one.add_argument("name", metavar="NAME")
    export = actions.add_parser("export", parents=[common], help="a tournament as JSON: definition, games, standings")
    export.add_argument("name", metavar="NAME")
    remove = actions.add_parser("remove", parents=[common], help="forget a stored tournament (its matches stay)")
    remove.add_argument("name", metavar="NAME")


# --- words --------------------------------------------------------------------------------------


def _num(value: float, digits: int = 0) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def _interval(low: float, high: float) -> str:
    return f"[{_num(low)}, {_num(high)}]"


def progress_line(r: Report, width: int = 24) -> str:
    """One line: the bar (when the total is known), games, and the match line or the leader."""
    if r.total:
        done = int(width * r.finished / r.total)
        head = f"[{'#' * done}{'.' * (width - done)}] {r.finished}/{r.total} games"
    else:
        head = f"{r.finished} games"
    m = r.match
    if m is not None:
        pairs = "/".join(str(c) for c in m.pentanomial)
        tail = f" | {m.first} W{m.wins} D{m.draws} L{m.losses} pairs {pairs} | Elo {_num(m.elo, 1)} {_interval(m.low, m.high)} LOS {m.los:.1%}"
        if m.llr is not None:
            tail += f" | LLR {m.llr:.2f} ({m.lower:.2f}, {m.upper:.2f})"
            if m.decision:
                tail += f" {m.decision} accepted"
    elif r.standings:
        best = r.standings[0]
        tail = f" | leader {best.bot} {best.points:g} of {best.games}"
    else:
        tail = ""
    return f"{r.name}: {head}{tail}"


def standings_text(r: Report) -> str:
    lines = [f"{r.name}: {r.description} ({r.game}); {r.state}, {r.finished} of {r.total or r.scheduled} games"]
    lines.append(f"{'rank':>4}  {'bot':<20} {'points':>7} {'games':>5} {'W':>4} {'D':>4} {'L':>4} {'elo':>6}  95% interval   faults")
    for row in r.standings:
        shown = _num(row.rating) if math.isfinite(row.low) else "?"
        lines.append(
            f"{row.rank:>4}  {row.bot:<20} {row.points:>7g} {row.games:>5} {row.wins:>4} {row.draws:>4} {row.losses:>4} "
            f"{shown:>6}  {_interval(row.low, row.high):<13} {row.faults:>6}"
        )
    bots = [row.bot for row in r.standings]
    if len(bots) > 2:
        lines.append("crosstable (points of the row's bot against the column's / games):")
        lines.append(" " * 20 + "".join(f"{b[:9]:>10}" for b in bots))
        for a in bots:
            cells = "".join(
                f"{'-':>10}" if a == b else f"{r.crosstable[a][b][0]:g}/{r.crosstable[a][b][1]}".rjust(10) for b in bots
            )
            lines.append(f"{a[:20]:<20}{cells}")
    if r.match is not None:
        lines.append(progress_line(r).split(": ", 1)[1])
    return "\n".join(lines)


# --- actions ------------------------------------------------------------------------------------


async def main(reactor: Any, args: argparse.Namespace, open_records: Any, fail: Any) -> None:
    """``open_records(args, reactor)``: (URL, RecordStore) of the database the command names (gamed.cli)."""
    from gamed.records import RecordsError

    if args.action == "run":
        return await _run(reactor, args, fail)
    _, records = open_records(args, reactor)
    try:
        await records.start()
        store = TournamentStore(records, reactor)
        if args.action == "list":
            rows = await store.names()
            if not rows:
                print("no tournaments")
            for stored, scheduled, finished in rows:
                print(f"{stored.name}\t{stored.game}\t{stored.format}\t{stored.state}\t{finished}/{scheduled} games")
        elif args.action == "remove":
            print(f"removed tournament {await store.remove(args.name)} (its matches stay in the records)")
        else:
            stored = await store.load(args.name)
            r = stored_report(stored)
            if args.action == "status":
                print(progress_line(r))
            elif args.action == "standings":
                print(standings_text(r))
            else:
                print(json.dumps(export_data(stored, r), indent=2))
    except (TournamentError, RecordsError, FormatError) as e:
        fail(str(e))
    finally:
        await records.close()


def _options_for(cfg_path: str, game: str) -> Any:
    """The daemon's options from ``cfg_path`` with only ``game`` on, its ports on loopback (a
    port the system picks), and no web site."""
    from twisted.python import usage

    from gamed import tap

    options = tap.Options()
    argv = ["--config", cfg_path]
    first = {}
    for option, (section, _) in options.listen_settings.items():
        if section == game and section not in first:
            first[section] = option
            argv += [f"--{option}", "tcp:0:interface=127.0.0.1"]
        else:
            argv += [f"--{option}", "none"]
    try:
        options.parseOptions(argv)
    except usage.UsageError as e:
        raise SystemExit(f"gamed: {e}") from None
    return options


async def _run(reactor: Any, args: argparse.Namespace, fail: Any) -> None:
    from twisted.internet import defer

    from gamed import tap
    from gamed.config import ConfigError, load

    if not args.config:
        fail("tournament run needs --config FILE: the tournament and its bots are defined there")
    try:
        cfg = load(args.config)
    except ConfigError as e:
        fail(str(e))
    spec = cfg.tournaments.tournament(args.name)
    if spec is None:
        known = ", ".join(t.name for t in cfg.tournaments.tournaments) or "none"
        fail(f"{args.config} has no [tournaments.{args.name}]; it has: {known}")
    if args.concurrency is not None and not 1 <= args.concurrency <= 64:
        fail(f"--concurrency must be from 1 to 64, not {args.concurrency}")
    options = _options_for(args.config, spec.game)
    root = tap.makeService(options, reactor=reactor)
    if root.tournaments is not None:  # this command plays its one tournament itself
        root.removeService(root.tournaments)
        root.tournaments = None
    hosted = root.hosted
    records = getattr(getattr(hosted, "hub", None), "store", None)
    if hosted is None or records is None:
        fail("a tournament needs hosted bots ([bots.<name>]) and a records database")
    root.startService()
    director = Director(TournamentStore(records, reactor), hosted, {b.name: b for b in root.bots}, reactor)
    tty = sys.stdout.isatty() and not args.quiet
    last = {"line": ""}

    def progress(r: Report) -> None:
        if args.quiet:
            return
        line = progress_line(r)
        if tty:
            sys.stdout.write("\r" + line.ljust(len(last["line"])))
        elif line != last["line"]:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        last["line"] = line

    def stop(*_: Any) -> None:
        reactor.callFromThread(director.stop)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        final = await director.run(spec.definition(args.concurrency), progress)
    except (TournamentError, ValueError) as e:
        await defer.maybeDeferred(root.stopService)
        fail(str(e))
    if tty:
        sys.stdout.write("\n")
    await defer.maybeDeferred(root.stopService)
    print(standings_text(final))
    if final.state != "finished":
        print(f"stopped: run 'gamed tournament run {spec.name} --config {args.config}' to resume")
        raise SystemExit(3)
