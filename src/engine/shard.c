/* SPDX-License-Identifier: MIT */
/* shard.c: a shard's loop: control, opens, reads, one submission and a batch of completions, then
 * the hashing of what they brought, per turn; sleeping in the ring when there is nothing to do */
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/idle.h"

static void handle_completion(Shard *s, const IoCompletion *c)
{
        unsigned op = TAG_OP(c->tag);

        if (op == OP_CLOSE_ANON)
                return; /* nobody waits for it (see close_anon()) */
        /* Released: a drain of diskwatch.h sees it back before the completion is handled. */
        if (s->config.background && op == OP_OPEN)
                atomic_fetch_sub_explicit(&s->disk_ops, 1, memory_order_release);
        if (op == OP_READ) {
                Buffer *b = TAG_PTR(c->tag);
                if (b->disk_read)
                        atomic_fetch_sub_explicit(&s->disk_ops, 1, memory_order_release);
                b->file->progress_usec = s->now;
                read_completion(s, b, c->res);
                return;
        }

        FileSlot *f = TAG_PTR(c->tag);
        f->ops--;
        f->progress_usec = s->now;

        switch (op) {
        case OP_OPEN:
                open_done(s, f, c->res);
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
                close_done(s);
                break;
        case OP_STATX:
                statx_done(s, f, c->res);
                break;
        case OP_POLL:
                poll_done(s, f, c->res);
                break;
        default:
                abort();
        }
        file_op_done(s, f);
}

/* How often files are checked for stalls: a quarter of the timeout, within [10 ms, 1 s]. */
#define DEFERRED_RECHECK_USEC ((uint64_t)10000)

static uint64_t stall_interval(const Shard *s)
{
        return MIN(MAX(s->stall_timeout / 4, (uint64_t)10000), (uint64_t)1000000);
}

/* Files with an operation in flight that has not come back for the stall timeout end (file_stall());
 * stalled ones whose worker has let go since are detached. Waiting for a buffer or for the worker
 * is not a stall: only files with operations in flight are looked at. */
static void check_stalls(Shard *s)
{
        s->next_stall_check = s->now + stall_interval(s);
        if (s->stall_timeout == UINT64_MAX)
                return;
        for (FileSlot *f = s->open_head, *next; f; f = next) {
                next = f->next;
                if (f->stalled)
                        file_try_detach(s, f);
                else if (f->ops > 0 && s->now - f->progress_usec >= s->stall_timeout)
                        file_stall(s, f);
        }
}

/* A turn did something: published at most once a millisecond, for engine_is_busy(). */
static void shard_mark_active(Shard *s)
{
        if (s->now - s->active_stored < 1000)
                return;
        s->active_stored = s->now;
        atomic_store_explicit(&s->active_usec, s->now, memory_order_relaxed);
}

static bool drain_returns(Shard *s)
{
        bool any = false;
        ReturnItem it;

        for (unsigned i = 0; i < s->n_shards; i++)
                while (spsc_queue_pop(&s->links[i].out, &it)) {
                        if (it.buf && it.buf->piece)
                                piece_returned(s, it.buf);
                        else if (it.buf)
                                buffer_put(s, it.buf);
                        else
                                slot_free(s, it.slot);
                        any = true;
                }
        return any;
}

static bool returns_pending(Shard *s)
{
        for (unsigned i = 0; i < s->n_shards; i++)
                if (!spsc_queue_empty(&s->links[i].out))
                        return true;
        return false;
}


static bool io_idle(Shard *s)
{
        return !s->open_head && !s->wait_head && ioring_in_flight(s->ring) == 0;
}

/* Shutting down: every file is cancelled. Wait for everything to come back, but not forever for
 * zombies (stalled files whose operation the kernel does not end): their memory goes with the
 * engine, and the ring's teardown ends what is left. */
static bool shard_may_exit(Shard *s, uint64_t *deadline)
{
        if (s->open_head || s->wait_head)
                return false;
        if (*deadline == 0)
                *deadline = s->now + 1000000;
        if (s->n_zombies > 0 && s->now >= *deadline)
                return true;
        if (!io_idle(s) || s->pool.n_free != s->n_buffers || s->pool.n_small_free != s->n_small ||
            shard_work_pending(s))
                return false;
        for (unsigned i = 0; i < s->n_slots; i++)
                if (s->slots[i].state != FILE_FREE)
                        return false;
        return true;
}

/* Whether RLIMIT_MEMLOCK cannot refuse a registration: unlimited, or CAP_IPC_LOCK in effect. */
static bool memlock_unbounded(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        struct rlimit rl;

        if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY)
                return true;
        if (syscall(SYS_capget, &h, d) < 0)
                return false;
        return d[CAP_IPC_LOCK / 32].effective & (UINT32_C(1) << (CAP_IPC_LOCK % 32));
}

