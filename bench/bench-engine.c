/* SPDX-License-Identifier: MIT */
/* bench-engine.c: runs the in-process engine over a set of files and prints one result line per run */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "basic/macro.h"
#include "basic/time-util.h"

/*
 * Output, one line per run, for bench/run and for people:
 *
 *   files=N bytes=N wall_s=S cpu_user_s=S cpu_sys_s=S gbps=X files_per_s=X cpu_s_per_gb=X
 *   failed=N algo=A io_mode=M workers=N buffer_size=N buffers=N run=I
 *
 * GB is 10^9 bytes, as in `openssl speed`, so the ratios to it need no conversion. CPU time is the
 * getrusage(RUSAGE_SELF) delta around the job: every engine thread (ring, workers) and this one.
 */

typedef struct Paths {
        char **v;
        size_t n, allocated;
} Paths;

static void paths_done(Paths *p)
{
        for (size_t i = 0; i < p->n; i++)
                free(p->v[i]);
        free(p->v);
        *p = (Paths){};
}

static int paths_add(Paths *p, const char *s)
{
        if (p->n == p->allocated) {
                size_t a = p->allocated ? p->allocated * 2 : 64;
                char **v = realloc(p->v, a * sizeof(char *));
                if (!v)
                        return -ENOMEM;
                p->v = v;
                p->allocated = a;
        }
        p->v[p->n] = strdup(s);
        if (!p->v[p->n])
                return -ENOMEM;
        p->n++;
        return 0;
}

/* One path per line; empty lines are skipped, so a trailing newline or none both work. */
static int paths_read_list(Paths *p, const char *fn)
{
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        FILE *f;
        int r = 0;

        f = streq(fn, "-") ? stdin : fopen(fn, "re");
        if (!f)
                return negative_errno();
        for (;;) {
                ssize_t n = getline(&line, &allocated, f);
                if (n < 0) {
                        if (ferror(f))
                                r = -EIO;
                        break;
                }
                if (n > 0 && line[n - 1] == '\n')
                        line[--n] = 0;
                if (n == 0)
                        continue;
                r = paths_add(p, line);
                if (r < 0)
                        break;
        }
        if (f != stdin)
                fclose(f);
        return r;
}

/* Bytes with an optional K/M/G suffix (binary: 4K = 4096). */
static int parse_size(const char *s, uint64_t *ret)
{
        char *end;
        uint64_t v, mul = 1;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || s[0] == '-')
                return -EINVAL;
        switch (*end) {
        case 0:
                break;
        case 'k':
        case 'K':
                mul = UINT64_C(1) << 10;
                end++;
                break;
        case 'm':
        case 'M':
                mul = UINT64_C(1) << 20;
                end++;
                break;
        case 'g':
        case 'G':
                mul = UINT64_C(1) << 30;
                end++;
                break;
        default:
                return -EINVAL;
        }
        if (*end == 'i' || *end == 'B')
                end += (end[0] == 'i' && end[1] == 'B') ? 2 : 1;
        if (*end != 0 || v > UINT64_MAX / mul)
                return -EINVAL;
        *ret = v * mul;
        return 0;
}

static int parse_unsigned(const char *s, unsigned *ret)
{
        uint64_t v;
        int r = parse_size(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned)v;
        return 0;
}

typedef struct Run {
        size_t files_ok, files_failed;
        uint64_t bytes;
        bool done;
        bool print_digests;
        char **names;
        size_t n_names;
        int first_error;
        size_t by_strategy[_ENGINE_READ_MAX];
        size_t parallel;
} Run;

static void on_file_done(EngineJob *j, const EngineFileResult *res, void *userdata)
{
        Run *run = userdata;

        /* A benchmark of a wrong engine is worthless: count what it says, but never trust it. */
        if (res->index >= run->n_names) {
                run->files_failed++;
                if (run->first_error == 0) {
                        fprintf(stderr, "bench-engine: result for input %zu of %zu\n", res->index, run->n_names);
                        run->first_error = -ERANGE;
                }
                return;
        }
        if (res->status != ENGINE_FILE_OK) {
                run->files_failed++;
                if (run->first_error == 0) {
                        run->first_error = res->status == ENGINE_FILE_ERROR ? res->error : -ESTALE;
                        fprintf(stderr, "bench-engine: %s: %s\n", run->names[res->index],
                                res->status == ENGINE_FILE_ERROR   ? strerror(-res->error)
                                : res->status == ENGINE_FILE_CHANGED ? "changed while hashed"
                                                                     : "cancelled");
                }
                return;
        }
        run->files_ok++;
        run->bytes += res->size;
        if (res->strategy >= 0 && res->strategy < _ENGINE_READ_MAX)
                run->by_strategy[res->strategy]++;
        if (res->parallel)
                run->parallel++;
        if (run->print_digests) {
                char hex[HASH_HEX_MAX];
                hash_to_hex(res->digest, res->digest_size, hex);
                printf("%s  %s\n", hex, run->names[res->index]);
        }
}

static void on_job_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        Run *run = userdata;
        run->done = true;
}

