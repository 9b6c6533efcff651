/* SPDX-License-Identifier: MIT */
/* job-results.c: a job's per-input results, batched into FilesHashed signals, kept until it goes */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/job-results.h"
#include "fhash/fhash-dbus.h"
#include "protocol/errors.h"

static int on_batch_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        job_results_flush(userdata);
        return 0;
}

int job_results_init(JobResults *r, sd_event *event, JobResultsSend send, void *userdata)
{
        int k;

        r->send = send;
        r->userdata = userdata;
        k = sd_event_add_time_relative(event, &r->batch_timer, CLOCK_MONOTONIC, JOB_BATCH_USEC,
                                       JOB_BATCH_USEC / 10, on_batch_timer, r);
        if (k < 0)
                return k;
        return sd_event_source_set_enabled(r->batch_timer, SD_EVENT_OFF);
}

size_t job_results_cost(const JobResults *r)
{
        return JOB_RESULT_COST + (r->algos.n > 1 ? (size_t)HASH_SET_HEX_MAX : 0);
}

static void job_result_clear(JobResults *r, size_t i)
{
        free(r->items[i].name);
        free(r->items[i].error);
        free(r->items[i].digests);
        if (r->expected) {
                free(r->expected[i]);
                r->expected[i] = NULL;
        }
}

void job_results_release(JobResults *r)
{
        if (r->batch_timer)
                (void)sd_event_source_set_enabled(r->batch_timer, SD_EVENT_OFF);
        for (size_t i = 0; r->items && i < r->n_inputs; i++)
                job_result_clear(r, i);
        /* Not strv_free(): entries for inputs without an expected digest are NULL, so the array is
         * not NULL-terminated before its end. */
        r->expected = mfree(r->expected);
        r->items = mfree(r->items);
        r->pending = mfree(r->pending);
        r->n_alloc = 0;
        r->n_pending = r->pending_bytes = 0;
        r->released = true;
}

void job_results_done(JobResults *r)
{
        job_results_release(r);
        r->batch_timer = sd_event_source_disable_unref(r->batch_timer);
        r->n_inputs = 0;
}

