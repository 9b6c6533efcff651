/* SPDX-License-Identifier: MIT */
/* dispatch.c: a file's buffers to the hashing workers: one worker per file, the least loaded */
#include <sched.h>

#include "engine/engine-internal.h"

Worker *pick_worker(Engine *e)
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

void send_work(Engine *e, FileSlot *f, Buffer *b, uint32_t len, uint32_t flags)
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


void flush_wakes(Engine *e)
{
        for (unsigned i = 0; i < e->n_workers; i++)
                if (e->workers[i].wake_pending) {
                        e->workers[i].wake_pending = false;
                        parker_wake(&e->workers[i].parker);
                }
}
