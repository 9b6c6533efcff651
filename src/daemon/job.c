/* SPDX-License-Identifier: MIT */
/* job.c: one hashing job: engine callbacks -> per-file results -> batched signals to the owner */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-job.h"
#include "bus-util.h"
#include "fhash/fhash.h"
#include "job.h"
#include "log.h"
#include "manager.h"

static const char *const job_state_table[_JOB_STATE_MAX] = {
        [JOB_QUEUED] = "queued",     [JOB_RUNNING] = "running",     [JOB_DONE] = "done",
        [JOB_FAILED] = "failed",     [JOB_CANCELLED] = "cancelled",
};

const char *job_state_to_string(JobState s)
{
        if (s < 0 || s >= _JOB_STATE_MAX)
                return NULL;
        return job_state_table[s];
}

static int on_batch_timer(sd_event_source *s, uint64_t usec, void *userdata);

int job_new(Manager *m, const char *owner, uid_t uid, HashAlgo algo, size_t n_inputs,
            const EngineJobOptions *options, Job **ret)
{
        _cleanup_(job_freep) Job *j = NULL;
        int r;

        if (n_inputs == 0 || n_inputs > UINT32_MAX)
                return -EINVAL;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->manager = m;
        j->id = m->next_job_id++;
        j->uid = uid;
        j->algo = algo;
        j->state = JOB_QUEUED;
        j->n_inputs = (uint32_t)n_inputs;

        if (asprintf(&j->object_path, "%s/%" PRIu64, FHASH_JOB_PATH_PREFIX, j->id) < 0) {
                j->object_path = NULL;
                return -ENOMEM;
        }
        j->owner = strdup(owner);
        j->results = calloc(n_inputs, sizeof(JobResult));
        j->engine_to_input = calloc(n_inputs, sizeof(size_t));
        j->pending = calloc(MIN(n_inputs, (size_t)JOB_BATCH_MAX), sizeof(uint32_t));
        if (!j->owner || !j->results || !j->engine_to_input || !j->pending)
                return -ENOMEM;

        r = engine_job_new(m->engine, algo, options, &j->engine_job);
        if (r < 0)
                return r;

        /* Registered last: from here on job_free() has manager bookkeeping to undo. */
        manager_job_added(m, j);
        *ret = TAKE_PTR(j);
        return 0;
}

Job *job_free(Job *j)
{
        if (!j)
                return NULL;

        /* Unref before anything else: the engine then stops calling back into this job. */
        j->engine_job = engine_job_unref(j->engine_job);
        manager_job_removed(j->manager, j);

        sd_event_source_disable_unref(j->batch_timer);
        sd_event_source_disable_unref(j->finish_defer);
        sd_event_source_disable_unref(j->linger_timer);
        owner_release(j->owner_ref);

        for (size_t i = 0; j->results && i < j->n_inputs; i++) {
                free(j->results[i].name);
                free(j->results[i].error);
        }
        free(j->results);
        /* Not strv_free(): entries for inputs without an expected digest are NULL, so the array is
         * not NULL-terminated before its end. */
        if (j->expected)
                for (size_t k = 0; k < (size_t)j->n_inputs; k++)
                        free(j->expected[k]);
        free(j->expected);
        free(j->engine_to_input);
        free(j->pending);
        free(j->owner);
        free(j->object_path);
        free(j);
        return NULL;
}

int job_set_name(Job *j, size_t i, const char *name)
{
        char *n;

        if (i >= j->n_inputs)
                return -EINVAL;
        n = strdup(name);
        if (!n)
                return -ENOMEM;
        free(j->results[i].name);
        j->results[i].name = n;
        return 0;
}

int job_set_expected(Job *j, size_t i, const char *hex)
{
        char *e;

        if (i >= j->n_inputs)
                return -EINVAL;
        if (!j->expected) {
                j->expected = calloc((size_t)j->n_inputs + 1, sizeof(char *));
                if (!j->expected)
                        return -ENOMEM;
        }
        e = strdup(hex);
        if (!e)
                return -ENOMEM;
        free(j->expected[i]);
        j->expected[i] = e;
        return 0;
}

