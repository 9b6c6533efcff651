/* SPDX-License-Identifier: MIT */
/* bus-manager.c: org.fhash.Hasher1.Manager on /org/fhash/Hasher1: HashFds, HashPaths, ListJobs */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "build-config.h"
#include "daemon/bus-args.h"
#include "daemon/bus-options.h"
#include "daemon/bus-job.h"
#include "daemon/bus-names.h"
#include "daemon/bus-manager.h"
#include "daemon/gate.h"
#include "daemon/peer.h"
#include "fhash/fhash-dbus.h"

/* The administrator's MaxFileSize is a ceiling that a caller's max-size may lower, never raise
 * (0: no ceiling, or no max-size asked). */
static uint64_t effective_max_size(uint64_t asked, uint64_t admin)
{
        if (asked == 0 || admin == 0)
                return asked ? asked : admin;
        return MIN(asked, admin);
}

/* Common tail of HashFds and HashPaths: quota, job, reply. Takes the fds of inputs on success. */
static int create_job(Context *c, sd_bus_message *msg, uid_t uid, const HashAlgoSet *algos, HashInput *inputs, size_t n,
                      const HashOptions *o, bool by_name, const EngineCreds *creds, sd_bus_error *error)
{
        _cleanup_(job_freep) Job *j = NULL;
        /* regular_only matters for path inputs only: the daemon cannot check what a path is before
         * the engine opens it without racing, so the engine refuses FIFOs and devices itself. */
        EngineJobOptions eo = { .max_file_size = effective_max_size(o->max_size, c->max_file_size),
                                .dontcache = o->dontcache, .strategy = o->strategy, .regular_only = true,
                                .params = o->has_params ? &o->params : NULL,
                                .interactive = o->priority == JOB_PRIORITY_INTERACTIVE };
        const char *owner;
        char names[HASH_SET_NAMES_MAX];
        uint32_t first;
        int r;

        r = bus_check_accepting(c, error);
        if (r < 0)
                return r;
        owner = bus_caller_name(c, msg);
        if (!owner)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Cannot tell who the caller is.");

        if (o->priority == JOB_PRIORITY_BACKGROUND) {
                r = context_background(c);
                if (r < 0)
                        return sd_bus_error_set_errnof(error, r, "Cannot start the background engine: %m");
        }

        /* The job and its files are charged to uid here; past a limit the call is Busy. */
        r = job_new(c, owner, uid, algos, &eo, o->max_size > 0, o->more, &j);
        if (r > 0)
                return bus_error_quota(c, uid, USER_RESOURCE_JOBS, r, 1, error);
        if (r < 0)
                return r;
        j->priority = o->priority;
        j->packed = o->packed;
        /* HashNames: its names (and AddNames' later) open with the caller's credentials. */
        j->names = by_name;
        if (creds) {
                j->creds = *creds;
                j->engine_options.creds = &j->creds;
        }
        r = job_begin_inputs(j, n, &first);
        if (r > 0)
                return bus_error_quota(c, uid, j->refused, r, n, error);
        if (r < 0)
                return r;
        r = bus_job_fill_inputs(j, first, inputs, n, o);
        if (r > 0)
                return bus_error_quota(c, uid, j->refused, r, n, error);
        if (r < 0)
                return r;
        r = job_start(j, sd_bus_message_get_bus(msg));
        if (r > 0)
                return bus_error_quota(c, uid, USER_RESOURCE_OWNERS, r, 1, error);
        if (r < 0)
                return r;

        log_debug("Job %" PRIu64 ": %zu %s inputs%s for %s (uid %u), %s%s%s%s%s.", j->entry.id, n,
                  hash_algo_set_format(algos, names, sizeof(names)), by_name ? " by name" : "", j->owner,
                  (unsigned)uid,
                  job_priority_to_string(o->priority), o->dontcache ? ", dontcache" : "",
                  o->strategy != ENGINE_READ_AUTO ? ", strategy " : "",
                  o->strategy != ENGINE_READ_AUTO ? engine_read_strategy_to_string(o->strategy) : "",
                  o->more ? ", more to come" : "");
        r = sd_bus_reply_method_return(msg, "o", j->object_path);
        if (r < 0)
                return r;
        TAKE_PTR(j);
        return 1;
}

