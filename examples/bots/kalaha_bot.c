/* A tiny Kalaha bot in C for gamed's hosted bots (docs/hosting.md, docs/protocols/kalaha.md).
 *
 * It reads the server's lines on stdin and answers on stdout: on YOURMOVE it plays the pit that
 * ends in its store if there is one, else the first pit it may play. It ends with the game.
 * Build: make -C examples/bots (or cc -O2 -o kalaha_bot kalaha_bot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char line[1024];
    int position[14] = {0};
    char side = 'A';
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("BOARD OFF\nTABLE\n"); /* TABLE: paired at once, without the pair delay */
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "START ", 6) == 0) {
            char game[64], s[8];
            if (sscanf(line + 6, "%63s %7s", game, s) == 2)
                side = s[0];
        } else if (strncmp(line, "POSITION ", 9) == 0) {
            char *p = line + 9;
            for (int i = 0; i < 14; i++)
                position[i] = (int)strtol(p, &p, 10);
        } else if (strncmp(line, "YOURMOVE ", 9) == 0) {
            int pits[6], n = 0, choice = 0;
            char *word = strtok(line + 9, " \r\n"); /* the seconds left */
            while ((word = strtok(NULL, " \r\n")) && n < 6)
                pits[n++] = atoi(word[0] == 'A' || word[0] == 'B' ? word + 1 : word);
            if (n == 0)
                pits[n++] = 1;
            choice = pits[0];
            int base = side == 'A' ? 0 : 7;
            for (int i = 0; i < n; i++)
                if (position[base + pits[i] - 1] == 7 - pits[i])
                    choice = pits[i];
            printf("MOVE %d\n", choice);
        } else if (strncmp(line, "RESULT", 6) == 0 || strncmp(line, "ABORT", 5) == 0 || strncmp(line, "BYE", 3) == 0) {
            return 0;
        }
    }
    return 0;
}
