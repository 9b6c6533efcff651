/* SPDX-License-Identifier: MIT */
/* test-engine-priority: background engines (idle threads and I/O class, cache-neutral, yielding to a
 * busy normal engine) and interactive jobs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "engine/engine.h"
#include "hash/hash.h"
#include "basic/idle.h"
#include "test-engine-util.h"
#include "test-helpers.h"

#define USEC_PER_SEC UINT64_C(1000000)

/* The scheduling policy (field 41 of /proc/self/task/TID/stat) and the I/O priority of every thread
 * whose name starts with prefix; returns how many there were, each checked against want_policy and
 * want_ioprio (-1: not checked). */
static unsigned check_threads(const char *prefix, int want_policy, int want_ioprio)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        unsigned n = 0;

        assert_non_null(d);
        while ((de = readdir(d))) {
                char path[320], comm[32] = "", stat[1024];
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                (void)snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                if (!fgets(comm, sizeof(comm), f))
                        comm[0] = '\0';
                fclose(f);
                if (strncmp(comm, prefix, strlen(prefix)) != 0)
                        continue;

                (void)snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
                f = fopen(path, "re");
                assert_non_null(f);
                assert_non_null(fgets(stat, sizeof(stat), f));
                fclose(f);
                /* Fields after the name, which is in parentheses and may hold spaces: state is
                 * field 3, policy field 41. */
                char *p = strrchr(stat, ')');
                assert_non_null(p);
                p += 2;
                for (int field = 3; field < 41; field++) {
                        p = strchr(p, ' ');
                        assert_non_null(p);
                        p++;
                }
                assert_int_equal(atoi(p), want_policy);
                if (want_ioprio >= 0)
                        assert_int_equal(syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, atoi(de->d_name)), want_ioprio);
                n++;
        }
        closedir(d);
        return n;
}

static Engine *new_background(Engine *yield_to, unsigned workers)
{
        Engine *e = NULL;

        assert_int_equal(engine_new(&(EngineConfig){ .workers = workers, .background = true, .yield_to = yield_to }, &e),
                         0);
        assert_true(engine_is_background(e));
        return e;
}

/* A background engine's shards are SCHED_IDLE at the idle I/O class, a normal engine's are not; both
 * give the reference digests. */
static void test_background_threads(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        Engine *fg = NULL, *bg;
        char *paths[3];
        static const uint64_t sizes[] = { 0, 100000, 3u << 20 };

        assert_int_equal(engine_new(&(EngineConfig){ .workers = 2 }, &fg), 0);
        assert_false(engine_is_background(fg));
        bg = new_background(fg, 2);
        assert_int_equal(check_threads("fhash-idle", SCHED_IDLE, (int)IO_PRIO_IDLE), 2);
        assert_int_equal(check_threads("fhash-shard", SCHED_OTHER, -1), 2);
        /* The consumer thread is left as it was. */
        assert_false(thread_is_idle());

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], sizes[i], (uint32_t)i + 7), 0);
        }
        check_paths_all_algos(bg, paths, ELEMENTSOF(sizes));
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                free(paths[i]);
        engine_free(bg);
        engine_free(fg);
        th_rm_rf(dir);
}

/* Does the file system under dir take RWF_DONTCACHE (Linux 6.14+, and the file system's support)? */
static bool dir_has_dontcache(const char *dir)
{
        _cleanup_free_ char *p = NULL;
        char buf[4096];
        int fd;
        ssize_t k;

        assert_true(asprintf(&p, "%s/probe", dir) > 0);
        assert_int_equal(th_write_random_file(p, sizeof(buf), 1), 0);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        k = preadv2(fd, &(struct iovec){ .iov_base = buf, .iov_len = sizeof(buf) }, 1, 0, RWF_DONTCACHE);
        close(fd);
        (void)unlink(p);
        return k >= 0;
}

/* A background job leaves the page cache as it found it: a cold small file read through the cache
 * is not left there, where a normal engine leaves it cached. */
