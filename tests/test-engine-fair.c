/* SPDX-License-Identifier: MIT */
/* test-engine-fair: share groups, stalls, cookies, ordered delivery and closes through the ring */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "io/ioring.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "test-helpers.h"
#include "test-engine-util.h"

#define USEC_PER_SEC UINT64_C(1000000)

/* Waits (dispatching) until the fd count is back at `want`: closes go through the ring, after the
 * result that let go of the fd may have been posted. */
static void assert_fds_back(Engine *e, int want)
{
        uint64_t end = now_usec() + 5 * USEC_PER_SEC;

        while (th_count_fds() != want && now_usec() < end)
                (void)engine_run_once(e, 10000);
        assert_int_equal(th_count_fds(), want);
}

static EngineJob *start_job(Engine *e, HashAlgo a, const EngineJobOptions *o, const EngineInput *in, size_t n,
                            Collector *c)
{
        EngineJob *j = NULL;

        collector_init(c, n);
        assert_int_equal(engine_job_new(e, a, o, &j), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(engine_job_add_input(j, &in[i]), (int)i);
        assert_int_equal(engine_job_start(j, &test_callbacks, c), 0);
        return j;
}

/*
 * Issue 13 H4: group 1 opens n_zero endless /dev/zero streams (max-size 2^64-1) and 64 pipes nobody
 * writes to, which alone take every open slot; then group 2 asks for a 4 KiB, a 2 MiB and a 3 MB
 * file. Group 2's three files must all be hashed within 2 s (generous for ASan and TSan; on an
 * engine without shares they never are: every slot stays with group 1). With 64 streams group 1
 * also holds every pool buffer: until the buffers were shared by kind and the read cursor moved on
 * past the files it served, group 2's 2 MiB file never got one.
 */
#define N_ZERO_MAX 64

static void check_fair_share(IoMode mode, size_t n_zero)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-fair");
        static const uint64_t sizes[] = { 4096, 2u << 20, 3000000 };
        EngineInput hog[N_ZERO_MAX + 64], small[ELEMENTSOF(sizes)];
        size_t n_hog = n_zero + 64;
        int writers[64];
        char *paths[ELEMENTSOF(sizes)];
        EngineJobOptions o1 = { .share_group = 1, .max_file_size = UINT64_MAX };
        EngineJobOptions o2 = { .share_group = 2 };
        Collector c1, c2;
        Engine *e = new_engine(mode, 0, 0);
        int fds_before = th_count_fds();
        EngineJob *j1, *j2;
        uint64_t t0;

        if (mode != IO_MODE_AUTO)
                assert_int_equal(engine_get_io_mode(e), mode);
        assert_true(n_zero <= N_ZERO_MAX);
        for (size_t i = 0; i < n_zero; i++) {
                hog[i] = (EngineInput){ .fd = open("/dev/zero", O_RDONLY | O_CLOEXEC), .cookie = i };
                assert_true(hog[i].fd >= 0);
        }
        for (size_t i = 0; i < 64; i++) {
                int p[2];
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                hog[n_zero + i] = (EngineInput){ .fd = p[0], .cookie = n_zero + i };
                writers[i] = p[1];
        }
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], sizes[i], (uint32_t)i + 7), 0);
                small[i] = (EngineInput){ .path = paths[i], .cookie = 100 + i };
        }

        j1 = start_job(e, HASH_SHA256, &o1, hog, n_hog, &c1);
        /* Let group 1 take everything it can. */
        t0 = now_usec();
        while (now_usec() < t0 + 300000)
                assert_true(engine_run_once(e, 10000) >= 0);
        assert_int_equal(c1.n_seen, 0);

        t0 = now_usec();
        j2 = start_job(e, HASH_SHA256, &o2, small, ELEMENTSOF(small), &c2);
        while (!c2.done && now_usec() < t0 + 2 * USEC_PER_SEC)
                assert_true(engine_run_once(e, 10000) >= 0);
        if (!c2.done)
                fail_msg("group 2's files not done after 2 s (%zu of 3) behind 64 silent pipes and %zu /dev/zero",
                         c2.n_seen, n_zero);
        print_message("group 2 done in %.3f s\n", (double)(now_usec() - t0) / 1e6);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_result_matches(&c2.results[i], HASH_SHA256, paths[i]);
                assert_int_equal(c2.results[i].cookie, 100 + i);
        }
        assert_false(c1.done);

        engine_job_cancel(j1);
        wait_job(e, &c1, 30 * USEC_PER_SEC);
        assert_int_equal(c1.job_result, ENGINE_JOB_CANCELLED);
        for (size_t i = 0; i < n_hog; i++) {
                assert_int_equal(c1.results[i].status, ENGINE_FILE_CANCELLED);
                assert_int_equal(c1.results[i].cookie, i);
        }
        for (size_t i = 0; i < 64; i++)
                safe_close(writers[i]);
        engine_job_unref(j1);
        engine_job_unref(j2);
        assert_fds_back(e, fds_before);
        collector_done(&c1);
        collector_done(&c2);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

