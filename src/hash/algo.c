/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "hash/algo.h"

typedef struct HashAlgoInfo {
        const char *name;
        const char *tag;
        size_t digest_size;   /* the default */
        size_t digest_max;    /* the longest out_len; 0: fixed */
        unsigned params;      /* HashParamFlags */
        const char *evp_name; /* NULL: not an OpenSSL digest */
} HashAlgoInfo;

/* By family; the enum's order (the Algorithms property's) comes from the designators. BLAKE2 at its
 * default length is OpenSSL's where the digests come from OpenSSL (md.h): faster than libb2 on
 * this machine (bench-hash: BLAKE2b 0.54 against 0.41 GB/s, BLAKE2s 0.39 against 0.13); at any
 * other length libb2's, as OpenSSL 3.0 cannot set BLAKE2's digest length (the size parameter came
 * in 3.2), and libb2's under nettle, which has no BLAKE2 (hash.c). */
static const HashAlgoInfo hash_algo_info[_HASH_ALGO_MAX] = {
        [HASH_SHA256] = { "sha256", "SHA256", 32, 0, 0, "SHA2-256" },
        [HASH_SHA512] = { "sha512", "SHA512", 64, 0, 0, "SHA2-512" },
        [HASH_SHA1] = { "sha1", "SHA1", 20, 0, 0, "SHA1" },
        [HASH_MD5] = { "md5", "MD5", 16, 0, 0, "MD5" },
        [HASH_SHA3_256] = { "sha3-256", "SHA3-256", 32, 0, 0, "SHA3-256" },
        [HASH_BLAKE2B] = { "blake2b", "BLAKE2b", 64, 64, HASH_PARAM_LENGTH, "BLAKE2B-512" },
        [HASH_BLAKE2S] = { "blake2s", "BLAKE2s", 32, 32, HASH_PARAM_LENGTH, "BLAKE2S-256" },
        [HASH_BLAKE3] = { "blake3", "BLAKE3", 32, HASH_DIGEST_MAX,
                          HASH_PARAM_LENGTH | HASH_PARAM_KEY | HASH_PARAM_CONTEXT, NULL },
        [HASH_XXH3] = { "xxh3", "XXH3", 8, 0, 0, NULL },
        [HASH_XXH128] = { "xxh128", "XXH128", 16, 0, 0, NULL },
        [HASH_CRC32C] = { "crc32c", "CRC32C", 4, 0, 0, NULL },
        [HASH_XXH32] = { "xxh32", "XXH32", 4, 0, 0, NULL },
        [HASH_XXH64] = { "xxh64", "XXH64", 8, 0, 0, NULL },
        [HASH_SHA224] = { "sha224", "SHA224", 28, 0, 0, "SHA2-224" },
        [HASH_SHA384] = { "sha384", "SHA384", 48, 0, 0, "SHA2-384" },
        [HASH_SHA3_384] = { "sha3-384", "SHA3-384", 48, 0, 0, "SHA3-384" },
        [HASH_SHA3_512] = { "sha3-512", "SHA3-512", 64, 0, 0, "SHA3-512" },
        [HASH_SM3] = { "sm3", "SM3", 32, 0, 0, "SM3" },
        [HASH_SHA3_224] = { "sha3-224", "SHA3-224", 28, 0, 0, "SHA3-224" },
        /* fs-verity's digests: what `fsverity digest` prints after "sha256:" (or "sha512:" with
         * --hash-alg=sha512), and what FS_IOC_MEASURE_VERITY gives; no tool writes a BSD tag. */
        [HASH_FSVERITY] = { "fsverity", "FSVERITY", 32, 0, HASH_PARAM_BLOCK_SIZE, NULL },
        [HASH_FSVERITY_SHA512] = { "fsverity-sha512", "FSVERITY-SHA512", 64, 0, HASH_PARAM_BLOCK_SIZE, NULL },
};

/* Tags that name an algorithm too but that no tool writes for it: cksum -c (coreutils >= 9.8)
 * reads "SHA2-384 (f) = ..." as SHA384, for the -a sha2 it has had since then. */
