/* SPDX-License-Identifier: MIT */
/* ioring-internal.h: the ops table each ring backend (ioring-uring.c, ioring-sync.c) fills in */
#pragma once

#include "io/ioring.h"

/*
 * One table per backend, as fio's ioengines: ioring.c checks nothing and forwards every call. Each
 * backend embeds IoRing as its first member and casts back. A backend never fails to prepare an
 * operation: the io_uring one flushes a full submission queue, the synchronous one runs the call.
 */
typedef struct IoRingOps {
        const char *name;
        void (*openat)(IoRing *r, const char *path, int flags, uint64_t tag);
        void (*openat2)(IoRing *r, int dirfd, const char *path, const struct open_how *how, int personality,
                        uint64_t tag);
        int (*register_personality)(IoRing *r);
        int (*unregister_personality)(IoRing *r, int id);
        void (*read)(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                     uint64_t tag);
        void (*fadvise)(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag);
        void (*close)(IoRing *r, int fd, uint64_t tag);
        void (*statx)(IoRing *r, int fd, unsigned mask, struct statx *buf, uint64_t tag);
        void (*poll)(IoRing *r, int fd, unsigned events, uint64_t tag);
        void (*cancel_fd)(IoRing *r, int fd, uint64_t tag);
        void (*cancel_tag)(IoRing *r, uint64_t target, uint64_t tag);
        int (*enable_direct)(IoRing *r, unsigned n);
        int (*register_buffer)(IoRing *r, unsigned index, const struct iovec *iov);
        void (*open_read_close)(IoRing *r, const char *path, int flags, unsigned file_index, void *buf,
                                size_t len, int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read,
                                uint64_t tag_close);
        void (*close_direct)(IoRing *r, unsigned file_index, uint64_t tag);
        int (*submit)(IoRing *r, uint64_t timeout_usec);
        unsigned (*reap)(IoRing *r, IoCompletion *out, unsigned max);
        void (*free)(IoRing *r);
} IoRingOps;

/* A backend's ops table from its functions, all named prefix_<op> (sync_openat, uring_openat, ...). */
#define IORING_OPS(prefix, backend_name)                                                                   \
        {                                                                                                  \
                .name = (backend_name), .openat = prefix##_openat, .read = prefix##_read,                  \
                .openat2 = prefix##_openat2, .register_personality = prefix##_register_personality,        \
                .unregister_personality = prefix##_unregister_personality,                                 \
                .fadvise = prefix##_fadvise, .close = prefix##_close, .statx = prefix##_statx,             \
                .poll = prefix##_poll, .cancel_fd = prefix##_cancel_fd, .cancel_tag = prefix##_cancel_tag, \
                .enable_direct = prefix##_enable_direct, .register_buffer = prefix##_register_buffer,      \
                .open_read_close = prefix##_open_read_close,                                               \
                .close_direct = prefix##_close_direct, .submit = prefix##_submit, .reap = prefix##_reap,   \
                .free = prefix##_free,                                                                     \
        }

struct IoRing {
        const IoRingOps *ops;
        IoMode mode;
        int wake_fd;              /* eventfd other threads write to wake the owner */
        bool direct;              /* a sparse file table is registered (ioring_enable_direct()) */
        unsigned in_flight;       /* prepared or submitted, not reaped (internal operations excluded) */
        uint16_t ioprio;          /* every read's I/O priority (ioring_set_ioprio()); 0: the thread's */
};

/* io_uring in mode URING_REGISTERED or URING (AUTO tries registered first); -errno when the kernel
 * refuses the ring, or the registration that mode requires. */
int ioring_uring_new(IoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
                     IoRing **ret);
/* Synchronous system calls on the owning thread. */
int ioring_sync_new(int wake_fd, IoRing **ret);
