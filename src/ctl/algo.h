/* SPDX-License-Identifier: MIT */
/* algo.h: algorithms as fhashctl holds them: libfhash's names (fhash_algorithms()), sets of them, hex */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fhash/fhash.h"

/* An algorithm is one of the strings of fhash_algorithms() (compared with algo_is()), NULL for none;
 * what it takes and how its lines look come from libfhash (fhash_algorithm_*()). */
#define ALGO_HEX_MAX (FHASH_DIGEST_MAX * 2 + 1)
#define ALGO_SET_NAMES_MAX 64 /* "sha3-512,blake2b,sha512,sha384" and the NUL fit */

/* The string of fhash_algorithms() that is s, or NULL for anything else (and NULL). */
const char *algo_from_string(const char *s);
/* Whether a is the algorithm named name (NULL: none). */
static inline bool algo_is(const char *a, const char *name)
{
        return a && name && __builtin_strcmp(a, name) == 0;
}
/* The default digest's size in bytes; 0 for NULL. */
static inline size_t algo_digest_size(const char *a)
{
        return fhash_algorithm_digest_size(a, 0);
}
/* "sha256, sha512, ...": every name, for usage errors. */
const char *algo_list(void);

/* Several algorithms hashed in one read (-a sha256,blake3), in the order given. */
typedef struct AlgoSet {
        unsigned n;
        const char *algos[FHASH_ALGORITHMS_MAX];
} AlgoSet;

#define ALGO_SET_ONE(a) ((AlgoSet) { .n = 1, .algos = { (a) } })

/* Parses "sha256" or "sha256,blake3": 0, or -EINVAL for an unknown or empty name (NULL s too),
 * -E2BIG for more than FHASH_ALGORITHMS_MAX, -ENOTUNIQ for a name given twice. */
int algo_set_parse(const char *s, AlgoSet *ret);
/* "sha256,blake3" into buf of n bytes (ALGO_SET_NAMES_MAX is always enough), as libfhash's
 * fhash_hash_options.algorithm takes them; buf, or NULL for an empty set or a buf too small. */
const char *algo_set_format(const AlgoSet *set, char *buf, size_t n);
/* Whether hex is a set's digests as libfhash gives them: each one's length in hex digits (either
 * case), one ',' between. */
bool algo_set_hex_valid(const AlgoSet *set, const char *hex);

/* Lower-case hex of n bytes; out holds 2*n+1. */
void hex_from_bytes(const uint8_t *bytes, size_t n, char *out);
/* Exactly 2*n hex digits (either case) into n bytes: 0, or -EINVAL. */
int hex_to_bytes(const char *hex, uint8_t *out, size_t n);
