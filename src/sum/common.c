/* SPDX-License-Identifier: MIT */
/* common.c: what fhashctl's tool personalities share: the compat mode, whole lines, messages */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sum/common.h"

PersonaCompat persona_compat(void)
{
        static int compat = -1;

        if (compat < 0) {
                const char *e = getenv("FHASH_COMPAT");
                compat = e && streq(e, "debian12") ? COMPAT_DEBIAN12 : COMPAT_NEWEST;
        }
        return (PersonaCompat)compat;
}

static bool line_reserve(Line *l, size_t more)
{
        size_t want, na;
        char *nb;

        if (l->oom)
                return false;
        want = l->n + more + 1;
        if (want <= l->alloc)
                return true;
        na = MAX(want, MAX(l->alloc * 2, (size_t)256));
        nb = realloc(l->buf, na);
        if (!nb) {
                l->oom = true;
                return false;
        }
        l->buf = nb;
        l->alloc = na;
        return true;
}

void line_add(Line *l, const void *s, size_t n)
{
        if (!line_reserve(l, n))
                return;
        memcpy(l->buf + l->n, s, n);
        l->n += n;
        l->buf[l->n] = '\0';
}

void line_adds(Line *l, const char *s)
{
        line_add(l, s, strlen(s));
}

void line_addc(Line *l, char c)
{
        line_add(l, &c, 1);
}

void line_addf(Line *l, const char *fmt, ...)
{
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (k < 0 || !line_reserve(l, (size_t)k))
                return;
        va_start(ap, fmt);
        (void)vsnprintf(l->buf + l->n, (size_t)k + 1, fmt, ap);
        va_end(ap);
        l->n += (size_t)k;
}

void line_add_hex(Line *l, const uint8_t *d, size_t n)
{
        static const char hex[] = "0123456789abcdef";

        if (!line_reserve(l, 2 * n))
                return;
        for (size_t i = 0; i < n; i++) {
                l->buf[l->n++] = hex[d[i] >> 4];
                l->buf[l->n++] = hex[d[i] & 0xf];
        }
        l->buf[l->n] = '\0';
}

void line_add_escaped(Line *l, const char *name, bool escape)
{
        if (!escape) {
                line_adds(l, name);
                return;
        }
        for (const char *p = name; *p; p++)
                if (*p == '\n')
                        line_adds(l, "\\n");
                else if (*p == '\r')
                        line_adds(l, "\\r");
                else if (*p == '\\')
                        line_adds(l, "\\\\");
                else
                        line_addc(l, *p);
}

int line_write(Line *l, int fd)
{
        size_t done = 0;
        int r = 0;

        if (l->oom)
                r = -ENOMEM;
        while (r == 0 && done < l->n) {
                ssize_t k = write(fd, l->buf + done, l->n - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        r = negative_errno();
                else
                        done += (size_t)k;
        }
        l->n = 0;
        l->oom = false;
        if (l->buf)
                l->buf[0] = '\0';
        return r;
}

void line_free(Line *l)
{
        free(l->buf);
        *l = (Line){};
}

static int out_error;

int persona_out(Line *l)
{
        int r = line_write(l, STDOUT_FILENO);

        if (r < 0 && out_error == 0)
                out_error = r;
        return r;
}

int persona_finish(const char *prog, int status)
{
        /* --help and --version go through stdio: a full disk fails there, as close_stdout() sees. */
        if (out_error == 0 && (fflush(stdout) != 0 || ferror(stdout)))
                out_error = -(errno ? errno : EIO);
        if (out_error == 0)
                return status;
        persona_err(prog, "write error: %s", strerror(-out_error));
        return 1;
}

bool persona_filename_unescape(char *s, size_t len)
{
        char *dst = s;

        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\0')
                        return false;
                if (s[i] != '\\') {
                        *dst++ = s[i];
                        continue;
                }
                if (i == len - 1)
                        return false;
                i++;
                if (s[i] == 'n')
                        *dst++ = '\n';
                else if (s[i] == 'r')
                        *dst++ = '\r';
                else if (s[i] == '\\')
                        *dst++ = '\\';
                else
                        return false;
        }
        if (dst < s + len)
                *dst = '\0';
        return true;
}

void persona_err(const char *prog, const char *fmt, ...)
{
        Line l = {};
        va_list ap;
        int k;

        line_adds(&l, prog);
        line_adds(&l, ": ");
        va_start(ap, fmt);
        k = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (k >= 0 && line_reserve(&l, (size_t)k)) {
                va_start(ap, fmt);
                (void)vsnprintf(l.buf + l.n, (size_t)k + 1, fmt, ap);
                va_end(ap);
                l.n += (size_t)k;
        }
        line_addc(&l, '\n');
        (void)line_write(&l, STDERR_FILENO);
        line_free(&l);
}
