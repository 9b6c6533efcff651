/* SPDX-License-Identifier: MIT */
/* job.h: one hashing job of fhashd: its inputs, per-file results, state and owner */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "engine/engine.h"
#include "daemon/owner.h"
#include "hash/hash.h"
#include "basic/macro.h"

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

/* The most inputs one job may hold, over all its calls: a job keeps a result per input until it goes
 * away, and an open job would otherwise grow without end. */
#define JOB_INPUTS_MAX (UINT32_C(1) << 20)

typedef struct JobPart JobPart;

struct Job {
        Manager *manager;
        Job *next, *prev;    /* Manager.jobs */

        uint64_t id;
        char *object_path;
        char *owner;         /* the caller that created the job: unique bus name or direct connection */
        uid_t uid;           /* its effective uid, from the bus driver */
        HashAlgo algo;
        JobState state;
        EngineJobOptions engine_options;  /* every part's */
        bool allow_streams;  /* "max-size" was given: pipes and devices may be read */

        /* Inputs come in parts: the call that made the job brings the first, each AddFds() one
         * more. A part is one EngineJob, started as soon as its call is accepted (the engine takes
         * no inputs once a job started). Owned: dropping a part cancels its engine side without
         * further callbacks. parts lists the parts the engine has not reported done; new_part is the
         * one the current call is filling (NULL if none of its inputs needs the engine yet). */
        JobPart *parts;
        JobPart *new_part;
        bool started;
        bool open;           /* "more": AddFds() may add inputs; the job does not finish before closed */
        bool cancelled;      /* Cancel(), owner gone, shutdown, or the engine cancelled a part */

        uint32_t n_inputs;   /* FilesTotal: grows with each call */
        uint32_t n_committed;  /* inputs of accepted calls; n_committed..n_inputs are the current call's */
        uint32_t n_alloc;
        JobResult *results;  /* n_inputs */
        char **expected;     /* n_inputs lower-case hex digests or NULL; NULL if no call had "expected" */

        uint32_t files_done, files_ok, files_failed;

        /* Results not yet sent in a FilesHashed signal, in completion order. */
        uint32_t *pending;
        size_t n_pending, pending_bytes;
        sd_event_source *batch_timer;

        /* Progress as last published through PropertiesChanged. */
        uint64_t bytes_done, bytes_total, rate;
        double progress;
        uint32_t progress_inputs;  /* n_inputs when progress was computed */
        uint64_t start_usec, end_usec;
        /* Bytes of the parts the engine has reported done (their EngineJobs are gone). */
        uint64_t parts_bytes_done, parts_bytes_total;

        sd_event_source *finish_defer;  /* finishes a closed job with nothing left for the engine */
        sd_event_source *linger_timer;  /* removes a finished job after --keep-finished */
        Owner *owner_ref;               /* the owner while connected; its disconnect cancels the job */
        bool owner_gone;
};

/* The owner disconnected: an unfinished job is cancelled and releases its fds and buffers at once;
 * the job lingers like any finished one. Called by the owner's track (owner.c). */
void job_owner_gone(Job *j);

/* Creates a queued job without inputs and registers it with the manager. open: inputs may be added
 * by later calls (job_commit_inputs()) until one closes it. */
int job_new(Manager *m, const char *owner, uid_t uid, HashAlgo algo, const EngineJobOptions *options,
            bool allow_streams, bool open, Job **ret);
/* Unregisters and frees; a running engine job is cancelled silently. Takes NULL. */
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

/*
 * A call's inputs: job_begin_inputs() makes room for n more, numbered from *ret_first; the setters
 * below fill them in (i is the job's index, first..first+n-1); then job_start() (the call that made
 * the job) or job_commit_inputs() (a later one) hands them to the engine, or job_abort_inputs()
 * drops them again and leaves the job as it was before the call. -E2BIG past JOB_INPUTS_MAX.
 */
int job_begin_inputs(Job *j, size_t n, uint32_t *ret_first);
void job_abort_inputs(Job *j);

/* Sets the label reported for input i (copied). */
int job_set_name(Job *j, size_t i, const char *name);
/* Sets the digest input i must have (lower-case hex of the right length, checked by the caller). */
int job_set_expected(Job *j, size_t i, const char *hex);
/* Input i is an fd the engine reads; takes ownership of fd on success only. */
int job_add_fd(Job *j, size_t i, int fd);
/* Input i is an absolute path the engine opens. */
int job_add_path(Job *j, size_t i, const char *path);
/* Input i fails before any reading, e.g. a directory fd: error_name is one of FHASH_ERROR_*. Its
 * result goes out once the inputs are committed. */
int job_fail_input(Job *j, size_t i, const char *error_name, const char *message);

/* Starts tracking the owner, reached on bus (fhashd's bus or a direct connection), and hands the
 * first call's inputs to the engine. On failure the job is unchanged and must be freed by the
 * caller. */
int job_start(Job *j, sd_bus *bus);
/* Hands a later call's inputs to the engine; more = false closes the job. On failure the call's
 * inputs are still there for job_abort_inputs(). */
int job_commit_inputs(Job *j, bool more);
/* Whether a call may still add inputs: started, open, not finished. */
bool job_is_open(const Job *j);
/* Cancel(): unfinished files end Cancelled, the job is closed, the owner gets JobFinished
 * "cancelled". */
void job_cancel(Job *j);

bool job_is_finished(const Job *j);
/* Refreshes the progress counters from the engine; returns true if they changed. */
bool job_update_progress(Job *j);
/* Sends pending results as one FilesHashed signal. */
void job_flush_results(Job *j);
