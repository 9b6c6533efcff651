/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus-client.h"
#include "fhash/fhash.h"
#include "macro.h"
#include "output.h"


int bus_client_open(BusKind kind, const char *address, sd_bus **ret, sd_bus_error *error)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        switch (kind) {
        case BUS_KIND_USER:
                r = sd_bus_open_user(&bus);
                break;
        case BUS_KIND_ADDRESS:
                r = sd_bus_new(&bus);
                if (r < 0)
                        return r;
                r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, true);
                if (r >= 0)
                        r = sd_bus_start(bus);
                break;
        case BUS_KIND_SYSTEM:
        default:
                r = sd_bus_open_system(&bus);
        }
        if (r < 0)
                return r;

        /* A Ping through the name starts fhashd where it is D-Bus activatable, and tells us at once
         * (ServiceUnknown / NameHasNoOwner) when it is not there, so that the caller can fall back. */
        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping",
                               error, NULL, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

typedef struct BusJob {
        struct BusClient *client;
        char *path;                           /* NULL until the HashFds reply names it */
        size_t idx[FHASH_MAX_FDS_PER_CALL];   /* item index of each input of the job */
        bool got[FHASH_MAX_FDS_PER_CALL];
        size_t n;
        bool in_flight, finished, retry;
        uint64_t bytes_done;                  /* from the job's BytesDone property */
        sd_bus_slot *call;
} BusJob;

typedef struct BusClient {
        sd_bus *bus;
        const RunItem *items;
        size_t n_items;
        RunOrder order;
        char **messages;          /* per item: the daemon's reason text, kept until delivered */
        BusJob *jobs;
        size_t n_jobs, next_job;  /* jobs are made up front, one per batch; next_job is submitted next */
        size_t in_flight;
        sd_bus_message **pending; /* signals about a job whose reply has not been processed yet */
        size_t n_pending;
        uint64_t retry_at;        /* Busy with nothing in flight: wait until then */
        uint64_t bytes_finished, bytes_total;
        size_t files_finished;
        int error;                /* fatal: stop and return it */
        sd_bus_error *ret_error;
        const char *daemon;       /* unique name of fhashd: signals from anybody else are ignored */
} BusClient;

static BusJob *job_by_path(BusClient *c, const char *path)
{
        for (size_t i = 0; i < c->n_jobs; i++)
                if (c->jobs[i].path && streq(c->jobs[i].path, path))
                        return &c->jobs[i];
        return NULL;
}

static void deliver(BusClient *c, size_t item, RunStatus status, int error, const char *message, uint64_t size,
                    const char *hex)
{
        RunResult r = { .index = item, .status = status, .error = error, .size = size };

        if (message && !c->messages[item]) {
                c->messages[item] = strdup(message);
                r.message = c->messages[item];
        }
        if (hex && strlen(hex) < sizeof(r.hex))
                strcpy(r.hex, hex);
        if (status == RUN_OK) {
                c->bytes_finished += size;
        }
        c->files_finished++;
        run_order_put(&c->order, &r);
}

/* "org.fhash.Hasher1.Error.NotFound: No such file or directory" → status, -errno and the reason. */
static void parse_file_error(const char *e, RunStatus *ret_status, int *ret_errno, const char **ret_reason)
{
        static const struct {
                const char *name;
                int err;
        } map[] = {
                { FHASH_ERROR_NOT_FOUND, -ENOENT }, { FHASH_ERROR_ACCESS_DENIED, -EACCES },
                { FHASH_ERROR_IO, -EIO },           { FHASH_ERROR_NOT_REGULAR, -EISDIR },
                { FHASH_ERROR_TOO_LARGE, -EFBIG },
        };
        const char *colon = strstr(e, ": ");
        size_t nl = colon ? (size_t)(colon - e) : strlen(e);

        *ret_reason = colon ? colon + 2 : e;
        *ret_errno = -EIO;
        *ret_status = RUN_ERROR;
        if (nl == strlen(FHASH_ERROR_MISMATCH) && strncmp(e, FHASH_ERROR_MISMATCH, nl) == 0)
                *ret_status = RUN_MISMATCH;
        else if (nl == strlen(FHASH_ERROR_CHANGED) && strncmp(e, FHASH_ERROR_CHANGED, nl) == 0)
                *ret_status = RUN_CHANGED;
        else if (nl == strlen(FHASH_ERROR_CANCELLED) && strncmp(e, FHASH_ERROR_CANCELLED, nl) == 0)
                *ret_status = RUN_CANCELLED;
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (nl == strlen(map[i].name) && strncmp(e, map[i].name, nl) == 0)
                        *ret_errno = map[i].err;
}

