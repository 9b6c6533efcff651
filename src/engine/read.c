/* SPDX-License-Identifier: MIT */
/* read.c: read requests: pool buffers for a file's next bytes, issued through the ring, completed,
 * resumed when short, and handed on in file order */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570 /* not in linux/magic.h */
#endif

#include "engine/engine-internal.h"
#include "basic/macro.h"

void buffer_put(Shard *s, Buffer *b)
{
        b->owner = BUF_POOL;
        b->file = NULL;
        b->next = NULL;
        b->span = 1;
        if (b->group) {
                sched_uncharge_buffer(s, b->group, pool_is_small(&s->pool, b->slot));
                b->group = NULL;
        }
        pool_put(&s->pool, b->slot);
}

/* A slot off the pool, now the ring's, for one read of f, charged to f's group. */
static Buffer *buffer_claim(Shard *s, FileSlot *f, unsigned slot)
{
        Buffer *b = &s->bufs[slot];

        b->next = NULL;
        b->owner = BUF_RING;
        b->span = 1;
        b->group = f->group;
        sched_charge_buffer(s, b->group, pool_is_small(&s->pool, slot));
        return b;
}

Buffer *buffer_take(Shard *s, FileSlot *f, unsigned slot)
{
        pool_take(&s->pool, slot);
        return buffer_claim(s, f, slot);
}

/* The free slot with the lowest position: slots that went back a moment ago are reused first. */
Buffer *buffer_get(Shard *s, FileSlot *f)
{
        int i = pool_get(&s->pool);

        return i < 0 ? NULL : buffer_claim(s, f, (unsigned)i);
}

/* A small slot for a file that fits in one, read through the page cache in one read, else a pool
 * slot. */
Buffer *buffer_get_for(Shard *s, FileSlot *f, uint64_t fits)
{
        if (fits <= s->small_size && f->strategy != ENGINE_READ_DIRECT && !f->map) {
                int i = pool_get_small(&s->pool);
                if (i >= 0)
                        return buffer_claim(s, f, (unsigned)i);
        }
        return buffer_get(s, f);
}

static bool buffers_free(const Shard *s)
{
        return s->pool.n_free > 0 || s->pool.n_small_free > 0;
}

void file_issue_read(Shard *s, FileSlot *f, Buffer *b)
{
        int64_t off = f->seekable ? (int64_t)(b->offset + b->got) : -1;
        /* A wholly cached file is left as it was without RWF_DONTCACHE: there is nothing to drop. */
        int rwf = (f->job->options.dontcache && !f->cached &&
                   atomic_load_explicit(&s->engine->dontcache_ok, memory_order_relaxed))
                          ? RWF_DONTCACHE
                          : 0;

        size_t len = b->want - b->got;

        if (f->ops == 0)
                f->progress_usec = s->now; /* waiting for a buffer was not a stall */
        b->in_flight = true;
        b->direct_read = f->strategy == ENGINE_READ_DIRECT;
        b->dontcache_read = rwf != 0;
        f->poll_ready = false; /* a stream polls again before its next read */
        if (b->direct_read && s->config.test_direct_einval && len > 1)
                len--;
        b->disk_read = s->config.background && !f->cached;
        if (b->disk_read)
                atomic_fetch_add_explicit(&s->disk_ops, 1, memory_order_relaxed);
        ioring_read(s->ring, f->fd, b->data + b->got, len, off, shard_buf_index(s, b), rwf, TAG(b, OP_READ));
        f->ops++;
}

static bool file_wants_read(FileSlot *f)
{
        if (f->linked)
                return f->state == FILE_OPENING && f->ops == 0 && !f->fifo_head;
        if (f->state != FILE_READING || f->eof)
                return false;
        if (f->stream)
                return f->reads_in_flight == 0 && (!f->pollable || f->poll_ready);
        return f->issue_off < f->size;
}

/* Fills in b as the next piece of f's bytes (want = up to one chunk) and queues it in f's FIFO. */
void file_queue_buffer(Shard *s, FileSlot *f, Buffer *b)
{
        b->file = f;
        b->got = 0;
        b->done = false;
        b->offset = f->issue_off;
        b->view = b->data;
        b->mapped = false;
        if (f->stream)
                b->want = (uint32_t)s->buffer_size;
        else {
                b->want = (uint32_t)MIN(f->chunk, f->size - f->issue_off);
                f->issue_off += b->want;
                if (f->issue_off >= f->size)
                        f->eof = true;
        }
        QUEUE_APPEND_BY(next, f->fifo_head, f->fifo_tail, b);
}

/* A spanning read is over for good (complete, at EOF, failed or not wanted any more): each follower
 * gets its share of the bytes and leaves the in-flight state, the leader keeps the first slot's
 * share. Bytes past the size stat gave (the file grew) stay, for the change check to see. */
void span_split(Shard *s, Buffer *b)
{
        uint64_t total = b->got;

        if (b->span <= 1)
                return;
        for (unsigned i = 1; i < b->span; i++) {
                Buffer *x = &s->bufs[b->slot + i];
                uint64_t start = (uint64_t)i * s->buffer_size;

                x->got = total > start ? (uint32_t)MIN(total - start, (uint64_t)s->buffer_size) : 0;
                x->in_flight = false;
                x->done = b->done;
        }
        b->got = (uint32_t)MIN(total, (uint64_t)s->buffer_size);
        b->want = MIN(b->want, (uint32_t)s->buffer_size);
        b->span = 1;
}

