/*
 * solver.c -- perfect-play Connect Four engine for the standard 7x6 board,
 * behind the "Open Line up 4" interface (see c4engine.h).
 *
 * Build:   cc -O2 -fPIC -shared -o libsolver.so solver.c
 * Install: copy libsolver.so to engines/solver/engine.so and the opening book
 *          book_12ply_distances.dat beside it (`make install` does both; the
 *          book comes from the PyPI package bitbully-databases, see below).
 *
 * Board sizes: 7 wide x 6 high is solved exactly.  Every other size 4..16 is
 * ACCEPTED but played heuristically (win / block / don't give a win on top /
 * centre first), i.e. the same as level "Easy" without randomness.
 *
 * Levels:
 *   0 "Easy"    -- immediate win, else block, else random safe column.
 *   1 "Medium"  -- exact with a small budget (MEDIUM_NODES positions, a few
 *                  ms); heuristic (threat count + centre) otherwise.
 *   2 "Perfect" -- with the opening book: always exact, without any budget (the
 *                  slowest 7x6 position measured needs 0.9 s, most need a few
 *                  ms; see docs/performance.md).  Without the book (missing or corrupt
 *                  file): exact within PERFECT_FALLBACK_MS, the heuristic move
 *                  otherwise, and the level's name and C4_Desc say so.
 *   Exact = the fastest win in a won position, the slowest loss in a lost one,
 *   a drawing move in a drawn one.
 *
 * Search (after Pascal Pons' approach, written from scratch): 7x(6+1) bitboards
 * (the side to move's stones + occupancy), fail-soft negamax alpha-beta with
 * null-window narrowing of the score's interval, a transposition table keyed by
 * the position or its mirror image (whichever is smaller) holding both bounds
 * and the best column, enhanced transposition cutoffs (a child already known to
 * be good enough ends the search of its parent), pruning of moves that lose at
 * once, move ordering by the table's column, then the number of threats
 * created, then centre first.
 * A best move is found by solving the position and then testing the columns in
 * that order with one null-window search each until one reaches the score.
 *
 * Opening book: the exact value of every position after 12 moves, the 12-ply
 * database of BitBully (Markus Thill, MIT licence) as the PyPI package
 * bitbully-databases 0.0.2 ships it (book_12ply_distances.dat, 4,200,899
 * entries, 21 MB), mapped read-only from the library's own folder.  Positions
 * before move 12 are searched down to it (a few ms), later ones without it; a
 * position after move 13 gets a lower bound from its parents' book scores.
 *
 * Extra exports (benchmarks and tests):
 *   long C4_Solve(const char *moves)
 *     moves: a 1-based column sequence such as "4453" (7x6 board, player 0
 *     first; non-digit characters are ignored).  Returns the exact score in
 *     the Pons test-set convention, from the point of view of the side to move:
 *       0  draw;
 *       >0 side to move wins, score = 22 - number of its own stones at its win;
 *       <0 side to move loses, score = -(22 - number of opponent's stones
 *          at the opponent's win).
 *     Returns C4_SOLVE_INVALID (-1000) for an invalid sequence (bad column,
 *     full column, or a move that already completes four in a line).
 *   long C4_BestMove(const char *moves) -- the 0-based column Perfect plays.
 *   long long C4_SolveNodes(void)  -- nodes searched by the last call.
 *   void C4_ClearTable(void)       -- empties the transposition table.
 *   long C4_BookDepth(void)        -- the loaded book's depth, -1 without one.
 *
 * Once a player has won, PlayMove returns FALSE and AutoMove returns -1.
 * Global state, one game at a time, not thread-safe.
 */
#define _GNU_SOURCE          /* dladdr: where the library is, to find its book */
#define C4_SOLVE_INVALID (-1000L)
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
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


/* ================= 7x6 bitboard search ================= */

