/* SPDX-License-Identifier: MIT */
/* ioring-uring.c: the io_uring ring backend (registered or plain buffers) */
#include <assert.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>

#include "io/ioring-internal.h"
#include "basic/macro.h"

/* The tag of the internal read that keeps the wake eventfd armed; callers' tags are pointers with
 * low bits set, never this value. */
#define WAKE_TAG UINT64_C(0)

typedef struct UringRing {
        IoRing base;
        struct io_uring ring;
        bool registered;
        uint64_t wake_buf;
} UringRing;

#define URING(r) ((UringRing *)(r))

static void io_uring_free_probep(struct io_uring_probe **p)
{
        if (*p)
                io_uring_free_probe(*p);
}

static struct io_uring_sqe *get_sqe(IoRing *r)
{
        struct io_uring *ring = &URING(r)->ring;
        struct io_uring_sqe *sqe;

        /* The SQ ring is full: hand it to the kernel and retry. */
        while (!(sqe = io_uring_get_sqe(ring)))
                (void)io_uring_submit(ring);
        r->in_flight++;
        return sqe;
}

static void uring_openat(IoRing *r, const char *path, int flags, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_openat(sqe, AT_FDCWD, path, flags, 0);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_openat2(IoRing *r, int dirfd, const char *path, const struct open_how *how, int personality,
                          uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_openat2(sqe, dirfd, path, (struct open_how *)how);
        sqe->personality = (__u16)personality;
        io_uring_sqe_set_data64(sqe, tag);
}

static int uring_register_personality(IoRing *r)
{
        return io_uring_register_personality(&URING(r)->ring);
}

static int uring_unregister_personality(IoRing *r, int id)
{
        return io_uring_unregister_personality(&URING(r)->ring, id);
}

static void uring_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                       uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        if (buf_index >= 0 && URING(r)->registered)
                io_uring_prep_read_fixed(sqe, fd, buf, (unsigned)len, (uint64_t)off, buf_index);
        else
                io_uring_prep_read(sqe, fd, buf, (unsigned)len, (uint64_t)off);
        sqe->rw_flags = rw_flags;
        sqe->ioprio = r->ioprio;
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        /* liburing 2.3 stores len in the 32-bit sqe->len: past 4 GiB say "to the end" (0). */
        io_uring_prep_fadvise(sqe, fd, off, len > UINT32_MAX ? 0 : (off_t)len, advice);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_close(IoRing *r, int fd, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_close(sqe, fd);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_statx(IoRing *r, int fd, unsigned mask, struct statx *buf, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_statx(sqe, fd, "", AT_EMPTY_PATH, mask, buf);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_poll(IoRing *r, int fd, unsigned events, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_poll_add(sqe, fd, events);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_cancel_fd(IoRing *r, int fd, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, tag);
}

static void uring_cancel_tag(IoRing *r, uint64_t target, uint64_t tag)
{
        struct io_uring_sqe *sqe = get_sqe(r);

        io_uring_prep_cancel64(sqe, target, 0);
        io_uring_sqe_set_data64(sqe, tag);
}

static int uring_enable_direct(IoRing *r, unsigned n)
{
        _cleanup_(io_uring_free_probep) struct io_uring_probe *probe = NULL;
        static const int ops[] = { IORING_OP_OPENAT, IORING_OP_READ, IORING_OP_READ_FIXED, IORING_OP_CLOSE };
        int k;

        probe = io_uring_get_probe_ring(&URING(r)->ring);
        if (!probe)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (!io_uring_opcode_supported(probe, ops[i]))
                        return -EOPNOTSUPP;
        /* Sparse tables came in 5.19, after direct open/close (5.15): success implies both. */
        k = io_uring_register_files_sparse(&URING(r)->ring, n);
        if (k < 0)
                return k;
        r->direct = true;
        return 0;
}

static int uring_register_buffer(IoRing *r, unsigned index, const struct iovec *iov)
{
        int k;

        if (!URING(r)->registered)
                return -EOPNOTSUPP;
        /* An update of one entry of the table ioring_new() registered (5.13+, as empty entries). */
        k = io_uring_register_buffers_update_tag(&URING(r)->ring, index, iov, &(__u64){ 0 }, 1);
        return k < 0 ? k : 0;
}

static void uring_open_read_close(IoRing *r, const char *path, int flags, unsigned file_index, void *buf,
                                  size_t len, int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read,
                                  uint64_t tag_close)
{
        struct io_uring *ring = &URING(r)->ring;
        struct io_uring_sqe *sqe;

        assert(r->direct);
        /* Room for the whole chain, or the flush in get_sqe() would cut it in two. */
        while (io_uring_sq_space_left(ring) < 3)
                (void)io_uring_submit(ring);

        sqe = get_sqe(r);
        io_uring_prep_openat_direct(sqe, AT_FDCWD, path, flags, 0, file_index);
        sqe->flags |= IOSQE_IO_LINK;
        io_uring_sqe_set_data64(sqe, tag_open);

        sqe = get_sqe(r);
        if (buf_index >= 0 && URING(r)->registered)
                io_uring_prep_read_fixed(sqe, (int)file_index, buf, (unsigned)len, 0, buf_index);
        else
                io_uring_prep_read(sqe, (int)file_index, buf, (unsigned)len, 0);
        sqe->rw_flags = rw_flags;
        sqe->ioprio = r->ioprio;
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
        io_uring_sqe_set_data64(sqe, tag_read);

        sqe = get_sqe(r);
        io_uring_prep_close_direct(sqe, file_index);
        io_uring_sqe_set_data64(sqe, tag_close);
}

static void uring_close_direct(IoRing *r, unsigned file_index, uint64_t tag)
{
        struct io_uring_sqe *sqe;

        assert(r->direct);
        sqe = get_sqe(r);
        io_uring_prep_close_direct(sqe, file_index);
        io_uring_sqe_set_data64(sqe, tag);
}

static int uring_submit(IoRing *r, uint64_t timeout_usec)
{
        struct io_uring *ring = &URING(r)->ring;
        struct io_uring_cqe *cqe;
        int k;

        if (timeout_usec == 0 || io_uring_cq_ready(ring) > 0)
                k = io_uring_submit_and_get_events(ring);
        else if (timeout_usec == UINT64_MAX)
                k = io_uring_submit_and_wait(ring, 1);
        else {
                /* With IORING_FEAT_EXT_ARG (5.11) the timeout is an argument, not an SQE whose
                 * completion would show up among ours; uring_reap() skips one all the same. */
                struct __kernel_timespec ts = { .tv_sec = (long long)(timeout_usec / 1000000),
                                                .tv_nsec = (long long)(timeout_usec % 1000000) * 1000 };
                k = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
        }
        if (k < 0 && k != -EINTR && k != -EAGAIN && k != -EBUSY && k != -ETIME)
                return k;
        return 0;
}

static void arm_wake(UringRing *u)
{
        struct io_uring_sqe *sqe;

        while (!(sqe = io_uring_get_sqe(&u->ring)))
                (void)io_uring_submit(&u->ring);
        io_uring_prep_read(sqe, u->base.wake_fd, &u->wake_buf, sizeof(u->wake_buf), 0);
        io_uring_sqe_set_data64(sqe, WAKE_TAG);
}

/* Batched: every ready CQE is looked at through io_uring_for_each_cqe and retired with one
 * io_uring_cq_advance, as liburing's examples/kdigest.c does. */
static unsigned uring_reap(IoRing *r, IoCompletion *out, unsigned max)
{
        UringRing *u = URING(r);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0, n = 0;
        bool rearm = false;

        io_uring_for_each_cqe(&u->ring, head, cqe) {
                if (n == max)
                        break;
                seen++;
                if (cqe->user_data == WAKE_TAG) {
                        rearm = true;
                        continue;
                }
                if (cqe->user_data == LIBURING_UDATA_TIMEOUT)
                        continue; /* liburing's own wait timeout, on kernels without EXT_ARG */
                out[n++] = (IoCompletion){ .tag = cqe->user_data, .res = cqe->res };
        }
        io_uring_cq_advance(&u->ring, seen);
        r->in_flight -= n;

        if (rearm)
                arm_wake(u);
        return n;
}

static void uring_free(IoRing *r)
{
        io_uring_queue_exit(&URING(r)->ring);
        free(URING(r));
}

static const IoRingOps uring_ops = IORING_OPS(uring, "io_uring");

static int uring_setup(struct io_uring *ring, unsigned entries)
{
        struct io_uring_params p = {
                /* SINGLE_ISSUER: only this thread submits; DEFER_TASKRUN: completions run when we
                 * ask for them, never interrupting the loop. Both need 6.1; fall back on EINVAL. */
                .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE,
                .cq_entries = entries * 2,
        };
        int k;

        k = io_uring_queue_init_params(entries, ring, &p);
        if (k == -EINVAL) {
                p = (struct io_uring_params){ .flags = IORING_SETUP_CQSIZE, .cq_entries = entries * 2 };
                k = io_uring_queue_init_params(entries, ring, &p);
        }
        return k;
}

int ioring_uring_new(IoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
                     IoRing **ret)
{
        UringRing *u;
        int k;

        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        k = uring_setup(&u->ring, entries);
        if (k < 0) {
                free(u);
                return k;
        }
        if (mode == IO_MODE_AUTO || mode == IO_MODE_URING_REGISTERED) {
                /* Refused when the pool exceeds RLIMIT_MEMLOCK without CAP_IPC_LOCK (-ENOMEM), among
                 * others: plain READ still works. */
                k = n_bufs > 0 ? io_uring_register_buffers(&u->ring, bufs, n_bufs) : -EINVAL;
                if (k >= 0)
                        u->registered = true;
                else if (mode == IO_MODE_URING_REGISTERED) {
                        io_uring_queue_exit(&u->ring);
                        free(u);
                        return k;
                }
        }
        u->base = (IoRing){ .ops = &uring_ops, .mode = u->registered ? IO_MODE_URING_REGISTERED : IO_MODE_URING,
                            .wake_fd = wake_fd };
        arm_wake(u);
        *ret = &u->base;
        return 0;
}
