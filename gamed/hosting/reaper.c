/* gamed-reaper: the parent and subreaper of one hosted program, in C, for the programs the daemon
 * hosts without bubblewrap (docs/hosting.md, "The sandbox"). It does what gamed/reaper.py does,
 * without the ~20 ms of CPU a Python interpreter takes to start (most of a fast bot's game; see
 * docs/performance.md, "Hosted bots: hosting vs TCP"); the daemon uses it when it has been built
 * (`make examples`), else gamed.reaper.
 *
 * Usage: gamed-reaper [--start LIMITS DIRECTORY] DAEMON_PID PATH ARGV...
 *        gamed-reaper --exec LIMITS DIRECTORY DAEMON_PID PATH ARGV...
 *        gamed-reaper --wait DAEMON_PID
 *        gamed-reaper --wait-exec
 *
 * It closes every file descriptor above 2 first (the daemon leaves that to it).
 *
 * With --exec it is only the launcher of bubblewrap (which is then the program's parent and the
 * init of its pid namespace): the same session, limits, umask and directory as --start, SIGKILL
 * as its death signal, exit 1 if the daemon is gone, then it execs PATH in its own place: one
 * exec instead of util-linux's prlimit, setpriv, sh and setsid.
 *
 * With --start it is also the launcher (what gamed.hosting.sandbox's Python launcher or its
 * util-linux chain does before the reaper): it becomes the leader of a new session, sets the
 * resource limits LIMITS ("RLIMIT_CPU=SOFT:HARD,RLIMIT_AS=...", as the launcher's), umask 077,
 * and changes to DIRECTORY, so that a hosted program costs one exec of it and one fork.
 *
 * - a process group of its own and a child subreaper (PR_SET_CHILD_SUBREAPER): everything the
 *   program forks stays in its tree, even after a double fork or setsid();
 * - SIGTERM as its parent death signal, exit 1 if the daemon is already gone;
 * - forks the program as the leader of a new session with SIGKILL as its death signal, the signal
 *   mask it was given and SIGPIPE and SIGXFSZ at their defaults; the child writes its pid and a
 *   newline on stdout first, then execs PATH with ARGV (no PATH search); "cannot execute" on
 *   stderr and status 127 if it cannot;
 * - closes its own stdin and stdout (the daemon talks to the program through them directly);
 * - waits in poll on a pidfd of the program and a signalfd of SIGTERM, SIGHUP, SIGINT, SIGQUIT
 *   (any of them SIGKILLs the program's whole tree), reaping ended orphans at every wake-up and
 *   at least once a second;
 * - when the program has exited, SIGKILLs and reaps every descendant left (for at most 2 s) and
 *   ends as the program did: the same exit status, or death by the same signal (no core file).
 *
 * With --wait and --wait-exec it is a sandbox started ahead of its game (gamed/hosting/warm.py):
 * it first reads what to run from stdin, one start message: the message's length in decimal and
 * a newline, then that many bytes of NUL-ended fields: LIMITS, DIRECTORY, PATH, the number of
 * arguments, the arguments, and the environment's NAME=VALUE entries. It reads exactly the
 * message, so what follows on stdin is the program's. --wait then does what --start does with
 * them (and the program gets that environment); --wait-exec, run by bubblewrap inside its
 * namespaces (whose init reaps), does the launcher's part and execs PATH in its own place.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static void say(const char *what, const char *path)
{
    char text[4096];
    int n = snprintf(text, sizeof text, "gamed reaper: %s '%s': %s\n", what, path, strerror(errno));
    if (n > 0 && write(2, text, (size_t)n) < 0)
        _exit(127);
}

/* The children of pid (from /proc/PID/task/TID/children) appended to out; the new count. */
static size_t children_of(pid_t pid, pid_t *out, size_t count, size_t room)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return count;
    struct dirent *task;
    while ((task = readdir(tasks))) {
        if (task->d_name[0] == '.')
            continue;
        char file[320];
        snprintf(file, sizeof file, "/proc/%d/task/%s/children", (int)pid, task->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        int child;
        while (count < room && fscanf(f, "%d", &child) == 1)
            out[count++] = child;
        fclose(f);
    }
    closedir(tasks);
    return count;
}

/* SIGKILL every descendant of this process; how many were found. */
static size_t kill_descendants(void)
{
    enum { ROOM = 4096 };
    static pid_t tree[ROOM];
    size_t count = children_of(getpid(), tree, 0, ROOM);
    for (size_t i = 0; i < count; i++)
        count = children_of(tree[i], tree, count, ROOM);
    for (size_t i = 0; i < count; i++)
        kill(tree[i], SIGKILL);
    return count;
}

