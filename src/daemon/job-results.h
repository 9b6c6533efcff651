/* SPDX-License-Identifier: MIT */
/* job-results.h: a job's per-input results, batched into FilesHashed signals, kept until it goes */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "engine/engine.h"
#include "hash/hash.h"

/* Results go out in FilesHashed batches of at most this many, or after JOB_BATCH_USEC. */
#define JOB_BATCH_MAX 256
#define JOB_BATCH_USEC (50 * 1000ULL)
/* A batch is also flushed once its names and errors reach this many bytes, so that a signal stays
 * far below the bus's message size limit even with PATH_MAX names. */
#define JOB_BATCH_BYTES_MAX ((size_t)256 * 1024)

/* What one input's result costs its uid's memory (USER_RESOURCE_MEMORY) besides its name and expected
 * digest: the JobResult, its place in the pending list and an error message if it gets one. */
#define JOB_RESULT_COST (sizeof(JobResult) + 128)

/* The most inputs one job may hold, over all its calls: a job keeps a result per input until it goes
 * away, and an open job would otherwise grow without end. */
#define JOB_INPUTS_MAX (UINT32_C(1) << 20)

/* One input's outcome. name is never NULL once its call was accepted; error is NULL on success,
 * otherwise "<error-name>: <message>" as carried on the bus. */
typedef struct JobResult {
        char *name;
        char *error;
        uint64_t size;
        bool done;
        bool holds_fd;  /* a caller's fd, charged to the uid (USER_RESOURCE_FDS) until the result */
        char digest[HASH_HEX_MAX];
        char *digests;  /* a job of several algorithms: their hex digests joined with ',' (else NULL) */
} JobResult;

/* The digest as the bus carries it: "" until hashed. */
static inline const char *job_result_digest(const JobResult *res)
{
        return res->digests ? res->digests : res->digest;
}

/* Sends the results listed in indices (one FilesHashed signal). */
typedef void (*JobResultsSend)(const uint32_t *indices, size_t n, void *userdata);

typedef struct JobResults {
        uint32_t n_inputs;   /* FilesTotal */
        uint32_t n_alloc;
        JobResult *items;    /* n_inputs */
        char **expected;     /* n_inputs lower-case hex digests or NULL; NULL if no call had "expected" */
        HashAlgoSet algos;   /* the job's: with several, each result's digest is their joined hex */

        uint32_t files_done, files_ok, files_failed;

        /* Results not yet sent, in completion order. */
        uint32_t *pending;
        size_t n_pending, pending_bytes;
        sd_event_source *batch_timer;
        JobResultsSend send;
        void *userdata;
        bool released;       /* job_results_release(): the counts are left, the results are not */
} JobResults;

/* What each input costs its uid's memory (USER_RESOURCE_MEMORY) besides its name and expected
 * digest: JOB_RESULT_COST, and the joined hex of a job of several algorithms. */
size_t job_results_cost(const JobResults *r);

/* Adds the batch timer (disabled) on event; send gets every batch. */
int job_results_init(JobResults *r, sd_event *event, JobResultsSend send, void *userdata);
/* Frees every result and the timer. */
void job_results_done(JobResults *r);
/* Frees every result, name and expected digest, and drops what was not sent yet: n_inputs and the
 * files_* counts stay (a job's properties). Only for a finished job. */
void job_results_release(JobResults *r);

/* Makes room for n more inputs, numbered from *ret_first, with empty results. -E2BIG past
 * JOB_INPUTS_MAX, -ENOMEM. */
int job_results_grow(JobResults *r, size_t n, uint32_t *ret_first);
/* Drops inputs n.. again (a call that failed). */
void job_results_truncate(JobResults *r, uint32_t n);

/* Sets the label reported for input i (copied). */
int job_results_set_name(JobResults *r, size_t i, const char *name);
/* Sets the digest input i must have (lower-case hex of the right length, checked by the caller). */
int job_results_set_expected(JobResults *r, size_t i, const char *hex);
/* Sets input i's error to "<error_name>: <message>"; never leaves a failed input without one. */
int job_results_set_error(JobResults *r, size_t i, const char *error_name, const char *fmt, ...) _printf_(4, 5);
/* Fills input i from what the engine reported: digest (compared with the expected one), or error. */
void job_results_set_from_engine(JobResults *r, size_t i, const EngineFileResult *er);

/* Input i is done: counts it and queues it for the next batch. may_flush: a full batch may be sent
 * right away; false inside the call that added the input, whose reply must go first. */
void job_results_queue(JobResults *r, size_t i, bool may_flush);
/* Sends what is pending now. */
void job_results_flush(JobResults *r);
