/* SPDX-License-Identifier: MIT */
/* run.h: a run of items through fhashd or in-process, as the options say */
#pragma once

#include "ctl/args.h"
#include "client/runner.h"

/* Runs the items of source through fhashd (falling back to in-process hashing with a note, unless
 * --daemon) or in-process (--local), hashing while the source still produces them. Returns 0, or
 * -errno after saying why. */
int ctl_run_items(const Args *a, const RunSource *source, RunResultFn fn, void *userdata);