static void test_fair_share(void **state)
{
        check_fair_share(IO_MODE_AUTO, 4);
}

static void test_fair_share_pread(void **state)
{
        check_fair_share(IO_MODE_PREAD, 4);
}

static void test_fair_share_many_streams(void **state)
{
        check_fair_share(IO_MODE_AUTO, 64);
}

/* Two jobs of one group: the second is not stuck behind the first's silent pipes either. */
static void test_fair_share_jobs(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-fair-jobs"), *path = NULL;
        EngineConfig cfg = { .max_open = 8 };
        EngineInput pipes[8], file;
        int writers[8];
        Collector c1, c2;
        Engine *e = NULL;
        EngineJob *j1, *j2;

        assert_int_equal(engine_new(&cfg, &e), 0);
        for (size_t i = 0; i < 8; i++) {
                int p[2];
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                pipes[i] = (EngineInput){ .fd = p[0] };
                writers[i] = p[1];
        }
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 100000, 1), 0);
        file = (EngineInput){ .path = path, .cookie = 42 };

        j1 = start_job(e, HASH_XXH3, &(EngineJobOptions){ .share_group = 5 }, pipes, 8, &c1);
        for (int i = 0; i < 10; i++)
                assert_true(engine_run_once(e, 10000) >= 0);
        j2 = start_job(e, HASH_XXH3, &(EngineJobOptions){ .share_group = 5 }, &file, 1, &c2);
        wait_job(e, &c2, 2 * USEC_PER_SEC);
        assert_result_matches(&c2.results[0], HASH_XXH3, path);
        assert_int_equal(c2.results[0].cookie, 42);

        for (size_t i = 0; i < 8; i++)
                safe_close(writers[i]); /* EOF: the pipes end with the digest of nothing */
        wait_job(e, &c1, 10 * USEC_PER_SEC);
        for (size_t i = 0; i < 8; i++)
                assert_int_equal(c1.results[i].status, ENGINE_FILE_OK);
        engine_job_unref(j1);
        engine_job_unref(j2);
        collector_done(&c1);
        collector_done(&c2);
        engine_free(e);
        th_rm_rf(dir);
}

/* Streams without progress end with -ETIMEDOUT and give their slots back: a pipe nobody writes to,
 * a FIFO by path nobody opens for writing (its open never returns), the same flagged untrusted; a
 * file behind them, with only 2 slots, still hashes. */
static void check_stalls(IoMode mode)
{
        /* (Not in IO_MODE_PREAD: there a FIFO's open blocks the engine's own thread.) */
        _cleanup_free_ char *dir = th_mkdtemp("engine-stall"), *fifo = NULL, *good = NULL;
        EngineConfig cfg = { .io_mode = mode, .max_open = 2, .stall_timeout_usec = 300000 };
        int fds_before, p[2];
        EngineInput in[4];
        Engine *e = NULL;
        EngineJob *j;
        Collector c;
        uint64_t t0;

        assert_int_equal(engine_new(&cfg, &e), 0);
        fds_before = th_count_fds();
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
        assert_true(asprintf(&good, "%s/good", dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(th_write_random_file(good, 70000, 3), 0);
        in[0] = (EngineInput){ .fd = p[0] };
        in[1] = (EngineInput){ .path = fifo };
        in[2] = (EngineInput){ .path = fifo, .flags = ENGINE_INPUT_UNTRUSTED_FS };
        in[3] = (EngineInput){ .path = good, .flags = ENGINE_INPUT_UNTRUSTED_FS };

        t0 = now_usec();
        j = start_job(e, HASH_SHA256, NULL, in, 4, &c);
        wait_job(e, &c, 10 * USEC_PER_SEC);
        print_message("stalled inputs ended after %.3f s\n", (double)(now_usec() - t0) / 1e6);
        assert_int_equal(c.job_result, ENGINE_JOB_DONE);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(c.results[i].status, ENGINE_FILE_ERROR);
                assert_int_equal(c.results[i].error, -ETIMEDOUT);
        }
        assert_result_matches(&c.results[3], HASH_SHA256, good);
        engine_job_unref(j);
        collector_done(&c);
        safe_close(p[1]);
        assert_fds_back(e, fds_before);
        engine_free(e);
        th_rm_rf(dir);
}

static void test_stall_timeout(void **state)
{
        check_stalls(IO_MODE_AUTO);
}

/* engine_job_add_input() cookies come back; add_path/add_fd's are the index; ordered delivery
 * gives input order although a large file first finishes last. */
typedef struct Sequence {
        size_t *order;
        uint64_t *cookies;
        size_t n;
        bool done;
} Sequence;

static void seq_file(EngineJob *j, const EngineFileResult *r, void *userdata)
{
        Sequence *s = userdata;

        assert_int_equal(r->status, ENGINE_FILE_OK);
        s->order[s->n] = r->index;
        s->cookies[s->n] = r->cookie;
        s->n++;
}

static void seq_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        ((Sequence *)userdata)->done = true;
}

