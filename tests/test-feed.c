/* SPDX-License-Identifier: MIT */
/* test-feed.c: a run's inputs in order over a list that grows and forgets, the strings copied, the
 * results classed; and the local backend hashing while its source still gives inputs */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "client/backend.h"
#include "client/feed.h"
#include "test-helpers.h"

/* A source of n inputs named "item-<i>", built in one buffer that every call overwrites (the feed
 * must copy). Every 97th has a skip reason, every 101st an error from the walk. */
typedef struct GenSource {
        size_t n, produced;
        const char *path;   /* NULL: the name is the path */
        char buf[256];
        bool presets;
        bool long_names;    /* names longer than a slot holds */
} GenSource;

static int gen_next(void *userdata, fhash_input *ret)
{
        GenSource *g = userdata;
        size_t i = g->produced;

        if (i == g->n)
                return 0;
        g->produced++;
        snprintf(g->buf, sizeof(g->buf), g->long_names ? "item-%zu-%0100d" : "item-%zu", i, 0);
        *ret = (fhash_input){ .name = g->buf, .path = g->path ?: g->buf, .fd = -1, .userdata = (void *)(i + 1) };
        if (g->presets && i % 97 == 96)
                ret->skip = "not a regular file";
        else if (g->presets && i % 101 == 100)
                ret->error = -EACCES;
        return 1;
}

typedef struct Seen {
        size_t n;
        bool in_order;
        size_t produced_at_first;  /* inputs the source had given when the first result came */
        GenSource *gen;
        char hex[HASH_HEX_MAX];
        uint64_t size;
        bool same_digest;
        size_t skipped, errors;
        char last_message[64];
} Seen;

static void seen_fn(const fhash_result *r, void *userdata)
{
        Seen *s = userdata;
        char want[256];

        snprintf(want, sizeof(want), s->gen && s->gen->long_names ? "item-%zu-%0100d" : "item-%zu", s->n, 0);
        if (r->index != s->n || !streq(r->name, want) || r->userdata != (void *)(s->n + 1))
                s->in_order = false;
        if (s->n == 0 && s->gen)
                s->produced_at_first = s->gen->produced;
        if (r->status == FHASH_SKIPPED)
                s->skipped++;
        else if (r->status == FHASH_ERROR)
                s->errors++;
        else if (r->status == FHASH_OK) {
                if (!s->hex[0]) {
                        strcpy(s->hex, r->digest);
                        s->size = r->size;
                } else if (!streq(s->hex, r->digest) || s->size != r->size)
                        s->same_digest = false;
        }
        if (r->message)
                snprintf(s->last_message, sizeof(s->last_message), "%s", r->message);
        s->n++;
}

static RunOptions sha256_options(void)
{
        RunOptions o = {};

        assert_int_equal(hash_algo_set_parse("sha256", &o.algos), 0);
        return o;
}

/* 200,000 inputs, at most 1,000 pending, answered newest first: delivered in order, each once, and
 * the feed holds what is pending, not the run. With long names too (kept outside the slots). */
static void order_grows(bool long_names)
{
        GenSource g = { .n = 200000, .long_names = long_names };
        Seen s = { .in_order = true, .same_digest = true, .gen = &g };
        RunOptions o = sha256_options();
        size_t answered = 0, from = 0;
        Feed *f = NULL;

        assert_int_equal(feed_new(gen_next, &g, &o, seen_fn, &s, &f), 0);
        while (!feed_finished(f)) {
                size_t i;
                int r = 1;

                while (feed_pending(f) < 1000 && (r = feed_next(f, from, &i)) > 0) {
                        const Input *in = feed_input(f, i);

                        assert_int_equal(i, from);
                        assert_non_null(in);
                        assert_int_equal(strncmp(in->name, "item-", 5), 0);
                        assert_ptr_equal(in->path, in->name);
                        assert_int_equal(*feed_flags(f, i), 0);
                        from = i + 1;
                }
                assert_true(r >= 0);
                /* Newest first: nothing is delivered until the oldest comes, then all at once. */
                for (size_t k = feed_pulled(f); k > answered; k--) {
                        size_t idx = k - 1;
                        char msg[32];

                        assert_false(feed_answered(f, idx));
                        snprintf(msg, sizeof(msg), "m%zu", idx);
                        feed_answer(f, idx, &(Outcome){ .status = FHASH_CANCELLED, .message = msg });
                        /* The message was copied: the caller's buffer is gone. */
                        memset(msg, 'x', sizeof(msg) - 1);
                        assert_int_equal(s.n, idx == answered ? feed_pulled(f) : answered);
                }
                answered = feed_pulled(f);
                /* Delivered: forgotten, and a second result for it is ignored. */
                assert_null(feed_input(f, answered - 1));
                assert_null(feed_flags(f, answered - 1));
                assert_true(feed_answered(f, answered - 1));
                feed_answer(f, answered - 1, &(Outcome){ .status = FHASH_OK });
                /* And one for an input not pulled yet. */
                feed_answer(f, answered + 5, &(Outcome){ .status = FHASH_OK });
        }
        assert_int_equal(s.n, 200000);
        assert_true(s.in_order);
        assert_string_equal(s.last_message, "m199999");
        assert_int_equal(feed_done(f), 200000);
        feed_free(f);
}

