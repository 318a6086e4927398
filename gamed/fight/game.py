"""One running Virtual Fight game: 2-4 teams playing simultaneous turns on the shared scheduler.

A ``FightGame`` opens one turn for every team at once on the ``TurnScheduler``; each team's AI
sends commands that the ``Battle`` applies at once (moves, turns) or queues (shots). The scheduler
closes the turn when the last team has finished or at the deadline, and the game resolves it as
one batch: all shots, then each team's ``200`` report, then ``READY`` or the game-over line.
Observers get the events through a ``Channel``.

Each team is a seat of the shared seat model (``gamed.seats``): the game provides ``ISeatGame``.
A team whose AI dropped is *away* for the grace period: nothing is sent to it, its turns time out
(without strikes: it is not disqualified while away), and the AIs that used a login command are
told (``AWAY``/``BACK``). An AI that takes the seat back gets its team's state and, when its turn
is open, ``READY``. A seat not back in time forfeits: its warriors leave the game, which goes on
with the others or ends, a loss for the forfeiting team.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import Attribute, Interface, implementer

from gamed.fight import wire
from gamed.fight.rules import DONE, INVALID, QUERIES, Battle, FightMap, Resolution, Result, judge
from gamed.observers import SHUTDOWN, Channel
from gamed.roundtrip import round_trips
from gamed.scheduler import StrikePolicy, Turn, TurnScheduler
from gamed.seats import ISeatGame, Seat
from gamed.textline import WriteBatch
from gamed.timecontrol import FlagPolicy, TimeControl


# Why a game ended, as its record and the web say (the AIs only ever see GAMEOVER&WIN/LOSE/DRAW).
LAST_TEAM = "last team standing"  # the other teams' warriors were all killed
ALL_KILLED = "all warriors killed"  # the last warriors of every team died in the same turn: a draw
TURN_LIMIT = "turn limit"  # the last turn was played: most living warriors wins
TIMEOUT = "timeout"  # a team ran out of time too many turns in a row (or once, on_flag = lose): disqualified
TIME_CAP = "time cap"  # the game lasted as long as its time control allows: most living warriors wins
FORFEIT = "forfeit"  # a team's AI left and did not come back within the grace period
# SHUTDOWN (gamed.observers): the server stopped the game: a draw, not rated.


class IFightTeam(Interface):
    """The AI playing one team, told everything its team may know."""

    name = Attribute("The team's display name (NAME extension or team<t>).")

    def game_started(game: FightGame, team: int) -> None:
        """The game began; this AI plays ``team``. READY follows."""

    def send_lines(lines: list[str]) -> None:
        """Lines for the AI: replies, the 200 block."""

    def ready(game: FightGame, team: int) -> None:
        """The team's turn is open: ``READY`` (after its clock line, if the AI asked for them)."""

    def game_ended(game: FightGame, result: Result) -> None:
        """This team is out of the game with ``result``: its last line, then the connection ends."""

    def notice(lines: list[str]) -> None:
        """News of the other seats (``AWAY``, ``BACK``): sent only to an AI that used a login
        command, as an original AI expects no such line."""


