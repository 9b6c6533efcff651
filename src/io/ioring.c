/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/ioring.h"
#include "basic/macro.h"
#include "basic/string-table.h"

/* The tag of the internal read that keeps the wake eventfd armed; callers' tags are pointers with
 * low bits set, never this value. */
#define WAKE_TAG UINT64_C(0)

static const char *const io_mode_table[_IO_MODE_MAX] = {
        [IO_MODE_AUTO] = "auto",
        [IO_MODE_URING_REGISTERED] = "uring-registered",
        [IO_MODE_URING] = "uring",
        [IO_MODE_PREAD] = "pread",
};

DEFINE_STRING_TABLE_LOOKUP(io_mode, IoMode, io_mode_table, _IO_MODE_MAX,
                           _IO_MODE_INVALID)

static void io_uring_free_probep(struct io_uring_probe **p)
{
        if (*p)
                io_uring_free_probe(*p);
}

struct IoRing {
        IoMode mode;
        bool uring;
        struct io_uring ring;
        bool registered;
        bool direct;              /* a sparse file table is registered (ioring_enable_direct()) */
        int wake_fd;
        uint64_t wake_buf;
        unsigned in_flight;       /* prepared or submitted, not reaped (wake read excluded) */

        /* Synchronous backend: completions of operations already run. */
        IoCompletion *done;
        unsigned n_done, n_done_alloc, done_head;
};

static int uring_setup(IoRing *r, unsigned entries)
{
        struct io_uring_params p = {
                /* SINGLE_ISSUER: only this thread submits; DEFER_TASKRUN: completions run when we
                 * ask for them, never interrupting the loop. Both need 6.1; fall back on EINVAL. */
                .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE,
                .cq_entries = entries * 2,
        };
        int k;

        k = io_uring_queue_init_params(entries, &r->ring, &p);
        if (k == -EINVAL) {
                p = (struct io_uring_params){ .flags = IORING_SETUP_CQSIZE, .cq_entries = entries * 2 };
                k = io_uring_queue_init_params(entries, &r->ring, &p);
        }
        return k;
}

int ioring_new(IoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
               IoRing **ret)
{
        IoRing *r;
        int k;

        if (mode < 0 || mode >= _IO_MODE_MAX || wake_fd < 0)
                return -EINVAL;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->wake_fd = wake_fd;

        if (mode != IO_MODE_PREAD) {
                k = uring_setup(r, entries);
                if (k < 0) {
                        /* io_uring_disabled, seccomp, or an old kernel: only AUTO may fall back. */
                        if (mode != IO_MODE_AUTO) {
                                free(r);
                                return k;
                        }
                        mode = IO_MODE_PREAD;
                } else {
                        r->uring = true;
                        if (mode == IO_MODE_AUTO || mode == IO_MODE_URING_REGISTERED) {
                                /* Refused when the pool exceeds RLIMIT_MEMLOCK without CAP_IPC_LOCK
                                 * (-ENOMEM), among others: plain READ still works. */
                                k = io_uring_register_buffers(&r->ring, bufs, n_bufs);
                                if (k >= 0)
                                        r->registered = true;
                                else if (mode == IO_MODE_URING_REGISTERED) {
                                        io_uring_queue_exit(&r->ring);
                                        free(r);
                                        return k;
                                }
                        }
                        mode = r->registered ? IO_MODE_URING_REGISTERED : IO_MODE_URING;
                }
        }
        r->mode = mode;

        if (r->uring) {
                struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
                io_uring_prep_read(sqe, r->wake_fd, &r->wake_buf, sizeof(r->wake_buf), 0);
                io_uring_sqe_set_data64(sqe, WAKE_TAG);
        }

        *ret = r;
        return 0;
}

IoRing *ioring_free(IoRing *r)
{
        if (!r)
                return NULL;
        if (r->uring)
                io_uring_queue_exit(&r->ring);
        free(r->done);
        free(r);
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

static struct io_uring_sqe *get_sqe(IoRing *r)
{
        struct io_uring_sqe *sqe;

        /* The SQ ring is full: hand it to the kernel and retry. */
        while (!(sqe = io_uring_get_sqe(&r->ring)))
                (void)io_uring_submit(&r->ring);
        r->in_flight++;
        return sqe;
}

static void sync_complete(IoRing *r, uint64_t tag, int res)
{
        if (r->n_done == r->n_done_alloc) {
                unsigned n = r->n_done_alloc ? r->n_done_alloc * 2 : 256;
                IoCompletion *d = realloc(r->done, n * sizeof(*d));
                if (!d)
                        abort(); /* a few KiB; the engine cannot lose a completion */
                r->done = d;
                r->n_done_alloc = n;
        }
        r->done[r->n_done++] = (IoCompletion){ .tag = tag, .res = res };
        r->in_flight++;
}

void ioring_openat(IoRing *r, const char *path, int flags, uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                io_uring_prep_openat(sqe, AT_FDCWD, path, flags, 0);
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }
        sync_complete(r, tag, RET_NERRNO(openat(AT_FDCWD, path, flags)));
}

void ioring_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                 uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                if (buf_index >= 0 && r->registered)
                        io_uring_prep_read_fixed(sqe, fd, buf, (unsigned)len, (uint64_t)off, buf_index);
                else
                        io_uring_prep_read(sqe, fd, buf, (unsigned)len, (uint64_t)off);
                sqe->rw_flags = rw_flags;
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }

        ssize_t n;
        if (off >= 0) {
                struct iovec iov = { .iov_base = buf, .iov_len = len };
                n = preadv2(fd, &iov, 1, off, rw_flags);
        } else
                n = read(fd, buf, len);
        sync_complete(r, tag, n < 0 ? negative_errno() : (int)n);
}