/* The end of HashFds, HashPaths and HashNames once their arguments are read (r: how that went): the
 * job, then the inputs and options go whatever happened. by_name, creds: create_job()'s. */
static int hash_call_finish(Context *c, sd_bus_message *msg, int r, uid_t uid, const HashAlgoSet *algos,
                            HashInput *inputs, size_t n, HashOptions *o, bool by_name, const EngineCreds *creds,
                            sd_bus_error *error)
{
        if (r >= 0)
                r = create_job(c, msg, uid, algos, inputs, n, o, by_name, creds, error);
        hash_inputs_free(inputs, n);
        hash_options_done(o);
        return r;
}

/* HashFds as its gate passes it on (daemon/gate.h): its "ah" an "au" of indexes into the parcel of
 * fds the gate kept. */
static int method_hash_fds(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(parcel_freep) Parcel *parcel = NULL;
        Context *c = userdata;
        HashOptions o = {};
        HashInput *inputs = NULL;
        uint32_t idx[FHASH_MAX_FDS_PER_CALL];
        size_t n = 0;
        HashAlgoSet algos = {};
        uid_t uid;
        int r;

        r = bus_read_fds(c, msg, &parcel, idx, &n, error);
        if (r < 0)
                return r;
        r = bus_read_algorithm_and_options(msg, n, HASH_OPTIONS_HASH_FDS, &algos, &o, error);
        if (r < 0)
                return r;

        r = bus_read_caller_uid(c, msg, &uid, error);
        if (r >= 0)
                r = bus_check_fds(c, parcel, idx, n, o.max_size > 0, uid == 0, &inputs, error);
        return hash_call_finish(c, msg, r, uid, &algos, inputs, n, &o, false, NULL, error);
}

/* HashNames as its gate passes it on: its "ah" of directories an "au" of indexes into the parcel,
 * then the names beneath them (daemon/bus-names.h). */
static int method_hash_names(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(parcel_freep) Parcel *parcel = NULL;
        _cleanup_free_ NameRef *names = NULL;
        Context *c = userdata;
        HashOptions o = {};
        HashInput *inputs = NULL;
        uint32_t idx[FHASH_MAX_FDS_PER_CALL];
        size_t n_dirs = 0, n = 0;
        HashAlgoSet algos = {};
        EngineCreds creds;
        bool own = false;
        uid_t uid;
        int r;

        r = bus_read_fds(c, msg, &parcel, idx, &n_dirs, error);
        if (r >= 0)
                r = bus_read_names(msg, n_dirs, &names, &n, error);
        if (r < 0)
                return r;
        r = bus_read_algorithm_and_options(msg, n, HASH_OPTIONS_HASH_NAMES, &algos, &o, error);
        if (r < 0)
                return r;
        r = bus_read_caller_uid(c, msg, &uid, error);
        if (r >= 0)
                r = bus_caller_creds(c, msg, uid, &creds, &own, error);
        if (r >= 0)
                r = bus_check_names(c, parcel, idx, n_dirs, names, n, &inputs, error);
        return hash_call_finish(c, msg, r, uid, &algos, inputs, n, &o, true, own ? NULL : &creds, error);
}

/* Every HashFds reaches fhashd through a gate, which renames it: this is only for introspection. */
static int method_hash_fds_ungated(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "fds: did not come through fhashd's gate");
}

