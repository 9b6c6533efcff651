/* SPDX-License-Identifier: MIT */
/* sum-coreutils-tool.c: cksum's algorithm table, and messages naming files as coreutils quotes them */
#include <langinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/quote.h"
#include "ctl/sum-coreutils-tool.h"

const CkAlgoInfo cu_algos[_CK_ALGO_MAX] = {
        [CK_BSD] = { "bsd", "BSD", 16, true, _HASH_ALGO_INVALID },
        [CK_SYSV] = { "sysv", "SYSV", 16, true, _HASH_ALGO_INVALID },
        [CK_CRC] = { "crc", "CRC", 32, true, _HASH_ALGO_INVALID },
        [CK_CRC32B] = { "crc32b", "CRC32B", 32, false, _HASH_ALGO_INVALID },
        [CK_MD5] = { "md5", "MD5", 128, true, HASH_MD5 },
        [CK_SHA1] = { "sha1", "SHA1", 160, true, HASH_SHA1 },
        [CK_SHA224] = { "sha224", "SHA224", 224, true, HASH_SHA224 },
        [CK_SHA256] = { "sha256", "SHA256", 256, true, HASH_SHA256 },
        [CK_SHA384] = { "sha384", "SHA384", 384, true, HASH_SHA384 },
        [CK_SHA512] = { "sha512", "SHA512", 512, true, HASH_SHA512 },
        [CK_SHA2] = { "sha2", "SHA2", 512, false, _HASH_ALGO_INVALID },
        [CK_SHA3] = { "sha3", "SHA3", 512, false, _HASH_ALGO_INVALID },
        [CK_BLAKE2B] = { "blake2b", "BLAKE2b", 512, true, HASH_BLAKE2B },
        [CK_SM3] = { "sm3", "SM3", 256, true, HASH_SM3 },
};

const char *cu_type_string(const Cu *cu)
{
        return cu->build == BUILD_BLAKE2 ? "BLAKE2b" : cu_algos[cu->algo].tag;
}

/* Whether LC_CTYPE is a UTF-8 one: quote() and quotef() depend on it. */
static bool locale_utf8(void)
{
        const char *cs = nl_langinfo(CODESET);
        return cs && (streq(cs, "UTF-8") || streq(cs, "utf8"));
}

int cu_quotef(const char *name, char **ret)
{
        return quote_name(name, locale_utf8(), ret);
}

void cu_add_quoted(Line *l, const char *name)
{
        _cleanup_free_ char *q = NULL;

        if (cu_quotef(name, &q) < 0)
                line_adds(l, name);
        else
                line_adds(l, q);
}

void cu_err(const Cu *cu, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        persona_err(cu->prog, "%s", k >= 0 ? s : fmt);
}

void cu_err_name(const Cu *cu, const char *name, int err)
{
        _cleanup_free_ char *q = NULL;

        if (cu_quotef(name, &q) < 0)
                persona_err(cu->prog, "%s: %s", name, strerror(err));
        else
                persona_err(cu->prog, "%s: %s", q, strerror(err));
}

char *cu_quote(const char *s)
{
        char *r;

        if (asprintf(&r, locale_utf8() ? "\xe2\x80\x98%s\xe2\x80\x99" : "'%s'", s) < 0)
                return NULL;
        return r;
}
