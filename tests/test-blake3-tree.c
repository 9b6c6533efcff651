/* SPDX-License-Identifier: MIT */
/* test-blake3-tree: piece-wise BLAKE3 (subtree CVs + merge) against blake3_hasher and b3sum */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/blake3-tree.h"
#include "hash/hash.h"
#include "basic/macro.h"
#include "test-helpers.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
/* The largest input any test hashes: 64 MiB + 1. */
#define DATA_MAX (64 * MIB + 1)

static const size_t pieces[] = { 1 * KIB, 2 * KIB, 4 * KIB, 64 * KIB, 1 * MIB, 4 * MIB };

static uint8_t *data; /* DATA_MAX bytes of th_fill_random(..., 7), made once by the group setup */

static int setup(void **state)
{
        data = malloc(DATA_MAX);
        if (!data)
                return -1;
        th_fill_random(data, DATA_MAX, 7);
        return 0;
}

static int teardown(void **state)
{
        free(data);
        data = NULL;
        return 0;
}

static void reference(const uint8_t *in, size_t len, uint8_t out[BLAKE3_OUT_LEN])
{
        blake3_hasher h;

        blake3_hasher_init(&h);
        blake3_hasher_update(&h, in, len);
        blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
}

static void assert_digest(const uint8_t got[BLAKE3_OUT_LEN], const uint8_t want[BLAKE3_OUT_LEN],
                          const char *what, size_t len, size_t piece)
{
        char g[2 * BLAKE3_OUT_LEN + 1], w[2 * BLAKE3_OUT_LEN + 1];

        hash_to_hex(got, BLAKE3_OUT_LEN, g);
        hash_to_hex(want, BLAKE3_OUT_LEN, w);
        if (!streq(g, w))
                print_error("%s: %zu bytes in pieces of %zu: got %s, want %s\n", what, len, piece, g, w);
        assert_string_equal(g, w);
}

/* Every piece size smaller than len, against the reference hasher (which the tree function also
 * falls back to when len <= piece, so those are checked once, with the smallest such piece). */
static unsigned check_len(size_t len)
{
        uint8_t want[BLAKE3_OUT_LEN], got[BLAKE3_OUT_LEN];
        unsigned n = 0;
        bool fallback_done = false;

        assert_true(len <= DATA_MAX);
        reference(data, len, want);
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
                if (len <= pieces[i]) {
                        if (fallback_done)
                                continue;
                        fallback_done = true;
                }
                blake3_tree_hash(data, len, pieces[i], got);
                assert_digest(got, want, "tree vs blake3_hasher", len, pieces[i]);
                n++;
        }
        return n;
}

/* Both sides of every power of two of chunks, where the tree's shape changes. */
static void test_powers_of_two(void **state)
{
        unsigned n = 0;

        for (unsigned k = 0; k <= 14; k++) {
                size_t len = ((size_t)1 << k) * KIB;

                n += check_len(len - 1);
                n += check_len(len);
                n += check_len(len + 1);
        }
        print_message("%u digests compared\n", n);
}

static uint32_t rng_next(uint32_t *s)
{
        uint32_t x = *s;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return *s = x;
}

/* Lengths spread over every magnitude up to 8 MiB, so that the last piece, and each level of the
 * reduction inside it, sees odd CV counts of every size (3, 5, 7, ... CVs, an odd one carried up). */
static void test_random_lengths(void **state)
{
        uint32_t s = 4242;
        unsigned n = 0;

        for (unsigned i = 0; i < 60; i++) {
                uint32_t bits = 1 + rng_next(&s) % 23;

                n += check_len(1 + rng_next(&s) % ((uint32_t)1 << bits));
        }
        print_message("%u digests compared\n", n);
}

static void test_odd_lengths(void **state)
{
        static const size_t lens[] = {
                0, 1, 2, 3, 63, 64, 65, 1023, 1025, 3 * KIB + 17, 5 * KIB, 7 * KIB - 5, 11 * KIB + 1,
                255 * KIB + 1, 257 * KIB - 1, 5 * MIB + 3, 64 * MIB + 1,
        };
        unsigned n = 0;

        for (size_t i = 0; i < ELEMENTSOF(lens); i++)
                n += check_len(lens[i]);
        print_message("%u digests compared\n", n);
}