static int handle_files_hashed(BusClient *c, BusJob *j, sd_bus_message *m)
{
        const char *name, *hex, *e;
        uint64_t size;
        uint32_t index;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "(ustss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(ustss)", &index, &name, &size, &hex, &e)) > 0) {
                RunStatus status = RUN_OK;
                const char *reason = NULL;
                int error = 0;

                if (index >= j->n || j->got[index])
                        continue;
                j->got[index] = true;
                if (e[0])
                        parse_file_error(e, &status, &error, &reason);
                deliver(c, j->idx[index], status, error, reason, size, hex[0] ? hex : NULL);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static void job_done(BusClient *c, BusJob *j)
{
        if (j->finished)
                return;
        j->finished = true;
        if (j->in_flight) {
                j->in_flight = false;
                c->in_flight--;
        }
        /* Inputs without a result (the job was cancelled under us, e.g. fhashd stopping). */
        for (size_t k = 0; k < j->n; k++)
                if (!j->got[k]) {
                        j->got[k] = true;
                        deliver(c, j->idx[k], RUN_CANCELLED, -ECANCELED, NULL, 0, NULL);
                }
}

static int handle_signal_for(BusClient *c, sd_bus_message *m)
{
        const char *path;
        BusJob *j;
        int r;

        if (!sd_bus_message_has_signature(m, "oa(ustss)") && !sd_bus_message_has_signature(m, "osuu"))
                return 0;
        r = sd_bus_message_read(m, "o", &path);
        if (r < 0)
                return r;
        j = job_by_path(c, path);
        if (!j) {
                /* The reply that names this job is still on its way: keep the signal for later. */
                sd_bus_message **np = reallocarray(c->pending, c->n_pending + 1, sizeof(sd_bus_message *));
                if (!np)
                        return -ENOMEM;
                c->pending = np;
                c->pending[c->n_pending++] = sd_bus_message_ref(m);
                return 0;
        }
        if (sd_bus_message_is_signal(m, FHASH_MANAGER_INTERFACE, "FilesHashed"))
                return handle_files_hashed(c, j, m);
        job_done(c, j);
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusClient *c = userdata;
        int r;

        if (!streq_ptr(sd_bus_message_get_sender(m), c->daemon))
                return 0;
        r = handle_signal_for(c, m);
        if (r < 0 && c->error == 0)
                c->error = r;
        return 0;
}

static int on_properties(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusClient *c = userdata;
        const char *iface, *key;
        BusJob *j;

        if (!streq_ptr(sd_bus_message_get_sender(m), c->daemon))
                return 0;
        j = job_by_path(c, sd_bus_message_get_path(m));
        if (!j || sd_bus_message_read(m, "s", &iface) < 0 || !streq(iface, FHASH_JOB_INTERFACE))
                return 0;
        if (sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}") < 0)
                return 0;
        while (sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv") > 0) {
                if (sd_bus_message_read(m, "s", &key) < 0)
                        return 0;
                if (streq(key, "BytesDone")) {
                        if (sd_bus_message_read(m, "v", "t", &j->bytes_done) < 0)
                                return 0;
                } else if (sd_bus_message_skip(m, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(m) < 0)
                        return 0;
        }
        return 0;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusClient *c = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        if (streq(name, FHASH_BUS_NAME) && !streq(new, c->daemon ?: "")) {
                if (c->error == 0)
                        c->error = -ECONNRESET;
                sd_bus_error_set(c->ret_error, FHASH_ERROR_PREFIX "Gone", "fhashd went away while hashing");
        }
        return 0;
}

static void replay_pending(BusClient *c)
{
        size_t k = 0;

        for (size_t i = 0; i < c->n_pending; i++) {
                sd_bus_message *m = c->pending[i];
                const char *path;

                if (sd_bus_message_rewind(m, true) < 0 || sd_bus_message_read(m, "o", &path) < 0 ||
                    !job_by_path(c, path)) {
                        c->pending[k++] = m;
                        continue;
                }
                (void)sd_bus_message_rewind(m, true);
                (void)handle_signal_for(c, m);
                sd_bus_message_unref(m);
        }
        c->n_pending = k;
}

static int submit(BusClient *c, BusJob *j);

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusJob *j = userdata;
        BusClient *c = j->client;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *path;
        int r;

        j->call = sd_bus_slot_unref(j->call);
        if (e) {
                if (sd_bus_error_has_name(e, FHASH_ERROR_BUSY)) {
                        /* Over our quota: try again once one of our jobs has ended. */
                        j->in_flight = false;
                        c->in_flight--;
                        j->retry = true;
                        if (c->in_flight == 0)
                                c->retry_at = progress_now_usec() + 200000;
                        return 0;
                }
                for (size_t k = 0; k < j->n; k++)
                        j->got[k] = true, deliver(c, j->idx[k], RUN_ERROR, -sd_bus_error_get_errno(e),
                                                  e->message ?: e->name, 0, NULL);
                j->finished = true;
                j->in_flight = false;
                c->in_flight--;
                return 0;
        }
        r = sd_bus_message_read(m, "o", &path);
        if (r >= 0) {
                j->path = strdup(path);
                if (!j->path)
                        r = -ENOMEM;
        }
        if (r < 0) {
                if (c->error == 0)
                        c->error = r;
                return 0;
        }
        replay_pending(c);
        return 0;
}

static int open_input(const RunItem *item, int *ret_fd, uint64_t *ret_size)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (streq(item->path, "-"))
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(item->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* As sha256sum: a directory fails here with "Is a directory", not in the daemon. */
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        *ret_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Opens the job's files and sends its HashFds. Files that fail to open are answered right here. */
static int submit(BusClient *c, BusJob *j)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int fds[FHASH_MAX_FDS_PER_CALL];
        size_t sent[FHASH_MAX_FDS_PER_CALL];
        size_t n = 0;
        bool any_expected = false, names_utf8 = true, any_stream = false;
        int r;

        j->retry = false;
        for (size_t k = 0; k < j->n; k++) {
                const RunItem *it = &c->items[j->idx[k]];
                uint64_t size = 0;
                int fd = -EBADF;

                if (j->got[k])
                        continue;
                if (it->error < 0) {
                        j->got[k] = true;
                        deliver(c, j->idx[k], RUN_ERROR, it->error, NULL, 0, NULL);
                        continue;
                }
                r = open_input(it, &fd, &size);
                if (r < 0) {
                        j->got[k] = true;
                        deliver(c, j->idx[k], RUN_ERROR, r, NULL, 0, NULL);
                        continue;
                }
                if (it->expected)
                        any_expected = true;
                if (!output_is_utf8(it->name))
                        names_utf8 = false;
                if (size == UINT64_MAX)
                        any_stream = true;
                fds[n] = fd;
                sent[n++] = k;
        }
        if (n == 0) {
                j->finished = true;
                return 0;
        }

        /* The daemon numbers results by position in the call: keep only what was sent. */
        for (size_t i = 0; i < n; i++) {
                size_t k = sent[i];
                size_t item = j->idx[k];
                j->idx[i] = item;
                j->got[i] = false;
        }
        j->n = n;

        r = sd_bus_message_new_method_call(c->bus, &m, FHASH_BUS_NAME, FHASH_MANAGER_PATH,
                                           FHASH_MANAGER_INTERFACE, "HashFds");
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "h");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "h", fds[i]); /* sd-bus dups it */
        for (size_t i = 0; i < n; i++)
                safe_close(fds[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "s", output_algo_name(c->items[j->idx[0]].algo));
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
        /* Names are only labels for jobs and GetResults (results are matched by index), and D-Bus
         * strings must be UTF-8: a batch with a name that is not goes without labels. */
        if (r >= 0 && names_utf8) {
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "names");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "as");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "s");
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = sd_bus_message_append(m, "s", c->items[j->idx[i]].name);
                for (int close = 0; r >= 0 && close < 3; close++)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0 && any_expected) {
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "expected");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "as");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "s");
                for (size_t i = 0; r >= 0 && i < n; i++)
                        r = sd_bus_message_append(m, "s", c->items[j->idx[i]].expected ?: "");
                for (int close = 0; r >= 0 && close < 3; close++)
                        r = sd_bus_message_close_container(m);
        }
        /* fhashd hashes a pipe or device only under an explicit size cap; the user asked for this
         * stream (e.g. '-'), so the cap is "no limit" as sha256sum has none. */
        if (r >= 0 && any_stream)
                r = sd_bus_message_append(m, "{sv}", "max-size", "t", UINT64_MAX);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_call_async(c->bus, &j->call, m, on_reply, j, 0);
        if (r < 0)
                return r;
        j->in_flight = true;
        c->in_flight++;
        return 0;
}

