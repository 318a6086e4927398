"""``gamed-c4``: list Connect Four engines and run engine-vs-engine matches.

    gamed-c4 list [--engines DIR]
    gamed-c4 match ENGINE[:LEVEL] ENGINE[:LEVEL] [--games N] [--size WxH] [--engines DIR]

Exit status 0 on success; 2 for a usage error (bad arguments, unknown engine or level).
"""

from __future__ import annotations

import argparse
import sys

from twisted.internet import defer, task

from gamed.connect4.match import format_score, play_match
from gamed.connect4.registry import discover_engines, open_engine
from gamed.connect4.rules import valid_size

USAGE_ERROR = 2


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(p) for p in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} is not WxH, e.g. 7x6") from None
    if not valid_size(w, h):
        raise argparse.ArgumentTypeError(f"size {text!r}: width and height must be 4..16")
    return w, h


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of games")
    return n


def _spec(text: str) -> tuple[str, int]:
    name, sep, level = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"engine {text!r}: expected ENGINE[:LEVEL]")
    if not sep:
        return name, 0
    try:
        n = int(level)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"engine {text!r}: LEVEL must be a number 0..")
    return name, n


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gamed-c4", description="Connect Four engines and matches.")
    sub = p.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="list the engines and their levels")
    lst.add_argument("--engines", metavar="DIR", default="engines", help="folder of <name>/engine.so native engines [default: engines]")
    m = sub.add_parser("match", help="play a series of games between two engines")
    m.add_argument("first", type=_spec, metavar="ENGINE[:LEVEL]")
    m.add_argument("second", type=_spec, metavar="ENGINE[:LEVEL]")
    m.add_argument("--games", type=_positive, default=2, metavar="N")
    m.add_argument("--size", type=_size, default=(7, 6), metavar="WxH")
    m.add_argument("--engines", metavar="DIR", default="engines", help="folder of <name>/engine.so native engines [default: engines]")
    return p


class UsageError(Exception):
    pass


def _print(line: str) -> None:
    print(line, flush=True)


@defer.inlineCallbacks
def run_list(reactor, args):
    for info in (yield discover_engines(reactor, args.engines)):
        if info.error:
            _print(f"{info.name} ({info.kind}): unusable: {info.error}")
            continue
        _print(f"{info.name} ({info.kind}): {info.description}")
        for i, level in enumerate(info.levels):
            _print(f"  {i}: {level}")
    return 0


@defer.inlineCallbacks
def run_match(reactor, args):
    infos = {info.name: info for info in (yield discover_engines(reactor, args.engines))}
    for name, level in (args.first, args.second):
        info = infos.get(name)
        if info is None:
            raise UsageError(f"no engine named {name!r}; known: {', '.join(infos)}")
        if not info.usable:
            raise UsageError(f"engine {name!r} is unusable: {info.error}")
        if level >= len(info.levels):
            raise UsageError(f"engine {name!r} has levels 0..{len(info.levels) - 1}, not {level}")
    width, height = args.size
    a = open_engine(reactor, args.first[0], args.engines)
    b = open_engine(reactor, args.second[0], args.engines)
    names = {"a": f"{a.name}:{args.first[1]}", "b": f"{b.name}:{args.second[1]}"}

    def on_game(r):
        first = names[r.first]
        second = names["b" if r.first == "a" else "a"]
        outcome = f"{names[r.winner]} wins" if r.winner else "draw"
        _print(f"game {r.number}: {first} vs {second}: {outcome} ({r.reason}) in {len(r.moves)} moves")

    try:
        summary = yield play_match(a, b, args.games, width, height,
                                   (args.first[1], args.second[1]), on_game=on_game)
    finally:
        yield defer.DeferredList([a.close(), b.close()], consumeErrors=True)
    _print(f"{summary.name_a} {format_score(summary.score_a)} - "
           f"{format_score(summary.score_b)} {summary.name_b}")
    return 0


def _main(reactor, args):
    run = run_list if args.command == "list" else run_match
    d = run(reactor, args)

    def usage(failure):
        failure.trap(UsageError)
        print(f"gamed-c4: error: {failure.value}", file=sys.stderr, flush=True)
        raise SystemExit(USAGE_ERROR)

    d.addErrback(usage)
    d.addCallback(lambda _code: None)
    return d


def main(argv=None) -> None:
    args = parser().parse_args(argv)  # exits 2 with a message on a usage error
    task.react(_main, (args,))


if __name__ == "__main__":
    main()
