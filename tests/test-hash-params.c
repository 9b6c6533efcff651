/* SPDX-License-Identifier: MIT */
/* test-hash-params: digest lengths, BLAKE3 modes, streaming equivalence, parameter checks, key wiping */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/blake3-tree.h"
#include "hash/hash.h"
#include "basic/macro.h"
#include "test-helpers.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(HashCtx *, hash_ctx_free);

/* Deterministic lengths and split points, independent of the data generator. */
static uint32_t rng_next(uint32_t *s)
{
        uint32_t x = *s;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return *s = x;
}

static void check_hex_params(HashAlgo a, const HashParams *p, const void *data, size_t n, const char *want)
{
        uint8_t d[HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];
        size_t size = hash_params_digest_size(a, p);

        assert_int_equal(strlen(want), 2 * size);
        assert_int_equal(hash_oneshot_params(a, p, data, n, d), 0);
        hash_to_hex(d, size, hex);
        if (!streq(hex, want))
                print_error("%s (%zu bytes out) of %zu bytes: got %s, want %s\n", hash_algo_to_string(a), size,
                            n, hex, want);
        assert_string_equal(hex, want);
}

/* BLAKE2 with a digest length: the length is in the parameter block, so each length is its own
 * function, not a prefix of the longest. Values as b2sum -l (coreutils) prints them; the sweep over
 * every length is in test-hash-cli. */
