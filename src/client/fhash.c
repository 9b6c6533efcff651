/* SPDX-License-Identifier: MIT */
/* fhash.c: libfhash's public API (include/fhash/fhash.h): the client, the blocking calls; a run is
 * fhash-run.c */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "build-config.h"
#include "client/bus-client.h"
#include "client/runner.h"
#include "client/fhash-internal.h"
#include "fhash/fhash.h"
#include "hash/hash.h"
#include "protocol/bus.h"

int fhash_set_error(fhash_error *e, int r, const char *name, const char *fmt, ...)
{
        va_list ap;

        if (r >= 0)
                r = -EIO;
        if (e) {
                *e = (fhash_error){ .error = r };
                (void)snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
                va_start(ap, fmt);
                (void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

/* r with error taken from what sd-bus said, else strerror(). */
int fhash_set_bus_error(fhash_error *e, int r, const sd_bus_error *be, const char *what)
{
        if (sd_bus_error_is_set(be))
                return fhash_set_error(e, r, be->name, "%s: %s", what, be->message ? be->message : be->name);
        return fhash_set_error(e, r, NULL, "%s: %s", what, strerror(r < 0 ? -r : EIO));
}

_public_ int fhash_client_new(const fhash_client_options *options, fhash_client **ret, fhash_error *error)
{
        _cleanup_(sd_bus_error_free) sd_bus_error be = SD_BUS_ERROR_NULL;
        fhash_client_options o = options ? *options : (fhash_client_options){ .bus = FHASH_BUS_SYSTEM };
        static const BusKind kinds[] = { [FHASH_BUS_SYSTEM] = BUS_KIND_SYSTEM, [FHASH_BUS_USER] = BUS_KIND_USER,
                                         [FHASH_BUS_ADDRESS] = BUS_KIND_ADDRESS };
        fhash_client *c;
        int r;

        if (!ret || (unsigned)o.bus >= ELEMENTSOF(kinds) || (o.bus == FHASH_BUS_ADDRESS) != !!o.address ||
            (o.flags & FHASH_CLIENT_LOCAL && o.flags & FHASH_CLIENT_NO_FALLBACK))
                return fhash_set_error(error, -EINVAL, NULL, "fhash_client_new: invalid options");
        if (o.bus == FHASH_BUS_ADDRESS && !bus_address_is_valid(o.address))
                return fhash_set_error(error, -EINVAL, NULL, "\"%s\" is not a D-Bus address", o.address);
        c = calloc(1, sizeof(*c));
        if (!c)
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        c->flags = o.flags;
        c->busy_notice = o.busy_notice;
        c->notice_userdata = o.notice_userdata;
        if (!(o.flags & FHASH_CLIENT_LOCAL)) {
                r = bus_open_fhashd(kinds[o.bus], o.address, &c->bus, &be);
                if (r < 0) {
                        /* Which bus, where, and what was wrong: "No medium found" alone told nobody
                         * that there is no session bus. */
                        char *why = bus_explain_open_error(kinds[o.bus], o.address, r, &be);

                        if (!why) {
                                free(c);
                                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
                        }
                        if (o.flags & FHASH_CLIENT_NO_FALLBACK) {
                                free(c);
                                r = fhash_set_error(error, -ENOTCONN, be.name, "%s", why);
                                free(why);
                                return r;
                        }
                        c->fallback_reason = why;
                }
                if (r >= 0 && !(o.flags & FHASH_CLIENT_NO_DIRECT))
                        (void)bus_client_open_direct(&c->bus);
        }
        *ret = c;
        return 0;
}

_public_ fhash_client *fhash_client_free(fhash_client *c)
{
        if (c) {
                sd_bus_flush_close_unref(c->bus);
                free(c->fallback_reason);
                free(c);
        }
        return NULL;
}

_public_ int fhash_client_uses_daemon(const fhash_client *c)
{
        return c && c->bus;
}

_public_ const char *fhash_client_get_fallback_reason(const fhash_client *c)
{
        return c ? c->fallback_reason : NULL;
}

/* The blocking calls: a run just started (k: how that went) stepped to its end, waiting inside. */
static int run_to_end(int k, fhash_run *r, fhash_error *error)
{
        if (k < 0 || !r)
                return k < 0 ? k : -EIO;
        do
                k = fhash_run_step(r, 100000, error);
        while (k > 0);
        fhash_run_free(r);
        return k;
}

static int hash_inputs(fhash_client *c, const char *const *paths, const int *fds, const char *const *names,
                       size_t n, const fhash_hash_options *options, fhash_result_fn fn, void *userdata,
                       fhash_error *error)
{
        fhash_run *r = NULL;
        int k = fhash_run_start(c, paths, fds, names, n, options, fn, userdata, &r, error);

        return run_to_end(k, r, error);
}

_public_ int fhash_hash_source(fhash_client *c, fhash_source_fn next, void *source_userdata,
                               const fhash_hash_options *options, fhash_result_fn fn, void *userdata,
                               fhash_error *error)
{
        fhash_run *r = NULL;
        int k = fhash_run_source(c, next, source_userdata, options, fn, userdata, &r, error);

        return run_to_end(k, r, error);
}

_public_ int fhash_hash_paths(fhash_client *c, const char *const *paths, size_t n, const fhash_hash_options *options,
                              fhash_result_fn fn, void *userdata, fhash_error *error)
{
        return hash_inputs(c, paths, NULL, NULL, n, options, fn, userdata, error);
}

_public_ int fhash_hash_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                            const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_error *error)
{
        return hash_inputs(c, NULL, fds ? fds : (const int[]){ -1 }, names, n, options, fn, userdata, error);
}

static const char *algorithm_names[_HASH_ALGO_MAX + 1];
static pthread_once_t algorithm_names_once = PTHREAD_ONCE_INIT;

static void algorithm_names_fill(void)
{
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                algorithm_names[a] = hash_algo_to_string(a);
}

_public_ const char *const *fhash_algorithms(void)
{
        (void)pthread_once(&algorithm_names_once, algorithm_names_fill);
        return algorithm_names;
}

_public_ const char *fhash_version(void)
{
        return FHASH_VERSION;
}
