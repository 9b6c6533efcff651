/* SPDX-License-Identifier: MIT */
/* hash.h: every digest algorithm behind one streaming interface */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/algo.h"

/* Picks the CRC32C implementation (hardware or portable), prefetches the OpenSSL digests and lets
 * BLAKE3 and libb2 pick their SIMD code, once. Safe to call more than once and from several
 * threads; hash_ctx_new() calls it, and it must have run before threads hash on their own (the
 * engine's workers do: their contexts come from hash_ctx_new()). */
int hash_global_init(void);
/* Name of the CRC32C implementation in use: "sse4.2", "portable", ... */
const char *hash_crc32c_impl(void);

/* A reusable streaming state able to run any algorithm. Allocated once (per worker or per
 * in-flight file slot) and re-initialised for every file: no allocation per buffer or per file. */
typedef struct HashCtx HashCtx;

int hash_ctx_new(HashCtx **ret);
HashCtx *hash_ctx_free(HashCtx *c);
/* Starts a new digest of algorithm a with its default parameters, discarding (and wiping) any
 * previous state. */
int hash_ctx_init(HashCtx *c, HashAlgo a);
/* The same with parameters (NULL: the defaults): a digest length for BLAKE2b, BLAKE2s and BLAKE3, a
 * key or a derive-key context for BLAKE3. Errors as hash_params_check(): -EOPNOTSUPP, -ERANGE,
 * -EINVAL. Nothing of p is kept: the caller may wipe it as soon as this returns. Whatever the
 * context derives from a key or context (BLAKE3's key words, and in derive-key mode the input, which
 * is key material) is wiped at hash_ctx_final(), at the next init and at hash_ctx_free(). */
int hash_ctx_init_params(HashCtx *c, HashAlgo a, const HashParams *p);
int hash_ctx_update(HashCtx *c, const void *data, size_t n);
/* Writes hash_ctx_digest_size() bytes, in the canonical byte order of the reference tool: what
 * sha256sum, b2sum -l, b3sum -l/--keyed/--derive-key, xxhsum -H0..-H3, openssl dgst print. */
int hash_ctx_final(HashCtx *c, uint8_t *ret_digest);
/* BLAKE3's extendable output: n bytes from byte offset seek of the output for the data so far, as
 * b3sum --seek/--length give any length where hash_ctx_final() stops at HASH_DIGEST_MAX bytes. The
 * context is left as it was, so pieces can follow one another; hash_ctx_final() or the next init
 * ends it (and wipes a key). -EOPNOTSUPP for the other algorithms, -EINVAL outside init..final. */
int hash_ctx_xof(HashCtx *c, uint64_t seek, uint8_t *out, size_t n);
/* fs-verity (fsverity, fsverity-sha512): the hashes of the next data blocks instead of their bytes,
 * for `bytes` bytes of the file, as fsverity_hash_blocks() computed them elsewhere (a big file's
 * pieces on other cores); see fsverity_tree_add_hashes(). -EOPNOTSUPP for the other algorithms,
 * -EINVAL outside init..final or after bytes that did not end a block. */
int hash_ctx_add_block_hashes(HashCtx *c, const uint8_t *hashes, uint64_t bytes);
/* The digest length of the current (or last) init in bytes; 0 before the first. */
size_t hash_ctx_digest_size(const HashCtx *c);

/* One-shot convenience for tests and small inputs: hash_algo_digest_size(a) bytes, or
 * hash_params_digest_size(a, p) bytes. */
int hash_oneshot(HashAlgo a, const void *data, size_t n, uint8_t *ret_digest);
int hash_oneshot_params(HashAlgo a, const HashParams *p, const void *data, size_t n, uint8_t *ret_digest);

/* Lower-case hex; out must hold 2*n+1 bytes. */
void hash_to_hex(const uint8_t *digest, size_t n, char *out);
/* Parses hex (either case) of exactly 2*n digits; -EINVAL otherwise. */
int hash_from_hex(const char *hex, uint8_t *out, size_t n);
/* A set's joined digest (hash_algo_set_digest_size() bytes) as hex digests in set order separated
 * by ','; out must hold HASH_SET_HEX_MAX bytes. */
void hash_set_to_hex(const HashAlgoSet *set, const uint8_t *digest, char *out);
/* Whether hex is what hash_set_to_hex() writes for set, in either case: each digest's length, hex
 * digits, one ',' between. */
bool hash_set_hex_valid(const HashAlgoSet *set, const char *hex);
/* Parses one hex digest, or several joined by ',' (hash_set_to_hex()'s form), into out (NULL: only
 * checks), the digests one after the other, and each one's byte length into lengths[]: the number
 * of digests. -EINVAL if hex is not that (an empty or odd digest, not hex), has more than max
 * digests or more than out_size bytes. */
int hash_joined_from_hex(const char *hex, uint8_t *out, size_t out_size, uint32_t *lengths, size_t max);
/* The reverse: n digests of lengths[] bytes, one after the other in digest, as hex joined by ',';
 * out must hold 2 * sum(lengths) + n bytes. */
void hash_joined_to_hex(const uint8_t *digest, const uint32_t *lengths, size_t n, char *out);

/* Portable and hardware CRC32C, exposed for tests and benchmarks (crc is the running value,
 * pre-/post-inversion is done inside: start with 0). */
uint32_t crc32c_portable(uint32_t crc, const void *data, size_t n);
uint32_t crc32c_update(uint32_t crc, const void *data, size_t n);
