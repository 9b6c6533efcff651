/* SPDX-License-Identifier: MIT */
/* test-engine: the engine on real files through a real ring, checked against the reference tools */
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

#define SLOT (1u << 20)

typedef struct Collector {
        EngineFileResult *results;
        bool *seen;
        size_t n, n_seen, n_dupes;
        bool done;
        EngineJobResult job_result;
} Collector;

static void on_file(EngineJob *j, const EngineFileResult *r, void *userdata)
{
        Collector *c = userdata;

        assert_true(r->index < c->n);
        if (c->seen[r->index])
                c->n_dupes++;
        c->seen[r->index] = true;
        c->results[r->index] = *r;
        c->n_seen++;
}

static void on_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        Collector *c = userdata;

        c->done = true;
        c->job_result = result;
}

static const EngineJobCallbacks callbacks = { .file_done = on_file, .job_done = on_done };

static void collector_init(Collector *c, size_t n)
{
        *c = (Collector){ .n = n };
        c->results = calloc(n ? n : 1, sizeof(EngineFileResult));
        c->seen = calloc(n ? n : 1, sizeof(bool));
        assert_non_null(c->results);
        assert_non_null(c->seen);
}

static void collector_done(Collector *c)
{
        free(c->results);
        free(c->seen);
}

static void wait_job(Engine *e, Collector *c, uint64_t timeout_usec)
{
        uint64_t end = now_usec() + timeout_usec;

        while (!c->done) {
                assert_true(now_usec() < end);
                assert_true(engine_run_once(e, 100000) >= 0);
        }
        assert_int_equal(c->n_seen, c->n);
        assert_int_equal(c->n_dupes, 0);
}

/* Reference digests from the tools people already trust; CRC32C has no Debian CLI, so it is
 * checked against the (separately tested) portable implementation over the file's bytes. */
static char *reference_digest(HashAlgo a, const char *path)
{
        switch (a) {
        case HASH_SHA256:
                return th_run_first_word("sha256sum -- '%s'", path);
        case HASH_SHA512:
                return th_run_first_word("sha512sum -- '%s'", path);
        case HASH_SHA1:
                return th_run_first_word("sha1sum -- '%s'", path);
        case HASH_MD5:
                return th_run_first_word("md5sum -- '%s'", path);
        case HASH_SHA3_256:
                return th_run_first_word("openssl dgst -sha3-256 -r '%s'", path);
        case HASH_BLAKE2B:
                return th_run_first_word("b2sum -- '%s'", path);
        case HASH_BLAKE3:
                return th_run_first_word("b3sum -- '%s'", path);
        case HASH_XXH3:
                return th_run_first_word("xxhsum -H3 '%s' 2>/dev/null | sed 's/.* = //'", path);
        case HASH_XXH128:
                return th_run_first_word("xxhsum -H128 '%s' 2>/dev/null", path);
        case HASH_XXH32:
                return th_run_first_word("xxhsum -H0 '%s' 2>/dev/null", path);
        case HASH_XXH64:
                return th_run_first_word("xxhsum -H1 '%s' 2>/dev/null", path);
        case HASH_SHA224:
                return th_run_first_word("sha224sum -- '%s'", path);
        case HASH_SHA384:
                return th_run_first_word("sha384sum -- '%s'", path);
        case HASH_SHA3_384:
                return th_run_first_word("openssl dgst -sha3-384 -r '%s'", path);
        case HASH_SHA3_512:
                return th_run_first_word("openssl dgst -sha3-512 -r '%s'", path);
        case HASH_SM3:
                return th_run_first_word("openssl dgst -sm3 -r '%s'", path);
        case HASH_BLAKE2S:
                return th_run_first_word("openssl dgst -blake2s256 -r '%s'", path);
        case HASH_CRC32C: {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                uint8_t buf[65536], d[4];
                uint32_t crc = 0;
                ssize_t n;
                char *hex = malloc(9);
                assert_true(fd >= 0);
                while ((n = read(fd, buf, sizeof buf)) > 0)
                        crc = crc32c_portable(crc, buf, (size_t)n);
                d[0] = (uint8_t)(crc >> 24);
                d[1] = (uint8_t)(crc >> 16);
                d[2] = (uint8_t)(crc >> 8);
                d[3] = (uint8_t)crc;
                hash_to_hex(d, 4, hex);
                return hex;
        }
        default:
                return NULL;
        }
}

static void assert_result_matches(const EngineFileResult *r, HashAlgo a, const char *path)
{
        _cleanup_free_ char *ref = reference_digest(a, path);
        char hex[HASH_HEX_MAX];

        if (r->status != ENGINE_FILE_OK)
                fail_msg("%s (%s): status %d error %d", path, hash_algo_to_string(a), r->status, r->error);
        assert_int_equal(r->digest_size, hash_algo_digest_size(a));
        hash_to_hex(r->digest, r->digest_size, hex);
        assert_non_null(ref);
        if (!streq(ref, hex))
                fail_msg("%s (%s): engine %s, reference %s", path, hash_algo_to_string(a), hex, ref);
}

static Engine *new_engine(IoMode mode, size_t bufsize, unsigned buffers)
{
        Engine *e = NULL;
        EngineConfig cfg = { .io_mode = mode, .buffer_size = bufsize, .buffers = buffers };

        assert_int_equal(engine_new(&cfg, &e), 0);
        return e;
}

/* Hashes paths with every algorithm in one engine and compares each with the reference tool. With
 * options, every non-empty file must also have been read the way `expect` says (if not AUTO). */
static void check_paths_all_algos_opts(Engine *e, char **paths, size_t n, const EngineJobOptions *o,
                                       EngineReadStrategy expect)
{
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                EngineJob *j = NULL;
                Collector c;

                collector_init(&c, n);
                assert_int_equal(engine_job_new(e, a, o, &j), 0);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
                wait_job(e, &c, 120 * 1000000ull);
                assert_int_equal(c.job_result, ENGINE_JOB_DONE);
                for (size_t i = 0; i < n; i++) {
                        assert_result_matches(&c.results[i], a, paths[i]);
                        if (expect != ENGINE_READ_AUTO && c.results[i].size > 0 &&
                            c.results[i].strategy != expect)
                                fail_msg("%s (%s): read with %s, expected %s", paths[i], hash_algo_to_string(a),
                                         engine_read_strategy_to_string(c.results[i].strategy),
                                         engine_read_strategy_to_string(expect));
                }
                engine_job_unref(j);
                collector_done(&c);
        }
}

static void check_paths_all_algos(Engine *e, char **paths, size_t n)
{
        check_paths_all_algos_opts(e, paths, n, NULL, ENGINE_READ_AUTO);
}

