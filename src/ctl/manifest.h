/* SPDX-License-Identifier: MIT */
/* manifest.h: parser for check files written by sha*sum, md5sum, b2sum, cksum --tag, b3sum and xxhsum */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ctl/algo.h"
#include "ctl/macro.h"
#include "ctl/mtree.h"

/*
 * Accepted lines (leading blanks skipped; a trailing '\r' dropped; blank lines and lines starting with
 * '#' ignored, as coreutils does):
 *   HEX  NAME / HEX *NAME               sha256sum & co, b3sum, xxhsum -H128 (binary marker '*' dropped)
 *   HEX NAME                            BSD reversed (md5 -r, sha256 -r): as coreutils, the first
 *                                       untagged line decides for the whole manifest, so that in a
 *                                       reversed one " b" is the name " b", and the two forms never mix
 *   XXH3_HEX  NAME                      xxhsum >= 0.8.2 for -H3
 *   TAG (NAME) = DIGEST                 cksum --tag / BSD / xxhsum, TAG(NAME)= DIGEST (OpenSSL): TAG
 *                                       as fhash_algorithm_tag(), our lower-case names, "SHA2-384" (cksum -c
 *                                       >= 9.8), or xxhsum's "XXH64_LE" for a little-endian digest;
 *                                       the tag sets the algorithm; DIGEST hex, or base64 as cksum
 *                                       --base64 writes it
 *   \...                                either form with an escaped NAME ("\\n", "\\r", "\\\\")
 * A name "stdin" in a line of an xxHash algorithm is standard input (xxhsum names it so in the lines it
 * writes, and reads it back so): ManifestEntry.from_stdin.
 *
 * Algorithm of an untagged line, in this order: the one given by the caller (-a), whose digest length
 * the line must then have; the manifest's file name (MD5SUMS, *.md5, SHA256SUMS, *.sha256, *.b3,
 * *.xxh64, *.xxh128, ...: manifest_algo_from_filename()) where that algorithm's digest has the line's
 * length; else the length, read as its most common writer writes it: 8 hex → xxh32, 16 → xxh64 (as
 * xxhsum -c reads them), 32 → md5, 40 → sha1, 56 → sha224, 64 → sha256, 96 → sha384, 128 → sha512.
 * A line is never taken because another algorithm of its length would match: the caller can only
 * hint (fhashctl says which -a to try when every line of a manifest fails). A tagged line whose
 * tag differs from a given -a is improperly formatted, as with sha256sum -c.
 *
 * Digest lengths, as b2sum -c reads them: a tag may carry one ("BLAKE2b-256", "BLAKE2s-128"), and
 * untagged lines of -a blake2b or blake2s may have any length the algorithm takes (b2sum -c infers
 * it from the hex, with or without -l). -l (ManifestParseOptions.length) sets the length of untagged
 * BLAKE3 lines, which otherwise have the default one (b3sum --check takes no --length).
 */

typedef struct ManifestEntry {
        char *name;              /* unescaped */
        const char *algo;
        uint32_t out_len;        /* digest bytes when not the algorithm's default (BLAKE2b-256), else 0 */
        char hex[ALGO_HEX_MAX];  /* lower case */
        unsigned line;           /* from 1 */
        bool tagged;             /* the line named its algorithm */
        bool from_stdin;         /* xxhsum's "stdin": read standard input, not a file of that name */
        /* An entry of an mtree manifest (ManifestReader only): what it says besides a digest. algo is
         * NULL and hex "" where it names no digest fhash checks (a directory, a link,
         * a file with only rmd160digest=). */
        bool is_mtree;
        MtreeInfo mtree;         /* its link malloc'd, as the name */
} ManifestEntry;

/* Frees what an entry holds (its name, an mtree link) and clears those fields. */
void manifest_entry_clear(ManifestEntry *e);

typedef struct Manifest {
        ManifestEntry *entries;
        size_t n_entries;
        unsigned *bad_lines;     /* improperly formatted lines, in order */
        size_t n_bad;
} Manifest;

/* Parses one line (without its terminator). Returns 1 and fills ret (name malloc'd) for an entry, 0 for
 * a line to ignore (blank, comment), -EINVAL if improperly formatted, -ENOMEM. */
int manifest_parse_line(const char *line, size_t len, const char *algo, ManifestEntry *ret);

/* Parses a whole buffer (it need not be NUL-terminated; lines end with '\n', or with NUL if zero).
 * algo is NULL when not given. Never fails on content: bad lines are counted.
 * Returns 0 or -ENOMEM. */
int manifest_parse(const char *buf, size_t size, const char *algo, bool zero, Manifest **ret);
typedef struct ManifestParseOptions {
        const char *algo;    /* -a, or NULL */
        const char *hint;    /* the manifest's name says (manifest_algo_from_filename()), or NULL */
        uint32_t length;  /* -l: digest bytes for algorithms that take a length; 0: none given */
        bool zero;        /* lines end with NUL */
        /* The manifest's form so far, as coreutils' bsd_reversed: -1 undecided, 0 "HEX  NAME", 1 BSD
         * reversed "HEX NAME". NULL: each line on its own. manifest_parse_with() keeps its own. */
        int *bsd_reversed;
} ManifestParseOptions;

/* manifest_parse() with every option. */
int manifest_parse_with(const char *buf, size_t size, const ManifestParseOptions *o, Manifest **ret);
/* manifest_parse_line() with every option (o->bsd_reversed kept across the calls of one manifest). */
int manifest_parse_line_with(const char *line, size_t len, const ManifestParseOptions *o, ManifestEntry *ret);
/* The algorithm a manifest's name says, as the tools that write them name them, or NULL. */
const char *manifest_algo_from_filename(const char *path);
Manifest *manifest_free(Manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manifest *, manifest_free);
