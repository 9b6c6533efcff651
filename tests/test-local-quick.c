/* SPDX-License-Identifier: MIT */
/* test-local-quick.c: a local run's first few small cached files are hashed in the calling thread,
 * without starting the engine; everything else still goes to the engine, with the same results */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "test-helpers.h"
#include "fhash/fhash.h"

/*
 * The engine is what starts threads in this process (its shards and workers): the calling thread
 * alone (or with a sanitizer's own thread: the count before the run) at an input's pull means
 * nothing so far needed the engine. Pulls are counted in a source
 * (fhash_hash_source()), which the run calls for each input just before it is hashed.
 */
#define N_SMALL 20
#define QUICK_FILES 16  /* src/client/local.c: LOCAL_QUICK_FILES */

static unsigned count_threads(void)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        unsigned n = 0;

        assert_non_null(d);
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

typedef struct Source {
        char **paths;
        const int *fds;          /* with paths[i] NULL: fds[i] */
        size_t n, next;
        unsigned threads[N_SMALL + 2];  /* threads when input i was pulled */
} Source;

static int source_next(void *userdata, fhash_input *ret)
{
        Source *s = userdata;

        if (s->next == s->n)
                return 0;
        s->threads[s->next] = count_threads();
        *ret = (fhash_input){ .path = s->paths[s->next], .fd = s->paths[s->next] ? -1 : s->fds[s->next] };
        s->next++;
        return 1;
}

typedef struct Results {
        size_t n;
        fhash_status status[N_SMALL + 2];
        int error[N_SMALL + 2];
        char hex[N_SMALL + 2][65];
} Results;

static void result_fn(const fhash_result *r, void *userdata)
{
        Results *res = userdata;

        assert_true(res->n < ELEMENTSOF(res->status));
        res->status[res->n] = r->status;
        res->error[res->n] = r->error;
        snprintf(res->hex[res->n], sizeof(res->hex[0]), "%s", r->digest ? r->digest : "");
        res->n++;
}

static fhash_client *local_client(void)
{
        fhash_client *c = NULL;

        assert_int_equal(fhash_client_new(&(fhash_client_options){ .flags = FHASH_CLIENT_LOCAL }, &c, NULL), 0);
        return c;
}

/* 20 small files: the first 16 without an engine, the 17th starts it; every digest as sha256sum's. */
static void test_first_files_in_thread(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("local-quick");
        char *paths[N_SMALL] = {};
        Source s = { .paths = paths, .n = N_SMALL };
        Results res = {};
        fhash_client *c = local_client();
        unsigned base;

        for (size_t i = 0; i < N_SMALL; i++) {
                assert_true(asprintf(&paths[i], "%s/f%zu", dir, i) > 0);
                assert_int_equal(th_write_random_file(paths[i], i == 3 ? 0 : 4096 + i * 1000, (uint32_t)i), 0);
        }
        base = count_threads();
        assert_int_equal(fhash_hash_source(c, source_next, &s, NULL, result_fn, &res, NULL), 0);
        assert_int_equal(res.n, N_SMALL);
        for (size_t i = 0; i < N_SMALL; i++) {
                _cleanup_free_ char *want = th_run_first_word("sha256sum '%s'", paths[i]);

                assert_int_equal(res.status[i], FHASH_OK);
                assert_string_equal(res.hex[i], want);
        }
        /* Inputs 0..16 are pulled before any engine (the 17th is what starts it); after it, threads. */
        for (size_t i = 0; i <= QUICK_FILES; i++)
                assert_int_equal(s.threads[i], base);
        assert_true(s.threads[QUICK_FILES + 1] > base);
        for (size_t i = 0; i < N_SMALL; i++)
                free(paths[i]);
        fhash_client_free(c);
        th_rm_rf(dir);
}

