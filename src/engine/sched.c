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

static ShareGroup *group_get(Engine *e, uint64_t id)
{
        ShareGroup *g;

        for (g = e->groups; g; g = g->next)
                if (g->id == id)
                        return g;
        g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        g->id = id;
        LIST_PREPEND(e->groups, g);
        return g;
}

static void group_maybe_free(Engine *e, ShareGroup *g)
{
        if (g->n_open > 0 || g->n_bufs > 0 || g->n_small_bufs > 0 || g->n_wait_jobs > 0 || g->n_active_jobs > 0 ||
            g->waiting)
                return;
        LIST_REMOVE(e->groups, g);
        free(g);
}

void sched_free_all(Engine *e)
{
        while (e->groups) {
                ShareGroup *g = e->groups;
                e->groups = g->next;
                free(g);
        }
}

/* A job competes for its group's share while it has inputs left to open or files open; a group
 * for the engine's while one of its jobs does. Called after either may have changed. */
static void job_update_active(Engine *e, EngineJob *j)
{
        ShareGroup *g = j->group;
        bool active = j->in_active || j->n_open > 0;

        if (active == j->sched_active)
                return;
        j->sched_active = active;
        if (active) {
                if (g->n_active_jobs++ == 0)
                        e->n_active_groups++;
        } else if (--g->n_active_jobs == 0)
                e->n_active_groups--;
}

void sched_charge_file(Engine *e, FileSlot *f)
{
        ShareGroup *g = f->group;

        if (g->n_open++ == 0)
                e->n_groups_open++;
        f->borrowed = e->n_open > e->open_cap; /* open_list_add() counted f already */
        if (f->borrowed)
                g->n_borrowed++;
        f->job->n_open++;
        job_update_active(e, f->job);
        f->charged = true;
}

/* Before the file's result is posted: the job is alive. */
void sched_uncharge_file(Engine *e, FileSlot *f)
{
        ShareGroup *g = f->group;

        if (!f->charged)
                return;
        f->charged = false;
        f->job->n_open--;
        job_update_active(e, f->job);
        if (f->borrowed)
                g->n_borrowed--;
        if (--g->n_open == 0)
                e->n_groups_open--;
        group_maybe_free(e, g);
}

void sched_charge_buffer(Engine *e, ShareGroup *g, bool small)
{
        if (small)
                g->n_small_bufs++;
        else
                g->n_bufs++;
}

void sched_uncharge_buffer(Engine *e, ShareGroup *g, bool small)
{
        if (small)
                g->n_small_bufs--;
        else
                g->n_bufs--;
        group_maybe_free(e, g);
}

/* Each kind of slot is shared on its own: counted together, a group of streams held all 16 pool
 * buffers while "under" a share of (16 + 64 small slots) / 2, and another group's 2 MiB file
 * waited behind it for good (H4). */
bool sched_over_buffer_share(const Engine *e, const ShareGroup *g)
{
        unsigned groups = MAX(1u, e->n_groups_open);

        return e->n_groups_open > 1 &&
               (g->n_bufs >= MAX(1u, e->n_buffers / groups) || g->n_small_bufs >= MAX(1u, e->n_small / groups));
}

/* ---- groups with inputs to open, and their jobs, in turn ---- */

static void wait_ring_add(Engine *e, ShareGroup *g)
{
        g->waiting = true;
        QUEUE_APPEND_BY(wait_next, e->wait_head, e->wait_tail, g);
        e->n_wait_groups++;
}

static ShareGroup *wait_ring_pop(Engine *e)
{
        ShareGroup *g = QUEUE_POP_BY(wait_next, e->wait_head, e->wait_tail);

        g->waiting = false;
        e->n_wait_groups--;
        return g;
}

static EngineJob *group_unlink_head(ShareGroup *g)
{
        EngineJob *j = QUEUE_POP_BY(active_next, g->jobs_head, g->jobs_tail);

        g->n_wait_jobs--;
        return j;
}

static void group_append(ShareGroup *g, EngineJob *j)
{
        QUEUE_APPEND_BY(active_next, g->jobs_head, g->jobs_tail, j);
        g->n_wait_jobs++;
}

