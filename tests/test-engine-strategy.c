/* SPDX-License-Identifier: MIT */
/* test-engine-strategy: mapped, direct and buffered reads, spans, cache-neutral reads */
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
#include <unistd.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "io/ioring.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "io/pagecache.h"
#include "test-helpers.h"
#include "test-engine-util.h"

/* Every algorithm, every edge size, each strategy forced: the digests never depend on how the bytes
 * were read. */
static void test_strategies_digests(void **state)
{
        static const EngineReadStrategy strategies[] = { ENGINE_READ_BUFFERED, ENGINE_READ_MMAP, ENGINE_READ_DIRECT };
        _cleanup_free_ char *dir = th_mkdtemp("engine-strategy");
        char *paths[ELEMENTSOF(edge_sizes)];
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        bool direct = dir_has_direct(dir);

        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/size-%" PRIu64, dir, edge_sizes[i]) > 0);
                assert_int_equal(th_write_random_file(paths[i], edge_sizes[i], (uint32_t)i + 11), 0);
        }
        for (size_t k = 0; k < ELEMENTSOF(strategies); k++) {
                EngineJobOptions o = { .strategy = strategies[k] };
                EngineReadStrategy expect = strategies[k];

                if (expect == ENGINE_READ_DIRECT && !direct) {
                        print_message("note: %s has no O_DIRECT: DIRECT falls back to buffered reads\n", dir);
                        expect = ENGINE_READ_BUFFERED;
                }
                check_paths_all_algos_opts(e, paths, ELEMENTSOF(edge_sizes), &o, expect);
        }
        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

/* Spanning O_DIRECT reads: 16 slots of 64 KiB and 256 KiB per request, so one read fills 4 adjacent
 * slots. Sizes on both sides of slot and request boundaries and not multiples of 4 KiB (the last read
 * asks past the end), every algorithm (BLAKE3 in pieces on two workers), forced DIRECT. */
#define SPAN_SLOT ((uint64_t)64 << 10)
#define SPAN_REQ ((uint64_t)256 << 10)

static const uint64_t span_sizes[] = {
        1,
        4097,
        SPAN_SLOT - 1,
        SPAN_SLOT + 1,
        SPAN_REQ - 1,
        SPAN_REQ,
        SPAN_REQ + 1,
        2 * SPAN_REQ - 1,
        2 * SPAN_REQ + 1,
        3 * SPAN_REQ + SPAN_SLOT + 17,
        5 * SPAN_REQ + 3 * 4096,
        40 * SPAN_REQ + 513,
};

static Engine *new_span_engine(IoMode mode, bool einval)
{
        Engine *e = NULL;
        /* 16 slots per shard. */
        EngineConfig cfg = { .io_mode = mode, .buffer_size = SPAN_SLOT, .buffers = 32, .workers = 2,
                             .direct_request = SPAN_REQ, .test_direct_einval = einval };

        assert_int_equal(engine_new(&cfg, &e), 0);
        if (mode != IO_MODE_AUTO)
                assert_int_equal(engine_get_io_mode(e), mode);
        assert_int_equal(engine_get_direct_span(e), SPAN_REQ / SPAN_SLOT);
        return e;
}

static void check_span_sizes(IoMode mode, bool einval)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-span");
        char *paths[ELEMENTSOF(span_sizes)];
        EngineJobOptions o = { .strategy = ENGINE_READ_DIRECT };
        Engine *e;

        if (!dir_has_direct(dir)) {
                th_rm_rf(dir);
                skip(); /* the reads would be buffered: nothing here would be tested */
        }
        e = new_span_engine(mode, einval);
        for (size_t i = 0; i < ELEMENTSOF(span_sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/size-%" PRIu64, dir, span_sizes[i]) > 0);
                assert_int_equal(th_write_random_file(paths[i], span_sizes[i], (uint32_t)i + 101), 0);
        }
        /* Refused O_DIRECT reads finish through the page cache, and say so. */
        check_paths_all_algos_opts(e, paths, ELEMENTSOF(span_sizes), &o,
                                   einval ? ENGINE_READ_BUFFERED : ENGINE_READ_DIRECT);
        for (size_t i = 0; i < ELEMENTSOF(span_sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

static void test_span_registered(void **state)
{
        check_span_sizes(IO_MODE_AUTO, false);
}

static void test_span_unregistered(void **state)
{
        check_span_sizes(IO_MODE_URING, false);
}

static void test_span_pread(void **state)
{
        check_span_sizes(IO_MODE_PREAD, false);
}

/* Every O_DIRECT read refused with EINVAL (several are in flight when the first comes back): the
 * files finish buffered with the right digests. */
static void test_span_einval_fallback(void **state)
{
        check_span_sizes(IO_MODE_AUTO, true);
}

/* A pool of 1 slot per request: the span is off, reads as before. And the default: 4 MiB requests,
 * never more than a quarter of the pool. */
static void test_span_config(void **state)
{
        Engine *e = NULL;

        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SPAN_SLOT, .buffers = 16, .workers = 1,
                                                      .direct_request = SPAN_SLOT }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 1);
        engine_free(e);
        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SPAN_SLOT, .buffers = 64, .workers = 1 }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 16);
        engine_free(e);
        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SLOT, .buffers = 16, .workers = 1 }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 4);
        engine_free(e);
        /* Each shard has its part of the pool: a quarter of that. */
        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SPAN_SLOT, .buffers = 64, .workers = 2 }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 8);
        engine_free(e);
}

