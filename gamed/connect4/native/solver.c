/*
 * solver.c -- perfect-play Connect Four engine for the standard 7x6 board,
 * behind the "Open Line up 4" interface (see c4engine.h).
 *
 * Build:   cc -O2 -fPIC -shared -o libsolver.so solver.c
 * Install: copy libsolver.so to engines/solver/engine.so
 *
 * Board sizes: 7 wide x 6 high is solved exactly.  Every other size 4..16 is
 * ACCEPTED but played heuristically (win / block / don't give a win on top /
 * centre first), i.e. the same as level "Easy" without randomness.
 *
 * Levels:
 *   0 "Easy"    -- immediate win, else block, else random safe column.
 *   1 "Medium"  -- exact solve with a small budget (EASY_NODES nodes,
 *                  ~a few ms); heuristic (threat count + centre) otherwise.
 *   2 "Perfect" -- exact solve within PERFECT_MS milliseconds per move; plays
 *                  the proven best move (fastest win / slowest loss) when the
 *                  solve finishes, the strongest heuristic move otherwise.
 *
 * Solver (after Pascal Pons' approach, written from scratch): 7x(6+1) bitboards
 * (current player's stones + occupancy mask), negamax alpha-beta with
 * null-window iterative narrowing of the score interval, transposition table
 * (prime size, 32-bit truncated keys, 1-byte bounds), non-losing-move
 * pruning, move ordering by number of threats created with centre-first ties.
 *
 * Extra export:
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
 *   long long C4_SolveNodes(void)  -- nodes searched by the last C4_Solve.
 *
 * Once a player has won, PlayMove returns FALSE and AutoMove returns -1.
 * Global state, one game at a time, not thread-safe.
 */
#define C4_SOLVE_INVALID (-1000L)
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


#include <stdint.h>
#include <sys/time.h>

/* ================= 7x6 bitboard solver ================= */

#define W 7
#define H 6
#define BOARD_CELLS (W * H)
#define MIN_SCORE (-(W * H) / 2 + 3)
#define MAX_SCORE ((W * H + 1) / 2 - 3)
#define PERFECT_MS 3000
#define MEDIUM_NODES 200000LL

typedef struct { uint64_t cur, mask; int moves; } Pos;

#define BOTTOM_MASK   0x0000040810204081ULL          /* bit 0 of each column */
#define BOARD_MASK    (BOTTOM_MASK * ((1ULL << H) - 1))

static uint64_t top_mask_col(int c)    { return (1ULL << (H - 1)) << (c * (H + 1)); }
static uint64_t bottom_mask_col(int c) { return 1ULL << (c * (H + 1)); }
static uint64_t column_mask(int c)     { return ((1ULL << H) - 1) << (c * (H + 1)); }

static uint64_t winning_cells(uint64_t p, uint64_t mask)
{
    uint64_t r, t;
    r = (p << 1) & (p << 2) & (p << 3);                     /* vertical */
#define DIR(S) \
    t = (p << (S)) & (p << 2 * (S)); r |= t & (p << 3 * (S)); r |= t & (p >> (S)); \
    t = (p >> (S)) & (p >> 2 * (S)); r |= t & (p << (S));     r |= t & (p >> 3 * (S));
    DIR(H + 1)   /* horizontal */
    DIR(H)       /* diagonal \ */
    DIR(H + 2)   /* diagonal / */
#undef DIR
    return r & (BOARD_MASK ^ mask);
}

static uint64_t pos_possible(const Pos *P) { return (P->mask + BOTTOM_MASK) & BOARD_MASK; }
static int can_play(const Pos *P, int c)   { return (P->mask & top_mask_col(c)) == 0; }
static uint64_t col_move(const Pos *P, int c)
{ return (P->mask + bottom_mask_col(c)) & column_mask(c); }
static int is_winning_move(const Pos *P, int c)
{ return (winning_cells(P->cur, P->mask) & pos_possible(P) & column_mask(c)) != 0; }
static int can_win_next(const Pos *P)
{ return (winning_cells(P->cur, P->mask) & pos_possible(P)) != 0; }
static void pos_play(Pos *P, uint64_t move) { P->cur ^= P->mask; P->mask |= move; P->moves++; }
static uint64_t pos_key(const Pos *P) { return P->cur + P->mask; }

