/* SPDX-License-Identifier: MIT */
/* test-local-wake.c: the in-process path (a local client's run, as fhashctl --local and libfhash's
 * fallback take it) from engine start to engine end, many times over: no run waits for a lost wake-up */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "test-helpers.h"
#include "fhash/fhash.h"

/*
 * Every run makes an engine (its shards, their rings), hashes one 4 KiB file and frees the engine
 * (strategy "read": a run of a few small files in the page cache is otherwise hashed in the calling
 * thread, without an engine, test-local-quick.c):
 * the three hand-offs between the calling thread and the shards (start, the job's end, shutdown)
 * each happen once per run (a local client makes its engine for a run and frees it at the run's end).
 * A wake-up lost at any of them costs the run a shard's longest timed sleep (1 s at shutdown) or the
 * run's poll, so any run over RUN_LIMIT_USEC is one; a
 * normal run takes a few ms here. This is a correctness test, not a speed test: the limit is 20 to
 * 50 times a run under load, and it is the count of runs over it, not their time, that fails. A run
 * that stalls shows up as about 4 in 400 of fhashctl --local's (issue 26), so 2,000 runs see one
 * with near certainty when the race is there.
 */
#define RUNS 2000
#define RUN_LIMIT_USEC (200 * USEC_PER_MSEC)

typedef struct Result {
        size_t n;
        fhash_status status;
        char hex[65];
} Result;

static void result_fn(const fhash_result *r, void *userdata)
{
        Result *res = userdata;

        res->n++;
        res->status = r->status;
        snprintf(res->hex, sizeof(res->hex), "%s", r->digest ? r->digest : "");
}

static void test_local_no_lost_wakeup(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("local-wake"), *path = NULL, *want = NULL;
        uint64_t worst = 0, total = 0;
        unsigned slow = 0;
        fhash_client *c = NULL;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 4096, 26), 0);
        want = th_run_first_word("sha256sum '%s'", path);
        assert_non_null(want);
        assert_int_equal(fhash_client_new(&(fhash_client_options){ .flags = FHASH_CLIENT_LOCAL }, &c, NULL), 0);

        for (unsigned i = 0; i < RUNS; i++) {
                const char *paths[] = { path };
                Result res = {};
                uint64_t t0 = now_usec(), dt;

                assert_int_equal(fhash_hash_paths(c, paths, 1, &(fhash_hash_options){ .strategy = "read" },
                                                  result_fn, &res, NULL), 0);
                dt = now_usec() - t0;
                assert_int_equal(res.n, 1);
                assert_int_equal(res.status, FHASH_OK);
                assert_string_equal(res.hex, want);

                total += dt;
                worst = MAX(worst, dt);
                if (dt > RUN_LIMIT_USEC) {
                        slow++;
                        fprintf(stderr, "# run %u took %.3f s\n", i, (double)dt / USEC_PER_SEC);
                }
        }
        fprintf(stderr, "# %d runs: mean %.2f ms, worst %.3f s, %u over %.0f ms\n", RUNS,
                (double)total / RUNS / USEC_PER_MSEC, (double)worst / USEC_PER_SEC, slow,
                (double)RUN_LIMIT_USEC / USEC_PER_MSEC);
        fhash_client_free(c);
        th_rm_rf(dir);
        assert_int_equal(slow, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_local_no_lost_wakeup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
