/* SPDX-License-Identifier: MIT */
/* test-engine-change: files that change while they are read */
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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

/* Runs one input (a path, or an fd when path is NULL) while calling poke() once, from this thread,
 * when the job is well under way (some bytes hashed, most not): the file then changes (or not)
 * while it is read. */
static EngineFileResult run_and_poke(const char *path, int fd, void (*poke)(void *userdata), void *userdata)
{
        /* Small slow reads and the slowest algorithm keep the job running for a while. */
        Engine *e = new_engine(IO_MODE_AUTO, 65536, 2);
        EngineJob *j = NULL;
        EngineFileResult r;
        bool poked = false;
        Collector c;

        collector_init(&c, 1);
        assert_int_equal(engine_job_new(e, HASH_SHA3_256, NULL, &j), 0);
        if (path)
                assert_int_equal(engine_job_add_path(j, path), 0);
        else
                assert_int_equal(engine_job_add_fd(j, fd), 0);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        while (!c.done) {
                EngineJobProgress p;
                engine_job_get_progress(j, &p);
                if (!poked && p.bytes_done > 0 && p.bytes_total > 0 && p.bytes_done < p.bytes_total / 2) {
                        poke(userdata);
                        poked = true;
                }
                assert_true(engine_run_once(e, 1000) >= 0);
        }
        assert_true(poked); /* else the file was too fast to test anything */
        r = c.results[0];
        engine_job_unref(j);
        collector_done(&c);
        engine_free(e);
        return r;
}

static void rewrite_keep_mtime(void *userdata)
{
        const char *path = userdata;
        struct stat st;
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        /* Bytes the engine has hashed already, so that only the metadata can tell. */
        assert_int_equal(pwrite(fd, "XXXX", 4, 100), 4);
        assert_int_equal(futimens(fd, (struct timespec[2]){ st.st_atim, st.st_mtim }), 0);
        safe_close(fd);
}

/* L5: a writer who rewrites bytes in place and puts mtime back with futimens() cannot get a digest:
 * ctime moved. */
static void test_rewrite_restored_mtime(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-ctime"), *path = NULL;
        EngineFileResult r;

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 256u << 20, 11), 0);
        r = run_and_poke(path, -EBADF, rewrite_keep_mtime, path);
        assert_int_equal(r.status, ENGINE_FILE_CHANGED);
        assert_int_equal(r.digest_size, 0);
        /* Size and mtime are the same before and after: ctime was the tell. */
        assert_int_equal(r.size_before, r.size_after);
        assert_true(r.mtime_before_nsec == r.mtime_after_nsec);
        th_rm_rf(dir);
}

static void unlink_path(void *userdata)
{
        assert_int_equal(unlink(userdata), 0);
}

/* ... while an fd whose file is unlinked mid-hash (ctime and link count change, bytes do not) still
 * gets its digest. */
static void test_unlinked_fd_hashes(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-unlink"), *path = NULL, *ref = NULL;
        char hex[HASH_HEX_MAX];
        EngineFileResult r;
        int fd;

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 128u << 20, 12), 0);
        ref = reference_digest(HASH_SHA3_256, path);
        assert_non_null(ref);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        r = run_and_poke(NULL, fd, unlink_path, path);
        assert_int_equal(r.status, ENGINE_FILE_OK);
        hash_to_hex(r.digest, r.digest_size, hex);
        assert_string_equal(hex, ref);
        th_rm_rf(dir);
}

/* I1: a caller's fd opened O_DIRECT is read in aligned requests (the pool is aligned), not failed with
 * EINVAL; tails that are not whole blocks included. */
static void test_caller_odirect_fd(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-odirect");
        static const uint64_t sizes[] = { 1, 4095, 4096, 4097, 65537, (1u << 20) + 1, 3 * (1u << 20) + 17 };
        Engine *e = new_engine(IO_MODE_AUTO, 0, 0);

        if (!dir_has_direct(dir)) {
                engine_free(e);
                th_rm_rf(dir);
                skip();
        }
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ char *path = NULL;
                EngineFileResult r;
                int fd;

                assert_true(asprintf(&path, "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(path, sizes[i], (uint32_t)i + 20), 0);
                fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
                assert_true(fd >= 0);
                r = hash_one(e, HASH_SHA256, NULL, fd, NULL);
                assert_result_matches(&r, HASH_SHA256, path);
                assert_int_equal(r.strategy, ENGINE_READ_DIRECT);
        }
        engine_free(e);
        th_rm_rf(dir);
}

/* I1: a sysfs attribute (st_size 4096, a few bytes of content) hashes as sha256sum does: its
 * content, not CHANGED; by path and by fd. */
static void test_sysfs_attribute(void **state)
{
        static const char path[] = "/sys/kernel/mm/transparent_hugepage/enabled";
        uint8_t buf[8192], ref[HASH_DIGEST_MAX];
        Engine *e;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                skip(); /* no sysfs here (a container without /sys) */
        n = read(fd, buf, sizeof(buf));
        safe_close(fd);
        assert_true(n > 0 && n < 4096);
        assert_int_equal(hash_oneshot(HASH_SHA256, buf, (size_t)n, ref), 0);

        e = new_engine(IO_MODE_AUTO, 0, 0);
        for (int by_fd = 0; by_fd < 2; by_fd++) {
                EngineFileResult r = hash_one(e, HASH_SHA256, by_fd ? NULL : path,
                                              by_fd ? open(path, O_RDONLY | O_CLOEXEC) : -EBADF, NULL);
                assert_int_equal(r.status, ENGINE_FILE_OK);
                assert_int_equal(r.size, (uint64_t)n);
                assert_memory_equal(r.digest, ref, 32);
        }
        engine_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_growing_file),
                cmocka_unit_test(test_rewritten_file),
                cmocka_unit_test(test_rewrite_restored_mtime),
                cmocka_unit_test(test_unlinked_fd_hashes),
                cmocka_unit_test(test_caller_odirect_fd),
                cmocka_unit_test(test_sysfs_attribute),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
