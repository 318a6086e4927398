"""Stratego matches as a service: registered AI programs play round-robin tournaments.

Each tournament gets a directory under the state directory: ``tournament.json`` says which
tournament it is (the programs, rounds, games and match settings), ``logs/`` holds every game's §8
log (replayable with ``gamed-stratego -f``) and each AI's captured stderr, ``results.jsonl`` one
JSON object per finished or aborted game (appended and flushed as each game ends, so nothing
recorded is lost). ``gamed-tournament standings DIR`` prints the table. Games run concurrently up
to a limit; a crashing, hanging or flooding AI affects only its own game (the referee's process
seats).

The daemon's tournament (``[stratego] rounds``) continues at the next start: the newest directory
whose ``tournament.json`` matches the configuration is taken up again, and the games it has no
result for (not played yet, cut off by a crash, or aborted by a shutdown) are played; a complete
one is not played again. Moving the directory away starts a fresh tournament.

Hosted bots (gamed.hosting, ``IHostTables``) keep the UCC protocol: the runner bridges each
program's stdin and stdout to a ``gamed.stratego.hosted.HostedUccSeat`` (the player factory's
connection), and once every seat of a reserved match is there the same referee plays it
(``_hosted_match``), reported to the live hub under the reservation's key.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import shutil
import tempfile
from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from gamed.config import AiProgram, Limits, StrategoConfig
from gamed.gameservice import GameService
from gamed.observers import SHUTDOWN, LiveHub, LiveTable
from gamed.records import Seat
from gamed.stratego import tournament
from gamed.stratego.referee import (
    COLOURS,
    UNINTELLIGIBLE,
    MatchOptions,
    MatchResult,
    Outcome,
    StrategoReferee,
    timeout_reason,
)

RESULTS = "results.jsonl"
MANIFEST = "tournament.json"


def match_options(config: StrategoConfig) -> MatchOptions:
    """The referee options of the daemon's matches."""
    return MatchOptions(
        max_turns=config.max_turns,
        timeout=config.time_control.move,
        allow_illegal=config.allow_illegal,
        pause=config.pause,
        quit_grace=config.quit_grace,
        clock=None if config.time_control.plain else config.time_control,
        clock_lines=config.clock_lines,
    )


def read_results(directory: pathlib.Path) -> list[dict]:
    """The recorded games of a tournament directory (lines cut off by a crash are skipped)."""
    path = pathlib.Path(directory) / RESULTS
    out = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def match_scores(result: MatchResult | None) -> tuple[tuple[float, float], bool]:
    """(RED, BLUE) scores of a match for the records, and whether it is rated: the named side of
    the result line wins with VICTORY, loses with SURRENDER, ILLEGAL and BAD_SETUP; DRAW and
    DRAW_DEFAULT are draws; a BOTH result, an internal error or an aborted match is unrated."""
    if result is None or result.colour not in COLOURS or result.outcome is Outcome.INTERNAL_ERROR:
        return (0.0, 0.0), False
    if result.outcome in (Outcome.DRAW, Outcome.DRAW_DEFAULT):
        return (0.5, 0.5), True
    named_wins = result.outcome is Outcome.VICTORY
    side = COLOURS.index(result.colour)
    scores = [0.0, 0.0]
    scores[side if named_wins else 1 - side] = 1.0
    return (scores[0], scores[1]), True


def hosted_reason(result: MatchResult, seats=()) -> str:
    """The record's reason of a hosted match: the referee's, with an illegal move named so
    (``illegal move: Selected unit cannot move that way``; the fault taxonomy reads it), and a
    setup that did not come in time named as the timeout it is (the UCC result says BAD_SETUP)."""
    side = COLOURS.index(result.colour) if result.colour in COLOURS else None
    if result.outcome is Outcome.BAD_SETUP and side is not None and getattr(seats[side] if seats else None, "timed_out", False):
        return timeout_reason(seats[side].options.timeout or 0.0)
    if result.outcome is Outcome.ILLEGAL and result.reason != UNINTELLIGIBLE and not result.reason.startswith(
        ("Response timeout", "Ran out of time")
    ):
        return f"illegal move: {result.reason}"
    return result.reason


