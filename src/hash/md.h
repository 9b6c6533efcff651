/* SPDX-License-Identifier: MIT */
/* md.h: the digests of a crypto library (MD5, SHA-1, SHA-2, SHA-3, SM3) behind one small interface */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/algo.h"

/*
 * Two backends, one per file, picked at link time (as BLAKE3 picks an ISA file):
 *  - md-openssl.c, OpenSSL 3's EVP digests: what libfhash, fhashd and the engine link. The fastest
 *    per byte (SHA-NI, AVX2), but libcrypto.so costs ~0.55 ms to load and relocate, and the first
 *    EVP_MD_fetch() loads the default provider.
 *  - md-nettle.c, nettle's low-level digests: what fhashctl's own binary links (statically) for
 *    the one-shot path and the sha256sum/md5sum/... personalities. Nothing to load and next to no
 *    set-up, so a process that hashes one small file starts about as fast as coreutils' sha256sum
 *    (which links nothing but libc); per byte it is as fast as OpenSSL (SHA-NI) but for SHA-512.
 * hash.c calls these for every algorithm hash_algo_evp_name() names; the digests are the same
 * bytes either way (test-hash runs its known answers against both).
 */
typedef struct MdCtx MdCtx;

/* Prepares what every context shares (OpenSSL: fetches the digests once). Idempotent; called by
 * hash_global_init() before any thread hashes. */
int md_global_init(void);
/* The backend's name, for tests and benchmarks: "openssl" or "nettle". */
const char *md_backend(void);

int md_new(MdCtx **ret);
MdCtx *md_free(MdCtx *m);
/* Starts a digest of a: 0, -EOPNOTSUPP when this backend lacks it (MD5 under a FIPS-only OpenSSL
 * configuration), -EINVAL when a is not one of these digests. */
int md_init(MdCtx *m, HashAlgo a);
int md_update(MdCtx *m, const void *data, size_t n);
/* Writes the digest, hash_algo_digest_size() bytes of the algorithm md_init() was given. */
int md_final(MdCtx *m, uint8_t *out);
