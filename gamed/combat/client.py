"""``gamed-combat``: a terminal client for people playing GGZ Combat (spec ggz-combat) on gamed.

It connects to the binary port (``--combat``, 5688: seated in arrival order) or, with ``--name``
(``--token`` to log in as that registered account), ``--table NAME [--seats N]``, ``--computer AI``
or ``--resume TOKEN`` (take back a seat after a drop), to the handshake port (``--combat-text``, 5689),
tells every server message in words, answers the host's options request with a shipped map
(``--map``, optionally another option mask with ``--options HEX``), places the army
(``--random-setup``, the word ``DEFAULT`` on the Default map, ``RANDOM``, or typed rows of unit
tokens), draws the board with a legend after every change it makes and after each move, and sends
the moves typed as ``x y x2 y2`` or ``A0 A1`` (column letter, row number). ``sync`` asks for the
board again, ``board`` draws it, ``help`` lists the commands and ``quit`` leaves. At game over it
says who won and why, and exits with status 0. stdin may be a file or a pipe: lines are read in
order, a move line waits until it is this seat's turn, and the end of stdin leaves.

People see what the web site shows: seats by their 0-based wire number with the player's name
(``seat 1 (bob)``) and units by their classic rank: 1 = marshal ... 9 = scout, S spy, B bomb, F flag.

``CombatClient`` is the sans-I/O game part (messages in, words and client messages out),
``ServerStream`` the sans-I/O byte part (handshake lines, binary messages, a closing ERROR line);
``main`` wires them to a TCP connection and stdin with Twisted.
"""

from __future__ import annotations

import argparse
import random
import re
import sys

import attrs

from gamed.combat import wire
from gamed.combat.maps import shipped_maps
from gamed.combat.wire import (
    T_LAKE,
    T_NULL,
    U_EMPTY,
    U_UNKNOWN,
    CombatOptions,
    HostOptions,
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
    ReqMove,
    ReqOptions,
    ReqSetup,
    ReqSync,
    SeatKind,
    owner_nibble,
    owner_of,
)
from gamed.stratego.console import DEFAULT_SETUPS
from gamed.identity import looks_like_token
from gamed.names import valid_name
from gamed.stratego.rules import UNIT_OF_TOKEN, Opt, Unit

DEFAULT_PORT = 5688  # the binary port (--combat)
HANDSHAKE_PORT = 5689  # the text handshake port (--combat-text)

TOKENS = "FBS987654321"
"""The unit tokens people see and type, indexed by Combat unit code: the classic ranks (1 =
marshal ... 9 = scout) and S spy, B bomb, F flag, as on the web site. Typing ``s`` works too."""

LEGEND = (
    "Units: 1 marshal, 2 general, 3 colonel, 4 major, 5 captain, 6 lieutenant, 7 sergeant, 8 miner, "
    "9 scout, S spy, B bomb, F flag; # another seat's unit, ~ lake, . empty."
)

ERRORS = {
    -1: "connection failure",
    -2: "a cell outside the board",
    -3: "it is not your turn, or that cell holds none of your units",
    -4: "you cannot attack your own unit",
    -5: "the target cell is not open (lake or off the map)",
    -6: "there is none of your units on that cell",
    -7: "that unit cannot move (flag or bomb)",
    -8: "that is no move",
    -9: "diagonal moves are not allowed",
    -10: "that unit moves only one cell",
    -11: "a scout moves in a straight line over empty cells only",
    -12: "options: the army has no flag",
    -13: "options: the army has no movable unit",
    -14: "options: a setup zone is smaller than the army",
}
"""What the error codes of spec §3 mean."""

STATES = {0: "init", 1: "waiting for players", 2: "setup", 3: "playing", 4: "over"}
HELP = (
    "Commands: 'x y x2 y2' or 'A0 A1' (column letter, row) moves a unit; 'sync' asks for the board; "
    "'board' draws it with the legend; 'quit' leaves."
)


def unit_name(code: int) -> str:
    """A unit code (sign and owner nibble ignored) in words."""
    code = abs(code) & 0x0F
    if code == U_UNKNOWN:
        return "unknown unit"
    if code == U_EMPTY:
        return "nothing"
    if 0 <= code < len(TOKENS):
        return f"{Unit(code).name.lower()} ({TOKENS[code]})"
    return f"unit {code}"


def option_names(mask: int) -> str:
    names = [name.lower() for name, flag in Opt.__members__.items() if flag and mask & flag]
    return ", ".join(names) if names else "none"


def army_text(options: CombatOptions, counts: list[int] | None = None) -> str:
    """An army (the options', or ``counts``) in tokens, strongest first: ``1x1 2x1 ... Fx1``."""
    counts = list(options.army) if counts is None else counts
    order = sorted(range(len(TOKENS)), key=lambda code: "123456789SBF".index(TOKENS[code]))
    return " ".join(f"{TOKENS[code]}x{counts[code]}" for code in order if counts[code]) or "nothing"


def describe_options(options: CombatOptions) -> str:
    army = ", ".join(f"{count} {Unit(code).name.lower()}" for code, count in enumerate(options.army) if count)
    name = options.name or "(unnamed)"
    return f"map {name} {options.width}x{options.height}; army: {army}; options: {option_names(options.options)}"


