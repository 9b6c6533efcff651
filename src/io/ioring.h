/* SPDX-License-Identifier: MIT */
/* ioring.h: the ring: io_uring (registered or plain buffers), or synchronous syscalls as fallback */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <linux/openat2.h>

#include "basic/string-table.h"


/*
 * One IoRing belongs to one thread, the one that created it (the ring is SINGLE_ISSUER). Operations
 * are prepared with a 64-bit tag and complete later with that tag and a result (>= 0 or -errno),
 * like io_uring CQEs. The synchronous backend runs each operation when it is prepared and queues its
 * completion, so the caller's state machine is the same in every mode. Each backend is one file
 * behind one ops table (ioring-internal.h): ioring-uring.c, ioring-sync.c.
 */
typedef struct IoRing IoRing;

typedef enum IoMode {
        IO_MODE_AUTO,              /* io_uring with registered buffers, falling back step by step */
        IO_MODE_URING_REGISTERED,  /* require registered buffers (READ_FIXED) */
        IO_MODE_URING,             /* io_uring with plain READ into unregistered buffers */
        IO_MODE_PREAD,             /* no io_uring: openat/statx/pread on the owning thread */
        _IO_MODE_MAX,
        _IO_MODE_INVALID = -EINVAL,
} IoMode;

DECLARE_STRING_TABLE_LOOKUP(io_mode, IoMode);

typedef struct IoCompletion {
        uint64_t tag;
        int res;
} IoCompletion;

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

/* Creates the backend for mode (AUTO tries registered, then plain io_uring, then pread), registering
 * bufs when the mode allows. wake_fd is an eventfd that other threads write to wake the owner.
 * entries bounds the operations in flight. An entry of bufs with iov_base NULL and iov_len 0 is left
 * empty, for ioring_register_buffer() to fill when it is first needed. */
int ioring_new(IoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
               IoRing **ret);
/* Registers iov as buffer index, an entry ioring_new() left empty: registering pins (and first
 * faults in and zeroes) every page, which a buffer that is never read into need not cost. 0;
 * -EOPNOTSUPP when the ring's buffers are not registered (IO_MODE_URING, IO_MODE_PREAD); or the
 * kernel's errno (-ENOMEM over RLIMIT_MEMLOCK), after which the buffer is read unregistered. */
int ioring_register_buffer(IoRing *r, unsigned index, const struct iovec *iov);
IoRing *ioring_free(IoRing *r);
IoMode ioring_get_mode(IoRing *r);

/* The I/O priority (ioprio(2)'s encoding, e.g. basic/idle.h's IO_PRIO_IDLE) every read from now on
 * carries in its own request (io_uring's sqe->ioprio), whatever thread the kernel issues it from;
 * 0: the submitting thread's. The synchronous backend reads with its thread's, which the caller
 * sets (thread_make_idle()). */
void ioring_set_ioprio(IoRing *r, uint16_t ioprio);

/* Preparation never fails for lack of space: a full submission queue is flushed first. */
void ioring_openat(IoRing *r, const char *path, int flags, uint64_t tag);
/* openat2(dirfd, path, how) with the credentials of personality (0: the ring's owner's); how must
 * stay valid until the next submit. The synchronous backend has no personalities: -EOPNOTSUPP. */
void ioring_openat2(IoRing *r, int dirfd, const char *path, const struct open_how *how, int personality,
                    uint64_t tag);
/* Registers the calling thread's credentials as they are now as a personality of the ring (io_uring's
 * IORING_REGISTER_PERSONALITY): its id (> 0), or -errno (-EOPNOTSUPP without io_uring). */
int ioring_register_personality(IoRing *r);
int ioring_unregister_personality(IoRing *r, int id);
/* off < 0 reads at the file position (streams). buf_index < 0: buffer not registered. */
void ioring_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                 uint64_t tag);
void ioring_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag);
void ioring_close(IoRing *r, int fd, uint64_t tag);
/* statx(fd, "", AT_EMPTY_PATH, mask) into *buf, which must stay valid until the completion. io_uring
 * runs it in an io-wq thread: for files whose file system may hang, never for every file (the
 * hand-off costs more than a small file's whole read). */
void ioring_statx(IoRing *r, int fd, unsigned mask, struct statx *buf, uint64_t tag);
/* One-shot poll of fd for events (POLLIN); completes with the events that fired (>= 0) or -errno.
 * The synchronous backend checks its polls with poll(2) in ioring_wait(), never blocking in one. */
void ioring_poll(IoRing *r, int fd, unsigned events, uint64_t tag);
/* Cancels every operation on fd (no-op for the synchronous backend: nothing is ever in flight). */
void ioring_cancel_fd(IoRing *r, int fd, uint64_t tag);
/* Cancels the operation with tag target. */
void ioring_cancel_tag(IoRing *r, uint64_t target, uint64_t tag);

/*
 * Direct descriptors (io_uring's registered file table), for the linked open/read/close chain of small
 * files. ioring_enable_direct() registers n empty slots once, at start; it fails (-EOPNOTSUPP without
 * io_uring or without the opcodes, or the kernel's errno: -EMFILE when n exceeds RLIMIT_NOFILE, -EINVAL
 * before 5.19's sparse tables) and the engine then opens files the classic way.
 */
int ioring_enable_direct(IoRing *r, unsigned n);
bool ioring_has_direct(IoRing *r);
/*
 * One chain of three operations, each with its own completion: OPENAT of path into direct slot
 * file_index, then (IOSQE_IO_LINK: only if the open succeeded, else -ECANCELED) a read of up to len
 * bytes at offset 0 from that slot, then (IOSQE_IO_HARDLINK: also after a failed or short read, which
 * io_uring counts as a failure) CLOSE of the slot. The three SQEs always go to the kernel in one
 * submission: a chain split across two would be two chains.
 */
void ioring_open_read_close(IoRing *r, const char *path, int flags, unsigned file_index, void *buf, size_t len,
                            int buf_index, int rw_flags, uint64_t tag_open, uint64_t tag_read, uint64_t tag_close);
/* Closes direct slot file_index (when a chain's own close did not). */
void ioring_close_direct(IoRing *r, unsigned file_index, uint64_t tag);

/* Submits what is prepared; when wait is true and no completion is ready, sleeps until one is or
 * until the wake eventfd is written. Returns 0 or -errno. */
int ioring_submit(IoRing *r, bool wait);
/* The same, sleeping at most timeout_usec (0: no sleep, UINT64_MAX: none). */
int ioring_wait(IoRing *r, uint64_t timeout_usec);
/* Copies up to max completions out; returns how many. */
unsigned ioring_reap(IoRing *r, IoCompletion *out, unsigned max);
/* Operations prepared or in flight whose completion has not been reaped yet. */
unsigned ioring_in_flight(IoRing *r);
