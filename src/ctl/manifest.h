/* SPDX-License-Identifier: MIT */
/* manifest.h: parser for check files written by sha*sum, md5sum, b2sum, cksum --tag, b3sum and xxhsum */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "hash/hash.h"
#include "basic/macro.h"

/*
 * Accepted lines (leading blanks skipped; a trailing '\r' dropped; blank lines and lines starting with
 * '#' ignored, as coreutils does):
 *   HEX  NAME / HEX *NAME / HEX NAME    sha256sum & co, b3sum, xxhsum -H128 (binary marker '*' dropped)
 *   XXH3_HEX  NAME                      xxhsum >= 0.8.2 for -H3
 *   TAG (NAME) = HEX                    cksum --tag / BSD / xxhsum (TAG as hash_algo_tag(), or our
 *                                       lower-case names); the tag sets the algorithm
 *   \...                                either form with an escaped NAME ("\\n", "\\r", "\\\\")
 *
 * Algorithm of an untagged line: the one given by the caller (-a), whose digest length the line must
 * then have; without one, it is inferred from the length: 8 hex → crc32c, 16 → xxh3, 32 → md5,
 * 40 → sha1, 64 → sha256, 128 → sha512. Lengths shared by several algorithms (64: sha256, sha3-256,
 * blake3; 128: sha512, blake2b; 32: md5, xxh128) pick the coreutils one, so b3sum/b2sum/xxhsum -H128
 * manifests need -a (the BSD tagged forms carry their algorithm and need nothing). A tagged line whose
 * tag differs from a given -a is improperly formatted, as with sha256sum -c.
 */

typedef struct ManifestEntry {
        char *name;              /* unescaped */
        HashAlgo algo;
        char hex[HASH_HEX_MAX];  /* lower case */
        unsigned line;           /* from 1 */
} ManifestEntry;

typedef struct Manifest {
        ManifestEntry *entries;
        size_t n_entries;
        unsigned *bad_lines;     /* improperly formatted lines, in order */
        size_t n_bad;
} Manifest;

/* Parses one line (without its terminator). Returns 1 and fills ret (name malloc'd) for an entry, 0 for
 * a line to ignore (blank, comment), -EINVAL if improperly formatted, -ENOMEM. */
int manifest_parse_line(const char *line, size_t len, HashAlgo algo, ManifestEntry *ret);

/* Parses a whole buffer (it need not be NUL-terminated; lines end with '\n', or with NUL if zero).
 * algo is _HASH_ALGO_INVALID when not given. Never fails on content: bad lines are counted.
 * Returns 0 or -ENOMEM. */
int manifest_parse(const char *buf, size_t size, HashAlgo algo, bool zero, Manifest **ret);
Manifest *manifest_free(Manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manifest *, manifest_free);
