/* SPDX-License-Identifier: MIT */
/* file.c: a file's life on the I/O thread once it is open: errors, aborts, buffers to the worker in
 * order, the change check and the close */
#include <stdlib.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

void slot_free(Engine *e, FileSlot *f)
{
        f->state = FILE_FREE;
        f->job = NULL;
        f->next = e->free_slots;
        e->free_slots = f;
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
void file_drop_idle_buffers(Engine *e, FileSlot *f)
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
void file_abort(Engine *e, FileSlot *f, EngineFileStatus st, int error)
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
        if (f->ops > 0 && st == ENGINE_FILE_CANCELLED && f->linked)
                linked_abort(e, f);
        else if (f->ops > 0 && st == ENGINE_FILE_CANCELLED) {
                if (f->fd >= 0)
                        ioring_cancel_fd(e->ring, f->fd, TAG(f, OP_CANCEL));
                else
                        ioring_cancel_tag(e->ring, TAG(f, OP_OPEN), TAG(f, OP_CANCEL));
                f->ops++;
        }
}

static void file_check_change(FileSlot *f);

/* The I/O side is finished: close the fd (after a last statx for the change check). */
void file_finish_io(Engine *e, FileSlot *f)
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
void file_dispatch_ready(Engine *e, FileSlot *f)
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