#define W 7
#define H 6
#define H1 (H + 1)
#define CELLS (W * H)
#define PERFECT_FALLBACK_MS 3000   /* Perfect's budget when no opening book is loaded */
#define MEDIUM_NODES 200000LL
#ifndef ETC_MOVES
#define ETC_MOVES 36               /* enhanced transposition cutoffs while fewer stones than this */
#endif

typedef struct { uint64_t cur, mask; int moves; } Pos;   /* cur: the stones of the side to move */

#define BOTTOM_MASK   0x0000040810204081ULL              /* bit 0 of each column */
#define BOARD_MASK    (BOTTOM_MASK * ((1ULL << H) - 1))
#define COL_MASK(c)   ((((uint64_t)1 << H) - 1) << ((c) * H1))
#define TOP_BIT(c)    ((uint64_t)1 << (H - 1 + (c) * H1))
#define BOTTOM_BIT(c) ((uint64_t)1 << ((c) * H1))

static int popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* Empty cells that would complete four for the owner of stones p. */
static uint64_t winning_cells(uint64_t p, uint64_t mask)
{
    uint64_t r, t;
    r = (p << 1) & (p << 2) & (p << 3);                     /* vertical */
#define DIR(S) \
    t = (p << (S)) & (p << 2 * (S)); r |= t & (p << 3 * (S)); r |= t & (p >> (S)); \
    t = (p >> (S)) & (p >> 2 * (S)); r |= t & (p << (S));     r |= t & (p >> 3 * (S));
    DIR(H1)      /* horizontal */
    DIR(H)       /* diagonal \ */
    DIR(H1 + 1)  /* diagonal / */
#undef DIR
    return r & (BOARD_MASK ^ mask);
}

static uint64_t pos_possible(const Pos *P) { return (P->mask + BOTTOM_MASK) & BOARD_MASK; }
static int can_play(const Pos *P, int c)   { return (P->mask & TOP_BIT(c)) == 0; }
static uint64_t col_move(const Pos *P, int c) { return (P->mask + BOTTOM_BIT(c)) & COL_MASK(c); }
static int is_winning_move(const Pos *P, int c)
{ return (winning_cells(P->cur, P->mask) & pos_possible(P) & COL_MASK(c)) != 0; }
static int can_win_next(const Pos *P)
{ return (winning_cells(P->cur, P->mask) & pos_possible(P)) != 0; }
static void pos_play(Pos *P, uint64_t move) { P->cur ^= P->mask; P->mask |= move; P->moves++; }

/* The moves that do not let the opponent win at once (0: every move loses at once).
 * Assumes the side to move cannot win with this move. */
static uint64_t non_losing_moves(const Pos *P)
{
    uint64_t poss = pos_possible(P);
    uint64_t opp_win = winning_cells(P->cur ^ P->mask, P->mask);
    uint64_t forced = poss & opp_win;
    if (forced) {
        if (forced & (forced - 1)) return 0;    /* two threats to block: lost */
        poss = forced;
    }
    return poss & ~(opp_win >> 1);              /* never play just below a threat */
}

static int move_score(const Pos *P, uint64_t move)
{ return popcount64(winning_cells(P->cur | move, P->mask)); }

/* The board or key seen in a mirror (column c becomes W-1-c): columns are 7 bits apart and
 * neither boards nor keys (cur + mask) carry from one column into the next. */
#define SLOT(c) ((uint64_t)0x7f << ((c) * H1))
static uint64_t mirror_bits(uint64_t b)
{
    return ((b & SLOT(0)) << 6 * H1) | ((b & SLOT(1)) << 4 * H1) | ((b & SLOT(2)) << 2 * H1)
         | (b & SLOT(3))
         | ((b & SLOT(4)) >> 2 * H1) | ((b & SLOT(5)) >> 4 * H1) | ((b & SLOT(6)) >> 6 * H1);
}

