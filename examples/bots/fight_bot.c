/* A tiny Virtual Fight AI (docs/protocols/virtual-fight.md) for gamed's hosted bots
 * (docs/hosting.md), on stdin and stdout: [bots.<name>] game = "fight", command =
 * "examples/bots/fight_bot" (make -C examples/bots builds it).
 *
 * Every turn each living warrior looks (POS, DIR, SAW), then each shoots an enemy any of them
 * sees in line within three squares, or steps toward the nearest one, or else wanders (mostly
 * on, at random: seeded by GAMED_SEED or its argument); a warrior that cannot move passes.
 * Every line it sends gets one reply; the lines the server sends on its own (READY, 200,
 * n&HIT&..., n&KILLED, GAMEOVER&...) may come between, and are noted as they come. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 64 /* the largest map it knows about (rows and columns) */

static const char *NAMES[4] = {"UP", "DOWN", "LEFT", "RIGHT"};
static const int DR[4] = {-1, 1, 0, 0}, DC[4] = {0, 0, -1, 1};

static int dead[5], ready, over;
static char line[4096];

/* The next line into `line`; 1 when it is a reply, 0 when it was the server's own line. */
static int event(void) {
    if (!fgets(line, sizeof line, stdin)) {
        over = 1;
        return 0;
    }
    line[strcspn(line, "\r\n")] = 0;
    const char *amp = strchr(line, '&');
    if (strcmp(line, "READY") == 0)
        ready++;
    else if (strncmp(line, "GAMEOVER", 8) == 0)
        over = 1;
    else if (amp && strcmp(amp, "&KILLED") == 0)
        dead[atoi(line) % 5] = 1;
    else if (strcmp(line, "OK") && strcmp(line, "200") && !(amp && strncmp(amp, "&HIT&", 5) == 0))
        return 1;
    return 0;
}

/* Send a command; its reply is left in `line` (returns 0 when the game is over first). */
static int ask(const char *fmt, int n, const char *arg) {
    printf(fmt, n, arg);
    putchar('\n');
    fflush(stdout);
    while (!over)
        if (event())
            return 1;
    return 0;
}

static int dir_of(const char *name) {
    for (int d = 0; d < 4; d++)
        if (strcmp(name, NAMES[d]) == 0)
            return d;
    return 3;
}

static void play_turn(void) {
    static char seen[SIZE][SIZE]; /* what the team sees this turn: E, O, #, x or 0 */
    int row[5], col[5], facing[5], alive[5] = {0};
    memset(seen, 0, sizeof seen);
    for (int n = 0; n < 5; n++) {
        if (dead[n])
            continue;
        if (!ask("%d&POS%s", n, "") || sscanf(line, "%d,%d", &row[n], &col[n]) != 2)
            return;
        if (!ask("%d&DIR%s", n, ""))
            return;
        facing[n] = dir_of(line);
        if (!ask("%d&SAW%s", n, ""))
            return;
        for (char *square = strtok(line, "&"); square; square = strtok(NULL, "&")) {
            int r, c;
            char t;
            if (sscanf(square, "%d,%d,%c", &r, &c, &t) == 3 && r >= 0 && r < SIZE && c >= 0 && c < SIZE)
                seen[r][c] = t;
        }
        alive[n] = 1;
    }
    for (int n = 0; n < 5; n++)
        if (alive[n] && row[n] < SIZE && col[n] < SIZE)
            seen[row[n]][col[n]] = 'O';
    for (int n = 0; n < 5 && !over; n++) {
        if (!alive[n])
            continue;
        int target = -1, best = -1, far = 1 << 30;
        for (int d = 0; d < 4 && target < 0; d++) /* an enemy in line within three squares */
            for (int k = 1; k <= 3; k++) {
                int r = row[n] + k * DR[d], c = col[n] + k * DC[d];
                if (r < 0 || r >= SIZE || c < 0 || c >= SIZE || (seen[r][c] && seen[r][c] != 'E'))
                    break;
                if (seen[r][c] == 'E') {
                    target = d;
                    break;
                }
            }
        if (target >= 0) {
            ask("%d&SHOOT&%s", n, NAMES[target]);
            continue;
        }
        for (int r = 0; r < SIZE; r++) /* else toward the nearest enemy seen */
            for (int c = 0; c < SIZE; c++)
                if (seen[r][c] == 'E' && abs(r - row[n]) + abs(c - col[n]) < far) {
                    far = abs(r - row[n]) + abs(c - col[n]);
                    if (abs(r - row[n]) >= abs(c - col[n]))
                        best = r > row[n] ? 1 : 0;
                    else
                        best = c > col[n] ? 3 : 2;
                }
        if (best < 0) /* else on, mostly */
            best = rand() % 10 < 7 ? facing[n] : rand() % 4;
        int moved = 0;
        for (int i = 0; i < 4 && !moved; i++) {
            if (!ask("%d&MOVE&%s", n, NAMES[(best + i) % 4]))
                return;
            moved = strcmp(line, "111") && strcmp(line, "112");
        }
        if (!moved)
            ask("%d&NONE%s", n, "");
    }
}

int main(int argc, char **argv) {
    const char *seed = getenv("GAMED_SEED");
    srand((unsigned)atoi(seed ? seed : argc > 1 ? argv[1] : "1"));
    while (!over) {
        if (ready) {
            ready--;
            play_turn();
        } else {
            event();
        }
    }
    return 0;
}