static void group_add_job(Engine *e, ShareGroup *g, EngineJob *j)
{
        j->group = g;
        j->in_active = true;
        group_append(g, j);
        job_update_active(e, j);
        if (!g->waiting)
                wait_ring_add(e, g);
}

/* Takes g's first job off its list for good (all its inputs have slots or results). */
static EngineJob *group_pop_job(Engine *e, ShareGroup *g)
{
        EngineJob *j = group_unlink_head(g);

        j->in_active = false;
        job_update_active(e, j);
        return j;
}

/* Reports every unopened input as cancelled, closing the fds among them through the ring. The
 * caller has already taken j off its group's list: after the last post the consumer may free j,
 * so nothing here reads j after it. */
static void job_cancel_unopened(Engine *e, EngineJob *j)
{
        size_t first = j->next_input, n = j->n_inputs;

        j->next_input = n;
        for (size_t i = first; i < n; i++) {
                if (j->inputs[i].fd >= 0)
                        close_anon(e, TAKE_FD(j->inputs[i].fd));
                post_simple(e, j, i, ENGINE_FILE_CANCELLED, 0);
        }
}

/* The first job of g that has inputs left, dropping the others (cancelled: their unopened inputs
 * get their results; done: nothing left to open) from g's list; NULL when none is left. */
static EngineJob *group_front(Engine *e, ShareGroup *g)
{
        while (g->jobs_head) {
                EngineJob *j = g->jobs_head;
                if (j->next_input < j->n_inputs && !j->cancel_seen)
                        return j;
                group_pop_job(e, g);
                if (j->cancel_seen)
                        job_cancel_unopened(e, j);
        }
        return NULL;
}

static void group_rotate_job(ShareGroup *g)
{
        if (g->jobs_head != g->jobs_tail)
                group_append(g, group_unlink_head(g));
}

/*
 * The job whose input opens next, or NULL. Groups, then jobs, take turns; a job under its share
 * (max_open split evenly between the groups with inputs to open or files open, a group's part
 * between its jobs the same way) goes first. Up to open_cap any job may open (the slots would idle
 * otherwise); beyond it, up to as many again, only a job under its share, and only while its
 * group has borrowed less than the group's share: a newcomer is not stuck behind files that hold
 * their slots for long (streams, stalls), and the borrowing of all groups together stays under
 * max_open, each group's under max_open / (groups + 1) so that a group to come finds slots free.
 */
