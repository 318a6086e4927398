"""Virtual Fight rules as plain Python: maps, warriors, commands, sight, the shot batch, the end.

Nothing here knows about connections, clocks or text framing: a ``Battle`` takes parsed
``Command`` objects for a team and answers with the reply code of spec §1.14, resolves a turn's
queued shots as one batch on one snapshot (§7), and judges the end of the game (§8). Positions are
``(row, col)``, 0-based, row 0 at the top.
"""

from __future__ import annotations

import collections
import enum
import pathlib
import random
import re

import attrs

WARRIORS = 5  # per team, numbered 0-4
SHOT_RANGE = 3  # squares a shot travels
SIGHT_DEPTH = 5  # rows of the sight wedge
MAX_SIDE = 100  # largest map side the loader accepts (bounds memory and sight work)
MIN_SIDE = 3

# Reply codes (spec §1.11, §1.14).
DONE = "255"
INVALID = "100"
OCCUPIED = "111"
OFF_GRID = "112"
ACTED = "120"


class Dir(enum.Enum):
    """A facing or a direction of movement, as its (row, col) unit vector."""

    UP = (-1, 0)
    DOWN = (1, 0)
    LEFT = (0, -1)
    RIGHT = (0, 1)

    @property
    def right(self) -> tuple[int, int]:
        """The unit vector to the right of a warrior facing this way (L in spec §6)."""
        dr, dc = self.value
        return dc, -dr


DIRECTIONS = {d.name: d for d in Dir}


class Verb(enum.Enum):
    """The commands of spec §1.4. Actions use the warrior's one action per turn; queries do not."""

    MOVE = "MOVE"
    SHOOT = "SHOOT"
    NONE = "NONE"
    POS = "POS"
    DIR = "DIR"
    SAW = "SAW"


QUERIES = frozenset({Verb.POS, Verb.DIR, Verb.SAW})


@attrs.frozen
class Command:
    """One well-formed command: warrior number, verb and optional direction."""

    warrior: int
    verb: Verb
    direction: Dir | None = None

    @property
    def is_action(self) -> bool:
        """True when the command uses the warrior's action (a bare NONE is a pass, not an action)."""
        if self.verb in QUERIES:
            return False
        return not (self.verb is Verb.NONE and self.direction is None)


class MapError(ValueError):
    """A map file the loader refuses; the message says where and why."""


Square = tuple[int, int]


@attrs.frozen
class FightMap:
    """A validated map: its size, walls and each team's five start squares in reading order."""

    name: str
    rows: int
    cols: int
    walls: frozenset[Square]
    starts: tuple[tuple[Square, ...], ...]

    @property
    def teams(self) -> int:
        """How many teams the map has start squares for."""
        return len(self.starts)

    # Squares in view from each (row, col, facing), computed once: only walls hide squares, and
    # walls never move. Not part of the map's value.
    _views: dict = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def view(self, row: int, col: int, facing: Dir) -> tuple[tuple[Square, bool], ...]:
        """The in-grid squares a warrior at (row, col) facing ``facing`` can see past the walls,
        in reply order (spec §6), each with whether it is a wall."""
        key = (row, col, facing)
        found = self._views.get(key)
        if found is None:
            found = self._views[key] = self._compute_view(row, col, facing)
        return found

    def _compute_view(self, r0: int, c0: int, facing: Dir) -> tuple[tuple[Square, bool], ...]:
        walls = self.walls
        out = []
        for (dr, dc), between in _WEDGES[facing]:
            square = (r0 + dr, c0 + dc)
            if not self.inside(square):
                continue
            if any((r0 + br, c0 + bc) in walls for br, bc in between):
                continue
            out.append((square, square in walls))
        return tuple(out)

    def inside(self, square: Square) -> bool:
        r, c = square
        return 0 <= r < self.rows and 0 <= c < self.cols

    def cell_rows(self) -> list[str]:
        """Each row as ``.``/``#`` characters (start squares are floor)."""
        return [
            "".join("#" if (r, c) in self.walls else "." for c in range(self.cols)) for r in range(self.rows)
        ]

    def facing(self, team: int) -> Dir:
        """The initial facing of ``team`` (spec §4): from the centroid of its start squares toward
        the map centre, along the axis with the larger difference, vertical on a tie."""
        squares = self.starts[team]
        n = len(squares)
        # The differences times 2n: whole numbers, so a tie is exact.
        dr = (self.rows - 1) * n - 2 * sum(r for r, _ in squares)
        dc = (self.cols - 1) * n - 2 * sum(c for _, c in squares)
        if abs(dc) > abs(dr):
            return Dir.RIGHT if dc > 0 else Dir.LEFT
        return Dir.UP if dr < 0 else Dir.DOWN


