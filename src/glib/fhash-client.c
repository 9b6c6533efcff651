/* SPDX-License-Identifier: MIT */
/* fhash-client.c: FhashClient, libfhash's client and its runs on the caller's GMainContext */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>

#include "glib/fhash-client.h"
#include "glib/fhash-enums.h"
#include "glib/fhash-error-private.h"
#include "glib/fhash-input-private.h"
#include "glib/fhash-result-private.h"
#include "glib/run-source.h"

/**
 * FhashClient:
 *
 * A connection to fhashd, the file-hashing service, or libfhash's engine in this process where
 * fhashd cannot be reached (unless %FHASH_CLIENT_FLAGS_NO_FALLBACK). Files are hashed by runs:
 * fhash_client_hash_async() for paths, fhash_client_hash_fds_async() for open files and
 * fhash_client_hash_source_async() for inputs given one at a time, each finished with its _finish()
 * function. Every file's result is also given by #FhashClient::result as it comes, in the order of
 * the inputs (unless %FHASH_HASH_FLAGS_UNORDERED), and the runs' progress is in the properties
 * #FhashClient:files-done, #FhashClient:files-total, #FhashClient:bytes-done and
 * #FhashClient:bytes-total, which notify as they change.
 *
 * The client connects in a worker thread the first time it is needed (fhashd may have to be started:
 * D-Bus activation); everything else happens in the thread-default #GMainContext of the calls,
 * which must be one and the same for a client, through libfhash's non-blocking runs: the loop never
 * waits for fhashd or for a file. Several runs may go on at once.
 *
 * A run cancelled through its #GCancellable finishes at once with %G_IO_ERROR_CANCELLED; libfhash
 * then cancels its files (fhashd's jobs too) in the background, pulls nothing more from a source,
 * and gives no more results.
 */

typedef enum RunKind {
        RUN_CONNECT,  /* fhash_client_connect_async(): done once connected */
        RUN_PATHS,
        RUN_FDS,
        RUN_SOURCE,
} RunKind;

enum { PROGRESS_FILES_DONE, PROGRESS_FILES_TOTAL, PROGRESS_BYTES_DONE, PROGRESS_BYTES_TOTAL, _PROGRESS_MAX };

/* One call of the client, from the call until its fhash_run is over (which may be after its task
 * has finished, when it was cancelled). */
typedef struct Run {
        FhashClient *client;     /* a reference */
        GTask *task;             /* NULL once it has returned */
        RunKind kind;
        gchar **paths;           /* RUN_PATHS */
        gint *fds;               /* RUN_FDS: our duplicates, closed with the run */
        gchar **names;
        guint n_fds;
        FhashSourceFunc source;  /* RUN_SOURCE */
        gpointer source_data;
        GDestroyNotify source_destroy;
        GHashTable *inputs;      /* RUN_SOURCE: FhashInput -> the references to it we hold, one for each
                                  * time the source gave it and libfhash has no result for it yet */
        gboolean source_done;
        fhash_run *run;
        GSource *run_source;
        GSource *cancel_source;
        GPtrArray *results;      /* RUN_PATHS, RUN_FDS: every result, for the task */
        GPtrArray *pending;      /* the results of the step being processed, emitted after it */
        guint64 progress[_PROGRESS_MAX];
        gboolean cancelled;
} Run;

struct _FhashClient {
        GObject parent_instance;
        FhashBusType bus_type;
        gchar *address;
        FhashClientFlags flags;
        gchar *algorithm;
        FhashHashFlags hash_flags;
        guint64 max_size;

        fhash_client *core;          /* NULL until connected */
        gchar *fallback_reason;
        gboolean connecting;
        gboolean stale;              /* fhashd went away: connect again before the next run */
        GQueue waiting;              /* Runs waiting for the connection */
        GQueue runs;                 /* Runs whose fhash_run goes on */
        guint64 base[_PROGRESS_MAX];     /* the runs over since the client was last idle */
        guint64 progress[_PROGRESS_MAX];
        gchar *busy_reason;          /* libfhash's busy notice, emitted after the step that gave it */
        gboolean busy_gives_up;
};

enum {
        PROP_0,
        PROP_BUS_TYPE,
        PROP_ADDRESS,
        PROP_FLAGS,
        PROP_ALGORITHM,
        PROP_HASH_FLAGS,
        PROP_MAX_SIZE,
        PROP_USES_DAEMON,
        PROP_FALLBACK_REASON,
        PROP_FILES_DONE,
        PROP_FILES_TOTAL,
        PROP_BYTES_DONE,
        PROP_BYTES_TOTAL,
        _PROP_MAX,
};
static GParamSpec *props[_PROP_MAX];

enum {
        SIGNAL_RESULT,
        SIGNAL_BUSY,
        _SIGNAL_MAX,
};
static guint signals[_SIGNAL_MAX];

G_DEFINE_FINAL_TYPE(FhashClient, fhash_client, G_TYPE_OBJECT)

/* The run's task is done with: it has returned, or never will. (g_clear_object() trips
 * clang-tidy 14's bugprone-sizeof-expression in GLib's macro.) */
