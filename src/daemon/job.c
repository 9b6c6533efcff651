/* SPDX-License-Identifier: MIT */
/* job.c: one hashing job: inputs -> engine parts -> results, state and progress -> signals */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-table.h"
#include "basic/time-util.h"
#include "daemon/bus-job.h"
#include "daemon/job.h"
#include "fhash/fhash-dbus.h"

static const char *const job_state_table[_JOB_STATE_MAX] = {
        [JOB_QUEUED] = "queued",     [JOB_RUNNING] = "running",     [JOB_DONE] = "done",
        [JOB_FAILED] = "failed",     [JOB_CANCELLED] = "cancelled",
};

DEFINE_STRING_TABLE_LOOKUP(job_state, JobState, job_state_table, _JOB_STATE_MAX, _JOB_STATE_INVALID)

static void job_send_results(const uint32_t *indices, size_t n, void *userdata)
{
        Job *j = userdata;

        if (!j->owner_gone)
                (void)bus_job_emit_files_hashed(j, indices, n);
}

static void on_owner_gone(OwnerRef *ref);

int job_new(Context *c, const char *owner, uid_t uid, const HashAlgoSet *algos, const EngineJobOptions *options,
            bool allow_streams, bool open, Job **ret)
{
        _cleanup_(job_freep) Job *j = NULL;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (Job){ .context = c, .uid = uid, .algos = *algos, .algo = algos->algos[0], .state = JOB_QUEUED,
                    .engine_options = *options };
        j->engine_options.params = NULL;
        j->engine_options.algos = &j->algos;
        if (options->params) {
                j->params = *options->params;
                j->params.context = NULL;
                if (options->params->context) {
                        j->params_context = strdup(options->params->context);
                        if (!j->params_context)
                                /* j is _cleanup_(job_freep), as below. */
                                // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
                                return -ENOMEM; // cppcheck-suppress memleak
                        j->params.context = j->params_context;
                }
                j->engine_options.params = &j->params;
        }
        /* Fair share between uids in the engine: one user's silent pipes cannot take another's. */
        j->engine_options.share_group = uid;
        j->allow_streams = allow_streams;
        j->open = open;
        j->owner_ref.gone = on_owner_gone;
        j->owner = strdup(owner);
        if (!j->owner)
                /* j is _cleanup_(job_freep): neither tool follows cleanup attributes on a struct that owns
                 * other allocations (see manager_new()). */
                // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
                return -ENOMEM; // cppcheck-suppress memleak
        r = job_results_init(&j->results, c->event, job_send_results, j);
        if (r < 0)
                return r;
        j->results.algos = j->algos;

        /* From here on job_free() has registry bookkeeping to undo. */
        r = registry_add_job(&c->registry, &j->entry, j, uid);
        if (r != 0)
                return r;
        if (asprintf(&j->object_path, "%s/%" PRIu64, FHASH_JOB_PATH_PREFIX, j->entry.id) < 0) {
                j->object_path = NULL;
                return -ENOMEM;
        }
        context_jobs_changed(c);
        *ret = TAKE_PTR(j);
        return 0;
}

Job *job_free(Job *j)
{
        Context *c;
        bool registered;

        if (!j)
                return NULL;
        c = j->context;

        /* Parts before anything else: the engine then stops calling back into this job. */
        job_parts_drop(&j->parts);
        j->new_part = job_part_free(j->new_part);
        sd_event_source_disable_unref(j->finish_defer);
        sd_event_source_disable_unref(j->linger_timer);
        owner_release(&j->owner_ref);

        registered = j->entry.job != NULL;
        registry_remove_job(&c->registry, &j->entry);
        job_results_done(&j->results);
        free(j->owner);
        hash_params_wipe(&j->params);
        free(j->params_context);
        free(j->object_path);
        free(j);
        if (registered)
                context_jobs_changed(c);
        return NULL;
}