/* A unique key of the position or of its mirror image, whichever is smaller; *mirrored tells. */
static uint64_t canonical_key(const Pos *P, int *mirrored)
{
    uint64_t k = P->cur + P->mask, m = mirror_bits(k);
    if (m < k) { *mirrored = 1; return m; }
    *mirrored = 0;
    return k;
}

/* ---- transposition table ----
 * One 64-bit word per slot, always replaced: the whole 49-bit key (so a hit is never another
 * position), both bounds of the score (+32, 6 bits each) and the best column found (3 bits, in
 * the canonical orientation; 7 = none).  Slots are found by a multiplicative hash of the key. */
typedef uint64_t TTEntry;

#ifndef C4_TT_LOG
#define C4_TT_LOG 21                    /* 2^21 slots of 8 bytes: 16 MiB, touched as the search needs */
#endif
#define KEY_MASK (((uint64_t)1 << (W * H1)) - 1)
static TTEntry *tt;
static size_t tt_size;

static int tt_init(void)
{
    if (tt) return 1;
    tt = calloc((size_t)1 << C4_TT_LOG, sizeof *tt);
    if (!tt) return 0;
    tt_size = (size_t)1 << C4_TT_LOG;
    return 1;
}

static TTEntry *tt_slot(uint64_t key)
{ return &tt[(key * 0x9E3779B97F4A7C15ULL) >> (64 - C4_TT_LOG)]; }

/* The bounds and column stored for key (TRUE), or FALSE if the slot holds another position. */
static int tt_get(uint64_t key, int *lo, int *hi, int *col)
{
    TTEntry e = *tt_slot(key);
    if (!e || (e & KEY_MASK) != key) return 0;
    *lo = (int)((e >> 49) & 63) - 32;
    *hi = (int)((e >> 55) & 63) - 32;
    *col = (int)(e >> 61);
    return 1;
}

static void tt_put(uint64_t key, int lo, int hi, int col)
{
    *tt_slot(key) = key | (uint64_t)(lo + 32) << 49 | (uint64_t)(hi + 32) << 55 | (uint64_t)col << 61;
}

/* ---- search ---- */
static long long s_nodes;
static long long s_node_limit;       /* 0: none */
static double s_deadline_ms;         /* 0: none */
static int s_aborted;
static const int ORDER[W] = { 3, 2, 4, 1, 5, 0, 6 };

static double now_ms(void)
{ struct timeval tv; gettimeofday(&tv, 0); return tv.tv_sec * 1000.0 + tv.tv_usec / 1000.0; }

static int book_probe(const Pos *P, int *score);
static int book_parent_bound(const Pos *P, int *bound);

/* Fail-soft negamax: the score of P if it lies inside (alpha, beta), else a bound on the same
 * side (<= alpha: an upper bound, >= beta: a lower bound).  P's side to move cannot win at once. */