static int method_hash_paths(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_strv_free_ char **paths = NULL;
        HashInput *inputs = NULL;
        Context *c = userdata;
        HashAlgoSet algos = {};
        HashOptions o = {};
        uid_t uid;
        size_t n;
        int r;

        /* The daemon may read what the caller cannot: paths only for root and for our own uid.
         * Everyone else opens the files and passes fds. */
        r = bus_read_caller_uid(c, msg, &uid, error);
        if (r < 0)
                return r;
        if (uid != 0 && uid != c->uid)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED,
                                        "HashPaths is only for root and fhashd's own user; pass open "
                                        "file descriptors to HashFds instead.");

        r = bus_read_paths(msg, c->max_paths, &paths, error);
        if (r < 0)
                return r;
        n = strv_length(paths);
        r = bus_read_algorithm_and_options(msg, n, HASH_OPTIONS_HASH_PATHS, &algos, &o, error);
        if (r < 0)
                return r;

        r = hash_inputs_from_paths(paths, n, &inputs);
        return hash_call_finish(c, msg, r, uid, &algos, inputs, n, &o, false, NULL, error);
}

static int method_list_jobs(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Context *c = userdata;
        uid_t uid;
        int r;

        r = bus_read_caller_uid(c, msg, &uid, error);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, SD_BUS_TYPE_ARRAY, "o");
        /* Only the caller's own jobs (all for root): the walk costs what it lists. */
        REGISTRY_FOREACH_JOB_OF(e, &c->registry, uid) {
                if (r < 0)
                        break;
                r = sd_bus_message_append(reply, "o", e->job->object_path);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* OpenConnection(a{sv} options) -> (h connection): a private connection to fhashd (peer.h). */
static int method_open_connection(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Context *c = userdata;
        const char *opener = sd_bus_message_get_sender(msg);
        HashOptions o = {};
        Peer *p = NULL;
        uid_t uid;
        int fd = -EBADF, r;

        if (sd_bus_message_get_bus(msg) != c->bus)
                return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                        "This is a direct connection already; OpenConnection is a bus call.");
        /* No options yet: the Hash calls' reader, with none allowed, names any key given. */
        r = bus_read_hash_options(msg, 0, &HASH_ALGO_SET_ONE(HASH_SHA256), NULL, 0, &o, error);
        if (r < 0)
                return r;
        hash_options_done(&o);

        r = bus_check_accepting(c, error);
        if (r < 0)
                return r;
        if (!opener)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Cannot tell who the caller is.");
        r = bus_read_caller_uid(c, msg, &uid, error);
        if (r < 0)
                return r;

        r = peer_new(c, opener, uid, &p, &fd);
        if (r == 0)
                p->creds = bus_opener_creds(c, opener, uid);
        if (r > 0) {
                const UserLimit *l = &c->registry.users.limits[USER_RESOURCE_PEERS];

                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "Too many direct connections (at most %" PRIu64 ", %" PRIu64 " per uid); use the bus.",
                                         l->total, l->per_uid);
        }
        /* The same objects as on the bus. Nothing is dispatched on the new connection before this
         * handler returns. */
        if (r >= 0)
                r = bus_manager_register(c, p->bus);
        if (r >= 0)
                r = bus_job_register(c, p->bus);
        if (r < 0) {
                peer_free(p);
                safe_close(fd);
                return sd_bus_error_set_errnof(error, r, "Cannot make a direct connection: %m");
        }

        log_debug("Direct connection %s opened (uid %u).", p->name, (unsigned)uid);
        context_clients_changed(c);
        /* The reply carries a copy of the fd; ours goes. */
        r = sd_bus_reply_method_return(msg, "h", fd);
        (void)close(fd);
        if (r < 0)
                peer_free(p);
        return r;
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", FHASH_VERSION);
}

