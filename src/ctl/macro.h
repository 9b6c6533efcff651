/* SPDX-License-Identifier: MIT */
/* macro.h: fhashctl's cleanup attributes, ownership transfer and small helpers */
#pragma once

/* fhashctl's verbs are a client of libfhash's public API and include nothing of the library's tree
 * (scripts/check-layers): these are the few of basic/macro.h's conventions they use, defined here
 * for them. Errors are -errno as everywhere in fhash (basic/macro.h says how). */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _public_ __attribute__((visibility("default")))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define streq(a, b) (strcmp((a), (b)) == 0)

/* Hand ownership of a pointer or fd to someone else: the local variable forgets it, so its cleanup
 * handler does nothing. */
#define TAKE_PTR(p)                                                                                        \
        ({                                                                                                 \
                __typeof__(p) _p_ = (p);                                                                   \
                (p) = NULL;                                                                                \
                _p_;                                                                                       \
        })
#define TAKE_FD(fd)                                                                                        \
        ({                                                                                                 \
                int _fd_ = (fd);                                                                           \
                (fd) = -EBADF;                                                                             \
                _fd_;                                                                                      \
        })

/* free() that returns NULL, to be assigned back: p = mfree(p). */
static inline void *mfree(void *p)
{
        free(p);
        return NULL;
}

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that keeps errno, ignores invalid fds and returns -EBADF to be assigned back. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                (void)close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd)
{
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Defines foo_freep() for use with _cleanup_(foo_freep), given foo_free(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                            \
        static inline void func##p(type *p)                                                                \
        {                                                                                                  \
                if (*p)                                                                                    \
                        *p = func(*p);                                                                     \
        }

/* CLOCK_MONOTONIC in microseconds, the clock of fhash_run_get_timeout(): progress rates, deadlines. */
static inline uint64_t ctl_now_usec(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A libc failure (-1 and errno) as -errno. */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}
