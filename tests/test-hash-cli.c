/* SPDX-License-Identifier: MIT */
/* test-hash-cli: every algorithm and parameter set against the reference tools, on real files */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/hash.h"
#include "basic/macro.h"
#include "test-helpers.h"

/* Tools found missing, for the exit status: a comparison that could not run is a skip (77) naming
 * them, never a silent pass. */
static char missing[512];

static bool have(const char *program)
{
        if (th_have_program(program))
                return true;
        if (!strstr(missing, program)) {
                size_t l = strlen(missing);
                (void)snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "", program);
        }
        return false;
}

static const size_t sizes[] = { 0, 1, 3, 63, 64, 65, 1023, 1024, 1025, 4095, 4096, 4097, (1 << 20) + 17 };
#define SIZE_MAX_TESTED ((1 << 20) + 17)

typedef struct Files {
        char *dir;
        char *path[ELEMENTSOF(sizes)];
        uint8_t *data[ELEMENTSOF(sizes)];
} Files;

static int setup(void **state)
{
        Files *f = calloc(1, sizeof *f);

        if (!f)
                return -1;
        f->dir = th_mkdtemp("hash-cli");
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                uint32_t seed = 1000 + (uint32_t)i;

                if (asprintf(&f->path[i], "%s/f%zu", f->dir, sizes[i]) < 0 ||
                    th_write_random_file(f->path[i], sizes[i], seed) < 0 || !(f->data[i] = malloc(sizes[i] + 1)))
                        return -1;
                th_fill_random(f->data[i], sizes[i], seed);
        }
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Files *f = *state;

        th_rm_rf(f->dir);
        free(f->dir);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                free(f->path[i]);
                free(f->data[i]);
        }
        free(f);
        return 0;
}

/* Runs cmd (a shell command line) and compares the first word of its line k with want[k], for
 * all n lines; it must print no more. One process for many digests: spawning one per digest made
 * this test take minutes on a busy machine. */
static unsigned compare_lines(const char *cmd, char *const *want, size_t n, const char *what)
{
        char line[1024];
        size_t k = 0;
        FILE *f = popen(cmd, "r");

        assert_non_null(f);
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, " \t\n")] = '\0';
                if (k >= n || !streq(line, want[k]))
                        print_error("%s, line %zu of `%s`: got %s, we say %s\n", what, k + 1, cmd, line,
                                    k < n ? want[k] : "(no more lines)");
                assert_true(k < n);
                assert_string_equal(line, want[k]);
                k++;
        }
        assert_int_equal(pclose(f), 0);
        if (k != n)
                print_error("%s: `%s` printed %zu lines, want %zu\n", what, cmd, k, n);
        assert_int_equal(k, n);
        return (unsigned)n;
}

/* Our hex digest of file i with a and p, malloc'd. */
static char *our_hex(const Files *f, size_t i, HashAlgo a, const HashParams *p)
{
        uint8_t d[HASH_DIGEST_MAX];
        char *hex = malloc(HASH_HEX_MAX);

        assert_non_null(hex);
        assert_int_equal(hash_oneshot_params(a, p, f->data[i], sizes[i], d), 0);
        hash_to_hex(d, hash_params_digest_size(a, p), hex);
        return hex;
}

/* cmd over every file at once: "cmd 'f0' 'f1' ... 2>/dev/null" then tail (a filter, or stdin). */
static unsigned compare_files(const Files *f, HashAlgo a, const HashParams *p, const char *what,
                              const char *cmd, const char *tail)
{
        char *want[ELEMENTSOF(sizes)];
        _cleanup_free_ char *line = NULL;
        size_t l = strlen(cmd) + strlen(tail) + 32;
        unsigned n;

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                want[i] = our_hex(f, i, a, p);
                l += strlen(f->path[i]) + 3;
        }
        line = malloc(l);
        assert_non_null(line);
        strcpy(line, cmd);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                strcat(line, " '");
                strcat(line, f->path[i]);
                strcat(line, "'");
        }
        strcat(line, " 2>/dev/null");
        strcat(line, tail);
        n = compare_lines(line, want, ELEMENTSOF(sizes), what);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                free(want[i]);
        return n;
}

/* The tool of each algorithm's default digest. A tagged line ("XXH3 (f) = hex", "SM3 (f) = hex") is
 * cut down to the hex by the filter. CRC32C has no CLI in Debian: test-hash checks it. */
