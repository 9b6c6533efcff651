/* SPDX-License-Identifier: MIT */
/* run.h: a run of libfhash over arrays, for the blocking calls and fhash_run_paths()/_fds() */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fhash/fhash.h"

/* Checks the inputs (paths[i] or fds[i]) and starts a run over them without waiting: the arrays and
 * strings are copied. 0, or -errno with error filled in. */
int run_start_arrays(fhash_client *c, const char *const *paths, const int *fds, const char *const *names, size_t n,
                     const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                     fhash_error *error);
/* One step, waiting up to timeout_usec: 1 while the run goes on, 0 when it is over, -errno with error
 * filled in. */
int run_step(fhash_run *r, uint64_t timeout_usec, fhash_error *error);
