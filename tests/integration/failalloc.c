/* SPDX-License-Identifier: MIT */
/* failalloc.c: LD_PRELOAD shim that makes every allocation of $FAILALLOC_MIN bytes or more fail with
 * ENOMEM, so tests can put fhashd under real memory exhaustion for large requests while it keeps
 * running normally otherwise. Only for the reliability test; never linked into anything shipped. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

/* Visible on purpose: the project builds with -fvisibility=hidden, and a hidden malloc interposes
 * nothing. */
#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n);
EXPORT void *calloc(size_t n, size_t size);
EXPORT void *realloc(void *p, size_t n);

static size_t fail_min(void)
{
        static size_t v;

        /* getenv() does not allocate, so it is safe inside malloc. */
        if (v == 0) {
                const char *s = getenv("FAILALLOC_MIN");
                v = s ? (size_t)strtoull(s, NULL, 10) : SIZE_MAX;
                if (v == 0)
                        v = SIZE_MAX;
        }
        return v;
}

void *malloc(size_t n)
{
        if (n >= fail_min()) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
        if (size != 0 && (n > SIZE_MAX / size || n * size >= fail_min())) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
        if (n >= fail_min()) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_realloc(p, n);
}
