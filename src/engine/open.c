/* SPDX-License-Identifier: MIT */
/* open.c: the open stage: a path opened through the ring (or an fd taken over), statx of the fd, the
 * type decides how it is read; running out of fds waits for ours to close */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>

#include "engine/engine-internal.h"
#include "hash/fsverity.h"
#include "basic/macro.h"

int job_open_flags(const EngineJob *j)
{
        return O_RDONLY | O_CLOEXEC | O_NOCTTY | (j->options.regular_only ? O_NONBLOCK : 0);
}

void open_list_add(Shard *s, FileSlot *f)
{
        LIST_APPEND_BY(next, prev, s->open_head, s->open_tail, f);
        s->n_open++;
}

void deferred_remove(Shard *s, FileSlot *f)
{
        for (FileSlot **p = &s->deferred; *p; p = &(*p)->deferred_next)
                if (*p == f) {
                        *p = f->deferred_next;
                        break;
                }
        f->deferred_next = NULL;
        f->reopen = false;
        atomic_store(&s->has_deferred, s->deferred != NULL);
}

/* Takes f off the open list, and off its group's and job's count (a zombie is off both already). */
void open_list_remove(Shard *s, FileSlot *f)
{
        if (f->zombie)
                return;
        if (s->read_cursor == f)
                s->read_cursor = f->next;
        LIST_REMOVE_TAIL_BY(next, prev, s->open_head, s->open_tail, f);
        s->n_open--;
        sched_uncharge_file(s, f);
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
static void file_stat_opened(Shard *s, FileSlot *f)
{
        if (f->untrusted) {
                ioring_statx(s->ring, f->fd, FILE_STATX_MASK, &f->stx, TAG(f, OP_STATX));
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
void close_anon(Shard *s, int fd)
{
        ioring_close(s->ring, fd, TAG(s, OP_CLOSE_ANON));
        /* Now, before any result that follows is posted: whoever gets it may count its fds. */
        (void)ioring_submit(s->ring, false);
}

/* Starts f, just given its input: a path into the linked chain or an openat, an fd to its statx. */
void file_start(Shard *s, FileSlot *f)
{
        EngineJob *j = f->job;
        JobInput *in = &j->inputs[f->input];

        f->untrusted = in->flags & ENGINE_INPUT_UNTRUSTED_FS;
        if (in->path && s->linked && !f->untrusted && !in->dir && !j->options.creds &&
            path_stat(in->path, &f->stx) >= 0 &&
            linked_eligible(s, j, &f->stx)) {
                /* The chain starts from issue_reads() when a pool slot is free. */
                f->linked = true;
                f->stat_ok = true;
                f->size = f->stx.stx_size;
                f->check_change = !j->options.no_change_check;
        } else if (in->path) {
                f->stx = (struct statx){};
                file_open_path(s, f);
        } else {
                f->fd = TAKE_FD(in->fd);
                f->fd_input = true;
                fds_add(s);
                f->fd_flags = -1;
                if (in->info && !f->untrusted && (in->info->stx.stx_mask & FILE_STATX_MASK) == FILE_STATX_MASK) {
                        /* The caller's statx of it is this one's (engine.h, EngineFdInfo). */
                        f->stx = in->info->stx;
                        f->fd_flags = in->info->flags;
                        f->stat_ok = true;
                } else
                        file_stat_opened(s, f);
                if (f->ops == 0)
                        file_opened(s, f);
        }
}

/* A regular file with fs-verity enabled, hashed with fs-verity's digest of the tree the kernel
 * keeps: the kernel's measurement (FS_IOC_MEASURE_VERITY) is the digest, and not a byte is read.
 * The change check after it still runs: the measurement is the file's as it was opened. True when
 * the file is done. */
static bool file_measure_verity(Shard *s, FileSlot *f)
{
        uint64_t size = 0;
        int r;

        if (!(f->stx.stx_attributes & STATX_ATTR_VERITY) || fsverity_tree_hash(f->algo) < 0 || f->job->algos.n > 1)
                return false;
        r = fsverity_measure_fd(f->fd, f->algo, f->job->options.params, f->digest, &size);
        if (r <= 0)
                return false; /* enabled otherwise (or the kernel could not say): read it */
        f->digest_size = hash_algo_digest_size(f->algo);
        f->hashed = f->read_bytes = size;
        f->size = f->stx.stx_size;
        f->seekable = true;
        f->check_change = !f->job->options.no_change_check;
        f->state = FILE_READING;
        f->eof = true;
        atomic_fetch_add(&f->job->bytes_total, size);
        atomic_fetch_add_explicit(&f->job->bytes_done, size, memory_order_relaxed);
        file_finish_io(s, f);
        return true;
}

void file_opened(Shard *s, FileSlot *f)
{
        if (f->status != ENGINE_FILE_OK || f->state != FILE_OPENING) {
                file_abort(s, f, f->status, f->error);
                file_finish_io(s, f);
                return;
        }

        /* Its disk is watched before its first read is issued (diskwatch.h). */
        if (s->config.background && !f->disk_known) {
                diskwatch_add(&s->engine->diskwatch, f);
                f->disk_known = true;
        }

        mode_t m = f->stx.stx_mode;
        if (S_ISDIR(m)) {
                file_abort(s, f, ENGINE_FILE_ERROR, -EISDIR);
                file_finish_io(s, f);
                return;
        }

        if ((f->job->options.regular_only || f->job->inputs[f->input].dir) && !f->fd_input) {
                /* Devices may be read as bounded streams; sockets by path never, nor FIFOs by
                 * path: pipes are for callers that pass the fd. A FIFO named beneath a caller's
                 * directory is read as a stream (its poll waits for its first writer): our
                 * O_NONBLOCK open let a writer waiting in its open(2) go on, and closing it unread
                 * would lose what that writer writes. */
                bool fifo_ok = S_ISFIFO(m) && f->job->inputs[f->input].dir;

                if ((S_ISFIFO(m) && !fifo_ok) || S_ISSOCK(m) ||
                    (!S_ISREG(m) && !fifo_ok && !f->job->options.max_file_size)) {
                        file_abort(s, f, ENGINE_FILE_ERROR, -ESPIPE);
                        file_finish_io(s, f);
                        return;
                }
                /* Opened O_NONBLOCK only so that an open could not hang; reads must block (on a
                 * regular file io_uring answers -EAGAIN for uncached data otherwise). Our own open,
                 * so its flags are job_open_flags()'s: F_SETFL alone, no F_GETFL first. A regular
                 * file keeps O_NONBLOCK until a read says -EAGAIN (read_completion()): cached data
                 * comes without waiting anyway, and small hot files then cost no fcntl each. */
                if (S_ISREG(m))
                        f->nonblock = true;
                else
                        (void)fcntl(f->fd, F_SETFL, job_open_flags(f->job) & ~O_NONBLOCK);
        }

        if (S_ISREG(m) && file_measure_verity(s, f))
                return;
        f->state = FILE_READING;
        if (S_ISREG(m) && f->stx.stx_size > 0) {
                f->seekable = true;
                f->size = f->stx.stx_size;
                f->check_change = !f->job->options.no_change_check;
                atomic_fetch_add(&f->job->bytes_total, f->size);
                if (f->job->options.max_file_size && f->size > f->job->options.max_file_size) {
                        file_abort(s, f, ENGINE_FILE_ERROR, -EFBIG);
                        file_finish_io(s, f);
                        return;
                }
                if (f->fd_input) {
                        /* The caller's O_DIRECT stays theirs: read it with aligned requests. */
                        int fl = f->fd_flags >= 0 ? f->fd_flags : fcntl(f->fd, F_GETFL);
                        f->caller_direct = fl >= 0 && (fl & O_DIRECT);
                }
                file_choose_strategy(s, f);
                file_choose_parallel(s, f);
        } else {
                /* Empty regular files (and procfs-style files that report 0), pipes, sockets, char
                 * and block devices: read until EOF. Regular files and block devices keep offsets.
                 * Pipes, sockets and character devices wait for data in a poll, not in a read that
                 * would hold a buffer. */
                f->stream = true;
                f->seekable = S_ISREG(m) || S_ISBLK(m);
                f->pollable = S_ISFIFO(m) || S_ISSOCK(m) || S_ISCHR(m);
                f->check_change = S_ISREG(m) && !f->job->options.no_change_check;
                stream_arm(s, f);
        }
}

/* A stream with no read in flight that wants more: a poll first (see file_opened()). */
void stream_arm(Shard *s, FileSlot *f)
{
        if (!f->pollable || f->state != FILE_READING || f->eof || f->reads_in_flight > 0 || f->polling ||
            f->poll_ready)
                return;
        if (f->ops == 0)
                f->progress_usec = s->now;
        ioring_poll(s->ring, f->fd, POLLIN, TAG(f, OP_POLL));
        f->polling = true;
        f->ops++;
}

void poll_done(Shard *s, FileSlot *f, int res)
{
        f->polling = false;
        /* Data, EOF (POLLHUP) or an error: the read tells which. */
        if (f->state == FILE_READING)
                f->poll_ready = true;
}

/* A statx through the ring came back: the one after opening, or the one after reading. */
void statx_done(Shard *s, FileSlot *f, int res)
{
        if (f->state == FILE_CLOSING) {
                f->stat_after_ok = res >= 0;
                file_check_change(f);
        } else if (res < 0)
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
        else
                f->stat_ok = true;
}

/* Counts are the shards' own, each written by its thread alone (no shared counter bounces between
 * cores on every open and close); the engine's total is summed only when an open ran out of fds. */
static void fds_set(Shard *s, unsigned n)
{
        atomic_store_explicit(&s->n_fds, n, memory_order_relaxed);
}

void fds_add(Shard *s)
{
        fds_set(s, s->n_fds + 1);
}

/* An openat of f's path through the ring. Its fd is counted from now on, not from the completion:
 * the kernel takes the fd before this shard reaps it, and another shard that runs out of fds
 * meanwhile must see that one will come back (it failed with EMFILE while every fd in the process
 * was an open of another shard not yet reaped). */
void file_open_path(Shard *s, FileSlot *f)
{
        const JobInput *in = &f->job->inputs[f->input];
        const EngineCreds *creds = f->job->options.creds;
        int personality = 0;

        if (creds) {
                personality = shard_personality(s, creds);
                if (personality < 0) {
                        /* Never opened with any credentials but the caller's. */
                        file_set_error(f, ENGINE_FILE_ERROR, personality);
                        file_opened(s, f);
                        return;
                }
        }
        if (s->config.background)
                atomic_fetch_add_explicit(&s->disk_ops, 1, memory_order_relaxed);
        if (in->dir || creds) {
                /* engine.h, EngineDir: beneath the caller's directory, on its mount, never waiting. */
                f->how = (struct open_how){
                        .flags = (uint64_t)(job_open_flags(f->job) | O_NONBLOCK),
                        .resolve = in->dir ? RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS : 0,
                };
                ioring_openat2(s->ring, in->dir ? engine_dir_fd(in->dir) : AT_FDCWD, in->path, &f->how, personality,
                               TAG(f, OP_OPEN));
        } else
                ioring_openat(s->ring, in->path, job_open_flags(f->job), TAG(f, OP_OPEN));
        f->ops++;
        fds_add(s);
}

unsigned engine_fds(Engine *e)
{
        unsigned n = 0;

        for (unsigned i = 0; i < e->n_shards; i++)
                n += atomic_load_explicit(&e->shards[i].n_fds, memory_order_relaxed);
        return n;
}

void open_done(Shard *s, FileSlot *f, int res)
{
        if (res >= 0 && f->state == FILE_OPENING && f->status == ENGINE_FILE_OK) {
                f->fd = res; /* counted since file_open_path() */
                file_stat_opened(s, f);
                return;
        }
        fds_set(s, s->n_fds - 1); /* no fd of ours after all */
        if (res >= 0)
                close_anon(s, res); /* cancelled meanwhile */
        else if ((res == -EMFILE || res == -ENFILE) && engine_fds(s->engine) > 0 && f->state == FILE_OPENING) {
                /* Out of fds, but some are ours (this shard's or another's) and will be closed:
                 * queue this open until one is, and open fewer files at once from now on. */
                f->reopen = true;
                s->open_cap = MAX(1u, s->n_fds);
        } else
                file_set_error(f, res == -ECANCELED ? ENGINE_FILE_CANCELLED : ENGINE_FILE_ERROR, res);
}

/* For each fd any shard closed since s last looked, one deferred open of s may go. When the engine
 * holds none any more, waiting cannot help, so all go (and fail for real if the fds are still
 * taken). */
void deferred_retry(Shard *s)
{
        Engine *e = s->engine;
        uint64_t closed = atomic_load(&e->fds_closed);

        while (s->deferred && (s->fds_closed_seen < closed || engine_fds(e) == 0)) {
                FileSlot *d = s->deferred;
                if (s->fds_closed_seen < closed)
                        s->fds_closed_seen++;
                s->deferred = d->deferred_next;
                d->deferred_next = NULL;
                d->reopen = false;
                file_open_path(s, d);
        }
        atomic_store(&s->has_deferred, s->deferred != NULL);
}

void close_done(Shard *s)
{
        Engine *e = s->engine;

        bool waiting = false;

        fds_set(s, s->n_fds - 1);
        /* Only while some shard waits for an fd is a close counted and told. */
        for (unsigned i = 0; i < e->n_shards; i++)
                waiting |= atomic_load_explicit(&e->shards[i].has_deferred, memory_order_relaxed);
        if (!waiting)
                return;
        atomic_fetch_add(&e->fds_closed, 1);
        deferred_retry(s);
        /* Other shards waiting for an fd retry at their next turn. */
        for (unsigned i = 0; i < e->n_shards; i++)
                if (&e->shards[i] != s && atomic_load_explicit(&e->shards[i].has_deferred, memory_order_relaxed))
                        shard_wake(&e->shards[i]);
}

/* After any of f's operations other than a read completed: move f on once none is left. */
void file_op_done(Shard *s, FileSlot *f)
{
        if (f->linked) {
                linked_settle(s, f);
                return;
        }
        if (f->ops > 0)
                return;
        if (f->state == FILE_OPENING && f->reopen) {
                if (!s->deferred)
                        s->fds_closed_seen = atomic_load(&s->engine->fds_closed); /* closes from now on */
                f->deferred_next = s->deferred;
                s->deferred = f;
                atomic_store(&s->has_deferred, true);
        } else if (f->state == FILE_OPENING)
                file_opened(s, f);
        else if (f->state == FILE_CLOSING && f->fd >= 0)
                file_close(s, f); /* the statx after reading is back */
        else if (f->state == FILE_CLOSING) {
                f->state = FILE_IO_DONE;
                open_list_remove(s, f);
                if (f->worker_started && !f->worker_closed)
                        send_work(s, f, NULL, 0, WORK_ABORT);
                engine_file_release(s, f, NULL);
        } else if (f->state == FILE_DRAINING)
                file_finish_io(s, f);
        else if (f->state == FILE_READING)
                file_dispatch_ready(s, f);
}