static double tv_sec(const struct timeval *tv)
{
        return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Engine *, engine_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(EngineJob *, engine_job_unref);

static int run_once(Engine *e, HashAlgo algo, const EngineJobOptions *opts, Paths *paths, bool print_digests,
                    unsigned index)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = on_file_done,
                .job_done = on_job_done,
        };
        _cleanup_(engine_job_unrefp) EngineJob *job = NULL;
        Run run = { .print_digests = print_digests, .names = paths->v, .n_names = paths->n };
        struct rusage ru0, ru1;
        uint64_t t0, t1;
        double wall, user, sys, gb;
        int r;

        if (getrusage(RUSAGE_SELF, &ru0) < 0)
                return negative_errno();
        t0 = now_usec();

        r = engine_job_new(e, algo, opts, &job);
        if (r < 0)
                return r;
        for (size_t i = 0; i < paths->n; i++) {
                r = engine_job_add_path(job, paths->v[i]);
                if (r < 0)
                        return r;
        }
        r = engine_job_start(job, &callbacks, &run);
        if (r < 0)
                return r;
        while (!run.done) {
                r = engine_run_once(e, UINT64_MAX);
                if (r < 0)
                        return r;
        }

        t1 = now_usec();
        if (getrusage(RUSAGE_SELF, &ru1) < 0)
                return negative_errno();

        wall = (double)(t1 - t0) / 1e6;
        user = tv_sec(&ru1.ru_utime) - tv_sec(&ru0.ru_utime);
        sys = tv_sec(&ru1.ru_stime) - tv_sec(&ru0.ru_stime);
        gb = (double)run.bytes / 1e9;
        printf("files=%zu bytes=%" PRIu64 " wall_s=%.6f cpu_user_s=%.6f cpu_sys_s=%.6f gbps=%.4f "
               "files_per_s=%.1f cpu_s_per_gb=%.4f failed=%zu algo=%s io_mode=%s workers=%u "
               "buffer_size=%zu buffers=%u run=%u strategy=%s read=%zu mmap=%zu direct=%zu parallel=%zu open=%s\n",
               run.files_ok, run.bytes, wall, user, sys, wall > 0 ? gb / wall : 0.0,
               wall > 0 ? (double)run.files_ok / wall : 0.0, gb > 0 ? (user + sys) / gb : 0.0,
               run.files_failed, hash_algo_to_string(algo), io_mode_to_string(engine_get_io_mode(e)),
               engine_get_workers(e), engine_get_buffer_size(e), engine_get_buffers(e), index,
               engine_read_strategy_to_string(opts->strategy), run.by_strategy[ENGINE_READ_BUFFERED],
               run.by_strategy[ENGINE_READ_MMAP], run.by_strategy[ENGINE_READ_DIRECT], run.parallel,
               engine_open_mode_to_string(engine_get_open_mode(e)));
        fflush(stdout);

        return run.first_error < 0 ? run.first_error : 0;
}

static void help(void)
{
        printf("Usage: bench-engine [OPTIONS] [FILE...]\n"
               "Hashes FILEs (and the paths listed with --list) with the in-process engine and prints\n"
               "one line per run: files= bytes= wall_s= cpu_user_s= cpu_sys_s= gbps= files_per_s=\n"
               "cpu_s_per_gb= plus the configuration the engine actually used (GB = 10^9 bytes).\n\n"
               "  -a, --algorithm ALGO     %s (default sha256)\n"
               "  -w, --workers N          hashing threads (default: one per online CPU)\n"
               "  -b, --buffer-size BYTES  bytes per pool slot, K/M/G suffixes (default 1M)\n"
               "  -q, --buffers N          pool slots = reads and hashing in flight (queue depth)\n"
               "      --max-open N         files open at once\n"
               "      --direct-request BYTES  bytes per O_DIRECT read, in whole slots (default 4M; 1 slot = one per read)\n"
               "  -m, --io-mode MODE       auto, uring-registered, uring, pread (see engine.h)\n"
               "      --open-mode MODE     auto, linked, classic: how small path inputs are opened\n"
               "      --no-pin             do not pin workers to CPUs\n"
               "  -s, --strategy HOW       auto, read, mmap, direct: how files are read (default auto)\n"
               "      --dontcache          cache-neutral: add nothing to the page cache\n"
               "      --no-change-check    skip the stat after reading\n"
               "  -r, --repeat N           runs, one result line each (default 1)\n"
               "  -l, --list FILE          read paths from FILE, one per line ('-' = stdin)\n"
               "  -d, --digests            also print '<hex>  <path>' for every file (completion order)\n"
               "  -h, --help\n",
               hash_algo_list());
}