int job_begin_inputs(Job *j, size_t n, uint32_t *ret_first)
{
        int r;

        if (n == 0 || j->results.n_inputs != j->n_committed || job_is_finished(j))
                return -EINVAL;
        /* Accepted files count against the uid until they have a result (job_input_done()), and
         * their results against its memory until the job goes. */
        j->refused = USER_RESOURCE_FILES;
        r = user_charge(j->entry.user, &j->entry.file_charge, n);
        if (r != 0)
                return r;
        j->refused = USER_RESOURCE_MEMORY;
        r = user_charge(j->entry.user, &j->entry.mem_charge, (uint64_t)n * job_results_cost(&j->results));
        if (r != 0) {
                user_charge_release(&j->entry.file_charge, n);
                return r;
        }
        r = job_results_grow(&j->results, n, ret_first);
        if (r < 0) {
                user_charge_release(&j->entry.file_charge, n);
                user_charge_release(&j->entry.mem_charge, (uint64_t)n * job_results_cost(&j->results));
        }
        return r;
}

void job_abort_inputs(Job *j)
{
        j->new_part = job_part_free(j->new_part);
        for (size_t i = j->n_committed; i < j->results.n_inputs; i++) {
                const JobResult *res = &j->results.items[i];
                const char *e = j->results.expected ? j->results.expected[i] : NULL;

                if (res->holds_fd)
                        user_charge_release(&j->entry.fd_charge, 1);
                user_charge_release(&j->entry.mem_charge, job_results_cost(&j->results) + (res->name ? strlen(res->name) + 1 : 0) +
                                                                  (e ? strlen(e) + 1 : 0));
        }
        user_charge_release(&j->entry.file_charge, j->results.n_inputs - j->n_committed);
        job_results_truncate(&j->results, j->n_committed);
}

/* Inputs of the call being filled: the only ones the setters may touch. */
static bool job_input_is_new(const Job *j, size_t i)
{
        return i >= j->n_committed && i < j->results.n_inputs;
}

/* Charges n bytes of job data to the uid for one of the call's inputs (released when the job goes,
 * or by job_abort_inputs()). */
static int job_charge_memory(Job *j, size_t n)
{
        j->refused = USER_RESOURCE_MEMORY;
        return user_charge(j->entry.user, &j->entry.mem_charge, n);
}

/* Stores s for input i with set(), charged to the uid: once per input (unset must be true). */
static int job_set_string(Job *j, size_t i, bool unset, const char *s,
                          int (*set)(JobResults *r, size_t i, const char *s))
{
        int r;

        if (!job_input_is_new(j, i) || !unset)
                return -EINVAL;
        r = job_charge_memory(j, strlen(s) + 1);
        if (r == 0) {
                r = set(&j->results, i, s);
                if (r < 0)
                        user_charge_release(&j->entry.mem_charge, strlen(s) + 1);
        }
        return r;
}

int job_set_name(Job *j, size_t i, const char *name)
{
        return job_set_string(j, i, i < j->results.n_inputs && !j->results.items[i].name, name,
                              job_results_set_name);
}

int job_set_expected(Job *j, size_t i, const char *hex)
{
        return job_set_string(j, i, !(j->results.expected && i < j->results.n_inputs && j->results.expected[i]),
                              hex, job_results_set_expected);
}

/* The part of the current call, made when its first input needs the engine. */
static int job_get_new_part(Job *j, JobPart **ret)
{
        if (!j->new_part) {
                Engine *e = j->priority == JOB_PRIORITY_BACKGROUND ? j->context->background : j->context->engine;
                /* create_job() made the background engine before it made a background job. */
                int r = e ? job_part_new(e, j->algo, &j->engine_options,
                                         (size_t)(j->results.n_inputs - j->n_committed), j, &j->new_part)
                          : -EOPNOTSUPP;
                if (r < 0)
                        return r;
        }
        *ret = j->new_part;
        return 0;
}

int job_add_input(Job *j, size_t i, int fd, unsigned flags, const EngineFdInfo *info, const char *path, EngineDir *dir)
{
        JobPart *p;
        int r;

        if (!job_input_is_new(j, i))
                return -EINVAL;
        r = job_get_new_part(j, &p);
        if (r < 0)
                return r;
        if (fd >= 0) {
                j->refused = USER_RESOURCE_FDS;
                r = user_charge(j->entry.user, &j->entry.fd_charge, 1);
                if (r != 0)
                        return r;
        }
        r = engine_job_add_input(p->engine_job, &(EngineInput){ .fd = fd, .flags = flags, .info = info,
                                                                .path = fd >= 0 ? NULL : path, .dir = dir,
                                                                .cookie = engine_job_get_n_inputs(p->engine_job) });
        if (r < 0) {
                if (fd >= 0)
                        user_charge_release(&j->entry.fd_charge, 1);
                return r;
        }
        j->results.items[i].holds_fd = fd >= 0;
        /* The engine owns fd now, and numbered the input r. */
        job_part_map(p, (size_t)r, (uint32_t)i);
        return 0;
}

