"""One GGZ Combat table as a pure, sans-I/O state machine (spec ggz-combat §4, §7, §11.2–§11.5, §12–§15).

``CombatTable`` holds the seats, the host, the options and the game of one table and turns table
events (``join``, ``leave``, ``drop``) and parsed client messages (``receive``) into the server
messages to send, as a list of ``(seat, message)`` pairs in sending order. Only the order within one
seat's connection matters (§1 "All"); the table always lists recipients in increasing seat order.

No Twisted, no sockets, no clock: randomness (RANDOM_SETUP, RANDOM_OUTCOME) comes from an injected
``random.Random`` and log lines go to an injected callable. The rules (setups, moves, attacks, the
game-over test and every per-seat view) are the shared Stratego core's ``CombatGame``; the bytes are
``gamed.combat.wire``'s. The protocol adapter parses with ``wire.Parser``, calls the table and writes
``wire.encode`` of each message to the seat's connection; a connection it closes (fatal input,
§15.3 rows 11, 12 and 22) is reported with ``drop``, which is a leave.

The state machine is HEAD's (§12), with every defect of §15.3 replaced by its defined behaviour:
the states only go forward (WAIT → SETUP → PLAYING → DONE), and a message a state does not expect is
ignored (§13) — logged, nothing sent, nothing changed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from gamed.combat.wire import (
    MAX_SEATS,
    MAX_STRING,
    MIN_SEATS,
    CombatOptions,
    HostOptions,
    InvalidOptions,
    InvalidSetup,
    MsgAttack,
    MsgGameover,
    MsgMove,
    MsgMoveError,
    MsgOptions,
    MsgPlayers,
    MsgSeat,
    MsgSetup,
    MsgStart,
    MsgSync,
    Numbering,
    Op,
    PlayerSeat,
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    ServerMessage,
    State,
    read_setup,
)
from gamed.names import MAP_NAME_RULE, valid_map_name
from gamed.stratego.rules import (
    EMPTY,
    CombatError,
    CombatGame,
    MoveKind,
    Opt,
    combat_options_check,
    combat_view,
    combat_winner,
    owner_of,
)

Outgoing = list[tuple[int, ServerMessage]]
"""What every table call returns: ``(seat, message)`` pairs in sending order."""

LAUNCH_KINDS = frozenset({SeatKind.OPEN, SeatKind.RESERVED, SeatKind.BOT, SeatKind.NONE})
"""What a seat may hold when the table is launched (§14)."""

JOIN_KINDS = frozenset({SeatKind.PLAYER, SeatKind.BOT})
"""What may join a seat (§14): people and bots speak the same client protocol."""

# Ignored messages of one seat logged each; after them only the 16th, 32nd, 64th... is.
_IGNORED_LOGGED = 8


def clean_name(name: str) -> str:
    """A seat name that can go on the wire: NUL and 0xFF bytes removed (§15.3 row 13), text that
    UTF-8 cannot carry replaced, and at most ``MAX_STRING − 1`` bytes (§2)."""
    try:
        data = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = name.encode("utf-8", "replace")
    data = data.replace(b"\x00", b"").replace(b"\xff", b"")[: MAX_STRING - 1]
    return data.decode("utf-8", "surrogateescape")


def _ignore_log(line: str) -> None:
    pass


class CombatTable:
    """The table state machine of §12–§14 for ``seats`` seats (2..15, default 2).

    ``seats`` is either the number of seats (all open at launch) or the launch description of each
    seat (§14: ``PlayerSeat`` of kind OPEN, RESERVED with a name, BOT waiting for its connection,
    or NONE). ``numbering`` selects the seat-type numbers of CBT_MSG_PLAYERS (§15.2). ``rng`` is
    the table's only source of randomness; ``log`` receives one line per ignored message, rejected
    options or setup, closed connection and drawn game.
    """

    def __init__(
        self,
        seats: int | Sequence[PlayerSeat] = 2,
        *,
        rng: random.Random,
        numbering: Numbering | str = Numbering.HEAD,
        log: Callable[[str], None] | None = None,
    ):
        if isinstance(seats, int):
            launch = [PlayerSeat(SeatKind.OPEN) for _ in range(seats)]
        else:
            launch = list(seats)
        if not MIN_SEATS <= len(launch) <= MAX_SEATS:
            raise ValueError(f"a Combat table has {MIN_SEATS}..{MAX_SEATS} seats, not {len(launch)}")
        for seat in launch:
            if not isinstance(seat, PlayerSeat) or seat.kind not in LAUNCH_KINDS:
                raise ValueError(f"a seat cannot be launched as {seat!r}")
        if not isinstance(rng, random.Random):
            raise TypeError("rng must be a random.Random")
        self.number = len(launch)
        self.numbering = Numbering(numbering)
        self.rng = rng
        self._log = log or _ignore_log
        self._seats = launch
        self._connected = [False] * self.number
        self._ignored = [0] * self.number  # messages ignored per seat, for a sparse log
        self.host: int | None = None
        self.state = State.WAIT
        self.options: CombatOptions | None = None
        self._game: CombatGame | None = None
        self.fixed = False  # the options were set by the server (``fix_options``), not by a host

    # --- what the table looks like ------------------------------------------------------------

    @property
    def connected(self) -> tuple[int, ...]:
        """The connected seats in increasing order: the recipients of a message "to all"."""
        return tuple(seat for seat in range(self.number) if self._connected[seat])

    @property
    def seats(self) -> tuple[PlayerSeat, ...]:
        """Every seat's kind and name as CBT_MSG_PLAYERS reports them."""
        return tuple(self._seats)

    @property
    def seats_full(self) -> bool:
        """§12.1: no seat is OPEN or RESERVED, and no bot seat is without its connection."""
        for seat, held in enumerate(self._seats):
            if held.kind in (SeatKind.OPEN, SeatKind.RESERVED):
                return False
            if held.kind is SeatKind.BOT and not self._connected[seat]:
                return False
        return True

    @property
    def game(self) -> CombatGame | None:
        """The rules state (board, turn, counts, winner) while options exist, else None."""
        return self._game

    @property
    def turn(self) -> int:
        """The seat to play (0 before any options exist)."""
        return self._game.turn if self._game is not None else 0

    @property
    def winner(self) -> int | None:
        """The winning seat once the game is over (−1: nobody), else None."""
        return self._game.winner if self.state is State.DONE and self._game is not None else None

    def players(self) -> MsgPlayers:
        """CBT_MSG_PLAYERS for the current seats in the table's numbering (§5, §14)."""
        return MsgPlayers(tuple(self._seats), self.numbering)

    def view(self, seat: int | None) -> bytes:
        """The unit bytes (one per cell, §8) that ``seat`` may see now, computed by the rules layer.

        A seat gets its own view (its units exact, other seats' units as owner|U_UNKNOWN). ``None``
        is an observer: the full view once the game is over or under OPEN_MAP, otherwise every unit
        hidden. Before any options exist there are no cells."""
        game = self._game
        if game is None:
            return b""
        if seat is not None:
            if not 0 <= seat < self.number:
                raise ValueError(f"seat {seat} is not one of 0..{self.number - 1}")
            return game.view(seat)
        if self.state is State.DONE or (self.state is State.PLAYING and game.options & Opt.OPEN_MAP):
            return game.view(None)
        return combat_view(game.board, -1)

    def sync(self, seat: int | None) -> MsgSync:
        """CBT_MSG_SYNC carrying ``view(seat)``, the turn and the current state."""
        return MsgSync(self.turn, self.state, self.view(seat))

    def _full_sync(self) -> MsgSync:
        assert self._game is not None
        return MsgSync(self._game.turn, self.state, self._game.view(None))

    def _own_sync(self, seat: int) -> MsgSync:
        return MsgSync(self.turn, self.state, self._game.view(seat) if self._game is not None else b"")

    def _start_sync(self, seat: int) -> MsgSync:
        assert self._game is not None
        return MsgSync(self._game.turn, self.state, self._game.start_view(seat))

    def _to_all(self, message: ServerMessage) -> Outgoing:
        return [(seat, message) for seat in self.connected]

    def fix_options(self, options: CombatOptions) -> None:
        """The server chooses the map and options before anyone joins (a tournament's opening):
        each joiner receives them as CBT_MSG_OPTIONS, as a joiner does when options exist (§12.3),
        the host is never asked for options, and a host's CBT_MSG_OPTIONS is ignored. Raises
        ValueError for options that fail the check or for a table that has players already."""
        if self.connected or self.state is not State.WAIT:
            raise ValueError("options are fixed before anyone joins")
        code = combat_options_check(options.layout(self.number), options.army, self.number)
        if code:
            raise ValueError(f"options check failed: {CombatError(code).name} ({code})")
        self.options = options
        self._game = CombatGame(options.layout(self.number), options.army, self.number, options.options, self.rng)
        self.fixed = True

    # --- table events (§12.3, §12.4, §14) -----------------------------------------------------

    def join(self, seat: int, name: str = "", kind: SeatKind = SeatKind.PLAYER) -> Outgoing:
        """A player or bot took ``seat`` (§12.3). Raises ValueError for a seat that does not
        exist, is already connected, or is NONE (the lobby's mistakes, not a client's)."""
        self._check_seat(seat)
        if self._connected[seat]:
            raise ValueError(f"seat {seat} is already taken")
        if self._seats[seat].kind is SeatKind.NONE:
            raise ValueError(f"seat {seat} is not a seat at this table")
        if kind not in JOIN_KINDS:
            raise ValueError(f"{kind} cannot join a seat")
        self._seats[seat] = PlayerSeat(kind, clean_name(name))
        self._connected[seat] = True
        out: Outgoing = [(seat, MsgSeat(seat, self.number))]
        out += self._to_all(self.players())
        if self.options is not None:
            out.append((seat, MsgOptions(self.options)))
        if self.state is State.WAIT:
            if self.host is None:
                self.host = seat
                if self.options is None:
                    out.append((seat, ReqOptions()))
            if self.options is not None and self.seats_full:
                out += self._enter_setup()
        elif self.state is State.SETUP:
            out.append((seat, ReqSetup()))
        elif self.state is State.PLAYING:
            out.append((seat, self._own_sync(seat)))
            out += self._start()
        elif self.state is State.DONE:
            out.append((seat, self._full_sync()))
            out += self._game_over()
        return out

    def leave(self, seat: int) -> Outgoing:
        """The player of ``seat`` left (§12.4); its seat becomes OPEN. Leaving a seat that is not
        connected changes nothing."""
        self._check_seat(seat)
        if not self._connected[seat]:
            return []
        self._connected[seat] = False
        self._seats[seat] = PlayerSeat(SeatKind.OPEN)
        out = self._to_all(self.players())
        if self.state is State.WAIT:
            if self.host == seat:
                connected = self.connected
                if connected:
                    # Even if options exist (original behaviour, kept: §15.1), unless the server
                    # fixed them.
                    self.host = connected[0]
                    if not self.fixed:
                        out.append((self.host, ReqOptions()))
                else:
                    self.host = None  # §15.3 row 10: the next joiner becomes host
        elif self.state is State.SETUP:
            assert self._game is not None
            self._game.remove_setup(seat)
        return out

    def drop(self, seat: int, reason: str) -> Outgoing:
        """gamed closed ``seat``'s connection (fatal input or a failed write, §13, §15.3 rows 11,
        12, 22): log why, then handle it as a leave."""
        self._log(f"seat {seat}: connection closed in state {self.state.name}: {reason}")
        return self.leave(seat)

    def _check_seat(self, seat: int) -> None:
        if not isinstance(seat, int) or not 0 <= seat < self.number:
            raise ValueError(f"seat {seat!r} is not one of 0..{self.number - 1}")

    # --- client messages (§13) ----------------------------------------------------------------

    def receive(self, seat: int, message: object) -> Outgoing:
        """A parsed client message from ``seat`` (§13). Messages from a seat that is not
        connected are ignored. Raises TypeError for an object that is not a client message."""
        self._check_seat(seat)
        if isinstance(message, ReqMove):
            handler = self._req_move
        elif isinstance(message, ReqSync):
            handler = self._req_sync
        elif isinstance(message, ReqOptions):
            handler = self._req_options
        elif isinstance(message, HostOptions):
            handler = self._host_options
        elif isinstance(message, MsgSetup):
            handler = self._setup
        else:
            raise TypeError(f"{type(message).__name__} is not a client→server message")
        if not self._connected[seat]:
            return self._ignore(seat, message, "the seat is not connected")
        return handler(seat, message)

    def _ignore(self, seat: int, message: object, reason: str) -> Outgoing:
        # A seat that repeats a message it may not send must not flood the log: the first few
        # are logged, then the 16th, 32nd, 64th... with the count.
        self._ignored[seat] += 1
        n = self._ignored[seat]
        if n <= _IGNORED_LOGGED or n & (n - 1) == 0:
            opcode = _OPCODES[type(message)]
            count = f" ({n} ignored from this seat so far)" if n > _IGNORED_LOGGED else ""
            self._log(f"seat {seat}: ignored opcode {int(opcode)} ({opcode.name}) in state {self.state.name}: {reason}{count}")
        return []

    def _req_sync(self, seat: int, message: ReqSync) -> Outgoing:
        return [(seat, self._own_sync(seat))]

    def _req_options(self, seat: int, message: ReqOptions) -> Outgoing:
        if self.options is None:
            return self._ignore(seat, message, "no options yet")  # §15.3 row 3
        return [(seat, MsgOptions(self.options))]

    def _host_options(self, seat: int, message: HostOptions) -> Outgoing:
        if self.state is not State.WAIT:
            return self._ignore(seat, message, "options are only taken in WAIT")  # §15.3 row 5
        if seat != self.host:
            return self._ignore(seat, message, "not the host")
        if self.fixed:
            return self._ignore(seat, message, "the server fixed this table's options")
        if message.declines:
            others = [s for s in self.connected if s != seat]
            self.host = others[0] if others else seat
            self._reset()
            return [(self.host, ReqOptions())]
        try:
            options, unrecognised = message.read()
        except InvalidOptions as e:
            return self._invalid_options(seat, str(e))
        if unrecognised:
            self._log(f"seat {seat}: {unrecognised} unrecognised options packet(s) skipped")
        if options.name and not valid_map_name(options.name):
            # The name is shown to people (web site, records): text like a player name only.
            return self._invalid_options(seat, f"map name {options.name[:40]!r} is not {MAP_NAME_RULE}")
        code = combat_options_check(options.layout(self.number), options.army, self.number)
        if code:
            return self._invalid_options(seat, f"options check failed: {CombatError(code).name} ({code})")
        self._reset()
        self.options = options
        self._game = CombatGame(options.layout(self.number), options.army, self.number, options.options, self.rng)
        out = self._to_all(MsgOptions(options))
        if self.seats_full:
            out += self._enter_setup()
        return out

    def _invalid_options(self, seat: int, reason: str) -> Outgoing:
        self._log(f"seat {seat}: invalid options: {reason}")
        self._reset()
        return [(seat, ReqOptions())]

    def _reset(self) -> None:
        """§12.5 reset: no options, no game (board, counts, turn, setups), state WAIT. Safe to
        repeat (§15.3 row 6)."""
        self.options = None
        self._game = None
        self.state = State.WAIT

    def _setup(self, seat: int, message: MsgSetup) -> Outgoing:
        if self.state is not State.SETUP:
            return self._ignore(seat, message, "setups are only taken in SETUP")  # §15.3 row 4
        game, options = self._game, self.options
        assert game is not None and options is not None
        if seat in game.setup_done:
            self._log(f"seat {seat}: setup rejected: already sent")
            return [(seat, ReqSetup())]
        try:
            read_setup(options, seat, message.data)
        except InvalidSetup as e:
            self._log(f"seat {seat}: setup rejected: {e}")
            return [(seat, ReqSetup())]
        if not game.accept_setup(seat, message.data):
            self._log(f"seat {seat}: setup rejected by the rules")
            return [(seat, ReqSetup())]
        if game.all_set_up:
            return self._start()
        return []

    def _req_move(self, seat: int, message: ReqMove) -> Outgoing:
        if self.state is State.DONE:
            return self._game_over()  # §15.3 row 9: nothing else, no board change
        if self.state is not State.PLAYING:
            return self._ignore(seat, message, "no game is being played")  # §15.3 row 2
        game = self._game
        assert game is not None
        result = game.request_move(seat, message.source, message.target)
        if result.kind is MoveKind.ERROR:
            return self._to_all(MsgMoveError(int(result.code), seat))
        if result.kind is MoveKind.MOVE:
            out = self._to_all(MsgMove(message.source, message.target))
        elif result.kind is MoveKind.ATTACK:
            out = [(r, MsgAttack(*result.attack_for(r))) for r in self.connected]
        else:  # GAME_OVER cannot happen in PLAYING: the state goes to DONE with the winner
            return self._game_over()
        if result.winner is not None:
            out += self._end(result.winner)
        return out

    # --- transitions (§12.1, §12.2, §11.5) ----------------------------------------------------

    def _enter_setup(self) -> Outgoing:
        assert self._game is not None
        self.state = State.SETUP
        if self._game.options & Opt.RANDOM_SETUP:
            return self._start()
        return self._to_all(ReqSetup())

    def _start(self) -> Outgoing:
        """The start procedure in HEAD order (§12.2); on a rejoin in PLAYING only steps 2–3."""
        game = self._game
        assert game is not None
        out: Outgoing = []
        open_map = bool(game.options & Opt.OPEN_MAP)
        if game.options & Opt.RANDOM_SETUP and self.state is not State.PLAYING:
            game.place_randomly()  # never after PLAYING has begun (§15.3 row 17)
            out += [(seat, self._start_sync(seat)) for seat in self.connected]
        for seat in self.connected:
            if open_map:
                out.append((seat, self._full_sync()))
            out.append((seat, MsgStart()))
        self.state = State.PLAYING
        return out

    def setup_expired(self) -> Outgoing:
        """The setup time ran out (a gamed time control): every seat that has not placed its army
        gets a random placement (sent to it as a SYNC), then the game starts as usual. Outside
        SETUP nothing happens."""
        game = self._game
        if self.state is not State.SETUP or game is None:
            return []
        late = [seat for seat in range(self.number) if seat not in game.setup_done]
        self._log(f"the setup time ran out: seats {', '.join(map(str, late))} placed at random")
        game.place_randomly()
        out: Outgoing = [(seat, self._start_sync(seat)) for seat in self.connected if seat in late]
        return out + self._start()

    def time_cap(self) -> Outgoing:
        """The game has lasted as long as its time control allows: it ends, nobody wins (winner
        -1, as when no seat is left alive). Outside PLAYING nothing happens."""
        game = self._game
        if self.state is not State.PLAYING or game is None:
            return []
        self._log("the game reached its time cap: nobody wins")
        game.winner = -1
        return self._end(-1)

    def forfeit(self, seat: int, reason: str) -> Outgoing:
        """``seat`` loses by time (its move time or its rejoin grace ran out) during PLAYING.

        With two seats the other seat wins (GAMEOVER + full SYNC to each connected seat, DONE).
        With more seats the game goes on without it: its units leave the board and its counts
        drop to zero, so the game-over test (§11.5) counts it as beaten and the game ends when one
        seat is left; otherwise its turn passes and every seat is synchronised. Outside PLAYING
        nothing happens."""
        self._check_seat(seat)
        game = self._game
        if self.state is not State.PLAYING or game is None:
            return []
        self._log(f"seat {seat} forfeits: {reason}")
        if self.number == 2:
            game.winner = 1 - seat
            return self._end(game.winner)
        cells = game.board.cells
        for cell, value in enumerate(cells):
            if value != EMPTY and owner_of(value) == seat:
                cells[cell] = EMPTY
                game.revealed.discard(cell)
        game.remaining[seat] = [0] * len(game.remaining[seat])
        winner = combat_winner(game.remaining)
        if winner is not None:
            game.winner = winner
            return self._end(winner)
        if game.turn == seat:
            game.turn = 0 if game.turn >= self.number - 1 else game.turn + 1
        return [(s, self._own_sync(s)) for s in self.connected]

    def _end(self, winner: int) -> Outgoing:
        """The game-ending move (§11.5): GAMEOVER + full SYNC (state byte PLAYING) to each
        connected seat, then DONE."""
        if winner < 0:
            self._log("game over with no seat alive: nobody wins (winner -1)")
        out = self._game_over()
        self.state = State.DONE
        return out

    def _game_over(self) -> Outgoing:
        assert self._game is not None and self._game.winner is not None
        out: Outgoing = []
        for seat in self.connected:
            out.append((seat, MsgGameover(self._game.winner)))
            out.append((seat, self._full_sync()))
        return out


_OPCODES = {
    ReqOptions: Op.REQ_OPTIONS,
    HostOptions: Op.MSG_OPTIONS,
    MsgSetup: Op.MSG_SETUP,
    ReqMove: Op.REQ_MOVE,
    ReqSync: Op.REQ_SYNC,
}
