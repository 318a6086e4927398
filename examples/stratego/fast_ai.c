/*
 * fast_ai: a small, instant Stratego AI for the UCC 2012 protocol (gamed-stratego, ucc-stratego §5).
 *
 * Setup: the whole 40-piece army in a random order, the flag in the back row (RED's first row,
 * BLUE's last). Play: from its own board view it picks an attack on an enemy piece ('#') when it
 * has one (3 times in 4), else any legal step or scout run; SURRENDER when nothing can move.
 * It reads START and the confirmations in the order of §5.3 and exits on QUIT or end of input.
 *
 * Build: cc -O2 -o fast_ai fast_ai.c       Usage: ./fast_ai [SEED]
 *
 * Without SEED it takes FAST_AI_SEED from the environment (RED and BLUE then play different
 * streams of the same seed: a manager started as the tournament script does, with bare paths,
 * still plays reproducible games), else the time and its process id. With FAST_AI_REPORT set it
 * writes two lines to stderr for bench/stratego_referee.py, which measures a manager with them:
 *     fast_ai: first board <seconds> manager <ns> <ticks>    when it has read its first board
 *     fast_ai: quit <seconds> manager <ns> <ticks>           when it has read QUIT
 * <seconds> is the CLOCK_MONOTONIC time; <ns> and <ticks> are its parent's (the manager's) CPU
 * time so far, from /proc/PPID/schedstat (its main thread, in ns) and /proc/PPID/stat (utime +
 * stime of all its threads, in clock ticks); -1 where they cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIZE 10
#define LINE_MAX_LEN 4096
#define MAX_MOVES 1024

static char line[LINE_MAX_LEN];
static void report(const char *what);
static char board[SIZE][SIZE + 1];
static unsigned long long rng_state;

static unsigned rnd(unsigned n)
{
    /* xorshift64*: enough randomness for a random player */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

/* Read one line (without its '\n') into `line`; exit on QUIT or end of input. Over-long lines are
 * cut: the rest is skipped. */
static void read_line(void)
{
    int c;
    size_t n = 0;
    while ((c = getchar()) != EOF && c != '\n') {
        if (n < LINE_MAX_LEN - 1)
            line[n++] = (char)c;
    }
    line[n] = '\0';
    if (strncmp(line, "QUIT", 4) == 0)
        report("quit");
    if ((c == EOF && n == 0) || strncmp(line, "QUIT", 4) == 0)
        exit(0);
}

static void send(const char *text)
{
    if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
        exit(0); /* the manager is gone */
}

static int own(char c) { return strchr("123456789sBF", c) != NULL && c != '\0'; }

static void setup(int red)
{
    char army[] = "1233444555566667777888889999999" "9sBBBBBBF";
    int n = (int)strlen(army), i, flag = 0, back;
    char row[SIZE + 1];
    for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)rnd((unsigned)i + 1);
        char t = army[i]; army[i] = army[j]; army[j] = t;
    }
    for (i = 0; i < n; i++)
        if (army[i] == 'F')
            flag = i;
    back = (red ? 0 : 3 * SIZE) + (int)rnd(SIZE);
    army[flag] = army[back];
    army[back] = 'F';
    for (i = 0; i < 4; i++) {
        memcpy(row, army + i * SIZE, SIZE);
        row[SIZE] = '\0';
        send(row);
    }
}

static void read_board(void)
{
    int y, x;
    for (y = 0; y < SIZE; y++) {
        read_line();
        for (x = 0; x < SIZE; x++)
            board[y][x] = (x < (int)strlen(line)) ? line[x] : '+';
        board[y][SIZE] = '\0';
    }
}

static void report(const char *what)
{
    struct timespec now;
    char path[64], buf[1024], *p;
    long long ns = -1, ticks = -1;
    unsigned long long utime, stime;
    FILE *f;
    if (getenv("FAST_AI_REPORT") == NULL)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)getppid());
    if ((f = fopen(path, "r")) != NULL) {
        if (fscanf(f, "%lld", &ns) != 1)
            ns = -1;
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
    if ((f = fopen(path, "r")) != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        /* after "pid (comm) ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
        if ((p = strrchr(buf, ')')) != NULL
            && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
            ticks = (long long)(utime + stime);
    }
    fprintf(stderr, "fast_ai: %s %lld.%09ld manager %lld %lld\n", what, (long long)now.tv_sec, now.tv_nsec, ns, ticks);
}

static void report_first_board(void)
{
    static int done = 0;
    if (!done) {
        done = 1;
        report("first board");
    }
}

static void move(void)
{
    static const char *names[4] = {"UP", "DOWN", "LEFT", "RIGHT"};
    static const int dx[4] = {0, 0, -1, 1}, dy[4] = {-1, 1, 0, 0};
    static char moves[MAX_MOVES][32], attacks[MAX_MOVES][32];
    int nmoves = 0, nattacks = 0, x, y, d, k;
    for (y = 0; y < SIZE; y++)
        for (x = 0; x < SIZE; x++) {
            char p = board[y][x];
            if (!own(p) || p == 'B' || p == 'F')
                continue;
            for (d = 0; d < 4; d++) {
                int reach = p == '9' ? SIZE : 1;
                for (k = 1; k <= reach; k++) {
                    int tx = x + dx[d] * k, ty = y + dy[d] * k;
                    char t;
                    if (tx < 0 || tx >= SIZE || ty < 0 || ty >= SIZE)
                        break;
                    t = board[ty][tx];
                    if (own(t) || t == '+')
                        break;
                    if (t == '#') {
                        if (nattacks < MAX_MOVES)
                            snprintf(attacks[nattacks++], 32, k > 1 ? "%d %d %s %d" : "%d %d %s", x, y, names[d], k);
                        break;
                    }
                    if (nmoves < MAX_MOVES)
                        snprintf(moves[nmoves++], 32, k > 1 ? "%d %d %s %d" : "%d %d %s", x, y, names[d], k);
                }
            }
        }
    if (nattacks > 0 && (nmoves == 0 || rnd(4) != 0))
        send(attacks[rnd((unsigned)nattacks)]);
    else if (nmoves > 0)
        send(moves[rnd((unsigned)nmoves)]);
    else
        send("SURRENDER");
}

int main(int argc, char **argv)
{
    int red;
    const char *seed = getenv("FAST_AI_SEED");
    read_line(); /* RED|BLUE <opponent> 10 10 */
    if (strncmp(line, "RED ", 4) == 0)
        red = 1;
    else if (strncmp(line, "BLUE ", 5) == 0)
        red = 0;
    else
        return 1;
    if (argc > 1)
        rng_state = strtoull(argv[1], NULL, 10);
    else if (seed != NULL && *seed != '\0')
        rng_state = strtoull(seed, NULL, 10) * 2 + (unsigned long long)!red;
    else
        rng_state = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
    rng_state = rng_state * 0x9E3779B97F4A7C15ULL + 1; /* never 0 */
    setup(red);
    /* §5.3: RED reads START, then per turn: board, (its move), its confirmation, BLUE's.
     * BLUE reads per turn: RED's confirmation, board, (its move), its own confirmation. */
    if (red)
        read_line(); /* START */
    for (;;) {
        if (!red)
            read_line(); /* RED's confirmation */
        read_board();
        report_first_board();
        move();
        read_line(); /* our confirmation */
        if (red)
            read_line(); /* BLUE's confirmation */
    }
}
