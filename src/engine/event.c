/* SPDX-License-Identifier: MIT */
/* event.c: results to the consumer: one posting array, one eventfd, delivered by engine_dispatch() */
#include <assert.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

#define ENGINE_DISPATCH_MAX 256  /* events delivered per engine_dispatch() call */

/* Grows the posting array to hold n events; the caller holds event_lock. */
static int events_reserve_locked(Engine *e, size_t n)
{
        Event *p;

        if (n <= e->n_events_alloc)
                return 0;
        p = realloc(e->events, n * sizeof(*p));
        if (!p)
                return -ENOMEM;
        e->events = p;
        e->n_events_alloc = n;
        return 0;
}

/* Appends one event; the caller holds event_lock. Returns true if the queue was empty. When the
 * array cannot grow (out of memory), the poster waits for the consumer to take what is queued,
 * which empties the array: back-pressure instead of losing a result or aborting. */
static bool event_push_locked(Engine *e, const Event *ev)
{
        while (e->n_events == e->n_events_alloc &&
               events_reserve_locked(e, MAX(e->n_events_alloc * 2, (size_t)64)) < 0) {
                pthread_mutex_unlock(&e->event_lock);
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
                (void)usleep(1000);
                pthread_mutex_lock(&e->event_lock);
        }
        e->events[e->n_events++] = *ev;
        return e->n_events == 1;
}

