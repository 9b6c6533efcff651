/* SPDX-License-Identifier: MIT */
/* lineout.c: standard output in blocks of whole lines, never a line split between two writes */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/lineout.h"
#include "ctl/macro.h"

#define LINEOUT_STDIO_BUF ((size_t)64 * 1024)

static FILE *lineout_stream;

typedef struct LineOut {
        int fd;
        char delim;
        char *pending;      /* what stdio handed on and is not written yet */
        size_t n, alloc;
} LineOut;

static int write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t)k;
        }
        return 0;
}

/* Writes the whole lines of pending, at most PIPE_BUF bytes a write(2) (a longer line alone), and
 * keeps the unfinished one; with all, that one too. */
static int lineout_drain(LineOut *lo, bool all)
{
        size_t off = 0;
        int r = 0;

        if (lo->n == 0)
                return 0;
        while (r == 0 && off < lo->n) {
                const char *p = lo->pending + off;
                size_t left = lo->n - off, take = 0;
                const char *end;

                /* The last line end within PIPE_BUF bytes; else the end of the first line. */
                for (size_t i = 0; i < MIN(left, (size_t)PIPE_BUF); i++)
                        if (p[i] == lo->delim)
                                take = i + 1;
                if (take == 0) {
                        end = memchr(p, lo->delim, left);
                        if (end)
                                take = (size_t)(end - p) + 1;
                        else if (all)
                                take = left;
                        else
                                break;
                }
                r = write_all(lo->fd, p, take);
                off += take;
        }
        memmove(lo->pending, lo->pending + off, lo->n - off);
        lo->n -= off;
        return r;
}

static ssize_t lineout_write(void *cookie, const char *buf, size_t size)
{
        LineOut *lo = cookie;
        int r;

        if (lo->n + size > lo->alloc) {
                size_t na = MAX(lo->alloc * 2, lo->n + size);
                char *nb = realloc(lo->pending, na);

                if (!nb) {
                        errno = ENOMEM;
                        return -1;
                }
                lo->pending = nb;
                lo->alloc = na;
        }
        memcpy(lo->pending + lo->n, buf, size);
        lo->n += size;
        r = lineout_drain(lo, false);
        if (r < 0) {
                /* stdio sees the error (ferror(), the exit status): it is not written again. */
                lo->n = 0;
                errno = -r;
                return -1;
        }
        return (ssize_t)size;
}

static int lineout_close(void *cookie)
{
        LineOut *lo = cookie;
        int r = lineout_drain(lo, true);

        free(lo->pending);
        free(lo);
        if (r < 0) {
                errno = -r;
                return EOF;
        }
        return 0;
}

int lineout_install(char delim)
{
        LineOut *lo;
        FILE *f;

        if (isatty(STDOUT_FILENO))
                return 0;
        lo = calloc(1, sizeof(*lo));
        if (!lo)
                return -ENOMEM;
        *lo = (LineOut){ .fd = STDOUT_FILENO, .delim = delim };
        f = fopencookie(lo, "w", (cookie_io_functions_t){ .write = lineout_write, .close = lineout_close });
        if (!f) {
                free(lo);
                return -ENOMEM;
        }
        if (setvbuf(f, NULL, _IOFBF, LINEOUT_STDIO_BUF) != 0) {
                fclose(f);
                return -ENOMEM;
        }
        /* glibc lets a program assign stdout; what was printed before is flushed first. */
        (void)fflush(stdout);
        stdout = lineout_stream = f;
        return 0;
}

int lineout_finish(void)
{
        FILE *f = lineout_stream;
        int r = 0;

        if (!f)
                return 0;
        lineout_stream = NULL;
        if (ferror(f))
                r = -EIO;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        /* Anything printed after this (there should be nothing) goes straight to fd 1. */
        stdout = fdopen(STDOUT_FILENO, "w");
        return r;
}
