/* SPDX-License-Identifier: MIT */
/* algo.h: the one table of digest algorithms: names, tags, digest sizes, parameters, OpenSSL names */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pure data and lookups, no library behind them: the manifest parser and its fuzzer use these with
 * nothing else linked. */

/* The order is the order of the Algorithms property and of `fhashctl algorithms`: new algorithms go
 * at the end, so a client that lists the first ten keeps seeing them where they were. */
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
        HASH_SHA224,
        HASH_SHA384,
        HASH_SHA3_384,
        HASH_SHA3_512,
        HASH_SM3,
        HASH_BLAKE2S,
        HASH_XXH32,
        HASH_XXH64,
        HASH_SHA3_224,
        HASH_FSVERITY,         /* fs-verity's file digest over a SHA-256 Merkle tree (hash/fsverity.h) */
        HASH_FSVERITY_SHA512,  /* the same over a SHA-512 tree */
        _HASH_ALGO_MAX,
        _HASH_ALGO_INVALID = -EINVAL,
} HashAlgo;

/* The longest digest any algorithm gives: SHA-512's, BLAKE2b's, and the longest BLAKE3 output we
 * offer (BLAKE3 is an XOF; b3sum --length goes further, we stop here so that every result struct
 * that carries a digest inline stays this size). */
#define HASH_DIGEST_MAX 64
#define HASH_HEX_MAX (HASH_DIGEST_MAX * 2 + 1)
#define HASH_KEY_SIZE 32 /* BLAKE3's key, b3sum --keyed */

/* What an algorithm lets a caller choose, in HashParams (hash_algo_params()). */
typedef enum HashParamFlags {
        HASH_PARAM_LENGTH = 1 << 0,  /* out_len: BLAKE2b/BLAKE2s (b2sum -l), BLAKE3 (b3sum -l) */
        HASH_PARAM_KEY = 1 << 1,     /* keyed: BLAKE3's keyed hash (b3sum --keyed) */
        HASH_PARAM_CONTEXT = 1 << 2, /* context: BLAKE3's key derivation (b3sum --derive-key) */
        HASH_PARAM_BLOCK_SIZE = 1 << 3, /* block_size: fs-verity's (fsverity digest --block-size) */
} HashParamFlags;

/* The block sizes of fs-verity's tree that a kernel can enable: powers of two from 1 KiB to the page
 * size, at most 64 KiB (`fsverity digest` takes more, which no file system could verify). 0 in
 * HashParams.block_size is 4 KiB, `fsverity digest`'s default. */
#define HASH_BLOCK_SIZE_MIN 1024u
#define HASH_BLOCK_SIZE_MAX 65536u
#define HASH_BLOCK_SIZE_DEFAULT 4096u

/* How to hash, beyond the algorithm. All zero (HASH_PARAMS_DEFAULT) is the algorithm's plain
 * digest. The key is secret: whoever fills one in wipes it with hash_params_wipe(). */
typedef struct HashParams {
        uint32_t out_len;            /* digest bytes; 0: the algorithm's default */
        bool keyed;                  /* key[] holds a BLAKE3 key */
        uint8_t key[HASH_KEY_SIZE];
        const char *context;         /* BLAKE3 derive-key context string; NULL: none. Only read
                                      * while a context is initialised, never kept. */
        uint32_t block_size;         /* fs-verity's block size in bytes; 0: 4 KiB */
} HashParams;

#define HASH_PARAMS_DEFAULT ((HashParams) { 0 })

/* "sha256", "blake3", ...: the names on the command line and the bus; NULL for an invalid value. */
const char *hash_algo_to_string(HashAlgo a);
/* Parses the names above; _HASH_ALGO_INVALID for anything else (and NULL). */
HashAlgo hash_algo_from_string(const char *s);
/* The tag of BSD-style lines, as the reference tools print it for the default digest length:
 *  - coreutils where coreutils knows the algorithm: "SHA256", "SHA224", "SHA384", "MD5", "BLAKE2b",
 *    "SM3" (cksum -a sm3 --tag);
 *  - xxhsum --tag for xxHash: "XXH32", "XXH64", "XXH3", "XXH128". xxhsum -H3 prints XXH3-64 tagged
 *    even without --tag ("XXH3 (name) = hex"), because it reads 16 untagged hex digits as XXH64:
 *    an untagged XXH3 line is not something xxhsum -c accepts;
 *  - "SHA3-224", "SHA3-256", "SHA3-384", "SHA3-512": no coreutils in Debian 12 has SHA-3; these
 *    are what rhash --bsd and coreutils >= 9.8 (cksum -a sha3 -l N) print, and OpenSSL's names;
 *  - "BLAKE2s": coreutils has no BLAKE2s; rhash --bsd prints it so, coreutils' casing of BLAKE2b;
 *  - "BLAKE3", "CRC32C": no tool prints a BSD line for them; the algorithm's own spelling.
 * With a non-default length coreutils appends the bits: "BLAKE2b-256" (b2sum -l 256 --tag); see
 * hash_params_tag(). */
const char *hash_algo_tag(HashAlgo a);
/* Whether a's lines are tagged even where the others' are not: XXH3, as xxhsum -H3 writes it (an
 * untagged line of 16 hex digits is XXH64 to every reader), and CRC32C (8 untagged hex digits are
 * XXH32 to xxhsum -c, and to fhashctl check). */
