/* SPDX-License-Identifier: MIT */
/* open.c: the open stage: a path opened through the ring (or an fd taken over), statx of the fd, the
 * type decides how it is read; running out of fds waits for ours to close */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

int job_open_flags(const EngineJob *j)
{
        return O_RDONLY | O_CLOEXEC | O_NOCTTY | (j->options.regular_only ? O_NONBLOCK : 0);
}

void open_list_add(Engine *e, FileSlot *f)
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

void deferred_remove(Engine *e, FileSlot *f)
{
        for (FileSlot **p = &e->deferred; *p; p = &(*p)->deferred_next)
                if (*p == f) {
                        *p = f->deferred_next;
                        break;
                }
        f->deferred_next = NULL;
        f->reopen = false;
}

void open_list_remove(Engine *e, FileSlot *f)
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

/*
 * statx of an open fd runs here, synchronously, not through the ring: io_uring always punts
 * IORING_OP_STATX to an io-wq thread, and for small files that hand-off (twice per file) cost more
 * than the whole rest of the file (measured: 65k -> see the commit message). On an open fd the
 * inode is in memory, so the call does no I/O on local filesystems.
 */
int file_stat(int fd, struct statx *stx)
{
        return RET_NERRNO(statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_INO, stx));
}

/* Starts f, just given its input: a path into the linked chain or an openat, an fd to its statx. */
void file_start(Engine *e, FileSlot *f)
{
        EngineJob *j = f->job;
        JobInput *in = &j->inputs[f->input];

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
}

void file_opened(Engine *e, FileSlot *f)
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
        } else {
                /* Empty regular files (and procfs-style files that report 0), pipes, sockets, char
                 * and block devices: read until EOF. Regular files and block devices keep offsets. */
                f->stream = true;
                f->seekable = S_ISREG(m) || S_ISBLK(m);
                f->check_change = S_ISREG(m) && !f->job->options.no_change_check;
        }
}


void open_done(Engine *e, FileSlot *f, int res)
{
        if (res >= 0) {
                if (f->state == FILE_OPENING && f->status == ENGINE_FILE_OK) {
                        f->fd = res;
                        e->n_fds++;
                        int k = file_stat(f->fd, &f->stx);
                        if (k < 0)
                                file_set_error(f, ENGINE_FILE_ERROR, k);
                        else
                                f->stat_ok = true;
                } else
                        (void)close(res); /* cancelled meanwhile */
        } else if ((res == -EMFILE || res == -ENFILE) && e->n_fds > 0 && f->state == FILE_OPENING) {
                /* Out of fds, but some are ours and will be closed: queue this open until one is,
                 * and open fewer files at once from now on. */
                f->reopen = true;
                e->open_cap = MAX(1u, e->n_fds);
        } else
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
}

void close_done(Engine *e)
{
        e->n_fds--;
        /* One fd freed: one deferred open may go. When we hold none any more, waiting cannot help,
         * so all go (and fail for real if the fds are still taken). */
        while (e->deferred) {
                FileSlot *d = e->deferred;
                e->deferred = d->deferred_next;
                d->deferred_next = NULL;
                d->reopen = false;
                ioring_openat(e->ring, d->job->inputs[d->input].path, job_open_flags(d->job), TAG(d, OP_OPEN));
                d->ops++;
                if (e->n_fds > 0)
                        break;
        }
}

/* After any of f's operations other than a read completed: move f on once none is left. */
void file_op_done(Engine *e, FileSlot *f)
{
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
