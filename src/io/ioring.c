/* SPDX-License-Identifier: MIT */
/* ioring.c: picks a ring backend and forwards every call through its ops table */
#include <stdlib.h>

#include "io/ioring-internal.h"
#include "basic/macro.h"
#include "basic/string-table.h"

static const char *const io_mode_table[_IO_MODE_MAX] = {
        [IO_MODE_AUTO] = "auto",
        [IO_MODE_URING_REGISTERED] = "uring-registered",
        [IO_MODE_URING] = "uring",
        [IO_MODE_PREAD] = "pread",
};

DEFINE_STRING_TABLE_LOOKUP(io_mode, IoMode, io_mode_table, _IO_MODE_MAX, _IO_MODE_INVALID)

int ioring_new(IoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
               IoRing **ret)
{
        int k;

        if (mode < 0 || mode >= _IO_MODE_MAX || wake_fd < 0)
                return -EINVAL;
        if (mode != IO_MODE_PREAD) {
                k = ioring_uring_new(mode, entries, bufs, n_bufs, wake_fd, ret);
                /* io_uring_disabled, seccomp, or an old kernel: only AUTO may fall back. */
                if (k >= 0 || mode != IO_MODE_AUTO)
                        return k;
        }
        return ioring_sync_new(wake_fd, ret);
}

IoRing *ioring_free(IoRing *r)
{
        if (r)
                r->ops->free(r);
        return NULL;
}

IoMode ioring_get_mode(IoRing *r)
{
        return r->mode;
}

unsigned ioring_in_flight(IoRing *r)
{
        return r->in_flight;
}

void ioring_set_ioprio(IoRing *r, uint16_t ioprio)
{
        r->ioprio = ioprio;
}

bool ioring_has_direct(IoRing *r)
{
        return r->direct;
}

void ioring_openat(IoRing *r, const char *path, int flags, uint64_t tag)
{
        r->ops->openat(r, path, flags, tag);
}

void ioring_openat2(IoRing *r, int dirfd, const char *path, const struct open_how *how, int personality,
                    uint64_t tag)
{
        r->ops->openat2(r, dirfd, path, how, personality, tag);
}

int ioring_register_personality(IoRing *r)
{
        return r->ops->register_personality(r);
}

int ioring_unregister_personality(IoRing *r, int id)
{
        return r->ops->unregister_personality(r, id);
}

void ioring_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags, uint64_t tag)
{
        r->ops->read(r, fd, buf, len, off, buf_index, rw_flags, tag);
}

void ioring_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag)
{
        r->ops->fadvise(r, fd, off, len, advice, tag);
}

void ioring_close(IoRing *r, int fd, uint64_t tag)
{
        r->ops->close(r, fd, tag);
}

void ioring_statx(IoRing *r, int fd, unsigned mask, struct statx *buf, uint64_t tag)
{
        r->ops->statx(r, fd, mask, buf, tag);
}

void ioring_poll(IoRing *r, int fd, unsigned events, uint64_t tag)
{
        r->ops->poll(r, fd, events, tag);
}

void ioring_cancel_fd(IoRing *r, int fd, uint64_t tag)
{
        r->ops->cancel_fd(r, fd, tag);
}

void ioring_cancel_tag(IoRing *r, uint64_t target, uint64_t tag)
{
        r->ops->cancel_tag(r, target, tag);
}

int ioring_enable_direct(IoRing *r, unsigned n)
{
        if (n == 0)
                return -EOPNOTSUPP;
        return r->ops->enable_direct(r, n);
}

int ioring_register_buffer(IoRing *r, unsigned index, const struct iovec *iov)
{
        return r->ops->register_buffer(r, index, iov);
}

void ioring_open_read_close(IoRing *r, const char *path, int flags, unsigned file_index, void *buf, size_t len,
                            int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read, uint64_t tag_close)
{
        r->ops->open_read_close(r, path, flags, file_index, buf, len, buf_index, rw_flags, tag_open, tag_read,
                                tag_close);
}

void ioring_close_direct(IoRing *r, unsigned file_index, uint64_t tag)
{
        r->ops->close_direct(r, file_index, tag);
}

int ioring_submit(IoRing *r, bool wait)
{
        return r->ops->submit(r, wait ? UINT64_MAX : 0);
}

int ioring_wait(IoRing *r, uint64_t timeout_usec)
{
        return r->ops->submit(r, timeout_usec);
}

unsigned ioring_reap(IoRing *r, IoCompletion *out, unsigned max)
{
        return r->ops->reap(r, out, max);
}
