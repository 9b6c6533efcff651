/* SPDX-License-Identifier: MIT */
/* sched.c: which input opens next: share groups in turn, then their jobs, each held to its share while
 * others wait; new jobs, cancels and closes from the consumer */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

/* Groups (and jobs of a group) looked at per pick before the first one in turn is taken anyway: a
 * pick stays O(1) however many groups and jobs wait. */
#define SCHED_SCAN_MAX 16u

static ShareGroup *group_get(Shard *s, uint64_t id)
{
        ShareGroup *g;

        for (g = s->groups; g; g = g->next)
                if (g->id == id)
                        return g;
        g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        g->id = id;
        LIST_PREPEND(s->groups, g);
        return g;
}

static void group_maybe_free(Shard *s, ShareGroup *g)
{
        if (g->n_open > 0 || g->n_bufs > 0 || g->n_small_bufs > 0 || g->n_wait_jobs > 0 || g->n_active_jobs > 0 ||
            g->waiting)
                return;
        LIST_REMOVE(s->groups, g);
        free(g);
}

void sched_free_all(Shard *s)
{
        while (s->groups) {
                ShareGroup *g = s->groups;
                s->groups = g->next;
                free(g);
        }
}

/* A job competes for its group's share while it has inputs left to open or files open; a group
 * for the engine's while one of its jobs does. Called after either may have changed. */
static void job_update_active(Shard *s, JobShard *js)
{
        ShareGroup *g = js->group;
        bool active = js->in_active || js->n_open > 0;

        if (active == js->sched_active)
                return;
        js->sched_active = active;
        if (active) {
                if (g->n_active_jobs++ == 0)
                        s->n_active_groups++;
        } else if (--g->n_active_jobs == 0)
                s->n_active_groups--;
}

void sched_charge_file(Shard *s, FileSlot *f)
{
        ShareGroup *g = f->group;

        if (g->n_open++ == 0)
                s->n_groups_open++;
        f->borrowed = s->n_open > s->open_cap; /* open_list_add() counted f already */
        if (f->borrowed)
                g->n_borrowed++;
        JobShard *js = job_shard(s, f->job);
        js->n_open++;
        job_update_active(s, js);
        f->charged = true;
}

/* Before the file's result is posted: the job is alive. */
void sched_uncharge_file(Shard *s, FileSlot *f)
{
        ShareGroup *g = f->group;

        if (!f->charged)
                return;
        f->charged = false;
        JobShard *js = job_shard(s, f->job);
        js->n_open--;
        job_update_active(s, js);
        if (f->borrowed)
                g->n_borrowed--;
        if (--g->n_open == 0)
                s->n_groups_open--;
        group_maybe_free(s, g);
}

void sched_charge_buffer(Shard *s, ShareGroup *g, bool small)
{
        if (small)
                g->n_small_bufs++;
        else
                g->n_bufs++;
}

void sched_uncharge_buffer(Shard *s, ShareGroup *g, bool small)
{
        if (small)
                g->n_small_bufs--;
        else
                g->n_bufs--;
        group_maybe_free(s, g);
}

/* Each kind of slot is shared on its own: counted together, a group of streams held all 16 pool
 * buffers while "under" a share of (16 + 64 small slots) / 2, and another group's 2 MiB file
 * waited behind it for good (H4). */
bool sched_over_buffer_share(const Shard *s, const ShareGroup *g)
{
        unsigned groups = MAX(1u, s->n_groups_open);

        return s->n_groups_open > 1 &&
               (g->n_bufs >= MAX(1u, s->n_buffers / groups) || g->n_small_bufs >= MAX(1u, s->n_small / groups));
}

/* ---- groups with inputs to open, and their jobs, in turn ---- */

static void wait_ring_add(Shard *s, ShareGroup *g)
{
        g->waiting = true;
        QUEUE_APPEND_BY(wait_next, s->wait_head, s->wait_tail, g);
        s->n_wait_groups++;
}

static ShareGroup *wait_ring_pop(Shard *s)
{
        ShareGroup *g = QUEUE_POP_BY(wait_next, s->wait_head, s->wait_tail);

        g->waiting = false;
        s->n_wait_groups--;
        return g;
}

