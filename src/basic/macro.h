/* SPDX-License-Identifier: MIT */
/* macro.h: cleanup attributes, ownership transfer and small helpers used everywhere */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _public_ __attribute__((visibility("default")))
#define _align_(n) __attribute__((aligned(n)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))
#define ALIGN_TO(x, a) (((x) + (a) - 1) & ~((a) - 1))

#define CACHELINE 64

/* A spin-wait hint: lets the sibling hyperthread run and saves power while polling a queue. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}

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

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)

/* Doubly linked lists through the item's next and prev fields, head first (as systemd's list.h). */
#define LIST_PREPEND(head, item)                                                                           \
        do {                                                                                               \
                (item)->prev = NULL;                                                                       \
                (item)->next = (head);                                                                     \
                if (head)                                                                                  \
                        (head)->prev = (item);                                                             \
                (head) = (item);                                                                           \
        } while (0)
/* Unlinks item; an item that is not listed (no prev and not the head) leaves the list as it is. */
#define LIST_REMOVE(head, item)                                                                            \
        do {                                                                                               \
                if ((item)->prev)                                                                          \
                        (item)->prev->next = (item)->next;                                                 \
                else if ((head) == (item))                                                                 \
                        (head) = (item)->next;                                                             \
                if ((item)->next)                                                                          \
                        (item)->next->prev = (item)->prev;                                                 \
                (item)->next = (item)->prev = NULL;                                                        \
        } while (0)

/* Convert a libc return value (-1 and errno) into -errno. */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}
#define RET_NERRNO(expr)                                                                                   \
        ({                                                                                                 \
                __typeof__(expr) _r_ = (expr);                                                             \
                _r_ < 0 ? negative_errno() : (int)_r_;                                                     \
        })
