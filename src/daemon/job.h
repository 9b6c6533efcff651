/* SPDX-License-Identifier: MIT */
/* job.h: one hashing job of fhashd: its inputs, per-file results, state and owner */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "engine.h"
#include "owner.h"
#include "hash.h"
#include "macro.h"

typedef struct Manager Manager;
typedef struct Job Job;

typedef enum JobState {
        JOB_QUEUED,
        JOB_RUNNING,
        JOB_DONE,       /* every file hashed (and matched its expected digest) */
        JOB_FAILED,     /* finished, at least one file has an error */
        JOB_CANCELLED,  /* Cancel(), owner gone or daemon shutdown */
        _JOB_STATE_MAX,
        _JOB_STATE_INVALID = -EINVAL,
} JobState;

const char *job_state_to_string(JobState s);

/* Results go out in FilesHashed batches of at most this many, or after JOB_BATCH_USEC. */
#define JOB_BATCH_MAX 256
#define JOB_BATCH_USEC (50 * 1000ULL)
/* A batch is also flushed once its names and errors reach this many bytes, so that a signal stays
 * far below the bus's message size limit even with PATH_MAX names. */
#define JOB_BATCH_BYTES_MAX ((size_t)256 * 1024)

/* One input's outcome. name is never NULL; error is NULL on success, otherwise
 * "<error-name>: <message>" as carried on the bus. */
typedef struct JobResult {
        char *name;
        char *error;
        uint64_t size;
        bool done;
        char digest[HASH_HEX_MAX];
} JobResult;

struct Job {
        Manager *manager;
        Job *next, *prev;    /* Manager.jobs */

        uint64_t id;
        char *object_path;
        char *owner;         /* unique bus name of the caller that created the job */
        uid_t uid;           /* its effective uid, from the bus driver */
        HashAlgo algo;
        JobState state;

        /* Owned: dropping it cancels the engine side without further callbacks. NULL once the
         * engine has reported the job done, or if no input needed the engine. */
        EngineJob *engine_job;
        bool started;

        uint32_t n_inputs;
        JobResult *results;  /* n_inputs */
        char **expected;     /* n_inputs lower-case hex digests or NULL; NULL if no "expected" */
        size_t *engine_to_input;  /* engine index -> input index */
        size_t n_engine_inputs;

        uint32_t files_done, files_ok, files_failed;

        /* Results not yet sent in a FilesHashed signal, in completion order. */
        uint32_t *pending;
        size_t n_pending, pending_bytes;
        sd_event_source *batch_timer;

        /* Progress as last published through PropertiesChanged. */
        uint64_t bytes_done, bytes_total, rate;
        double progress;
        uint64_t start_usec, end_usec;

        sd_event_source *finish_defer;  /* finishes a job whose inputs all failed up front */
        sd_event_source *linger_timer;  /* removes a finished job after --keep-finished */
        Owner *owner_ref;               /* the owner while connected; its disconnect cancels the job */
        bool owner_gone;
};

/* The owner disconnected: an unfinished job is cancelled and releases its fds and buffers at once;
 * the job lingers like any finished one. Called by the owner's track (owner.c). */
void job_owner_gone(Job *j);

/* Creates a queued job with n_inputs empty inputs and registers it with the manager. */
int job_new(Manager *m, const char *owner, uid_t uid, HashAlgo algo, size_t n_inputs,
            const EngineJobOptions *options, Job **ret);
/* Unregisters and frees; a running engine job is cancelled silently. Takes NULL. */
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

/* Sets the label reported for input i (copied). */
int job_set_name(Job *j, size_t i, const char *name);
/* Sets the digest input i must have (lower-case hex of the right length, checked by the caller). */
int job_set_expected(Job *j, size_t i, const char *hex);
/* Input i is an fd the engine reads; takes ownership of fd on success only. */
int job_add_fd(Job *j, size_t i, int fd);
/* Input i is an absolute path the engine opens. */
int job_add_path(Job *j, size_t i, const char *path);
/* Input i fails before any reading, e.g. a directory fd: error_name is one of FHASH_ERROR_*. */
int job_fail_input(Job *j, size_t i, const char *error_name, const char *message);

/* Starts tracking the owner and hands the inputs to the engine. On failure the job is unchanged
 * and must be freed by the caller. */
int job_start(Job *j);
/* Cancel(): unfinished files end Cancelled, the owner gets JobFinished "cancelled". */
void job_cancel(Job *j);

bool job_is_finished(const Job *j);
/* Refreshes the progress counters from the engine; returns true if they changed. */
bool job_update_progress(Job *j);
/* Sends pending results as one FilesHashed signal. */
void job_flush_results(Job *j);