/* AUTO maps a file that is entirely cached, reads a cold one with O_DIRECT, a small one through the
 * page cache, and a caller's fd through a description of the engine's own (the caller's is never
 * changed). */
static void test_strategy_auto_choice(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-auto");
        _cleanup_free_ char *big = NULL, *small = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        EngineFileResult r;

        if (!have_cachestat()) {
                engine_free(e);
                th_rm_rf(dir);
                skip(); /* AUTO cannot see the page cache before 6.5: everything is read buffered */
        }
        assert_true(asprintf(&big, "%s/big", dir) > 0);
        assert_true(asprintf(&small, "%s/small", dir) > 0);
        assert_int_equal(th_write_random_file(big, 24u << 20, 77), 0);
        assert_int_equal(th_write_random_file(small, 100u << 10, 78), 0);

        file_make_cached(big, 0, 24u << 20);
        /* The two ways of asking (cachestat, and mincore for systems whose seccomp filter predates
         * cachestat) agree: all cached, then (below) none. */
        {
                _cleanup_close_ int fd = open(big, O_RDONLY | O_CLOEXEC);
                PageCacheState a, b;
                assert_true(fd >= 0);
                assert_int_equal(pagecache_probe(fd, 24u << 20, &a), 0);
                assert_int_equal(pagecache_probe_mincore(fd, 24u << 20, &b), 0);
                assert_int_equal(a.pages, 6144);
                assert_int_equal(a.cached, 6144);
                assert_int_equal(b.pages, 6144);
                assert_int_equal(b.cached, 6144);
                file_make_cold(big);
                assert_int_equal(pagecache_probe(fd, 24u << 20, &a), 0);
                assert_int_equal(pagecache_probe_mincore(fd, 24u << 20, &b), 0);
                assert_true(a.cached < 64);
                assert_true(b.cached < 64);
                file_make_cached(big, 0, 24u << 20);
        }
        /* Locked in the page cache for the two: CI's ASan build once found it partly evicted by the
         * second (the machine's DAMON pageout takes folios on its own) and read it buffered. */
        void *pin = file_pin_cached(big, 24u << 20);
        r = hash_one(e, HASH_SHA256, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, ENGINE_READ_MMAP);

        /* XXH3 too: its shard would make the copy itself (see file_choose_strategy()). */
        r = hash_one(e, HASH_XXH3, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_XXH3, big);
        assert_int_equal(r.strategy, ENGINE_READ_MMAP);
        file_unpin(pin, 24u << 20);

        file_make_cold(big);
        r = hash_one(e, HASH_SHA256, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, dir_has_direct(dir) ? ENGINE_READ_DIRECT : ENGINE_READ_BUFFERED);

        /* A caller's fd, cold: reopened as the engine's own description for O_DIRECT; the caller's
         * (seen through a dup of what it passed) keeps its flags and offset. */
        {
                _cleanup_close_ int mine = open(big, O_RDONLY | O_CLOEXEC);
                assert_true(mine >= 0);
                int flags = fcntl(mine, F_GETFL);
                file_make_cold(big);
                r = hash_one(e, HASH_SHA256, big, fcntl(mine, F_DUPFD_CLOEXEC, 3), NULL);
                assert_result_matches(&r, HASH_SHA256, big);
                assert_int_equal(r.strategy, dir_has_direct(dir) ? ENGINE_READ_DIRECT : ENGINE_READ_BUFFERED);
                assert_int_equal(fcntl(mine, F_GETFL), flags);
                assert_int_equal(lseek(mine, 0, SEEK_CUR), 0);
        }
        /* A write-only fd is never turned into a readable one: its reads fail as before. */
        {
                file_make_cold(big);
                r = hash_one(e, HASH_SHA256, big, open(big, O_WRONLY | O_CLOEXEC), NULL);
                assert_int_equal(r.status, ENGINE_FILE_ERROR);
                assert_int_equal(r.error, -EBADF);
                assert_int_equal(r.digest_size, 0);
        }

        file_make_cached(small, 0, 100u << 10);
        r = hash_one(e, HASH_SHA256, small, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, small);
        assert_int_equal(r.strategy, ENGINE_READ_BUFFERED);

        engine_free(e);
        th_rm_rf(dir);
}

