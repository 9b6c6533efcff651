/* SPDX-License-Identifier: MIT */
/* test-engine-creds: names opened beneath a caller's directory (EngineDir), with a caller's
 * credentials (EngineCreds), as fhashd will open them for its callers (issue 24) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "engine/engine.h"
#include "hash/hash.h"
#include "test-engine-util.h"
#include "test-helpers.h"

typedef struct Name {
        const char *name;
        int error;  /* 0: hashed, and its digest is the reference's */
} Name;

/* Hashes names beneath dir_path (a fresh O_PATH fd of it) with creds (NULL: the process's), checks
 * each result, and that the directory's fd is closed once the job is gone. */
static void check_names(Engine *e, const char *dir_path, const Name *names, size_t n, const EngineCreds *creds)
{
        EngineJobOptions o = { .regular_only = true, .creds = creds };
        _cleanup_(engine_dir_unrefp) EngineDir *dir = NULL;
        EngineJob *j = NULL;
        Collector c;
        int fd;

        fd = open(dir_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        dir = engine_dir_new(fd);
        assert_non_null(dir);
        collector_init(&c, n);
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(engine_job_add_input(j, &(EngineInput){ .path = names[i].name, .dir = dir,
                                                                         .cookie = i }),
                                 (int)i);
        dir = engine_dir_unref(dir); /* the job's inputs hold it now */
        assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC);
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        wait_job(e, &c, 60 * 1000000ull);
        for (size_t i = 0; i < n; i++) {
                const EngineFileResult *r = &c.results[i];

                if (names[i].error == 0) {
                        _cleanup_free_ char *path = NULL;

                        assert_true(asprintf(&path, "%s/%s", dir_path, names[i].name) > 0);
                        assert_result_matches(r, HASH_SHA256, path);
                } else if (r->status != ENGINE_FILE_ERROR || r->error != names[i].error)
                        fail_msg("%s: status %d error %d, expected error %d", names[i].name, r->status, r->error,
                                 names[i].error);
        }
        collector_done(&c);
        engine_job_unref(j);
        /* The last reference went with the job: the fd is closed. */
        assert_int_equal(fcntl(fd, F_GETFD), -1);
        assert_int_equal(errno, EBADF);
}

static Engine *creds_engine(void)
{
        EngineConfig cfg = { .buffer_size = SLOT, .buffers = 8 };
        Engine *e = NULL;

        assert_int_equal(engine_new(&cfg, &e), 0);
        return e;
}

/* A name cannot leave its directory or the directory's mount: "..", symlinks out of it, absolute
 * symlinks, /proc's magic links and a mount point below it all fail EXDEV (or ELOOP), the process's
 * credentials or not. */
static void test_beneath(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-creds");
        char p[4096];
        Engine *e = creds_engine();

        snprintf(p, sizeof(p), "%s/in", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/in/sub", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/in/a", dir);
        assert_int_equal(th_write_random_file(p, 5000, 1), 0);
        snprintf(p, sizeof(p), "%s/in/sub/b", dir);
        assert_int_equal(th_write_random_file(p, 70000, 2), 0);
        snprintf(p, sizeof(p), "%s/outside", dir);
        assert_int_equal(th_write_random_file(p, 100, 3), 0);
        snprintf(p, sizeof(p), "%s/in/up", dir);
        assert_int_equal(symlink("../outside", p), 0);
        snprintf(p, sizeof(p), "%s/in/abs", dir);
        assert_int_equal(symlink("/etc/hostname", p), 0);
        snprintf(p, sizeof(p), "%s/in/inner", dir);
        assert_int_equal(symlink("sub/b", p), 0);

        snprintf(p, sizeof(p), "%s/in", dir);
        const Name names[] = {
                { "a", 0 },         { "sub/b", 0 },      { "inner", 0 },   { "../outside", -EXDEV },
                { "up", -EXDEV },   { "abs", -EXDEV },   { "sub", -EISDIR }, { "missing", -ENOENT },
                { "/etc/hostname", -EXDEV },
        };
        check_names(e, p, names, ELEMENTSOF(names), NULL);

        /* /proc is a mount of its own below /: not reached from a directory on /. */
        const Name proc[] = { { "proc/self/status", -EXDEV } };
        check_names(e, "/", proc, ELEMENTSOF(proc), NULL);

        engine_free(e);
        th_rm_rf(dir);
}

/* A directory nobody may search, for a test that opens with other uids' credentials: skipped (the
 * test returns) unless this process may take them (root with CAP_SETUID). */
static char *creds_dir(void)
{
        char *dir;

        if (geteuid() != 0 || !engine_creds_supported()) {
                print_message("not root with CAP_SETUID: no other uid's credentials to open with: skipped\n");
                skip();
        }
        dir = th_mkdtemp("engine-creds");
        assert_int_equal(chmod(dir, 0755), 0);
        return dir;
}

