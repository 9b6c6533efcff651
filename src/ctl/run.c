/* SPDX-License-Identifier: MIT */
/* run.c: a run of items through fhashd or in-process, as the options say */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ctl/args.h"
#include "client/bus-client.h"
#include "ctl/run.h"

/* Runs the items of source through fhashd or in-process, per the options, hashing while the source
 * still produces them. Returns 0, or -errno after saying why. */
static void say_busy(const char *reason, bool gives_up_later, void *userdata)
{
        ctl_err("fhashd is busy (%s); waiting%s", reason, gives_up_later ? " (FHASHCTL_BUSY_TIMEOUT)" : "");
}

int ctl_run_items(const Args *a, const RunSource *source, RunResultFn fn, void *userdata)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const RunReadOptions ro = { .dontcache = a->no_cache, .strategy = a->io,
                                    .params = a->has_params ? &a->params : NULL,
                                    .algos = a->algos.n > 1 ? &a->algos : NULL,
                                    .busy_notice = say_busy };
        sd_bus *bus = NULL;
        Progress progress;
        int r;

        progress_init(&progress, a->status ? PROGRESS_OFF : a->progress, STDERR_FILENO);

        if (!a->local) {
                r = bus_client_open(a->bus_kind, a->address, &bus, &error);
                if (r < 0) {
                        const char *why = sd_bus_error_is_set(&error) && error.message ? error.message
                                                                                         : strerror(-r);
                        if (a->daemon) {
                                ctl_err("cannot reach fhashd: %s", why);
                                return r;
                        }
                        ctl_err("fhashd is not reachable (%s); hashing in-process", why);
                        sd_bus_error_free(&error);
                }
        }
        if (bus) {
                if (!a->no_direct)
                        (void)bus_client_open_direct(&bus);
                r = bus_client_run(bus, source, &ro, fn, userdata, &progress, &error);
                sd_bus_flush_close_unref(bus);
                if (r < 0) {
                        ctl_err("hashing through fhashd failed: %s",
                            sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                        return r;
                }
                return 0;
        }
        r = run_local(source, &ro, fn, userdata, &progress);
        if (r < 0)
                ctl_err("cannot start the hashing engine: %s", strerror(-r));
        return r;
}
