/* SPDX-License-Identifier: MIT */
/* sum.c: cksum's CRCs and sum's BSD and System V checksums */
#include <pthread.h>

#include <zlib.h>

#include "hash/sum.h"

/* Slice-by-8 tables for the MSB-first CRC of POSIX cksum: crc_table[0] is the byte-at-a-time table,
 * crc_table[k][b] the CRC of b followed by k zero bytes. zlib's crc32() is the reflected CRC and
 * cannot compute this one, so it is done here; built once, at the first use. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_build(void)
{
        for (uint32_t b = 0; b < 256; b++) {
                uint32_t c = b << 24;

                for (int k = 0; k < 8; k++)
                        c = c & 0x80000000u ? (c << 1) ^ 0x04C11DB7u : c << 1;
                crc_table[0][b] = c;
        }
        for (uint32_t b = 0; b < 256; b++)
                for (int k = 1; k < 8; k++)
                        crc_table[k][b] = (crc_table[k - 1][b] << 8) ^ crc_table[0][crc_table[k - 1][b] >> 24];
}

static uint32_t crc_posix_update(uint32_t crc, const uint8_t *p, size_t n)
{
        while (n >= 8) {
                uint32_t hi = crc ^ ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);

                crc = crc_table[7][hi >> 24] ^ crc_table[6][(hi >> 16) & 0xff] ^ crc_table[5][(hi >> 8) & 0xff] ^
                      crc_table[4][hi & 0xff] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
                      crc_table[0][p[7]];
                p += 8;
                n -= 8;
        }
        while (n-- > 0)
                crc = (crc << 8) ^ crc_table[0][(crc >> 24) ^ *p++];
        return crc;
}

void sum_init(SumState *s, SumKind kind)
{
        *s = (SumState){ .kind = kind };
        if (kind == SUM_CRC)
                (void)pthread_once(&crc_once, crc_table_build);
}

void sum_update(SumState *s, const void *data, size_t n)
{
        const uint8_t *p = data;

        s->size += n;
        switch (s->kind) {
        case SUM_CRC:
                s->v = crc_posix_update(s->v, p, n);
                break;
        case SUM_CRC32B:
                /* zlib takes a uInt length: feed it in pieces that fit. */
                while (n > 0) {
                        uInt k = n > (1u << 30) ? 1u << 30 : (uInt)n;

                        s->v = (uint32_t)crc32(s->v, p, k);
                        p += k;
                        n -= k;
                }
                break;
        case SUM_BSD:
                for (size_t i = 0; i < n; i++)
                        s->v = (((s->v >> 1) | ((s->v & 1) << 15)) + p[i]) & 0xffff;
                break;
        case SUM_SYSV:
                /* Modulo 2^32, as sum -s keeps it in an unsigned int. */
                for (size_t i = 0; i < n; i++)
                        s->v += p[i];
                break;
        default:
                break;
        }
}

uint32_t sum_value(const SumState *s)
{
        uint32_t crc, r;

        switch (s->kind) {
        case SUM_CRC:
                /* POSIX appends the length, least significant byte first, without its leading zero
                 * bytes. */
                crc = s->v;
                for (uint64_t l = s->size; l > 0; l >>= 8) {
                        uint8_t b = (uint8_t)l;
                        crc = crc_posix_update(crc, &b, 1);
                }
                return ~crc;
        case SUM_SYSV:
                r = (s->v & 0xffff) + (s->v >> 16);
                return (r & 0xffff) + (r >> 16);
        default:
                return s->v;
        }
}