/* 64 KiB: the engine's small slots (one per open file) take files up to that size. */
static const uint64_t edge_sizes[] = { 0,           1,        4095,     4096,     4097,
                                       65535,       65536,    65537,    SLOT - 1, SLOT,
                                       SLOT + 1,    3 * (uint64_t)SLOT + 17 };

static void check_edge_sizes(IoMode mode)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine");
        char *paths[ELEMENTSOF(edge_sizes)];
        Engine *e = new_engine(mode, SLOT, 8);

        if (mode != IO_MODE_AUTO)
                assert_int_equal(engine_get_io_mode(e), mode);
        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/size-%" PRIu64, dir, edge_sizes[i]) > 0);
                assert_int_equal(th_write_random_file(paths[i], edge_sizes[i], (uint32_t)i + 1), 0);
        }
        check_paths_all_algos(e, paths, ELEMENTSOF(edge_sizes));
        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

static void test_sizes_auto(void **state)
{
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        /* As root (CI) the pool registers; report the mode in the log either way. */
        print_message("io mode: %s, workers %u, buffers %u x %zu\n", io_mode_to_string(engine_get_io_mode(e)),
                      engine_get_workers(e), engine_get_buffers(e), engine_get_buffer_size(e));
        engine_free(e);
        check_edge_sizes(IO_MODE_AUTO);
}

static void test_sizes_uring_plain(void **state)
{
        check_edge_sizes(IO_MODE_URING);
}

static void test_sizes_pread(void **state)
{
        check_edge_sizes(IO_MODE_PREAD);
}

/* One buffer: reading and hashing take turns, and nothing may wait on a buffer it holds itself. */
static void test_one_buffer(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-one");
        char *paths[3];
        Engine *e = new_engine(IO_MODE_AUTO, 65536, 1);

        for (int i = 0; i < 3; i++) {
                assert_true(asprintf(&paths[i], "%s/f%d", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], (uint64_t)i * 300000 + 1, (uint32_t)i + 40), 0);
        }
        check_paths_all_algos(e, paths, 3);
        for (int i = 0; i < 3; i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

/* Small buffers: many reads per file, short-read resumption and ordering across many in flight. */
static void test_small_buffers(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-small");
        char *path;
        Engine *e = new_engine(IO_MODE_AUTO, 4096, 32);

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 5 * 1000 * 1000 + 3, 77), 0);
        check_paths_all_algos(e, &path, 1);
        free(path);
        engine_free(e);
        th_rm_rf(dir);
}

/* A sparse file past 4 GiB: offsets above 32 bits, and fadvise's length (0 = to the end). */
static void test_sparse_4g(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-sparse");
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        const uint64_t size = (UINT64_C(4) << 30) + 4097;
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);

        assert_true(asprintf(&path, "%s/sparse", dir) > 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
        /* Data at the start, across the 4 GiB boundary and at the very end. */
        assert_int_equal(pwrite(fd, "start", 5, 0), 5);
        assert_int_equal(pwrite(fd, "boundary", 8, (off_t)(UINT64_C(4) << 30) - 4), 8);
        assert_int_equal(pwrite(fd, "end", 3, (off_t)size - 3), 3);
        fd = safe_close(fd);

        for (int k = 0; k < 2; k++) {
                HashAlgo a = k == 0 ? HASH_XXH3 : HASH_BLAKE3;
                EngineJob *j = NULL;
                Collector c;

                collector_init(&c, 1);
                assert_int_equal(engine_job_new(e, a, NULL, &j), 0);
                assert_int_equal(engine_job_add_path(j, path), 0);
                assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
                wait_job(e, &c, 300 * 1000000ull);
                assert_int_equal(c.results[0].size, size);
                assert_result_matches(&c.results[0], a, path);
                engine_job_unref(j);
                collector_done(&c);
        }
        engine_free(e);
        th_rm_rf(dir);
}

/* 2,000 files in one job, checked against one sha256sum run over all of them. */
static void test_many_files(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-many");
        const size_t n = 2000;
        int fds_before = th_count_fds();
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *j = NULL;
        Collector c;
        char line[4096];
        FILE *f;
        size_t checked = 0;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                assert_true(asprintf(&p, "%s/%05zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(p, (i * 7919) % 20000, (uint32_t)i + 100), 0);
        }

        collector_init(&c, n);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                assert_true(asprintf(&p, "%s/%05zu", dir, i) > 0);
                assert_int_equal(engine_job_add_path(j, p), (int)i);
        }
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 120 * 1000000ull);
        assert_int_equal(c.job_result, ENGINE_JOB_DONE);

        snprintf(line, sizeof line, "cd '%s' && ls | sort | xargs sha256sum", dir);
        f = popen(line, "r");
        assert_non_null(f);
        while (fgets(line, sizeof line, f)) {
                char hex[HASH_HEX_MAX];
                unsigned idx;
                assert_int_equal(sscanf(line, "%*s  %u", &idx), 1);
                assert_true(idx < n);
                assert_int_equal(c.results[idx].status, ENGINE_FILE_OK);
                hash_to_hex(c.results[idx].digest, c.results[idx].digest_size, hex);
                assert_memory_equal(hex, line, 64);
                checked++;
        }
        assert_int_equal(pclose(f), 0);
        assert_int_equal(checked, n);

        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(dir);
}

typedef struct PipeWriter {
        int fd;
        size_t size;
        uint32_t seed;
} PipeWriter;

/* ---- read strategies (mapped, direct, buffered) and cache-neutral reads ---- */

static void file_make_cold(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fdatasync(fd), 0);
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

/* Reads [off, off + len) through the page cache. */
static void file_make_cached(const char *path, uint64_t off, uint64_t len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        static uint8_t buf[1 << 16];

        assert_true(fd >= 0);
        for (uint64_t o = off; o < off + len; o += sizeof(buf))
                assert_true(pread(fd, buf, (size_t)MIN((uint64_t)sizeof(buf), off + len - o), (off_t)o) > 0);
}

static PageCacheState file_cache_state(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        PageCacheState pc;

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(pagecache_probe(fd, (uint64_t)st.st_size, &pc), 0);
        return pc;
}

static bool have_cachestat(void)
{
        PageCacheState pc;

        return pagecache_probe(0, 1, &pc) != -ENOSYS;
}