/* Cuts the items into jobs: at most 16 inputs each, one algorithm each. */
static int make_jobs(BusClient *c)
{
        c->jobs = calloc(MAX(c->n_items, (size_t)1), sizeof(*c->jobs));
        if (!c->jobs)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_items; i++) {
                BusJob *j = c->n_jobs > 0 ? &c->jobs[c->n_jobs - 1] : NULL;

                if (!j || j->n == FHASH_MAX_FDS_PER_CALL || c->items[j->idx[0]].algo != c->items[i].algo) {
                        j = &c->jobs[c->n_jobs++];
                        j->client = c;
                }
                j->idx[j->n++] = i;
        }
        return 0;
}

static void draw_progress(BusClient *c, Progress *p)
{
        ProgressState s = { .bytes_done = c->bytes_finished, .bytes_total = c->bytes_total,
                            .files_done = c->files_finished, .files_total = c->n_items };

        if (!p || !p->enabled)
                return;
        for (size_t i = 0; i < c->next_job; i++)
                if (c->jobs[i].in_flight)
                        s.bytes_done += c->jobs[i].bytes_done;
        progress_update(p, &s);
}

static void client_free(BusClient *c)
{
        for (size_t i = 0; i < c->n_jobs; i++) {
                sd_bus_slot_unref(c->jobs[i].call);
                free(c->jobs[i].path);
        }
        free(c->jobs);
        for (size_t i = 0; i < c->n_pending; i++)
                sd_bus_message_unref(c->pending[i]);
        free(c->pending);
        if (c->messages)
                for (size_t i = 0; i < c->n_items; i++)
                        free(c->messages[i]);
        free(c->messages);
        run_order_deinit(&c->order);
}

