/* SPDX-License-Identifier: MIT */
/* libfhash-probe.c: libfhash's non-blocking API driven as an integrator's event loop drives it, with
 * what the loop sees measured: how long each call held it, how often an idle run woke it, how far a
 * cancelled run pulled its source, and the error a failed run or client gave. Only the public header.
 * Its scripts are tests/integration/test-client-loop.py and test-resume.py.
 *
 *   libfhash-probe fifo BUS|--local FIFO WRITER_FIRST DATA
 *   libfhash-probe cancel-source BUS|--local FILE N
 *   libfhash-probe idle BUS|--local SECONDS
 *   libfhash-probe connect BUS|--system
 *   libfhash-probe hash BUS|--local [--resume] [--no-direct] [--no-fallback] [--unordered] LISTFILE
 *   libfhash-probe concurrent BUS|--local LISTFILE
 *
 * BUS is a D-Bus address; --local hashes in-process. Each prints one line of "key=value" words (hash:
 * sha256sum's lines), exits 0, or 3 with "error=-errno name=NAME message=..." when the run failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fhash/fhash.h>

static uint64_t now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A client of where; flags apply to a bus (FHASH_CLIENT_NO_FALLBACK: nothing in-process). */
static int client(const char *where, unsigned flags, fhash_client **ret)
{
        fhash_client_options o = { .flags = flags };
        fhash_error e;

        if (strcmp(where, "--local") == 0)
                o.flags = FHASH_CLIENT_LOCAL;
        else if (strcmp(where, "--system") != 0) {
                o.bus = FHASH_BUS_ADDRESS;
                o.address = where;
        }
        if (fhash_client_new(&o, ret, &e) < 0) {
                printf("error=%d name=%s message=%s\n", e.error, e.name, e.message);
                return -1;
        }
        return 0;
}

/* The loop: poll the run's fd until its timeout, then fhash_run_process(). Counts the process calls
 * made while nothing happened (idle wake-ups) and the longest call. */
typedef struct Loop {
        uint64_t longest_usec;  /* the longest fhash_run_process() (or start) */
        unsigned calls;
        int r;
        fhash_error e;
} Loop;

static void loop_run(Loop *l, fhash_run *run, uint64_t for_usec)
{
        uint64_t end = for_usec ? now_usec() + for_usec : UINT64_MAX;

        for (;;) {
                uint64_t t0 = now_usec(), dt;

                l->r = fhash_run_process(run, &l->e);
                dt = now_usec() - t0;
                l->calls++;
                if (dt > l->longest_usec)
                        l->longest_usec = dt;
                if (l->r <= 0 || now_usec() >= end)
                        return;
                struct pollfd p = { .fd = fhash_run_get_fd(run), .events = (short)fhash_run_get_events(run) };
                uint64_t t = fhash_run_get_timeout(run), now = now_usec();
                uint64_t until = t < end ? t : end;

                (void)poll(&p, p.fd >= 0 ? 1 : 0, until == UINT64_MAX ? -1 : until <= now ? 0 : (int)((until - now + 999) / 1000));
        }
}

static void print_result(const fhash_result *r, void *userdata)
{
        char *digest = userdata;

        snprintf(digest, 129, "%s", r->digest ? r->digest : r->message ? r->message : "?");
}

/* The lines of a file, as paths. */
typedef struct List {
        char **paths;
        size_t n;
} List;

static void list_free(List *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->paths[i]);
        free(l->paths);
}