/* The filesystem of dir takes O_DIRECT (ext4 does; tmpfs before 6.6 did not). */
static bool dir_has_direct(const char *dir)
{
        _cleanup_free_ char *p = NULL;
        int fd;

        assert_true(asprintf(&p, "%s/.direct-probe", dir) > 0);
        fd = open(p, O_CREAT | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
        if (fd < 0)
                return false;
        close(fd);
        (void)unlink(p);
        return true;
}

/* Hashes one input with options; returns its result. fd >= 0: the input is that fd (the job owns it). */
static EngineFileResult hash_one(Engine *e, HashAlgo a, const char *path, int fd, const EngineJobOptions *o)
{
        EngineJob *j = NULL;
        EngineFileResult r;
        Collector c;

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, a, o, &j), 0);
        if (fd >= 0)
                assert_int_equal(engine_job_add_fd(j, fd), 0);
        else
                assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 120 * 1000000ull);
        r = c.results[0];
        engine_job_unref(j);
        collector_done(&c);
        return r;
}

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
        EngineConfig cfg = { .io_mode = mode, .buffer_size = SPAN_SLOT, .buffers = 16, .workers = 2,
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

        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SPAN_SLOT, .buffers = 16,
                                                      .direct_request = SPAN_SLOT }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 1);
        engine_free(e);
        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SPAN_SLOT, .buffers = 64 }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 16);
        engine_free(e);
        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SLOT, .buffers = 16 }, &e), 0);
        assert_int_equal(engine_get_direct_span(e), 4);
        engine_free(e);
}

/* AUTO maps a file that is entirely cached, reads a cold one with O_DIRECT, a small one through the
 * page cache, and an fd (whose open file description is the caller's) never with O_DIRECT. */
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
        r = hash_one(e, HASH_SHA256, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, ENGINE_READ_MMAP);

        /* XXH3 outruns the copy: its reads overlap the hashing instead. */
        r = hash_one(e, HASH_XXH3, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_XXH3, big);
        assert_int_equal(r.strategy, ENGINE_READ_BUFFERED);

        file_make_cold(big);
        r = hash_one(e, HASH_SHA256, big, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, dir_has_direct(dir) ? ENGINE_READ_DIRECT : ENGINE_READ_BUFFERED);

        file_make_cold(big);
        r = hash_one(e, HASH_SHA256, big, open(big, O_RDONLY | O_CLOEXEC), NULL);
        assert_result_matches(&r, HASH_SHA256, big);
        assert_int_equal(r.strategy, ENGINE_READ_BUFFERED);

        file_make_cached(small, 0, 100u << 10);
        r = hash_one(e, HASH_SHA256, small, -EBADF, NULL);
        assert_result_matches(&r, HASH_SHA256, small);
        assert_int_equal(r.strategy, ENGINE_READ_BUFFERED);

        engine_free(e);
        th_rm_rf(dir);
}

static void assert_digest_hex(const EngineFileResult *r, const char *ref)
{
        char hex[HASH_HEX_MAX];

        assert_int_equal(r->status, ENGINE_FILE_OK);
        hash_to_hex(r->digest, r->digest_size, hex);
        assert_string_equal(hex, ref);
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

        /* By fd, cold: RWF_DONTCACHE reads (6.14+; older kernels have no way to do this for an fd). */
        file_make_cold(path);
        r = hash_one(e, HASH_SHA256, path, open(path, O_RDONLY | O_CLOEXEC), &o);
        assert_digest_hex(&r, ref);
        assert_int_equal(r.strategy, ENGINE_READ_BUFFERED);
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

        /* And an ordinary read of a cold file does cache it (the test can tell the difference). */
        file_make_cold(path);
        r = hash_one(e, HASH_SHA256, path, open(path, O_RDONLY | O_CLOEXEC), NULL);
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
        static const HashAlgo algos[] = { HASH_BLAKE3, HASH_SHA256, HASH_XXH3 };
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
                        assert_int_equal(r.parallel, algos[k] == HASH_BLAKE3 && engine_get_workers(e) > 1);
                }
                (void)unlink(path);
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
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
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

static void *pipe_writer(void *arg)
{
        PipeWriter *w = arg;
        uint8_t *buf = malloc(w->size);

        th_fill_random(buf, w->size, w->seed);
        /* Odd-sized writes, so reads see every kind of partial fill. */
        for (size_t off = 0; off < w->size;) {
                size_t n = MIN((size_t)7777, w->size - off);
                ssize_t k = write(w->fd, buf + off, n);
                if (k <= 0)
                        break;
                off += (size_t)k;
        }
        close(w->fd);
        free(buf);
        return NULL;
}

static void test_pipe(void **state)
{
        const size_t size = 5 * 1000 * 1000 + 11;
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        int p[2];
        pthread_t t;
        PipeWriter w = { .size = size, .seed = 4242 };
        uint8_t *data = malloc(size), ref[HASH_DIGEST_MAX];
        EngineJob *j = NULL;
        Collector c;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        w.fd = p[1];
        assert_int_equal(pthread_create(&t, NULL, pipe_writer, &w), 0);

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_BLAKE3, NULL, &j), 0);
        assert_int_equal(engine_job_add_fd(j, p[0]), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 60 * 1000000ull);
        pthread_join(t, NULL);

        th_fill_random(data, size, 4242);
        assert_int_equal(hash_oneshot(HASH_BLAKE3, data, size, ref), 0);
        assert_int_equal(c.results[0].status, ENGINE_FILE_OK);
        assert_int_equal(c.results[0].size, size);
        assert_memory_equal(c.results[0].digest, ref, 32);

        free(data);
        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
}

typedef struct Mutator {
        const char *path;
        atomic_bool stop;
        bool append;
} Mutator;

static void *mutator(void *arg)
{
        Mutator *m = arg;
        int fd = open(m->path, O_WRONLY | O_CLOEXEC | (m->append ? O_APPEND : 0));

        while (fd >= 0 && !atomic_load(&m->stop)) {
                if (m->append)
                        (void)!write(fd, "more", 4);
                else
                        (void)!pwrite(fd, "XXXX", 4, 100);
                usleep(1000);
        }
        safe_close(fd);
        return NULL;
}

/* A file that grows, or is rewritten in place, while it is hashed is reported CHANGED, never a digest. */
static void check_changed(bool append)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-grow");
        _cleanup_free_ char *path = NULL;
        /* Small slow reads and the slowest algorithm keep the job running for a while. */
        Engine *e = new_engine(IO_MODE_AUTO, 65536, 2);
        EngineJob *j = NULL;
        Collector c;
        pthread_t t;
        Mutator m = { .append = append };

        assert_true(asprintf(&path, "%s/growing", dir) > 0);
        assert_int_equal(th_write_random_file(path, 256u << 20, 9), 0);
        m.path = path;

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, NULL, &j), 0);
        assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        assert_int_equal(pthread_create(&t, NULL, mutator, &m), 0);
        wait_job(e, &c, 120 * 1000000ull);
        atomic_store(&m.stop, true);
        pthread_join(t, NULL);

        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
        assert_int_equal(c.results[0].digest_size, 0);
        if (append)
                assert_true(c.results[0].size_after > c.results[0].size_before);
        else
                assert_true(c.results[0].mtime_after_nsec != c.results[0].mtime_before_nsec);

        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        th_rm_rf(dir);
}

static void test_growing_file(void **state)
{
        check_changed(true);
}

static void test_rewritten_file(void **state)
{
        check_changed(false);
}