/* bus_client_run() once c->order is set up; c is the caller's to free, whatever this returns. */
static int client_run(BusClient *c, Progress *progress)
{
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *s_sig = NULL, *s_props = NULL, *s_owner = NULL;
        sd_bus *bus = c->bus;
        const RunItem *items = c->items;
        size_t n = c->n_items;
        int r;

        c->messages = calloc(MAX(n, (size_t)1), sizeof(char *));
        if (!c->messages)
                return -ENOMEM;
        r = make_jobs(c);
        if (r < 0)
                return r;

        {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                r = sd_bus_get_name_creds(bus, FHASH_BUS_NAME, SD_BUS_CREDS_UNIQUE_NAME, &creds);
                if (r < 0)
                        return r;
                r = sd_bus_creds_get_unique_name(creds, &c->daemon);
                if (r < 0)
                        return r;
                c->daemon = strdupa(c->daemon);
        }

        /* Matches first (synchronously acknowledged by the bus), calls after: see bus-client.h. */
        r = sd_bus_match_signal(bus, &s_owner, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed, c);
        if (r >= 0)
                r = sd_bus_match_signal(bus, &s_sig, c->daemon, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, NULL,
                                        on_signal, c);
        if (r >= 0 && progress && progress->enabled)
                r = sd_bus_match_signal(bus, &s_props, c->daemon, NULL, "org.freedesktop.DBus.Properties",
                                        "PropertiesChanged", on_properties, c);
        if (r < 0)
                return r;

        if (progress && progress->enabled)
                for (size_t i = 0; i < n; i++) {
                        struct stat st;
                        if (!streq(items[i].path, "-") && stat(items[i].path, &st) >= 0 && S_ISREG(st.st_mode))
                                c->bytes_total += (uint64_t)st.st_size;
                }

        while (c->order.next < n) {
                if (c->error < 0)
                        return c->error;

                /* Retries first (they were refused as Busy), then new jobs, within the window. */
                for (size_t i = 0; i < c->next_job && c->in_flight < BUS_CLIENT_JOBS_IN_FLIGHT; i++)
                        if (c->jobs[i].retry && progress_now_usec() >= c->retry_at) {
                                r = submit(c, &c->jobs[i]);
                                if (r < 0)
                                        return r;
                        }
                while (c->next_job < c->n_jobs && c->in_flight < BUS_CLIENT_JOBS_IN_FLIGHT) {
                        r = submit(c, &c->jobs[c->next_job++]);
                        if (r < 0)
                                return r;
                }

                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                draw_progress(c, progress);
                r = sd_bus_wait(bus, 100000);
                if (r < 0 && r != -EINTR)
                        return r;
        }
        progress_clear(progress);
        return 0;
}

