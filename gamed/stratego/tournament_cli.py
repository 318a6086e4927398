"""``gamed-tournament``: run a Stratego tournament from the config, and read its results.

    gamed-tournament run --config gamed.conf [--rounds N] [--games N] [--state-dir DIR]
    gamed-tournament standings DIR        the standings table of a tournament directory
    gamed-tournament games DIR            one line per recorded game, in game order

The daemon runs the same tournaments (``[stratego] rounds`` in its config); both write a
directory with ``tournament.json``, ``results.jsonl`` and ``logs/`` under the state directory.
The daemon continues its tournament at the next start; ``run`` always plays a fresh one.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import attrs

from gamed import config
from gamed.config import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gamed-tournament", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="play a round-robin tournament between the AIs of [stratego.ai.*]")
    run.add_argument("--config", "-c", required=True, help="the gamed TOML config with [stratego.ai.<name>] tables")
    run.add_argument("--rounds", type=int, default=None, help="rounds to play [default: stratego.rounds, or 1]")
    run.add_argument("--games", type=int, default=None, help="games per pair in a round (even) [default: stratego.games]")
    run.add_argument("--state-dir", default=None, help="where the tournament directory goes [default: stratego.state_dir]")
    for name, text in (("standings", "print the standings of a tournament directory"), ("games", "list its games")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory", type=pathlib.Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("standings", "games"):
        from gamed.stratego.service import read_results, table

        if not (args.directory / "results.jsonl").exists():
            print(f"gamed-tournament: no results.jsonl in {args.directory}", file=sys.stderr)
            return 1
        if args.command == "standings":
            print("\n".join(table(args.directory)))
        else:
            # results.jsonl is written in the order games finish (several run at once); list by number
            for g in sorted(read_results(args.directory), key=lambda g: (g.get("round", 0), g.get("game", 0))):
                flag = "  (aborted)" if g.get("aborted") else ""
                print(f"{g['game']:4d}  round {g['round']}  {g['red']} vs {g['blue']}: {g['result'] or '-'}{flag}")
        return 0
    try:
        cfg = config.load(args.config)
        changes = {}
        if args.games is not None:
            changes["games"] = args.games
        stratego = attrs.evolve(cfg.stratego, **changes)
        config.validate(attrs.evolve(cfg, stratego=stratego))
    except ConfigError as e:
        print(f"gamed-tournament: {e}", file=sys.stderr)
        return 1
    if len(stratego.ai) < 2:
        print("gamed-tournament: the config registers fewer than two AI programs ([stratego.ai.<name>])", file=sys.stderr)
        return 1
    rounds = args.rounds or stratego.rounds or 1
    state_dir = pathlib.Path(args.state_dir or stratego.state_dir)
    return _run(stratego, cfg.limits, rounds, state_dir)


def _run(stratego, limits, rounds: int, state_dir: pathlib.Path) -> int:
    """Play the tournament on a reactor of its own, print the standings, exit (task.react)."""
    from twisted.internet import defer, task

    from gamed.stratego.service import StrategoService, table

    async def play(reactor):
        service = StrategoService(attrs.evolve(stratego, rounds=0), limits, reactor, state_dir)
        service.startService()
        directory = await service.run_tournament(rounds)
        await defer.maybeDeferred(service.stopService)
        print(f"tournament: {directory}")
        print("\n".join(table(directory)))

    task.react(lambda reactor: defer.ensureDeferred(play(reactor)))
    return 0  # pragma: no cover - task.react exits


if __name__ == "__main__":
    sys.exit(main())
