/* SPDX-License-Identifier: MIT */
/* macro.h: cleanup attributes, ownership transfer and small helpers used everywhere */
#pragma once

/*
 * The error convention, for every function in fhash that returns int (as dbus-broker's and
 * systemd's):
 *
 *   < 0   a failure, as -errno (-ENOMEM, -EINVAL, ...). The caller forwards it unchanged or gives up;
 *         it never has to guess what went wrong from anything else. Convert libc's -1 + errno at the
 *         call site (RET_NERRNO(), negative_errno() below).
 *   0     success.
 *   > 0   success with a named outcome, documented next to the function that returns it: a count
 *         (engine_job_add_fd() returns the input's index), "the file did not exist" (config_load_file()
 *         returns 0 for that, 1 for a file read), or an expected refusal that is not a failure of
 *         the code, such as a quota that is reached (USER_E_QUOTA in daemon/user.h, the way
 *         dbus-broker's REPLY_E_QUOTA works). A caller turns an outcome into what its user sees (a
 *         D-Bus error name, an exit status).
 *
 * Output parameters (ret_...) come last and are written only on success. Library code never logs;
 * program code (main(), bus handlers, fhashctl's verbs) logs once, with the errno text:
 * `return log_error_errno(r, "Failed to ...: %m");`. A main()-level argument parser returns 1 to go
 * on, 0 to exit successfully (--help, --version) and < 0 on an error it has logged, as systemd's
 * parse_argv().
 */

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

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)

/* Doubly linked lists through the item's next and prev fields, head first (as systemd's list.h).
 * The _BY forms name the two fields, for an item that sits in more than one list. */
#define LIST_PREPEND_BY(next, prev, head, item)                                                            \
        do {                                                                                               \
                (item)->prev = NULL;                                                                       \
                (item)->next = (head);                                                                     \
                if (head)                                                                                  \
                        (head)->prev = (item);                                                             \
                (head) = (item);                                                                           \
        } while (0)
/* Unlinks item; an item that is not listed (no prev and not the head) leaves the list as it is. */
#define LIST_REMOVE_BY(next, prev, head, item)                                                             \
        do {                                                                                               \
                if ((item)->prev)                                                                          \
                        (item)->prev->next = (item)->next;                                                 \
                else if ((head) == (item))                                                                 \
                        (head) = (item)->next;                                                             \
                if ((item)->next)                                                                          \
                        (item)->next->prev = (item)->prev;                                                 \
                (item)->next = (item)->prev = NULL;                                                        \
        } while (0)
#define LIST_PREPEND(head, item) LIST_PREPEND_BY(next, prev, head, item)
#define LIST_REMOVE(head, item) LIST_REMOVE_BY(next, prev, head, item)

/* Singly linked queues: append at the tail, pop the head (NULL when empty). */
#define QUEUE_APPEND_BY(next, head, tail, item)                                                            \
        do {                                                                                               \
                (item)->next = NULL;                                                                       \
                if (tail)                                                                                  \
                        (tail)->next = (item);                                                             \
                else                                                                                       \
                        (head) = (item);                                                                   \
                (tail) = (item);                                                                           \
        } while (0)
#define QUEUE_POP_BY(next, head, tail)                                                                     \
        ({                                                                                                 \
                __typeof__(head) _q_ = (head);                                                             \
                if (_q_) {                                                                                 \
                        (head) = _q_->next;                                                                \
                        if (!(head))                                                                       \
                                (tail) = NULL;                                                             \
                        _q_->next = NULL;                                                                  \
                }                                                                                          \
                _q_;                                                                                       \
        })

/* Doubly linked lists with a tail as well: items are appended, and the tail follows a removal. */
#define LIST_APPEND_BY(next, prev, head, tail, item)                                                       \
        do {                                                                                               \
                (item)->prev = (tail);                                                                     \
                QUEUE_APPEND_BY(next, head, tail, item);                                                   \
        } while (0)
#define LIST_REMOVE_TAIL_BY(next, prev, head, tail, item)                                                  \
        do {                                                                                               \
                if ((tail) == (item))                                                                      \
                        (tail) = (item)->prev;                                                             \
                LIST_REMOVE_BY(next, prev, head, item);                                                    \
        } while (0)

/* The struct of type that holds member at ptr. */
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

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