static uint64_t non_losing_moves(const Pos *P)
{
    uint64_t poss = pos_possible(P);
    uint64_t opp_win = winning_cells(P->cur ^ P->mask, P->mask);
    uint64_t forced = poss & opp_win;
    if (forced) {
        if (forced & (forced - 1)) return 0;    /* two threats: lost */
        poss = forced;
    }
    return poss & ~(opp_win >> 1);              /* don't play below a threat */
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }
static int move_score(const Pos *P, uint64_t move)
{ return popcount64(winning_cells(P->cur | move, P->mask)); }

/* ---- transposition table ---- */
static uint32_t *tt_keys;
static uint8_t  *tt_vals;
static size_t    tt_size;

static int is_prime(size_t n)
{ size_t d; if (n < 2) return 0; for (d = 2; d * d <= n; d++) if (n % d == 0) return 0; return 1; }

static int tt_init(void)
{
    size_t n = (size_t)1 << 23;
    if (tt_keys) return 1;
    while (!is_prime(n)) n++;                   /* prime > 2^17 keeps 32-bit keys unique */
    tt_keys = calloc(n, sizeof *tt_keys);
    tt_vals = calloc(n, sizeof *tt_vals);
    if (!tt_keys || !tt_vals) { free(tt_keys); free(tt_vals); tt_keys = 0; tt_vals = 0; return 0; }
    tt_size = n;
    return 1;
}
static void tt_put(uint64_t key, uint8_t v)
{ size_t i = (size_t)(key % tt_size); tt_keys[i] = (uint32_t)key; tt_vals[i] = v; }
static uint8_t tt_get(uint64_t key)
{ size_t i = (size_t)(key % tt_size); return tt_keys[i] == (uint32_t)key ? tt_vals[i] : 0; }

/* ---- search ---- */
static long long s_nodes, s_node_limit;
static double s_deadline_ms;
static int s_aborted;
static const int ORDER[W] = { 3, 2, 4, 1, 5, 0, 6 };

static double now_ms(void)
{ struct timeval tv; gettimeofday(&tv, 0); return tv.tv_sec * 1000.0 + tv.tv_usec / 1000.0; }

static int negamax(const Pos *P, int alpha, int beta)
{
    uint64_t next, key, mv[W];
    int sc[W], n = 0, i, j, min, max, v;

    s_nodes++;
    if (s_node_limit && ((s_nodes & 1023) == 0)) {
        if (s_nodes > s_node_limit || (s_deadline_ms > 0 && now_ms() > s_deadline_ms)) s_aborted = 1;
    }
    if (s_aborted) return 0;

    next = non_losing_moves(P);
    if (!next) return -(BOARD_CELLS - P->moves) / 2;
    if (P->moves >= BOARD_CELLS - 2) return 0;

    min = -(BOARD_CELLS - 2 - P->moves) / 2;
    if (alpha < min) { alpha = min; if (alpha >= beta) return alpha; }
    max = (BOARD_CELLS - 1 - P->moves) / 2;

    key = pos_key(P);
    if ((v = tt_get(key)) != 0) {
        if (v > MAX_SCORE - MIN_SCORE + 1) {             /* lower bound */
            min = v + 2 * MIN_SCORE - MAX_SCORE - 2;
            if (alpha < min) { alpha = min; if (alpha >= beta) return alpha; }
        } else {                                         /* upper bound */
            max = v + MIN_SCORE - 1;
            if (beta > max) { beta = max; if (alpha >= beta) return beta; }
        }
    }
    if (beta > max) { beta = max; if (alpha >= beta) return beta; }

    /* move ordering: more threats first, centre first among equals (stable insertion) */
    for (i = W - 1; i >= 0; i--) {
        uint64_t m = next & column_mask(ORDER[i]);
        int s;
        if (!m) continue;
        s = move_score(P, m);
        for (j = n; j > 0 && sc[j - 1] > s; j--) { mv[j] = mv[j - 1]; sc[j] = sc[j - 1]; }
        mv[j] = m; sc[j] = s; n++;
    }
    for (i = n - 1; i >= 0; i--) {
        Pos Q = *P;
        int score;
        pos_play(&Q, mv[i]);
        score = -negamax(&Q, -beta, -alpha);
        if (s_aborted) return 0;
        if (score >= beta) {
            tt_put(key, (uint8_t)(score + MAX_SCORE - 2 * MIN_SCORE + 2));
            return score;
        }
        if (score > alpha) alpha = score;
    }
    tt_put(key, (uint8_t)(alpha - MIN_SCORE + 1));
    return alpha;
}