static void test_blake2_lengths(void **state)
{
        HashParams p = { .out_len = 32 };
        uint8_t full[HASH_DIGEST_MAX], d[HASH_DIGEST_MAX];

        check_hex_params(HASH_BLAKE2B, &p, "abc", 3,
                         "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
        p.out_len = 1;
        check_hex_params(HASH_BLAKE2B, &p, "abc", 3, "6b");
        p.out_len = 64;
        check_hex_params(HASH_BLAKE2B, &p, "abc", 3,
                         "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                         "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");

        for (HashAlgo a = HASH_BLAKE2B; a != _HASH_ALGO_INVALID; a = a == HASH_BLAKE2B ? HASH_BLAKE2S : _HASH_ALGO_INVALID) {
                size_t max = hash_algo_digest_max(a);

                assert_int_equal(hash_oneshot(a, "abc", 3, full), 0);
                for (uint32_t len = 1; len < max; len++) {
                        p.out_len = len;
                        assert_int_equal(hash_oneshot_params(a, &p, "abc", 3, d), 0);
                        assert_memory_not_equal(d, full, len);
                }
                p.out_len = (uint32_t)max;
                assert_int_equal(hash_oneshot_params(a, &p, "abc", 3, d), 0);
                assert_memory_equal(d, full, max);
        }
}

/* The same file's keyed_hash and derive_key fields (key "whats the Elvish word for friend",
 * context "BLAKE3 2019-12-27 16:29:52 test vectors context"), and its hash field, each the first 64
 * bytes of the extended output: HASH_DIGEST_MAX, the longest we offer. */
static const char b3_key[] = "whats the Elvish word for friend";
static const char b3_context[] = "BLAKE3 2019-12-27 16:29:52 test vectors context";
static const struct {
        size_t len;
        const char *hash, *keyed, *derive;
} blake3_xof_vectors[] = {
        { 0,
          "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
          "e00f03e7b69af26b7faaf09fcd333050338ddfe085b8cc869ca98b206c08243a",
          "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"
          "b18171a2f22a4b94822c701f107153dba24918c4bae4d2945c20ece13387627d",
          "2cc39783c223154fea8dfb7c1b1660f2ac2dcbd1c1de8277b0b0dd39b7e50d7d"
          "905630c8be290dfcf3e6842f13bddd573c098c3f17361f1f206b8cad9d088aa4" },
        { 1,
          "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"
          "c3a6cb8bf623e20cdb535f8d1a5ffb86342d9c0b64aca3bce1d31f60adfa137b",
          "6d7878dfff2f485635d39013278ae14f1454b8c0a3a2d34bc1ab38228a80c95b"
          "6568c0490609413006fbd428eb3fd14e7756d90f73a4725fad147f7bf70fd61c",
          "b3e2e340a117a499c6cf2398a19ee0d29cca2bb7404c73063382693bf66cb06c"
          "5827b91bf889b6b97c5477f535361caefca0b5d8c4746441c576171119331589" },
        { 1023,
          "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"
          "a182d27a591b05592b15607500e1e8dd56bc6c7fc063715b7a1d737df5bad333",
          "c951ecdf03288d0fcc96ee3413563d8a6d3589547f2c2fb36d9786470f1b9d6e"
          "890316d2e6d8b8c25b0a5b2180f94fb1a158ef508c3cde45e2966bd796a696d3",
          "74a16c1c3d44368a86e1ca6df64be6a2f64cce8f09220787450722d85725dea5"
          "9c413264404661e9e4d955409dfe4ad3aa487871bcd454ed12abfe2c2b1eb775" },
        { 1024,
          "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"
          "1cf8107265ecdaf8505b95d8fcec83a98a6a96ea5109d2c179c47a387ffbb404",
          "75c46f6f3d9eb4f55ecaaee480db732e6c2105546f1e675003687c31719c7ba4"
          "a78bc838c72852d4f49c864acb7adafe2478e824afe51c8919d06168414c265f",
          "7356cd7720d5b66b6d0697eb3177d9f8d73a4a5c5e968896eb6a689684302706"
          "6c23b601d3ddfb391e90d5c8eccdef4ae2a264bce9e612ba15e2bc9d654af148" },
        { 1025,
          "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"
          "f4c4a22b4b399155358a994e52bf255de60035742ec71bd08ac275a1b51cc6bf",
          "357dc55de0c7e382c900fd6e320acc04146be01db6a8ce7210b7189bd664ea69"
          "362396b77fdc0d2634a552970843722066c3c15902ae5097e00ff53f1e116f1c",
          "effaa245f065fbf82ac186839a249707c3bddf6d3fdda22d1b95a3c970379bcb"
          "5d31013a167509e9066273ab6e2123bc835b408b067d88f96addb550d96b6852" },
        { 2049,
          "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"
          "96de31d71d74103403822a2e0bc1eb193e7aecc9643a76b7bbc0c9f9c52e8783",
          "9f29700902f7c86e514ddc4df1e3049f258b2472b6dd5267f61bf13983b78dd5"
          "f9a88abfefdfa1e00b418971f2b39c64ca621e8eb37fceac57fd0c8fc8e117d4",
          "2ea477c5515cc3dd606512ee72bb3e0e758cfae7232826f35fb98ca1bcbdf273"
          "16d8e9e79081a80b046b60f6a263616f33ca464bd78d79fa18200d06c7fc9bff" },
        { 4097,
          "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"
          "05f91b0b5600a11251652eacfa9497b31cd3c409ce2e45cfe6c0a016967316c4",
          "00df940cd36bb9fa7cbbc3556744e0dbc8191401afe70520ba292ee3ca80abbc"
          "606db4976cfdd266ae0abf667d9481831ff12e0caa268e7d3e57260c0824115a",
          "aca51029626b55fda7117b42a7c211f8c6e9ba4fe5b7a8ca922f34299500ead8"
          "a897f66a400fed9198fd61dd2d58d382458e64e100128075fc54b860934e8de2" },
        { 7169,
          "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"
          "98a8b20534be1ca9eb2ae2df3fae2ea60e48c6fb0b850b1385b5de0fe460dbe9",
          "ed9b1a922c046fdb3d423ae34e143b05ca1bf28b710432857bf738bcedbfa511"
          "3c9e28d72fcbfc020814ce3f5d4fc867f01c8f5b6caf305b3ea8a8ba2da3ab69",
          "554b0a5efea9ef183f2f9b931b7497995d9eb26f5c5c6dad2b97d62fc5ac31d9"
          "9b20652c016d88ba2a611bbd761668d5eda3e568e940faae24b0d9991c3bd25a" },
};

/* Every output length of every mode is a prefix of the 64-byte vector (BLAKE3 is an XOF). */
static void test_kat_blake3_modes(void **state)
{
        uint8_t in[7169];

        for (size_t i = 0; i < sizeof in; i++)
                in[i] = (uint8_t)(i % 251);
        for (size_t i = 0; i < ELEMENTSOF(blake3_xof_vectors); i++)
                for (unsigned mode = 0; mode < 3; mode++) {
                        const char *want = mode == 0 ? blake3_xof_vectors[i].hash :
                                           mode == 1 ? blake3_xof_vectors[i].keyed :
                                                       blake3_xof_vectors[i].derive;
                        HashParams p = { .keyed = mode == 1, .context = mode == 2 ? b3_context : NULL };
                        char prefix[HASH_HEX_MAX];

                        memcpy(p.key, b3_key, HASH_KEY_SIZE);
                        for (uint32_t len = 1; len <= HASH_DIGEST_MAX; len++) {
                                p.out_len = len;
                                memcpy(prefix, want, 2 * len);
                                prefix[2 * len] = '\0';
                                check_hex_params(HASH_BLAKE3, &p, in, blake3_xof_vectors[i].len, prefix);
                        }
                        /* out_len 0 is the default, 32 bytes. */
                        p.out_len = 0;
                        memcpy(prefix, want, 64);
                        prefix[64] = '\0';
                        check_hex_params(HASH_BLAKE3, &p, in, blake3_xof_vectors[i].len, prefix);
                        hash_params_wipe(&p);
                }
}

/* One-shot = fixed 1 MiB chunks (as the engine's buffers arrive) = random cuts (with empty updates,
 * cuts inside internal blocks) = byte at a time, for a and p. */
static void check_streaming(HashCtx *c, HashAlgo a, const HashParams *p, const uint8_t *data, size_t size,
                            uint32_t seed)
{
        uint8_t one[HASH_DIGEST_MAX], d[HASH_DIGEST_MAX];
        size_t ds = hash_params_digest_size(a, p);

        assert_true(ds > 0);
        assert_true(seed != 0); /* xorshift stays at 0 */
        assert_int_equal(hash_oneshot_params(a, p, data, size, one), 0);

        assert_int_equal(hash_ctx_init_params(c, a, p), 0);
        assert_int_equal(hash_ctx_digest_size(c), ds);
        for (size_t off = 0; off < size; off += 1 << 20)
                assert_int_equal(hash_ctx_update(c, data + off, MIN((size_t)1 << 20, size - off)), 0);
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_memory_equal(one, d, ds);

        assert_int_equal(hash_ctx_init_params(c, a, p), 0);
        for (size_t off = 0; off < size;) {
                size_t n = rng_next(&seed) % 70000;
                if (n % 5 == 0)
                        n = 0;
                n = MIN(n, size - off);
                assert_int_equal(hash_ctx_update(c, data + off, n), 0);
                off += n;
        }
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_memory_equal(one, d, ds);

        assert_int_equal(hash_ctx_init_params(c, a, p), 0);
        for (size_t off = 0; off < size; off++)
                assert_int_equal(hash_ctx_update(c, data + off, 1), 0);
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_memory_equal(one, d, ds);
}

/* Every algorithm gives the same digest however the input is cut. */
static void test_streaming_equivalence(void **state)
{
        const size_t size = (3 << 20) + 7;
        _cleanup_free_ uint8_t *data = malloc(size);
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;

        assert_non_null(data);
        th_fill_random(data, size, 42);
        assert_int_equal(hash_ctx_new(&c), 0);

        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                check_streaming(c, a, NULL, data, size, 0x1234u + (uint32_t)a);
}

/* Every parameter set that changes the digest: each length class of BLAKE2b and BLAKE2s, and BLAKE3's
 * three modes with short, default, odd and longest outputs. 300 KiB + 7 spans several BLAKE3
 * subtrees and both BLAKE2 block sizes many times over, and keeps byte-at-a-time quick. */
static void test_streaming_params(void **state)
{
        const size_t size = (300 << 10) + 7;
        _cleanup_free_ uint8_t *data = malloc(size);
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;
        static const uint32_t b2b_lens[] = { 1, 20, 32, 48, 63, 64 }, b2s_lens[] = { 1, 16, 28, 31, 32 },
                              b3_lens[] = { 0, 1, 16, 33, 64 };
        unsigned n = 0;

        assert_non_null(data);
        th_fill_random(data, size, 43);
        assert_int_equal(hash_ctx_new(&c), 0);

        for (size_t i = 0; i < ELEMENTSOF(b2b_lens); i++, n++)
                check_streaming(c, HASH_BLAKE2B, &(HashParams) { .out_len = b2b_lens[i] }, data, size, 77 + n);
        for (size_t i = 0; i < ELEMENTSOF(b2s_lens); i++, n++)
                check_streaming(c, HASH_BLAKE2S, &(HashParams) { .out_len = b2s_lens[i] }, data, size, 77 + n);
        for (unsigned mode = 0; mode < 3; mode++)
                for (size_t i = 0; i < ELEMENTSOF(b3_lens); i++, n++) {
                        HashParams p = { .out_len = b3_lens[i], .keyed = mode == 1,
                                         .context = mode == 2 ? b3_context : NULL };

                        memcpy(p.key, b3_key, HASH_KEY_SIZE);
                        check_streaming(c, HASH_BLAKE3, &p, data, size, 77 + n);
                        hash_params_wipe(&p);
                }
        print_message("%u parameter sets: one-shot = chunks = random cuts = byte at a time\n", n);
}

/* Whether the n bytes of needle appear anywhere in the heap block at p. The block's real size comes
 * from malloc_usable_size() (glibc and the sanitizers' allocators have it): HashCtx is opaque. */
static bool block_contains(const void *p, const void *needle, size_t n)
{
        size_t size = malloc_usable_size((void *)p);

        return size >= n && memmem(p, size, needle, n) != NULL;
}

/* Keys do not linger: BLAKE3 keeps the key as its key words, which on a little-endian machine are
 * the key's bytes. While a keyed digest runs they are in the context (the control: the search can
 * find them); after final, after another init, they are not. In derive-key mode the input is the
 * secret (key material): input shorter than a block stays in the hasher's buffer until final. */
static void test_key_wipe(void **state)
{
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;
        HashParams p = { .keyed = true };
        uint8_t d[HASH_DIGEST_MAX], material[40];
        Blake3Mode mode;

        if (!(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)) {
                print_message("skip: key words are not the key's bytes on a big-endian machine\n");
                skip();
        }
        for (size_t i = 0; i < HASH_KEY_SIZE; i++)
                p.key[i] = (uint8_t)(0xa0 + i * 7);
        for (size_t i = 0; i < sizeof material; i++)
                material[i] = (uint8_t)(0x5c ^ (i * 13));
        assert_int_equal(hash_ctx_new(&c), 0);

        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE3, &p), 0);
        assert_true(block_contains(c, p.key, HASH_KEY_SIZE));
        assert_int_equal(hash_ctx_update(c, "some input", 10), 0);
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_false(block_contains(c, p.key, HASH_KEY_SIZE));

        /* Abandoned half-way: the next init wipes it, whatever the next algorithm. */
        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE3, &p), 0);
        assert_int_equal(hash_ctx_update(c, "some", 4), 0);
        assert_true(block_contains(c, p.key, HASH_KEY_SIZE));
        assert_int_equal(hash_ctx_init(c, HASH_XXH64), 0);
        assert_false(block_contains(c, p.key, HASH_KEY_SIZE));

        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE3, &(HashParams) { .context = "ctx" }), 0);
        assert_int_equal(hash_ctx_update(c, material, sizeof material), 0);
        assert_true(block_contains(c, material, sizeof material));
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_false(block_contains(c, material, sizeof material));

        /* The tree's mode and merge. */
        assert_int_equal(blake3_mode_init(&mode, &p), 0);
        assert_memory_equal(mode.key, p.key, HASH_KEY_SIZE);
        blake3_mode_wipe(&mode);
        assert_null(memmem(&mode, sizeof mode, p.key, HASH_KEY_SIZE));
        {
                Blake3Merge m;
                uint8_t cv[BLAKE3_OUT_LEN] = { 0 };

                assert_int_equal(blake3_mode_init(&mode, &p), 0);
                blake3_merge_init_mode(&m, &mode);
                blake3_mode_wipe(&mode);
                assert_non_null(memmem(&m, sizeof m, p.key, HASH_KEY_SIZE));
                blake3_merge_push(&m, cv, 1);
                blake3_merge_finish_xof(&m, cv, 1, d, 64);
                assert_null(memmem(&m, sizeof m, p.key, HASH_KEY_SIZE));
        }

        hash_params_wipe(&p);
        assert_false(p.keyed);
        for (size_t i = 0; i < HASH_KEY_SIZE; i++)
                assert_int_equal(p.key[i], 0);
}

