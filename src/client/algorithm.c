/* SPDX-License-Identifier: MIT */
/* algorithm.c: libfhash's algorithm table for its callers (fhash.h): digest sizes, what each takes, the
 * BSD tags of checksum lines, by name */
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "fhash/fhash.h"
#include "hash/algo.h"

/* The public names are hash/algo.h's, and the flags its HashParamFlags: one table, read through. */
_Static_assert(FHASH_DIGEST_MAX == HASH_DIGEST_MAX && FHASH_KEY_SIZE == HASH_KEY_SIZE &&
                       FHASH_ALGORITHMS_MAX == HASH_SET_MAX && FHASH_BLOCK_SIZE_MIN == HASH_BLOCK_SIZE_MIN &&
                       FHASH_BLOCK_SIZE_MAX == HASH_BLOCK_SIZE_MAX,
               "fhash.h's limits are hash/algo.h's");
_Static_assert((unsigned)FHASH_ALGORITHM_LENGTH == (unsigned)HASH_PARAM_LENGTH &&
                       (unsigned)FHASH_ALGORITHM_KEY == (unsigned)HASH_PARAM_KEY &&
                       (unsigned)FHASH_ALGORITHM_DERIVE_KEY == (unsigned)HASH_PARAM_CONTEXT &&
                       (unsigned)FHASH_ALGORITHM_BLOCK_SIZE == (unsigned)HASH_PARAM_BLOCK_SIZE,
               "fhash_algorithm_features() passes hash_algo_params() through");

/* The parameters a length in bits stands for; false when it is no whole number of bytes. */
static bool length_params(unsigned length_bits, HashParams *ret)
{
        if (length_bits % 8 != 0)
                return false;
        *ret = (HashParams){ .out_len = length_bits / 8 };
        return true;
}

_public_ size_t fhash_algorithm_digest_size(const char *name, unsigned length_bits)
{
        HashAlgo a = hash_algo_from_string(name);
        HashParams p;

        if (a < 0 || !length_params(length_bits, &p))
                return 0;
        return hash_params_digest_size(a, &p);
}

_public_ size_t fhash_algorithm_digest_max(const char *name)
{
        HashAlgo a = hash_algo_from_string(name);

        if (a < 0)
                return 0;
        return hash_algo_digest_max(a) ?: hash_algo_digest_size(a);
}

_public_ unsigned fhash_algorithm_features(const char *name)
{
        HashAlgo a = hash_algo_from_string(name);

        if (a < 0)
                return 0;
        return hash_algo_params(a) | (hash_algo_always_tagged(a) ? FHASH_ALGORITHM_ALWAYS_TAGGED : 0);
}

_public_ const char *fhash_algorithm_tag(const char *name, unsigned length_bits, char *buf, size_t n)
{
        HashAlgo a = hash_algo_from_string(name);
        HashParams p;

        if (a < 0 || !length_params(length_bits, &p))
                return NULL;
        return hash_params_tag(a, &p, buf, n);
}

_public_ const char *fhash_algorithm_from_tag(const char *tag, size_t n, unsigned *ret_length_bits)
{
        uint32_t out_len = 0;
        HashAlgo a;

        if (!tag)
                return NULL;
        a = hash_params_from_tag(tag, n, &out_len);
        if (a < 0)
                return NULL;
        if (ret_length_bits)
                *ret_length_bits = out_len * 8;
        return hash_algo_to_string(a);
}