static int negamax(const Pos *P, int alpha, int beta)
{
    uint64_t next, key, mv[W], child_key[W];
    int sc[W], cols[W], raw[W], n = 0, i, j, lo, hi, best, best_col, alpha0, mirrored, tt_col = -1, v;
    int t_lo, t_hi, t_col, etc = P->moves < ETC_MOVES;

    s_nodes++;
    if ((s_nodes & 1023) == 0 && (s_node_limit || s_deadline_ms > 0)) {
        if ((s_node_limit && s_nodes > s_node_limit) || (s_deadline_ms > 0 && now_ms() > s_deadline_ms))
            s_aborted = 1;
    }
    if (s_aborted) return 0;

    next = non_losing_moves(P);
    if (!next) return -(CELLS - P->moves) / 2;
    if (P->moves >= CELLS - 2) return 0;
    if (book_probe(P, &v)) return v;
    lo = -(CELLS - 2 - P->moves) / 2;
    hi = (CELLS - 1 - P->moves) / 2;
    if (book_parent_bound(P, &v) && v > lo) lo = v;

    /* the table's slots are memory the cache rarely holds: ask for them all, then work meanwhile */
    key = canonical_key(P, &mirrored);
    __builtin_prefetch(tt_slot(key));
    for (i = 0; i < W; i++) {
        uint64_t m = next & COL_MASK(ORDER[i]);
        if (!m) continue;
        if (etc) {
            Pos Q = *P;
            int ignored;
            pos_play(&Q, m);
            child_key[ORDER[i]] = canonical_key(&Q, &ignored);
            __builtin_prefetch(tt_slot(child_key[ORDER[i]]));
        }
        raw[ORDER[i]] = move_score(P, m);
    }

    if (tt_get(key, &t_lo, &t_hi, &t_col)) {
        if (t_lo > lo) lo = t_lo;
        if (t_hi < hi) hi = t_hi;
        if (t_col < W) tt_col = mirrored ? W - 1 - t_col : t_col;
    }
    if (lo >= beta || lo == hi) return lo;
    if (hi <= alpha) return hi;
    if (alpha < lo) alpha = lo;
    if (beta > hi) beta = hi;
    alpha0 = alpha;

    /* order: the table's best column, then more threats created, then centre first */
    for (i = 0; i < W; i++) {
        int c = ORDER[i], s;
        uint64_t m = next & COL_MASK(c);
        if (!m) continue;
        s = (c == tt_col) ? 1000 : raw[c];
        for (j = n; j > 0 && sc[j - 1] < s; j--) { mv[j] = mv[j - 1]; sc[j] = sc[j - 1]; cols[j] = cols[j - 1]; }
        mv[j] = m; sc[j] = s; cols[j] = c; n++;
    }
    /* enhanced transposition cutoff: a child the table already knows to be good enough */
    if (etc) {
        for (i = 0; i < n; i++) {
            int c_lo, c_hi, c_col;
            if (tt_get(child_key[cols[i]], &c_lo, &c_hi, &c_col) && -c_hi >= beta) {
                v = -c_hi;
                if (v > lo) lo = v;
                tt_put(key, lo, hi, mirrored ? W - 1 - cols[i] : cols[i]);
                return v;
            }
        }
    }
    best = -CELLS; best_col = cols[0];
    for (i = 0; i < n; i++) {
        Pos Q = *P;
        pos_play(&Q, mv[i]);
        v = -negamax(&Q, -beta, -alpha);
        if (s_aborted) return 0;
        if (v > best) { best = v; best_col = cols[i]; }
        if (v >= beta) break;
        if (v > alpha) alpha = v;
    }
    if (best >= beta) { if (best > lo) lo = best; }
    else if (best > alpha0) { lo = hi = best; }
    else if (best < hi) hi = best;
    tt_put(key, lo, hi, mirrored ? W - 1 - best_col : best_col);
    return best;
}

/* Exact score of P (the side to move's view) by null-window searches that narrow the score's
 * interval; 0 with s_aborted set when a budget ran out. */
static int solve_exact(const Pos *P)
{
    int min, max, v, tight;
    if (can_win_next(P)) return (CELLS + 1 - P->moves) / 2;
    if (P->moves >= CELLS) return 0;
    if (!non_losing_moves(P)) return -(CELLS - P->moves) / 2;
    if (book_probe(P, &v)) return v;
    min = -(CELLS - P->moves) / 2;
    max = (CELLS + 1 - P->moves) / 2;
    /* a bound from the book is often the score itself: test it first */
    tight = book_parent_bound(P, &v) && v > min;
    if (tight) min = v;
    while (min < max) {
        int med = min + (max - min) / 2, r;
        if (tight) med = min;
        else if (med <= 0 && min / 2 < med) med = min / 2;
        else if (med >= 0 && max / 2 > med) med = max / 2;
        tight = 0;
        r = negamax(P, med, med + 1);
        if (s_aborted) return 0;
        if (r <= med) max = r < min ? min : r;
        else min = r > max ? max : r;
    }
    return min;
}