static void test_cookies_ordered(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-ordered");
        const size_t n = 200;
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        char **paths = calloc(n, sizeof(char *));
        Sequence s = { .order = calloc(n, sizeof(size_t)), .cookies = calloc(n, sizeof(uint64_t)) };
        bool saw_out_of_order = false;

        for (int round = 0; round < 2; round++) {
                bool ordered = round == 1;
                EngineJob *j = NULL;

                s.n = 0;
                s.done = false;
                assert_int_equal(engine_job_new(e, HASH_SHA256, &(EngineJobOptions){ .ordered = ordered }, &j), 0);
                for (size_t i = 0; i < n; i++) {
                        if (round == 0) {
                                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                                /* The first file is large, the rest small: done first, posted last. */
                                assert_int_equal(th_write_random_file(paths[i], i == 0 ? 64u << 20 : 1000 + i, (uint32_t)i), 0);
                        }
                        if (i % 2)
                                assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                        else
                                assert_int_equal(engine_job_add_input(j, &(EngineInput){ .path = paths[i],
                                                                                         .cookie = 7000 + i }), (int)i);
                }
                assert_int_equal(engine_job_start(j, &(EngineJobCallbacks){ seq_file, seq_done }, &s), 0);
                while (!s.done)
                        assert_true(engine_run_once(e, 100000) >= 0);
                assert_int_equal(s.n, n);
                for (size_t k = 0; k < n; k++) {
                        size_t i = s.order[k];
                        assert_int_equal(s.cookies[k], i % 2 ? i : 7000 + i);
                        if (ordered)
                                assert_int_equal(i, k);
                        else if (i != k)
                                saw_out_of_order = true;
                }
                engine_job_unref(j);
        }
        /* Without the option the large first file came later: the option did something. */
        assert_true(saw_out_of_order);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        free(s.order);
        free(s.cookies);
        engine_free(e);
        th_rm_rf(dir);
}

/* fds of a job that never started, and of inputs a cancel left unopened, are closed by the engine
 * (through the ring), not leaked. */
static void test_unopened_fds_closed(void **state)
{
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        int fds_before = th_count_fds();
        EngineJob *j = NULL;
        Collector c;

        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        for (int i = 0; i < 10; i++)
                assert_true(engine_job_add_fd(j, open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
        engine_job_unref(j); /* never started */
        assert_fds_back(e, fds_before);

        /* Cancelled before the engine got to its inputs: 500 fds behind one slot. */
        engine_free(e);
        EngineConfig cfg = { .max_open = 1 };
        assert_int_equal(engine_new(&cfg, &e), 0);
        fds_before = th_count_fds();
        collector_init(&c, 500);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        for (int i = 0; i < 500; i++)
                assert_true(engine_job_add_fd(j, open("/dev/zero", O_RDONLY | O_CLOEXEC)) >= 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        engine_job_cancel(j);
        wait_job(e, &c, 10 * USEC_PER_SEC);
        assert_int_equal(c.job_result, ENGINE_JOB_CANCELLED);
        engine_job_unref(j);
        collector_done(&c);
        assert_fds_back(e, fds_before);
        engine_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fair_share),
                cmocka_unit_test(test_fair_share_pread),
                cmocka_unit_test(test_fair_share_many_streams),
                cmocka_unit_test(test_fair_share_jobs),
                cmocka_unit_test(test_stall_timeout),
                cmocka_unit_test(test_cookies_ordered),
                cmocka_unit_test(test_unopened_fds_closed),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