static int job_map_engine_index(Job *j, size_t i, int engine_index)
{
        /* The engine numbers only the inputs it was given; inputs that failed up front have no
         * engine index, so keep the map from the engine's numbering back to the caller's. */
        if ((size_t)engine_index >= j->n_inputs)
                return -EINVAL;
        j->engine_to_input[engine_index] = i;
        j->n_engine_inputs = MAX(j->n_engine_inputs, (size_t)engine_index + 1);
        return 0;
}

int job_add_fd(Job *j, size_t i, int fd)
{
        int r;

        if (i >= j->n_inputs || j->started)
                return -EINVAL;
        r = engine_job_add_fd(j->engine_job, fd);
        if (r < 0)
                return r;
        /* The engine owns fd now; a failure below is an internal inconsistency. */
        return job_map_engine_index(j, i, r);
}

int job_add_path(Job *j, size_t i, const char *path)
{
        int r;

        if (i >= j->n_inputs || j->started)
                return -EINVAL;
        r = engine_job_add_path(j->engine_job, path);
        if (r < 0)
                return r;
        return job_map_engine_index(j, i, r);
}

static void job_queue_result(Job *j, size_t i)
{
        JobResult *res = &j->results[i];

        res->done = true;
        j->files_done++;
        if (res->error)
                j->files_failed++;
        else
                j->files_ok++;

        j->pending[j->n_pending++] = (uint32_t)i;
        j->pending_bytes += (res->name ? strlen(res->name) : 0) + (res->error ? strlen(res->error) : 0) + 64;
        if (j->n_pending >= JOB_BATCH_MAX || j->pending_bytes >= JOB_BATCH_BYTES_MAX) {
                job_flush_results(j);
                return;
        }
        /* First result of a batch: the rest of the batch may wait at most JOB_BATCH_USEC. */
        if (j->n_pending == 1 && j->batch_timer) {
                (void)sd_event_source_set_time_relative(j->batch_timer, JOB_BATCH_USEC);
                (void)sd_event_source_set_enabled(j->batch_timer, SD_EVENT_ONESHOT);
        }
}

_printf_(4, 5) static int job_result_set_error(Job *j, size_t i, const char *error_name, const char *fmt, ...)
{
        JobResult *res = &j->results[i];
        char msg[512];
        char *e;
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (asprintf(&e, "%s: %s", error_name, msg) < 0) {
                /* Never report success for a failed file: fall back to the bare name. */
                e = strdup(error_name);
                if (!e)
                        return -ENOMEM;
        }
        free(res->error);
        res->error = e;
        return 0;
}

int job_fail_input(Job *j, size_t i, const char *error_name, const char *message)
{
        int r;

        if (i >= j->n_inputs || j->results[i].done)
                return -EINVAL;
        r = job_result_set_error(j, i, error_name, "%s", message);
        if (r < 0)
                return r;
        /* Queued now, sent from the batch timer, hence after the method reply that names the job. */
        job_queue_result(j, i);
        return 0;
}

bool job_is_finished(const Job *j)
{
        return j->state == JOB_DONE || j->state == JOB_FAILED || j->state == JOB_CANCELLED;
}

void job_flush_results(Job *j)
{
        if (j->n_pending == 0)
                return;
        if (!j->owner_gone)
                (void)bus_job_emit_files_hashed(j, j->pending, j->n_pending);
        j->n_pending = 0;
        j->pending_bytes = 0;
        if (j->batch_timer)
                (void)sd_event_source_set_enabled(j->batch_timer, SD_EVENT_OFF);
}

static int on_batch_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        job_flush_results(userdata);
        return 0;
}

static int on_linger_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Job *j = userdata;

        log_debug("Job %" PRIu64 " expired.", j->id);
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

