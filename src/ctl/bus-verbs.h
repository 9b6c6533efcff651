/* SPDX-License-Identifier: MIT */
/* bus-verbs.h: fhashctl's jobs, watch, cancel and status: fhashd's properties and jobs, printed */
#pragma once

#include <stdio.h>
#include <systemd/sd-bus.h>

#include "ctl/progress.h"
#include "fhash/fhash.h"

/* "cannot reach fhashd: WHY; what to do next" on stderr for libfhash's -ENOTCONN, the next step
 * chosen by its error: nothing that is fhashd on that bus (fhash_error_is_no_daemon()), or no bus. */
void ctl_err_unreachable(const fhash_error *e);
/* Why VERB of JOB failed, in words for a person: no such job, not a job, not yours. */
void ctl_err_job(const char *verb, const char *job, int r, const sd_bus_error *error);

/* The manager's properties, "Name: value" lines. */
int ctl_bus_status(sd_bus *bus, FILE *f, sd_bus_error *error);
/* One line per job of ours under a header, in aligned columns: id, state, algorithm, files and
 * bytes (binary units) done/total. */
int ctl_bus_list_jobs(sd_bus *bus, FILE *f, sd_bus_error *error);
/* job: a full object path or the id after FHASH_JOB_PATH_PREFIX "/". */
/* Cancels JOB (an id or an object path): >= 0 once fhashd took it, or -errno with error set. */
int ctl_bus_cancel(sd_bus *bus, const char *job, sd_bus_error *error);
/* Follows a job's properties until it ends; draws progress, or without it (progress off: not a
 * terminal, --no-progress) writes a line to f each time the job moves; writes the final state to f.
 * Returns 0 if the job ended "done", 1 otherwise, or -errno. */
int ctl_bus_watch(sd_bus *bus, const char *job, Progress *progress, FILE *f, sd_bus_error *error);
