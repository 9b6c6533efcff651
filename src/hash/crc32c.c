/* SPDX-License-Identifier: MIT */
/* CRC32C (Castagnoli): a portable slicing-by-8 version and an SSE4.2 one with three interleaved
 * streams, picked once at start-up. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "hash/hash.h"
#include "basic/macro.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define CRC32C_HAVE_HW 1
#else
#define CRC32C_HAVE_HW 0
#endif

/* The Castagnoli polynomial, bit-reflected (the CRC is LSB-first, like iSCSI and the crc32
 * instruction). */
#define CRC32C_POLY 0x82f63b78u

typedef uint32_t (*Crc32cFunc)(uint32_t crc, const void *data, size_t n);

static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
/* Written once under crc32c_once, read-only afterwards. */
static uint32_t crc32c_table[8][256];
static uint32_t crc32c_portable_dispatch(uint32_t crc, const void *data, size_t n);
static Crc32cFunc crc32c_impl = crc32c_portable_dispatch;
static const char *crc32c_impl_name = "portable";

/* Byte order independent 64-bit little-endian load: the slicing tables index bytes in stream order. */
static inline uint64_t load_le64(const uint8_t *p)
{
        uint64_t v;

        memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        return v;
}

static void crc32c_tables_init(void)
{
        for (unsigned i = 0; i < 256; i++) {
                uint32_t c = i;
                for (unsigned k = 0; k < 8; k++)
                        c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY : 0);
                crc32c_table[0][i] = c;
        }
        /* table[k][b]: the CRC contribution of byte b followed by k zero bytes. */
        for (unsigned k = 1; k < 8; k++)
                for (unsigned i = 0; i < 256; i++) {
                        uint32_t c = crc32c_table[k - 1][i];
                        crc32c_table[k][i] = (c >> 8) ^ crc32c_table[0][c & 0xff];
                }
}

static uint32_t crc32c_portable_raw(uint32_t c, const uint8_t *p, size_t n)
{
        while (n > 0 && ((uintptr_t)p & 7)) {
                c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
                n--;
        }
        for (; n >= 8; p += 8, n -= 8) {
                uint64_t w = load_le64(p) ^ c;
                c = crc32c_table[7][w & 0xff] ^ crc32c_table[6][(w >> 8) & 0xff] ^
                    crc32c_table[5][(w >> 16) & 0xff] ^ crc32c_table[4][(w >> 24) & 0xff] ^
                    crc32c_table[3][(w >> 32) & 0xff] ^ crc32c_table[2][(w >> 40) & 0xff] ^
                    crc32c_table[1][(w >> 48) & 0xff] ^ crc32c_table[0][w >> 56];
        }
        while (n-- > 0)
                c = crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        return c;
}

static uint32_t crc32c_portable_dispatch(uint32_t crc, const void *data, size_t n)
{
        return ~crc32c_portable_raw(~crc, data, n);
}

#if CRC32C_HAVE_HW

/* One crc32 instruction has a latency of three cycles and a throughput of one per cycle, so a
 * single dependent chain runs at a third of the possible speed. The buffer is cut into three
 * equal blocks hashed side by side, then the three partial CRCs are merged: the CRC of A||B is
 * crc(A)·x^(8|B|) + crc(B) mod P, and the multiplication by a precomputed power of x is one
 * carry-less multiply followed by one crc32 instruction that does the modular reduction. */

/* Polynomial arithmetic modulo the CRC polynomial, in the reflected representation: bit 31 is the
 * coefficient of x^0, bit 0 the one of x^31. */
static uint32_t gf_mulx(uint32_t a)
{
        return (a >> 1) ^ ((a & 1) ? CRC32C_POLY : 0);
}

static uint32_t gf_mul(uint32_t a, uint32_t b)
{
        uint32_t p = 0;

        for (unsigned i = 0; i < 32; i++) {
                if (a & (UINT32_C(0x80000000) >> i))
                        p ^= b;
                b = gf_mulx(b);
        }
        return p;
}

/* x^e mod P, by square-and-multiply. */
static uint32_t gf_xpow(uint64_t e)
{
        uint32_t r = UINT32_C(0x80000000), base = UINT32_C(0x40000000);

        for (; e > 0; e >>= 1) {
                if (e & 1)
                        r = gf_mul(r, base);
                base = gf_mul(base, base);
        }
        return r;
}

#define CRC32C_LONG 8192
#define CRC32C_SHORT 256

