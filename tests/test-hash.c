/* SPDX-License-Identifier: MIT */
/* test-hash: known answers, names, hex, context reuse and errors, CRC32C variants, threads */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "hash/hash.h"
#include "hash/md.h"
#include "basic/macro.h"
#include "test-helpers.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(HashCtx *, hash_ctx_free);

static const char msg448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
static const char msg896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                             "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

/* Deterministic lengths and split points, independent of the data generator. */
static uint32_t rng_next(uint32_t *s)
{
        uint32_t x = *s;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return *s = x;
}

static void check_hex(HashAlgo a, const void *data, size_t n, const char *want)
{
        uint8_t d[HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];

        assert_int_equal(strlen(want), 2 * hash_algo_digest_size(a));
        assert_int_equal(hash_oneshot(a, data, n, d), 0);
        hash_to_hex(d, hash_algo_digest_size(a), hex);
        if (!streq(hex, want))
                print_error("%s of %zu bytes: got %s, want %s\n", hash_algo_to_string(a), n, hex, want);
        assert_string_equal(hex, want);
}

static void check_str(HashAlgo a, const char *s, const char *want)
{
        check_hex(a, s, strlen(s), want);
}

/* The million-'a' message of the NIST examples. */
static void check_million_a(HashAlgo a, const char *want)
{
        _cleanup_free_ char *m = malloc(1000000);

        assert_non_null(m);
        memset(m, 'a', 1000000);
        check_hex(a, m, 1000000, want);
}

