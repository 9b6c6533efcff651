/* SPDX-License-Identifier: MIT */
/* job.c: one hashing job: engine callbacks -> per-file results -> batched signals to the owner */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/bus-job.h"
#include "daemon/bus-util.h"
#include "fhash/fhash-dbus.h"
#include "protocol/errors.h"
#include "daemon/job.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "daemon/manager.h"

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

/* One call's inputs that need the engine, as one EngineJob. The engine numbers only the inputs it
 * was given (inputs that failed up front have no engine index), so engine_to_input maps its
 * numbering back to the job's. */
struct JobPart {
        Job *job;
        JobPart *next, *prev;  /* Job.parts, once started */
        EngineJob *engine_job;
        uint32_t *engine_to_input;
        size_t n_engine_inputs, n_alloc;
};

static JobPart *part_free(JobPart *p)
{
        if (!p)
                return NULL;
        /* Unref first: the engine then stops calling back into this part. */
        engine_job_unref(p->engine_job);
        free(p->engine_to_input);
        free(p);
        return NULL;
}

static void part_unlink(Job *j, JobPart *p)
{
        LIST_REMOVE(j->parts, p);
}

/* Drops every started part: the engine cancels what still runs, without further callbacks. */
static void job_drop_parts(Job *j)
{
        JobPart *p = j->parts;

        j->parts = NULL;
        while (p) {
                JobPart *next = p->next;

                part_free(p);
                p = next;
        }
}

static int on_batch_timer(sd_event_source *s, uint64_t usec, void *userdata);

int job_new(Manager *m, const char *owner, uid_t uid, HashAlgo algo, const EngineJobOptions *options,
            bool allow_streams, bool open, Job **ret)
{
        _cleanup_(job_freep) Job *j = NULL;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->manager = m;
        j->id = m->next_job_id++;
        j->uid = uid;
        j->algo = algo;
        j->state = JOB_QUEUED;
        j->engine_options = *options;
        j->allow_streams = allow_streams;
        j->open = open;

        if (asprintf(&j->object_path, "%s/%" PRIu64, FHASH_JOB_PATH_PREFIX, j->id) < 0) {
                j->object_path = NULL;
                return -ENOMEM;
        }
        j->owner = strdup(owner);
        if (!j->owner)
                return -ENOMEM;

        /* Registered last: from here on job_free() has manager bookkeeping to undo. */
        manager_job_added(m, j);
        *ret = TAKE_PTR(j);
        return 0;
}

Job *job_free(Job *j)
{
        if (!j)
                return NULL;

        /* Parts before anything else: the engine then stops calling back into this job. */
        job_drop_parts(j);
        j->new_part = part_free(j->new_part);
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
        free(j->pending);
        free(j->owner);
        free(j->object_path);
        free(j);
        return NULL;
}

