/*
 * example_engine.c -- a small, readable template engine for the
 * "Open Line up 4" interface (see c4engine.h).
 *
 * Build:   cc -O2 -fPIC -shared -o libexample.so example_engine.c
 * Install: copy libexample.so to engines/example/engine.so
 *
 * Any board size from 4x4 to 16x16.  Levels:
 *   0 "Random" -- a random legal column.
 *   1 "Greedy" -- take an immediate win, else block the opponent's immediate
 *                 win, else avoid giving the opponent a win on top of our
 *                 stone, preferring central columns.
 *
 * Once a player has won, PlayMove returns FALSE and AutoMove returns -1.
 * The engine keeps one game at a time (global state, not thread-safe).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "c4engine.h"

#define MAXSIZE 16

static int  g_width, g_height, g_active;
static signed char g_cell[MAXSIZE][MAXSIZE];  /* [x][y], C4_NOPLAYER if empty */
static int  g_top[MAXSIZE];                   /* number of stones per column */
static unsigned long g_rng = 88172645463325252UL;

static unsigned long rnd(void)                /* xorshift64 */
{
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return g_rng;
}

static int owner(int x, int y)
{
    if (x < 0 || y < 0 || x >= g_width || y >= g_height) return C4_NOPLAYER;
    return g_cell[x][y];
}

/* Length of the line of player's stones through (x,y) along (dx,dy);
 * the ends are returned in *ex1.. *ey2. (x,y) is assumed to be player's. */
static int line_through(int p, int x, int y, int dx, int dy,
                        int *ex1, int *ey1, int *ex2, int *ey2)
{
    int a = 0, b = 0;
    while (owner(x + (a + 1) * dx, y + (a + 1) * dy) == p) a++;
    while (owner(x - (b + 1) * dx, y - (b + 1) * dy) == p) b++;
    if (ex1) { *ex1 = x - b * dx; *ey1 = y - b * dy; *ex2 = x + a * dx; *ey2 = y + a * dy; }
    return a + b + 1;
}

static const int DIRS[4][2] = { {1, 0}, {0, 1}, {1, 1}, {1, -1} };

/* TRUE if player would have four in a line after a stone at (x,y). */
static int wins_at(int p, int x, int y)
{
    int d, win = 0;
    signed char old = g_cell[x][y];
    g_cell[x][y] = (signed char)p;
    for (d = 0; d < 4 && !win; d++)
        win = line_through(p, x, y, DIRS[d][0], DIRS[d][1], 0, 0, 0, 0) >= 4;
    g_cell[x][y] = old;
    return win;
}

/* Find one winning line of player; TRUE if found. */
static int find_win(int p, int *x1, int *y1, int *x2, int *y2)
{
    int x, y, d;
    for (x = 0; x < g_width; x++)
        for (y = 0; y < g_top[x]; y++) {
            if (g_cell[x][y] != p) continue;
            for (d = 0; d < 4; d++)
                if (line_through(p, x, y, DIRS[d][0], DIRS[d][1], x1, y1, x2, y2) >= 4)
                    return TRUE;
        }
    return FALSE;
}

static int board_full(void)
{
    int x;
    for (x = 0; x < g_width; x++) if (g_top[x] < g_height) return FALSE;
    return TRUE;
}

static int game_over(void)
{
    return find_win(C4_PLAYER0, 0, 0, 0, 0) || find_win(C4_PLAYER1, 0, 0, 0, 0) || board_full();
}

/* Column order: centre first. */
static int centre_col(int i)
{
    int c = (g_width - 1) / 2, k = (i + 1) / 2;
    return (i % 2) ? c + k : c - k;
}

static int greedy_move(int p)
{
    int i, x, opp = 1 - p, best = -1;
    for (x = 0; x < g_width; x++)            /* 1. win */
        if (g_top[x] < g_height && wins_at(p, x, g_top[x])) return x;
    for (x = 0; x < g_width; x++)            /* 2. block */
        if (g_top[x] < g_height && wins_at(opp, x, g_top[x])) return x;
    for (i = 0; i < g_width; i++) {          /* 3. safe, centre first */
        x = centre_col(i);
        if (x < 0 || x >= g_width || g_top[x] >= g_height) continue;
        if (best < 0) best = x;
        if (g_top[x] + 1 < g_height && wins_at(opp, x, g_top[x] + 1)) continue;
        return x;
    }
    return best;
}

static int random_move(void)
{
    int cols[MAXSIZE], n = 0, x;
    for (x = 0; x < g_width; x++) if (g_top[x] < g_height) cols[n++] = x;
    return n ? cols[rnd() % (unsigned long)n] : -1;
}

/* ---------------- the ten exported functions ---------------- */

void C4_Desc(char *pc, size_t size)
{
    const char *d = "Example engine (template): Random and Greedy levels, any size 4..16";
    if (!pc || size == 0) return;
    strncpy(pc, d, size - 1);
    pc[size - 1] = '\0';
}

int C4_NewGame(long width, long height, long num)
{
    (void)num;
    if (width < 4 || width > MAXSIZE || height < 4 || height > MAXSIZE) return FALSE;
    g_width = (int)width; g_height = (int)height;
    memset(g_cell, C4_NOPLAYER, sizeof g_cell);
    memset(g_top, 0, sizeof g_top);
    g_rng ^= (unsigned long)time(NULL) * 2654435761UL + (unsigned long)clock();
    if (!g_rng) g_rng = 1;
    g_active = TRUE;
    return TRUE;
}

int C4_PlayMove(long player, long column)
{
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return FALSE;
    if (column < 0 || column >= g_width || g_top[column] >= g_height) return FALSE;
    if (find_win(C4_PLAYER0, 0, 0, 0, 0) || find_win(C4_PLAYER1, 0, 0, 0, 0)) return FALSE;
    g_cell[column][g_top[column]++] = (signed char)player;
    return TRUE;
}

long C4_AutoMove(long player, long level)
{
    int x;
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return -1;
    if (game_over()) return -1;
    x = (level <= 0) ? random_move() : greedy_move((int)player);
    if (x < 0 || !C4_PlayMove(player, x)) return -1;
    return x;
}

long C4_GetState(long x, long y)
{
    if (!g_active) return C4_NOPLAYER;
    return owner((int)x, (int)y);
}

int C4_IsWinner(long player)
{
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return FALSE;
    return find_win((int)player, 0, 0, 0, 0);
}

int C4_IsTie(void)
{
    if (!g_active) return FALSE;
    return board_full() && !C4_IsWinner(C4_PLAYER0) && !C4_IsWinner(C4_PLAYER1);
}

void C4_WinCoords(long player, long *x1, long *y1, long *x2, long *y2)
{
    int a, b, c, d;
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return;
    if (find_win((int)player, &a, &b, &c, &d)) {
        if (x1) *x1 = a;
        if (y1) *y1 = b;
        if (x2) *x2 = c;
        if (y2) *y2 = d;
    }
}

void C4_EndGame(void)
{
    g_active = FALSE;
}

int C4_EnumLevels(long level, char *pc, size_t size)
{
    static const char *names[] = {   /* each with its budget and whether it is exact */
        "Random (a random legal column; instant)",
        "Greedy (heuristic: win, block, avoid a win on top, centre first; instant)" };
    if (level < 0 || level >= 2) return FALSE;
    if (pc && size) { strncpy(pc, names[level], size - 1); pc[size - 1] = '\0'; }
    return TRUE;
}
