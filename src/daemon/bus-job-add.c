/* SPDX-License-Identifier: MIT */
/* bus-job-add.c: inputs added to a job: HashFds', HashPaths' and HashNames' first ones, AddFds' and
 * AddNames' later ones */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "daemon/bus-job.h"
#include "daemon/bus-names.h"
#include "fhash/fhash-dbus.h"

/* The directories of the call's names (at most FHASH_MAX_FDS_PER_CALL) stay open as long as the
 * part's EngineJob, one fd each, and the engine keeps a copy of each name: both charged to the part.
 * 0, or USER_E_* past the uid's fd budget or memory. */
static int charge_names(Job *j, const HashInput *inputs, size_t n)
{
        const EngineDir *seen[FHASH_MAX_FDS_PER_CALL];
        size_t n_seen = 0, bytes = 0;
        int r;

        for (size_t k = 0; k < n; k++) {
                size_t i = 0;

                if (!inputs[k].dir || !inputs[k].path || inputs[k].error_name)
                        continue;
                bytes += strlen(inputs[k].path) + 1;
                while (i < n_seen && seen[i] != inputs[k].dir)
                        i++;
                if (i == n_seen && n_seen < FHASH_MAX_FDS_PER_CALL)
                        seen[n_seen++] = inputs[k].dir;
        }
        if (n_seen == 0 || !j->new_part)
                return 0;
        j->refused = USER_RESOURCE_FDS;
        r = user_charge(j->entry.user, &j->new_part->dirs_charge, n_seen);
        if (r == 0) {
                j->refused = USER_RESOURCE_MEMORY;
                r = user_charge(j->entry.user, &j->new_part->names_charge, bytes);
        }
        return r;
}

int bus_job_fill_inputs(Job *j, uint32_t first, HashInput *inputs, size_t n, const HashOptions *o)
{
        int r;

        for (size_t k = 0; k < n; k++) {
                size_t i = (size_t)first + k;

                r = 0;
                if (o->names)
                        r = job_set_name(j, i, o->names[k]);
                else if (inputs[k].path && !inputs[k].dir)
                        r = job_set_name(j, i, inputs[k].path); /* HashPaths': the path (names: none) */
                if (r < 0)
                        return r;
                if (o->expected && o->expected[k][0]) {
                        r = job_set_expected(j, i, o->expected[k]);
                        if (r < 0)
                                return r;
                }
                if (inputs[k].error_name)
                        r = job_fail_input(j, i, inputs[k].error_name, inputs[k].error_message);
                else {
                        r = job_add_input(j, i, inputs[k].fd, inputs[k].flags, inputs[k].info, inputs[k].path,
                                          inputs[k].dir);
                        if (r == 0)
                                inputs[k].fd = -EBADF;  /* the engine owns it now */
                }
                if (r != 0)
                        return r;
        }
        return charge_names(j, inputs, n);
}

/* AddFds and AddNames as their gate passes them on (daemon/gate.h): their "ah" an "au" of indexes
 * into the parcel of fds the gate kept, the files' own (AddFds) or the directories of the names
 * that follow (AddNames, daemon/bus-names.h). */
static int add_inputs(sd_bus_message *msg, Job *j, bool names, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(parcel_freep) Parcel *parcel = NULL;
        _cleanup_free_ NameRef *refs = NULL;
        Context *c = j->context;
        HashOptions o = {};
        HashInput *inputs = NULL;
        uint32_t idx[FHASH_MAX_FDS_PER_CALL];
        uint32_t first = 0;
        size_t n = 0, n_fds = 0;
        bool begun = false;
        int r;

        r = bus_job_check_owner(j, msg, error);
        if (r < 0)
                return r;
        r = bus_read_fds(c, msg, &parcel, idx, &n_fds, error);
        if (r < 0)
                return r;
        n = n_fds;
        if (names) {
                /* Its names open with the credentials HashNames found: a job HashFds made has none. */
                if (!j->names)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Job %" PRIu64 " was made by HashFds: only AddFds adds to it.",
                                                 j->entry.id);
                r = bus_read_names(msg, n_fds, &refs, &n, error);
                if (r < 0)
                        return r;
        }
        r = bus_read_hash_options(msg, n, &j->algos, j->engine_options.params, HASH_OPTIONS_ADD_FDS, &o, error);
        if (r < 0)
                return r;

        if (!job_is_open(j)) {
                r = bus_job_closed_error(j, error);
                goto finish;
        }
        /* The per-uid file quota counts added files like any others; the job itself is counted
         * already, so the job quota does not apply. Checked before the fds are, as it always was;
         * job_begin_inputs() takes the charge. */
        r = bus_check_accepting(c, error);
        if (r < 0)
                goto finish;
        r = user_check(&c->registry.users, j->uid, USER_RESOURCE_FILES, n);
        if (r > 0) {
                r = bus_error_quota(c, j->uid, USER_RESOURCE_FILES, r, n, error);
                goto finish;
        }

        if (names)
                r = bus_check_names(c, parcel, idx, n_fds, refs, n, &inputs, error);
        else
                r = bus_check_fds(c, parcel, idx, n, j->allow_streams, j->uid == 0, &inputs, error);
        if (r < 0)
                goto finish;

        r = job_begin_inputs(j, n, &first);
        if (r == -E2BIG) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                      "Job %" PRIu64 " has %" PRIu32 " inputs; a job holds at most %" PRIu32 ".",
                                      j->entry.id, j->results.n_inputs, JOB_INPUTS_MAX);
                goto finish;
        }
        if (r > 0) {
                r = bus_error_quota(c, j->uid, j->refused, r, n, error);
                goto finish;
        }
        if (r < 0)
                goto finish;
        begun = true;
        r = bus_job_fill_inputs(j, first, inputs, n, &o);
        if (r > 0)
                r = bus_error_quota(c, j->uid, j->refused, r, n, error);
        if (r < 0)
                goto finish;
        /* The reply is made before the inputs are committed: once the engine has them, nothing may
         * fail any more. */
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "u", first);
        if (r < 0)
                goto finish;
        r = job_commit_inputs(j, o.more);
        if (r < 0)
                goto finish;
        begun = false;

        log_debug("Job %" PRIu64 ": %zu more inputs%s from index %" PRIu32 "%s.", j->entry.id, n,
                  names ? " by name" : "", first, o.more ? "" : ", closed");
        r = sd_bus_send(NULL, reply, NULL);
finish:
        if (begun)
                job_abort_inputs(j);
        hash_inputs_free(inputs, n);
        hash_options_done(&o);
        return r;
}

int bus_job_method_add_fds(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return add_inputs(msg, userdata, false, error);
}

int bus_job_method_add_names(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return add_inputs(msg, userdata, true, error);
}