static void test_background_cache_neutral(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        _cleanup_free_ char *path = NULL;
        Engine *fg = NULL, *bg;
        EngineFileResult r;

        if (!have_cachestat()) {
                skip();
                return;
        }
        if (!dir_has_dontcache(dir)) {
                print_message("# the file system of %s refuses RWF_DONTCACHE: nothing to compare\n", dir);
                th_rm_rf(dir);
                skip();
                return;
        }
        assert_true(asprintf(&path, "%s/small", dir) > 0);
        assert_int_equal(th_write_random_file(path, 100000, 3), 0);
        assert_int_equal(engine_new(&(EngineConfig){ .workers = 1 }, &fg), 0);
        bg = new_background(NULL, 1);

        file_make_cold(path);
        r = hash_one(bg, HASH_SHA256, path, -1, NULL);
        assert_int_equal(r.status, ENGINE_FILE_OK);
        assert_int_equal(file_cache_state(path).cached, 0);

        /* The same read at normal priority caches it: the comparison above means something. */
        file_make_cold(path);
        r = hash_one(fg, HASH_SHA256, path, -1, NULL);
        assert_int_equal(r.status, ENGINE_FILE_OK);
        assert_true(file_cache_state(path).cached > 0);

        engine_free(bg);
        engine_free(fg);
        th_rm_rf(dir);
}

/* Dispatches both engines' results for up to usec. */
static void pump(Engine *a, Engine *b, uint64_t usec)
{
        struct pollfd p[2] = { { .fd = engine_get_fd(a), .events = POLLIN }, { .fd = engine_get_fd(b), .events = POLLIN } };

        (void)poll(p, 2, (int)MAX(usec / 1000, (uint64_t)1));
        assert_true(engine_dispatch(a) >= 0);
        assert_true(engine_dispatch(b) >= 0);
}

typedef struct Feeder {
        int fd;
        atomic_bool stop;
} Feeder;

/* Keeps a pipe full until told to stop, then closes it: a normal job that moves all the time. */
static void *feeder(void *arg)
{
        Feeder *f = arg;
        static char buf[64 << 10];

        memset(buf, 'x', sizeof(buf));
        while (!atomic_load(&f->stop))
                if (write(f->fd, buf, sizeof(buf)) < 0)
                        break;
        close(f->fd);
        return NULL;
}

#define N_BG 32