/* Exact score of P (side to move's view); sets s_aborted if out of budget. */
static int solve_pos(const Pos *P)
{
    int min, max;
    if (can_win_next(P)) return (BOARD_CELLS + 1 - P->moves) / 2;
    min = -(BOARD_CELLS - P->moves) / 2;
    max = (BOARD_CELLS + 1 - P->moves) / 2;
    while (min < max) {
        int med = min + (max - min) / 2, r;
        if (med <= 0 && min / 2 < med) med = min / 2;
        else if (med >= 0 && max / 2 > med) med = max / 2;
        r = negamax(P, med, med + 1);
        if (s_aborted) return 0;
        if (r <= med) max = r; else min = r;
    }
    return min;
}

long long C4_SolveNodes(void);
long long C4_SolveNodes(void) { return s_nodes; }

long C4_Solve(const char *moves);
long C4_Solve(const char *moves)
{
    Pos P = { 0, 0, 0 };
    const char *s;
    if (!moves || !tt_init()) return C4_SOLVE_INVALID;
    for (s = moves; *s; s++) {
        int c;
        if (*s < '0' || *s > '9') continue;
        c = *s - '1';
        if (c < 0 || c >= W || !can_play(&P, c) || is_winning_move(&P, c)) return C4_SOLVE_INVALID;
        pos_play(&P, col_move(&P, c));
    }
    s_nodes = 0; s_node_limit = 0; s_deadline_ms = 0; s_aborted = 0;
    return solve_pos(&P);
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
        uint64_t m = next & column_mask(ORDER[i]);
        int s;
        if (!m) continue;
        s = move_score(P, m);
        if (s > bs) { bs = s; best = ORDER[i]; }
    }
    return best;   /* -1 if every move loses */
}

/* Best move by exact solving of each child within the budget; -1 if aborted. */
static int solve_best(const Pos *P, long long node_limit, double ms)
{
    int i, best = -1, bs = -1000;
    if (!tt_init()) return -1;
    for (i = 0; i < W; i++) if (can_play(P, ORDER[i]) && is_winning_move(P, ORDER[i])) return ORDER[i];
    s_nodes = 0; s_node_limit = node_limit ? node_limit : (1LL << 62);
    s_deadline_ms = ms > 0 ? now_ms() + ms : 0; s_aborted = 0;
    for (i = 0; i < W; i++) {
        int c = ORDER[i], sc;
        Pos Q;
        if (!can_play(P, c)) continue;
        Q = *P; pos_play(&Q, col_move(P, c));
        sc = (Q.moves >= BOARD_CELLS) ? 0 : -solve_pos(&Q);
        if (s_aborted) return -1;
        if (sc > bs) { bs = sc; best = c; }
    }
    return best;
}

/* ---------------- the ten exported functions ---------------- */

void C4_Desc(char *pc, size_t size)
{
    const char *d = "Perfect-play solver for 7x6 (bitboards, transposition table); "
                    "heuristic on other sizes";
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
    } else if (g_pos_ok && player == (g_pos.moves & 1)) {
        x = (level == 1) ? solve_best(&g_pos, MEDIUM_NODES, 0)
                         : solve_best(&g_pos, 0, PERFECT_MS);
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
    static const char *names[] = { "Easy", "Medium", "Perfect" };
    if (level < 0 || level >= 3) return FALSE;
    if (pc && size) { strncpy(pc, names[level], size - 1); pc[size - 1] = '\0'; }
    return TRUE;
}
