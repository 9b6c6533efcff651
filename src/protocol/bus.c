/* SPDX-License-Identifier: MIT */
#include <errno.h>

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

int bus_open_fhashd(BusKind kind, const char *address, sd_bus **ret, sd_bus_error *error)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = bus_open(kind, address, NULL, &bus);
        if (r < 0)
                return r;

        /* A Ping through the name starts fhashd where it is D-Bus activatable, and tells us at once
         * (ServiceUnknown / NameHasNoOwner) when it is not there, so that the caller can fall back. */
        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping",
                               error, NULL, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}
