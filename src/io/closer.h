/* SPDX-License-Identifier: MIT */
/* closer.h: fds whose close may never return, closed by processes that share our fd table */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"

/*
 * close() calls the file system's flush, on every close of every fd. FUSE sends FLUSH to its server
 * and waits for the answer without interruption, not even by SIGKILL: a server that never answers
 * holds the closing thread for ever, and a process with such a thread can never exit (its other
 * threads die, it does not). Any process that is handed such an fd and closes it is caught.
 *
 * A closer is a small process that shares this process's fd table (clone(CLONE_FILES) without
 * CLONE_VM or CLONE_THREAD), made early, while the process is small. It is given fd numbers through a
 * pipe and closes each in a child of its own, which shares the table too: the close takes the fd
 * out of the table at once, and whatever wait follows is that child's. When a child has exited its
 * close is reported back through a second pipe, so that the caller knows how many closes are still
 * waiting, and whose.
 *
 * The closer knows nothing of budgets: at most CLOSER_CHILDREN_MAX closes are in flight at once
 * (closer_submit() says -EBUSY past that), and the caller decides whose fd goes next and what to do
 * with fds that cannot go yet (daemon/closing.h). This process never waits on a close, and exits
 * when it likes: a child still caught keeps the table alive until its server answers or dies.
 *
 * The clones use glibc's clone(), which knows each architecture's argument order (s390 passes the
 * stack first) and return conventions, with a small stack of their own and no CLONE_VM: each runs in
 * a copy of its parent, and only makes system calls (no fork handlers ran, so nothing of libc that
 * locks or allocates may be used there). The closer dies with the thread that made it
 * (PR_SET_PDEATHSIG).
 */

typedef struct Closer Closer;

#define CLOSER_CHILDREN_MAX 64u

/* Makes the closer. Call it early, from a thread that lives as long as the closer is used (the
 * closer dies with it), while the process is small: the clone copies its page tables, and any page
 * pinned for DMA. */
int closer_new(Closer **ret);
/* Tells the closer to exit once it has started every close it was given; never waits. Fds submitted
 * and not started yet are closed by the closer's last children. */
Closer *closer_free(Closer *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Closer *, closer_free);

/* The fds to watch for closer_dispatch() (readable): the reports of closes that ended, and the
 * closer's pidfd (its death), or -EBADF where the kernel has no pidfd_open() (closer_dispatch() then
 * notices a death when it is next called). */
int closer_get_report_fd(const Closer *c);
int closer_get_pidfd(const Closer *c);

/* How many closes are in flight (submitted and not reported yet). */
unsigned closer_in_flight(const Closer *c);

/* Takes fd: the closer closes it, in a child of its own, and closer_dispatch() reports tag when that
 * child has exited. -EBUSY when CLOSER_CHILDREN_MAX closes are in flight, -errno if the closer could
 * not be told (it is made again on the next call); fd stays the caller's on any failure. Never
 * blocks. */
int closer_submit(Closer *c, int fd, uint64_t tag);

/* closed: the fd of tag is out of our table (its close may still be waiting, in a child that exited
 * or was orphaned with the closer); !closed: it was never closed (the closer could not make a child,
 * or died first) and fd is the caller's again, to submit again. */
typedef void (*CloserDone)(uint64_t tag, bool closed, int fd, void *userdata);

/* Reports every close that ended since the last call, and makes the closer again if it died (closes
 * it had started count as ended; those it had not are given back). Returns how many were reported,
 * or -errno. */
int closer_dispatch(Closer *c, CloserDone done, void *userdata);

/* The closer's pid (tests). */
int closer_pid(const Closer *c);