/* A missing file, a directory and an unreadable fd among good files: each its own error, the rest fine. */
static void test_errors_among_good(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-err");
        _cleanup_free_ char *good1 = NULL, *good2 = NULL, *missing = NULL;
        int fds_before = th_count_fds();
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *j = NULL;
        Collector c;
        int wfd;

        assert_true(asprintf(&good1, "%s/good1", dir) > 0);
        assert_true(asprintf(&good2, "%s/good2", dir) > 0);
        assert_true(asprintf(&missing, "%s/missing", dir) > 0);
        assert_int_equal(th_write_random_file(good1, 100000, 1), 0);
        assert_int_equal(th_write_random_file(good2, 3 << 20, 2), 0);
        wfd = open(good1, O_WRONLY | O_CLOEXEC); /* write-only: reads fail with EBADF */
        assert_true(wfd >= 0);

        collector_init(&c, 5);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        assert_int_equal(engine_job_add_path(j, good1), 0);
        assert_int_equal(engine_job_add_path(j, missing), 1);
        assert_int_equal(engine_job_add_path(j, dir), 2);
        assert_int_equal(engine_job_add_fd(j, wfd), 3);
        assert_int_equal(engine_job_add_path(j, good2), 4);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 60 * 1000000ull);

        assert_result_matches(&c.results[0], HASH_SHA256, good1);
        assert_int_equal(c.results[1].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[1].error, -ENOENT);
        assert_int_equal(c.results[2].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[2].error, -EISDIR);
        assert_int_equal(c.results[3].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[3].error, -EBADF);
        assert_result_matches(&c.results[4], HASH_SHA256, good2);

        EngineJobProgress p;
        engine_job_get_progress(j, &p);
        assert_int_equal(p.files_done, 5);
        assert_int_equal(p.files_failed, 3);
        assert_int_equal(p.files_total, 5);

        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(dir);
}

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
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);

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
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        engine_job_unref(j);

        collector_init(&c2, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j), 0);
        assert_int_equal(engine_job_add_path(j, path), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c2), 0);
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

/* An unbounded input (/dev/zero) stops at max_file_size with EFBIG. */
static void test_max_size(void **state)
{
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJobOptions o = { .max_file_size = 8u << 20 };
        EngineJob *j = NULL;
        Collector c;
        int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_XXH3, &o, &j), 0);
        assert_int_equal(engine_job_add_fd(j, fd), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 30 * 1000000ull);
        assert_int_equal(c.results[0].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[0].error, -EFBIG);
        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
}

/* regular_only: a FIFO by path neither hangs the open nor gets read; a directory is EISDIR; regular
 * files hash as usual; with max_file_size a device by path is read as a bounded stream. */
static void test_regular_only(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-regonly");
        _cleanup_free_ char *fifo = NULL, *reg = NULL;
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJobOptions o = { .regular_only = true };
        EngineJob *j = NULL;
        Collector c;

        assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
        assert_true(asprintf(&reg, "%s/reg", dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(th_write_random_file(reg, 3 << 20, 21), 0);

        collector_init(&c, 3);
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), 0);
        assert_int_equal(engine_job_add_path(j, fifo), 0);
        assert_int_equal(engine_job_add_path(j, dir), 1);
        assert_int_equal(engine_job_add_path(j, reg), 2);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 10 * 1000000ull);
        assert_int_equal(c.results[0].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[0].error, -ESPIPE);
        assert_int_equal(c.results[1].error, -EISDIR);
        assert_result_matches(&c.results[2], HASH_SHA256, reg);
        EngineJobProgress p;
        engine_job_get_progress(j, &p);
        assert_true(p.running);
        engine_job_unref(j);
        collector_done(&c);

        /* Bounded: a device by path is read as a stream and stopped at the limit. */
        o.max_file_size = 1 << 20;
        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), 0);
        assert_int_equal(engine_job_add_path(j, "/dev/zero"), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        wait_job(e, &c, 10 * 1000000ull);
        assert_int_equal(c.results[0].status, ENGINE_FILE_ERROR);
        assert_int_equal(c.results[0].error, -EFBIG);
        engine_job_unref(j);
        collector_done(&c);

        engine_free(e);
        th_rm_rf(dir);
}

static void test_empty_job_and_bad_args(void **state)
{
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);
        EngineJob *j = NULL;
        Collector c;

        assert_int_equal(engine_job_new(e, _HASH_ALGO_INVALID, NULL, &j), -EINVAL);
        assert_int_equal(engine_job_new(e, (HashAlgo)_HASH_ALGO_MAX, NULL, &j), -EINVAL);
        collector_init(&c, 0);
        assert_int_equal(engine_job_new(e, HASH_MD5, NULL, &j), 0);
        assert_int_equal(engine_job_add_fd(j, -1), -EBADF);
        assert_int_equal(engine_job_add_path(j, ""), -EINVAL);
        assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
        assert_int_equal(engine_job_start(j, &callbacks, &c), -EBUSY);
        assert_int_equal(engine_job_add_path(j, "/x"), -EBUSY);
        wait_job(e, &c, 5 * 1000000ull);
        assert_int_equal(c.job_result, ENGINE_JOB_DONE);
        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);

        EngineConfig bad = { .buffers = ENGINE_MAX_BUFFERS + 1 };
        assert_int_equal(engine_new(&bad, &e), -EINVAL);
        bad = (EngineConfig){ .io_mode = 17 };
        assert_int_equal(engine_new(&bad, &e), -EINVAL);
        assert_int_equal(io_mode_from_string("pread"), IO_MODE_PREAD);
        assert_int_equal(io_mode_from_string("nope"), _IO_MODE_INVALID);
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
                assert_int_equal(engine_job_start(jobs[i], &callbacks, &c[i]), 0);
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

/* ---- forced fallbacks, in a child process so the restrictions stay there ---- */

static int child_hash_check(IoMode expect)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-fallback");
        _cleanup_free_ char *path = NULL;
        Engine *e = NULL;
        EngineJob *j = NULL;
        Collector c;
        int k;

        if (asprintf(&path, "%s/f", dir) < 0 || th_write_random_file(path, 3 * SLOT + 17, 11) < 0)
                return 10;
        k = engine_new(&(EngineConfig){ .buffers = 16 }, &e);
        if (k < 0) {
                fprintf(stderr, "engine_new: %s\n", strerror(-k));
                return 11;
        }
        if (engine_get_io_mode(e) != expect) {
                fprintf(stderr, "io mode %s, expected %s\n", io_mode_to_string(engine_get_io_mode(e)),
                        io_mode_to_string(expect));
                return 12;
        }
        collector_init(&c, 1);
        if (engine_job_new(e, HASH_SHA256, NULL, &j) < 0 || engine_job_add_path(j, path) < 0 ||
            engine_job_start(j, &callbacks, &c) < 0)
                return 13;
        while (!c.done)
                engine_run_once(e, 100000);
        _cleanup_free_ char *ref = th_run_first_word("sha256sum '%s'", path);
        char hex[HASH_HEX_MAX];
        hash_to_hex(c.results[0].digest, c.results[0].digest_size, hex);
        if (c.results[0].status != ENGINE_FILE_OK || !ref || !streq(ref, hex))
                return 14;
        engine_job_unref(j);
        engine_free(e);
        th_rm_rf(dir);
        return 0;
}