/* FIPS 180-2 appendix examples and the NIST CSRC "example values" for SHA-1/SHA-256/SHA-512. */
static void test_kat_sha1(void **state)
{
        check_str(HASH_SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d");
        check_str(HASH_SHA1, msg448, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
        check_str(HASH_SHA1, msg896, "a49b2446a02c645bf419f995b67091253a04a259");
        check_million_a(HASH_SHA1, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

static void test_kat_sha256(void **state)
{
        check_str(HASH_SHA256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        check_str(HASH_SHA256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        check_str(HASH_SHA256, msg448, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        check_str(HASH_SHA256, msg896, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
        check_million_a(HASH_SHA256, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_kat_sha512(void **state)
{
        check_str(HASH_SHA512, "abc",
                  "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                  "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
        check_str(HASH_SHA512, msg448,
                  "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c335"
                  "96fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445");
        check_str(HASH_SHA512, msg896,
                  "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
                  "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909");
        check_million_a(HASH_SHA512,
                        "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
                        "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b");
}

/* FIPS 180-2 appendix and NIST CSRC example values for SHA-224 and SHA-384. */
static void test_kat_sha224_sha384(void **state)
{
        check_str(HASH_SHA224, "", "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f");
        check_str(HASH_SHA224, "abc", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7");
        check_str(HASH_SHA224, msg448, "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525");
        check_million_a(HASH_SHA224, "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67");
        check_str(HASH_SHA384, "abc",
                  "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                  "8086072ba1e7cc2358baeca134c825a7");
        check_str(HASH_SHA384, msg896,
                  "09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712"
                  "fcc7c71a557e2db966c3e9fa91746039");
        check_million_a(HASH_SHA384,
                        "9d0e1809716474cb086e834e310a4a1ced149e9c00f248527972cec5704c2a5b"
                        "07b8b3dc38ecc4ebae97ddd87f3d8985");
}

/* RFC 1321, appendix A.5 test suite. */
static void test_kat_md5(void **state)
{
        check_str(HASH_MD5, "", "d41d8cd98f00b204e9800998ecf8427e");
        check_str(HASH_MD5, "a", "0cc175b9c0f1b6a831c399e269772661");
        check_str(HASH_MD5, "abc", "900150983cd24fb0d6963f7d28e17f72");
        check_str(HASH_MD5, "message digest", "f96b697d7cb7938d525a2f31aaf161d0");
        check_str(HASH_MD5, "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b");
        check_str(HASH_MD5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                  "d174ab98d277d9f5a5611c2c9f419d9f");
        check_str(HASH_MD5,
                  "1234567890123456789012345678901234567890"
                  "1234567890123456789012345678901234567890",
                  "57edf4a22be3c955ac49da2e2107b67a");
}

/* FIPS 202 / NIST CSRC SHA3-256 example values. */
static void test_kat_sha3_256(void **state)
{
        check_str(HASH_SHA3_256, "", "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a");
        check_str(HASH_SHA3_256, "abc", "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
        check_str(HASH_SHA3_256, msg448, "41c0dba2a9d6240849100376a8235e2c82e1b9998a999e21db32dd97496d3376");
        check_str(HASH_SHA3_256, msg896, "916f6061fe879741ca6469b43971dfdb28b1a32dc36cb3254e812be27aad1d18");
        check_million_a(HASH_SHA3_256, "5c8875ae474a3634ba4fd55ec85bffd661f32aca75c6d699d0cdcb6c115891c1");
}

/* FIPS 202 / NIST CSRC SHA3-224 example values. */
static void test_kat_sha3_224(void **state)
{
        check_str(HASH_SHA3_224, "", "6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7");
        check_str(HASH_SHA3_224, "abc", "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf");
        check_str(HASH_SHA3_224, msg448, "8a24108b154ada21c9fd5574494479ba5c7e7ab76ef264ead0fcce33");
        check_million_a(HASH_SHA3_224, "d69335b93325192e516a912e6d19a15cb51c6ed5c15243e7a7fd653c");
}

/* FIPS 202 / NIST CSRC SHA3-384 and SHA3-512 example values. */
static void test_kat_sha3_384_512(void **state)
{
        check_str(HASH_SHA3_384, "",
                  "0c63a75b845e4f7d01107d852e4c2485c51a50aaaa94fc61995e71bbee983a2a"
                  "c3713831264adb47fb6bd1e058d5f004");
        check_str(HASH_SHA3_384, "abc",
                  "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b2"
                  "98d88cea927ac7f539f1edf228376d25");
        check_str(HASH_SHA3_384, msg448,
                  "991c665755eb3a4b6bbdfb75c78a492e8c56a22c5c4d7e429bfdbc32b9d4ad5a"
                  "a04a1f076e62fea19eef51acd0657c22");
        check_str(HASH_SHA3_512, "",
                  "a69f73cca23a9ac5c8b567dc185a756e97c982164fe25859e0d1dcc1475c80a6"
                  "15b2123af1f5f94c11e3e9402c3ac558f500199d95b6d3e301758586281dcd26");
        check_str(HASH_SHA3_512, "abc",
                  "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e"
                  "10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0");
        check_str(HASH_SHA3_512, msg448,
                  "04a371e84ecfb5b8b77cb48610fca8182dd457ce6f326a0fd3d7ec2f1e91636d"
                  "ee691fbe0c985302ba1b0d8dc78c086346b533b49c030d99a27daf1139d6e75e");
}

/* GB/T 32905-2016 (and draft-shen-sm3-hash) appendix A, examples 1 and 2. */
static void test_kat_sm3(void **state)
{
        check_str(HASH_SM3, "abc", "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0");
        check_str(HASH_SM3, "abcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcd",
                  "debe9ff92275b8a138604889c18e5a4d6fdb70e5387e5765293dcba39c0c5732");
}

/* RFC 7693 appendix A (BLAKE2b-512 of "abc") and the unkeyed empty-input value. */
static void test_kat_blake2b(void **state)
{
        check_str(HASH_BLAKE2B, "abc",
                  "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                  "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
        check_str(HASH_BLAKE2B, "",
                  "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
                  "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce");
}

/* One context through BLAKE2b's two implementations in turn (the default length from md where it has
 * BLAKE2, any other from libb2) and back: each run's digest is its own length's. */
static void test_blake2_lengths_one_ctx(void **state)
{
        static const char *const want[] = {
                "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923",
                "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319",
        };
        HashCtx *c = NULL;
        uint8_t d[HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];

        assert_int_equal(hash_ctx_new(&c), 0);
        for (unsigned i = 0; i < 5; i++) {
                uint32_t len = i % 2 ? 32 : 0;

                assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE2B, &(HashParams){ .out_len = len }), 0);
                assert_int_equal(hash_ctx_update(c, "a", 1), 0);
                assert_int_equal(hash_ctx_update(c, "bc", 2), 0);
                assert_int_equal(hash_ctx_final(c, d), 0);
                hash_to_hex(d, hash_ctx_digest_size(c), hex);
                assert_string_equal(hex, want[i % 2]);
        }
        hash_ctx_free(c);
}

/* RFC 7693 appendix B (BLAKE2s-256 of "abc") and the unkeyed empty-input value. */
static void test_kat_blake2s(void **state)
{
        check_str(HASH_BLAKE2S, "abc", "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
        check_str(HASH_BLAKE2S, "", "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9");
}

/* BLAKE3 test_vectors/test_vectors.json: input byte i is i % 251; the default 32-byte hash is the
 * first 32 bytes of the "hash" field. */
static const struct {
        size_t len;
        const char *hash;
} blake3_vectors[] = {
        { 0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" },
        { 1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213" },
        { 1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11" },
        { 1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7" },
        { 1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444" },
        { 2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a" },
        { 2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030" },
        { 3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2" },
        { 3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3" },
        { 4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969" },
        { 4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995" },
        { 5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833" },
        { 5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff" },
        { 6144, "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205" },
        { 6145, "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f" },
        { 7168, "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a" },
        { 7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817" },
        { 8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63" },
        { 8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b" },
        { 16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4" },
        { 31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47" },
        { 102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085" },
};

static void test_kat_blake3(void **state)
{
        _cleanup_free_ uint8_t *in = malloc(102400);

        assert_non_null(in);
        for (size_t i = 0; i < 102400; i++)
                in[i] = (uint8_t)(i % 251);
        for (size_t i = 0; i < ELEMENTSOF(blake3_vectors); i++)
                check_hex(HASH_BLAKE3, in, blake3_vectors[i].len, blake3_vectors[i].hash);
}

/* BLAKE3's output is a stream (b3sum --length, --seek): any piece of it is that piece of a longer
 * read, and its first bytes are the digest of that length. */
static void test_blake3_xof(void **state)
{
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;
        uint8_t whole[300], piece[300], d[64];

        assert_int_equal(hash_ctx_new(&c), 0);
        assert_int_equal(hash_ctx_xof(c, 0, whole, 1), -EINVAL); /* before any init */
        assert_int_equal(hash_ctx_init(c, HASH_SHA256), 0);
        assert_int_equal(hash_ctx_xof(c, 0, whole, 1), -EOPNOTSUPP);
        assert_int_equal(hash_ctx_init(c, HASH_BLAKE3), 0);
        assert_int_equal(hash_ctx_update(c, "foo", 3), 0);
        assert_int_equal(hash_ctx_xof(c, 0, whole, sizeof(whole)), 0);
        for (size_t seek = 0; seek < sizeof(whole); seek += 37)
                for (size_t n = 0; seek + n <= sizeof(whole); n += 61) {
                        memset(piece, 0xaa, sizeof(piece));
                        assert_int_equal(hash_ctx_xof(c, seek, piece, n), 0);
                        assert_memory_equal(piece, whole + seek, n);
                }
        assert_int_equal(hash_oneshot_params(HASH_BLAKE3, &(HashParams){ .out_len = 64 }, "foo", 3, d), 0);
        assert_memory_equal(d, whole, 64);
        /* The 32-byte digest of "foo" that b3sum's tests start from. */
        check_str(HASH_BLAKE3, "foo", "04e0bb39f30b1a3feb89f536c93be15055482df748674b00d26e5a75777702e9");
}

/* xxHash: the empty-input values from its documentation, "abc" as `xxhsum -H0..-H3` prints it
 * (canonical, big-endian). */
static void test_kat_xxh(void **state)
{
        check_str(HASH_XXH3, "", "2d06800538d394c2");
        check_str(HASH_XXH3, "abc", "78af5f94892f3950");
        check_str(HASH_XXH128, "", "99aa06d3014798d86001c324468d497f");
        check_str(HASH_XXH128, "abc", "06b05ab6733a618578af5f94892f3950");
        check_str(HASH_XXH32, "", "02cc5d05");
        check_str(HASH_XXH32, "abc", "32d153ff");
        check_str(HASH_XXH64, "", "ef46db3751d8e999");
        check_str(HASH_XXH64, "abc", "44bc2cf5ad770999");
}

/* The CRC-32C check value and the RFC 3720 (iSCSI) appendix B.4 vectors. */
static void test_kat_crc32c(void **state)
{
        uint8_t buf[32];

        check_str(HASH_CRC32C, "", "00000000");
        check_str(HASH_CRC32C, "123456789", "e3069283");
        memset(buf, 0, sizeof buf);
        check_hex(HASH_CRC32C, buf, sizeof buf, "8a9136aa");
        memset(buf, 0xff, sizeof buf);
        check_hex(HASH_CRC32C, buf, sizeof buf, "62a8ab43");
        for (unsigned i = 0; i < 32; i++)
                buf[i] = (uint8_t)i;
        check_hex(HASH_CRC32C, buf, sizeof buf, "46dd794e");
        for (unsigned i = 0; i < 32; i++)
                buf[i] = (uint8_t)(31 - i);
        check_hex(HASH_CRC32C, buf, sizeof buf, "113fdb5c");

        /* The raw functions give the same values, for both implementations. */
        assert_int_equal(crc32c_update(0, "123456789", 9), 0xe3069283u);
        assert_int_equal(crc32c_portable(0, "123456789", 9), 0xe3069283u);
}

/* A context is reused across algorithms and files; init discards whatever came before. */
/* fs-verity's file digest, as `fsverity digest --compact` (fsverity-utils 1.5) prints it: an empty
 * file (its root hash is zeros), one short block, one whole block, a tree of two levels; and
 * other block sizes through the parameters. */
static void check_params_hex(HashAlgo a, uint32_t block_size, const void *data, size_t n, const char *want)
{
        HashParams p = { .block_size = block_size };
        uint8_t d[HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];

        assert_int_equal(hash_oneshot_params(a, &p, data, n, d), 0);
        hash_to_hex(d, hash_algo_digest_size(a), hex);
        assert_string_equal(hex, want);
}

static void test_kat_fsverity(void **state)
{
        _cleanup_free_ char *m = malloc(1000000);

        assert_non_null(m);
        memset(m, 'a', 1000000);
        check_str(HASH_FSVERITY, "", "3d248ca542a24fc62d1c43b916eae5016878e2533c88238480b26128a1f1af95");
        check_str(HASH_FSVERITY, "abc", "700b6bd8510f0b4f9bac8b9cf0459151a1c4a99f467892bb4bd289a67df8e19c");
        check_hex(HASH_FSVERITY, m, 4096, "a2a808ddaced77f0b6b3068f47b14b5a1fb3fc43674993ab11b8e7e6f2d089e2");
        check_hex(HASH_FSVERITY, m, 1000000, "50049eeefec9385017816e55c0783638f225a3938338cbd673ce9ee8bc977100");
        check_str(HASH_FSVERITY_SHA512, "",
                  "ccf9e5aea1c2a64efa2f2354a6024b90dffde6bbc017825045dce374474e13d1"
                  "0adb9dadcc6ca8e17a3c075fbd31336e8f266ae6fa93a6c3bed66f9e784e5abf");
        check_str(HASH_FSVERITY_SHA512, "abc",
                  "78be1be69d611f5b6b013eb333311beccea25ab099b68ecd4e6ed6bf5175966c"
                  "7c5bce19fca5f218848fd0ecd3cc71246b9dc3d45ce9f05a4e808b8e28439517");
        check_hex(HASH_FSVERITY_SHA512, m, 4096,
                  "36b837c9d8c1c3f992c5be7feed967217668a847866b42eebcdb1ae81239ff85"
                  "6e93ebfac147adc058f5136202836273fc86771c1bcf598aaf9a4529f9e13cd3");
        check_hex(HASH_FSVERITY_SHA512, m, 1000000,
                  "798047742a23edec77f96387721f5edb9e52c3753255982d69a3dbf2d8d486e4"
                  "5796a4b8f6d20a5f58e079a8652cd92ff03da86c3e8a77665e7cda28110e3440");
        check_params_hex(HASH_FSVERITY, 1024, m, 1000000,
                         "75f071fc83bd60f36d89adf90fa40a22e6bdee47befb618de60d55660c8daca8");
        check_params_hex(HASH_FSVERITY_SHA512, 65536, m, 1000000,
                         "f0591abe96b2f82841e9c09ef325148685495eda7cb8a1289f2c5ed5f3ae291d"
                         "368e1c2fe3f57cceeb1e00f01749a110b07ca808aa94da98df8a347d13014a3f");
}

static void test_ctx_reuse_and_errors(void **state)
{
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;
        uint8_t want[HASH_DIGEST_MAX], d[HASH_DIGEST_MAX], canary[HASH_DIGEST_MAX];

        assert_int_equal(hash_ctx_new(&c), 0);
        assert_int_equal(hash_ctx_new(NULL), -EINVAL);

        /* Not initialised yet. */
        assert_int_equal(hash_ctx_update(c, "x", 1), -EINVAL);
        assert_int_equal(hash_ctx_final(c, d), -EINVAL);
        assert_int_equal(hash_ctx_init(c, _HASH_ALGO_INVALID), -EINVAL);
        assert_int_equal(hash_ctx_init(c, _HASH_ALGO_MAX), -EINVAL);
        assert_int_equal(hash_ctx_init(NULL, HASH_SHA256), -EINVAL);

        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                HashAlgo other = (HashAlgo)((a + 1) % _HASH_ALGO_MAX);

                assert_int_equal(hash_oneshot(a, "hello", 5, want), 0);
                /* Abandon a digest of another algorithm half-way. */
                assert_int_equal(hash_ctx_init(c, other), 0);
                assert_int_equal(hash_ctx_update(c, "garbage", 7), 0);
                assert_int_equal(hash_ctx_init(c, a), 0);
                assert_int_equal(hash_ctx_update(c, "hel", 3), 0);
                assert_int_equal(hash_ctx_update(c, NULL, 0), 0);
                assert_int_equal(hash_ctx_update(c, "lo", 2), 0);
                assert_int_equal(hash_ctx_final(c, d), 0);
                assert_memory_equal(want, d, hash_algo_digest_size(a));

                /* A finished digest needs a new init; the output is left alone on failure. */
                memset(canary, 0xa5, sizeof canary);
                memcpy(d, canary, sizeof d);
                assert_int_equal(hash_ctx_update(c, "x", 1), -EINVAL);
                assert_int_equal(hash_ctx_final(c, d), -EINVAL);
                assert_memory_equal(d, canary, sizeof d);

                /* The same algorithm again from the same context. */
                assert_int_equal(hash_ctx_init(c, a), 0);
                assert_int_equal(hash_ctx_update(c, "hello", 5), 0);
                assert_int_equal(hash_ctx_final(c, d), 0);
                assert_memory_equal(want, d, hash_algo_digest_size(a));
        }

        assert_int_equal(hash_ctx_init(c, HASH_SHA256), 0);
        assert_int_equal(hash_ctx_update(c, NULL, 1), -EINVAL);
        assert_int_equal(hash_oneshot(_HASH_ALGO_INVALID, "x", 1, d), -EINVAL);
        assert_null(hash_ctx_free(NULL));

        /* Parameters an algorithm does not take are refused, and the running digest is left as it
         * was: a caller can report the error and go on. */
        assert_int_equal(hash_ctx_init(c, HASH_SHA256), 0);
        assert_int_equal(hash_ctx_update(c, "hel", 3), 0);
        assert_int_equal(hash_ctx_init_params(c, HASH_SHA256, &(HashParams) { .out_len = 16 }), -EOPNOTSUPP);
        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE2B, &(HashParams) { .keyed = true }), -EOPNOTSUPP);
        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE2B, &(HashParams) { .out_len = 65 }), -ERANGE);
        assert_int_equal(hash_ctx_init_params(c, HASH_BLAKE3, &(HashParams) { .keyed = true, .context = "x" }),
                         -EINVAL);
        /* fs-verity's block size: a power of two a kernel can enable, on fs-verity only. */
        assert_int_equal(hash_ctx_init_params(c, HASH_SHA256, &(HashParams) { .block_size = 4096 }), -EOPNOTSUPP);
        assert_int_equal(hash_ctx_init_params(c, HASH_FSVERITY, &(HashParams) { .block_size = 3000 }), -EINVAL);
        assert_int_equal(hash_ctx_init_params(c, HASH_FSVERITY, &(HashParams) { .block_size = 512 }), -ERANGE);
        assert_int_equal(hash_ctx_init_params(c, HASH_FSVERITY_SHA512, &(HashParams) { .block_size = 131072 }),
                         -ERANGE);
        assert_int_equal(hash_ctx_update(c, "lo", 2), 0);
        assert_int_equal(hash_ctx_final(c, d), 0);
        assert_int_equal(hash_oneshot(HASH_SHA256, "hello", 5, want), 0);
        assert_memory_equal(want, d, 32);
        assert_int_equal(hash_oneshot_params(HASH_MD5, &(HashParams) { .context = "" }, "x", 1, d), -EOPNOTSUPP);

        /* NULL parameters are the defaults; so is an all-zero set, for every algorithm. */
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                assert_int_equal(hash_oneshot(a, "defaults", 8, want), 0);
                assert_int_equal(hash_oneshot_params(a, &HASH_PARAMS_DEFAULT, "defaults", 8, d), 0);
                assert_memory_equal(want, d, hash_algo_digest_size(a));
                assert_int_equal(hash_ctx_init_params(c, a, NULL), 0);
                assert_int_equal(hash_ctx_digest_size(c), hash_algo_digest_size(a));
        }
}

static void test_names(void **state)
{
        _cleanup_free_ char *list = strdup(hash_algo_list());
        static const size_t sizes[_HASH_ALGO_MAX] = {
                [HASH_SHA256] = 32,   [HASH_SHA512] = 64,   [HASH_SHA1] = 20,     [HASH_MD5] = 16,
                [HASH_SHA3_256] = 32, [HASH_BLAKE2B] = 64,  [HASH_BLAKE3] = 32,   [HASH_XXH3] = 8,
                [HASH_XXH128] = 16,   [HASH_CRC32C] = 4,    [HASH_SHA224] = 28,   [HASH_SHA384] = 48,
                [HASH_SHA3_384] = 48, [HASH_SHA3_512] = 64, [HASH_SM3] = 32,      [HASH_BLAKE2S] = 32,
                [HASH_XXH32] = 4,     [HASH_XXH64] = 8,     [HASH_SHA3_224] = 28, [HASH_FSVERITY] = 32,
                [HASH_FSVERITY_SHA512] = 64,
        };
        char *save = NULL;
        HashAlgo a = 0;

        assert_string_equal(hash_algo_to_string(HASH_SHA256), "sha256");
        assert_string_equal(hash_algo_to_string(HASH_SHA3_256), "sha3-256");
        assert_string_equal(hash_algo_to_string(HASH_SHA3_512), "sha3-512");
        assert_string_equal(hash_algo_to_string(HASH_XXH32), "xxh32");
        assert_string_equal(hash_algo_to_string(HASH_BLAKE2S), "blake2s");
        for (HashAlgo i = 0; i < _HASH_ALGO_MAX; i++) {
                const char *s = hash_algo_to_string(i);
                assert_non_null(s);
                assert_int_equal(hash_algo_from_string(s), i);
                assert_int_equal(hash_algo_digest_size(i), sizes[i]);
                assert_true(hash_algo_digest_size(i) <= HASH_DIGEST_MAX);
        }

        /* The usage list names every algorithm, in table order. */
        assert_non_null(list);
        for (char *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save), a++) {
                assert_true(a < _HASH_ALGO_MAX);
                assert_string_equal(w, hash_algo_to_string(a));
        }
        assert_int_equal(a, _HASH_ALGO_MAX);

        assert_null(hash_algo_to_string(_HASH_ALGO_INVALID));
        assert_null(hash_algo_to_string(_HASH_ALGO_MAX));
        assert_int_equal(hash_algo_digest_size(_HASH_ALGO_MAX), 0);
        static const char *const bad[] = { "", "SHA256", "sha-256", "sha 256", "sha256 ", "crc32",
                                           "xxh", "XXH64", "blake2", "sha3", "md", "sha3_224", "blake2s256" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(hash_algo_from_string(bad[i]), _HASH_ALGO_INVALID);
        assert_int_equal(hash_algo_from_string(NULL), _HASH_ALGO_INVALID);
}

static void test_hex(void **state)
{
        uint8_t in[HASH_DIGEST_MAX], out[HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];

        for (size_t i = 0; i < sizeof in; i++)
                in[i] = (uint8_t)(i * 37 + 11);
        for (size_t n = 0; n <= sizeof in; n++) {
                hash_to_hex(in, n, hex);
                assert_int_equal(strlen(hex), 2 * n);
                memset(out, 0, sizeof out);
                assert_int_equal(hash_from_hex(hex, out, n), 0);
                assert_memory_equal(in, out, n);
        }

        hash_to_hex((const uint8_t *)"\x00\x01\xab\xff", 4, hex);
        assert_string_equal(hex, "0001abff");
        assert_int_equal(hash_from_hex("DEADbeef", out, 4), 0);
        assert_memory_equal(out, "\xde\xad\xbe\xef", 4);

        /* Wrong length or a non-hex digit is rejected without touching the output. */
        memset(out, 0x5a, 4);
        assert_int_equal(hash_from_hex("deadbee", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex("deadbeef0", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex("deadbeeg", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex("dead beef", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex("0xdeadbe", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex("", out, 4), -EINVAL);
        assert_int_equal(hash_from_hex(NULL, out, 4), -EINVAL);
        assert_memory_equal(out, "\x5a\x5a\x5a\x5a", 4);

        /* Every algorithm's digest survives the round trip. */
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                size_t ds = hash_algo_digest_size(a);
                assert_int_equal(hash_oneshot(a, "round trip", 10, in), 0);
                hash_to_hex(in, ds, hex);
                assert_int_equal(hash_from_hex(hex, out, ds), 0);
                assert_memory_equal(in, out, ds);
        }
}

/* FilesDigested's digests: hex joined by ',' to bytes and lengths, and back. */
static void test_joined_hex(void **state)
{
        static const char *const sets[] = { "sha256", "sha256,md5", "blake3,xxh3,md5,sha512", "crc32c,sha1" };
        static const char *const bad[] = { "", ",", "ab,", ",ab", "ab,,cd", "abc", "ab,c", "xy", "ab cd",
                                           "ab,cd,ef,01,23" };
        uint8_t digest[HASH_SET_MAX * HASH_DIGEST_MAX], out[sizeof digest];
        char hex[HASH_SET_HEX_MAX], back[HASH_SET_HEX_MAX];
        uint32_t lengths[HASH_SET_MAX];

        for (size_t s = 0; s < ELEMENTSOF(sets); s++) {
                HashAlgoSet set;
                size_t total = 0;

                assert_int_equal(hash_algo_set_parse(sets[s], &set), 0);
                for (unsigned i = 0; i < set.n; i++) {
                        assert_int_equal(hash_oneshot(set.algos[i], "joined", 6, digest + total), 0);
                        total += hash_algo_digest_size(set.algos[i]);
                }
                hash_set_to_hex(&set, digest, hex);
                /* Only checked, then parsed. */
                assert_int_equal(hash_joined_from_hex(hex, NULL, SIZE_MAX, lengths, HASH_SET_MAX), (int)set.n);
                memset(out, 0, sizeof out);
                assert_int_equal(hash_joined_from_hex(hex, out, total, lengths, HASH_SET_MAX), (int)set.n);
                assert_memory_equal(out, digest, total);
                for (unsigned i = 0; i < set.n; i++)
                        assert_int_equal(lengths[i], hash_algo_digest_size(set.algos[i]));
                hash_joined_to_hex(out, lengths, set.n, back);
                assert_string_equal(back, hex);
                /* One byte short of room, or one digest more than max. */
                assert_int_equal(hash_joined_from_hex(hex, out, total - 1, lengths, HASH_SET_MAX), -EINVAL);
                if (set.n > 1)
                        assert_int_equal(hash_joined_from_hex(hex, NULL, SIZE_MAX, lengths, set.n - 1), -EINVAL);
        }
        /* Upper case parses; an empty, odd or non-hex digest, or a fifth, does not. */
        assert_int_equal(hash_joined_from_hex("AB,cd", out, 2, lengths, HASH_SET_MAX), 2);
        assert_memory_equal(out, "\xab\xcd", 2);
        for (size_t b = 0; b < ELEMENTSOF(bad); b++)
                assert_int_equal(hash_joined_from_hex(bad[b], out, sizeof out, lengths, HASH_SET_MAX), -EINVAL);
        assert_int_equal(hash_joined_from_hex(NULL, out, sizeof out, lengths, HASH_SET_MAX), -EINVAL);
}

static void test_crc32c_impls(void **state)
{
        const size_t max = 200000;
        _cleanup_free_ uint8_t *data = malloc(max + 16);
        uint32_t seed = 7;
        const char *impl = hash_crc32c_impl();

        assert_non_null(data);
        assert_non_null(impl);
        print_message("crc32c implementation: %s\n", impl);
#if defined(__x86_64__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul"))
                assert_string_equal(impl, "sse4.2");
        else
                assert_string_equal(impl, "portable");
#else
        assert_string_equal(impl, "portable");
#endif
        th_fill_random(data, max + 16, 99);

        /* Lengths around the three-stream block sizes, then random lengths and misaligned starts. */
        static const size_t edges[] = { 0, 1, 7, 8, 9, 15, 16, 17, 767, 768, 769, 1024, 24575, 24576,
                                        24577, 24576 + 768, 24576 + 767, 49152, 49153, 65536, 131072 };
        for (size_t i = 0; i < ELEMENTSOF(edges); i++)
                for (size_t off = 0; off < 16; off++)
                        assert_int_equal(crc32c_update(0, data + off, edges[i]),
                                         crc32c_portable(0, data + off, edges[i]));
        for (unsigned i = 0; i < 500; i++) {
                size_t off = rng_next(&seed) % 16;
                size_t n = rng_next(&seed) % max;
                uint32_t init = i % 3 == 0 ? 0 : rng_next(&seed);
                assert_int_equal(crc32c_update(init, data + off, n), crc32c_portable(init, data + off, n));
        }

        /* Continuing a running value equals one pass, for both. */
        for (unsigned i = 0; i < 100; i++) {
                size_t n = rng_next(&seed) % max, cut = n ? rng_next(&seed) % n : 0;
                uint32_t whole = crc32c_portable(0, data, n);
                assert_int_equal(crc32c_portable(crc32c_portable(0, data, cut), data + cut, n - cut), whole);
                assert_int_equal(crc32c_update(crc32c_update(0, data, cut), data + cut, n - cut), whole);
        }
}

/* Several threads race through hash_global_init() and hash at once. */
static void *hash_thread(void *arg)
{
        uint8_t *d = arg;

        if (hash_global_init() < 0 || hash_oneshot(HASH_SHA256, "abc", 3, d) < 0)
                memset(d, 0, 32);
        return NULL;
}

static void test_threads(void **state)
{
        pthread_t t[4];
        uint8_t d[4][HASH_DIGEST_MAX];
        char hex[HASH_HEX_MAX];

        for (unsigned i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(pthread_create(&t[i], NULL, hash_thread, d[i]), 0);
        for (unsigned i = 0; i < ELEMENTSOF(t); i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                hash_to_hex(d[i], 32, hex);
                assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kat_sha1),
                cmocka_unit_test(test_kat_sha256),
                cmocka_unit_test(test_kat_sha512),
                cmocka_unit_test(test_kat_sha224_sha384),
                cmocka_unit_test(test_kat_md5),
                cmocka_unit_test(test_kat_sha3_256),
                cmocka_unit_test(test_kat_sha3_384_512),
                cmocka_unit_test(test_kat_sm3),
                cmocka_unit_test(test_kat_blake2b),
                cmocka_unit_test(test_kat_blake2s),
                cmocka_unit_test(test_blake2_lengths_one_ctx),
                cmocka_unit_test(test_kat_blake3),
                cmocka_unit_test(test_blake3_xof),
                cmocka_unit_test(test_kat_sha3_224),
                cmocka_unit_test(test_kat_xxh),
                cmocka_unit_test(test_kat_crc32c),
                cmocka_unit_test(test_kat_fsverity),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_hex),
                cmocka_unit_test(test_joined_hex),
                cmocka_unit_test(test_ctx_reuse_and_errors),
                cmocka_unit_test(test_crc32c_impls),
                cmocka_unit_test(test_threads),
        };

        /* Built twice: over OpenSSL (what libfhash links) and over nettle (fhashctl's binary). */
        print_message("digests from %s\n", md_backend());
        if (hash_global_init() < 0) {
                fprintf(stderr, "hash_global_init() failed\n");
                return EXIT_FAILURE;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
