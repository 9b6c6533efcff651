/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "basic/string-table.h"
#include "basic/time-util.h"
#include "io/mapguard.h"
#include "io/pagecache.h"

#define DEFAULT_BUFFER_SIZE (1u << 20)
#define DEFAULT_BUFFERS 16
#define DEFAULT_MAX_OPEN 64
/* Bytes per small slot (one per open file), for files that fit in one: see Engine.small. */
#define SMALL_SLOT_SIZE ((size_t)64 << 10)
/* At most this many (16 MiB of locked memory): beyond, small files use pool slots as before. */
#define SMALL_SLOTS_MAX 256u
#define ENGINE_DISPATCH_MAX 256  /* events delivered per engine_dispatch() call */

/* Completion tags: a pointer with the operation in its low 3 bits (slots and buffers are 8-aligned). */
enum {
        OP_OPEN = 1,
        OP_READ = 2,
        OP_FADVISE = 3,
        OP_CLOSE = 4,
        OP_CANCEL = 5,
        OP_LINK_OPEN = 6,   /* the open of a linked chain (its read is OP_READ on the buffer) */
        OP_LINK_CLOSE = 7,  /* the close of a linked chain, or of its slot afterwards */
};
#define TAG(p, op) ((uint64_t)(uintptr_t)(p) | (op))
#define TAG_OP(t) ((unsigned)((t)&7))
#define TAG_PTR(t) ((void *)(uintptr_t)((t) & ~UINT64_C(7)))

static const char *const open_mode_table[_ENGINE_OPEN_MODE_MAX] = {
        [ENGINE_OPEN_AUTO] = "auto",
        [ENGINE_OPEN_LINKED] = "linked",
        [ENGINE_OPEN_CLASSIC] = "classic",
};

DEFINE_STRING_TABLE_LOOKUP(engine_open_mode, EngineOpenMode, open_mode_table, _ENGINE_OPEN_MODE_MAX,
                           _ENGINE_OPEN_MODE_INVALID)

static const char *const read_strategy_table[_ENGINE_READ_MAX] = {
        [ENGINE_READ_AUTO] = "auto",
        [ENGINE_READ_BUFFERED] = "read",
        [ENGINE_READ_MMAP] = "mmap",
        [ENGINE_READ_DIRECT] = "direct",
};

DEFINE_STRING_TABLE_LOOKUP(engine_read_strategy, EngineReadStrategy, read_strategy_table, _ENGINE_READ_MAX,
                           _ENGINE_READ_INVALID)

/* ---- results: workers and the I/O thread -> consumer ---- */

/* Grows the posting array to hold n events; the caller holds event_lock. */
static int events_reserve_locked(Engine *e, size_t n)
{
        Event *p;

        if (n <= e->n_events_alloc)
                return 0;
        p = realloc(e->events, n * sizeof(*p));
        if (!p)
                return -ENOMEM;
        e->events = p;
        e->n_events_alloc = n;
        return 0;
}

/* Appends one event; the caller holds event_lock. Returns true if the queue was empty. When the
 * array cannot grow (out of memory), the poster waits for the consumer to take what is queued,
 * which empties the array: back-pressure instead of losing a result or aborting. */
static bool event_push_locked(Engine *e, const Event *ev)
{
        while (e->n_events == e->n_events_alloc &&
               events_reserve_locked(e, MAX(e->n_events_alloc * 2, (size_t)64)) < 0) {
                pthread_mutex_unlock(&e->event_lock);
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
                (void)usleep(1000);
                pthread_mutex_lock(&e->event_lock);
        }
        e->events[e->n_events++] = *ev;
        return e->n_events == 1;
}