static void run_child(int (*fn)(void), const char *what)
{
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fn());
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                print_message("SKIP %s: restriction could not be set up\n", what);
                return;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("%s: child failed with status %d", what, status);
}

/* Registration refused for real: without CAP_IPC_LOCK and with a 1 MiB memlock limit, a 16 MiB pool
 * cannot be pinned; AUTO must fall back to plain reads and stay correct. */
static int child_register_refused(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];
        struct rlimit rl = { .rlim_cur = 1 << 20, .rlim_max = 1 << 20 };

        if (syscall(SYS_capget, &h, d) < 0)
                return 77;
        for (int i = 0; i < 2; i++) {
                d[i].effective &= ~(i == CAP_IPC_LOCK / 32 ? 1u << (CAP_IPC_LOCK % 32) : 0u);
                d[i].permitted &= ~(i == CAP_IPC_LOCK / 32 ? 1u << (CAP_IPC_LOCK % 32) : 0u);
        }
        if (syscall(SYS_capset, &h, d) < 0 || setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
                return 77;
        return child_hash_check(IO_MODE_URING);
}

/* io_uring unavailable for real: a seccomp filter makes io_uring_setup fail with ENOSYS, as on
 * kernels built without it or in containers that filter it. AUTO must fall back to pread. */
static int child_no_uring(void)
{
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(f), .filter = f };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return 77;
        return child_hash_check(IO_MODE_PREAD);
}

/* Out of fds for real: with RLIMIT_NOFILE a little above what the process holds, a job of 300 files
 * (64 opened at once by default) runs into EMFILE; the engine must queue the opens and retry as its
 * own files close, and every file must still get its right digest. */
static int child_emfile(void)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-emfile");
        const size_t n = 300;
        uint8_t ref[HASH_DIGEST_MAX], *data = malloc(4096);
        Engine *e = NULL;
        EngineJob *j = NULL;
        Collector c;
        struct rlimit rl;
        int k;

        k = engine_new(NULL, &e);
        if (k < 0)
                return 11;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%03zu", dir, i) < 0 || th_write_random_file(p, 4096, (uint32_t)i + 1) < 0)
                        return 10;
        }
        collector_init(&c, n);
        if (engine_job_new(e, HASH_SHA256, NULL, &j) < 0)
                return 12;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%03zu", dir, i) < 0 || engine_job_add_path(j, p) < 0)
                        return 12;
        }
        rl.rlim_cur = rl.rlim_max = (rlim_t)th_count_fds() + 8;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 77;
        if (engine_job_start(j, &callbacks, &c) < 0)
                return 13;
        while (!c.done)
                engine_run_once(e, 100000);
        for (size_t i = 0; i < n; i++) {
                th_fill_random(data, 4096, (uint32_t)i + 1);
                hash_oneshot(HASH_SHA256, data, 4096, ref);
                if (c.results[i].status != ENGINE_FILE_OK) {
                        fprintf(stderr, "file %zu: status %d error %s\n", i, c.results[i].status,
                                strerror(-c.results[i].error));
                        return 14;
                }
                if (memcmp(c.results[i].digest, ref, 32) != 0)
                        return 15;
        }
        engine_job_unref(j);
        engine_free(e);
        free(data);
        collector_done(&c);
        th_rm_rf(dir);
        return 0;
}

static void test_emfile_queues(void **state)
{
        run_child(child_emfile, "EMFILE");
}

static void test_fallback_register_refused(void **state)
{
        run_child(child_register_refused, "register refused");
}

static void test_fallback_no_uring(void **state)
{
        run_child(child_no_uring, "no io_uring");
}

/* ---- the linked open/read/close chain for small files ---- */

/* An engine that opens small path inputs with the linked chain, or NULL when this kernel cannot
 * (then the caller skips: the classic path is what runs, and the other tests cover it). */
static Engine *new_linked_engine(IoMode mode, size_t bufsize, unsigned buffers)
{
        EngineConfig cfg = { .io_mode = mode, .buffer_size = bufsize, .buffers = buffers,
                             .open_mode = ENGINE_OPEN_LINKED };
        Engine *e = NULL;

        assert_int_equal(engine_new(&cfg, &e), 0);
        if (engine_get_open_mode(e) != ENGINE_OPEN_LINKED) {
                print_message("linked chain unavailable (no sparse file table): skipped\n");
                engine_free(e);
                return NULL;
        }
        return e;
}

/* Registered files of this process's io_uring rings still holding a file, from the rings' fdinfo
 * ("UserFiles: n" then one " i: path" line per occupied slot): a chain that did not close its
 * direct descriptor shows here, where no fd count sees it. -1 if there is no ring to look at. */
static int count_occupied_direct_slots(void)
{
        _cleanup_free_ char *out = th_run_first_word(
                "for f in /proc/%d/fd/*; do "
                "  [ \"$(readlink $f)\" = 'anon_inode:[io_uring]' ] || continue; "
                "  sed -n '/^UserFiles:/,/^UserBufs:/p' /proc/%d/fdinfo/${f##*/}; "
                "done | grep -c '^ *[0-9][0-9]*: ' || true",
                (int)getpid(), (int)getpid());

        return out ? atoi(out) : -1;
}

static const uint64_t linked_sizes[] = { 0, 1, 4095, 4096, 4097, 65535, 65536, 65537, SLOT - 1, SLOT, SLOT + 1 };

/* Every edge size against the reference tools: below one slot through the chain (counted), from one
 * slot on the classic way; buffered reads forced so that sizes up to the slot may take the chain. */
