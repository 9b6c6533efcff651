/* SPDX-License-Identifier: MIT */
/* io-thread.c: the I/O thread's loop: control, opens, reads, one submission and a batch of
 * completions per turn, sleeping in the ring when there is nothing to do */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "basic/time-util.h"

static void handle_completion(Engine *e, const IoCompletion *c)
{
        unsigned op = TAG_OP(c->tag);

        if (op == OP_CLOSE_ANON)
                return; /* nobody waits for it (see close_anon()) */
        if (op == OP_READ) {
                Buffer *b = TAG_PTR(c->tag);
                b->file->progress_usec = e->now;
                read_completion(e, b, c->res);
                return;
        }

        FileSlot *f = TAG_PTR(c->tag);
        f->ops--;
        f->progress_usec = e->now;

        switch (op) {
        case OP_OPEN:
                open_done(e, f, c->res);
                break;
        case OP_LINK_OPEN:
                linked_opened(f, c->res);
                break;
        case OP_LINK_CLOSE:
                linked_closed(f, c->res);
                break;
        case OP_FADVISE:
        case OP_CANCEL:
                break; /* advice and cancellation are best effort */
        case OP_CLOSE:
                close_done(e);
                break;
        case OP_STATX:
                statx_done(e, f, c->res);
                break;
        case OP_POLL:
                poll_done(e, f, c->res);
                break;
        default:
                abort();
        }
        file_op_done(e, f);
}

/* How often files are checked for stalls: a quarter of the timeout, within [10 ms, 1 s]. */
static uint64_t stall_interval(const Engine *e)
{
        return MIN(MAX(e->stall_timeout / 4, (uint64_t)10000), (uint64_t)1000000);
}

/* Files with an operation in flight that has not come back for the stall timeout end (file_stall());
 * stalled ones whose worker has let go since are detached. Waiting for a buffer or for the worker
 * is not a stall: only files with operations in flight are looked at. */
static void check_stalls(Engine *e)
{
        e->next_stall_check = e->now + stall_interval(e);
        if (e->stall_timeout == UINT64_MAX)
                return;
        for (FileSlot *f = e->open_head, *next; f; f = next) {
                next = f->next;
                if (f->stalled)
                        file_try_detach(e, f);
                else if (f->ops > 0 && e->now - f->progress_usec >= e->stall_timeout)
                        file_stall(e, f);
        }
}

static bool drain_returns(Engine *e)
{
        bool any = false;
        ReturnItem it;

        for (unsigned i = 0; i < e->n_workers; i++)
                while (spsc_queue_pop(&e->workers[i].out, &it)) {
                        if (it.buf && it.buf->piece)
                                piece_returned(e, it.buf);
                        else if (it.buf)
                                buffer_put(e, it.buf);
                        else
                                slot_free(e, it.slot);
                        any = true;
                }
        return any;
}

static bool returns_pending(Engine *e)
{
        for (unsigned i = 0; i < e->n_workers; i++)
                if (!spsc_queue_empty(&e->workers[i].out))
                        return true;
        return false;
}


static bool io_idle(Engine *e)
{
        return !e->open_head && !e->wait_head && ioring_in_flight(e->ring) == 0;
}

/* Shutting down: every file is cancelled. Wait for everything to come back, but not forever for
 * zombies (stalled files whose operation the kernel does not end): their memory goes with the
 * engine, and the ring's teardown ends what is left. */
static bool io_may_exit(Engine *e, uint64_t *deadline)
{
        if (e->open_head || e->wait_head)
                return false;
        if (*deadline == 0)
                *deadline = e->now + 1000000;
        if (e->n_zombies > 0 && e->now >= *deadline)
                return true;
        if (!io_idle(e) || e->pool.n_free != e->n_buffers || e->pool.n_small_free != e->n_small)
                return false;
        for (unsigned i = 0; i < e->n_slots; i++)
                if (e->slots[i].state != FILE_FREE)
                        return false;
        return true;
}