DEFAULT_MAP_TEXT = """\
....................
....................
.........##.........
.0..............#...
.....#..........#.1.
.....#.....#.##.....
.0...#.....#........
.........#........1.
.........##.........
.0...........###....
....###...........1.
.........##.........
.0........#.........
........#.....#...1.
.....##.#.....#.....
.0.#..........#.....
...#..............1.
.........##.........
....................
....................
"""


def parse_map(text: str, name: str = "map", *, fair: bool = True) -> FightMap:
    """Read a map (spec §4) and validate it; raise MapError naming the problem. ``fair=False``
    skips the checks that make a map fair to play on (point symmetry, every floor square reachable):
    for the self-test's map (gamed.fight.selftest), whose enemy is walled in on purpose."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise MapError(f"{name}: the map is empty")
    rows, cols = len(lines), len(lines[0])
    if not (MIN_SIDE <= rows <= MAX_SIDE and MIN_SIDE <= cols <= MAX_SIDE):
        raise MapError(f"{name}: the map is {rows}x{cols}; each side must be {MIN_SIDE} to {MAX_SIDE} squares")
    walls = set()
    starts: dict[int, list[Square]] = collections.defaultdict(list)
    for r, line in enumerate(lines):
        if len(line) != cols:
            raise MapError(f"{name}: row {r} has {len(line)} squares, row 0 has {cols}; rows must have equal widths")
        for c, cell in enumerate(line):
            if cell == "#":
                walls.add((r, c))
            elif cell in "0123":
                starts[int(cell)].append((r, c))
            elif cell != ".":
                raise MapError(f"{name}: row {r} column {c} holds {cell!r}; use . # or 0-3")
    teams = len(starts)
    if sorted(starts) != list(range(teams)) or teams < 2:
        found = ", ".join(str(t) for t in sorted(starts)) or "none"
        raise MapError(f"{name}: start squares must exist for teams 0 to N-1 with N >= 2 (found teams: {found})")
    for team, squares in sorted(starts.items()):
        if len(squares) != WARRIORS:
            raise MapError(f"{name}: team {team} has {len(squares)} start squares; each team needs exactly {WARRIORS}")
    fmap = FightMap(name, rows, cols, frozenset(walls), tuple(tuple(starts[t]) for t in range(teams)))
    if fair and teams == 2:
        _check_symmetry(fmap)
    if fair:
        _check_reachable(fmap)
    return fmap


def _check_symmetry(fmap: FightMap) -> None:
    def mirror(square: Square) -> Square:
        return fmap.rows - 1 - square[0], fmap.cols - 1 - square[1]

    for r, c in sorted(fmap.walls):
        if mirror((r, c)) not in fmap.walls:
            m = mirror((r, c))
            raise MapError(
                f"{fmap.name}: a 2-team map must be point-symmetric; the wall at {r},{c} has floor at {m[0]},{m[1]}"
            )
    zero, one = set(fmap.starts[0]), set(fmap.starts[1])
    for square in sorted(zero):
        if mirror(square) not in one:
            m = mirror(square)
            raise MapError(
                f"{fmap.name}: a 2-team map must be point-symmetric; team 0 starts at {square[0]},{square[1]} "
                f"but {m[0]},{m[1]} is not a team 1 start square"
            )


def _check_reachable(fmap: FightMap) -> None:
    floor = {(r, c) for r in range(fmap.rows) for c in range(fmap.cols)} - fmap.walls
    if not floor:  # pragma: no cover - start squares are floor
        raise MapError(f"{fmap.name}: the map has no floor")
    first = fmap.starts[0][0]
    seen = {first}
    todo = [first]
    while todo:
        r, c = todo.pop()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nxt = (r + dr, c + dc)
            if nxt in floor and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    cut_off = sorted(floor - seen)
    if cut_off:
        r, c = cut_off[0]
        raise MapError(
            f"{fmap.name}: every floor square must be reachable; {len(cut_off)} are cut off, the first at {r},{c}"
        )


def load_map(path: str | pathlib.Path) -> FightMap:
    """Read and validate the map file at ``path``."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="ascii")
    except OSError as e:
        raise MapError(f"cannot read map file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MapError(f"{path}: a map file must be ASCII text") from None
    return parse_map(text, str(path))


def default_map() -> FightMap:
    """The 20x20 two-team map of spec §4."""
    return parse_map(DEFAULT_MAP_TEXT, "default")


def opening_map(fmap: FightMap, number: int) -> FightMap:
    """``fmap`` with the start squares of opening ``number``, a tournament pair's: opening 0 is
    the map as it is; opening n >= 1 seeds ``random.Random(n)`` to draw team 0's five start
    squares from the floor of its own third of the map (the third nearest its own start squares,
    along the line from their centroid to team 1's), and team 1 starts on their mirror images
    (point symmetry), so that both teams start alike; warriors are numbered in reading order and
    face as every map's do (spec §4). The walls stay. A map of more than two teams, or one whose
    third holds fewer than five floor squares, is returned as it is."""
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        raise ValueError(f"an opening number is 0 or more, not {number!r}")
    if number == 0 or fmap.teams != 2:
        return fmap
    (r0, c0), (r1, c1) = ((sum(r for r, _ in team), sum(c for _, c in team)) for team in fmap.starts)
    dr, dc = r1 - r0, c1 - c0  # 5x the line between the centroids: whole numbers
    reach = dr * dr + dc * dc

    def own_third(square: Square) -> bool:
        r, c = square
        return 3 * ((WARRIORS * r - r0) * dr + (WARRIORS * c - c0) * dc) <= reach

    floor = [
        (r, c) for r in range(fmap.rows) for c in range(fmap.cols) if (r, c) not in fmap.walls and own_third((r, c))
    ]
    if len(floor) < WARRIORS:
        return fmap
    zero = sorted(random.Random(number).sample(floor, WARRIORS))
    one = sorted((fmap.rows - 1 - r, fmap.cols - 1 - c) for r, c in zero)
    return attrs.evolve(fmap, starts=(tuple(zero), tuple(one)))


MAPS_DIR = pathlib.Path(__file__).with_name("maps")


def shipped_maps() -> list[str]:
    """Names of the maps that come with gamed (usable as ``fight.map``)."""
    return ["default"] + sorted(p.stem for p in MAPS_DIR.glob("*.map"))


def resolve_map(spec: str) -> FightMap:
    """The map named ``spec``: ``default``, another shipped map's name, or a map file's path."""
    if spec == "default":
        return default_map()
    if "/" not in spec and not spec.endswith(".map"):
        shipped = MAPS_DIR / f"{spec}.map"
        if not shipped.exists():
            raise MapError(f"no shipped map called {spec!r} (shipped: {', '.join(shipped_maps())}); give a file path")
        return parse_map(shipped.read_text(encoding="ascii"), spec)
    return load_map(spec)


# --- sight ---------------------------------------------------------------------------------


def _round_half_away(num: int, den: int) -> int:
    """num/den rounded to the nearest integer, halves away from zero (den > 0)."""
    q = (2 * abs(num) + den) // (2 * den)
    return q if num >= 0 else -q


def _line_between(dr: int, dc: int) -> tuple[Square, ...]:
    """The intermediate squares (as offsets) of the line from a viewer to the offset (dr, dc)."""
    n = max(abs(dr), abs(dc))
    return tuple((_round_half_away(k * dr, n), _round_half_away(k * dc, n)) for k in range(1, n))


def _wedge(facing: Dir) -> tuple[tuple[Square, tuple[Square, ...]], ...]:
    fr, fc = facing.value
    lr, lc = facing.right
    out = []
    for f in range(1, SIGHT_DEPTH + 1):
        for lateral in range(-f, f + 1):
            dr, dc = f * fr + lateral * lr, f * fc + lateral * lc
            out.append(((dr, dc), _line_between(dr, dc)))
    return tuple(out)


# Offsets in reply order (ascending f, then ascending l) with the squares that can hide each one.
_WEDGES = {d: _wedge(d) for d in Dir}


# --- the battle ----------------------------------------------------------------------------


@attrs.define(eq=False, slots=True)
class Warrior:
    """One warrior: its team, number, square, facing, and whether it lives."""

    team: int
    number: int
    row: int
    col: int
    facing: Dir
    alive: bool = True

    @property
    def square(self) -> Square:
        return self.row, self.col


class Hit(enum.Enum):
    """What a shot hit (spec §1.13)."""

    NOTHING = "NOTHING"
    WALL = "WALL"
    ENEMY = "ENEMY"
    OWN = "OWN"


@attrs.frozen
class Shot:
    """A resolved shot: who fired which way, the last in-grid square it entered, what it hit."""

    team: int
    number: int
    direction: Dir
    end: Square
    hit: Hit
    victim: Warrior | None = None


@attrs.frozen
class Resolution:
    """The result of one turn's batch: every shot in (team, warrior) order and every warrior that
    died, in (team, warrior) order."""

    shots: tuple[Shot, ...]
    killed: tuple[Warrior, ...]

    def report(self, team: int) -> list[tuple[int, Hit | None]]:
        """``team``'s report entries in spec §7 order: (warrior, Hit) for a shot, (warrior, None)
        for a death; by warrior number, a warrior's shot before its death."""
        entries = [(s.number, 0, s.hit) for s in self.shots if s.team == team]
        entries += [(w.number, 1, None) for w in self.killed if w.team == team]
        entries.sort(key=lambda e: (e[0], e[1]))
        return [(number, hit) for number, _, hit in entries]


class Result(enum.Enum):
    """A team's result at the end of its game."""

    WIN = "WIN"
    LOSE = "LOSE"
    DRAW = "DRAW"


class Battle:
    """The state of one game: the map, every warrior, the bodies, and the open turn's actions."""

    def __init__(self, fmap: FightMap, teams: int):
        if not 2 <= teams <= fmap.teams:
            raise ValueError(f"map {fmap.name} has start squares for {fmap.teams} teams, not {teams}")
        self.map = fmap
        self.teams = teams
        self.warriors: list[list[Warrior]] = [
            [Warrior(t, n, r, c, fmap.facing(t)) for n, (r, c) in enumerate(fmap.starts[t])] for t in range(teams)
        ]
        self.occupied: dict[Square, Warrior] = {w.square: w for team in self.warriors for w in team}
        self.bodies: set[Square] = set()
        self.playing: set[int] = set(range(teams))  # teams still in the game
        self._acted: set[tuple[int, int]] = set()
        self._passed: set[tuple[int, int]] = set()
        self._shots: dict[tuple[int, int], Dir] = {}

    # --- queries about the state ---------------------------------------------------------

    def living(self, team: int) -> list[Warrior]:
        return [w for w in self.warriors[team] if w.alive]

    def living_teams(self) -> set[int]:
        """Teams still in the game with at least one living warrior."""
        return {t for t in self.playing if any(w.alive for w in self.warriors[t])}

    def counts(self) -> dict[int, int]:
        """Living warriors of each team still in the game."""
        return {t: sum(w.alive for w in self.warriors[t]) for t in sorted(self.playing)}

    def finished(self, team: int) -> bool:
        """True when each living warrior of ``team`` has acted or passed this turn (spec §5)."""
        return all((team, w.number) in self._acted or (team, w.number) in self._passed for w in self.living(team))

    def has_acted(self, team: int, number: int) -> bool:
        """True when warrior ``number`` of ``team`` has used its action this turn (a pass is none)."""
        return (team, number) in self._acted

    def open_turn(self) -> tuple[set[tuple[int, int]], set[tuple[int, int]], dict[tuple[int, int], Dir]]:
        """The open turn's bookkeeping, copied: the (team, warrior) keys that acted, that passed,
        and the queued shots' directions (for a state kept outside the battle: gamed.fight.play)."""
        return set(self._acted), set(self._passed), dict(self._shots)

    def restore_turn(self, acted, passed, shots) -> None:
        """Set the open turn's bookkeeping as ``open_turn`` returned it."""
        self._acted, self._passed, self._shots = set(acted), set(passed), dict(shots)

    def blocked(self, square: Square) -> bool:
        """True for a wall, a body or a living warrior: nothing may move there."""
        return square in self.map.walls or square in self.bodies or square in self.occupied

    def sight(self, warrior: Warrior) -> list[tuple[Square, str]]:
        """What ``warrior`` sees (spec §6): non-empty visible squares with their letter, in order."""
        bodies, occupied = self.bodies, self.occupied
        seen = []
        for square, is_wall in self.map.view(warrior.row, warrior.col, warrior.facing):
            if is_wall:
                seen.append((square, "#"))
            elif square in bodies:
                seen.append((square, "x"))
            else:
                other = occupied.get(square)
                if other is not None:
                    seen.append((square, "O" if other.team == warrior.team else "E"))
        return seen

    # --- commands ------------------------------------------------------------------------

    def execute(self, team: int, command: Command) -> tuple[str, str]:
        """Apply ``command`` for ``team`` in the open turn.

        Returns ``(code, text)``: ``code`` is the reply code (``DONE`` for success) and ``text``
        the reply line (the code itself, or the answer to a query). A rejected command changes
        nothing (spec §5's order of checks: the caller has already refused malformed commands).
        """
        warrior = self.warriors[team][command.warrior]
        if not warrior.alive:
            return INVALID, INVALID
        verb = command.verb
        if verb is Verb.POS:
            return DONE, f"{warrior.row},{warrior.col}"
        if verb is Verb.DIR:
            return DONE, warrior.facing.name
        if verb is Verb.SAW:
            return DONE, "&".join(f"{r},{c},{letter}" for (r, c), letter in self.sight(warrior))
        key = (team, command.warrior)
        if not command.is_action:  # a bare NONE: a pass that uses nothing
            if key not in self._acted:
                self._passed.add(key)
            return DONE, DONE
        if key in self._acted:
            return ACTED, ACTED
        direction = command.direction
        if verb is Verb.MOVE:
            dr, dc = direction.value
            target = (warrior.row + dr, warrior.col + dc)
            if not self.map.inside(target):
                return OFF_GRID, OFF_GRID
            if self.blocked(target):
                return OCCUPIED, OCCUPIED
            del self.occupied[warrior.square]
            warrior.row, warrior.col = target
            self.occupied[target] = warrior
            warrior.facing = direction
        elif verb is Verb.SHOOT:
            if direction is not None:
                warrior.facing = direction
            self._shots[key] = warrior.facing
        else:  # NONE with a direction: turn on the spot
            warrior.facing = direction
        self._acted.add(key)
        self._passed.discard(key)
        return DONE, DONE

    # --- the end of a turn ---------------------------------------------------------------

    def remove_team(self, team: int) -> list[Warrior]:
        """``team`` leaves (disconnected or disqualified): its living warriors become bodies and its
        queued shots are cancelled. Returns the warriors that became bodies."""
        self.playing.discard(team)
        for key in [k for k in self._shots if k[0] == team]:
            del self._shots[key]
        fallen = self.living(team)
        for w in fallen:
            self._kill(w)
        return fallen

    def resolve(self) -> Resolution:
        """Resolve every queued shot together on the board as it is now (spec §7), then kill the
        victims and start a fresh turn."""
        walls, bodies, occupied = self.map.walls, self.bodies, self.occupied
        rows, cols = self.map.rows, self.map.cols
        shots = []
        for (team, number), direction in sorted(self._shots.items()):
            shooter = self.warriors[team][number]
            r, c = shooter.row, shooter.col
            dr, dc = direction.value
            end, hit, victim = (r, c), Hit.NOTHING, None
            for _ in range(SHOT_RANGE):
                r, c = r + dr, c + dc
                if not (0 <= r < rows and 0 <= c < cols):
                    break
                end = (r, c)
                if end in walls or end in bodies:
                    hit = Hit.WALL
                    break
                target = occupied.get(end)
                if target is not None:
                    hit, victim = (Hit.OWN if target.team == team else Hit.ENEMY), target
                    break
            shots.append(Shot(team, number, direction, end, hit, victim))
        victims = {id(s.victim): s.victim for s in shots if s.victim is not None}
        killed = sorted(victims.values(), key=lambda w: (w.team, w.number))
        for w in killed:
            self._kill(w)
        self._acted.clear()
        self._passed.clear()
        self._shots.clear()
        return Resolution(tuple(shots), tuple(killed))

    def _kill(self, warrior: Warrior) -> None:
        warrior.alive = False
        del self.occupied[warrior.square]
        self.bodies.add(warrior.square)


def judge(before: set[int], counts: dict[int, int], turn: int, max_turns: int | None) -> tuple[bool, dict[int, Result]]:
    """Who leaves, and whether the game is over, after turn ``turn``'s resolution (spec §8).

    ``before``: teams that had living warriors before the resolution; ``counts``: living warriors
    of each team still in the game after it. Returns ``(over, results)`` where ``results`` holds
    the result of every team that leaves now (every team in ``counts`` when ``over``).
    """
    after = {t for t, n in counts.items() if n}
    if len(after) == 1:
        winner = next(iter(after))
        return True, {t: (Result.WIN if t == winner else Result.LOSE) for t in counts}
    if not after:
        return True, {t: (Result.DRAW if t in before else Result.LOSE) for t in counts}
    if max_turns and turn >= max_turns:
        best = max(counts.values())
        leaders = {t for t, n in counts.items() if n == best}
        top = Result.WIN if len(leaders) == 1 else Result.DRAW
        return True, {t: (top if t in leaders else Result.LOSE) for t in counts}
    return False, {t: Result.LOSE for t in counts if t not in after}


def spectator_state(battle: Battle, turn: int, resolution: Resolution | None = None, walls: list[str] | None = None) -> dict:
    """What a spectator sees after turn ``turn`` (JSON-able; x is the column, y the row): the walls,
    every warrior with its facing and whether it lives, and the shots of ``resolution`` (the turn just
    resolved). ``walls`` may pass ``battle.map.cell_rows()`` computed once for the game."""
    fmap = battle.map
    warriors = [
        {"team": w.team, "id": w.number, "x": w.col, "y": w.row, "facing": w.facing.name, "alive": w.alive}
        for team in battle.warriors
        for w in team
    ]
    shots = []
    if resolution is not None:
        for s in resolution.shots:
            shooter = battle.warriors[s.team][s.number]
            shots.append({"team": s.team, "id": s.number, "from": [shooter.col, shooter.row], "to": [s.end[1], s.end[0]]})
    return {
        "width": fmap.cols,
        "height": fmap.rows,
        "walls": walls if walls is not None else fmap.cell_rows(),
        "warriors": warriors,
        "shots": shots,
        "turn": turn,
    }


_SHOT_TEXT = re.compile(r"(\d+)\.(\d+) shoots (up|down|left|right) \((nothing|wall|enemy|own)\)")


def next_state(state: dict, seat: int | None, move: str) -> dict:
    """The spectator state after a resolved turn (``turn 7: 0.1 shoots up (enemy), ...``) as far
    as its text tells: the map as it was, each shooter facing where it shot, each shot's path as
    ``Battle.resolve`` walks it on the board before the turn, and the warrior a shot hit dead. The
    warriors' moves are not in the text: the records keep what differs from this prediction
    (gamed.replay). The records' replayer, ``IGame.next_state``."""
    head, _, events = move.partition(": ")
    words = head.split()
    if len(words) != 2 or words[0] != "turn":
        raise ValueError(f"not a resolved turn: {move[:40]!r}")
    width, height, walls = state["width"], state["height"], state["walls"]
    warriors = [dict(w) for w in state["warriors"]]
    by_id = {(w["team"], w["id"]): w for w in warriors}
    living = {(w["x"], w["y"]): w for w in warriors if w["alive"]}
    bodies = {(w["x"], w["y"]) for w in warriors if not w["alive"]}
    shots, victims = [], []
    for event in events.split(", ") if events else ():
        match = _SHOT_TEXT.fullmatch(event)
        if match is None:
            continue  # a team that dropped out, in words
        team, number, direction, hit = int(match[1]), int(match[2]), match[3].upper(), match[4]
        shooter = by_id[(team, number)]
        shooter["facing"] = direction
        dr, dc = Dir[direction].value
        x, y = shooter["x"], shooter["y"]
        end = (x, y)
        for _ in range(SHOT_RANGE):
            x, y = x + dc, y + dr
            if not (0 <= x < width and 0 <= y < height):
                break
            end = (x, y)
            if hit == "wall" and (walls[y][x] == "#" or end in bodies):
                break
            if hit in ("enemy", "own") and end in living:
                victims.append(living[end])
                break
        shots.append({"team": team, "id": number, "from": [shooter["x"], shooter["y"]], "to": list(end)})
    for victim in victims:
        victim["alive"] = False
    return {**state, "warriors": warriors, "shots": shots, "turn": int(words[1])}
