/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/bus-client.h"
#include "fhash/fhash-dbus.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "protocol/bus.h"
#include "protocol/errors.h"


int bus_client_open_direct(sd_bus **bus)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *direct = NULL;
        int fd, r;

        r = sd_bus_call_method(*bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "OpenConnection",
                               &error, &reply, "a{sv}", 0);
        if (r < 0)
                return 0;
        r = sd_bus_message_read_basic(reply, SD_BUS_TYPE_UNIX_FD, &fd);
        if (r <= 0)
                return 0;
        /* The message owns fd: the connection gets its own copy. */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return 0;
        r = sd_bus_new(&direct);
        if (r >= 0)
                r = sd_bus_set_fd(direct, fd, fd);
        if (r < 0) {
                (void)close(fd);
                return 0;
        }
        r = sd_bus_negotiate_fds(direct, true);
        if (r >= 0)
                r = sd_bus_start(direct);
        if (r < 0)
                return 0;
        /* fd passing is what the connection is for: a server that did not agree to it is no use. */
        if (sd_bus_can_send(direct, SD_BUS_TYPE_UNIX_FD) <= 0)
                return 0;
        sd_bus_flush_close_unref(*bus);
        *bus = TAKE_PTR(direct);
        return 1;
}

/*
 * One run, seen from here: items are sent in order, up to FHASH_MAX_FDS_PER_CALL fds per call. With a
 * daemon that has open jobs, the first call is HashFds with "more" and the rest are AddFds calls to
 * that job, pipelined; the call that sends the job's last files says more=false (or a Close()
 * follows). A job holds one algorithm and at most FILES_PER_JOB files; then the next job starts. A
 * pipe or device goes alone into a job of its own, the only kind that gets "max-size". Results come
 * as (job, index): each reply says where its call's files start, and fills that job's index -> item
 * map.
 */

/* Files sent whose result has not come back: each is an fd fhashd holds open (against its
 * RLIMIT_NOFILE) until the file is hashed. Enough to keep its workers busy across our round trips,
 * and results come back in batches of up to 256. */
#define FILES_IN_FLIGHT 1024
/* With a daemon without open jobs (no "more"): one job per call, this many calls at once. */
#define LEGACY_CALLS_IN_FLIGHT 8
/* Files per open job (fhashd allows 2^20): what one job keeps in fhashd's memory, a result per file
 * until the job expires, stays moderate. */
#define FILES_PER_JOB 65536
/* A call refused as Busy (a per-uid quota) is sent again after one of our results came back, or
 * after this long. */
#define RETRY_USEC (200 * 1000ULL)
/* Busy without a pause this long: say so on stderr, once. */
#define BUSY_SAY_USEC (1000 * 1000ULL)
/* ... and give up after $FHASHCTL_BUSY_TIMEOUT seconds (0: never), by default this long. */
#define BUSY_TIMEOUT_DEFAULT_SEC 300u


/* What a job hashes with: items go to the same job only when these are equal. */
typedef struct JobKind {
        HashAlgo algo;
        uint32_t out_len;          /* RunItem.out_len: a "length" of its own, else 0 */
} JobKind;

static JobKind item_kind(const RunItem *it)
{
        return (JobKind){ .algo = it->algo, .out_len = it->out_len };
}

static bool kind_eq(JobKind a, JobKind b)
{
        return a.algo == b.algo && a.out_len == b.out_len;
}

typedef struct ClientJob {
        BusClient *client;
        struct ClientJob *next;    /* BusClient.jobs, newest first */
        char *path;                /* NULL until the HashFds reply names it */
        JobKind kind;
        size_t *items;             /* job index -> item (SIZE_MAX: no reply told it yet) */
        size_t n_items, n_alloc;
        size_t n_sent;             /* files sent to it, answered or not */
        unsigned calls;            /* calls to it without a reply */
        unsigned retries;          /* calls to it waiting to be sent again */
        bool open;                 /* made with "more" and not closed by us */
        bool want_close;           /* nothing more for it: close once its calls are answered */
        bool finished;             /* JobFinished seen */
        uint64_t bytes_done;       /* its BytesDone property */
        uint64_t bytes_delivered;  /* sizes of its results delivered so far */
} ClientJob;

typedef enum CallKind {
        CALL_HASH_FDS,  /* makes the job */
        CALL_ADD_FDS,
        CALL_CLOSE,
} CallKind;

typedef struct BusCall {
        BusClient *client;
        ClientJob *job;
        struct BusCall *next;                 /* BusClient.retry */
        CallKind kind;
        bool more;                            /* "more": the job stays open */
        bool stream;                          /* a pipe or device: "max-size" */
        size_t idx[FHASH_MAX_FDS_PER_CALL];   /* the item of each fd sent */
        size_t n;
        sd_bus_slot *slot;
} BusCall;

/* A result for an index that no reply has told us yet (fhashd sends none before the reply, but a
 * result must not get lost if one ever does). */
typedef struct Orphan {
        ClientJob *job;
        uint32_t index;
        RunStatus status;
        int error;
        char *reason;
        uint64_t size;
        char hex[HASH_SET_HEX_MAX];
} Orphan;

