/* SPDX-License-Identifier: MIT */
/* file.c: a file's life on its shard's I/O side once it is open: errors, aborts, buffers to the worker in
 * order, the change check and the close */
#include <stdlib.h>
#include <string.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

void slot_free(Shard *s, FileSlot *f)
{
        if (f->zombie)
                s->n_zombies--;
        f->state = FILE_FREE;
        f->job = NULL;
        f->zombie = false;
        f->next = s->free_slots;
        s->free_slots = f;
}

void file_set_error(FileSlot *f, EngineFileStatus st, int error)
{
        if (f->status != ENGINE_FILE_OK)
                return; /* the first reason wins */
        f->status = st;
        f->error = error;
}

/* A failed or cancelled file's FIFO: buffers whose read has come back (complete or not) are not
 * wanted any more and go back to the pool; those still in flight stay until their completion. */
void file_drop_idle_buffers(Shard *s, FileSlot *f)
{
        f->fifo_tail = NULL;
        for (Buffer **p = &f->fifo_head; *p;) {
                Buffer *b = *p;
                if (!b->in_flight) {
                        *p = b->next;
                        buffer_put(s, b);
                } else {
                        f->fifo_tail = b;
                        p = &b->next;
                }
        }
}

/* Asks the kernel to end f's operations in flight (they come back -ECANCELED, or done). */
static void file_cancel_ops(Shard *s, FileSlot *f)
{
        if (f->linked)
                linked_abort(s, f);
        else {
                if (f->fd >= 0)
                        ioring_cancel_fd(s->ring, f->fd, TAG(f, OP_CANCEL));
                else
                        ioring_cancel_tag(s->ring, TAG(f, OP_OPEN), TAG(f, OP_CANCEL));
                f->ops++;
        }
}

/* Stops a file: no more reads, in-flight operations cancelled (when the job is cancelled or the
 * file stalled: an error's are coming back anyway), the worker told to drop it. */
void file_abort(Shard *s, FileSlot *f, EngineFileStatus st, int error)
{
        file_set_error(f, st, error);
        if (f->state == FILE_DRAINING || f->state == FILE_CLOSING || f->state == FILE_IO_DONE)
                return;
        if (f->reopen)
                deferred_remove(s, f);
        f->state = FILE_DRAINING;
        f->eof = true;

        file_drop_idle_buffers(s, f);
        while (f->cv_wait) {
                Buffer *b = f->cv_wait;
                f->cv_wait = b->next;
                buffer_put(s, b);
        }

        if (f->worker_started && !f->worker_closed)
                send_work(s, f, NULL, 0, WORK_ABORT);

        /* A read from a pipe or a blocked open may never complete by itself. */
        if (f->ops > 0 && (st == ENGINE_FILE_CANCELLED || f->stalled))
                file_cancel_ops(s, f);
}

void file_close(Shard *s, FileSlot *f)
{
        ioring_close(s->ring, f->fd, TAG(f, OP_CLOSE));
        f->ops++;
        f->fd = -EBADF;
}

/* The I/O side is finished: close the fd (after a last statx for the change check, which for an
 * untrusted file system goes through the ring and closes when it is back: see file_op_done()). */
void file_finish_io(Shard *s, FileSlot *f)
{
        if (f->ops > 0 || f->pieces_out > 0 || f->state == FILE_CLOSING || f->state == FILE_IO_DONE)
                return;

        if (f->fd >= 0) {
                f->state = FILE_CLOSING;
                if (f->status == ENGINE_FILE_OK && f->check_change && f->stat_ok) {
                        if (f->untrusted) {
                                ioring_statx(s->ring, f->fd, FILE_STATX_MASK, &f->stx_after, TAG(f, OP_STATX));
                                f->ops++;
                                return;
                        }
                        f->stat_after_ok = file_stat(f->fd, &f->stx_after) >= 0;
                        file_check_change(f);
                }
                file_close(s, f);
                return;
        }

        f->state = FILE_IO_DONE;
        open_list_remove(s, f);
        if (f->worker_started && !f->worker_closed)
                send_work(s, f, NULL, 0, f->status == ENGINE_FILE_OK ? WORK_LAST : WORK_ABORT);
        engine_file_release(s, f, NULL);
}

