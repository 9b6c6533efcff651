/* SPDX-License-Identifier: MIT */
/* test-blake3-tree: piece-wise BLAKE3 (subtree CVs + merge) in every mode against blake3_hasher and b3sum */
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

/* The modes and lengths the tree must give as one piece does: the default; hash mode with the
 * longest output (two root output blocks' worth is not offered, 64 bytes is one); keyed and
 * derive-key with the default, a short, an odd and the longest length. */
#define KEY "fhash test-blake3-tree key 32 by"
#define CONTEXT "fhash test-blake3-tree 2024-01-01 derive-key context"
static const HashParams param_sets[] = {
        { 0 },
        { .out_len = 64 },
        { .keyed = true, .key = KEY },
        { .keyed = true, .key = KEY, .out_len = 13 },
        { .keyed = true, .key = KEY, .out_len = 64 },
        { .context = CONTEXT },
        { .context = CONTEXT, .out_len = 1 },
        { .context = CONTEXT, .out_len = 47 },
        { .context = CONTEXT, .out_len = 64 },
};

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

/* The one-piece digest: blake3_hasher through HashCtx, in p's mode and length. */
static void reference(const HashParams *p, const uint8_t *in, size_t len, uint8_t out[HASH_DIGEST_MAX])
{
        assert_int_equal(hash_oneshot_params(HASH_BLAKE3, p, in, len, out), 0);
}

static void assert_digest(const HashParams *p, const uint8_t *got, const uint8_t *want, const char *what,
                          size_t len, size_t piece)
{
        size_t size = hash_params_digest_size(HASH_BLAKE3, p);
        char g[HASH_HEX_MAX], w[HASH_HEX_MAX];

        hash_to_hex(got, size, g);
        hash_to_hex(want, size, w);
        if (!streq(g, w))
                print_error("%s: %zu bytes in pieces of %zu (%s%s, %zu bytes out): got %s, want %s\n", what, len,
                            piece, p->keyed ? "keyed" : p->context ? "derive-key " : "hash",
                            p->context ?: "", size, g, w);
        assert_string_equal(g, w);
}

/* Every piece size smaller than len, against the reference hasher (which the tree function also
 * falls back to when len <= piece, so those are checked once, with the smallest such piece). */
static unsigned check_len_params(const HashParams *p, size_t len)
{
        uint8_t want[HASH_DIGEST_MAX], got[HASH_DIGEST_MAX];
        unsigned n = 0;
        bool fallback_done = false;

        assert_true(len <= DATA_MAX);
        reference(p, data, len, want);
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
                if (len <= pieces[i]) {
                        if (fallback_done)
                                continue;
                        fallback_done = true;
                }
                assert_int_equal(blake3_tree_hash_params(p, data, len, pieces[i], got), 0);
                assert_digest(p, got, want, "tree vs blake3_hasher", len, pieces[i]);
                n++;
        }
        return n;
}

/* The default mode through the original entry point, then every other parameter set (up to 4 MiB:
 * the modes change the key words and flags, not the tree's shape, which the longer inputs test). */
static unsigned check_len(size_t len)
{
        uint8_t want[HASH_DIGEST_MAX], got[BLAKE3_OUT_LEN];
        unsigned n = 0;

        reference(NULL, data, len, want);
        for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
                blake3_tree_hash(data, len, pieces[i], got);
                assert_digest(&param_sets[0], got, want, "blake3_tree_hash vs blake3_hasher", len, pieces[i]);
        }
        n += (unsigned)ELEMENTSOF(pieces);
        for (size_t s = 1; s < ELEMENTSOF(param_sets) && len <= 4 * MIB; s++)
                n += check_len_params(&param_sets[s], len);
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

static void test_bad_params(void **state)
{
        uint8_t out[HASH_DIGEST_MAX];
        Blake3Mode mode = { .flags = 0xaa };

        assert_int_equal(blake3_tree_hash_params(&(HashParams) { .out_len = 65 }, data, 4096, 1024, out), -ERANGE);
        assert_int_equal(blake3_tree_hash_params(&(HashParams) { .keyed = true, .context = "x" }, data, 4096,
                                                 1024, out),
                         -EINVAL);
        assert_int_equal(blake3_mode_init(&mode, &(HashParams) { .out_len = 65 }), -ERANGE);
        assert_int_equal(mode.flags, 0xaa); /* untouched on failure */
        assert_int_equal(blake3_mode_init(&mode, NULL), 0);
        assert_int_equal(mode.flags, 0);
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
                const HashParams *p = &param_sets[round % ELEMENTSOF(param_sets)];
                size_t out_len = hash_params_digest_size(HASH_BLAKE3, p);
                uint8_t want[HASH_DIGEST_MAX], got[HASH_DIGEST_MAX], cv[BLAKE3_OUT_LEN];
                Blake3Mode mode;
                Blake3Merge m;
                uint64_t chunk = 0;

                reference(p, data, len, want);
                assert_int_equal(blake3_mode_init(&mode, p), 0);
                blake3_merge_init_mode(&m, &mode);
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
                        blake3_subtree_cv_mode(&mode, data + chunk * KIB, n * KIB, chunk, cv);
                        blake3_merge_push(&m, cv, n);
                        chunk += n;
                        pieces_total++;
                }
                blake3_subtree_cv_mode(&mode, data + chunk * KIB, len - chunk * KIB, chunk, cv);
                blake3_merge_finish_xof(&m, cv, len - chunk * KIB, got, out_len);
                blake3_mode_wipe(&mode);
                pieces_total++;
                assert_digest(p, got, want, "mixed pieces vs blake3_hasher", len, 0);
        }
        print_message("200 inputs in %u pieces of mixed sizes, 9 modes and lengths, compared\n", pieces_total);
}

