/* SPDX-License-Identifier: MIT */
/* worker.c: hashing: a file's buffers in order, BLAKE3 pieces to CVs, on the shard they were handed to */
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "hash/fsverity.h"
#include "io/mapguard.h"

static void worker_return(Worker *w, const ReturnItem *it)
{
        /* Capacity covers every buffer and slot, so this cannot fail; see worker_init(). */
        while (!spsc_queue_push(&w->out, it))
                sched_yield();
        if (w->from != w->to)
                shard_wake(w->from);
}

/* The file's contexts: its algorithm's, then a set's others (EngineJobOptions.algos). */
static unsigned file_contexts(const FileSlot *f, HashCtx *ret[static HASH_SET_MAX])
{
        unsigned n = f->job->algos.n;

        ret[0] = f->ctx;
        for (unsigned i = 1; i < n; i++)
                ret[i] = f->ctx_more[i - 1];
        return n;
}

/* Each algorithm of the set over the same bytes, one after the other: a buffer (1 MiB at most) is
 * still in the core's cache for the next. */
static void file_update(const FileSlot *f, const void *p, size_t len)
{
        HashCtx *ctx[HASH_SET_MAX];
        unsigned n = file_contexts(f, ctx);

        for (unsigned i = 0; i < n; i++)
                (void)hash_ctx_update(ctx[i], p, len);
}

typedef struct MappedUpdate {
        const FileSlot *f;
        const uint8_t *p;
        size_t len;
} MappedUpdate;

static void mapped_update(void *userdata)
{
        MappedUpdate *u = userdata;

        file_update(u->f, u->p, u->len);
}

/* Hashes a window of a file mapping. A file truncated meanwhile raises SIGBUS past its new end; the
 * guard turns that into a failed file instead of a dead process. */
static bool hash_mapped(const FileSlot *f, const uint8_t *p, size_t len)
{
        MappedUpdate u = { .f = f, .p = p, .len = len };

        return mapguard_run(p, len, mapped_update, &u) >= 0;
}

/* A hashed window of a mapping leaves the process's page tables (the page cache keeps it): a shard
 * walking mapped files would otherwise count every byte of them in its RSS (1 GiB over the mixed
 * tree). Windows start at multiples of their size, page-aligned. */
static void mapped_done(const uint8_t *p, size_t len)
{
        (void)madvise((void *)(uintptr_t)p, len, MADV_DONTNEED);
}

static void file_init(FileSlot *f)
{
        HashCtx *ctx[HASH_SET_MAX];
        unsigned n = file_contexts(f, ctx);

        /* A set has no parameters (engine_job_new() refuses them). */
        (void)hash_ctx_init_params(ctx[0], f->algo, f->job->options.params);
        for (unsigned i = 1; i < n; i++)
                (void)hash_ctx_init(ctx[i], f->job->algos.algos[i]);
}

static void file_final(FileSlot *f)
{
        HashCtx *ctx[HASH_SET_MAX];
        unsigned n = file_contexts(f, ctx);
        size_t off = 0;

        for (unsigned i = 0; i < n; i++) {
                (void)hash_ctx_final(ctx[i], f->digest + off);
                off += hash_ctx_digest_size(ctx[i]);
        }
        f->digest_size = off;
}

typedef struct PieceUpdate {
        const Buffer *buf;
        uint32_t len;
        uint8_t *cv;
        const Blake3Mode *mode;
        /* fs-verity: the block hashes go over the buffer's own slot (for a mapped view, its unused
         * pool slot), which is as long as the piece and holds at most a 16th of it in hashes. */
        MdCtx *md;
        HashAlgo md_algo;
        uint32_t block_size;
        int error;
} PieceUpdate;

static void piece_update(void *userdata)
{
        PieceUpdate *u = userdata;

        if (u->md)
                u->error = fsverity_hash_blocks(u->md, u->md_algo, u->block_size, u->buf->view, u->len, u->buf->data);
        else
                blake3_subtree_cv_mode(u->mode, u->buf->view, u->len, u->buf->offset / BLAKE3_CHUNK_LEN, u->cv);
}

/* A piece: a BLAKE3 subtree CV, or fs-verity's block hashes, goes back with the buffer; the file's
 * state is its shard's. */