static void test_order_grows(void **state)
{
        order_grows(false);
        order_grows(true);
}

typedef struct Got {
        fhash_result r[8];
        char digest[8][HASH_HEX_MAX];
        char message[8][128];
        size_t n;
} Got;

/* Copies each result by index, with its strings. */
static void copy_fn(const fhash_result *r, void *userdata)
{
        Got *g = userdata;

        assert_true(r->index < ELEMENTSOF(g->r));
        g->r[r->index] = *r;
        snprintf(g->digest[r->index], sizeof(g->digest[0]), "%s", r->digest ?: "");
        snprintf(g->message[r->index], sizeof(g->message[0]), "%s", r->message ?: "");
        g->n++;
}

typedef struct Array {
        const fhash_input *inputs;
        size_t n, next;
} Array;

static int array_next(void *userdata, fhash_input *ret)
{
        Array *a = userdata;

        if (a->next >= a->n)
                return 0;
        *ret = a->inputs[a->next++];
        return 1;
}

/* Expected digests, inputs answered without hashing, and each status with the errno beside it: the
 * errors of hashing are classed as fhashd's error names class them, so both backends say the same
 * (an ESTALE or EBADMSG from reading is an I/O error, not a change or a mismatch). */
static void test_statuses(void **state)
{
        static const char upper[] = "ABCD000000000000000000000000000000000000000000000000000000000000";
        static const char lower[] = "abcd000000000000000000000000000000000000000000000000000000000000";
        static const char other[] = "abce000000000000000000000000000000000000000000000000000000000000";
        static const fhash_input inputs[] = {
                { .path = "a", .name = "pa", .fd = -1, .expected = upper },
                { .path = "b", .fd = -1, .expected = lower },
                { .path = "c", .fd = -1, .skip = "why" },
                { .path = "d", .fd = -1, .error = -ENOENT },
                { .path = "e", .fd = -1 },
                { .path = "f", .fd = -1 },
                { .path = "g", .fd = -1, .algorithm = "no-such-algorithm" },
                { .path = "h", .fd = -1 },
        };
        Array array = { .inputs = inputs, .n = ELEMENTSOF(inputs) };
        RunOptions o = sha256_options();
        Got got = {};
        Feed *f = NULL;
        size_t i, hashed[5], n = 0;

        assert_int_equal(feed_new(array_next, &array, &o, copy_fn, &got, &f), 0);
        /* The backend sees only what it has to hash: the skip, the error and the bad algorithm are
         * answered as they are pulled. */
        for (size_t from = 0; feed_next(f, from, &i) > 0; from = i + 1)
                hashed[n++] = i;
        assert_int_equal(n, 5);
        assert_int_equal(hashed[2], 4);
        assert_int_equal(hashed[4], 7);
        assert_true(feed_source_done(f));
        assert_false(feed_finished(f));
        assert_string_equal(feed_input(f, 0)->name, "pa");
        assert_string_equal(feed_input(f, 0)->path, "a");
        feed_answer(f, 1, &(Outcome){ .status = FHASH_OK, .hex = other });
        feed_answer(f, 4, &(Outcome){ .status = FHASH_ERROR, .error = -ESTALE });
        feed_answer(f, 5, &(Outcome){ .status = FHASH_ERROR, .error = -EBADMSG });
        feed_answer(f, 7, &(Outcome){ .status = FHASH_CHANGED });
        assert_int_equal(got.n, 0);
        feed_answer(f, 0, &(Outcome){ .status = FHASH_OK, .hex = lower });
        assert_true(feed_finished(f));
        assert_int_equal(got.n, ELEMENTSOF(inputs));
        /* Compared without regard to case. */
        assert_int_equal(got.r[0].status, FHASH_OK);
        assert_int_equal(got.r[0].error, 0);
        assert_string_equal(got.digest[0], lower);
        assert_int_equal(got.r[1].status, FHASH_MISMATCH);
        assert_int_equal(got.r[1].error, -EBADMSG);
        assert_string_equal(got.digest[1], other);
        assert_int_equal(got.r[2].status, FHASH_SKIPPED);
        assert_int_equal(got.r[2].error, 0);
        assert_int_equal(got.r[3].status, FHASH_ERROR);
        assert_int_equal(got.r[3].error, -ENOENT);
        assert_int_equal(got.r[4].status, FHASH_ERROR);
        assert_int_equal(got.r[4].error, -EIO);
        assert_string_equal(got.message[4], strerror(ESTALE));
        assert_int_equal(got.r[5].status, FHASH_ERROR);
        assert_int_equal(got.r[5].error, -EIO);
        assert_string_equal(got.message[5], strerror(EBADMSG));
        assert_int_equal(got.r[6].status, FHASH_ERROR);
        assert_int_equal(got.r[6].error, -EINVAL);
        assert_int_equal(got.r[7].status, FHASH_CHANGED);
        assert_int_equal(got.r[7].error, -ESTALE);
        assert_string_equal(got.r[7].algorithm, "sha256");
        feed_free(f);
}