int bus_client_run(sd_bus *bus, const RunItem *items, size_t n, RunResultFn fn, void *userdata,
                   Progress *progress, sd_bus_error *error)
{
        BusClient c = { .bus = bus, .items = items, .n_items = n, .ret_error = error };
        int r;

        r = run_order_init(&c.order, items, n, fn, userdata, progress);
        if (r < 0)
                return r;
        /* Freed here rather than by _cleanup_: clang-tidy 14 and cppcheck 2.10 do not model cleanup
         * attributes, and client_run() allocates on paths with many early returns. By now its signal
         * matches, which point at c, are gone. */
        r = client_run(&c, progress);
        client_free(&c);
        return r;
}

/* The object path of a job given as a path or an id; one that is not a valid path is InvalidArgs.
 * Its users free it by hand, not by _cleanup_: clang-tidy 14 does not see cleanup attributes and
 * reports a leak on every early return. */
static int job_path(const char *job, char **ret, sd_bus_error *error)
{
        char *path;

        if (job[0] == '/')
                path = strdup(job);
        else if (asprintf(&path, "%s/%s", FHASH_JOB_PATH_PREFIX, job) < 0)
                path = NULL;
        if (!path)
                return -ENOMEM;
        if (!sd_bus_object_path_is_valid(path)) {
                free(path);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "'%s' is not a job", job);
        }
        *ret = path;
        return 0;
}

int bus_client_status(sd_bus *bus, FILE *f, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *key;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Properties",
                               "GetAll", error, &reply, "s", FHASH_MANAGER_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                const char *contents;
                char type;

                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(reply, &type, &contents);
                if (r < 0)
                        return r;
                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_VARIANT, contents);
                if (r < 0)
                        return r;
                fprintf(f, "%s: ", key);
                if (streq(contents, "s")) {
                        const char *s;
                        r = sd_bus_message_read(reply, "s", &s);
                        fprintf(f, "%s", s);
                } else if (streq(contents, "u")) {
                        uint32_t u;
                        r = sd_bus_message_read(reply, "u", &u);
                        fprintf(f, "%" PRIu32, u);
                } else if (streq(contents, "t")) {
                        uint64_t t;
                        r = sd_bus_message_read(reply, "t", &t);
                        fprintf(f, "%" PRIu64, t);
                } else if (streq(contents, "as")) {
                        const char *s;
                        bool first = true;
                        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "s");
                        while (r >= 0 && (r = sd_bus_message_read(reply, "s", &s)) > 0) {
                                fprintf(f, "%s%s", first ? "" : " ", s);
                                first = false;
                        }
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                } else
                        r = sd_bus_message_skip(reply, contents);
                if (r < 0)
                        return r;
                fputc('\n', f);
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        return r;
}

typedef struct JobProps {
        const char *state, *algorithm;
        uint32_t files_total, files_done;
        uint64_t bytes_total, bytes_done, rate;
} JobProps;

