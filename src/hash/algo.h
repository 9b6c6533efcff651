/* SPDX-License-Identifier: MIT */
/* algo.h: the one table of digest algorithms: names, tags, digest sizes, OpenSSL names */
#pragma once

#include <errno.h>
#include <stddef.h>

/* Pure data and lookups, no library behind them: the manifest parser and its fuzzer use these with
 * nothing else linked. */

typedef enum HashAlgo {
        HASH_SHA256,
        HASH_SHA512,
        HASH_SHA1,
        HASH_MD5,
        HASH_SHA3_256,
        HASH_BLAKE2B,
        HASH_BLAKE3,
        HASH_XXH3,
        HASH_XXH128,
        HASH_CRC32C,
        _HASH_ALGO_MAX,
        _HASH_ALGO_INVALID = -EINVAL,
} HashAlgo;

#define HASH_DIGEST_MAX 64
#define HASH_HEX_MAX (HASH_DIGEST_MAX * 2 + 1)

/* "sha256", "blake3", ...: the names on the command line and the bus; NULL for an invalid value. */
const char *hash_algo_to_string(HashAlgo a);
/* Parses the names above; _HASH_ALGO_INVALID for anything else (and NULL). */
HashAlgo hash_algo_from_string(const char *s);
/* The tag of BSD-style lines: coreutils' where coreutils knows the algorithm ("SHA256", "BLAKE2b",
 * "MD5", ...), the reference tool's otherwise ("BLAKE3", "XXH3", "XXH128", "CRC32C", "SHA3-256"). */
const char *hash_algo_tag(HashAlgo a);
/* The inverse of hash_algo_tag() over n bytes of s (not NUL-terminated); also takes the names. */
HashAlgo hash_algo_from_tag(const char *s, size_t n);
/* Digest length in bytes (32 for sha256, 8 for xxh3, 4 for crc32c, ...); 0 for an invalid value. */
size_t hash_algo_digest_size(HashAlgo a);
/* OpenSSL's name for EVP_MD_fetch(), or NULL when the algorithm is not OpenSSL's. */
const char *hash_algo_evp_name(HashAlgo a);
/* "sha256, sha512, ...": every name in table order, for usage errors. */
const char *hash_algo_list(void);
