/* SPDX-License-Identifier: MIT */
/* test-engine-shards.c: the engine's shards (a ring per core): a job's inputs spread over every
 * shard (a job of fewer inputs to as many shards), result order kept where asked, a cancel reaching
 * streams mid-read on every shard, one shard on pread beside others on io_uring, the registered pool
 * split under an 8 MiB memlock limit; fds back where they were after each */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "test-helpers.h"
#include "test-engine-util.h"

#define SHARDS 3u

/* Sizes around the small slot, the pool slot and the mapping threshold, in turn. */
static const uint64_t sizes[] = { 0, 1, 4095, 4096, 65535, 65537, 300000, SLOT - 1, SLOT + 3, 3 * SLOT + 17 };

typedef struct Ordered {
        Collector c;
        size_t next;          /* the index the next result must have */
        bool out_of_order;
        unsigned per_shard[SHARDS];
} Ordered;

static void on_file_ordered(EngineJob *j, const EngineFileResult *r, void *userdata)
{
        Ordered *o = userdata;

        if (r->index != o->next)
                o->out_of_order = true;
        o->next = r->index + 1;
        if (r->shard < SHARDS)
                o->per_shard[r->shard]++;
        on_file(j, r, &o->c);
}

static void on_done_ordered(EngineJob *j, EngineJobResult result, void *userdata)
{
        on_done(j, result, &((Ordered *)userdata)->c);
}

static const EngineJobCallbacks ordered_callbacks = { .file_done = on_file_ordered, .job_done = on_done_ordered };

typedef struct Files {
        char *dir;
        char **paths;
        size_t n;
} Files;

static void files_make(Files *f, size_t n)
{
        f->dir = th_mkdtemp("engine-shards");
        f->n = n;
        f->paths = calloc(n, sizeof(char *));
        assert_non_null(f->paths);
        for (size_t i = 0; i < n; i++) {
                assert_true(asprintf(&f->paths[i], "%s/%04zu", f->dir, i) > 0);
                assert_int_equal(th_write_random_file(f->paths[i], sizes[i % ELEMENTSOF(sizes)], (uint32_t)i + 7), 0);
        }
}

static void files_free(Files *f)
{
        for (size_t i = 0; i < f->n; i++)
                free(f->paths[i]);
        free(f->paths);
        th_rm_rf(f->dir);
        free(f->dir);
}

/* The first PIPES inputs of an ordered job: pipes holding one byte each, kept open until every one
 * of them is being read. A shard holds at most 2 files at once here (max_open 2 per shard) and a
 * stream without EOF holds its slot, so all of them open only once every shard has taken 2: the
 * spread over all shards does not depend on how the threads get the two CPUs. */
#define PIPES (2 * SHARDS)

/* Every result against a one-shot hash of what its input held. */
static void assert_digests(const Collector *c, HashAlgo a, size_t pipes)
{
        uint8_t ref[HASH_DIGEST_MAX];
        size_t max = 3 * SLOT + 17;
        uint8_t *data = malloc(max);

        assert_non_null(data);
        for (size_t i = 0; i < c->n; i++) {
                if (c->results[i].status != ENGINE_FILE_OK)
                        fail_msg("input %zu: status %d error %d", i, c->results[i].status, c->results[i].error);
                if (i < pipes)
                        hash_oneshot(a, "x", 1, ref);
                else {
                        uint64_t size = sizes[(i - pipes) % ELEMENTSOF(sizes)];
                        th_fill_random(data, size, (uint32_t)(i - pipes) + 7);
                        hash_oneshot(a, data, size, ref);
                }
                assert_int_equal(c->results[i].digest_size, hash_algo_digest_size(a));
                assert_memory_equal(c->results[i].digest, ref, hash_algo_digest_size(a));
        }
        free(data);
}