static int read_list(const char *listfile, List *ret)
{
        FILE *f = fopen(listfile, "re");
        List l = {};
        char *line = NULL;
        size_t cap = 0, len = 0;
        ssize_t k;

        if (!f)
                return -errno;
        while ((k = getline(&line, &len, f)) > 0) {
                char **p;

                if (line[k - 1] == '\n')
                        line[k - 1] = 0;
                if (l.n == cap) {
                        cap = cap ? 2 * cap : 1024;
                        p = realloc(l.paths, cap * sizeof(char *));
                        if (!p)
                                break;
                        l.paths = p;
                }
                l.paths[l.n] = strdup(line);
                if (!l.paths[l.n])
                        break;
                l.n++;
        }
        free(line);
        fclose(f);
        if (k > 0) {
                list_free(&l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

/* How late a late writer comes: well past what starting the engine or a bus round trip holds a loop
 * on a loaded machine (a few ms idle, up to ~400 ms measured with 10 processes on 2 cores). */
#define WRITER_LATE_USEC 1500000

/* A FIFO: its writer comes WRITER_LATE_USEC after the run starts, or waits in open() before it
 * (writer_first). No call may hold the loop while the FIFO has no writer; the digest is that of what
 * it wrote. */
static int probe_fifo(const char *where, const char *fifo, int writer_first, const char *data)
{
        char digest[129] = "";
        fhash_client *c = NULL;
        fhash_run *run = NULL;
        Loop l = {};
        uint64_t t0;
        pid_t pid;
        int status;

        if (client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0)
                return 3;
        pid = fork();
        if (pid == 0) {
                int fd;

                if (!writer_first)
                        usleep(WRITER_LATE_USEC);
                fd = open(fifo, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
                        _exit(1);
                close(fd);
                _exit(0);
        }
        if (writer_first)
                usleep(200000);  /* the writer waits in open() for a reader by now */
        t0 = now_usec();
        if (fhash_run_paths(c, &fifo, 1, NULL, print_result, digest, &run, &l.e) < 0) {
                printf("error=%d name=%s message=%s\n", l.e.error, l.e.name, l.e.message);
                return 3;
        }
        l.longest_usec = now_usec() - t0;
        loop_run(&l, run, 10 * 1000000);
        (void)waitpid(pid, &status, 0);
        printf("longest_ms=%.1f calls=%u r=%d writer=%d digest=%s\n", (double)l.longest_usec / 1000, l.calls, l.r,
               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), digest);
        fhash_run_free(run);
        fhash_client_free(c);
        return 0;
}

typedef struct Source {
        const char *path;
        size_t n, pulled, results;
        fhash_run *run;
} Source;

static int source_next(void *userdata, fhash_input *ret)
{
        Source *s = userdata;

        if (s->pulled >= s->n)
                return 0;
        s->pulled++;
        *ret = (fhash_input){ .path = s->path, .fd = -1 };
        return 1;
}

static void cancel_on_first(const fhash_result *r, void *userdata)
{
        Source *s = userdata;

        if (s->results++ == 0)
                (void)fhash_run_cancel(s->run);
}

/* A source of n inputs, cancelled at its first result: how many of the n the run pulled. */
static int probe_cancel_source(const char *where, const char *path, size_t n)
{
        Source s = { .path = path, .n = n };
        fhash_client *c = NULL;
        Loop l = {};
        uint64_t t0;

        if (client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0)
                return 3;
        if (fhash_run_source(c, source_next, &s, NULL, cancel_on_first, &s, &s.run, &l.e) < 0) {
                printf("error=%d name=%s message=%s\n", l.e.error, l.e.name, l.e.message);
                return 3;
        }
        t0 = now_usec();
        loop_run(&l, s.run, 0);
        printf("pulled=%zu results=%zu r=%d ms=%.0f\n", s.pulled, s.results, l.r, (double)(now_usec() - t0) / 1000);
        fhash_run_free(s.run);
        fhash_client_free(c);
        return 0;
}

/* A run on a pipe that gets no data: how often the loop is woken in `seconds` of nothing to do. */
static int probe_idle(const char *where, double seconds)
{
        char digest[129] = "";
        fhash_client *c = NULL;
        fhash_run *run = NULL;
        Loop l = {};
        int p[2];

        if (client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0 || pipe2(p, O_CLOEXEC) < 0)
                return 3;
        if (fhash_run_fds(c, &p[0], NULL, 1, NULL, print_result, digest, &run, &l.e) < 0) {
                printf("error=%d name=%s message=%s\n", l.e.error, l.e.name, l.e.message);
                return 3;
        }
        /* Settled first: the input handed over, the engine or fhashd waiting on the pipe. */
        loop_run(&l, run, 300000);
        l.calls = 0;
        loop_run(&l, run, (uint64_t)(seconds * 1e6));
        printf("wakeups=%u seconds=%.1f r=%d\n", l.calls, seconds, l.r);
        close(p[1]);
        loop_run(&l, run, 0);
        fhash_run_free(run);
        fhash_client_free(c);
        return 0;
}

static int probe_connect(const char *where)
{
        fhash_client *c = NULL;

        if (client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0)
                return 3;
        printf("connected daemon=%d\n", fhash_client_uses_daemon(c));
        fhash_client_free(c);
        return 0;
}

static void print_line(const fhash_result *r, void *userdata)
{
        if (r->digest)
                printf("%s  %s\n", r->digest, r->name);
        else
                printf("ERROR %s: %s\n", r->name, r->message);
}

/* The paths of listfile, one a line, hashed and printed as sha256sum prints them; the run's error on
 * stderr. */
static int probe_hash(const char *where, unsigned hash_flags, unsigned client_flags, const char *listfile)
{
        fhash_hash_options o = { .flags = hash_flags };
        fhash_client *c = NULL;
        fhash_run *run = NULL;
        Loop l = {};
        List list;

        if (read_list(listfile, &list) < 0 || client(where, client_flags, &c) < 0)
                return 3;
        if (fhash_run_paths(c, (const char *const *)list.paths, list.n, &o, print_line, NULL, &run, &l.e) < 0) {
                fprintf(stderr, "error=%d name=%s message=%s\n", l.e.error, l.e.name, l.e.message);
                return 3;
        }
        loop_run(&l, run, 0);
        fflush(stdout);
        if (l.r < 0)
                fprintf(stderr, "error=%d name=%s message=%s\n", l.e.error, l.e.name, l.e.message);
        fhash_run_free(run);
        fhash_client_free(c);
        list_free(&list);
        return l.r < 0 ? 3 : 0;
}

typedef struct Count {
        size_t n, ok;
} Count;

static void count_result(const fhash_result *r, void *userdata)
{
        Count *k = userdata;

        k->n++;
        k->ok += r->status == FHASH_OK;
}

/* The paths of listfile (all regular files) in two runs of one client at once, both driven by one
 * loop: each must give every file its result. */
static int probe_concurrent(const char *where, const char *listfile)
{
        fhash_client *c = NULL;
        fhash_run *run[2] = {};
        Count k[2] = {};
        fhash_error e;
        int r[2] = { 1, 1 };
        List list;

        if (read_list(listfile, &list) < 0 || client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0)
                return 3;
        for (int i = 0; i < 2; i++)
                if (fhash_run_paths(c, (const char *const *)list.paths, list.n, NULL, count_result, &k[i], &run[i],
                                    &e) < 0) {
                        printf("error=%d name=%s message=%s\n", e.error, e.name, e.message);
                        return 3;
                }
        while (r[0] > 0 || r[1] > 0) {
                struct pollfd p[2];
                uint64_t t = UINT64_MAX, now;

                for (int i = 0; i < 2; i++) {
                        if (r[i] > 0)
                                r[i] = fhash_run_process(run[i], &e);
                        p[i] = (struct pollfd){ .fd = r[i] > 0 ? fhash_run_get_fd(run[i]) : -1,
                                                .events = r[i] > 0 ? (short)fhash_run_get_events(run[i]) : 0 };
                        if (r[i] > 0 && fhash_run_get_timeout(run[i]) < t)
                                t = fhash_run_get_timeout(run[i]);
                }
                /* Both ended in this round: nothing is left to wait for. */
                if (r[0] <= 0 && r[1] <= 0)
                        break;
                now = now_usec();
                (void)poll(p, 2, t == UINT64_MAX ? -1 : t <= now ? 0 : (int)((t - now + 999) / 1000));
        }
        printf("r0=%d r1=%d n=%zu results0=%zu ok0=%zu results1=%zu ok1=%zu\n", r[0], r[1], list.n, k[0].n, k[0].ok,
               k[1].n, k[1].ok);
        for (int i = 0; i < 2; i++)
                fhash_run_free(run[i]);
        fhash_client_free(c);
        list_free(&list);
        return 0;
}

int main(int argc, char *argv[])
{
        signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOFBF, 1 << 16);
        if (argc == 6 && strcmp(argv[1], "fifo") == 0)
                return probe_fifo(argv[2], argv[3], atoi(argv[4]), argv[5]);
        if (argc == 5 && strcmp(argv[1], "cancel-source") == 0)
                return probe_cancel_source(argv[2], argv[3], strtoul(argv[4], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "idle") == 0)
                return probe_idle(argv[2], atof(argv[3]));
        if (argc == 3 && strcmp(argv[1], "connect") == 0)
                return probe_connect(argv[2]);
        if (argc == 4 && strcmp(argv[1], "concurrent") == 0)
                return probe_concurrent(argv[2], argv[3]);
        if (argc >= 4 && strcmp(argv[1], "hash") == 0) {
                unsigned hf = 0, cf = 0;

                for (int i = 3; i < argc - 1; i++)
                        if (strcmp(argv[i], "--resume") == 0)
                                hf |= FHASH_HASH_RESUME;
                        else if (strcmp(argv[i], "--no-direct") == 0)
                                cf |= FHASH_CLIENT_NO_DIRECT;
                        else if (strcmp(argv[i], "--no-fallback") == 0)
                                cf |= FHASH_CLIENT_NO_FALLBACK;
                        else if (strcmp(argv[i], "--unordered") == 0)
                                hf |= FHASH_HASH_UNORDERED;
                return probe_hash(argv[2], hf, cf, argv[argc - 1]);
        }
        fprintf(stderr, "usage: see the top of libfhash-probe.c\n");
        return 2;
}