int job_fail_input(Job *j, size_t i, const char *error_name, const char *message)
{
        if (!job_input_is_new(j, i))
                return -EINVAL;
        /* Queued when the call's inputs are committed, sent from the batch timer, hence after the
         * method reply that names the job and the input's index. */
        return job_results_set_error(&j->results, i, error_name, "%s", message);
}

/* Input i has its result: it goes out with the next batch and no longer counts against the uid. */
static void job_input_done(Job *j, size_t i, bool may_flush)
{
        JobResult *res = &j->results.items[i];

        if (res->holds_fd) {
                res->holds_fd = false;
                user_charge_release(&j->entry.fd_charge, 1);
        }
        job_results_queue(&j->results, i, may_flush);
        user_charge_release(&j->entry.file_charge, 1);
}

static int on_linger_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Job *j = userdata;

        log_debug("Job %" PRIu64 " expired.", j->entry.id);
        job_free(j);
        return 0;
}

static void job_set_running(Job *j)
{
        if (j->state != JOB_QUEUED)
                return;
        j->state = JOB_RUNNING;
        if (!j->owner_gone)
                (void)bus_job_emit_properties_changed(j, true, false);
}

/* Recomputes the published numbers from the running totals; true if they changed. */
static bool job_refresh_progress(Job *j, bool running)
{
        uint64_t now, bytes_done, bytes_total, rate;
        uint32_t n = j->results.n_inputs;
        double progress;

        bytes_done = MAX(job_parts_bytes_done(&j->parts), j->bytes_done);
        bytes_total = MAX(job_parts_bytes_total(&j->parts), bytes_done);
        /* A total only grows, but across parts a total seen mid-read can exceed the sum once the
         * part is done (a file that shrank): never show less than before. */
        bytes_total = MAX(bytes_total, j->bytes_total);
        now = now_usec();
        rate = now > j->start_usec && j->start_usec > 0
                       ? (uint64_t)((double)bytes_done * 1e6 / (double)(now - j->start_usec))
                       : 0;
        /* Files give the fairer figure for many small files. A single file has only bytes, and
         * its total is known once it is open. */
        progress = n > 0 ? (double)j->results.files_done / (double)n : 0.0;
        if (n == 1 && bytes_total > 0)
                progress = (double)bytes_done / (double)bytes_total;
        /* Never backwards, except when inputs were added: then it is done / total again. */
        if (j->progress_inputs == n)
                progress = MAX(progress, j->progress);
        /* 1 only once every input has its result (a file's bytes can all be read before its digest
         * is made); an open job whose inputs so far are all done is at 1 until more come. */
        if (j->results.files_done < n || n == 0)
                progress = MIN(progress, 0.999);
        else
                progress = 1.0;

        if (running || bytes_done > 0)
                job_set_running(j);

        if (bytes_done == j->bytes_done && bytes_total == j->bytes_total && progress == j->progress &&
            j->progress_inputs == n)
                return false;
        j->bytes_done = bytes_done;
        j->bytes_total = bytes_total;
        j->rate = rate;
        j->progress = progress;
        j->progress_inputs = n;
        return true;
}

bool job_update_progress(Job *j)
{
        bool running = false;

        /* Nothing left for the engine and nothing to come: the numbers cannot move any more. */
        if (job_is_finished(j) || (!j->parts.head && !j->open))
                return false;
        /* The engine begins a job's parts in the order they were started: those it can be working
         * on are the oldest, up to the first it has not begun (which, like all after it, has read
         * nothing yet). So this costs the parts in flight, not all of them. */
        for (JobPart *p = j->parts.head; p; p = p->next) {
                if (!job_parts_poll(&j->parts, p, NULL))
                        break;
                running = true;
        }
        return job_refresh_progress(j, running);
}

