/* SPDX-License-Identifier: MIT */
/* test-engine-fallback: forced fallbacks in children: no registration, no io_uring, EMFILE */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
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

/* Registration refused for real: without CAP_IPC_LOCK and with a 1 MiB memlock limit, a 16 MiB pool
 * cannot be pinned; AUTO must fall back to plain reads and stay correct. */
static int child_register_refused(void)
{
        if (limit_memlock(1 << 20) < 0)
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

#define EMFILE_ROUNDS 40
#define EMFILE_ROUND_USEC (20 * USEC_PER_SEC)

/* Out of fds for real: with RLIMIT_NOFILE a little above what the process holds, a job of 300 files
 * (64 opened at once by default, over 3 shards) runs into EMFILE; the engine must queue the opens and
 * retry as its own files close, on any shard (one that holds no fd waits for another's closes), and
 * every file must still get its right digest. */
static int child_emfile(void)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-emfile");
        const size_t n = 300;
        uint8_t ref[HASH_DIGEST_MAX], *data = malloc(4096);
        Engine *e = NULL;
        struct rlimit rl;
        int k;

        k = engine_new(&(EngineConfig){ .workers = 3 }, &e);
        if (k < 0)
                return 11;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%03zu", dir, i) < 0 || th_write_random_file(p, 4096, (uint32_t)i + 1) < 0)
                        return 10;
        }
        rl.rlim_cur = rl.rlim_max = (rlim_t)th_count_fds() + 8;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 77;
        /* Rounds: a shard that defers its opens just after another closed its last fd must not wait
         * for a close that will never come (a round that takes EMFILE_ROUND_USEC has). */
        for (unsigned round = 0; round < EMFILE_ROUNDS; round++) {
                EngineJob *j = NULL;
                Collector c;
                uint64_t t0 = now_usec();

                collector_init(&c, n);
                if (engine_job_new(e, HASH_SHA256, NULL, &j) < 0)
                        return 12;
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%03zu", dir, i) < 0 || engine_job_add_path(j, p) < 0)
                                return 12;
                }
                if (engine_job_start(j, &test_callbacks, &c) < 0)
                        return 13;
                while (!c.done) {
                        engine_run_once(e, 100000);
                        if (now_usec() - t0 > EMFILE_ROUND_USEC) {
                                fprintf(stderr, "round %u: not done after %.0f s\n", round,
                                        (double)EMFILE_ROUND_USEC / USEC_PER_SEC);
                                return 16;
                        }
                }
                for (size_t i = 0; i < n; i++) {
                        th_fill_random(data, 4096, (uint32_t)i + 1);
                        hash_oneshot(HASH_SHA256, data, 4096, ref);
                        if (c.results[i].status != ENGINE_FILE_OK) {
                                fprintf(stderr, "round %u, file %zu: status %d error %s\n", round, i,
                                        c.results[i].status, strerror(-c.results[i].error));
                                return 14;
                        }
                        if (memcmp(c.results[i].digest, ref, 32) != 0)
                                return 15;
                }
                engine_job_unref(j);
                collector_done(&c);
        }
        engine_free(e);
        free(data);
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_emfile_queues),
                cmocka_unit_test(test_fallback_register_refused),
                cmocka_unit_test(test_fallback_no_uring),
        };

        /* Only SHA-256 is hashed here: a machine without b3sum can still run every case. */
        if (require_tools((const char *const[]){ "sha256sum", NULL }) != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