def identity(config: StrategoConfig, ais: list[AiProgram], rounds: int) -> dict:
    """What makes two tournaments the same one (JSON-able): the programs as registered, the rounds,
    the games per pair and the settings that change how a match is played."""
    return {
        "programs": [{"name": a.name, "command": a.command, "opponent": a.shown, "workdir": a.workdir} for a in ais],
        "rounds": rounds,
        "games": config.games,
        "match": {
            "max_turns": config.max_turns,
            "timeout": config.time_control.move or 0,
            **({} if config.time_control.plain else {"clock": config.time_control.notation()}),
            "pause": config.pause,
            "allow_illegal": config.allow_illegal,
        },
    }


def read_manifest(directory: pathlib.Path) -> dict | None:
    """The ``tournament.json`` of a tournament directory (None: none, or unreadable)."""
    try:
        data = json.loads((pathlib.Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def table(directory: pathlib.Path) -> list[str]:
    """The standings of a tournament directory as text lines."""
    games = [r for r in read_results(directory) if not r.get("aborted")]
    return tournament.render(tournament.standings((g["red"], g["blue"], g["result"]) for g in games))


def _free_stem(logs: pathlib.Path, stem: str) -> str:
    """``stem``, or ``stem-2``, ``stem-3``... whichever names no log yet (a game aborted twice)."""
    candidate, n = stem, 1
    while (logs / f"{candidate}.log").exists():
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


class StrategoService(GameService):
    """Runs tournaments between the AI programs of ``config.ai``."""

    _log = Logger()
    name = "stratego"

    def __init__(
        self,
        config: StrategoConfig,
        limits: Limits,
        reactor,
        state_dir: pathlib.Path | None = None,
        seat_factory: Callable | None = None,
        hub: LiveHub | None = None,
    ):
        super().__init__(limits, reactor)
        self.hub = hub
        self.config = config
        self.reactor = reactor
        self.state_dir = pathlib.Path(state_dir if state_dir is not None else config.state_dir)
        self.ais = {ai.name: ai for ai in config.ai}
        self._seat_factory = seat_factory
        self._running: set[StrategoReferee] = set()
        self._stopping = False
        self.tournaments: list[Deferred] = []
        self._reserved: dict[str, tuple[str, ...]] = {}  # hosted matches waiting for their seats
        self._arrived: dict[str, list] = {}  # ... and the seats connected so far
        self._hosted_factory = None

    # --- hosted bots (IHostTables) -----------------------------------------------------------

    hosts_bots = True  # (no lobby: its own reserved tables)

    @property
    def player_factory(self):
        """The seats of hosted bots: each a UCC dialog over its program's stdin and stdout."""
        if self._hosted_factory is None:
            from gamed.stratego.hosted import HostedSeatFactory

            self._hosted_factory = HostedSeatFactory(self, match_options(self.config), self.reactor)
        return self._hosted_factory

    def reserve_table(self, key: str, names: list[str], opening: int | None = None) -> None:
        # A pair's opening is the colour swap (the seat order) and the programs' GAMED_SEED: the
        # setups are the programs' own in the UCC protocol, whose lines an opening must not change.
        if len(names) != 2:
            raise ValueError(f"a Stratego match has 2 sides, not {len(names)}")
        if key in self._reserved:
            raise ValueError(f"match {key} exists already")
        self._reserved[key] = tuple(names)
        self._arrived[key] = []

    def release_table(self, key: str) -> None:
        self._reserved.pop(key, None)
        self._arrived.pop(key, None)

    def table_waiting(self, key: str) -> bool:
        return key in self._reserved

    def hosted_seat_connected(self, seat) -> None:
        """A hosted bot's seat is connected to its program: the match starts once both are."""
        placement = seat.placement
        key = placement.table if placement is not None else None
        names = self._reserved.get(key)
        if names is None:
            self._log.warn("stratego: a hosted seat without a reserved match: ended")
            seat.kill()
            return
        arrived = self._arrived[key]
        arrived.append(seat)
        if len(arrived) < len(names):
            return
        self.release_table(key)  # its match begins
        order = list(names)
        arrived.sort(key=lambda s: order.index(s.name) if s.name in order else len(order))
        d = defer.ensureDeferred(self._hosted_match(key, arrived[0], arrived[1]))
        d.addErrback(lambda f: self._log.failure("stratego: hosted match {key} failed", f, key=key))

    async def _hosted_match(self, key: str, red, blue) -> MatchResult | None:
        """One match between two hosted bots' seats, reported to the hub as table ``key``; the
        result is told the hub as soon as it is known (``on_end``: before the programs end)."""
        live: list[LiveTable] = []
        names = [red.name, blue.name]

        def opened(referee):
            live.append(self._open_live(referee, names, "bot", {"hosted": key}, key))

        def ended(referee, result):
            if not live:
                opened(referee)
            scores, rated = match_scores(result)
            reason = SHUTDOWN if result is None else hosted_reason(result, (red, blue))
            extra = {"ucc_log": "".join(line + "\n" for line in referee.log)}
            if result is not None:
                extra["detail"] = result.line
            live[0].finish(scores, reason, referee.spectator_state(over=True), rated=rated, extra=extra)

        referee = StrategoReferee(
            red, blue, match_options(self.config), self.reactor, on_start=opened, on_end=ended,
            on_move=lambda referee, side, move: live and self._moved(live[0], referee, side, move),
        )
        self._running.add(referee)
        try:
            return await referee.run()
        finally:
            self._running.discard(referee)

    def startService(self) -> None:  # noqa: N802
        super().startService()
        if self.config.rounds:
            d = self.run_tournament(self.config.rounds, resume=True)
            d.addErrback(lambda f: self._log.failure("tournament failed", f))

    def abort_games(self) -> None:
        """Shutdown: no new game starts; running games end at once (their AIs are killed) and are
        recorded as aborted, outside the standings."""
        self._stopping = True
        if self._running:
            self._log.info("aborting {n} running stratego games for shutdown", n=len(self._running))
        for referee in list(self._running):
            referee.abort()
            for seat in referee.seats:
                seat.kill()

    def games_running(self) -> int:
        """Games being refereed (gamed.metrics)."""
        return len(self._running)

    def games_ending(self) -> list[Deferred]:
        """The aborted games end once their programs are dead; each tournament then records them."""
        running = [d for d in self.tournaments if not d.called]
        if not running:
            return []
        d = defer.DeferredList(running, consumeErrors=True)
        return [d]

    # --- tournaments -----------------------------------------------------------------------

    def run_tournament(self, rounds: int = 1, names: list[str] | None = None, resume: bool = False) -> Deferred:
        """Play ``rounds`` round-robin rounds between ``names`` (default: every registered AI).
        Fires with the tournament directory once every game is recorded. With ``resume``, the
        newest tournament of the state directory that is this same tournament is continued (or,
        when complete, left as it is) instead of starting a fresh one."""
        names = list(self.ais) if names is None else names
        wanted = identity(self.config, [self.ais[n] for n in names], rounds)
        directory = self._same_tournament(wanted) if resume else None
        if directory is None:
            directory = self._new_tournament(wanted)
        d = defer.ensureDeferred(self._tournament(directory, names, rounds))
        self.tournaments.append(d)
        return d

    def _same_tournament(self, wanted: dict) -> pathlib.Path | None:
        """The newest tournament directory whose manifest is ``wanted``."""
        found = []
        for directory in self.state_dir.glob("tournament-*"):
            manifest = read_manifest(directory)
            if manifest is not None and manifest.get("tournament") == wanted:
                found.append((str(manifest.get("created", "")), directory.name, directory))
        return max(found)[2] if found else None

    def _new_tournament(self, wanted: dict) -> pathlib.Path:
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        directory = self.state_dir / f"tournament-{stamp}"
        n = 1
        while directory.exists():
            n += 1
            directory = self.state_dir / f"tournament-{stamp}-{n}"
        (directory / "logs").mkdir(parents=True)
        partial = directory / (MANIFEST + ".new")
        partial.write_text(json.dumps({"tournament": wanted, "created": now.isoformat()}, indent=1) + "\n", encoding="utf-8")
        partial.replace(directory / MANIFEST)  # whole or not at all
        return directory

    async def _tournament(self, directory: pathlib.Path, names: list[str], rounds: int) -> pathlib.Path:
        planned = tournament.schedule(names, rounds, self.config.games)
        left = tournament.remaining(planned, read_results(directory))
        where = str(directory)
        if not left:
            self._log.info(
                "stratego tournament {dir} is complete ({n} games); move it away to play a fresh one",
                dir=where,
                n=len(planned),
            )
            return directory
        if len(left) < len(planned):
            self._log.info(
                "stratego tournament {dir}: continuing, {done} of {n} games recorded, {left} to play",
                dir=where,
                done=len(planned) - len(left),
                n=len(planned),
                left=len(left),
            )
        else:
            self._log.info(
                "stratego tournament {dir}: {n} programs, {rounds} round(s)", dir=where, n=len(names), rounds=rounds
            )
        limit = defer.DeferredSemaphore(self.config.concurrency)
        for round_no in sorted({p.round for p in left}):
            games = [
                limit.run(self._game_in_tournament, directory, p.round, p.game, p.red, p.blue)
                for p in left
                if p.round == round_no
            ]
            await defer.gatherResults(games, consumeErrors=True)
            if self._stopping:
                break
        missing = len(tournament.remaining(planned, read_results(directory)))
        if missing:
            self._log.info(
                "stratego tournament {dir} stopped: {done} of {n} games recorded; the next start continues it",
                dir=where,
                done=len(planned) - missing,
                n=len(planned),
            )
            return directory
        self._log.info("stratego tournament {dir} finished: {n} games", dir=where, n=len(planned))
        for line in table(directory):
            self._log.info("{line}", line=line)
        return directory

    def _game_in_tournament(self, directory, round_no, game, red, blue) -> Deferred:
        if self._stopping:
            return defer.succeed(None)
        return defer.ensureDeferred(self.play(directory, round_no, game, self.ais[red], self.ais[blue]))

    async def play(
        self, directory: pathlib.Path, round_no: int, game: int, red: AiProgram, blue: AiProgram
    ) -> MatchResult | None:
        """Play one game and record it (None: aborted by a shutdown, recorded without a result)."""
        started = datetime.datetime.now(datetime.timezone.utc)
        base = f"{game:04d}-{red.name}.vs.{blue.name}"
        workdirs = [self._workdir(directory, ai, base, side) for side, ai in (("red", red), ("blue", blue))]
        seats = [self._seat(ai, workdir) for ai, workdir in zip((red, blue), workdirs)]
        live: list[LiveTable] = []  # the game's live table once play begins (with a hub)
        hooks = {}
        if self.hub is not None:
            hooks = {
                "on_start": lambda referee: live.append(self._open_table(referee, red, blue, round_no, game)),
                "on_move": lambda referee, side, move: live and self._moved(live[0], referee, side, move),
            }
        referee = StrategoReferee(seats[0], seats[1], match_options(self.config), self.reactor, **hooks)
        self._running.add(referee)
        try:
            result = await referee.run()
        finally:
            self._running.discard(referee)
        if referee.aborted:
            result = None  # whatever the killed programs did last, a game the shutdown ended has no result
        logs = directory / "logs"
        lines = referee.log if result is None else result.log  # None: aborted, no result line
        log_text = "".join(line + "\n" for line in lines)
        stem = base if result is not None else _free_stem(logs, f"{base}.aborted")  # the replay gets base
        (logs / f"{stem}.log").write_bytes(log_text.encode("latin-1", "replace"))
        if self.hub is not None:
            self._finish_table(live, referee, result, red, blue, round_no, game, log_text)
        record = {
            "game": game,
            "round": round_no,
            "red": red.name,
            "blue": blue.name,
            "red_command": red.command,
            "blue_command": blue.command,
            "started": started.isoformat(),
            "ended": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "result": None if result is None else result.line,
            "reason": SHUTDOWN if result is None else result.reason,
            "log": f"logs/{stem}.log",
            "aborted": referee.aborted,
        }
        for side, seat in zip(("red", "blue"), seats):
            record[f"{side}_exit"] = getattr(seat, "exit_code", None)
            record[f"{side}_signal"] = getattr(seat, "exit_signal", None)
            text = getattr(seat, "stderr_text", b"") or b""
            if text:
                (logs / f"{stem}.{side}.stderr").write_bytes(text)
        with open(directory / RESULTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
        for ai, workdir in zip((red, blue), workdirs):
            if ai.workdir == "fresh":
                shutil.rmtree(workdir, ignore_errors=True)
        self._log.info(
            "stratego game {game} ({red} vs {blue}): {result}",
            game=game,
            red=red.name,
            blue=blue.name,
            result=record["result"] or "aborted",
        )
        return result

    # --- spectators (the live hub) --------------------------------------------------------

    def _open_table(self, referee: StrategoReferee, red: AiProgram, blue: AiProgram, round_no: int, game: int) -> LiveTable:
        return self._open_live(referee, [red.name, blue.name], "program", {"round": round_no, "game": game})

    def _open_live(
        self, referee: StrategoReferee, names: list[str], kind: str | list[str], info: dict, key: str | None = None
    ) -> LiveTable:
        kinds = [kind] * len(names) if isinstance(kind, str) else kind
        seats = [Seat(side, name, rated=True, kind=k) for side, (name, k) in enumerate(zip(names, kinds))]
        options = {
            **info,
            "max_turns": self.config.max_turns,
            "timeout": self.config.time_control.move,
            "allow_illegal": self.config.allow_illegal,
        }
        if not self.config.time_control.plain:
            options["clock"] = self.config.time_control.notation()
        return self.hub.open("stratego", seats, options, referee.spectator_state(), self._clocks(referee, 0), key=key)

    def _moved(self, table: LiveTable, referee: StrategoReferee, side: int, move: str) -> None:
        # The move ends the game (a captured flag, or the other side has nothing left to move):
        # its state shows every piece, as the end does.
        over = move.endswith("VICTORY_FLAG") or referee.board.mobile_count(1 - side) == 0
        try:
            if over:
                table.moved(side, move, referee.spectator_state(over=True), None, None, timing=referee.timing)
            else:
                table.moved(side, move, referee.spectator_state(), 1 - side, self._clocks(referee, 1 - side),
                            timing=referee.timing)
        except Exception:
            self._log.failure("stratego: the live table could not take a move")

    def _clocks(self, referee: StrategoReferee, side: int) -> dict | None:
        if referee.control is not None and referee.control.bank is not None:
            return dict(enumerate(referee.banks))
        timeout = self.config.time_control.move
        return None if timeout is None else {s: (timeout if s == side else None) for s in (0, 1)}

    def _finish_table(self, live, referee, result, red, blue, round_no, game, log_text: str) -> None:
        """The end for the hub (a game that ended during setup gets its table now), with the
        game's -o log as ``extra["ucc_log"]``."""
        try:
            table = live[0] if live else self._open_table(referee, red, blue, round_no, game)
            scores, rated = match_scores(result)
            reason = SHUTDOWN if result is None else result.reason
            table.finish(scores, reason, referee.spectator_state(over=True), rated=rated, extra={"ucc_log": log_text})
        except Exception:
            self._log.failure("stratego: the live table could not be finished")

    def _workdir(self, directory: pathlib.Path, ai: AiProgram, base: str, side: str) -> pathlib.Path:
        if ai.workdir == "persistent":
            path = self.state_dir / "ai" / ai.name
            path.mkdir(parents=True, exist_ok=True)
            return path
        return pathlib.Path(tempfile.mkdtemp(prefix=f"{base}.{side}.", dir=directory))

    def _seat(self, ai: AiProgram, workdir: pathlib.Path):
        if self._seat_factory is not None:
            seat = self._seat_factory(ai, workdir)
        else:
            from gamed.stratego.process import ProgramSeat

            seat = ProgramSeat(ai.command, match_options(self.config), self.reactor, stderr="capture", cwd=str(workdir))
        seat.argument = ai.shown  # what the other side is told in its setup query
        return seat
