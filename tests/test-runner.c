/* SPDX-License-Identifier: MIT */
/* test-runner.c: in-order delivery over a list that grows and forgets, and run_local() hashing while
 * its source still produces items */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "test-helpers.h"
#include "client/runner.h"

/* A source of n items named "item-<i>", built in one buffer that every call overwrites (the order
 * must copy). Every 97th is a note, every 101st an error from the walk. */
typedef struct GenSource {
        size_t n, produced;
        const char *path;   /* NULL: the name is the path */
        char buf[64];
        bool presets;
} GenSource;

static int gen_next(void *userdata, RunItem *ret)
{
        GenSource *g = userdata;
        size_t i = g->produced;

        if (i == g->n)
                return 0;
        g->produced++;
        snprintf(g->buf, sizeof(g->buf), "item-%zu", i);
        *ret = (RunItem){ .name = g->buf, .path = g->path ?: g->buf, .algo = HASH_SHA256 };
        if (g->presets && i % 97 == 96)
                ret->note = "not a regular file";
        else if (g->presets && i % 101 == 100)
                ret->error = -EACCES;
        return 1;
}

typedef struct Seen {
        size_t n;
        bool in_order;
        size_t produced_at_first;  /* items the source had produced when the first result came */
        GenSource *gen;
        char hex[HASH_HEX_MAX];
        uint64_t size;
        bool same_digest;
        size_t skipped, errors;
        char last_message[64];
} Seen;

static void seen_fn(const RunItem *item, const RunResult *r, void *userdata)
{
        Seen *s = userdata;
        char want[64];

        snprintf(want, sizeof(want), "item-%zu", s->n);
        if (r->index != s->n || !streq(item->name, want))
                s->in_order = false;
        if (s->n == 0 && s->gen)
                s->produced_at_first = s->gen->produced;
        if (r->status == RUN_SKIPPED)
                s->skipped++;
        else if (r->status == RUN_ERROR)
                s->errors++;
        else if (r->status == RUN_OK) {
                if (!s->hex[0]) {
                        strcpy(s->hex, r->hex);
                        s->size = r->size;
                } else if (!streq(s->hex, r->hex) || s->size != r->size)
                        s->same_digest = false;
        }
        if (r->message)
                snprintf(s->last_message, sizeof(s->last_message), "%s", r->message);
        s->n++;
}

/* 200,000 items, at most 1,000 pending, answered newest first: delivered in order, each once, and
 * the ring stays the size of what is pending, not of the run. */
static void test_order_grows(void **state)
{
        GenSource g = { .n = 200000 };
        RunSource src = { gen_next, &g };
        Seen s = { .in_order = true, .same_digest = true };
        RunOrder o;
        size_t answered = 0, max_alloc = 0;

        assert_int_equal(run_order_init(&o, &src, seen_fn, &s), 0);
        while (!run_order_finished(&o)) {
                size_t i;
                int r = 1;

                while (run_order_pending(&o) < 1000 && (r = run_order_pull(&o, &i)) > 0) {
                        const RunItem *it = run_order_item(&o, i);
                        char want[64];

                        snprintf(want, sizeof(want), "item-%zu", i);
                        assert_non_null(it);
                        assert_string_equal(it->name, want);
                        assert_ptr_equal(it->path, it->name);
                        assert_false(*run_order_mark(&o, i));
                }
                assert_true(r >= 0);
                max_alloc = MAX(max_alloc, o.alloc);
                /* Newest first: nothing is delivered until the oldest comes, then all at once. */
                for (size_t k = o.n_items; k > answered; k--) {
                        size_t idx = k - 1;
                        char msg[32];

                        assert_false(run_order_has(&o, idx));
                        snprintf(msg, sizeof(msg), "m%zu", idx);
                        run_order_put(&o, &(RunResult){ .index = idx, .status = RUN_ERROR, .error = -EIO,
                                                        .message = msg });
                        /* The message was copied: the caller's buffer is gone. */
                        memset(msg, 'x', sizeof(msg) - 1);
                        assert_int_equal(s.n, idx == answered ? o.n_items : answered);
                }
                answered = o.n_items;
                /* Delivered: forgotten, and a second result for it is ignored. */
                assert_null(run_order_item(&o, answered - 1));
                assert_null(run_order_mark(&o, answered - 1));
                assert_true(run_order_has(&o, answered - 1));
                run_order_put(&o, &(RunResult){ .index = answered - 1, .status = RUN_OK });
                /* And one for an item not pulled yet. */
                run_order_put(&o, &(RunResult){ .index = answered + 5, .status = RUN_OK });
        }
        assert_int_equal(s.n, 200000);
        assert_true(s.in_order);
        assert_string_equal(s.last_message, "m199999");
        assert_true(max_alloc <= 1024);
        run_order_deinit(&o);
}

/* Copies each result into the array userdata by index. */
static void copy_fn(const RunItem *item, const RunResult *r, void *userdata)
{
        RunResult *g = userdata;

        g[r->index] = *r;
        g[r->index].message = NULL;
        assert_string_equal(item->path, r->index == 0 ? "pa" : item->name);
}

