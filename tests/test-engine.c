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
#include "test-engine-util.h"

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

/* Pool slots registered with their first read (EngineConfig.pool_on_demand, libfhash's in-process
 * runs): every size, in small slots and pool slots, with every algorithm; the first read into a
 * pool slot registers the pool, every read after it uses it. */
static void test_sizes_pool_on_demand(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-on-demand");
        char *paths[ELEMENTSOF(edge_sizes)];
        Engine *e = NULL;

        assert_int_equal(engine_new(&(EngineConfig){ .buffer_size = SLOT, .buffers = 8, .pool_on_demand = true }, &e),
                         0);
        print_message("io mode: %s\n", io_mode_to_string(engine_get_io_mode(e)));
        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/size-%" PRIu64, dir, edge_sizes[i]) > 0);
                assert_int_equal(th_write_random_file(paths[i], edge_sizes[i], (uint32_t)i + 7), 0);
        }
        check_paths_all_algos(e, paths, ELEMENTSOF(edge_sizes));
        for (size_t i = 0; i < ELEMENTSOF(edge_sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
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
                assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), -EBUSY);
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

static uint8_t *read_whole(const char *path, size_t *ret_n)
{
        struct stat st;
        uint8_t *buf;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        buf = malloc((size_t)st.st_size + 1);
        assert_non_null(buf);
        assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
        close(fd);
        *ret_n = (size_t)st.st_size;
        return buf;
}

/* HashParams through the engine: BLAKE3 lengths, keys and contexts (files of several buffers go
 * to every worker as pieces, merged in the params' mode), BLAKE2 lengths; equal to the hash layer's
 * one-shot digest. The engine keeps its own copy: the caller's key and context are gone before the
 * job runs. Params that do not suit the algorithm are refused when the job is made. */
static void test_params(void **state)
{
        static const uint64_t sizes[] = { 0, 1000, 65536 + 5, 3 * SLOT + 17 };
        _cleanup_free_ char *dir = th_mkdtemp("engine-params");
        char *paths[ELEMENTSOF(sizes)];
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        struct {
                HashAlgo algo;
                uint32_t out_len;
                bool keyed;
                const char *context;
        } cases[] = {
                { HASH_BLAKE3, 64, false, NULL },  { HASH_BLAKE3, 0, true, NULL },
                { HASH_BLAKE3, 0, false, "fhash 2026-11-24 engine test context" },
                { HASH_BLAKE3, 17, true, NULL },   { HASH_BLAKE3, 5, false, "ctx" },
                { HASH_BLAKE2B, 32, false, NULL }, { HASH_BLAKE2S, 16, false, NULL },
                { HASH_BLAKE2B, 1, false, NULL },
        };
        EngineJob *j = NULL;

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], sizes[i], (uint32_t)i + 90), 0);
        }
        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                HashParams p = { .out_len = cases[k].out_len, .keyed = cases[k].keyed };
                char *context = cases[k].context ? strdup(cases[k].context) : NULL;
                EngineJobOptions o = { .params = &p };
                Collector c;

                for (size_t b = 0; b < HASH_KEY_SIZE; b++)
                        p.key[b] = (uint8_t)(b * 7 + k);
                p.context = context;
                collector_init(&c, ELEMENTSOF(sizes));
                assert_int_equal(engine_job_new(e, cases[k].algo, &o, &j), 0);
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                        assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                /* The engine's copy is what counts: wipe ours, and the context's memory. */
                HashParams ref = p;
                _cleanup_free_ char *ref_context = context ? strdup(context) : NULL;
                ref.context = ref_context;
                hash_params_wipe(&p);
                if (context)
                        memset(context, 'x', strlen(context));
                free(context);
                assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
                wait_job(e, &c, 60 * 1000000ull);
                assert_int_equal(c.job_result, ENGINE_JOB_DONE);
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                        uint8_t want[HASH_DIGEST_MAX];
                        size_t n, want_size = hash_params_digest_size(cases[k].algo, &ref);
                        _cleanup_free_ uint8_t *data = read_whole(paths[i], &n);

                        assert_int_equal(hash_oneshot_params(cases[k].algo, &ref, data, n, want), 0);
                        assert_int_equal(c.results[i].status, ENGINE_FILE_OK);
                        assert_int_equal(c.results[i].digest_size, want_size);
                        if (memcmp(c.results[i].digest, want, want_size) != 0)
                                fail_msg("case %zu (%s), file of %" PRIu64 " bytes: digest differs", k,
                                         hash_algo_to_string(cases[k].algo), sizes[i]);
                }
                hash_params_wipe(&ref);
                engine_job_unref(j);
                collector_done(&c);
        }

        HashParams bad = { .out_len = 16 };
        EngineJobOptions o = { .params = &bad };
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), -EOPNOTSUPP);
        bad = (HashParams){ .out_len = HASH_DIGEST_MAX + 1 };
        assert_int_equal(engine_job_new(e, HASH_BLAKE3, &o, &j), -ERANGE);
        bad = (HashParams){ .keyed = true, .context = "c" };
        assert_int_equal(engine_job_new(e, HASH_BLAKE3, &o, &j), -EINVAL);

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                free(paths[i]);
        engine_free(e);
        th_rm_rf(dir);
}

