/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "engine-internal.h"
#include "macro.h"

/* Empty polls before sleeping. Short on purpose: on a machine with as many workers as cores, a
 * spinning worker takes CPU from the I/O thread that would feed it (measured on 2 cores: 2000 spins
 * cost ~40% more CPU per GB on small files than 50-100, for no gain in throughput). */
#define WORKER_SPIN 100

static void worker_return(Worker *w, const ReturnItem *it)
{
        /* Capacity covers every buffer and slot, so this cannot fail; see worker_start(). */
        while (!spsc_queue_push(&w->out, it))
                sched_yield();
        if (parker_claim_wake(&w->engine->io_parker))
                (void)!write(w->engine->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

static void worker_handle(Worker *w, const WorkItem *it)
{
        Engine *e = w->engine;
        FileSlot *f = it->file;
        EngineJob *j = f->job;
        /* A cancelled job's queued buffers are skipped, not hashed: cancel is prompt. */
        bool skip = atomic_load_explicit(&j->cancel_requested, memory_order_relaxed);

        if (it->flags & WORK_FIRST) {
                f->hashed = 0;
                f->digest_size = 0;
                (void)hash_ctx_init(f->ctx, f->algo);
        }

        if (it->buf) {
                if (!skip) {
                        (void)hash_ctx_update(f->ctx, it->buf->data, it->len);
                        f->hashed += it->len;
                        atomic_fetch_add_explicit(&j->bytes_done, it->len, memory_order_relaxed);
                        atomic_fetch_add_explicit(&e->bytes_hashed, it->len, memory_order_relaxed);
                }
                it->buf->owner = BUF_POOL; /* handed back below; the I/O thread re-owns it */
                worker_return(w, &(ReturnItem){ .buf = it->buf });
        }

        if (it->flags & WORK_LAST && !skip) {
                (void)hash_ctx_final(f->ctx, f->digest);
                f->digest_size = hash_algo_digest_size(f->algo);
        }
        if (it->flags & (WORK_LAST | WORK_ABORT))
                engine_file_release(e, f, w);

        atomic_fetch_sub_explicit(&w->backlog, 1, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
        Worker *w = arg;
        WorkItem it;
        unsigned spins = 0;

        if (w->cpu >= 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(w->cpu, &set);
                /* Best effort: a cpuset may forbid it, and an unpinned worker still works. */
                (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        }

        for (;;) {
                if (spsc_queue_pop(&w->in, &it)) {
                        worker_handle(w, &it);
                        spins = 0;
                        continue;
                }
                if (atomic_load_explicit(&w->stop, memory_order_acquire))
                        break;
                if (++spins < WORKER_SPIN) {
                        cpu_relax();
                        continue;
                }
                parker_prepare(&w->parker);
                if (!spsc_queue_empty(&w->in) || atomic_load(&w->stop)) {
                        parker_cancel(&w->parker);
                        continue;
                }
                parker_park(&w->parker);
                spins = 0;
        }
        return NULL;
}

int worker_start(Worker *w, Engine *e, unsigned id, int cpu, size_t queue_capacity)
{
        char name[16];
        int k;

        w->engine = e;
        w->id = id;
        w->cpu = cpu;
        k = spsc_queue_init(&w->in, queue_capacity, sizeof(WorkItem));
        if (k < 0)
                return k;
        k = spsc_queue_init(&w->out, queue_capacity, sizeof(ReturnItem));
        if (k < 0)
                return k;

        k = -pthread_create(&w->thread, NULL, worker_main, w);
        if (k < 0)
                return k;
        w->started = true;
        snprintf(name, sizeof(name), "fhash-hash%u", id);
        (void)pthread_setname_np(w->thread, name);
        return 0;
}

void worker_stop(Worker *w)
{
        if (w->started) {
                atomic_store_explicit(&w->stop, true, memory_order_release);
                parker_wake(&w->parker);
                (void)pthread_join(w->thread, NULL);
                w->started = false;
        }
        spsc_queue_deinit(&w->in);
        spsc_queue_deinit(&w->out);
}