static void run_drop_task(Run *r)
{
        if (r->task) {
                g_object_unref(r->task);
                r->task = NULL;
        }
}

static void run_free(Run *r)
{
        if (r->run_source) {
                g_source_destroy(r->run_source);
                g_source_unref(r->run_source);
        }
        if (r->cancel_source) {
                g_source_destroy(r->cancel_source);
                g_source_unref(r->cancel_source);
        }
        fhash_run_free(r->run);
        /* Inputs libfhash had taken but never answered (the run failed): ours to drop. */
        if (r->inputs) {
                GHashTableIter i;
                gpointer in, refs;

                g_hash_table_iter_init(&i, r->inputs);
                while (g_hash_table_iter_next(&i, &in, &refs))
                        for (guint k = GPOINTER_TO_UINT(refs); k > 0; k--)
                                fhash_input_unref(in);
                g_hash_table_unref(r->inputs);
        }
        if (r->source_destroy)
                r->source_destroy(r->source_data);
        for (guint i = 0; r->fds && i < r->n_fds; i++)
                (void)g_close(r->fds[i], NULL);
        g_free(r->fds);
        g_strfreev(r->names);
        g_strfreev(r->paths);
        if (r->results)
                g_ptr_array_unref(r->results);
        g_ptr_array_unref(r->pending);
        run_drop_task(r);
        g_object_unref(r->client);
        g_free(r);
}

/* Cancelled through its GCancellable: at once, also before the cancel source has dispatched (a
 * result handler, another thread). */
static gboolean run_is_cancelled(Run *r)
{
        GCancellable *c = r->task ? g_task_get_cancellable(r->task) : NULL;

        return r->cancelled || (c && g_cancellable_is_cancelled(c));
}

static void run_return_error(Run *r, GError *error)
{
        if (!r->task) {
                g_error_free(error);
                return;
        }
        g_task_return_error(r->task, error);
        run_drop_task(r);
}

static void run_return_success(Run *r)
{
        if (!r->task)
                return;
        if (r->kind == RUN_PATHS || r->kind == RUN_FDS)
                g_task_return_pointer(r->task, g_ptr_array_ref(r->results), (GDestroyNotify)g_ptr_array_unref);
        else
                g_task_return_boolean(r->task, TRUE);
        run_drop_task(r);
}

/* The sum of the runs since the client was last idle, notified where it changed. */
static void client_update_progress(FhashClient *self)
{
        static const guint prop_of[_PROGRESS_MAX] = {
                [PROGRESS_FILES_DONE] = PROP_FILES_DONE,
                [PROGRESS_FILES_TOTAL] = PROP_FILES_TOTAL,
                [PROGRESS_BYTES_DONE] = PROP_BYTES_DONE,
                [PROGRESS_BYTES_TOTAL] = PROP_BYTES_TOTAL,
        };
        guint64 p[_PROGRESS_MAX];

        memcpy(p, self->base, sizeof(p));
        for (GList *l = self->runs.head; l; l = l->next) {
                Run *r = l->data;

                for (guint i = 0; i < _PROGRESS_MAX; i++)
                        p[i] += r->progress[i];
        }
        g_object_freeze_notify(G_OBJECT(self));
        for (guint i = 0; i < _PROGRESS_MAX; i++)
                if (p[i] != self->progress[i]) {
                        self->progress[i] = p[i];
                        g_object_notify_by_pspec(G_OBJECT(self), props[prop_of[i]]);
                }
        g_object_thaw_notify(G_OBJECT(self));
}

/* libfhash's result callback, inside fhash_run_process(): copied, and given to the caller after the
 * step, so that a handler may call anything of the client's (libfhash is not re-entered). */
static void on_core_result(const fhash_result *result, void *userdata)
{
        Run *r = userdata;

        if (!run_is_cancelled(r)) {
                FhashResult *res = result_new_from_core(result);

                if (r->results)
                        g_ptr_array_add(r->results, fhash_result_ref(res));
                g_ptr_array_add(r->pending, res);
        }
        /* The input (its fd, its strings) is no longer needed once answered. */
        if (r->kind == RUN_SOURCE && result->userdata) {
                guint refs = GPOINTER_TO_UINT(g_hash_table_lookup(r->inputs, result->userdata));

                if (refs > 1)
                        g_hash_table_insert(r->inputs, result->userdata, GUINT_TO_POINTER(refs - 1));
                else
                        g_hash_table_remove(r->inputs, result->userdata);
                if (refs > 0)
                        fhash_input_unref(result->userdata);
        }
}

/* libfhash's source over the caller's FhashSourceFunc: nothing more once cancelled or ended. */
static int on_core_next(void *userdata, fhash_input *ret)
{
        Run *r = userdata;
        FhashInput *in;

        if (run_is_cancelled(r) || r->source_done)
                return 0;
        in = r->source(r->source_data);
        if (!in) {
                r->source_done = TRUE;
                return 0;
        }
        /* The input's strings and fd stay valid until its result, which gives it back as userdata (a
         * source may give the same input again, with another reference). */
        g_hash_table_insert(r->inputs, in,
                            GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(r->inputs, in)) + 1));
        input_to_core(in, ret);
        return 1;
}

