/* SPDX-License-Identifier: MIT */
/* test-engine-linked: the linked open/read/close chain for small files */
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

/* On the file's shard, between the statx that picked the file and the chain. */
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
                assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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
                cmocka_unit_test(test_linked_sizes),
                cmocka_unit_test(test_linked_sizes_unregistered),
                cmocka_unit_test(test_linked_errors),
                cmocka_unit_test(test_linked_changed),
                cmocka_unit_test(test_linked_redo),
                cmocka_unit_test(test_linked_cancel),
                cmocka_unit_test(test_linked_fallback),
        };

        if (require_reference_tools() != 0)
                return 77;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