static JobShard *group_unlink_head(ShareGroup *g)
{
        JobShard *js = QUEUE_POP_BY(active_next, g->jobs_head, g->jobs_tail);

        g->n_wait_jobs--;
        if (js->job->options.interactive)
                g->n_wait_interactive--;
        return js;
}

static void group_append(ShareGroup *g, JobShard *js)
{
        QUEUE_APPEND_BY(active_next, g->jobs_head, g->jobs_tail, js);
        g->n_wait_jobs++;
        if (js->job->options.interactive)
                g->n_wait_interactive++;
}

static void group_add_job(Shard *s, ShareGroup *g, JobShard *js)
{
        js->group = g;
        js->in_active = true;
        group_append(g, js);
        job_update_active(s, js);
        if (!g->waiting)
                wait_ring_add(s, g);
}

/* Takes g's first job off its list for good (all its inputs have slots or results): the shard lets
 * go of it. Nothing may read the job after: it may be gone. */
static void group_pop_job(Shard *s, ShareGroup *g)
{
        JobShard *js = group_unlink_head(g);

        js->in_active = false;
        job_update_active(s, js);
        job_shard_release(s, js->job);
}

/* Claims every unopened input (other shards may be claiming too: each input goes to one) and
 * reports it as cancelled, closing the fds among them through the ring. */
static void job_cancel_unopened(Shard *s, EngineJob *j, EngineFileStatus st, int error)
{
        size_t n = j->n_inputs;

        for (size_t i = atomic_exchange(&j->next_input, n); i < n; i++) {
                if (j->inputs[i].fd >= 0)
                        close_anon(s, TAKE_FD(j->inputs[i].fd));
                post_simple(s->engine, j, i, st, error);
        }
}

static bool job_exhausted(EngineJob *j)
{
        return atomic_load_explicit(&j->next_input, memory_order_relaxed) >= j->n_inputs;
}

/* The first job of g that has inputs left, dropping the others (cancelled: their unopened inputs
 * get their results; done: nothing left to open) from g's list; NULL when none is left. */
static EngineJob *group_front(Shard *s, ShareGroup *g)
{
        while (g->jobs_head) {
                JobShard *js = g->jobs_head;
                EngineJob *j = js->job;
                if (!js->cancel_seen && !job_exhausted(j))
                        return j;
                if (js->cancel_seen)
                        job_cancel_unopened(s, j, ENGINE_FILE_CANCELLED, 0);
                group_pop_job(s, g);
        }
        return NULL;
}

static void group_rotate_job(ShareGroup *g)
{
        if (g->jobs_head != g->jobs_tail)
                group_append(g, group_unlink_head(g));
}

/* The first interactive job of g with inputs left, among the first SCHED_SCAN_MAX on its list; one
 * further on waits for its turn like the others. Done and cancelled ones are left where they are:
 * group_front() drops them when they come to the head. */
static EngineJob *group_interactive(ShareGroup *g)
{
        unsigned k = 0;

        for (JobShard *js = g->jobs_head; js && k < SCHED_SCAN_MAX; js = js->active_next, k++)
                if (js->job->options.interactive && !js->cancel_seen && !job_exhausted(js->job))
                        return js->job;
        return NULL;
}

/*
 * The job whose input opens next, or NULL. Groups, then jobs, take turns (a group's interactive jobs
 * first); a job under its share
 * (max_open split evenly between the groups with inputs to open or files open, a group's part
 * between its jobs the same way) goes first. Up to open_cap any job may open (the slots would idle
 * otherwise); beyond it, up to as many again, only a job under its share, and only while its
 * group has borrowed less than the group's share: a newcomer is not stuck behind files that hold
 * their slots for long (streams, stalls), and the borrowing of all groups together stays under
 * max_open, each group's under max_open / (groups + 1) so that a group to come finds slots free.
 */