int job_results_grow(JobResults *r, size_t n, uint32_t *ret_first)
{
        size_t want;

        if (n > JOB_INPUTS_MAX || r->n_inputs > JOB_INPUTS_MAX - n)
                return -E2BIG;
        want = (size_t)r->n_inputs + n;

        if (want > r->n_alloc) {
                /* A one-call job gets exactly its size; a job that grows, room to grow into. */
                size_t alloc = r->n_alloc == 0 ? want : MIN(MAX(want, (size_t)r->n_alloc * 2), (size_t)JOB_INPUTS_MAX);
                JobResult *items;

                items = reallocarray(r->items, alloc, sizeof(JobResult));
                if (!items)
                        return -ENOMEM;
                r->items = items;
                if (r->expected) {
                        char **e = reallocarray(r->expected, alloc, sizeof(char *));
                        if (!e)
                                return -ENOMEM;
                        r->expected = e;
                }
                r->n_alloc = (uint32_t)alloc;
        }
        if (!r->pending || r->n_inputs < JOB_BATCH_MAX) {
                uint32_t *p = reallocarray(r->pending, MIN(want, (size_t)JOB_BATCH_MAX), sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                r->pending = p;
        }

        memset(r->items + r->n_inputs, 0, n * sizeof(JobResult));
        if (r->expected)
                memset(r->expected + r->n_inputs, 0, n * sizeof(char *));
        *ret_first = r->n_inputs;
        r->n_inputs = (uint32_t)want;
        return 0;
}

void job_results_truncate(JobResults *r, uint32_t n)
{
        for (size_t i = n; i < r->n_inputs; i++)
                job_result_clear(r, i);
        r->n_inputs = MIN(r->n_inputs, n);
}

int job_results_set_name(JobResults *r, size_t i, const char *name)
{
        char *s;

        s = strdup(name);
        if (!s)
                return -ENOMEM;
        free(r->items[i].name);
        r->items[i].name = s;
        return 0;
}

int job_results_set_expected(JobResults *r, size_t i, const char *hex)
{
        char *s;

        if (!r->expected) {
                r->expected = calloc(MAX((size_t)r->n_alloc, (size_t)1), sizeof(char *));
                if (!r->expected)
                        return -ENOMEM;
        }
        s = strdup(hex);
        if (!s)
                return -ENOMEM;
        free(r->expected[i]);
        r->expected[i] = s;
        return 0;
}

int job_results_set_error(JobResults *r, size_t i, const char *error_name, const char *fmt, ...)
{
        JobResult *res = &r->items[i];
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

void job_results_set_from_engine(JobResults *r, size_t i, const EngineFileResult *er)
{
        JobResult *res = &r->items[i];
        const char *expected = r->expected ? r->expected[i] : NULL;

        res->size = er->size;
        switch (er->status) {
        case ENGINE_FILE_OK:
                if (r->algos.n > 1) {
                        char hex[HASH_SET_HEX_MAX];

                        hash_set_to_hex(&r->algos, er->digest, hex);
                        free(res->digests);
                        res->digests = strdup(hex);
                        if (!res->digests) {
                                (void)job_results_set_error(r, i, FHASH_ERROR_IO, "out of memory");
                                break;
                        }
                } else
                        hash_to_hex(er->digest, er->digest_size, res->digest);
                if (expected && expected[0] && !streq(expected, job_result_digest(res)))
                        (void)job_results_set_error(r, i, FHASH_ERROR_MISMATCH, "expected %s, got %s", expected,
                                                    job_result_digest(res));
                break;
        case ENGINE_FILE_CHANGED:
                (void)job_results_set_error(
                        r, i, FHASH_ERROR_CHANGED,
                        "file changed while it was read (size %" PRIu64 " -> %" PRIu64 ", mtime %" PRId64
                        ".%09" PRId64 " -> %" PRId64 ".%09" PRId64 ")",
                        er->size_before, er->size_after, er->mtime_before_nsec / 1000000000,
                        er->mtime_before_nsec % 1000000000, er->mtime_after_nsec / 1000000000,
                        er->mtime_after_nsec % 1000000000);
                break;
        case ENGINE_FILE_CANCELLED:
                (void)job_results_set_error(r, i, FHASH_ERROR_CANCELLED, "job was cancelled");
                break;
        case ENGINE_FILE_ERROR:
        default: {
                int e = er->error < 0 ? -er->error : er->error;

                if (e == 0)
                        e = EIO;
                (void)job_results_set_error(r, i, fhash_error_from_errno(e), "%s",
                                            e == ESPIPE ? "not a regular file (a pipe, socket or device)"
                                                        : strerror(e));
                break;
        }
        }
        if (!res->error && er->status != ENGINE_FILE_OK)
                (void)job_results_set_error(r, i, FHASH_ERROR_IO, "unknown failure");
}

/* Arms the batch timer to fire after usec (re-arming it if it runs). */
static void job_results_arm(JobResults *r, uint64_t usec)
{
        if (!r->batch_timer)
                return;
        (void)sd_event_source_set_time_relative(r->batch_timer, usec);
        (void)sd_event_source_set_enabled(r->batch_timer, SD_EVENT_ONESHOT);
}

void job_results_queue(JobResults *r, size_t i, bool may_flush)
{
        JobResult *res = &r->items[i];

        res->done = true;
        r->files_done++;
        if (res->error)
                r->files_failed++;
        else
                r->files_ok++;

        /* The array holds a full batch: flushing now sends only earlier results. */
        if (r->n_pending >= MIN((size_t)r->n_inputs, (size_t)JOB_BATCH_MAX))
                job_results_flush(r);
        r->pending[r->n_pending++] = (uint32_t)i;
        r->pending_bytes += (res->name ? strlen(res->name) : 0) + (res->error ? strlen(res->error) : 0) + 64;
        if (r->n_pending >= JOB_BATCH_MAX || r->pending_bytes >= JOB_BATCH_BYTES_MAX) {
                if (may_flush)
                        job_results_flush(r);
                else
                        /* Inside the call that added the input: its result must not overtake the
                         * reply that tells the caller the input's index. The timer sends it right
                         * after. */
                        job_results_arm(r, 0);
                return;
        }
        /* First result of a batch: the rest of the batch may wait at most JOB_BATCH_USEC. */
        if (r->n_pending == 1)
                job_results_arm(r, JOB_BATCH_USEC);
}

void job_results_flush(JobResults *r)
{
        if (r->n_pending == 0)
                return;
        if (r->send)
                r->send(r->pending, r->n_pending, r->userdata);
        r->n_pending = 0;
        r->pending_bytes = 0;
        if (r->batch_timer)
                (void)sd_event_source_set_enabled(r->batch_timer, SD_EVENT_OFF);
}