static void budget(long long node_limit, double ms)
{
    s_nodes = 0; s_node_limit = node_limit;
    s_deadline_ms = ms > 0 ? now_ms() + ms : 0; s_aborted = 0;
}

/* A perfect move for P (the fastest win, the slowest loss, else a draw), its score in *score;
 * -1 if the budget ran out first or the board is full. */
static int best_move(const Pos *P, int *score)
{
    uint64_t next;
    int i, j, s, n = 0, cols[W], sc[W], tt_col = -1, mirrored;
    uint64_t key;
    int t_lo, t_hi, t_col;

    for (i = 0; i < W; i++)
        if (can_play(P, ORDER[i]) && is_winning_move(P, ORDER[i])) {
            *score = (CELLS + 1 - P->moves) / 2;
            return ORDER[i];
        }
    next = non_losing_moves(P);
    if (!next) {             /* every move loses at once, all equally fast: block if we can */
        uint64_t forced = pos_possible(P) & winning_cells(P->cur ^ P->mask, P->mask);
        *score = -(CELLS - P->moves) / 2;
        for (i = 0; i < W; i++) if (can_play(P, ORDER[i]) && (forced & COL_MASK(ORDER[i]))) return ORDER[i];
        for (i = 0; i < W; i++) if (can_play(P, ORDER[i])) return ORDER[i];
        return -1;
    }
    s = solve_exact(P);
    if (s_aborted) return -1;
    *score = s;
    key = canonical_key(P, &mirrored);
    if (tt_get(key, &t_lo, &t_hi, &t_col) && t_col < W) tt_col = mirrored ? W - 1 - t_col : t_col;
    for (i = 0; i < W; i++) {
        int c = ORDER[i], v;
        uint64_t m = next & COL_MASK(c);
        if (!m) continue;
        v = (c == tt_col) ? 1000 : move_score(P, m);
        for (j = n; j > 0 && sc[j - 1] < v; j--) { sc[j] = sc[j - 1]; cols[j] = cols[j - 1]; }
        sc[j] = v; cols[j] = c; n++;
    }
    if (n == 1) return cols[0];
    for (i = 0; i < n; i++) {
        Pos Q = *P;
        pos_play(&Q, col_move(P, cols[i]));
        /* the child is good if its score (the opponent's view) is <= -s */
        if (Q.moves >= CELLS ? 0 <= -s : negamax(&Q, -s, -s + 1) <= -s) {
            if (s_aborted) return -1;
            return cols[i];
        }
        if (s_aborted) return -1;
    }
    return -1;   /* unreachable: some non-losing move reaches the score */
}

/* ---- opening book: bitbully-databases' 12-ply book with distances ----
 * BOOK_FILE (from the PyPI package bitbully-databases, MIT licence, copied beside the library by
 * `make install`) holds the exact value of every position after BOOK_DEPTH moves in which the
 * side to move (the first player) cannot win at once, one of each mirror pair: 5-byte entries
 * sorted by their first 4 bytes, a big-endian signed 32-bit code of the position, then a signed
 * byte d: 0 a draw, d > 0 a first player's win with the stone 100 - d plies on, d < 0 its loss
 * with the stone 100 + d plies on.
 * The code is the columns from the left, each bottom-up: 10 for a first player's stone, 11 for
 * the second player's, 0 after the column; a final 0 (12 stones: exactly 32 bits).
 * The file is mapped read-only, so engine hosts share one copy in memory. */
#define BOOK_FILE   "book_12ply_distances.dat"
#define BOOK_DEPTH  12
#define BOOK_ENTRIES 4200899u
#define BOOK_CHECKSUM 0xd47402e79016dcc2ULL           /* book_checksum() of the file of bitbully-databases 0.0.2 */

static struct { const unsigned char *data; size_t n; int tried; char status[200]; } g_book;