/* libfhash's busy notice, inside fhash_run_process(): emitted after the step. */
static void on_core_busy(const char *reason, int gives_up, void *userdata)
{
        FhashClient *self = userdata;

        g_free(self->busy_reason);
        self->busy_reason = g_strdup(reason ? reason : "");
        self->busy_gives_up = gives_up != 0;
}

/* A step of the run: what is ready, never waiting. Then the results and notices it gave. */
static gboolean run_dispatch(gpointer data)
{
        Run *r = data;
        FhashClient *self = r->client;
        fhash_progress p = { 0 };
        fhash_error e = { 0 };
        g_autoptr(GPtrArray) pending = NULL;
        g_autofree gchar *busy = NULL;
        int k;

        k = fhash_run_process(r->run, &e);
        /* A run with FHASH_HASH_FLAGS_RESUME that lost fhashd and went on in this process: so does
         * the client from now on, and the core says why. */
        if (g_strcmp0(fhash_client_get_fallback_reason(self->core), self->fallback_reason) != 0) {
                g_free(self->fallback_reason);
                self->fallback_reason = g_strdup(fhash_client_get_fallback_reason(self->core));
                g_object_notify_by_pspec(G_OBJECT(self), props[PROP_USES_DAEMON]);
                g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FALLBACK_REASON]);
        }
        if (fhash_run_get_progress(r->run, &p) >= 0) {
                r->progress[PROGRESS_FILES_DONE] = p.files_done;
                r->progress[PROGRESS_FILES_TOTAL] = p.files_total;
                r->progress[PROGRESS_BYTES_DONE] = p.bytes_done;
                r->progress[PROGRESS_BYTES_TOTAL] = p.bytes_total;
        }
        pending = g_steal_pointer(&r->pending);
        r->pending = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        busy = g_steal_pointer(&self->busy_reason);
        if (k <= 0) {
                /* Over: its progress stays in the client's until the client is idle and a run starts. */
                g_queue_remove(&self->runs, r);
                for (guint i = 0; i < _PROGRESS_MAX; i++)
                        self->base[i] += r->progress[i];
        }
        /* The client outlives the handlers (r holds it), and r outlives them: it is freed below. */
        g_object_ref(self);
        if (busy && !run_is_cancelled(r))
                g_signal_emit(self, signals[SIGNAL_BUSY], 0, busy, self->busy_gives_up);
        for (guint i = 0; i < pending->len && !run_is_cancelled(r); i++)
                g_signal_emit(self, signals[SIGNAL_RESULT], 0, g_ptr_array_index(pending, i));
        client_update_progress(self);
        if (k < 0) {
                GError *error = error_from_core(&e);

                /* fhashd is gone (exited, restarted): this connection is of no more use. */
                if (g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_GONE))
                        self->stale = TRUE;
                run_return_error(r, error);
        } else if (k == 0)
                run_return_success(r);
        g_object_unref(self);
        if (k > 0)
                return G_SOURCE_CONTINUE;
        /* Freed inside its own source's dispatch: run_free() destroys it, GLib finalizes it after. */
        run_free(r);
        return G_SOURCE_REMOVE;
}

static gboolean on_cancelled(GCancellable *cancellable, gpointer data)
{
        Run *r = data;
        GSource *s = g_steal_pointer(&r->cancel_source);

        r->cancelled = TRUE;
        if (r->task)
                (void)g_task_return_error_if_cancelled(r->task);
        run_drop_task(r);
        g_source_unref(s);  /* the context holds it until this dispatch returns */
        if (!r->run) {
                /* Still waiting for the connection. */
                g_queue_remove(&r->client->waiting, r);
                run_free(r);
        } else
                (void)fhash_run_cancel(r->run);  /* goes on in the background until every file is answered */
        return G_SOURCE_REMOVE;
}

static unsigned core_hash_flags(FhashHashFlags f)
{
        return (f & FHASH_HASH_FLAGS_DONTCACHE ? FHASH_HASH_DONTCACHE : 0) |
               (f & FHASH_HASH_FLAGS_PROGRESS ? FHASH_HASH_PROGRESS : 0) |
               (f & FHASH_HASH_FLAGS_UNORDERED ? FHASH_HASH_UNORDERED : 0) |
               (f & FHASH_HASH_FLAGS_RESUME ? FHASH_HASH_RESUME : 0);
}