int job_begin_inputs(Job *j, size_t n, uint32_t *ret_first)
{
        size_t want;

        if (n == 0 || j->n_inputs != j->n_committed || job_is_finished(j))
                return -EINVAL;
        if (n > JOB_INPUTS_MAX || j->n_inputs > JOB_INPUTS_MAX - n)
                return -E2BIG;
        want = (size_t)j->n_inputs + n;

        if (want > j->n_alloc) {
                /* A one-call job gets exactly its size; a job that grows, room to grow into. */
                size_t alloc = j->n_alloc == 0 ? want : MIN(MAX(want, (size_t)j->n_alloc * 2), (size_t)JOB_INPUTS_MAX);
                JobResult *res;

                res = reallocarray(j->results, alloc, sizeof(JobResult));
                if (!res)
                        return -ENOMEM;
                j->results = res;
                if (j->expected) {
                        char **e = reallocarray(j->expected, alloc, sizeof(char *));
                        if (!e)
                                return -ENOMEM;
                        j->expected = e;
                }
                j->n_alloc = (uint32_t)alloc;
        }
        if (!j->pending || j->n_inputs < JOB_BATCH_MAX) {
                uint32_t *p = reallocarray(j->pending, MIN(want, (size_t)JOB_BATCH_MAX), sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                j->pending = p;
        }

        memset(j->results + j->n_inputs, 0, n * sizeof(JobResult));
        if (j->expected)
                memset(j->expected + j->n_inputs, 0, n * sizeof(char *));
        *ret_first = j->n_inputs;
        j->n_inputs = (uint32_t)want;
        return 0;
}

void job_abort_inputs(Job *j)
{
        j->new_part = part_free(j->new_part);
        for (size_t i = j->n_committed; i < j->n_inputs; i++) {
                free(j->results[i].name);
                free(j->results[i].error);
                if (j->expected) {
                        free(j->expected[i]);
                        j->expected[i] = NULL;
                }
        }
        j->n_inputs = j->n_committed;
}

/* Inputs of the call being filled: the only ones the setters may touch. */
static bool job_input_is_new(const Job *j, size_t i)
{
        return i >= j->n_committed && i < j->n_inputs;
}

int job_set_name(Job *j, size_t i, const char *name)
{
        char *n;

        if (!job_input_is_new(j, i))
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

        if (!job_input_is_new(j, i))
                return -EINVAL;
        if (!j->expected) {
                j->expected = calloc(MAX((size_t)j->n_alloc, (size_t)1), sizeof(char *));
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

/* The part of the current call, made when its first input needs the engine. */
static int job_get_new_part(Job *j, JobPart **ret)
{
        JobPart *p;
        int r;

        if (!j->new_part) {
                p = calloc(1, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                p->job = j;
                p->n_alloc = (size_t)(j->n_inputs - j->n_committed);
                p->engine_to_input = calloc(p->n_alloc, sizeof(uint32_t));
                if (!p->engine_to_input) {
                        part_free(p);
                        return -ENOMEM;
                }
                r = engine_job_new(j->manager->engine, j->algo, &j->engine_options, &p->engine_job);
                if (r < 0) {
                        part_free(p);
                        return r;
                }
                j->new_part = p;
        }
        *ret = j->new_part;
        return 0;
}

static int part_map_engine_index(JobPart *p, size_t i, int engine_index)
{
        if ((size_t)engine_index >= p->n_alloc)
                return -EINVAL;
        p->engine_to_input[engine_index] = (uint32_t)i;
        p->n_engine_inputs = MAX(p->n_engine_inputs, (size_t)engine_index + 1);
        return 0;
}

int job_add_fd(Job *j, size_t i, int fd)
{
        JobPart *p;
        int r;

        if (!job_input_is_new(j, i))
                return -EINVAL;
        r = job_get_new_part(j, &p);
        if (r < 0)
                return r;
        r = engine_job_add_fd(p->engine_job, fd);
        if (r < 0)
                return r;
        /* The engine owns fd now; a failure below is an internal inconsistency. */
        return part_map_engine_index(p, i, r);
}

int job_add_path(Job *j, size_t i, const char *path)
{
        JobPart *p;
        int r;

        if (!job_input_is_new(j, i))
                return -EINVAL;
        r = job_get_new_part(j, &p);
        if (r < 0)
                return r;
        r = engine_job_add_path(p->engine_job, path);
        if (r < 0)
                return r;
        return part_map_engine_index(p, i, r);
}

static void job_queue_result(Job *j, size_t i, bool may_flush)
{
        JobResult *res = &j->results[i];

        res->done = true;
        j->files_done++;
        if (res->error)
                j->files_failed++;
        else
                j->files_ok++;

        /* The array holds a full batch: flushing now sends only earlier results. */
        if (j->n_pending >= MIN((size_t)j->n_inputs, (size_t)JOB_BATCH_MAX))
                job_flush_results(j);
        j->pending[j->n_pending++] = (uint32_t)i;
        j->pending_bytes += (res->name ? strlen(res->name) : 0) + (res->error ? strlen(res->error) : 0) + 64;
        if (j->n_pending >= JOB_BATCH_MAX || j->pending_bytes >= JOB_BATCH_BYTES_MAX) {
                if (may_flush) {
                        job_flush_results(j);
                        return;
                }
                /* Inside the call that added the input: its result must not overtake the reply that
                 * tells the caller the input's index. The timer sends it right after. */
                if (j->batch_timer) {
                        (void)sd_event_source_set_time_relative(j->batch_timer, 0);
                        (void)sd_event_source_set_enabled(j->batch_timer, SD_EVENT_ONESHOT);
                }
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
        if (!job_input_is_new(j, i))
                return -EINVAL;
        /* Queued when the call's inputs are committed, sent from the batch timer, hence after the
         * method reply that names the job and the input's index. */
        return job_result_set_error(j, i, error_name, "%s", message);
}

bool job_is_finished(const Job *j)
{
        return j->state == JOB_DONE || j->state == JOB_FAILED || j->state == JOB_CANCELLED;
}

bool job_is_open(const Job *j)
{
        return j->started && j->open && !job_is_finished(j);
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
        j->open = false;
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
        JobPart *p = userdata;
        Job *j = p->job;
        JobResult *res;
        size_t i;

        if (r->index >= p->n_engine_inputs)
                return;
        i = p->engine_to_input[r->index];
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
        job_queue_result(j, i, true);
}

static void on_job_done(EngineJob *ej, EngineJobResult result, void *userdata)
{
        JobPart *p = userdata;
        Job *j = p->job;
        EngineJobProgress pr = {};

        /* Anything the engine did not report (it should report every input) fails rather than
         * vanishing from the results. */
        for (size_t k = 0; k < p->n_engine_inputs; k++) {
                size_t i = p->engine_to_input[k];

                if (!j->results[i].done) {
                        (void)job_result_set_error(j, i, result == ENGINE_JOB_CANCELLED ? FHASH_ERROR_CANCELLED : FHASH_ERROR_IO,
                                                   result == ENGINE_JOB_CANCELLED ? "job was cancelled" : "no result from the engine");
                        job_queue_result(j, i, true);
                }
        }
        if (result == ENGINE_JOB_CANCELLED)
                j->cancelled = true;
        /* Published with the part still counted, then its bytes move to the job's own counters. */
        (void)job_update_progress(j);
        engine_job_get_progress(p->engine_job, &pr);
        j->parts_bytes_done += pr.bytes_done;
        j->parts_bytes_total += MAX(pr.bytes_total, pr.bytes_done);
        part_unlink(j, p);
        part_free(p);

        if (!j->open && !j->parts)
                job_finish(j, j->cancelled);
        else if (!j->parts)
                /* Open and idle: a client that keeps a bounded number of files in flight sends
                 * more only once it has these results. Holding them for a fuller batch or for
                 * JOB_BATCH_USEC would stall it for nothing. */
                job_flush_results(j);
}

static int on_finish_defer(sd_event_source *s, void *userdata)
{
        Job *j = userdata;

        j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
        job_finish(j, j->cancelled);
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
                /* Dropping our references cancels the engine side at once, without further
                 * callbacks, and releases its fds and buffers; there is nobody left to send results
                 * to. */
                job_drop_parts(j);
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                for (size_t i = 0; i < j->n_committed; i++)
                        if (!j->results[i].done) {
                                (void)job_result_set_error(j, i, FHASH_ERROR_CANCELLED, "owner disconnected");
                                job_queue_result(j, i, true);
                        }
                job_finish(j, true);
        }
        /* What is left lingers like any finished job, for root or the same uid to inspect; it no
         * longer keeps fhashd from exiting when idle (the owner calls manager_check_idle()). */
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

        for (size_t i = j->n_committed; i < j->n_inputs; i++)
                if (!j->results[i].name) {
                        r = job_set_name(j, i, "");
                        if (r < 0)
                                return r;
                }

        if (p && p->n_engine_inputs > 0) {
                r = engine_job_start(p->engine_job, &callbacks, p);
                if (r < 0)
                        return r;
                /* Nothing fails from here on. */
                LIST_PREPEND(j->parts, p);
                j->new_part = NULL;
        } else
                j->new_part = part_free(j->new_part);

        for (size_t i = j->n_committed; i < j->n_inputs; i++)
                if (j->results[i].error)
                        job_queue_result(j, i, false);
        j->n_committed = j->n_inputs;
        return 0;
}

/* A closed job with nothing left for the engine finishes on the next loop iteration, after the reply
 * of the call that closed it went out. */
static int job_maybe_finish_later(Job *j)
{
        if (j->open || j->parts || j->finish_defer || job_is_finished(j))
                return 0;
        return sd_event_add_defer(j->manager->event, &j->finish_defer, on_finish_defer, j);
}

int job_start(Job *j, sd_bus *bus)
{
        Manager *m = j->manager;
        int r;

        if (j->started)
                return -EBUSY;
        if (j->n_inputs == 0)
                return -EINVAL;

        r = sd_event_add_time_relative(m->event, &j->batch_timer, CLOCK_MONOTONIC, JOB_BATCH_USEC,
                                       JOB_BATCH_USEC / 10, on_batch_timer, j);
        if (r < 0)
                return r;
        (void)sd_event_source_set_enabled(j->batch_timer, SD_EVENT_OFF);

        r = owner_acquire(m, bus, j->owner, j->uid, &j->owner_ref);
        if (r < 0)
                return r;

        /* Before the commit: past it nothing may fail. */
        if (!j->open && !(j->new_part && j->new_part->n_engine_inputs > 0)) {
                r = sd_event_add_defer(m->event, &j->finish_defer, on_finish_defer, j);
                if (r < 0)
                        return r;
        }
        r = job_commit(j);
        if (r < 0)
                return r;
        j->started = true;
        j->start_usec = now_usec();
        /* Open and idle (every input failed up front): running, waiting for more. */
        if (j->open && !j->parts)
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
                        log_warning_errno(r, "Failed to defer the end of job %" PRIu64 ", finishing it now: %m", j->id);
                        job_finish(j, j->cancelled);
                }
        } else if (!j->parts)
                job_set_running(j);
        return 0;
}

void job_cancel(Job *j)
{
        if (job_is_finished(j))
                return;
        j->open = false;
        j->cancelled = true;
        if (j->parts)
                /* The engine reports every unfinished file CANCELLED, then job_done, per part. */
                for (JobPart *p = j->parts; p; p = p->next)
                        engine_job_cancel(p->engine_job);
        else if (j->started) {
                j->finish_defer = sd_event_source_disable_unref(j->finish_defer);
                job_finish(j, true);
        }
}

bool job_update_progress(Job *j)
{
        uint64_t now, bytes_done, bytes_total, rate;
        uint64_t parts_done = 0, parts_total = 0;
        bool running = false;
        double progress;

        /* Nothing left for the engine and nothing to come: the numbers cannot move any more. */
        if (job_is_finished(j) || (!j->parts && !j->open))
                return false;

        for (JobPart *p = j->parts; p; p = p->next) {
                EngineJobProgress pr = {};

                engine_job_get_progress(p->engine_job, &pr);
                parts_done += pr.bytes_done;
                parts_total += pr.bytes_total;
                running = running || pr.running;
        }
        bytes_done = MAX(j->parts_bytes_done + parts_done, j->bytes_done);
        bytes_total = MAX(j->parts_bytes_total + parts_total, bytes_done);
        /* A total only grows, but across parts a total seen mid-read can exceed the sum once the
         * part is done (a file that shrank): never show less than before. */
        bytes_total = MAX(bytes_total, j->bytes_total);
        now = now_usec();
        rate = now > j->start_usec && j->start_usec > 0
                       ? (uint64_t)((double)bytes_done * 1e6 / (double)(now - j->start_usec))
                       : 0;
        /* Files give the fairer figure for many small files. A single file has only bytes, and
         * its total is known once it is open. */
        progress = j->n_inputs > 0 ? (double)j->files_done / (double)j->n_inputs : 0.0;
        if (j->n_inputs == 1 && bytes_total > 0)
                progress = (double)bytes_done / (double)bytes_total;
        /* Never backwards, except when inputs were added: then it is done / total again. */
        if (j->progress_inputs == j->n_inputs)
                progress = MAX(progress, j->progress);
        progress = MIN(progress, 0.999);

        if (running || bytes_done > 0)
                job_set_running(j);

        if (bytes_done == j->bytes_done && bytes_total == j->bytes_total && progress == j->progress &&
            j->progress_inputs == j->n_inputs)
                return false;
        j->bytes_done = bytes_done;
        j->bytes_total = bytes_total;
        j->rate = rate;
        j->progress = progress;
        j->progress_inputs = j->n_inputs;
        return true;
}