struct BusClient {
        sd_bus *bus;
        RunReadOptions read;
        RunOrder order;           /* the items pulled from the source; mark: sent, no result yet */
        size_t next_item;         /* first item neither sent nor answered here */
        size_t files_in_flight, window;
        unsigned calls_out;       /* calls without a reply */
        ClientJob *jobs;
        ClientJob *cur;           /* the open job the next files go to */
        BusCall *retry, **retry_tail;
        uint64_t retry_at;
        size_t results_seen, retry_results;
        uint64_t busy_since;      /* the first Busy answer since the last call fhashd took; 0: none */
        uint64_t busy_timeout;    /* usec, UINT64_MAX: wait for ever */
        bool busy_said;
        char busy_reason[256];
        bool legacy;              /* fhashd without open jobs: one job per call */
        bool probed;              /* fhashd accepted an open job: never fall back */
        bool stop;                /* our job was cancelled: so is the rest */
        sd_bus_message **pending; /* signals about a job whose reply has not been processed yet */
        size_t n_pending;
        Orphan *orphans;
        size_t n_orphans;
        uint64_t bytes_finished, bytes_total;
        size_t files_finished;
        int error;                /* fatal: stop and return it */
        sd_bus_error *ret_error;
        char *daemon;             /* unique name of fhashd: signals from anybody else are ignored */
        const char *dest;         /* FHASH_BUS_NAME on the bus; NULL on a direct connection */
        sd_bus_slot *s_sig, *s_props, *s_owner;  /* the matches, from bus_client_start() on */
        bool done;
};

static ClientJob *job_by_path(BusClient *c, const char *path)
{
        for (ClientJob *j = c->jobs; j; j = j->next)
                if (j->path && streq(j->path, path))
                        return j;
        return NULL;
}

static int client_job_new(BusClient *c, JobKind kind, ClientJob **ret)
{
        ClientJob *j = calloc(1, sizeof(*j));

        if (!j)
                return -ENOMEM;
        j->client = c;
        j->kind = kind;
        j->next = c->jobs;
        c->jobs = j;
        *ret = j;
        return 0;
}

static void deliver(BusClient *c, ClientJob *j, size_t item, RunStatus status, int error, const char *message,
                    uint64_t size, const char *hex)
{
        RunResult r = { .index = item, .status = status, .error = error, .size = size, .message = message };
        bool *in_flight;

        if (run_order_has(&c->order, item))
                return;
        in_flight = run_order_mark(&c->order, item);
        if (*in_flight) {
                *in_flight = false;
                c->files_in_flight--;
        }
        c->results_seen++;
        if (hex && strlen(hex) < sizeof(r.hex))
                strcpy(r.hex, hex);
        if (status == RUN_OK) {
                c->bytes_finished += size;
                if (j)
                        j->bytes_delivered += size;
        }
        c->files_finished++;
        run_order_put(&c->order, &r);
}

/* "org.fhash.Hasher1.Error.NotFound: No such file or directory" → status, -errno and the reason. */
static void parse_file_error(const char *e, RunStatus *ret_status, int *ret_errno, const char **ret_reason)
{
        const char *colon = strstr(e, ": ");
        size_t nl = colon ? (size_t)(colon - e) : strlen(e);

        *ret_reason = colon ? colon + 2 : e;
        *ret_status = RUN_ERROR;
        if (nl == strlen(FHASH_ERROR_MISMATCH) && strncmp(e, FHASH_ERROR_MISMATCH, nl) == 0)
                *ret_status = RUN_MISMATCH;
        else if (nl == strlen(FHASH_ERROR_CHANGED) && strncmp(e, FHASH_ERROR_CHANGED, nl) == 0)
                *ret_status = RUN_CHANGED;
        else if (nl == strlen(FHASH_ERROR_CANCELLED) && strncmp(e, FHASH_ERROR_CANCELLED, nl) == 0)
                *ret_status = RUN_CANCELLED;
        *ret_errno = fhash_error_to_errno(e, nl);
}

static int add_orphan(BusClient *c, ClientJob *j, uint32_t index, RunStatus status, int error, const char *reason,
                      uint64_t size, const char *hex)
{
        Orphan *o, *n = reallocarray(c->orphans, c->n_orphans + 1, sizeof(Orphan));

        if (!n)
                return -ENOMEM;
        c->orphans = n;
        o = &c->orphans[c->n_orphans];
        *o = (Orphan){ .job = j, .index = index, .status = status, .error = error, .size = size };
        if (reason) {
                o->reason = strdup(reason);
                if (!o->reason)
                        return -ENOMEM;
        }
        if (hex && strlen(hex) < sizeof(o->hex))
                strcpy(o->hex, hex);
        c->n_orphans++;
        return 0;
}

/* Delivers the orphans of j whose index is known now (or drops them all once j has finished). */
static void replay_orphans(BusClient *c, ClientJob *j)
{
        size_t k = 0;

        for (size_t i = 0; i < c->n_orphans; i++) {
                Orphan *o = &c->orphans[i];

                if (o->job == j && o->index < j->n_items && j->items[o->index] != SIZE_MAX)
                        deliver(c, j, j->items[o->index], o->status, o->error, o->reason, o->size,
                                o->hex[0] ? o->hex : NULL);
                else if (o->job != j || !j->finished) {
                        c->orphans[k++] = *o;
                        continue;
                }
                free(o->reason);
        }
        c->n_orphans = k;
}