static EngineJob *start_paths(Engine *e, const EngineJobOptions *o, char **paths, size_t n, Collector *c)
{
        EngineJob *j = NULL;

        collector_init(c, n);
        assert_int_equal(engine_job_new(e, HASH_SHA256, o, &j), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
        assert_int_equal(engine_job_start(j, &test_callbacks, c), 0);
        return j;
}

static void make_files(const char *dir, char **paths, size_t n, uint64_t size)
{
        for (size_t i = 0; i < n; i++) {
                assert_true(asprintf(&paths[i], "%s/b%03zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], size, (uint32_t)i), 0);
        }
}

/*
 * While a normal job moves (a pipe kept full), the background engine that yields to it opens
 * nothing: none of its files finishes in 400 ms, 4 times ENGINE_YIELD_WINDOW_USEC. Once the normal
 * job is done, every background file is hashed. A normal job that does not move (a pipe nobody
 * writes to) holds nothing up past the window.
 */
static void test_yield(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        char *paths[N_BG];
        Engine *fg = NULL, *bg;
        Collector cf, cb, cs;
        EngineJob *jf, *jb, *js;
        Feeder f = {};
        pthread_t t;
        int p[2], silent[2];
        uint64_t end;

        make_files(dir, paths, N_BG, 64 << 10);
        assert_int_equal(engine_new(&(EngineConfig){ .workers = 2 }, &fg), 0);
        bg = new_background(fg, 2);

        /* The normal job: one pipe, kept full by a thread. */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        f.fd = p[1];
        collector_init(&cf, 1);
        assert_int_equal(engine_job_new(fg, HASH_XXH3, &(EngineJobOptions){ .max_file_size = UINT64_MAX }, &jf), 0);
        assert_int_equal(engine_job_add_fd(jf, p[0]), 0);
        assert_int_equal(engine_job_start(jf, &test_callbacks, &cf), 0);
        assert_int_equal(pthread_create(&t, NULL, feeder, &f), 0);
        /* Until its shard has made progress, the normal engine is not busy yet. */
        end = now_usec() + 5 * USEC_PER_SEC;
        while (!engine_is_busy(fg, now_usec(), ENGINE_YIELD_WINDOW_USEC)) {
                assert_true(now_usec() < end);
                pump(fg, bg, 1000);
        }

        jb = start_paths(bg, NULL, paths, N_BG, &cb);
        end = now_usec() + 4 * ENGINE_YIELD_WINDOW_USEC;
        while (now_usec() < end)
                pump(fg, bg, 10000);
        assert_int_equal(cb.n_seen, 0);
        assert_false(cf.done);

        atomic_store(&f.stop, true);
        assert_int_equal(pthread_join(t, NULL), 0);
        end = now_usec() + 30 * USEC_PER_SEC;
        while (!cf.done || !cb.done) {
                assert_true(now_usec() < end);
                pump(fg, bg, 10000);
        }
        assert_int_equal(cf.results[0].status, ENGINE_FILE_OK);
        assert_int_equal(cb.n_seen, N_BG);
        for (size_t i = 0; i < N_BG; i++)
                assert_result_matches(&cb.results[i], HASH_SHA256, paths[i]);
        engine_job_unref(jf);
        engine_job_unref(jb);
        collector_done(&cf);
        collector_done(&cb);

        /* A normal job on a silent pipe: queued, not moving. */
        assert_int_equal(pipe2(silent, O_CLOEXEC), 0);
        collector_init(&cs, 1);
        assert_int_equal(engine_job_new(fg, HASH_XXH3, &(EngineJobOptions){ .max_file_size = UINT64_MAX }, &js), 0);
        assert_int_equal(engine_job_add_fd(js, silent[0]), 0);
        assert_int_equal(engine_job_start(js, &test_callbacks, &cs), 0);
        jb = start_paths(bg, NULL, paths, N_BG, &cb);
        end = now_usec() + 30 * USEC_PER_SEC;
        while (!cb.done) {
                assert_true(now_usec() < end);
                pump(fg, bg, 10000);
        }
        assert_int_equal(cb.n_seen, N_BG);
        assert_false(cs.done);
        close(silent[1]);
        while (!cs.done) {
                assert_true(now_usec() < end);
                pump(fg, bg, 10000);
        }
        engine_job_unref(js);
        engine_job_unref(jb);
        collector_done(&cs);
        collector_done(&cb);

        for (size_t i = 0; i < N_BG; i++)
                free(paths[i]);
        engine_free(bg);
        engine_free(fg);
        th_rm_rf(dir);
}

/* A child that reads 4 KiB blocks of path with O_DIRECT, one at a time, until killed: another
 * process using the disk, as fio's random reads do. */
static pid_t foreign_reader(const char *path)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                void *buf = NULL;
                int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

                if (fd < 0 || posix_memalign(&buf, 4096, 4096) != 0)
                        _exit(1);
                for (uint64_t i = 0;; i++)
                        if (pread(fd, buf, 4096, (off_t)((i * 7919) % 4096) * 4096) < 0)
                                _exit(1);
        }
        return pid;
}

/* read_bytes of /proc/PID/io: what the kernel counted of a process's reads from storage. */
static uint64_t child_read_bytes(pid_t pid)
{
        char path[64], buf[512];
        unsigned long long v = 0;
        FILE *f;

        (void)snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(buf, sizeof(buf), f))
                if (sscanf(buf, "read_bytes: %llu", &v) == 1)
                        break;
        fclose(f);
        return v;
}

/* Whether dir is on a block device that takes O_DIRECT (and, with cachestat, the kernel has
 * cachestat(2)): a disk the watch can share with another reader. Says why not where it is not. */