static void job_finish(Job *j, bool cancelled)
{
        Context *c = j->context;
        int r;

        if (job_is_finished(j))
                return;

        (void)job_update_progress(j);
        j->open = false;
        j->end_usec = now_usec();
        j->state = cancelled ? JOB_CANCELLED : j->results.files_failed > 0 ? JOB_FAILED : JOB_DONE;
        j->progress = 1.0;

        /* Results first, then the state, then JobFinished: a client may stop listening on
         * JobFinished and must have every result by then. */
        job_results_flush(&j->results);
        if (!j->owner_gone) {
                (void)bus_job_emit_properties_changed(j, true, true);
                (void)bus_job_emit_finished(j);
        }

        log_debug("Job %" PRIu64 " of uid %u %s: %" PRIu32 " ok, %" PRIu32 " failed.", j->entry.id,
                  (unsigned)j->uid, job_state_to_string(j->state), j->results.files_ok, j->results.files_failed);

        r = sd_event_add_time_relative(c->event, &j->linger_timer, CLOCK_MONOTONIC, c->keep_finished_usec,
                                       1000000, on_linger_timer, j);
        if (r < 0)
                log_warning_errno(r, "Failed to arm expiry of job %" PRIu64 ", keeping it: %m", j->entry.id);

        registry_job_finished(&c->registry, &j->entry);
        context_jobs_changed(c);
}

static void on_file_done(EngineJob *ej, const EngineFileResult *r, void *userdata)
{
        JobPart *p = userdata;
        Job *j = p->owner;
        size_t i;

        if (r->index >= p->n_engine_inputs)
                return;
        i = p->engine_to_input[r->index];
        if (j->results.items[i].done)
                return;

        job_set_running(j);
        job_results_set_from_engine(&j->results, i, r);
        job_input_done(j, i, true);
}

static void on_job_done(EngineJob *ej, EngineJobResult result, void *userdata)
{
        JobPart *p = userdata;
        Job *j = p->owner;
        bool running;

        /* Anything the engine did not report (it should report every input) fails rather than
         * vanishing from the results. */
        for (size_t k = 0; k < p->n_engine_inputs; k++) {
                size_t i = p->engine_to_input[k];

                if (!j->results.items[i].done) {
                        if (result == ENGINE_JOB_CANCELLED)
                                (void)job_results_set_error(&j->results, i, FHASH_ERROR_CANCELLED, "job was cancelled");
                        else
                                (void)job_results_set_error(&j->results, i, FHASH_ERROR_IO, "no result from the engine");
                        job_input_done(j, i, true);
                }
        }
        if (result == ENGINE_JOB_CANCELLED)
                j->cancelled = true;
        running = job_parts_retire(&j->parts, p);
        (void)job_refresh_progress(j, running);

        if (!j->open && !j->parts.head)
                job_finish(j, j->cancelled);
        else if (!j->parts.head)
                /* Open and idle: a client that keeps a bounded number of files in flight sends
                 * more only once it has these results. Holding them for a fuller batch or for
                 * JOB_BATCH_USEC would stall it for nothing. */
                job_results_flush(&j->results);
}

static int on_finish_defer(sd_event_source *s, void *userdata)
{
        Job *j = userdata;

        j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
        job_finish(j, j->cancelled);
        return 0;
}

/* The owner disconnected: an unfinished job is cancelled and releases its fds and buffers at once, and
 * any job lets go of its results and their charge to the uid (nobody is left to read them; a client
 * that hashes and exits again and again found its uid Busy with its earlier runs' results). */
