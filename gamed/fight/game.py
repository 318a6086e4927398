"""One running Virtual Fight game: 2-4 teams playing simultaneous turns on the shared scheduler.

A ``FightGame`` opens one turn for every team at once on the ``TurnScheduler``; each team's AI
sends commands that the ``Battle`` applies at once (moves, turns) or queues (shots). The scheduler
closes the turn when the last team has finished or at the deadline, and the game resolves it as
one batch: all shots, then each team's ``200`` report, then ``READY`` or the game-over line.
Observers get the events through a ``Channel``.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import Attribute, Interface

from gamed.fight import wire
from gamed.fight.rules import DONE, INVALID, QUERIES, Battle, FightMap, Resolution, Result, judge
from gamed.observers import SHUTDOWN, Channel
from gamed.scheduler import StrikePolicy, Turn, TurnScheduler
from gamed.textline import WriteBatch


# Why a game ended, as its record and the web say (the AIs only ever see GAMEOVER&WIN/LOSE/DRAW).
LAST_TEAM = "last team standing"  # the other teams' warriors were all killed
ALL_KILLED = "all warriors killed"  # the last warriors of every team died in the same turn: a draw
TURN_LIMIT = "turn limit"  # the last turn was played: most living warriors wins
TIMEOUT = "timeout"  # a team ran out of time too many turns in a row and was disqualified
DISCONNECT = "disconnect"  # a team's AI left
# SHUTDOWN (gamed.observers): the server stopped the game: a draw, not rated.


class IFightTeam(Interface):
    """The AI playing one team, told everything its team may know."""

    name = Attribute("The team's display name (NAME extension or team<t>).")

    def game_started(game: FightGame, team: int) -> None:
        """The game began; this AI plays ``team``. READY follows."""

    def send_lines(lines: list[str]) -> None:
        """Lines for the AI: replies, READY, the 200 block."""

    def game_ended(game: FightGame, result: Result) -> None:
        """This team is out of the game with ``result``: its last line, then the connection ends."""


class FightGame:
    """Runs one game between ``players`` (team t = players[t]) on ``fmap``."""

    _log = Logger()

    def __init__(
        self,
        game_id: int,
        players: list[IFightTeam],
        fmap: FightMap,
        clock: IReactorTime,
        batch: WriteBatch,
        turn_time: float | None = 5.0,
        max_turns: int = 500,
        strikes: int = 10,
        max_lines: int = 1000,
        lag: int = 0,
        gui_interval: float = 0.0,
        on_end: Callable[[FightGame], None] = lambda game: None,
        on_turn: Callable[[FightGame, Resolution], None] | None = None,
    ):
        self.id = game_id
        self.players = list(players)
        self.names = [p.name for p in self.players]
        self.battle = Battle(fmap, len(self.players))
        self.clock = clock
        self.batch = batch
        self.max_turns = max_turns
        self.max_lines = max_lines
        self.turn = 0  # the turn being played (0 before the first READY)
        self.over = False
        self.results: dict[int, Result] = {}
        self.winner: int | None = None
        self.end_reason: str | None = None  # LAST_TEAM, TURN_LIMIT, TIMEOUT ... once over
        # Teams that left the game during the turn being played, with why (for the record's move).
        self.dropped: dict[int, str] = {}
        self.started_at = clock.seconds()
        self._lines = [0] * len(self.players)
        self._on_end = on_end
        self._on_turn = on_turn
        self.channel = Channel(
            wire.map_lines(fmap, self.names), wire.snapshot(self.battle, 0), batch, lag, clock, gui_interval
        )
        self._turns = TurnScheduler(clock, self._turn_closed, turn_time or None, StrikePolicy(limit=strikes))

    def team_of(self, player: IFightTeam) -> int:
        for team, p in enumerate(self.players):
            if p is player:
                return team
        raise KeyError(player)

    def start(self) -> None:
        """Tell every AI its team, then send the first READY."""
        self._log.info("fight game {game} started: {teams}", game=self.id, teams=", ".join(self.names))
        with self.batch:
            for team, player in enumerate(self.players):
                player.game_started(self, team)
            self._open_turn()

    # --- commands --------------------------------------------------------------------------

    def command(self, player: IFightTeam, text: str | None) -> None:
        """Handle one line from ``player``'s AI (None: a line that was too long or not text).

        Exactly one reply line is sent (``HELP``: the help lines), unless the AI is out of the game
        by the time the line is handled (lines after the game-over line are never answered).
        """
        team = self.team_of(player)
        self._turns.live_turn()  # a passed deadline ends the turn first: this line is the next turn's
        if self.over or team not in self.battle.playing:
            return
        self._lines[team] += 1
        if text is not None and self._lines[team] <= self.max_lines and wire.is_help(text):
            player.send_lines(list(wire.AI_HELP))
            return
        command = wire.parse_command(text) if text is not None and self._lines[team] <= self.max_lines else None
        if command is None:
            player.send_lines([INVALID])
            return
        code, reply = self.battle.execute(team, command)
        player.send_lines([reply])
        if code != DONE or command.verb in QUERIES:
            return  # only an accepted action or pass can finish the team's turn
        if command.is_action:
            self.channel.publish([wire.action(self.battle.warriors[team][command.warrior], command.verb)])
        if self._turns.is_open_for(team) and self.battle.finished(team):
            self.channel.publish([wire.end_turn(team, "DONE")])
            self._turns.finish(team)

    def leave(self, player: IFightTeam) -> None:
        """``player`` disconnected: its warriors fall, its shots are cancelled, it counts as finished."""
        team = self.team_of(player)
        if self.over or team not in self.battle.playing:
            return
        self._log.info("fight game {game}: {name} (team {team}) left", game=self.id, name=self.names[team], team=team)
        self.dropped[team] = f"{self.names[team]} (team {team}) left"
        with self.batch:
            self.battle.remove_team(team)
            self.channel.publish([wire.end_turn(team, "GONE")])
            self._turns.remove(team)

    def abort(self, reason: str) -> None:
        """End the game now (server shutdown): every AI still playing gets ``GAMEOVER&DRAW``."""
        if self.over:
            return
        with self.batch:
            self._end({t: Result.DRAW for t in sorted(self.battle.playing)}, reason)

    # --- turns -----------------------------------------------------------------------------

    def _open_turn(self) -> None:
        self.turn += 1
        self.dropped = {}
        self._lines = [0] * len(self.players)
        self.channel.publish([wire.turn(self.turn)])
        for team in sorted(self.battle.playing):
            self.players[team].send_lines([wire.READY])
        self._turns.open(sorted(self.battle.playing))

    def _turn_closed(self, turn: Turn) -> None:
        if self.over:
            return
        with self.batch:
            self._resolve(turn)

    def _resolve(self, turn: Turn) -> None:
        battle = self.battle
        self.channel.publish([wire.end_turn(t, "TIMEOUT") for t in sorted(turn.timed_out)])
        before = battle.living_teams()
        resolution = battle.resolve()
        self.channel.publish(wire.shots_and_deaths(resolution))
        recipients = sorted(battle.playing)
        disqualified = {t for t in turn.struck_out if t in battle.playing}
        for team in sorted(disqualified):
            why = f"{self.names[team]} (team {team}) disqualified after {self._turns.policy.limit} timeouts in a row"
            self._log.info("fight game {game}: {why}", game=self.id, why=why)
            self.dropped[team] = why
            battle.remove_team(team)
        over, results = judge(before, battle.counts(), self.turn, self.max_turns)
        results.update({t: Result.LOSE for t in disqualified})
        for team in recipients:
            self.players[team].send_lines(wire.report(resolution, team))
        self.channel.snapshot(wire.snapshot(battle, self.turn))
        if self._on_turn is not None:
            self._on_turn(self, resolution)
        if over:
            self._end(results, self._reason(disqualified))
            return
        for team, result in sorted(results.items()):
            battle.remove_team(team)
            self._turns.remove(team)
            self.results[team] = result
            self.players[team].game_ended(self, result)
        self._open_turn()

    def _reason(self, disqualified: set[int]) -> str:
        """Why the game is over after this turn's resolution: what took the last opponents out."""
        if disqualified:
            return TIMEOUT
        if self.dropped:
            return DISCONNECT
        living = self.battle.living_teams()
        if len(living) > 1:
            return TURN_LIMIT
        return LAST_TEAM if living else ALL_KILLED

    def _end(self, results: dict[int, Result], reason: str) -> None:
        self.over = True
        self.end_reason = reason
        self._turns.stop()
        self.results.update(results)
        winners = [t for t, r in results.items() if r is Result.WIN]
        self.winner = winners[0] if winners else None
        self._log.info(
            "fight game {game} ended after turn {turn} ({reason}): {results}",
            game=self.id,
            turn=self.turn,
            reason=reason,
            results=", ".join(f"{self.names[t]} {r.value}" for t, r in sorted(self.results.items())) or "nobody left",
        )
        for team, result in sorted(results.items()):
            self.players[team].game_ended(self, result)
        self.channel.finish([wire.gui_game_over(self.winner, self.turn)])
        self._on_end(self)