static uint32_t book_code(uint64_t first, uint64_t mask, int mirror)
{
    uint32_t code = 0;
    int i, c, y;
    for (i = 0; i < W; i++) {
        c = mirror ? W - 1 - i : i;
        for (y = 0; y < H && ((mask >> (c * H1 + y)) & 1); y++)
            code = (code << 2) | (((first >> (c * H1 + y)) & 1) ? 2u : 3u);
        code <<= 1;
    }
    return code << 1;
}

static int32_t book_key(const unsigned char *data, size_t i)
{
    const unsigned char *e = data + 5 * i;
    return (int32_t)(((uint32_t)e[0] << 24) | ((uint32_t)e[1] << 16) | ((uint32_t)e[2] << 8) | e[3]);
}

static int book_find(int32_t code, int *d)
{
    size_t lo = 0, hi = g_book.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t k = book_key(g_book.data, mid);
        if (k == code) { *d = (signed char)g_book.data[5 * mid + 4]; return 1; }
        if (k < code) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* The book's exact score (Pons convention, side to move) of P, if P is in the book. */
static int book_probe(const Pos *P, int *score)
{
    int d, plies;
    if (P->moves != BOOK_DEPTH || !g_book.data) return 0;
    if (!book_find((int32_t)book_code(P->cur, P->mask, 0), &d) &&
        !book_find((int32_t)book_code(P->cur, P->mask, 1), &d)) return 0;
    if (d == 0) { *score = 0; return 1; }
    plies = d > 0 ? 100 - d : 100 + d;                /* plies from here to the winning stone */
    /* the winner's stones when it wins: of BOOK_DEPTH + plies stones, the winner has half rounded up */
    *score = (CELLS / 2 + 1) - (BOOK_DEPTH + plies + 1) / 2;
    if (d < 0) *score = -*score;
    return 1;
}

/* A lower bound on the score of P, one move after the book's depth: P follows from every position
 * that lacks one of the last mover's top stones, and a position scores at least minus each of its
 * children, so P scores at least minus the book's score of each such parent (a proof the search
 * is spared). */
static int book_parent_bound(const Pos *P, int *bound)
{
    uint64_t last = P->cur ^ P->mask;   /* the stones of the player who moved last */
    int c, found = 0, s;
    if (P->moves != BOOK_DEPTH + 1 || !g_book.data) return 0;
    for (c = 0; c < W; c++) {
        uint64_t col = P->mask & COL_MASK(c), top;
        Pos Q;
        if (!col) continue;
        top = (col + BOTTOM_BIT(c)) >> 1 & col;   /* the highest stone of the column */
        if (!(last & top)) continue;
        Q.cur = last ^ top; Q.mask = P->mask ^ top; Q.moves = BOOK_DEPTH;
        if (book_probe(&Q, &s) && (!found || -s > *bound)) { *bound = -s; found = 1; }
    }
    return found;
}

/* FNV-1a over 64-bit little-endian words (then the tail bytes): the book's checksum. */
static unsigned long long book_checksum(const unsigned char *p, size_t n)
{
    unsigned long long h = 1469598103934665603ULL, w;
    size_t i, k;
    for (i = 0; i + 8 <= n; i += 8) {
        for (w = 0, k = 0; k < 8; k++) w |= (unsigned long long)p[i + k] << (8 * k);
        h = (h ^ w) * 1099511628211ULL;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Map the book beside the library (once); g_book.status says what happened. */
static void book_load(void)
{
    Dl_info info;
    char path[4096];
    const char *slash;
    int fd = -1;
    struct stat st;
    const unsigned char *data = MAP_FAILED;

    if (g_book.tried) return;
    g_book.tried = 1;
#define BOOK_FAIL(...) do { snprintf(g_book.status, sizeof g_book.status, __VA_ARGS__); goto fail; } while (0)
    if (!dladdr((void *)book_load, &info) || !info.dli_fname)
        BOOK_FAIL("no opening book (the library's folder is unknown)");
    slash = strrchr(info.dli_fname, '/');
    if (slash) snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, BOOK_FILE);
    else snprintf(path, sizeof path, "%s", BOOK_FILE);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) BOOK_FAIL("no opening book (%s: %s)", BOOK_FILE, strerror(errno));
    if ((size_t)st.st_size != 5 * (size_t)BOOK_ENTRIES)
        BOOK_FAIL("opening book %s is corrupt (size %lld, not %u entries)", BOOK_FILE, (long long)st.st_size, BOOK_ENTRIES);
    data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) BOOK_FAIL("opening book %s not loaded (%s)", BOOK_FILE, strerror(errno));
    if (book_checksum(data, (size_t)st.st_size) != BOOK_CHECKSUM)
        BOOK_FAIL("opening book %s is corrupt (wrong checksum)", BOOK_FILE);
    close(fd);
    g_book.data = data; g_book.n = BOOK_ENTRIES;
    snprintf(g_book.status, sizeof g_book.status, "opening book of every position after %d moves", BOOK_DEPTH);
    return;
fail:
#undef BOOK_FAIL
    if (data != MAP_FAILED) munmap((void *)data, (size_t)st.st_size);
    if (fd >= 0) close(fd);
}

