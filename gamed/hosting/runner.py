"""One game between hosted bots, from starting the programs to the result (docs/hosting.md).

``HostedGames.play(game, bots)`` reserves a lobby table of that game's service for the bots'
names in seat order (``IHostTables``), starts each bot's program in its sandbox
(``HostedProgram``), bridges its stdin and stdout to a connection of the game's own protocol
placed at that table (``gamed.seats.Placement``), waits for the live hub to report the table's end
(and its match stored), ends every program, and fires with a ``HostedResult``: the match, the
scores, and per seat its Trouble (``gamed.hosting.faults``) or None. A seat whose program never
takes its seat within ``start_timeout`` seconds, or ends before the game starts, is a START fault
and no game is played (``match_id`` None, scores empty).
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

import attrs
from twisted.internet import defer
from twisted.logger import Logger

from gamed.hosting import sandbox
from gamed.hosting.faults import Fault, Trouble, seat_fault
from gamed.hosting.process import HostedProgram, ProgramAddress
from gamed.hosting.spec import BotSpec
from gamed.hosting.warm import WarmSandboxes
from gamed.identity import Identity
from gamed.seats import IHostTables, Placement

START_TIMEOUT = 30.0  # seconds for every program to take its seat


@attrs.frozen
class HostedResult:
    """What one hosted game came to."""

    game: str
    bots: tuple[str, ...]  # the bots' names, in seat order
    match_id: int | None  # the stored match (None: no game, or no records)
    table: str | None  # the live table's id ("kalaha-3"), None when no game started
    scores: tuple[float, ...]  # per seat (empty when no game started)
    reason: str
    outcome: str  # in words ("alpha won 40–32", "no game: beta: start: ...")
    faults: tuple[Trouble | None, ...]  # per seat
    stderr: tuple[str, ...] = ()  # the end of each program's stderr

    @property
    def played(self) -> bool:
        return bool(self.scores)


class HostedGames:
    """Plays games between hosted bots on the daemon's game services."""

    _log = Logger()

    def __init__(
        self,
        services: dict[str, IHostTables],
        hub: Any,
        reactor: Any,
        isolation: sandbox.Isolation,
        state_dir: str,
        start_timeout: float = START_TIMEOUT,
        address: dict[str, tuple[str, int]] | None = None,
        tokens: Any = None,
        warm: int = 0,
    ):
        self.services = services
        self.hub = hub
        self.reactor = reactor
        self.isolation = isolation
        self.state_dir = state_dir
        self.start_timeout = start_timeout
        self.address = address or {}  # game -> (host, port) for bots that connect themselves
        self.tokens = tokens  # a gamed.players.Players: one-time tokens for bots that connect
        self._numbers = itertools.count(1)
        self.running: dict[str, _Game] = {}
        # up to ``warm`` sandboxes per kind started ahead (gamed.hosting.warm); 0: none
        self.warm = WarmSandboxes(reactor, isolation, os.path.join(state_dir, "bots", "games"), size=warm) if warm else None

    def programs_running(self) -> int:
        """Hosted programs of the games in play that have not ended (gamed.metrics)."""
        return sum(1 for one in self.running.values() for p in one.programs if not p.done)

    def play(self, game: str, bots: Sequence[BotSpec], opening: int | None = None) -> defer.Deferred:
        """Play one game of ``game`` between ``bots`` (seat 0 first); fires with a HostedResult.

        ``opening`` (a tournament's pair number): the game starts from that opening where the
        game has openings (``IHostTables.reserve_table``), and each program gets it as
        GAMED_OPENING and GAMED_SEED (a bot that plays at random is then paired too)."""
        service = self.services.get(game)
        if service is None:
            return defer.fail(ValueError(f"{game} does not host bots here (is it switched on?)"))
        if self.hub is None:
            return defer.fail(ValueError("hosted games need the live hub (a web site or records)"))
        name = f"hosted{os.getpid()}x{next(self._numbers)}"
        one = _Game(self, service, game, name, list(bots), opening)
        self.running[name] = one
        d = one.start()
        d.addBoth(self._done, name)
        return d

    def warm_up(self, bots: Sequence[BotSpec]) -> None:
        """Start sandboxes ahead for these bots now (a tournament about to play them), so that
        their first games do not wait for them (gamed.hosting.warm); nothing without a pool."""
        if self.warm is not None:
            for bot in bots:
                if bot.workdir != "persistent":
                    self.warm.fill(bot.argv, network=bot.talk == "connect")

    def _done(self, result: Any, name: str) -> Any:
        self.running.pop(name, None)
        return result

    def stop(self) -> None:
        """The daemon is stopping: end every hosted program now (their games are aborted)."""
        for one in list(self.running.values()):
            one.end_programs()
        if self.warm is not None:
            self.warm.stop()