def error_text(code: int) -> str:
    return ERRORS.get(code, "unknown error")


def cell_name(options: CombatOptions | None, cell: int) -> str:
    if options is None or not 0 <= cell < options.cells:
        return f"cell {cell}"
    x, y = cell % options.width, cell // options.width
    return f"{x},{y}"


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def draw_board(options: CombatOptions, units: list[int] | bytes, seat: int, reveal: bool = False) -> str:
    """The board as text with x (number and letter) and y coordinates: own units by token
    (1..9 S B F), other seats' units '#' (with ``reveal``, as at the end: their token marked
    ``*``), lakes '~', off-map cells blank, empty cells '.'; the legend on the last line."""
    w = options.width
    cell = 3 if reveal else 2
    lines = [
        "    " + "".join(f"{x:>2}".ljust(cell) for x in range(w)),
        "    " + "".join(f"{_LETTERS[x] if x < 26 else '?':>2}".ljust(cell) for x in range(w)),
    ]
    for y in range(options.height):
        row = []
        for x in range(w):
            i = y * w + x
            terrain = options.terrain(i)
            unit = units[i] if i < len(units) else U_EMPTY
            code = unit & 0x0F
            mark = ""
            if terrain == T_LAKE:
                ch = "~"
            elif terrain == T_NULL:
                ch = " "
            elif unit == U_EMPTY or owner_of(unit) < 0:
                ch = "."
            elif owner_of(unit) == seat and code < len(TOKENS):
                ch = TOKENS[code]
            elif reveal and code < len(TOKENS):
                ch, mark = TOKENS[code], "*"
            else:
                ch = "#"
            row.append((f"{ch:>2}" + mark).ljust(cell))
        lines.append((f"{y:>3} " + "".join(row)).rstrip() if reveal else f"{y:>3} " + "".join(row))
    lines.append(LEGEND + (" A unit marked * is another seat's." if reveal else ""))
    return "\n".join(lines) + "\n"


_COORD = re.compile(r"^([A-Za-z])(\d+)$")


def parse_move(text: str, options: CombatOptions) -> tuple[int, int] | None:
    """``x y x2 y2`` or ``A0 A1`` (letter = column x, number = row y) as (source, target) cells;
    None if the text is neither or a coordinate is off the board."""
    words = text.replace(",", " ").split()
    if len(words) == 4 and all(re.fullmatch(r"-?\d+", w) for w in words):
        x, y, x2, y2 = (int(w) for w in words)
    elif len(words) == 2 and all(_COORD.match(w) for w in words):
        (a, b), (c, d) = (_COORD.match(w).groups() for w in words)
        x, y, x2, y2 = _LETTERS.index(a.upper()), int(b), _LETTERS.index(c.upper()), int(d)
    else:
        return None
    w, h = options.width, options.height
    if not (0 <= x < w and 0 <= y < h and 0 <= x2 < w and 0 <= y2 < h):
        return None
    return y * w + x, y2 * w + x2


def random_setup(options: CombatOptions, seat: int, rng: random.Random) -> dict[int, int]:
    """The army shuffled over the seat's zone: cell -> unit code."""
    zone = list(options.zone(seat))
    army = [code for code, count in enumerate(options.army) for _ in range(count)]
    rng.shuffle(zone)
    return dict(zip(zone, army))