long long C4_SolveNodes(void);
long long C4_SolveNodes(void) { return s_nodes; }

/* Depth of the loaded opening book, -1 without one. */
long C4_BookDepth(void);
long C4_BookDepth(void) { book_load(); return g_book.data ? BOOK_DEPTH : -1; }

/* Parse a 1-based column sequence into P; FALSE if invalid. */
static int parse_moves(const char *moves, Pos *P)
{
    const char *s;
    P->cur = P->mask = 0; P->moves = 0;
    for (s = moves; *s; s++) {
        int c;
        if (*s < '0' || *s > '9') continue;
        c = *s - '1';
        if (c < 0 || c >= W || !can_play(P, c) || is_winning_move(P, c)) return FALSE;
        pos_play(P, col_move(P, c));
    }
    return TRUE;
}

long C4_Solve(const char *moves);
long C4_Solve(const char *moves)
{
    Pos P;
    book_load();
    if (!moves || !tt_init() || !parse_moves(moves, &P)) return C4_SOLVE_INVALID;
    budget(0, 0);
    return solve_exact(&P);
}

/* Forget everything the transposition table learnt (benchmarks: a cold search, as in a new host). */
void C4_ClearTable(void);
void C4_ClearTable(void) { if (tt) memset(tt, 0, tt_size * sizeof *tt); }

/* The column (0-based) Perfect plays after `moves`, -1 if none. */
long C4_BestMove(const char *moves);
long C4_BestMove(const char *moves)
{
    Pos P;
    int s;
    book_load();
    if (!moves || !tt_init() || !parse_moves(moves, &P)) return -1;
    budget(0, 0);
    return best_move(&P, &s);
}

/* ================= engine state on top of the generic board ================= */

static Pos g_pos;         /* mirrors the generic board when 7x6 */
static int g_pos_ok;      /* FALSE if moves did not alternate 0,1,0,... */

/* Heuristic for 7x6: win, else the single forced block, else the non-losing
 * move creating the most threats (centre first). */
static int heuristic_bitboard(const Pos *P)
{
    uint64_t next;
    int i, best = -1, bs = -1;
    for (i = 0; i < W; i++) if (can_play(P, ORDER[i]) && is_winning_move(P, ORDER[i])) return ORDER[i];
    next = non_losing_moves(P);
    for (i = 0; i < W; i++) {
        uint64_t m = next & COL_MASK(ORDER[i]);
        int s;
        if (!m) continue;
        s = move_score(P, m);
        if (s > bs) { bs = s; best = ORDER[i]; }
    }
    return best;   /* -1 if every move loses */
}

