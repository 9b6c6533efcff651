/* SPDX-License-Identifier: MIT */
/* ioring-sync.c: the ring backend without io_uring: each operation runs when it is prepared */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/ioring-internal.h"
#include "basic/macro.h"

/* Completions of operations already run wait here until reaped, so the caller's state machine is
 * the same as with io_uring. */
typedef struct SyncPoll {
        int fd;
        unsigned events;
        uint64_t tag;
} SyncPoll;

typedef struct SyncRing {
        IoRing base;
        IoCompletion *done;
        unsigned n_done, n_done_alloc, done_head;
        /* Polls wait here, never in a blocking call: ioring_wait() checks them with poll(2), so a
         * silent pipe cannot block the thread as a read(2) of it would. */
        SyncPoll *polls;
        unsigned n_polls, n_polls_alloc;
        struct pollfd *pfds;
        unsigned n_pfds_alloc;
        uint64_t wake_buf;
} SyncRing;

#define SYNC(r) ((SyncRing *)(r))

static void sync_complete(IoRing *r, uint64_t tag, int res)
{
        SyncRing *s = SYNC(r);

        if (s->n_done == s->n_done_alloc) {
                unsigned n = s->n_done_alloc ? s->n_done_alloc * 2 : 256;
                IoCompletion *d = realloc(s->done, n * sizeof(*d));
                if (!d)
                        abort(); /* a few KiB; the engine cannot lose a completion */
                s->done = d;
                s->n_done_alloc = n;
        }
        s->done[s->n_done++] = (IoCompletion){ .tag = tag, .res = res };
        r->in_flight++;
}

static void sync_openat(IoRing *r, const char *path, int flags, uint64_t tag)
{
        sync_complete(r, tag, RET_NERRNO(openat(AT_FDCWD, path, flags)));
}

static void sync_openat2(IoRing *r, int dirfd, const char *path, const struct open_how *how, int personality,
                         uint64_t tag)
{
        if (personality != 0) {
                sync_complete(r, tag, -EOPNOTSUPP);
                return;
        }
        sync_complete(r, tag, RET_NERRNO((int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how))));
}

static int sync_register_personality(IoRing *r)
{
        return -EOPNOTSUPP;
}

static int sync_unregister_personality(IoRing *r, int id)
{
        return -EOPNOTSUPP;
}

static void sync_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                      uint64_t tag)
{
        ssize_t n;

        if (off >= 0) {
                struct iovec iov = { .iov_base = buf, .iov_len = len };
                n = preadv2(fd, &iov, 1, off, rw_flags);
        } else
                n = read(fd, buf, len);
        sync_complete(r, tag, n < 0 ? negative_errno() : (int)n);
}

static void sync_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag)
{
        sync_complete(r, tag, -posix_fadvise(fd, (off_t)off, (off_t)len, advice));
}

static void sync_close(IoRing *r, int fd, uint64_t tag)
{
        sync_complete(r, tag, RET_NERRNO(close(fd)));
}

static void sync_statx(IoRing *r, int fd, unsigned mask, struct statx *buf, uint64_t tag)
{
        sync_complete(r, tag, RET_NERRNO(statx(fd, "", AT_EMPTY_PATH, mask, buf)));
}

static void sync_poll(IoRing *r, int fd, unsigned events, uint64_t tag)
{
        SyncRing *s = SYNC(r);

        if (s->n_polls == s->n_polls_alloc) {
                unsigned n = s->n_polls_alloc ? s->n_polls_alloc * 2 : 16;
                SyncPoll *p = realloc(s->polls, n * sizeof(*p));
                if (!p)
                        abort(); /* as sync_complete(): a completion may not be lost */
                s->polls = p;
                s->n_polls_alloc = n;
        }
        s->polls[s->n_polls++] = (SyncPoll){ .fd = fd, .events = events, .tag = tag };
        r->in_flight++;
}

/* Only polls are ever in flight; the cancelled ones complete with -ECANCELED, the cancel itself
 * with 0, or -ENOENT when nothing matched (as io_uring answers). */