static int handle_files_hashed(BusClient *c, ClientJob *j, sd_bus_message *m)
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

                if (e[0])
                        parse_file_error(e, &status, &error, &reason);
                if (index < j->n_items && j->items[index] != SIZE_MAX)
                        deliver(c, j, j->items[index], status, error, reason, size, hex[0] ? hex : NULL);
                else {
                        r = add_orphan(c, j, index, status, error, reason, size, hex[0] ? hex : NULL);
                        if (r < 0)
                                return r;
                }
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static void job_finished(BusClient *c, ClientJob *j, const char *result)
{
        if (j->finished)
                return;
        j->finished = true;
        j->open = false;
        if (c->cur == j)
                c->cur = NULL;
        /* Inputs without a result (the job was cancelled under us, e.g. fhashd stopping). */
        for (size_t k = 0; k < j->n_items; k++)
                if (j->items[k] != SIZE_MAX)
                        deliver(c, j, j->items[k], RUN_CANCELLED, -ECANCELED, NULL, 0, NULL);
        replay_orphans(c, j);
        /* Someone cancelled the job this run feeds (fhashctl cancel, fhashd stopping): the files
         * not sent yet are cancelled with it rather than going to a new job. */
        if (!c->legacy && streq(result, "cancelled"))
                c->stop = true;
}