static bool disk_to_share(const char *dir, bool cachestat)
{
        struct stat st;

        assert_int_equal(stat(dir, &st), 0);
        if ((!cachestat || have_cachestat()) && major(st.st_dev) != 0 && dir_has_direct(dir))
                return true;
        print_message("# %s is not on a block device that takes O_DIRECT%s: no disk to share\n", dir,
                      cachestat ? ", or no cachestat" : "");
        return false;
}

/* Another process reading the disk of dir: a 16 MiB file there, written back first (an O_DIRECT
 * read of dirty pages waits for their writeback), read by foreign_reader(), under way (the kernel
 * counted some of its reads) when this returns. */
static pid_t foreign_reader_start(const char *dir)
{
        _cleanup_free_ char *big = NULL;
        uint64_t end;
        pid_t child;

        assert_true(asprintf(&big, "%s/foreign", dir) > 0);
        assert_int_equal(th_write_random_file(big, 16u << 20, 9), 0);
        file_make_cold(big);
        child = foreign_reader(big);
        end = now_usec() + 10 * USEC_PER_SEC;
        while (child_read_bytes(child) < (64u << 10)) {
                assert_true(now_usec() < end);
                (void)usleep(1000);
        }
        return child;
}

/* Ends it; whether it was still reading until then. */
static bool foreign_reader_stop(pid_t child)
{
        bool alive = waitpid(child, &(int){ 0 }, WNOHANG) == 0;
        int status;

        kill(child, SIGKILL);
        assert_int_equal(waitpid(child, &status, 0), child);
        return alive && WIFSIGNALED(status);
}

/* 256 MiB: longer than a few of diskwatch's samples, whatever the disk. */
#define N_DISK 256

/*
 * diskwatch.h: while another process reads the disk a background engine reads (its file system is on
 * a block device), the engine holds its reads back; when it stops, the job finishes. Skipped where
 * the test directory is not on a block device (tmpfs) or O_DIRECT is refused.
 */
static void test_disk_yield(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        char *paths[N_DISK];
        Engine *bg;
        Collector c;
        EngineJob *j;
        uint64_t end;
        pid_t child;

        if (!disk_to_share(dir, false)) {
                th_rm_rf(dir);
                skip();
                return;
        }
        make_files(dir, paths, N_DISK, 1u << 20);
        for (size_t i = 0; i < N_DISK; i++)
                file_make_cold(paths[i]);
        bg = new_background(NULL, 2);

        /* The child's reads are under way before the job starts. */
        child = foreign_reader_start(dir);
        j = start_paths(bg, NULL, paths, N_DISK, &c);
        end = now_usec() + 30 * USEC_PER_SEC;
        while (engine_get_disk_holds(bg) < 3 && now_usec() < end)
                assert_true(engine_run_once(bg, 10000) >= 0);
        size_t during = c.n_seen;
        assert_true(foreign_reader_stop(child));
        print_message("# %" PRIu64 " holds, %zu of %d files done while another process read the disk\n",
                      engine_get_disk_holds(bg), during, N_DISK);
        assert_true(engine_get_disk_holds(bg) >= 3);
        /* Its disk is watched before its first read: at most the files opened before the first
         * sample found the child. */
        assert_true(during <= N_DISK / 16);
        wait_job(bg, &c, 60 * USEC_PER_SEC);
        for (size_t i = 0; i < N_DISK; i++)
                assert_result_matches(&c.results[i], HASH_SHA256, paths[i]);
        engine_job_unref(j);
        collector_done(&c);
        for (size_t i = 0; i < N_DISK; i++)
                free(paths[i]);
        engine_free(bg);
        th_rm_rf(dir);
}

/* 256 MiB: hashed over more than one of diskwatch's samples. */
#define CACHED_SIZE (UINT64_C(256) << 20)

/*
 * diskwatch.h: a file wholly in the page cache is read past the disk watch. While another process
 * reads the disk, and the watch holds the engine back because of it, a background job over a cached
 * file still finishes, and leaves the file in the page cache as it found it.
 */