/* Inputs answered as they are pulled, at the head (delivered at once) and behind it: the backend
 * gets every other input, none skipped over. */
static void test_answered_at_pull(void **state)
{
        static const fhash_input inputs[] = {
                { .path = "m0", .fd = -1, .skip = "marker" },
                { .path = "a", .fd = -1 },
                { .path = "m1", .fd = -1, .skip = "marker" },
                { .path = "m2", .fd = -1, .error = -ENOENT },
                { .path = "b", .fd = -1 },
                { .path = "m3", .fd = -1, .skip = "marker" },
        };
        Array array = { .inputs = inputs, .n = ELEMENTSOF(inputs) };
        RunOptions o = sha256_options();
        Got got = {};
        Feed *f = NULL;
        size_t i;

        assert_int_equal(feed_new(array_next, &array, &o, copy_fn, &got, &f), 0);
        assert_int_equal(feed_next(f, 0, &i), 1);
        assert_int_equal(i, 1);
        assert_int_equal(got.n, 1);  /* the first marker, delivered as it was pulled */
        assert_int_equal(feed_next(f, i + 1, &i), 1);
        assert_int_equal(i, 4);
        assert_int_equal(feed_next(f, i + 1, &i), 0);
        feed_answer(f, 4, &(Outcome){ .status = FHASH_CANCELLED });
        assert_int_equal(got.n, 1);
        feed_answer(f, 1, &(Outcome){ .status = FHASH_CANCELLED });
        assert_true(feed_finished(f));
        assert_int_equal(got.n, 6);
        assert_int_equal(got.r[5].status, FHASH_SKIPPED);
        assert_int_equal(got.r[3].error, -ENOENT);
        feed_free(f);
}

/* One place opens inputs for both backends: a path, the caller's fd (duplicated, left open) and a
 * directory (refused, as sha256sum refuses it). */
