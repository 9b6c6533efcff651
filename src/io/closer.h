/* SPDX-License-Identifier: MIT */
/* closer.h: fds whose close may never return, closed by processes that share our fd table */
#pragma once

#include "basic/macro.h"

/*
 * close() calls the file system's flush, on every close of every fd. FUSE sends FLUSH to its server
 * and waits for the answer without interruption, not even by SIGKILL: a server that never answers
 * holds the closing thread for ever, and a process with such a thread can never exit (its other
 * threads die, it does not). Any process that is handed such an fd and closes it is caught.
 *
 * A closer is a small process that shares this process's fd table (clone(CLONE_FILES) without
 * CLONE_THREAD), forked before the process grows. It is given fd numbers through a pipe and closes
 * each in a child of its own, which shares the table too: the close takes the fd out of the table
 * at once, and whatever wait follows is that child's. This process never waits, and exits when it
 * likes: a child still caught keeps the table alive (and with it whatever fds this process did not
 * close itself) until the server answers or dies.
 *
 * At most CLOSER_CHILDREN_MAX children at once; further fds wait in the pipe (and in our table).
 * The closer dies with the thread that made it (PR_SET_PDEATHSIG).
 */

typedef struct Closer Closer;

#define CLOSER_CHILDREN_MAX 64

/* Forks the closer. Call it from a thread that lives as long as the closer is used, early, while the
 * process is small (the fork copies its page tables, and any page pinned for DMA). */
int closer_new(Closer **ret);
/* Closes the pipe: the closer closes what it was given, then exits. Never waits. */
Closer *closer_free(Closer *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Closer *, closer_free);

/* Takes fd: the closer closes it. Never blocks. Should the pipe be full or the closer gone (killed),
 * fd stays open, and the closer is made again for the next one; returns -errno then. */
int closer_close(Closer *c, int fd);

/* The closer's pid (tests). */
int closer_pid(const Closer *c);