/* Cache-neutral: a cold file leaves (almost) nothing cached, by path (O_DIRECT) and by fd
 * (RWF_DONTCACHE); what was cached before stays cached. */
static void test_dontcache(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-dontcache");
        _cleanup_free_ char *path = NULL;
        const uint64_t size = 32u << 20;
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        EngineJobOptions o = { .dontcache = true };
        EngineFileResult r;
        PageCacheState before, after;
        _cleanup_free_ char *ref = NULL;

        if (!have_cachestat()) {
                engine_free(e);
                th_rm_rf(dir);
                skip(); /* no way to see what is cached */
        }
        assert_true(asprintf(&path, "%s/file", dir) > 0);
        assert_int_equal(th_write_random_file(path, size, 91), 0);
        /* The reference tool reads through the page cache: ask it once, before any measurement. */
        ref = reference_digest(HASH_SHA256, path);
        assert_non_null(ref);

        /* By path, cold. */
        file_make_cold(path);
        r = hash_one(e, HASH_SHA256, path, -EBADF, &o);
        assert_digest_hex(&r, ref);
        after = file_cache_state(path);
        if (after.cached > after.pages / 100)
                fail_msg("by path: %" PRIu64 " of %" PRIu64 " pages cached after a cache-neutral read (%s)",
                         after.cached, after.pages, engine_read_strategy_to_string(r.strategy));

        /* By fd, cold: O_DIRECT through a description of the engine's own, or RWF_DONTCACHE reads
         * where the file system has no O_DIRECT (6.14+; older kernels have no way to do this for an fd). */
        file_make_cold(path);
        r = hash_one(e, HASH_SHA256, path, open(path, O_RDONLY | O_CLOEXEC), &o);
        assert_digest_hex(&r, ref);
        assert_int_equal(r.strategy, dir_has_direct(dir) ? ENGINE_READ_DIRECT : ENGINE_READ_BUFFERED);
        after = file_cache_state(path);
        if (after.cached > after.pages / 100) {
                struct utsname u;
                assert_int_equal(uname(&u), 0);
                print_message("note: kernel %s: %" PRIu64 " of %" PRIu64 " pages cached after RWF_DONTCACHE "
                              "reads of an fd\n", u.release, after.cached, after.pages);
                /* 6.14 and later must honour it. */
                unsigned maj = 0, min = 0;
                if (sscanf(u.release, "%u.%u", &maj, &min) == 2 && (maj > 6 || (maj == 6 && min >= 14)))
                        fail_msg("RWF_DONTCACHE left pages cached on %s", u.release);
        }

        /* Half cached before: those pages stay, and not many more are added. */
        file_make_cold(path);
        file_make_cached(path, 0, size / 2);
        before = file_cache_state(path);
        r = hash_one(e, HASH_SHA256, path, -EBADF, &o);
        assert_digest_hex(&r, ref);
        after = file_cache_state(path);
        if (after.cached < before.cached || after.cached > before.cached + after.pages / 100)
                fail_msg("half cached: %" PRIu64 " pages before, %" PRIu64 " after (of %" PRIu64 ", %s)",
                         before.cached, after.cached, after.pages, engine_read_strategy_to_string(r.strategy));

        /* And an ordinary buffered read of a cold file does cache it (the test can tell the
         * difference). */
        file_make_cold(path);
        r = hash_one(e, HASH_SHA256, path, -EBADF, &(EngineJobOptions){ .strategy = ENGINE_READ_BUFFERED });
        assert_digest_hex(&r, ref);
        after = file_cache_state(path);
        assert_true(after.cached > after.pages / 2);

        engine_free(e);
        th_rm_rf(dir);
}