static void check_linked_sizes(IoMode mode)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-linked");
        char *paths[ELEMENTSOF(linked_sizes)];
        EngineJobOptions o = { .strategy = ENGINE_READ_BUFFERED };
        size_t small = 0, below_probe = 0;
        int fds_before = th_count_fds();
        Engine *e = new_linked_engine(mode, SLOT, 8);

        if (!e) {
                th_rm_rf(dir);
                skip();
        }
        for (size_t i = 0; i < ELEMENTSOF(linked_sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/size-%" PRIu64, dir, linked_sizes[i]) > 0);
                assert_int_equal(th_write_random_file(paths[i], linked_sizes[i], (uint32_t)i + 7), 0);
                small += linked_sizes[i] < SLOT;
                below_probe += linked_sizes[i] < ENGINE_PROBE_MIN;
        }
        check_paths_all_algos_opts(e, paths, ELEMENTSOF(linked_sizes), &o, ENGINE_READ_BUFFERED);
        assert_int_equal(engine_get_files_linked(e), small * _HASH_ALGO_MAX);

        /* AUTO: only files under ENGINE_PROBE_MIN take the chain, the rest keep AUTO's choices. */
        uint64_t before = engine_get_files_linked(e);
        check_paths_all_algos(e, paths, ELEMENTSOF(linked_sizes));
        assert_int_equal(engine_get_files_linked(e) - before, below_probe * _HASH_ALGO_MAX);

        assert_int_equal(count_occupied_direct_slots(), 0);
        for (size_t i = 0; i < ELEMENTSOF(linked_sizes); i++)
                free(paths[i]);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(dir);
}

static void test_linked_sizes(void **state)
{
        check_linked_sizes(IO_MODE_AUTO);
}

static void test_linked_sizes_unregistered(void **state)
{
        check_linked_sizes(IO_MODE_URING);
}

