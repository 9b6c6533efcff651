/* SPDX-License-Identifier: MIT */
/* coreutils-tool.h: what the coreutils personality's files share: a run, cksum's algorithms, messages */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/hash.h"
#include "hash/sum.h"
#include "sum/common.h"

/*
 * What these tools do is what coreutils' src/cksum.c (9.11) and src/digest.c (9.1) do, as their
 * manuals and tests/cksum/ describe it; the comments below name the behaviours a script can see.
 * Since coreutils 9.8, md5sum and sha*sum are cksum with a fixed algorithm ("legacy mode": the same
 * parser, base64 digests accepted by -c, names quoted in -c output); b2sum and sum are built on their
 * own. In 9.1 (Debian 12) md5sum and sha*sum were digest.c builds of their own: that is the
 * "plain" build below, which only FHASH_COMPAT=debian12 selects.
 */

/* One file per stage, each including only those below it: coreutils.c (options, help, main),
 * coreutils-check.c (-c: the line parser and digest_check()), coreutils-digest.c (hashing
 * one input, the result line), coreutils-tool.c (this header's). */

typedef enum Build {
        BUILD_CKSUM,   /* cksum; md5sum and sha*sum in 9.11 (legacy mode) */
        BUILD_BLAKE2,  /* b2sum */
        BUILD_PLAIN,   /* md5sum and sha*sum in 9.1 */
        BUILD_SUM,     /* sum */
} Build;

/* cksum -a's algorithms, in coreutils' order: the order matters ("algo <= crc32b" are not
 * checkable) and is that of cksum --help's DIGEST list. */
typedef enum CkAlgo {
        CK_BSD,
        CK_SYSV,
        CK_CRC,
        CK_CRC32B,
        CK_MD5,
        CK_SHA1,
        CK_SHA224,
        CK_SHA256,
        CK_SHA384,
        CK_SHA512,
        CK_SHA2,
        CK_SHA3,
        CK_BLAKE2B,
        CK_SM3,
        _CK_ALGO_MAX,
} CkAlgo;

typedef struct CkAlgoInfo {
        const char *arg;  /* -a ARG */
        const char *tag;  /* the tag of tagged lines, and the name in messages */
        int bits;         /* the default length */
        bool old;         /* cksum 9.1 had it */
        HashAlgo algo;    /* the digest, for those that are one (sha2, sha3: by length) */
} CkAlgoInfo;

extern const CkAlgoInfo cu_algos[_CK_ALGO_MAX];

#define BLAKE2B_MAX_BITS 512
#define B64_LEN(n) ((size_t)4 * (((size_t)(n) + 2) / 3))

typedef struct Cu {
        const char *prog;
        /* A CuTool, which only coreutils.c reads. An int, as in Persona, so that this header
         * does not include coreutils.h, the header of the file above all the others. */
        int tool;
        Build build;
        bool old;                /* FHASH_COMPAT=debian12: coreutils 9.1 */
        bool legacy;             /* md5sum and sha*sum built as cksum (9.11) */
        CkAlgo algo;
        bool algorithm_specified;
        SumKind sum_kind;        /* sum -r / -s */
        intmax_t digest_length;  /* bits */
        const char *digest_length_str;
        size_t digest_hex_bytes;
        size_t min_line;         /* the shortest checksum line to consider */
        int bsd_reversed;        /* -1 unknown, 0 standard lines, 1 BSD reversed lines */
        bool base64, raw, debug, status_only, warn, ignore_missing, quiet, strict, do_check;
        char delim;
        int binary;              /* -1 unset, 0 text, 1 binary */
        int prefix_tag;          /* -1 unset, 0 untagged, 1 tagged */
        bool args;               /* files were named */
        Line line;
        HashCtx *ctx;
        uint8_t *buf;
} Cu;

#define CU_BUF_SIZE ((size_t)128 * 1024)

/* The tool's name for the current algorithm: the tag of tagged lines, the name in messages. */
const char *cu_type_string(const Cu *cu);

/* The lengths sha2 and sha3 take, in bits. */
static inline bool cu_sha_length_ok(intmax_t bits)
{
        return bits == 224 || bits == 256 || bits == 384 || bits == 512;
}

/* quotef(): names in diagnostics and, since 9.11, in -c's status lines. */
int cu_quotef(const char *name, char **ret);
/* The name quotef()'d into the line (as it is, if that fails). */
void cu_add_quoted(Line *l, const char *name);
/* quote(): 'x' in the C locale, curly quotes where the locale is UTF-8, as gnulib's
 * locale_quoting_style; NULL when out of memory. */
char *cu_quote(const char *s);

/* "PROG: MESSAGE" on stderr. */
_printf_(2, 3) void cu_err(const Cu *cu, const char *fmt, ...);
/* "PROG: NAME: REASON", the name quoted as quotef() does. */
void cu_err_name(const Cu *cu, const char *name, int err);