/* Reap every child that has ended; sets *status (and returns 1) if the program was among them. */
static int reap_ended(pid_t program, siginfo_t *status)
{
    int found = 0;
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG) != 0 || info.si_pid == 0)
            return found;
        if (info.si_pid == program) {
            *status = info;
            found = 1;
        }
    }
}

static const struct {
    const char *name;
    int resource;
} LIMITS[] = {
    {"RLIMIT_CPU", RLIMIT_CPU}, {"RLIMIT_AS", RLIMIT_AS}, {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE}, {"RLIMIT_CORE", RLIMIT_CORE}, {"RLIMIT_NPROC", RLIMIT_NPROC},
};

/* The launcher's part: session, limits, umask, working directory; 0, or -1 with errno set. */
static int start(char *limits, const char *directory, int session)
{
    if (session)
        setsid(); /* (the spawned process is no group leader: it cannot fail) */
    for (char *item = strtok(limits, ","); item; item = strtok(NULL, ",")) {
        char name[32];
        unsigned long long soft, hard;
        if (sscanf(item, "%31[^=]=%llu:%llu", name, &soft, &hard) != 3)
            continue;
        for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++)
            if (strcmp(name, LIMITS[i].name) == 0) {
                struct rlimit value = {(rlim_t)soft, (rlim_t)hard};
                setrlimit(LIMITS[i].resource, &value); /* (as the launcher: a refused one is skipped) */
            }
    }
    umask(077);
    return chdir(directory);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Every file descriptor above 2 closed: the daemon starts it without closing its own ones (those
 * without close-on-exec, such as sockets systemd passed), so that no hosted program inherits them. */
static void close_the_rest(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
        return;
#endif
    long most = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (most > 0 && most < 1048576 ? most : 65536); fd++)
        close((int)fd);
}

/* What a start message (--wait, --wait-exec) says to run. */
struct start_message {
    char *limits, *directory, *path;
    char **argv, **envp;
};

