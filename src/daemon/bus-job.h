/* SPDX-License-Identifier: MIT */
/* bus-job.h: the org.fhash.Hasher1.Job interface on /org/fhash/Hasher1/job/<id>, and job signals */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "daemon/bus-args.h"
#include "daemon/bus-options.h"
#include "daemon/context.h"
#include "daemon/job.h"

/* Adds the fallback vtable and node enumerator below FHASH_JOB_PATH_PREFIX of bus: fhashd's bus, or a
 * direct connection. */
int bus_job_register(Context *c, sd_bus *bus);

/* Fills the inputs of the call being added, first..first+n-1 (job_begin_inputs()), from the call's
 * checked inputs and options: names, expected digests, fds (taken: inputs[k].fd becomes -EBADF once
 * the engine owns it), paths, names beneath directories (their fds charged to the part), up-front
 * failures. Shared by HashFds, HashPaths, HashNames, AddFds and AddNames. Returns 0, USER_E_QUOTA /
 * USER_E_TOTAL when the uid's fd budget (USER_RESOURCE_FDS) refuses an fd, or -errno. */
int bus_job_fill_inputs(Job *j, uint32_t first, HashInput *inputs, size_t n, const HashOptions *o);

/* AddFds and AddNames (bus-job-add.c), as the gate renamed them. */
int bus_job_method_add_fds(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_job_method_add_names(sd_bus_message *msg, void *userdata, sd_bus_error *error);
/* AddFds, AddNames, Close and Release: the owner's connection only, not even root (the results go to
 * the owner). 0, or AccessDenied. */
int bus_job_check_owner(Job *j, sd_bus_message *msg, sd_bus_error *error);
/* JobClosed: the job takes no more inputs, saying why. */
int bus_job_closed_error(Job *j, sd_bus_error *error);

/* FilesHashed(o, a(ustss)) with the n results listed in indices, unicast to the owner; a job made
 * with "packed-results", FilesDigested (Manager.xml). */
int bus_job_emit_files_hashed(Job *j, const uint32_t *indices, size_t n);
/* JobFinished(o, s, u, u), unicast to the owner. */
int bus_job_emit_finished(Job *j);
/* org.freedesktop.DBus.Properties.PropertiesChanged for State and/or the progress properties,
 * unicast to the owner: progress and state are only the owner's (and root's) business. */
int bus_job_emit_properties_changed(Job *j, bool state, bool progress);