static EngineJob *sched_pick(Shard *s)
{
        bool room = s->n_open < s->open_cap;
        unsigned hard_cap = s->open_cap < s->max_open ? s->open_cap : s->n_slots;
        ShareGroup *first = NULL;
        unsigned scanned = 0;

        if (!s->free_slots || s->n_open >= hard_cap)
                return NULL;
        while (s->wait_head && scanned < MIN(s->n_wait_groups, SCHED_SCAN_MAX)) {
                ShareGroup *g = wait_ring_pop(s);
                EngineJob *j = group_front(s, g);

                if (!j) {
                        group_maybe_free(s, g); /* nothing left to open: off the ring */
                        continue;
                }
                wait_ring_add(s, g); /* its turn is over, picked or not */
                scanned++;
                if (!first)
                        first = g;

                unsigned share_g = MAX(1u, s->max_open / MAX(1u, s->n_active_groups));
                unsigned share_j = MAX(1u, share_g / MAX(1u, g->n_active_jobs));
                /* Borrowed slots are shared as if one more group were there: a group alone (a user's
                 * 128 silent pipes and /dev/zero streams, H4) may not take every slot, or the next
                 * group to come would find none free until a stream ends. */
                unsigned borrow_g = MAX(1u, s->max_open / (s->n_active_groups + 1u));
                if (!room && g->n_borrowed >= borrow_g)
                        continue;
                /* An interactive job goes before the rest of its group: the group's share is its
                 * first, and the group's other jobs wait while it has inputs left. */
                if (g->n_wait_interactive > 0 && (j = group_interactive(g))) {
                        if (job_shard(s, j)->n_open < share_g)
                                return j;
                        continue;
                }
                for (unsigned k = 0; k < MIN(g->n_wait_jobs, SCHED_SCAN_MAX) && (j = group_front(s, g)); k++) {
                        if (job_shard(s, j)->n_open < share_j)
                                return j;
                        group_rotate_job(g);
                }
        }
        /* Every job looked at is over its share: the first group's (its interactive one first), if
         * there is room. */
        if (!room || !first)
                return NULL;
        EngineJob *j = first->n_wait_interactive > 0 ? group_interactive(first) : NULL;
        return j ? j : group_front(s, first);
}

/* Makes sure the slot has n extra hash contexts; false when out of memory. */
static bool slot_more_contexts(FileSlot *f, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                if (!f->ctx_more[i] && hash_ctx_new(&f->ctx_more[i]) < 0)
                        return false;
        return true;
}

/* Starts opening inputs while the scheduler gives slots. */
/* j's last input was claimed: the other shards that hold it let go at their next turn, so that its
 * end is not held up by a shard whose slots are all busy. */
static void job_exhausted_tell(Shard *s)
{
        Engine *e = s->engine;

        for (unsigned i = 0; i < e->n_shards; i++) {
                Shard *o = &e->shards[i];
                if (o == s)
                        continue;
                atomic_store(&o->cancel_pending, true);
                atomic_store_explicit(&o->control_pending, true, memory_order_release);
                shard_wake(o);
        }
}

/* Starts opening inputs while the scheduler gives slots. Every shard claims inputs from the job's
 * one counter: a shard with a free slot takes the next input, however the others are doing. */
