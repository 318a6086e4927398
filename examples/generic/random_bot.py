#!/usr/bin/env python3
"""A bot for any game of gamed's generic port that plays a random legal action.

It knows no game's rules: every state in which it is its turn lists the legal actions, and it
picks one of them. Copy it and make ``choose`` smarter (the state's "observation" is the position
as JSON, its "text" the same for people). Standard library only; needs gamedclient.py beside it.

    python3 random_bot.py --game kalaha --games 3                 # against the computer
    python3 random_bot.py --game kalaha --opponent person --table t1  # against whoever joins t1
    python3 random_bot.py --game connect4 --selftest              # the server checks the bot

It prints one line per finished game and exits 0; 1 when the server refuses or goes away. With
--selftest it plays the server's self-test instead, prints each step and the verdict, and exits 0
when the bot passed, 2 when it failed.
"""

from __future__ import annotations

import argparse
import random
import sys

import gamedclient


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=4800)
    parser.add_argument("--game", help="the game to play (default: the first one the server lists)")
    parser.add_argument("--name", default="randombot", help="the guest name to play under")
    parser.add_argument("--games", type=int, default=1, help="how many games to play")
    parser.add_argument("--opponent", choices=["engine", "person"], default="engine")
    parser.add_argument("--level", help="the engine's level (see the server's games reply)")
    parser.add_argument("--table", help="a named table to meet a person at")
    parser.add_argument("--seed", type=int, help="for a reproducible bot")
    parser.add_argument("--selftest", action="store_true", help="play the server's self-test, not a game")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the server, at most")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    def choose(state: dict) -> int:
        return rng.randrange(len(state["actions"]))  # an index into the legal actions

    opponent = {"kind": args.opponent}
    if args.level:
        opponent["level"] = args.level
    request: dict = {"opponent": opponent}
    if args.table:
        request["table"] = args.table
    try:
        client = gamedclient.connect(args.host, args.port, timeout=args.timeout)
        game = args.game or client.hello["games"][0]
        if args.selftest:
            passed, reports = client.selftest(game, choose)
            for report in reports:
                print(f"{'ok  ' if report['ok'] else 'FAIL'} {report['step']}", flush=True)
                if not report["ok"]:
                    print(f"     expected {report['expected']}\n     received {report['received']}", flush=True)
            print(f"selftest {game}: {'pass' if passed else 'fail'}", flush=True)
            client.close()
            return 0 if passed else 2
        client.request({"type": "guest", "name": args.name})
        for number in range(1, args.games + 1):
            ended = client.play(game, choose, **request)
            seat = client.started["seat"] if client.started else "?"
            print(f"game {number}: {game} #{ended['id']} seat {seat} {ended['reason']} scores {ended['scores']}: "
                  f"{ended['text']}", flush=True)
        client.close()
    except gamedclient.ServerError as e:
        print(f"refused: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # refused, closed or timed out
        print(f"connection: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
