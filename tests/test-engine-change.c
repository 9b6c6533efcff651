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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_growing_file),
                cmocka_unit_test(test_rewritten_file),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
