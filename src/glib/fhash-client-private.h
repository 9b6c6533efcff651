/* SPDX-License-Identifier: MIT */
/* fhash-client-private.h: what FhashClient's GObject side (fhash-client.c) and its runs
 * (fhash-client-run.c) share; never installed */
#pragma once

#include <fhash/fhash.h>

#include "glib/fhash-client.h"

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
/* fhash-client.c's, for notifying from the runs */
extern GParamSpec *client_props[_PROP_MAX];

enum {
        SIGNAL_RESULT,
        SIGNAL_BUSY,
        _SIGNAL_MAX,
};
extern guint client_signals[_SIGNAL_MAX];

/* fhash-client-run.c: a run is made by run_new(), handed to client_submit() (which connects first
 * where needed) and freed by run_free() once its fhash_run is over; run_return_error() finishes its
 * task with an error. */
void run_free(Run *r);
void run_return_error(Run *r, GError *error);
Run *run_new(FhashClient *self, RunKind kind, GCancellable *cancellable, GAsyncReadyCallback callback,
             gpointer user_data, gpointer tag);
void client_submit(FhashClient *self, Run *r);