static EngineJob *sched_pick(Engine *e)
{
        bool room = e->n_open < e->open_cap;
        unsigned hard_cap = e->open_cap < e->max_open ? e->open_cap : e->n_slots;
        ShareGroup *first = NULL;
        unsigned scanned = 0;

        if (!e->free_slots || e->n_open >= hard_cap)
                return NULL;
        while (e->wait_head && scanned < MIN(e->n_wait_groups, SCHED_SCAN_MAX)) {
                ShareGroup *g = wait_ring_pop(e);
                EngineJob *j = group_front(e, g);

                if (!j) {
                        group_maybe_free(e, g); /* nothing left to open: off the ring */
                        continue;
                }
                wait_ring_add(e, g); /* its turn is over, picked or not */
                scanned++;
                if (!first)
                        first = g;

                unsigned share_g = MAX(1u, e->max_open / MAX(1u, e->n_active_groups));
                unsigned share_j = MAX(1u, share_g / MAX(1u, g->n_active_jobs));
                /* Borrowed slots are shared as if one more group were there: a group alone (a user's
                 * 128 silent pipes and /dev/zero streams, H4) may not take every slot, or the next
                 * group to come would find none free until a stream ends. */
                unsigned borrow_g = MAX(1u, e->max_open / (e->n_active_groups + 1u));
                if (!room && g->n_borrowed >= borrow_g)
                        continue;
                for (unsigned k = 0; k < MIN(g->n_wait_jobs, SCHED_SCAN_MAX) && (j = group_front(e, g)); k++) {
                        if (j->n_open < share_j)
                                return j;
                        group_rotate_job(g);
                }
        }
        /* Every job looked at is over its share: the first group's, if there is room. */
        return room && first ? group_front(e, first) : NULL;
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
bool open_more(Engine *e)
{
        bool any = false;
        EngineJob *j;

        while ((j = sched_pick(e))) {
                ShareGroup *g = j->group;
                FileSlot *f = e->free_slots;
                HashCtx *ctx = f->ctx, *more[ELEMENTSOF(f->ctx_more)];

                if (!ctx && hash_ctx_new(&ctx) < 0)
                        break; /* out of memory: try again when a slot comes back */
                f->ctx = ctx;
                /* A set's other algorithms get contexts of their own, kept with the slot. */
                if (!slot_more_contexts(f, j->algos.n - 1))
                        break;
                memcpy(more, f->ctx_more, sizeof(more));
                e->free_slots = f->next;
                *f = (FileSlot){ .job = j, .input = j->next_input, .algo = j->algo, .state = FILE_OPENING,
                                 .fd = -EBADF, .status = ENGINE_FILE_OK, .ctx = ctx, .chunk = e->buffer_size,
                                 .group = g, .progress_usec = e->now };
                memcpy(f->ctx_more, more, sizeof(more));
                atomic_store_explicit(&f->parts, 1, memory_order_relaxed);
                open_list_add(e, f);
                sched_charge_file(e, f);
                j->next_input++;
                atomic_store_explicit(&j->running, true, memory_order_relaxed);

                /* The next slot goes to the next job of the group, and a job whose inputs are all
                 * opened leaves the list now, before its files can finish: once its last result is
                 * posted the consumer may free it. */
                if (g->jobs_head == j) {
                        if (j->next_input >= j->n_inputs)
                                group_pop_job(e, g);
                        else
                                group_rotate_job(g);
                }

                file_start(e, f);
                /* Nothing here reads j any more: file_opened() may have posted its last result. */
                any = true;
        }
        return any;
}

static void handle_cancels(Engine *e)
{
        bool all = atomic_load(&e->shutdown);

        for (ShareGroup *g = e->groups; g; g = g->next)
                for (EngineJob *j = g->jobs_head; j; j = j->active_next)
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
        for (ShareGroup *g = e->groups; g; g = g->next)
                for (unsigned n = g->n_wait_jobs; n > 0 && g->jobs_head; n--) {
                        EngineJob *j = g->jobs_head;
                        if (j->cancel_seen) {
                                group_pop_job(e, g);
                                job_cancel_unopened(e, j);
                        } else
                                group_rotate_job(g);
                }
}

void handle_control(Engine *e)
{
        EngineJob **jobs;
        int *fds;
        size_t n, n_fds;

        atomic_store(&e->control_pending, false);

        pthread_mutex_lock(&e->control_lock);
        jobs = e->new_jobs;
        n = e->n_new_jobs;
        e->new_jobs = NULL;
        e->n_new_jobs = e->n_new_jobs_alloc = 0;
        fds = e->close_fds;
        n_fds = e->n_close_fds;
        e->close_fds = NULL;
        e->n_close_fds = e->n_close_fds_alloc = 0;
        pthread_mutex_unlock(&e->control_lock);

        for (size_t i = 0; i < n_fds; i++)
                close_anon(e, fds[i]);
        free(fds);

        for (size_t i = 0; i < n; i++) {
                EngineJob *j = jobs[i];
                ShareGroup *g = j->n_inputs > 0 ? group_get(e, j->options.share_group) : NULL;
                if (!g) {
                        /* Nothing to open (or no memory for its group): every input ends now. */
                        if (j->n_inputs > 0)
                                atomic_store(&j->cancel_requested, true);
                        for (size_t k = 0; k < j->n_inputs; k++) {
                                if (j->inputs[k].fd >= 0)
                                        close_anon(e, TAKE_FD(j->inputs[k].fd));
                                post_simple(e, j, k, ENGINE_FILE_ERROR, -ENOMEM);
                        }
                        if (j->n_inputs == 0) {
                                bool c = atomic_load(&j->cancel_requested);
                                event_push(e, &(Event){ .type = EVENT_JOB, .job = j,
                                                        .job_result = c ? ENGINE_JOB_CANCELLED : ENGINE_JOB_DONE });
                        }
                        continue;
                }
                group_add_job(e, g, j);
        }
        free(jobs);

        if (atomic_exchange(&e->cancel_pending, false) || atomic_load(&e->shutdown))
                handle_cancels(e);
}
