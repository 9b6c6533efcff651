/* SPDX-License-Identifier: MIT */
/* run.h: a run of inputs through libfhash (fhashd, or in-process), as the options say */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include "ctl/args.h"
#include "fhash/fhash.h"

/* What ctl_run() returns when the run began and stopped before every input had its result. */
#define CTL_RUN_ABORTED (-ECONNABORTED)

/* Runs the inputs next gives through fhashd (falling back to in-process hashing with a note, unless
 * --daemon) or in-process (--local), hashing while the source still gives them; fn gets each
 * result once, in order, as libfhash hands it over. A restart of fhashd in the middle is survived
 * (FHASH_HASH_RESUME). Returns 0; CTL_RUN_ABORTED once the run had begun; or -errno; after saying
 * why. */
int ctl_run(const Args *a, fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata);

/* The exit status of a verb whose run returned r, with failed files or not. */
int ctl_run_exit(int r, bool failed);