static bool stx_time_eq(const struct statx_timestamp *a, const struct statx_timestamp *b)
{
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

void file_check_change(FileSlot *f)
{
        const struct statx *a = &f->stx, *b = &f->stx_after;

        if (f->status != ENGINE_FILE_OK || !f->stat_after_ok)
                return;
        /* Size and mtime (and identity): a rewrite in place changes mtime, truncation or growth the
         * size. A writer who puts mtime back (futimens) cannot put ctime back: a ctime change is a
         * change, unless the link count changed and size and mtime did not, which is what unlinking
         * (or linking) the file does to it; its bytes are the same, so an fd whose file was
         * unlinked meanwhile still hashes. */
        bool same_size = b->stx_size == a->stx_size, same_mtime = stx_time_eq(&b->stx_mtime, &a->stx_mtime);
        bool ctime_known = (a->stx_mask & b->stx_mask & STATX_CTIME) != 0;
        bool relinked = (a->stx_mask & b->stx_mask & STATX_NLINK) && b->stx_nlink != a->stx_nlink;
        if (!same_size || !same_mtime || b->stx_ino != a->stx_ino ||
            (ctime_known && !stx_time_eq(&b->stx_ctime, &a->stx_ctime) && !relinked) ||
            (!f->stream && !f->pseudo && f->read_bytes != a->stx_size))
                f->status = ENGINE_FILE_CHANGED;
}

/* Hands buffers that are complete, in file order, to the file's worker. */
void file_dispatch_ready(Shard *s, FileSlot *f)
{
        while (f->fifo_head && f->fifo_head->done) {
                Buffer *b = QUEUE_POP_BY(next, f->fifo_head, f->fifo_tail);
                uint32_t flags = 0;

                if (b->got == 0) {
                        buffer_put(s, b);
                        continue;
                }
                f->read_bytes += b->got;
                if (f->parallel) {
                        send_piece(s, f, b);
                        continue;
                }
                if (!f->stream && f->read_bytes >= f->size)
                        flags |= WORK_LAST;
                send_work(s, f, b, b->got, flags);
        }

        if (f->eof && !f->fifo_head && f->reads_in_flight == 0 && f->state == FILE_READING) {
                if (f->parallel) {
                        if (f->pieces_out > 0 || f->cv_wait)
                                return; /* the last CVs are still to come */
                } else if (!f->worker_closed)
                        send_work(s, f, NULL, 0, WORK_LAST);
                file_finish_io(s, f);
        }
}


/* The result as it stands; the cookie is read from the job, which is alive until it is posted. */
void file_result(const FileSlot *f, EngineFileResult *ret)
{
        EngineFileResult r = {
                .index = f->input,
                .status = f->status,
                .error = f->status == ENGINE_FILE_ERROR ? f->error : 0,
                .size = f->read_bytes,
                .strategy = f->strategy,
                .parallel = f->parallel,
                .shard = f->shard,
                .cookie = f->job->inputs[f->input].cookie,
        };

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
        *ret = r;
}

/*
 * No progress for the stall timeout: the file ends with -ETIMEDOUT (unless only its close is left:
 * its result stands), its operations are cancelled, and file_try_detach() posts its result and
 * gives its share back as soon as the worker has let go, even if the kernel never answers.
 */
void file_stall(Shard *s, FileSlot *f)
{
        f->stalled = true;
        if (f->state != FILE_CLOSING || f->fd >= 0) {
                file_set_error(f, ENGINE_FILE_ERROR, -ETIMEDOUT);
                if (f->state == FILE_CLOSING)
                        file_cancel_ops(s, f); /* an untrusted file's statx after reading */
                else
                        file_abort(s, f, ENGINE_FILE_ERROR, -ETIMEDOUT);
        }
        file_try_detach(s, f);
}

void file_try_detach(Shard *s, FileSlot *f)
{
        EngineFileResult r;

        if (f->posted || f->ops == 0 || atomic_load_explicit(&f->parts, memory_order_acquire) != 1)
                return; /* done, finishing by itself, or the worker still holds it */
        file_result(f, &r);
        /* Buffers the kernel still fills are nobody's share any more, nor is the slot. */
        for (Buffer *b = f->fifo_head; b; b = b->next)
                if (b->group) {
                        sched_uncharge_buffer(s, b->group, pool_is_small(&s->pool, b->slot));
                        b->group = NULL;
                }
        open_list_remove(s, f);
        f->zombie = true;
        s->n_zombies++;
        post_result(s->engine, f->job, &r);
        f->posted = true;
        f->job = NULL;
}