static void test_disk_yield_cached(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio"), *path = NULL;
        PageCacheState pc;
        Engine *bg;
        Collector c;
        EngineJob *j;
        uint64_t end;
        pid_t child;

        if (!disk_to_share(dir, true)) {
                th_rm_rf(dir);
                skip();
                return;
        }
        assert_true(asprintf(&path, "%s/cached", dir) > 0);
        assert_int_equal(th_write_random_file(path, CACHED_SIZE, 5), 0);
        file_make_cold(path);
        file_make_cached(path, 0, CACHED_SIZE);
        bg = new_background(NULL, 2);

        child = foreign_reader_start(dir);
        /* Cached again right before: a file the kernel evicted a folio of meanwhile would be held,
         * rightly, until the other process stops (once in CI: "NOT done, 2965 holds"). */
        file_make_cached(path, 0, CACHED_SIZE);
        j = start_paths(bg, NULL, &path, 1, &c);
        end = now_usec() + 30 * USEC_PER_SEC;
        while (!c.done && now_usec() < end)
                assert_true(engine_run_once(bg, 10000) >= 0);
        /* Done while the other process still reads, and the watch saw it: held for a reason. */
        print_message("# cached file %s, %" PRIu64 " holds, while another process read the disk\n",
                      c.done ? "done" : "NOT done", engine_get_disk_holds(bg));
        pc = file_cache_state(path);
        assert_true(foreign_reader_stop(child));
        /* Not pinned (that would void the check below): in a slow build the kernel may take pages
         * of it before the engine opens it, which then holds it, rightly. Nothing reads a held file,
         * so pages missing now tell that; a file still wholly cached that was not read is the
         * engine's fault. */
        if (!c.done && pc.cached < pc.pages) {
                print_message("# %" PRIu64 " of %" PRIu64 " pages cached: the kernel evicted part of the file, "
                              "which the engine then rightly held; nothing to conclude\n",
                              (uint64_t)pc.cached, (uint64_t)pc.pages);
                wait_job(bg, &c, 60 * USEC_PER_SEC);
                engine_job_unref(j);
                collector_done(&c);
                engine_free(bg);
                th_rm_rf(dir);
                skip();
                return;
        }
        assert_true(c.done);
        assert_true(engine_get_disk_holds(bg) >= 1);
        wait_job(bg, &c, 60 * USEC_PER_SEC);
        assert_result_matches(&c.results[0], HASH_SHA256, path);
        /* Read as it was found, not dropped behind the reads (RWF_DONTCACHE would drop all it
         * read). Not "every page": the kernel may evict some meanwhile on its own (a DAMON pageout
         * scheme on the CI machines takes whole 2 MiB folios of page cache nobody touched; 512 and
         * 1,024 of 65,536 pages gone in 3 of ~20 runs here), and a page
         * missing when the engine opened the file is read again dontcache, as for any file that is
         * not wholly cached. */
        pc = file_cache_state(path);
        print_message("# %" PRIu64 " of %" PRIu64 " pages cached after the job\n", (uint64_t)pc.cached,
                      (uint64_t)pc.pages);
        assert_true(pc.cached >= pc.pages - pc.pages / 8);
        engine_job_unref(j);
        collector_done(&c);
        engine_free(bg);
        th_rm_rf(dir);
}

/* 384 files of 512 KiB, each a caller's fd: three times the slots of two shards (DEFAULT_MAX_OPEN
 * each), hashed over more than one of diskwatch's samples. */
#define N_FDS 384

/*
 * diskwatch.h: an fd the caller opened is opened past the disk watch (fhashd's inputs are all fds):
 * its fstat reads no disk. While another process reads the disk, and the watch holds the engine
 * back because of it, a background job over cached files passed as fds still finishes; a job that
 * waited for the holds to end before it opened each file would not.
 */