/* What cannot be opened is answered without an engine, in the engine's words. */
static void test_errors_in_thread(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("local-quick"), *missing = NULL, *ok = NULL;
        char *paths[3];
        Source s = { .paths = paths, .n = 3 };
        Results res = {};
        fhash_client *c = local_client();

        assert_true(asprintf(&missing, "%s/missing", dir) > 0);
        assert_true(asprintf(&ok, "%s/ok", dir) > 0);
        assert_int_equal(th_write_random_file(ok, 100, 1), 0);
        paths[0] = missing;
        paths[1] = dir;
        paths[2] = ok;
        assert_int_equal(fhash_hash_source(c, source_next, &s, NULL, result_fn, &res, NULL), 0);
        assert_int_equal(res.n, 3);
        assert_int_equal(res.status[0], FHASH_ERROR);
        assert_int_equal(res.error[0], -ENOENT);
        assert_int_equal(res.status[1], FHASH_ERROR);
        assert_int_equal(res.error[1], -EISDIR);
        assert_int_equal(res.status[2], FHASH_OK);
        assert_int_equal(s.threads[2], s.threads[0]);
        fhash_client_free(c);
        th_rm_rf(dir);
}

/* A pipe is the engine's; a caller's fd of a regular file is read from its start and its offset left
 * where it was; an expected digest that differs is a mismatch. */
static void test_fds(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("local-quick"), *path = NULL, *want = NULL;
        int p[2], fd, fds[3];
        char *paths[3] = {};
        Source s = { .paths = paths, .fds = fds, .n = 3 };
        Results res = {};
        fhash_client *c = local_client();

        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 5000, 7), 0);
        want = th_run_first_word("sha256sum '%s'", path);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(lseek(fd, 1234, SEEK_SET), 1234);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "abc", 3), 3);
        close(p[1]);
        fds[0] = fd;
        fds[1] = p[0];
        fds[2] = fd;
        assert_int_equal(fhash_hash_source(c, source_next, &s, NULL, result_fn, &res, NULL), 0);
        assert_int_equal(res.n, 3);
        assert_int_equal(res.status[0], FHASH_OK);
        assert_string_equal(res.hex[0], want);
        assert_int_equal(lseek(fd, 0, SEEK_CUR), 1234);
        assert_int_equal(res.status[1], FHASH_OK);
        assert_string_equal(res.hex[1], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(s.threads[1], s.threads[0]);
        assert_true(s.threads[2] > s.threads[0]);  /* the pipe started the engine */
        close(fd);
        close(p[0]);

        /* Expected digests, in the calling thread. */
        {
                const char *one[] = { path, path };
                const char *exp[] = { want, "0000000000000000000000000000000000000000000000000000000000000000" };
                Results r2 = {};

                assert_int_equal(fhash_hash_paths(c, one, 2, &(fhash_hash_options){ .expected = exp }, result_fn,
                                                  &r2, NULL),
                                 0);
                assert_int_equal(r2.status[0], FHASH_OK);
                assert_int_equal(r2.status[1], FHASH_MISMATCH);
        }
        fhash_client_free(c);
        th_rm_rf(dir);
}

/* A file not in the page cache would hold the calling thread on the disk: the engine reads it. */
static void test_cold_file_to_engine(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("local-quick"), *cold = NULL, *want = NULL;
        unsigned char vec[4];
        char *paths[2];
        Source s = { .paths = paths, .n = 2 };
        Results res = {};
        fhash_client *c;
        void *m;
        int fd;

        assert_true(asprintf(&cold, "%s/cold", dir) > 0);
        assert_int_equal(th_write_random_file(cold, 16384, 9), 0);
        want = th_run_first_word("sha256sum '%s'", cold);
        fd = open(cold, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fdatasync(fd), 0);
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        m = mmap(NULL, 16384, PROT_READ, MAP_SHARED, fd, 0);
        assert_true(m != MAP_FAILED);
        assert_int_equal(mincore(m, 16384, vec), 0);
        munmap(m, 16384);
        close(fd);
        if (vec[0] & 1) {
                th_rm_rf(dir);
                skip(); /* this file system keeps the pages (tmpfs): nothing is cold here */
        }
        c = local_client();
        paths[0] = cold;
        paths[1] = cold;
        assert_int_equal(fhash_hash_source(c, source_next, &s, NULL, result_fn, &res, NULL), 0);
        assert_int_equal(res.n, 2);
        assert_int_equal(res.status[0], FHASH_OK);
        assert_string_equal(res.hex[0], want);
        assert_true(s.threads[1] > s.threads[0]);
        fhash_client_free(c);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_files_in_thread),
                cmocka_unit_test(test_errors_in_thread),
                cmocka_unit_test(test_fds),
                cmocka_unit_test(test_cold_file_to_engine),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