/* Starts r's fhash_run on the connected client, or finishes r (connected, or failed to start). */
static void run_start(Run *r)
{
        FhashClient *self = r->client;
        fhash_hash_options o = { .algorithm = self->algorithm, .flags = core_hash_flags(self->hash_flags),
                                 .max_size = self->max_size };
        fhash_error e = { 0 };
        int k = 0;

        if (r->kind == RUN_CONNECT) {
                run_return_success(r);
                run_free(r);
                return;
        }
        if (g_queue_is_empty(&self->runs)) {
                memset(self->base, 0, sizeof(self->base));
                client_update_progress(self);
        }
        switch (r->kind) {
        case RUN_PATHS:
                k = fhash_run_paths(self->core, (const char *const *)r->paths, g_strv_length(r->paths), &o,
                                    on_core_result, r, &r->run, &e);
                break;
        case RUN_FDS:
                k = fhash_run_fds(self->core, r->fds, (const char *const *)r->names, r->n_fds, &o, on_core_result, r,
                                  &r->run, &e);
                break;
        case RUN_SOURCE:
                k = fhash_run_source(self->core, on_core_next, r, &o, on_core_result, r, &r->run, &e);
                break;
        case RUN_CONNECT:
                break;
        }
        if (k < 0) {
                run_return_error(r, error_from_core(&e));
                run_free(r);
                return;
        }
        g_queue_push_tail(&self->runs, r);
        r->run_source = run_source_new(r->run);
        g_source_set_callback(r->run_source, run_dispatch, r, NULL);
        g_source_attach(r->run_source, g_task_get_context(r->task));
}

typedef struct ConnectArgs {
        fhash_client_options options;
        gchar *address;
} ConnectArgs;

static void connect_args_free(ConnectArgs *a)
{
        g_free(a->address);
        g_free(a);
}

static void core_client_free(gpointer core)
{
        fhash_client_free(core);
}

/* In a worker thread: fhash_client_new() waits for the bus and for fhashd to start. */
static void connect_thread(GTask *task, gpointer source_object, gpointer task_data, GCancellable *cancellable)
{
        ConnectArgs *a = task_data;
        fhash_client *core = NULL;
        fhash_error e = { 0 };

        if (fhash_client_new(&a->options, &core, &e) < 0)
                g_task_return_error(task, error_from_core(&e));
        else
                g_task_return_pointer(task, core, core_client_free);
}

static void on_connected(GObject *object, GAsyncResult *result, gpointer user_data)
{
        FhashClient *self = FHASH_CLIENT(object);
        g_autoptr(GError) error = NULL;
        fhash_client *core = g_task_propagate_pointer(G_TASK(result), &error);
        Run *r;

        self->connecting = FALSE;
        if (core) {
                const char *why = fhash_client_get_fallback_reason(core);

                self->core = core;
                g_free(self->fallback_reason);
                self->fallback_reason = g_strdup(why);
                g_object_notify_by_pspec(G_OBJECT(self), props[PROP_USES_DAEMON]);
                g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FALLBACK_REASON]);
        }
        while ((r = g_queue_pop_head(&self->waiting))) {
                if (core)
                        run_start(r);
                else {
                        run_return_error(r, g_error_copy(error));
                        run_free(r);
                }
        }
}

static void client_connect(FhashClient *self)
{
        ConnectArgs *a = g_new0(ConnectArgs, 1);
        g_autoptr(GTask) task = NULL;

        if (self->connecting) {
                connect_args_free(a);
                return;
        }
        self->connecting = TRUE;
        a->address = g_strdup(self->address);
        a->options = (fhash_client_options){
                .bus = a->address ? FHASH_BUS_ADDRESS : self->bus_type == FHASH_BUS_TYPE_USER ? FHASH_BUS_USER
                                                                                               : FHASH_BUS_SYSTEM,
                .address = a->address,
                .flags = (self->flags & FHASH_CLIENT_FLAGS_LOCAL ? FHASH_CLIENT_LOCAL : 0) |
                         (self->flags & FHASH_CLIENT_FLAGS_NO_FALLBACK ? FHASH_CLIENT_NO_FALLBACK : 0) |
                         (self->flags & FHASH_CLIENT_FLAGS_NO_DIRECT ? FHASH_CLIENT_NO_DIRECT : 0),
                /* Called from fhash_run_process(), in the runs' context: the client outlives its
                 * fhash_client. */
                .busy_notice = on_core_busy,
                .notice_userdata = self,
        };
        task = g_task_new(self, NULL, on_connected, NULL);
        g_task_set_source_tag(task, client_connect);
        g_task_set_task_data(task, a, (GDestroyNotify)connect_args_free);
        g_task_run_in_thread(task, connect_thread);
}

/* A run for a call: its task, and a cancel source in the call's context. */
static Run *run_new(FhashClient *self, RunKind kind, GCancellable *cancellable, GAsyncReadyCallback callback,
                    gpointer user_data, gpointer tag)
{
        Run *r = g_new0(Run, 1);

        r->client = g_object_ref(self);
        r->kind = kind;
        r->task = g_task_new(self, cancellable, callback, user_data);
        g_task_set_source_tag(r->task, tag);
        r->pending = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        if (kind == RUN_PATHS || kind == RUN_FDS)
                r->results = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        if (cancellable) {
                r->cancel_source = g_cancellable_source_new(cancellable);
                g_source_set_callback(r->cancel_source, G_SOURCE_FUNC(on_cancelled), r, NULL);
                g_source_attach(r->cancel_source, g_task_get_context(r->task));
        }
        return r;
}

