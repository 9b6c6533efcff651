/* SPDX-License-Identifier: MIT */
/* fd-screen.h: what each fd a caller sends is, judged as the gate receives it, without asking its file system */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "engine/engine.h"
#include "io/fsinfo.h"

/*
 * Every fd that reaches fhashd comes through a gate (daemon/gate.h), which judges it here before
 * anything else holds it. Nothing here asks a file system: a cached statx (AT_STATX_DONT_SYNC, which
 * fails EACCES on a FUSE mount that does not let fhashd look), the mount table, fusectl, and fstatfs
 * only where the file system cannot be FUSE.
 *
 * Issue 13, H6: every close of an fd on FUSE asks its server (FLUSH) and waits, uninterruptibly, for
 * an answer that a user's server may never give, and any user may mount FUSE in a user namespace.
 * Such an fd is refused and must be closed by the closer (daemon/closing.h), never by fhashd itself:
 *   - an fd that a cached statx refuses: FUSE mounted by another user or in a user namespace;
 *   - a file or directory on FUSE that root did not mount (in this namespace, with user_id=0): root's
 *     FUSE is trusted to answer as root's NFS is, and root hashes its files through fds; a user's
 *     fd of it is refused later, by bus-args.c, and closed by fhashd;
 *   - a file or directory on a file system fhashd cannot tell without asking it (io/fsinfo.h);
 *   - a socket: nothing is hashed from one, and its close frees what its queue holds, which may be
 *     fds of the kinds above whose last reference then goes in our thread.
 * Pipes, devices and anonymous inodes are kept: their close waits on nothing of a user's.
 */

typedef enum FdRefusal {
        FD_REFUSAL_NONE,
        FD_REFUSAL_UNSEEN,   /* statx refused: FUSE that does not let fhashd look */
        FD_REFUSAL_FUSE,     /* on FUSE that root did not mount */
        FD_REFUSAL_UNKNOWN,  /* on a file system fhashd cannot tell */
        FD_REFUSAL_SOCKET,
        /* Set by the gate, not the screen: */
        FD_REFUSAL_BUDGET,   /* not taken in: the caller's uid holds too many fds in fhashd already */
        FD_REFUSAL_LOST,     /* the kernel could not give it to fhashd (its fd table was full) */
        _FD_REFUSAL_MAX,
} FdRefusal;

/* What the screen says of one fd. */
typedef struct FdVerdict {
        FdRefusal refusal;
        bool closer;         /* refused, and its close could wait: only the closer may close it */
        int flags;           /* F_GETFL: the access mode, O_PATH, O_DIRECT; -1 if unknown */
        FsStat st;           /* the cached statx, unless refusal is FD_REFUSAL_UNSEEN (or set by the gate) */
        struct statx stx;    /* the same statx, with ENGINE_FD_STATX_MASK: what the engine needs */
        FsClass fs_class;    /* a regular file's or directory's file system; FS_CLASS_LOCAL for the rest */
} FdVerdict;

/* Why an input's fd was refused, for its error message; NULL for FD_REFUSAL_NONE. */
const char *fd_refusal_to_string(FdRefusal r);

typedef struct FdScreen FdScreen;

int fd_screen_new(FdScreen **ret);
FdScreen *fd_screen_free(FdScreen *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(FdScreen *, fd_screen_free);

/* Reads the mount table again if the kernel says it changed: once before the fds of a message. */
void fd_screen_refresh(FdScreen *s);

/* Judges fd (a poll of nothing, a statx from the cache, an fcntl). Never blocks, never fails: what
 * it cannot tell is refused. */
void fd_screen_judge(FdScreen *s, int fd, FdVerdict *ret);

/* Tests: the file with this device and inode is refused as FD_REFUSAL_UNKNOWN (0, 0: none), to see
 * the screen at work without a FUSE server. */
void fd_screen_refuse_for_test(FdScreen *s, uint64_t dev, uint64_t ino);