static int property_get_algorithms(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        int r;

        r = sd_bus_message_open_container(reply, SD_BUS_TYPE_ARRAY, "s");
        for (int a = 0; r >= 0 && a < _HASH_ALGO_MAX; a++)
                r = sd_bus_message_append(reply, "s", hash_algo_to_string((HashAlgo)a));
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The caller's own counters (L2): daemon-wide ones would let any user read the size of another's
 * file off BytesHashed, or see when it hashes. Root sees the daemon's. */
static int own_counter(Context *c, uid_t uid, const char *property, sd_bus_message *reply)
{
        User *u = user_registry_find(&c->registry.users, uid);
        uint64_t bytes = 0;

        if (streq(property, "ActiveJobs"))
                return sd_bus_message_append(reply, "u", (uint32_t)(u ? user_used(u, USER_RESOURCE_JOBS) : 0));
        if (streq(property, "QueuedFiles"))
                return sd_bus_message_append(reply, "u", (uint32_t)(u ? user_used(u, USER_RESOURCE_FILES) : 0));
        /* A walk over the caller's own jobs, which its job limit bounds. */
        for (JobEntry *e = registry_first_job(&c->registry, uid); e; e = registry_next_job(e, uid))
                bytes += e->job->bytes_done;
        return sd_bus_message_append(reply, "t", bytes);
}

/* The unsigned counters: which one is told by the property's name. */
static int property_get_counter(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Context *c = userdata;
        sd_bus_message *msg = sd_bus_get_current_message(bus);
        uid_t uid;
        int r;

        if (streq(property, "Workers"))
                return sd_bus_message_append(reply, "u", engine_get_workers(c->engine));
        r = msg ? bus_read_caller_uid(c, msg, &uid, error) : -ENXIO;
        if (r < 0)
                return r;
        if (uid != 0)
                return own_counter(c, uid, property, reply);
        if (streq(property, "ActiveJobs"))
                return sd_bus_message_append(reply, "u", registry_n_active_jobs(&c->registry));
        if (streq(property, "QueuedFiles"))
                return sd_bus_message_append(reply, "u", context_files_queued(c));
        return sd_bus_message_append(reply, "t", context_bytes_hashed(c));
}

/* "stopping" from SIGTERM on (its jobs are being cancelled, new ones refused), else "running": a client
 * that sees its job cancelled asks, to tell a restart (its files go to the next fhashd) from
 * someone's Cancel(). */
static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Context *c = userdata;

        return sd_bus_message_append(reply, "s", c->shutting_down ? "stopping" : "running");
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Algorithms", "as", property_get_algorithms, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Workers", "u", property_get_counter, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ActiveJobs", "u", property_get_counter, 0, 0),
        SD_BUS_PROPERTY("QueuedFiles", "u", property_get_counter, 0, 0),
        SD_BUS_PROPERTY("BytesHashed", "t", property_get_counter, 0, 0),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("HashFds", SD_BUS_ARGS("ah", fds, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_fds_ungated, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS(GATE_MEMBER_HASH_FDS, SD_BUS_ARGS("au", fds, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_fds,
                                SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_HIDDEN),
        SD_BUS_METHOD_WITH_ARGS("HashNames",
                                SD_BUS_ARGS("ah", dirs, "ay", dir_of, "ay", names, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_fds_ungated, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS(GATE_MEMBER_HASH_NAMES,
                                SD_BUS_ARGS("au", dirs, "ay", dir_of, "ay", names, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_names,
                                SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_HIDDEN),
        SD_BUS_METHOD_WITH_ARGS("HashPaths", SD_BUS_ARGS("as", paths, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_paths, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("ao", jobs), method_list_jobs,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenConnection", SD_BUS_ARGS("a{sv}", options), SD_BUS_RESULT("h", connection),
                                method_open_connection, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("FilesHashed", SD_BUS_ARGS("o", job, "a(ustss)", results), 0),
        SD_BUS_SIGNAL_WITH_ARGS("FilesDigested",
                                SD_BUS_ARGS("o", job, "au", lengths, "au", indices, "at", sizes, "ay", digests,
                                            "a(ustss)", others),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("JobFinished",
                                SD_BUS_ARGS("o", job, "s", result, "u", files_ok, "u", files_failed), 0),
        SD_BUS_VTABLE_END,
};

int bus_manager_register(Context *c, sd_bus *bus)
{
        return sd_bus_add_object_vtable(bus, NULL, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, manager_vtable, c);
}
