"""Native Connect Four engines (gamed/connect4/native): conformance of the ten
"Open Line up 4" functions on the example engine and the solver, exact scoring of
Pascal Pons' test sets with the solver's C4_Solve, and the solver's Perfect level:
exact moves from its opening book and its search, and what it says when the book
is missing or corrupt."""
import ctypes
import random
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tests.connect4.native_libs import BOOK_NAME, install_book, solver_book

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "gamed" / "connect4" / "native"
TESTSETS = ROOT / "tests" / "data" / "connect4-pons-testsets.tar.xz"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

P0, P1, NOPLAYER = 0, 1, -1
PERFECT = 2
INVALID = -1000
EXACT_NAME = "Perfect (exact on 7x6, <= 1 s a move; heuristic on other sizes)"


def _build(tmp_dir: Path, source: str, name: str) -> ctypes.CDLL:
    if CC is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) FOUND: native engine tests not run")
    tmp_dir.mkdir(parents=True, exist_ok=True)
    out = tmp_dir / name
    subprocess.run([CC, "-O2", "-Wall", "-fPIC", "-shared", "-o", str(out), str(NATIVE / source)],
                   check=True, capture_output=True, text=True)
    lib = ctypes.CDLL(str(out))
    L, PL = ctypes.c_long, ctypes.POINTER(ctypes.c_long)
    sigs = {
        "C4_Desc": (None, [ctypes.c_char_p, ctypes.c_size_t]),
        "C4_NewGame": (ctypes.c_int, [L, L, L]),
        "C4_PlayMove": (ctypes.c_int, [L, L]),
        "C4_AutoMove": (L, [L, L]),
        "C4_GetState": (L, [L, L]),
        "C4_IsWinner": (ctypes.c_int, [L]),
        "C4_IsTie": (ctypes.c_int, []),
        "C4_WinCoords": (None, [L, PL, PL, PL, PL]),
        "C4_EndGame": (None, []),
        "C4_EnumLevels": (ctypes.c_int, [L, ctypes.c_char_p, ctypes.c_size_t]),
    }
    for fn, (res, args) in sigs.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    if hasattr(lib, "C4_Solve"):
        lib.C4_Solve.restype, lib.C4_Solve.argtypes = L, [ctypes.c_char_p]
        lib.C4_BestMove.restype, lib.C4_BestMove.argtypes = L, [ctypes.c_char_p]
        lib.C4_BookDepth.restype, lib.C4_BookDepth.argtypes = L, []
        lib.C4_SolveNodes.restype, lib.C4_SolveNodes.argtypes = ctypes.c_longlong, []
    return lib


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """The example engine, the solver with its opening book beside it, and the solver without."""
    d = tmp_path_factory.mktemp("c4native")
    (d / "booked").mkdir()
    install_book(d / "booked")
    return {"example": _build(d, "example_engine.c", "libexample.so"),
            "solver": _build(d / "booked", "solver.c", "libsolver.so"),
            "bare": _build(d / "bare", "solver.c", "libsolver.so")}


def levels(lib):
    names, buf, i = [], ctypes.create_string_buffer(256), 0
    while lib.C4_EnumLevels(i, buf, 256):
        names.append(buf.value.decode())
        i += 1
    return names


def desc(lib) -> str:
    buf = ctypes.create_string_buffer(256)
    lib.C4_Desc(buf, 256)
    return buf.value.decode()


