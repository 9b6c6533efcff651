/* SPDX-License-Identifier: MIT */
/* bus-manager.c: org.fhash.Hasher1.Manager on /org/fhash/Hasher1: HashFds, HashPaths, ListJobs */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/bus-job.h"
#include "daemon/bus-manager.h"
#include "daemon/bus-util.h"
#include "build-config.h"
#include "fhash/fhash-dbus.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "daemon/manager.h"

static int read_algorithm(sd_bus_message *msg, HashAlgo *ret, sd_bus_error *error)
{
        const char *s;
        HashAlgo a;
        int r;

        r = sd_bus_message_read_basic(msg, SD_BUS_TYPE_STRING, &s);
        if (r < 0)
                return r;
        a = hash_algo_from_string(s);
        if (a < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "algorithm: unknown algorithm \"%.*s\" (known: %s)", bus_echo_len(s, 64), s,
                                         hash_algo_list());
        *ret = a;
        return 0;
}

/* Common tail of HashFds and HashPaths: quota, job, reply. Takes the fds of inputs on success. */
static int create_job(Manager *m, sd_bus_message *msg, uid_t uid, HashAlgo algo, HashInput *inputs, size_t n,
                      const HashOptions *o, sd_bus_error *error)
{
        _cleanup_(job_freep) Job *j = NULL;
        /* regular_only matters for path inputs only: the daemon cannot check what a path is before
         * the engine opens it without racing, so the engine refuses FIFOs and devices itself. */
        EngineJobOptions eo = { .max_file_size = o->max_size ? o->max_size : m->config.max_file_size,
                                .dontcache = o->dontcache, .strategy = o->strategy, .regular_only = true };
        const char *owner;
        uint32_t first;
        int r;

        r = manager_check_quota(m, uid, true, n, error);
        if (r < 0)
                return r;

        owner = owner_caller_name(m, msg);
        if (!owner)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Cannot tell who the caller is.");
        r = job_new(m, owner, uid, algo, &eo, o->max_size > 0, o->more, &j);
        if (r < 0)
                return r;
        r = job_begin_inputs(j, n, &first);
        if (r < 0)
                return r;
        r = bus_job_fill_inputs(j, first, inputs, n, o);
        if (r < 0)
                return r;
        r = job_start(j, sd_bus_message_get_bus(msg));
        if (r < 0)
                return r;

        log_debug("Job %" PRIu64 ": %zu %s inputs for %s (uid %u)%s%s%s%s.", j->id, n, hash_algo_to_string(algo),
                  j->owner, (unsigned)uid, o->dontcache ? ", dontcache" : "",
                  o->strategy != ENGINE_READ_AUTO ? ", strategy " : "",
                  o->strategy != ENGINE_READ_AUTO ? engine_read_strategy_to_string(o->strategy) : "",
                  o->more ? ", more to come" : "");
        r = sd_bus_reply_method_return(msg, "o", j->object_path);
        if (r < 0)
                return r;
        TAKE_PTR(j);
        return 1;
}

static int method_hash_fds(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Manager *m = userdata;
        HashOptions o = {};
        HashInput *inputs = NULL;
        int raw[FHASH_MAX_FDS_PER_CALL];
        size_t n = 0;
        HashAlgo algo = _HASH_ALGO_INVALID;
        uid_t uid;
        int r;

        r = bus_read_fds(msg, raw, &n, error);
        if (r < 0)
                return r;
        r = read_algorithm(msg, &algo, error);
        if (r < 0)
                return r;
        r = bus_read_hash_options(msg, n, algo, HASH_OPTIONS_HASH_FDS, &o, error);
        if (r < 0)
                return r;

        r = owner_sender_uid(m, msg, &uid);
        if (r < 0) {
                r = sd_bus_error_set_errnof(error, r, "Cannot determine the caller's uid: %m");
                goto finish;
        }

        r = bus_check_fds(raw, n, o.max_size > 0, &inputs, error);
        if (r < 0)
                goto finish;

        r = create_job(m, msg, uid, algo, inputs, n, &o, error);
finish:
        hash_inputs_free(inputs, n);
        hash_options_done(&o);
        return r;
}