/* Hashes paths in one job; results into c (initialised here). */
static void run_paths(Engine *e, const EngineJobOptions *o, char **paths, size_t n, Collector *c)
{
        EngineJob *j = NULL;

        collector_init(c, n);
        assert_int_equal(engine_job_new(e, HASH_SHA256, o, &j), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
        assert_int_equal(engine_job_start(j, &callbacks, c), 0);
        wait_job(e, c, 60 * 1000000ull);
        engine_job_unref(j);
}

/* Failures give the same status and errno in both modes; a FIFO with regular_only is refused without
 * hanging; a symlink is followed. Returns 0 or fails. */
static void check_linked_errors_match(const char *dir, bool regular_only)
{
        _cleanup_free_ char *good = NULL, *missing = NULL, *loop = NULL, *notdir = NULL, *fifo = NULL,
                            *link = NULL, *noperm = NULL, *closed = NULL, *inclosed = NULL;
        EngineJobOptions o = { .regular_only = regular_only };
        Collector cl, cc;

        assert_true(asprintf(&good, "%s/good", dir) > 0);
        assert_true(asprintf(&missing, "%s/missing", dir) > 0);
        assert_true(asprintf(&loop, "%s/loop", dir) > 0);
        assert_true(asprintf(&notdir, "%s/good/x", dir) > 0);
        assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
        assert_true(asprintf(&link, "%s/link", dir) > 0);
        assert_true(asprintf(&noperm, "%s/noperm", dir) > 0);     /* mode 000: statx works, open fails */
        assert_true(asprintf(&closed, "%s/closed", dir) > 0);     /* a dir without search permission */
        assert_true(asprintf(&inclosed, "%s/closed/f", dir) > 0); /* statx fails already */
        char *paths[] = { good, missing, (char *)dir, loop, notdir, link, noperm, inclosed, fifo };
        size_t n = ELEMENTSOF(paths) - !regular_only; /* a FIFO without regular_only would wait for a writer */

        Engine *el = new_linked_engine(IO_MODE_AUTO, 65536, 4);
        if (!el)
                return;
        EngineConfig cfg = { .buffer_size = 65536, .buffers = 4, .open_mode = ENGINE_OPEN_CLASSIC };
        Engine *ec = NULL;
        assert_int_equal(engine_new(&cfg, &ec), 0);

        run_paths(el, &o, paths, n, &cl);
        run_paths(ec, &o, paths, n, &cc);
        for (size_t i = 0; i < n; i++) {
                if (cl.results[i].status != cc.results[i].status || cl.results[i].error != cc.results[i].error)
                        fail_msg("%s: linked status %d errno %d, classic status %d errno %d", paths[i],
                                 cl.results[i].status, cl.results[i].error, cc.results[i].status, cc.results[i].error);
        }
        assert_result_matches(&cl.results[0], HASH_SHA256, good);
        assert_int_equal(cl.results[1].error, -ENOENT);
        assert_int_equal(cl.results[2].error, -EISDIR);
        assert_int_equal(cl.results[3].error, -ELOOP);
        assert_int_equal(cl.results[4].error, -ENOTDIR);
        assert_result_matches(&cl.results[5], HASH_SHA256, good);
        if (geteuid() != 0) {
                assert_int_equal(cl.results[6].error, -EACCES);
                assert_int_equal(cl.results[7].error, -EACCES);
        }
        if (regular_only)
                assert_int_equal(cl.results[8].error, -ESPIPE);
        assert_int_equal(count_occupied_direct_slots(), 0);
        collector_done(&cl);
        collector_done(&cc);
        engine_free(el);
        engine_free(ec);
}

static void make_error_tree(const char *dir)
{
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/good", dir) > 0);
        assert_int_equal(th_write_random_file(p, 3000, 1), 0);
        free(p);
        assert_true(asprintf(&p, "%s/loop", dir) > 0);
        assert_int_equal(symlink("loop", p), 0);
        free(p);
        assert_true(asprintf(&p, "%s/link", dir) > 0);
        assert_int_equal(symlink("good", p), 0);
        free(p);
        assert_true(asprintf(&p, "%s/fifo", dir) > 0);
        assert_int_equal(mkfifo(p, 0600), 0);
        assert_int_equal(chmod(p, 0666), 0); /* for the unprivileged child too */
        free(p);
        assert_true(asprintf(&p, "%s/noperm", dir) > 0);
        assert_int_equal(th_write_random_file(p, 3000, 2), 0);
        assert_int_equal(chmod(p, 0), 0);
        free(p);
        assert_true(asprintf(&p, "%s/closed", dir) > 0);
        assert_int_equal(mkdir(p, 0700), 0);
        free(p);
        assert_true(asprintf(&p, "%s/closed/f", dir) > 0);
        assert_int_equal(th_write_random_file(p, 3000, 3), 0);
        assert_int_equal(chmod(dir, 0755), 0);
}

static const char *error_tree_dir;

/* Permission errors need a caller without CAP_DAC_OVERRIDE: as root, a child that became nobody. */
static int child_linked_errors_unprivileged(void)
{
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                return 77;
        check_linked_errors_match(error_tree_dir, false);
        check_linked_errors_match(error_tree_dir, true);
        return 0;
}

static void test_linked_errors(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-linked-err");

        make_error_tree(dir);
        check_linked_errors_match(dir, false);
        check_linked_errors_match(dir, true);
        if (geteuid() == 0) {
                error_tree_dir = dir;
                run_child(child_linked_errors_unprivileged, "linked errors as nobody");
        } else
                print_message("not root: EACCES compared as this user\n");
        th_rm_rf(dir);
}

typedef enum Mutation {
        MUTATE_REWRITE,  /* same size, other bytes, mtime moved on */
        MUTATE_APPEND,   /* grows */
        MUTATE_REPLACE,  /* another inode renamed over it, with the old size and mtime */
        MUTATE_UNLINK,   /* gone before the chain's open */
        _MUTATE_MAX,
} Mutation;

typedef struct MutateHook {
        Mutation what;
        const char *target;
        unsigned calls;
} MutateHook;

/* On the I/O thread, between the statx that picked the file and the chain. */
static void mutate_hook(const char *path, void *userdata)
{
        MutateHook *h = userdata;
        struct stat st;

        if (!streq(path, h->target))
                return;
        h->calls++;
        assert_int_equal(stat(path, &st), 0);
        switch (h->what) {
        case MUTATE_REWRITE: {
                _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
                struct timespec ts[2] = { st.st_atim, { .tv_sec = st.st_mtim.tv_sec + 10 } };
                assert_true(fd >= 0);
                assert_int_equal(pwrite(fd, "XXXX", 4, 10), 4);
                assert_int_equal(futimens(fd, ts), 0);
                break;
        }
        case MUTATE_APPEND: {
                _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(write(fd, "more", 4), 4);
                break;
        }
        case MUTATE_REPLACE: {
                _cleanup_free_ char *tmp = NULL;
                struct timespec ts[2] = { st.st_atim, st.st_mtim };
                assert_true(asprintf(&tmp, "%s.new", path) > 0);
                assert_int_equal(th_write_random_file(tmp, (uint64_t)st.st_size, 99), 0);
                assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
                assert_int_equal(rename(tmp, path), 0);
                break;
        }
        case MUTATE_UNLINK:
                assert_int_equal(unlink(path), 0);
                break;
        default:
                abort();
        }
}

/* A file changed between the statx that picked it and the chain's read is never given a digest:
 * rewritten (mtime), grown (size), replaced (inode) are CHANGED; unlinked, the open's ENOENT. The
 * untouched file beside it hashes right. */
static void test_linked_changed(void **state)
{
        for (Mutation m = 0; m < _MUTATE_MAX; m++) {
                _cleanup_free_ char *dir = th_mkdtemp("engine-linked-chg");
                _cleanup_free_ char *victim = NULL, *other = NULL;
                MutateHook h = { .what = m };
                EngineConfig cfg = { .buffer_size = 65536, .buffers = 4, .open_mode = ENGINE_OPEN_LINKED,
                                     .test_linked_hook = mutate_hook, .test_linked_userdata = &h };
                Engine *e = NULL;
                Collector c;

                assert_true(asprintf(&victim, "%s/victim", dir) > 0);
                assert_true(asprintf(&other, "%s/other", dir) > 0);
                assert_int_equal(th_write_random_file(victim, 5000, 11), 0);
                assert_int_equal(th_write_random_file(other, 5000, 12), 0);
                h.target = victim;
                assert_int_equal(engine_new(&cfg, &e), 0);
                if (engine_get_open_mode(e) != ENGINE_OPEN_LINKED) {
                        engine_free(e);
                        th_rm_rf(dir);
                        skip();
                }
                char *paths[] = { victim, other };
                run_paths(e, NULL, paths, 2, &c);
                assert_int_equal(h.calls, 1);
                assert_int_equal(c.results[0].digest_size, 0);
                switch (m) {
                case MUTATE_REWRITE:
                        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
                        assert_true(c.results[0].mtime_after_nsec != c.results[0].mtime_before_nsec);
                        break;
                case MUTATE_APPEND:
                        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
                        assert_true(c.results[0].size_after > c.results[0].size_before);
                        break;
                case MUTATE_REPLACE:
                        assert_int_equal(c.results[0].status, ENGINE_FILE_CHANGED);
                        assert_int_equal(c.results[0].size_after, c.results[0].size_before);
                        assert_int_equal(c.results[0].mtime_after_nsec, c.results[0].mtime_before_nsec);
                        break;
                default:
                        assert_int_equal(c.results[0].status, ENGINE_FILE_ERROR);
                        assert_int_equal(c.results[0].error, -ENOENT);
                        break;
                }
                assert_result_matches(&c.results[1], HASH_SHA256, other);
                assert_int_equal(engine_get_files_linked(e), 1);
                assert_int_equal(count_occupied_direct_slots(), 0);
                collector_done(&c);
                engine_free(e);
                th_rm_rf(dir);
        }
}

/* What the chain cannot vouch for is read the classic way, with the right digest. Deterministic: a
 * filesystem that refuses RWF_DONTCACHE (tmpfs) fails the chain's read with -EOPNOTSUPP. Opportunistic:
 * regular_only opens O_NONBLOCK, and some kernels answer a read of an uncached file with -EAGAIN. */
static void test_linked_redo(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-linked-redo");
        _cleanup_free_ char *path = NULL, *shm = NULL;
        EngineJobOptions o = { .regular_only = true };
        Engine *e = new_linked_engine(IO_MODE_AUTO, 65536, 4);
        Collector c;

        if (!e) {
                th_rm_rf(dir);
                skip();
        }
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 20000, 5), 0);
        {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(fsync(fd), 0);
                assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        }
        char *paths[] = { path };
        run_paths(e, &o, paths, 1, &c);
        assert_result_matches(&c.results[0], HASH_SHA256, path);
        print_message("uncached O_NONBLOCK: %s\n", engine_get_files_linked(e) ? "read by the chain" : "redone");
        collector_done(&c);
        engine_free(e);

        shm = strdup("/dev/shm/fhash-test-linked-XXXXXX");
        assert_non_null(shm);
        _cleanup_close_ int sfd = mkstemp(shm);
        if (sfd < 0) {
                print_message("no /dev/shm: the -EOPNOTSUPP redo is not tested\n");
                th_rm_rf(dir);
                return;
        }
        assert_int_equal(th_write_random_file(shm, 7000, 6), 0);
        {
                uint8_t b[16];
                struct iovec iov = { .iov_base = b, .iov_len = sizeof b };
                if (preadv2(sfd, &iov, 1, 0, RWF_DONTCACHE) >= 0) {
                        print_message("this tmpfs takes RWF_DONTCACHE: the redo is not tested\n");
                        (void)unlink(shm);
                        th_rm_rf(dir);
                        return;
                }
        }
        e = new_linked_engine(IO_MODE_AUTO, 65536, 4);
        assert_non_null(e);
        o = (EngineJobOptions){ .dontcache = true };
        char *spaths[] = { shm, shm };
        run_paths(e, &o, spaths, 1, &c);
        assert_result_matches(&c.results[0], HASH_SHA256, shm);
        assert_int_equal(engine_get_files_linked(e), 0); /* redone */
        collector_done(&c);
        /* The classic read turned RWF_DONTCACHE off for the engine: the next chain goes through. */
        run_paths(e, &o, spaths, 2, &c);
        assert_result_matches(&c.results[0], HASH_SHA256, shm);
        assert_result_matches(&c.results[1], HASH_SHA256, shm);
        assert_int_equal(engine_get_files_linked(e), 2);
        assert_int_equal(count_occupied_direct_slots(), 0);
        collector_done(&c);
        engine_free(e);
        (void)unlink(shm);
        th_rm_rf(dir);
}

