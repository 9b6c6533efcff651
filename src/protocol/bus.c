/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string-table.h"
#include "fhash/fhash-dbus.h"
#include "protocol/bus.h"

static const char *const bus_kind_table[] = {
        [BUS_KIND_SYSTEM] = "system",
        [BUS_KIND_USER] = "user",
        [BUS_KIND_ADDRESS] = "given",
};

const char *bus_kind_to_string(BusKind kind)
{
        if ((int)kind < 0 || (size_t)kind >= ELEMENTSOF(bus_kind_table))
                return NULL;
        return bus_kind_table[kind];
}

int bus_open(BusKind kind, const char *address, const char *description, sd_bus **ret)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        switch (kind) {
        case BUS_KIND_SYSTEM:
                r = sd_bus_open_system_with_description(&bus, description);
                break;
        case BUS_KIND_USER:
                r = sd_bus_open_user_with_description(&bus, description);
                break;
        case BUS_KIND_ADDRESS:
                if (!address)
                        return -EINVAL;
                r = sd_bus_new(&bus);
                if (r < 0)
                        return r;
                if (description)
                        (void)sd_bus_set_description(bus, description);
                r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, true);
                if (r >= 0)
                        r = sd_bus_negotiate_fds(bus, true);
                if (r >= 0)
                        r = sd_bus_start(bus);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

/* fhashds in a row that may exit while they are pinged before connecting gives up. */
#define BUS_PING_AGAIN_MAX 4

int bus_open_fhashd(BusKind kind, const char *address, sd_bus **ret, sd_bus_error *error)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = bus_open(kind, address, NULL, &bus);
        if (r < 0)
                return r;

        /* A Ping through the name starts fhashd where it is D-Bus activatable, and tells us at once
         * (ServiceUnknown / NameHasNoOwner) when it is not there, so that the caller can fall back.
         * NoReply: the fhashd that had the name exited before it answered (a restart, an upgrade);
         * asked again, the name activates the next one. */
        for (unsigned attempt = 0;; attempt++) {
                r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping",
                                       error, NULL, NULL);
                if (r >= 0)
                        break;
                if (attempt >= BUS_PING_AGAIN_MAX || !sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY))
                        return r;
                sd_bus_error_free(error);
        }
        *ret = TAKE_PTR(bus);
        return 0;
}

/* A value as sd-bus reads it: not empty, '%' only before two hex digits (the specification's escape),
 * no control character; ',' and ';' end it. */
static bool address_value_is_valid(const char *v, size_t n)
{
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)v[i];

                if (c == '%') {
                        if (n - i < 3 || !isxdigit((unsigned char)v[i + 1]) || !isxdigit((unsigned char)v[i + 2]))
                                return false;
                        i += 2;
                } else if (c < 0x20 || c == 0x7f)
                        return false;
        }
        return true;
}

/* Each transport sd-bus connects with, and keys of which it needs one. */
static const struct {
        const char *transport;
        const char *const needs[3];
} address_transports[] = {
        { "unix", { "path", "abstract", NULL } },
        { "tcp", { "host", NULL } },
        { "unixexec", { "path", NULL } },
        { "x-machine-unix", { "machine", "pid", NULL } },
};

static bool address_entry_is_valid(const char *e, size_t n)
{
        const char *colon = memchr(e, ':', n);
        size_t t, k;
        bool has_needed = false;

        if (!colon)
                return false;
        t = (size_t)(colon - e);
        for (k = 0; k < ELEMENTSOF(address_transports); k++)
                if (strlen(address_transports[k].transport) == t && memcmp(e, address_transports[k].transport, t) == 0)
                        break;
        if (k == ELEMENTSOF(address_transports))
                return false;
        for (const char *p = colon + 1, *end = e + n; p < end;) {
                const char *comma = memchr(p, ',', (size_t)(end - p)), *pend = comma ? comma : end;
                const char *eq = memchr(p, '=', (size_t)(pend - p));

                if (!eq || eq == p || !address_value_is_valid(eq + 1, (size_t)(pend - eq - 1)))
                        return false;
                for (size_t i = 0; address_transports[k].needs[i]; i++)
                        if (strlen(address_transports[k].needs[i]) == (size_t)(eq - p) &&
                            memcmp(p, address_transports[k].needs[i], (size_t)(eq - p)) == 0)
                                has_needed = true;
                p = comma ? comma + 1 : end;
                if (comma && p == end)
                        return false;
        }
        return has_needed;
}

bool bus_address_is_valid(const char *address)
{
        bool any = false;

        if (!address || !*address)
                return false;
        for (const char *p = address; *p;) {
                size_t n = strcspn(p, ";");

                if (n > 0) {
                        if (!address_entry_is_valid(p, n))
                                return false;
                        any = true;
                }
                p += n + (p[n] == ';');
        }
        return any;
}

bool bus_error_is_no_fhashd(const char *error_name)
{
        return error_name && (streq(error_name, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                              streq(error_name, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                              streq(error_name, "org.freedesktop.systemd1.NoSuchUnit") ||
                              streq(error_name, "org.freedesktop.DBus.Error.Spawn.ServiceNotFound") ||
                              streq(error_name, "org.freedesktop.DBus.Error.Spawn.ChildExited"));
}

bool bus_error_has_name(const sd_bus_error *error)
{
        return error && sd_bus_error_is_set(error) && strncmp(error->name, "System.Error.", 13) != 0;
}

char *bus_explain_open_error(BusKind kind, const char *address, int r, const sd_bus_error *error)
{
        const char *env, *what = kind == BUS_KIND_SYSTEM ? "system bus" : kind == BUS_KIND_USER ? "session bus" : "bus";
        char *where = NULL, *s = NULL;
        int k;

        /* Where sd-bus looked, as it decides it (sd_bus_open_system(), sd_bus_open_user()). Freed by
         * hand: clang-tidy 14 does not see _cleanup_. */
        if (kind == BUS_KIND_SYSTEM) {
                env = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                where = strdup(env && *env ? env : "unix:path=/run/dbus/system_bus_socket");
        } else if (kind == BUS_KIND_USER) {
                env = getenv("DBUS_SESSION_BUS_ADDRESS");
                if (env && *env)
                        where = strdup(env);
                else if ((env = getenv("XDG_RUNTIME_DIR")) && *env) {
                        if (asprintf(&where, "unix:path=%s/bus", env) < 0)
                                where = NULL;
                } else
                        return strdup("no session bus: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set");
        } else
                where = strdup(address ?: "");
        if (!where)
                return NULL;

        if (!bus_error_has_name(error))
                error = NULL;
        if (error && sd_bus_error_is_set(error) && bus_error_is_no_fhashd(error->name))
                k = asprintf(&s, "fhashd is not on the %s at %s (%s)", what, where, error->message ?: error->name);
        else if (error && sd_bus_error_is_set(error))
                k = asprintf(&s, "the %s at %s: %s", what, where, error->message ?: error->name);
        else if (r == -ENOENT || r == -ECONNREFUSED)
                k = asprintf(&s, "no %s at %s (%s)", what, where, strerror(-r));
        else if (r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE || r == -EPERM || r == -EACCES)
                /* The socket took the connection and the bus closed it before it said anything: it
                 * refused us (dbus-daemon's <allow user>, a failed authentication). */
                k = asprintf(&s, "the %s at %s refused the connection of uid %u: its configuration does not let "
                             "this user connect", what, where, (unsigned)geteuid());
        else
                k = asprintf(&s, "cannot connect to the %s at %s (%s)", what, where, strerror(r < 0 ? -r : EIO));
        free(where);
        return k < 0 ? NULL : s;
}
