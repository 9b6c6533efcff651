/* SPDX-License-Identifier: MIT */
/* bench-hash: single-core in-memory throughput of every algorithm, its variants, both CRC32C versions */
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash/hash.h"
#include "basic/macro.h"

#define CHUNK (1u << 20)

DEFINE_TRIVIAL_CLEANUP_FUNC(HashCtx *, hash_ctx_free);

static double now(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The engine hands the hash 1 MiB buffers; measure the same calls it makes. */
static int bench_algo(HashCtx *c, HashAlgo a, const HashParams *p, const uint8_t *buf, size_t size,
                      double *ret_seconds)
{
        uint8_t d[HASH_DIGEST_MAX];
        double t0 = now();
        int r;

        r = hash_ctx_init_params(c, a, p);
        if (r < 0)
                return r;
        for (size_t off = 0; off < size; off += CHUNK) {
                r = hash_ctx_update(c, buf + off, MIN((size_t)CHUNK, size - off));
                if (r < 0)
                        return r;
        }
        r = hash_ctx_final(c, d);
        if (r < 0)
                return r;
        *ret_seconds = now() - t0;
        return 0;
}

/* OpenSSL's own BLAKE2, which HashCtx does not use (libb2 does BLAKE2 there: OpenSSL 3.0 has no
 * digest length parameter), to show what that choice costs or saves. */
static int bench_evp(const char *name, const uint8_t *buf, size_t size, double *ret_seconds)
{
        uint8_t d[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        EVP_MD *md = EVP_MD_fetch(NULL, name, NULL);
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        double t0 = now();
        int r = -EIO;

        if (!md || !c || EVP_DigestInit_ex2(c, md, NULL) != 1)
                goto out;
        for (size_t off = 0; off < size; off += CHUNK)
                if (EVP_DigestUpdate(c, buf + off, MIN((size_t)CHUNK, size - off)) != 1)
                        goto out;
        if (EVP_DigestFinal_ex(c, d, &len) != 1)
                goto out;
        *ret_seconds = now() - t0;
        r = 0;
out:
        EVP_MD_CTX_free(c);
        EVP_MD_free(md);
        return r;
}

static double bench_crc(uint32_t (*f)(uint32_t, const void *, size_t), const uint8_t *buf, size_t size,
                        uint32_t *ret_crc)
{
        double t0 = now();
        uint32_t crc = 0;

        for (size_t off = 0; off < size; off += CHUNK)
                crc = f(crc, buf + off, MIN((size_t)CHUNK, size - off));
        *ret_crc = crc;
        return now() - t0;
}

#define HOT_BLOCK (256u << 10)
#define HOT_TOTAL (256u << 20)

static double bench_crc_hot(uint32_t (*f)(uint32_t, const void *, size_t), const uint8_t *buf,
                            uint32_t *ret_crc)
{
        double t0 = now();
        uint32_t crc = 0;

        for (size_t done = 0; done < HOT_TOTAL; done += HOT_BLOCK)
                crc = f(crc, buf, HOT_BLOCK);
        *ret_crc = crc;
        return now() - t0;
}

/* A speed number for a wrong result would be worthless. */
static int crc_mismatch(uint32_t sw, uint32_t hw)
{
        fprintf(stderr, "bench-hash: crc32c mismatch: %08x (portable) vs %08x (%s)\n", sw, hw,
                hash_crc32c_impl());
        return 1;
}

int main(int argc, char *argv[])
{
        _cleanup_(hash_ctx_freep) HashCtx *c = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t mib = 256, size;
        uint32_t crc_hw, crc_sw;
        uint64_t x = 0x9e3779b97f4a7c15u;
        double s;
        int r;

        /* An optional size in MiB, for a quick look on a busy machine. */
        if (argc > 1) {
                char *end;
                unsigned long v = strtoul(argv[1], &end, 10);
                if (*end || v == 0 || v > 65536) {
                        fprintf(stderr, "usage: %s [MiB]\n", argv[0]);
                        return 2;
                }
                mib = v;
        }
        size = mib << 20; /* at least 1 MiB, so the cache-resident block fits */

        buf = malloc(size);
        if (!buf) {
                fprintf(stderr, "bench-hash: cannot allocate %zu MiB\n", mib);
                return 1;
        }
        /* Random-looking data, written once so every page is faulted in before timing. */
        for (size_t i = 0; i + 8 <= size; i += 8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                memcpy(buf + i, &x, 8);
        }

        r = hash_ctx_new(&c);
        if (r < 0) {
                fprintf(stderr, "bench-hash: hash_ctx_new: %s\n", strerror(-r));
                return 1;
        }
        printf("# %zu MiB in %u KiB chunks, one thread; crc32c uses %s\n", mib, CHUNK >> 10,
               hash_crc32c_impl());
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                r = bench_algo(c, a, NULL, buf, size, &s);
                if (r < 0) {
                        fprintf(stderr, "bench-hash: %s: %s\n", hash_algo_to_string(a), strerror(-r));
                        return 1;
                }
                printf("algo=%s gbps=%.3f\n", hash_algo_to_string(a), (double)size / s / 1e9);
                fflush(stdout);
        }

        /* Parameterised variants, named so that bench/run (which reads the plain names) skips them. */
        static const struct {
                const char *label;
                HashAlgo algo;
                HashParams params;
        } variants[] = {
                { "blake2b-256", HASH_BLAKE2B, { .out_len = 32 } },
                { "blake2s-128", HASH_BLAKE2S, { .out_len = 16 } },
                { "blake3-keyed", HASH_BLAKE3, { .keyed = true } },
                { "blake3-derive-key-64", HASH_BLAKE3, { .context = "fhash bench-hash context", .out_len = 64 } },
        };
        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                r = bench_algo(c, variants[i].algo, &variants[i].params, buf, size, &s);
                if (r < 0) {
                        fprintf(stderr, "bench-hash: %s: %s\n", variants[i].label, strerror(-r));
                        return 1;
                }
                printf("algo=%s gbps=%.3f\n", variants[i].label, (double)size / s / 1e9);
                fflush(stdout);
        }
        static const struct {
                const char *label, *evp;
        } evps[] = {
                { "blake2b-openssl", "BLAKE2B-512" },
                { "blake2s-openssl", "BLAKE2S-256" },
        };
        for (size_t i = 0; i < ELEMENTSOF(evps); i++) {
                r = bench_evp(evps[i].evp, buf, size, &s);
                if (r < 0) {
                        fprintf(stderr, "bench-hash: %s: %s\n", evps[i].label, strerror(-r));
                        return 1;
                }
                printf("algo=%s gbps=%.3f\n", evps[i].label, (double)size / s / 1e9);
                fflush(stdout);
        }

        s = bench_crc(crc32c_portable, buf, size, &crc_sw);
        printf("algo=crc32c-portable gbps=%.3f\n", (double)size / s / 1e9);
        s = bench_crc(crc32c_update, buf, size, &crc_hw);
        printf("algo=crc32c-%s gbps=%.3f\n", hash_crc32c_impl(), (double)size / s / 1e9);
        if (crc_hw != crc_sw)
                return crc_mismatch(crc_sw, crc_hw);
        /* At 256 MiB both are bounded by memory bandwidth; a cache-resident block shows the
         * instruction-level difference. */
        s = bench_crc_hot(crc32c_portable, buf, &crc_sw);
        printf("algo=crc32c-portable-hot gbps=%.3f\n", (double)HOT_TOTAL / s / 1e9);
        s = bench_crc_hot(crc32c_update, buf, &crc_hw);
        printf("algo=crc32c-%s-hot gbps=%.3f\n", hash_crc32c_impl(), (double)HOT_TOTAL / s / 1e9);
        if (crc_hw != crc_sw)
                return crc_mismatch(crc_sw, crc_hw);
        return 0;
}
