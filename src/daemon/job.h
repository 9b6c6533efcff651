/* SPDX-License-Identifier: MIT */
/* job.h: one hashing job of fhashd: its inputs, engine parts, state, progress and owner */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "basic/string-table.h"
#include "basic/macro.h"
#include "daemon/context.h"
#include "daemon/job-part.h"
#include "daemon/job-results.h"
#include "daemon/owner.h"
#include "engine/engine.h"
#include "hash/hash.h"
#include "protocol/priority.h"

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

DECLARE_STRING_TABLE_LOOKUP(job_state, JobState);

struct Job {
        Context *context;
        JobEntry entry;      /* id and uid in the registry, where it is charged */

        char *object_path;
        char *owner;         /* the caller that created the job: unique bus name or direct connection */
        uid_t uid;           /* its effective uid, from the bus driver */
        HashAlgo algo;       /* algos' first */
        HashAlgoSet algos;   /* "sha256,blake3": several in one read; engine_options.algos points here */
        JobState state;
        EngineJobOptions engine_options;  /* every part's; .params points to params below, or is NULL */
        JobPriority priority;  /* "priority": background parts go to the background engine */
        HashParams params;   /* "length", "key", "derive-key": the key wiped when the job is freed */
        char *params_context;
        bool allow_streams;  /* "max-size" was given: pipes and devices may be read */
        bool names;          /* made by HashNames: AddNames() may add names to it */
        bool packed;         /* "packed-results": its results go out as FilesDigested */
        EngineCreds creds;   /* the caller's, that its names are opened with (engine_options.creds) */
        UserResource refused;  /* which limit the last USER_E_* outcome of a job_*() call came from */

        /* Inputs come in parts: the call that made the job brings the first, each AddFds() one
         * more. A part is one EngineJob, started as soon as its call is accepted (the engine takes
         * no inputs once a job started). Owned: dropping a part cancels its engine side without
         * further callbacks. parts lists the parts the engine has not reported done, oldest first;
         * new_part is the one the current call is filling (NULL if none of its inputs needs the
         * engine yet). */
        JobParts parts;
        JobPart *new_part;
        bool started;
        bool open;           /* "more": AddFds() may add inputs; the job does not finish before closed */
        bool cancelled;      /* Cancel(), owner gone, shutdown, or the engine cancelled a part */

        uint32_t n_committed;  /* inputs of accepted calls; n_committed..results.n_inputs are the current call's */
        JobResults results;

        /* Progress as last published through PropertiesChanged. */
        uint64_t bytes_done, bytes_total, rate;
        double progress;
        uint32_t progress_inputs;  /* n_inputs when progress was computed */
        uint64_t start_usec, end_usec;

        sd_event_source *finish_defer;  /* finishes a closed job with nothing left for the engine */
        sd_event_source *linger_timer;  /* removes a finished job after --keep-finished */
        OwnerRef owner_ref;             /* the owner while connected; its disconnect cancels the job */
        bool owner_gone;
};

/* Creates a queued job without inputs, registered and charged as one job of uid. open: inputs may be
 * added by later calls (job_commit_inputs()) until one closes it. 0, USER_E_QUOTA / USER_E_TOTAL
 * (the uid has as many unfinished jobs as it may), or -errno. */
int job_new(Context *c, const char *owner, uid_t uid, const HashAlgoSet *algos, const EngineJobOptions *options,
            bool allow_streams, bool open, Job **ret);
/* Unregisters and frees; a running engine job is cancelled silently. Takes NULL. */
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

/*
 * A call's inputs: job_begin_inputs() makes room for n more, numbered from *ret_first, and charges
 * them to the uid; the setters below fill them in (i is the job's index, first..first+n-1); then
 * job_start() (the call that made the job) or job_commit_inputs() (a later one) hands them to the
 * engine, or job_abort_inputs() drops them again and leaves the job as it was before the call.
 * job_begin_inputs(): 0, USER_E_QUOTA / USER_E_TOTAL (the uid's unfinished files), -E2BIG past
 * JOB_INPUTS_MAX, -EINVAL for a finished job or a call already begun, -ENOMEM.
 */
int job_begin_inputs(Job *j, size_t n, uint32_t *ret_first);
void job_abort_inputs(Job *j);

/* Sets the label reported for input i (copied). */
int job_set_name(Job *j, size_t i, const char *name);
/* Sets the digest input i must have (lower-case hex of the right length, checked by the caller). */
int job_set_expected(Job *j, size_t i, const char *hex);
/* Input i is read by the engine: fd if >= 0 (taken on success only; flags are ENGINE_INPUT_*; info
 * what the gate knew of it, or NULL), else the absolute path, or the name beneath dir (HashNames:
 * the engine takes a reference), opened with the job's creds. */
int job_add_input(Job *j, size_t i, int fd, unsigned flags, const EngineFdInfo *info, const char *path,
                  EngineDir *dir);
/* Input i fails before any reading, e.g. a directory fd: error_name is one of FHASH_ERROR_*. Its
 * result goes out once the inputs are committed. */
int job_fail_input(Job *j, size_t i, const char *error_name, const char *message);

/* Starts tracking the owner, reached on bus (fhashd's bus or a direct connection), and hands the
 * first call's inputs to the engine. 0, USER_E_QUOTA / USER_E_TOTAL (too many owners tracked for
 * the uid or in all: USER_RESOURCE_OWNERS), or -errno; on
 * failure the job is unchanged and must be freed by the caller. */
int job_start(Job *j, sd_bus *bus);
/* Hands a later call's inputs to the engine; more = false closes the job. On failure the call's
 * inputs are still there for job_abort_inputs(). */
int job_commit_inputs(Job *j, bool more);

/* Done, failed or cancelled. */
static inline bool job_is_finished(const Job *j)
{
        return j->state == JOB_DONE || j->state == JOB_FAILED || j->state == JOB_CANCELLED;
}
/* Whether a call may still add inputs: started, open, not finished. */
static inline bool job_is_open(const Job *j)
{
        return j->started && j->open && !job_is_finished(j);
}

/* Cancel(): unfinished files end Cancelled, the job is closed, the owner gets JobFinished
 * "cancelled". */
void job_cancel(Job *j);
/* Frees a finished job's results, names and expected digests and gives their memory back to its uid;
 * its state and counts stay (GetResults then says Released). -EBUSY if it has not finished. */
int job_release_results(Job *j);

/* Refreshes the progress counters from the engine; returns true if they changed. Reads only the
 * parts the engine can be working on (begun, not done). */
bool job_update_progress(Job *j);
