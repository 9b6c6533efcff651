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


#include "glib/fhash-client-private.h"

GParamSpec *client_props[_PROP_MAX];
guint client_signals[_SIGNAL_MAX];

G_DEFINE_FINAL_TYPE(FhashClient, fhash_client, G_TYPE_OBJECT)
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
        client_props[PROP_BUS_TYPE] = g_param_spec_enum("bus-type", NULL, NULL, FHASH_TYPE_BUS_TYPE, FHASH_BUS_TYPE_SYSTEM,
                                                 co);
        /**
         * FhashClient:address:
         *
         * A D-Bus address to find fhashd at ("unix:path=/run/..."), or %NULL for #FhashClient:bus-type.
         */
        client_props[PROP_ADDRESS] = g_param_spec_string("address", NULL, NULL, NULL, co);
        /**
         * FhashClient:flags:
         *
         * How the client connects.
         */
        client_props[PROP_FLAGS] = g_param_spec_flags("flags", NULL, NULL, FHASH_TYPE_CLIENT_FLAGS, FHASH_CLIENT_FLAGS_NONE,
                                               co);
        /**
         * FhashClient:algorithm:
         *
         * The algorithm of the runs started from now on: one of fhash_client_list_algorithms(), or up
         * to 4 joined by ','.
         */
        client_props[PROP_ALGORITHM] = g_param_spec_string("algorithm", NULL, NULL, "sha256",
                                                    rw | G_PARAM_CONSTRUCT);
        /**
         * FhashClient:hash-flags:
         *
         * How the runs started from now on hash.
         */
        client_props[PROP_HASH_FLAGS] = g_param_spec_flags("hash-flags", NULL, NULL, FHASH_TYPE_HASH_FLAGS,
                                                    FHASH_HASH_FLAGS_NONE, rw);
        /**
         * FhashClient:max-size:
         *
         * The largest file the runs started from now on hash, in bytes (0: no limit): a larger one
         * gets %FHASH_CLIENT_ERROR_TOO_LARGE.
         */
        client_props[PROP_MAX_SIZE] = g_param_spec_uint64("max-size", NULL, NULL, 0, G_MAXUINT64, 0, rw);
        /**
         * FhashClient:uses-daemon:
         *
         * Whether the client is connected to fhashd (%FALSE: in-process, or not connected yet).
         */
        client_props[PROP_USES_DAEMON] = g_param_spec_boolean("uses-daemon", NULL, NULL, FALSE, ro);
        /**
         * FhashClient:fallback-reason:
         *
         * Why the client hashes in this process although it was not told to: what reaching fhashd
         * said, naming the bus and its socket.
         */
        client_props[PROP_FALLBACK_REASON] = g_param_spec_string("fallback-reason", NULL, NULL, NULL, ro);
        /**
         * FhashClient:files-done:
         *
         * Files with a result, in the runs going on and those over since the client was last idle.
         */
        client_props[PROP_FILES_DONE] = g_param_spec_uint64("files-done", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:files-total:
         *
         * Files given to those runs (a source's: so far).
         */
        client_props[PROP_FILES_TOTAL] = g_param_spec_uint64("files-total", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:bytes-done:
         *
         * Bytes of the files done (with %FHASH_HASH_FLAGS_PROGRESS, and of those being hashed).
         */
        client_props[PROP_BYTES_DONE] = g_param_spec_uint64("bytes-done", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        /**
         * FhashClient:bytes-total:
         *
         * Bytes of the files opened so far: the total grows as files open.
         */
        client_props[PROP_BYTES_TOTAL] = g_param_spec_uint64("bytes-total", NULL, NULL, 0, G_MAXUINT64, 0, ro);
        g_object_class_install_properties(object_class, _PROP_MAX, client_props);

        /**
         * FhashClient::result:
         * @self: the client
         * @result: the file's result
         *
         * A file's result, as soon as it is in order (with %FHASH_HASH_FLAGS_UNORDERED: as soon as
         * it is known), for every run of the client; none after a run was cancelled.
         */
        client_signals[SIGNAL_RESULT] = g_signal_new("result", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
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
        client_signals[SIGNAL_BUSY] = g_signal_new("busy", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                            G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_BOOLEAN);
}

static void fhash_client_init(FhashClient *self)
{
        self->algorithm = g_strdup("sha256");
}