/* Dispatches until j has hashed at least `bytes` (a minute at most). */
static void wait_bytes_done(Engine *e, EngineJob *j, uint64_t bytes)
{
        uint64_t end = now_usec() + 60 * 1000000ull;
        EngineJobProgress p;

        do {
                assert_true(now_usec() < end);
                (void)engine_run_once(e, 10000);
                engine_job_get_progress(j, &p);
        } while (p.bytes_done < bytes);
}

/* One ordered job over all shards: results come in input order although the shards finish them in
 * any order, every shard had some, and every digest is right. */
static void run_ordered(Engine *e, const Files *f, HashAlgo a)
{
        EngineJobOptions opts = { .ordered = true };
        EngineJob *j = NULL;
        Ordered o = {};
        int writers[PIPES];

        collector_init(&o.c, PIPES + f->n);
        assert_int_equal(engine_job_new(e, a, &opts, &j), 0);
        for (size_t i = 0; i < PIPES; i++) {
                int p[2];
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                assert_int_equal(write(p[1], "x", 1), 1);
                writers[i] = p[1];
                assert_int_equal(engine_job_add_fd(j, p[0]), (int)i);
        }
        for (size_t i = 0; i < f->n; i++)
                assert_int_equal(engine_job_add_path(j, f->paths[i]), (int)(PIPES + i));
        assert_int_equal(engine_job_start(j, &ordered_callbacks, &o), 0);

        wait_bytes_done(e, j, PIPES);
        for (size_t i = 0; i < PIPES; i++)
                assert_int_equal(close(writers[i]), 0);

        wait_job(e, &o.c, 120 * 1000000ull);
        assert_int_equal(o.c.job_result, ENGINE_JOB_DONE);
        assert_false(o.out_of_order);
        print_message("%s: inputs per shard %u %u %u\n", hash_algo_to_string(a), o.per_shard[0], o.per_shard[1],
                      o.per_shard[2]);
        for (unsigned s = 0; s < SHARDS; s++)
                assert_true(o.per_shard[s] >= 2);
        assert_digests(&o.c, a, PIPES);
        engine_job_unref(j);
        collector_done(&o.c);
}

static void test_spread_ordered(void **state)
{
        Files f;
        Engine *e = NULL;
        int fds = th_count_fds();

        files_make(&f, 240);
        /* Two files open per shard: the first shard to look cannot take them all. */
        assert_int_equal(engine_new(&(EngineConfig){ .workers = SHARDS, .max_open = 2 * SHARDS }, &e), 0);
        assert_int_equal(engine_get_workers(e), SHARDS);
        run_ordered(e, &f, HASH_SHA256);
        run_ordered(e, &f, HASH_BLAKE3);
        run_ordered(e, &f, HASH_XXH3);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds);
        files_free(&f);
}

/* Shard 1 runs on pread (as if its ring could not be made), the others on io_uring: the same job
 * spreads over all three and every digest is right. */
static void test_pread_shard(void **state)
{
        Files f;
        Engine *e = NULL;
        int fds = th_count_fds();

        files_make(&f, 120);
        assert_int_equal(engine_new(&(EngineConfig){ .workers = SHARDS, .max_open = 2 * SHARDS,
                                                      .test_pread_shards = 1u << 1 }, &e), 0);
        assert_int_equal(engine_get_shard_io_mode(e, 1), IO_MODE_PREAD);
        assert_int_equal(engine_get_shard_io_mode(e, SHARDS), -EINVAL);
        if (engine_get_shard_io_mode(e, 0) == IO_MODE_PREAD) {
                engine_free(e);
                files_free(&f);
                print_message("SKIP: no io_uring here, every shard is on pread\n");
                skip();
        }
        assert_int_equal(engine_get_shard_io_mode(e, 2), engine_get_shard_io_mode(e, 0));
        run_ordered(e, &f, HASH_SHA256);
        run_ordered(e, &f, HASH_BLAKE3);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds);
        files_free(&f);
}

/* One-input jobs each go to one shard (engine_job_start()), an idle one or the next in turn, and
 * fewer-input jobs to as many shards as they have inputs: 90 one-input and 30 two-input jobs started
 * at once, over every shard, every digest right. */