/* Starts r now, or once connected (again, after fhashd went away, when no run uses the old one). */
static void client_submit(FhashClient *self, Run *r)
{
        if (g_task_return_error_if_cancelled(r->task)) {
                run_drop_task(r);
                run_free(r);
                return;
        }
        if (self->core && self->stale && g_queue_is_empty(&self->runs)) {
                self->core = fhash_client_free(self->core);
                self->stale = FALSE;
        }
        if (self->core) {
                run_start(r);
                return;
        }
        g_queue_push_tail(&self->waiting, r);
        client_connect(self);
}

/**
 * fhash_client_new_for_bus:
 * @bus_type: where fhashd is
 * @flags: how to connect
 *
 * A client of fhashd on the system or the session bus. It connects when first needed, or with
 * fhash_client_connect_async().
 *
 * Returns: (transfer full): a new client
 */
FhashClient *fhash_client_new_for_bus(FhashBusType bus_type, FhashClientFlags flags)
{
        return g_object_new(FHASH_TYPE_CLIENT, "bus-type", bus_type, "flags", flags, NULL);
}

/**
 * fhash_client_new_for_address:
 * @address: (nullable): a D-Bus address ("unix:path=/run/..."); %NULL: the system bus
 * @flags: how to connect
 *
 * A client of fhashd on the bus at @address.
 *
 * Returns: (transfer full): a new client
 */
FhashClient *fhash_client_new_for_address(const gchar *address, FhashClientFlags flags)
{
        return g_object_new(FHASH_TYPE_CLIENT, "address", address, "flags", flags, NULL);
}

/**
 * fhash_client_connect_async:
 * @self: a client
 * @cancellable: (nullable): to stop waiting
 * @callback: (scope async): called once connected, or when that failed
 * @user_data: (closure): for @callback
 *
 * Connects now (in a worker thread: fhashd may have to be started) rather than at the first run,
 * to know early whether fhashd is there (#FhashClient:uses-daemon).
 */
void fhash_client_connect_async(FhashClient *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data)
{
        g_return_if_fail(FHASH_IS_CLIENT(self));
        client_submit(self, run_new(self, RUN_CONNECT, cancellable, callback, user_data, fhash_client_connect_async));
}

/**
 * fhash_client_connect_finish:
 * @self: a client
 * @result: the result given to the callback
 * @error: why it failed: %FHASH_CLIENT_ERROR_NOT_REACHABLE (the message names the bus and its
 *   socket) with %FHASH_CLIENT_FLAGS_NO_FALLBACK, %FHASH_CLIENT_ERROR_INVALID_ARGS for an address
 *   that is not a D-Bus address
 *
 * Returns: %TRUE once connected (through fhashd or, where allowed, in-process)
 */
gboolean fhash_client_connect_finish(FhashClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
        g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == fhash_client_connect_async, FALSE);
        return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * fhash_client_hash_async:
 * @self: a client
 * @paths: (array zero-terminated=1) (element-type filename): the files (relative paths: from the
 *   current directory; "-": standard input)
 * @cancellable: (nullable): to stop the run
 * @callback: (scope async): called once every file has its result, or when the run failed
 * @user_data: (closure): for @callback
 *
 * Hashes the files with #FhashClient:algorithm. Each result is also emitted as #FhashClient::result
 * as soon as it is in order. A file that cannot be hashed has a result with an error, not the run.
 */
void fhash_client_hash_async(FhashClient *self, const gchar *const *paths, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data)
{
        Run *r;

        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_return_if_fail(paths);
        r = run_new(self, RUN_PATHS, cancellable, callback, user_data, fhash_client_hash_async);
        r->paths = g_strdupv((gchar **)paths);
        client_submit(self, r);
}

/**
 * fhash_client_hash_finish:
 * @self: a client
 * @result: the result given to the callback
 * @error: why the run failed: %G_IO_ERROR_CANCELLED, or one of %FHASH_CLIENT_ERROR
 *   (%FHASH_CLIENT_ERROR_GONE when fhashd went away, %FHASH_CLIENT_ERROR_INVALID_ARGS for an unknown
 *   algorithm, ...)
 *
 * Returns: (transfer container) (element-type FhashResult): a result per file, in the order of the
 *   paths (with %FHASH_HASH_FLAGS_UNORDERED: as they completed), or %NULL with @error set
 */
GPtrArray *fhash_client_hash_finish(FhashClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail(g_task_is_valid(result, self), NULL);
        g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == fhash_client_hash_async, NULL);
        return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * fhash_client_hash_fds_async:
 * @self: a client
 * @fds: (array length=n_fds): open files, each read from its start (a pipe: from where it is)
 * @n_fds: how many
 * @names: (nullable) (array zero-terminated=1) (element-type filename): a name for each file's
 *   result (%NULL, or fewer names: "")
 * @cancellable: (nullable): to stop the run
 * @callback: (scope async): called once every file has its result, or when the run failed
 * @user_data: (closure): for @callback
 *
 * Hashes open files: fhashd reads duplicates of them (so the caller's permission to read them is
 * what counts), and so does the run: the caller may close its fds at once. A regular file's offset
 * is left as it was.
 */