/* The merge gives any output length, as the XOF does: past one root output block (64 bytes), the
 * counter goes up. HashParams stops at 64; the merge itself does not. */
static void test_long_output(void **state)
{
        static const size_t outs[] = { 1, 63, 64, 65, 128, 200, 1000 };
        uint8_t want[1000], got[1000], cv[BLAKE3_OUT_LEN];
        const size_t len = 5 * KIB + 3, piece = 4 * KIB;

        for (size_t s = 0; s < ELEMENTSOF(param_sets); s++)
                for (size_t o = 0; o < ELEMENTSOF(outs); o++) {
                        const HashParams *p = &param_sets[s];
                        blake3_hasher h;
                        Blake3Mode mode;
                        Blake3Merge m;

                        if (p->keyed)
                                blake3_hasher_init_keyed(&h, p->key);
                        else if (p->context)
                                blake3_hasher_init_derive_key(&h, p->context);
                        else
                                blake3_hasher_init(&h);
                        blake3_hasher_update(&h, data, len);
                        blake3_hasher_finalize(&h, want, outs[o]);

                        assert_int_equal(blake3_mode_init(&mode, p), 0);
                        blake3_merge_init_mode(&m, &mode);
                        blake3_subtree_cv_mode(&mode, data, piece, 0, cv);
                        blake3_merge_push(&m, cv, piece / KIB);
                        blake3_subtree_cv_mode(&mode, data + piece, len - piece, piece / KIB, cv);
                        memset(got, 0, sizeof got);
                        blake3_merge_finish_xof(&m, cv, len - piece, got, outs[o]);
                        assert_memory_equal(got, want, outs[o]);
                        if (outs[o] < sizeof got) /* nothing written past out_len */
                                assert_int_equal(got[outs[o]], 0);
                }
}

/* Real files through the real b3sum CLI, in every mode and length of param_sets. */
static bool b3sum_missing;

static void test_b3sum(void **state)
{
        static const struct {
                size_t len, piece;
        } cases[] = {
                { 1025, 1 * KIB },        { 4 * KIB + 1, 2 * KIB },   { 64 * KIB, 4 * KIB },
                { MIB + 17, 64 * KIB },   { 5 * MIB + 3, 1 * MIB },   { 9 * MIB - 1, 4 * MIB },
        };
        _cleanup_free_ char *dir = NULL, *keyfile = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        unsigned n = 0;
        FILE *k;

        if (!th_have_program("b3sum")) {
                b3sum_missing = true;
                skip();
        }
        buf = malloc(9 * MIB);
        assert_non_null(buf);
        dir = th_mkdtemp("b3tree");
        assert_true(asprintf(&keyfile, "%s/key", dir) > 0);
        k = fopen(keyfile, "we");
        assert_non_null(k);
        assert_int_equal(fwrite(KEY, 1, HASH_KEY_SIZE, k), HASH_KEY_SIZE);
        assert_int_equal(fclose(k), 0);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *path = NULL;
                uint32_t seed = 100 + (uint32_t)i;

                assert_true(asprintf(&path, "%s/f%zu", dir, cases[i].len) > 0);
                assert_int_equal(th_write_random_file(path, cases[i].len, seed), 0);
                assert_true(cases[i].len <= 9 * MIB);
                th_fill_random(buf, cases[i].len, seed);
                for (size_t s = 0; s < ELEMENTSOF(param_sets); s++, n++) {
                        const HashParams *p = &param_sets[s];
                        size_t size = hash_params_digest_size(HASH_BLAKE3, p);
                        _cleanup_free_ char *want = NULL;
                        uint8_t d[HASH_DIGEST_MAX];
                        char hex[HASH_HEX_MAX];

                        assert_int_equal(blake3_tree_hash_params(p, buf, cases[i].len, cases[i].piece, d), 0);
                        hash_to_hex(d, size, hex);
                        if (p->keyed)
                                want = th_run_first_word("b3sum --num-threads 1 -l %zu --keyed '%s' < '%s' 2>/dev/null",
                                                         size, path, keyfile);
                        else if (p->context)
                                want = th_run_first_word("b3sum --num-threads 1 -l %zu --derive-key '%s' '%s' 2>/dev/null",
                                                         size, p->context, path);
                        else
                                want = th_run_first_word("b3sum --num-threads 1 -l %zu '%s' 2>/dev/null", size, path);
                        if (!want || !streq(want, hex))
                                print_error("%zu bytes in pieces of %zu (%s, %zu bytes out): b3sum says %s, we say %s\n",
                                            cases[i].len, cases[i].piece,
                                            p->keyed ? "keyed" : p->context ? "derive-key" : "hash", size,
                                            want ?: "(nothing)", hex);
                        assert_non_null(want);
                        assert_string_equal(want, hex);
                }
        }
        print_message("%u digests compared with b3sum (hash, --keyed, --derive-key, --length)\n", n);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bad_params),
                cmocka_unit_test(test_powers_of_two),
                cmocka_unit_test(test_odd_lengths),
                cmocka_unit_test(test_random_lengths),
                cmocka_unit_test(test_mixed_pieces),
                cmocka_unit_test(test_long_output),
                cmocka_unit_test(test_b3sum),
        };
        int r;

        r = cmocka_run_group_tests(tests, setup, teardown);
        /* test_b3sum skipped itself (and is reported so). */
        if (b3sum_missing)
                printf("# b3sum is not installed: the tree was not compared with it\n");
        return r;
}