void event_push(Engine *e, const Event *ev)
{
        bool was_empty;

        pthread_mutex_lock(&e->event_lock);
        was_empty = event_push_locked(e, ev);
        pthread_mutex_unlock(&e->event_lock);
        if (was_empty)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

/*
 * Publishes one input's result; the job's completion follows its last result. The count of pending
 * results is taken under the same lock as the push, so events leave in the order the count fell: a
 * worker preempted between the two could otherwise push its file after another thread pushed the
 * job's end, and the consumer would free the job before reading that file. The caller must not
 * touch the job after this returns: once its last result is out, the consumer may free it.
 */
static void job_count_down(Engine *e, EngineJob *j, const EngineFileResult *r)
{
        bool was_empty = false;

        pthread_mutex_lock(&e->event_lock);
        if (r)
                was_empty = event_push_locked(e, &(Event){ .type = EVENT_FILE, .job = j, .file = *r });
        if (atomic_fetch_sub(&j->results_pending, 1) == 1) {
                bool cancelled = atomic_load(&j->cancel_requested);
                was_empty |= event_push_locked(e, &(Event){ .type = EVENT_JOB, .job = j,
                                                            .job_result = cancelled ? ENGINE_JOB_CANCELLED
                                                                                    : ENGINE_JOB_DONE });
        }
        pthread_mutex_unlock(&e->event_lock);
        if (was_empty)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

void post_result(Engine *e, EngineJob *j, const EngineFileResult *r)
{
        atomic_fetch_add(&j->files_done, 1);
        if (r->status != ENGINE_FILE_OK)
                atomic_fetch_add(&j->files_failed, 1);
        atomic_fetch_sub(&e->files_queued, 1);
        job_count_down(e, j, r);
}

/* Each shard holds a job from engine_job_start() until it is on none of its lists: counted in
 * results_pending with the inputs, so the job's end cannot pass a shard that still reads it. */
void job_shard_release(Shard *s, EngineJob *j)
{
        JobShard *js = job_shard(s, j);

        assert(!js->released);
        js->released = true;
        job_count_down(s->engine, j, NULL);
}

void post_simple(Engine *e, EngineJob *j, size_t input, EngineFileStatus st, int error)
{
        post_result(e, j, &(EngineFileResult){ .index = input, .status = st, .error = st == ENGINE_FILE_ERROR ? error : 0,
                                               .cookie = j->inputs[input].cookie });
}

/* Called by whichever side lets go of a file last: publishes its result (unless a stall did),
 * recycles the slot. */
void engine_file_release(Shard *s, FileSlot *f, Worker *from)
{
        Engine *e = s->engine;
        EngineFileResult r;

        if (atomic_fetch_sub_explicit(&f->parts, 1, memory_order_acq_rel) != 1)
                return;

        if (!f->posted)
                file_result(f, &r);
        /* Both sides are done with the mapping: the worker hashed its last window. */
        if (f->map) {
                (void)munmap(f->map, f->map_len);
                f->map = NULL;
        }
        free(f->merge);
        f->merge = NULL;
        if (!f->posted)
                post_result(e, f->job, &r);

        if (from) {
                /* The slot belongs to its shard's free list: send it home. */
                while (!spsc_queue_push(&from->out, &(ReturnItem){ .slot = f }))
                        sched_yield();
                if (from->from != from->to)
                        shard_wake(from->from);
        } else
                slot_free(s, f);
}

static void deliver_file(EngineJob *j, const EngineFileResult *r)
{
        if (!j->orphaned && j->callbacks.file_done)
                j->callbacks.file_done(j, r, j->userdata);
}

/* EngineJobOptions.ordered: a result is delivered when every earlier input's was; one that comes
 * early waits in j->reorder. Every result is posted before the job's end, so the last one to come
 * in delivers all that wait. Without memory to hold one, it goes out of turn rather than lost. */
static void deliver_ordered(EngineJob *j, const EngineFileResult *r)
{
        if (r->index != j->next_deliver) {
                EngineFileResult *copy;
                if (!j->reorder)
                        j->reorder = calloc(j->n_inputs, sizeof(EngineFileResult *));
                copy = j->reorder ? malloc(sizeof(*copy)) : NULL;
                if (!copy) {
                        deliver_file(j, r);
                        return;
                }
                *copy = *r;
                j->reorder[r->index] = copy;
                return;
        }
        deliver_file(j, r);
        j->next_deliver++;
        while (j->reorder && j->next_deliver < j->n_inputs && j->reorder[j->next_deliver]) {
                EngineFileResult *next = TAKE_PTR(j->reorder[j->next_deliver]);
                j->next_deliver++;
                deliver_file(j, next);
                free(next);
        }
}

int engine_dispatch(Engine *e)
{
        uint64_t v;
        int done = 0;

        /* Read the eventfd before taking the events: a result posted after the swap re-arms it. */
        (void)!read(e->event_fd, &v, sizeof(v));

        if (e->dispatch_pos == e->n_dispatching) {
                /* Swap the two arrays (each keeps its capacity): posters fill one while we walk the
                 * other. */
                pthread_mutex_lock(&e->event_lock);
                Event *evs = e->events;
                size_t n = e->n_events, cap = e->n_events_alloc;
                e->events = e->dispatching;
                e->n_events_alloc = e->n_dispatching_alloc;
                e->n_events = 0;
                e->dispatching = evs;
                e->n_dispatching_alloc = cap;
                e->n_dispatching = n;
                e->dispatch_pos = 0;
                pthread_mutex_unlock(&e->event_lock);
        }

        /* A bounded share per call: tens of thousands of results at once would otherwise keep the
         * caller's event loop from everything else (fhashd answered no method call for 25 s while
         * it turned 60,000 results into signals). What is left keeps the eventfd readable. */
        while (e->dispatch_pos < e->n_dispatching && done < ENGINE_DISPATCH_MAX) {
                Event *ev = &e->dispatching[e->dispatch_pos++];
                EngineJob *j = ev->job;

                done++;
                if (ev->type == EVENT_FILE) {
                        if (j->options.ordered)
                                deliver_ordered(j, &ev->file);
                        else
                                deliver_file(j, &ev->file);
                        continue;
                }
                j->finished = true;
                if (!j->orphaned && j->callbacks.job_done)
                        j->callbacks.job_done(j, ev->job_result, j->userdata);
                engine_job_unref(j); /* the engine's reference, taken in engine_job_start() */
        }
        /* More to deliver: this batch's rest, or results posted since the eventfd was read (their
         * posters signalled only if the posting array was empty, which it may not have been). */
        bool more = e->dispatch_pos < e->n_dispatching;
        if (!more) {
                pthread_mutex_lock(&e->event_lock);
                more = e->n_events > 0;
                pthread_mutex_unlock(&e->event_lock);
        }
        if (more)
                (void)!write(e->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
        return done;
}

int engine_run_once(Engine *e, uint64_t timeout_usec)
{
        struct pollfd pfd = { .fd = e->event_fd, .events = POLLIN };
        int timeout = timeout_usec == UINT64_MAX ? -1 : (int)MIN(timeout_usec / 1000, (uint64_t)INT32_MAX);
        int k;

        k = poll(&pfd, 1, timeout);
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        return engine_dispatch(e);
}

/* ---- jobs ---- */