/* ---------------- the ten exported functions ---------------- */

void C4_Desc(char *pc, size_t size)
{
    book_load();
    if (!pc || size == 0) return;
    snprintf(pc, size, "Perfect-play solver for 7x6 (bitboards, transposition table, %s); heuristic on other sizes",
             g_book.status);
}

int C4_NewGame(long width, long height, long num)
{
    (void)num;
    book_load();
    if (width < 4 || width > MAXSIZE || height < 4 || height > MAXSIZE) return FALSE;
    g_width = (int)width; g_height = (int)height;
    memset(g_cell, C4_NOPLAYER, sizeof g_cell);
    memset(g_top, 0, sizeof g_top);
    g_rng ^= (unsigned long)time(NULL) * 2654435761UL + (unsigned long)clock();
    if (!g_rng) g_rng = 1;
    memset(&g_pos, 0, sizeof g_pos);
    g_pos_ok = (g_width == W && g_height == H);
    g_active = TRUE;
    return TRUE;
}

int C4_PlayMove(long player, long column)
{
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return FALSE;
    if (column < 0 || column >= g_width || g_top[column] >= g_height) return FALSE;
    if (find_win(C4_PLAYER0, 0, 0, 0, 0) || find_win(C4_PLAYER1, 0, 0, 0, 0)) return FALSE;
    g_cell[column][g_top[column]++] = (signed char)player;
    if (g_pos_ok) {
        if (player != (g_pos.moves & 1)) g_pos_ok = FALSE;   /* non-alternating: stop mirroring */
        else pos_play(&g_pos, col_move(&g_pos, (int)column));
    }
    return TRUE;
}

long C4_AutoMove(long player, long level)
{
    int x = -1;
    if (!g_active || (player != C4_PLAYER0 && player != C4_PLAYER1)) return -1;
    if (game_over()) return -1;
    if (level <= 0) {
        /* Easy: win, block, else random non-suicidal column */
        int cols[MAXSIZE], n = 0, c, opp = 1 - (int)player;
        for (c = 0; c < g_width && x < 0; c++)
            if (g_top[c] < g_height && wins_at((int)player, c, g_top[c])) x = c;
        for (c = 0; c < g_width && x < 0; c++)
            if (g_top[c] < g_height && wins_at(opp, c, g_top[c])) x = c;
        if (x < 0) {
            for (c = 0; c < g_width; c++)
                if (g_top[c] < g_height &&
                    !(g_top[c] + 1 < g_height && wins_at(opp, c, g_top[c] + 1))) cols[n++] = c;
            x = n ? cols[rnd() % (unsigned long)n] : random_move();
        }
    } else if (g_pos_ok && player == (g_pos.moves & 1) && tt_init()) {
        int score;
        /* Medium: a small node budget.  Perfect: no budget at all when the book is there (every
         * search measured ended within a second); without it, a time budget. */
        if (level == 1) budget(MEDIUM_NODES, 0);
        else budget(0, g_book.data ? 0 : PERFECT_FALLBACK_MS);
        x = best_move(&g_pos, &score);
        if (x < 0) x = heuristic_bitboard(&g_pos);
        if (x < 0) x = greedy_move((int)player);
    } else {
        x = greedy_move((int)player);
    }
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
    const char *name;
    book_load();
    if (level == 0) name = "Easy (heuristic: win, block, else a random safe column; instant)";
    else if (level == 1) name = "Medium (exact on 7x6 within 200,000 positions a move, about 30 ms, else heuristic)";
    else if (level == 2)
        name = g_book.data ? "Perfect (exact on 7x6, <= 1 s a move; heuristic on other sizes)"
                           : "Perfect (no opening book: exact on 7x6 only within 3 s a move, else heuristic)";
    else return FALSE;
    if (pc && size) snprintf(pc, size, "%s", name);
    return TRUE;
}
