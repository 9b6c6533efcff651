/* SPDX-License-Identifier: MIT */
/* run-source.c: a GSource that steps a libfhash run on a GMainContext */
#include "glib/run-source.h"

typedef struct RunSource {
        GSource source;
        fhash_run *run;
        int fd;          /* the fd being polled, or -1 */
        gpointer tag;    /* its g_source_add_unix_fd() tag */
} RunSource;

/* The fd, its events and the timeout, as the run wants them now (fhash.h: ask again after each
 * fhash_run_process()). poll(2)'s event bits are GIOCondition's. GLib's clock is CLOCK_MONOTONIC in
 * µs, as fhash_run_get_timeout()'s. */
static void run_source_follow(RunSource *rs)
{
        int fd = fhash_run_get_fd(rs->run);
        int events = fhash_run_get_events(rs->run);
        GIOCondition cond = (GIOCondition)(events > 0 ? events : 0);

        if (fd != rs->fd) {
                if (rs->tag)
                        g_source_remove_unix_fd(&rs->source, rs->tag);
                rs->tag = fd >= 0 ? g_source_add_unix_fd(&rs->source, fd, cond) : NULL;
                rs->fd = fd >= 0 ? fd : -1;
        } else if (rs->tag)
                g_source_modify_unix_fd(&rs->source, rs->tag, cond);
        g_source_set_ready_time(&rs->source, (gint64)MIN(fhash_run_get_timeout(rs->run), (guint64)G_MAXINT64));
}

static gboolean run_source_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
        RunSource *rs = (RunSource *)source;

        if (!callback || callback(user_data) == G_SOURCE_REMOVE)
                return G_SOURCE_REMOVE;
        run_source_follow(rs);
        return G_SOURCE_CONTINUE;
}

static GSourceFuncs run_source_funcs = {
        .dispatch = run_source_dispatch,
};

GSource *run_source_new(fhash_run *r)
{
        GSource *source = g_source_new(&run_source_funcs, sizeof(RunSource));
        RunSource *rs = (RunSource *)source;

        rs->run = r;
        rs->fd = -1;
        g_source_set_name(source, "fhash run");
        g_source_set_ready_time(source, 0);
        return source;
}