#define SMALL_JOBS 120

static void test_small_jobs(void **state)
{
        Files f;
        Engine *e = NULL;
        EngineJob *jobs[SMALL_JOBS];
        Collector c[SMALL_JOBS];
        unsigned per_shard[SHARDS] = {};
        int fds = th_count_fds();
        uint64_t end;

        files_make(&f, SMALL_JOBS + SMALL_JOBS / 4);
        assert_int_equal(engine_new(&(EngineConfig){ .workers = SHARDS }, &e), 0);
        for (size_t k = 0, in = 0; k < SMALL_JOBS; k++) {
                size_t n = k % 4 == 3 ? 2 : 1;

                collector_init(&c[k], n);
                assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &jobs[k]), 0);
                for (size_t i = 0; i < n; i++, in++) {
                        int fd = open(f.paths[in], O_RDONLY | O_CLOEXEC);
                        assert_true(fd >= 0);
                        assert_int_equal(engine_job_add_fd(jobs[k], fd), (int)i);
                }
                assert_int_equal(engine_job_start(jobs[k], &test_callbacks, &c[k]), 0);
        }
        end = now_usec() + 60 * 1000000ull;
        for (size_t k = 0, in = 0; k < SMALL_JOBS; k++) {
                while (!c[k].done) {
                        assert_true(now_usec() < end);
                        (void)engine_run_once(e, 10000);
                }
                assert_int_equal(c[k].job_result, ENGINE_JOB_DONE);
                for (size_t i = 0; i < c[k].n; i++, in++) {
                        assert_result_matches(&c[k].results[i], HASH_SHA256, f.paths[in]);
                        if (c[k].results[i].shard < SHARDS)
                                per_shard[c[k].results[i].shard]++;
                }
                engine_job_unref(jobs[k]);
                collector_done(&c[k]);
        }
        print_message("# files per shard %u %u %u\n", per_shard[0], per_shard[1], per_shard[2]);
        for (unsigned s = 0; s < SHARDS; s++)
                assert_true(per_shard[s] > 0);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds);
        files_free(&f);
}

/* The same jobs, the engine freed right after they start: each is let go once, whichever shards it
 * was queued to, and the fds of its inputs are closed (ASan: nothing leaks). */
static void test_small_jobs_free(void **state)
{
        Files f;
        Engine *e = NULL;
        EngineJob *jobs[SMALL_JOBS];
        int fds = th_count_fds();

        files_make(&f, SMALL_JOBS + SMALL_JOBS / 4);
        assert_int_equal(engine_new(&(EngineConfig){ .workers = SHARDS }, &e), 0);
        for (size_t k = 0, in = 0; k < SMALL_JOBS; k++) {
                size_t n = k % 4 == 3 ? 2 : 1;

                assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &jobs[k]), 0);
                for (size_t i = 0; i < n; i++, in++) {
                        int fd = open(f.paths[in], O_RDONLY | O_CLOEXEC);
                        assert_true(fd >= 0);
                        assert_int_equal(engine_job_add_fd(jobs[k], fd), (int)i);
                }
                assert_int_equal(engine_job_start(jobs[k], NULL, NULL), 0);
        }
        engine_free(e);
        for (size_t k = 0; k < SMALL_JOBS; k++)
                engine_job_unref(jobs[k]);
        assert_int_equal(th_count_fds(), fds);
        files_free(&f);
}

/* Two streams per shard, pipes that never reach EOF (their writers stay open), STREAM_BYTES in each:
 * once every pipe is drained and all its bytes hashed, a cancel ends all six mid-read (a read of each
 * waits for more), each on its shard, and every fd the engine took is closed. A shard holds two at
 * most (max_open 2 per shard), so all six are open only once each shard has taken two, whatever
 * order the threads get the two CPUs in. /dev/zero streams and a wait for 64 buffers per stream on
 * average (in all) left a stream of a shard that had not run yet cancelled before it opened, when
 * other test programs held both cores. */
