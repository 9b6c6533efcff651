/* SPDX-License-Identifier: MIT */
/* ioring.h: the I/O backend: io_uring (registered or plain buffers), or synchronous syscalls as fallback */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "engine.h"

/*
 * One IoRing belongs to one thread, the one that created it (the ring is SINGLE_ISSUER). Operations
 * are prepared with a 64-bit tag and complete later with that tag and a result (>= 0 or -errno),
 * like io_uring CQEs. The synchronous backend runs each operation when it is prepared and queues its
 * completion, so the caller's state machine is the same in every mode.
 */
typedef struct IoRing IoRing;

typedef struct IoCompletion {
        uint64_t tag;
        int res;
} IoCompletion;

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

/* Creates the backend for mode (AUTO tries registered, then plain io_uring, then pread), registering
 * bufs when the mode allows. wake_fd is an eventfd that other threads write to wake the owner.
 * entries bounds the operations in flight. */
int ioring_new(EngineIoMode mode, unsigned entries, const struct iovec *bufs, unsigned n_bufs, int wake_fd,
               IoRing **ret);
IoRing *ioring_free(IoRing *r);
EngineIoMode ioring_get_mode(IoRing *r);

/* Preparation never fails for lack of space: a full submission queue is flushed first. */
void ioring_openat(IoRing *r, const char *path, int flags, uint64_t tag);
/* off < 0 reads at the file position (streams). buf_index < 0: buffer not registered. */
void ioring_read(IoRing *r, int fd, void *buf, size_t len, int64_t off, int buf_index, int rw_flags,
                 uint64_t tag);
void ioring_fadvise(IoRing *r, int fd, uint64_t off, uint64_t len, int advice, uint64_t tag);
void ioring_close(IoRing *r, int fd, uint64_t tag);
/* Cancels every operation on fd (no-op for the synchronous backend: nothing is ever in flight). */
void ioring_cancel_fd(IoRing *r, int fd, uint64_t tag);
/* Cancels the operation with tag target. */
void ioring_cancel_tag(IoRing *r, uint64_t target, uint64_t tag);

/* Submits what is prepared; when wait is true and no completion is ready, sleeps until one is or
 * until the wake eventfd is written. Returns 0 or -errno. */
int ioring_submit(IoRing *r, bool wait);
/* Copies up to max completions out; returns how many. */
unsigned ioring_reap(IoRing *r, IoCompletion *out, unsigned max);
/* Operations prepared or in flight whose completion has not been reaped yet. */
unsigned ioring_in_flight(IoRing *r);
