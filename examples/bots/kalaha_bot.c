/* A tiny Kalaha bot in C for gamed's hosted bots (docs/hosting.md, docs/protocols/kalaha.md).
 *
 * It reads the server's lines on stdin and answers on stdout: on YOURMOVE it plays the pit that
 * ends in its store if there is one, else the first pit it may play. It ends with the game.
 * Build: make -C examples/bots (or cc -O2 -o kalaha_bot kalaha_bot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

/* With GAMED_HOST and GAMED_PORT set (talk = "connect", or a bot started by hand), connect to the
 * daemon over TCP and log in with GAMED_NAME and GAMED_TOKEN (or, without a token, play as the
 * guest GAMED_NAME), at the table GAMED_TABLE if set; else talk on stdin and stdout. */
static int connect_tcp(const char *host, const char *port, FILE **in, FILE **out)
{
    struct addrinfo hints = {0}, *found, *a;
    int fd = -1;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &found) != 0)
        return -1;
    for (a = found; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(found);
    if (fd < 0)
        return -1;
    *in = fdopen(fd, "r");
    *out = fdopen(dup(fd), "w");
    if (!*in || !*out)
        return -1;
    setvbuf(*out, NULL, _IOLBF, 0);
    return 0;
}

static int open_game(FILE **in, FILE **out)
{
    const char *host = getenv("GAMED_HOST"), *port = getenv("GAMED_PORT");
    const char *name = getenv("GAMED_NAME"), *token = getenv("GAMED_TOKEN"), *table = getenv("GAMED_TABLE");
    if (!host || !*host || !port || !*port) {
        *in = stdin;
        *out = stdout;
        setvbuf(stdout, NULL, _IOLBF, 0);
        fprintf(*out, "BOARD OFF\nTABLE\n"); /* TABLE: paired at once, without the pair delay */
        return 0;
    }
    if (connect_tcp(host, port, in, out) != 0) {
        fprintf(stderr, "cannot connect to %s:%s\n", host, port);
        return -1;
    }
    if (name && *name && token && *token)
        fprintf(*out, "LOGIN %s %s\n", name, token);
    else if (name && *name)
        fprintf(*out, "NAME %s\n", name);
    fprintf(*out, "BOARD OFF\n");
    if (table && *table)
        fprintf(*out, "TABLE %s\n", table);
    else
        fprintf(*out, "TABLE\n");
    return 0;
}

int main(void)
{
    char line[1024];
    int position[14] = {0};
    char side = 'A';
    FILE *in, *out;
    if (open_game(&in, &out) != 0)
        return 1;
    while (fgets(line, sizeof line, in)) {
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
            fprintf(out, "MOVE %d\n", choice);
        } else if (strncmp(line, "RESULT", 6) == 0 || strncmp(line, "ABORT", 5) == 0 || strncmp(line, "BYE", 3) == 0) {
            return 0;
        }
    }
    return 0;
}