static const struct {
        const char *tag;
        HashAlgo algo;
} hash_tag_aliases[] = {
        { "SHA2-224", HASH_SHA224 },
        { "SHA2-256", HASH_SHA256 },
        { "SHA2-384", HASH_SHA384 },
        { "SHA2-512", HASH_SHA512 },
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

bool hash_algo_always_tagged(HashAlgo a)
{
        return a == HASH_XXH3 || a == HASH_CRC32C;
}

HashAlgo hash_algo_from_tag(const char *s, size_t n)
{
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                if (memeq_str(s, n, hash_algo_info[a].tag) || memeq_str(s, n, hash_algo_info[a].name))
                        return a;
        for (size_t i = 0; i < ELEMENTSOF(hash_tag_aliases); i++)
                if (memeq_str(s, n, hash_tag_aliases[i].tag))
                        return hash_tag_aliases[i].algo;
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

unsigned hash_algo_params(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].params : 0;
}

size_t hash_algo_digest_max(HashAlgo a)
{
        return algo_valid(a) ? hash_algo_info[a].digest_max : 0;
}

int hash_params_check(HashAlgo a, const HashParams *p)
{
        unsigned takes;

        if (!algo_valid(a))
                return -EINVAL;
        if (!p)
                return 0;
        takes = hash_algo_info[a].params;
        if ((p->out_len != 0 && !(takes & HASH_PARAM_LENGTH)) || (p->keyed && !(takes & HASH_PARAM_KEY)) ||
            (p->context && !(takes & HASH_PARAM_CONTEXT)) || (p->block_size != 0 && !(takes & HASH_PARAM_BLOCK_SIZE)))
                return -EOPNOTSUPP;
        if (p->block_size != 0 && (p->block_size & (p->block_size - 1)) != 0)
                return -EINVAL;
        if (p->block_size != 0 && (p->block_size < HASH_BLOCK_SIZE_MIN || p->block_size > HASH_BLOCK_SIZE_MAX))
                return -ERANGE;
        if (p->out_len > hash_algo_info[a].digest_max)
                return -ERANGE;
        if (p->keyed && p->context)
                return -EINVAL;
        return 0;
}

size_t hash_params_digest_size(HashAlgo a, const HashParams *p)
{
        if (hash_params_check(a, p) < 0)
                return 0;
        return p && p->out_len != 0 ? p->out_len : hash_algo_info[a].digest_size;
}

const char *hash_params_tag(HashAlgo a, const HashParams *p, char *buf, size_t n)
{
        size_t size = hash_params_digest_size(a, p);
        int k;

        if (size == 0 || !buf)
                return NULL;
        /* coreutils' b2sum: "BLAKE2b-BITS" below the maximum, the plain tag at it. */
        if ((a == HASH_BLAKE2B || a == HASH_BLAKE2S) && size != hash_algo_info[a].digest_max)
                k = snprintf(buf, n, "%s-%zu", hash_algo_info[a].tag, size * 8);
        else
                k = snprintf(buf, n, "%s", hash_algo_info[a].tag);
        return k >= 0 && (size_t)k < n ? buf : NULL;
}

HashAlgo hash_params_from_tag(const char *s, size_t n, uint32_t *ret_out_len)
{
        HashAlgo a = hash_algo_from_tag(s, n);
        uint32_t bits = 0;
        size_t k;

        if (a >= 0) {
                if (ret_out_len)
                        *ret_out_len = 0;
                return a;
        }
        /* "BLAKE2b-256": a tag that takes a length, '-', decimal bits without a leading zero. */
        for (k = n; k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9'; k--)
                ;
        if (k < 2 || k == n || s[k - 1] != '-' || s[k] == '0' || n - k > 3)
                return _HASH_ALGO_INVALID;
        for (size_t i = k; i < n; i++)
                bits = bits * 10 + (uint32_t)(s[i] - '0');
        a = hash_algo_from_tag(s, k - 1);
        if (a != HASH_BLAKE2B && a != HASH_BLAKE2S)
                return _HASH_ALGO_INVALID;
        if (bits % 8 != 0 || bits / 8 > hash_algo_info[a].digest_max)
                return _HASH_ALGO_INVALID;
        if (ret_out_len)
                *ret_out_len = bits / 8;
        return a;
}

void hash_params_wipe(HashParams *p)
{
        if (p)
                explicit_bzero(p, sizeof(*p));
}

/* Every name, ", "-separated: 12 bytes per algorithm is room for names up to 10 characters on
 * average; the longest list is checked by a test against the table. */
static char algo_list[_HASH_ALGO_MAX * 12];
static pthread_once_t algo_list_once = PTHREAD_ONCE_INIT;

static void algo_list_build(void)
{
        size_t l = 0;

        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++) {
                const char *name = hash_algo_info[a].name;
                size_t k = strlen(name);

                if (l + k + 3 > sizeof(algo_list))
                        break;
                if (l > 0) {
                        memcpy(algo_list + l, ", ", 2);
                        l += 2;
                }
                memcpy(algo_list + l, name, k);
                l += k;
        }
        algo_list[l] = '\0';
}

const char *hash_algo_list(void)
{
        (void)pthread_once(&algo_list_once, algo_list_build);
        return algo_list;
}

int hash_algo_set_parse(const char *s, HashAlgoSet *ret)
{
        HashAlgoSet set = { 0 };

        if (!s || !ret)
                return -EINVAL;
        for (const char *p = s;;) {
                size_t n = strcspn(p, ",");
                char name[32];
                HashAlgo a;

                if (n == 0 || n >= sizeof(name))
                        return -EINVAL;
                memcpy(name, p, n);
                name[n] = '\0';
                a = hash_algo_from_string(name);
                if (a < 0)
                        return -EINVAL;
                if (hash_algo_set_contains(&set, a))
                        return -ENOTUNIQ;
                if (set.n == HASH_SET_MAX)
                        return -E2BIG;
                set.algos[set.n++] = a;
                if (p[n] == '\0')
                        break;
                p += n + 1;
        }
        *ret = set;
        return 0;
}

static bool set_valid(const HashAlgoSet *set)
{
        if (!set || set->n == 0 || set->n > HASH_SET_MAX)
                return false;
        for (unsigned i = 0; i < set->n; i++)
                if (!algo_valid(set->algos[i]))
                        return false;
        return true;
}

const char *hash_algo_set_format(const HashAlgoSet *set, char *buf, size_t n)
{
        size_t len = 0;

        if (!set_valid(set) || !buf)
                return NULL;
        for (unsigned i = 0; i < set->n; i++) {
                int k = snprintf(buf + len, n - len, "%s%s", i > 0 ? "," : "", hash_algo_info[set->algos[i]].name);

                if (k < 0 || (size_t)k >= n - len)
                        return NULL;
                len += (size_t)k;
        }
        return buf;
}

size_t hash_algo_set_digest_size(const HashAlgoSet *set)
{
        size_t sum = 0;

        if (!set_valid(set))
                return 0;
        for (unsigned i = 0; i < set->n; i++)
                sum += hash_algo_info[set->algos[i]].digest_size;
        return sum;
}

bool hash_algo_set_contains(const HashAlgoSet *set, HashAlgo a)
{
        for (unsigned i = 0; set && i < set->n && i < HASH_SET_MAX; i++)
                if (set->algos[i] == a)
                        return true;
        return false;
}
