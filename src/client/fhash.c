/* SPDX-License-Identifier: MIT */
/* fhash.c: libfhash's public API (include/fhash/fhash.h): the client, the blocking calls, the tables;
 * a run is run.c */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "basic/string-table.h"
#include "build-config.h"
#include "client/bus-connect.h"
#include "client/client.h"
#include "client/error.h"
#include "client/run.h"
#include "fhash/fhash-dbus.h"
#include "hash/hash.h"
#include "protocol/bus.h"

static const BusKind kinds[] = { [FHASH_BUS_SYSTEM] = BUS_KIND_SYSTEM, [FHASH_BUS_USER] = BUS_KIND_USER,
                                 [FHASH_BUS_ADDRESS] = BUS_KIND_ADDRESS };

/* options (NULL: the defaults) into *ret, checked as fhash_client_new() and fhash_bus_open() want them:
 * 0, or -EINVAL with error filled in. */
static int client_options_check(const char *func, const fhash_client_options *options, fhash_client_options *ret,
                                 fhash_error *error)
{
        fhash_client_options o = options ? *options : (fhash_client_options){ .bus = FHASH_BUS_SYSTEM };

        if ((unsigned)o.bus >= ELEMENTSOF(kinds) || (o.bus == FHASH_BUS_ADDRESS) != !!o.address ||
            (o.flags & FHASH_CLIENT_LOCAL && o.flags & FHASH_CLIENT_NO_FALLBACK))
                return fhash_set_error(error, -EINVAL, NULL, "%s: invalid options", func);
        for (size_t i = 0; i < ELEMENTSOF(o.reserved); i++)
                if (o.reserved[i] != 0)
                        return fhash_set_error(error, -EINVAL, NULL,
                                               "fhash_client_options: reserved fields must be zero (a newer header?)");
        if (o.bus == FHASH_BUS_ADDRESS && !bus_address_is_valid(o.address))
                return fhash_set_error(error, -EINVAL, NULL, "\"%s\" is not a D-Bus address", o.address);
        *ret = o;
        return 0;
}

/* fhashd could not be reached on o's bus (r, and be where the bus answered): -ENOTCONN, with the bus's
 * own error name where it answered (ServiceUnknown: nothing there is fhashd), ours where there was no
 * bus to ask, and why in words. */
static int unreachable_error(const fhash_client_options *o, int r, const sd_bus_error *be, fhash_error *error)
{
        _cleanup_free_ char *why = bus_explain_open_error(kinds[o->bus], o->address, r, be);

        if (!why)
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        return fhash_set_error(error, -ENOTCONN, bus_error_has_name(be) ? be->name : FHASH_ERROR_NOT_REACHABLE,
                               "cannot reach fhashd: %s", why);
}

_public_ int fhash_client_new(const fhash_client_options *options, fhash_client **ret, fhash_error *error)
{
        _cleanup_(sd_bus_error_free) sd_bus_error be = SD_BUS_ERROR_NULL;
        fhash_client_options o = {};
        fhash_client *c;
        int r;

        if (!ret)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_client_new: invalid options");
        r = client_options_check("fhash_client_new", options, &o, error);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c)
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        c->flags = o.flags;
        c->busy_notice = o.busy_notice;
        c->notice_userdata = o.notice_userdata;
        c->target = (BusTarget){ .kind = kinds[o.bus], .direct = !(o.flags & FHASH_CLIENT_NO_DIRECT) };
        if (o.address) {
                c->target.address = strdup(o.address);
                if (!c->target.address) {
                        free(c);
                        return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
                }
        }
        if (!(o.flags & FHASH_CLIENT_LOCAL)) {
                r = bus_open_fhashd(kinds[o.bus], o.address, &c->bus, &be);
                if (r < 0) {
                        /* Which bus, where, and what was wrong: "No medium found" alone told nobody
                         * that there is no session bus. */
                        if (o.flags & FHASH_CLIENT_NO_FALLBACK) {
                                fhash_client_free(c);
                                return unreachable_error(&o, r, &be, error);
                        }
                        c->fallback_reason = bus_explain_open_error(kinds[o.bus], o.address, r, &be);
                        if (!c->fallback_reason) {
                                fhash_client_free(c);
                                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
                        }
                }
                if (r >= 0 && !(o.flags & FHASH_CLIENT_NO_DIRECT))
                        (void)bus_open_direct(&c->bus);
        }
        *ret = c;
        return 0;
}

_public_ fhash_client *fhash_client_free(fhash_client *c)
{
        if (c) {
                sd_bus_flush_close_unref(c->bus);
                free(c->fallback_reason);
                free(c->target.address);
                free(c);
        }
        return NULL;
}

_public_ int fhash_bus_open(const fhash_client_options *options, sd_bus **ret, fhash_error *error)
{
        _cleanup_(sd_bus_error_free) sd_bus_error be = SD_BUS_ERROR_NULL;
        fhash_client_options o = {};
        int r;

        if (!ret)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_bus_open: invalid options");
        r = client_options_check("fhash_bus_open", options, &o, error);
        if (r < 0)
                return r;
        if (o.flags & FHASH_CLIENT_LOCAL)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_bus_open: FHASH_CLIENT_LOCAL has no bus");
        /* The bus itself, never the direct connection: fhashd's Manager answers a caller by its bus
         * credentials, and the caller may want other names on the bus too. */
        r = bus_open_fhashd(kinds[o.bus], o.address, ret, &be);
        if (r < 0)
                return unreachable_error(&o, r, &be, error);
        return 0;
}

_public_ int fhash_bus_address_is_valid(const char *address)
{
        return address && bus_address_is_valid(address);
}

_public_ int fhash_error_is_no_daemon(const fhash_error *error)
{
        return error && error->error < 0 && bus_error_is_no_fhashd(error->name);
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
                k = run_step(r, 100000, error);
        while (k > 0);
        fhash_run_free(r);
        return k;
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
        fhash_run *r = NULL;
        int k = run_start_arrays(c, paths, NULL, NULL, n, options, fn, userdata, &r, error);

        return run_to_end(k, r, error);
}

_public_ int fhash_hash_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                            const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_error *error)
{
        fhash_run *r = NULL;
        int k = run_start_arrays(c, NULL, fds ? fds : (const int[]){ -1 }, names, n, options, fn, userdata, &r,
                                 error);

        return run_to_end(k, r, error);
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

_public_ size_t fhash_struct_size(const char *name)
{
        static const struct {
                const char *name;
                size_t size;
        } sizes[] = {
                { "fhash_error", sizeof(fhash_error) },
                { "fhash_client_options", sizeof(fhash_client_options) },
                { "fhash_result", sizeof(fhash_result) },
                { "fhash_hash_options", sizeof(fhash_hash_options) },
                { "fhash_input", sizeof(fhash_input) },
                { "fhash_progress", sizeof(fhash_progress) },
        };

        for (size_t i = 0; name && i < ELEMENTSOF(sizes); i++)
                if (streq(sizes[i].name, name))
                        return sizes[i].size;
        return 0;
}

static const char *const status_names[] = {
        [FHASH_OK] = "ok",           [FHASH_MISMATCH] = "mismatch",   [FHASH_CHANGED] = "changed",
        [FHASH_ERROR] = "error",     [FHASH_CANCELLED] = "cancelled", [FHASH_SKIPPED] = "skipped",
};

_public_ const char *fhash_status_to_string(fhash_status status)
{
        return (unsigned)status < ELEMENTSOF(status_names) ? status_names[status] : NULL;
}