/* Pieces of mixed sizes, as a scheduler might cut them: at each point a random power of two of
 * chunks that the position is aligned to; the last piece fits below the lowest 1-bit of what
 * precedes it. Exercises the merge with uneven stacks, which uniform pieces never build. */
static void test_mixed_pieces(void **state)
{
        uint32_t s = 12345;
        unsigned pieces_total = 0;

        for (unsigned round = 0; round < 200; round++) {
                size_t len = 2 * KIB + rng_next(&s) % (3 * MIB);
                uint8_t want[BLAKE3_OUT_LEN], got[BLAKE3_OUT_LEN], cv[BLAKE3_OUT_LEN];
                Blake3Merge m;
                uint64_t chunk = 0;

                reference(data, len, want);
                blake3_merge_init(&m);
                for (;;) {
                        uint64_t left = DIV_ROUND_UP(len - chunk * KIB, KIB);
                        uint64_t align = chunk ? chunk & -chunk : UINT64_C(1) << 62;
                        uint64_t n = (uint64_t)1 << (rng_next(&s) % 12);

                        /* Ends here, sometimes, if the rest can be the last piece; always once
                         * nothing is left to push (a pushed piece leaves at least one byte). */
                        if (chunk > 0 && left <= align && (left <= 1 || rng_next(&s) % 4 == 0))
                                break;
                        n = MIN(n, align);
                        while (n >= left)
                                n /= 2;
                        blake3_subtree_cv(data + chunk * KIB, n * KIB, chunk, cv);
                        blake3_merge_push(&m, cv, n);
                        chunk += n;
                        pieces_total++;
                }
                blake3_subtree_cv(data + chunk * KIB, len - chunk * KIB, chunk, cv);
                blake3_merge_finish(&m, cv, len - chunk * KIB, got);
                pieces_total++;
                assert_digest(got, want, "mixed pieces vs blake3_hasher", len, 0);
        }
        print_message("200 inputs in %u pieces of mixed sizes compared\n", pieces_total);
}

/* Real files through the real b3sum CLI. */
static void test_b3sum(void **state)
{
        static const struct {
                size_t len, piece;
        } cases[] = {
                { 1025, 1 * KIB },        { 4 * KIB + 1, 2 * KIB },   { 64 * KIB, 4 * KIB },
                { MIB + 17, 64 * KIB },   { 5 * MIB + 3, 1 * MIB },   { 9 * MIB - 1, 4 * MIB },
        };
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ uint8_t *buf = NULL;

        if (!th_have_program("b3sum")) {
                print_message("skip: b3sum is not installed\n");
                skip();
        }
        buf = malloc(9 * MIB);
        assert_non_null(buf);
        dir = th_mkdtemp("b3tree");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = NULL, *want = NULL;
                uint8_t d[BLAKE3_OUT_LEN];
                char hex[2 * BLAKE3_OUT_LEN + 1];
                uint32_t seed = 100 + (uint32_t)i;

                assert_true(asprintf(&path, "%s/f%zu", dir, cases[i].len) > 0);
                assert_int_equal(th_write_random_file(path, cases[i].len, seed), 0);
                assert_true(cases[i].len <= 9 * MIB);
                th_fill_random(buf, cases[i].len, seed);
                blake3_tree_hash(buf, cases[i].len, cases[i].piece, d);
                hash_to_hex(d, BLAKE3_OUT_LEN, hex);
                want = th_run_first_word("b3sum --num-threads 1 '%s' 2>/dev/null", path);
                if (!want || !streq(want, hex))
                        print_error("%zu bytes in pieces of %zu: b3sum says %s, we say %s\n",
                                    cases[i].len, cases[i].piece, want ?: "(nothing)", hex);
                assert_non_null(want);
                assert_string_equal(want, hex);
        }
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_powers_of_two),
                cmocka_unit_test(test_odd_lengths),
                cmocka_unit_test(test_random_lengths),
                cmocka_unit_test(test_mixed_pieces),
                cmocka_unit_test(test_b3sum),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
