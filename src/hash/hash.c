/* SPDX-License-Identifier: MIT */
/* hash.c: one streaming context for OpenSSL or nettle (md.h), libb2, BLAKE3, xxHash and CRC32C */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <blake2.h>
#include <blake3.h>
#include <xxhash.h>
#if (defined(__x86_64__) || defined(__i386__)) && !defined(FHASH_XXH_NO_DISPATCH)
/* libxxhash's plain XXH3 entry points are built for the baseline ISA (SSE2 on x86-64): its
 * _dispatch variants pick AVX2 or AVX-512 at run time, as xxhsum does. Measured on the bench VM,
 * 2,000 x 1 MiB hot: XXH3_64bits_update was 36-39% of the engine's CPU, where xxhsum spent ~10% in
 * its hash. */
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#define XXH3_UPDATE_64 XXH3_64bits_update_dispatch
#define XXH3_UPDATE_128 XXH3_128bits_update_dispatch
#else
#define XXH3_UPDATE_64 XXH3_64bits_update
#define XXH3_UPDATE_128 XXH3_128bits_update
#endif

#include "hash/fsverity.h"
#include "hash/hash.h"
#include "hash/md.h"
#include "basic/macro.h"

static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

struct HashCtx {
        HashAlgo algo;
        bool active;   /* between init and final */
        bool secret;   /* the state holds a key or key material: wipe it when done */
        size_t size;   /* digest bytes of this run */
        MdCtx *md;     /* MD5, SHA-1, SHA-2, SHA-3, SM3; BLAKE2 at its default length if md has it */
        bool blake2_md; /* this run's BLAKE2 is md's, not libb2's */
        FsverityTree *fsverity; /* made the first time the context runs an fs-verity digest */
        /* xxHash's states are opaque in its stable API: allocated (XXH3's 64-byte aligned). */
        XXH3_state_t *xxh3;
        XXH32_state_t *xxh32;
        XXH64_state_t *xxh64;
        uint32_t crc;
        union {
                blake3_hasher blake3;
                blake2b_state blake2b;
                blake2s_state blake2s;
        } u;
};

static void hash_global_setup(void)
{
        (void)md_global_init();
#ifndef FHASH_HASH_ONE_THREAD
        (void)hash_crc32c_impl();
        /* BLAKE3 detects CPU features lazily into an unsynchronised global on first use, and libb2
         * picks each of its functions' implementation on that function's first call, storing a
         * function pointer. Call all of them here, once, before any worker exists, so every later
         * use only reads (otherwise two workers race on the first write, as ThreadSanitizer
         * reports for BLAKE3). fhashctl's own binary (FHASH_HASH_ONE_THREAD) hashes in one thread:
         * it skips this and CRC32C's tables, which would fault in the code of every variant and
         * cost more than the hashing for a run of one small file with one algorithm. */
        static uint8_t prime[4096];
        uint8_t out[BLAKE2B_OUTBYTES];
        blake3_hasher h;
        blake2b_state b;
        blake2s_state s;

        blake3_hasher_init(&h);
        blake3_hasher_update(&h, prime, sizeof(prime));
        blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
        (void)blake2b_init(&b, BLAKE2B_OUTBYTES);
        (void)blake2b_update(&b, prime, sizeof(prime));
        (void)blake2b_final(&b, out, BLAKE2B_OUTBYTES);
        (void)blake2s_init(&s, BLAKE2S_OUTBYTES);
        (void)blake2s_update(&s, prime, sizeof(prime));
        (void)blake2s_final(&s, out, BLAKE2S_OUTBYTES);
#endif
}

int hash_global_init(void)
{
        int r = pthread_once(&hash_once, hash_global_setup);
        return r != 0 ? -r : 0;
}