static void event_push(Engine *e, const Event *ev)
{
        bool was_empty;

        pthread_mutex_lock(&e->event_lock);
        was_empty = event_push_locked(e, ev);
        pthread_mutex_unlock(&e->event_lock);
        if (was_empty)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/*
 * Publishes one input's result; the job's completion follows its last result. The count of pending
 * results is taken under the same lock as the push, so events leave in the order the count fell: a
 * worker preempted between the two could otherwise push its file after another thread pushed the
 * job's end, and the consumer would free the job before reading that file. The caller must not
 * touch the job after this returns: once its last result is out, the consumer may free it.
 */
static void post_result(Engine *e, EngineJob *j, const EngineFileResult *r)
{
        bool was_empty;

        atomic_fetch_add(&j->files_done, 1);
        if (r->status != ENGINE_FILE_OK)
                atomic_fetch_add(&j->files_failed, 1);
        atomic_fetch_sub(&e->files_queued, 1);

        pthread_mutex_lock(&e->event_lock);
        was_empty = event_push_locked(e, &(Event){ .type = EVENT_FILE, .job = j, .file = *r });
        if (atomic_fetch_sub(&j->results_pending, 1) == 1) {
                bool cancelled = atomic_load(&j->cancel_requested);
                was_empty |= event_push_locked(e, &(Event){ .type = EVENT_JOB, .job = j,
                                                            .job_result = cancelled ? ENGINE_JOB_CANCELLED
                                                                                    : ENGINE_JOB_DONE });
        }
        pthread_mutex_unlock(&e->event_lock);
        if (was_empty)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

static void post_simple(Engine *e, EngineJob *j, size_t input, EngineFileStatus st, int error)
{
        post_result(e, j, &(EngineFileResult){ .index = input, .status = st, .error = st == ENGINE_FILE_ERROR ? error : 0 });
}

static int64_t stx_mtime_nsec(const struct statx *s)
{
        return (int64_t)s->stx_mtime.tv_sec * 1000000000 + s->stx_mtime.tv_nsec;
}

static void slot_free(Engine *e, FileSlot *f)
{
        f->state = FILE_FREE;
        f->job = NULL;
        f->next = e->free_slots;
        e->free_slots = f;
}

/* Called by whichever side lets go of a file last: publishes its result, recycles the slot. */
void engine_file_release(Engine *e, FileSlot *f, Worker *from)
{
        if (atomic_fetch_sub_explicit(&f->parts, 1, memory_order_acq_rel) != 1)
                return;

        EngineFileResult r = {
                .index = f->input,
                .status = f->status,
                .error = f->status == ENGINE_FILE_ERROR ? f->error : 0,
                .size = f->read_bytes,
                .strategy = f->strategy,
                .parallel = f->parallel,
        };

        /* Both sides are done with the mapping: the worker hashed its last window. */
        if (f->map) {
                (void)munmap(f->map, f->map_len);
                f->map = NULL;
        }
        free(f->merge);
        f->merge = NULL;
        if (f->map_fault && r.status == ENGINE_FILE_OK)
                r.status = ENGINE_FILE_CHANGED; /* shrank under the mapping (SIGBUS) */
        if (f->stat_ok) {
                r.size_before = f->stx.stx_size;
                r.mtime_before_nsec = stx_mtime_nsec(&f->stx);
        }
        if (f->stat_after_ok) {
                r.size_after = f->stx_after.stx_size;
                r.mtime_after_nsec = stx_mtime_nsec(&f->stx_after);
        }
        if (r.status == ENGINE_FILE_OK) {
                if (f->digest_size == 0)
                        r.status = ENGINE_FILE_CANCELLED; /* the worker skipped it: job cancelled */
                else {
                        r.digest_size = f->digest_size;
                        memcpy(r.digest, f->digest, f->digest_size);
                        r.size = f->hashed;
                }
        }
        post_result(e, f->job, &r);

        if (from) {
                /* The slot belongs to the I/O thread's free list: send it home. */
                while (!spsc_queue_push(&from->out, &(ReturnItem){ .slot = f }))
                        sched_yield();
                if (parker_claim_wake(&e->io_parker))
                        (void)!write(e->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
        } else
                slot_free(e, f);
}

/* ---- the I/O thread ---- */

static int job_open_flags(const EngineJob *j)
{
        return O_RDONLY | O_CLOEXEC | O_NOCTTY | (j->options.regular_only ? O_NONBLOCK : 0);
}

static void open_list_add(Engine *e, FileSlot *f)
{
        f->prev = e->open_tail;
        f->next = NULL;
        if (e->open_tail)
                e->open_tail->next = f;
        else
                e->open_head = f;
        e->open_tail = f;
        e->n_open++;
}

static void deferred_remove(Engine *e, FileSlot *f)
{
        for (FileSlot **p = &e->deferred; *p; p = &(*p)->deferred_next)
                if (*p == f) {
                        *p = f->deferred_next;
                        break;
                }
        f->deferred_next = NULL;
        f->reopen = false;
}

static void open_list_remove(Engine *e, FileSlot *f)
{
        if (e->read_cursor == f)
                e->read_cursor = f->next;
        if (f->prev)
                f->prev->next = f->next;
        else
                e->open_head = f->next;
        if (f->next)
                f->next->prev = f->prev;
        else
                e->open_tail = f->prev;
        f->next = f->prev = NULL;
        e->n_open--;
}

static void buffer_put(Engine *e, Buffer *b)
{
        b->owner = BUF_POOL;
        b->file = NULL;
        b->next = NULL;
        b->span = 1;
        if (b->small) {
                b->next = e->free_small;
                e->free_small = b;
                e->n_free_small++;
                return;
        }
        e->free_map[b->slot / 64] |= UINT64_C(1) << (b->slot % 64);
        e->n_free_buffers++;
}

/* A buffer off a free list or the bitmap, now the ring's, for one slot's read. */
static Buffer *buffer_claim(Buffer *b)
{
        b->next = NULL;
        b->owner = BUF_RING;
        b->span = 1;
        return b;
}

static Buffer *buffer_take(Engine *e, unsigned slot)
{
        e->free_map[slot / 64] &= ~(UINT64_C(1) << (slot % 64));
        e->n_free_buffers--;
        return buffer_claim(&e->buffers[slot]);
}

/* The free slot with the lowest position: slots that went back a moment ago are reused first. */
static Buffer *buffer_get(Engine *e)
{
        if (e->n_free_buffers == 0)
                return NULL;
        for (unsigned w = 0;; w++)
                if (e->free_map[w])
                        return buffer_take(e, w * 64 + (unsigned)__builtin_ctzll(e->free_map[w]));
}

/* A small slot for a file that fits in one, read through the page cache in one read, else a pool
 * slot. */
static Buffer *buffer_get_for(Engine *e, const FileSlot *f, uint64_t fits)
{
        if (e->free_small && fits <= e->small_size && f->strategy != ENGINE_READ_DIRECT && !f->map) {
                Buffer *b = e->free_small;
                e->free_small = b->next;
                e->n_free_small--;
                return buffer_claim(b);
        }
        return buffer_get(e);
}

static bool buffers_free(const Engine *e)
{
        return e->n_free_buffers > 0 || e->n_free_small > 0;
}

static bool slot_is_free(const Engine *e, unsigned i)
{
        return e->free_map[i / 64] & (UINT64_C(1) << (i % 64));
}

/* The first run of `want` adjacent free slots, or else the longest shorter one: its first slot in
 * *ret_first, its length returned (0: none free). Linear in the pool, which is small (16 slots by
 * default) and only searched for spanning reads. */
static unsigned buffer_find_run(const Engine *e, unsigned want, unsigned *ret_first)
{
        unsigned best = 0, best_first = 0, run = 0;

        for (unsigned i = 0; i < e->n_buffers; i++) {
                if (run == 0 && (i % 64) == 0 && e->free_map[i / 64] == 0) {
                        i += 63; /* a whole word taken */
                        continue;
                }
                if (!slot_is_free(e, i)) {
                        run = 0;
                        continue;
                }
                run++;
                if (run > best) {
                        best = run;
                        best_first = i + 1 - run;
                        if (best >= want)
                                break;
                }
        }
        *ret_first = best_first;
        return MIN(best, want);
}

static Worker *pick_worker(Engine *e)
{
        Worker *best = &e->workers[0];
        unsigned best_load = atomic_load_explicit(&best->backlog, memory_order_relaxed);

        for (unsigned i = 1; i < e->n_workers && best_load > 0; i++) {
                unsigned l = atomic_load_explicit(&e->workers[i].backlog, memory_order_relaxed);
                if (l < best_load) {
                        best = &e->workers[i];
                        best_load = l;
                }
        }
        return best;
}

static void send_work(Engine *e, FileSlot *f, Buffer *b, uint32_t len, uint32_t flags)
{
        Worker *w;

        if (!f->worker_started) {
                w = pick_worker(e);
                f->worker = w->id;
                f->worker_started = true;
                /* The worker now holds a part of the file until LAST or ABORT. */
                atomic_fetch_add_explicit(&f->parts, 1, memory_order_relaxed);
                flags |= WORK_FIRST;
        } else
                w = &e->workers[f->worker];

        if (flags & (WORK_LAST | WORK_ABORT))
                f->worker_closed = true;
        if (b)
                b->owner = BUF_WORKER;

        atomic_fetch_add_explicit(&w->backlog, 1, memory_order_relaxed);
        /* The queue holds every buffer plus one marker per slot: it never fills. */
        while (!spsc_queue_push(&w->in, &(WorkItem){ .file = f, .buf = b, .len = len, .flags = flags }))
                sched_yield();
        /* Woken once per loop iteration (flush_wakes()), not per item: with small files a futex
         * wake per file would cost more than hashing it. */
        w->wake_pending = true;
}

/* A BLAKE3 piece goes to whichever worker has the least queued: one file on every core. */
static void send_piece(Engine *e, FileSlot *f, Buffer *b)
{
        Worker *w = pick_worker(e);

        b->owner = BUF_WORKER;
        b->piece = true;
        b->piece_ok = b->fault = false;
        f->pieces_out++;
        atomic_fetch_add_explicit(&w->backlog, 1, memory_order_relaxed);
        while (!spsc_queue_push(&w->in, &(WorkItem){ .file = f, .buf = b, .len = b->got, .flags = WORK_PIECE }))
                sched_yield();
        w->wake_pending = true;
}

static void flush_wakes(Engine *e)
{
        for (unsigned i = 0; i < e->n_workers; i++)
                if (e->workers[i].wake_pending) {
                        e->workers[i].wake_pending = false;
                        parker_wake(&e->workers[i].parker);
                }
}

static void file_set_error(FileSlot *f, EngineFileStatus st, int error)
{
        if (f->status != ENGINE_FILE_OK)
                return; /* the first reason wins */
        f->status = st;
        f->error = error;
}

/* A failed or cancelled file's FIFO: buffers whose read has come back (complete or not) are not
 * wanted any more and go back to the pool; those still in flight stay until their completion. */
static void file_drop_idle_buffers(Engine *e, FileSlot *f)
{
        f->fifo_tail = NULL;
        for (Buffer **p = &f->fifo_head; *p;) {
                Buffer *b = *p;
                if (!b->in_flight) {
                        *p = b->next;
                        buffer_put(e, b);
                } else {
                        f->fifo_tail = b;
                        p = &b->next;
                }
        }
}

/* Stops a file: no more reads, in-flight operations cancelled, the worker told to drop it. */
static void file_abort(Engine *e, FileSlot *f, EngineFileStatus st, int error)
{
        file_set_error(f, st, error);
        if (f->state == FILE_DRAINING || f->state == FILE_CLOSING || f->state == FILE_IO_DONE)
                return;
        if (f->reopen)
                deferred_remove(e, f);
        f->state = FILE_DRAINING;
        f->eof = true;

        file_drop_idle_buffers(e, f);
        while (f->cv_wait) {
                Buffer *b = f->cv_wait;
                f->cv_wait = b->next;
                buffer_put(e, b);
        }

        if (f->worker_started && !f->worker_closed)
                send_work(e, f, NULL, 0, WORK_ABORT);

        /* A read from a pipe or a blocked open may never complete by itself. */
        if (f->ops > 0 && st == ENGINE_FILE_CANCELLED && f->linked) {
                /* The chain's open (in io-wq, e.g. a path swapped for a FIFO) and its read; the close
                 * is hard-linked to the read and runs whatever becomes of it. Either may be over
                 * already: the kernel then answers -ENOENT. */
                ioring_cancel_tag(e->ring, TAG(f, OP_LINK_OPEN), TAG(f, OP_CANCEL));
                f->ops++;
                if (f->fifo_head && f->fifo_head->in_flight) {
                        ioring_cancel_tag(e->ring, TAG(f->fifo_head, OP_READ), TAG(f, OP_CANCEL));
                        f->ops++;
                }
        } else if (f->ops > 0 && st == ENGINE_FILE_CANCELLED) {
                if (f->fd >= 0)
                        ioring_cancel_fd(e->ring, f->fd, TAG(f, OP_CANCEL));
                else
                        ioring_cancel_tag(e->ring, TAG(f, OP_OPEN), TAG(f, OP_CANCEL));
                f->ops++;
        }
}

/*
 * statx of an open fd runs here, synchronously, not through the ring: io_uring always punts
 * IORING_OP_STATX to an io-wq thread, and for small files that hand-off (twice per file) cost more
 * than the whole rest of the file (measured: 65k -> see the commit message). On an open fd the
 * inode is in memory, so the call does no I/O on local filesystems.
 */
static int file_stat(int fd, struct statx *stx)
{
        return RET_NERRNO(statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_INO, stx));
}

static void file_check_change(FileSlot *f);

/* The I/O side is finished: close the fd (after a last statx for the change check). */
static void file_finish_io(Engine *e, FileSlot *f)
{
        if (f->ops > 0 || f->pieces_out > 0 || f->state == FILE_CLOSING || f->state == FILE_IO_DONE)
                return;

        if (f->fd >= 0) {
                f->state = FILE_CLOSING;
                if (f->status == ENGINE_FILE_OK && f->check_change && f->stat_ok) {
                        f->stat_after_ok = file_stat(f->fd, &f->stx_after) >= 0;
                        file_check_change(f);
                }
                ioring_close(e->ring, f->fd, TAG(f, OP_CLOSE));
                f->ops++;
                f->fd = -EBADF;
                return;
        }

        f->state = FILE_IO_DONE;
        open_list_remove(e, f);
        if (f->worker_started && !f->worker_closed)
                send_work(e, f, NULL, 0, f->status == ENGINE_FILE_OK ? WORK_LAST : WORK_ABORT);
        engine_file_release(e, f, NULL);
}

static void file_check_change(FileSlot *f)
{
        if (f->status != ENGINE_FILE_OK || !f->stat_after_ok)
                return;
        /* Size and mtime (and identity): a rewrite in place changes mtime, truncation or growth the
         * size. ctime is left out on purpose: unlinking an fd's file changes it, and that file still
         * hashes correctly. */
        if (f->stx_after.stx_size != f->stx.stx_size ||
            stx_mtime_nsec(&f->stx_after) != stx_mtime_nsec(&f->stx) || f->stx_after.stx_ino != f->stx.stx_ino ||
            (!f->stream && f->read_bytes != f->stx.stx_size))
                f->status = ENGINE_FILE_CHANGED;
}

/* Hands buffers that are complete, in file order, to the file's worker. */
static void file_dispatch_ready(Engine *e, FileSlot *f)
{
        while (f->fifo_head && f->fifo_head->done) {
                Buffer *b = f->fifo_head;
                uint32_t flags = 0;

                f->fifo_head = b->next;
                if (!f->fifo_head)
                        f->fifo_tail = NULL;
                b->next = NULL;

                if (b->got == 0) {
                        buffer_put(e, b);
                        continue;
                }
                f->read_bytes += b->got;
                if (f->parallel) {
                        send_piece(e, f, b);
                        continue;
                }
                if (!f->stream && f->read_bytes >= f->size)
                        flags |= WORK_LAST;
                send_work(e, f, b, b->got, flags);
        }

        if (f->eof && !f->fifo_head && f->reads_in_flight == 0 && f->state == FILE_READING) {
                if (f->parallel) {
                        if (f->pieces_out > 0 || f->cv_wait)
                                return; /* the last CVs are still to come */
                } else if (!f->worker_closed)
                        send_work(e, f, NULL, 0, WORK_LAST);
                file_finish_io(e, f);
        }
}

/* A piece came back from a worker: merge, in file order, every CV whose turn has come. */
static void piece_returned(Engine *e, Buffer *b)
{
        FileSlot *f = b->file;

        f->pieces_out--;
        b->piece = false;
        if (f->state != FILE_READING || !b->piece_ok) {
                bool fault = b->fault;
                buffer_put(e, b);
                if (f->state == FILE_READING)
                        /* Skipped because the job was cancelled, or the mapping faulted. */
                        file_abort(e, f, fault ? ENGINE_FILE_CHANGED : ENGINE_FILE_CANCELLED, 0);
                file_finish_io(e, f);
                return;
        }

        /* Workers finish pieces in any order; hold the early ones (sorted by offset). */
        Buffer **p = &f->cv_wait;
        while (*p && (*p)->offset < b->offset)
                p = &(*p)->next;
        b->next = *p;
        *p = b;

        while (f->cv_wait && f->cv_wait->offset == f->merge_off) {
                Buffer *c = f->cv_wait;
                f->cv_wait = c->next;
                f->merge_off += c->got;
                f->hashed += c->got;
                if (f->merge_off < f->size)
                        blake3_merge_push(f->merge, c->cv, c->got / BLAKE3_CHUNK_LEN);
                else {
                        blake3_merge_finish(f->merge, c->cv, c->got, f->digest);
                        f->digest_size = BLAKE3_OUT_LEN;
                }
                buffer_put(e, c);
        }
        file_dispatch_ready(e, f);
}

static void file_issue_read(Engine *e, FileSlot *f, Buffer *b)
{
        int64_t off = f->seekable ? (int64_t)(b->offset + b->got) : -1;
        int rwf = (f->job->options.dontcache && e->dontcache_ok) ? RWF_DONTCACHE : 0;

        size_t len = b->want - b->got;

        b->in_flight = true;
        b->direct_read = f->strategy == ENGINE_READ_DIRECT;
        if (b->direct_read && e->config.test_direct_einval && len > 1)
                len--;
        ioring_read(e->ring, f->fd, b->data + b->got, len, off, e->io_mode == IO_MODE_URING_REGISTERED ? b->index : -1,
                    rwf, TAG(b, OP_READ));
        f->ops++;
}

static bool file_wants_read(FileSlot *f)
{
        if (f->linked)
                return f->state == FILE_OPENING && f->ops == 0 && !f->fifo_head;
        if (f->state != FILE_READING || f->eof)
                return false;
        if (f->stream)
                return f->reads_in_flight == 0;
        return f->issue_off < f->size;
}

/* ---- small files: the linked open/read/close chain ----
 *
 * A path input that statx(path) shows to be a small regular file is read by one chain in the ring:
 * OPENAT into direct slot i (the file slot's own index: slots are exclusive, so the slot free list is
 * the allocator) -> READ of a whole pool slot from it -> CLOSE of it. One submission, three
 * completions, no fd in the process and no statx of an fd in between, so a cold file's open, inode
 * and data reads overlap those of every other chain in flight.
 *
 * Without an fd there is nothing to fstat, so the identity check is by path (linked_finish()):
 * statx(path) before the chain (it also picks the file) and after its read, and the result counts only
 * if both say the same regular file, same dev, ino, size, mtime and ctime, and the read returned exactly
 * that size while asking for more (a short read of a regular file is EOF). Anything else that changed is
 * Changed, as in the classic path. What this cannot see, and an fstat of the read fd could: the path
 * swapped for another file and back between the two statx calls, so that the bytes came from a file
 * that was never at the path when either statx ran. A file deleted after the read is Changed here
 * (the path no longer vouches for it), where the classic path hashes it.
 *
 * What the chain cannot vouch for it hands to the classic path (linked_redo()), which then gives the
 * exact status and errno it always gave: every failed read (EIO, -EAGAIN for regular_only's
 * O_NONBLOCK on an uncached file, -EOPNOTSUPP for RWF_DONTCACHE), and an open that ran out of files.
 * A failed open reports its errno directly: same path, same flags, same answer as the classic open.
 * Paths that statx refuses, directories, non-regular files and larger files never take the chain.
 */

#define LINKED_STATX_MASK (STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_INO)

static int path_stat(const char *path, struct statx *stx)
{
        /* Follows symlinks and triggers automounts, as the open does. */
        if (statx(AT_FDCWD, path, 0, LINKED_STATX_MASK, stx) < 0)
                return negative_errno();
        if ((stx->stx_mask & LINKED_STATX_MASK) != LINKED_STATX_MASK)
                return -EOPNOTSUPP;
        return 0;
}

/* Small enough for one read into one slot, with room to spare (the short read proves EOF), and read
 * BUFFERED by the job's strategy anyway: AUTO probes and may pick O_DIRECT from ENGINE_PROBE_MIN on,
 * and those choices stay the classic path's. */
static bool linked_eligible(Engine *e, const EngineJob *j, const struct statx *stx)
{
        uint64_t limit = e->buffer_size;

        if (!S_ISREG(stx->stx_mode))
                return false;
        if (j->options.strategy == ENGINE_READ_AUTO)
                limit = MIN(limit, ENGINE_PROBE_MIN);
        else if (j->options.strategy != ENGINE_READ_BUFFERED)
                return false;
        if (stx->stx_size >= limit)
                return false;
        return !j->options.max_file_size || stx->stx_size <= j->options.max_file_size;
}

static unsigned slot_index(const Engine *e, const FileSlot *f)
{
        return (unsigned)(f - e->slots);
}

/* Starts f's chain when a pool slot is free (from issue_reads(), like any read). */
static Buffer *linked_start(Engine *e, FileSlot *f)
{
        /* Strictly smaller than the slot: the short read is the proof of EOF. */
        Buffer *b = buffer_get_for(e, f, f->size + 1);
        int rwf = (f->job->options.dontcache && e->dontcache_ok) ? RWF_DONTCACHE : 0;

        if (!b)
                return NULL;
        if (e->config.test_linked_hook)
                e->config.test_linked_hook(f->job->inputs[f->input].path, e->config.test_linked_userdata);
        /* Ask for the whole slot: a file that grew since the statx shows as more bytes than its size. */
        *b = (Buffer){ .data = b->data, .view = b->data, .index = b->index, .slot = b->slot, .span = 1,
                       .small = b->small, .owner = BUF_RING, .file = f,
                       .want = (uint32_t)(b->small ? e->small_size : e->buffer_size), .in_flight = true };
        f->fifo_head = f->fifo_tail = b;
        f->reads_in_flight = 1;
        /* O_CLOEXEC is for fds: the kernel refuses it (EINVAL) on an open into a direct slot. */
        ioring_open_read_close(e->ring, f->job->inputs[f->input].path, job_open_flags(f->job) & ~O_CLOEXEC,
                               slot_index(e, f),
                               b->data, b->want, e->io_mode == IO_MODE_URING_REGISTERED ? b->index : -1, rwf,
                               TAG(f, OP_LINK_OPEN), TAG(b, OP_READ), TAG(f, OP_LINK_CLOSE));
        f->ops += 3;
        return b;
}

/* Back to the classic path, from the open on: the chain is over, its slot empty, its buffer unused. */
static void linked_redo(Engine *e, FileSlot *f)
{
        if (f->fifo_head)
                buffer_put(e, f->fifo_head);
        f->fifo_head = f->fifo_tail = NULL;
        f->reads_in_flight = 0;
        f->linked = f->redo = f->fixed_open = f->fixed_closed = false;
        f->stat_ok = false;
        f->size = 0;
        ioring_openat(e->ring, f->job->inputs[f->input].path, job_open_flags(f->job), TAG(f, OP_OPEN));
        f->ops++;
}

static bool stx_same_file(const struct statx *a, const struct statx *b)
{
        return a->stx_dev_major == b->stx_dev_major && a->stx_dev_minor == b->stx_dev_minor &&
               a->stx_ino == b->stx_ino && ((a->stx_mode ^ b->stx_mode) & S_IFMT) == 0 &&
               a->stx_size == b->stx_size && a->stx_mtime.tv_sec == b->stx_mtime.tv_sec &&
               a->stx_mtime.tv_nsec == b->stx_mtime.tv_nsec && a->stx_ctime.tv_sec == b->stx_ctime.tv_sec &&
               a->stx_ctime.tv_nsec == b->stx_ctime.tv_nsec;
}

/* All three completions are in and the slot is empty: judge the read (see the top of this section). */
static void linked_finish(Engine *e, FileSlot *f)
{
        Buffer *b = f->fifo_head;

        if (f->status != ENGINE_FILE_OK) {
                /* The open failed (its errno), or a cancel. */
                file_abort(e, f, f->status, f->error);
                file_finish_io(e, f);
                return;
        }
        if (f->redo || !b) {
                linked_redo(e, f);
                return;
        }

        atomic_fetch_add(&f->job->bytes_total, f->size);
        bool changed = b->got < f->size; /* EOF before the size statx gave: truncated */
        if (f->check_change && !changed) {
                f->stat_after_ok = path_stat(f->job->inputs[f->input].path, &f->stx_after) >= 0;
                changed = !f->stat_after_ok || !stx_same_file(&f->stx, &f->stx_after) || b->got != f->size;
        } else if (b->got > f->size)
                b->got = (uint32_t)f->size; /* grew, unchecked: hash what statx said, as the classic path */
        if (changed) {
                file_abort(e, f, ENGINE_FILE_CHANGED, 0);
                file_finish_io(e, f);
                return;
        }

        f->state = FILE_READING;
        if (f->size > 0)
                f->strategy = ENGINE_READ_BUFFERED;
        f->seekable = true;
        f->eof = true;
        f->issue_off = f->size;
        b->done = true;
        atomic_fetch_add_explicit(&e->files_linked, 1, memory_order_relaxed);
        file_dispatch_ready(e, f);
}

/* After each of the chain's completions (and cancels): once none is left, make sure the direct slot
 * is empty (a chain whose close did not run), then finish the file. */
static void linked_settle(Engine *e, FileSlot *f)
{
        if (f->ops > 0)
                return;
        if (f->fixed_open && !f->fixed_closed) {
                ioring_close_direct(e->ring, slot_index(e, f), TAG(f, OP_LINK_CLOSE));
                f->ops++;
                return;
        }
        if (f->state == FILE_OPENING)
                linked_finish(e, f);
        else
                file_finish_io(e, f);
}

static void linked_read_done(Engine *e, Buffer *b, int res)
{
        FileSlot *f = b->file;

        f->ops--;
        f->reads_in_flight--;
        b->in_flight = false;
        if (f->state != FILE_OPENING)
                file_drop_idle_buffers(e, f); /* cancelled meanwhile */
        else if (res >= 0)
                b->got = (uint32_t)res;
        else
                /* Read the classic way. -ECANCELED mostly means the open failed: then the open's
                 * status wins in linked_finish() and nothing is redone. */
                f->redo = true;
        linked_settle(e, f);
}

static void linked_opened(FileSlot *f, int res)
{
        if (res >= 0)
                f->fixed_open = true;
        else if (res == -EMFILE || res == -ENFILE)
                f->redo = true; /* the classic path waits for fds to come free */
        else
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
}

static void linked_closed(FileSlot *f, int res)
{
        /* -ECANCELED: the open failed, so the chain was cut and the slot never filled. Otherwise the
         * slot is empty now (-EBADF: it already was). */
        if (res != -ECANCELED)
                f->fixed_closed = true;
}

/* Fills in b as the next piece of f's bytes (want = up to one chunk) and queues it in f's FIFO. */
static void file_queue_buffer(Engine *e, FileSlot *f, Buffer *b)
{
        b->file = f;
        b->got = 0;
        b->done = false;
        b->offset = f->issue_off;
        b->view = b->data;
        b->mapped = false;
        if (f->stream)
                b->want = (uint32_t)e->buffer_size;
        else {
                b->want = (uint32_t)MIN(f->chunk, f->size - f->issue_off);
                f->issue_off += b->want;
                if (f->issue_off >= f->size)
                        f->eof = true;
        }
        if (f->fifo_tail)
                f->fifo_tail->next = b;
        else
                f->fifo_head = b;
        f->fifo_tail = b;
}

/* Takes the slot(s) for f's next read and starts it (or, mapped, makes the next window ready).
 * Returns the first buffer, or NULL when f gets nothing now: the pool is empty, or f reads in spans
 * and waits for adjacent slots. */
static Buffer *file_start_read(Engine *e, FileSlot *f)
{
        unsigned n = 1, first = 0;
        Buffer *b;

        if (f->linked)
                return linked_start(e, f);
        if (f->span > 1) {
                unsigned want = (unsigned)MIN((uint64_t)f->span, DIV_ROUND_UP(f->size - f->issue_off, f->chunk));
                n = buffer_find_run(e, want, &first);
                /* Fewer adjacent slots than wanted only when the device would otherwise have nothing
                 * of this file to read; with a read in flight, wait until the slots the workers hand
                 * back form a whole run (they come back in file order, so they do). */
                if (n == 0 || (n < want && f->reads_in_flight > 0))
                        return NULL;
                b = buffer_take(e, first);
        } else if (!(b = buffer_get_for(e, f, f->stream ? UINT64_MAX : f->size)))
                return NULL;

        file_queue_buffer(e, f, b);
        if (f->map) {
                /* No read: the buffer stands for a window of the mapping, ready at once. The pool
                 * still bounds how much of the file is queued at the workers. */
                b->view = f->map + b->offset;
                b->mapped = true;
                b->got = b->want;
                b->done = true;
                return b;
        }
        if (n > 1) {
                /* One read fills slots first..first+n-1, adjacent in memory: the leader b asks for all
                 * of it; the followers wait in the FIFO, marked in flight, until span_split(). */
                for (unsigned i = 1; i < n; i++) {
                        Buffer *x = buffer_take(e, first + i);
                        file_queue_buffer(e, f, x);
                        x->in_flight = true;
                }
                b->want = (uint32_t)(f->issue_off - b->offset);
                b->span = n;
        }
        if (f->strategy == ENGINE_READ_DIRECT)
                /* O_DIRECT lengths are whole blocks: the last read asks past the end and gets the
                 * rest of the file (slots are multiples of 4 KiB, so this fits). */
                b->want = (uint32_t)ALIGN_TO((uint64_t)b->want, (uint64_t)4096);
        f->reads_in_flight++;
        file_issue_read(e, f, b);
        return b;
}

/* A spanning read is over for good (complete, at EOF, failed or not wanted any more): each follower
 * gets its share of the bytes and leaves the in-flight state, the leader keeps the first slot's
 * share. Bytes past the size stat gave (the file grew) stay, for the change check to see. */
static void span_split(Engine *e, Buffer *b)
{
        uint64_t total = b->got;

        if (b->span <= 1)
                return;
        for (unsigned i = 1; i < b->span; i++) {
                Buffer *x = &e->buffers[b->slot + i];
                uint64_t start = (uint64_t)i * e->buffer_size;

                x->got = total > start ? (uint32_t)MIN(total - start, (uint64_t)e->buffer_size) : 0;
                x->in_flight = false;
                x->done = b->done;
        }
        b->got = (uint32_t)MIN(total, (uint64_t)e->buffer_size);
        b->want = MIN(b->want, (uint32_t)e->buffer_size);
        b->span = 1;
}

/* Round-robin: each pass gives every file that wants one a read, so many files progress at once
 * and one large file cannot starve the others (or the other workers). */
static bool issue_reads(Engine *e)
{
        bool any = false;

        while (buffers_free(e)) {
                bool progressed = false;
                FileSlot *start = e->read_cursor ? e->read_cursor : e->open_head;
                FileSlot *f = start;

                if (!f)
                        break;
                do {
                        FileSlot *next = f->next ? f->next : e->open_head;
                        if (file_wants_read(f)) {
                                Buffer *b = file_start_read(e, f);
                                if (b) {
                                        if (b->mapped)
                                                file_dispatch_ready(e, f);
                                        progressed = any = true;
                                }
                        }
                        f = next;
                } while (f != start && buffers_free(e));
                e->read_cursor = f;
                if (!progressed)
                        break;
        }
        return any;
}

/* O_DIRECT on our own fd, if the filesystem takes it with the alignment our reads have: offsets and
 * lengths in whole 4 KiB units, buffers page-aligned (STATX_DIOALIGN says what the file needs). */
static bool file_set_direct(FileSlot *f)
{
        struct statx stx;
        uint32_t mem_align, off_align;
        int fl;

        if (f->fd_input)
                return false; /* the caller's open file description: O_DIRECT would change theirs */
        if (statx(f->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0 || !(stx.stx_mask & STATX_DIOALIGN))
                return false;
        /* sys/stat.h takes struct statx from linux/stat.h, which has the 6.1 fields. */
        mem_align = stx.stx_dio_mem_align;
        off_align = stx.stx_dio_offset_align;
        if (mem_align == 0 || off_align == 0 || mem_align > 4096 || off_align > 4096 ||
            4096 % mem_align != 0 || 4096 % off_align != 0)
                return false;
        fl = fcntl(f->fd, F_GETFL);
        if (fl < 0 || fcntl(f->fd, F_SETFL, fl | O_DIRECT) < 0)
                return false;
        return true;
}

static bool file_map(Engine *e, FileSlot *f)
{
        void *p;

        if (f->size > SIZE_MAX)
                return false;
        p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, f->fd, 0);
        if (p == MAP_FAILED)
                return false;
        f->map = p;
        f->map_len = (size_t)f->size;
        /* No copy, so a window costs only its hand-off: larger windows for larger files (up to
         * 8 buffers: 8 MiB by default), keeping at least 32 of them so that both workers share a
         * BLAKE3 file evenly to the end and progress moves. Powers of two, as BLAKE3 pieces must be. */
        while (f->chunk < 8 * (uint64_t)e->buffer_size && f->size / (f->chunk * 2) >= 32)
                f->chunk *= 2;
        return true;
}

/* Hashes faster than one core copies from the page cache (measured, 4 GiB hot: XXH128 16 GB/s with
 * reads overlapping the hashing, 11-13 GB/s walking a mapping on one worker). */
static bool algo_outruns_copy(HashAlgo a)
{
        return a == HASH_XXH3 || a == HASH_XXH128 || a == HASH_CRC32C;
}

/* Picks how a regular file is read (see EngineReadStrategy): one cachestat per file above
 * ENGINE_PROBE_MIN. */
static void file_choose_strategy(Engine *e, FileSlot *f)
{
        EngineReadStrategy want = f->job->options.strategy;
        bool dontcache = f->job->options.dontcache;
        PageCacheState pc;
        bool known, all_cached, cold;

        f->strategy = ENGINE_READ_BUFFERED;
        if (want == ENGINE_READ_BUFFERED || (want == ENGINE_READ_AUTO && f->size < ENGINE_PROBE_MIN))
                return;

        known = pagecache_probe(f->fd, f->size, &pc) >= 0;
        all_cached = known && pc.cached >= pc.pages;
        /* Cold: (almost) nothing cached, and nothing dirty that O_DIRECT would first have to flush. */
        cold = known && pc.cached <= pc.pages / 16 && pc.dirty == 0 && pc.writeback == 0;

        /* A mapping of a partly cached file would fault the rest in: not cache-neutral. */
        if ((want == ENGINE_READ_MMAP && (!dontcache || all_cached)) ||
            (want == ENGINE_READ_AUTO && all_cached && f->size >= ENGINE_MAP_MIN && !algo_outruns_copy(f->algo))) {
                if (file_map(e, f)) {
                        f->strategy = ENGINE_READ_MMAP;
                        return;
                }
        }
        if (want == ENGINE_READ_DIRECT || (want == ENGINE_READ_AUTO && cold)) {
                if (file_set_direct(f))
                        f->strategy = ENGINE_READ_DIRECT;
        }
}

/*
 * How much one read of a file asks for. Cold O_DIRECT reads on this kind of device (a virtio disk,
 * NVMe) get faster with the size of each request, up to a few MiB, and not with more requests of the
 * same size: 1 MiB x 16 in flight read 1.2-1.5 GB/s, 4 MiB x 16 up to 2.4, fio --direct=1 2.0-2.6
 * (bench/ANALYSIS.md, C1/C2). So an O_DIRECT file reads in requests of EngineConfig.direct_request
 * (4 MiB), each filling that many adjacent pool slots, which are then hashed slot by slot as before:
 *  - O_DIRECT at all only where file_set_direct() found STATX_DIOALIGN alignments that divide 4 KiB:
 *    a span starts at a slot and is as aligned as one;
 *  - at most a quarter of the pool per request, so that several requests are in flight and the
 *    workers have slots to hash while the device fills the next ones (e->max_span);
 *  - never more than the rest of the file (file_start_read()), so a 1.5 MiB file is one 2-slot read;
 *  - one slot per read when the pool is registered slot by slot (larger than 1 GiB).
 * Buffered and mapped files keep one slot per read: the page cache's readahead sizes their I/O.
 */
static void file_choose_span(Engine *e, FileSlot *f)
{
        f->span = f->strategy == ENGINE_READ_DIRECT && f->chunk == e->buffer_size ? e->max_span : 1;
}

/* BLAKE3 files longer than one buffer are cut into buffer-sized pieces (a power of two of 1 KiB
 * chunks, at multiples of their size: subtrees of BLAKE3's tree) hashed on all workers at once. */
static void file_choose_parallel(Engine *e, FileSlot *f)
{
        uint64_t p = f->chunk;

        if (f->algo != HASH_BLAKE3 || e->n_workers < 2 || f->size <= p || (p & (p - 1)) != 0 ||
            p % BLAKE3_CHUNK_LEN != 0)
                return;
        f->merge = malloc(sizeof(Blake3Merge));
        if (!f->merge)
                return; /* hashed on one worker instead */
        blake3_merge_init(f->merge);
        f->parallel = true;
}

static void file_opened(Engine *e, FileSlot *f)
{
        if (f->status != ENGINE_FILE_OK || f->state != FILE_OPENING) {
                file_abort(e, f, f->status, f->error);
                file_finish_io(e, f);
                return;
        }

        mode_t m = f->stx.stx_mode;
        if (S_ISDIR(m)) {
                file_abort(e, f, ENGINE_FILE_ERROR, -EISDIR);
                file_finish_io(e, f);
                return;
        }

        if (f->job->options.regular_only && !f->fd_input) {
                /* Devices may be read as bounded streams; FIFOs and sockets by path never: an
                 * io_uring read of a FIFO that never had a writer does not complete, and pipes
                 * are for callers that pass the fd. */
                if (S_ISFIFO(m) || S_ISSOCK(m) || (!S_ISREG(m) && !f->job->options.max_file_size)) {
                        file_abort(e, f, ENGINE_FILE_ERROR, -ESPIPE);
                        file_finish_io(e, f);
                        return;
                }
                /* Opened O_NONBLOCK only so a FIFO's open could not hang; reads must block (on a
                 * regular file io_uring would answer -EAGAIN for uncached data otherwise). */
                int fl = fcntl(f->fd, F_GETFL);
                if (fl >= 0)
                        (void)fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK);
        }

        f->state = FILE_READING;
        if (S_ISREG(m) && f->stx.stx_size > 0) {
                f->seekable = true;
                f->size = f->stx.stx_size;
                f->check_change = !f->job->options.no_change_check;
                atomic_fetch_add(&f->job->bytes_total, f->size);
                if (f->job->options.max_file_size && f->size > f->job->options.max_file_size) {
                        file_abort(e, f, ENGINE_FILE_ERROR, -EFBIG);
                        file_finish_io(e, f);
                        return;
                }
                file_choose_strategy(e, f);
                file_choose_parallel(e, f);
                file_choose_span(e, f);
                /* Readahead advice only pays off for files longer than one buffer read through the
                 * page cache. */
                if (f->size > e->buffer_size && f->strategy == ENGINE_READ_BUFFERED) {
                        ioring_fadvise(e->ring, f->fd, 0, f->size, POSIX_FADV_SEQUENTIAL, TAG(f, OP_FADVISE));
                        f->ops++;
                }
        } else {
                /* Empty regular files (and procfs-style files that report 0), pipes, sockets, char
                 * and block devices: read until EOF. Regular files and block devices keep offsets. */
                f->stream = true;
                f->seekable = S_ISREG(m) || S_ISBLK(m);
                f->check_change = S_ISREG(m) && !f->job->options.no_change_check;
        }
}

/* Reports every unopened input as cancelled. The caller has already unlinked j from the active
 * list: after the last post the consumer may free j, so nothing here reads j after it. */
static void job_cancel_unopened(Engine *e, EngineJob *j)
{
        size_t first = j->next_input, n = j->n_inputs;

        j->next_input = n;
        for (size_t i = first; i < n; i++) {
                j->inputs[i].fd = safe_close(j->inputs[i].fd);
                post_simple(e, j, i, ENGINE_FILE_CANCELLED, 0);
        }
}

static void active_remove_head(Engine *e)
{
        EngineJob *j = e->active_head;

        e->active_head = j->active_next;
        if (!e->active_head)
                e->active_tail = NULL;
        j->active_next = NULL;
        j->in_active = false;
}

/* Starts opening inputs while slots are free, one job after another in turn. */
static bool open_more(Engine *e)
{
        bool any = false;

        while (e->free_slots && e->active_head && e->n_open < e->open_cap) {
                EngineJob *j = e->active_head;

                if (j->next_input >= j->n_inputs || j->cancel_seen) {
                        bool cancel = j->cancel_seen;
                        active_remove_head(e);
                        if (cancel)
                                job_cancel_unopened(e, j);
                        continue;
                }

                FileSlot *f = e->free_slots;
                e->free_slots = f->next;
                JobInput *in = &j->inputs[j->next_input];

                HashCtx *ctx = f->ctx;
                *f = (FileSlot){ .job = j, .input = j->next_input, .algo = j->algo, .state = FILE_OPENING,
                                 .fd = -EBADF, .status = ENGINE_FILE_OK, .ctx = ctx, .chunk = e->buffer_size };
                atomic_store_explicit(&f->parts, 1, memory_order_relaxed);
                open_list_add(e, f);
                j->next_input++;
                atomic_store_explicit(&j->running, true, memory_order_relaxed);

                /* Rotate (the next slot goes to the next job), and take a job whose inputs are all
                 * opened off the list now, before its files can finish: once its last result is
                 * posted the consumer may free it, and a job left at the head (the only job, when
                 * the slots ran out with its last input) was read again after that. With a head
                 * there is always a tail, and when it is not the head it stays after the head is
                 * removed; the local makes both plain to the analyzer. */
                EngineJob *tail = e->active_tail;
                if (j->next_input >= j->n_inputs)
                        active_remove_head(e);
                else if (tail && e->active_head != tail) {
                        active_remove_head(e);
                        j->in_active = true;
                        tail->active_next = j;
                        e->active_tail = j;
                }

                if (in->path && e->linked && path_stat(in->path, &f->stx) >= 0 && linked_eligible(e, j, &f->stx)) {
                        /* The chain starts from issue_reads() when a pool slot is free. */
                        f->linked = true;
                        f->stat_ok = true;
                        f->size = f->stx.stx_size;
                        f->check_change = !j->options.no_change_check;
                } else if (in->path) {
                        f->stx = (struct statx){};
                        ioring_openat(e->ring, in->path, job_open_flags(j), TAG(f, OP_OPEN));
                        f->ops++;
                } else {
                        f->fd = TAKE_FD(in->fd);
                        f->fd_input = true;
                        e->n_fds++;
                        int k = file_stat(f->fd, &f->stx);
                        if (k < 0)
                                file_set_error(f, ENGINE_FILE_ERROR, k);
                        else
                                f->stat_ok = true;
                        file_opened(e, f);
                }
                /* Nothing here reads j any more: file_opened() may have posted its last result. */
                any = true;
        }
        return any;
}

static void handle_completion(Engine *e, const IoCompletion *c)
{
        unsigned op = TAG_OP(c->tag);

        if (op == OP_READ) {
                Buffer *b = TAG_PTR(c->tag);
                FileSlot *f = b->file;

                if (f->linked) {
                        linked_read_done(e, b, c->res);
                        return;
                }
                f->ops--;
                b->in_flight = false;

                if (f->state != FILE_READING) {
                        /* Draining after an error or cancel: the buffer is not wanted any more. */
                        f->reads_in_flight--;
                        span_split(e, b);
                        file_drop_idle_buffers(e, f);
                        file_finish_io(e, f);
                        return;
                }

                if (c->res == -EAGAIN || c->res == -EINTR) {
                        file_issue_read(e, f, b);
                        return;
                }
                if (c->res == -EINVAL && b->direct_read) {
                        /* O_DIRECT refused this read after all (an alignment the statx did not
                         * announce, a short read that left an unaligned offset): finish the file
                         * through the page cache. Other reads issued O_DIRECT before the switch
                         * come back the same way and are simply issued again. */
                        if (f->strategy == ENGINE_READ_DIRECT) {
                                int fl = fcntl(f->fd, F_GETFL);
                                if (fl >= 0 && fcntl(f->fd, F_SETFL, fl & ~O_DIRECT) >= 0) {
                                        f->strategy = ENGINE_READ_BUFFERED;
                                        f->span = 1;
                                }
                        }
                        if (f->strategy == ENGINE_READ_BUFFERED) {
                                b->want = (uint32_t)MIN((uint64_t)b->want, f->size - b->offset);
                                file_issue_read(e, f, b);
                                return;
                        }
                }
                if (c->res == -EOPNOTSUPP && f->job->options.dontcache && e->dontcache_ok) {
                        e->dontcache_ok = false; /* the filesystem cannot do RWF_DONTCACHE: plain reads */
                        file_issue_read(e, f, b);
                        return;
                }

                f->reads_in_flight--;
                if (c->res < 0) {
                        /* b (and its followers) no longer in flight, so file_abort() hands them
                         * back to the pool. */
                        span_split(e, b);
                        file_abort(e, f, ENGINE_FILE_ERROR, c->res);
                        file_finish_io(e, f);
                        return;
                }

                b->got += (uint32_t)c->res;
                if (c->res == 0) {
                        bool truncated = !f->stream && b->offset + b->got < f->size;
                        b->done = true;
                        span_split(e, b);
                        if (truncated) {
                                /* EOF before the size stat gave: truncated while we read. */
                                file_abort(e, f, ENGINE_FILE_CHANGED, 0);
                                file_finish_io(e, f);
                                return;
                        }
                        f->eof = true;
                } else if (!f->stream && b->got < b->want && b->offset + b->got < f->size) {
                        /* Short read of a regular file: resume where it stopped. */
                        f->reads_in_flight++;
                        file_issue_read(e, f, b);
                        return;
                } else {
                        b->done = true;
                        span_split(e, b);
                        if (f->stream)
                                f->issue_off += b->got;
                }

                uint64_t max = f->job->options.max_file_size;
                if (max && f->read_bytes + b->got > max && f->stream) {
                        file_abort(e, f, ENGINE_FILE_ERROR, -EFBIG);
                        file_finish_io(e, f);
                        return;
                }
                file_dispatch_ready(e, f);
                return;
        }

        FileSlot *f = TAG_PTR(c->tag);
        f->ops--;

        switch (op) {
        case OP_OPEN:
                if (c->res >= 0) {
                        if (f->state == FILE_OPENING && f->status == ENGINE_FILE_OK) {
                                f->fd = c->res;
                                e->n_fds++;
                                int k = file_stat(f->fd, &f->stx);
                                if (k < 0)
                                        file_set_error(f, ENGINE_FILE_ERROR, k);
                                else
                                        f->stat_ok = true;
                        } else
                                (void)close(c->res); /* cancelled meanwhile */
                } else if ((c->res == -EMFILE || c->res == -ENFILE) && e->n_fds > 0 &&
                           f->state == FILE_OPENING) {
                        /* Out of fds, but some are ours and will be closed: queue this open until
                         * one is, and open fewer files at once from now on. */
                        f->reopen = true;
                        e->open_cap = MAX(1u, e->n_fds);
                } else
                        file_set_error(f, c->res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, c->res);
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
                e->n_fds--;
                /* One fd freed: one deferred open may go. When we hold none any more, waiting
                 * cannot help, so all go (and fail for real if the fds are still taken). */
                while (e->deferred) {
                        FileSlot *d = e->deferred;
                        e->deferred = d->deferred_next;
                        d->deferred_next = NULL;
                        d->reopen = false;
                        ioring_openat(e->ring, d->job->inputs[d->input].path, job_open_flags(d->job),
                                      TAG(d, OP_OPEN));
                        d->ops++;
                        if (e->n_fds > 0)
                                break;
                }
                break;
        default:
                abort();
        }

        if (f->linked) {
                linked_settle(e, f);
                return;
        }
        if (f->ops > 0)
                return;
        if (f->state == FILE_OPENING && f->reopen) {
                f->deferred_next = e->deferred;
                e->deferred = f;
        } else if (f->state == FILE_OPENING)
                file_opened(e, f);
        else if (f->state == FILE_CLOSING) {
                f->state = FILE_IO_DONE;
                open_list_remove(e, f);
                if (f->worker_started && !f->worker_closed)
                        send_work(e, f, NULL, 0, WORK_ABORT);
                engine_file_release(e, f, NULL);
        } else if (f->state == FILE_DRAINING)
                file_finish_io(e, f);
        else if (f->state == FILE_READING)
                file_dispatch_ready(e, f);
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

static void handle_control(Engine *e)
{
        EngineJob **jobs;
        size_t n;

        atomic_store(&e->control_pending, false);

        pthread_mutex_lock(&e->control_lock);
        jobs = e->new_jobs;
        n = e->n_new_jobs;
        e->new_jobs = NULL;
        e->n_new_jobs = e->n_new_jobs_alloc = 0;
        pthread_mutex_unlock(&e->control_lock);

        for (size_t i = 0; i < n; i++) {
                EngineJob *j = jobs[i];
                if (j->n_inputs == 0) {
                        bool c = atomic_load(&j->cancel_requested);
                        event_push(e, &(Event){ .type = EVENT_JOB, .job = j,
                                                .job_result = c ? ENGINE_JOB_CANCELLED : ENGINE_JOB_DONE });
                        continue;
                }
                j->in_active = true;
                if (e->active_tail)
                        e->active_tail->active_next = j;
                else
                        e->active_head = j;
                e->active_tail = j;
        }
        free(jobs);

        if (atomic_exchange(&e->cancel_pending, false) || atomic_load(&e->shutdown)) {
                bool all = atomic_load(&e->shutdown);

                for (EngineJob *j = e->active_head; j; j = j->active_next)
                        if (all || atomic_load(&j->cancel_requested)) {
                                atomic_store(&j->cancel_requested, true);
                                j->cancel_seen = true;
                        }
                for (FileSlot *f = e->open_head, *next; f; f = next) {
                        next = f->next;
                        if (all || atomic_load(&f->job->cancel_requested)) {
                                atomic_store(&f->job->cancel_requested, true);
                                file_abort(e, f, ENGINE_FILE_CANCELLED, 0);
                                file_finish_io(e, f);
                        }
                }
                /* Jobs whose inputs all wait unopened are finished here, not when a slot frees. */
                for (EngineJob **p = &e->active_head, *j; (j = *p);) {
                        if (j->cancel_seen) {
                                *p = j->active_next;
                                j->active_next = NULL;
                                j->in_active = false;
                                job_cancel_unopened(e, j);
                        } else
                                p = &j->active_next;
                }
                e->active_tail = NULL;
                for (EngineJob *j = e->active_head; j; j = j->active_next)
                        e->active_tail = j;
        }
}

static bool io_idle(Engine *e)
{
        return !e->open_head && !e->active_head && ioring_in_flight(e->ring) == 0;
}

/* The kernel's cap on one registered buffer (io_buffer_validate()). */
#define REGISTER_MAX_BYTES ((size_t)1 << 30)

static int io_setup(Engine *e)
{
        struct iovec *iov;
        unsigned entries, n_iov;
        bool one = e->buf_mem_size <= REGISTER_MAX_BYTES;
        size_t request = e->config.direct_request ? e->config.direct_request : ENGINE_DIRECT_REQUEST;
        int k;

        /* The pool is registered as one buffer when the kernel allows it: a READ_FIXED may then
         * target any range of it, so one read can fill several adjacent slots. Larger pools are
         * registered slot by slot, and read one slot per request. */
        n_iov = one ? 1 : e->n_buffers + e->n_small;
        iov = calloc(n_iov, sizeof(*iov));
        if (!iov)
                return -ENOMEM;
        if (one)
                iov[0] = (struct iovec){ .iov_base = e->buf_mem, .iov_len = e->buf_mem_size };
        else
                for (unsigned i = 0; i < e->n_buffers + e->n_small; i++) {
                        Buffer *b = i < e->n_buffers ? &e->buffers[i] : &e->small[i - e->n_buffers];
                        iov[i] = (struct iovec){ .iov_base = b->data, .iov_len = b->small ? e->small_size : e->buffer_size };
                }

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
                e->linked = ioring_enable_direct(e->ring, e->max_open) >= 0;
        for (unsigned i = 0; one && i < e->n_buffers; i++)
                e->buffers[i].index = 0;
        for (unsigned i = 0; one && i < e->n_small; i++)
                e->small[i].index = 0;

        /* Slots per O_DIRECT read: see file_choose_span(). Unregistered and pread reads take any
         * address, so only a pool registered slot by slot keeps one slot per read. */
        e->max_span = 1;
        if (one || e->io_mode != IO_MODE_URING_REGISTERED)
                e->max_span = (unsigned)MAX((size_t)1, MIN(request / e->buffer_size,
                                                           MIN((size_t)e->n_buffers / 4, REGISTER_MAX_BYTES / e->buffer_size)));
        return 0;
}

static void *io_main(void *arg)
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

        for (;;) {
                bool busy = false;

                busy |= drain_returns(e);
                if (atomic_load_explicit(&e->control_pending, memory_order_acquire))
                        handle_control(e);
                if (atomic_load(&e->shutdown) && io_idle(e) && e->n_free_buffers == e->n_buffers &&
                    e->n_free_small == e->n_small) {
                        bool all_slots = true;
                        for (unsigned i = 0; i < e->max_open; i++)
                                if (e->slots[i].state != FILE_FREE)
                                        all_slots = false;
                        if (all_slots)
                                break;
                }
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
                 * or a wake-up (a worker returning a buffer, a new job, a cancel). */
                parker_prepare(&e->io_parker);
                if (returns_pending(e) || atomic_load(&e->control_pending)) {
                        parker_cancel(&e->io_parker);
                        continue;
                }
                (void)ioring_submit(e->ring, true);
                parker_cancel(&e->io_parker);
        }
        return NULL;
}

static void io_wake(Engine *e)
{
        if (parker_claim_wake(&e->io_parker))
                (void)!write(e->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/* ---- construction ---- */

static unsigned online_cpus(int *cpus, unsigned max)
{
        cpu_set_t set;
        unsigned n = 0;

        if (sched_getaffinity(0, sizeof(set), &set) < 0) {
                long c = sysconf(_SC_NPROCESSORS_ONLN);
                for (long i = 0; i < c && n < max; i++)
                        cpus[n++] = (int)i;
        } else
                for (int i = 0; i < CPU_SETSIZE && n < max; i++)
                        if (CPU_ISSET(i, &set))
                                cpus[n++] = i;
        /* None found (sysconf() failed): one worker, not pinned, rather than pinned to garbage. */
        if (n == 0)
                cpus[n++] = -1;
        return n;
}

int engine_new(const EngineConfig *config, Engine **ret)
{
        EngineConfig cfg = config ? *config : (EngineConfig){};
        int cpus[1024];
        unsigned n_cpus;
        Engine *e;
        int k;

        if (cfg.io_mode < 0 || cfg.io_mode >= _IO_MODE_MAX || cfg.open_mode < 0 ||
            cfg.open_mode >= _ENGINE_OPEN_MODE_MAX)
                return -EINVAL;
        if (cfg.buffer_size > ENGINE_MAX_BUFFER_SIZE || cfg.workers > ENGINE_MAX_WORKERS ||
            cfg.buffers > ENGINE_MAX_BUFFERS || cfg.max_open > ENGINE_MAX_OPEN)
                return -EINVAL;

        k = hash_global_init();
        if (k < 0)
                return k;
        k = mapguard_install();
        if (k < 0)
                return k;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->config = cfg;
        e->wake_fd = e->event_fd = -EBADF;
        e->dontcache_ok = true;
        pthread_mutex_init(&e->control_lock, NULL);
        pthread_mutex_init(&e->event_lock, NULL);
        pthread_mutex_init(&e->init_lock, NULL);
        pthread_cond_init(&e->init_cond, NULL);

        n_cpus = online_cpus(cpus, ELEMENTSOF(cpus));
        e->n_workers = cfg.workers ? cfg.workers : n_cpus;
        e->buffer_size = cfg.buffer_size ? ALIGN_TO(cfg.buffer_size, (size_t)4096) : DEFAULT_BUFFER_SIZE;
        e->n_buffers = cfg.buffers ? cfg.buffers : MAX((unsigned)DEFAULT_BUFFERS, 4 * e->n_workers);
        e->max_open = cfg.max_open ? cfg.max_open : DEFAULT_MAX_OPEN;
        e->open_cap = e->max_open;

        e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        e->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->wake_fd < 0 || e->event_fd < 0) {
                k = -errno;
                goto fail;
        }

        /* Small slots only where they are smaller than the pool's, and never past the kernel's
         * caps on what one process registers (16384 buffers). */
        if (e->buffer_size > SMALL_SLOT_SIZE && (size_t)e->n_buffers + SMALL_SLOTS_MAX <= ENGINE_MAX_BUFFERS) {
                e->small_size = SMALL_SLOT_SIZE;
                e->n_small = MIN(e->max_open, SMALL_SLOTS_MAX);
        }
        e->buf_mem_size = e->buffer_size * e->n_buffers + e->small_size * e->n_small;
        e->buf_mem = mmap(NULL, e->buf_mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (e->buf_mem == MAP_FAILED) {
                e->buf_mem = NULL;
                k = -ENOMEM;
                goto fail;
        }
        /* Huge pages where the kernel has them (THP "madvise" is Debian's default): an O_DIRECT read
         * into 4 KiB pages is one segment per page, and a virtio disk takes 254 segments per request,
         * so each 1 MiB read went to the device as two requests (1016 + 8 KiB; measured: 490 KiB per
         * request on average). In 2 MiB pages a read is a few segments and reaches the device whole.
         * Best effort: without THP the pool is as before. */
        (void)madvise(e->buf_mem, e->buf_mem_size, MADV_HUGEPAGE);
        e->buffers = calloc(e->n_buffers, sizeof(Buffer));
        e->small = calloc(MAX(e->n_small, 1u), sizeof(Buffer));
        e->free_map = calloc(DIV_ROUND_UP(e->n_buffers, 64u), sizeof(uint64_t));
        e->slots = calloc(e->max_open, sizeof(FileSlot));
        e->workers = calloc(e->n_workers, sizeof(Worker));
        if (!e->buffers || !e->small || !e->free_map || !e->slots || !e->workers) {
                k = -ENOMEM;
                goto fail;
        }
        for (unsigned i = 0; i < e->n_buffers; i++) {
                e->buffers[i].data = e->buf_mem + (size_t)i * e->buffer_size;
                e->buffers[i].slot = i;
                e->buffers[i].index = (int)i;
                buffer_put(e, &e->buffers[i]);
        }
        for (unsigned i = 0; i < e->n_small; i++) {
                Buffer *b = &e->small[i];
                b->data = e->buf_mem + e->buffer_size * e->n_buffers + (size_t)i * e->small_size;
                b->slot = UINT_MAX; /* not in the pool's bitmap */
                b->index = (int)(e->n_buffers + i);
                b->small = true;
                buffer_put(e, b);
        }
        for (unsigned i = e->max_open; i-- > 0;) {
                k = hash_ctx_new(&e->slots[i].ctx);
                if (k < 0)
                        goto fail;
                e->slots[i].fd = -EBADF;
                slot_free(e, &e->slots[i]);
        }

        for (unsigned i = 0; i < e->n_workers; i++) {
                k = worker_start(&e->workers[i], e, i, cfg.no_pin ? -1 : cpus[i % n_cpus],
                                 (size_t)e->n_buffers + e->n_small + e->max_open + 1);
                if (k < 0)
                        goto fail;
        }

        k = -pthread_create(&e->io_thread, NULL, io_main, e);
        if (k < 0)
                goto fail;
        (void)pthread_setname_np(e->io_thread, "fhash-io");
        pthread_mutex_lock(&e->init_lock);
        while (!e->init_done)
                pthread_cond_wait(&e->init_cond, &e->init_lock);
        pthread_mutex_unlock(&e->init_lock);
        e->io_started = true;
        if (e->init_result < 0) {
                k = e->init_result;
                goto fail;
        }

        *ret = e;
        return 0;

fail:
        engine_free(e);
        return k;
}

Engine *engine_free(Engine *e)
{
        if (!e)
                return NULL;

        if (e->io_started) {
                if (e->init_result >= 0) {
                        atomic_store(&e->shutdown, true);
                        atomic_store(&e->control_pending, true);
                        io_wake(e);
                        (void)!write(e->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
                }
                (void)pthread_join(e->io_thread, NULL);
        }
        for (unsigned i = 0; e->workers && i < e->n_workers; i++)
                worker_stop(&e->workers[i]);

        /* Jobs queued but never seen by the I/O thread, and undelivered events, hold references. */
        for (size_t i = 0; i < e->n_new_jobs; i++)
                engine_job_unref(e->new_jobs[i]);
        free(e->new_jobs);
        for (size_t i = 0; i < e->n_events; i++)
                if (e->events[i].type == EVENT_JOB) {
                        e->events[i].job->finished = true;
                        e->events[i].job->engine = NULL;
                        engine_job_unref(e->events[i].job);
                }
        for (size_t i = e->dispatch_pos; i < e->n_dispatching; i++)
                if (e->dispatching[i].type == EVENT_JOB) {
                        e->dispatching[i].job->finished = true;
                        e->dispatching[i].job->engine = NULL;
                        engine_job_unref(e->dispatching[i].job);
                }
        free(e->events);
        free(e->dispatching);

        ioring_free(e->ring);
        for (unsigned i = 0; e->slots && i < e->max_open; i++)
                hash_ctx_free(e->slots[i].ctx);
        free(e->slots);
        free(e->buffers);
        free(e->small);
        free(e->free_map);
        free(e->workers);
        if (e->buf_mem)
                munmap(e->buf_mem, e->buf_mem_size);
        safe_close(e->wake_fd);
        safe_close(e->event_fd);
        pthread_mutex_destroy(&e->control_lock);
        pthread_mutex_destroy(&e->event_lock);
        pthread_mutex_destroy(&e->init_lock);
        pthread_cond_destroy(&e->init_cond);
        free(e);
        return NULL;
}

int engine_get_fd(Engine *e)
{
        return e->event_fd;
}

IoMode engine_get_io_mode(Engine *e)
{
        return e->io_mode;
}

unsigned engine_get_workers(Engine *e)
{
        return e->n_workers;
}

size_t engine_get_buffer_size(Engine *e)
{
        return e->buffer_size;
}

unsigned engine_get_buffers(Engine *e)
{
        return e->n_buffers;
}

unsigned engine_get_direct_span(Engine *e)
{
        return e->max_span;
}

EngineOpenMode engine_get_open_mode(Engine *e)
{
        return e->linked ? ENGINE_OPEN_LINKED : ENGINE_OPEN_CLASSIC;
}

uint64_t engine_get_files_linked(Engine *e)
{
        return atomic_load_explicit(&e->files_linked, memory_order_relaxed);
}

uint64_t engine_get_bytes_hashed(Engine *e)
{
        return atomic_load_explicit(&e->bytes_hashed, memory_order_relaxed);
}

unsigned engine_get_files_queued(Engine *e)
{
        return atomic_load_explicit(&e->files_queued, memory_order_relaxed);
}

int engine_dispatch(Engine *e)
{
        uint64_t v;
        int done = 0;

        /* Read the eventfd before taking the events: a result posted after the swap re-arms it. */
        (void)!read(e->event_fd, &v, sizeof(v));

        if (e->dispatch_pos == e->n_dispatching) {
                /* Swap the two arrays (each keeps its capacity): posters fill one while we walk the
                 * other. */
                pthread_mutex_lock(&e->event_lock);
                Event *evs = e->events;
                size_t n = e->n_events, cap = e->n_events_alloc;
                e->events = e->dispatching;
                e->n_events_alloc = e->n_dispatching_alloc;
                e->n_events = 0;
                e->dispatching = evs;
                e->n_dispatching_alloc = cap;
                e->n_dispatching = n;
                e->dispatch_pos = 0;
                pthread_mutex_unlock(&e->event_lock);
        }

        /* A bounded share per call: tens of thousands of results at once would otherwise keep the
         * caller's event loop from everything else (fhashd answered no method call for 25 s while
         * it turned 60,000 results into signals). What is left keeps the eventfd readable. */
        while (e->dispatch_pos < e->n_dispatching && done < ENGINE_DISPATCH_MAX) {
                Event *ev = &e->dispatching[e->dispatch_pos++];
                EngineJob *j = ev->job;

                done++;
                if (ev->type == EVENT_FILE) {
                        if (!j->orphaned && j->callbacks.file_done)
                                j->callbacks.file_done(j, &ev->file, j->userdata);
                        continue;
                }
                j->finished = true;
                if (!j->orphaned && j->callbacks.job_done)
                        j->callbacks.job_done(j, ev->job_result, j->userdata);
                engine_job_unref(j); /* the engine's reference, taken in engine_job_start() */
        }
        /* More to deliver: this batch's rest, or results posted since the eventfd was read (their
         * posters signalled only if the posting array was empty, which it may not have been). */
        bool more = e->dispatch_pos < e->n_dispatching;
        if (!more) {
                pthread_mutex_lock(&e->event_lock);
                more = e->n_events > 0;
                pthread_mutex_unlock(&e->event_lock);
        }
        if (more)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
        return done;
}

int engine_run_once(Engine *e, uint64_t timeout_usec)
{
        struct pollfd pfd = { .fd = e->event_fd, .events = POLLIN };
        int timeout = timeout_usec == UINT64_MAX ? -1 : (int)MIN(timeout_usec / 1000, (uint64_t)INT32_MAX);
        int k;

        k = poll(&pfd, 1, timeout);
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        return engine_dispatch(e);
}

/* ---- jobs ---- */

int engine_job_new(Engine *e, HashAlgo algo, const EngineJobOptions *options, EngineJob **ret)
{
        EngineJob *j;

        if (!e || algo < 0 || algo >= _HASH_ALGO_MAX)
                return -EINVAL;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        atomic_init(&j->n_ref, 1);
        j->engine = e;
        j->algo = algo;
        if (options)
                j->options = *options;
        *ret = j;
        return 0;
}

EngineJob *engine_job_ref(EngineJob *j)
{
        if (j)
                atomic_fetch_add(&j->n_ref, 1);
        return j;
}

static void job_free(EngineJob *j)
{
        for (size_t i = 0; i < j->n_inputs; i++) {
                free(j->inputs[i].path);
                safe_close(j->inputs[i].fd);
        }
        free(j->inputs);
        free(j);
}

EngineJob *engine_job_unref(EngineJob *j)
{
        if (!j)
                return NULL;
        unsigned left = atomic_fetch_sub(&j->n_ref, 1) - 1;
        if (left == 0)
                job_free(j);
        else if (left == 1 && j->started && !j->finished && !j->orphaned) {
                /* Only the engine's own reference is left: nobody wants the results. */
                j->orphaned = true;
                engine_job_cancel(j);
        }
        return NULL;
}

static int job_add_input(EngineJob *j, const JobInput *in)
{
        if (j->started)
                return -EBUSY;
        if (j->n_inputs == j->n_inputs_alloc) {
                size_t n = j->n_inputs_alloc ? j->n_inputs_alloc * 2 : 16;
                JobInput *p = realloc(j->inputs, n * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                j->inputs = p;
                j->n_inputs_alloc = n;
        }
        if (j->n_inputs >= INT32_MAX)
                return -E2BIG;
        j->inputs[j->n_inputs] = *in;
        return (int)j->n_inputs++;
}

int engine_job_add_path(EngineJob *j, const char *path)
{
        char *p;
        int k;

        if (!path || !*path)
                return -EINVAL;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        k = job_add_input(j, &(JobInput){ .path = p, .fd = -EBADF });
        if (k < 0)
                free(p);
        return k;
}

int engine_job_add_fd(EngineJob *j, int fd)
{
        if (fd < 0)
                return -EBADF;
        return job_add_input(j, &(JobInput){ .fd = fd });
}

int engine_job_start(EngineJob *j, const EngineJobCallbacks *callbacks, void *userdata)
{
        Engine *e = j->engine;

        if (j->started)
                return -EBUSY;
        if (!e)
                return -ESHUTDOWN;
        if (callbacks)
                j->callbacks = *callbacks;
        j->userdata = userdata;

        pthread_mutex_lock(&e->control_lock);
        if (e->n_new_jobs == e->n_new_jobs_alloc) {
                size_t n = e->n_new_jobs_alloc ? e->n_new_jobs_alloc * 2 : 8;
                EngineJob **p = realloc(e->new_jobs, n * sizeof(EngineJob *));
                if (!p) {
                        pthread_mutex_unlock(&e->control_lock);
                        return -ENOMEM;
                }
                e->new_jobs = p;
                e->n_new_jobs_alloc = n;
        }
        j->started = true;
        atomic_store(&j->results_pending, j->n_inputs);
        atomic_store(&j->start_usec, now_usec());
        atomic_fetch_add(&e->files_queued, (unsigned)j->n_inputs);
        e->new_jobs[e->n_new_jobs++] = engine_job_ref(j);
        pthread_mutex_unlock(&e->control_lock);

        atomic_store_explicit(&e->control_pending, true, memory_order_release);
        io_wake(e);
        return 0;
}

void engine_job_cancel(EngineJob *j)
{
        Engine *e = j->engine;

        if (!j->started || j->finished || !e)
                return;
        if (atomic_exchange(&j->cancel_requested, true))
                return;
        atomic_store(&e->cancel_pending, true);
        atomic_store_explicit(&e->control_pending, true, memory_order_release);
        io_wake(e);
}

void engine_job_get_progress(EngineJob *j, EngineJobProgress *ret)
{
        *ret = (EngineJobProgress){
                .bytes_done = atomic_load_explicit(&j->bytes_done, memory_order_relaxed),
                .bytes_total = atomic_load_explicit(&j->bytes_total, memory_order_relaxed),
                .files_done = atomic_load_explicit(&j->files_done, memory_order_relaxed),
                .files_total = j->n_inputs,
                .files_failed = atomic_load_explicit(&j->files_failed, memory_order_relaxed),
                .start_usec = atomic_load_explicit(&j->start_usec, memory_order_relaxed),
                .running = atomic_load_explicit(&j->running, memory_order_relaxed),
        };
}

size_t engine_job_get_n_inputs(EngineJob *j)
{
        return j->n_inputs;
}

HashAlgo engine_job_get_algo(EngineJob *j)
{
        return j->algo;
}

bool engine_job_is_finished(EngineJob *j)
{
        return j->finished;
}
