/* SPDX-License-Identifier: MIT */
/* fd-screen.h: fds whose close could wait for ever are taken from each received message at once */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "basic/macro.h"

/*
 * Issue 13, H6. Every close of an fd on FUSE asks its server (FLUSH) and waits, uninterruptibly,
 * for an answer that a user's server may never give; any user may mount FUSE in a user namespace
 * and put such an fd in a message to fhashd, with or without naming it in the call. sd-bus closes
 * the fds of every message it frees, on the event loop's thread, so the fd must not reach it.
 *
 * The screen sees the fds of each message as the kernel hands them to this process (recvmsg(), see
 * recvmsg-screen.c): an fd that could make close() wait on a file system some user runs is taken
 * out and given to a closer (io/closer.h), which closes it in a process of its own; in its place
 * the message carries a stand-in, a pipe's write end that says why. Taken out, never closed here:
 *   - an fd that a cached statx refuses: FUSE mounted by another user or in a user namespace,
 *     which does not let fhashd look (and whose close still asks the server);
 *   - a file or directory on FUSE that root did not mount (in this namespace, with user_id=0): root's
 *     FUSE is trusted to answer as root's NFS is, and root hashes its files through fds; a user's
 *     fd of it is refused by bus-args.c, and closed on the loop;
 *   - a file or directory on a file system fhashd cannot tell without asking it (io/fsinfo.h).
 * Pipes, sockets, devices and anonymous inodes pass: their close waits on nothing of a user's.
 */

typedef enum FdRefusal {
        FD_REFUSAL_UNSEEN,   /* statx refused: FUSE that does not let fhashd look */
        FD_REFUSAL_FUSE,
        FD_REFUSAL_UNKNOWN,
        _FD_REFUSAL_MAX,
} FdRefusal;

typedef struct FdScreen FdScreen;

/* Forks the closer: call it early, from the main thread (io/closer.h). */
int fd_screen_new(FdScreen **ret);
FdScreen *fd_screen_free(FdScreen *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(FdScreen *, fd_screen_free);

/* Makes s the screen of every recvmsg() of this process (NULL: none). */
void fd_screen_install(FdScreen *s);

/* Screens the fds in mh's SCM_RIGHTS, as recvmsg() on sock with flags (MSG_CMSG_CLOEXEC) just
 * received them, through the installed screen, if any. Never blocks. */
void fd_screen_received(int sock, struct msghdr *mh, int flags);

/* sock is read by sd-bus and written only by a peer gate, whose own reads were screened: the fds
 * it carries need no second look (each costs a statx, and a direct connection's 4 KiB files lost a
 * third of their rate to the second one). Known by its SO_COOKIE, which is never reused, so a
 * socket of the same number later is screened. Returns a token for fd_screen_forget_socket(); 0 if
 * there is no screen or no cookie (the socket is then screened as any other). */
uint64_t fd_screen_trust_socket(int sock);
void fd_screen_forget_socket(uint64_t token);

/* The reason, if fd is a stand-in of the installed screen; NULL otherwise. */
const char *fd_screen_refusal(int fd);

/* Tests: the file with this device and inode is refused as FD_REFUSAL_UNKNOWN (0, 0: none), to
 * see the screen at work without a FUSE server. */
void fd_screen_refuse_for_test(FdScreen *s, uint64_t dev, uint64_t ino);

/* How many fds the screen took out and gave to the closer. */
uint64_t fd_screen_taken(const FdScreen *s);