static int job_props(sd_bus *bus, const char *path, sd_bus_message **reply, JobProps *p, sd_bus_error *error)
{
        const char *key;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll", error,
                               reply, "s", FHASH_JOB_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(*reply, SD_BUS_TYPE_ARRAY, "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(*reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                r = sd_bus_message_read(*reply, "s", &key);
                if (r < 0)
                        break;
                if (streq(key, "State"))
                        r = sd_bus_message_read(*reply, "v", "s", &p->state);
                else if (streq(key, "Algorithm"))
                        r = sd_bus_message_read(*reply, "v", "s", &p->algorithm);
                else if (streq(key, "FilesTotal"))
                        r = sd_bus_message_read(*reply, "v", "u", &p->files_total);
                else if (streq(key, "FilesDone"))
                        r = sd_bus_message_read(*reply, "v", "u", &p->files_done);
                else if (streq(key, "BytesTotal"))
                        r = sd_bus_message_read(*reply, "v", "t", &p->bytes_total);
                else if (streq(key, "BytesDone"))
                        r = sd_bus_message_read(*reply, "v", "t", &p->bytes_done);
                else if (streq(key, "Rate"))
                        r = sd_bus_message_read(*reply, "v", "t", &p->rate);
                else
                        r = sd_bus_message_skip(*reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(*reply);
        }
        return r < 0 ? r : 0;
}

int bus_client_list_jobs(sd_bus *bus, FILE *f, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "ListJobs", error,
                               &reply, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "o");
        if (r < 0)
                return r;
        fprintf(f, "%-28s %-10s %-9s %13s %23s\n", "JOB", "STATE", "ALGORITHM", "FILES", "BYTES");
        while ((r = sd_bus_message_read(reply, "o", &path)) > 0) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *props = NULL;
                JobProps p = { .state = "?", .algorithm = "?" };
                const char *id = strrchr(path, '/');

                /* A job may vanish between ListJobs and GetAll (its linger time ended): skip it. */
                if (job_props(bus, path, &props, &p, NULL) < 0)
                        continue;
                fprintf(f, "%-28s %-10s %-9s %6" PRIu32 "/%-6" PRIu32 " %11" PRIu64 "/%-11" PRIu64 "\n",
                        id ? id + 1 : path, p.state, p.algorithm, p.files_done, p.files_total, p.bytes_done,
                        p.bytes_total);
        }
        return r;
}

int bus_client_cancel(sd_bus *bus, const char *job, sd_bus_error *error)
{
        char *path = NULL;
        int r;

        r = job_path(job, &path, error);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, FHASH_BUS_NAME, path, FHASH_JOB_INTERFACE, "Cancel", error, NULL, NULL);
        free(path);
        return r;
}

static int watch_path(sd_bus *bus, const char *path, Progress *progress, FILE *f, sd_bus_error *error)
{
        int r;

        /* Polling GetAll 4 times a second is what the daemon rate-limits its PropertiesChanged to
         * anyway, and it also works for a job whose signals go to another connection of ours. */
        for (;;) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                JobProps p = {};

                r = job_props(bus, path, &reply, &p, error);
                if (r < 0)
                        return r;
                progress_update(progress, &(ProgressState){ .bytes_done = p.bytes_done, .bytes_total = p.bytes_total,
                                                            .files_done = p.files_done,
                                                            .files_total = p.files_total,
                                                            .rate = (double)p.rate });
                if (p.state && !streq(p.state, "queued") && !streq(p.state, "running")) {
                        progress_clear(progress);
                        fprintf(f, "%s: %s, %" PRIu32 "/%" PRIu32 " files, %" PRIu64 " bytes\n", path, p.state,
                                p.files_done, p.files_total, p.bytes_done);
                        return streq(p.state, "done") ? 0 : 1;
                }
                usleep(250000);
        }
}

int bus_client_watch(sd_bus *bus, const char *job, Progress *progress, FILE *f, sd_bus_error *error)
{
        char *path = NULL;
        int r;

        r = job_path(job, &path, error);
        if (r < 0)
                return r;
        r = watch_path(bus, path, progress, f, error);
        free(path);
        return r;
}
