/* SPDX-License-Identifier: MIT */
/* run.h: a run of inputs through libfhash (fhashd, or in-process), as the options say */
#pragma once

#include "ctl/args.h"
#include "fhash/fhash.h"

/* Runs the inputs next gives through fhashd (falling back to in-process hashing with a note, unless
 * --daemon) or in-process (--local), hashing while the source still gives them; fn gets each
 * result once, in order, as libfhash hands it over. Returns 0, or -errno after saying why. */
int ctl_run(const Args *a, fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata);
