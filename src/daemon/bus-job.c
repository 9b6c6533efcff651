/* SPDX-License-Identifier: MIT */
/* bus-job.c: org.fhash.Hasher1.Job on /org/fhash/Hasher1/job/<id>, and the signals about jobs */
#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "daemon/bus-job.h"
#include "daemon/gate.h"
#include "daemon/peer.h"
#include "fhash/fhash-dbus.h"

/*
 * Access: a job, its results, its names and even its progress belong to the uid that created it.
 * Every call on a job object (Cancel, GetResults, Properties.Get/GetAll, Introspect) by another
 * uid than the owner's, except root, is refused with AccessDenied in job_find() below, before any
 * handler or property getter runs. AddFds and Close are narrower still: only the connection that
 * created the job, since the results of what it adds go to that connection alone. The node
 * enumerator lists only the caller's own jobs. Signals go only to the connection that created the
 * job.
 */

static Job *job_from_path(Context *c, const char *path)
{
        const char *p;
        uint64_t id = 0;
        size_t l = strlen(FHASH_JOB_PATH_PREFIX);

        if (strncmp(path, FHASH_JOB_PATH_PREFIX "/", l + 1) != 0)
                return NULL;
        p = path + l + 1;
        if (*p == '\0' || *p == '0')
                return NULL;
        for (; *p; p++) {
                if (*p < '0' || *p > '9' || id > (UINT64_MAX - 9) / 10)
                        return NULL;
                id = id * 10 + (uint64_t)(*p - '0');
        }
        return registry_find_job(&c->registry, id);
}

static int job_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **ret_found,
                    sd_bus_error *error)
{
        Context *c = userdata;
        sd_bus_message *msg;
        Job *j;
        uid_t uid;
        int r;

        j = job_from_path(c, path);
        if (!j)
                return 0;

        msg = sd_bus_get_current_message(bus);
        if (msg) {
                r = bus_read_caller_uid(c, msg, &uid, error);
                if (r < 0)
                        return r;
                if (uid != 0 && uid != j->uid)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                                 "Job %" PRIu64 " belongs to another user.", j->entry.id);
        }
        *ret_found = j;
        return 1;
}

static int job_enumerate(sd_bus *bus, const char *path, void *userdata, char ***ret_nodes, sd_bus_error *error)
{
        Context *c = userdata;
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        _cleanup_strv_free_ char **nodes = NULL;
        uid_t uid = 0;
        size_t n = 0;
        int r;

        if (msg) {
                r = bus_caller_uid(c, msg, &uid);
                if (r < 0)
                        return r;
        }
        nodes = calloc((size_t)registry_n_jobs_of(&c->registry, uid) + 1, sizeof(char *));
        if (!nodes)
                return -ENOMEM;
        /* Only the caller's own jobs (all for root): the walk costs what it lists. */
        REGISTRY_FOREACH_JOB_OF(e, &c->registry, uid) {
                nodes[n] = strdup(e->job->object_path);
                if (!nodes[n])
                        /* nodes is _cleanup_strv_free_, which the analyzer does not follow. */
                        return -ENOMEM; // NOLINT(clang-analyzer-unix.Malloc)
                n++;
        }
        *ret_nodes = TAKE_PTR(nodes);
        return 0;
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", job_state_to_string(j->state));
}

static int property_get_algorithm(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;

        char buf[HASH_SET_NAMES_MAX];

        return sd_bus_message_append(reply, "s", hash_algo_set_format(&j->algos, buf, sizeof(buf)));
}

static int property_get_priority(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", job_priority_to_string(j->priority));
}

static int method_cancel(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;

        /* job_find() already refused other users. Cancelling a finished job is a no-op. */
        log_debug("Job %" PRIu64 " cancelled by %s.", j->entry.id, bus_caller_name(j->context, msg) ?: "?");
        job_cancel(j);
        return sd_bus_reply_method_return(msg, NULL);
}

int bus_job_check_owner(Job *j, sd_bus_message *msg, sd_bus_error *error)
{
        if (!streq_ptr(bus_caller_name(j->context, msg), j->owner))
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Only the connection that created job %" PRIu64 " may add to, close or release it.",
                                         j->entry.id);
        return 0;
}

int bus_job_closed_error(Job *j, sd_bus_error *error)
{
        return sd_bus_error_setf(error, FHASH_ERROR_JOB_CLOSED, "Job %" PRIu64 " takes no more inputs: it is %s.",
                                 j->entry.id,
                                 job_is_finished(j) ? job_state_to_string(j->state)
                                 : j->cancelled     ? "cancelled"
                                                    : "closed");
}