static void job_finish(Job *j, bool cancelled)
{
        Manager *m = j->manager;
        int r;

        if (job_is_finished(j))
                return;

        (void)job_update_progress(j);
        j->end_usec = now_usec();
        j->state = cancelled ? JOB_CANCELLED : j->files_failed > 0 ? JOB_FAILED : JOB_DONE;
        j->progress = 1.0;

        /* Results first, then the state, then JobFinished: a client may stop listening on
         * JobFinished and must have every result by then. */
        job_flush_results(j);
        if (!j->owner_gone) {
                (void)bus_job_emit_properties_changed(j, true, true);
                (void)bus_job_emit_finished(j);
        }

        log_debug("Job %" PRIu64 " of uid %u %s: %" PRIu32 " ok, %" PRIu32 " failed.", j->id,
                  (unsigned)j->uid, job_state_to_string(j->state), j->files_ok, j->files_failed);

        r = sd_event_add_time_relative(m->event, &j->linger_timer, CLOCK_MONOTONIC,
                                       m->config.keep_finished_usec, 1000000, on_linger_timer, j);
        if (r < 0)
                log_warning_errno(r, "Failed to arm expiry of job %" PRIu64 ", keeping it: %m", j->id);

        manager_job_finished(m, j);
}

static void on_file_done(EngineJob *ej, const EngineFileResult *r, void *userdata)
{
        Job *j = userdata;
        JobResult *res;
        size_t i;

        if (r->index >= j->n_engine_inputs)
                return;
        i = j->engine_to_input[r->index];
        res = &j->results[i];
        if (res->done)
                return;

        job_set_running(j);
        res->size = r->size;

        switch (r->status) {
        case ENGINE_FILE_OK:
                hash_to_hex(r->digest, r->digest_size, res->digest);
                if (j->expected && j->expected[i] && j->expected[i][0] && !streq(j->expected[i], res->digest))
                        (void)job_result_set_error(j, i, FHASH_ERROR_MISMATCH, "expected %s, got %s",
                                                   j->expected[i], res->digest);
                break;
        case ENGINE_FILE_CHANGED:
                (void)job_result_set_error(
                        j, i, FHASH_ERROR_CHANGED,
                        "file changed while it was read (size %" PRIu64 " -> %" PRIu64 ", mtime %" PRId64
                        ".%09" PRId64 " -> %" PRId64 ".%09" PRId64 ")",
                        r->size_before, r->size_after, r->mtime_before_nsec / 1000000000,
                        r->mtime_before_nsec % 1000000000, r->mtime_after_nsec / 1000000000,
                        r->mtime_after_nsec % 1000000000);
                break;
        case ENGINE_FILE_CANCELLED:
                (void)job_result_set_error(j, i, FHASH_ERROR_CANCELLED, "job was cancelled");
                break;
        case ENGINE_FILE_ERROR:
        default: {
                int e = r->error < 0 ? -r->error : r->error;

                if (e == 0)
                        e = EIO;
                (void)job_result_set_error(j, i, fhash_error_from_errno(e), "%s",
                                           e == ESPIPE ? "not a regular file (a pipe, socket or device)"
                                                       : strerror(e));
                break;
        }
        }
        if (!res->error && r->status != ENGINE_FILE_OK)
                (void)job_result_set_error(j, i, FHASH_ERROR_IO, "unknown failure");
        job_queue_result(j, i);
}

static void on_job_done(EngineJob *ej, EngineJobResult result, void *userdata)
{
        Job *j = userdata;

        /* Anything the engine did not report (it should report every input) fails rather than
         * vanishing from the results. */
        for (size_t k = 0; k < j->n_engine_inputs; k++) {
                size_t i = j->engine_to_input[k];

                if (!j->results[i].done) {
                        (void)job_result_set_error(j, i, result == ENGINE_JOB_CANCELLED ? FHASH_ERROR_CANCELLED : FHASH_ERROR_IO,
                                                   result == ENGINE_JOB_CANCELLED ? "job was cancelled" : "no result from the engine");
                        job_queue_result(j, i);
                }
        }
        (void)job_update_progress(j);
        j->engine_job = engine_job_unref(j->engine_job);
        job_finish(j, result == ENGINE_JOB_CANCELLED);
}

static int on_finish_defer(sd_event_source *s, void *userdata)
{
        Job *j = userdata;

        j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
        job_finish(j, false);
        return 0;
}