def default_setup(options: CombatOptions, seat: int) -> dict[int, int] | None:
    """The UCC DEFAULT army (RED for the top zone, BLUE for the bottom one) on a 10x10 map whose
    zone is 4 full rows and whose army is the UCC one; None elsewhere."""
    zone = options.zone(seat)
    if options.width != 10 or len(zone) != 40 or sorted(options.army) != sorted((1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1)):
        return None
    rows = DEFAULT_SETUPS["RED" if zone[0] < options.cells // 2 else "BLUE"]
    placement = {cell: int(UNIT_OF_TOKEN[token]) for cell, token in zip(zone, "".join(rows))}
    counts = [0] * len(Unit)
    for code in placement.values():
        counts[code] += 1
    return placement if tuple(counts) == tuple(options.army) else None


def token_unit(token: str) -> Unit | None:
    """The unit of a typed token (``TOKENS``; ``s`` for the spy too), None for anything else."""
    if token in TOKENS:
        return Unit(TOKENS.index(token))
    return UNIT_OF_TOKEN.get(token)


def typed_setup(text: str, options: CombatOptions, seat: int) -> dict[int, int] | str:
    """Tokens (F B S 9..1, '.' for empty) for the zone cells in index order: the placement, or
    the reason it is refused."""
    tokens = [c for c in text if not c.isspace()]
    zone = options.zone(seat)
    if len(tokens) != len(zone):
        return f"{len(tokens)} tokens for a zone of {len(zone)} cells"
    placement = {}
    counts = [0] * len(Unit)
    for cell, token in zip(zone, tokens):
        if token == ".":
            continue
        unit = token_unit(token)
        if unit is None:
            return f"unknown token {token!r} (units: {TOKENS}, '.' empty)"
        placement[cell] = int(unit)
        counts[placement[cell]] += 1
    if tuple(counts) != tuple(options.army):
        return f"the army is {army_text(options)}, not {army_text(options, counts)}"
    return placement


class CombatClient:
    """The client's state, without I/O. ``receive(message)`` and ``command(line)`` return the text
    for the person; client→server messages pile up in ``outbox`` (take them with ``take()``).
    ``over`` and ``result`` tell that the game ended and how; ``finished`` that the final board
    (the full sync after MSG_GAMEOVER) has been shown as well."""

    def __init__(
        self,
        map_options: CombatOptions | None = None,
        auto_setup: str | None = None,
        rng: random.Random | None = None,
    ):
        self.map_options = map_options  # what this client sends when it is the host
        self.auto_setup = auto_setup  # "random", "default" or None (typed)
        self.rng = rng or random.Random()
        self.seat = -1
        self.seats = 2
        self.names: list[str] = []
        self.kinds: list[SeatKind | None] = []
        self.options: CombatOptions | None = None
        self.units: list[int] = []
        self.turn = 0
        self.playing = False
        self.over = False
        self.finished = False
        self.winner: int | None = None
        self.result: str | None = None  # "who won: why", once the game is over
        self.setup_wanted = False
        self.setup_text = ""
        self.pending_move = False
        self.outbox: list[object] = []
        self._back = False  # a sync of a game in play came before START: we came back to it
        self._last: object = None  # the server message before the current one
        self._last_fight: tuple[int, int] | None = None  # (attacker, defender) of the last attack
        self._turn_after: int | None = None  # who moved in the messages being told (None: nobody)

    # --- helpers ---------------------------------------------------------------------------
    def send(self, message: object) -> None:
        self.outbox.append(message)

    def take(self) -> list[object]:
        out, self.outbox = self.outbox, []
        return out

    def seat_name(self, seat: int) -> str:
        """A seat as people see it everywhere: its 0-based number and its player's name."""
        name = self.names[seat] if 0 <= seat < len(self.names) and self.names[seat] else ""
        return f"seat {seat}" + (f" ({name})" if name else "")

    def who(self, seat: int) -> str:
        """``you`` for this client's seat, else ``seat_name``."""
        return "you" if seat == self.seat else self.seat_name(seat)

    @property
    def my_turn(self) -> bool:
        return self.playing and not self.over and self.turn == self.seat

    @property
    def ready(self) -> bool:
        """Whether a typed line can be used now (setup wanted, or this seat's move)."""
        return self.over or self.setup_wanted or (self.my_turn and not self.pending_move)

    def board(self) -> str:
        if self.options is None:
            return "No map yet.\n"
        return draw_board(self.options, self.units, self.seat)

    def _next_turn(self) -> None:
        self.turn = wire.next_turn(self.turn, self.seats)
        self.pending_move = False

    def _place(self, placement: dict[int, int]) -> str:
        assert self.options is not None
        self.setup_wanted = False
        self.setup_text = ""
        nibble = owner_nibble(self.seat)
        for cell in self.options.zone(self.seat):
            self.units[cell] = U_EMPTY
        for cell, code in placement.items():
            self.units[cell] = nibble | code
        self.send(MsgSetup(wire.write_setup(self.options, self.seat, placement)))
        return "Setup sent:\n" + self.board()

    def _turn_text(self, moved: int | None = None) -> str:
        """After a change of the game: the board when it is this seat's move (or this seat just
        moved), and whose move it is."""
        if self.over or not self.playing:
            return ""
        if self.my_turn:
            return self.board() + "Your move (x y x2 y2):\n"
        drawn = self.board() if moved == self.seat else ""
        return drawn + f"Waiting for {self.who(self.turn)} to move.\n"

    # --- server messages -------------------------------------------------------------------
    def receive(self, message: object) -> str:
        """One server message: what to tell the person (the board and whose move it is after a
        move)."""
        return self.receive_all([message])

    def receive_all(self, messages: list) -> str:
        """Messages that arrived together: each one told, and the board and whose move it is
        once, after the last of them (none after the move that ended the game)."""
        out = []
        self._turn_after = None
        for message in messages:
            if self.finished:
                break  # the game is over and its final board shown: the rest is not news
            out.append(self._receive(message))
            self._last = message
        if self._turn_after is not None and not self.over:
            out.append(self._turn_text(self._turn_after))
        self._turn_after = None
        return "".join(out)

    def _receive(self, message: object) -> str:
        if isinstance(message, MsgSeat):
            self.seat, self.seats = message.seat, message.seats
            self.names = [""] * message.seats
            self.kinds = [None] * message.seats  # known from MSG_PLAYERS
            return f"You are seat {message.seat} of {message.seats} (seats are numbered from 0; protocol {message.version}).\n"
        if isinstance(message, MsgPlayers):
            self.names = [p.name for p in message.seats]
            self.kinds = [p.kind for p in message.seats]
            words = []
            for i, p in enumerate(message.seats):
                if p.kind is SeatKind.OPEN:
                    words.append(f"seat {i} open")
                    continue
                extra = [] if p.kind is SeatKind.PLAYER else [p.kind.value]
                if i == self.seat:
                    extra.append("you")
                words.append(f"seat {i} ({', '.join([p.name or '?', *extra])})")
            return "Players: " + ", ".join(words) + ".\n"
        if isinstance(message, ReqOptions):
            if self.map_options is None:
                self.send(HostOptions(b""))
                return "You are the host but have no map: declining.\n"
            self.send(HostOptions.of(self.map_options))
            return f"You are the host: sending {describe_options(self.map_options)}.\n"
        if isinstance(message, MsgOptions):
            self.options = message.options
            self.units = [U_EMPTY] * message.options.cells
            return f"Options: {describe_options(message.options)}.\n"
        if isinstance(message, ReqSetup):
            return self._setup_request()
        if isinstance(message, MsgStart):
            return self._start()
        if isinstance(message, MsgSync):
            return self._sync(message)
        if isinstance(message, MsgMoveError):
            text = f"{self.who(message.seat)}: move refused, {error_text(message.code)} ({message.code}).\n"
            if message.seat == self.seat:
                self.pending_move = False
                text += "Try another move.\n"
            return text
        if isinstance(message, MsgMove):
            mover = owner_of(self.units[message.source]) if self._on(message.source) else self.turn
            if mover < 0:
                mover = self.turn
            if self._on(message.source) and self._on(message.target):
                self.units[message.target], self.units[message.source] = self.units[message.source], U_EMPTY
            text = f"{self.who(mover)} moved {self._cell(message.source)} -> {self._cell(message.target)}.\n"
            self._next_turn()
            self._moved(mover)
            return text
        if isinstance(message, MsgAttack):
            text = self._attack(message)
            self._moved(self._last_fight[0])
            return text
        if isinstance(message, MsgGameover):
            return self._game_over(message.winner)
        return f"Message {message!r}.\n"

    def _moved(self, seat: int) -> None:
        """A move was made: the board follows the messages (drawn if this seat made one of them)."""
        self._turn_after = seat if self._turn_after in (None, -1) or seat == self.seat else self._turn_after

    def _on(self, cell: int) -> bool:
        return 0 <= cell < len(self.units)

    def _cell(self, cell: int) -> str:
        return cell_name(self.options, cell)

    def _setup_request(self) -> str:
        if self.options is None:
            return "Setup requested before any options.\n"
        self.setup_wanted = True
        self.setup_text = ""
        zone = self.options.zone(self.seat)
        text = f"Setup requested: place your army on your zone ({len(zone)} cells).\n"
        if self.auto_setup == "random":
            return text + self._place(random_setup(self.options, self.seat, self.rng))
        if self.auto_setup == "default":
            placement = default_setup(self.options, self.seat)
            if placement is not None:
                return text + self._place(placement)
        text += (
            f"Type {len(zone)} tokens for your zone cells in order (row by row; '.' empty), army {army_text(self.options)};"
            " or RANDOM" + (" or DEFAULT" if default_setup(self.options, self.seat) else "") + ".\n"
        )
        return text + self.board()

    def _start(self) -> str:
        if self.playing:
            # A seat came back: every seat is sent MSG_START again, and the turn goes on.
            return f"A player came back; the game goes on. To move: {self.who(self.turn)}.\n"
        self.playing = True
        if self._back:
            # We came back: the sync before START gave the board and the turn.
            self._back = False
            return f"START: you are back in the game. To move: {self.who(self.turn)}.\n" + self._turn_text()
        self.turn = 0
        self.pending_move = False
        if self.options is not None:
            for i, t in enumerate(self.options.types):
                owner = owner_of(t)
                if 0 <= owner < self.seats and owner != self.seat and self.units[i] == U_EMPTY:
                    self.units[i] = owner_nibble(owner) | U_UNKNOWN
        self.send(ReqSync())
        return f"START: the game begins; first move: {self.who(0)}.\n"

    def _sync(self, message: MsgSync) -> str:
        state = STATES.get(int(message.state), str(int(message.state)))
        if self.options is not None and len(message.units) == self.options.cells:
            self.units = list(message.units)
            self.turn = message.turn
            self.pending_move = False
        if self.over:
            self.finished = True
            return "The final board, every unit shown:\n" + draw_board(self.options, self.units, self.seat, reveal=True)
        if not self.playing and int(message.state) == 3:
            self._back = True  # a rejoin: MSG_START follows
            return f"Sync: a game in play, to move: {self.who(message.turn)}.\n"
        if self.playing:
            return f"Sync: to move: {self.who(message.turn)}.\n" + self._turn_text()
        return f"Sync: {state}.\n" + (self.board() if message.units else "")

    def _attack(self, m: MsgAttack) -> str:
        attacker = owner_of(self.units[m.source]) if self._on(m.source) else self.turn
        if attacker < 0:
            attacker = self.turn
        defender = owner_of(self.units[m.target]) if self._on(m.target) else -1
        self._last_fight = (attacker, defender)
        a, d = unit_name(m.who_from), unit_name(m.who_to)
        target = "your" if defender == self.seat else f"{self.seat_name(defender)}'s" if defender >= 0 else "a"
        text = f"{self.who(attacker)} attacked with {a} from {self._cell(m.source)} {target} {d} on {self._cell(m.target)}: "
        if m.who_from < 0 and m.who_to >= 0:
            text += "the attacker wins.\n"
            if self._on(m.source) and self._on(m.target):
                mover = self.units[m.source]
                if owner_of(mover) != self.seat:
                    mover = (mover & 0xF0) | (abs(m.who_from) & 0x0F)  # now known
                self.units[m.target], self.units[m.source] = mover, U_EMPTY
        elif m.who_from >= 0 and m.who_to < 0:
            text += "the defender wins.\n"
            if self._on(m.source) and self._on(m.target):
                if owner_of(self.units[m.target]) != self.seat:
                    self.units[m.target] = (self.units[m.target] & 0xF0) | (abs(m.who_to) & 0x0F)
                self.units[m.source] = U_EMPTY
        else:
            text += "both units are removed.\n"
            if self._on(m.source) and self._on(m.target):
                self.units[m.source] = self.units[m.target] = U_EMPTY
        self._next_turn()
        return text

    def _game_over(self, winner: int) -> str:
        if self.over:
            return ""  # the answer to a move sent after the end: nothing new
        self.over = True
        self.playing = False
        self.winner = winner
        if winner < 0:
            head = "nobody won (a draw)"
        elif winner == self.seat:
            head = f"you, {self.seat_name(winner)}, won"
        else:
            head = f"{self.seat_name(winner)} won"
        self.result = head + self._why(winner)
        return f"Game over: {self.result}.\n"

    def _why(self, winner: int) -> str:
        """Why the game ended, from the message before MSG_GAMEOVER (the protocol sends no reason):
        a move or an attack ended it on the board; without one a seat lost by time or by leaving."""
        last = self._last
        if winner < 0:
            return ": no seat has both a flag and a movable unit left"
        if isinstance(last, MsgAttack) and self._last_fight is not None:
            attacker, defender = self._last_fight
            if last.who_from < 0 and last.who_to == 0 and attacker == winner and defender >= 0:
                return " by capturing " + ("your flag" if defender == self.seat else f"the flag of {self.seat_name(defender)}")
        losers = [s for s in range(self.seats) if s != winner]
        if isinstance(last, (MsgMove, MsgAttack)):
            if len(losers) == 1:
                return ": " + ("you have" if losers[0] == self.seat else f"{self.seat_name(losers[0])} has") + " no movable unit left"
            return ": no other seat has both a flag and a movable unit left"
        if len(losers) == 1:
            loser = losers[0]
            if loser != self.seat and loser < len(self.kinds) and self.kinds[loser] is SeatKind.OPEN:
                return f": {self.seat_name(loser)} left the game and did not come back in time"
            return f": {self.who(loser)} ran out of move time"
        return ": the last other seat ran out of move time or left the game"

    # --- typed lines -----------------------------------------------------------------------
    def notice(self, line: str) -> str:
        """Words for an ``AWAY <seat> <name> <seconds>`` or ``BACK <seat> <name>`` line."""
        words = line.split()
        if len(words) == 4 and words[0] == "AWAY" and words[1].isdigit():
            return f"seat {words[1]} ({words[2]}) dropped out: its seat is kept {words[3]} s for its return.\n"
        if len(words) == 3 and words[0] == "BACK" and words[1].isdigit():
            return f"seat {words[1]} ({words[2]}) is back.\n"
        return f"Server: {line}\n"

    def command(self, line: str) -> str:
        """One typed line. Returns the text to show; 'quit' is handled by the caller."""
        text = line.strip()
        word = text.lower()
        if not text:
            return ""
        if word == "help":
            return HELP + "\n" + LEGEND + "\n"
        if word == "sync":
            self.send(ReqSync())
            return ""
        if word == "board":
            return self.board()
        if self.setup_wanted and self.options is not None:
            if word == "random":
                return self._place(random_setup(self.options, self.seat, self.rng))
            if word == "default":
                placement = default_setup(self.options, self.seat)
                if placement is None:
                    return "DEFAULT is only for the Default army on a 10-wide map.\n"
                return self._place(placement)
            self.setup_text += text
            need = len(self.options.zone(self.seat))
            have = len([c for c in self.setup_text if not c.isspace()])
            if have < need:
                return f"{have}/{need} tokens.\n"
            result = typed_setup(self.setup_text, self.options, self.seat)
            if isinstance(result, str):
                self.setup_text = ""
                return f"Invalid setup: {result}. Type it again.\n"
            return self._place(result)
        if self.over:
            return "The game is over.\n"
        if not self.playing or self.options is None:
            return "The game has not started.\n"
        move = parse_move(text, self.options)
        if move is None:
            return f"Not a move: {text!r}. {HELP}\n"
        if not self.my_turn:
            return f"It is {self.who(self.turn)}'s turn.\n"
        if owner_of(self.units[move[0]]) != self.seat:
            return f"There is none of your units on {self._cell(move[0])}. Your move (x y x2 y2):\n"
        self.send(ReqMove(*move))
        self.pending_move = True
        return f"Sending move {self._cell(move[0])} -> {self._cell(move[1])}.\n"


# --- the bytes from the server -------------------------------------------------------------------

_ERROR_OPCODE = int.from_bytes(b"ERRO", "big", signed=True)  # what the parser reads of "ERROR ..."
# What the parser reads of the NOTICES lines "AWAY ..." and "BACK ..." (no server opcode).
_NOTICE_OPCODES = {int.from_bytes(word, "big", signed=True) for word in (b"AWAY", b"BACK")}
_BINARY_FOLLOWS = "binary protocol follows"


class ServerStream:
    """The server's bytes in any chunking, as events (sans-I/O).

    With ``handshake`` (the lines to send on the handshake port, one after each answer), the
    stream starts with text lines: ``("say", line)`` is a line to send, ``("line", text)`` an
    answer to show, ``("refused", text)`` an ``ERROR`` answer that ends the attempt. After the
    ``OK ... binary protocol follows`` line (or at once, without a handshake) come binary
    messages, ``("message", message)``; on the handshake port a closing text line ``ERROR <why>``
    may end them, ``("closing", why)``; with NOTICES asked, ``AWAY``/``BACK`` lines between them
    are ``("notice", line)``. ``("fatal", reason)``: bytes that are neither.
    """

    def __init__(self, handshake: list[str] | None = None):
        self.parser = wire.ClientParser()
        self.binary = handshake is None
        self._commands = list(handshake or [])
        self._text = b""  # an incomplete handshake line
        self._held = b""  # the bytes the parser holds: the start of an incomplete message
        self._closing: bytes | None = None  # the closing ERROR line, once it began
        self._notice: bytes | None = None  # an AWAY/BACK line not complete yet
        self._closed = False

    def feed(self, data: bytes) -> list[tuple[str, object]]:
        if not self.binary:
            return self._handshake(data)
        return self._messages(data)

    def end(self) -> list[tuple[str, object]]:
        """The connection closed: a closing line cut short is still told."""
        if self._closing is not None and not self._closed:
            self._closed = True
            return [("closing", self._closing.decode("ascii", "replace").strip()[len("ERROR ") :])]
        return []

    def _next_command(self) -> list[tuple[str, object]]:
        return [("say", self._commands.pop(0))] if self._commands else []

    def _handshake(self, data: bytes) -> list[tuple[str, object]]:
        events: list[tuple[str, object]] = []
        buffer = self._text + data
        while not self.binary:
            end = buffer.find(b"\n")
            if end < 0:
                self._text = buffer
                return events
            line = buffer[:end].rstrip(b"\r").decode("ascii", "replace").strip()
            buffer = buffer[end + 1 :]
            if line.startswith("COMBAT "):  # the greeting
                events += self._next_command()
            elif line.startswith(("OK TOKEN", "OK NOTICES")):  # said once the game is on
                events += self._next_command()
            elif line.startswith("TOKEN "):
                events.append(("token", line[len("TOKEN ") :].strip()))
            elif line.startswith("ERROR"):
                events.append(("refused", line[len("ERROR") :].strip()))
                self._commands.clear()
            elif line.startswith("OK") and line.endswith(_BINARY_FOLLOWS):
                self.binary = True
            elif line.startswith("AI "):
                events.append(("line", line))  # one of the COMPUTER list, END follows
            else:
                events.append(("line", line))
                events += self._next_command()
        self._text = b""
        return events + (self._messages(buffer) if buffer else [])

    def _messages(self, data: bytes) -> list[tuple[str, object]]:
        if self._closing is not None:
            self._closing += data
            return self._closing_line()
        if self._notice is not None:
            return self._notice_line(data)
        whole = self._held + data
        try:
            messages = self.parser.feed(data)
        except wire.ProtocolError as e:
            events: list[tuple[str, object]] = [("message", m) for m in e.messages]
            if e.opcode in _NOTICE_OPCODES:
                # A notice line between two messages: it starts where the messages before it end.
                start = sum(len(wire.encode(m)) for m in e.messages)
                self.parser = wire.ClientParser(self.parser.numbering, self.parser.seats)
                self._held = b""
                return events + self._notice_line(whole[start:])
            start = whole.rfind(b"ERRO")
            if e.opcode == _ERROR_OPCODE and start >= 0:
                self._closing = whole[start:]
                return events + self._closing_line()
            return events + [("fatal", str(e))]
        held = self.parser.buffered
        self._held = whole[len(whole) - held :] if held else b""
        return [("message", m) for m in messages]

    def _notice_line(self, data: bytes) -> list[tuple[str, object]]:
        data = (self._notice or b"") + data
        end = data.find(b"\n")
        if end < 0:
            if len(data) > 512:
                self._notice = None
                return [("fatal", "a notice line that does not end")]
            self._notice = data
            return []
        self._notice = None
        line = data[:end].rstrip(b"\r").decode("ascii", "replace")
        rest = data[end + 1 :]
        return [("notice", line)] + (self._messages(rest) if rest else [])

    def _closing_line(self) -> list[tuple[str, object]]:
        assert self._closing is not None
        if self._closed or b"\n" not in self._closing:
            return []
        self._closed = True
        line = self._closing.split(b"\n", 1)[0].rstrip(b"\r").decode("ascii", "replace")
        return [("closing", line[len("ERROR ") :].strip())]


def handshake_lines(args: argparse.Namespace) -> list[str] | None:
    """The handshake-port lines for the options (None: the binary port, no handshake)."""
    if args.list_computers:
        return ["COMPUTER", "QUIT"]
    if args.resume:
        return ["NOTICES", f"RESUME {args.resume}"]
    if not (args.name or args.table or args.computer):
        return None
    if args.token:
        lines = [f"LOGIN {args.name} {args.token}"]  # an account comes back by logging in again
    else:
        # A guest's only way back after a drop is its resume token: ask for it.
        lines = ([f"NAME {args.name}"] if args.name else []) + ["TOKEN"]
    lines.append("NOTICES")  # be told when a seat drops and comes back
    if args.computer:
        return lines + [f"COMPUTER {args.computer}"]
    if args.table:
        lines.append(f"TABLE {args.table}" + (f" {args.seats}" if args.seats else ""))
    return lines + ["PLAY"]


# --- Twisted wiring ------------------------------------------------------------------------------


def _protocol_class():
    from twisted.internet import defer, protocol

    class CombatProtocol(protocol.Protocol):
        """The TCP connection: the server's bytes through ``ServerStream`` to the client."""

        def __init__(self, client: CombatClient, write, handshake: list[str] | None = None):
            self.client = client
            self.write = write
            self.stream = ServerStream(handshake)
            self.changed: list = []
            self.done = defer.Deferred()
            self.failure: str | None = None  # why the server refused or ended the game

        def flush(self) -> None:
            for message in self.client.take():
                self.transport.write(wire.encode_client(message))

        def dataReceived(self, data: bytes) -> None:  # noqa: N802
            self._handle(self.stream.feed(data))

        def _handle(self, events) -> None:
            messages: list = []  # told together: the board once, after the last of them
            for kind, value in events:
                if messages and kind != "message":
                    self.write(self.client.receive_all(messages))
                    messages = []
                if kind == "say":
                    self.transport.write(value.encode("ascii") + b"\r\n")
                elif kind == "line":
                    self.write(f"Server: {value}\n")
                elif kind == "notice":
                    self.write(self.client.notice(str(value)))
                elif kind == "token":
                    self.write(
                        f"Your resume token: {value}\n"
                        f"If your connection drops, gamed-combat --resume {value} takes your seat back (within the grace period).\n"
                    )
                elif kind == "message":
                    messages.append(value)
                    continue
                elif kind == "refused":
                    self.failure = value
                    self.write(f"gamed-combat: the server refused: {value}\n")
                    self.transport.loseConnection()
                elif kind == "closing":
                    self.failure = value
                    self.write(f"The server ended the game: {value}\n")
                    self.transport.loseConnection()
                elif kind == "fatal":
                    self.failure = f"protocol error: {value}"
                    self.write(f"Protocol error from the server: {value}\n")
                    self.transport.loseConnection()
            if messages:
                self.write(self.client.receive_all(messages))
            if self.transport is not None and self.stream.binary and not self.done.called:
                self.flush()
            self.wake()

        def wake(self) -> None:
            waiting, self.changed = self.changed, []
            for d in waiting:
                d.callback(None)

        def connectionLost(self, reason=protocol.connectionDone) -> None:  # noqa: N802
            if not self.done.called:
                self.done.callback(None)  # first: whoever wakes up sees the connection gone
            self._handle(self.stream.end())

        def wait_change(self):
            d = defer.Deferred()
            self.changed.append(d)
            return d

    return CombatProtocol


def map_options_of(args: argparse.Namespace, write) -> CombatOptions | None:
    """The options this client sends as host: ``--map`` (Default) with ``--options``; against the
    computer the UCC rules by default (the Default map with SUPER_SCOUT). None: bad options."""
    maps = shipped_maps()
    name = args.map or "Default"
    if name not in maps:
        write(f"gamed-combat: unknown map {name!r}; maps: {', '.join(sorted(maps))}\n")
        return None
    options = maps[name]
    mask = args.options
    if mask is None and args.computer and args.map is None:
        mask = f"{int(Opt.SUPER_SCOUT):x}"
    if mask is not None:
        try:
            options = attrs.evolve(options, options=int(mask, 16))
        except ValueError as e:
            write(f"gamed-combat: bad --options {mask!r}: {e}\n")
            return None
    return options


async def run(reactor, args) -> int:
    """Play one game (or list the computer opponents): 0 when it ended (or the person left),
    1 when the server could not be reached, refused or ended the game, 2 for bad options."""
    from twisted.internet import defer, endpoints

    from gamed.stratego.console import ConsoleInput, stream_writer

    write = stream_writer(sys.stdout)
    map_options = map_options_of(args, write)
    if map_options is None:
        return 2
    handshake = handshake_lines(args)
    port = args.port or (HANDSHAKE_PORT if handshake is not None else DEFAULT_PORT)
    auto = "random" if args.random_setup else None
    client = CombatClient(map_options, auto, random.Random(args.seed))
    proto = _protocol_class()(client, write, handshake)
    endpoint = endpoints.TCP4ClientEndpoint(reactor, args.host, port, timeout=args.timeout)
    try:
        await endpoints.connectProtocol(endpoint, proto)
    except Exception as e:
        write(f"gamed-combat: cannot connect to {args.host}:{port}: {e}\n")
        return 1
    if args.list_computers:
        await proto.done
        return 1 if proto.failure else 0
    write(f"Connected to {args.host}:{port}. {HELP}\n")
    console = ConsoleInput(reactor)
    typed: list = []  # lines read from stdin, not used yet (None: the end of stdin)
    reading = False

    def got_line(line) -> None:
        nonlocal reading
        reading = False
        typed.append(line)
        proto.wake()

    try:
        while not proto.done.called and not client.over:
            if not typed and not reading:
                reading = True
                console.read_line().addCallback(got_line)
            if not typed:
                await proto.wait_change()  # a line typed, or something from the server
                continue
            line = typed.pop(0)
            if line is None or line.strip().lower() == "quit":
                write("Leaving.\n")
                break
            word = line.strip().lower()
            if word not in ("sync", "board", "help", "") and not client.ready:
                while not client.ready and not proto.done.called:
                    await proto.wait_change()
                if proto.done.called or client.over:
                    break
            if not console.interactive:
                write(f"> {line}\n")
            write(client.command(line))
            proto.flush()
        if client.over and not client.finished and not proto.done.called:
            # The full board follows MSG_GAMEOVER: show it before leaving.
            limit = reactor.callLater(args.timeout, proto.wake)
            while not client.finished and not proto.done.called and limit.active():
                await proto.wait_change()
            if limit.active():
                limit.cancel()
    finally:
        console.close()
        if proto.transport is not None:
            proto.transport.loseConnection()
    if client.over:
        return 0
    if proto.failure:
        return 1
    if proto.done.called:
        write("The server closed the connection.\n")
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gamed-combat",
        description=(
            "A terminal client for GGZ Combat (Stratego) on gamed. Without --name, --table, --computer or --resume it "
            f"joins the binary port ({DEFAULT_PORT}) in arrival order; with them it uses the handshake port "
            f"({HANDSHAKE_PORT}). Seats are numbered from 0; units are 1 marshal .. 9 scout, S spy, B bomb, F flag."
        ),
    )
    parser.add_argument("--host", default="localhost", help="the daemon's address [default: localhost]")
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"the daemon's Combat port [default: {DEFAULT_PORT}, or {HANDSHAKE_PORT} with --name, --table, --computer or --resume]",
    )
    parser.add_argument("--name", default=None, help="your name at the table (1-32 letters, digits, _ . -): a guest's (never rated), or your account's with --token")
    parser.add_argument("--token", default=None, help="log in as the registered account --name with this token (rated; after a drop the same command takes your seat back)")
    parser.add_argument("--resume", metavar="TOKEN", default=None, help="take back your seat after a drop with the resume token the client showed when you were seated")
    parser.add_argument("--table", metavar="NAME", default=None, help="play at the named table NAME (others join it by name)")
    parser.add_argument("--seats", type=int, default=None, metavar="N", help="seats of the named table when you open it (2-15)")
    parser.add_argument("--computer", metavar="AI", default=None, help="play the server's computer opponent AI (on the Default map with SUPER_SCOUT)")
    parser.add_argument("--list-computers", action="store_true", help="list the server's computer opponents and exit")
    parser.add_argument("--map", default=None, help="the map sent when this client is the host [default: Default]")
    parser.add_argument("--options", metavar="HEX", default=None, help="option mask (hex) replacing the map's [default: the map's; 10 = SUPER_SCOUT against the computer]")
    parser.add_argument("--random-setup", action="store_true", help="place the army at random instead of typing it")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random setup")
    parser.add_argument("--timeout", type=float, default=10, help="seconds to wait for the connection (and for the final board) [default: 10]")
    args = parser.parse_args(argv)
    for option, value in (("--name", args.name), ("--table", args.table)):
        if value is not None and not valid_name(value):
            parser.error(f"{option} must be 1-32 letters, digits, _ . or -")
    if args.token is not None and args.name is None:
        parser.error("--token needs --name (the account's name)")
    if args.resume is not None and (args.name or args.table or args.computer or args.token):
        parser.error("--resume takes back a seat: leave out --name, --token, --table and --computer")
    for option, value in (("--token", args.token), ("--resume", args.resume)):
        if value is not None and not looks_like_token(value):
            parser.error(f"{option} must be a token: 16-128 letters, digits, _ or -")
    if args.seats is not None and not 2 <= args.seats <= 15:
        parser.error("--seats must be 2 to 15")
    if args.seats is not None and args.table is None:
        parser.error("--seats needs --table")
    if args.computer is not None and args.table is not None:
        parser.error("--computer plays at a table of its own: leave out --table")
    if args.computer is not None and not valid_name(args.computer):
        parser.error("--computer must be the name of a computer opponent (see --list-computers)")
    return args


def main(argv=None) -> None:
    from twisted.internet import defer, task

    args = parse_args(argv)

    async def go(reactor) -> None:
        code = await run(reactor, args)
        if code:
            raise SystemExit(code)

    task.react(lambda reactor: defer.ensureDeferred(go(reactor)))


if __name__ == "__main__":
    main()