static int method_close(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;
        int r;

        r = bus_job_check_owner(j, msg, error);
        if (r < 0)
                return r;
        /* Closing a closed or finished job is a no-op, as Cancel() of a finished one is. */
        if (job_is_open(j)) {
                r = job_commit_inputs(j, false);
                if (r < 0)
                        return r;
                log_debug("Job %" PRIu64 " closed by its owner.", j->entry.id);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

/* The owner has every result it wants: the job's memory goes back to its uid now rather than when it
 * expires (a run of many jobs would otherwise hold all of theirs, 300 bytes and a name per file). */
static int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Job *j = userdata;
        int r;

        r = bus_job_check_owner(j, msg, error);
        if (r < 0)
                return r;
        if (job_release_results(j) == -EBUSY) {
                (void)sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                        "Job %" PRIu64 " has not finished: release it after its JobFinished.",
                                        j->entry.id);
                return -EBUSY;
        }
        log_debug("Job %" PRIu64 "'s results released by its owner.", j->entry.id);
        return sd_bus_reply_method_return(msg, NULL);
}

/* Appends the (ustss) of input i. */
static int append_result(sd_bus_message *m, Job *j, size_t i)
{
        const JobResult *res = &j->results.items[i];

        return sd_bus_message_append(m, "(ustss)", (uint32_t)i, res->name ? res->name : "", res->size,
                                     job_result_digest(res), res->error ? res->error : "");
}

/* An upper bound of the bytes input i's (ustss) takes in a message: the strings, their length
 * words and nuls, and the worst alignment padding. */
static size_t result_wire_size(const JobResult *res)
{
        return 64 + (res->name ? strlen(res->name) : 0) + strlen(job_result_digest(res)) +
               (res->error ? strlen(res->error) : 0);
}

/* Appends the results of finished inputs from index first on, at most max of them (0: no count
 * limit) and at most FHASH_REPLY_BYTES_MAX bytes. *ret_next is the first index not looked at
 * (n_inputs when all were); *ret_truncated tells whether the byte bound stopped it. */
static int append_results(sd_bus_message *m, Job *j, uint32_t first, uint32_t max, uint32_t *ret_next,
                          bool *ret_truncated)
{
        size_t bytes = 0;
        uint32_t i = first, n = 0;
        int r;

        *ret_truncated = false;
        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "(ustss)");
        for (; r >= 0 && i < j->results.n_inputs && (max == 0 || n < max); i++) {
                const JobResult *res = &j->results.items[i];

                if (!res->done)
                        continue;
                bytes += result_wire_size(res);
                if (bytes > FHASH_REPLY_BYTES_MAX) {
                        *ret_truncated = true;
                        break;
                }
                r = append_result(m, j, i);
                n++;
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        *ret_next = i;
        return r;
}

/* A reply of up to 8 MiB is made only for a client that reads them: on a direct connection one with
 * PEER_BACKLOG_RESULTS messages unread is cut off; on the bus, where fhashd's one queue to
 * dbus-daemon serves everybody, the call is Busy while that queue is long. */
static int check_reader(Job *j, sd_bus_message *msg, sd_bus_error *error)
{
        Context *c = j->context;
        sd_bus *bus = sd_bus_message_get_bus(msg);
        uint64_t queued = 0;

        if (bus != c->bus)
                return peer_check_backlog_max(c, bus, PEER_BACKLOG_RESULTS)
                               ? sd_bus_error_set(error, FHASH_ERROR_BUSY,
                                                  "This connection does not read its replies; it is closed.")
                               : 0;
        if (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued > BUS_BACKLOG_RESULTS)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "fhashd has %" PRIu64 " messages queued for the bus; try again later.", queued);
        return 0;
}

/* The reply to msg, from the owner or root, with the results from first on (up to max; 0: all). */
static int results_reply(Job *j, sd_bus_message *msg, uint32_t first, uint32_t max, sd_bus_message **ret,
                         uint32_t *ret_next, bool *ret_truncated, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = check_reader(j, msg, error);

        if (r >= 0 && j->results.released) {
                (void)sd_bus_error_setf(error, FHASH_ERROR_RELEASED,
                                        "Job %" PRIu64 "'s results were released %s (%s): only its state and "
                                        "counts are left", j->entry.id,
                                        j->owner_gone ? "when the client that made it disconnected" : "by the client that made it",
                                        j->owner);
                return -ENODATA;
        }
        if (r >= 0)
                r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = append_results(reply, j, first, max, ret_next, ret_truncated);
        if (r >= 0)
                *ret = TAKE_PTR(reply);
        return r;
}

static int method_get_results(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Job *j = userdata;
        uint32_t next;
        bool truncated;
        int r;

        r = results_reply(j, msg, 0, 0, &reply, &next, &truncated, error);
        if (r < 0)
                return r;
        /* A reply over the bus's message limit would get fhashd itself disconnected. */
        if (truncated)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The results of %" PRIu32 " inputs take more than %u MiB: "
                                         "read them in parts with GetResultsFrom()",
                                         j->results.n_inputs, FHASH_REPLY_BYTES_MAX >> 20);
        return sd_bus_send(NULL, reply, NULL);
}