/* Exactly n bytes from fd 0 into buffer; 0, or -1 at an early end or an error. */
static int read_exactly(char *buffer, size_t n)
{
    while (n > 0) {
        ssize_t got = read(0, buffer, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        buffer += got;
        n -= (size_t)got;
    }
    return 0;
}

/* The start message from stdin (see the top of this file); exits 127 on a malformed one. */
static void read_start_message(struct start_message *out)
{
    char header[24];
    size_t used = 0;
    for (;;) { /* the length line, a byte at a time: nothing after it may be read */
        if (used == sizeof header - 1 || read_exactly(header + used, 1) != 0)
            goto bad;
        if (header[used] == '\n')
            break;
        if (header[used] < '0' || header[used] > '9')
            goto bad;
        used++;
    }
    header[used] = 0;
    unsigned long length = strtoul(header, NULL, 10);
    if (used == 0 || length == 0 || length > (1UL << 20))
        goto bad;
    char *data = malloc(length + 1);
    if (!data || read_exactly(data, length) != 0 || data[length - 1] != 0)
        goto bad;
    data[length] = 0;
    size_t fields = 0;
    for (size_t i = 0; i < length; i++)
        fields += data[i] == 0;
    char **field = calloc(fields + 1, sizeof *field);
    if (!field || fields < 4)
        goto bad;
    for (size_t i = 0, at = 0; i < fields; i++) {
        field[i] = data + at;
        at += strlen(data + at) + 1;
    }
    unsigned long count = strtoul(field[3], NULL, 10);
    if (count < 1 || count > fields - 4)
        goto bad;
    out->limits = field[0];
    out->directory = field[1];
    out->path = field[2];
    char **args = calloc(count + 1, sizeof *args);
    if (!args)
        goto bad;
    memcpy(args, field + 4, count * sizeof *args);
    out->argv = args;
    out->envp = field + 4 + count; /* (the list ends with the NULL calloc left) */
    return;
bad:
    fprintf(stderr, "gamed reaper: no start message on stdin\n");
    _exit(127);
}

int main(int argc, char **argv)
{
    close_the_rest();
    char **envp = NULL; /* the program's environment: ours, unless a start message gave one */
    int inside = argc == 2 && strcmp(argv[1], "--wait-exec") == 0;
    if (inside || (argc == 3 && strcmp(argv[1], "--wait") == 0)) {
        struct start_message m;
        read_start_message(&m);
        /* (inside bubblewrap no session of its own: it stays in bubblewrap's process group,
         * which the daemon signals) */
        if (start(m.limits, m.directory, !inside) != 0) {
            say("cannot change to", m.directory);
            _exit(127);
        }
        if (inside) {
            signal(SIGPIPE, SIG_DFL);
            signal(SIGXFSZ, SIG_DFL);
            execve(m.path, m.argv, m.envp);
            say("cannot execute", m.path);
            _exit(127);
        }
        /* as after --start: DAEMON_PID PATH ARGV... */
        size_t count = 0;
        while (m.argv[count])
            count++;
        char **args = calloc(count + 4, sizeof *args);
        if (!args)
            _exit(127);
        args[0] = argv[0];
        args[1] = argv[2];
        args[2] = m.path;
        memcpy(args + 3, m.argv, count * sizeof *args);
        argv = args;
        argc = (int)count + 3;
        envp = m.envp;
    }
    if (argc >= 6 && strcmp(argv[1], "--exec") == 0) {
        /* The launcher alone (bubblewrap is the program's parent, and its pid namespace's init
         * reaps): session, limits, umask, directory, SIGKILL as the death signal, then exec. */
        if (start(argv[2], argv[3], 1) != 0) {
            say("cannot change to", argv[3]);
            _exit(127);
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != (pid_t)atoi(argv[4]))
            _exit(1);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        execv(argv[5], argv + 6);
        say("cannot execute", argv[5]);
        _exit(127);
    }
    if (argc >= 4 && strcmp(argv[1], "--start") == 0) {
        if (start(argv[2], argv[3], 1) != 0) {
            say("cannot change to", argv[3]);
            _exit(127);
        }
        argv += 3;
        argc -= 3;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: gamed-reaper [--start LIMITS DIRECTORY] DAEMON_PID PATH ARGV...\n");
        return 2;
    }
    pid_t daemon = (pid_t)atoi(argv[1]);
    const char *path = argv[2];
    sigset_t ending, given;
    sigemptyset(&ending);
    sigaddset(&ending, SIGTERM);
    sigaddset(&ending, SIGHUP);
    sigaddset(&ending, SIGINT);
    sigaddset(&ending, SIGQUIT);
    sigprocmask(SIG_BLOCK, &ending, &given);
    signal(SIGCHLD, SIG_DFL);
    setpgid(0, 0); /* (fails harmlessly when it leads a session already) */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (getppid() != daemon) /* the daemon died before the death signal was set */
        _exit(1);
    pid_t reaper = getpid();
    pid_t program = fork();
    if (program < 0) {
        say("cannot fork", path);
        _exit(127);
    }
    if (program == 0) {
        sigprocmask(SIG_SETMASK, &given, NULL);
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != reaper)
            _exit(1);
        char line[32];
        int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
        if (write(1, line, (size_t)n) != n)
            _exit(1);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        if (envp)
            execve(path, argv + 3, envp);
        else
            execv(path, argv + 3);
        say("cannot execute", path);
        _exit(127);
    }
    close(0);
    close(1);
    int signals = signalfd(-1, &ending, SFD_CLOEXEC | SFD_NONBLOCK);
    int pidfd = (int)syscall(SYS_pidfd_open, program, 0);
    struct pollfd fds[2] = {{signals, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int every = pidfd >= 0 ? 1000 : 50; /* ms: orphans reaped at least this often */
    siginfo_t status;
    memset(&status, 0, sizeof status);
    int ended = 0;
    while (!reap_ended(program, &status)) {
        if (poll(fds, pidfd >= 0 ? 2 : 1, every) > 0 && (fds[0].revents & POLLIN)) {
            struct signalfd_siginfo info;
            while (read(signals, &info, sizeof info) == (ssize_t)sizeof info)
                ;
            if (!ended) {
                ended = 1;
                kill_descendants();
            }
        }
    }
    double until = now() + 2.0;
    for (;;) {
        size_t found = kill_descendants();
        siginfo_t ignored;
        reap_ended(-1, &ignored);
        if (found == 0 || now() >= until)
            break;
        usleep(2000);
    }
    if (status.si_code == CLD_EXITED)
        _exit(status.si_status);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no core file of the reaper's own */
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    int sig = status.si_status;
    signal(sig, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    sigprocmask(SIG_UNBLOCK, &just, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
}
