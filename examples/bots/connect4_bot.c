/* A tiny Connect Four bot in C for gamed's hosted bots (docs/hosting.md,
 * docs/protocols/connect-four.md).
 *
 * It asks for a table, then on every YOURMOVE plays the offered column nearest the middle.
 * It ends with the game. Build: make -C examples/bots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char line[4096];
    int width = 7;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("BOARD OFF\nTABLE\n");
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "START ", 6) == 0) {
            char game[64], me[8], size[32];
            if (sscanf(line + 6, "%63s %7s %31s", game, me, size) == 3)
                width = atoi(size);
        } else if (strncmp(line, "YOURMOVE ", 9) == 0) {
            int best = -1;
            char *word = strtok(line + 9, " \r\n"); /* the seconds left */
            while ((word = strtok(NULL, " \r\n"))) {
                int c = atoi(word);
                if (best < 0 || abs(2 * c - (width - 1)) < abs(2 * best - (width - 1)))
                    best = c;
            }
            printf("MOVE %d\n", best < 0 ? 0 : best);
        } else if (strncmp(line, "RESULT", 6) == 0 || strncmp(line, "ABORT", 5) == 0 || strncmp(line, "BYE", 3) == 0) {
            return 0;
        }
    }
    return 0;
}