static int method_hash_paths(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Manager *m = userdata;
        HashOptions o = {};
        HashInput *inputs = NULL;
        char **paths = NULL;
        size_t n;
        HashAlgo algo = _HASH_ALGO_INVALID;
        uid_t uid;
        int r;

        /* The daemon may read what the caller cannot: paths only for root and for our own uid.
         * Everyone else opens the files and passes fds. */
        r = owner_sender_uid(m, msg, &uid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot determine the caller's uid: %m");
        if (uid != 0 && uid != m->uid)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED,
                                        "HashPaths is only for root and fhashd's own user; pass open "
                                        "file descriptors to HashFds instead.");

        r = sd_bus_message_read_strv(msg, &paths);
        if (r < 0)
                return r;
        n = strv_length(paths);
        if (n == 0) {
                r = sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "paths: no paths given");
                goto finish;
        }
        if (n > m->config.max_paths) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "paths: %zu paths, at most %" PRIu32 " per call",
                                      n, m->config.max_paths);
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                if (paths[i][0] != '/') {
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                              "paths[%zu]: \"%.256s\" is not an absolute path", i, paths[i]);
                        goto finish;
                }
                if (strlen(paths[i]) >= PATH_MAX) {
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "paths[%zu]: longer than PATH_MAX", i);
                        goto finish;
                }
        }

        r = read_algorithm(msg, &algo, error);
        if (r < 0)
                goto finish;
        r = bus_read_hash_options(msg, n, algo, HASH_OPTIONS_HASH_PATHS, &o, error);
        if (r < 0)
                goto finish;

        inputs = calloc(n, sizeof(HashInput));
        if (!inputs) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                inputs[i].fd = -EBADF;
                inputs[i].path = paths[i];
        }
        r = create_job(m, msg, uid, algo, inputs, n, &o, error);
finish:
        hash_inputs_free(inputs, n);
        hash_options_done(&o);
        strv_free(paths);
        return r;
}

static int method_list_jobs(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        Manager *m = userdata;
        uid_t uid;
        int r;

        r = owner_sender_uid(m, msg, &uid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot determine the caller's uid: %m");

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, SD_BUS_TYPE_ARRAY, "o");
        for (Job *j = m->jobs; r >= 0 && j; j = j->next)
                if (uid == 0 || uid == j->uid)
                        r = sd_bus_message_append(reply, "o", j->object_path);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        return r;
}

/* OpenConnection(a{sv} options) -> (h connection): a private connection to fhashd (peer.h). */
static int method_open_connection(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Manager *m = userdata;
        const char *opener = sd_bus_message_get_sender(msg);
        HashOptions o = {};
        Peer *p = NULL;
        uid_t uid;
        int fd = -EBADF, r;

        if (sd_bus_message_get_bus(msg) != m->bus)
                return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                        "This is a direct connection already; OpenConnection is a bus call.");
        /* No options yet: the Hash calls' reader, with none allowed, names any key given. */
        r = bus_read_hash_options(msg, 0, HASH_SHA256, 0, &o, error);
        if (r < 0)
                return r;
        hash_options_done(&o);

        if (m->shutting_down)
                return sd_bus_error_set(error, FHASH_ERROR_BUSY, "fhashd is shutting down.");
        if (!opener)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "Cannot tell who the caller is.");
        r = owner_sender_uid(m, msg, &uid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot determine the caller's uid: %m");

        r = peer_new(m, opener, uid, &p, &fd);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "Too many direct connections (at most %u, %u per uid); use the bus.",
                                         PEERS_MAX, PEERS_MAX_PER_UID);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot make a direct connection: %m");

        log_debug("Direct connection %s opened (uid %u).", p->name, (unsigned)uid);
        manager_check_idle(m);
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

static int property_get_workers(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
        Manager *m = userdata;

        return sd_bus_message_append(reply, "u", engine_get_workers(m->engine));
}

static int property_get_queued_files(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error)
{
        Manager *m = userdata;

        return sd_bus_message_append(reply, "u", engine_get_files_queued(m->engine));
}

static int property_get_bytes_hashed(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error)
{
        Manager *m = userdata;

        return sd_bus_message_append(reply, "t", engine_get_bytes_hashed(m->engine));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Algorithms", "as", property_get_algorithms, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Workers", "u", property_get_workers, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ActiveJobs", "u", NULL, offsetof(Manager, active_jobs), 0),
        SD_BUS_PROPERTY("QueuedFiles", "u", property_get_queued_files, 0, 0),
        SD_BUS_PROPERTY("BytesHashed", "t", property_get_bytes_hashed, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("HashFds", SD_BUS_ARGS("ah", fds, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_fds, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("HashPaths", SD_BUS_ARGS("as", paths, "s", algorithm, "a{sv}", options),
                                SD_BUS_RESULT("o", job), method_hash_paths, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("ao", jobs), method_list_jobs,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenConnection", SD_BUS_ARGS("a{sv}", options), SD_BUS_RESULT("h", connection),
                                method_open_connection, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("FilesHashed", SD_BUS_ARGS("o", job, "a(ustss)", results), 0),
        SD_BUS_SIGNAL_WITH_ARGS("JobFinished",
                                SD_BUS_ARGS("o", job, "s", result, "u", files_ok, "u", files_failed), 0),
        SD_BUS_VTABLE_END,
};

int bus_manager_register(Manager *m, sd_bus *bus)
{
        return sd_bus_add_object_vtable(bus, NULL, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, manager_vtable, m);
}
