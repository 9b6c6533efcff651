/* SPDX-License-Identifier: MIT */
/* hash.c: one streaming context for OpenSSL, BLAKE3, XXH3 and CRC32C */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <blake3.h>
#include <xxhash.h>

#include "hash/hash.h"
#include "basic/macro.h"

/* Fetched once and shared read-only by every context: an implicit fetch inside each
 * EVP_DigestInit would take the provider store's lock and look the name up again for every file. */
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;
static EVP_MD *hash_evp_md[_HASH_ALGO_MAX];

struct HashCtx {
        HashAlgo algo;
        bool active; /* between init and final */
        EVP_MD_CTX *evp;
        XXH3_state_t *xxh; /* 64-byte aligned by XXH3_createState() */
        uint32_t crc;
        blake3_hasher blake3;
};

static void hash_global_setup(void)
{
        (void)hash_crc32c_impl();
        /* A digest the providers lack (MD5 under a FIPS-only configuration) stays NULL and only
         * that algorithm fails, in hash_ctx_init(). The fetched digests live as long as the
         * process: contexts in every thread point at them. */
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                if (hash_algo_evp_name(a))
                        hash_evp_md[a] = EVP_MD_fetch(NULL, hash_algo_evp_name(a), NULL);

        /* BLAKE3 detects CPU features lazily into an unsynchronised global on first use. Hash
         * enough input here, once, before any worker exists, so every later use only reads it
         * (otherwise two workers race on the first write, as ThreadSanitizer reports). */
        static uint8_t prime[4096];
        blake3_hasher h;
        uint8_t out[BLAKE3_OUT_LEN];
        blake3_hasher_init(&h);
        blake3_hasher_update(&h, prime, sizeof(prime));
        blake3_hasher_finalize(&h, out, sizeof(out));
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
        c->evp = EVP_MD_CTX_new();
        c->xxh = XXH3_createState();
        if (!c->evp || !c->xxh) {
                hash_ctx_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

HashCtx *hash_ctx_free(HashCtx *c)
{
        if (!c)
                return NULL;
        EVP_MD_CTX_free(c->evp);
        if (c->xxh)
                (void)XXH3_freeState(c->xxh);
        free(c);
        return NULL;
}

int hash_ctx_init(HashCtx *c, HashAlgo a)
{
        if (!c || a < 0 || a >= _HASH_ALGO_MAX)
                return -EINVAL;

        c->active = false;
        switch (a) {
        case HASH_BLAKE3:
                blake3_hasher_init(&c->blake3);
                break;
        case HASH_XXH3:
                if (XXH3_64bits_reset(c->xxh) != XXH_OK)
                        return -EIO;
                break;
        case HASH_XXH128:
                if (XXH3_128bits_reset(c->xxh) != XXH_OK)
                        return -EIO;
                break;
        case HASH_CRC32C:
                c->crc = 0;
                break;
        default:
                if (!hash_evp_md[a])
                        return -EOPNOTSUPP;
                /* Re-initialising the same EVP_MD_CTX with a prefetched digest keeps the context
                 * and the fetch out of the per-file path. OpenSSL 3.0 itself still frees and
                 * re-creates the provider's small state here (one malloc per file, not per
                 * buffer); 3.1 reuses it when the digest is unchanged (openssl#16947). */
                if (EVP_DigestInit_ex2(c->evp, hash_evp_md[a], NULL) != 1)
                        return -EIO;
                break;
        }
        c->algo = a;
        c->active = true;
        return 0;
}

int hash_ctx_update(HashCtx *c, const void *data, size_t n)
{
        if (!c || !c->active || (!data && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;

        switch (c->algo) {
        case HASH_BLAKE3:
                blake3_hasher_update(&c->blake3, data, n);
                return 0;
        case HASH_XXH3:
                return XXH3_64bits_update(c->xxh, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_XXH128:
                return XXH3_128bits_update(c->xxh, data, n) == XXH_OK ? 0 : -EIO;
        case HASH_CRC32C:
                c->crc = crc32c_update(c->crc, data, n);
                return 0;
        default:
                return EVP_DigestUpdate(c->evp, data, n) == 1 ? 0 : -EIO;
        }
}

int hash_ctx_final(HashCtx *c, uint8_t *ret_digest)
{
        uint8_t out[HASH_DIGEST_MAX];
        size_t size;

        if (!c || !c->active || !ret_digest)
                return -EINVAL;
        size = hash_algo_digest_size(c->algo);

        switch (c->algo) {
        case HASH_BLAKE3:
                blake3_hasher_finalize(&c->blake3, out, BLAKE3_OUT_LEN);
                break;
        case HASH_XXH3: {
                XXH64_canonical_t canon;
                XXH64_canonicalFromHash(&canon, XXH3_64bits_digest(c->xxh));
                memcpy(out, canon.digest, sizeof canon.digest);
                break;
        }
        case HASH_XXH128: {
                XXH128_canonical_t canon;
                XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(c->xxh));
                memcpy(out, canon.digest, sizeof canon.digest);
                break;
        }
        case HASH_CRC32C:
                /* Big-endian, so the hex spells the value the way CRC check values are quoted. */
                out[0] = (uint8_t)(c->crc >> 24);
                out[1] = (uint8_t)(c->crc >> 16);
                out[2] = (uint8_t)(c->crc >> 8);
                out[3] = (uint8_t)c->crc;
                break;
        default: {
                unsigned len = 0;
                if (EVP_DigestFinal_ex(c->evp, out, &len) != 1 || len != size)
                        return -EIO;
                break;
        }
        }
        /* Through a local buffer so a failure above leaves the caller's output untouched. */
        memcpy(ret_digest, out, size);
        c->active = false;
        return 0;
}

int hash_oneshot(HashAlgo a, const void *data, size_t n, uint8_t *ret_digest)
{
        HashCtx *c;
        int r;

        r = hash_ctx_new(&c);
        if (r < 0)
                return r;
        r = hash_ctx_init(c, a);
        if (r >= 0)
                r = hash_ctx_update(c, data, n);
        if (r >= 0)
                r = hash_ctx_final(c, ret_digest);
        /* One free on every path, not _cleanup_, which clang-tidy 14 does not see. */
        hash_ctx_free(c);
        return r;
}

void hash_to_hex(const uint8_t *digest, size_t n, char *out)
{
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[digest[i] >> 4];
                out[2 * i + 1] = hex[digest[i] & 0xf];
        }
        out[2 * n] = '\0';
}

static int unhex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int hash_from_hex(const char *hex, uint8_t *out, size_t n)
{
        if (!hex || !out || strnlen(hex, 2 * n + 1) != 2 * n)
                return -EINVAL;
        /* Validate everything first so a bad string leaves out untouched. */
        for (size_t i = 0; i < 2 * n; i++)
                if (unhex_digit(hex[i]) < 0)
                        return -EINVAL;
        /* Unsigned, as shifting a negative int is undefined: the digits were all checked above, but
         * the analyzer does not carry that from one loop to the next. */
        for (size_t i = 0; i < n; i++) {
                unsigned hi = (unsigned)unhex_digit(hex[2 * i]), lo = (unsigned)unhex_digit(hex[2 * i + 1]);
                out[i] = (uint8_t)(hi << 4 | lo);
        }
        return 0;
}