/* Mapped files get larger windows as they grow (fewer hand-offs): a file of 96 MiB + 5 is hashed in
 * 2 MiB windows, one of 288 MiB + 1023 in 8 MiB ones; BLAKE3 cuts them into pieces of that size. */
static void test_mmap_windows(void **state)
{
        static const uint64_t sizes[] = { (96u << 20) + 5, (288u << 20) + 1023 };
        static const HashAlgo algos[] = { HASH_BLAKE3, HASH_SHA256, HASH_XXH3, HASH_FSVERITY };
        _cleanup_free_ char *dir = th_mkdtemp("engine-windows");
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        EngineJobOptions o = { .strategy = ENGINE_READ_MMAP };

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ char *path = NULL;

                assert_true(asprintf(&path, "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(path, sizes[i], (uint32_t)(40 + i)), 0);
                for (size_t k = 0; k < ELEMENTSOF(algos); k++) {
                        EngineFileResult r = hash_one(e, algos[k], path, -EBADF, &o);
                        assert_result_matches(&r, algos[k], path);
                        assert_int_equal(r.strategy, ENGINE_READ_MMAP);
                        assert_int_equal(r.parallel, (algos[k] == HASH_BLAKE3 || algos[k] == HASH_FSVERITY) &&
                                                             engine_get_workers(e) > 1);
                }
                (void)unlink(path);
        }
        engine_free(e);
        th_rm_rf(dir);
}

/* fs-verity with other block sizes and SHA-512, each strategy: the file's block hashes come from
 * pieces on every worker, as `fsverity digest --block-size` computes them on one. */
static void test_fsverity_params(void **state)
{
        static const EngineReadStrategy strategies[] = { ENGINE_READ_BUFFERED, ENGINE_READ_MMAP, ENGINE_READ_DIRECT };
        static const struct {
                HashAlgo algo;
                uint32_t block_size;
                const char *hash;
        } cases[] = { { HASH_FSVERITY, 1024, "sha256" }, { HASH_FSVERITY_SHA512, 65536, "sha512" },
                      { HASH_FSVERITY_SHA512, 4096, "sha512" } };
        _cleanup_free_ char *dir = th_mkdtemp("engine-fsverity");
        _cleanup_free_ char *path = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);

        if (!th_have_program("fsverity"))
                skip();
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, (5u << 20) + 3, 77), 0);
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                HashParams p = { .block_size = cases[c].block_size };
                _cleanup_free_ char *ref = th_run_first_word("fsverity digest --compact --block-size=%u "
                                                             "--hash-alg=%s '%s'",
                                                             cases[c].block_size, cases[c].hash, path);

                assert_non_null(ref);
                for (size_t k = 0; k < ELEMENTSOF(strategies); k++) {
                        EngineJobOptions o = { .strategy = strategies[k], .params = &p };
                        EngineFileResult r = hash_one(e, cases[c].algo, path, -EBADF, &o);

                        assert_digest_hex(&r, ref);
                        assert_int_equal(r.parallel, engine_get_workers(e) > 1);
                }
        }
        engine_free(e);
        th_rm_rf(dir);
}

typedef struct Truncator {
        const char *path;
        Engine *engine;
        EngineJob *job;
        _Atomic bool done;
} Truncator;

static void *truncator(void *arg)
{
        Truncator *t = arg;
        EngineJobProgress p;

        /* Once hashing is under way, cut the file: the rest of the mapping is gone. */
        do {
                usleep(1000);
                engine_job_get_progress(t->job, &p);
        } while (p.bytes_done == 0 && !atomic_load(&t->done));
        assert_int_equal(truncate(t->path, 4096), 0);
        return NULL;
}

/* A mapped file truncated while it is hashed: SIGBUS is caught, the file is CHANGED, the process
 * and other files live on. */