static void worker_piece(Worker *w, const WorkItem *it, bool skip)
{
        Buffer *b = it->buf;
        EngineJob *j = it->file->job;
        PieceUpdate u = { .buf = b, .len = it->len, .cv = b->cv, .mode = &j->b3mode };

        if (fsverity_tree_hash(j->algo) >= 0) {
                u.md = w->to->piece_md;
                u.md_algo = fsverity_tree_hash(j->algo);
                u.block_size = fsverity_block_size(j->options.params);
        }
        if (!skip) {
                if (b->mapped) {
                        b->fault = mapguard_run(b->view, it->len, piece_update, &u) < 0;
                        mapped_done(b->view, it->len);
                } else
                        piece_update(&u);
                b->piece_ok = !b->fault && u.error >= 0;
                if (b->piece_ok) {
                        atomic_fetch_add_explicit(&j->bytes_done, it->len, memory_order_relaxed);
                        atomic_fetch_add_explicit(&w->to->engine->bytes_hashed, it->len, memory_order_relaxed);
                }
        }
        b->owner = BUF_POOL;
        worker_return(w, &(ReturnItem){ .buf = b });
        atomic_fetch_sub_explicit(&w->to->backlog, 1, memory_order_relaxed);
}

static void worker_handle(Worker *w, const WorkItem *it)
{
        Engine *e = w->to->engine;
        FileSlot *f = it->file;
        EngineJob *j = f->job;
        /* A cancelled job's queued buffers are skipped, not hashed: cancel is prompt. */
        bool skip = atomic_load_explicit(&j->cancel_requested, memory_order_relaxed);

        if (it->flags & WORK_PIECE) {
                worker_piece(w, it, skip);
                return;
        }

        if (it->flags & WORK_FIRST) {
                f->hashed = 0;
                f->digest_size = 0;
                f->map_fault = false;
                file_init(f);
        }

        if (f->map_fault)
                skip = true; /* the mapping faulted: the digest is void, the file ends CHANGED */

        if (it->buf) {
                if (!skip && it->buf->mapped) {
                        if (!hash_mapped(f, it->buf->view, it->len)) {
                                f->map_fault = true;
                                skip = true;
                        }
                        mapped_done(it->buf->view, it->len);
                }
                if (!skip) {
                        if (!it->buf->mapped)
                                file_update(f, it->buf->view, it->len);
                        f->hashed += it->len;
                        atomic_fetch_add_explicit(&j->bytes_done, it->len, memory_order_relaxed);
                        atomic_fetch_add_explicit(&e->bytes_hashed, it->len, memory_order_relaxed);
                }
                it->buf->owner = BUF_POOL; /* handed back below; its shard re-owns it */
                worker_return(w, &(ReturnItem){ .buf = it->buf });
        }

        if (it->flags & WORK_LAST && !skip)
                file_final(f);
        if (it->flags & (WORK_LAST | WORK_ABORT))
                engine_file_release(w->to, f, w);

        atomic_fetch_sub_explicit(&w->to->backlog, 1, memory_order_relaxed);
}

/* Bytes hashed per turn of a shard's loop before it goes round again: the buffers hashed so far go
 * back to the pool and are read into again while the rest is hashed, so the device is never left
 * idle behind a long batch of hashing (a cold file read O_DIRECT waited for whole batches). */
#define HASH_TURN_BYTES ((uint64_t)1 << 20)

/* The express items of s first, all of them (each a whole small file), then the inbox of s from
 * every shard, its own first, each in the order it was queued, up to HASH_TURN_BYTES (at least one
 * item). */
bool shard_hash_work(Shard *s)
{
        Engine *e = s->engine;
        uint64_t bytes = 0;
        bool any = s->n_express > 0;
        WorkItem it;

        while (s->n_express > 0) {
                it = s->express[s->express_head];
                s->express_head = (s->express_head + 1) % s->express_cap;
                s->n_express--;
                worker_handle(&s->links[s->id], &it);
        }
        for (unsigned k = 0; k < e->n_shards; k++) {
                Worker *w = &e->shards[(s->id + k) % e->n_shards].links[s->id];
                while (bytes < HASH_TURN_BYTES && spsc_queue_pop(&w->in, &it)) {
                        worker_handle(w, &it);
                        bytes += it.len;
                        any = true;
                }
        }
        return any;
}

bool shard_work_pending(Shard *s)
{
        Engine *e = s->engine;

        if (s->n_express > 0)
                return true;
        for (unsigned i = 0; i < e->n_shards; i++)
                if (!spsc_queue_empty(&e->shards[i].links[s->id].in))
                        return true;
        return false;
}

int worker_init(Worker *w, Shard *from, Shard *to, size_t queue_capacity)
{
        int k;

        w->from = from;
        w->to = to;
        k = spsc_queue_init(&w->in, queue_capacity, sizeof(WorkItem));
        if (k < 0)
                return k;
        return spsc_queue_init(&w->out, queue_capacity, sizeof(ReturnItem));
}

void worker_deinit(Worker *w)
{
        spsc_queue_deinit(&w->in);
        spsc_queue_deinit(&w->out);
}
