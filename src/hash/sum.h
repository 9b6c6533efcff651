/* SPDX-License-Identifier: MIT */
/* sum.h: the checksums of cksum and sum: POSIX CRC-32, ITU-T V.42 CRC-32, BSD and System V sums */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* These are not digests: the tools print them as decimal numbers beside the input's size (cksum)
 * or block count (sum), never as hex, so they stay out of the algorithm table that fhashd and
 * libfhash offer. */
typedef enum SumKind {
        SUM_CRC,     /* cksum's default, POSIX: CRC-32 (0x04C11DB7, MSB first) over the data and then
                      * the length's bytes, inverted */
        SUM_CRC32B,  /* cksum -a crc32b: the CRC-32 of zlib, gzip and ITU-T V.42 */
        SUM_BSD,     /* sum, sum -r: the 16-bit rotating sum */
        SUM_SYSV,    /* sum -s: the byte sum folded to 16 bits */
        _SUM_KIND_MAX,
        _SUM_KIND_INVALID = -EINVAL,
} SumKind;

typedef struct SumState {
        SumKind kind;
        uint32_t v;
        uint64_t size;
} SumState;

void sum_init(SumState *s, SumKind kind);
void sum_update(SumState *s, const void *data, size_t n);
/* The value the tool prints (cksum's CRC with the length folded in, the 16-bit BSD sum, the folded
 * SysV sum); the state may take more data afterwards and give a new value. */
uint32_t sum_value(const SumState *s);