bool open_more(Shard *s)
{
        bool any = false;
        EngineJob *j;

        while ((j = sched_pick(s))) {
                JobShard *js = job_shard(s, j);
                ShareGroup *g = js->group;
                FileSlot *f = s->free_slots;
                HashCtx *ctx = f->ctx, *more[ELEMENTSOF(f->ctx_more)];

                if (!ctx && hash_ctx_new(&ctx) < 0)
                        break; /* out of memory: try again when a slot comes back */
                f->ctx = ctx;
                /* A set's other algorithms get contexts of their own, kept with the slot. */
                if (!slot_more_contexts(f, j->algos.n - 1))
                        break;

                size_t input = atomic_fetch_add(&j->next_input, 1);
                if (input >= j->n_inputs) {
                        /* Another shard took the last one since sched_pick() looked. */
                        if (g->jobs_head == js)
                                group_pop_job(s, g);
                        continue;
                }

                memcpy(more, f->ctx_more, sizeof(more));
                s->free_slots = f->next;
                *f = (FileSlot){ .job = j, .input = input, .algo = j->algo, .state = FILE_OPENING,
                                 .fd = -EBADF, .status = ENGINE_FILE_OK, .ctx = ctx, .chunk = s->buffer_size,
                                 .group = g, .progress_usec = s->now, .shard = s->id };
                memcpy(f->ctx_more, more, sizeof(more));
                atomic_store_explicit(&f->parts, 1, memory_order_relaxed);
                open_list_add(s, f);
                sched_charge_file(s, f);
                atomic_store_explicit(&j->running, true, memory_order_relaxed);

                /* The next slot goes to the next job of the group, and a job whose inputs are all
                 * claimed leaves the lists of every shard now, before its files can finish. The
                 * file's own result, not posted yet, keeps j alive until file_start() is done. */
                if (input + 1 >= j->n_inputs) {
                        job_exhausted_tell(s);
                        if (g->jobs_head == js)
                                group_pop_job(s, g);
                        else {
                                /* Picked out of turn (an interactive job): this shard's own sweep
                                 * takes it off the list at its next turn, as the others' do. */
                                atomic_store(&s->cancel_pending, true);
                                atomic_store_explicit(&s->control_pending, true, memory_order_release);
                        }
                } else if (g->jobs_head == js)
                        group_rotate_job(g);

                file_start(s, f);
                /* Nothing here reads j any more: file_opened() may have posted its last result. */
                any = true;
        }
        return any;
}

static void handle_cancels(Shard *s)
{
        bool all = atomic_load(&s->engine->shutdown);

        for (ShareGroup *g = s->groups; g; g = g->next)
                for (JobShard *js = g->jobs_head; js; js = js->active_next)
                        if (all || atomic_load(&js->job->cancel_requested)) {
                                atomic_store(&js->job->cancel_requested, true);
                                js->cancel_seen = true;
                        }
        for (FileSlot *f = s->open_head, *next; f; f = next) {
                next = f->next;
                if (all || atomic_load(&f->job->cancel_requested)) {
                        atomic_store(&f->job->cancel_requested, true);
                        file_abort(s, f, ENGINE_FILE_CANCELLED, 0);
                        file_finish_io(s, f);
                }
        }
        /* Jobs whose inputs all wait unopened are finished here, not when a slot frees; jobs whose
         * last input another shard claimed are let go. */
        for (ShareGroup *g = s->groups; g; g = g->next)
                for (unsigned n = g->n_wait_jobs; n > 0 && g->jobs_head; n--) {
                        JobShard *js = g->jobs_head;
                        if (js->cancel_seen) {
                                job_cancel_unopened(s, js->job, ENGINE_FILE_CANCELLED, 0);
                                group_pop_job(s, g);
                        } else if (job_exhausted(js->job))
                                group_pop_job(s, g);
                        else
                                group_rotate_job(g);
                }
}

void handle_control(Shard *s)
{
        EngineJob **jobs;
        int *fds;
        size_t n, n_fds;

        atomic_store(&s->control_pending, false);

        pthread_mutex_lock(&s->control_lock);
        jobs = s->new_jobs;
        n = s->n_new_jobs;
        s->new_jobs = NULL;
        s->n_new_jobs = s->n_new_jobs_alloc = 0;
        fds = s->close_fds;
        n_fds = s->n_close_fds;
        s->close_fds = NULL;
        s->n_close_fds = s->n_close_fds_alloc = 0;
        pthread_mutex_unlock(&s->control_lock);

        for (size_t i = 0; i < n_fds; i++)
                close_anon(s, fds[i]);
        free(fds);

        for (size_t i = 0; i < n; i++) {
                EngineJob *j = jobs[i];
                ShareGroup *g = j->n_inputs > 0 ? group_get(s, j->options.share_group) : NULL;
                if (!g) {
                        /* Nothing to open (or no memory for its group): every input ends now. */
                        if (j->n_inputs > 0) {
                                atomic_store(&j->cancel_requested, true);
                                job_cancel_unopened(s, j, ENGINE_FILE_ERROR, -ENOMEM);
                        }
                        job_shard_release(s, j);
                        continue;
                }
                group_add_job(s, g, job_shard(s, j));
        }
        free(jobs);

        if (atomic_exchange(&s->cancel_pending, false) || atomic_load(&s->engine->shutdown))
                handle_cancels(s);
}
