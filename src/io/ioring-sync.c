/* SPDX-License-Identifier: MIT */
/* ioring-sync.c: the ring backend without io_uring: each operation runs when it is prepared */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/ioring-internal.h"
#include "basic/macro.h"

/* Completions of operations already run wait here until reaped, so the caller's state machine is
 * the same as with io_uring. */
typedef struct SyncRing {
        IoRing base;
        IoCompletion *done;
        unsigned n_done, n_done_alloc, done_head;
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

/* Nothing is ever in flight: there is nothing to cancel. */
static void sync_cancel_fd(IoRing *r, int fd, uint64_t tag)
{
        sync_complete(r, tag, -ENOENT);
}

static void sync_cancel_tag(IoRing *r, uint64_t target, uint64_t tag)
{
        sync_complete(r, tag, -ENOENT);
}

static int sync_enable_direct(IoRing *r, unsigned n)
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

static int sync_submit(IoRing *r, bool wait)
{
        SyncRing *s = SYNC(r);
        struct pollfd pfd = { .fd = r->wake_fd, .events = POLLIN };

        if (!wait || s->done_head < s->n_done)
                return 0;
        /* Nothing ran and nothing will: sleep on the wake eventfd. */
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -errno;
        if (pfd.revents & POLLIN)
                (void)!read(r->wake_fd, &s->wake_buf, sizeof(s->wake_buf));
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
        free(s);
}

static const IoRingOps sync_ops = {
        .name = "pread",
        .openat = sync_openat,
        .read = sync_read,
        .fadvise = sync_fadvise,
        .close = sync_close,
        .cancel_fd = sync_cancel_fd,
        .cancel_tag = sync_cancel_tag,
        .enable_direct = sync_enable_direct,
        .open_read_close = sync_open_read_close,
        .close_direct = sync_close_direct,
        .submit = sync_submit,
        .reap = sync_reap,
        .free = sync_free,
};

int ioring_sync_new(int wake_fd, IoRing **ret)
{
        SyncRing *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->base = (IoRing){ .ops = &sync_ops, .mode = IO_MODE_PREAD, .wake_fd = wake_fd };
        *ret = &s->base;
        return 0;
}