class _Game:
    """One hosted game in progress."""

    _log = Logger()

    def __init__(
        self, owner: HostedGames, service: IHostTables, game: str, name: str, bots: list[BotSpec], opening: int | None
    ):
        self.owner = owner
        self.opening = opening
        self.service = service
        self.game = game
        self.name = name
        self.bots = bots
        self.key = service.hosted_table(name)
        self.programs: list[HostedProgram] = []
        self.workdirs: list[tuple[str, bool]] = []  # (path, remove after)
        self.table = None
        self.started = False
        self.result: defer.Deferred = defer.Deferred()
        self._timeout = None
        self._over = False
        self._tokens: list[str] = []
        self._left: set[int] = set()  # seats of bots that connect themselves whose connection dropped in the game

    def start(self) -> defer.Deferred:
        names = [bot.name for bot in self.bots]
        if any(bot.talk == "connect" for bot in self.bots) and (
            self.owner.tokens is None or self.owner.address.get(self.game) is None
        ):
            return defer.fail(ValueError(f"a bot that connects itself needs a TCP port of {self.game} to connect to"))
        try:
            self.service.reserve_table(self.key, names, self.opening)
        except Exception as e:
            return defer.fail(ValueError(f"cannot reserve a {self.game} table: {e}"))
        self.owner.hub.watch(self.key, self._table_over)
        self._timeout = self.owner.reactor.callLater(self.owner.start_timeout, self._start_timed_out)
        for seat, bot in enumerate(self.bots):
            program = self._program(seat, bot)
            self.programs.append(program)
            program.ended.addCallback(self._program_ended, program)
        for program in self.programs:
            if not self._over:
                program.start(self.owner.reactor)
        return self.result

    def _program(self, seat: int, bot: BotSpec) -> HostedProgram:
        warm = None
        if bot.workdir != "persistent" and self.owner.warm is not None:
            warm = self.owner.warm.take(bot.argv, network=bot.talk == "connect")
        if bot.workdir == "persistent":
            path = bot.directory or os.path.join(self.owner.state_dir, "bots", bot.name)
            os.makedirs(path, mode=0o700, exist_ok=True)
            self.workdirs.append((path, False))
        elif warm is not None and warm.workdir is not None:  # bubblewrap bound it into the sandbox
            path = warm.workdir
            self.workdirs.append((path, True))
        else:
            root = os.path.join(self.owner.state_dir, "bots", "games")
            os.makedirs(root, mode=0o700, exist_ok=True)
            path = tempfile.mkdtemp(prefix=f"{bot.name}-", dir=root)
            self.workdirs.append((path, True))
        identity = Identity(bot.name, "bot")  # a bot (not "program": the game does not drive it itself)
        clock = self.owner.reactor
        env = {"GAMED_GAME": self.game, "GAMED_NAME": bot.name, "GAMED_SEAT": str(seat), "GAMED_TABLE": self.name}
        if self.opening is not None:
            env.update({"GAMED_OPENING": str(self.opening), "GAMED_SEED": str(self.opening)})
        if bot.talk == "connect":
            host, port = self.owner.address.get(self.game, ("127.0.0.1", 0))
            token = self.owner.tokens.host_token(identity, self.key, left=functools.partial(self._left.add, seat))
            self._tokens.append(token)
            env.update({"GAMED_HOST": host, "GAMED_PORT": str(port), "GAMED_TOKEN": token})
            return HostedProgram(bot, path, self.owner.isolation, clock, env=env, network=True, warm=warm)
        protocol = self.service.player_factory.buildProtocol(ProgramAddress(bot.name))
        protocol.placement = Placement(identity, self.key)
        return HostedProgram(bot, path, self.owner.isolation, clock, env=env, game_protocol=protocol, warm=warm)

    # --- events --------------------------------------------------------------------------

    def _program_ended(self, trouble: Trouble | None, program: HostedProgram) -> None:
        if not self._over:
            if self.service_waiting():  # before its game began: no game is played
                if trouble is None or trouble.fault is not Fault.START:
                    words = "exited before its game began" + (f" ({trouble.text()})" if trouble else "")
                    program.trouble = Trouble(Fault.START, words)
                self._no_game()
                return
            # During the game its seat forfeits at once; the table's end finishes this game.
        self._maybe_finish()

    def service_waiting(self) -> bool:
        """True while the reserved table still waits for players (no game has started)."""
        return self.service.table_waiting(self.key)

    def _start_timed_out(self) -> None:
        self._timeout = None
        if self.started or self._over or not self.service_waiting():
            return
        for program in self.programs:
            if not program.done and program.trouble is None:
                program.trouble = Trouble(Fault.START, f"did not take its seat within {self.owner.start_timeout:g} s")
        self._no_game()

    def _no_game(self) -> None:
        self._over = True
        self.service.release_table(self.key)
        self.owner.hub.unwatch(self.key)
        self.end_programs()
        self._maybe_finish()

    def _table_over(self, table: Any) -> None:
        self.table = table
        self._over = True
        for program in self.programs:
            if not program.done:
                program.hang_up()
        self._maybe_finish()

    def end_programs(self) -> None:
        for program in self.programs:
            program.cancel()

    def _maybe_finish(self) -> None:
        if not self._over or not all(p.done for p in self.programs) or self.result.called:
            return
        if self._timeout is not None and self._timeout.active():
            self._timeout.cancel()
        for token in self._tokens:
            self.owner.tokens.drop_host_token(token)
        for path, remove in self.workdirs:
            if remove:
                try:
                    os.rmdir(path)  # most programs leave their fresh directory empty
                except OSError:
                    shutil.rmtree(path, ignore_errors=True)
        self.result.callback(self._result())

    def _result(self) -> HostedResult:
        names = tuple(bot.name for bot in self.bots)
        stderr = tuple(p.stderr_text() for p in self.programs)
        table = self.table
        if table is None or table.result is None:
            faults = tuple(p.trouble for p in self.programs)
            why = "; ".join(f"{n}: {t.text()}" for n, t in zip(names, faults) if t is not None) or "no game"
            return HostedResult(self.game, names, None, None, (), "no game", f"no game: {why}", faults, stderr)
        scores = tuple(float(s) for s in table.result["scores"])
        reason = table.result["reason"]
        own = table.result.get("seat_reasons", {})  # a seat taken out before the end: its own reason
        best = max(scores) if scores else 0.0
        faults = []
        for seat, program in enumerate(self.programs):
            lost = scores[seat] < best or not any(scores)  # an aborted game is nobody's win
            # It ended before its game did (the same instant: its end ended the game).
            early = program.ended_at is not None and table.ended is not None and program.ended_at <= table.ended
            early = early and not program.released  # the game let it go first (its team was out)
            early = early or seat in self._left  # its own TCP connection: the kernel may tell of its exit later
            trouble = program.trouble if early else None
            if trouble is None and early:
                trouble = Trouble(Fault.PROTOCOL, "left the game (ended its program) before it was over")
            faults.append(seat_fault(trouble, own.get(seat, reason), lost))
        return HostedResult(
            self.game, names, table.match_id, table.id, scores, reason, table.outcome or reason, tuple(faults), stderr
        )
