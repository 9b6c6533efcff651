/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <string.h>

#include "basic/macro.h"
#include "hash/algo.h"

typedef struct HashAlgoInfo {
        const char *name;
        const char *tag;
        size_t digest_size;
        const char *evp_name; /* NULL: not an OpenSSL digest */
} HashAlgoInfo;

static const HashAlgoInfo hash_algo_info[_HASH_ALGO_MAX] = {
        [HASH_SHA256] = { "sha256", "SHA256", 32, "SHA2-256" },
        [HASH_SHA512] = { "sha512", "SHA512", 64, "SHA2-512" },
        [HASH_SHA1] = { "sha1", "SHA1", 20, "SHA1" },
        [HASH_MD5] = { "md5", "MD5", 16, "MD5" },
        [HASH_SHA3_256] = { "sha3-256", "SHA3-256", 32, "SHA3-256" },
        [HASH_BLAKE2B] = { "blake2b", "BLAKE2b", 64, "BLAKE2B-512" },
        [HASH_BLAKE3] = { "blake3", "BLAKE3", 32, NULL },
        [HASH_XXH3] = { "xxh3", "XXH3", 8, NULL },
        [HASH_XXH128] = { "xxh128", "XXH128", 16, NULL },
        [HASH_CRC32C] = { "crc32c", "CRC32C", 4, NULL },
};

static bool algo_valid(HashAlgo a)
{
        return a >= 0 && a < _HASH_ALGO_MAX;
}

const char *hash_algo_to_string(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].name : NULL;
}

HashAlgo hash_algo_from_string(const char *s)
{
        for (HashAlgo a = 0; s && a < _HASH_ALGO_MAX; a++)
                if (streq(hash_algo_info[a].name, s))
                        return a;
        return _HASH_ALGO_INVALID;
}

const char *hash_algo_tag(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].tag : NULL;
}

static bool memeq_str(const char *s, size_t n, const char *z)
{
        return strlen(z) == n && memcmp(s, z, n) == 0;
}

HashAlgo hash_algo_from_tag(const char *s, size_t n)
{
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                if (memeq_str(s, n, hash_algo_info[a].tag) || memeq_str(s, n, hash_algo_info[a].name))
                        return a;
        return _HASH_ALGO_INVALID;
}

size_t hash_algo_digest_size(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].digest_size : 0;
}

const char *hash_algo_evp_name(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].evp_name : NULL;
}

/* Every name, ", "-separated: 8 bytes per algorithm is room for names up to 6 characters on
 * average; the longest list is checked by a test against the table. */
static char algo_list[_HASH_ALGO_MAX * 12];
static pthread_once_t algo_list_once = PTHREAD_ONCE_INIT;

static void algo_list_build(void)
{
        size_t l = 0;

        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                const char *n = hash_algo_info[a].name;
                size_t k = strlen(n);

                if (l + k + 3 > sizeof(algo_list))
                        break;
                if (l > 0) {
                        memcpy(algo_list + l, ", ", 2);
                        l += 2;
                }
                memcpy(algo_list + l, n, k);
                l += k;
        }
        algo_list[l] = '\0';
}

const char *hash_algo_list(void)
{
        (void)pthread_once(&algo_list_once, algo_list_build);
        return algo_list;
}
