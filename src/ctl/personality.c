/* SPDX-License-Identifier: MIT */
/* personality.c: which tool fhashctl is, and the output every tool shares */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/exit-status.h"
#include "ctl/personality.h"
#include "ctl/sum-b3.h"
#include "ctl/sum-coreutils.h"
#include "ctl/sum-xxh.h"

static const Persona personas[] = {
        { "md5sum", cu_main, CU_MD5SUM },       { "sha1sum", cu_main, CU_SHA1SUM },
        { "sha224sum", cu_main, CU_SHA224SUM }, { "sha256sum", cu_main, CU_SHA256SUM },
        { "sha384sum", cu_main, CU_SHA384SUM }, { "sha512sum", cu_main, CU_SHA512SUM },
        { "b2sum", cu_main, CU_B2SUM },         { "cksum", cu_main, CU_CKSUM },
        { "sum", cu_main, CU_SUM },             { "b3sum", b3_main, 0 },
        { "xxhsum", xxh_main, XXH_SUM },        { "xxh32sum", xxh_main, XXH_32SUM },
        { "xxh64sum", xxh_main, XXH_64SUM },    { "xxh128sum", xxh_main, XXH_128SUM },
        { "xxh3sum", xxh_main, XXH_3SUM },
};

const Persona *persona_find(const char *name)
{
        for (size_t i = 0; name && i < ELEMENTSOF(personas); i++)
                if (streq(personas[i].name, name))
                        return &personas[i];
        return NULL;
}

static const char *base_name(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

int persona_dispatch(int argc, char *argv[])
{
        const Persona *p;
        const char *as = NULL;
        int shift = 0;

        if (argc < 1 || !argv[0])
                return -ENOENT;
        p = persona_find(base_name(argv[0]));
        if (p)
                return p->main(p, argc, argv);

        /* Only as the first argument: anywhere else "--as" belongs to the verb or is a file. */
        if (argc >= 2 && streq(argv[1], "--as")) {
                if (argc < 3) {
                        fprintf(stderr, "fhashctl: option '--as' requires an argument\n"
                                        "Try 'fhashctl --help' for more information.\n");
                        return CTL_EXIT_USAGE;
                }
                as = argv[2];
                shift = 2;
        } else if (argc >= 2 && strncmp(argv[1], "--as=", 5) == 0) {
                as = argv[1] + 5;
                shift = 1;
        }
        if (!as)
                return -ENOENT;
        p = persona_find(as);
        if (!p) {
                fprintf(stderr, "fhashctl: --as: '%s' is not a tool fhashctl can be (", as);
                for (size_t i = 0; i < ELEMENTSOF(personas); i++)
                        fprintf(stderr, "%s%s", i > 0 ? ", " : "", personas[i].name);
                fprintf(stderr, ")\nTry 'fhashctl --help' for more information.\n");
                return CTL_EXIT_USAGE;
        }
        /* The tool sees itself as argv[0], as through a link of its name. */
        argv[shift] = (char *)p->name;
        return p->main(p, argc - shift, argv + shift);
}

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
