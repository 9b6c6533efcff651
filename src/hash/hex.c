/* SPDX-License-Identifier: MIT */
/* hex.c: digests as hex, both ways; pure, so that fhashctl's own code can use it without the
 * hashing libraries */
#include <string.h>

#include "hash/hash.h"

void hash_to_hex(const uint8_t *digest, size_t n, char *out)
{
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[digest[i] >> 4];
                out[2 * i + 1] = hex[digest[i] & 0xf];
        }
        out[2 * n] = '\0';
}

void hash_set_to_hex(const HashAlgoSet *set, const uint8_t *digest, char *out)
{
        *out = '\0';
        for (unsigned i = 0; i < set->n; i++) {
                size_t n = hash_algo_digest_size(set->algos[i]);

                if (i > 0)
                        *out++ = ',';
                hash_to_hex(digest, n, out);
                digest += n;
                out += 2 * n;
        }
}

bool hash_set_hex_valid(const HashAlgoSet *set, const char *hex)
{
        if (!set || set->n == 0 || !hex)
                return false;
        for (unsigned i = 0; i < set->n; i++) {
                size_t n = 2 * hash_algo_digest_size(set->algos[i]);

                if (n == 0 || strspn(hex, "0123456789abcdefABCDEF") != n)
                        return false;
                hex += n;
                if (*hex != (i + 1 < set->n ? ',' : '\0'))
                        return false;
                hex++;
        }
        return true;
}

static int unhex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int hash_from_hex(const char *hex, uint8_t *out, size_t n)
{
        if (!hex || !out || strnlen(hex, 2 * n + 1) != 2 * n)
                return -EINVAL;
        /* Validate everything first so a bad string leaves out untouched. */
        for (size_t i = 0; i < 2 * n; i++)
                if (unhex_digit(hex[i]) < 0)
                        return -EINVAL;
        /* Unsigned, as shifting a negative int is undefined: the digits were all checked above, but
         * the analyzer does not carry that from one loop to the next. */
        for (size_t i = 0; i < n; i++) {
                unsigned hi = (unsigned)unhex_digit(hex[2 * i]), lo = (unsigned)unhex_digit(hex[2 * i + 1]);
                out[i] = (uint8_t)(hi << 4 | lo);
        }
        return 0;
}

int hash_joined_from_hex(const char *hex, uint8_t *out, size_t out_size, uint32_t *lengths, size_t max)
{
        size_t n = 0, used = 0;

        if (!hex)
                return -EINVAL;
        for (const char *p = hex;; n++) {
                size_t l = strcspn(p, ",");

                if (l == 0 || l % 2 != 0 || n == max || l / 2 > out_size - used ||
                    strspn(p, "0123456789abcdefABCDEF") != l)
                        return -EINVAL;
                for (size_t i = 0; out && i < l / 2; i++)
                        out[used + i] = (uint8_t)((unsigned)unhex_digit(p[2 * i]) << 4 |
                                                  (unsigned)unhex_digit(p[2 * i + 1]));
                lengths[n] = (uint32_t)(l / 2);
                used += l / 2;
                if (p[l] == '\0')
                        return (int)(n + 1);
                p += l + 1;
        }
}

void hash_joined_to_hex(const uint8_t *digest, const uint32_t *lengths, size_t n, char *out)
{
        *out = '\0';
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        *out++ = ',';
                hash_to_hex(digest, lengths[i], out);
                digest += lengths[i];
                out += 2 * (size_t)lengths[i];
        }
}
