/* SPDX-License-Identifier: MIT */
/* algo.c: algorithms as fhashctl holds them: libfhash's names, sets of them, hex */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ctl/algo.h"
#include "ctl/macro.h"

const char *algo_from_string(const char *s)
{
        for (const char *const *a = fhash_algorithms(); s && *a; a++)
                if (streq(*a, s))
                        return *a;
        return NULL;
}

static char algo_list_buf[512];
static pthread_once_t algo_list_once = PTHREAD_ONCE_INIT;

static void algo_list_fill(void)
{
        size_t len = 0;

        for (const char *const *a = fhash_algorithms(); *a; a++) {
                int k = snprintf(algo_list_buf + len, sizeof(algo_list_buf) - len, "%s%s", len ? ", " : "", *a);

                if (k < 0 || (size_t)k >= sizeof(algo_list_buf) - len)
                        break;
                len += (size_t)k;
        }
}

const char *algo_list(void)
{
        (void)pthread_once(&algo_list_once, algo_list_fill);
        return algo_list_buf;
}

int algo_set_parse(const char *s, AlgoSet *ret)
{
        AlgoSet set = { 0 };

        if (!s || !ret)
                return -EINVAL;
        for (const char *p = s;;) {
                size_t n = strcspn(p, ",");
                const char *a = NULL;
                char name[32];

                if (n > 0 && n < sizeof(name)) {
                        memcpy(name, p, n);
                        name[n] = '\0';
                        a = algo_from_string(name);
                }
                if (!a)
                        return -EINVAL;
                for (unsigned i = 0; i < set.n; i++)
                        if (set.algos[i] == a)
                                return -ENOTUNIQ;
                if (set.n == ELEMENTSOF(set.algos))
                        return -E2BIG;
                set.algos[set.n++] = a;
                if (p[n] == '\0')
                        break;
                p += n + 1;
        }
        *ret = set;
        return 0;
}

const char *algo_set_format(const AlgoSet *set, char *buf, size_t n)
{
        size_t len = 0;

        if (!set || set->n == 0 || !buf)
                return NULL;
        for (unsigned i = 0; i < set->n; i++) {
                int k = snprintf(buf + len, n - len, "%s%s", i > 0 ? "," : "", set->algos[i]);

                if (!set->algos[i] || k < 0 || (size_t)k >= n - len)
                        return NULL;
                len += (size_t)k;
        }
        return buf;
}

bool algo_set_hex_valid(const AlgoSet *set, const char *hex)
{
        if (!set || set->n == 0 || !hex)
                return false;
        for (unsigned i = 0; i < set->n; i++) {
                size_t n = 2 * algo_digest_size(set->algos[i]);

                if (n == 0 || strspn(hex, "0123456789abcdefABCDEF") != n)
                        return false;
                hex += n;
                if (*hex != (i + 1 < set->n ? ',' : '\0'))
                        return false;
                hex++;
        }
        return true;
}

void hex_from_bytes(const uint8_t *bytes, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[bytes[i] >> 4];
                out[2 * i + 1] = digits[bytes[i] & 15];
        }
        out[2 * n] = '\0';
}

static int unhex(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int hex_to_bytes(const char *hex, uint8_t *out, size_t n)
{
        if (strlen(hex) != 2 * n)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t)(hi << 4 | lo);
        }
        return 0;
}