static int handle_signal_for(BusClient *c, sd_bus_message *m)
{
        const char *path, *result = "";
        ClientJob *j;
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
        r = sd_bus_message_read(m, "s", &result);
        if (r < 0)
                return r;
        job_finished(c, j, result);
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
        ClientJob *j;

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

static void daemon_gone(BusClient *c)
{
        if (c->error == 0)
                c->error = -ECONNRESET;
        if (!sd_bus_error_is_set(c->ret_error))
                sd_bus_error_set(c->ret_error, FHASH_ERROR_PREFIX "Gone", "fhashd went away while hashing");
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusClient *c = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        if (streq(name, FHASH_BUS_NAME) && !streq(new, c->daemon ?: ""))
                daemon_gone(c);
        return 0;
}

/* The direct connection closed under us: fhashd exited. */
static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        daemon_gone(userdata);
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

static int open_input(const RunItem *item, int *ret_fd, uint64_t *ret_size)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (item->has_fd || streq(item->path, "-"))
                fd = fcntl(item->has_fd ? item->fd : STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
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

/* Appends {"key": as} with the n strings get(c, call, k). */
static int append_strv_option(sd_bus_message *m, const char *key, const BusCall *call,
                              const char *(*get)(const BusClient *c, size_t item))
{
        int r;

        r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", key);
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "as");
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "s");
        for (size_t k = 0; r >= 0 && k < call->n; k++)
                r = sd_bus_message_append(m, "s", get(call->client, call->idx[k]));
        for (int close = 0; r >= 0 && close < 3; close++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* An item pulled and not delivered yet: every item sent, to be sent again or being sent is one. */
static const RunItem *item_at(const BusClient *c, size_t item)
{
        return run_order_item(&c->order, item);
}

/* Item i, pulling the source up to it: NULL once the source has ended before it (or failed: then
 * c->error says why). The pointer is good until the next pull. */
static const RunItem *peek(BusClient *c, size_t i)
{
        while (c->order.n_items <= i) {
                size_t k;
                int r = run_order_pull(&c->order, &k);

                if (r <= 0) {
                        if (r < 0 && c->error == 0)
                                c->error = r;
                        return NULL;
                }
        }
        return item_at(c, i);
}

/* Answers an item that is not hashed (a walk error or a skip note) here. */
static bool deliver_preset(BusClient *c, size_t item)
{
        RunResult pre;

        if (!run_item_preset(item_at(c, item), item, &pre))
                return false;
        deliver(c, NULL, item, pre.status, pre.error, NULL, 0, NULL);
        return true;
}

static const char *item_name(const BusClient *c, size_t item)
{
        return item_at(c, item)->name;
}

static const char *item_expected(const BusClient *c, size_t item)
{
        return item_at(c, item)->expected ?: "";
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* --length, --keyed, --derive-key as HashFds options. The message holding the key is erased when
 * freed. */
static int append_params(sd_bus_message *m, const HashParams *p)
{
        int r = 0;

        if (p->out_len)
                r = sd_bus_message_append(m, "{sv}", "length", "u", p->out_len * 8);
        if (r >= 0 && p->context)
                r = sd_bus_message_append(m, "{sv}", "derive-key", "s", p->context);
        if (r >= 0 && p->keyed) {
                r = sd_bus_message_sensitive(m);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "key");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', p->key, HASH_KEY_SIZE);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        return r;
}

/* Sends call with fds[] (one per call->idx, closed here whatever happens). */
static int call_send(BusClient *c, BusCall *call, int fds[])
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        ClientJob *j = call->job;
        bool names_utf8 = true, any_expected = false;
        int r;

        for (size_t k = 0; k < call->n; k++) {
                const RunItem *it = item_at(c, call->idx[k]);

                if (!utf8_is_valid(it->name) || strlen(it->name) > FHASH_NAME_MAX)
                        names_utf8 = false;
                if (it->expected)
                        any_expected = true;
        }

        if (call->kind == CALL_HASH_FDS)
                r = sd_bus_message_new_method_call(c->bus, &m, c->dest, FHASH_MANAGER_PATH,
                                                   FHASH_MANAGER_INTERFACE, "HashFds");
        else
                r = sd_bus_message_new_method_call(c->bus, &m, c->dest, j->path, FHASH_JOB_INTERFACE,
                                                   call->kind == CALL_ADD_FDS ? "AddFds" : "Close");
        if (r >= 0 && call->kind != CALL_CLOSE) {
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "h");
                for (size_t k = 0; r >= 0 && k < call->n; k++)
                        r = sd_bus_message_append(m, "h", fds[k]); /* sd-bus dups it */
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0 && call->kind == CALL_HASH_FDS) {
                        char names[HASH_SET_NAMES_MAX];

                        r = sd_bus_message_append(m, "s",
                                                  c->read.algos && c->read.algos->n > 1
                                                          ? hash_algo_set_format(c->read.algos, names, sizeof(names))
                                                          : hash_algo_to_string(j->kind.algo));
                }
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
                /* Names are only labels for jobs and GetResults (results are matched by index), and
                 * D-Bus strings must be UTF-8 (fhashd takes at most FHASH_NAME_MAX bytes): a call with
                 * a name that is not goes without labels. */
                if (r >= 0 && names_utf8)
                        r = append_strv_option(m, "names", call, item_name);
                if (r >= 0 && any_expected)
                        r = append_strv_option(m, "expected", call, item_expected);
                /* fhashd hashes a pipe or device only under an explicit size cap; the user asked for
                 * this stream (e.g. '-'), so the cap is "no limit" as sha256sum has none. */
                if (r >= 0 && call->kind == CALL_HASH_FDS && (call->stream || c->read.max_size > 0))
                        r = sd_bus_message_append(m, "{sv}", "max-size", "t",
                                                  c->read.max_size > 0 ? c->read.max_size : UINT64_MAX);
                if (r >= 0 && call->kind == CALL_HASH_FDS && c->read.dontcache)
                        r = sd_bus_message_append(m, "{sv}", "dontcache", "b", 1);
                if (r >= 0 && call->kind == CALL_HASH_FDS && c->read.strategy != ENGINE_READ_AUTO)
                        r = sd_bus_message_append(m, "{sv}", "strategy", "s",
                                                  engine_read_strategy_to_string(c->read.strategy));
                if (r >= 0 && call->kind == CALL_HASH_FDS && j->kind.out_len)
                        r = sd_bus_message_append(m, "{sv}", "length", "u", j->kind.out_len * 8);
                else if (r >= 0 && call->kind == CALL_HASH_FDS && c->read.params)
                        r = append_params(m, c->read.params);
                if (r >= 0 && call->more)
                        r = sd_bus_message_append(m, "{sv}", "more", "b", 1);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        for (size_t k = 0; fds && k < call->n; k++)
                fds[k] = safe_close(fds[k]);
        if (r >= 0)
                r = sd_bus_call_async(c->bus, &call->slot, m, on_reply, call, 0);
        if (r < 0)
                return r;

        for (size_t k = 0; k < call->n; k++) {
                bool *in_flight = run_order_mark(&c->order, call->idx[k]);

                if (in_flight && !*in_flight) {
                        *in_flight = true;
                        c->files_in_flight++;
                }
        }
        j->n_sent += call->n;
        j->calls++;
        c->calls_out++;
        return 0;
}

static void call_free(BusCall *call)
{
        if (!call)
                return;
        sd_bus_slot_unref(call->slot);
        free(call);
}

/* Closes j once nothing more is coming for it and all its calls are answered. */
static int job_try_close(BusClient *c, ClientJob *j)
{
        BusCall *call;
        int r;

        if (!j->open || !j->want_close || !j->path || j->calls > 0 || j->retries > 0 || j->finished)
                return 0;
        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        *call = (BusCall){ .client = c, .job = j, .kind = CALL_CLOSE };
        r = call_send(c, call, NULL);
        if (r < 0) {
                call_free(call);
                return r;
        }
        j->open = false;
        return 0;
}

/* Nothing more goes to j. */
static int job_stop_sending(BusClient *c, ClientJob *j)
{
        if (c->cur == j)
                c->cur = NULL;
        if (!j->open)
                return 0;
        j->want_close = true;
        return job_try_close(c, j);
}

/* A call that opened or will open no job content: its HashFds failed or had nothing to send (there is
 * no job: nothing to send to or close), or its closing AddFds did (Close() closes the job, once the
 * other calls are answered). */
static int call_dropped(BusClient *c, ClientJob *j, const BusCall *call)
{
        if (call->kind == CALL_HASH_FDS) {
                j->open = false;
                if (c->cur == j)
                        c->cur = NULL;
                return 0;
        }
        if (call->more)
                return 0;
        j->open = true;
        return job_stop_sending(c, j);
}

/* fhashd answered Busy (reason is its message): waited on, said after a second, given up on after
 * busy_timeout. */
static void note_busy(BusClient *c, const char *reason)
{
        if (c->busy_since == 0)
                c->busy_since = now_usec();
        (void)snprintf(c->busy_reason, sizeof(c->busy_reason), "%s", reason ? reason : "Busy");
}

/* Before a call is sent again: false (with c->error set) once fhashd has been busy too long. */
static bool busy_wait_ok(BusClient *c)
{
        uint64_t waited;

        if (c->busy_since == 0)
                return true;
        waited = now_usec() - c->busy_since;
        if (!c->busy_said && waited >= BUSY_SAY_USEC) {
                if (c->read.busy_notice)
                        c->read.busy_notice(c->busy_reason, c->busy_timeout != UINT64_MAX, c->read.busy_userdata);
                c->busy_said = true;
        }
        if (waited < c->busy_timeout)
                return true;
        c->error = sd_bus_error_setf(c->ret_error, FHASH_ERROR_BUSY,
                                     "fhashd has been busy for %" PRIu64 " s, giving up (FHASHCTL_BUSY_TIMEOUT): %s",
                                     waited / 1000000, c->busy_reason);
        return false;
}

static void retry_later(BusClient *c, BusCall *call, bool at_once)
{
        call->slot = sd_bus_slot_unref(call->slot);
        call->next = NULL;
        if (at_once) {
                /* First in line, and the wait is over. */
                call->next = c->retry;
                if (!c->retry)
                        c->retry_tail = &call->next;
                c->retry = call;
                c->retry_at = 0;
        } else {
                *c->retry_tail = call;
                c->retry_tail = &call->next;
                c->retry_at = now_usec() + RETRY_USEC;
                c->retry_results = c->results_seen;
        }
        call->job->retries++;
}

/* The items of call are not in fhashd: they count as in flight no more. */
static void call_unsend(BusClient *c, BusCall *call)
{
        for (size_t k = 0; k < call->n; k++) {
                bool *in_flight = run_order_mark(&c->order, call->idx[k]);

                if (in_flight && *in_flight) {
                        *in_flight = false;
                        c->files_in_flight--;
                }
        }
        call->job->n_sent -= call->n;
}

/* fhashd without open jobs: it refused "more" (InvalidArgs, an unknown option) or has no AddFds.
 * From now on each call is a job of its own, as fhashctl did before open jobs. */
static int fall_back(BusClient *c, BusCall *call)
{
        ClientJob *old = call->job;
        int r;

        c->legacy = true;
        c->cur = NULL;
        if (call->kind == CALL_ADD_FDS) {
                /* The job it was for stays open until we disconnect; its earlier files still come. */
                r = client_job_new(c, old->kind, &call->job);
                if (r < 0)
                        return r;
        }
        call->job->open = false;
        call->kind = CALL_HASH_FDS;
        call->more = false;
        retry_later(c, call, true);
        return 0;
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusCall *call = userdata;
        BusClient *c = call->client;
        ClientJob *j = call->job;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        uint32_t first = 0;
        int r = 0;

        call->slot = sd_bus_slot_unref(call->slot);
        c->calls_out--;
        j->calls--;

        if (call->kind == CALL_CLOSE) {
                /* Closed, or already gone (finished, cancelled): either way nothing is left to do. */
                call_free(call);
                return 0;
        }
        if (e) {
                call_unsend(c, call);
                /* Over a per-uid quota of fhashd, or dbus-daemon's queue of messages for fhashd is
                 * full (its max_outgoing_unix_fds is 64 on the system bus): again once some of our
                 * files are done. fhashd's own LimitsExceeded (a job's input limit) is final. */
                if (sd_bus_error_has_name(e, FHASH_ERROR_BUSY) ||
                    (sd_bus_error_has_name(e, SD_BUS_ERROR_LIMITS_EXCEEDED) &&
                     streq_ptr(sd_bus_message_get_sender(m), "org.freedesktop.DBus"))) {
                        note_busy(c, e->message);
                        retry_later(c, call, false);
                        return 0;
                }
                if (!c->probed && !c->legacy &&
                    ((call->kind == CALL_HASH_FDS && call->more && sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS)) ||
                     (call->kind == CALL_ADD_FDS && sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_METHOD)))) {
                        r = fall_back(c, call);
                        goto finish;
                }
                for (size_t k = 0; k < call->n; k++)
                        deliver(c, j, call->idx[k], RUN_ERROR, -sd_bus_error_get_errno(e), e->message ?: e->name, 0,
                                NULL);
                r = call_dropped(c, j, call);
                call_free(call);
                goto finish;
        }

        /* fhashd took a call: whatever Busy it said is over. */
        c->busy_since = 0;
        c->busy_said = false;
        if (call->kind == CALL_HASH_FDS) {
                const char *path;

                r = sd_bus_message_read(m, "o", &path);
                if (r >= 0) {
                        j->path = strdup(path);
                        if (!j->path)
                                r = -ENOMEM;
                }
                if (r >= 0 && call->more)
                        c->probed = true;
        } else
                r = sd_bus_message_read(m, "u", &first);
        if (r >= 0 && (size_t)first + call->n > j->n_alloc) {
                size_t na = MAX((size_t)first + call->n, j->n_alloc * 2);
                size_t *ni = reallocarray(j->items, na, sizeof(size_t));

                if (!ni)
                        r = -ENOMEM;
                else {
                        for (size_t k = j->n_alloc; k < na; k++)
                                ni[k] = SIZE_MAX;
                        j->items = ni;
                        j->n_alloc = na;
                }
        }
        if (r >= 0) {
                for (size_t k = 0; k < call->n; k++)
                        j->items[first + k] = call->idx[k];
                j->n_items = MAX(j->n_items, (size_t)first + call->n);
                if (call->kind == CALL_HASH_FDS)
                        replay_pending(c);
                replay_orphans(c, j);
                r = job_try_close(c, j);
        }
        call_free(call);
