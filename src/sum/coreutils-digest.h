/* SPDX-License-Identifier: MIT */
/* coreutils-digest.h: the coreutils tools' hashing of one input, and its result line */
#pragma once

#include "sum/coreutils-tool.h"

/* The digest, or the checksum, of one input. */
typedef struct CuResult {
        uint8_t digest[HASH_DIGEST_MAX];
        uint32_t sum;
        uint64_t size;
} CuResult;

/* Reads and hashes one input: 0; -ENOENT with missing set for a file --ignore-missing skips
 * (only in check mode); another -errno after saying it, as "PROG: NAME: REASON". */
int cu_digest_file(Cu *cu, const char *name, CuResult *res, bool *missing);
/* One result line, as coreutils' output_file(), output_crc(), output_bsd() and output_sysv(). */
void cu_output(Cu *cu, const char *name, int binary, const CuResult *res);
