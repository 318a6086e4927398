/* A tiny GGZ Combat bot in C for gamed's hosted bots (docs/hosting.md, docs/protocols/combat.md).
 *
 * The daemon bridges its stdin and stdout to a connection of the Combat handshake port: it reads
 * the greeting, sends PLAY, waits for "OK PLAY", then speaks the binary protocol (4-byte
 * big-endian ints; strings as an int size, the bytes and a NUL; the OPTIONS, SETUP and SYNC
 * tables with every byte + 1). As host it sends the Default map; it places its army in order
 * over its zone, keeps the board from MOVE and ATTACK, and on its turn moves its first movable
 * unit (by a seeded walk over the cells) one step onto a cell that is open and not its own,
 * attacking when it can. It ends at GAMEOVER.
 * Build: make -C examples/bots (or cc -O2 -o combat_bot combat_bot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SEAT, PLAYERS, REQ_OPTIONS, OPTIONS, REQ_SETUP, SETUP, START, REQ_MOVE, MOVE, ATTACK, GAMEOVER, REQ_SYNC, SYNC };
#define EMPTY 0x0F
#define MAXCELLS (127 * 127)

static int seat, seats = 2, turn, width = 10, cells;
static unsigned char types[MAXCELLS], units[MAXCELLS], army[12], buf[40000];
static unsigned long rng = 1;

static void fail(const char *why) { fprintf(stderr, "combat_bot: %s\n", why); exit(1); }

static void exact(unsigned char *p, size_t n)
{
    if (fread(p, 1, n, stdin) != n)
        exit(0); /* the server is gone */
}

static int get_int(void)
{
    unsigned char b[4];
    exact(b, 4);
    return (int)((unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3]);
}

static int get_string(void) /* into buf; its length before the NUL */
{
    int size = get_int();
    if (size < 0 || size > (int)sizeof buf)
        fail("string too long");
    exact(buf, (size_t)size);
    int n = 0;
    while (n < size && buf[n])
        n++;
    return n;
}

static int get_table(void) /* a +1-encoded string, decoded in buf */
{
    int n = get_string();
    for (int i = 0; i < n; i++)
        buf[i] = (unsigned char)(buf[i] - 1);
    return n;
}

static void put_int(int v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    fwrite(b, 1, 4, stdout);
}

static void put_table(int op, const unsigned char *raw, int n)
{
    put_int(op);
    put_int(n + 1);
    for (int i = 0; i < n; i++)
        putchar((raw[i] + 1) & 0xFF);
    putchar(0);
    fflush(stdout);
}

static int owner(unsigned char b) { return (b >> 4) - 1; }

static void send_default_map(void)
{
    unsigned char raw[200];
    int n = 0;
    raw[n++] = 10;
    raw[n++] = 10;
    for (int i = 0; i < 100; i++) {
        int y = i / 10, x = i % 10;
        raw[n++] = y < 4 ? 0x10 : y > 5 ? 0x20 : (x == 2 || x == 3 || x == 6 || x == 7) ? 0x02 : 0x00;
    }
    static const unsigned char counts[12] = {1, 6, 1, 8, 5, 4, 4, 4, 3, 2, 1, 1};
    memcpy(raw + n, counts, 12);
    n += 12;
    raw[n++] = 1; /* the name packet */
    memcpy(raw + n, "Default", 7);
    n += 7;
    raw[n++] = 0;
    raw[n++] = 0;
    put_table(OPTIONS, raw, n);
}

static void send_setup(void)
{
    unsigned char raw[MAXCELLS];
    int n = 0, code = 0, left = army[0];
    for (int i = 0; i < cells; i++) {
        if (owner(types[i]) != seat)
            continue;
        while (code < 12 && left == 0 && ++code < 12)
            left = army[code];
        raw[n++] = code < 12 ? (unsigned char)((seat + 1) << 4 | code) : EMPTY;
        left--;
    }
    put_table(SETUP, raw, n);
}