finish:
        if (r < 0 && c->error == 0)
                c->error = r;
        return 0;
}

/* Sends a call refused earlier again, with the files opened anew. */
static int call_resend(BusClient *c, BusCall *call)
{
        ClientJob *j = call->job;
        int fds[FHASH_MAX_FDS_PER_CALL] = { [0 ... FHASH_MAX_FDS_PER_CALL - 1] = -EBADF };
        size_t n = 0;
        int r;

        j->retries--;
        for (size_t k = 0; k < call->n; k++) {
                size_t item = call->idx[k];
                uint64_t size;
                int fd = -EBADF;

                r = open_input(item_at(c, item), &fd, &size);
                if (r < 0) {
                        deliver(c, j, item, RUN_ERROR, r, NULL, 0, NULL);
                        continue;
                }
                fds[n] = fd;
                call->idx[n++] = item;
        }
        call->n = n;
        if (n == 0) {
                /* Every file failed to open: nothing to send. */
                r = call_dropped(c, j, call);
                call_free(call);
                return r;
        }
        r = call_send(c, call, fds);
        if (r < 0)
                call_free(call);
        return r;
}

/* A pipe or a device: a job of its own, the only kind that gets "max-size". */
static int send_stream(BusClient *c, size_t item, int fd)
{
        BusCall *call = calloc(1, sizeof(*call));
        int r;

        if (!call) {
                safe_close(fd);
                return -ENOMEM;
        }
        *call = (BusCall){ .client = c, .kind = CALL_HASH_FDS, .stream = true, .n = 1 };
        call->idx[0] = item;
        r = client_job_new(c, item_kind(item_at(c, item)), &call->job);
        if (r >= 0)
                r = call_send(c, call, &fd);
        else
                safe_close(fd);
        if (r < 0)
                call_free(call);
        return r;
}