bool hash_algo_always_tagged(HashAlgo a);
/* The inverse of hash_algo_tag() over n bytes of s (not NUL-terminated); also takes the names, and
 * "SHA2-224" ... "SHA2-512", which coreutils >= 9.8 reads (cksum -c) for SHA224 ... SHA512. */
HashAlgo hash_algo_from_tag(const char *s, size_t n);
/* Default digest length in bytes (32 for sha256, 8 for xxh3, 4 for crc32c, ...); 0 when invalid. */
size_t hash_algo_digest_size(HashAlgo a);
/* OpenSSL's name for EVP_MD_fetch(), or NULL when the algorithm is not OpenSSL's. */
const char *hash_algo_evp_name(HashAlgo a);
/* Which HashParams fields the algorithm takes: a HashParamFlags mask (0 for most; 0 when invalid). */
unsigned hash_algo_params(HashAlgo a);
/* The longest out_len it takes (BLAKE2b 64, BLAKE2s 32, BLAKE3 HASH_DIGEST_MAX); 0 when the length
 * is fixed. The shortest is 1 byte (b2sum -l 8). */
size_t hash_algo_digest_max(HashAlgo a);
/* "sha256, sha512, ...": every name in table order, for usage errors. */
const char *hash_algo_list(void);

/* Whether p (NULL: the defaults) suits a: 0, or
 *  -EOPNOTSUPP  p sets something the algorithm does not take (a length for sha256, a key for
 *               BLAKE2b): callers name the option and the algorithm;
 *  -ERANGE      out_len above hash_algo_digest_max();
 *  -EINVAL      keyed together with a context (b3sum refuses --keyed with --derive-key), a block
 *               size that is not a power of two, or a is invalid;
 *  -ERANGE      also a block size outside HASH_BLOCK_SIZE_MIN ... HASH_BLOCK_SIZE_MAX. */
int hash_params_check(HashAlgo a, const HashParams *p);
/* The digest length a and p give in bytes (p NULL or out_len 0: the default); 0 when they do not
 * suit each other (hash_params_check() says why). */
size_t hash_params_digest_size(HashAlgo a, const HashParams *p);
/* The BSD tag for a with p, as coreutils writes it: hash_algo_tag() for the default length,
 * "BLAKE2b-256" for BLAKE2b or BLAKE2s of 32 bytes. BLAKE3's length, key and context are not in its
 * tag (no tool writes one). Writes at most n bytes with the NUL into buf; returns buf, or NULL
 * when the parameters do not suit a or the tag does not fit. */
const char *hash_params_tag(HashAlgo a, const HashParams *p, char *buf, size_t n);
/* Parses a tag with its length as hash_params_tag() writes it ("BLAKE2b-256": out_len 32), or a
 * plain tag or name as hash_algo_from_tag() (out_len 0), over n bytes of s; _HASH_ALGO_INVALID for
 * anything else (a length not a multiple of 8 bits, above the maximum, on another algorithm).
 * ret_out_len may be NULL and is set only on success. */
HashAlgo hash_params_from_tag(const char *s, size_t n, uint32_t *ret_out_len);
/* Resets p to the defaults, wiping the key in a way the compiler cannot drop. */
void hash_params_wipe(HashParams *p);

/* Several algorithms hashed in one read of each file, as rhash and hashdeep do (fhashctl
 * -a sha256,blake3; fhashd's algorithm argument "sha256,blake3"): distinct, in the order given, each
 * with its default digest. At most HASH_SET_MAX: the read is shared but every algorithm costs its
 * whole CPU time, so past a few, one pass stops paying for itself. Digests of a set travel joined:
 * bytes one after the other in set order, hex digests separated by ','. */
#define HASH_SET_MAX 4
#define HASH_SET_DIGEST_MAX (HASH_DIGEST_MAX * HASH_SET_MAX)
#define HASH_SET_HEX_MAX (HASH_SET_MAX * (HASH_DIGEST_MAX * 2 + 1))
#define HASH_SET_NAMES_MAX 64 /* "sha3-512,blake2b,sha512,sha384" and the NUL fit */

typedef struct HashAlgoSet {
        unsigned n;
        HashAlgo algos[HASH_SET_MAX];
} HashAlgoSet;

/* A set of one. */
#define HASH_ALGO_SET_ONE(a) ((HashAlgoSet) { .n = 1, .algos = { (a) } })

/* Parses "sha256" or "sha256,blake3" (the names of hash_algo_from_string()): 0, or -EINVAL for an
 * unknown or empty name (NULL s too), -E2BIG for more than HASH_SET_MAX, -ENOTUNIQ for a name given
 * twice. */
int hash_algo_set_parse(const char *s, HashAlgoSet *ret);
/* "sha256,blake3" into buf of n bytes (HASH_SET_NAMES_MAX is always enough); buf, or NULL for an
 * empty or invalid set. */
const char *hash_algo_set_format(const HashAlgoSet *set, char *buf, size_t n);
/* The joined digest's bytes: the sum of hash_algo_digest_size(); 0 for an empty or invalid set. */
size_t hash_algo_set_digest_size(const HashAlgoSet *set);
/* Whether a is in the set. */
bool hash_algo_set_contains(const HashAlgoSet *set, HashAlgo a);