/* A file of size bytes (content from seed) in dir, with mode. */
static void make_file(const char *dir, const char *name, uint64_t size, uint32_t seed, mode_t mode)
{
        char p[4096];

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        assert_int_equal(th_write_random_file(p, size, seed), 0);
        assert_int_equal(chmod(p, mode), 0);
}

/* With a caller's credentials the kernel's permission checks are the caller's: nobody reads what
 * nobody may, group members what the group may, and the shards take back their own credentials
 * (root's unreadable file is read again at once without creds). */
static void test_caller_creds(void **state)
{
        _cleanup_free_ char *dir = creds_dir();
        char p[4096];
        Engine *e = creds_engine();

        make_file(dir, "public", 3000, 4, 0644);
        make_file(dir, "secret", 3000, 5, 0600);
        make_file(dir, "group", 3000, 6, 0640);
        snprintf(p, sizeof(p), "%s/group", dir);
        assert_int_equal(chown(p, 0, 4321), 0);
        snprintf(p, sizeof(p), "%s/closed", dir);
        assert_int_equal(mkdir(p, 0700), 0);
        make_file(dir, "closed/inside", 10, 7, 0644);

        const EngineCreds nobody = { .uid = 65534, .n_groups = 1, .groups = { 65534 } };
        const EngineCreds member = { .uid = 65534, .n_groups = 2, .groups = { 65534, 4321 } };
        const Name as_nobody[] = {
                { "public", 0 }, { "secret", -EACCES }, { "group", -EACCES }, { "closed/inside", -EACCES },
        };
        const Name as_member[] = { { "public", 0 }, { "secret", -EACCES }, { "group", 0 } };
        const Name as_root[] = { { "public", 0 }, { "secret", 0 }, { "group", 0 }, { "closed/inside", 0 } };

        /* Twice each way: the second time from the shards' cached personalities. */
        for (int round = 0; round < 2; round++) {
                check_names(e, dir, as_nobody, ELEMENTSOF(as_nobody), &nobody);
                check_names(e, dir, as_member, ELEMENTSOF(as_member), &member);
                check_names(e, dir, as_root, ELEMENTSOF(as_root), NULL);
        }
        /* The consumer thread's own credentials were never touched. */
        assert_int_equal((uid_t)syscall(SYS_setfsuid, (uid_t)-1), 0);
        assert_int_equal((gid_t)syscall(SYS_setfsgid, (gid_t)-1), getegid());

        engine_free(e);
        th_rm_rf(dir);
}

/* More callers than a shard keeps personalities for (32): the least recently used goes, and each
 * caller's opens still run with its own credentials, the first one's too when it comes back. */
static void test_many_callers(void **state)
{
        _cleanup_free_ char *dir = creds_dir();
        EngineConfig cfg = { .buffer_size = SLOT, .buffers = 4, .workers = 1 };
        char p[4096];
        Engine *e = NULL;

        assert_int_equal(engine_new(&cfg, &e), 0);
        make_file(dir, "public", 1000, 8, 0644);
        make_file(dir, "own", 1000, 9, 0600);
        snprintf(p, sizeof(p), "%s/own", dir);
        const Name names[] = { { "public", 0 }, { "own", -EACCES } };

        for (unsigned round = 0; round < 2; round++)
                for (uid_t uid = 20000; uid < 20040; uid++) {
                        EngineCreds c = { .uid = uid, .n_groups = 1, .groups = { uid } };

                        /* "own" is root's: nobody of these may read it, whatever the cache holds. */
                        check_names(e, dir, names, ELEMENTSOF(names), &c);
                }
        /* A caller whose uid owns the file reads it; the next one does not. */
        assert_int_equal(chown(p, 20001, 20001), 0);
        const Name owner[] = { { "own", 0 } }, other[] = { { "own", -EACCES } };
        check_names(e, dir, owner, 1, &(EngineCreds){ .uid = 20001, .n_groups = 1, .groups = { 20001 } });
        check_names(e, dir, other, 1, &(EngineCreds){ .uid = 20002, .n_groups = 1, .groups = { 20002 } });
        engine_free(e);
        th_rm_rf(dir);
}

/* Credentials the engine cannot use are refused before any file is touched. */
static void test_creds_invalid(void **state)
{
        Engine *e = creds_engine();
        EngineJob *j = NULL;
        EngineCreds none = { .uid = 65534, .n_groups = 0 };
        EngineJobOptions o = { .creds = &none };

        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), -EINVAL);
        none.n_groups = ENGINE_CREDS_GROUPS_MAX + 1;
        assert_int_equal(engine_job_new(e, HASH_SHA256, &o, &j), -EINVAL);
        assert_null(engine_dir_new(-EBADF));
        engine_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_beneath),
                cmocka_unit_test(test_caller_creds),
                cmocka_unit_test(test_many_callers),
                cmocka_unit_test(test_creds_invalid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