static int open_cell(int i) { return (types[i] & 0x0F) == 0 && owner(units[i]) != seat; }

static void play(void)
{
    if (turn != seat || cells == 0)
        return;
    int best_from = -1, best_to = -1, start = (int)(rng % (unsigned long)cells);
    rng = rng * 6364136223846793005UL + 1442695040888963407UL;
    for (int k = 0; k < cells; k++) {
        int i = (start + k) % cells, code = units[i] & 0x0F;
        if (owner(units[i]) != seat || code < 2 || code > 11)
            continue;
        int x = i % width, y = i / width, height = cells / width;
        int steps[4][2] = {{x, y + 1}, {x, y - 1}, {x + 1, y}, {x - 1, y}};
        for (int s = 0; s < 4; s++) {
            int nx = steps[s][0], ny = steps[s][1], j = ny * width + nx;
            if (nx < 0 || nx >= width || ny < 0 || ny >= height || !open_cell(j))
                continue;
            if (best_from < 0 || units[j] != EMPTY) {
                best_from = i;
                best_to = j;
            }
            if (units[j] != EMPTY)
                goto chosen; /* an attack */
        }
    }
chosen:
    if (best_from >= 0) { /* none: only the server's move clock passes this turn */
        put_int(REQ_MOVE);
        put_int(best_from);
        put_int(best_to);
        fflush(stdout);
    }
}

static void next_turn(void)
{
    turn = turn >= seats - 1 ? 0 : turn + 1;
    play();
}

int main(int argc, char **argv)
{
    char line[512];
    const char *seed = getenv("GAMED_SEED");
    rng = strtoul(argc > 1 ? argv[1] : seed ? seed : "1", NULL, 10) * 2 + 1;
    if (!fgets(line, sizeof line, stdin)) /* COMBAT gamed: ... */
        return 1;
    fputs("PLAY\r\n", stdout);
    fflush(stdout);
    do {
        if (!fgets(line, sizeof line, stdin))
            return 1;
    } while (strncmp(line, "OK PLAY", 7) != 0);
    for (;;) {
        int op = get_int();
        if (op == SEAT) {
            seat = get_int();
            seats = get_int();
            get_int(); /* the protocol version */
        } else if (op == PLAYERS) {
            for (int i = 0; i < seats; i++)
                if (get_int() != 1) /* an open seat has no name */
                    get_string();
        } else if (op == REQ_OPTIONS) {
            send_default_map();
        } else if (op == OPTIONS) {
            get_table();
            width = buf[0];
            cells = buf[0] * buf[1];
            memcpy(types, buf + 2, (size_t)cells);
            memcpy(army, buf + 2 + cells, 12);
            memset(units, EMPTY, (size_t)cells);
        } else if (op == REQ_SETUP) {
            send_setup();
        } else if (op == START) {
            turn = 0;
            put_int(REQ_SYNC); /* the board as this seat may see it */
            fflush(stdout);
        } else if (op == SYNC) {
            int n = get_table();
            if (n == 2 + cells) {
                turn = buf[0];
                memcpy(units, buf + 2, (size_t)cells);
                play();
            }
        } else if (op == MOVE) {
            int from = get_int(), to = get_int();
            if (from >= 0) { /* (the error form is code, seat) */
                units[to] = units[from];
                units[from] = EMPTY;
                next_turn();
            }
        } else if (op == ATTACK) {
            int from = get_int(), who_from = get_int(), to = get_int(), who_to = get_int();
            if (who_from < 0 && who_to >= 0)
                units[to] = units[from];
            else if (who_from < 0 && who_to < 0)
                units[to] = EMPTY;
            units[from] = EMPTY;
            next_turn();
        } else if (op == GAMEOVER) {
            fprintf(stderr, "game over: winner seat %d\n", get_int());
            return 0;
        } else {
            fail("unknown opcode");
        }
    }
}