static void test_open(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("feed"), *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        fhash_input inputs[3] = {};
        Array array = { .inputs = inputs, .n = ELEMENTSOF(inputs) };
        RunOptions o = sha256_options();
        Got got = {};
        Feed *f = NULL;
        uint64_t size;
        size_t i;
        int k, x = -EBADF;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 5000, 3), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        inputs[0] = (fhash_input){ .path = path, .fd = -1 };
        inputs[1] = (fhash_input){ .fd = fd, .name = "fd" };
        inputs[2] = (fhash_input){ .path = dir, .fd = -1 };
        assert_int_equal(feed_new(array_next, &array, &o, copy_fn, &got, &f), 0);
        for (size_t from = 0; (k = feed_next(f, from, &i)) > 0; from = i + 1) {
                int r = feed_open(f, i, &x, &size);

                if (i == 2) {
                        assert_int_equal(r, -EISDIR);
                        feed_answer(f, i, &(Outcome){ .status = FHASH_ERROR, .error = r });
                        continue;
                }
                assert_int_equal(r, 0);
                assert_true(x >= 3 && x != fd);
                assert_int_equal(size, 5000);
                assert_true(fcntl(x, F_GETFD) & FD_CLOEXEC);
                safe_close(x);
                feed_answer(f, i, &(Outcome){ .status = FHASH_OK, .hex = "00" });
        }
        assert_int_equal(k, 0);
        assert_true(feed_finished(f));
        assert_int_equal(got.r[2].error, -EISDIR);
        assert_string_equal(got.message[2], strerror(EISDIR));
        assert_true(fcntl(fd, F_GETFD) >= 0);  /* the caller's is still open */
        feed_free(f);
        th_rm_rf(dir);
}

/* The local backend over a source, stepped to its end as run.c steps it. */
static int local_run(fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata)
{
        RunOptions o = sha256_options();
        Feed *f = NULL;
        void *b = NULL;
        int r;

        r = feed_new(next, source_userdata, &o, fn, userdata, &f);
        if (r >= 0)
                r = backend_local.start(&(BackendArgs){ .feed = f, .options = &o }, &b);
        while (r >= 0 && (r = backend_local.step(b, 250000)) > 0)
                ;
        if (b)
                backend_local.free(b);
        feed_free(f);
        return r;
}

/* The local backend with a source of 20,000 inputs (one real file under many names, with skips and
 * errors among them): every input in order, the same digest each time, and the first result
 * delivered while most of the source was not even asked for yet. */
static void test_local_streams(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("feed"), *path = NULL;
        GenSource g = { .n = 20000, .presets = true };
        Seen s = { .in_order = true, .same_digest = true, .gen = &g };

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 5000, 3), 0);
        g.path = path;

        assert_int_equal(local_run(gen_next, &g, seen_fn, &s), 0);
        assert_int_equal(s.n, 20000);
        assert_true(s.in_order);
        assert_true(s.same_digest);
        assert_int_equal(s.size, 5000);
        assert_int_equal(s.skipped, 20000 / 97);
        assert_int_equal(s.errors, 198 - 2);  /* multiples of 101 that are not also 97's */
        fprintf(stderr, "# first result after %zu of %zu inputs\n", s.produced_at_first, g.n);
        /* The backend queues at most LOCAL_QUEUED_MAX (4,096) files, but pulls more as earlier ones
         * finish, and the engine shares its slots between the batches, so how far it got before input
         * 0 was delivered depends on the machine's load. What must hold is that it streams: the first
         * result comes before the source is used up. */
        assert_true(s.produced_at_first < g.n);
        th_rm_rf(dir);
}

/* An empty source, and a source that fails: the run ends with its error. */
static int fail_next(void *userdata, fhash_input *ret)
{
        size_t *calls = userdata;

        if ((*calls)++ < 3) {
                *ret = (fhash_input){ .path = "/nonexistent/x", .fd = -1 };
                return 1;
        }
        return -ENOMEM;
}

static void test_local_edges(void **state)
{
        Array empty = {};
        Seen s = { .in_order = true };
        size_t calls = 0;

        assert_int_equal(local_run(array_next, &empty, seen_fn, &s), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(local_run(fail_next, &calls, seen_fn, &s), -ENOMEM);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_grows),
                cmocka_unit_test(test_statuses),
                cmocka_unit_test(test_answered_at_pull),
                cmocka_unit_test(test_open),
                cmocka_unit_test(test_local_streams),
                cmocka_unit_test(test_local_edges),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