/* Several algorithms in one read: each result is the set's digests joined, as each alone gives,
 * whichever way the file is read (BLAKE3 big enough for pieces is hashed whole in a set). */
static void test_algos(void **state)
{
        static const uint64_t sizes[] = { 0, 1000, 65536 + 5, 3 * SLOT + 17 };
        static const EngineReadStrategy strategies[] = { ENGINE_READ_AUTO, ENGINE_READ_BUFFERED,
                                                         ENGINE_READ_MMAP, ENGINE_READ_DIRECT };
        static const char *const sets[] = { "sha256,blake3", "blake3,xxh3,md5,sha512", "crc32c,sha1",
                                            "xxh128,blake2b,sha3-256" };
        _cleanup_free_ char *dir = th_mkdtemp("engine-algos");
        char *paths[ELEMENTSOF(sizes)];
        Engine *e = new_engine(IO_MODE_AUTO, SLOT, 8);
        EngineJob *j = NULL;

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], sizes[i], (uint32_t)i + 190), 0);
        }
        for (size_t k = 0; k < ELEMENTSOF(sets) * ELEMENTSOF(strategies); k++) {
                HashAlgoSet set;
                EngineJobOptions o = { .algos = &set, .strategy = strategies[k % ELEMENTSOF(strategies)] };
                Collector c;

                assert_int_equal(hash_algo_set_parse(sets[k / ELEMENTSOF(strategies)], &set), 0);
                collector_init(&c, ELEMENTSOF(sizes));
                assert_int_equal(engine_job_new(e, set.algos[0], &o, &j), 0);
                assert_int_equal(engine_job_get_algos(j)->n, set.n);
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                        assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
                wait_job(e, &c, 60 * 1000000ull);
                assert_int_equal(c.job_result, ENGINE_JOB_DONE);
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                        uint8_t want[HASH_SET_DIGEST_MAX];
                        size_t n, off = 0;
                        _cleanup_free_ uint8_t *data = read_whole(paths[i], &n);

                        for (unsigned a = 0; a < set.n; a++) {
                                assert_int_equal(hash_oneshot(set.algos[a], data, n, want + off), 0);
                                off += hash_algo_digest_size(set.algos[a]);
                        }
                        assert_int_equal(c.results[i].status, ENGINE_FILE_OK);
                        assert_int_equal(c.results[i].digest_size, hash_algo_set_digest_size(&set));
                        assert_int_equal(c.results[i].digest_size, off);
                        assert_false(c.results[i].parallel);
                        if (memcmp(c.results[i].digest, want, off) != 0)
                                fail_msg("%s, strategy %zu, file of %" PRIu64 " bytes: digests differ",
                                         sets[k / ELEMENTSOF(strategies)], k % ELEMENTSOF(strategies), sizes[i]);
                }
                engine_job_unref(j);
                collector_done(&c);
        }

        /* A set that does not start with the job's algorithm, or with parameters, is refused. */
        HashAlgoSet set;
        HashParams p = { .out_len = 16 };
        EngineJobOptions o = { .algos = &set };
        assert_int_equal(hash_algo_set_parse("sha256,blake3", &set), 0);
        assert_int_equal(engine_job_new(e, HASH_BLAKE3, &o, &j), -EINVAL);
        o.params = &p;
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), -EINVAL);

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                free(paths[i]);
        engine_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_job_and_bad_args),
                cmocka_unit_test(test_params),
                cmocka_unit_test(test_algos),
                cmocka_unit_test(test_sizes_auto),
                cmocka_unit_test(test_sizes_pool_on_demand),
                cmocka_unit_test(test_sizes_uring_plain),
                cmocka_unit_test(test_sizes_pread),
                cmocka_unit_test(test_small_buffers),
                cmocka_unit_test(test_one_buffer),
                cmocka_unit_test(test_errors_among_good),
                cmocka_unit_test(test_pipe),
                cmocka_unit_test(test_max_size),
                cmocka_unit_test(test_regular_only),
                cmocka_unit_test(test_many_files),
                cmocka_unit_test(test_sparse_4g),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