static int io_setup(Engine *e)
{
        struct iovec *iov;
        unsigned entries, n_iov;
        size_t request = e->config.direct_request ? e->config.direct_request : ENGINE_DIRECT_REQUEST;
        int one, k;

        /* The pool is registered as one buffer when the kernel allows it: a READ_FIXED may then
         * target any range of it, so one read can fill several adjacent slots. Larger pools are
         * registered slot by slot, and read one slot per request. */
        one = pool_iovecs(&e->pool, &iov, &n_iov);
        if (one < 0)
                return one;

        /* Per open file at most 3 non-read operations at once (open+statx, statx+close, cancel), 5 with
         * linked chains (open, read and close, two cancels), plus one read per buffer, plus the wake
         * read: the CQ (2x) can never overflow. */
        entries = 1;
        while (entries < e->max_open * (e->config.open_mode == ENGINE_OPEN_LINKED ? 5 : 3) + e->n_buffers + 8)
                entries <<= 1;
        k = ioring_new(e->config.io_mode, MIN(entries, 4096u), iov, n_iov, e->wake_fd, &e->ring);
        free(iov);
        if (k < 0)
                return k;
        e->io_mode = ioring_get_mode(e->ring);
        /* One direct slot per file slot, probed once here. Refused without io_uring, before 5.19, or
         * when max_open exceeds RLIMIT_NOFILE: then every path is opened the classic way. */
        if (e->config.open_mode == ENGINE_OPEN_LINKED)
                e->linked = ioring_enable_direct(e->ring, e->n_slots) >= 0;
        for (unsigned i = 0; one && i < e->n_buffers + e->n_small; i++)
                e->bufs[i].index = 0;

        /* Slots per O_DIRECT read: see direct_setup(). Unregistered and pread reads take any
         * address, so only a pool registered slot by slot keeps one slot per read. */
        e->max_span = 1;
        if (one || e->io_mode != IO_MODE_URING_REGISTERED)
                e->max_span = (unsigned)MAX((size_t)1, MIN(request / e->buffer_size,
                                                           MIN((size_t)e->n_buffers / 4, POOL_REGISTER_MAX_BYTES / e->buffer_size)));
        return 0;
}

void *io_main(void *arg)
{
        Engine *e = arg;
        IoCompletion comp[256];
        int k;

        /* The ring is created here because only its creating thread may submit (SINGLE_ISSUER). */
        k = io_setup(e);
        pthread_mutex_lock(&e->init_lock);
        e->init_result = k;
        e->init_done = true;
        pthread_cond_signal(&e->init_cond);
        pthread_mutex_unlock(&e->init_lock);
        if (k < 0)
                return NULL;

        uint64_t exit_deadline = 0;
        for (;;) {
                bool busy = false;

                e->now = now_usec();
                busy |= drain_returns(e);
                if (atomic_load_explicit(&e->control_pending, memory_order_acquire))
                        handle_control(e);
                if (atomic_load(&e->shutdown) && io_may_exit(e, &exit_deadline))
                        break;
                if (e->now >= e->next_stall_check)
                        check_stalls(e);
                busy |= open_more(e);
                busy |= issue_reads(e);

                k = ioring_submit(e->ring, false);
                if (k < 0)
                        abort(); /* the ring itself broke (EFAULT, EBADF): no way to finish I/O */

                unsigned n = ioring_reap(e->ring, comp, ELEMENTSOF(comp));
                for (unsigned i = 0; i < n; i++)
                        handle_completion(e, &comp[i]);
                flush_wakes(e);
                if (n > 0 || busy)
                        continue;

                /* Nothing to do: announce that we sleep, look once more, then wait for a completion
                 * or a wake-up (a worker returning a buffer, a new job, a cancel), or until the next
                 * stall check while files wait for the kernel. */
                parker_prepare(&e->io_parker);
                if (returns_pending(e) || atomic_load(&e->control_pending)) {
                        parker_cancel(&e->io_parker);
                        continue;
                }
                bool timed = (e->open_head && e->stall_timeout != UINT64_MAX) || e->n_zombies > 0 ||
                             atomic_load(&e->shutdown);
                (void)ioring_wait(e->ring, timed ? stall_interval(e) : UINT64_MAX);
                parker_cancel(&e->io_parker);
        }
        return NULL;
}

void io_wake(Engine *e)
{
        if (parker_claim_wake(&e->io_parker))
                (void)!write(e->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}