static void test_mmap_truncated(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-trunc");
        _cleanup_free_ char *path = NULL, *other = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, 256u << 10, 4);
        EngineJobOptions o = { .strategy = ENGINE_READ_MMAP };
        EngineJob *j = NULL;
        Truncator t = {};
        pthread_t th;
        Collector c;

        assert_true(asprintf(&path, "%s/victim", dir) > 0);
        assert_true(asprintf(&other, "%s/other", dir) > 0);
        assert_int_equal(th_write_random_file(path, 256u << 20, 5), 0);
        assert_int_equal(th_write_random_file(other, 8u << 20, 6), 0);

        collector_init(&c, 2);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, &o, &j), 0);
        assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_add_path(j, other), 1);
        t = (Truncator){ .path = path, .engine = e, .job = j };
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        assert_int_equal(pthread_create(&th, NULL, truncator, &t), 0);
        wait_job(e, &c, 120 * 1000000ull);
        atomic_store(&t.done, true);
        pthread_join(th, NULL);

        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
        assert_int_equal(c.results[0].digest_size, 0);
        assert_int_equal(c.results[0].strategy, ENGINE_READ_MMAP);
        assert_result_matches(&c.results[1], HASH_SHA3_256, other);

        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        th_rm_rf(dir);
}

/* Cancel while spanning O_DIRECT reads are in flight: every input ends CANCELLED, every fd and slot
 * comes back (the same engine then hashes the file right). */
static void test_span_cancel(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-span-cancel");
        _cleanup_free_ char *big = NULL;
        EngineJobOptions o = { .strategy = ENGINE_READ_DIRECT };
        EngineJob *j = NULL;
        EngineJobProgress pr;
        Collector c;
        int fds_before;
        Engine *e;

        if (!dir_has_direct(dir)) {
                th_rm_rf(dir);
                skip();
        }
        e = new_span_engine(IO_MODE_AUTO, false);
        assert_true(asprintf(&big, "%s/big", dir) > 0);
        assert_int_equal(th_write_random_file(big, 64u << 20, 5), 0);
        fds_before = th_count_fds();

        collector_init(&c, 10);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, &o, &j), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(engine_job_add_path(j, big), i);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        do {
                assert_true(engine_run_once(e, 1000) >= 0);
                engine_job_get_progress(j, &pr);
        } while (pr.bytes_done == 0 && !c.done);
        engine_job_cancel(j);
        wait_job(e, &c, 10 * 1000000ull);
        assert_int_equal(c.job_result, ENGINE_JOB_CANCELLED);
        for (int i = 0; i < 10; i++)
                assert_int_equal(c.results[i].status, ENGINE_FILE_CANCELLED);
        engine_job_unref(j);
        collector_done(&c);
        assert_int_equal(th_count_fds(), fds_before);

        EngineFileResult r = hash_one(e, HASH_SHA256, big, -EBADF, &o);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, ENGINE_READ_DIRECT);
        engine_free(e);
        th_rm_rf(dir);
}

/* A file truncated while spanning O_DIRECT reads are in flight is CHANGED, never given a digest. */
static void test_span_truncated(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-span-trunc");
        _cleanup_free_ char *path = NULL;
        EngineJobOptions o = { .strategy = ENGINE_READ_DIRECT };
        EngineJob *j = NULL;
        EngineJobProgress pr;
        Collector c;
        Engine *e;

        if (!dir_has_direct(dir)) {
                th_rm_rf(dir);
                skip();
        }
        e = new_span_engine(IO_MODE_AUTO, false);
        assert_true(asprintf(&path, "%s/shrinking", dir) > 0);
        assert_int_equal(th_write_random_file(path, 256u << 20, 6), 0);

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, &o, &j), 0);
        assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        do {
                assert_true(engine_run_once(e, 1000) >= 0);
                engine_job_get_progress(j, &pr);
        } while (pr.bytes_done == 0 && !c.done);
        /* Not on a request boundary, not aligned: the reads past it come back short, then empty. */
        assert_int_equal(truncate(path, (off_t)(3 * SPAN_REQ + 4097)), 0);
        wait_job(e, &c, 120 * 1000000ull);
        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
        assert_int_equal(c.results[0].digest_size, 0);
        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strategies_digests),
                cmocka_unit_test(test_strategy_auto_choice),
                cmocka_unit_test(test_dontcache),
                cmocka_unit_test(test_mmap_truncated),
                cmocka_unit_test(test_mmap_windows),
                cmocka_unit_test(test_fsverity_params),
                cmocka_unit_test(test_span_config),
                cmocka_unit_test(test_span_registered),
                cmocka_unit_test(test_span_unregistered),
                cmocka_unit_test(test_span_pread),
                cmocka_unit_test(test_span_einval_fallback),
                cmocka_unit_test(test_span_cancel),
                cmocka_unit_test(test_span_truncated),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