int main(int argc, char *argv[])
{
        enum {
                ARG_MAX_OPEN = 0x100,
                ARG_NO_PIN,
                ARG_DONTCACHE,
                ARG_NO_CHANGE_CHECK,
                ARG_DIRECT_REQUEST,
                ARG_OPEN_MODE,
        };
        static const struct option options[] = {
                { "algorithm", required_argument, NULL, 'a' },
                { "workers", required_argument, NULL, 'w' },
                { "buffer-size", required_argument, NULL, 'b' },
                { "buffers", required_argument, NULL, 'q' },
                { "max-open", required_argument, NULL, ARG_MAX_OPEN },
                { "direct-request", required_argument, NULL, ARG_DIRECT_REQUEST },
                { "io-mode", required_argument, NULL, 'm' },
                { "open-mode", required_argument, NULL, ARG_OPEN_MODE },
                { "no-pin", no_argument, NULL, ARG_NO_PIN },
                { "dontcache", no_argument, NULL, ARG_DONTCACHE },
                { "strategy", required_argument, NULL, 's' },
                { "no-change-check", no_argument, NULL, ARG_NO_CHANGE_CHECK },
                { "repeat", required_argument, NULL, 'r' },
                { "list", required_argument, NULL, 'l' },
                { "digests", no_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(paths_done) Paths paths = {};
        _cleanup_(engine_freep) Engine *e = NULL;
        EngineConfig config = { .io_mode = IO_MODE_AUTO };
        EngineJobOptions opts = {};
        HashAlgo algo = HASH_SHA256;
        unsigned repeat = 1;
        bool print_digests = false;
        uint64_t size;
        int c, r;

        while ((c = getopt_long(argc, argv, "a:w:b:q:m:s:r:l:dh", options, NULL)) >= 0) {
                switch (c) {
                case 'a':
                        algo = hash_algo_from_string(optarg);
                        if (algo < 0) {
                                fprintf(stderr, "bench-engine: unknown algorithm '%s' (valid: %s)\n", optarg,
                                        hash_algo_list());
                                return 2;
                        }
                        break;
                case 'w':
                        r = parse_unsigned(optarg, &config.workers);
                        if (r < 0)
                                goto bad_number;
                        break;
                case 'b':
                        r = parse_size(optarg, &size);
                        if (r < 0 || size > SIZE_MAX)
                                goto bad_number;
                        config.buffer_size = (size_t)size;
                        break;
                case 'q':
                        r = parse_unsigned(optarg, &config.buffers);
                        if (r < 0)
                                goto bad_number;
                        break;
                case ARG_DIRECT_REQUEST:
                        r = parse_size(optarg, &size);
                        if (r < 0 || size > SIZE_MAX)
                                goto bad_number;
                        config.direct_request = (size_t)size;
                        break;
                case ARG_MAX_OPEN:
                        r = parse_unsigned(optarg, &config.max_open);
                        if (r < 0)
                                goto bad_number;
                        break;
                case 'm':
                        config.io_mode = io_mode_from_string(optarg);
                        if (config.io_mode < 0) {
                                fprintf(stderr, "bench-engine: unknown io mode '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 's':
                        opts.strategy = engine_read_strategy_from_string(optarg);
                        if (opts.strategy < 0) {
                                fprintf(stderr, "bench-engine: unknown strategy '%s' (auto, read, mmap, direct)\n", optarg);
                                return 2;
                        }
                        break;
                case ARG_OPEN_MODE:
                        config.open_mode = engine_open_mode_from_string(optarg);
                        if (config.open_mode < 0) {
                                fprintf(stderr, "bench-engine: unknown open mode '%s' (auto, linked, classic)\n", optarg);
                                return 2;
                        }
                        break;
                case ARG_NO_PIN:
                        config.no_pin = true;
                        break;
                case ARG_DONTCACHE:
                        opts.dontcache = true;
                        break;
                case ARG_NO_CHANGE_CHECK:
                        opts.no_change_check = true;
                        break;
                case 'r':
                        r = parse_unsigned(optarg, &repeat);
                        if (r < 0 || repeat == 0)
                                goto bad_number;
                        break;
                case 'l':
                        r = paths_read_list(&paths, optarg);
                        if (r < 0) {
                                fprintf(stderr, "bench-engine: %s: %s\n", optarg, strerror(-r));
                                return 1;
                        }
                        break;
                case 'd':
                        print_digests = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return 2;
                }
                continue;
        bad_number:
                fprintf(stderr, "bench-engine: bad number '%s' for -%c\n", optarg, c < 0x100 ? c : '-');
                return 2;
        }
        for (int i = optind; i < argc; i++) {
                r = paths_add(&paths, argv[i]);
                if (r < 0) {
                        fprintf(stderr, "bench-engine: %s\n", strerror(-r));
                        return 1;
                }
        }
        if (paths.n == 0) {
                fprintf(stderr, "bench-engine: no files given (see --help)\n");
                return 2;
        }

        r = engine_new(&config, &e);
        if (r < 0) {
                fprintf(stderr, "bench-engine: cannot start the engine: %s\n", strerror(-r));
                return 1;
        }

        for (unsigned i = 0; i < repeat; i++) {
                r = run_once(e, algo, &opts, &paths, print_digests && i == 0, i);
                if (r < 0) {
                        fprintf(stderr, "bench-engine: run %u failed: %s\n", i, strerror(-r));
                        return 1;
                }
        }
        return 0;
}
