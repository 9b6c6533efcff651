/* SPDX-License-Identifier: MIT */
/* closer.c: fds whose close may never return, closed by processes that share our fd table */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/closer.h"

/* The closer's own stack, and each child's (a copy of the closer's memory, so one buffer serves
 * them all): they make a few system calls and nothing else. */
#define CLOSER_STACK_SIZE ((size_t)64 << 10)
#define CHILD_STACK_SIZE ((size_t)16 << 10)

/* A report with this bit set: the closer could not make a child for the slot; its fd is still open. */
#define REPORT_NOT_STARTED 0x80000000u

typedef struct CloserCommand {
        int32_t slot;
        int32_t fd;
} CloserCommand;

/* What the closer is given; read in its copy of our memory. */
typedef struct CloserArgs {
        int cmd_r, report_w, sigchld;
        pid_t parent;
} CloserArgs;

typedef struct CloserSlot {
        uint64_t tag;
        int fd;      /* the fd handed under this slot */
        bool used;
} CloserSlot;

struct Closer {
        /* All in the table we share with the closer. cmd_r, report_w and sigchld are the closer's to
         * close while it lives (closing one here could close it under the closer's read, or close a
         * number the table has given to another file since); they are ours again once it is gone. */
        int cmd_r, cmd_w;        /* commands, CloserCommand each */
        int report_r, report_w;  /* slots whose child exited (REPORT_NOT_STARTED: never started) */
        int sigchld;             /* a signalfd of SIGCHLD, read by the closer */
        int pidfd;               /* the closer's, or -EBADF */
        pid_t pid;
        CloserArgs args;
        void *stack;
        CloserSlot slots[CLOSER_CHILDREN_MAX];
        unsigned n_in_flight;
};

static _align_(64) uint8_t child_stack[CHILD_STACK_SIZE];

/* The clones' code runs on stacks the sanitizers' runtimes did not make, in copies of a process
 * whose other threads are gone: no instrumentation there. */
#define _clone_code_ __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))

static void *stack_start(void *base, size_t size)
{
#if defined(__hppa__)
        return base; /* the one architecture whose stack grows up */
#else
        return (uint8_t *)base + size;
#endif
}

/* In a child of the closer: the close, and whatever wait it brings. */
_clone_code_ static int child_main(void *arg)
{
        (void)syscall(SYS_close, (int)(intptr_t)arg);
        return 0;
}

_clone_code_ static void report(const CloserArgs *a, uint32_t v)
{
        while (syscall(SYS_write, a->report_w, &v, sizeof(v)) < 0 && errno == EINTR)
                ;
}

_clone_code_ static int closer_main(void *arg)
{
        const CloserArgs *a = arg;
        pid_t pids[CLOSER_CHILDREN_MAX] = {};
        sigset_t mask;

        /* Not on its own: with fhashd gone, the pipes' write ends (in the table it shares) would never
         * close, and it would hold the table, fhashd's sockets with it, for ever. */
        (void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
        if (syscall(SYS_getppid) != a->parent)
                return 0;
        /* SIGCHLD only through the signalfd, which our parent made for us. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        (void)sigprocmask(SIG_BLOCK, &mask, NULL);

        for (;;) {
                struct pollfd pfd[2] = { { .fd = a->cmd_r, .events = POLLIN }, { .fd = a->sigchld, .events = POLLIN } };
                long n = syscall(SYS_ppoll, pfd, 2, NULL, NULL, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                if (pfd[1].revents & POLLIN) {
                        struct signalfd_siginfo si[8];
                        long p;

                        while (syscall(SYS_read, a->sigchld, si, sizeof(si)) > 0)
                                ;
                        while ((p = syscall(SYS_wait4, -1, NULL, WNOHANG, NULL)) > 0)
                                for (uint32_t i = 0; i < CLOSER_CHILDREN_MAX; i++)
                                        if (pids[i] == p) {
                                                pids[i] = 0;
                                                report(a, i);
                                                break;
                                        }
                }
                if (pfd[0].revents & (POLLIN | POLLHUP)) {
                        CloserCommand cmd[CLOSER_CHILDREN_MAX];
                        long k = syscall(SYS_read, a->cmd_r, cmd, sizeof(cmd));

                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k <= 0)
                                break; /* closer_free(): every close it was given has started */
                        for (long i = 0; i < k / (long)sizeof(CloserCommand); i++) {
                                uint32_t slot = (uint32_t)cmd[i].slot;
                                pid_t p;

                                if (slot >= CLOSER_CHILDREN_MAX)
                                        continue;
                                p = clone(child_main, stack_start(child_stack, sizeof(child_stack)),
                                          CLONE_FILES | SIGCHLD, (void *)(intptr_t)cmd[i].fd);
                                if (p > 0)
                                        pids[slot] = p;
                                else
                                        report(a, slot | REPORT_NOT_STARTED);
                        }
                }
        }
        /* Ours to close, in the table we share: closing them closes them for our parent too. */
        (void)syscall(SYS_close, a->cmd_r);
        (void)syscall(SYS_close, a->report_w);
        (void)syscall(SYS_close, a->sigchld);
        return 0;
}

static int closer_spawn(Closer *c)
{
        pid_t p;

        c->args = (CloserArgs){ .cmd_r = c->cmd_r, .report_w = c->report_w, .sigchld = c->sigchld,
                                .parent = getpid() };
        p = clone(closer_main, stack_start(c->stack, CLOSER_STACK_SIZE), CLONE_FILES | SIGCHLD, &c->args);
        if (p < 0)
                return -errno;
        c->pid = p;
#ifdef SYS_pidfd_open
        c->pidfd = (int)syscall(SYS_pidfd_open, p, 0);
        if (c->pidfd < 0)
                c->pidfd = -EBADF;
#endif
        return 0;
}