static void test_disk_yield_cached_fds(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        char *paths[N_FDS];
        void *pins[N_FDS];
        Engine *bg;
        Collector c;
        EngineJob *j = NULL;
        uint64_t end;
        pid_t child;

        if (!disk_to_share(dir, true)) {
                th_rm_rf(dir);
                skip();
                return;
        }
        make_files(dir, paths, N_FDS, 512u << 10);
        for (size_t i = 0; i < N_FDS; i++) {
                file_make_cold(paths[i]);
                file_make_cached(paths[i], 0, 512u << 10);
        }
        bg = new_background(NULL, 2);

        child = foreign_reader_start(dir);
        /* Cached and locked there for the job: a file the kernel evicted a folio of meanwhile would
         * be held, rightly, until the other process stops (a DAMON pageout scheme on these machines
         * takes folios of page cache on its own, see test_disk_yield_cached). Unpinned, CI's
         * sanitizer builds, slow enough for it, had 356 and 375 of 384 done and the rest held. */
        for (size_t i = 0; i < N_FDS; i++)
                pins[i] = file_pin_cached(paths[i], 512u << 10);
        collector_init(&c, N_FDS);
        assert_int_equal(engine_job_new(bg, HASH_SHA256, NULL, &j), 0);
        for (size_t i = 0; i < N_FDS; i++) {
                int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(engine_job_add_fd(j, fd), (int)i);
        }
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        /* A job that waits for the holds to end never finishes while the other process reads, however
         * long; this one takes 0.1 s here, 1 s in the TSan build beside two busy loops. Files done
         * and holds every 10 s, and on a failure which files were left and how much of each was
         * cached then: a job that crawls differs from one stuck on files it found uncached. */
        char timeline[512] = "", missing[1024] = "";
        size_t tl = 0, ml = 0;
        uint64_t start = now_usec(), next_mark = start + 10 * USEC_PER_SEC;
        end = start + 60 * USEC_PER_SEC;
        while (!c.done && now_usec() < end) {
                assert_true(engine_run_once(bg, 10000) >= 0);
                if (now_usec() >= next_mark && tl < sizeof(timeline) - 64) {
                        tl += (size_t)snprintf(timeline + tl, sizeof(timeline) - tl, " %" PRIu64 "s:%zu/%" PRIu64,
                                               (next_mark - start) / USEC_PER_SEC, c.n_seen, engine_get_disk_holds(bg));
                        next_mark += 10 * USEC_PER_SEC;
                }
        }
        print_message("# %zu of %d cached fds done, %" PRIu64 " holds, in %.1f s, while another process read the disk\n",
                      c.n_seen, N_FDS, engine_get_disk_holds(bg), (double)(now_usec() - start) / 1e6);
        for (size_t i = 0; !c.done && i < N_FDS && ml < sizeof(missing) - 64; i++)
                if (!c.seen[i]) {
                        PageCacheState pc = file_cache_state(paths[i]);

                        ml += (size_t)snprintf(missing + ml, sizeof(missing) - ml, " %zu(%" PRIu64 "/%" PRIu64 "%s)", i,
                                               pc.cached, pc.pages, pins[i] ? "" : ",unpinned");
                }
        assert_true(foreign_reader_stop(child));
        for (size_t i = 0; i < N_FDS; i++)
                file_unpin(pins[i], 512u << 10);
        if (!c.done)
                fail_msg("%zu of %d cached fds done after 60 s, %" PRIu64 " holds; done/holds every 10 s:%s; "
                         "left, with their cached/pages now:%s", c.n_seen, N_FDS, engine_get_disk_holds(bg),
                         timeline, missing);
        assert_true(engine_get_disk_holds(bg) >= 1);
        for (size_t i = 0; i < N_FDS; i++)
                assert_result_matches(&c.results[i], HASH_SHA256, paths[i]);
        engine_job_unref(j);
        collector_done(&c);
        for (size_t i = 0; i < N_FDS; i++)
                free(paths[i]);
        engine_free(bg);
        th_rm_rf(dir);
}