/* Whether the next item could go to a job of kind that has had n_sent files (pulling it if need be). */
static bool next_fits(BusClient *c, JobKind kind, size_t n_sent)
{
        const RunItem *next = peek(c, c->next_item);

        return next && kind_eq(item_kind(next), kind) && n_sent < FILES_PER_JOB;
}

/* Sends the next call, or answers the next items here. Returns 1 if it has to wait for replies. */
static int send_next(BusClient *c)
{
        /* Pulling may move the items: only the algorithm (and length) of this one is kept. */
        JobKind kind = item_kind(item_at(c, c->next_item));
        ClientJob *j = c->cur;
        int fds[FHASH_MAX_FDS_PER_CALL] = { [0 ... FHASH_MAX_FDS_PER_CALL - 1] = -EBADF };
        BusCall *call;
        size_t room, n_sent;
        bool last;
        int r;

        if (deliver_preset(c, c->next_item)) {
                c->next_item++;
                return 0;
        }
        if (j && (j->finished || !j->open || !kind_eq(j->kind, kind) || j->n_sent >= FILES_PER_JOB)) {
                r = job_stop_sending(c, j);
                if (r < 0)
                        return r;
                j = NULL;
        }
        /* AddFds needs the job's path, from the HashFds reply. */
        if (j && !j->path)
                return 1;

        n_sent = j ? j->n_sent : 0;
        room = MIN((size_t)FHASH_MAX_FDS_PER_CALL, FILES_PER_JOB - n_sent);
        if (j && j->calls > 0) {
                /* The call that sends the job's last files closes it, so it waits until the job's
                 * other calls are answered: one of them may come back Busy and go again. */
                const RunItem *x;
                size_t left = 0;

                for (size_t i = c->next_item; left <= room && (x = peek(c, i)) && kind_eq(item_kind(x), kind); i++)
                        left++;
                if (c->error < 0)
                        return c->error;
                if (left <= room || n_sent + room >= FILES_PER_JOB)
                        return 1;
        }

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        *call = (BusCall){ .client = c };
        for (;;) {
                const RunItem *x = call->n < room ? peek(c, c->next_item) : NULL;
                uint64_t size = 0;
                int fd = -EBADF;

                if (!x || !kind_eq(item_kind(x), kind))
                        break;
                if (deliver_preset(c, c->next_item)) {
                        c->next_item++;
                        continue;
                }
                r = open_input(x, &fd, &size);
                if (r < 0) {
                        deliver(c, NULL, c->next_item++, RUN_ERROR, r, NULL, 0, NULL);
                        continue;
                }
                if (size == UINT64_MAX) {
                        r = send_stream(c, c->next_item++, fd);
                        if (r < 0)
                                goto fail;
                        continue;
                }
                c->bytes_total += size;
                fds[call->n] = fd;
                call->idx[call->n++] = c->next_item++;
        }
        if (c->error < 0) {
                r = c->error;
                goto fail;
        }
        last = c->legacy || !next_fits(c, kind, n_sent + call->n);
        if (c->error < 0) {
                r = c->error;
                goto fail;
        }
        if (call->n == 0) {
                call_free(call);
                /* Everything failed to open; if that was all the job was to get, close it. */
                if (j && last)
                        return job_stop_sending(c, j);
                return 0;
        }

        if (!j) {
                r = client_job_new(c, kind, &j);
                if (r < 0)
                        goto fail;
                call->kind = CALL_HASH_FDS;
        } else
                call->kind = CALL_ADD_FDS;
        call->job = j;
        /* A run of up to 16 files is one plain HashFds, as without open jobs. */
        call->more = !c->legacy && !(last && j->calls == 0);
        r = call_send(c, call, fds);
        if (r < 0) {
                call_free(call);
                return r;
        }
        j->open = call->more;
        c->cur = call->more ? j : NULL;
        if (call->more && last)
                return job_stop_sending(c, j);
        return 0;

fail:
        for (size_t k = 0; k < call->n; k++)
                safe_close(fds[k]);
        call_free(call);
        return r;
}