static void on_owner_gone(OwnerRef *ref)
{
        Job *j = container_of(ref, Job, owner_ref);

        log_debug("Owner %s of job %" PRIu64 " disconnected%s.", j->owner, j->entry.id,
                  job_is_finished(j) ? "" : ", ending the job");
        j->owner_gone = true;

        if (!job_is_finished(j)) {
                /* Every input has its result and none can come (the client left right after its last
                 * result, before the engine's end of the job reached us): done, not cancelled. */
                bool complete = !j->open && j->n_committed == j->results.n_inputs &&
                                j->results.files_done == j->results.n_inputs;

                /* Dropping our references cancels the engine side at once, without further
                 * callbacks, and releases its fds and buffers; there is nobody left to send results
                 * to. */
                job_parts_drop(&j->parts);
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                for (size_t i = 0; i < j->n_committed; i++)
                        if (!j->results.items[i].done) {
                                (void)job_results_set_error(&j->results, i, FHASH_ERROR_CANCELLED, "owner disconnected");
                                job_input_done(j, i, true);
                        }
                job_finish(j, !complete || j->cancelled);
        }
        /* Its state and counts linger for root or the same uid to inspect; it no longer keeps
         * fhashd from exiting when idle (the owner tells the manager). */
        (void)job_release_results(j);
}

int job_release_results(Job *j)
{
        if (!job_is_finished(j))
                return -EBUSY;
        if (j->results.released)
                return 0;
        job_results_release(&j->results);
        user_charge_release(&j->entry.mem_charge, j->entry.mem_charge.amount);
        return 0;
}

/* Hands the current call's inputs to the engine and queues those that failed up front. */
static int job_commit(Job *j)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = on_file_done,
                .job_done = on_job_done,
        };
        JobPart *p = j->new_part;
        int r;

        for (size_t i = j->n_committed; i < j->results.n_inputs; i++)
                if (!j->results.items[i].name) {
                        r = job_set_name(j, i, "");
                        if (r < 0)
                                return r;
                }

        if (p && p->n_engine_inputs > 0) {
                r = engine_job_start(p->engine_job, &callbacks, p);
                if (r < 0)
                        return r;
                /* Nothing fails from here on. */
                job_parts_link(&j->parts, p);
                j->new_part = NULL;
        } else
                j->new_part = job_part_free(j->new_part);

        for (size_t i = j->n_committed; i < j->results.n_inputs; i++)
                if (j->results.items[i].error)
                        job_input_done(j, i, false);
        j->n_committed = j->results.n_inputs;
        return 0;
}

/* A closed job with nothing left for the engine finishes on the next loop iteration, after the reply
 * of the call that closed it went out. */
static int job_maybe_finish_later(Job *j)
{
        if (j->open || j->parts.head || j->finish_defer || job_is_finished(j))
                return 0;
        return sd_event_add_defer(j->context->event, &j->finish_defer, on_finish_defer, j);
}

int job_start(Job *j, sd_bus *bus)
{
        Context *c = j->context;
        int r;

        if (j->started)
                return -EBUSY;
        if (j->results.n_inputs == 0)
                return -EINVAL;

        r = owner_acquire(c, bus, j->owner, j->uid, &j->owner_ref);
        if (r != 0)
                return r;

        /* Before the commit: past it nothing may fail. */
        if (!j->open && !(j->new_part && j->new_part->n_engine_inputs > 0)) {
                r = sd_event_add_defer(c->event, &j->finish_defer, on_finish_defer, j);
                if (r < 0)
                        return r;
        }
        r = job_commit(j);
        if (r < 0)
                return r;
        j->started = true;
        j->start_usec = now_usec();
        /* Open and idle (every input failed up front): running, waiting for more. */
        if (j->open && !j->parts.head)
                j->state = JOB_RUNNING;
        return 0;
}

int job_commit_inputs(Job *j, bool more)
{
        int r;

        if (!job_is_open(j))
                return -ESTALE;
        r = job_commit(j);
        if (r < 0)
                return r;
        if (!more) {
                j->open = false;
                r = job_maybe_finish_later(j);
                if (r < 0) {
                        /* Out of memory for an event source: finish now rather than never. */
                        log_warning_errno(r, "Failed to defer the end of job %" PRIu64 ", finishing it now: %m",
                                          j->entry.id);
                        job_finish(j, j->cancelled);
                }
        } else if (!j->parts.head)
                job_set_running(j);
        return 0;
}

void job_cancel(Job *j)
{
        if (job_is_finished(j))
                return;
        j->open = false;
        j->cancelled = true;
        if (j->parts.head)
                /* The engine reports every unfinished file CANCELLED, then job_done, per part. */
                for (JobPart *p = j->parts.head; p; p = p->next)
                        engine_job_cancel(p->engine_job);
        else if (j->started) {
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                job_finish(j, true);
        }
}
