/* SPDX-License-Identifier: MIT */
/* linked.c: small files as one open -> read -> close chain in the ring, with no fd in the process */
#include <fcntl.h>

#include "engine/engine-internal.h"
#include "hash/fsverity.h"
#include "basic/macro.h"

/*
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

int path_stat(const char *path, struct statx *stx)
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
bool linked_eligible(Shard *s, const EngineJob *j, const struct statx *stx)
{
        uint64_t limit = s->buffer_size;

        if (!S_ISREG(stx->stx_mode))
                return false;
        /* A verity file's fs-verity digest is the kernel's, with no read: the classic open asks. */
        if ((stx->stx_attributes & STATX_ATTR_VERITY) && fsverity_tree_hash(j->algo) >= 0)
                return false;
        if (j->options.strategy == ENGINE_READ_AUTO)
                limit = MIN(limit, ENGINE_PROBE_MIN);
        else if (j->options.strategy != ENGINE_READ_BUFFERED)
                return false;
        if (stx->stx_size >= limit)
                return false;
        return !j->options.max_file_size || stx->stx_size <= j->options.max_file_size;
}

static unsigned slot_index(const Shard *s, const FileSlot *f)
{
        return (unsigned)(f - s->slots);
}

/* Starts f's chain when a pool slot is free (from issue_reads(), like any read). */
Buffer *linked_start(Shard *s, FileSlot *f)
{
        /* Strictly smaller than the slot: the short read is the proof of EOF. */
        Buffer *b = buffer_get_for(s, f, f->size + 1);
        int rwf = (f->job->options.dontcache && atomic_load_explicit(&s->engine->dontcache_ok, memory_order_relaxed)) ? RWF_DONTCACHE : 0;

        if (!b)
                return NULL;
        if (s->config.test_linked_hook)
                s->config.test_linked_hook(f->job->inputs[f->input].path, s->config.test_linked_userdata);
        /* Ask for the whole slot: a file that grew since the statx shows as more bytes than its size. */
        *b = (Buffer){ .data = b->data, .view = b->data, .index = b->index, .slot = b->slot, .span = 1,
                       .small = b->small, .owner = BUF_RING, .file = f, .group = b->group,
                       .want = (uint32_t)(b->small ? s->small_size : s->buffer_size), .in_flight = true };
        f->fifo_head = f->fifo_tail = b;
        f->reads_in_flight = 1;
        f->progress_usec = s->now;
        /* O_CLOEXEC is for fds: the kernel refuses it (EINVAL) on an open into a direct slot. */
        ioring_open_read_close(s->ring, f->job->inputs[f->input].path, job_open_flags(f->job) & ~O_CLOEXEC,
                               slot_index(s, f),
                               b->data, b->want, shard_buf_index(s, b), rwf,
                               TAG(f, OP_LINK_OPEN), TAG(b, OP_READ), TAG(f, OP_LINK_CLOSE));
        f->ops += 3;
        return b;
}

/* Back to the classic path, from the open on: the chain is over, its slot empty, its buffer unused. */
static void linked_redo(Shard *s, FileSlot *f)
{
        if (f->fifo_head)
                buffer_put(s, f->fifo_head);
        f->fifo_head = f->fifo_tail = NULL;
        f->reads_in_flight = 0;
        f->linked = f->redo = f->fixed_open = f->fixed_closed = false;
        f->stat_ok = false;
        f->size = 0;
        file_open_path(s, f);
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
static void linked_finish(Shard *s, FileSlot *f)
{
        Buffer *b = f->fifo_head;

        if (f->status != ENGINE_FILE_OK) {
                /* The open failed (its errno), or a cancel. */
                file_abort(s, f, f->status, f->error);
                file_finish_io(s, f);
                return;
        }
        if (f->redo || !b) {
                linked_redo(s, f);
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
                file_abort(s, f, ENGINE_FILE_CHANGED, 0);
                file_finish_io(s, f);
                return;
        }

        f->state = FILE_READING;
        if (f->size > 0)
                f->strategy = ENGINE_READ_BUFFERED;
        f->seekable = true;
        f->eof = true;
        f->issue_off = f->size;
        b->done = true;
        atomic_fetch_add_explicit(&s->engine->files_linked, 1, memory_order_relaxed);
        file_dispatch_ready(s, f);
}

/* After each of the chain's completions (and cancels): once none is left, make sure the direct slot
 * is empty (a chain whose close did not run), then finish the file. */
void linked_settle(Shard *s, FileSlot *f)
{
        if (f->ops > 0)
                return;
        if (f->fixed_open && !f->fixed_closed) {
                ioring_close_direct(s->ring, slot_index(s, f), TAG(f, OP_LINK_CLOSE));
                f->ops++;
                return;
        }
        if (f->state == FILE_OPENING)
                linked_finish(s, f);
        else
                file_finish_io(s, f);
}

void linked_read_done(Shard *s, Buffer *b, int res)
{
        FileSlot *f = b->file;

        f->ops--;
        f->reads_in_flight--;
        b->in_flight = false;
        if (f->state != FILE_OPENING)
                file_drop_idle_buffers(s, f); /* cancelled meanwhile */
        else if (res >= 0)
                b->got = (uint32_t)res;
        else
                /* Read the classic way. -ECANCELED mostly means the open failed: then the open's
                 * status wins in linked_finish() and nothing is redone. */
                f->redo = true;
        linked_settle(s, f);
}

void linked_opened(FileSlot *f, int res)
{
        if (res >= 0)
                f->fixed_open = true;
        else if (res == -EMFILE || res == -ENFILE)
                f->redo = true; /* the classic path waits for fds to come free */
        else
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
}

void linked_closed(FileSlot *f, int res)
{
        /* -ECANCELED: the open failed, so the chain was cut and the slot never filled. Otherwise the
         * slot is empty now (-EBADF: it already was). */
        if (res != -ECANCELED)
                f->fixed_closed = true;
}


/* The chain's open (in io-wq, e.g. a path swapped for a FIFO) and its read; the close is hard-linked
 * to the read and runs whatever becomes of it. Either may be over already: the kernel then answers
 * -ENOENT. */
void linked_abort(Shard *s, FileSlot *f)
{
        ioring_cancel_tag(s->ring, TAG(f, OP_LINK_OPEN), TAG(f, OP_CANCEL));
        f->ops++;
        if (f->fifo_head && f->fifo_head->in_flight) {
                ioring_cancel_tag(s->ring, TAG(f->fifo_head, OP_READ), TAG(f, OP_CANCEL));
                f->ops++;
        }
}
