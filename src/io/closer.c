/* SPDX-License-Identifier: MIT */
/* closer.c: fds whose close may never return, closed by processes that share our fd table */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/closer.h"

/* The pipe holds this many fd numbers (root may raise it past pipe-max-size). */
#define CLOSER_PIPE_BYTES ((int)(1 << 20))

struct Closer {
        int pipe_r, pipe_w; /* fd numbers to close; both in the table we share with the closer */
        pid_t pid;          /* the closer */
        int *queued;        /* not yet in the pipe: it was full, or the closer was gone */
        size_t n_queued, n_alloc;
};

/*
 * The closer and its children run in a copy of this process made by a raw clone: no fork handlers
 * ran, so nothing of libc that locks or allocates may be used there, only system calls.
 */
static pid_t clone_sharing_files(void)
{
        return (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_FILES | SIGCHLD), 0UL, 0UL, 0UL, 0UL);
}

static _noreturn_ void closer_child(int fd)
{
        (void)syscall(SYS_close, fd);
        syscall(SYS_exit, 0);
        __builtin_unreachable();
}

static _noreturn_ void closer_main(int pipe_r, pid_t parent)
{
        unsigned children = 0;

        /* Not on its own: with fhashd gone, the pipe's write end (in the table it shares) would never
         * close, and it would hold the table, fhashd's sockets with it, for ever. */
        (void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
        if (syscall(SYS_getppid) != parent)
                syscall(SYS_exit, 0);
        for (;;) {
                struct pollfd pfd = { .fd = pipe_r, .events = POLLIN };
                int fds[256];
                long n;

                /* Children that are done are reaped within a second, not left as zombies until the
                 * next fd comes. */
                while (children > 0 && syscall(SYS_wait4, -1, NULL, WNOHANG, NULL) > 0)
                        children--;
                /* ppoll, not poll: the only one every architecture has. */
                if (children > 0 && syscall(SYS_ppoll, &pfd, 1, &(struct timespec){ .tv_sec = 1 }, NULL, 0) == 0)
                        continue;
                n = syscall(SYS_read, pipe_r, fds, sizeof(fds));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* closer_free(): all that was given is in children's hands */
                for (long i = 0; i < n / (long)sizeof(int); i++) {
                        pid_t p;

                        while (children > 0 && syscall(SYS_wait4, -1, NULL, WNOHANG, NULL) > 0)
                                children--;
                        if (children >= CLOSER_CHILDREN_MAX && syscall(SYS_wait4, -1, NULL, 0, NULL) > 0)
                                children--;
                        p = clone_sharing_files();
                        if (p == 0)
                                closer_child(fds[i]);
                        if (p > 0)
                                children++;
                        else
                                (void)syscall(SYS_close, fds[i]); /* no child: this one waits instead */
                }
        }
        /* The read end is ours to close: in the table we share, closing it closes it for both. */
        (void)syscall(SYS_close, pipe_r);
        syscall(SYS_exit, 0);
        __builtin_unreachable();
}

static int closer_spawn(Closer *c)
{
        pid_t parent = getpid(), p;

        p = clone_sharing_files();
        if (p < 0)
                return -errno;
        if (p == 0)
                closer_main(c->pipe_r, parent);
        c->pid = p;
        return 0;
}

int closer_new(Closer **ret)
{
        Closer *c;
        int p[2], r;

        /* A fail label rather than _cleanup_: the analyzers in scripts/lint do not follow cleanup
         * attributes here (see manager_new()). */
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->pipe_r = c->pipe_w = -EBADF;
        if (pipe2(p, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        c->pipe_r = p[0];
        c->pipe_w = p[1];
        (void)fcntl(c->pipe_w, F_SETPIPE_SZ, CLOSER_PIPE_BYTES);
        if (fcntl(c->pipe_w, F_SETFL, O_NONBLOCK) < 0) {
                r = -errno;
                goto fail;
        }
        r = closer_spawn(c);
        if (r < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        closer_free(c);
        return r;
}

int closer_pid(const Closer *c)
{
        return c->pid;
}

/* Writes what is queued; -EAGAIN if some is left. */
static int closer_flush(Closer *c)
{
        size_t done = 0;
        int r = 0;

        /* A closer that died (killed by hand, or the OOM killer) is made again. */
        if (c->pid > 0 && waitpid(c->pid, NULL, WNOHANG) == c->pid) {
                c->pid = 0;
                r = closer_spawn(c);
                if (r < 0)
                        return r;
        }
        while (done < c->n_queued) {
                /* At most PIPE_BUF bytes: such a write is whole or fails, never part of an int. */
                size_t n = MIN(c->n_queued - done, (size_t)PIPE_BUF / sizeof(int));
                ssize_t k = write(c->pipe_w, c->queued + done, n * sizeof(int));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                done += (size_t)k / sizeof(int);
        }
        memmove(c->queued, c->queued + done, (c->n_queued - done) * sizeof(int));
        c->n_queued -= done;
        return c->n_queued > 0 ? (r < 0 ? r : -EAGAIN) : 0;
}

int closer_close(Closer *c, int fd)
{
        if (fd < 0)
                return 0;
        if (c->n_queued == c->n_alloc) {
                size_t a = MAX((size_t)16, 2 * c->n_alloc);
                int *q = reallocarray(c->queued, a, sizeof(int));

                if (!q)
                        return -ENOMEM; /* fd stays open */
                c->queued = q;
                c->n_alloc = a;
        }
        c->queued[c->n_queued++] = fd;
        return closer_flush(c);
}

Closer *closer_free(Closer *c)
{
        if (!c)
                return NULL;
        /* Whatever the pipe holds is closed by the closer, which then sees the end and exits. What
         * the pipe could not take yet gets a last try; what still cannot go stays open: closing it
         * here is what the closer is for. */
        if (c->n_queued > 0)
                (void)closer_flush(c);
        c->pipe_w = safe_close(c->pipe_w);
        /* The read end is the closer's now (one table: closing it here would close it under the
         * closer's read); without a closer, it is ours. */
        if (c->pid <= 0 || waitpid(c->pid, NULL, WNOHANG) == c->pid)
                c->pipe_r = safe_close(c->pipe_r);
        free(c->queued);
        return mfree(c);
}
