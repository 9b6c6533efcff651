/* SPDX-License-Identifier: MIT */
/* test-engine-util.c: helpers the engine tests share */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
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
#include <sys/mman.h>
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

void on_file(EngineJob *j, const EngineFileResult *r, void *userdata)
{
        Collector *c = userdata;

        assert_true(r->index < c->n);
        if (c->seen[r->index])
                c->n_dupes++;
        c->seen[r->index] = true;
        c->results[r->index] = *r;
        c->n_seen++;
}

void on_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        Collector *c = userdata;

        c->done = true;
        c->job_result = result;
}

const EngineJobCallbacks test_callbacks = { .file_done = on_file, .job_done = on_done };

void collector_init(Collector *c, size_t n)
{
        *c = (Collector){ .n = n };
        c->results = calloc(n ? n : 1, sizeof(EngineFileResult));
        c->seen = calloc(n ? n : 1, sizeof(bool));
        assert_non_null(c->results);
        assert_non_null(c->seen);
}

void collector_done(Collector *c)
{
        free(c->results);
        free(c->seen);
}

void wait_job(Engine *e, Collector *c, uint64_t timeout_usec)
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
char *reference_digest(HashAlgo a, const char *path)
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
        case HASH_SHA3_224:
                return th_run_first_word("openssl dgst -sha3-224 -r '%s'", path);
        case HASH_FSVERITY:
                return th_run_first_word("fsverity digest --compact '%s'", path);
        case HASH_FSVERITY_SHA512:
                return th_run_first_word("fsverity digest --compact --hash-alg=sha512 '%s'", path);
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

void assert_result_matches(const EngineFileResult *r, HashAlgo a, const char *path)
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

Engine *new_engine(IoMode mode, size_t bufsize, unsigned buffers)
{
        Engine *e = NULL;
        EngineConfig cfg = { .io_mode = mode, .buffer_size = bufsize, .buffers = buffers };

        assert_int_equal(engine_new(&cfg, &e), 0);
        return e;
}

/* Hashes paths with every algorithm in one engine and compares each with the reference tool. With
 * options, every non-empty file must also have been read the way `expect` says (if not AUTO). */
void check_paths_all_algos_opts(Engine *e, char **paths, size_t n, const EngineJobOptions *o,
                                       EngineReadStrategy expect)
{
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                EngineJob *j = NULL;
                Collector c;

                collector_init(&c, n);
                assert_int_equal(engine_job_new(e, a, o, &j), 0);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
                assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
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

void check_paths_all_algos(Engine *e, char **paths, size_t n)
{
        check_paths_all_algos_opts(e, paths, n, NULL, ENGINE_READ_AUTO);
}

/* 64 KiB: the engine's small slots (one per open file) take files up to that size. */
void file_make_cold(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fdatasync(fd), 0);
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

/* Reads [off, off + len) through the page cache. */
void file_make_cached(const char *path, uint64_t off, uint64_t len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        static uint8_t buf[1 << 16];

        assert_true(fd >= 0);
        for (uint64_t o = off; o < off + len; o += sizeof(buf))
                assert_true(pread(fd, buf, (size_t)MIN((uint64_t)sizeof(buf), off + len - o), (off_t)o) > 0);
}

void *file_pin_cached(const char *path, size_t len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        void *p;

        assert_true(fd >= 0);
        p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        assert_true(p != MAP_FAILED);
        /* The system call, not libc's mlock(): ASan and TSan intercept that one and do nothing
         * ("ignores mlock"), so in the sanitizer builds the files were never pinned, and CI's
         * cached-fds failures were files the kernel had taken pages of (left 126/128 cached, then
         * fewer) and which the engine rightly held while the other process read the disk. */
        if (syscall(SYS_mlock, p, len) < 0) {
                print_message("# %s: mlock: %s: cached, not pinned\n", path, strerror(errno));
                file_make_cached(path, 0, len);
                assert_int_equal(munmap(p, len), 0);
                return NULL;
        }
        return p;
}

void file_unpin(void *p, size_t len)
{
        if (p)
                assert_int_equal(munmap(p, len), 0);
}

PageCacheState file_cache_state(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        PageCacheState pc;

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(pagecache_probe(fd, (uint64_t)st.st_size, &pc), 0);
        return pc;
}

bool have_cachestat(void)
{
        PageCacheState pc;

        return pagecache_probe(0, 1, &pc) != -ENOSYS;
}

/* The filesystem of dir takes O_DIRECT (ext4 does; tmpfs before 6.6 did not). */
bool dir_has_direct(const char *dir)
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
EngineFileResult hash_one(Engine *e, HashAlgo a, const char *path, int fd, const EngineJobOptions *o)
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
        assert_int_equal(engine_job_start(j, &test_callbacks, &c), 0);
        wait_job(e, &c, 120 * 1000000ull);
        r = c.results[0];
        engine_job_unref(j);
        collector_done(&c);
        return r;
}

void assert_digest_hex(const EngineFileResult *r, const char *ref)
{
        char hex[HASH_HEX_MAX];

        assert_int_equal(r->status, ENGINE_FILE_OK);
        hash_to_hex(r->digest, r->digest_size, hex);
        assert_string_equal(hex, ref);
}
/* ---- forced fallbacks, in a child process so the restrictions stay there ---- */

int limit_memlock(rlim_t bytes)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];
        struct rlimit rl = { .rlim_cur = bytes, .rlim_max = bytes };

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        for (int i = 0; i < 2; i++) {
                d[i].effective &= ~(i == CAP_IPC_LOCK / 32 ? 1u << (CAP_IPC_LOCK % 32) : 0u);
                d[i].permitted &= ~(i == CAP_IPC_LOCK / 32 ? 1u << (CAP_IPC_LOCK % 32) : 0u);
        }
        if (syscall(SYS_capset, &h, d) < 0 || setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
                return -errno;
        return 0;
}

int child_hash_check(IoMode expect)
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
            engine_job_start(j, &test_callbacks, &c) < 0)
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

void run_child(int (*fn)(void), const char *what)
{
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fn());
        assert_int_equal(waitpid(pid, &status, 0), pid);
        /* The restriction could not be set up, so nothing was tested: a skip, never a pass. */
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                print_message("%s: the restriction could not be set up here\n", what);
                skip();
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("%s: child failed with status %d", what, status);
}

void run_paths(Engine *e, const EngineJobOptions *o, char **paths, size_t n, Collector *c)
{
        EngineJob *j = NULL;

        collector_init(c, n);
        assert_int_equal(engine_job_new(e, HASH_SHA256, o, &j), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(engine_job_add_path(j, paths[i]), (int)i);
        assert_int_equal(engine_job_start(j, &test_callbacks, c), 0);
        wait_job(e, c, 60 * 1000000ull);
        engine_job_unref(j);
}


int require_tools(const char *const *tools)
{
        for (size_t i = 0; tools[i]; i++)
                if (!th_have_program(tools[i])) {
                        fprintf(stderr, "SKIP: reference tool %s is not installed\n", tools[i]);
                        return 77;
                }
        return 0;
}

int require_reference_tools(void)
{
        static const char *const tools[] = { "sha256sum", "sha512sum", "sha1sum", "md5sum", "b2sum", "b3sum",
                                             "xxhsum", "openssl", NULL };

        return require_tools(tools);
}

const uint64_t edge_sizes[N_EDGE_SIZES] = { 0,        1,     4095,     4096, 4097,     65535,
                                            65536,    65537, SLOT - 1, SLOT, SLOT + 1, 3 * (uint64_t)SLOT + 17 };