typedef struct Crc32cShift {
        uint64_t k1; /* multiplies by x^(8·block) */
        uint64_t k2; /* multiplies by x^(16·block) */
} Crc32cShift;

static Crc32cShift crc32c_shift_long, crc32c_shift_short;

/* clmul of two reflected 32-bit values is their product times x in the 64-bit reflected form, and
 * crc32_u64(0, v) is v·x^32 mod P; so multiplying by x^(8n) needs the constant x^(8n-33). */
static Crc32cShift crc32c_shift_for(size_t block)
{
        return (Crc32cShift){
                .k1 = gf_xpow((uint64_t)block * 8 - 33),
                .k2 = gf_xpow((uint64_t)block * 16 - 33),
        };
}

__attribute__((target("sse4.2,pclmul"))) static inline uint64_t crc32c_hw_streams(
        uint64_t c0, const uint8_t **pp, size_t *np, size_t block, const Crc32cShift *k)
{
        const uint8_t *p = *pp;
        size_t n = *np;

        while (n >= 3 * block) {
                const uint8_t *end = p + block;
                uint64_t c1 = 0, c2 = 0, v;

                for (; p < end; p += 8) {
                        uint64_t a, b, c;
                        memcpy(&a, p, 8);
                        memcpy(&b, p + block, 8);
                        memcpy(&c, p + 2 * block, 8);
                        c0 = _mm_crc32_u64(c0, a);
                        c1 = _mm_crc32_u64(c1, b);
                        c2 = _mm_crc32_u64(c2, c);
                }
                /* c0 moves past two blocks, c1 past one; the reduction is linear, so both
                 * products are folded with one crc32. */
                __m128i m0 = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c0),
                                                  _mm_cvtsi64_si128((long long)k->k2), 0x00);
                __m128i m1 = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c1),
                                                  _mm_cvtsi64_si128((long long)k->k1), 0x00);
                v = (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(m0, m1));
                c0 = _mm_crc32_u64(0, v) ^ c2;
                p += 2 * block;
                n -= 3 * block;
        }
        *pp = p;
        *np = n;
        return c0;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_hw(uint32_t crc, const void *data,
                                                                  size_t n)
{
        const uint8_t *p = data;
        uint64_t c = (uint32_t)~crc;

        /* Aligned 8-byte loads never straddle a cache line. */
        while (n > 0 && ((uintptr_t)p & 7)) {
                c = _mm_crc32_u8((uint32_t)c, *p++);
                n--;
        }
        c = crc32c_hw_streams(c, &p, &n, CRC32C_LONG, &crc32c_shift_long);
        c = crc32c_hw_streams(c, &p, &n, CRC32C_SHORT, &crc32c_shift_short);
        for (; n >= 8; p += 8, n -= 8) {
                uint64_t w;
                memcpy(&w, p, 8);
                c = _mm_crc32_u64(c, w);
        }
        while (n-- > 0)
                c = _mm_crc32_u8((uint32_t)c, *p++);
        return ~(uint32_t)c;
}
#endif

static void crc32c_setup(void)
{
        crc32c_tables_init();
#if CRC32C_HAVE_HW
        unsigned eax, ebx, ecx = 0, edx;

        /* Both are needed: without PCLMUL the streams could not be merged cheaply, and a single
         * chain is not worth a second code path. One CPUID leaf, asked here and only here:
         * __builtin_cpu_supports() would link libgcc's constructor, which runs a dozen CPUIDs in
         * every process at start (each a VM exit under a hypervisor: ~5% of a one-file
         * sha256sum through fhashctl). */
        if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
                ecx = 0;
        if ((ecx & bit_SSE4_2) && (ecx & bit_PCLMUL)) {
                crc32c_shift_long = crc32c_shift_for(CRC32C_LONG);
                crc32c_shift_short = crc32c_shift_for(CRC32C_SHORT);
                crc32c_impl = crc32c_hw;
                crc32c_impl_name = "sse4.2";
        }
#endif
}

const char *hash_crc32c_impl(void)
{
        (void)pthread_once(&crc32c_once, crc32c_setup);
        return crc32c_impl_name;
}

uint32_t crc32c_portable(uint32_t crc, const void *data, size_t n)
{
        (void)pthread_once(&crc32c_once, crc32c_setup);
        if (n == 0)
                return crc;
        return crc32c_portable_dispatch(crc, data, n);
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t n)
{
        (void)pthread_once(&crc32c_once, crc32c_setup);
        if (n == 0)
                return crc;
        return crc32c_impl(crc, data, n);
}