void fhash_client_hash_fds_async(FhashClient *self, const gint *fds, guint n_fds, const gchar *const *names,
                                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
        Run *r;
        guint n_names = names ? g_strv_length((gchar **)names) : 0;

        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_return_if_fail(fds || n_fds == 0);
        r = run_new(self, RUN_FDS, cancellable, callback, user_data, fhash_client_hash_fds_async);
        r->fds = g_new(gint, MAX(n_fds, 1));
        r->names = g_new0(gchar *, n_fds + 1);
        for (guint i = 0; i < n_fds; i++) {
                int e = EBADF;

                r->fds[i] = fds[i] < 0 ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                if (r->fds[i] < 0) {
                        e = fds[i] < 0 ? EBADF : errno;
                        r->n_fds = i;
                        run_return_error(r, g_error_new(FHASH_CLIENT_ERROR, (gint)FHASH_CLIENT_ERROR_INVALID_ARGS,
                                                        "fds[%u] (%d): %s", i, fds[i], g_strerror(e)));
                        run_free(r);
                        return;
                }
                r->n_fds = i + 1;
                r->names[i] = g_strdup(i < n_names ? names[i] : "");
        }
        client_submit(self, r);
}

/**
 * fhash_client_hash_fds_finish:
 * @self: a client
 * @result: the result given to the callback
 * @error: why the run failed, as fhash_client_hash_finish()
 *
 * Returns: (transfer container) (element-type FhashResult): a result per file, in order, or %NULL
 *   with @error set
 */
GPtrArray *fhash_client_hash_fds_finish(FhashClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail(g_task_is_valid(result, self), NULL);
        g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == fhash_client_hash_fds_async, NULL);
        return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * fhash_client_hash_source_async:
 * @self: a client
 * @source: (scope notified) (closure source_data) (destroy source_destroy): gives the inputs, one
 *   per call, as the run has room for them
 * @source_data: for @source
 * @source_destroy: (nullable): frees @source_data once the run needs no more
 * @cancellable: (nullable): to stop the run: @source is not called again
 * @callback: (scope async): called once every input has its result, or when the run failed
 * @user_data: (closure): for @callback
 *
 * Hashes inputs as @source gives them, any number: a directory walk goes on while the first files
 * are hashed, and only the inputs in flight are held. The results come through #FhashClient::result
 * only (index: the input's position), in order unless %FHASH_HASH_FLAGS_UNORDERED.
 */
void fhash_client_hash_source_async(FhashClient *self, FhashSourceFunc source, gpointer source_data,
                                    GDestroyNotify source_destroy, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data)
{
        Run *r;

        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_return_if_fail(source);
        r = run_new(self, RUN_SOURCE, cancellable, callback, user_data, fhash_client_hash_source_async);
        r->source = source;
        r->source_data = source_data;
        r->source_destroy = source_destroy;
        r->inputs = g_hash_table_new(NULL, NULL);
        client_submit(self, r);
}

/**
 * fhash_client_hash_source_finish:
 * @self: a client
 * @result: the result given to the callback
 * @error: why the run failed, as fhash_client_hash_finish()
 *
 * Returns: %TRUE once every input had its result
 */
gboolean fhash_client_hash_source_finish(FhashClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
        g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == fhash_client_hash_source_async, FALSE);
        return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * fhash_client_get_bus_type:
 * @self: a client
 *
 * Returns: the bus it looks for fhashd on, when it has no address
 */
FhashBusType fhash_client_get_bus_type(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), FHASH_BUS_TYPE_SYSTEM);
        return self->bus_type;
}

/**
 * fhash_client_get_address:
 * @self: a client
 *
 * Returns: (nullable): the D-Bus address it connects to, or %NULL (#FhashClient:bus-type)
 */
const gchar *fhash_client_get_address(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), NULL);
        return self->address;
}

/**
 * fhash_client_get_flags:
 * @self: a client
 *
 * Returns: how it connects
 */
FhashClientFlags fhash_client_get_flags(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), FHASH_CLIENT_FLAGS_NONE);
        return self->flags;
}

/**
 * fhash_client_get_algorithm:
 * @self: a client
 *
 * Returns: the algorithm of the runs it starts
 */
const gchar *fhash_client_get_algorithm(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), NULL);
        return self->algorithm;
}

/**
 * fhash_client_set_algorithm:
 * @self: a client
 * @algorithm: (nullable): one of fhash_client_list_algorithms(), or up to 4 joined by ',' (each file
 *   is read once); %NULL: "sha256"
 *
 * The algorithm of the runs started from now on; an unknown one fails the run with
 * %FHASH_CLIENT_ERROR_INVALID_ARGS.
 */
void fhash_client_set_algorithm(FhashClient *self, const gchar *algorithm)
{
        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_object_set(self, "algorithm", algorithm, NULL);
}

/**
 * fhash_client_get_hash_flags:
 * @self: a client
 *
 * Returns: how the runs it starts hash
 */
FhashHashFlags fhash_client_get_hash_flags(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), FHASH_HASH_FLAGS_NONE);
        return self->hash_flags;
}

/**
 * fhash_client_set_hash_flags:
 * @self: a client
 * @flags: how the runs started from now on hash
 */