#define UNTAG " | sed -E 's/^.* = //'"
static const struct {
        HashAlgo algo;
        const char *program;
        const char *cmd;
        const char *filter;
} tools[] = {
        { HASH_SHA256, "sha256sum", "sha256sum", "" },
        { HASH_SHA512, "sha512sum", "sha512sum", "" },
        { HASH_SHA1, "sha1sum", "sha1sum", "" },
        { HASH_MD5, "md5sum", "md5sum", "" },
        { HASH_SHA224, "sha224sum", "sha224sum", "" },
        { HASH_SHA384, "sha384sum", "sha384sum", "" },
        { HASH_SHA3_224, "openssl", "openssl dgst -sha3-224 -r", "" },
        { HASH_SHA3_256, "openssl", "openssl dgst -sha3-256 -r", "" },
        { HASH_SHA3_384, "openssl", "openssl dgst -sha3-384 -r", "" },
        { HASH_SHA3_512, "openssl", "openssl dgst -sha3-512 -r", "" },
        { HASH_SM3, "openssl", "openssl dgst -sm3 -r", "" },
        { HASH_SM3, "cksum", "cksum -a sm3 --tag", UNTAG },
        { HASH_BLAKE2B, "b2sum", "b2sum", "" },
        { HASH_BLAKE2B, "openssl", "openssl dgst -blake2b512 -r", "" },
        { HASH_BLAKE2S, "openssl", "openssl dgst -blake2s256 -r", "" },
        { HASH_BLAKE3, "b3sum", "b3sum", "" },
        { HASH_XXH32, "xxhsum", "xxhsum -H0", "" },
        { HASH_XXH64, "xxhsum", "xxhsum -H1", "" },
        { HASH_XXH128, "xxhsum", "xxhsum -H2", "" },
        { HASH_XXH3, "xxhsum", "xxhsum -H3", UNTAG },
        { HASH_FSVERITY, "fsverity", "fsverity digest --compact", "" },
        { HASH_FSVERITY_SHA512, "fsverity", "fsverity digest --compact --hash-alg=sha512", "" },
};

static void test_defaults(void **state)
{
        const Files *f = *state;
        bool covered[_HASH_ALGO_MAX] = { [HASH_CRC32C] = true };
        unsigned n = 0;

        for (size_t t = 0; t < ELEMENTSOF(tools); t++) {
                covered[tools[t].algo] = true;
                if (!have(tools[t].program))
                        continue;
                n += compare_files(f, tools[t].algo, NULL, hash_algo_to_string(tools[t].algo), tools[t].cmd,
                                   tools[t].filter);
        }
        /* A new algorithm needs a reference here. */
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                if (!covered[a])
                        fail_msg("%s has no reference tool in test-hash-cli", hash_algo_to_string(a));
        print_message("%u digests compared with reference tools\n", n);
}

/* b2sum -l BITS for every length it takes: the length in BLAKE2b's parameter block. */
static void test_b2sum_lengths(void **state)
{
        const Files *f = *state;
        unsigned n = 0;

        if (!have("b2sum"))
                skip();
        for (uint32_t bits = 8; bits <= 512; bits += 8) {
                _cleanup_free_ char *cmd = NULL;

                assert_true(asprintf(&cmd, "b2sum -l %u", bits) > 0);
                n += compare_files(f, HASH_BLAKE2B, &(HashParams) { .out_len = bits / 8 }, "blake2b", cmd, "");
        }
        print_message("%u BLAKE2b digests of 64 lengths compared with b2sum -l\n", n);
}

/* No Debian CLI sets BLAKE2s's length (openssl 3.0 cannot, coreutils has no BLAKE2s): Python's
 * hashlib, whose BLAKE2 is its own copy of the reference code, not libb2. */
static void test_blake2s_lengths(void **state)
{
        const Files *f = *state;
        char *want[32 * ELEMENTSOF(sizes)];
        char cmd[4096];
        size_t n = 0, l;

        if (!have("/usr/bin/python3"))
                skip();
        /* One process prints every length of every file, in that order. */
        l = (size_t)snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import hashlib, sys\n"
                                              "for n in range(1, 33):\n"
                                              "    for p in sys.argv[1:]:\n"
                                              "        d = open(p, \"rb\").read()\n"
                                              "        print(hashlib.blake2s(d, digest_size=n).hexdigest())'");
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                l += (size_t)snprintf(cmd + l, sizeof cmd - l, " '%s'", f->path[i]);
                assert_true(l < sizeof cmd);
        }
        for (uint32_t len = 1; len <= 32; len++)
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                        want[n++] = our_hex(f, i, HASH_BLAKE2S, &(HashParams) { .out_len = len });
        compare_lines(cmd, want, n, "blake2s");
        for (size_t i = 0; i < n; i++)
                free(want[i]);
        print_message("%zu BLAKE2s digests of 32 lengths compared with Python's hashlib\n", n);
}