/* Our job was cancelled: everything not sent yet is cancelled too. */
static void cancel_rest(BusClient *c)
{
        while (c->retry) {
                BusCall *call = c->retry;

                c->retry = call->next;
                call->job->retries--;
                for (size_t k = 0; k < call->n; k++)
                        deliver(c, call->job, call->idx[k], RUN_CANCELLED, -ECANCELED, NULL, 0, NULL);
                call_free(call);
        }
        c->retry_tail = &c->retry;
        /* The rest of the source too, each said as if it had been sent: the output is the same as
         * when the whole list was known before the first call. */
        for (; peek(c, c->next_item); c->next_item++)
                if (!deliver_preset(c, c->next_item))
                        deliver(c, NULL, c->next_item, RUN_CANCELLED, -ECANCELED, NULL, 0, NULL);
}

/* Sends what the window allows. */
static int pump(BusClient *c)
{
        int r;

        for (;;) {
                size_t window = c->legacy ? (size_t)LEGACY_CALLS_IN_FLIGHT * FHASH_MAX_FDS_PER_CALL : c->window;

                if (c->error < 0)
                        return c->error;
                if (c->stop) {
                        cancel_rest(c);
                        return 0;
                }
                if (c->files_in_flight + FHASH_MAX_FDS_PER_CALL > window)
                        return 0;
                if (c->retry) {
                        BusCall *call = c->retry;

                        if (now_usec() < c->retry_at && c->results_seen == c->retry_results)
                                return 0;
                        if (!busy_wait_ok(c))
                                return c->error;
                        c->retry = call->next;
                        if (!c->retry)
                                c->retry_tail = &c->retry;
                        r = call_resend(c, call);
                        if (r < 0)
                                return r;
                        continue;
                }
                /* Results wait behind the oldest file not answered: bounded, as in-flight files are. */
                if (c->next_item - c->order.next >= RUN_MAX_PENDING)
                        return 0;
                if (!peek(c, c->next_item)) {
                        /* The source ended after items answered here (a walk's skipped entries,
                         * check's markers): the job the last call left open is closed now. */
                        if (c->error < 0 || !c->cur)
                                return c->error;
                        r = job_stop_sending(c, c->cur);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = send_next(c);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }
}

void bus_client_get_progress(BusClient *c, ProgressState *ret)
{
        ProgressState s = { .bytes_done = c->bytes_finished, .bytes_total = c->bytes_total,
                            .files_done = c->files_finished, .files_total = c->order.n_items,
                            .open_ended = !c->order.source_done };

        /* The jobs' BytesDone, where PropertiesChanged is watched (FHASH_HASH_PROGRESS). */
        for (ClientJob *j = c->jobs; j; j = j->next)
                if (!j->finished && j->bytes_done > j->bytes_delivered)
                        s.bytes_done += j->bytes_done - j->bytes_delivered;
        *ret = s;
}

static void client_free(BusClient *c)
{
        c->s_sig = sd_bus_slot_unref(c->s_sig);
        c->s_props = sd_bus_slot_unref(c->s_props);
        c->s_owner = sd_bus_slot_unref(c->s_owner);
        c->daemon = mfree(c->daemon);
        while (c->jobs) {
                ClientJob *j = c->jobs;

                c->jobs = j->next;
                free(j->path);
                free(j->items);
                free(j);
        }
        while (c->retry) {
                BusCall *call = c->retry;

                c->retry = call->next;
                call_free(call);
        }
        for (size_t i = 0; i < c->n_pending; i++)
                sd_bus_message_unref(c->pending[i]);
        free(c->pending);
        for (size_t i = 0; i < c->n_orphans; i++)
                free(c->orphans[i].reason);
        free(c->orphans);
        run_order_deinit(&c->order);
}

/* How many files may be in flight: FILES_IN_FLIGHT, unless our own fd limit is lower. Until
 * dbus-daemon has read them, the fds of queued calls are ours (sd-bus holds a dup in each message,
 * and the kernel counts fds in a socket against the sender's RLIMIT_NOFILE); the soft limit goes up
 * to the hard one first, as nothing here uses select(). */
static size_t files_window(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return FILES_IN_FLIGHT / 4;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        (void)getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)2 * FILES_IN_FLIGHT + 64)
                return FILES_IN_FLIGHT;
        return MAX((size_t)FHASH_MAX_FDS_PER_CALL, ((size_t)rl.rlim_cur - 64) / 2);
}

