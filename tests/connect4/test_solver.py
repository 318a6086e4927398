"""Native Connect Four engines (gamed/connect4/native): conformance of the ten
"Open Line up 4" functions on the example engine and the solver, and exact
scoring of Pascal Pons' test sets with the solver's C4_Solve."""
import ctypes
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "gamed" / "connect4" / "native"
TESTSETS = ROOT / "tests" / "data" / "connect4-pons-testsets.tar.xz"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

P0, P1, NOPLAYER = 0, 1, -1


def _build(tmp_dir: Path, source: str, name: str) -> ctypes.CDLL:
    if CC is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) FOUND: native engine tests not run")
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
    return lib


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("c4native")
    return {"example": _build(d, "example_engine.c", "libexample.so"),
            "solver": _build(d, "solver.c", "libsolver.so")}


def levels(lib):
    names, buf, i = [], ctypes.create_string_buffer(64), 0
    while lib.C4_EnumLevels(i, buf, 64):
        names.append(buf.value.decode())
        i += 1
    return names


def win_coords(lib, player):
    v = [ctypes.c_long(-99) for _ in range(4)]
    lib.C4_WinCoords(player, *[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def board(lib, w, h):
    return [[lib.C4_GetState(x, y) for y in range(h)] for x in range(w)]


@pytest.mark.parametrize("name,expected_levels", [("example", ["Random", "Greedy"]),
                                                  ("solver", ["Easy", "Medium", "Perfect"])])
def test_conformance(libs, name, expected_levels):
    lib = libs[name]
    buf = ctypes.create_string_buffer(256)
    lib.C4_Desc(buf, 256)
    assert buf.value
    small = ctypes.create_string_buffer(8)
    lib.C4_Desc(small, 8)
    assert len(small.value) <= 7
    assert levels(lib) == expected_levels
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
            if name == "solver" and lvl == 2 and (w, h) == (7, 6):
                continue   # Perfect on the empty 7x6 board spends its full time budget per move
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


def test_solve_invalid_and_perfect_play(libs):
    lib = libs["solver"]
    assert lib.C4_Solve(b"8") == -1000 and lib.C4_Solve(b"1111111") == -1000
    assert lib.C4_Solve(b"1212121") == -1000     # the last move already wins
    assert lib.C4_Solve(b"121212") == 18          # side to move wins with its 4th stone
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