@implementer(ISeatGame)
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
        control: TimeControl | None = None,
        on_flag: FlagPolicy = FlagPolicy.PASS,
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
        self.taken_out: dict[int, str] = {}  # team -> TIMEOUT or FORFEIT: how it was taken out before the end
        self.away: set[int] = set()  # teams whose AI dropped, within the grace period
        self.forfeited: set[int] = set()
        self.started_at = clock.seconds()
        self._lines = [0] * len(self.players)
        self._on_end = on_end
        self._on_turn = on_turn
        self.channel = Channel(
            wire.map_lines(fmap, self.names), wire.snapshot(self.battle, 0), batch, lag, clock, gui_interval
        )
        # The time control (gamed.timecontrol): ``turn_time`` is the short form of a per-turn limit.
        # Turn 1 is the setup turn, on the control's setup budget when it has one.
        self.control = control if control is not None else TimeControl.per_move(turn_time)
        self.timing: dict[int, dict] = {}  # the last turn's clock of each team (used, left, credit)
        self._turns = TurnScheduler(
            clock, self._turn_closed, strikes=StrikePolicy(limit=strikes), control=self.control, on_flag=on_flag,
            game="fight",
        )

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
        """``player``'s team gives up its seat now (its AI left, no grace): see ``seat_forfeited``."""
        self._forfeit(self.team_of(player), "left")

    def catch_up(self) -> None:
        """Close a turn whose deadline has passed, before a line that does not go to ``command``
        is answered (it belongs to the next turn, as every line does)."""
        self._turns.live_turn()

    # --- ISeatGame -------------------------------------------------------------------------

    def seat_away(self, seat: Seat) -> None:
        team = seat.number
        if self.over or team not in self.battle.playing:
            return
        self.away.add(team)
        self._turns.excuse(team)
        left = seat.grace_ends - self.clock.seconds() if seat.grace_ends is not None else None
        self._log.info("fight game {game}: {seat} is away", game=self.id, seat=seat.label())
        self._notice(team, [wire.away(team, self.names[team], left)])

    def seat_back(self, seat: Seat) -> None:
        team = seat.number
        player = seat.holder
        self.players[team] = player
        self.away.discard(team)
        self._turns.excuse(team, False)
        if self.over or team not in self.battle.playing:
            player.game_ended(self, self.results.get(team, Result.LOSE))
            return
        self._log.info("fight game {game}: {seat} is back", game=self.id, seat=seat.label())
        with self.batch:
            live = self._turns.live_turn()  # a passed deadline first: the state is the next turn's
            if self.over or team not in self.battle.playing:
                return  # that resolution ended the game, or this team, and said so
            left = self._turns.remaining() if live is not None else None
            player.send_lines(
                wire.state(self.battle, team, self.names[team], self.turn, left, self._turns.strikes.get(team, 0))
            )
            if self._turns.is_open_for(team):
                player.ready(self, team)
            self._notice(team, [wire.back(team, self.names[team])])

    def seat_forfeited(self, seat: Seat) -> None:
        team = seat.number
        # Away first: the grace ran out. Never away: it dropped with no grace at all.
        self._forfeit(team, "forfeited (not back in time)" if team in self.away else "left")

    def _forfeit(self, team: int, how: str) -> None:
        """``team`` is out: its warriors fall, its shots are cancelled, it counts as finished and
        it loses (the game ends once one team is left)."""
        if self.over or team not in self.battle.playing:
            return
        self.away.discard(team)
        self.forfeited.add(team)
        why = f"{self.names[team]} (team {team}) {how}"
        self._log.info("fight game {game}: {why}", game=self.id, why=why)
        self.dropped[team] = why
        self.taken_out[team] = FORFEIT
        self.results[team] = Result.LOSE
        with self.batch:
            self.battle.remove_team(team)
            self.channel.publish([wire.end_turn(team, "GONE")])
            self._turns.remove(team)

    def _send(self, team: int, lines: list[str]) -> None:
        """Lines for ``team``'s AI; none while it is away (it gets its state when it is back)."""
        if team not in self.away:
            self.players[team].send_lines(lines)

    def _notice(self, about: int, lines: list[str]) -> None:
        for team in sorted(self.battle.playing - self.away - {about}):
            self.players[team].notice(lines)

    def _out(self, team: int, result: Result) -> None:
        """``team`` is out of the game with ``result``; an away team learns it if it comes back."""
        if team not in self.away:
            self.players[team].game_ended(self, result)

    def abort(self, reason: str) -> None:
        """End the game now (server shutdown): every AI still playing gets ``GAMEOVER&DRAW``."""
        if self.over:
            return
        with self.batch:
            self._end({t: Result.DRAW for t in sorted(self.battle.playing)}, reason)

    # --- clocks ----------------------------------------------------------------------------

    def clock_snapshot(self, team: int) -> tuple[float | None, list[float | None]]:
        """At one instant: the seconds ``team`` has left for the open turn (None: no limit, or
        its turn is done) and every team's bank, team 0 first (the CLOCK line)."""
        left, banks = self._turns.snapshot(team, range(len(self.players)))
        return left, [bank for _, bank in banks]

    def banks(self) -> list[float | None]:
        """What is left on each team's bank now (None without a bank), team 0 first."""
        return [self._turns.clock_left(team) for team in range(len(self.players))]

    # --- turns -----------------------------------------------------------------------------

    def _open_turn(self) -> None:
        cap = self._turns.cap_at
        if cap is not None and self.clock.seconds() >= cap:  # no turn opens after the game cap
            self._end(judge(set(), self.battle.counts(), 1, 1)[1], TIME_CAP)
            return
        self.turn += 1
        self.dropped = {}
        self._lines = [0] * len(self.players)
        self.channel.publish([wire.turn(self.turn)])
        playing = sorted(self.battle.playing)
        lag = round_trips({team: self.players[team] for team in playing if team not in self.away})
        self._turns.open(playing, setup=self.turn == 1, lag=lag)
        for team in playing:
            if team not in self.away:
                self.players[team].ready(self, team)

    def _turn_closed(self, turn: Turn) -> None:
        if self.over:
            return
        with self.batch:
            self._resolve(turn)

    def _resolve(self, turn: Turn) -> None:
        battle = self.battle
        if self._on_turn is not None:  # the records keep what the turn cost each team's clock
            self.timing = {team: turn.clock_entry(team) for team in sorted(turn.seats)}
        self.channel.publish([wire.end_turn(t, "TIMEOUT") for t in sorted(turn.timed_out)])
        before = battle.living_teams()
        resolution = battle.resolve()
        self.channel.publish(wire.shots_and_deaths(resolution))
        recipients = sorted(battle.playing)
        disqualified = {t for t in turn.struck_out if t in battle.playing and t not in self.away}
        for team in sorted(disqualified):
            if team in turn.lost:
                why = f"{self.names[team]} (team {team}) disqualified: ran out of time ({self.control.notation()})"
            else:
                why = f"{self.names[team]} (team {team}) disqualified after {self._turns.policy.limit} timeouts in a row"
            self._log.info("fight game {game}: {why}", game=self.id, why=why)
            self.dropped[team] = why
            self.taken_out[team] = TIMEOUT
            battle.remove_team(team)
        # The game cap ends the game after this turn as the turn limit would.
        if turn.capped:
            over, results = judge(before, battle.counts(), 1, 1)
        else:
            over, results = judge(before, battle.counts(), self.turn, self.max_turns)
        results.update({t: Result.LOSE for t in disqualified})
        for team in recipients:
            self._send(team, wire.report(resolution, team))
        self.channel.snapshot(wire.snapshot(battle, self.turn))
        if self._on_turn is not None:
            self._on_turn(self, resolution)
        if over:
            self._end(results, self._reason(disqualified, turn.capped))
            return
        for team, result in sorted(results.items()):
            battle.remove_team(team)
            self._turns.remove(team)
            self.results[team] = result
            self._out(team, result)
        self._open_turn()

    def _reason(self, disqualified: set[int], capped: bool = False) -> str:
        """Why the game is over after this turn's resolution: what took the last opponents out."""
        if disqualified:
            return TIMEOUT
        if any(team in self.forfeited for team in self.dropped):
            return FORFEIT
        living = self.battle.living_teams()
        if len(living) > 1:
            return TIME_CAP if capped else TURN_LIMIT
        return LAST_TEAM if living else ALL_KILLED

    def out_reasons(self) -> dict[int, str]:
        """Why each team that was taken out before the end went: ``timeout`` (disqualified),
        ``forfeit`` (its AI left or did not come back); the others fell or lasted to the end."""
        return dict(self.taken_out)

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
            self._out(team, result)
        self.channel.finish([wire.gui_game_over(self.winner, self.turn)])
        self._on_end(self)
