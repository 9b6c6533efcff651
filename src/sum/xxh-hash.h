/* SPDX-License-Identifier: MIT */
/* xxh-hash.h: an xxhsum run, xxHash's algorithms, and hashing one input */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "hash/hash.h"
#include "sum/common.h"

/* The files of xxhsum, each including only those below it: xxh.c (options, usage, main),
 * xxh-check.c (-c), xxh-hash.c (this header's). */

typedef enum XxhAlgo {
        XA_32,
        XA_64,
        XA_128,
        XA_3,
        _XA_MAX,
} XxhAlgo;

typedef struct XxhAlgoInfo {
        const char *name, *le_name;
        size_t len;
        HashAlgo algo;
} XxhAlgoInfo;

extern const XxhAlgoInfo xxh_algos[_XA_MAX];

#define XXH_BUF_SIZE ((size_t)64 * 1024)

typedef struct Xxh {
        const char *exe;      /* the name it was called by, for usage */
        bool old;             /* xxhsum 0.8.1 */
        XxhAlgo algo, default_algo;
        unsigned bitmask;     /* the algorithms -c takes */
        bool little_endian, tag, check, strict, status, warn, ignore_missing;
        int log_level;
        HashCtx *ctx;
        uint8_t *buf;
        Line line;
} Xxh;

/* Whether xxhsum escapes this name (never in 0.8.1). */
bool xxh_name_needs_escape(const Xxh *x, const char *name);
/* Hashes one open input into digest (canonical, big-endian): 0, or -errno of a read. */
int xxh_hash_fd(Xxh *x, int fd, XxhAlgo a, uint8_t *digest);
/* xxhsum ends the run on a read error in the middle of a file. */
_noreturn_ void xxh_read_failure(Xxh *x);
/* Hashes the input called name and writes its line: 0, or 1 after saying why not. */
int xxh_hash_file(Xxh *x, const char *name);
