/* SPDX-License-Identifier: MIT */
/* open.c: the open stage: a path opened through the ring (or an fd taken over), statx of the fd, the
 * type decides how it is read; running out of fds waits for ours to close */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

int job_open_flags(const EngineJob *j)
{
        return O_RDONLY | O_CLOEXEC | O_NOCTTY | (j->options.regular_only ? O_NONBLOCK : 0);
}

void open_list_add(Engine *e, FileSlot *f)
{
        LIST_APPEND_BY(next, prev, e->open_head, e->open_tail, f);
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

/* Takes f off the open list, and off its group's and job's count (a zombie is off both already). */
void open_list_remove(Engine *e, FileSlot *f)
{
        if (f->zombie)
                return;
        if (e->read_cursor == f)
                e->read_cursor = f->next;
        LIST_REMOVE_TAIL_BY(next, prev, e->open_head, e->open_tail, f);
        e->n_open--;
        sched_uncharge_file(e, f);
}

/*
 * statx of an open fd runs here, synchronously, not through the ring: io_uring always punts
 * IORING_OP_STATX to an io-wq thread, and for small files that hand-off (twice per file) cost more
 * than the whole rest of the file (measured: 65k -> see the commit message). On an open fd the
 * inode is in memory, so the call does no I/O on local filesystems.
 */
int file_stat(int fd, struct statx *stx)
{
        return RET_NERRNO(statx(fd, "", AT_EMPTY_PATH, FILE_STATX_MASK, stx));
}

/* The statx of a fresh fd: here, or through the ring for an untrusted file system (then
 * file_opened() runs when it is back). */
static void file_stat_opened(Engine *e, FileSlot *f)
{
        if (f->untrusted) {
                ioring_statx(e->ring, f->fd, FILE_STATX_MASK, &f->stx, TAG(f, OP_STATX));
                f->ops++;
                return;
        }
        int k = file_stat(f->fd, &f->stx);
        if (k < 0)
                file_set_error(f, ENGINE_FILE_ERROR, k);
        else
                f->stat_ok = true;
}

/* A close that no file waits for: fds of inputs never opened, of opens that came back after a
 * cancel. Through the ring, never here: closing the last fd of a FUSE file sends FLUSH, which a
 * hung server never answers. */
void close_anon(Engine *e, int fd)
{
        ioring_close(e->ring, fd, TAG(e, OP_CLOSE_ANON));
        /* Now, before any result that follows is posted: whoever gets it may count its fds. */
        (void)ioring_submit(e->ring, false);
}

/* Starts f, just given its input: a path into the linked chain or an openat, an fd to its statx. */
void file_start(Engine *e, FileSlot *f)
{
        EngineJob *j = f->job;
        JobInput *in = &j->inputs[f->input];

        f->untrusted = in->flags & ENGINE_INPUT_UNTRUSTED_FS;
        if (in->path && e->linked && !f->untrusted && path_stat(in->path, &f->stx) >= 0 &&
            linked_eligible(e, j, &f->stx)) {
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
                file_stat_opened(e, f);
                if (f->ops == 0)
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
                if (f->fd_input) {
                        /* The caller's O_DIRECT stays theirs: read it with aligned requests. */
                        int fl = fcntl(f->fd, F_GETFL);
                        f->caller_direct = fl >= 0 && (fl & O_DIRECT);
                }
                file_choose_strategy(e, f);
                file_choose_parallel(e, f);
        } else {
                /* Empty regular files (and procfs-style files that report 0), pipes, sockets, char
                 * and block devices: read until EOF. Regular files and block devices keep offsets.
                 * Pipes, sockets and character devices wait for data in a poll, not in a read that
                 * would hold a buffer. */
                f->stream = true;
                f->seekable = S_ISREG(m) || S_ISBLK(m);
                f->pollable = S_ISFIFO(m) || S_ISSOCK(m) || S_ISCHR(m);
                f->check_change = S_ISREG(m) && !f->job->options.no_change_check;
                stream_arm(e, f);
        }
}

/* A stream with no read in flight that wants more: a poll first (see file_opened()). */
void stream_arm(Engine *e, FileSlot *f)
{
        if (!f->pollable || f->state != FILE_READING || f->eof || f->reads_in_flight > 0 || f->polling ||
            f->poll_ready)
                return;
        if (f->ops == 0)
                f->progress_usec = e->now;
        ioring_poll(e->ring, f->fd, POLLIN, TAG(f, OP_POLL));
        f->polling = true;
        f->ops++;
}

void poll_done(Engine *e, FileSlot *f, int res)
{
        f->polling = false;
        /* Data, EOF (POLLHUP) or an error: the read tells which. */
        if (f->state == FILE_READING)
                f->poll_ready = true;
}

/* A statx through the ring came back: the one after opening, or the one after reading. */
void statx_done(Engine *e, FileSlot *f, int res)
{
        if (f->state == FILE_CLOSING) {
                f->stat_after_ok = res >= 0;
                file_check_change(f);
        } else if (res < 0)
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
        else
                f->stat_ok = true;
}

void open_done(Engine *e, FileSlot *f, int res)
{
        if (res >= 0) {
                if (f->state == FILE_OPENING && f->status == ENGINE_FILE_OK) {
                        f->fd = res;
                        e->n_fds++;
                        file_stat_opened(e, f);
                } else
                        close_anon(e, res); /* cancelled meanwhile */
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
        else if (f->state == FILE_CLOSING && f->fd >= 0)
                file_close(e, f); /* the statx after reading is back */
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