int hash_ctx_new(HashCtx **ret)
{
        HashCtx *c;
        int r;

        if (!ret)
                return -EINVAL;
        r = hash_global_init();
        if (r < 0)
                return r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->algo = _HASH_ALGO_INVALID;
        r = md_new(&c->md);
        if (r < 0) {
                hash_ctx_free(c);
                return r;
        }
        c->xxh3 = XXH3_createState();
        c->xxh32 = XXH32_createState();
        c->xxh64 = XXH64_createState();
        if (!c->xxh3 || !c->xxh32 || !c->xxh64) {
                hash_ctx_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

/* The union holds BLAKE3's key words and chaining values, and its input buffer: after a keyed or
 * derive-key run nothing of them may stay behind in memory. */
static void ctx_wipe(HashCtx *c)
{
        if (c->secret) {
                explicit_bzero(&c->u, sizeof(c->u));
                c->secret = false;
        }
}

HashCtx *hash_ctx_free(HashCtx *c)
{
        if (!c)
                return NULL;
        ctx_wipe(c);
        md_free(c->md);
        fsverity_tree_free(c->fsverity);
        if (c->xxh3)
                (void)XXH3_freeState(c->xxh3);
        if (c->xxh32)
                (void)XXH32_freeState(c->xxh32);
        if (c->xxh64)
                (void)XXH64_freeState(c->xxh64);
        free(c);
        return NULL;
}

static int ctx_init_blake3(HashCtx *c, const HashParams *p)
{
        if (p && p->keyed) {
                c->secret = true;
                blake3_hasher_init_keyed(&c->u.blake3, p->key);
        } else if (p && p->context) {
                c->secret = true;
                blake3_hasher_init_derive_key(&c->u.blake3, p->context);
        } else
                blake3_hasher_init(&c->u.blake3);
        return 0;
}

int hash_ctx_init_params(HashCtx *c, HashAlgo a, const HashParams *p)
{
        size_t size;
        int r;

        if (!c)
                return -EINVAL;
        r = hash_params_check(a, p);
        if (r < 0)
                return r;
        size = hash_params_digest_size(a, p);

        c->active = false;
        ctx_wipe(c);
        switch (a) {
        case HASH_BLAKE3:
                r = ctx_init_blake3(c, p);
                break;
        case HASH_BLAKE2B:
        case HASH_BLAKE2S:
                /* The default length from md where it has BLAKE2 (OpenSSL: faster, algo.c). Any
                 * other goes into libb2's parameter block, as b2sum -l does: a different digest,
                 * not a truncation of the full one. */
                c->blake2_md = size == hash_algo_digest_size(a) && md_init(c->md, a) == 0;
                if (c->blake2_md)
                        r = 0;
                else if (a == HASH_BLAKE2B)
                        r = blake2b_init(&c->u.blake2b, size) == 0 ? 0 : -EIO;
                else
                        r = blake2s_init(&c->u.blake2s, size) == 0 ? 0 : -EIO;
                break;
        case HASH_XXH3:
                r = XXH3_64bits_reset(c->xxh3) == XXH_OK ? 0 : -EIO;
                break;
        case HASH_XXH128:
                r = XXH3_128bits_reset(c->xxh3) == XXH_OK ? 0 : -EIO;
                break;
        case HASH_XXH32:
                r = XXH32_reset(c->xxh32, 0) == XXH_OK ? 0 : -EIO;
                break;
        case HASH_XXH64:
                r = XXH64_reset(c->xxh64, 0) == XXH_OK ? 0 : -EIO;
                break;
        case HASH_CRC32C:
                c->crc = 0;
                break;
        case HASH_FSVERITY:
        case HASH_FSVERITY_SHA512:
                r = c->fsverity ? 0 : fsverity_tree_new(&c->fsverity);
                if (r >= 0)
                        r = fsverity_tree_init(c->fsverity, a, fsverity_block_size(p));
                break;
        default:
                r = md_init(c->md, a);
                break;
        }
        if (r < 0)
                return r;
        c->algo = a;
        c->size = size;
        c->active = true;
        return 0;
}

int hash_ctx_init(HashCtx *c, HashAlgo a)
{
        return hash_ctx_init_params(c, a, NULL);
}

int hash_ctx_update(HashCtx *c, const void *data, size_t n)
{
        if (!c || !c->active || (!data && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;

        switch (c->algo) {
        case HASH_BLAKE3:
                blake3_hasher_update(&c->u.blake3, data, n);
                return 0;
        case HASH_BLAKE2B:
                if (c->blake2_md)
                        return md_update(c->md, data, n);
                return blake2b_update(&c->u.blake2b, data, n) == 0 ? 0 : -EIO;
        case HASH_BLAKE2S:
                if (c->blake2_md)
                        return md_update(c->md, data, n);
                return blake2s_update(&c->u.blake2s, data, n) == 0 ? 0 : -EIO;
        case HASH_XXH3:
                return XXH3_UPDATE_64(c->xxh3, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_XXH128:
                return XXH3_UPDATE_128(c->xxh3, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_XXH32:
                return XXH32_update(c->xxh32, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_XXH64:
                return XXH64_update(c->xxh64, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_CRC32C:
                c->crc = crc32c_update(c->crc, data, n);
                return 0;
        case HASH_FSVERITY:
        case HASH_FSVERITY_SHA512:
                return fsverity_tree_update(c->fsverity, data, n);
        default:
                return md_update(c->md, data, n);
        }
}

/* xxHash's canonical form is big-endian: what xxhsum prints (without --little-endian). */
static void store_be32(uint8_t *out, uint32_t v)
{
        out[0] = (uint8_t)(v >> 24);
        out[1] = (uint8_t)(v >> 16);
        out[2] = (uint8_t)(v >> 8);
        out[3] = (uint8_t)v;
}

/* xxHash's canonical forms are big-endian, as xxhsum prints them. */
static int ctx_final_xxh(HashCtx *c, uint8_t *out)
{
        XXH32_canonical_t c32;
        XXH64_canonical_t c64;
        XXH128_canonical_t c128;

        if (c->algo == HASH_XXH128) {
                XXH128_canonicalFromHash(&c128, XXH3_128bits_digest(c->xxh3));
                memcpy(out, c128.digest, sizeof(c128.digest));
        } else if (c->algo == HASH_XXH32) {
                XXH32_canonicalFromHash(&c32, XXH32_digest(c->xxh32));
                memcpy(out, c32.digest, sizeof(c32.digest));
        } else if (c->algo == HASH_XXH3 || c->algo == HASH_XXH64) {
                XXH64_canonicalFromHash(&c64, c->algo == HASH_XXH3 ? XXH3_64bits_digest(c->xxh3) : XXH64_digest(c->xxh64));
                memcpy(out, c64.digest, sizeof(c64.digest));
        } else
                return -EINVAL;
        return 0;
}

int hash_ctx_final(HashCtx *c, uint8_t *ret_digest)
{
        uint8_t out[HASH_DIGEST_MAX];
        int r = 0;

        if (!c || !c->active || !ret_digest)
                return -EINVAL;

        switch (c->algo) {
        case HASH_BLAKE3:
                /* An XOF: a shorter output is a prefix of a longer one (b3sum -l does the same). */
                blake3_hasher_finalize(&c->u.blake3, out, c->size);
                break;
        case HASH_BLAKE2B:
                if (c->blake2_md)
                        r = md_final(c->md, out);
                else
                        r = blake2b_final(&c->u.blake2b, out, c->size) == 0 ? 0 : -EIO;
                break;
        case HASH_BLAKE2S:
                if (c->blake2_md)
                        r = md_final(c->md, out);
                else
                        r = blake2s_final(&c->u.blake2s, out, c->size) == 0 ? 0 : -EIO;
                break;
        case HASH_XXH3:
        case HASH_XXH128:
        case HASH_XXH32:
        case HASH_XXH64:
                r = ctx_final_xxh(c, out);
                break;
        case HASH_CRC32C:
                /* Big-endian, so the hex spells the value the way CRC check values are quoted. */
                store_be32(out, c->crc);
                break;
        case HASH_FSVERITY:
        case HASH_FSVERITY_SHA512:
                r = fsverity_tree_final(c->fsverity, out);
                break;
        default:
                r = md_final(c->md, out);
                break;
        }
        if (r >= 0) {
                /* Through a local buffer so a failure leaves the caller's output untouched. */
                memcpy(ret_digest, out, c->size);
                c->active = false;
                ctx_wipe(c);
        }
        explicit_bzero(out, sizeof(out));
        return r;
}

int hash_ctx_xof(HashCtx *c, uint64_t seek, uint8_t *out, size_t n)
{
        if (!c || !c->active || (!out && n > 0))
                return -EINVAL;
        if (c->algo != HASH_BLAKE3)
                return -EOPNOTSUPP;
        /* Reads the output without changing the hasher, so that pieces can follow one another. */
        blake3_hasher_finalize_seek(&c->u.blake3, seek, out, n);
        return 0;
}

int hash_ctx_add_block_hashes(HashCtx *c, const uint8_t *hashes, uint64_t bytes)
{
        if (!c || !c->active)
                return -EINVAL;
        if (c->algo != HASH_FSVERITY && c->algo != HASH_FSVERITY_SHA512)
                return -EOPNOTSUPP;
        return fsverity_tree_add_hashes(c->fsverity, hashes, bytes);
}

size_t hash_ctx_digest_size(const HashCtx *c)
{
        return c ? c->size : 0;
}

int hash_oneshot_params(HashAlgo a, const HashParams *p, const void *data, size_t n, uint8_t *ret_digest)
{
        HashCtx *c;
        int r;

        r = hash_ctx_new(&c);
        if (r < 0)
                return r;
        r = hash_ctx_init_params(c, a, p);
        if (r >= 0)
                r = hash_ctx_update(c, data, n);
        if (r >= 0)
                r = hash_ctx_final(c, ret_digest);
        /* One free on every path, not _cleanup_, which clang-tidy 14 does not see. */
        hash_ctx_free(c);
        return r;
}

int hash_oneshot(HashAlgo a, const void *data, size_t n, uint8_t *ret_digest)
{
        return hash_oneshot_params(a, NULL, data, n, ret_digest);
}

