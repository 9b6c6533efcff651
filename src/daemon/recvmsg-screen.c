/* SPDX-License-Identifier: MIT */
/* recvmsg-screen.c: fhashd's recvmsg(), which screens the fds it receives (daemon/fd-screen.h) */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/fd-screen.h"

/*
 * Linked into fhashd's executable only (and the screen's test), never into libfhash: a definition
 * in the executable comes first in the dynamic linker's search, so libsystemd's calls to recvmsg()
 * (sd-bus reading the bus and each direct connection) come here as well as fhashd's own (the peer
 * gate); _public_, since the build hides symbols by default. An fd received anywhere in fhashd is screened before any code of ours or sd-bus's holds
 * it: sd-bus closes the fds of every message it frees, on the event loop's thread, and a FUSE fd's
 * close may never return (fd-screen.h). test-fd-screen checks that sd-bus's reads come here.
 *
 * sd-bus 252 reads a socket with recvmsg() only (readv() where the fd is not a socket, which carries
 * no fds); were a later one to use recvmmsg() or io_uring, that test and hostile H6 fail.
 */
_public_ ssize_t recvmsg(int fd, struct msghdr *mh, int flags)
{
        ssize_t n = (ssize_t)syscall(SYS_recvmsg, fd, mh, flags);

        if (n >= 0)
                fd_screen_received(fd, mh, flags);
        return n;
}
