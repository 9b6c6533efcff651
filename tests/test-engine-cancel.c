/* SPDX-License-Identifier: MIT */
/* test-engine-cancel: cancel, unref and teardown with work in flight */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <grp.h>
#include <poll.h>
#include <unistd.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "io/ioring.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "io/pagecache.h"
#include "test-helpers.h"
#include "test-engine-util.h"


/* Cancel in the middle: a pipe that never ends, a large file and queued files. The job ends CANCELLED
 * promptly, every input gets a result, and every fd the job held is closed. */
static void test_cancel(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-cancel");
        _cleanup_free_ char *big = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, 65536, 4);
        EngineJob *j = NULL;
        Collector c;
        int p[2];
        int fds_before;
        uint64_t t0;

        assert_true(asprintf(&big, "%s/big", dir) > 0);
        assert_int_equal(th_write_random_file(big, 64u << 20, 3), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        fds_before = th_count_fds() - 1; /* the read end goes to the job */

        collector_init(&c, 102);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, NULL, &j), 0);
        assert_int_equal(engine_job_add_fd(j, p[0]), 0);
        assert_int_equal(engine_job_add_path(j, big), 1);
        for (int i = 0; i < 100; i++)
                assert_int_equal(engine_job_add_path(j, big), i + 2);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);

        /* Let it get going, then cancel. */
        t0 = now_usec();
        while (now_usec() - t0 < 100000)
                assert_true(engine_run_once(e, 20000) >= 0);
        EngineJobProgress pr;
        engine_job_get_progress(j, &pr);
        assert_true(pr.bytes_done > 0);

        t0 = now_usec();
        engine_job_cancel(j);
        wait_job(e, &c, 10 * 1000000ull);
        print_message("cancel took %" PRIu64 " us\n", now_usec() - t0);
        assert_true(now_usec() - t0 < 2000000);
        assert_int_equal(c.job_result, ENGINE_JOB_CANCELLED);
        assert_int_equal(c.results[0].status, ENGINE_FILE_CANCELLED);
        assert_int_equal(c.results[101].status, ENGINE_FILE_CANCELLED);

        engine_job_unref(j);
        collector_done(&c);
        assert_int_equal(th_count_fds(), fds_before);
        close(p[1]);
        engine_free(e);
        th_rm_rf(dir);
}

/* Dropping the last reference to a running job cancels it silently; the engine stays usable. */
static void test_unref_running(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-unref");
        _cleanup_free_ char *path = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *j = NULL;
        Collector c, c2;
        int p[2];

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 12345, 5), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        assert_int_equal(engine_job_add_fd(j, p[0]), 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        engine_job_unref(j);

        collector_init(&c2, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c2), 0);
        wait_job(e, &c2, 10 * 1000000ull);
        assert_result_matches(&c2.results[0], HASH_SHA256, path);
        engine_job_unref(j);

        /* The orphan's callbacks never fire. */
        for (int i = 0; i < 5; i++)
                assert_true(engine_run_once(e, 10000) >= 0);
        assert_false(c.done);
        assert_int_equal(c.n_seen, 0);

        close(p[1]);
        collector_done(&c);
        collector_done(&c2);
        engine_free(e);
        th_rm_rf(dir);
}


/* Many jobs at once from one consumer, then freeing the engine with jobs still running. */
static void test_concurrent_jobs_and_free(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-conc");
        _cleanup_free_ char *path = NULL;
        int fds_before = th_count_fds();
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *jobs[20];
        Collector c[20];

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 3 << 20, 8), 0);
        for (int i = 0; i < 20; i++) {
                collector_init(&c[i], 10);
                assert_int_equal(engine_job_new(e, (HashAlgo)(i % _HASH_ALGO_MAX), NULL, &jobs[i]), 0);
                for (int k = 0; k < 10; k++)
                        assert_true(engine_job_add_path(jobs[i], path) >= 0);
                assert_int_equal(engine_job_start(jobs[i], &test_callbacks, &c[i]), 0);
        }
        for (int i = 0; i < 10; i++) {
                wait_job(e, &c[i], 60 * 1000000ull);
                for (int k = 0; k < 10; k++)
                        assert_result_matches(&c[i].results[k], (HashAlgo)(i % _HASH_ALGO_MAX), path);
        }
        /* Jobs 10..19 may still run: engine_free() must cancel and release everything. */
        engine_free(e);
        for (int i = 0; i < 20; i++) {
                engine_job_unref(jobs[i]);
                collector_done(&c[i]);
        }
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(dir);
}

/* The daemon's shutdown: jobs finished in the engine whose JOB events were never delivered, and that
 * the caller no longer holds. engine_free() drops the events' references, which frees those jobs; it
 * must not touch them afterwards (fhashd crashed in engine_free() at SIGTERM; ASan names it). */
static void test_free_with_undelivered_events(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-undelivered");
        _cleanup_free_ char *path = NULL;
        int fds_before = th_count_fds();
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *jobs[8];
        Collector c[8];
        struct pollfd pfd;

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 4096, 9), 0);
        for (int i = 0; i < 8; i++) {
                collector_init(&c[i], 1);
                assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &jobs[i]), 0);
                assert_true(engine_job_add_path(jobs[i], path) >= 0);
                assert_int_equal(engine_job_start(jobs[i], &test_callbacks, &c[i]), 0);
        }
        /* Results are posted (the event fd is readable) but never dispatched. */
        pfd = (struct pollfd){ .fd = engine_get_fd(e), .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 30000), 1);
        usleep(200000);
        for (int i = 0; i < 8; i++)
                engine_job_unref(jobs[i]);
        engine_free(e);
        for (int i = 0; i < 8; i++)
                collector_done(&c[i]);
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_unref_running),
                cmocka_unit_test(test_concurrent_jobs_and_free),
                cmocka_unit_test(test_free_with_undelivered_events),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