static int method_get_results_from(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Job *j = userdata;
        uint32_t first, max, next;
        bool truncated;
        int r;

        r = sd_bus_message_read(msg, "uu", &first, &max);
        if (r >= 0)
                r = results_reply(j, msg, first, max, &reply, &next, &truncated, error);
        if (r >= 0)
                r = sd_bus_message_append(reply, "u", MAX(next, first));
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* Every AddFds reaches fhashd through a gate, which renames it: this is only for introspection. */
static int method_add_fds_ungated(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "fds: did not come through fhashd's gate");
}

static const sd_bus_vtable job_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Algorithm", "s", property_get_algorithm, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Priority", "s", property_get_priority, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* Grows while the job is open (AddFds). */
        SD_BUS_PROPERTY("FilesTotal", "u", NULL, offsetof(Job, results.n_inputs), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("FilesDone", "u", NULL, offsetof(Job, results.files_done), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("BytesTotal", "t", NULL, offsetof(Job, bytes_total), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("BytesDone", "t", NULL, offsetof(Job, bytes_done), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Rate", "t", NULL, offsetof(Job, rate), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Progress", "d", NULL, offsetof(Job, progress), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Owner", "s", NULL, offsetof(Job, owner), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("UID", "u", NULL, offsetof(Job, uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD_WITH_ARGS("Cancel", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_cancel,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetResults", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ustss)", results),
                                method_get_results, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetResultsFrom", SD_BUS_ARGS("u", first, "u", max),
                                SD_BUS_RESULT("a(ustss)", results, "u", next), method_get_results_from,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddFds", SD_BUS_ARGS("ah", fds, "a{sv}", options),
                                SD_BUS_RESULT("u", first_index), method_add_fds_ungated, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS(GATE_MEMBER_ADD_FDS, SD_BUS_ARGS("au", fds, "a{sv}", options),
                                SD_BUS_RESULT("u", first_index), bus_job_method_add_fds,
                                SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_HIDDEN),
        SD_BUS_METHOD_WITH_ARGS("AddNames", SD_BUS_ARGS("ah", dirs, "ay", dir_of, "ay", names, "a{sv}", options),
                                SD_BUS_RESULT("u", first_index), method_add_fds_ungated, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS(GATE_MEMBER_ADD_NAMES, SD_BUS_ARGS("au", dirs, "ay", dir_of, "ay", names, "a{sv}", options),
                                SD_BUS_RESULT("u", first_index), bus_job_method_add_names,
                                SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_HIDDEN),
        SD_BUS_METHOD_WITH_ARGS("Close", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_close,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Release", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_release,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int bus_job_register(Context *c, sd_bus *bus)
{
        int r;

        r = sd_bus_add_fallback_vtable(bus, NULL, FHASH_JOB_PATH_PREFIX, FHASH_JOB_INTERFACE, job_vtable,
                                       job_find, c);
        if (r < 0)
                return r;
        return sd_bus_add_node_enumerator(bus, NULL, FHASH_JOB_PATH_PREFIX, job_enumerate, c);
}

/* Where signals about a job go: the owner's connection, fhashd's bus or a direct connection. */
static sd_bus *job_bus(Job *j)
{
        return j->owner_ref.owner ? j->owner_ref.owner->bus : j->context->bus;
}

/* A signal about j, on path (the manager's or the job's object) of interface, to fill in. */
static int job_new_signal(Job *j, const char *path, const char *interface, const char *member,
                          sd_bus_message **ret)
{
        return sd_bus_message_new_signal(job_bus(j), ret, path, interface, member);
}

/* Sends a signal about a job to its owner only: dbus-daemon then delivers it to that connection and
 * to nobody else, whatever match rules others add. On a direct connection the owner is the only one
 * there. Takes msg. */
static int job_send_unicast(Job *j, sd_bus_message *msg)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = msg;
        Context *c = j->context;
        sd_bus *bus = job_bus(j);
        int r;

        if (bus == c->bus) {
                r = sd_bus_message_set_destination(m, j->owner);
                if (r < 0)
                        return r;
        }
        r = sd_bus_send(bus, m, NULL);
        if (r < 0)
                return log_debug_errno(r, "Failed to send a signal about job %" PRIu64 " to %s: %m", j->entry.id,
                                       j->owner);
        peer_check_backlog(c, bus);
        return r;
}

/* FilesDigested's arrays (after its "o"): lengths, indices, sizes and digests of the results hashed
 * without error, as arrays of fixed-size elements, which the bus and both ends pass without looking
 * at each (a FilesHashed element costs dbus-daemon three strings' validation), the digests as bytes
 * one after the other, lengths[] bytes each. packs[k] tells which went in; the rest go in "others"
 * as FilesHashed has them. */
static int append_packed(sd_bus_message *msg, Job *j, const uint32_t *indices, size_t n, bool packs[])
{
        uint32_t lengths[HASH_SET_MAX], *idx = NULL;
        uint64_t *sizes = NULL;
        uint8_t *digests = NULL;
        size_t n_lengths = 0, hex_len = 0, each = 0, n_ok = 0;
        int r;

        assert(n <= JOB_BATCH_MAX);
        /* The digests' shape, from the first result hashed: a job's hashed results all have it
         * (fhashd wrote them), so one of the same length is one of the same shape. */
        for (size_t k = 0; k < n; k++) {
                const JobResult *res = &j->results.items[indices[k]];
                const char *hex = job_result_digest(res);
                int q;

                if (res->error)
                        continue;
                if (n_lengths == 0) {
                        q = hash_joined_from_hex(hex, NULL, SIZE_MAX, lengths, HASH_SET_MAX);
                        if (q <= 0)
                                continue;
                        n_lengths = (size_t)q;
                        hex_len = strlen(hex);
                }
                packs[k] = strlen(hex) == hex_len;
                n_ok += packs[k];
        }
        for (size_t k = 0; k < n_lengths; k++)
                each += lengths[k];

        r = sd_bus_message_append_array(msg, 'u', lengths, n_lengths * sizeof(uint32_t));
        /* Each array filled before the next is added: adding one may move the message's body. */
        if (r >= 0)
                r = sd_bus_message_append_array_space(msg, 'u', n_ok * sizeof(uint32_t), (void **)&idx);
        for (size_t k = 0, o = 0; r >= 0 && k < n; k++)
                if (packs[k])
                        idx[o++] = indices[k];
        if (r >= 0)
                r = sd_bus_message_append_array_space(msg, 't', n_ok * sizeof(uint64_t), (void **)&sizes);
        for (size_t k = 0, o = 0; r >= 0 && k < n; k++)
                if (packs[k])
                        sizes[o++] = j->results.items[indices[k]].size;
        if (r >= 0)
                r = sd_bus_message_append_array_space(msg, 'y', n_ok * each, (void **)&digests);
        for (size_t k = 0, o = 0; r >= 0 && k < n; k++)
                if (packs[k])
                        r = hash_joined_from_hex(job_result_digest(&j->results.items[indices[k]]),
                                                 digests + o++ * each, each, lengths, n_lengths);
        return r;
}

int bus_job_emit_files_hashed(Job *j, const uint32_t *indices, size_t n)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        bool packs[JOB_BATCH_MAX] = {};
        int r;

        /* FilesDigested(o, au lengths, au indices, at sizes, ay digests, a(ustss) others) for a job
         * made with "packed-results", else FilesHashed(o, a(ustss)): the same results array, of
         * every result FilesDigested did not pack. */
        r = job_new_signal(j, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, j->packed ? "FilesDigested" : "FilesHashed",
                           &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "o", j->object_path);
        if (r >= 0 && j->packed)
                r = append_packed(msg, j, indices, n, packs);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, SD_BUS_TYPE_ARRAY, "(ustss)");
        for (size_t k = 0; r >= 0 && k < n; k++)
                if (!packs[k])
                        r = append_result(msg, j, indices[k]);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r < 0)
                return r;
        return job_send_unicast(j, TAKE_PTR(msg));
}

int bus_job_emit_finished(Job *j)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        int r;

        r = job_new_signal(j, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "JobFinished", &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "osuu", j->object_path, job_state_to_string(j->state),
                                          j->results.files_ok, j->results.files_failed);
        if (r < 0)
                return r;
        return job_send_unicast(j, TAKE_PTR(msg));
}

int bus_job_emit_properties_changed(Job *j, bool state, bool progress)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        int r;

        if (!j->started)
                return 0;
        r = job_new_signal(j, j->object_path, "org.freedesktop.DBus.Properties", "PropertiesChanged", &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "s", FHASH_JOB_INTERFACE);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, SD_BUS_TYPE_ARRAY, "{sv}");
        if (r >= 0 && state)
                r = sd_bus_message_append(msg, "{sv}", "State", "s", job_state_to_string(j->state));
        if (r >= 0 && progress)
                r = sd_bus_message_append(msg, "{sv}{sv}{sv}{sv}{sv}{sv}", "FilesTotal", "u", j->results.n_inputs,
                                          "FilesDone", "u", j->results.files_done, "BytesTotal", "t", j->bytes_total,
                                          "BytesDone", "t", j->bytes_done, "Rate", "t", j->rate, "Progress", "d",
                                          j->progress);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "as", 0);
        if (r < 0)
                return r;
        return job_send_unicast(j, TAKE_PTR(msg));
}