/* What each algorithm takes, what its digest size becomes, and the tags coreutils writes for it. */
static void test_params(void **state)
{
        char buf[32];
        uint32_t len = 99;

        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                unsigned want = a == HASH_BLAKE3 ? HASH_PARAM_LENGTH | HASH_PARAM_KEY | HASH_PARAM_CONTEXT :
                                a == HASH_BLAKE2B || a == HASH_BLAKE2S ? HASH_PARAM_LENGTH :
                                a == HASH_FSVERITY || a == HASH_FSVERITY_SHA512 ? HASH_PARAM_BLOCK_SIZE : 0;
                size_t max = a == HASH_BLAKE2B || a == HASH_BLAKE3 ? 64 : a == HASH_BLAKE2S ? 32 : 0;

                assert_int_equal(hash_algo_params(a), want);
                assert_int_equal(hash_algo_digest_max(a), max);
                assert_int_equal(hash_params_check(a, NULL), 0);
                assert_int_equal(hash_params_check(a, &HASH_PARAMS_DEFAULT), 0);
                assert_int_equal(hash_params_digest_size(a, NULL), hash_algo_digest_size(a));
                for (uint32_t l = 1; l <= HASH_DIGEST_MAX + 1; l++) {
                        HashParams p = { .out_len = l };
                        int r = !(want & HASH_PARAM_LENGTH) ? -EOPNOTSUPP : l > max ? -ERANGE : 0;

                        assert_int_equal(hash_params_check(a, &p), r);
                        assert_int_equal(hash_params_digest_size(a, &p), r < 0 ? 0 : l);
                }
                assert_int_equal(hash_params_check(a, &(HashParams) { .keyed = true }),
                                 want & HASH_PARAM_KEY ? 0 : -EOPNOTSUPP);
                assert_int_equal(hash_params_check(a, &(HashParams) { .context = "c" }),
                                 want & HASH_PARAM_CONTEXT ? 0 : -EOPNOTSUPP);
                for (uint32_t b = 512; b <= 131072; b *= 2)
                        assert_int_equal(hash_params_check(a, &(HashParams) { .block_size = b }),
                                         !(want & HASH_PARAM_BLOCK_SIZE)                        ? -EOPNOTSUPP
                                         : b < HASH_BLOCK_SIZE_MIN || b > HASH_BLOCK_SIZE_MAX ? -ERANGE
                                                                                                : 0);
                /* The tag for the defaults is the plain one, and parses back. */
                assert_non_null(hash_params_tag(a, NULL, buf, sizeof buf));
                assert_string_equal(buf, hash_algo_tag(a));
                assert_int_equal(hash_params_from_tag(buf, strlen(buf), &len), a);
                assert_int_equal(len, 0);
        }
        assert_int_equal(hash_params_check(HASH_BLAKE3, &(HashParams) { .keyed = true, .context = "" }), -EINVAL);
        assert_int_equal(hash_params_check(_HASH_ALGO_INVALID, NULL), -EINVAL);
        assert_int_equal(hash_params_check(_HASH_ALGO_MAX, NULL), -EINVAL);
        assert_int_equal(hash_params_digest_size(_HASH_ALGO_MAX, NULL), 0);
        assert_int_equal(hash_algo_params(_HASH_ALGO_INVALID), 0);

        /* b2sum -l 256 --tag: "BLAKE2b-256"; at the maximum the plain tag; BLAKE3 keeps its own. */
        assert_string_equal(hash_params_tag(HASH_BLAKE2B, &(HashParams) { .out_len = 32 }, buf, sizeof buf),
                            "BLAKE2b-256");
        assert_string_equal(hash_params_tag(HASH_BLAKE2B, &(HashParams) { .out_len = 1 }, buf, sizeof buf),
                            "BLAKE2b-8");
        assert_string_equal(hash_params_tag(HASH_BLAKE2B, &(HashParams) { .out_len = 64 }, buf, sizeof buf),
                            "BLAKE2b");
        assert_string_equal(hash_params_tag(HASH_BLAKE2S, &(HashParams) { .out_len = 16 }, buf, sizeof buf),
                            "BLAKE2s-128");
        assert_string_equal(hash_params_tag(HASH_BLAKE3, &(HashParams) { .out_len = 16 }, buf, sizeof buf),
                            "BLAKE3");
        assert_null(hash_params_tag(HASH_SHA256, &(HashParams) { .out_len = 16 }, buf, sizeof buf));
        assert_null(hash_params_tag(HASH_BLAKE2B, &(HashParams) { .out_len = 32 }, buf, 11));
        assert_non_null(hash_params_tag(HASH_BLAKE2B, &(HashParams) { .out_len = 32 }, buf, 12));

        assert_int_equal(hash_params_from_tag("BLAKE2b-256", 11, &len), HASH_BLAKE2B);
        assert_int_equal(len, 32);
        assert_int_equal(hash_params_from_tag("BLAKE2b-8", 9, &len), HASH_BLAKE2B);
        assert_int_equal(len, 1);
        assert_int_equal(hash_params_from_tag("BLAKE2s-128", 11, &len), HASH_BLAKE2S);
        assert_int_equal(len, 16);
        assert_int_equal(hash_params_from_tag("BLAKE2b-512", 11, &len), HASH_BLAKE2B);
        assert_int_equal(len, 64);
        assert_int_equal(hash_params_from_tag("SHA3-384", 8, &len), HASH_SHA3_384);
        assert_int_equal(len, 0);
        assert_int_equal(hash_params_from_tag("BLAKE2b-256 trailing", 11, NULL), HASH_BLAKE2B);
        len = 99;
        static const char *const bad[] = { "BLAKE2b-", "BLAKE2b-12", "BLAKE2b-520", "BLAKE2b-0", "BLAKE2b-064",
                                           "BLAKE2s-512", "BLAKE3-256", "SHA256-128", "-256", "BLAKE2b-2560",
                                           "BLAKE2b256", "XXH3-64" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(hash_params_from_tag(bad[i], strlen(bad[i]), &len), _HASH_ALGO_INVALID);
        assert_int_equal(len, 99);
}