/* Takes the slot(s) for f's next read and starts it, in the way its strategy reads. Returns the
 * first buffer, or NULL when f gets nothing now. */
static Buffer *file_start_read(Shard *s, FileSlot *f)
{
        if (f->linked)
                return linked_start(s, f);
        return read_strategy_ops(f->strategy)->start(s, f);
}

/* Round-robin: each pass gives every file that wants one a read, so many files progress at once
 * and one large file cannot starve the others. With `fair`, only files of groups under their share
 * of the buffers (while several groups have files open): they go first, the rest take what is
 * left. */
static bool issue_pass(Shard *s, bool fair, bool cached_only)
{
        bool any = false;

        while (buffers_free(s)) {
                FileSlot *start = s->read_cursor ? s->read_cursor : s->open_head;
                FileSlot *f = start, *resume = NULL;

                if (!f)
                        break;
                do {
                        FileSlot *next = f->next ? f->next : s->open_head;
                        if (file_wants_read(f) && (!cached_only || f->cached) &&
                            !(fair && sched_over_buffer_share(s, f->group))) {
                                Buffer *b = file_start_read(s, f);
                                if (b) {
                                        if (b->mapped)
                                                file_dispatch_ready(s, f);
                                        resume = next;
                                        any = true;
                                }
                        }
                        f = next;
                } while (f != start && buffers_free(s));
                /* The next pass starts after the last file served, not where this one stopped: free
                 * small slots keep a pass going round to its start when the files want pool
                 * buffers, and the files just after the cursor then got every buffer that came back
                 * while the others (another user's 2 MiB file behind 64 streams, H4) never did. */
                if (!resume)
                        break;
                s->read_cursor = resume;
        }
        return any;
}

bool issue_reads(Shard *s, bool cached_only)
{
        bool any = false;

        if (s->n_groups_open > 1)
                any = issue_pass(s, true, cached_only);
        return issue_pass(s, false, cached_only) || any;
}

/* A file that read EOF before its st_size: on a pseudo file system (sysfs, procfs, debugfs & co.)
 * st_size is a guess (4096 for every sysfs attribute) and what was read is the content, as for
 * sha256sum. Asked only then, and never of a file system that may hang. */
static bool file_is_pseudo(const FileSlot *f)
{
        static const long pseudo[] = { SYSFS_MAGIC, PROC_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
                                       SECURITYFS_MAGIC, CONFIGFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC };
        struct statfs sfs;

        if (f->untrusted || fstatfs(f->fd, &sfs) < 0)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(pseudo); i++)
                if ((long)sfs.f_type == pseudo[i])
                        return true;
        return false;
}

/* A read came back: resume it when short, retry what may be retried, else judge it. */
void read_completion(Shard *s, Buffer *b, int res)
{
        FileSlot *f = b->file;

        if (f->linked) {
                linked_read_done(s, b, res);
                return;
        }
        f->ops--;
        b->in_flight = false;

        if (f->state != FILE_READING) {
                /* Draining after an error or cancel: the buffer is not wanted any more. */
                f->reads_in_flight--;
                span_split(s, b);
                file_drop_idle_buffers(s, f);
                file_finish_io(s, f);
                return;
        }

        if (res == -EAGAIN || res == -EINTR) {
                if (res == -EAGAIN && f->nonblock) {
                        /* Opened O_NONBLOCK (file_opened()): this data has to be waited for. */
                        (void)fcntl(f->fd, F_SETFL, job_open_flags(f->job) & ~O_NONBLOCK);
                        f->nonblock = false;
                }
                file_issue_read(s, f, b);
                return;
        }
        if (res == -EINVAL && b->direct_read && read_direct_einval(s, f, b))
                return;
        if (res == -EOPNOTSUPP && b->dontcache_read) {
                /* The filesystem cannot do RWF_DONTCACHE: plain reads, on every shard. */
                atomic_store_explicit(&s->engine->dontcache_ok, false, memory_order_relaxed);
                file_issue_read(s, f, b);
                return;
        }

        f->reads_in_flight--;
        if (res < 0) {
                /* b (and its followers) no longer in flight, so file_abort() hands them back to the
                 * pool. */
                span_split(s, b);
                file_abort(s, f, ENGINE_FILE_ERROR, res);
                file_finish_io(s, f);
                return;
        }

        b->got += (uint32_t)res;
        if (res == 0) {
                bool truncated = !f->stream && b->offset + b->got < f->size;
                b->done = true;
                span_split(s, b);
                if (truncated && file_is_pseudo(f)) {
                        /* sysfs and the like say 4096 and hold less: the content is what is read. */
                        f->pseudo = true;
                        f->size = b->offset + b->got;
                        truncated = false;
                }
                if (truncated) {
                        /* EOF before the size stat gave: truncated while we read. */
                        file_abort(s, f, ENGINE_FILE_CHANGED, 0);
                        file_finish_io(s, f);
                        return;
                }
                f->eof = true;
        } else if (!f->stream && b->got < b->want && b->offset + b->got < f->size) {
                /* Short read of a regular file: resume where it stopped. */
                f->reads_in_flight++;
                file_issue_read(s, f, b);
                return;
        } else {
                b->done = true;
                span_split(s, b);
                if (f->stream)
                        f->issue_off += b->got;
        }

        uint64_t max = f->job->options.max_file_size;
        if (max && f->read_bytes + b->got > max && f->stream) {
                file_abort(s, f, ENGINE_FILE_ERROR, -EFBIG);
                file_finish_io(s, f);
                return;
        }
        file_dispatch_ready(s, f);
        stream_arm(s, f);
}
