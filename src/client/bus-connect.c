/* SPDX-License-Identifier: MIT */
/* bus-connect.c: the direct connection to fhashd, and watching it */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "client/bus-connect.h"
#include "fhash/fhash-dbus.h"

int bus_open_direct(sd_bus **bus)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *direct = NULL;
        int fd, r;

        r = sd_bus_call_method(*bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "OpenConnection",
                               &error, &reply, "a{sv}", 0);
        if (r < 0)
                return 0;
        r = sd_bus_message_read_basic(reply, SD_BUS_TYPE_UNIX_FD, &fd);
        if (r <= 0)
                return 0;
        /* The message owns fd: the connection gets its own copy. */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return 0;
        r = sd_bus_new(&direct);
        if (r >= 0)
                r = sd_bus_set_fd(direct, fd, fd);
        if (r < 0) {
                (void)close(fd);
                return 0;
        }
        r = sd_bus_negotiate_fds(direct, true);
        if (r >= 0)
                r = sd_bus_start(direct);
        if (r < 0)
                return 0;
        /* fd passing is what the connection is for: a server that did not agree to it is no use. */
        if (sd_bus_can_send(direct, SD_BUS_TYPE_UNIX_FD) <= 0)
                return 0;
        sd_bus_flush_close_unref(*bus);
        *bus = TAKE_PTR(direct);
        return 1;
}

void bus_wake(BusWake *w)
{
        uint64_t one = 1;

        if (!w || w->stepping || w->woken || w->fd < 0)
                return;
        /* An eventfd's counter only fails to take 1 at UINT64_MAX - 1: nothing is lost. */
        if (write(w->fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
                w->woken = true;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusPeer *p = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        if (streq(name, FHASH_BUS_NAME) && !streq(new, p->daemon ?: "")) {
                p->gone = true;
                bus_wake(p->wake);
        }
        return 0;
}

/* The direct connection closed under us: fhashd exited. */
static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusPeer *p = userdata;

        p->gone = true;
        bus_wake(p->wake);
        return 0;
}

int bus_peer_watch(BusPeer *p, sd_bus *bus)
{
        int r;

        *p = (BusPeer){ .bus = bus };
        /* On a direct connection fhashd is the only one there: no names, no driver, no sender. */
        if (sd_bus_is_bus_client(bus) > 0) {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                const char *unique;

                p->dest = FHASH_BUS_NAME;
                r = sd_bus_get_name_creds(bus, FHASH_BUS_NAME, SD_BUS_CREDS_UNIQUE_NAME, &creds);
                if (r < 0)
                        return r;
                r = sd_bus_creds_get_unique_name(creds, &unique);
                if (r < 0)
                        return r;
                p->daemon = strdup(unique);
                if (!p->daemon)
                        return -ENOMEM;
                return sd_bus_match_signal(bus, &p->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed, p);
        }
        return sd_bus_match_signal(bus, &p->slot, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                   "Disconnected", on_disconnected, p);
}

void bus_peer_unwatch(BusPeer *p)
{
        p->slot = sd_bus_slot_unref(p->slot);
        p->daemon = mfree(p->daemon);
}

bool bus_peer_sent(const BusPeer *p, sd_bus_message *m)
{
        return streq_ptr(sd_bus_message_get_sender(m), p->daemon);
}