static void test_algo_set(void **state)
{
        HashAlgoSet set = { 0 };
        char buf[HASH_SET_NAMES_MAX];

        assert_int_equal(hash_algo_set_parse("sha256", &set), 0);
        assert_int_equal(set.n, 1);
        assert_int_equal(set.algos[0], HASH_SHA256);
        assert_int_equal(hash_algo_set_parse("sha256,blake3,xxh3", &set), 0);
        assert_int_equal(set.n, 3);
        assert_int_equal(set.algos[1], HASH_BLAKE3);
        assert_int_equal(set.algos[2], HASH_XXH3);
        assert_true(hash_algo_set_contains(&set, HASH_BLAKE3));
        assert_false(hash_algo_set_contains(&set, HASH_MD5));
        assert_int_equal(hash_algo_set_digest_size(&set), 32 + 32 + 8);
        assert_string_equal(hash_algo_set_format(&set, buf, sizeof(buf)), "sha256,blake3,xxh3");
        assert_null(hash_algo_set_format(&set, buf, 10)); /* does not fit */

        /* The longest names, as many as a set takes, fit HASH_SET_NAMES_MAX. */
        assert_int_equal(hash_algo_set_parse("sha3-512,sha3-384,sha3-256,blake2b", &set), 0);
        assert_non_null(hash_algo_set_format(&set, buf, sizeof(buf)));
        assert_int_equal(hash_algo_set_digest_size(&set), 64 + 48 + 32 + 64);

        /* Whatever fails leaves *ret alone. */
        set = HASH_ALGO_SET_ONE(HASH_MD5);
        assert_int_equal(hash_algo_set_parse("sha256,nosuch", &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse("", &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse("sha256,", &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse(",sha256", &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse("sha256,,md5", &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse(NULL, &set), -EINVAL);
        assert_int_equal(hash_algo_set_parse("md5,sha1,md5", &set), -ENOTUNIQ);
        assert_int_equal(hash_algo_set_parse("md5,sha1,sha256,sha512,blake3", &set), -E2BIG);
        assert_int_equal(set.n, 1);
        assert_int_equal(set.algos[0], HASH_MD5);
        assert_int_equal(hash_algo_set_digest_size(&(HashAlgoSet){ 0 }), 0);
        assert_null(hash_algo_set_format(&(HashAlgoSet){ 0 }, buf, sizeof(buf)));

        /* Joined hex, both ways. */
        char hex[HASH_SET_HEX_MAX];
        uint8_t digest[HASH_SET_DIGEST_MAX];
        assert_int_equal(hash_algo_set_parse("crc32c,xxh32,md5", &set), 0);
        for (size_t i = 0; i < sizeof(digest); i++)
                digest[i] = (uint8_t)i;
        hash_set_to_hex(&set, digest, hex);
        assert_string_equal(hex, "00010203,04050607,08090a0b0c0d0e0f1011121314151617");
        assert_true(hash_set_hex_valid(&set, hex));
        assert_true(hash_set_hex_valid(&set, "00010203,04050607,08090A0B0C0D0E0F1011121314151617"));
        assert_false(hash_set_hex_valid(&set, "00010203,04050607"));
        assert_false(hash_set_hex_valid(&set, "00010203,04050607,08090a0b0c0d0e0f1011121314151617,"));
        assert_false(hash_set_hex_valid(&set, "00010203;04050607,08090a0b0c0d0e0f1011121314151617"));
        assert_false(hash_set_hex_valid(&set, "0001020x,04050607,08090a0b0c0d0e0f1011121314151617"));
        assert_false(hash_set_hex_valid(&set, "000102030405060708090a0b0c0d0e0f1011121314151617"));
        assert_false(hash_set_hex_valid(&set, ""));
        set = HASH_ALGO_SET_ONE(HASH_CRC32C);
        assert_true(hash_set_hex_valid(&set, "00010203"));
        assert_false(hash_set_hex_valid(&set, "00010203,"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_params),
                cmocka_unit_test(test_algo_set),
                cmocka_unit_test(test_blake2_lengths),
                cmocka_unit_test(test_kat_blake3_modes),
                cmocka_unit_test(test_key_wipe),
                cmocka_unit_test(test_streaming_equivalence),
                cmocka_unit_test(test_streaming_params),
        };

        if (hash_global_init() < 0) {
                fprintf(stderr, "hash_global_init() failed\n");
                return EXIT_FAILURE;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