/* Cancel with chains in flight: every input gets a result (a digest that is right, or CANCELLED), no
 * fd and no direct slot stays open, and the engine hashes the same files afterwards. */
static void test_linked_cancel(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-linked-cancel");
        const size_t n = 3000;
        char **paths = calloc(n, sizeof(char *));
        int fds_before = th_count_fds();
        Engine *e = new_linked_engine(IO_MODE_AUTO, 65536, 16);
        EngineJob *j = NULL;
        Collector c;
        size_t cancelled = 0;

        if (!e) {
                free(paths);
                th_rm_rf(dir);
                skip();
        }
        for (size_t i = 0; i < n; i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], 1000 + i, (uint32_t)i), 0);
        }
        for (int round = 0; round < 2; round++) {
                collector_init(&c, n);
                assert_int_equal(engine_job_new(e, HASH_SHA3_256, NULL, &j), 0);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                assert_int_equal(engine_job_start(j, &callbacks, &c), 0);
                if (round == 0) {
                        /* Cancel as soon as the first results are in: chains are in flight then. */
                        while (c.n_seen == 0)
                                assert_true(engine_run_once(e, 100000) >= 0);
                        engine_job_cancel(j);
                }
                wait_job(e, &c, 60 * 1000000ull);
                assert_int_equal(c.job_result, round == 0 ? ENGINE_JOB_CANCELLED : ENGINE_JOB_DONE);
                for (size_t i = 0; i < n; i++) {
                        if (c.results[i].status == ENGINE_FILE_CANCELLED && round == 0) {
                                cancelled++;
                                continue;
                        }
                        if (i % 97 == 0 || c.results[i].status != ENGINE_FILE_OK)
                                assert_result_matches(&c.results[i], HASH_SHA3_256, paths[i]);
                }
                engine_job_unref(j);
                collector_done(&c);
                assert_int_equal(count_occupied_direct_slots(), 0);
        }
        assert_true(cancelled > 0);
        print_message("%zu of %zu cancelled\n", cancelled, n);
        assert_true(engine_get_files_linked(e) >= n);
        engine_free(e);
        assert_int_equal(th_count_fds(), fds_before);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        th_rm_rf(dir);
}

/* Without the kernel feature the engine opens the classic way and says so: no io_uring (pread), and a
 * file table larger than RLIMIT_NOFILE (refused with EMFILE). AUTO is the classic path. */
static int child_linked_fallback(void)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-linked-fb");
        _cleanup_free_ char *path = NULL;
        struct rlimit rl = { .rlim_cur = 64, .rlim_max = 64 };
        const EngineConfig cfgs[] = {
                { .io_mode = IO_MODE_PREAD, .open_mode = ENGINE_OPEN_LINKED },
                { .max_open = 128, .open_mode = ENGINE_OPEN_LINKED },
                { .open_mode = ENGINE_OPEN_AUTO },
        };

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 3333, 8), 0);
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 77;
        for (size_t i = 0; i < ELEMENTSOF(cfgs); i++) {
                Engine *e = NULL;
                Collector c;
                char *paths[] = { path };

                assert_int_equal(engine_new(&cfgs[i], &e), 0);
                assert_int_equal(engine_get_open_mode(e), ENGINE_OPEN_CLASSIC);
                run_paths(e, NULL, paths, 1, &c);
                assert_result_matches(&c.results[0], HASH_SHA256, path);
                assert_int_equal(engine_get_files_linked(e), 0);
                collector_done(&c);
                engine_free(e);
        }
        th_rm_rf(dir);
        return 0;
}

static void test_linked_fallback(void **state)
{
        Engine *e = NULL;
        EngineConfig bad = { .open_mode = _ENGINE_OPEN_MODE_MAX };

        assert_int_equal(engine_new(&bad, &e), -EINVAL);
        assert_string_equal(engine_open_mode_to_string(ENGINE_OPEN_LINKED), "linked");
        assert_int_equal(engine_open_mode_from_string("classic"), ENGINE_OPEN_CLASSIC);
        assert_int_equal(engine_open_mode_from_string("bogus"), _ENGINE_OPEN_MODE_INVALID);
        run_child(child_linked_fallback, "linked fallback");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_job_and_bad_args),
                cmocka_unit_test(test_sizes_auto),
                cmocka_unit_test(test_sizes_uring_plain),
                cmocka_unit_test(test_sizes_pread),
                cmocka_unit_test(test_small_buffers),
                cmocka_unit_test(test_one_buffer),
                cmocka_unit_test(test_errors_among_good),
                cmocka_unit_test(test_pipe),
                cmocka_unit_test(test_max_size),
                cmocka_unit_test(test_regular_only),
                cmocka_unit_test(test_many_files),
                cmocka_unit_test(test_growing_file),
                cmocka_unit_test(test_rewritten_file),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_unref_running),
                cmocka_unit_test(test_concurrent_jobs_and_free),
                cmocka_unit_test(test_emfile_queues),
                cmocka_unit_test(test_fallback_register_refused),
                cmocka_unit_test(test_fallback_no_uring),
                cmocka_unit_test(test_sparse_4g),
                cmocka_unit_test(test_strategies_digests),
                cmocka_unit_test(test_strategy_auto_choice),
                cmocka_unit_test(test_dontcache),
                cmocka_unit_test(test_mmap_truncated),
                cmocka_unit_test(test_mmap_windows),
                cmocka_unit_test(test_span_config),
                cmocka_unit_test(test_span_registered),
                cmocka_unit_test(test_span_unregistered),
                cmocka_unit_test(test_span_pread),
                cmocka_unit_test(test_span_einval_fallback),
                cmocka_unit_test(test_span_cancel),
                cmocka_unit_test(test_span_truncated),
                cmocka_unit_test(test_linked_sizes),
                cmocka_unit_test(test_linked_sizes_unregistered),
                cmocka_unit_test(test_linked_errors),
                cmocka_unit_test(test_linked_changed),
                cmocka_unit_test(test_linked_redo),
                cmocka_unit_test(test_linked_cancel),
                cmocka_unit_test(test_linked_fallback),
        };

        /* Reference tools are part of the test's contract: without them it cannot check anything. */
        const char *tools[] = { "sha256sum", "sha512sum", "sha1sum", "md5sum", "b2sum", "b3sum", "xxhsum", "openssl" };
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (!th_have_program(tools[i])) {
                        fprintf(stderr, "SKIP: reference tool %s is not installed\n", tools[i]);
                        return 77;
                }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
