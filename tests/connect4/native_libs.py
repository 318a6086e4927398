"""C engines for the Connect Four tests: a small correct engine (lowest legal column first) and
deliberately broken variants, compiled into an engines folder (``<dir>/<name>/engine.so``)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

NATIVE = pathlib.Path(__file__).resolve().parents[2] / "gamed" / "connect4" / "native"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

GOOD = r"""
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
static long W, H, B[16][16];  /* B[x][y], -1 empty, row 0 bottom */
static int started;
#define AUTO_BODY
void C4_Desc(char *pc, size_t size) { snprintf(pc, size, "lowest column first"); }
int C4_NewGame(long w, long h, long num) {
    long x, y; (void)num;
    if (w < 4 || h < 4 || w > 16 || h > 16) return 0;
    W = w; H = h; started = 1;
    for (x = 0; x < 16; x++) for (y = 0; y < 16; y++) B[x][y] = -1;
    return 1;
}
int C4_PlayMove(long p, long c) {
    long y;
    if (!started || c < 0 || c >= W || (p != 0 && p != 1)) return 0;
    for (y = 0; y < H; y++) if (B[c][y] < 0) { B[c][y] = p; return 1; }
    return 0;
}
long C4_AutoMove(long p, long level) {
    long c; (void)level;
    AUTO_BODY
    for (c = 0; c < W; c++) if (C4_PlayMove(p, c)) return c;
    return -1;
}
long C4_GetState(long x, long y) {
    if (x < 0 || x >= W || y < 0 || y >= H) return -1;
    return B[x][y];
}
static int line(long p, long *c) {
    static const long d[4][2] = {{1,0},{0,1},{1,1},{1,-1}};
    long x, y, k, i;
    for (x = 0; x < W; x++) for (y = 0; y < H; y++) for (k = 0; k < 4; k++) {
        for (i = 0; i < 4; i++) {
            long xx = x + i * d[k][0], yy = y + i * d[k][1];
            if (xx < 0 || xx >= W || yy < 0 || yy >= H || B[xx][yy] != p) break;
        }
        if (i == 4) {
            if (c) { c[0] = x; c[1] = y; c[2] = x + 3 * d[k][0]; c[3] = y + 3 * d[k][1]; }
            return 1;
        }
    }
    return 0;
}
int C4_IsWinner(long p) { return line(p, NULL); }
int C4_IsTie(void) {
    long x;
    for (x = 0; x < W; x++) if (B[x][H - 1] < 0) return 0;
    return !line(0, NULL) && !line(1, NULL);
}
void C4_WinCoords(long p, long *x1, long *y1, long *x2, long *y2) {
    long c[4] = {-1, -1, -1, -1};
    line(p, c);
    *x1 = c[0]; *y1 = c[1]; *x2 = c[2]; *y2 = c[3];
}
void C4_EndGame(void) { started = 0; }
int C4_EnumLevels(long level, char *pc, size_t size) {
    static const char *names[] = {"Easy", "Hard"};
    if (level < 0 || level > 1) return 0;
    snprintf(pc, size, "%s", names[level]);
    return 1;
}
"""

VARIANTS = {
    "good": GOOD,
    "crash": GOOD.replace("#define AUTO_BODY", "#define AUTO_BODY { volatile int *z = 0; *z = 1; abort(); }"),
    "hang": GOOD.replace("#define AUTO_BODY", "#define AUTO_BODY { volatile int spin = 1; while (spin) ; }"),
    "garbage": GOOD.replace("#define AUTO_BODY", "#define AUTO_BODY return 99;"),
    "full": GOOD.replace("#define AUTO_BODY", "#define AUTO_BODY return 0;"),  # column 0, even when full
    "missing": GOOD.replace("int C4_IsTie(void)", "int C4_IsTie_misspelt(void)"),
    # C4_Desc never returns: the engine cannot even say what it is.
    "mute": GOOD.replace("void C4_Desc(char *pc, size_t size) {", "void C4_Desc(char *pc, size_t size) { volatile int spin = 1; while (spin) ;"),
}


def compile_engines(out: pathlib.Path, sources: dict[str, str]) -> dict[str, str]:
    """Compile each ``{name: C source}`` to ``out/<name>/engine.so`` (an engines folder);
    ``{name: path}``. Skips the calling test loudly when there is no C compiler."""
    if CC is None:
        pytest.skip("NO C COMPILER (cc/gcc/clang) FOUND: native engine tests skipped")
    paths = {}
    for name, source in sources.items():
        src = out / f"{name}.c"
        src.write_text(source)
        so = out / name / "engine.so"
        so.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([CC, "-O2", "-fPIC", "-shared", "-I", str(NATIVE), "-o", str(so), str(src)], check=True, timeout=60)
        paths[name] = str(so)
    return paths


def solver_book() -> pathlib.Path:
    """The solver's opening book as the bitbully-databases package (a dependency) installed it."""
    import bitbully_databases

    return pathlib.Path(bitbully_databases.BitBullyDatabases.get_database_path("12-ply-dist"))


BOOK_NAME = "book_12ply_distances.dat"  # the name the solver looks for beside its library


def install_book(folder: pathlib.Path) -> pathlib.Path:
    """Put the opening book beside a solver library in ``folder`` (a link: the file is 21 MB)."""
    link = pathlib.Path(folder) / BOOK_NAME
    if not link.exists():
        link.symlink_to(solver_book())
    return link


def shipped_source(file: str) -> str:
    """The C source of a shipped engine (``solver.c``, ``example_engine.c``)."""
    return (NATIVE / file).read_text()




ESCAPE = r"""
#include <signal.h>
#include <unistd.h>
/* A child that leaves the host's process group and session, writes its pid, and waits forever. */
static void escape(void) {
    if (fork() == 0) {
        FILE *f;
        setsid();
        f = fopen(PIDFILE ".tmp", "w");
        if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); rename(PIDFILE ".tmp", PIDFILE); }
        for (;;) pause();
    }
}
"""


def escaping_engine(pidfile: str, think_forever: bool = False) -> str:
    """The good engine, but C4_NewGame forks a child that calls setsid() and writes its pid to
    ``pidfile``; with ``think_forever``, C4_AutoMove never returns (it spins)."""
    source = GOOD.replace("#include <stdlib.h>\n", "#include <stdlib.h>\n" + f'#define PIDFILE "{pidfile}"\n' + ESCAPE, 1)
    source = source.replace("long x, y; (void)num;", "long x, y; (void)num; escape();", 1)
    if think_forever:
        source = source.replace("#define AUTO_BODY", "#define AUTO_BODY { volatile int spin = 1; while (spin) ; }", 1)
    return source