/* The matches, before any call (see bus-client.h), once c->order is set up; c is the caller's to
 * free, whatever this returns. */
static int client_setup(BusClient *c)
{
        sd_bus *bus = c->bus;
        int r;

        c->retry_tail = &c->retry;
        c->window = files_window();

        /* On a direct connection fhashd is the only one there: no names, no driver, no sender. */
        if (sd_bus_is_bus_client(bus) > 0) {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                const char *unique;

                c->dest = FHASH_BUS_NAME;
                r = sd_bus_get_name_creds(bus, FHASH_BUS_NAME, SD_BUS_CREDS_UNIQUE_NAME, &creds);
                if (r < 0)
                        return r;
                r = sd_bus_creds_get_unique_name(creds, &unique);
                if (r < 0)
                        return r;
                c->daemon = strdup(unique);
                if (!c->daemon)
                        return -ENOMEM;
        }

        /* Matches first (synchronously acknowledged by the bus), calls after: see bus-client.h. */
        if (c->dest)
                r = sd_bus_match_signal(bus, &c->s_owner, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed, c);
        else
                r = sd_bus_match_signal(bus, &c->s_owner, NULL, "/org/freedesktop/DBus/Local",
                                        "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, c);
        if (r >= 0)
                r = sd_bus_match_signal(bus, &c->s_sig, c->daemon, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE,
                                        NULL, on_signal, c);
        if (r >= 0 && c->read.watch_progress)
                r = sd_bus_match_signal(bus, &c->s_props, c->daemon, NULL, "org.freedesktop.DBus.Properties",
                                        "PropertiesChanged", on_properties, c);
        return r < 0 ? r : 0;
}

/* Until the source is over, every item delivered and every call answered (a last Close()
 * included). pump() pulls the source only while the window has room, so the walk goes on between
 * our calls and their results, and stops while fhashd has enough to do. Waits up to timeout_usec
 * for the bus when there is nothing to do. */
static int client_step(BusClient *c, uint64_t timeout_usec)
{
        int r;

        while (!run_order_finished(&c->order) || c->calls_out > 0) {
                r = pump(c);
                if (r < 0)
                        return r;
                r = sd_bus_process(c->bus, NULL);
                if (r < 0)
                        return r;
                if (c->error < 0)
                        return c->error;
                if (r > 0)
                        continue;
                if (run_order_finished(&c->order) && c->calls_out == 0)
                        break;
                if (timeout_usec == 0)
                        return 1;
                r = sd_bus_wait(c->bus, timeout_usec);
                if (r < 0 && r != -EINTR)
                        return r;
                if (r == 0)
                        return 1;
        }
        c->done = true;
        return 0;
}

int bus_client_start(sd_bus *bus, const RunSource *source, const RunReadOptions *ro, RunResultFn fn,
                     void *userdata, sd_bus_error *error, BusClient **ret)
{
        BusClient *c = calloc(1, sizeof(*c));
        const char *env = getenv("FHASHCTL_BUSY_TIMEOUT");
        unsigned secs = BUSY_TIMEOUT_DEFAULT_SEC;
        int r;

        if (!c)
                return -ENOMEM;
        *c = (BusClient){ .bus = bus, .read = *ro, .ret_error = error };
        if (env && *env) {
                char *end;
                unsigned long v;

                errno = 0;
                v = strtoul(env, &end, 10);
                if (errno == 0 && *end == '\0' && v <= UINT_MAX)
                        secs = (unsigned)v;
        }
        c->busy_timeout = secs == 0 ? UINT64_MAX : (uint64_t)secs * 1000000;

        r = run_order_init(&c->order, source, fn, userdata);
        c->order.unordered = ro->unordered;
        if (r >= 0)
                r = client_setup(c);
        if (r < 0) {
                bus_client_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int bus_client_step(BusClient *c, uint64_t timeout_usec)
{
        int r;

        if (c->done)
                return 0;
        r = client_step(c, timeout_usec);
        /* A direct connection has no NameOwnerChanged to tell that fhashd exited: only the socket. */
        if (r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE)
                daemon_gone(c);
        return r;
}

void bus_client_cancel_run(BusClient *c)
{
        /* fhashd cancels the jobs it has (their files come back cancelled); what is not sent yet is
         * answered cancelled here (cancel_rest()). Files in calls not answered yet may still be
         * hashed. */
        for (ClientJob *j = c->jobs; j; j = j->next)
                if (j->path && !j->finished)
                        (void)sd_bus_call_method_async(c->bus, NULL, c->dest, j->path, FHASH_JOB_INTERFACE, "Cancel",
                                                       NULL, NULL, NULL);
        c->stop = true;
}

sd_bus *bus_client_get_bus(BusClient *c)
{
        return c->bus;
}

BusClient *bus_client_free(BusClient *c)
{
        if (c) {
                client_free(c);
                free(c);
        }
        return NULL;
}
