/* SPDX-License-Identifier: MIT */
/* job-part.h: a job's inputs in parts (one EngineJob per call) and their byte totals, kept without
 * walking the parts */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/user.h"
#include "engine/engine.h"

/* One call's inputs that need the engine, as one EngineJob. The engine numbers only the inputs it
 * was given (inputs that failed up front have no engine index), so engine_to_input maps its
 * numbering back to the job's. */
typedef struct JobPart {
        void *owner;           /* the Job, for the engine's callbacks */
        struct JobPart *next, *prev;  /* JobParts, once started, oldest first */
        EngineJob *engine_job;
        uint32_t *engine_to_input;
        size_t n_engine_inputs, n_alloc;
        /* What job_parts_poll() last read of it: counted in JobParts.live_bytes_*. */
        uint64_t seen_done, seen_total;
        /* HashNames, AddNames: the directories its names are beneath stay open while its
         * EngineJob lives, one fd each against the uid's (USER_RESOURCE_FDS), and the engine keeps a
         * copy of each name (USER_RESOURCE_MEMORY). */
        UserCharge dirs_charge, names_charge;
} JobPart;

/* The parts the engine has not reported done, and running totals so that no event walks them: bytes
 * of the parts that are done (their EngineJobs are gone), and the sum of what was last read of the
 * others. */
typedef struct JobParts {
        JobPart *head, *tail;
        uint64_t retired_bytes_done, retired_bytes_total;
        uint64_t live_bytes_done, live_bytes_total;
} JobParts;

/* A part for up to n_alloc inputs of one call, with a new EngineJob of algo (not started). */
int job_part_new(Engine *e, HashAlgo algo, const EngineJobOptions *options, size_t n_alloc, void *owner,
                 JobPart **ret);
/* Drops the engine's job first (the engine then stops calling back into this part), then the part. */
JobPart *job_part_free(JobPart *p);
/* Adds an input the engine numbered engine_index as the job's input i. */
void job_part_map(JobPart *p, size_t engine_index, uint32_t i);

/* Appends a started part: parts are started, and so begun by the engine, oldest first. */
void job_parts_link(JobParts *ps, JobPart *p);
/* Reads p's progress into the running totals; returns whether the engine has begun p. */
bool job_parts_poll(JobParts *ps, JobPart *p, EngineJobProgress *ret);
/* The engine is done with p (or p is dropped): its last numbers move to the retired totals and p
 * goes, in O(1) whatever the number of parts. Returns whether the engine had begun it. */
bool job_parts_retire(JobParts *ps, JobPart *p);
/* Drops every part: the engine cancels what still runs, without further callbacks. */
void job_parts_drop(JobParts *ps);
/* Bytes done and total over every part, retired or not. */
uint64_t job_parts_bytes_done(const JobParts *ps);
uint64_t job_parts_bytes_total(const JobParts *ps);