int closer_new(Closer **ret)
{
        Closer *c;
        sigset_t mask;
        int p[2], r;

        /* A fail label rather than _cleanup_: the analyzers in scripts/lint do not follow cleanup
         * attributes here (see manager_new()). */
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->cmd_r = c->cmd_w = c->report_r = c->report_w = c->sigchld = c->pidfd = -EBADF;
        c->stack = aligned_alloc(64, CLOSER_STACK_SIZE);
        if (!c->stack) {
                r = -ENOMEM;
                goto fail;
        }
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
                r = -errno;
                goto fail;
        }
        c->cmd_r = p[0];
        c->cmd_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        c->report_r = p[0];
        c->report_w = p[1];
        if (fcntl(c->report_r, F_SETFL, O_NONBLOCK) < 0) {
                r = -errno;
                goto fail;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        c->sigchld = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (c->sigchld < 0) {
                r = -errno;
                goto fail;
        }
        for (unsigned i = 0; i < CLOSER_CHILDREN_MAX; i++)
                c->slots[i].fd = -EBADF;
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

int closer_get_report_fd(const Closer *c)
{
        return c->report_r;
}

int closer_get_pidfd(const Closer *c)
{
        return c->pidfd;
}

unsigned closer_in_flight(const Closer *c)
{
        return c->n_in_flight;
}

static bool closer_gone(Closer *c)
{
        return c->pid <= 0 || waitpid(c->pid, NULL, WNOHANG) == c->pid;
}

static void slot_end(Closer *c, uint32_t i, bool closed, CloserDone done, void *userdata)
{
        CloserSlot s = c->slots[i];

        if (!s.used)
                return;
        c->slots[i] = (CloserSlot){ .fd = -EBADF };
        c->n_in_flight--;
        if (done)
                done(s.tag, closed, closed ? -EBADF : s.fd, userdata);
}

/* The closer died (killed by hand, or by the OOM killer). Commands it never read give their fds
 * back; every other close counts as ended (one read and not started is lost with it: its fd stays
 * open, which is the worst a killed closer can cost). Then it is made again, on the same pipes. */
static int closer_recover(Closer *c, CloserDone done, void *userdata)
{
        CloserCommand cmd[CLOSER_CHILDREN_MAX];
        ssize_t k;
        int n = 0;

        c->pid = 0;
        c->pidfd = safe_close(c->pidfd);
        while ((k = read(c->cmd_r, cmd, sizeof(cmd))) > 0)
                for (ssize_t i = 0; i < k / (ssize_t)sizeof(CloserCommand); i++)
                        if ((uint32_t)cmd[i].slot < CLOSER_CHILDREN_MAX) {
                                slot_end(c, (uint32_t)cmd[i].slot, false, done, userdata);
                                n++;
                        }
        for (uint32_t i = 0; i < CLOSER_CHILDREN_MAX; i++)
                if (c->slots[i].used) {
                        slot_end(c, i, true, done, userdata);
                        n++;
                }
        /* Signals of its children went to it; a new signalfd's queue starts empty anyway. */
        return closer_spawn(c) < 0 ? -ECHILD : n;
}

int closer_dispatch(Closer *c, CloserDone done, void *userdata)
{
        uint32_t v[CLOSER_CHILDREN_MAX];
        ssize_t k;
        int n = 0, r;

        while ((k = read(c->report_r, v, sizeof(v))) > 0)
                for (ssize_t i = 0; i < k / (ssize_t)sizeof(uint32_t); i++) {
                        uint32_t slot = v[i] & ~REPORT_NOT_STARTED;

                        if (slot < CLOSER_CHILDREN_MAX) {
                                slot_end(c, slot, !(v[i] & REPORT_NOT_STARTED), done, userdata);
                                n++;
                        }
                }
        if (closer_gone(c)) {
                r = closer_recover(c, done, userdata);
                if (r < 0)
                        return r;
                n += r;
        }
        return n;
}

int closer_submit(Closer *c, int fd, uint64_t tag)
{
        CloserCommand cmd = { .fd = fd };
        uint32_t i;

        if (fd < 0)
                return -EBADF;
        if (c->n_in_flight >= CLOSER_CHILDREN_MAX)
                return -EBUSY;
        if (c->pid <= 0 && closer_spawn(c) < 0)
                return -ECHILD;
        for (i = 0; i < CLOSER_CHILDREN_MAX && c->slots[i].used; i++)
                ;
        cmd.slot = (int32_t)i;
        /* 8 bytes, under PIPE_BUF: whole or not at all. The pipe holds far more than
         * CLOSER_CHILDREN_MAX commands, so it is never full. */
        if (write(c->cmd_w, &cmd, sizeof(cmd)) != (ssize_t)sizeof(cmd))
                return errno == EAGAIN ? -EBUSY : -errno;
        c->slots[i] = (CloserSlot){ .tag = tag, .fd = fd, .used = true };
        c->n_in_flight++;
        return 0;
}

Closer *closer_free(Closer *c)
{
        if (!c)
                return NULL;
        /* The closer reads what is left, starts a child for each, sees the end of the pipe and exits,
         * closing its own ends. If it is gone already, those ends are ours. */
        if (c->pid > 0 && !closer_gone(c)) {
                c->cmd_w = safe_close(c->cmd_w);
        } else {
                c->cmd_w = safe_close(c->cmd_w);
                c->cmd_r = safe_close(c->cmd_r);
                c->report_w = safe_close(c->report_w);
                c->sigchld = safe_close(c->sigchld);
        }
        c->report_r = safe_close(c->report_r);
        c->pidfd = safe_close(c->pidfd);
        free(c->stack);
        return mfree(c);
}
