/* SPDX-License-Identifier: MIT */
/* bus-fill.h: what goes into a run's next call to fhashd: names while the files go by name, fds
 * otherwise, and first the files fhashd could not hash by name */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "client/bus-run-state.h"

/* Whether input i goes by name (bus-names.h): a path, not marked to go as an fd, to an fhashd that
 * takes names, in a run that did not ask for fds only. */
bool bus_fill_by_name(Bus *c, size_t i);

/* Up to room inputs of kind from c->next into call: names while they go by name (at most
 * BUS_CALL_INPUTS_MAX, beneath at most FHASH_MAX_FDS_PER_CALL directories), else fds opened here (at
 * most FHASH_MAX_FDS_PER_CALL) into fds[]; a pipe or device goes alone at once, a FIFO without its
 * writer and a file under a lease are parked (bus-alone.h). 0, or -errno. */
int bus_fill_call(Bus *c, BusCall *call, JobKind kind, size_t room, int fds[]);

/* The same from the inputs fhashd could not hash by name (BusJobs.redo), as fds. */
int bus_fill_call_redo(Bus *c, BusCall *call, JobKind kind, size_t room, int fds[]);
