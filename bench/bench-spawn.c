/* SPDX-License-Identifier: MIT */
/* bench-spawn: the whole cost of a process, A against B, one run of each in turn */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Usage: bench-spawn ROUNDS -- A ARG... -- B ARG...
 * Starts A, waits for it, starts B, waits for it, ROUNDS times, each with standard input, output and
 * error on /dev/null (a failure shows in the exit status), and prints one line: the median and mean wall time per process of each (µs), the
 * median of the per-pair ratios A/B and the ratio of the totals. In turn, so that a drift of the
 * machine's speed during the run weighs on both alike (bench/README.md: only ratios count); from C,
 * so that what starts them adds as little as it can to either. Exit 1 if any run fails.
 */

extern char **environ;

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_once(char **argv, posix_spawn_file_actions_t *fa, uint64_t *ret_ns)
{
        uint64_t start = now_ns();
        pid_t pid;
        int status, r;

        r = posix_spawn(&pid, argv[0], fa, NULL, argv, environ);
        if (r != 0) {
                fprintf(stderr, "bench-spawn: %s: %s\n", argv[0], strerror(r));
                return -r;
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        *ret_ns = now_ns() - start;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-spawn: %s exited with status %d\n", argv[0], status);
                return -EIO;
        }
        return 0;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char *argv[])
{
        posix_spawn_file_actions_t fa;
        char **a = NULL, **b = NULL;
        double *ta, *tb, *ratio, sum_a = 0, sum_b = 0;
        long rounds;

        if (argc < 6 || strcmp(argv[2], "--") != 0) {
                fprintf(stderr, "usage: bench-spawn ROUNDS -- A ARG... -- B ARG...\n");
                return 2;
        }
        rounds = strtol(argv[1], NULL, 10);
        a = argv + 3;
        for (int i = 3; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        argv[i] = NULL;
                        b = argv + i + 1;
                        break;
                }
        if (rounds <= 0 || !b || !b[0] || !a[0]) {
                fprintf(stderr, "usage: bench-spawn ROUNDS -- A ARG... -- B ARG...\n");
                return 2;
        }
        ta = calloc((size_t)rounds, sizeof(double));
        tb = calloc((size_t)rounds, sizeof(double));
        ratio = calloc((size_t)rounds, sizeof(double));
        if (!ta || !tb || !ratio)
                return 1;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        /* fhashctl hash says once that it hashes in-process where no fhashd answers. */
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);

        for (long i = 0; i < rounds; i++) {
                uint64_t na, nb;

                if (run_once(a, &fa, &na) < 0 || run_once(b, &fa, &nb) < 0)
                        return 1;
                ta[i] = (double)na / 1e3;
                tb[i] = (double)nb / 1e3;
                ratio[i] = ta[i] / tb[i];
                sum_a += ta[i];
                sum_b += tb[i];
        }
        printf("rounds=%ld a_mean_us=%.1f b_mean_us=%.1f total_ratio=%.4f ", rounds, sum_a / (double)rounds,
               sum_b / (double)rounds, sum_a / sum_b);
        printf("a_median_us=%.1f b_median_us=%.1f pair_ratio_median=%.4f\n", median(ta, (size_t)rounds),
               median(tb, (size_t)rounds), median(ratio, (size_t)rounds));
        posix_spawn_file_actions_destroy(&fa);
        free(ta);
        free(tb);
        free(ratio);
        return 0;
}