/* Results are delivered in the order the shard posted them: what the first job had delivered when
 * the second's first result and its end came tells how many of its files finished in between. */
typedef struct Order {
        Collector c;
        const size_t *other_seen;   /* the first job's results so far */
        size_t at_first, at_end;    /* that count at this job's first result, and at its end */
} Order;

static void order_file(EngineJob *j, const EngineFileResult *r, void *userdata)
{
        Order *o = userdata;

        if (o->c.n_seen == 0)
                o->at_first = *o->other_seen;
        on_file(j, r, &o->c);
}

static void order_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        Order *o = userdata;

        on_done(j, result, &o->c);
        o->at_end = *o->other_seen;
}

static const EngineJobCallbacks order_callbacks = { .file_done = order_file, .job_done = order_done };

#define N_FIRST 2000
#define N_SECOND 50

/* One shard, one file open at a time, one share group: a job of N_FIRST files, then one of
 * N_SECOND. Returns how many files of the first finished between the second's first result and its
 * end: taking turns, about N_SECOND; interactive, at most the one or two the first had open. */
static size_t first_job_files_beside(bool interactive, char **paths)
{
        Engine *e = NULL;
        Collector c1;
        Order o2 = {};
        EngineJob *j1 = NULL, *j2 = NULL;
        uint64_t end = now_usec() + 120 * USEC_PER_SEC;

        assert_int_equal(engine_new(&(EngineConfig){ .workers = 1, .max_open = 1 }, &e), 0);
        collector_init(&c1, N_FIRST);
        collector_init(&o2.c, N_SECOND);
        o2.other_seen = &c1.n_seen;
        assert_int_equal(engine_job_new(e, HASH_SHA256, NULL, &j1), 0);
        assert_int_equal(engine_job_new(e, HASH_SHA256, &(EngineJobOptions){ .interactive = interactive }, &j2), 0);
        for (size_t i = 0; i < N_FIRST; i++)
                assert_int_equal(engine_job_add_path(j1, paths[i % N_BG]), (int)i);
        for (size_t i = 0; i < N_SECOND; i++)
                assert_int_equal(engine_job_add_path(j2, paths[i % N_BG]), (int)i);
        assert_int_equal(engine_job_start(j1, &test_callbacks, &c1), 0);
        assert_int_equal(engine_job_start(j2, &order_callbacks, &o2), 0);
        while (!c1.done || !o2.c.done) {
                assert_true(now_usec() < end);
                assert_true(engine_run_once(e, 100000) >= 0);
        }
        assert_int_equal(c1.n_seen, N_FIRST);
        assert_int_equal(o2.c.n_seen, N_SECOND);
        /* The first must not have been over before the second came, or nothing was compared. */
        assert_true(o2.at_end < N_FIRST);
        for (size_t i = 0; i < N_SECOND; i++)
                assert_result_matches(&o2.c.results[i], HASH_SHA256, paths[i % N_BG]);
        engine_job_unref(j1);
        engine_job_unref(j2);
        collector_done(&c1);
        collector_done(&o2.c);
        engine_free(e);
        return o2.at_end - o2.at_first;
}

static void test_interactive_first(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("engine-prio");
        char *paths[N_BG];
        size_t normal, interactive;

        make_files(dir, paths, N_BG, 4096);
        normal = first_job_files_beside(false, paths);
        interactive = first_job_files_beside(true, paths);
        print_message("# files of the first job hashed beside the second: %zu taking turns, %zu interactive\n",
                      normal, interactive);
        assert_true(normal >= N_SECOND / 2);
        assert_true(interactive <= 2);
        for (size_t i = 0; i < N_BG; i++)
                free(paths[i]);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_background_threads),
                cmocka_unit_test(test_background_cache_neutral),
                cmocka_unit_test(test_yield),
                cmocka_unit_test(test_disk_yield),
                cmocka_unit_test(test_disk_yield_cached),
                cmocka_unit_test(test_disk_yield_cached_fds),
                cmocka_unit_test(test_interactive_first),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