int shard_buf_index(Shard *s, const Buffer *b)
{
        if (s->io_mode != IO_MODE_URING_REGISTERED)
                return -1;
        if (!b->small && s->pool_reg == POOL_REG_LATER) {
                struct iovec iov = { .iov_base = pool_data(&s->pool, 0),
                                     .iov_len = (size_t)s->n_buffers * s->buffer_size };

                /* Refused (out of memory), the pool proper is read unregistered, as in IO_MODE_URING. */
                s->pool_reg = ioring_register_buffer(s->ring, 0, &iov) < 0 ? POOL_REG_FAILED : POOL_REG_WHOLE;
        }
        return !b->small && s->pool_reg == POOL_REG_FAILED ? -1 : b->index;
}

static int io_setup(Shard *s)
{
        struct iovec *iov;
        unsigned entries, n_iov;
        size_t request = s->config.direct_request ? s->config.direct_request : ENGINE_DIRECT_REQUEST;
        int one, k;

        /* The pool is registered as one buffer when the kernel allows it: a READ_FIXED may then
         * target any range of it, so one read can fill several adjacent slots. Larger pools are
         * registered slot by slot, and read one slot per request. */
        one = pool_iovecs(&s->pool, &iov, &n_iov);
        if (one < 0)
                return one;
        if (one && s->n_small > 0 && s->config.pool_on_demand && s->config.io_mode == IO_MODE_AUTO &&
            memlock_unbounded()) {
                /* Entry 0 (the pool proper) empty until shard_buf_index() fills it, entry 1 the small
                 * slots. */
                struct iovec *two = reallocarray(iov, 2, sizeof(*iov));

                if (!two) {
                        free(iov);
                        return -ENOMEM;
                }
                iov = two;
                iov[0] = (struct iovec){};
                iov[1] = (struct iovec){ .iov_base = pool_data(&s->pool, s->n_buffers),
                                         .iov_len = s->small_size * s->n_small };
                n_iov = 2;
                s->pool_reg = POOL_REG_LATER;
        }

        /* Per open file at most 3 non-read operations at once (open+statx, statx+close, cancel), 5 with
         * linked chains (open, read and close, two cancels), plus one read per buffer, plus the wake
         * read: the CQ (2x) can never overflow. */
        entries = 1;
        while (entries < s->max_open * (s->config.open_mode == ENGINE_OPEN_LINKED ? 5 : 3) + s->n_buffers + 8)
                entries <<= 1;
        IoMode mode = s->id < 64 && (s->config.test_pread_shards >> s->id & 1) ? IO_MODE_PREAD : s->config.io_mode;
        k = ioring_new(mode, MIN(entries, 4096u), iov, n_iov, s->wake_fd, &s->ring);
        free(iov);
        if (k < 0)
                return k;
        s->io_mode = ioring_get_mode(s->ring);
        /* One direct slot per file slot, probed once here. Refused without io_uring, before 5.19, or
         * when max_open exceeds RLIMIT_NOFILE: then every path is opened the classic way. */
        if (s->config.open_mode == ENGINE_OPEN_LINKED)
                s->linked = ioring_enable_direct(s->ring, s->n_slots) >= 0;
        for (unsigned i = 0; one && i < s->n_buffers + s->n_small; i++)
                s->bufs[i].index = s->pool_reg == POOL_REG_LATER && s->bufs[i].small ? 1 : 0;

        /* Slots per O_DIRECT read: see direct_setup(). Unregistered and pread reads take any
         * address, so only a pool registered slot by slot keeps one slot per read. */
        s->max_span = 1;
        if (one || s->io_mode != IO_MODE_URING_REGISTERED)
                s->max_span = (unsigned)MAX((size_t)1, MIN(request / s->buffer_size,
                                                           MIN((size_t)s->n_buffers / 4, POOL_REGISTER_MAX_BYTES / s->buffer_size)));
        return 0;
}

/* Shutting down, s has nothing left of its own; it goes when every shard is there, since until then
 * another may still hand it BLAKE3 pieces to hash. A shard that got here stays here: what others
 * hand it takes nothing of its own. */
static bool shard_quiet(Shard *s)
{
        Engine *e = s->engine;

        if (!s->quiet) {
                s->quiet = true;
                if (atomic_fetch_add(&e->n_quiet, 1) + 1 == e->n_shards)
                        for (unsigned i = 0; i < e->n_shards; i++)
                                shard_wake(&e->shards[i]);
        }
        return atomic_load(&e->n_quiet) == e->n_shards;
}

/* s went quiet and so did every other shard: it may leave (shard_quiet() says so on its next turn). */
static bool all_quiet(Shard *s)
{
        return s->quiet && atomic_load(&s->engine->n_quiet) == s->engine->n_shards;
}

void shard_init_done(Shard *s, int result)
{
        Engine *e = s->engine;

        pthread_mutex_lock(&e->init_lock);
        s->init_result = result;
        s->init_done = true;
        pthread_cond_broadcast(&e->init_cond);
        pthread_mutex_unlock(&e->init_lock);
}