/* b3sum --length, --keyed (32 raw bytes on stdin) and --derive-key, each with several lengths. */
static void test_b3sum_modes(void **state)
{
        static const uint32_t lens[] = { 1, 16, 31, 32, 33, 48, 63, 64 };
        static const char context[] = "fhash test-hash-cli 2024-01-01 b3sum --derive-key context";
        const Files *f = *state;
        _cleanup_free_ char *keyfile = NULL, *stdin_key = NULL;
        HashParams p = { 0 };
        unsigned n = 0;
        FILE *k;

        if (!have("b3sum"))
                skip();
        for (size_t i = 0; i < HASH_KEY_SIZE; i++)
                p.key[i] = (uint8_t)(i * 37 + 1);
        assert_true(asprintf(&keyfile, "%s/key", f->dir) > 0);
        assert_true(asprintf(&stdin_key, " < '%s'", keyfile) > 0);
        k = fopen(keyfile, "we");
        assert_non_null(k);
        assert_int_equal(fwrite(p.key, 1, HASH_KEY_SIZE, k), HASH_KEY_SIZE);
        assert_int_equal(fclose(k), 0);

        for (unsigned mode = 0; mode < 3; mode++)
                for (size_t l = 0; l < ELEMENTSOF(lens); l++) {
                        _cleanup_free_ char *cmd = NULL;

                        p.out_len = lens[l];
                        p.keyed = mode == 1;
                        p.context = mode == 2 ? context : NULL;
                        assert_true(asprintf(&cmd, "b3sum --no-names -l %u%s%s%s%s", lens[l],
                                             mode == 1 ? " --keyed" : "", mode == 2 ? " --derive-key '" : "",
                                             mode == 2 ? context : "", mode == 2 ? "'" : "") > 0);
                        n += compare_files(f, HASH_BLAKE3, &p, "blake3", cmd, mode == 1 ? stdin_key : "");
                }
        hash_params_wipe(&p);
        print_message("%u BLAKE3 digests (hash, keyed, derive-key; 8 lengths) compared with b3sum\n", n);
}

/* fsverity digest --block-size for every size a kernel can enable, with both tree hashes: with 1 KiB
 * blocks of SHA-512 hashes (16 a block) the 1 MiB file's tree has five levels. */
static void test_fsverity_block_sizes(void **state)
{
        static const uint32_t block_sizes[] = { 1024, 2048, 4096, 8192, 16384, 32768, 65536 };
        const Files *f = *state;
        unsigned n = 0;

        if (!have("fsverity"))
                skip();
        for (size_t b = 0; b < ELEMENTSOF(block_sizes); b++)
                for (unsigned sha512 = 0; sha512 < 2; sha512++) {
                        _cleanup_free_ char *cmd = NULL;
                        HashAlgo a = sha512 ? HASH_FSVERITY_SHA512 : HASH_FSVERITY;

                        assert_true(asprintf(&cmd, "fsverity digest --compact --block-size=%u --hash-alg=%s",
                                             block_sizes[b], sha512 ? "sha512" : "sha256") > 0);
                        n += compare_files(f, a, &(HashParams) { .block_size = block_sizes[b] },
                                           hash_algo_to_string(a), cmd, "");
                }
        print_message("%u fs-verity digests of 7 block sizes compared with fsverity digest\n", n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_b2sum_lengths),
                cmocka_unit_test(test_blake2s_lengths),
                cmocka_unit_test(test_b3sum_modes),
                cmocka_unit_test(test_fsverity_block_sizes),
        };
        int r;

        if (hash_global_init() < 0) {
                fprintf(stderr, "hash_global_init() failed\n");
                return EXIT_FAILURE;
        }
        r = cmocka_run_group_tests(tests, setup, teardown);
        /* The cases that needed them skipped themselves (and are reported so). */
        if (missing[0])
                printf("# not installed: %s; the digests they give were not compared\n", missing);
        return r;
}