void fhash_client_set_hash_flags(FhashClient *self, FhashHashFlags flags)
{
        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_object_set(self, "hash-flags", flags, NULL);
}

/**
 * fhash_client_get_max_size:
 * @self: a client
 *
 * Returns: the largest file its runs hash, in bytes; 0: no limit
 */
guint64 fhash_client_get_max_size(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), 0);
        return self->max_size;
}

/**
 * fhash_client_set_max_size:
 * @self: a client
 * @max_size: a file past this many bytes gets %FHASH_CLIENT_ERROR_TOO_LARGE; 0: no limit
 *
 * For the runs started from now on.
 */
void fhash_client_set_max_size(FhashClient *self, guint64 max_size)
{
        g_return_if_fail(FHASH_IS_CLIENT(self));
        g_object_set(self, "max-size", max_size, NULL);
}

/**
 * fhash_client_get_uses_daemon:
 * @self: a client
 *
 * Returns: %TRUE when it is connected to fhashd, %FALSE when it hashes in this process (or is not
 *   connected yet)
 */
gboolean fhash_client_get_uses_daemon(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), FALSE);
        return self->core && fhash_client_uses_daemon(self->core);
}

/**
 * fhash_client_dup_fallback_reason:
 * @self: a client
 *
 * Returns: (transfer full) (nullable): why it hashes in this process although it was not told to
 *   (%FHASH_CLIENT_FLAGS_LOCAL): what reaching fhashd said, naming the bus, or why a run with
 *   %FHASH_HASH_FLAGS_RESUME that lost fhashd went on in this process; %NULL otherwise
 */
gchar *fhash_client_dup_fallback_reason(FhashClient *self)
{
        g_return_val_if_fail(FHASH_IS_CLIENT(self), NULL);
        return g_strdup(self->fallback_reason);
}

/**
 * fhash_client_get_progress:
 * @self: a client
 * @files_done: (out) (optional): files with a result
 * @files_total: (out) (optional): files given (a source's: so far)
 * @bytes_done: (out) (optional): bytes hashed
 * @bytes_total: (out) (optional): bytes of the files opened so far
 *
 * The progress of its runs: those going on and those over since the client was last idle (a run
 * started when none goes on starts from 0).
 */
void fhash_client_get_progress(FhashClient *self, guint64 *files_done, guint64 *files_total, guint64 *bytes_done,
                               guint64 *bytes_total)
{
        g_return_if_fail(FHASH_IS_CLIENT(self));
        if (files_done)
                *files_done = self->progress[PROGRESS_FILES_DONE];
        if (files_total)
                *files_total = self->progress[PROGRESS_FILES_TOTAL];
        if (bytes_done)
                *bytes_done = self->progress[PROGRESS_BYTES_DONE];
        if (bytes_total)
                *bytes_total = self->progress[PROGRESS_BYTES_TOTAL];
}

/**
 * fhash_client_list_algorithms:
 *
 * Returns: (transfer none) (array zero-terminated=1): the names of the algorithms, in the order of
 *   fhashd's Algorithms property
 */
const gchar *const *fhash_client_list_algorithms(void)
{
        return (const gchar *const *)fhash_algorithms();
}

static void fhash_client_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
        FhashClient *self = FHASH_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                g_value_set_enum(value, (gint)self->bus_type);
                break;
        case PROP_ADDRESS:
                g_value_set_string(value, self->address);
                break;
        case PROP_FLAGS:
                g_value_set_flags(value, self->flags);
                break;
        case PROP_ALGORITHM:
                g_value_set_string(value, self->algorithm);
                break;
        case PROP_HASH_FLAGS:
                g_value_set_flags(value, self->hash_flags);
                break;
        case PROP_MAX_SIZE:
                g_value_set_uint64(value, self->max_size);
                break;
        case PROP_USES_DAEMON:
                g_value_set_boolean(value, fhash_client_get_uses_daemon(self));
                break;
        case PROP_FALLBACK_REASON:
                g_value_set_string(value, self->fallback_reason);
                break;
        case PROP_FILES_DONE:
        case PROP_FILES_TOTAL:
        case PROP_BYTES_DONE:
        case PROP_BYTES_TOTAL:
                g_value_set_uint64(value, self->progress[prop_id - PROP_FILES_DONE]);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void fhash_client_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
        FhashClient *self = FHASH_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                self->bus_type = (FhashBusType)g_value_get_enum(value);
                break;
        case PROP_ADDRESS:
                g_free(self->address);
                self->address = g_value_dup_string(value);
                break;
        case PROP_FLAGS:
                self->flags = (FhashClientFlags)g_value_get_flags(value);
                break;
        case PROP_ALGORITHM:
                g_free(self->algorithm);
                self->algorithm = g_strdup(g_value_get_string(value) ? g_value_get_string(value) : "sha256");
                break;
        case PROP_HASH_FLAGS:
                self->hash_flags = (FhashHashFlags)g_value_get_flags(value);
                break;
        case PROP_MAX_SIZE:
                self->max_size = g_value_get_uint64(value);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void fhash_client_finalize(GObject *object)
{
        FhashClient *self = FHASH_CLIENT(object);

        /* Every run and connection holds a reference: none is left. */
        self->core = fhash_client_free(self->core);
        g_free(self->fallback_reason);
        g_free(self->busy_reason);
        g_free(self->address);
        g_free(self->algorithm);
        G_OBJECT_CLASS(fhash_client_parent_class)->finalize(object);
}

