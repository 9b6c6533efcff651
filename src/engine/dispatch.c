/* SPDX-License-Identifier: MIT */
/* dispatch.c: a file's buffers to the hashing: its own shard's, or, for BLAKE3 pieces, the least
 * loaded shard's */
#include <sched.h>

#include "engine/engine-internal.h"

/* The link to the shard with the least queued, the shard itself on a tie. */
Worker *pick_worker(Shard *s)
{
        Worker *best = &s->links[s->id];
        unsigned best_load = atomic_load_explicit(&s->backlog, memory_order_relaxed);

        for (unsigned i = 0; i < s->n_shards && best_load > 0; i++) {
                Shard *o = s->links[i].to;
                unsigned l = atomic_load_explicit(&o->backlog, memory_order_relaxed);
                if (l < best_load) {
                        best = &s->links[i];
                        best_load = l;
                }
        }
        return best;
}

/* Queues work on link w (its shard hashes it at its next turn). */
void link_push(Worker *w, const WorkItem *it)
{
        atomic_fetch_add_explicit(&w->to->backlog, 1, memory_order_relaxed);
        /* The queue holds every buffer plus one marker per slot: it never fills. */
        while (!spsc_queue_push(&w->in, it))
                sched_yield();
        /* Another shard is woken once per turn of the loop (flush_wakes()), not per item. */
        w->wake_pending = w->to != w->from;
}

/* A file's buffers are hashed by the shard that read them, in order, on the same core. */
void send_work(Shard *s, FileSlot *f, Buffer *b, uint32_t len, uint32_t flags)
{
        Worker *w = &s->links[s->id];

        if (!f->worker_started) {
                f->worker_started = true;
                /* The hashing side now holds a part of the file until LAST or ABORT. */
                atomic_fetch_add_explicit(&f->parts, 1, memory_order_relaxed);
                flags |= WORK_FIRST;
        }
        if (flags & (WORK_LAST | WORK_ABORT))
                f->worker_closed = true;
        if (b)
                b->owner = BUF_WORKER;
        if (b && b->small && (flags & WORK_FIRST) && (flags & WORK_LAST) && s->n_express < s->express_cap) {
                /* A whole file in one small slot: hashed first (engine-internal.h, express). Its only
                 * item, so nothing of the file's can pass it. */
                atomic_fetch_add_explicit(&s->backlog, 1, memory_order_relaxed);
                s->express[(s->express_head + s->n_express++) % s->express_cap] =
                        (WorkItem){ .file = f, .buf = b, .len = len, .flags = flags };
                return;
        }
        link_push(w, &(WorkItem){ .file = f, .buf = b, .len = len, .flags = flags });
}

void flush_wakes(Shard *s)
{
        for (unsigned i = 0; i < s->n_shards; i++)
                if (s->links[i].wake_pending) {
                        s->links[i].wake_pending = false;
                        shard_wake(s->links[i].to);
                }
}
