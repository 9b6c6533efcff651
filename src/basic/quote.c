/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/quote.h"
#include "basic/utf8.h"

bool quote_is_escape(const unsigned char *p, bool utf8, size_t *ret_n)
{
        size_t n;

        if (*p < 0x20 || *p == 0x7f || (!utf8 && *p >= 0x80)) {
                *ret_n = 1;
                return true;
        }
        n = utf8_char_len(p);
        if (n == 0) {
                *ret_n = 1;
                return true;
        }
        *ret_n = n;
        /* C1 controls (U+0080..U+009F) are not printable either. */
        return n == 2 && p[0] == 0xc2 && p[1] < 0xa0;
}

static void quote_put_escape(FILE *f, unsigned char c)
{
        static const char letters[] = { [7] = 'a', [8] = 'b', [9] = 't', [10] = 'n',
                                        [11] = 'v', [12] = 'f', [13] = 'r' };

        if (c < sizeof(letters) && letters[c])
                fprintf(f, "\\%c", letters[c]);
        else
                fprintf(f, "\\%03o", (unsigned)c);
}

int quote_name(const char *name, bool utf8, char **ret)
{
        size_t len = strlen(name), buf_size = 0;
        bool need = len == 0, has_escape = false, has_squote = false, dq_unsafe = false;
        _cleanup_free_ char *buf = NULL;
        FILE *f;

        for (size_t i = 0, n; i < len; i += n) {
                const unsigned char *p = (const unsigned char *)name + i;

                if (quote_is_escape(p, utf8, &n)) {
                        has_escape = true;
                        continue;
                }
                if (n > 1)
                        continue;
                /* The characters gnulib's shell_escape quoting style treats as special. */
                if (strchr(" !\"$&'()*:;<=>?[\\^`|", *p) || ((*p == '#' || *p == '~') && i == 0) ||
                    ((*p == '{' || *p == '}') && len == 1))
                        need = true;
                if (*p == '\'')
                        has_squote = true;
                if (strchr("!\"$\\`", *p))
                        dq_unsafe = true;
        }

        if (!need && !has_escape) {
                char *s = strdup(name);
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }

        f = open_memstream(&buf, &buf_size);
        if (!f)
                return -ENOMEM;

        if (has_squote && !has_escape && !dq_unsafe)
                fprintf(f, "\"%s\"", name);
        else {
                /* Inside '...' everything is literal; an escape closes it and continues in $'...',
                 * which a later plain character closes again with '' before going on. */
                bool in_dollar = false;

                putc('\'', f);
                for (size_t i = 0, n; i < len; i += n) {
                        const unsigned char *p = (const unsigned char *)name + i;

                        if (quote_is_escape(p, utf8, &n)) {
                                if (!in_dollar)
                                        fputs("'$'", f);
                                in_dollar = true;
                                for (size_t k = 0; k < n; k++)
                                        quote_put_escape(f, p[k]);
                                continue;
                        }
                        if (*p == '\'') {
                                fputs("'\\''", f);
                                in_dollar = false;
                                continue;
                        }
                        if (in_dollar)
                                fputs("''", f);
                        in_dollar = false;
                        fwrite(p, 1, n, f);
                }
                putc('\'', f);
        }

        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}