void job_owner_gone(Job *j)
{
        log_debug("Owner %s of job %" PRIu64 " disconnected%s.", j->owner, j->id,
                  job_is_finished(j) ? "" : ", cancelling the job");
        /* The owner frees itself once every job let go; it is not released one by one here. */
        j->owner_ref->n_jobs--;
        j->owner_ref = NULL;
        j->owner_gone = true;

        if (!job_is_finished(j)) {
                /* Dropping our reference cancels the engine side at once, without further callbacks,
                 * and releases its fds and buffers; there is nobody left to send results to. */
                j->engine_job = engine_job_unref(j->engine_job);
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                for (size_t i = 0; i < j->n_inputs; i++)
                        if (!j->results[i].done) {
                                (void)job_result_set_error(j, i, FHASH_ERROR_CANCELLED, "owner disconnected");
                                job_queue_result(j, i);
                        }
                job_finish(j, true);
        }
        /* What is left lingers like any finished job, for root or the same uid to inspect; it no
         * longer keeps fhashd from exiting when idle (the owner calls manager_check_idle()). */
}

int job_start(Job *j)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = on_file_done,
                .job_done = on_job_done,
        };
        Manager *m = j->manager;
        int r;

        if (j->started)
                return -EBUSY;

        for (size_t i = 0; i < j->n_inputs; i++)
                if (!j->results[i].name) {
                        r = job_set_name(j, i, "");
                        if (r < 0)
                                return r;
                }

        r = sd_event_add_time_relative(m->event, &j->batch_timer, CLOCK_MONOTONIC, JOB_BATCH_USEC,
                                       JOB_BATCH_USEC / 10, on_batch_timer, j);
        if (r < 0)
                return r;
        (void)sd_event_source_set_enabled(j->batch_timer, j->n_pending > 0 ? SD_EVENT_ONESHOT : SD_EVENT_OFF);

        r = owner_acquire(m, j->owner, j->uid, &j->owner_ref);
        if (r < 0)
                return r;

        if (j->n_engine_inputs > 0) {
                r = engine_job_start(j->engine_job, &callbacks, j);
                if (r < 0)
                        return r;
        } else {
                /* Every input failed up front: nothing for the engine, finish on the next loop
                 * iteration, after the reply went out. */
                j->engine_job = engine_job_unref(j->engine_job);
                r = sd_event_add_defer(m->event, &j->finish_defer, on_finish_defer, j);
                if (r < 0)
                        return r;
        }
        j->started = true;
        j->start_usec = now_usec();
        return 0;
}

void job_cancel(Job *j)
{
        if (job_is_finished(j))
                return;
        if (j->engine_job)
                /* The engine reports every unfinished file CANCELLED, then job_done. */
                engine_job_cancel(j->engine_job);
        else if (j->finish_defer) {
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                job_finish(j, true);
        }
}

bool job_update_progress(Job *j)
{
        EngineJobProgress p = {};
        uint64_t now, bytes_done, bytes_total, rate;
        double progress;

        if (job_is_finished(j) || !j->engine_job)
                return false;

        engine_job_get_progress(j->engine_job, &p);
        bytes_done = MAX(p.bytes_done, j->bytes_done);
        bytes_total = MAX(p.bytes_total, bytes_done);
        now = now_usec();
        rate = now > j->start_usec && j->start_usec > 0
                       ? (uint64_t)((double)bytes_done * 1e6 / (double)(now - j->start_usec))
                       : 0;
        /* Files give the fairer figure for many small files. A single file has only bytes, and
         * its total is known once it is open. */
        progress = (double)j->files_done / (double)j->n_inputs;
        if (j->n_inputs == 1 && bytes_total > 0)
                progress = (double)bytes_done / (double)bytes_total;
        progress = MIN(MAX(progress, j->progress), 0.999);

        if (p.running || bytes_done > 0)
                job_set_running(j);

        if (bytes_done == j->bytes_done && bytes_total == j->bytes_total && progress == j->progress)
                return false;
        j->bytes_done = bytes_done;
        j->bytes_total = bytes_total;
        j->rate = rate;
        j->progress = progress;
        return true;
}