/* Expected digests and items answered without hashing. */
static void test_order_expected_preset(void **state)
{
        static const RunItem items[] = {
                { .name = "a", .path = "pa", .algo = HASH_SHA256, .expected = "ABCD" },
                { .name = "b", .path = "b", .algo = HASH_SHA256, .expected = "abcd" },
                { .name = "c", .path = "c", .algo = HASH_SHA256, .note = "why" },
                { .name = "d", .path = "d", .algo = HASH_SHA256, .error = -ENOENT },
        };
        RunArray array = { .items = items, .n = ELEMENTSOF(items) };
        RunSource src = { run_array_next, &array };
        RunResult pre, got[4] = {};
        RunOrder o;
        size_t i;

        assert_false(run_item_preset(&items[0], 0, &pre));
        assert_true(run_item_preset(&items[2], 2, &pre));
        assert_int_equal(pre.status, RUN_SKIPPED);
        assert_int_equal(pre.index, 2);
        assert_true(run_item_preset(&items[3], 3, &pre));
        assert_int_equal(pre.status, RUN_ERROR);
        assert_int_equal(pre.error, -ENOENT);

        assert_int_equal(run_order_init(&o, &src, copy_fn, got), 0);
        for (size_t k = 0; k < ELEMENTSOF(items); k++) {
                assert_int_equal(run_order_pull(&o, &i), 1);
                assert_int_equal(i, k);
        }
        assert_int_equal(run_order_pull(&o, &i), 0);
        assert_false(run_order_finished(&o));
        run_order_put(&o, &(RunResult){ .index = 1, .status = RUN_OK, .hex = "abce" });
        run_order_put(&o, &(RunResult){ .index = 0, .status = RUN_OK, .hex = "abcd" });
        assert_true(run_item_preset(run_order_item(&o, 2), 2, &pre));
        run_order_put(&o, &pre);
        assert_true(run_item_preset(run_order_item(&o, 3), 3, &pre));
        run_order_put(&o, &pre);
        assert_true(run_order_finished(&o));
        /* Compared without regard to case. */
        assert_int_equal(got[0].status, RUN_OK);
        assert_int_equal(got[1].status, RUN_MISMATCH);
        assert_int_equal(got[2].status, RUN_SKIPPED);
        assert_int_equal(got[3].status, RUN_ERROR);
        run_order_deinit(&o);
}

/* run_local() with a source of 20,000 items (one real file under many names, with notes and errors
 * among them): every item in order, the same digest each time, and the first result delivered
 * while most of the source was not even asked for yet. */
static void test_local_streams(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("runner"), *path = NULL;
        GenSource g = { .n = 20000, .presets = true };
        RunSource src = { gen_next, &g };
        Seen s = { .in_order = true, .same_digest = true, .gen = &g };
        RunReadOptions ro = {};
        int r;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 5000, 3), 0);
        g.path = path;

        r = run_local(&src, &ro, seen_fn, &s);
        assert_int_equal(r, 0);
        assert_int_equal(s.n, 20000);
        assert_true(s.in_order);
        assert_true(s.same_digest);
        assert_int_equal(s.size, 5000);
        assert_int_equal(s.skipped, 20000 / 97);
        assert_int_equal(s.errors, 198 - 2);  /* multiples of 101 that are not also 97's */
        fprintf(stderr, "# first result after %zu of %zu items\n", s.produced_at_first, g.n);
        /* The runner queues at most LOCAL_QUEUED_MAX (4,096) files, but pulls more as later ones
         * finish, and the engine shares its slots between the runner's batches, so how far it got
         * before item 0 was delivered depends on the machine's load (10,000 was passed in CI). What
         * must hold is that it streams: the first result comes before the source is used up. */
        assert_true(s.produced_at_first < g.n);
        th_rm_rf(dir);
}

/* An empty source, and a source that fails: the run ends with its error. */
static int fail_next(void *userdata, RunItem *ret)
{
        size_t *calls = userdata;

        if ((*calls)++ < 3) {
                *ret = (RunItem){ .name = "x", .path = "/nonexistent/x", .algo = HASH_SHA256 };
                return 1;
        }
        return -ENOMEM;
}

static void test_local_edges(void **state)
{
        RunArray empty = {};
        RunSource src = { run_array_next, &empty };
        Seen s = { .in_order = true };
        RunReadOptions ro = {};
        size_t calls = 0;

        assert_int_equal(run_local(&src, &ro, seen_fn, &s), 0);
        assert_int_equal(s.n, 0);

        src = (RunSource){ fail_next, &calls };
        assert_int_equal(run_local(&src, &ro, seen_fn, &s), -ENOMEM);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_grows),
                cmocka_unit_test(test_order_expected_preset),
                cmocka_unit_test(test_local_streams),
                cmocka_unit_test(test_local_edges),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