void *shard_main(void *arg)
{
        Shard *s = arg;
        IoCompletion comp[256];
        int k;

        if (s->cpu >= 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(s->cpu, &set);
                /* Best effort: a cpuset may forbid it, and an unpinned shard still works. */
                (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        }

        /* Before the ring: the io-wq threads it starts inherit the thread's policy and I/O class.
         * A background engine that cannot be idle fails rather than run at normal priority. */
        k = s->config.background ? thread_make_idle() : 0;
        /* The ring is created here because only its creating thread may submit (SINGLE_ISSUER). */
        if (k >= 0)
                k = io_setup(s);
        if (k >= 0 && s->config.background)
                ioring_set_ioprio(s->ring, IO_PRIO_IDLE);
        shard_init_done(s, k);
        if (k < 0)
                return NULL;

        uint64_t exit_deadline = 0;
        for (;;) {
                bool busy = false;

                s->now = now_usec();
                s->yielding = s->config.yield_to &&
                              engine_is_busy(s->config.yield_to, s->now, ENGINE_YIELD_WINDOW_USEC);
                s->disk_held = s->config.background && diskwatch_hold(s->engine, s->now);
                busy |= drain_returns(s);
                if (atomic_load_explicit(&s->control_pending, memory_order_acquire))
                        handle_control(s);
                if (atomic_load(&s->engine->shutdown) && shard_may_exit(s, &exit_deadline) && shard_quiet(s))
                        break;
                if (s->now >= s->next_stall_check)
                        check_stalls(s);
                if (s->deferred)
                        deferred_retry(s);
                if (!s->yielding) {
                        /* Held by the disk watch: only reads that need no disk (FileSlot.cached),
                         * and opens only of fds the callers opened (fhashd's jobs): a path's
                         * lookup may read directories and inodes, an fd's fstat reads nothing. */
                        if (!s->disk_held || atomic_load_explicit(&s->engine->path_jobs, memory_order_relaxed) == 0)
                                busy |= open_more(s);
                        busy |= issue_reads(s, s->disk_held);
                }

                k = ioring_submit(s->ring, false);
                if (k < 0)
                        abort(); /* the ring itself broke (EFAULT, EBADF): no way to finish I/O */

                unsigned n = ioring_reap(s->ring, comp, ELEMENTSOF(comp));
                for (unsigned i = 0; i < n; i++)
                        handle_completion(s, &comp[i]);
                flush_wakes(s);
                /* What the completions brought (and what other shards handed over) is hashed now, on
                 * this core, while it is in its cache; the buffers go back to the pool for the next
                 * turn's reads. */
                busy |= shard_hash_work(s);
                if (n > 0 || busy) {
                        shard_mark_active(s);
                        continue;
                }

                /* Nothing to do: announce that we sleep, look once more, then wait for a completion
                 * or a wake-up (a buffer or work from another shard, a new job, a cancel, the last
                 * shard going quiet), or until the next stall check while files wait for the kernel.
                 * The look covers every condition a waker changes before shard_wake(): one it
                 * skipped would be lost when the waker ran before parker_prepare() (it sees no
                 * sleeper and writes nothing), and the shard would sleep a full timed wait. */
                parker_prepare(&s->io_parker);
                if (returns_pending(s) || shard_work_pending(s) || atomic_load(&s->control_pending) ||
                    all_quiet(s) ||
                    (s->deferred && (atomic_load(&s->engine->fds_closed) != s->fds_closed_seen ||
                                     engine_fds(s->engine) == 0))) {
                        parker_cancel(&s->io_parker);
                        continue;
                }
                bool timed = (s->open_head && s->stall_timeout != UINT64_MAX) || s->n_zombies > 0 ||
                             atomic_load(&s->engine->shutdown);
                /* Opens waiting for an fd: another shard's close counts only once it sees them
                 * waiting (close_done()), and one that closed its last fd just before that wakes no
                 * one. Look again every DEFERRED_RECHECK_USEC: deferred_retry() lets them go once
                 * the engine holds no fd. Only after EMFILE, so no idle wake-ups otherwise.
                 * Yielding with files or inputs of its own: look again soon too, since the engine
                 * yielded to does not wake this one when it goes quiet. */
                uint64_t wait = timed ? stall_interval(s) : UINT64_MAX;
                if (s->deferred)
                        wait = MIN(wait, DEFERRED_RECHECK_USEC);
                if (s->yielding && (s->open_head || s->wait_head))
                        wait = MIN(wait, ENGINE_YIELD_POLL_USEC);
                /* Held by the disk watch: until its next sample or the end of the hold; a drain's
                 * sample wakes the shards it held (diskwatch_hold()), the poll is a safety net. */
                if (s->disk_held && (s->open_head || s->wait_head))
                        wait = MIN(wait, diskwatch_wait_usec(&s->engine->diskwatch, s->now, ENGINE_YIELD_POLL_USEC));
                (void)ioring_wait(s->ring, wait);
                parker_cancel(&s->io_parker);
        }
        return NULL;
}

void shard_wake(Shard *s)
{
        if (parker_claim_wake(&s->io_parker))
                (void)!write(s->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}