static void sync_cancel_matching(IoRing *r, bool by_fd, int fd, uint64_t target, uint64_t tag)
{
        SyncRing *s = SYNC(r);
        unsigned kept = 0;
        bool found = false;

        for (unsigned i = 0; i < s->n_polls; i++) {
                SyncPoll p = s->polls[i];
                if (by_fd ? p.fd == fd : p.tag == target) {
                        r->in_flight--;
                        sync_complete(r, p.tag, -ECANCELED);
                        found = true;
                } else
                        s->polls[kept++] = p;
        }
        s->n_polls = kept;
        sync_complete(r, tag, found ? 0 : -ENOENT);
}

static void sync_cancel_fd(IoRing *r, int fd, uint64_t tag)
{
        sync_cancel_matching(r, true, fd, 0, tag);
}

static void sync_cancel_tag(IoRing *r, uint64_t target, uint64_t tag)
{
        sync_cancel_matching(r, false, -EBADF, target, tag);
}

static int sync_enable_direct(IoRing *r, unsigned n)
{
        return -EOPNOTSUPP;
}

static int sync_register_buffer(IoRing *r, unsigned index, const struct iovec *iov)
{
        return -EOPNOTSUPP;
}

/* Unreachable: direct descriptors are never enabled on this backend. */
static void sync_open_read_close(IoRing *r, const char *path, int flags, unsigned file_index, void *buf, size_t len,
                                 int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read,
                                 uint64_t tag_close)
{
        abort();
}

static void sync_close_direct(IoRing *r, unsigned file_index, uint64_t tag)
{
        abort();
}

/* Checks the polls (and, when it may sleep, the wake eventfd) with one poll(2); the ones that fired
 * complete with their events. */
static int sync_submit(IoRing *r, uint64_t timeout_usec)
{
        SyncRing *s = SYNC(r);
        unsigned n = s->n_polls + 1, kept = 0;
        int timeout, k;

        if (s->done_head < s->n_done)
                timeout_usec = 0; /* completions wait to be reaped */
        if (s->n_polls == 0 && timeout_usec == 0)
                return 0;
        if (n > s->n_pfds_alloc) {
                struct pollfd *p = realloc(s->pfds, n * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                s->pfds = p;
                s->n_pfds_alloc = n;
        }
        for (unsigned i = 0; i < s->n_polls; i++)
                s->pfds[i] = (struct pollfd){ .fd = s->polls[i].fd, .events = (short)s->polls[i].events };
        s->pfds[s->n_polls] = (struct pollfd){ .fd = timeout_usec > 0 ? r->wake_fd : -1, .events = POLLIN };
        timeout = timeout_usec == UINT64_MAX ? -1 : (int)MIN(DIV_ROUND_UP(timeout_usec, 1000), (uint64_t)INT32_MAX);

        k = poll(s->pfds, n, timeout);
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        if (s->pfds[s->n_polls].revents & POLLIN)
                (void)!read(r->wake_fd, &s->wake_buf, sizeof(s->wake_buf));
        for (unsigned i = 0; i < s->n_polls; i++) {
                SyncPoll p = s->polls[i];
                if (s->pfds[i].revents != 0) {
                        r->in_flight--;
                        sync_complete(r, p.tag, (s->pfds[i].revents & POLLNVAL) ? -EBADF : s->pfds[i].revents);
                } else
                        s->polls[kept++] = p;
        }
        s->n_polls = kept;
        return 0;
}

static unsigned sync_reap(IoRing *r, IoCompletion *out, unsigned max)
{
        SyncRing *s = SYNC(r);
        unsigned n = 0;

        while (n < max && s->done_head < s->n_done)
                out[n++] = s->done[s->done_head++];
        if (s->done_head == s->n_done)
                s->done_head = s->n_done = 0;
        r->in_flight -= n;
        return n;
}

static void sync_free(IoRing *r)
{
        SyncRing *s = SYNC(r);

        free(s->done);
        free(s->polls);
        free(s->pfds);
        free(s);
}

static const IoRingOps sync_ops = IORING_OPS(sync, "pread");

int ioring_sync_new(int wake_fd, IoRing **ret)
{
        SyncRing *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->base = (IoRing){ .ops = &sync_ops, .mode = IO_MODE_PREAD, .wake_fd = wake_fd };
        *ret = &s->base;
        return 0;
}
