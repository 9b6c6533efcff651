/* SPDX-License-Identifier: MIT */
/* names.c: file names as the tools that print them write them (fhash.h): a diagnostic's quoting, a
 * JSON string, what a terminal may act on */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "basic/quote.h"
#include "basic/utf8.h"
#include "fhash/fhash.h"

/* A JSON string of any bytes: UTF-8 as it is, bytes that are not as lone surrogates (\udcXX, as
 * Python's surrogateescape reads them back), the escapes JSON requires. */
static int json_string(FILE *f, const char *s)
{
        if (putc('"', f) == EOF)
                return -EIO;
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n = utf8_char_len(p);
                int r;

                if (n == 0) {
                        r = fprintf(f, "\\udc%02x", (unsigned)*p);
                        n = 1;
                } else if (*p == '"' || *p == '\\')
                        r = fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        r = fputs("\\n", f);
                else if (*p == '\r')
                        r = fputs("\\r", f);
                else if (*p == '\t')
                        r = fputs("\\t", f);
                else if (*p < 0x20)
                        r = fprintf(f, "\\u%04x", (unsigned)*p);
                else
                        r = fwrite(p, 1, n, f) == n ? 0 : EOF;
                if (r < 0)
                        return -EIO;
                p += n;
        }
        return putc('"', f) == EOF ? -EIO : 0;
}

_public_ int fhash_name_format(const char *name, fhash_name_style style, char **ret)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (!name || !ret)
                return -EINVAL;
        switch (style) {
        case FHASH_NAME_QUOTE:
                return quote_name(name, true, ret);
        case FHASH_NAME_JSON:
                f = open_memstream(&buf, &size);
                if (!f)
                        return -ENOMEM;
                r = json_string(f, name);
                if (fclose(f) != 0 && r >= 0)
                        r = -ENOMEM;
                if (r < 0) {
                        free(buf);
                        return r;
                }
                *ret = buf;
                return 0;
        default:
                return -EINVAL;
        }
}

_public_ int fhash_name_char(const char *p, size_t *ret_len)
{
        size_t n = 0;
        bool control;

        if (!p || !*p) {
                if (ret_len)
                        *ret_len = 0;
                return 0;
        }
        control = quote_is_escape((const unsigned char *)p, true, &n);
        if (ret_len)
                *ret_len = n;
        return control;
}
