/* SPDX-License-Identifier: MIT */
/* sched.c: which input opens next: jobs in turn, one slot each; new jobs and cancels from the
 * consumer */
#include <pthread.h>
#include <stdlib.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

/* Reports every unopened input as cancelled. The caller has already unlinked j from the active
 * list: after the last post the consumer may free j, so nothing here reads j after it. */
static void job_cancel_unopened(Engine *e, EngineJob *j)
{
        size_t first = j->next_input, n = j->n_inputs;

        j->next_input = n;
        for (size_t i = first; i < n; i++) {
                j->inputs[i].fd = safe_close(j->inputs[i].fd);
                post_simple(e, j, i, ENGINE_FILE_CANCELLED, 0);
        }
}

static void active_remove_head(Engine *e)
{
        EngineJob *j = e->active_head;

        e->active_head = j->active_next;
        if (!e->active_head)
                e->active_tail = NULL;
        j->active_next = NULL;
        j->in_active = false;
}

/* Starts opening inputs while slots are free, one job after another in turn. */
bool open_more(Engine *e)
{
        bool any = false;

        while (e->free_slots && e->active_head && e->n_open < e->open_cap) {
                EngineJob *j = e->active_head;

                if (j->next_input >= j->n_inputs || j->cancel_seen) {
                        bool cancel = j->cancel_seen;
                        active_remove_head(e);
                        if (cancel)
                                job_cancel_unopened(e, j);
                        continue;
                }

                FileSlot *f = e->free_slots;
                e->free_slots = f->next;

                HashCtx *ctx = f->ctx;
                *f = (FileSlot){ .job = j, .input = j->next_input, .algo = j->algo, .state = FILE_OPENING,
                                 .fd = -EBADF, .status = ENGINE_FILE_OK, .ctx = ctx, .chunk = e->buffer_size };
                atomic_store_explicit(&f->parts, 1, memory_order_relaxed);
                open_list_add(e, f);
                j->next_input++;
                atomic_store_explicit(&j->running, true, memory_order_relaxed);

                /* Rotate (the next slot goes to the next job), and take a job whose inputs are all
                 * opened off the list now, before its files can finish: once its last result is
                 * posted the consumer may free it, and a job left at the head (the only job, when
                 * the slots ran out with its last input) was read again after that. With a head
                 * there is always a tail, and when it is not the head it stays after the head is
                 * removed; the local makes both plain to the analyzer. */
                EngineJob *tail = e->active_tail;
                if (j->next_input >= j->n_inputs)
                        active_remove_head(e);
                else if (tail && e->active_head != tail) {
                        active_remove_head(e);
                        j->in_active = true;
                        tail->active_next = j;
                        e->active_tail = j;
                }

                file_start(e, f);
                /* Nothing here reads j any more: file_opened() may have posted its last result. */
                any = true;
        }
        return any;
}

void handle_control(Engine *e)
{
        EngineJob **jobs;
        size_t n;

        atomic_store(&e->control_pending, false);

        pthread_mutex_lock(&e->control_lock);
        jobs = e->new_jobs;
        n = e->n_new_jobs;
        e->new_jobs = NULL;
        e->n_new_jobs = e->n_new_jobs_alloc = 0;
        pthread_mutex_unlock(&e->control_lock);

        for (size_t i = 0; i < n; i++) {
                EngineJob *j = jobs[i];
                if (j->n_inputs == 0) {
                        bool c = atomic_load(&j->cancel_requested);
                        event_push(e, &(Event){ .type = EVENT_JOB, .job = j,
                                                .job_result = c ? ENGINE_JOB_CANCELLED : ENGINE_JOB_DONE });
                        continue;
                }
                j->in_active = true;
                if (e->active_tail)
                        e->active_tail->active_next = j;
                else
                        e->active_head = j;
                e->active_tail = j;
        }
        free(jobs);

        if (atomic_exchange(&e->cancel_pending, false) || atomic_load(&e->shutdown)) {
                bool all = atomic_load(&e->shutdown);

                for (EngineJob *j = e->active_head; j; j = j->active_next)
                        if (all || atomic_load(&j->cancel_requested)) {
                                atomic_store(&j->cancel_requested, true);
                                j->cancel_seen = true;
                        }
                for (FileSlot *f = e->open_head, *next; f; f = next) {
                        next = f->next;
                        if (all || atomic_load(&f->job->cancel_requested)) {
                                atomic_store(&f->job->cancel_requested, true);
                                file_abort(e, f, ENGINE_FILE_CANCELLED, 0);
                                file_finish_io(e, f);
                        }
                }
                /* Jobs whose inputs all wait unopened are finished here, not when a slot frees. */
                for (EngineJob **p = &e->active_head, *j; (j = *p);) {
                        if (j->cancel_seen) {
                                *p = j->active_next;
                                j->active_next = NULL;
                                j->in_active = false;
                                job_cancel_unopened(e, j);
                        } else
                                p = &j->active_next;
                }
                e->active_tail = NULL;
                for (EngineJob *j = e->active_head; j; j = j->active_next)
                        e->active_tail = j;
        }
}