def win_coords(lib, player):
    v = [ctypes.c_long(-99) for _ in range(4)]
    lib.C4_WinCoords(player, *[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def board(lib, w, h):
    return [[lib.C4_GetState(x, y) for y in range(h)] for x in range(w)]


def moves_text(columns) -> bytes:
    """0-based columns as C4_Solve's 1-based sequence."""
    return "".join(str(c + 1) for c in columns).encode()


def perfect_move(lib, columns) -> int:
    """The column the engine's Perfect level plays after ``columns`` (through the ten functions)."""
    assert lib.C4_NewGame(7, 6, 0)
    for i, c in enumerate(columns):
        assert lib.C4_PlayMove(i % 2, c)
    col = lib.C4_AutoMove(len(columns) % 2, PERFECT)
    lib.C4_EndGame()
    return col


def child_scores(lib, columns) -> dict[int, int]:
    """{column: exact score of playing it, for the side to move} by solving every child."""
    scores = {}
    base = moves_text(columns)
    for c in range(7):
        if columns.count(c) >= 6:
            continue
        child = base + str(c + 1).encode()
        s = lib.C4_Solve(child)
        if s == INVALID:  # the move completes four: a win with this stone
            scores[c] = 22 - (len(columns) // 2 + 1)
        elif len(columns) + 1 == 42:
            scores[c] = 0
        else:
            scores[c] = -s
    return scores


def random_position(rng: random.Random, length: int) -> list[int]:
    """A position after ``length`` random moves in which nobody has won (so it is still on)."""
    while True:
        heights, cols = [0] * 7, []
        for _ in range(length):
            legal = [c for c in range(7) if heights[c] < 6]
            c = rng.choice(legal)
            cols.append(c)
            heights[c] += 1
        if length == 0 or _no_four(cols):
            return cols


def _no_four(columns) -> bool:
    grid = {}
    heights = [0] * 7
    for i, c in enumerate(columns):
        grid[c, heights[c]] = i % 2
        heights[c] += 1
    for (x, y), p in grid.items():
        for dx, dy in ((1, 0), (0, 1), (1, 1), (1, -1)):
            if all(grid.get((x + k * dx, y + k * dy)) == p for k in range(4)):
                return False
    return True


def mirrored(columns) -> list[int]:
    return [6 - c for c in columns]


@pytest.mark.parametrize("name,expected_levels", [("example", ["Random", "Greedy"]),
                                                  ("solver", ["Easy", "Medium", "Perfect"]),
                                                  ("bare", ["Easy", "Medium", "Perfect"])])
def test_conformance(libs, name, expected_levels):
    lib = libs[name]
    buf = ctypes.create_string_buffer(256)
    lib.C4_Desc(buf, 256)
    assert buf.value
    small = ctypes.create_string_buffer(8)
    lib.C4_Desc(small, 8)
    assert len(small.value) <= 7
    assert [n.split(" (")[0] for n in levels(lib)] == expected_levels
    assert not lib.C4_EnumLevels(-1, buf, 256)

    # sizes
    for w, h in [(3, 6), (7, 3), (17, 6), (7, 17)]:
        assert not lib.C4_NewGame(w, h, 0)
    # a vertical win for player 0 in column 3, row 0 at the bottom
    assert lib.C4_NewGame(7, 6, 0)
    assert board(lib, 7, 6) == [[NOPLAYER] * 6] * 7
    assert not lib.C4_PlayMove(P0, -1) and not lib.C4_PlayMove(P0, 7)
    for col in [3, 0, 3, 0, 3, 0]:
        assert lib.C4_PlayMove(P0 if col == 3 else P1, col)
    assert not lib.C4_IsWinner(P0) and not lib.C4_IsWinner(P1)
    assert lib.C4_GetState(3, 0) == P0 and lib.C4_GetState(0, 2) == P1 and lib.C4_GetState(3, 3) == NOPLAYER
    assert lib.C4_AutoMove(P0, len(expected_levels) - 1) == 3      # takes the win
    assert lib.C4_IsWinner(P0) and not lib.C4_IsWinner(P1) and not lib.C4_IsTie()
    assert sorted([win_coords(lib, P0)[:2], win_coords(lib, P0)[2:]]) == [(3, 0), (3, 3)]
    assert win_coords(lib, P1) == (-99, -99, -99, -99)
    assert lib.C4_AutoMove(P1, 0) == -1                             # game over
    lib.C4_EndGame()

    # blocking at every non-random level
    for lvl in range(1, len(expected_levels)):
        assert lib.C4_NewGame(7, 6, 0)
        for i, col in enumerate([0, 6, 1, 6, 2]):   # player 0 threatens 0-1-2-3 on the bottom row
            assert lib.C4_PlayMove(i % 2, col)
        assert lib.C4_AutoMove(P1, lvl) == 3
        lib.C4_EndGame()

    # full 4x4 board without a winner: a tie, AutoMove returns -1; column full
    assert lib.C4_NewGame(4, 4, 0)
    cols = [[0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 0, 0]]
    for x, stones in enumerate(cols):
        for p in stones:
            assert lib.C4_PlayMove(p, x)
    assert not lib.C4_PlayMove(P0, 0)
    assert board(lib, 4, 4) == cols
    assert lib.C4_IsTie() and not lib.C4_IsWinner(P0) and not lib.C4_IsWinner(P1)
    assert lib.C4_AutoMove(P0, 0) == -1
    lib.C4_EndGame()

    # whole games at every level on several sizes, self-play
    for w, h in [(7, 6), (4, 4), (16, 16), (5, 9)]:
        for lvl in range(len(expected_levels)):
            if name == "bare" and lvl == PERFECT and (w, h) == (7, 6):
                continue   # without its book, Perfect spends its whole time budget on early moves
            assert lib.C4_NewGame(w, h, 0)
            player, n = P0, 0
            while not (lib.C4_IsWinner(P0) or lib.C4_IsWinner(P1) or lib.C4_IsTie()):
                col = lib.C4_AutoMove(player, lvl)
                assert 0 <= col < w
                n += 1
                player = 1 - player
            assert lib.C4_AutoMove(player, lvl) == -1
            cells = board(lib, w, h)
            assert sum(c != NOPLAYER for r in cells for c in r) == n
            for x in range(w):   # gravity: no holes
                col = cells[x]
                k = sum(c != NOPLAYER for c in col)
                assert all(c != NOPLAYER for c in col[:k]) and all(c == NOPLAYER for c in col[k:])
            if lib.C4_IsWinner(1 - player):
                x1, y1, x2, y2 = win_coords(lib, 1 - player)
                dx, dy = (x2 > x1) - (x2 < x1), (y2 > y1) - (y2 < y1)
                length = max(abs(x2 - x1), abs(y2 - y1)) + 1
                assert length >= 4
                assert all(cells[x1 + i * dx][y1 + i * dy] == 1 - player for i in range(length))
            if name == "solver" and lvl == PERFECT and (w, h) == (7, 6):
                # the solved game: the first player wins with its 21st stone (score +1)
                assert lib.C4_IsWinner(P0) and n == 41
            lib.C4_EndGame()


def _load_set(name):
    with tarfile.open(TESTSETS) as tf:
        text = tf.extractfile(f"connect4-pons-testsets/{name}").read().decode()
    return [(m, int(s)) for m, s in (line.split() for line in text.splitlines() if line.strip())]


@pytest.mark.parametrize("setname,budget_s", [("Test_L3_R1", 10.0), ("Test_L2_R1", 10.0)])
def test_pons_testset(libs, setname, budget_s):
    lib = libs["solver"]
    cases = _load_set(setname)
    assert len(cases) == 1000
    times, start = [], time.perf_counter()
    for moves, score in cases:
        t = time.perf_counter()
        got = lib.C4_Solve(moves.encode())
        times.append(time.perf_counter() - t)
        assert got == score, f"{setname}: {moves} -> {got}, expected {score}"
        if time.perf_counter() - start > budget_s:
            break
    print(f"\n{setname}: {len(times)}/{len(cases)} positions, mean {1000 * sum(times) / len(times):.3f} ms, "
          f"max {1000 * max(times):.3f} ms")
    assert len(times) == len(cases), f"solver too slow: only {len(times)} positions in {budget_s} s"


@pytest.mark.parametrize("setname", ["Test_L1_R1", "Test_L1_R2", "Test_L1_R3", "Test_L2_R2"])
def test_pons_sample_scores_with_the_book(libs, setname):
    """Every 20th position of the sets of early and hard positions; before move 12 the search
    ends in the book, so these take milliseconds (without it, some of them take minutes)."""
    lib = libs["solver"]
    for moves, score in _load_set(setname)[::20]:
        assert lib.C4_Solve(moves.encode()) == score, moves


def test_early_pons_positions_are_answered_from_the_book(libs):
    """The first moves of Test_L1_R3 (hard early positions): exact scores, each from a search of
    at most a few thousand positions down to the book."""
    lib = libs["solver"]
    early = [(m, s) for m, s in _load_set("Test_L1_R3") if len(m) <= 4]
    assert len(early) == 211
    for moves, score in early:
        assert lib.C4_Solve(moves.encode()) == score, moves
        assert lib.C4_SolveNodes() < 200_000, moves


def test_the_positions_of_issue_12(libs):
    """Perfect used to answer column 2 (a loss) here, where column 4 wins, and column 5 (a slower
    win) where column 3 wins faster."""
    lib = libs["solver"]
    first = [2, 6, 4, 2, 2, 5, 6, 4, 5]
    assert child_scores(lib, first) == {0: -4, 1: -1, 2: -2, 3: -3, 4: 3, 5: 0, 6: -3}
    assert perfect_move(lib, first) == 4
    second = [5, 3, 1, 6, 5, 6, 3, 0]
    assert child_scores(lib, second) == {0: 2, 1: 2, 2: 2, 3: 4, 4: 0, 5: 3, 6: 0}
    assert perfect_move(lib, second) == 3


def test_perfect_moves_on_random_positions_of_every_length(libs):
    """Seeded random positions, two of every length 0..41: Perfect's move reaches the best child
    score (the fastest win, the slowest loss, a draw when that is the best)."""
    lib = libs["solver"]
    rng = random.Random(12)
    for length in list(range(42)) * 2:
        cols = random_position(rng, length)
        scores = child_scores(lib, cols)
        move = perfect_move(lib, cols)
        assert scores[move] == max(scores.values()), (cols, move, scores)


def test_book_agrees_with_the_search(libs):
    """Positions after 12 moves: the book's score (no search at all) equals the score the solver's
    own search finds without the book."""
    booked, bare = libs["solver"], libs["bare"]
    rng = random.Random(2012)
    checked = 0
    while checked < 12:
        moves = moves_text(random_position(rng, 12))
        score = booked.C4_Solve(moves)
        if score == 15:  # the side to move wins at once: the book leaves these out
            continue
        assert booked.C4_SolveNodes() == 0, moves  # answered by the book
        assert bare.C4_Solve(moves) == score, moves
        checked += 1


def test_mirror_positions(libs):
    """A position and its mirror image have the same score, both are found in the book (which
    keeps one of each pair), and Perfect's move in the mirror image is as good."""
    lib = libs["solver"]
    rng = random.Random(7)
    for length in (3, 8, 12, 12, 12, 13, 20, 30):
        cols = random_position(rng, length)
        score = lib.C4_Solve(moves_text(cols))
        assert lib.C4_Solve(moves_text(mirrored(cols))) == score
        if length == 12 and score != 15:
            lib.C4_Solve(moves_text(cols))
            assert lib.C4_SolveNodes() == 0
            lib.C4_Solve(moves_text(mirrored(cols)))
            assert lib.C4_SolveNodes() == 0
        scores = child_scores(lib, mirrored(cols))
        assert scores[perfect_move(lib, mirrored(cols))] == max(scores.values()) == score


def test_levels_and_description_say_what_is_exact(libs):
    assert libs["solver"].C4_BookDepth() == 12
    assert "opening book of every position after 12 moves" in desc(libs["solver"])
    assert levels(libs["solver"])[PERFECT] == EXACT_NAME
    assert libs["bare"].C4_BookDepth() == -1
    assert f"no opening book ({BOOK_NAME}: No such file or directory)" in desc(libs["bare"])
    assert levels(libs["bare"])[PERFECT] == \
        "Perfect (no opening book: exact on 7x6 only within 3 s a move, else heuristic)"
    for lib in (libs["solver"], libs["bare"]):
        assert levels(lib)[0] == "Easy (heuristic: win, block, else a random safe column; instant)"
        assert levels(lib)[1] == "Medium (exact on 7x6 within 200,000 positions a move, about 30 ms, else heuristic)"


@pytest.mark.parametrize("damage,reason", [
    (lambda data: data[:1000], "is corrupt (size 1000, not 4200899 entries)"),
    (lambda data: data[:777] + bytes([data[777] ^ 1]) + data[778:], "is corrupt (wrong checksum)"),
])
def test_a_corrupt_book_is_refused(tmp_path, damage, reason):
    """The engine still starts and plays, says why it has no book, and claims no exactness."""
    (tmp_path / BOOK_NAME).write_bytes(damage(solver_book().read_bytes()))
    lib = _build(tmp_path, "solver.c", "libsolver.so")
    assert lib.C4_BookDepth() == -1
    assert f"opening book {BOOK_NAME} {reason}" in desc(lib)
    assert "exact on 7x6 only within 3 s" in levels(lib)[PERFECT]
    assert lib.C4_NewGame(7, 6, 0)
    for i, ch in enumerate("662222576343651642712157"):   # Test_L2_R1: player 0 wins (+8)
        assert lib.C4_PlayMove(i % 2, int(ch) - 1)
    col = lib.C4_AutoMove(P0, PERFECT)   # found by the search within its 3 s: still the best move
    assert -lib.C4_Solve(f"662222576343651642712157{col + 1}".encode()) == 8


def test_solve_invalid_and_perfect_play(libs):
    lib = libs["solver"]
    assert lib.C4_Solve(b"8") == -1000 and lib.C4_Solve(b"1111111") == -1000
    assert lib.C4_Solve(b"1212121") == -1000     # the last move already wins
    assert lib.C4_Solve(b"121212") == 18          # side to move wins with its 4th stone
    assert lib.C4_Solve(b"") == 1                 # the solved game: the first player wins late
    # Perfect plays the proven best move, and converts a won position against Easy
    wins = [(m, s) for m, s in _load_set("Test_L2_R1") if s > 0][:3]
    for moves, score in wins:
        assert lib.C4_NewGame(7, 6, 0)
        for i, ch in enumerate(moves):
            assert lib.C4_PlayMove(i % 2, int(ch) - 1)
        me = len(moves) % 2
        col = lib.C4_AutoMove(me, 2)
        assert -lib.C4_Solve((moves + str(col + 1)).encode()) == score
        player = 1 - me
        while not (lib.C4_IsWinner(P0) or lib.C4_IsWinner(P1) or lib.C4_IsTie()):
            assert lib.C4_AutoMove(player, 2 if player == me else 0) >= 0
            player = 1 - player
        assert lib.C4_IsWinner(me)
        lib.C4_EndGame()
