/* SPDX-License-Identifier: MIT */
/* hash.h: the ten digest algorithms behind one streaming interface */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/algo.h"

/* Picks the CRC32C implementation (hardware or portable) and prefetches the OpenSSL digests once.
 * Safe to call more than once and from several threads; hash_ctx_new() calls it. */
int hash_global_init(void);
/* Name of the CRC32C implementation in use: "sse4.2", "portable", ... */
const char *hash_crc32c_impl(void);

/* A reusable streaming state able to run any algorithm. Allocated once (per worker or per
 * in-flight file slot) and re-initialised for every file: no allocation per buffer or per file. */
typedef struct HashCtx HashCtx;

int hash_ctx_new(HashCtx **ret);
HashCtx *hash_ctx_free(HashCtx *c);
/* Starts a new digest of algorithm a, discarding any previous state. */
int hash_ctx_init(HashCtx *c, HashAlgo a);
int hash_ctx_update(HashCtx *c, const void *data, size_t n);
/* Writes hash_algo_digest_size() bytes, in the canonical byte order of the reference tool. */
int hash_ctx_final(HashCtx *c, uint8_t *ret_digest);

/* One-shot convenience for tests and small inputs. */
int hash_oneshot(HashAlgo a, const void *data, size_t n, uint8_t *ret_digest);

/* Lower-case hex; out must hold 2*n+1 bytes. */
void hash_to_hex(const uint8_t *digest, size_t n, char *out);
/* Parses hex (either case) of exactly 2*n digits; -EINVAL otherwise. */
int hash_from_hex(const char *hex, uint8_t *out, size_t n);

/* Portable and hardware CRC32C, exposed for tests and benchmarks (crc is the running value,
 * pre-/post-inversion is done inside: start with 0). */
uint32_t crc32c_portable(uint32_t crc, const void *data, size_t n);
uint32_t crc32c_update(uint32_t crc, const void *data, size_t n);
