/* SPDX-License-Identifier: MIT */
/* fhash-client-run.c: FhashClient's runs: connecting in a worker thread, libfhash's non-blocking
 * runs stepped on the caller's GMainContext, their results, progress and cancellation */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>

#include "glib/fhash-client-private.h"
#include "glib/fhash-enums.h"
#include "glib/fhash-error-private.h"
#include "glib/fhash-input-private.h"
#include "glib/fhash-result-private.h"
#include "glib/run-source.h"

/* The run's task is done with: it has returned, or never will. (g_clear_object() trips
 * clang-tidy 14's bugprone-sizeof-expression in GLib's macro.) */
static void run_drop_task(Run *r)
{
        if (r->task) {
                g_object_unref(r->task);
                r->task = NULL;
        }
}

void run_free(Run *r)
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

void run_return_error(Run *r, GError *error)
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
                        g_object_notify_by_pspec(G_OBJECT(self), client_props[prop_of[i]]);
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
                g_object_notify_by_pspec(G_OBJECT(self), client_props[PROP_USES_DAEMON]);
                g_object_notify_by_pspec(G_OBJECT(self), client_props[PROP_FALLBACK_REASON]);
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
                g_signal_emit(self, client_signals[SIGNAL_BUSY], 0, busy, self->busy_gives_up);
        for (guint i = 0; i < pending->len && !run_is_cancelled(r); i++)
                g_signal_emit(self, client_signals[SIGNAL_RESULT], 0, g_ptr_array_index(pending, i));
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
                g_object_notify_by_pspec(G_OBJECT(self), client_props[PROP_USES_DAEMON]);
                g_object_notify_by_pspec(G_OBJECT(self), client_props[PROP_FALLBACK_REASON]);
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
Run *run_new(FhashClient *self, RunKind kind, GCancellable *cancellable, GAsyncReadyCallback callback,
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
void client_submit(FhashClient *self, Run *r)
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