void ioring_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                /* liburing 2.3 stores len in the 32-bit sqe->len: past 4 GiB say "to the end" (0). */
                io_uring_prep_fadvise(sqe, fd, off, len > UINT32_MAX ? 0 : (off_t)len, advice);
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }
        sync_complete(r, tag, -posix_fadvise(fd, (off_t)off, (off_t)len, advice));
}

void ioring_close(IoRing *r, int fd, uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                io_uring_prep_close(sqe, fd);
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }
        sync_complete(r, tag, RET_NERRNO(close(fd)));
}

int ioring_enable_direct(IoRing *r, unsigned n)
{
        _cleanup_(io_uring_free_probep) struct io_uring_probe *probe = NULL;
        static const int ops[] = { IORING_OP_OPENAT, IORING_OP_READ, IORING_OP_READ_FIXED, IORING_OP_CLOSE };
        int k;

        if (!r->uring || n == 0)
                return -EOPNOTSUPP;
        probe = io_uring_get_probe_ring(&r->ring);
        if (!probe)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (!io_uring_opcode_supported(probe, ops[i]))
                        return -EOPNOTSUPP;
        /* Sparse tables came in 5.19, after direct open/close (5.15): success implies both. */
        k = io_uring_register_files_sparse(&r->ring, n);
        if (k < 0)
                return k;
        r->direct = true;
        return 0;
}

bool ioring_has_direct(IoRing *r)
{
        return r->direct;
}

void ioring_open_read_close(IoRing *r, const char *path, int flags, unsigned file_index, void *buf, size_t len,
                            int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read, uint64_t tag_close)
{
        struct io_uring_sqe *sqe;

        assert(r->direct);
        /* Room for the whole chain, or the flush in get_sqe() would cut it in two. */
        while (io_uring_sq_space_left(&r->ring) < 3)
                (void)io_uring_submit(&r->ring);

        sqe = get_sqe(r);
        io_uring_prep_openat_direct(sqe, AT_FDCWD, path, flags, 0, file_index);
        sqe->flags |= IOSQE_IO_LINK;
        io_uring_sqe_set_data64(sqe, tag_open);

        sqe = get_sqe(r);
        if (buf_index >= 0 && r->registered)
                io_uring_prep_read_fixed(sqe, (int)file_index, buf, (unsigned)len, 0, buf_index);
        else
                io_uring_prep_read(sqe, (int)file_index, buf, (unsigned)len, 0);
        sqe->rw_flags = rw_flags;
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
        io_uring_sqe_set_data64(sqe, tag_read);

        sqe = get_sqe(r);
        io_uring_prep_close_direct(sqe, file_index);
        io_uring_sqe_set_data64(sqe, tag_close);
}

void ioring_close_direct(IoRing *r, unsigned file_index, uint64_t tag)
{
        struct io_uring_sqe *sqe;

        assert(r->direct);
        sqe = get_sqe(r);
        io_uring_prep_close_direct(sqe, file_index);
        io_uring_sqe_set_data64(sqe, tag);
}

void ioring_cancel_fd(IoRing *r, int fd, uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }
        sync_complete(r, tag, -ENOENT);
}

void ioring_cancel_tag(IoRing *r, uint64_t target, uint64_t tag)
{
        if (r->uring) {
                struct io_uring_sqe *sqe = get_sqe(r);
                io_uring_prep_cancel64(sqe, target, 0);
                io_uring_sqe_set_data64(sqe, tag);
                return;
        }
        sync_complete(r, tag, -ENOENT);
}

int ioring_submit(IoRing *r, bool wait)
{
        int k;

        if (!r->uring) {
                if (!wait || r->done_head < r->n_done)
                        return 0;
                /* Nothing ran and nothing will: sleep on the wake eventfd. */
                struct pollfd pfd = { .fd = r->wake_fd, .events = POLLIN };
                k = poll(&pfd, 1, -1);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (pfd.revents & POLLIN)
                        (void)!read(r->wake_fd, &r->wake_buf, sizeof(r->wake_buf));
                return 0;
        }

        if (wait && io_uring_cq_ready(&r->ring) == 0)
                k = io_uring_submit_and_wait(&r->ring, 1);
        else
                k = io_uring_submit_and_get_events(&r->ring);
        if (k < 0 && k != -EINTR && k != -EAGAIN && k != -EBUSY && k != -ETIME)
                return k;
        return 0;
}

unsigned ioring_reap(IoRing *r, IoCompletion *out, unsigned max)
{
        unsigned n = 0;

        if (!r->uring) {
                while (n < max && r->done_head < r->n_done)
                        out[n++] = r->done[r->done_head++];
                if (r->done_head == r->n_done)
                        r->done_head = r->n_done = 0;
                r->in_flight -= n;
                return n;
        }

        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        bool rearm = false;

        io_uring_for_each_cqe(&r->ring, head, cqe) {
                if (n == max)
                        break;
                seen++;
                if (cqe->user_data == WAKE_TAG) {
                        rearm = true;
                        continue;
                }
                out[n++] = (IoCompletion){ .tag = cqe->user_data, .res = cqe->res };
        }
        io_uring_cq_advance(&r->ring, seen);
        r->in_flight -= n;

        if (rearm) {
                struct io_uring_sqe *sqe;
                while (!(sqe = io_uring_get_sqe(&r->ring)))
                        (void)io_uring_submit(&r->ring);
                io_uring_prep_read(sqe, r->wake_fd, &r->wake_buf, sizeof(r->wake_buf), 0);
                io_uring_sqe_set_data64(sqe, WAKE_TAG);
        }
        return n;
}