static void fhash_client_class_init(FhashClientClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS(klass);
        const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
        const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
        const GParamFlags co = G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;

        object_class->get_property = fhash_client_get_property;
        object_class->set_property = fhash_client_set_property;
        object_class->finalize = fhash_client_finalize;

        /**
         * FhashClient:bus-type:
         *
         * The bus fhashd is looked for on, when the client has no #FhashClient:address.
         */
        props[PROP_BUS_TYPE] = g_param_spec_enum("bus-type", NULL, NULL, FHASH_TYPE_BUS_TYPE, FHASH_BUS_TYPE_SYSTEM,
                                                 co);
        /**
         * FhashClient:address:
         *
         * A D-Bus address to find fhashd at ("unix:path=/run/..."), or %NULL for #FhashClient:bus-type.
         */
        props[PROP_ADDRESS] = g_param_spec_string("address", NULL, NULL, NULL, co);
        /**
         * FhashClient:flags:
         *
         * How the client connects.
         */
        props[PROP_FLAGS] = g_param_spec_flags("flags", NULL, NULL, FHASH_TYPE_CLIENT_FLAGS, FHASH_CLIENT_FLAGS_NONE,
                                               co);
        /**
         * FhashClient:algorithm:
         *
         * The algorithm of the runs started from now on: one of fhash_client_list_algorithms(), or up
         * to 4 joined by ','.
         */
        props[PROP_ALGORITHM] = g_param_spec_string("algorithm", NULL, NULL, "sha256",
                                                    rw | G_PARAM_CONSTRUCT);
        /**
         * FhashClient:hash-flags:
         *
         * How the runs started from now on hash.
         */
        props[PROP_HASH_FLAGS] = g_param_spec_flags("hash-flags", NULL, NULL, FHASH_TYPE_HASH_FLAGS,
                                                    FHASH_HASH_FLAGS_NONE, rw);
        /**
         * FhashClient:max-size:
         *
         * The largest file the runs started from now on hash, in bytes (0: no limit): a larger one
         * gets %FHASH_CLIENT_ERROR_TOO_LARGE.
         */
        props[PROP_MAX_SIZE] = g_param_spec_uint64("max-size", NULL, NULL, 0, G_MAXUINT64, 0, rw);
        /**
         * FhashClient:uses-daemon:
         *
         * Whether the client is connected to fhashd (%FALSE: in-process, or not connected yet).
         */
        props[PROP_USES_DAEMON] = g_param_spec_boolean("uses-daemon", NULL, NULL, FALSE, ro);
        /**
         * FhashClient:fallback-reason:
         *
         * Why the client hashes in this process although it was not told to: what reaching fhashd
         * said, naming the bus and its socket.
         */
        props[PROP_FALLBACK_REASON] = g_param_spec_string("fallback-reason", NULL, NULL, NULL, ro);
        /**
         * FhashClient:files-done:
         *
         * Files with a result, in the runs going on and those over since the client was last idle.
         */
        props[PROP_FILES_DONE] = g_param_spec_uint64("files-done", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:files-total:
         *
         * Files given to those runs (a source's: so far).
         */
        props[PROP_FILES_TOTAL] = g_param_spec_uint64("files-total", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:bytes-done:
         *
         * Bytes of the files done (with %FHASH_HASH_FLAGS_PROGRESS, and of those being hashed).
         */
        props[PROP_BYTES_DONE] = g_param_spec_uint64("bytes-done", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:bytes-total:
         *
         * Bytes of the files opened so far: the total grows as files open.
         */
        props[PROP_BYTES_TOTAL] = g_param_spec_uint64("bytes-total", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        g_object_class_install_properties(object_class, _PROP_MAX, props);

        /**
         * FhashClient::result:
         * @self: the client
         * @result: the file's result
         *
         * A file's result, as soon as it is in order (with %FHASH_HASH_FLAGS_UNORDERED: as soon as
         * it is known), for every run of the client; none after a run was cancelled.
         */
        signals[SIGNAL_RESULT] = g_signal_new("result", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 1, FHASH_TYPE_RESULT);
        /**
         * FhashClient::busy:
         * @self: the client
         * @reason: fhashd's message
         * @gives_up: whether the run will fail with %FHASH_CLIENT_ERROR_BUSY after
         *   $FHASHCTL_BUSY_TIMEOUT seconds (default 60) if it stays so
         *
         * Once per run when fhashd has answered Busy (a per-user limit) for over a second: the run
         * waits and tries again.
         */
        signals[SIGNAL_BUSY] = g_signal_new("busy", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                            G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_BOOLEAN);
}

static void fhash_client_init(FhashClient *self)
{
        self->algorithm = g_strdup("sha256");
}