#define STREAM_BYTES (64u << 10) /* a pipe's default size: written at once, never blocking */

static void test_cancel_every_shard(void **state)
{
        enum { N = 2 * SHARDS };
        static uint8_t data[STREAM_BYTES];
        Engine *e = NULL;
        EngineJob *j = NULL;
        Ordered o = {};
        int writers[N];
        int fds = th_count_fds();
        uint64_t end = now_usec() + 60 * 1000000ull;

        assert_int_equal(engine_new(&(EngineConfig){ .workers = SHARDS, .max_open = N }, &e), 0);
        collector_init(&o.c, N);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        memset(data, 'z', sizeof(data));
        for (unsigned i = 0; i < N; i++) {
                int p[2];
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                assert_int_equal(write(p[1], data, sizeof(data)), (ssize_t)sizeof(data));
                writers[i] = p[1];
                assert_int_equal(engine_job_add_fd(j, p[0]), (int)i);
        }
        assert_int_equal(engine_job_start(j, &ordered_callbacks, &o), 0);

        for (;;) {
                EngineJobProgress p;
                bool drained = true;

                assert_true(now_usec() < end);
                (void)engine_run_once(e, 10000);
                for (unsigned i = 0; i < N; i++) {
                        int queued = -1;
                        assert_int_equal(ioctl(writers[i], FIONREAD, &queued), 0);
                        drained = drained && queued == 0;
                }
                engine_job_get_progress(j, &p);
                if (drained && p.bytes_done >= (uint64_t)N * STREAM_BYTES)
                        break;
        }
        engine_job_cancel(j);
        wait_job(e, &o.c, 60 * 1000000ull);
        assert_int_equal(o.c.job_result, ENGINE_JOB_CANCELLED);
        for (unsigned i = 0; i < N; i++) {
                assert_int_equal(o.c.results[i].status, ENGINE_FILE_CANCELLED);
                assert_int_equal(o.c.results[i].size, STREAM_BYTES); /* mid-read, all it had read */
                assert_int_equal(close(writers[i]), 0);
        }
        print_message("streams per shard %u %u %u\n", o.per_shard[0], o.per_shard[1], o.per_shard[2]);
        for (unsigned s = 0; s < SHARDS; s++)
                assert_int_equal(o.per_shard[s], N / SHARDS);
        engine_job_unref(j);
        collector_done(&o.c);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds);
}

/* Without CAP_IPC_LOCK and under an 8 MiB memlock limit, two shards of 6.25 MiB each: one can
 * register its part of the pool, the other falls back to unregistered reads, and both hash right. */
static int child_memlock_split(void)
{
        unsigned registered = 0;
        Engine *e = NULL;
        Files f;
        Collector c;

        if (limit_memlock(8 << 20) < 0)
                return 77;
        if (engine_new(&(EngineConfig){ .workers = 2, .buffers = 12, .max_open = 8 }, &e) < 0)
                return 10;
        for (unsigned s = 0; s < 2; s++) {
                IoMode m = engine_get_shard_io_mode(e, s);
                fprintf(stderr, "shard %u: %s\n", s, io_mode_to_string(m));
                if (m == IO_MODE_PREAD) {
                        engine_free(e);
                        return 77; /* no io_uring: nothing to split */
                }
                registered += m == IO_MODE_URING_REGISTERED;
        }
        if (registered != 1)
                return 11;
        files_make(&f, 60);
        run_paths(e, NULL, f.paths, f.n, &c);
        assert_digests(&c, HASH_SHA256, 0);
        collector_done(&c);
        engine_free(e);
        files_free(&f);
        return 0;
}

static void test_memlock_split(void **state)
{
        run_child(child_memlock_split, "memlock split");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spread_ordered),
                cmocka_unit_test(test_pread_shard),
                cmocka_unit_test(test_small_jobs),
                cmocka_unit_test(test_small_jobs_free),
                cmocka_unit_test(test_cancel_every_shard),
                cmocka_unit_test(test_memlock_split),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
